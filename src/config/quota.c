/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quota.c: the [quota] section (quota.h): its keys, its "user NAME = SPEC"
 * lines, and the SPEC syntax. config.c hands each line of the section here
 * whole, as it does [rules] lines. This file only describes limits; the
 * counting and the enforcing are acct/'s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/userlist.h"
#include "config/config.h"
#include "config/quota.h"
#include "util/parse.h"

void config_quota_defaults(struct config_quota *q)
{
    memset(q, 0, sizeof(*q));
    q->accounting = true;
    q->max_users = QUOTA_MAX_USERS_DEF;
    q->state_interval_ms = QUOTA_INTERVAL_DEF_MS;
}

/* A size with k, m, g (parse_size) or t: whole bytes, at least 1. */
static int quota_size(const char *s, uint64_t *out)
{
    size_t n = strlen(s);
    char buf[64];
    if (n && n < sizeof(buf) &&
        (strcasecmp(s + n - 1, "t") == 0 || (n > 1 && strcasecmp(s + n - 2, "tb") == 0) ||
         (n > 2 && strcasecmp(s + n - 3, "tib") == 0))) {
        size_t k = n - (s[n - 1] == 't' || s[n - 1] == 'T'   ? 1
                        : s[n - 2] == 't' || s[n - 2] == 'T' ? 2
                                                             : 3);
        memcpy(buf, s, k);
        buf[k] = '\0';
        uint64_t v;
        int rc = parse_u64(buf, 1, UINT64_MAX >> 40, &v);
        if (rc)
            return rc;
        *out = v << 40;
        return 0;
    }
    return parse_size(s, 1, UINT64_MAX, out);
}

/* Copy the word [p, end) trimmed into buf; false when empty or too long. */
static bool word(const char *p, const char *end, char *buf, size_t cap)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t n = (size_t)(end - p);
    if (!n || n >= cap)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return true;
}

/* One item of a SPEC: "SIZE/PERIOD" or "N sessions". */
static int spec_item(const char *it, struct quota_limit *out, char *err, size_t cap)
{
    const char *slash = strchr(it, '/');
    const char *sp = strpbrk(it, " \t");
    if (slash) {
        char size[64], period[64];
        uint64_t bytes, ms;
        if (!word(it, slash, size, sizeof(size)) ||
            !word(slash + 1, it + strlen(it), period, sizeof(period))) {
            snprintf(err, cap, "'%s': expected SIZE/PERIOD, like 50g/30d", it);
            return -EINVAL;
        }
        if (quota_size(size, &bytes)) {
            snprintf(err, cap, "'%s' is not a size (like 500m, 50g or 2t)", size);
            return -EINVAL;
        }
        if (parse_duration_ms(period, QUOTA_PERIOD_MIN_S * 1000ull, QUOTA_PERIOD_MAX_S * 1000ull,
                              &ms)) {
            snprintf(err, cap, "'%s' is not a period from 1m to 366d (like 1d or 30d)", period);
            return -EINVAL;
        }
        if (out->bytes) {
            snprintf(err, cap, "bytes per period given twice");
            return -EINVAL;
        }
        out->bytes = bytes;
        out->period_s = (uint32_t)(ms / 1000);
        return 0;
    }
    char num[32], unit[32];
    uint64_t n;
    if (sp && word(it, sp, num, sizeof(num)) && word(sp, it + strlen(it), unit, sizeof(unit)) &&
        (strcmp(unit, "sessions") == 0 || strcmp(unit, "session") == 0)) {
        if (parse_u64(num, 1, QUOTA_SESSIONS_MAX, &n)) {
            snprintf(err, cap, "'%s' is not a number of sessions from 1 to %u", num,
                     QUOTA_SESSIONS_MAX);
            return -EINVAL;
        }
        if (out->sessions) {
            snprintf(err, cap, "sessions given twice");
            return -EINVAL;
        }
        out->sessions = (uint32_t)n;
        return 0;
    }
    snprintf(err, cap, "'%s': expected SIZE/PERIOD (like 50g/30d) or N sessions", it);
    return -EINVAL;
}

