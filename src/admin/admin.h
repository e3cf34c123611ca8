/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * admin.h: the admin API (/api/...) and the status page (/status), served
 * by the metrics endpoint's thread through its hook (metrics.h) when
 * [metrics] admin = yes. Every request but the page's two static assets
 * carries the token of metrics.admin_token_file, as "Authorization:
 * Bearer TOKEN" or as the cookie the page's login form sets.
 *
 * Sessions are read and ended through the workers' mailboxes (snap.h),
 * never from this thread; counters are read relaxed, as /metrics does. A
 * per-second history of the main figures (ring.h) is kept while admin is
 * on: 15 minutes in fixed memory.
 */
#ifndef FERRY_ADMIN_ADMIN_H
#define FERRY_ADMIN_ADMIN_H

#include <stdbool.h>
#include <stdint.h>

#include "metrics/metrics.h"

struct admin;
struct worker;
struct shared;

/* Cumulative figures of one user, kept by the per-user accounting (not
 * built here: a room that keeps them registers admin_set_user_totals).
 * have_quota: quota_bytes and quota_used mean something. */
struct admin_user_totals {
    uint64_t bytes_up, bytes_down, sessions, udp_datagrams;
    bool have_quota;
    uint64_t quota_bytes, quota_used;
};
/* Fill out for user; false when nothing is known of them. Called on the
 * metrics thread, so it must read what it keeps thread-safely. */
typedef bool (*admin_user_totals_fn)(void *arg, const char *user, struct admin_user_totals *out);

/* The admin room for the server's nw workers ws (which outlive it) and
 * their shared state. NULL when out of memory. */
struct admin *admin_new(struct worker *ws, unsigned nw, const struct shared *sh);
/* The hooks to put in metrics_source.admin (valid while a lives). */
const struct metrics_admin *admin_hooks(struct admin *a);
/* The plug for per-user totals: /api/users and the page show them beside
 * the live figures ("totals", null while none is registered). Call before
 * the metrics endpoint starts. */
void admin_set_user_totals(struct admin *a, admin_user_totals_fn fn, void *arg);
/* Free a (after the metrics endpoint stopped); NULL is a no-op. */
void admin_free(struct admin *a);

#endif
