/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * acct_state_fuzz.c: libFuzzer harness for the quota state file reader
 * (acct/statefile.h), which reads a file a disk or an editor may have
 * mangled. The input is the file. Checked: the count returned is the
 * number of entries handed out (or -EINVAL with none), every entry's name
 * is a word of 1..255 bytes without control bytes and its time within
 * bounds, and the entries written back as a state file read back the
 * same, with no line reported bad. Linked with util/parse and
 * acct/statefile only.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acct/statefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define MAX_ENTRIES 64

struct got {
    struct acct_state_entry e[MAX_ENTRIES];
    int n, bad;
};

static void on_entry(void *arg, const struct acct_state_entry *e)
{
    struct got *g = arg;
    size_t len = strnlen(e->name, sizeof(e->name));
    CHECK(len > 0 && len < sizeof(e->name));
    for (size_t i = 0; i < len; i++)
        CHECK((unsigned char)e->name[i] > 0x20 && e->name[i] != 0x7f);
    CHECK(e->period_start >= 0 && e->period_start <= STATEFILE_TIME_MAX);
    if (g->n < MAX_ENTRIES)
        g->e[g->n] = *e;
    g->n++;
}

static void on_bad(void *arg, int line, const char *reason)
{
    struct got *g = arg;
    CHECK(line >= 2 && reason && *reason);
    g->bad++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct got g, again;
    memset(&g, 0, sizeof(g));
    int rc = acct_state_parse((const char *)data, size, on_entry, on_bad, &g);
    CHECK(rc == -EINVAL ? g.n == 0 && g.bad == 0 : rc == g.n);
    if (rc <= 0 || rc > MAX_ENTRIES)
        return 0;
    /* Written back, the entries read back the same. */
    static char text[MAX_ENTRIES * 320 + 64];
    size_t len = (size_t)snprintf(text, sizeof(text), "%s\n", STATEFILE_MAGIC);
    for (int i = 0; i < rc; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "user %s %lld %llu\n", g.e[i].name,
                                (long long)g.e[i].period_start, (unsigned long long)g.e[i].used);
    memset(&again, 0, sizeof(again));
    CHECK(acct_state_parse(text, len, on_entry, on_bad, &again) == rc && again.bad == 0);
    for (int i = 0; i < rc; i++)
        CHECK(strcmp(g.e[i].name, again.e[i].name) == 0 &&
              g.e[i].period_start == again.e[i].period_start && g.e[i].used == again.e[i].used);
    return 0;
}