int quota_parse_spec(const char *spec, struct quota_limit *out, char *err, size_t cap)
{
    memset(out, 0, sizeof(*out));
    const char *p = spec;
    char item[128];
    for (int items = 0;; items++) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        if (!word(p, end, item, sizeof(item))) {
            snprintf(err, cap, items || comma ? "an empty item" : "no limit given");
            return -EINVAL;
        }
        if (items >= 2) {
            snprintf(err, cap, "at most two items (SIZE/PERIOD and N sessions)");
            return -EINVAL;
        }
        int rc = spec_item(item, out, err, cap);
        if (rc)
            return rc;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/* "user NAME = SPEC" */
static void quota_user_line(struct config_quota *q, const char *origin, const char *rest,
                            struct msglist *errs)
{
    const char *eq = strrchr(rest, '=');
    char name[256], spec[256], err[200];
    if (!eq || !word(rest, eq, name, sizeof(name)) ||
        !word(eq + 1, rest + strlen(rest), spec, sizeof(spec))) {
        msglist_push(errs, "%s: quota: expected 'user NAME = SPEC' (like user alice = 50g/30d)",
                     origin);
        return;
    }
    bool star = strcmp(name, "*") == 0;
    if (!star && !userlist_name_ok(name, strlen(name))) {
        msglist_push(errs, "%s: quota: '%s' is not a user name a userlist can hold", origin, name);
        return;
    }
    struct quota_limit lim;
    if (quota_parse_spec(spec, &lim, err, sizeof(err))) {
        msglist_push(errs, "%s: quota: user %s: %s", origin, name, err);
        return;
    }
    for (size_t i = 0; i < q->nrules; i++) {
        bool same = star ? !q->rules[i].name : q->rules[i].name && !strcmp(q->rules[i].name, name);
        if (same) {
            msglist_push(errs, "%s: quota: user %s is given twice (first at %s)", origin, name,
                         q->rules[i].origin);
            return;
        }
    }
    if (q->nrules >= QUOTA_RULES_MAX) {
        msglist_push(errs, "%s: quota: more than %u user lines", origin, QUOTA_RULES_MAX);
        return;
    }
    struct quota_rule *r = realloc(q->rules, (q->nrules + 1) * sizeof(*r));
    if (!r) {
        msglist_push(errs, "%s: quota: out of memory", origin);
        return;
    }
    q->rules = r;
    r = &q->rules[q->nrules];
    memset(r, 0, sizeof(*r));
    r->lim = lim;
    snprintf(r->origin, sizeof(r->origin), "%s", origin);
    if (!star && !(r->name = strdup(name))) {
        msglist_push(errs, "%s: quota: out of memory", origin);
        return;
    }
    q->nrules++;
    q->deflt = NULL;
    for (size_t i = 0; i < q->nrules; i++)
        if (!q->rules[i].name)
            q->deflt = &q->rules[i]; /* realloc may have moved it */
}

/* "KEY = VALUE" of [quota]. */
static void quota_key(struct config_quota *q, const char *origin, const char *key, const char *v,
                      struct msglist *errs)
{
    uint64_t n;
    if (strcmp(key, "accounting") == 0 || strcmp(key, "end_sessions") == 0) {
        bool b;
        if (parse_bool(v, &b))
            msglist_push(errs, "%s: quota.%s: '%s' is not yes or no", origin, key, v);
        else if (key[0] == 'a')
            q->accounting = b;
        else
            q->end_sessions = b;
    } else if (strcmp(key, "max_users") == 0) {
        if (parse_u64(v, 1, QUOTA_MAX_USERS_MAX, &n))
            msglist_push(errs, "%s: quota.max_users: '%s' is not a number from 1 to %u", origin, v,
                         QUOTA_MAX_USERS_MAX);
        else
            q->max_users = (uint32_t)n;
    } else if (strcmp(key, "state_interval") == 0) {
        if (parse_duration_ms(v, 1000, 86400000, &n))
            msglist_push(errs, "%s: quota.state_interval: '%s' is not a duration from 1s to 1d",
                         origin, v);
        else
            q->state_interval_ms = (uint32_t)n;
    } else if (strcmp(key, "state_file") == 0) {
        free(q->state_file);
        q->state_file = NULL;
        if (!*v || !(q->state_file = strdup(v)))
            msglist_push(errs, "%s: quota.state_file: %s", origin,
                         *v ? "out of memory" : "a path is needed");
    } else {
        msglist_push(errs,
                     "%s: quota: unknown key '%s' (known: accounting, max_users, state_file, "
                     "state_interval, end_sessions, user NAME)",
                     origin, key);
    }
}

void config_quota_line(struct config_quota *q, const char *file, int line, const char *text,
                       struct msglist *errs)
{
    char origin[160], key[64], v[4096];
    snprintf(origin, sizeof(origin), "%s:%d", file ? file : "?", line);
    if (!q->origin[0])
        snprintf(q->origin, sizeof(q->origin), "%s", origin);
    /* Comments run to the end of the line, as everywhere in the file. */
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", text);
    buf[strcspn(buf, "#;\r\n")] = '\0';
    if (strncmp(buf, "user", 4) == 0 && (buf[4] == ' ' || buf[4] == '\t')) {
        quota_user_line(q, origin, buf + 5, errs);
        return;
    }
    const char *eq = strchr(buf, '=');
    if (!eq || !word(buf, eq, key, sizeof(key))) {
        msglist_push(errs, "%s: quota: expected 'key = value' or 'user NAME = SPEC'", origin);
        return;
    }
    if (!word(eq + 1, buf + strlen(buf), v, sizeof(v)))
        v[0] = '\0';
    quota_key(q, origin, key, v, errs);
}

const struct quota_limit *config_quota_for(const struct config_quota *q, const char *name)
{
    for (size_t i = 0; i < q->nrules; i++)
        if (q->rules[i].name && strcmp(q->rules[i].name, name) == 0)
            return &q->rules[i].lim;
    return q->deflt ? &q->deflt->lim : NULL;
}

void config_quota_check(struct config *c, const char *cfg_path, struct msglist *errs)
{
    struct config_quota *q = &c->quota;
    if (q->nrules && !q->accounting) {
        msglist_push(errs, "%s: quota: quotas need accounting = yes", q->rules[0].origin);
        return;
    }
    if (q->nrules && !c->auth.users) {
        if (!c->auth.userlist) /* a userlist that failed to load said so already */
            msglist_push(errs,
                         "%s: quota: quotas apply to authenticated users: set [auth] userlist",
                         q->rules[0].origin);
        return;
    }
    for (size_t i = 0; i < q->nrules; i++) {
        const char *n = q->rules[i].name;
        if (n && !userlist_find(c->auth.users, n, strlen(n)))
            msglist_push(&c->warnings, "%s: quota: user %s is not in the userlist",
                         q->rules[i].origin, n);
    }
    const char *slash = cfg_path ? strrchr(cfg_path, '/') : NULL;
    if (q->state_file && q->state_file[0] != '/' && slash) {
        size_t n = (size_t)(slash - cfg_path) + 1 + strlen(q->state_file) + 1;
        char *p = malloc(n);
        if (!p) {
            msglist_push(errs, "quota.state_file: out of memory");
            return;
        }
        snprintf(p, n, "%.*s/%s", (int)(slash - cfg_path), cfg_path, q->state_file);
        free(q->state_file);
        q->state_file = p;
    }
}

void config_quota_fini(struct config_quota *q)
{
    for (size_t i = 0; i < q->nrules; i++)
        free(q->rules[i].name);
    free(q->rules);
    free(q->state_file);
    q->rules = NULL;
    q->deflt = NULL;
    q->nrules = 0;
    q->state_file = NULL;
}
