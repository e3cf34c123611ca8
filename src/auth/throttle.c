/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttle.c: failure counting per client address.
 */
#include "auth/throttle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int throttle_init(struct throttle *t, uint32_t entries, uint32_t max_failures, uint32_t window_ms,
                  uint32_t block_ms)
{
    memset(t, 0, sizeof(*t));
    t->nsets = (entries + THROTTLE_WAYS - 1) / THROTTLE_WAYS;
    if (t->nsets == 0)
        t->nsets = 1;
    t->e = calloc((size_t)t->nsets * THROTTLE_WAYS, sizeof(*t->e));
    if (!t->e)
        return -ENOMEM;
    fcrypto_init();
    fcrypto_random(t->hash_key, sizeof(t->hash_key));
    for (int i = 0; i < THROTTLE_STRIPES; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    throttle_configure(t, max_failures, window_ms, block_ms);
    return 0;
}

void throttle_fini(struct throttle *t)
{
    if (!t->e)
        return;
    for (int i = 0; i < THROTTLE_STRIPES; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->e);
    t->e = NULL;
}

void throttle_configure(struct throttle *t, uint32_t max_failures, uint32_t window_ms,
                        uint32_t block_ms)
{
    /* Plain stores: read under the stripe locks, and a torn view of two
     * limits during a reload only matters for one attempt. */
    t->max_failures = max_failures;
    t->window_ms = window_ms;
    t->block_ms = block_ms;
}

static size_t ip_len(const struct addr *ip)
{
    return ip->family == AF_INET6 ? 16 : 4;
}

static bool same_ip(const struct throttle_entry *e, const struct addr *ip)
{
    return e->family == ip->family && memcmp(e->ip, ip->ip, ip_len(ip)) == 0;
}

/* Lock the set for ip; returns it and the stripe to unlock. */
static struct throttle_entry *lock_set(struct throttle *t, const struct addr *ip,
                                       pthread_mutex_t **lock)
{
    uint8_t key[17];
    key[0] = ip->family;
    memcpy(key + 1, ip->ip, ip_len(ip));
    uint64_t h = fcrypto_hash64(t->hash_key, key, 1 + ip_len(ip));
    uint32_t set = (uint32_t)(h % t->nsets);
    *lock = &t->locks[set % THROTTLE_STRIPES];
    pthread_mutex_lock(*lock);
    return &t->e[(size_t)set * THROTTLE_WAYS];
}

/* Guesses in flight: a slot per distinct key, plus the unslotted ones. */
static uint32_t guesses(const struct throttle_entry *e)
{
    uint32_t n = e->pending;
    for (int i = 0; i < THROTTLE_KEYS; i++)
        n += e->key_n[i] != 0;
    return n;
}

/* An entry is worth nothing once its window is over and it blocks nobody. */
static bool stale(const struct throttle *t, const struct throttle_entry *e, uint64_t now)
{
    return e->family == 0 || (e->blocked_until_ms <= now && guesses(e) == 0 &&
                              now - e->window_start_ms >= t->window_ms);
}

/* The slot holding key, or -1. */
static int key_slot(const struct throttle_entry *e, uint64_t key)
{
    for (int i = 0; i < THROTTLE_KEYS; i++)
        if (e->key_n[i] && e->key[i] == key)
            return i;
    return -1;
}

bool throttle_blocked(struct throttle *t, const struct addr *ip, uint64_t now_ms)
{
    if (!t->e || t->max_failures == 0)
        return false;
    pthread_mutex_t *lock;
    struct throttle_entry *set = lock_set(t, ip, &lock);
    bool blocked = false;
    for (int i = 0; i < THROTTLE_WAYS; i++) {
        if (same_ip(&set[i], ip)) {
            blocked = set[i].blocked_until_ms > now_ms;
            break;
        }
    }
    pthread_mutex_unlock(lock);
    return blocked;
}

/* The entry for ip, made if need be (the caller holds the set's lock). */
static struct throttle_entry *entry_get(struct throttle *t, struct throttle_entry *set,
                                        const struct addr *ip, uint64_t now_ms)
{
    struct throttle_entry *e = NULL;
    for (int i = 0; i < THROTTLE_WAYS && !e; i++)
        if (same_ip(&set[i], ip))
            e = &set[i];
    if (!e) {
        for (int i = 0; i < THROTTLE_WAYS && !e; i++)
            if (stale(t, &set[i], now_ms))
                e = &set[i];
        if (!e) {
            /* All ways busy: replace the oldest window that blocks nobody,
             * or failing that the oldest. A block in force is kept when it
             * can be. */
            for (int i = 0; i < THROTTLE_WAYS; i++) {
                struct throttle_entry *c = &set[i];
                bool c_blocks = c->blocked_until_ms > now_ms;
                bool e_blocks = e && e->blocked_until_ms > now_ms;
                if (!e || (e_blocks && !c_blocks) ||
                    (e_blocks == c_blocks && c->window_start_ms < e->window_start_ms))
                    e = c;
            }
        }
        memset(e, 0, sizeof(*e));
        e->family = ip->family;
        memcpy(e->ip, ip->ip, ip_len(ip));
        e->window_start_ms = now_ms;
    }
    return e;
}

/* Count one failure on e; true when it starts a block. */
static bool entry_fail(struct throttle *t, struct throttle_entry *e, uint64_t now_ms)
{
    bool starts_block = false;
    if (e->blocked_until_ms <= now_ms) {
        if (now_ms - e->window_start_ms >= t->window_ms) {
            e->window_start_ms = now_ms;
            e->failures = 0;
        }
        if (++e->failures >= t->max_failures) {
            e->blocked_until_ms = now_ms + t->block_ms;
            e->failures = 0;
            e->window_start_ms = now_ms;
            starts_block = true;
        }
    }
    return starts_block;
}

bool throttle_fail(struct throttle *t, const struct addr *ip, uint64_t now_ms)
{
    if (!t->e || t->max_failures == 0)
        return false;
    pthread_mutex_t *lock;
    struct throttle_entry *set = lock_set(t, ip, &lock);
    bool starts_block = entry_fail(t, entry_get(t, set, ip, now_ms), now_ms);
    pthread_mutex_unlock(lock);
    return starts_block;
}

bool throttle_begin(struct throttle *t, const struct addr *ip, uint64_t now_ms, uint64_t key)
{
    if (!t->e || t->max_failures == 0)
        return true;
    pthread_mutex_t *lock;
    struct throttle_entry *set = lock_set(t, ip, &lock);
    struct throttle_entry *e = entry_get(t, set, ip, now_ms);
    bool ok = e->blocked_until_ms <= now_ms;
    int k = key_slot(e, key);
    if (ok && k >= 0) {
        e->key_n[k]++; /* the same guess as one in flight */
    } else if (ok && guesses(e) < t->max_failures) {
        for (k = 0; k < THROTTLE_KEYS && e->key_n[k]; k++)
            ;
        if (k < THROTTLE_KEYS) {
            e->key[k] = key;
            e->key_n[k] = 1;
        } else {
            e->pending++; /* every slot taken: counted on its own */
        }
    } else {
        ok = false;
    }
    pthread_mutex_unlock(lock);
    return ok;
}

bool throttle_end(struct throttle *t, const struct addr *ip, uint64_t now_ms, uint64_t key,
                  bool failed)
{
    /* Books are settled even with throttling off now: it may have been on
     * when the attempt began (a reload), and a slot never given back
     * would count as a guess for good once it is on again. */
    if (!t->e)
        return false;
    pthread_mutex_t *lock;
    struct throttle_entry *set = lock_set(t, ip, &lock);
    struct throttle_entry *e = NULL;
    for (int i = 0; i < THROTTLE_WAYS && !e; i++)
        if (same_ip(&set[i], ip))
            e = &set[i];
    /* Per key, slot count plus unslotted attempts is the number in flight,
     * so taking one from the slot when there is one never goes below 0. */
    int k = e ? key_slot(e, key) : -1;
    if (k >= 0)
        e->key_n[k]--;
    else if (e && e->pending)
        e->pending--;
    bool starts_block = false;
    if (failed && t->max_failures)
        starts_block = entry_fail(t, e ? e : entry_get(t, set, ip, now_ms), now_ms);
    pthread_mutex_unlock(lock);
    return starts_block;
}
