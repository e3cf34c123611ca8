/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttle.h: failed-authentication throttling per client address, shared
 * by all workers. After max_failures failures within window_ms, an address
 * is refused without verification for block_ms. The table is bounded
 * (set-associative, least useful entry replaced) and striped by lock; it is
 * touched only when a client authenticates, never on the relay path.
 * Time is passed in (milliseconds).
 *
 * Attempts in flight are counted as guesses, not as connections: attempts
 * with the same name and password (the same key, a keyed hash the caller
 * computes) are one guess however many clients send them at once (an
 * office behind one NAT address after a restart), so they never throttle
 * each other; distinct guesses in parallel are each counted.
 */
#ifndef FERRY_AUTH_THROTTLE_H
#define FERRY_AUTH_THROTTLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypto/fcrypto.h"
#include "util/addr.h"

#define THROTTLE_WAYS    4
#define THROTTLE_STRIPES 64
#define THROTTLE_KEYS    4 /* distinct guesses in flight tracked by key, per address */

struct throttle_entry {
    uint8_t family;
    uint8_t ip[16];
    uint32_t failures;
    /* Guesses being verified now: one per key slot in use, plus `pending`
     * attempts that found every slot taken (each counted as a guess). */
    uint32_t pending;
    uint32_t key_n[THROTTLE_KEYS]; /* attempts sharing the slot's key; 0: free */
    uint64_t key[THROTTLE_KEYS];
    uint64_t window_start_ms;
    uint64_t blocked_until_ms;
};

struct throttle {
    struct throttle_entry *e;
    uint32_t nsets;
    uint32_t max_failures; /* 0 = never block */
    uint32_t window_ms, block_ms;
    uint8_t hash_key[FCRYPTO_SHORTKEY_LEN];
    pthread_mutex_t locks[THROTTLE_STRIPES];
};

int throttle_init(struct throttle *t, uint32_t entries, uint32_t max_failures, uint32_t window_ms,
                  uint32_t block_ms);
void throttle_fini(struct throttle *t);
/* Change the limits (a reload); tracked addresses are kept. */
void throttle_configure(struct throttle *t, uint32_t max_failures, uint32_t window_ms,
                        uint32_t block_ms);

/* Is the address refused right now? */
bool throttle_blocked(struct throttle *t, const struct addr *ip, uint64_t now_ms);
/* Count a failure. Returns true when this failure starts a block (the one
 * moment worth a log line). */
bool throttle_fail(struct throttle *t, const struct addr *ip, uint64_t now_ms);

/* An attempt that needs a verification starts; key identifies what it
 * tries (a keyed hash of name and password: equal keys, equal guesses).
 * Returns false (refuse it, without verifying) when the address is blocked,
 * or when this is a new guess and the address already has max_failures
 * guesses being verified: guesses sent in parallel cannot outrun the count
 * of failures, while an attempt identical to one in flight is the same
 * guess and is never refused for it. Otherwise the attempt is pending
 * until throttle_end() with the same key. */
bool throttle_begin(struct throttle *t, const struct addr *ip, uint64_t now_ms, uint64_t key);
/* A pending attempt (begun with this key) ended; a failed one counts as a
 * failure (while throttling is on), each attempt on its own. Returns true
 * when it starts a block. */
bool throttle_end(struct throttle *t, const struct addr *ip, uint64_t now_ms, uint64_t key,
                  bool failed);

#endif
