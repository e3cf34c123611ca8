/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * quota_test.c: the [quota] syntax of config/quota.c. A SPEC is SIZE/PERIOD
 * and/or N sessions (either order, at most one of each, k/m/g/t sizes,
 * periods 1m..366d); everything else is refused with a reason. Lines: the
 * keys, "user NAME = SPEC", "user * = SPEC" as the default, a name given
 * twice, comments, and every error naming FILE:LINE. Random lines never
 * crash the parser. Through config_load(): the section ends at the next
 * header, quota.KEY works at the top, a relative state_file is the config
 * file's neighbour, quotas need a userlist, and a user the userlist lacks
 * is a warning.
 */
#include "harness.h"

#include <errno.h>

#include "config/config.h"
#include "config/quota.h"
#include "fixture.h"
#include "util/msglist.h"

static void spec_ok(const char *spec, uint64_t bytes, uint32_t period_s, uint32_t sessions)
{
    struct quota_limit l;
    char err[200] = "";
    assert_int_equal(quota_parse_spec(spec, &l, err, sizeof(err)), 0);
    assert_int_equal(l.bytes, bytes);
    assert_int_equal(l.period_s, period_s);
    assert_int_equal(l.sessions, sessions);
}

static void spec_bad(const char *spec, const char *why)
{
    struct quota_limit l;
    char err[200] = "";
    assert_int_not_equal(quota_parse_spec(spec, &l, err, sizeof(err)), 0);
    if (!strstr(err, why))
        fail_msg("'%s': '%s' does not say '%s'", spec, err, why);
}

static void test_specs(void **state)
{
    (void)state;
    spec_ok("50g/30d", 50ull << 30, 30 * 86400, 0);
    spec_ok("500m/1h", 500ull << 20, 3600, 0);
    spec_ok("2t/366d", 2ull << 40, 366 * 86400, 0);
    spec_ok("1TiB/1d", 1ull << 40, 86400, 0);
    spec_ok("4 sessions", 0, 0, 4);
    spec_ok("1 session", 0, 0, 1);
    spec_ok(" 1g/1d ,  2 sessions ", 1ull << 30, 86400, 2);
    spec_ok("2 sessions, 1g/12h", 1ull << 30, 43200, 2);
    spec_ok("64k/1m", 65536, 60, 0);
}

static void test_bad_specs(void **state)
{
    (void)state;
    spec_bad("", "no limit given");
    spec_bad("50x/30d", "'50x' is not a size");
    spec_bad("0/1d", "'0' is not a size");
    spec_bad("50g/30", "'30' is not a period");
    spec_bad("50g/59s", "is not a period from 1m to 366d");
    spec_bad("50g/367d", "is not a period");
    spec_bad("50g/", "expected SIZE/PERIOD");
    spec_bad("/1d", "expected SIZE/PERIOD");
    spec_bad("1g/1d, 2g/1d", "bytes per period given twice");
    spec_bad("1 sessions, 2 sessions", "sessions given twice");
    spec_bad("0 sessions", "not a number of sessions from 1");
    spec_bad("1000001 sessions", "not a number of sessions");
    spec_bad("3 sessons", "expected SIZE/PERIOD");
    spec_bad("1g/1d,", "an empty item");
    spec_bad("1g/1d, 1 sessions, 1 sessions", "at most two items");
    spec_bad("99999999999t/1d", "is not a size");
    spec_bad("-1g/1d", "is not a size");
}

/* Read lines as [quota] would, into q; errs collects. */
static void lines(struct config_quota *q, struct msglist *errs, const char *const *l, size_t n)
{
    config_quota_defaults(q);
    for (size_t i = 0; i < n; i++)
        config_quota_line(q, "f.conf", (int)i + 1, l[i], errs);
}

static void test_lines(void **state)
{
    (void)state;
    static const char *const l[] = {
        "accounting = no",        "max_users = 10",     "state_file = /var/lib/q.state",
        "state_interval = 5m",    "end_sessions = yes", "user alice = 50g/30d  # a comment",
        "user b=ob = 2 sessions", "user * = 1g/1d",
    };
    struct config_quota q;
    struct msglist errs = {0};
    lines(&q, &errs, l, sizeof(l) / sizeof(l[0]));
    assert_int_equal(errs.n, 0);
    assert_false(q.accounting);
    assert_int_equal(q.max_users, 10);
    assert_string_equal(q.state_file, "/var/lib/q.state");
    assert_int_equal(q.state_interval_ms, 300000);
    assert_true(q.end_sessions);
    assert_int_equal(q.nrules, 3);
    assert_string_equal(q.origin, "f.conf:1");
    const struct quota_limit *a = config_quota_for(&q, "alice");
    assert_non_null(a);
    assert_int_equal(a->bytes, 50ull << 30);
    /* The last '=' splits: a name may hold one. */
    assert_int_equal(config_quota_for(&q, "b=ob")->sessions, 2);
    assert_int_equal(config_quota_for(&q, "zed")->bytes, 1ull << 30); /* user * */
    assert_string_equal(q.deflt->origin, "f.conf:8");
    config_quota_fini(&q);
    msglist_fini(&errs);
}

