/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_cache.c: the per-(route, protocol version) status cache of
 * edge_cache.h, a fixed array of entries per route under the route's
 * mutex. It decides who fetches; the fetching is edge_check.c's probe, the
 * answering edge_serve.c's. No I/O, no logging.
 */
#include "relay/edge_cache.h"

#include <stdlib.h>
#include <string.h>

#include "config/edge.h"

#define FETCH_STUCK_MS 30000 /* a fetch this old is taken over (its owner vanished) */

static struct edge_status_entry *entry_of(struct edge_route_live *l, int32_t proto)
{
    for (unsigned i = 0; i < EDGE_STATUS_VERSIONS; i++)
        if (l->status[i].used && l->status[i].proto == proto)
            return &l->status[i];
    return NULL;
}

/* A slot for proto: a free one, else the least recently asked that no
 * session is fetching (its answer dropped); NULL when all are fetching. */
static struct edge_status_entry *entry_take(struct edge_route_live *l, int32_t proto)
{
    struct edge_status_entry *best = NULL;
    for (unsigned i = 0; i < EDGE_STATUS_VERSIONS; i++) {
        struct edge_status_entry *x = &l->status[i];
        if (!x->used) {
            best = x;
            break;
        }
        if (!x->fetching && (!best || x->asked_ms < best->asked_ms))
            best = x;
    }
    if (!best)
        return NULL;
    free(best->json);
    memset(best, 0, sizeof(*best));
    best->used = true;
    best->proto = proto;
    return best;
}

static char *dup_json(const struct edge_status_entry *x, size_t *len)
{
    char *out = malloc(x->len + 1);
    if (out) {
        memcpy(out, x->json, x->len + 1);
        *len = x->len;
    }
    return out;
}

enum edge_look edge_cache_lookup(const struct edge_route *r, int32_t proto, uint64_t now_ms,
                                 uint64_t ttl_ms, uint64_t retry_ms, char **json, size_t *len)
{
    struct edge_route_live *l = r->live;
    enum edge_look v;
    *json = NULL;
    pthread_mutex_lock(&l->status_mu);
    struct edge_status_entry *x = entry_of(l, proto);
    if (x)
        x->asked_ms = now_ms;
    if (x && x->json && now_ms - x->ms <= ttl_ms) {
        *json = dup_json(x, len);
        v = *json ? EDGE_LOOK_FRESH : EDGE_LOOK_NONE;
    } else if (x && x->fetching && now_ms - x->fail_ms < FETCH_STUCK_MS) {
        v = EDGE_LOOK_WAIT; /* fail_ms holds the fetch's start while it runs */
    } else if (x && !x->fetching && x->fail_ms && now_ms - x->fail_ms < retry_ms) {
        v = EDGE_LOOK_NONE;
    } else if (x || (x = entry_take(l, proto)) != NULL) {
        x->asked_ms = now_ms;
        x->fetching = true;
        x->fail_ms = now_ms;
        v = EDGE_LOOK_FETCH;
    } else {
        v = EDGE_LOOK_NONE;
    }
    pthread_mutex_unlock(&l->status_mu);
    return v;
}

void edge_cache_store(const struct edge_route *r, int32_t proto, const uint8_t *json, size_t len,
                      bool fetched, uint64_t now_ms)
{
    struct edge_route_live *l = r->live;
    char *copy = json ? malloc(len + 1) : NULL;
    if (copy) {
        memcpy(copy, json, len);
        copy[len] = '\0';
    }
    pthread_mutex_lock(&l->status_mu);
    struct edge_status_entry *x = entry_of(l, proto);
    if (!x && copy)
        x = entry_take(l, proto);
    if (x && fetched)
        x->fetching = false;
    if (x && copy) {
        free(x->json);
        x->json = copy;
        x->len = len;
        x->ms = now_ms;
        x->fail_ms = 0;
        copy = NULL;
    } else if (x && !json) {
        x->fail_ms = now_ms; /* 0: given up, not failed */
    }
    pthread_mutex_unlock(&l->status_mu);
    free(copy);
}

size_t edge_cache_any(const struct edge_route *r, int32_t proto, char **json)
{
    struct edge_route_live *l = r->live;
    size_t len = 0;
    *json = NULL;
    pthread_mutex_lock(&l->status_mu);
    struct edge_status_entry *x = proto ? entry_of(l, proto) : NULL;
    if (!x || !x->json) {
        x = NULL;
        for (unsigned i = 0; i < EDGE_STATUS_VERSIONS; i++)
            if (l->status[i].json && (!x || l->status[i].ms > x->ms))
                x = &l->status[i];
    }
    if (x)
        *json = dup_json(x, &len);
    pthread_mutex_unlock(&l->status_mu);
    return *json ? len : 0;
}
