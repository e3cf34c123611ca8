/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shared.c: the process-wide verified-credential table (shared.h).
 *
 * Seqlock as in relay/bindmap.c (Boehm, MSPC 2012, the variant without
 * fences): fields are stored with release and loaded with acquire, so a
 * reader that saw any field of a newer write also sees that write's odd
 * sequence number when it looks again, and treats the slot as a miss.
 */
#include "auth/shared.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int auth_shared_init(struct auth_shared *sh, uint32_t entries)
{
    memset(sh, 0, sizeof(*sh));
    uint32_t n = 1;
    while (n < entries && n < (1u << 24))
        n <<= 1;
    sh->s = aligned_alloc(64, (size_t)n * sizeof(*sh->s));
    if (!sh->s)
        return -ENOMEM;
    memset(sh->s, 0, (size_t)n * sizeof(*sh->s));
    sh->mask = n - 1;
    return 0;
}

void auth_shared_fini(struct auth_shared *sh)
{
    if (sh->s)
        explicit_bzero(sh->s, ((size_t)sh->mask + 1) * sizeof(*sh->s));
    free(sh->s);
    sh->s = NULL;
}

static struct auth_shared_slot *slot_of(struct auth_shared *sh, uint64_t name_hash)
{
    return &sh->s[name_hash & sh->mask];
}

bool auth_shared_check(struct auth_shared *sh, const struct auth_cache_probe *p, uint64_t version,
                       uint64_t now_ms, uint64_t *expires_ms)
{
    if (!sh->s)
        return false;
    struct auth_shared_slot *s = slot_of(sh, p->name_hash);
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq & 1)
        return false;
    uint64_t nh = atomic_load_explicit(&s->name_hash, memory_order_acquire);
    uint64_t ver = atomic_load_explicit(&s->version, memory_order_acquire);
    uint64_t exp = atomic_load_explicit(&s->expires_ms, memory_order_acquire);
    uint64_t tag[AUTH_SHARED_TAGW];
    for (int i = 0; i < AUTH_SHARED_TAGW; i++)
        tag[i] = atomic_load_explicit(&s->tag[i], memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
        return false; /* a writer came by: a miss, never a mix of two entries */
    if (!exp || exp <= now_ms || nh != p->name_hash || ver != version)
        return false;
    if (!fcrypto_equal(p->tag, tag, sizeof(tag)))
        return false;
    *expires_ms = exp;
    atomic_fetch_add_explicit(&sh->hits, 1, memory_order_relaxed);
    return true;
}

void auth_shared_store(struct auth_shared *sh, const struct auth_cache_probe *p, uint64_t version,
                       uint64_t now_ms, uint32_t ttl_ms)
{
    if (!ttl_ms || !sh->s)
        return;
    struct auth_shared_slot *s = slot_of(sh, p->name_hash);
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if ((seq & 1) || !atomic_compare_exchange_strong_explicit(
                         &s->seq, &seq, seq + 1, memory_order_acquire, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&sh->skipped, 1, memory_order_relaxed);
        return; /* another worker is writing this slot right now */
    }
    uint64_t tag[AUTH_SHARED_TAGW];
    memcpy(tag, p->tag, sizeof(tag));
    atomic_store_explicit(&s->name_hash, p->name_hash, memory_order_release);
    atomic_store_explicit(&s->version, version, memory_order_release);
    atomic_store_explicit(&s->expires_ms, now_ms + ttl_ms, memory_order_release);
    for (int i = 0; i < AUTH_SHARED_TAGW; i++)
        atomic_store_explicit(&s->tag[i], tag[i], memory_order_release);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
    atomic_fetch_add_explicit(&sh->stores, 1, memory_order_relaxed);
}
