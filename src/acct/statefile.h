/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * statefile.h: the quota state file's text (see state.c for the file):
 *
 *     ferry-quota-state 1
 *     user NAME PERIOD_START USED
 *
 * PERIOD_START in Unix seconds, USED in bytes, '#' lines are comments. The
 * reader is pure (no allocation, no I/O, no logging, nothing but util/)
 * so a fuzz harness links it alone: it reads a file a disk or an editor
 * may have mangled.
 */
#ifndef FERRY_ACCT_STATEFILE_H
#define FERRY_ACCT_STATEFILE_H

#include <stddef.h>
#include <stdint.h>

#define STATEFILE_MAGIC    "ferry-quota-state 1"
#define STATEFILE_LINE_MAX 512
#define STATEFILE_TIME_MAX ((int64_t)1 << 40) /* far beyond any clock ferry meets */

/* One user's usage as the state file holds it. */
struct acct_state_entry {
    char name[256]; /* 1..255 bytes, no space, no control byte */
    int64_t period_start;
    uint64_t used;
};

/* Parse a state file's text (len bytes, NULs allowed: they make a line
 * invalid). Calls fn(arg, entry) for each valid entry, in order; a line
 * that is not valid is reported through bad(arg, line, reason) (bad may be
 * NULL) and skipped. Returns the number of entries, or -EINVAL when the
 * text is not a state file at all (its first line is not STATEFILE_MAGIC;
 * then fn was never called). */
int acct_state_parse(const char *text, size_t len,
                     void (*fn)(void *arg, const struct acct_state_entry *e),
                     void (*bad)(void *arg, int line, const char *reason), void *arg);

#endif