static void test_no_default(void **state)
{
    (void)state;
    static const char *const l[] = {"user alice = 1 sessions"};
    struct config_quota q;
    struct msglist errs = {0};
    lines(&q, &errs, l, 1);
    assert_null(config_quota_for(&q, "bob"));
    assert_true(config_quota_any(&q));
    config_quota_fini(&q);
    msglist_fini(&errs);
}

static void test_line_errors(void **state)
{
    (void)state;
    static const char *const l[] = {
        "user alice = 1g/1d",  "user alice = 2g/1d",    "user * = 1 sessions",
        "user * = 2 sessions", "user bad:name = 1g/1d", "user = 1g/1d",
        "user carol",          "accounting = maybe",    "max_users = 65537",
        "state_interval = 0s", "state_file =",          "colour = blue",
        "just words",          "user dave = 1g/1d/2",   "end_sessions = 2",
    };
    static const char *const want[] = {
        "f.conf:2: quota: user alice is given twice (first at f.conf:1)",
        "f.conf:4: quota: user * is given twice (first at f.conf:3)",
        "f.conf:5: quota: 'bad:name' is not a user name a userlist can hold",
        "f.conf:6: quota: expected 'user NAME = SPEC' (like user alice = 50g/30d)",
        "f.conf:7: quota: expected 'user NAME = SPEC' (like user alice = 50g/30d)",
        "f.conf:8: quota.accounting: 'maybe' is not yes or no",
        "f.conf:9: quota.max_users: '65537' is not a number from 1 to 65536",
        "f.conf:10: quota.state_interval: '0s' is not a duration from 1s to 1d",
        "f.conf:11: quota.state_file: a path is needed",
        "f.conf:12: quota: unknown key 'colour' (known: accounting, max_users, state_file, "
        "state_interval, end_sessions, user NAME)",
        "f.conf:13: quota: expected 'key = value' or 'user NAME = SPEC'",
        "f.conf:14: quota: user dave: '1d/2' is not a period from 1m to 366d (like 1d or 30d)",
        "f.conf:15: quota.end_sessions: '2' is not yes or no",
    };
    struct config_quota q;
    struct msglist errs = {0};
    lines(&q, &errs, l, sizeof(l) / sizeof(l[0]));
    for (size_t i = 0; i < errs.n && i < sizeof(want) / sizeof(want[0]); i++)
        assert_string_equal(errs.msg[i], want[i]);
    assert_int_equal(errs.n, sizeof(want) / sizeof(want[0]));
    config_quota_fini(&q);
    msglist_fini(&errs);
}

/* Random printable lines: an error or a rule, never a crash or a leak. */
static void test_random_lines(void **state)
{
    (void)state;
    static const char alphabet[] = "user *=,/ 0123456789kmgtdhs sessions acounting_=#;\t";
    struct harness_rng r;
    harness_rng_init(&r, 21);
    struct config_quota q;
    struct msglist errs = {0};
    config_quota_defaults(&q);
    for (int i = 0; i < 20000; i++) {
        char line[64];
        size_t n = harness_rng_below(&r, sizeof(line));
        for (size_t k = 0; k < n; k++)
            line[k] = alphabet[harness_rng_below(&r, sizeof(alphabet) - 1)];
        line[n] = '\0';
        config_quota_line(&q, "r", i, line, &errs);
        if (errs.n > 1000)
            msglist_fini(&errs);
    }
    config_quota_fini(&q);
    msglist_fini(&errs);
}

static void test_config_load(void **state)
{
    struct ctx *x = *state;
    char users[HARNESS_PATH_MAX + 16], text[512];
    harness_path(users, sizeof(users), x->dir, "users.txt");
    harness_write_file(users, "alice:plain:a\nbob:plain:b\n");
    expect_load_ok(x,
                   "quota.end_sessions = yes\n[auth]\nuserlist = users.txt\n[quota]\n"
                   "state_file = q.state\nuser alice = 1g/1d\n[limits]\nper_ip = 3\n",
                   NULL);
    assert_true(x->c->quota.end_sessions);
    assert_int_equal(x->c->limits.per_ip, 3); /* [limits] read as keys again */
    assert_int_equal(x->c->quota.nrules, 1);
    snprintf(text, sizeof(text), "%s/q.state", x->dir);
    assert_string_equal(x->c->quota.state_file, text);
    assert_int_equal(x->c->warnings.n, 0);

    expect_load_ok(x, "[auth]\nuserlist = users.txt\n[quota]\nuser zed = 1 sessions\n", NULL);
    assert_int_equal(x->c->warnings.n, 1);
    expect_line(&x->c->warnings, 0, "%s:4: quota: user zed is not in the userlist", x->path);

    expect_load_fails(x, "[quota]\nuser alice = 1g/1d\n", NULL, 1);
    expect_msg(x, 0, "%s:2: quota: quotas apply to authenticated users: set [auth] userlist",
               x->path);
    expect_load_fails(x, "[auth]\nuserlist = users.txt\n[quota]\nuser alice = 1g\n", NULL, 1);
    expect_msg(x, 0,
               "%s:4: quota: user alice: '1g': expected SIZE/PERIOD (like 50g/30d) "
               "or N sessions",
               x->path);
    unlink(users);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_no_default),
        cmocka_unit_test(test_line_errors),
        cmocka_unit_test(test_random_lines),
        cmocka_unit_test_setup_teardown(test_config_load, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
