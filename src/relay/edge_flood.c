/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_flood.c: edge mode's flood defences at accept, cheapest first
 * (docs/edge.md "Flood defences"): the static deny and allow lists, the
 * dynamic bans, the edge's half-open cap, then per source (an IPv4
 * address, an IPv6 /64) and per prefix (IPv4 /24, IPv6 /48) a concurrent
 * cap and a token bucket of new connections. Refusals feed the bans, with
 * the other failures front_edge.c reports (edge_flood_failed()).
 *
 * The tables (per source, per prefix, bans) are each one bounded table
 * shared by all workers and edges, striped by lock and touched at accept,
 * at a failure and at the end of a session, never per byte. This file
 * decides admission only; reading and routing are front_edge.c's.
 */
#include <pthread.h>
#include <string.h>

#include "acl/ban.h"
#include "acl/limits.h"
#include "acl/rules.h"
#include "config/config.h"
#include "log/log.h"
#include "relay/edge_sess.h"
#include "relay/session.h"

#define FLOOD_ENTRIES 65536

static struct limits src_limits, prefix_limits;
static struct ban_table bans;
static bool tables_ok;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void)
{
    tables_ok = limits_init(&src_limits, FLOOD_ENTRIES) == 0 &&
                limits_init(&prefix_limits, FLOOD_ENTRIES) == 0 &&
                ban_init(&bans, FLOOD_ENTRIES) == 0;
}

/* The key of a source: an IPv4 address, an IPv6 /64 (a host owns one). */
static struct addr src_key(const struct addr *a)
{
    return addr_prefix(a, 32, 64);
}

static bool listed(const struct acl_cidr *l, uint32_t n, const struct addr *a)
{
    for (uint32_t i = 0; i < n; i++)
        if (acl_cidr_contains(&l[i], a))
            return true;
    return false;
}

/* Per source and per prefix of a (unmapped): concurrent caps and rate
 * buckets. */
static enum edge_reject admit_counts(const struct addr *a, struct edge_sess *s)
{
    const struct config_edge *e = s->e;
    uint64_t now = clock_us();
    bool log = false, tracked = false;
    if (e->per_source || e->rate) {
        struct addr k = src_key(a);
        enum limits_verdict v =
            limits_ip_admit(&src_limits, &k, now, e->per_source, e->rate, e->burst, &log, &tracked);
        if (v != LIMITS_OK)
            return v == LIMITS_PER_IP ? EDGE_REJ_PER_SOURCE : EDGE_REJ_RATE;
        s->src_tracked = tracked;
    }
    if (e->prefix_conns || e->prefix_rate) {
        struct addr k = addr_prefix(a, 24, 48);
        enum limits_verdict v = limits_ip_admit(&prefix_limits, &k, now, e->prefix_conns,
                                                e->prefix_rate, e->prefix_burst, &log, &tracked);
        if (v != LIMITS_OK)
            return v == LIMITS_PER_IP ? EDGE_REJ_PER_PREFIX : EDGE_REJ_PREFIX_RATE;
        s->prefix_tracked = tracked;
    }
    return EDGE_REJ_COUNT;
}

int edge_flood_admit(struct conn *c, struct edge_sess *s)
{
    const struct config_edge *e = s->e;
    pthread_once(&tables_once, tables_init);
    struct addr a = c->client;
    addr_unmap(&a);
    if (listed(e->deny, e->ndeny, &a) || (e->nallow && !listed(e->allow, e->nallow, &a)))
        return EDGE_REJ_DENIED;
    if (tables_ok && e->ban_after) {
        struct addr k = src_key(&a);
        if (ban_check(&bans, &k, clock_us()))
            return EDGE_REJ_BANNED;
    }
    uint32_t h = atomic_fetch_add_explicit(&e->live->halfopen, 1, memory_order_relaxed);
    s->halfopen = true;
    if (e->max_halfopen && h >= e->max_halfopen)
        return EDGE_REJ_HALFOPEN;
    return tables_ok ? (int)admit_counts(&a, s) : EDGE_REJ_COUNT;
}

void edge_halfopen_done(struct edge_sess *s)
{
    if (s->halfopen) {
        atomic_fetch_sub_explicit(&s->e->live->halfopen, 1, memory_order_relaxed);
        s->halfopen = false;
    }
}

bool edge_flood_refusal(enum edge_reject r)
{
    return r == EDGE_REJ_HALFOPEN || r == EDGE_REJ_PER_SOURCE || r == EDGE_REJ_RATE ||
           r == EDGE_REJ_DENIED || r == EDGE_REJ_BANNED || r == EDGE_REJ_PER_PREFIX ||
           r == EDGE_REJ_PREFIX_RATE;
}

void edge_flood_failed(struct conn *c, enum edge_reject r, const char *why)
{
    const struct config_edge *e = c->edge->e;
    bool counts = r == EDGE_REJ_SNIFF_ERROR || r == EDGE_REJ_UNKNOWN_HOST ||
                  r == EDGE_REJ_SIGNATURE || r == EDGE_REJ_FIRST_BYTE_TIMEOUT ||
                  r == EDGE_REJ_HELLO_TIMEOUT || r == EDGE_REJ_RATE || r == EDGE_REJ_PREFIX_RATE;
    if (!counts || !e->ban_after || !tables_ok)
        return;
    struct addr a = c->client;
    addr_unmap(&a);
    struct addr k = src_key(&a);
    if (!ban_fail(&bans, &k, clock_us(), e->ban_after, (uint64_t)e->ban_window_ms * 1000,
                  (uint64_t)e->ban_ms * 1000))
        return;
    atomic_fetch_add_explicit(&e->live->bans, 1, memory_order_relaxed);
    char ip[ADDR_STRLEN];
    log_warn("edge %s: %s banned for %u s after %u failures in %u s (the last: %s)", e->name,
             addr_format_ip(&k, ip, sizeof(ip)), e->ban_ms / 1000, e->ban_after,
             e->ban_window_ms / 1000, why);
}

void edge_flood_release(struct conn *c, struct edge_sess *s)
{
    struct addr a = c->client;
    addr_unmap(&a);
    if (s->src_tracked) {
        struct addr k = src_key(&a);
        limits_ip_release(&src_limits, &k);
        s->src_tracked = false;
    }
    if (s->prefix_tracked) {
        struct addr k = addr_prefix(&a, 24, 48);
        limits_ip_release(&prefix_limits, &k);
        s->prefix_tracked = false;
    }
}
