/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bindmap.c: the process-wide table of primary-session destinations that
 * BIND falls back to (see bindmap.h). It must stay cheap and lock-free:
 * writers are workers that just connected a CONNECT, readers are workers
 * answering a BIND, and neither may wait for the other. It never
 * allocates; the table lives in .bss and is touched only when bind = yes.
 *
 * The seqlock follows Boehm, "Can Seqlocks Get Along With Programming
 * Language Memory Models?" (MSPC 2012), in the variant without fences:
 * data are stored with release and loaded with acquire, so a reader that
 * saw any field of a newer write also sees that write's odd sequence
 * number when it looks again, and retries.
 */
#include "relay/bindmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include "crypto/fcrypto.h"

#define BINDMAP_READ_TRIES 16

/* One client. seq is even while the slot is stable and odd while a writer
 * fills it; an empty slot has client family 0. 64 bytes: one cache line. */
struct bindmap_slot {
    _Alignas(64) _Atomic uint32_t seq;
    _Atomic uint32_t fams; /* client family | destination family << 8 */
    _Atomic uint64_t when; /* ms */
    _Atomic uint64_t cli[2];
    _Atomic uint64_t dst[2];
};

static struct bindmap_slot slots[BINDMAP_SLOTS];
static uint8_t hash_key[FCRYPTO_SHORTKEY_LEN];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

_Static_assert((BINDMAP_SLOTS & (BINDMAP_SLOTS - 1)) == 0, "BINDMAP_SLOTS: a power of two");
_Static_assert(sizeof(struct bindmap_slot) == 64, "a slot is one cache line");

/* A key of our own: which clients share a slot is not for them to pick. */
static void hash_init(void)
{
    fcrypto_init();
    fcrypto_random(hash_key, sizeof(hash_key));
}

/* The address as the table keeps it: IPv4-mapped made plain, bytes beyond
 * the family's length zero, no port. False when unset. */
static bool normalize(const struct addr *a, struct addr *out)
{
    memset(out, 0, sizeof(*out));
    if (!a || (a->family != AF_INET && a->family != AF_INET6))
        return false;
    struct addr t = *a;
    addr_unmap(&t);
    out->family = t.family;
    memcpy(out->ip, t.ip, t.family == AF_INET6 ? 16 : 4);
    return true;
}

static uint32_t slot_of(const struct addr *n)
{
    uint8_t k[17];
    size_t len = n->family == AF_INET6 ? 16 : 4;
    k[0] = n->family;
    memcpy(k + 1, n->ip, len);
    pthread_once(&hash_once, hash_init);
    return (uint32_t)(fcrypto_hash64(hash_key, k, 1 + len) & (BINDMAP_SLOTS - 1));
}

uint32_t bindmap_slot(const struct addr *client)
{
    struct addr n;
    normalize(client, &n);
    return slot_of(&n);
}

static void ip_to_words(const struct addr *n, uint64_t w[2])
{
    memcpy(w, n->ip, 16);
}

static void words_to_ip(const uint64_t w[2], uint8_t family, struct addr *out)
{
    memset(out, 0, sizeof(*out));
    out->family = family;
    memcpy(out->ip, w, 16);
}

/* Take the slot for writing: false when another writer has it (or has
 * just had it). On true, *seq is the odd value to end with seq + 1. */
static bool slot_lock(struct bindmap_slot *s, uint32_t *seq)
{
    uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if (v & 1)
        return false;
    if (!atomic_compare_exchange_strong_explicit(&s->seq, &v, v + 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return false;
    *seq = v + 1;
    return true;
}

static void slot_unlock(struct bindmap_slot *s, uint32_t seq)
{
    atomic_store_explicit(&s->seq, seq + 1, memory_order_release);
}

bool bindmap_record(const struct addr *client, const struct addr *dst, uint64_t now_ms)
{
    struct addr c, d;
    if (!normalize(client, &c) || !normalize(dst, &d))
        return false;
    struct bindmap_slot *s = &slots[slot_of(&c)];
    uint32_t seq;
    if (!slot_lock(s, &seq))
        return false; /* best effort: a note from the same instant is not worth a wait */
    uint64_t cw[2], dw[2];
    ip_to_words(&c, cw);
    ip_to_words(&d, dw);
    /* Release stores: a reader that sees one of them also sees seq odd. */
    atomic_store_explicit(&s->fams, (uint32_t)c.family | (uint32_t)d.family << 8,
                          memory_order_release);
    atomic_store_explicit(&s->when, now_ms, memory_order_release);
    atomic_store_explicit(&s->cli[0], cw[0], memory_order_release);
    atomic_store_explicit(&s->cli[1], cw[1], memory_order_release);
    atomic_store_explicit(&s->dst[0], dw[0], memory_order_release);
    atomic_store_explicit(&s->dst[1], dw[1], memory_order_release);
    slot_unlock(s, seq);
    return true;
}

bool bindmap_lookup(const struct addr *client, uint64_t now_ms, uint64_t max_age_ms,
                    struct addr *dst, uint64_t *when_ms)
{
    struct addr c;
    if (!normalize(client, &c))
        return false;
    struct bindmap_slot *s = &slots[slot_of(&c)];
    for (int i = 0; i < BINDMAP_READ_TRIES; i++) {
        uint32_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (seq & 1)
            continue; /* a writer is in the slot; it leaves within a few stores */
        uint32_t fams = atomic_load_explicit(&s->fams, memory_order_acquire);
        uint64_t when = atomic_load_explicit(&s->when, memory_order_acquire);
        uint64_t cw[2], dw[2];
        cw[0] = atomic_load_explicit(&s->cli[0], memory_order_acquire);
        cw[1] = atomic_load_explicit(&s->cli[1], memory_order_acquire);
        dw[0] = atomic_load_explicit(&s->dst[0], memory_order_acquire);
        dw[1] = atomic_load_explicit(&s->dst[1], memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
            continue; /* torn: read again */
        struct addr got;
        words_to_ip(cw, (uint8_t)(fams & 0xff), &got);
        if (!got.family || !addr_equal(&got, &c))
            return false;                                 /* empty, or another client's */
        uint64_t age = now_ms > when ? now_ms - when : 0; /* another worker's clock may lead */
        if (age > max_age_ms)
            return false;
        words_to_ip(dw, (uint8_t)(fams >> 8), dst);
        if (when_ms)
            *when_ms = when;
        return true;
    }
    return false;
}

void bindmap_clear(void)
{
    for (uint32_t i = 0; i < BINDMAP_SLOTS; i++) {
        struct bindmap_slot *s = &slots[i];
        uint32_t seq;
        if (!slot_lock(s, &seq))
            continue;
        atomic_store_explicit(&s->fams, 0, memory_order_release);
        slot_unlock(s, seq);
    }
}
