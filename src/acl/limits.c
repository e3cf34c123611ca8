/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limits.c: the shared tables of limits.h.
 */
#include "acl/limits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t ip_len(const struct addr *a)
{
    return a->family == AF_INET6 ? 16 : 4;
}

int limits_init(struct limits *l, uint32_t ip_entries)
{
    memset(l, 0, sizeof(*l));
    l->nsets = (ip_entries + LIMITS_WAYS - 1) / LIMITS_WAYS;
    if (!l->nsets)
        l->nsets = 1;
    l->ips = calloc((size_t)l->nsets * LIMITS_WAYS, sizeof(*l->ips));
    l->nusers = 1024;
    l->users = calloc(l->nusers, sizeof(*l->users));
    if (!l->ips || !l->users) {
        free(l->ips);
        free(l->users);
        return -ENOMEM;
    }
    fcrypto_init();
    fcrypto_random(l->key, sizeof(l->key));
    for (int i = 0; i < LIMITS_STRIPES; i++) {
        pthread_mutex_init(&l->locks[i], NULL);
        pthread_mutex_init(&l->user_locks[i], NULL);
    }
    return 0;
}

void limits_fini(struct limits *l)
{
    if (!l->ips)
        return;
    for (uint32_t i = 0; i < l->nusers; i++) {
        while (l->users[i]) {
            struct limits_user *u = l->users[i];
            l->users[i] = u->next;
            free(u);
        }
    }
    for (int i = 0; i < LIMITS_STRIPES; i++) {
        pthread_mutex_destroy(&l->locks[i]);
        pthread_mutex_destroy(&l->user_locks[i]);
    }
    free(l->ips);
    free(l->users);
    l->ips = NULL;
    l->users = NULL;
}

static struct limits_ip *ip_set(struct limits *l, const struct addr *ip, pthread_mutex_t **lock)
{
    uint8_t k[17];
    k[0] = ip->family;
    memcpy(k + 1, ip->ip, ip_len(ip));
    uint32_t set = (uint32_t)(fcrypto_hash64(l->key, k, 1 + ip_len(ip)) % l->nsets);
    *lock = &l->locks[set % LIMITS_STRIPES];
    return &l->ips[(size_t)set * LIMITS_WAYS];
}

static bool ip_is(const struct limits_ip *e, const struct addr *ip)
{
    return e->family == ip->family && memcmp(e->ip, ip->ip, ip_len(ip)) == 0;
}

enum limits_verdict limits_ip_admit(struct limits *l, const struct addr *ip, uint64_t now_us,
                                    uint32_t max, uint32_t rate, uint32_t burst, bool *log,
                                    bool *tracked)
{
    *log = false;
    *tracked = false;
    if (!max && !rate)
        return LIMITS_OK;
    pthread_mutex_t *lock;
    struct limits_ip *set = ip_set(l, ip, &lock);
    pthread_mutex_lock(lock);
    struct limits_ip *e = NULL;
    for (int i = 0; i < LIMITS_WAYS && !e; i++)
        if (ip_is(&set[i], ip))
            e = &set[i];
    if (!e) {
        /* A free way, or one with no connection open whose bucket has
         * refilled (it would behave exactly like a new entry). */
        for (int i = 0; i < LIMITS_WAYS && !e; i++) {
            struct limits_ip *c = &set[i];
            if (!c->family ||
                (!c->conns && (!rate || bucket_avail(&c->rate, rate, burst, now_us) >= burst)))
                e = c;
        }
        if (!e) {
            /* Every way is busy: the oldest without open connections, else
             * no tracking at all for this one (never refuse a stranger for
             * lack of room). */
            for (int i = 0; i < LIMITS_WAYS; i++)
                if (!set[i].conns && (!e || set[i].seen_us < e->seen_us))
                    e = &set[i];
            if (!e) {
                l->untracked++;
                pthread_mutex_unlock(lock);
                return LIMITS_OK;
            }
        }
        memset(e, 0, sizeof(*e));
        e->family = ip->family;
        memcpy(e->ip, ip->ip, ip_len(ip));
        bucket_init(&e->rate, burst, now_us);
    }
    e->seen_us = now_us;
    enum limits_verdict v = LIMITS_OK;
    if (max && e->conns >= max)
        v = LIMITS_PER_IP;
    else if (rate && !bucket_take(&e->rate, rate, burst, now_us, 1))
        v = LIMITS_RATE;
    if (v == LIMITS_OK) {
        e->conns++;
        *tracked = true;
    } else if (!e->logged_us || (now_us > e->logged_us && now_us - e->logged_us >= 1000000u)) {
        /* Workers' clocks are cached per loop iteration, so one may be a
         * little behind the time another stored: earlier counts as recent. */
        e->logged_us = now_us ? now_us : 1;
        *log = true;
    }
    pthread_mutex_unlock(lock);
    return v;
}

