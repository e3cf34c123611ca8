/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ban.c: the table of ban.h.
 */
#include "acl/ban.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t ip_len(const struct addr *a)
{
    return a->family == AF_INET6 ? 16 : 4;
}

int ban_init(struct ban_table *t, uint32_t entries)
{
    memset(t, 0, sizeof(*t));
    t->nsets = (entries + BAN_WAYS - 1) / BAN_WAYS;
    if (!t->nsets)
        t->nsets = 1;
    t->e = calloc((size_t)t->nsets * BAN_WAYS, sizeof(*t->e));
    if (!t->e)
        return -ENOMEM;
    fcrypto_init();
    fcrypto_random(t->key, sizeof(t->key));
    for (int i = 0; i < BAN_STRIPES; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return 0;
}

void ban_fini(struct ban_table *t)
{
    if (!t->e)
        return;
    for (int i = 0; i < BAN_STRIPES; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->e);
    t->e = NULL;
}

static struct ban_entry *set_of(struct ban_table *t, const struct addr *a, pthread_mutex_t **lock)
{
    uint8_t k[17];
    k[0] = a->family;
    memcpy(k + 1, a->ip, ip_len(a));
    uint32_t set = (uint32_t)(fcrypto_hash64(t->key, k, 1 + ip_len(a)) % t->nsets);
    *lock = &t->locks[set % BAN_STRIPES];
    return &t->e[(size_t)set * BAN_WAYS];
}

static bool is(const struct ban_entry *e, const struct addr *a)
{
    return e->family == a->family && memcmp(e->ip, a->ip, ip_len(a)) == 0;
}

bool ban_check(struct ban_table *t, const struct addr *a, uint64_t now_us)
{
    pthread_mutex_t *lock;
    struct ban_entry *s = set_of(t, a, &lock);
    bool banned = false;
    pthread_mutex_lock(lock);
    for (int i = 0; i < BAN_WAYS; i++)
        if (is(&s[i], a) && s[i].until_us > now_us)
            banned = true;
    pthread_mutex_unlock(lock);
    return banned;
}

/* Is e a better way to give away than v: not banned before banned; among
 * the unbanned the one seen longest ago, among the banned the first to end. */
static bool better_victim(const struct ban_entry *e, const struct ban_entry *v, uint64_t now_us)
{
    bool eb = e->until_us > now_us, vb = v->until_us > now_us;
    if (eb != vb)
        return !eb;
    return eb ? e->until_us < v->until_us : e->seen_us < v->seen_us;
}

/* The way of a in set s, or the one to give it (a free one first). */
static struct ban_entry *way_for(struct ban_entry *s, const struct addr *a, uint64_t now_us)
{
    for (int i = 0; i < BAN_WAYS; i++)
        if (is(&s[i], a))
            return &s[i];
    struct ban_entry *v = NULL;
    for (int i = 0; i < BAN_WAYS; i++) {
        if (!s[i].family) {
            v = &s[i];
            break;
        }
        if (!v || better_victim(&s[i], v, now_us))
            v = &s[i];
    }
    memset(v, 0, sizeof(*v));
    v->family = a->family;
    memcpy(v->ip, a->ip, ip_len(a));
    return v;
}

bool ban_fail(struct ban_table *t, const struct addr *a, uint64_t now_us, uint32_t after,
              uint64_t window_us, uint64_t ban_us)
{
    if (!after || !t->e)
        return false;
    pthread_mutex_t *lock;
    struct ban_entry *s = set_of(t, a, &lock);
    bool banned = false;
    pthread_mutex_lock(lock);
    struct ban_entry *e = way_for(s, a, now_us);
    e->seen_us = now_us;
    if (e->until_us > now_us) {
        pthread_mutex_unlock(lock);
        return false; /* banned already: its failures do not extend it */
    }
    if (e->until_us || !e->failures || now_us - e->window_start_us > window_us) {
        e->until_us = 0;
        e->failures = 0;
        e->window_start_us = now_us;
    }
    if (++e->failures >= after) {
        e->until_us = now_us + ban_us;
        e->failures = 0;
        banned = true;
    }
    pthread_mutex_unlock(lock);
    return banned;
}
