/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * statefile.c: the reader of the quota state file's text (statefile.h).
 * Line by line, each bounded; the first line must be the magic, anything
 * else that is not an entry or a comment is reported and skipped. Names
 * are only checked to be words without control bytes: the loader (state.c)
 * ignores any name the userlist does not hold. Pure: util/ only.
 */
#include "acct/statefile.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/parse.h"

/* Split line (NUL-terminated, trimmed) into at most 5 words; returns how
 * many (6: too many). */
static int split(char *line, char *w[5])
{
    int n = 0;
    for (char *p = line; *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        if (n == 5)
            return 6;
        w[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    return n;
}

/* One entry line; NULL when valid (e filled), else the reason. */
static const char *parse_entry(char *line, struct acct_state_entry *e)
{
    char *w[5];
    int n = split(line, w);
    uint64_t start, used;
    if (n != 4 || strcmp(w[0], "user") != 0)
        return "expected 'user NAME PERIOD_START USED'";
    size_t len = strlen(w[1]);
    if (len >= sizeof(e->name))
        return "not a user name";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)w[1][i] < 0x20 || w[1][i] == 0x7f)
            return "not a user name";
    if (parse_u64(w[2], 0, (uint64_t)STATEFILE_TIME_MAX, &start))
        return "PERIOD_START is not a time";
    if (parse_u64(w[3], 0, UINT64_MAX, &used))
        return "USED is not a number of bytes";
    memcpy(e->name, w[1], len + 1);
    e->period_start = (int64_t)start;
    e->used = used;
    return NULL;
}

int acct_state_parse(const char *text, size_t len,
                     void (*fn)(void *arg, const struct acct_state_entry *e),
                     void (*bad)(void *arg, int line, const char *reason), void *arg)
{
    char line[STATEFILE_LINE_MAX + 1];
    struct acct_state_entry e;
    bool magic = false;
    int entries = 0;
    size_t pos = 0;
    for (int no = 1; pos < len; no++) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        const char *p = text + pos;
        pos += n + (nl != NULL);
        if (n && p[n - 1] == '\r')
            n--;
        bool fits = n <= STATEFILE_LINE_MAX && !memchr(p, '\0', n);
        if (fits) {
            memcpy(line, p, n);
            line[n] = '\0';
        }
        if (!magic) {
            if (!fits || strcmp(line, STATEFILE_MAGIC) != 0)
                return -EINVAL;
            magic = true;
            continue;
        }
        const char *s = fits ? line + strspn(line, " \t") : NULL;
        if (s && (*s == '\0' || *s == '#'))
            continue;
        const char *why = fits ? parse_entry(line, &e) : "line too long or not text";
        if (why) {
            if (bad)
                bad(arg, no, why);
            continue;
        }
        fn(arg, &e);
        entries++;
    }
    return magic ? entries : -EINVAL;
}
