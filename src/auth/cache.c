/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.c: a 4-way set-associative table. The set is chosen by a keyed
 * hash of the name; within a set an entry is found by that hash and proven
 * by the keyed BLAKE2b tag of name and password, compared in constant time.
 * Replacement takes an empty or expired way, else the one expiring first.
 */
#include "auth/cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void auth_keys_init(struct auth_keys *k)
{
    fcrypto_init();
    fcrypto_random(k->tag_key, sizeof(k->tag_key));
    fcrypto_random(k->hash_key, sizeof(k->hash_key));
}

int auth_cache_init(struct auth_cache *c, uint32_t entries, const struct auth_keys *keys)
{
    memset(c, 0, sizeof(*c));
    c->nsets = (entries + AUTH_CACHE_WAYS - 1) / AUTH_CACHE_WAYS;
    if (c->nsets == 0)
        c->nsets = 1;
    c->e = calloc((size_t)c->nsets * AUTH_CACHE_WAYS, sizeof(*c->e));
    if (!c->e)
        return -ENOMEM;
    struct auth_keys fresh;
    if (!keys) {
        auth_keys_init(&fresh);
        keys = &fresh;
    }
    memcpy(c->tag_key, keys->tag_key, sizeof(c->tag_key));
    memcpy(c->hash_key, keys->hash_key, sizeof(c->hash_key));
    if (keys == &fresh)
        explicit_bzero(&fresh, sizeof(fresh));
    return 0;
}

void auth_cache_fini(struct auth_cache *c)
{
    if (c->e)
        explicit_bzero(c->e, (size_t)c->nsets * AUTH_CACHE_WAYS * sizeof(*c->e));
    free(c->e);
    c->e = NULL;
}

static struct auth_cache_entry *set_of(struct auth_cache *c, uint64_t h)
{
    return &c->e[(size_t)(h % c->nsets) * AUTH_CACHE_WAYS];
}

void auth_cache_probe(const struct auth_cache *c, const char *user, size_t ulen, const char *pass,
                      size_t plen, struct auth_cache_probe *out)
{
    out->name_hash = fcrypto_hash64(c->hash_key, user, ulen);
    fcrypto_tag2(out->tag, c->tag_key, user, ulen, pass, plen);
}

bool auth_cache_check(struct auth_cache *c, const struct auth_cache_probe *p, uint64_t version,
                      uint64_t now_ms)
{
    if (!c->e)
        return false;
    struct auth_cache_entry *set = set_of(c, p->name_hash);
    for (int i = 0; i < AUTH_CACHE_WAYS; i++) {
        struct auth_cache_entry *e = &set[i];
        if (!e->expires_ms || e->name_hash != p->name_hash)
            continue;
        if (e->expires_ms <= now_ms || e->version != version) {
            memset(e, 0, sizeof(*e)); /* expired, or the credential changed */
            c->evictions++;
            break;
        }
        if (fcrypto_equal(p->tag, e->tag, sizeof(e->tag))) {
            c->hits++;
            return true;
        }
        break; /* wrong password: full cost, and the good entry stays */
    }
    c->misses++;
    return false;
}

void auth_cache_store(struct auth_cache *c, const struct auth_cache_probe *p, uint64_t version,
                      uint64_t now_ms, uint32_t ttl_ms)
{
    if (!ttl_ms || !c->e)
        return;
    struct auth_cache_entry *set = set_of(c, p->name_hash), *victim = NULL;
    for (int i = 0; i < AUTH_CACHE_WAYS && !victim; i++)
        if (set[i].expires_ms && set[i].name_hash == p->name_hash)
            victim = &set[i];
    for (int i = 0; i < AUTH_CACHE_WAYS && !victim; i++)
        if (set[i].expires_ms <= now_ms)
            victim = &set[i]; /* empty (0) or expired */
    if (!victim) {
        victim = &set[0];
        for (int i = 1; i < AUTH_CACHE_WAYS; i++)
            if (set[i].expires_ms < victim->expires_ms)
                victim = &set[i];
        c->evictions++;
    }
    victim->name_hash = p->name_hash;
    victim->version = version;
    victim->expires_ms = now_ms + ttl_ms;
    memcpy(victim->tag, p->tag, sizeof(victim->tag));
}
