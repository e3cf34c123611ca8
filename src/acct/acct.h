/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * acct.h: per-user and per-listener accounting, and the quotas of [quota]
 * (config/quota.h) it enforces.
 *
 * One struct acct per process, made by the main thread at start and kept
 * across reloads (so a reload keeps every count). Users get a slot by name
 * from the userlist only (acct_configure, main thread), never from the
 * wire: at most max_users slots, and one more, ":other" (a name no
 * userlist can hold: it has a colon), for every user
 * beyond them, so the series in /metrics are bounded by what the operator
 * listed. A slot is never reused for another name; a user dropped from the
 * userlist keeps its slot (unlisted: left out of /metrics, the snapshot and
 * the state file) and finds it again if listed again.
 *
 * Counting: each worker owns a row of counters (struct acct_ctr per user
 * slot and per listen address) that only it writes, with a relaxed load
 * and store (core/stats.h), no lock and no locked instruction; readers sum
 * the rows. A session holds a pointer to its worker's counters for its
 * user (acct_admit), so counting costs one add where the relay already
 * adds to the worker's totals. The only shared writes are at a session's
 * start and end: the user's open-session count (one atomic add each).
 *
 * Quotas: bytes (up + down, TCP payload and UDP datagram payload) per
 * period, and sessions open at once. Usage in the running period is
 * base (what the state file carried in) + the sum of the user's counters
 * - offset (that sum when the period began). Periods are windows of their
 * length, the first starting when ferry first applied the user's byte
 * quota (kept in the state file). acct_tick (main thread, each second)
 * rolls periods over, marks users over their quota, and saves the state
 * file at its interval; acct_admit checks the exact usage at each new
 * session.
 *
 * Threads: acct_new/acct_free/acct_configure/acct_tick/acct_state_* are
 * the main thread's; acct_admit/acct_release/acct_count_* a worker's (the
 * counters of worker wid only); acct_snapshot, acct_listener_sum and the
 * getters any thread's (the metrics endpoint, the admin API).
 */
#ifndef FERRY_ACCT_ACCT_H
#define FERRY_ACCT_ACCT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acct/statefile.h"
#include "config/config.h"
#include "core/stats.h"
#include "util/msglist.h"

/* One user's (or one listen address's) counters on one worker. */
struct acct_ctr {
    stat_t up, down;             /* payload bytes: client -> destination, and back */
    stat_t sessions;             /* sessions admitted */
    stat_t dgram_up, dgram_down; /* UDP datagrams relayed (their bytes are in up/down) */
    stat_t refused;              /* sessions refused by a quota */
};

/* What acct_admit says. */
enum acct_verdict {
    ACCT_OK,
    ACCT_OVER_BYTES,    /* the user used up their bytes for this period */
    ACCT_OVER_SESSIONS, /* the user has their quota of sessions open */
};

/* A session's hold on its user's slot (zeroed: none). */
struct acct_hold {
    struct acct_ctr *ctr; /* this worker's counters of the user, or NULL */
    uint32_t slot;
};

struct acct;

/* Made once, for nworkers and max_users (config quota.max_users; a reload
 * cannot change it). NULL when out of memory. */
struct acct *acct_new(unsigned nworkers, uint32_t max_users);
/* Free (after every worker is gone). NULL is a no-op. */
void acct_free(struct acct *a);

/* Apply cfg (at start and at each reload, before the workers see cfg):
 * slots for the userlist's users (a warning in warns, when not NULL, for
 * users beyond max_users), listed flags, each user's limits, end_sessions,
 * the state file and its interval. A user whose byte quota is new starts
 * a period at now_s (Unix time); one that keeps a byte quota keeps its
 * period and usage. */
void acct_configure(struct acct *a, const struct config *cfg, int64_t now_s, struct msglist *warns);

/* Once a second or so (main thread): roll periods over, mark users that
 * reached their byte quota (logged once each), save the state file when
 * its interval has passed (now_ms: a monotonic clock). */
void acct_tick(struct acct *a, uint64_t now_ms, int64_t now_s);

