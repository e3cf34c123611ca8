/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shared.h: the process-wide second level of the verified-credential
 * cache. Each worker's own cache (cache.h) answers without touching shared
 * memory; on a miss, this table tells whether any worker verified the same
 * name and password lately, so a client pays one Argon2id per process and
 * TTL, not one per worker its connections land on (SO_REUSEPORT spreads
 * them over all workers).
 *
 * One slot per name (direct-mapped by the keyed name hash): the latest
 * success for that name. Lock-free, a seqlock per slot as in
 * relay/bindmap.c: a writer that finds its slot taken skips (a cache is
 * best effort), a reader that meets a writer sees a miss and pays the full
 * verification, as it would have without this table. Only successes are
 * stored; an entry stops matching when the user's credential changes (its
 * version) or expires.
 */
#ifndef FERRY_AUTH_SHARED_H
#define FERRY_AUTH_SHARED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth/cache.h"

#define AUTH_SHARED_TAGW (FCRYPTO_TAG_LEN / 8)

struct auth_shared_slot {
    _Alignas(64) _Atomic uint32_t seq; /* odd while a writer fills the slot */
    _Atomic uint64_t name_hash;
    _Atomic uint64_t version;
    _Atomic uint64_t expires_ms; /* 0: empty */
    _Atomic uint64_t tag[AUTH_SHARED_TAGW];
};

struct auth_shared {
    struct auth_shared_slot *s;
    uint32_t mask;
    _Atomic uint64_t hits, stores, skipped; /* skipped: slot busy, not stored */
};

/* At least `entries` slots (a power of two). Returns 0 or -ENOMEM. */
int auth_shared_init(struct auth_shared *sh, uint32_t entries);
void auth_shared_fini(struct auth_shared *sh);

/* A live entry for this name, version and tag? On true, *expires_ms is
 * when it ends (for the worker's own cache). Constant-time tag compare. */
bool auth_shared_check(struct auth_shared *sh, const struct auth_cache_probe *p, uint64_t version,
                       uint64_t now_ms, uint64_t *expires_ms);
/* Remember a success until now_ms + ttl_ms (0: do nothing). */
void auth_shared_store(struct auth_shared *sh, const struct auth_cache_probe *p, uint64_t version,
                       uint64_t now_ms, uint32_t ttl_ms);

#endif
