/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ticket.h: the session-ticket key ring of TLS servers (RFC 8446 section
 * 4.6.1, RFC 5077): a current key that seals new tickets and the previous
 * one, which still opens the tickets it sealed (and asks for a renewal),
 * rotated every [tls] ticket_rotation. One ring lives for the whole process
 * (tls_tickets()), not with a configuration: every server context of every
 * reload installs the same ring, so tickets survive SIGHUP. Readers (the
 * workers' handshakes) take a snapshot pointer with one atomic load and no
 * lock; one thread (the supervisor) rotates by publishing a new snapshot.
 * A snapshot replaced by a rotation is freed two rotations later (at least
 * 2 s: rotations are at least 1 s apart), long after any reader let go of
 * it. The ring holds keys only: it knows nothing about sessions or configs.
 */
#ifndef FERRY_TLS_TICKET_H
#define FERRY_TLS_TICKET_H

#include <stdbool.h>
#include <stdint.h>

#define TLS_TICKET_NAME_LEN 16
#define TLS_TICKET_MIN_MS   1000u                   /* ticket_rotation's bounds */
#define TLS_TICKET_MAX_MS   (7u * 24 * 3600 * 1000) /* 7 days */

struct tls_ticket_key {
    uint8_t name[TLS_TICKET_NAME_LEN]; /* sent in the clear in each ticket */
    uint8_t aes[32];                   /* AES-256-CBC */
    uint8_t hmac[32];                  /* HMAC-SHA256 */
};

struct tls_ticket_ring;

/* A ring with a fresh current key (from the CSPRNG) and no previous one.
 * NULL: no memory or no randomness. */
struct tls_ticket_ring *tls_ticket_ring_new(void);
/* Free the ring and its snapshots (no reader may be left). NULL: no-op. */
void tls_ticket_ring_free(struct tls_ticket_ring *r);
/* Make a new current key; the current one becomes the previous, the
 * previous one is forgotten. One thread at a time. -ENOMEM or -EIO (no
 * randomness): the ring is unchanged. */
int tls_ticket_ring_rotate(struct tls_ticket_ring *r);
/* Copy the key that seals new tickets into *out. Any thread. */
void tls_ticket_ring_current(struct tls_ticket_ring *r, struct tls_ticket_key *out);
/* The key named name, copied into *out: 1 when it is the current key, 2
 * when it is the previous one (the ticket opens; a new one should be
 * issued), 0 when neither (too old or never ours). Any thread. */
int tls_ticket_ring_find(struct tls_ticket_ring *r, const uint8_t *name,
                         struct tls_ticket_key *out);

/* The process's ring, made at the first call (NULL if that failed). */
struct tls_ticket_ring *tls_tickets(void);
/* The supervisor's clock tick: rotate the process's ring when every_ms
 * passed since the last rotation (every_ms 0: tickets are off, nothing to
 * do); *rotated says whether it did. Returns the ms until the next
 * rotation is due, UINT64_MAX when none is. One thread only. */
uint64_t tls_tickets_tick(uint64_t now_ms, uint32_t every_ms, bool *rotated);

#endif
