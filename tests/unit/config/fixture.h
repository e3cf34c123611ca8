/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fixture.h: what the config_load() tests share: a private temporary
 * directory holding ferry.conf, loading a text as that file, and comparing
 * messages in full. Included by one test file at a time, after harness.h.
 */
#ifndef FERRY_TESTS_UNIT_CONFIG_FIXTURE_H
#define FERRY_TESTS_UNIT_CONFIG_FIXTURE_H

#include <stdarg.h>

#include "config/config.h"
#include "util/compiler.h"

struct ctx {
    char dir[HARNESS_PATH_MAX];
    char path[HARNESS_PATH_MAX]; /* dir/ferry.conf */
    struct msglist errs;
    struct config *c;
};

static inline int setup(void **state)
{
    struct ctx *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    harness_mkdtemp(x->dir, sizeof(x->dir));
    harness_path(x->path, sizeof(x->path), x->dir, "ferry.conf");
    /* The environment of whoever runs the tests must not leak in. */
    assert_int_equal(unsetenv("FERRY_LOG"), 0);
    *state = x;
    return 0;
}

static inline int teardown(void **state)
{
    struct ctx *x = *state;
    config_free(x->c);
    msglist_fini(&x->errs);
    unlink(x->path);
    assert_int_equal(rmdir(x->dir), 0);
    unsetenv("FERRY_LOG");
    free(x);
    return 0;
}

static inline void dump(const char *what, const struct msglist *e)
{
    for (size_t i = 0; i < e->n; i++)
        print_message("  %s %zu: %s\n", what, i, e->msg[i]);
}

/* Write text as the config file and load it with cli (path filled in;
 * NULL: no command-line options). */
static inline int load_text(struct ctx *x, const char *text, struct config_cli *cli)
{
    struct config_cli none;
    if (!cli) {
        memset(&none, 0, sizeof(none));
        cli = &none;
    }
    harness_write_file(x->path, text);
    cli->path = x->path;
    config_free(x->c);
    x->c = NULL;
    msglist_fini(&x->errs);
    int rc = config_load(cli, &x->c, &x->errs);
    if (rc == 0)
        assert_non_null(x->c);
    return rc;
}

/* The load fails with exactly nerr errors. */
static inline void expect_load_fails(struct ctx *x, const char *text, struct config_cli *cli,
                                     size_t nerr)
{
    int rc = load_text(x, text, cli);
    if (rc != -EINVAL || x->errs.n != nerr) {
        dump("error", &x->errs);
        fail_msg("config_load returned %d with %zu errors, expected -EINVAL with %zu, on:\n%s", rc,
                 x->errs.n, nerr, text);
    }
    assert_null(x->c);
}

/* e->msg[i] must equal the message formatted from fmt. */
static inline void PRINTF_LIKE(3, 4)
    expect_line(const struct msglist *e, size_t i, const char *fmt, ...)
{
    char want[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(want, sizeof(want), fmt, ap);
    va_end(ap);
    if (i >= e->n)
        fail_msg("message %zu missing (have %zu); want: %s", i, e->n, want);
    if (strcmp(e->msg[i], want) != 0) {
        dump("message", e);
        fail_msg("message %zu:\n  got:  %s\n  want: %s", i, e->msg[i], want);
    }
}

/* config_load must succeed on text with no message at all. */
static inline void expect_load_ok(struct ctx *x, const char *text, struct config_cli *cli)
{
    int rc = load_text(x, text, cli);
    if (rc != 0) {
        dump("error", &x->errs);
        fail_msg("config_load failed (%d) on:\n%s", rc, text);
    }
    assert_int_equal(x->errs.n, 0);
}

/* errs[i] must equal the message formatted from fmt (the path goes in as
 * the first %s of most formats). */
#define expect_msg(x, i, ...) expect_line(&(x)->errs, (i), __VA_ARGS__)

#endif
