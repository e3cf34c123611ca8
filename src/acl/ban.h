/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ban.h: dynamic bans with expiry, fed by repeated failures (edge mode:
 * garbage first messages, unknown hosts, bad signatures, deadlines, rate
 * refusals). A source that fails `after` times within `window` is banned
 * for `ban` time; a banned source is refused at accept, before any read.
 *
 * One bounded table shared by all workers: set-associative (4 ways),
 * keyed by a SipHash of the address (an attacker cannot aim at a set),
 * striped locks, touched only at accept and on a failure (not per byte).
 * A full set evicts the entry seen longest ago that is not banned, then
 * the one whose ban ends first. Time is passed in (microseconds), so it
 * is tested without a clock.
 */
#ifndef FERRY_ACL_BAN_H
#define FERRY_ACL_BAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypto/fcrypto.h"
#include "util/addr.h"

#define BAN_WAYS    4
#define BAN_STRIPES 64

struct ban_entry {
    uint8_t family;
    uint8_t ip[16];
    uint32_t failures;
    uint64_t window_start_us;
    uint64_t until_us; /* banned until then; 0: not banned */
    uint64_t seen_us;
};

struct ban_table {
    struct ban_entry *e;
    uint32_t nsets;
    uint8_t key[FCRYPTO_SHORTKEY_LEN];
    pthread_mutex_t locks[BAN_STRIPES];
};

/* A table of about entries sources. 0 or -ENOMEM. */
int ban_init(struct ban_table *t, uint32_t entries);
void ban_fini(struct ban_table *t);

/* Is a (a source key: the caller masks it) banned at now? */
bool ban_check(struct ban_table *t, const struct addr *a, uint64_t now_us);

/* One failure of a at now: true when this one bans it (the after-th
 * failure within window_us of the first counted; then banned for ban_us,
 * and the count starts again when the ban ends). after 0: never. */
bool ban_fail(struct ban_table *t, const struct addr *a, uint64_t now_us, uint32_t after,
              uint64_t window_us, uint64_t ban_us);

#endif
