/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quota.h: the [quota] section: per-user accounting on or off, and the
 * limits the accounting enforces (acct/). Its lines are read whole, as
 * [rules] lines are, because a user name may hold characters an INI key
 * may not:
 *
 *     [quota]
 *     accounting = yes              # per-user and per-listener counters
 *     max_users = 4096              # users with series of their own; the rest: "other"
 *     state_file = /var/lib/ferry/quota.state
 *     state_interval = 60s          # how often usage is saved (and on shutdown)
 *     end_sessions = no             # yes: reaching a byte quota ends open sessions too
 *     user alice = 50g/30d          # bytes (both ways) per period
 *     user bob = 4 sessions         # sessions open at once
 *     user carol = 1g/1d, 2 sessions
 *     user * = 10g/30d              # every listed user without a line of their own
 *
 * Sizes take k, m, g, t (binary multiples); periods are durations from 1m
 * to 366d. A malformed line is an error naming FILE:LINE (a quota is a
 * promise to whoever pays for the link, never silently dropped). This file
 * knows nothing of counters: acct/ applies what it describes.
 */
#ifndef FERRY_CONFIG_QUOTA_H
#define FERRY_CONFIG_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/msglist.h"

#define QUOTA_MAX_USERS_DEF   4096u
#define QUOTA_MAX_USERS_MAX   65536u
#define QUOTA_PERIOD_MIN_S    60u
#define QUOTA_PERIOD_MAX_S    (366u * 86400u)
#define QUOTA_SESSIONS_MAX    1000000u
#define QUOTA_INTERVAL_DEF_MS 60000u
#define QUOTA_RULES_MAX       65536u

/* One user's limits; 0 in a field: no limit of that kind. */
struct quota_limit {
    uint64_t bytes;    /* bytes up + down per period */
    uint32_t period_s; /* the period's length (with bytes) */
    uint32_t sessions; /* sessions open at once */
};

/* "user NAME = SPEC" (name NULL: "user *"). */
struct quota_rule {
    char *name;
    struct quota_limit lim;
    char origin[160]; /* "FILE:LINE" */
};

struct config_quota {
    bool accounting;    /* per-user and per-listener counters (default yes) */
    uint32_t max_users; /* users with series of their own (restart to change) */
    char *state_file;   /* NULL: usage is not saved */
    uint32_t state_interval_ms;
    bool end_sessions;        /* a reached byte quota also ends open sessions */
    struct quota_rule *rules; /* named users, in file order */
    size_t nrules;
    struct quota_rule *deflt; /* "user *", or NULL (points into rules) */
    char origin[160];         /* where [quota] was first seen, "" if never */
};

/* Parse a quota SPEC ("50g/30d", "4 sessions", "1g/1d, 2 sessions"). Pure:
 * no allocation, no logging. 0 with *out filled, or -EINVAL with a short
 * reason in err (cap bytes). */
int quota_parse_spec(const char *spec, struct quota_limit *out, char *err, size_t cap);

/* Defaults: accounting on, 4096 users, no state file, 60 s, no quotas. */
void config_quota_defaults(struct config_quota *q);
/* One non-blank, non-comment line of [quota] (text: the line, trimmed of
 * leading space) read at file:line. Problems go to errs as
 * "FILE:LINE: quota: message". */
void config_quota_line(struct config_quota *q, const char *file, int line, const char *text,
                       struct msglist *errs);
/* The limits that apply to a user: their own line, else "user *", else
 * NULL. */
const struct quota_limit *config_quota_for(const struct config_quota *q, const char *name);
/* Is any quota set (a line naming a user, or "user *")? */
static inline bool config_quota_any(const struct config_quota *q)
{
    return q->nrules > 0;
}
struct config;
/* After the whole file: quotas need a userlist and accounting (errors at
 * the first user line), a line naming a user the userlist lacks is a
 * warning, and a relative state_file is made relative to the directory
 * of the file that set it (cfg_path: the main file). */
void config_quota_check(struct config *c, const char *cfg_path, struct msglist *errs);
/* Free what q holds (config_free). */
void config_quota_fini(struct config_quota *q);

#endif
