/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * state.c: the quota state file, which carries each user's usage of the
 * running period across a restart. A text file:
 *
 *     ferry-quota-state 1
 *     user NAME PERIOD_START USED
 *
 * (PERIOD_START in Unix seconds, USED in bytes; '#' lines are comments).
 * Written whole to a temporary file beside it, fsync'd and renamed over it
 * (then the directory fsync'd), so a reader sees the old file or the new
 * one, never half of one. Read at start: a line that is not valid is a
 * warning and is skipped, a file that is not a state file at all is a
 * warning and is ignored; neither stops ferry. The text's reader is
 * statefile.c's (pure, fuzzed alone). The main thread's tick (acct_tick)
 * is here too: it rolls each user over (acct_tick_user, acct.c), then
 * saves the file when its interval has passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acct/acct_int.h"
#include "acct/statefile.h"
#include "log/log.h"
#include "util/parse.h"

#define STATE_FILE_MAX (16u << 20)

/* ---- load ------------------------------------------------------------------ */

struct load_ctx {
    struct acct *a;
    int64_t now_s;
    struct msglist *warns;
    uint32_t used, skipped;
};

static void load_entry(void *arg, const struct acct_state_entry *e)
{
    struct load_ctx *x = arg;
    struct acct *a = x->a;
    uint32_t s = acct_find(a, e->name);
    if (s == UINT32_MAX || !atomic_load(&a->users[s].listed) || !atomic_load(&a->users[s].limit)) {
        x->skipped++; /* no byte quota now: its usage is forgotten */
        return;
    }
    struct acct_user *u = &a->users[s];
    atomic_store(&u->base, e->used);
    atomic_store(&u->offset, acct_sum_bytes(a, s));
    atomic_store(&u->period_start, e->period_start > x->now_s ? x->now_s : e->period_start);
    x->used++;
}

static void load_bad(void *arg, int line, const char *reason)
{
    struct load_ctx *x = arg;
    msglist_push(x->warns, "%s:%d: quota state: %s; line skipped", x->a->state_file, line, reason);
}

/* Read path whole (at most STATE_FILE_MAX bytes). 0 or -errno. */
static int read_all(const char *path, char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > STATE_FILE_MAX)
        rc = -EINVAL;
    char *p = rc ? NULL : malloc((size_t)st.st_size + 1);
    if (!rc && !p)
        rc = -ENOMEM;
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t n = read(fd, p + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (rc) {
        free(p);
        return rc;
    }
    *text = p;
    *len = got;
    return 0;
}

void acct_state_load(struct acct *a, int64_t now_s, struct msglist *warns)
{
    if (!a->state_file)
        return;
    char *text = NULL;
    size_t len = 0;
    int rc = read_all(a->state_file, &text, &len);
    if (rc == -ENOENT)
        return; /* the first start: nothing saved yet */
    if (rc) {
        msglist_push(warns, "%s: quota state: cannot read it: %s; usage starts from zero",
                     a->state_file,
                     rc == -EINVAL ? "not a regular file of at most 16 MiB" : strerror(-rc));
        return;
    }
    struct load_ctx x = {a, now_s, warns, 0, 0};
    int rc2 = acct_state_parse(text, len, load_entry, load_bad, &x);
    free(text);
    if (rc2 < 0) {
        msglist_push(warns,
                     "%s:1: quota state: not a ferry quota state file (expected '%s'); "
                     "usage starts from zero",
                     a->state_file, STATEFILE_MAGIC);
        return;
    }
    uint32_t n = atomic_load(&a->nslots);
    for (uint32_t s = 0; s < n; s++)
        if (atomic_load(&a->users[s].limit))
            acct_tick_user(a, s, now_s);
    log_info("quota: usage of %u users loaded from %s", x.used, a->state_file);
}

/* ---- save ------------------------------------------------------------------ */

/* The file's text in a growing buffer; NULL when out of memory. */
static char *state_text(struct acct *a, int64_t now_s, size_t *len)
{
    size_t cap = 128, n = 0;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    n = (size_t)snprintf(p, cap, "%s\n# written at %lld: user NAME PERIOD_START USED\n",
                         STATEFILE_MAGIC, (long long)now_s);
    uint32_t ns = atomic_load(&a->nslots);
    for (uint32_t s = 0; s < ns; s++) {
        const struct acct_user *u = &a->users[s];
        if (!atomic_load(&u->listed) || !atomic_load(&u->limit))
            continue;
        if (cap - n < STATEFILE_LINE_MAX) {
            char *q = realloc(p, cap * 2 + STATEFILE_LINE_MAX);
            if (!q) {
                free(p);
                return NULL;
            }
            p = q;
            cap = cap * 2 + STATEFILE_LINE_MAX;
        }
        n += (size_t)snprintf(p + n, cap - n, "user %s %lld %llu\n", u->name,
                              (long long)atomic_load(&u->period_start),
                              (unsigned long long)acct_used(a, s));
    }
    *len = n;
    return p;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fsync the directory holding path, so the rename is durable. */
static void sync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1,
             slash ? path : ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int acct_state_save(struct acct *a, int64_t now_s)
{
    if (!a->state_file)
        return 0;
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", a->state_file) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    size_t len;
    char *text = state_text(a, now_s, &len);
    if (!text)
        return -ENOMEM;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = fd < 0 ? -errno : write_all(fd, text, len);
    free(text);
    if (!rc && fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0 && close(fd) < 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, a->state_file) < 0)
        rc = -errno;
    if (rc) {
        if (fd >= 0)
            unlink(tmp);
        return rc;
    }
    sync_dir(a->state_file);
    return 0;
}

/* ---- the tick -------------------------------------------------------------- */

void acct_tick(struct acct *a, uint64_t now_ms, int64_t now_s)
{
    uint32_t n = atomic_load(&a->nslots);
    for (uint32_t s = 0; s < n; s++)
        if (atomic_load_explicit(&a->users[s].limit, memory_order_relaxed))
            acct_tick_user(a, s, now_s);
    if (!a->state_file)
        return;
    if (!a->next_save_ms)
        a->next_save_ms = now_ms + a->state_interval_ms;
    if (now_ms < a->next_save_ms)
        return;
    a->next_save_ms = now_ms + a->state_interval_ms;
    int rc = acct_state_save(a, now_s);
    if (rc)
        log_warn("quota: cannot save %s: %s (trying again in %u s)", a->state_file, strerror(-rc),
                 a->state_interval_ms / 1000);
}
