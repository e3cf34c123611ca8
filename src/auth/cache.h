/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache.h: the verified-credential cache of one worker. After a successful
 * verification it keeps a keyed tag of (name, password) with an expiry;
 * a later handshake whose tag matches skips Argon2. Only successes are
 * stored. A wrong password does not evict the good entry. An entry stops
 * matching when the user's credential changes (its version) or expires.
 *
 * Not thread-safe: each worker owns one, so a hit costs no lock. Time is
 * passed in (milliseconds), so the cache is tested without a clock.
 */
#ifndef FERRY_AUTH_CACHE_H
#define FERRY_AUTH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/fcrypto.h"

#define AUTH_CACHE_WAYS 4

/* What the tags and name hashes are keyed with: random, once per process,
 * so every worker's cache and the shared table (shared.h) agree. */
struct auth_keys {
    uint8_t tag_key[FCRYPTO_KEY_LEN];
    uint8_t hash_key[FCRYPTO_SHORTKEY_LEN];
};

/* Fresh random keys. */
void auth_keys_init(struct auth_keys *k);

struct auth_cache_entry {
    uint64_t name_hash;
    uint64_t version;
    uint64_t expires_ms; /* 0 = empty */
    uint8_t tag[FCRYPTO_TAG_LEN];
};

struct auth_cache {
    struct auth_cache_entry *e;
    uint32_t nsets;
    uint8_t tag_key[FCRYPTO_KEY_LEN];
    uint8_t hash_key[FCRYPTO_SHORTKEY_LEN];
    uint64_t hits, misses, evictions;
};

/* What identifies one (name, password) attempt: computed once, used to
 * check and, after a successful verification, to store. */
struct auth_cache_probe {
    uint64_t name_hash;
    uint8_t tag[FCRYPTO_TAG_LEN];
};

/* Same name and password (as seen through the keyed tag)? Constant time. */
static inline bool auth_cache_probe_equal(const struct auth_cache_probe *a,
                                          const struct auth_cache_probe *b)
{
    uint8_t d = 0;
    for (size_t i = 0; i < FCRYPTO_TAG_LEN; i++)
        d |= (uint8_t)(a->tag[i] ^ b->tag[i]);
    return d == 0 && a->name_hash == b->name_hash;
}

/* At most `entries` (rounded up to a multiple of the ways) are kept. Keys
 * are copied from keys, or fresh random bytes when it is NULL. Returns 0
 * or -ENOMEM. */
int auth_cache_init(struct auth_cache *c, uint32_t entries, const struct auth_keys *keys);
void auth_cache_fini(struct auth_cache *c);

void auth_cache_probe(const struct auth_cache *c, const char *user, size_t ulen, const char *pass,
                      size_t plen, struct auth_cache_probe *out);
/* A live entry for this user, with this version and this tag? */
bool auth_cache_check(struct auth_cache *c, const struct auth_cache_probe *p, uint64_t version,
                      uint64_t now_ms);
/* Remember a success for ttl_ms (0: do nothing). */
void auth_cache_store(struct auth_cache *c, const struct auth_cache_probe *p, uint64_t version,
                      uint64_t now_ms, uint32_t ttl_ms);

#endif
