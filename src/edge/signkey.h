/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signkey.h: the keys of edge mode's signed host names and the judgement
 * of a signature (docs/edge.md "Signed host names"): a keyring read from a
 * file, keyed BLAKE2b-128 tags over proto/signhost.h's message, the time
 * window, and a replay table for hop signatures. What a string claims is
 * proto/signhost.h's; what a session does with the verdict is
 * relay/front_edge.c's. No sockets and no logging here.
 *
 * Keyring file: one key per line, "KID STATE KEY": KID 0..31, STATE active
 * (signs and verifies), verify (verifies only: a key being rolled in or
 * out) or retired (neither: kept in the file as a record), KEY 32 bytes in
 * base64 (`ferry edge keygen` prints such a line). '#' comments and blank
 * lines are skipped. The file must not be readable by group or others.
 */
#ifndef FERRY_EDGE_SIGNKEY_H
#define FERRY_EDGE_SIGNKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/signhost.h"

#define SIGNKEY_LEN 32

enum signkey_state { SIGNKEY_NONE = 0, SIGNKEY_ACTIVE, SIGNKEY_VERIFY, SIGNKEY_RETIRED };

struct signkey_ring {
    uint8_t state[SIGNHOST_KIDS];
    uint8_t key[SIGNHOST_KIDS][SIGNKEY_LEN];
    uint8_t dummy[SIGNKEY_LEN]; /* hashed with for an unknown key id: the same work */
    unsigned nverify;           /* keys that verify (active or verify) */
};

/* Why a signature was accepted or not (ferry_edge_signed_total result). */
enum signkey_result {
    SIGNKEY_OK,
    SIGNKEY_NO_SIG,        /* the route wants one; none there */
    SIGNKEY_BAD_FORMAT,    /* one there, malformed */
    SIGNKEY_UNKNOWN_KID,   /* no key with that id verifies */
    SIGNKEY_EXPIRED,       /* token past its expiry, hop issued too long ago */
    SIGNKEY_NOT_YET_VALID, /* hop issued in the future (beyond the skew) */
    SIGNKEY_TOO_LONG,      /* token expiring further ahead than max_ttl */
    SIGNKEY_BAD_TAG,       /* the tag does not match (judged before the time) */
    SIGNKEY_REPLAYED,      /* hop: this tag was seen within the window */
    SIGNKEY_REPLAY_FULL,   /* hop: no room to remember it (refused: fail closed) */
    SIGNKEY_RESULT_COUNT
};

/*
 * Read the keyring at path into *ring. Returns 0, or -1 with a message
 * naming path (and the line) in err: unreadable, readable by others, a bad
 * line, a key id twice, or no key that verifies (a file of comments is not
 * a keyring).
 */
int signkey_load(const char *path, struct signkey_ring *ring, char *err, size_t errlen);

/*
 * Judge sh (from signhost_parse_*) against the keyring at now (unix
 * seconds). host[0..host_len) is what the tag binds: for hop the routed
 * canonical host, for token the domain after the token label. skew: the
 * clock difference tolerated (hop: |now - issued| <= skew; token: now <=
 * expiry + skew); max_ttl: the furthest ahead a token may expire. A hop
 * signature that passes every check is remembered for 2 * skew + 1 s and a
 * second sight of it within that time is SIGNKEY_REPLAYED. The tag is
 * computed (against a dummy key for an unknown id) before any verdict, so
 * the time taken does not tell which key ids exist. Thread-safe.
 */
enum signkey_result signkey_verify(const struct signkey_ring *ring, const struct signhost *sh,
                                   const char *host, size_t host_len, uint64_t now, uint32_t skew,
                                   uint32_t max_ttl);

/*
 * Fill sh->tag for sh's form, kid, time and client and host[0..host_len)
 * with key sh->kid, which must be active. Returns 0, or -1 when that key
 * does not sign.
 */
int signkey_sign(const struct signkey_ring *ring, struct signhost *sh, const char *host,
                 size_t host_len);

/* The active key with the highest id, or -1 when none. */
int signkey_active(const struct signkey_ring *ring);

/* A result's name for logs and metrics ("ok", "no-sig", ...). */
const char *signkey_result_name(enum signkey_result r);

#endif
