/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dest_table.c: a UDP association's destination and name tables (see
 * dest_table.h). Open addressing over a dense array for destinations,
 * chained buckets over a creation-ordered list for names; both keyed by
 * the owner's seed. No I/O, no clock of its own.
 */
#include "udp/dest_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/compiler.h"

/* ---- destinations ------------------------------------------------------ */

static bool same_ip(const struct addr *x, const struct addr *y)
{
    return x->family == y->family && memcmp(x->ip, y->ip, x->family == AF_INET6 ? 16 : 4) == 0;
}

/* A keyed multiply-xorshift hash of the address (and port). */
static uint32_t addr_hash(const struct addr *x, bool with_port, uint64_t seed)
{
    uint64_t lo = 0, hi = 0;
    if (x->family == AF_INET6) {
        memcpy(&lo, x->ip, 8);
        memcpy(&hi, x->ip + 8, 8);
    } else {
        memcpy(&lo, x->ip, 4);
    }
    uint64_t h = seed ^ ((uint64_t)x->family << 16) ^ (with_port ? x->port : 0);
    h = (h ^ lo) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    h = (h ^ hi) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

/* The slot holding x (by address and port, or by host), or the empty slot
 * where it would go. Needs slots (n > 0 or an index built). */
static uint32_t *dest_slot(const struct udp_dests *t, const struct addr *x, bool host)
{
    uint32_t *s = t->slots + (host ? t->mask + 1 : 0);
    for (uint32_t i = addr_hash(x, !host, t->seed) & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = s[i];
        if (!v)
            return &s[i];
        const struct addr *y = &t->v[v - 1].a;
        if (host ? same_ip(y, x) : addr_equal(y, x))
            return &s[i];
    }
}

static void dest_link(struct udp_dests *t, uint32_t i)
{
    *dest_slot(t, &t->v[i].a, false) = i + 1;
    uint32_t *h = dest_slot(t, &t->v[i].a, true);
    if (!*h)
        *h = i + 1; /* the first destination of its host stays the one found */
}

/* Index every destination in nslots (a power of two) slots per table. */
static int dest_reindex(struct udp_dests *t, uint32_t nslots)
{
    if (!t->slots || nslots != t->mask + 1) {
        uint32_t *s = calloc(2 * (size_t)nslots, sizeof(*s));
        if (!s)
            return -ENOMEM;
        free(t->slots);
        t->slots = s;
        t->mask = nslots - 1;
    } else {
        memset(t->slots, 0, 2 * (size_t)nslots * sizeof(*t->slots));
    }
    for (uint32_t i = 0; i < t->n; i++)
        dest_link(t, i);
    return 0;
}

/* Room for one more destination: the array (never beyond limit) and an
 * index at most half full. */
static int dest_reserve(struct udp_dests *t, uint32_t limit)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : UDP_DEST_MIN;
        if (cap > limit)
            cap = limit;
        struct udp_dest *v = realloc(t->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    if (!t->slots || (t->n + 1) * 2 > t->mask + 1) {
        uint32_t nslots = 8;
        while (nslots < 2 * t->cap)
            nslots *= 2;
        return dest_reindex(t, nslots);
    }
    return 0;
}

void udp_dests_init(struct udp_dests *t, uint64_t seed)
{
    *t = (struct udp_dests){.seed = seed};
}

void udp_dests_fini(struct udp_dests *t)
{
    free(t->v);
    free(t->slots);
    udp_dests_init(t, t->seed);
}

struct udp_dest *udp_dests_find(const struct udp_dests *t, const struct addr *d)
{
    if (!t->n)
        return NULL;
    uint32_t v = *dest_slot(t, d, false);
    return v ? &t->v[v - 1] : NULL;
}

struct udp_dest *udp_dests_find_host(const struct udp_dests *t, const struct addr *src)
{
    if (!t->n)
        return NULL;
    uint32_t v = *dest_slot(t, src, false);
    if (!v)
        v = *dest_slot(t, src, true);
    return v ? &t->v[v - 1] : NULL;
}

struct udp_dest *udp_dests_add(struct udp_dests *t, const struct addr *d, uint64_t now,
                               uint32_t limit)
{
    if (t->n >= limit || dest_reserve(t, limit) < 0)
        return NULL;
    uint32_t i = t->n++;
    struct udp_dest *x = &t->v[i];
    x->a = *d;
    x->last_ms = now;
    x->via = NULL;
    dest_link(t, i);
    return x;
}

void udp_dests_sweep(struct udp_dests *t, uint64_t now, uint32_t idle_ms)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (now - t->v[i].last_ms < idle_ms)
            t->v[keep++] = t->v[i];
    if (keep == t->n)
        return;
    t->n = keep;
    if (!keep) {
        udp_dests_fini(t); /* a table that went quiet gives its memory back */
        return;
    }
    (void)dest_reindex(t, t->mask + 1); /* same size: cannot fail */
}

