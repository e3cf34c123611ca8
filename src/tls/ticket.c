/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ticket.c: the session-ticket key ring (ticket.h). Keys come from
 * OpenSSL's CSPRNG (RAND_bytes). A snapshot (current and previous key) is
 * immutable once published; rotation builds a new one and swaps the
 * pointer (release), readers load it (acquire) and copy the key they need
 * out of it, so no reader holds a snapshot beyond one function call. It
 * neither logs nor reads files.
 */
#include "tls/ticket.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

struct snapshot {
    struct tls_ticket_key cur, prev;
    bool has_prev;
};

struct tls_ticket_ring {
    _Atomic(struct snapshot *) snap;
    struct snapshot *retired[2]; /* the rotator's: freed two rotations on */
    uint64_t last_ms;            /* the rotator's: when it last rotated */
};

static int key_new(struct tls_ticket_key *k)
{
    return RAND_bytes((unsigned char *)k, (int)sizeof(*k)) == 1 ? 0 : -EIO;
}

struct tls_ticket_ring *tls_ticket_ring_new(void)
{
    struct tls_ticket_ring *r = calloc(1, sizeof(*r));
    struct snapshot *s = calloc(1, sizeof(*s));
    if (!r || !s || key_new(&s->cur) < 0) {
        free(r);
        free(s);
        return NULL;
    }
    atomic_init(&r->snap, s);
    return r;
}

static void snapshot_free(struct snapshot *s)
{
    if (s) {
        OPENSSL_cleanse(s, sizeof(*s));
        free(s);
    }
}

void tls_ticket_ring_free(struct tls_ticket_ring *r)
{
    if (!r)
        return;
    snapshot_free(atomic_load(&r->snap));
    snapshot_free(r->retired[0]);
    snapshot_free(r->retired[1]);
    free(r);
}

int tls_ticket_ring_rotate(struct tls_ticket_ring *r)
{
    struct snapshot *old = atomic_load_explicit(&r->snap, memory_order_relaxed);
    struct snapshot *s = malloc(sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (key_new(&s->cur) < 0) {
        free(s);
        return -EIO;
    }
    s->prev = old->cur;
    s->has_prev = true;
    atomic_store_explicit(&r->snap, s, memory_order_release);
    snapshot_free(r->retired[1]);
    r->retired[1] = r->retired[0];
    r->retired[0] = old;
    return 0;
}

void tls_ticket_ring_current(struct tls_ticket_ring *r, struct tls_ticket_key *out)
{
    *out = atomic_load_explicit(&r->snap, memory_order_acquire)->cur;
}

int tls_ticket_ring_find(struct tls_ticket_ring *r, const uint8_t *name, struct tls_ticket_key *out)
{
    const struct snapshot *s = atomic_load_explicit(&r->snap, memory_order_acquire);
    if (CRYPTO_memcmp(s->cur.name, name, TLS_TICKET_NAME_LEN) == 0) {
        *out = s->cur;
        return 1;
    }
    if (s->has_prev && CRYPTO_memcmp(s->prev.name, name, TLS_TICKET_NAME_LEN) == 0) {
        *out = s->prev;
        return 2;
    }
    return 0;
}

/* ---- the process's ring ------------------------------------------------- */

static struct tls_ticket_ring *ring;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_init(void)
{
    ring = tls_ticket_ring_new();
}

struct tls_ticket_ring *tls_tickets(void)
{
    pthread_once(&ring_once, ring_init);
    return ring;
}

uint64_t tls_tickets_tick(uint64_t now_ms, uint32_t every_ms, bool *rotated)
{
    struct tls_ticket_ring *r = tls_tickets();
    *rotated = false;
    if (!r || !every_ms)
        return UINT64_MAX;
    if (every_ms < TLS_TICKET_MIN_MS)
        every_ms = TLS_TICKET_MIN_MS;
    if (!r->last_ms)
        r->last_ms = now_ms;
    if (now_ms - r->last_ms >= every_ms) {
        /* On failure the old keys stay and the next tick tries again. */
        if (tls_ticket_ring_rotate(r) == 0) {
            r->last_ms = now_ms;
            *rotated = true;
        } else {
            return 1000;
        }
    }
    return r->last_ms + every_ms - now_ms;
}