void limits_ip_release(struct limits *l, const struct addr *ip)
{
    pthread_mutex_t *lock;
    struct limits_ip *set = ip_set(l, ip, &lock);
    pthread_mutex_lock(lock);
    for (int i = 0; i < LIMITS_WAYS; i++) {
        if (ip_is(&set[i], ip)) {
            if (set[i].conns)
                set[i].conns--;
            break;
        }
    }
    pthread_mutex_unlock(lock);
}

static uint32_t user_bucket(struct limits *l, const char *user, pthread_mutex_t **lock)
{
    uint32_t b = (uint32_t)fcrypto_hash64(l->key, user, strlen(user)) & (l->nusers - 1);
    *lock = &l->user_locks[b % LIMITS_STRIPES];
    return b;
}

struct limits_user *limits_user_admit(struct limits *l, const char *user, uint32_t max,
                                      uint64_t bw_burst, uint64_t now_us, bool *over)
{
    *over = false;
    pthread_mutex_t *lock;
    uint32_t b = user_bucket(l, user, &lock);
    pthread_mutex_lock(lock);
    struct limits_user *u = l->users[b];
    while (u && strcmp(u->name, user) != 0)
        u = u->next;
    if (!u) {
        size_t n = strlen(user);
        u = calloc(1, sizeof(*u) + n + 1);
        if (!u) {
            pthread_mutex_unlock(lock);
            return NULL; /* untracked: admitted without a limit */
        }
        memcpy(u->name, user, n + 1);
        bucket_init(&u->bw, bw_burst, now_us);
        u->next = l->users[b];
        l->users[b] = u;
    }
    if (max && u->sessions >= max) {
        *over = true;
        u = NULL;
    } else {
        u->sessions++;
    }
    pthread_mutex_unlock(lock);
    return u;
}

void limits_user_release(struct limits *l, struct limits_user *u)
{
    if (!u)
        return;
    pthread_mutex_t *lock;
    uint32_t b = user_bucket(l, u->name, &lock);
    pthread_mutex_lock(lock);
    if (--u->sessions == 0) {
        struct limits_user **pp = &l->users[b];
        while (*pp && *pp != u)
            pp = &(*pp)->next;
        if (*pp)
            *pp = u->next;
        free(u);
    }
    pthread_mutex_unlock(lock);
}

uint64_t limits_user_bw_avail(struct limits *l, struct limits_user *u, uint64_t rate,
                              uint64_t burst, uint64_t now_us, uint64_t want, uint64_t *wait_us)
{
    pthread_mutex_t *lock;
    (void)user_bucket(l, u->name, &lock);
    pthread_mutex_lock(lock);
    uint64_t avail = bucket_avail(&u->bw, rate, burst, now_us);
    if (avail > want)
        avail = want;
    if (!avail)
        *wait_us = bucket_wait_us(&u->bw, rate, want < burst ? want : burst);
    pthread_mutex_unlock(lock);
    return avail;
}

void limits_user_bw_spend(struct limits *l, struct limits_user *u, uint64_t rate, uint64_t burst,
                          uint64_t now_us, uint64_t n)
{
    pthread_mutex_t *lock;
    (void)user_bucket(l, u->name, &lock);
    pthread_mutex_lock(lock);
    bucket_spend(&u->bw, rate, burst, now_us, n);
    pthread_mutex_unlock(lock);
}