/* ---- names --------------------------------------------------------------- */

void udp_names_init(struct udp_names *t, uint64_t seed)
{
    *t = (struct udp_names){.seed = seed};
    list_init(&t->list);
}

uint32_t udp_names_hash(const struct udp_names *t, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull ^ t->seed; /* FNV-1a, keyed */
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        h = (h ^ *s) * 0x100000001b3ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

struct udp_name *udp_names_find(const struct udp_names *t, const char *name, uint32_t hash)
{
    if (!t->buckets)
        return NULL;
    for (struct udp_name *nm = t->buckets[hash & t->mask]; nm; nm = nm->hnext)
        if (nm->hash == hash && strcmp(nm->name, name) == 0)
            return nm;
    return NULL;
}

/* Room for one more name: at least one bucket per name (a failed growth
 * only makes chains longer). Called before the new name is linked. */
static void names_grow(struct udp_names *t)
{
    if (t->buckets && t->n + 1 <= t->mask + 1)
        return;
    uint32_t n = t->buckets ? (t->mask + 1) * 2 : 8;
    struct udp_name **b = calloc(n, sizeof(*b));
    if (!b)
        return;
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->list)
    {
        struct udp_name *nm = list_entry(pos, struct udp_name, link);
        nm->hnext = b[nm->hash & (n - 1)];
        b[nm->hash & (n - 1)] = nm;
    }
    free(t->buckets);
    t->buckets = b;
    t->mask = n - 1;
}

/* Unlink nm, let the owner drop its part, free it. */
static void names_remove(struct udp_names *t, struct udp_name *nm, udp_name_drop_fn drop)
{
    struct udp_name **pp = &t->buckets[nm->hash & t->mask];
    while (*pp != nm)
        pp = &(*pp)->hnext;
    *pp = nm->hnext;
    list_del(&nm->link);
    t->n--;
    drop(nm);
    free(nm);
}

/* Forget the oldest name that is not being resolved; false if all are. */
static bool names_evict(struct udp_names *t, udp_name_drop_fn drop)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->list)
    {
        struct udp_name *nm = list_entry(pos, struct udp_name, link);
        if (nm->status != UDP_NAME_RESOLVING) {
            names_remove(t, nm, drop);
            return true;
        }
    }
    return false;
}

struct udp_name *udp_names_add(struct udp_names *t, const char *name, uint32_t hash, uint32_t limit,
                               udp_name_drop_fn drop)
{
    if (t->n >= limit && !names_evict(t, drop))
        return NULL;
    size_t nl = strlen(name);
    struct udp_name *nm = calloc(1, sizeof(*nm) + nl + 1);
    if (!nm)
        return NULL;
    memcpy(nm->name, name, nl + 1);
    nm->hash = hash;
    nm->status = UDP_NAME_RESOLVING;
    names_grow(t);
    if (!t->buckets) {
        free(nm); /* not even the first table: it could not be found again */
        return NULL;
    }
    nm->hnext = t->buckets[hash & t->mask];
    t->buckets[hash & t->mask] = nm;
    list_add_tail(&t->list, &nm->link);
    t->n++;
    return nm;
}

void udp_names_expire(struct udp_names *t, uint64_t now, udp_name_drop_fn drop)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->list)
    {
        struct udp_name *nm = list_entry(pos, struct udp_name, link);
        if (nm->status != UDP_NAME_RESOLVING && nm->expires_ms <= now)
            names_remove(t, nm, drop);
    }
}

void udp_names_fini(struct udp_names *t, udp_name_drop_fn drop)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->list)
    {
        struct udp_name *nm = list_entry(pos, struct udp_name, link);
        drop(nm);
        free(nm);
    }
    free(t->buckets);
    udp_names_init(t, t->seed);
}