/* Is accounting on for new sessions (config quota.accounting)? */
bool acct_enabled(const struct acct *a);

/* A session of user (authenticated, NUL-terminated) starts on worker wid:
 * on ACCT_OK *h holds the user's slot (counted in their open sessions)
 * until acct_release(); otherwise *h is zeroed and the refusal counted.
 * A name that has no slot counts as ":other", which has no quota. */
enum acct_verdict acct_admit(struct acct *a, unsigned wid, const char *user, struct acct_hold *h);
/* May the holder of h start another exchange on the session it has (an
 * HTTP keep-alive connection's next request)? ACCT_OK, or ACCT_OVER_BYTES
 * (counted as a refusal) once the user used up their bytes. */
enum acct_verdict acct_recheck(struct acct *a, const struct acct_hold *h);
/* The session ended (or passed to another user): the slot is given back.
 * A zeroed hold is a no-op. */
void acct_release(struct acct *a, struct acct_hold *h);
/* Does h hold the slot user is accounted in (their own, or ":other")? */
bool acct_hold_is(const struct acct *a, const struct acct_hold *h, const char *user);

/* Has the user in slot reached their byte quota (as of the last tick or
 * admission)? With end_sessions, a worker ends the user's open sessions. */
bool acct_over(const struct acct *a, uint32_t slot);
/* Does end_sessions apply, and is any user over their byte quota now? */
bool acct_must_end(const struct acct *a);

/* Worker wid's counters for listen address li (< CONFIG_MAX_LISTEN). */
struct acct_ctr *acct_listener(struct acct *a, unsigned wid, unsigned li);

static inline void acct_count(struct acct_ctr *ctr, uint64_t up, uint64_t down)
{
    if (up)
        stat_add(&ctr->up, up);
    if (down)
        stat_add(&ctr->down, down);
}

/* ---- readers (any thread) ------------------------------------------------ */

/* One user's totals, summed over the workers. */
struct acct_user_total {
    const char *name; /* lives as long as the struct acct; ":other" for the overflow */
    bool other;       /* the bucket of users beyond max_users */
    uint64_t up, down, sessions, dgram_up, dgram_down, refused;
    uint32_t active;         /* sessions open now */
    uint32_t quota_sessions; /* 0: no limit */
    uint64_t quota_bytes;    /* 0: no byte quota; then: */
    uint32_t period_s;       /* the period's length */
    int64_t period_start;    /* Unix time the running period began */
    uint64_t used;           /* bytes used in it */
    bool over;               /* reached */
};

/* How many entries acct_snapshot() may fill at most (listed users plus
 * ":other"). */
size_t acct_snapshot_cap(const struct acct *a);
/* The listed users (in slot order, which is first-listed order) and then
 * ":other", at most cap entries; returns how many were written. Relaxed
 * reads: each figure may be a few increments stale, never torn. Safe from
 * any thread while the struct acct lives (the metrics thread: /metrics and
 * the admin API's /api/users). */
size_t acct_snapshot(const struct acct *a, struct acct_user_total *out, size_t cap);
/* The figures of one listed user (any thread, relaxed reads): true with
 * *out filled, false when name is not a listed user. */
bool acct_user_lookup(const struct acct *a, const char *name, struct acct_user_total *out);
/* Listen address li's counters summed over the workers. */
void acct_listener_sum(const struct acct *a, unsigned li, struct acct_user_total *out);

/* ---- the state file (state.c) -------------------------------------------- */

/* Load the state file (if one is configured and exists) into the users'
 * usage, at start after acct_configure: entries for users with a byte
 * quota set their period's start and usage (periods that ended since are
 * rolled over). Every problem is a warning in warns ("FILE:LINE: ..."):
 * a corrupt file never stops ferry. */
void acct_state_load(struct acct *a, int64_t now_s, struct msglist *warns);
/* Write the state file atomically (a temporary file, fsync, rename, fsync
 * of the directory). 0 or -errno (nothing configured: 0). */
int acct_state_save(struct acct *a, int64_t now_s);

#endif
