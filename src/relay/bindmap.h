/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bindmap.h: the destination of each client's primary session, for BIND
 * requests that do not name the host that will connect back (RFC 1928
 * section 4: "DST.ADDR ... the address of the application server ... in
 * the client's primary session"). A CONNECT that succeeds notes (client
 * address, destination address, time); a BIND naming 0.0.0.0 or :: asks
 * for the client's most recent note.
 *
 * One fixed table for the whole process (BINDMAP_SLOTS slots, no
 * allocation), shared by every worker without locks: a slot is chosen by a
 * keyed hash of the client address and holds one client; a later client
 * with the same slot replaces it. Writers and readers meet through a
 * per-slot sequence counter (a seqlock): a writer that finds the slot busy
 * with another writer skips its note (best effort), a reader that keeps
 * seeing it change reports nothing. Every field is a C11 atomic, so there
 * is no data race in the C memory model's sense.
 *
 * Times are milliseconds of CLOCK_MONOTONIC (loop_now()), passed in.
 */
#ifndef FERRY_RELAY_BINDMAP_H
#define FERRY_RELAY_BINDMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "util/addr.h"

#define BINDMAP_SLOTS 4096 /* a power of two */

/* Note that client's session reached dst (only the IP is kept) at now_ms.
 * Returns false when the note was skipped: another writer held the slot,
 * or an address is unset. Thread-safe. */
bool bindmap_record(const struct addr *client, const struct addr *dst, uint64_t now_ms);

/* The destination of client's most recent note, if it is at most
 * max_age_ms old at now_ms: true with *dst (port 0) and, when when_ms is
 * not NULL, the note's time. False when there is none, it is older, it was
 * replaced by another client, or writers kept the slot busy. Thread-safe. */
bool bindmap_lookup(const struct addr *client, uint64_t now_ms, uint64_t max_age_ms,
                    struct addr *dst, uint64_t *when_ms);

/* The slot client maps to (tests use it to find clients that share one). */
uint32_t bindmap_slot(const struct addr *client);

/* Forget every note (tests). Thread-safe, but a note written meanwhile
 * may survive. */
void bindmap_clear(void);

#endif
