/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * acct_test.c: acct/. The state file reader (acct_state_parse): entries,
 * comments, CRLF, bad lines reported with their numbers and skipped, a
 * text that is no state file at all, and random bytes (which must never
 * crash it: it reads a file an operator or a disk may have mangled;
 * tests/fuzz/acct_state_fuzz.c goes further). The
 * table: users from the userlist only, ":other" beyond max_users, byte
 * and session quotas at admission, the period rolled over by the tick, a
 * reload that keeps counts and drops a removed user, and the state file
 * written and read back.
 */
#include "harness.h"

#include <errno.h>
#include <sys/stat.h>

#include "acct/acct.h"
#include "auth/userlist.h"
#include "config/config.h"

/* ---- the reader ------------------------------------------------------------ */

struct seen {
    struct acct_state_entry e[8];
    int n;
    int bad_lines[8];
    int nbad;
};

static void on_entry(void *arg, const struct acct_state_entry *e)
{
    struct seen *s = arg;
    if (s->n < 8)
        s->e[s->n] = *e;
    s->n++;
}

static void on_bad(void *arg, int line, const char *reason)
{
    struct seen *s = arg;
    assert_non_null(reason);
    if (s->nbad < 8)
        s->bad_lines[s->nbad] = line;
    s->nbad++;
}

static int parse(const char *text, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    return acct_state_parse(text, strlen(text), on_entry, on_bad, s);
}

static void test_parse_entries(void **state)
{
    (void)state;
    struct seen s;
    assert_int_equal(parse("ferry-quota-state 1\r\n# a comment\n\nuser alice 1700000000 123\r\n"
                           "user b=b 0 18446744073709551615",
                           &s),
                     2);
    assert_string_equal(s.e[0].name, "alice");
    assert_int_equal(s.e[0].period_start, 1700000000);
    assert_int_equal(s.e[0].used, 123);
    assert_string_equal(s.e[1].name, "b=b");
    assert_true(s.e[1].used == UINT64_MAX);
    assert_int_equal(s.nbad, 0);
}

static void test_parse_bad_lines(void **state)
{
    (void)state;
    struct seen s;
    assert_int_equal(parse("ferry-quota-state 1\n"
                           "user alice 12 notanumber\n"         /* 2 */
                           "user bob -1 5\n"                    /* 3 */
                           "user carol 1 2 3\n"                 /* 4 */
                           "group x 1 2\n"                      /* 5 */
                           "user bad\x01name 1 2\n"             /* 6 */
                           "user dave 99999999999999999999 1\n" /* 7 */
                           "user erin 5 6\n",
                           &s),
                     1);
    assert_string_equal(s.e[0].name, "erin");
    assert_int_equal(s.nbad, 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(s.bad_lines[i], i + 2);
    /* A NUL inside a line, and a line far too long. */
    char text[2048] = "ferry-quota-state 1\nuser a";
    size_t n = strlen(text);
    text[n++] = '\0';
    memcpy(text + n, " 1 2\nuser ", 10);
    n += 10;
    memset(text + n, 'x', 900);
    n += 900;
    memset(&s, 0, sizeof(s));
    assert_int_equal(acct_state_parse(text, n, on_entry, on_bad, &s), 0);
    assert_int_equal(s.nbad, 2);
}

static void test_parse_not_a_state_file(void **state)
{
    (void)state;
    struct seen s;
    assert_int_equal(parse("", &s), -EINVAL);
    assert_int_equal(parse("\n", &s), -EINVAL);
    assert_int_equal(parse("ferry-quota-state 2\nuser a 1 2\n", &s), -EINVAL);
    assert_int_equal(parse("user a 1 2\n", &s), -EINVAL);
    assert_int_equal(s.n, 0);
    assert_int_equal(parse("ferry-quota-state 1", &s), 0); /* empty: valid */
}

/* Random bytes and mangled copies of a good file: no crash, no entry
 * without a valid name. */
static void test_parse_random(void **state)
{
    (void)state;
    static const char good[] = "ferry-quota-state 1\nuser alice 1700000000 123\nuser bob 5 6\n";
    struct harness_rng r;
    harness_rng_init(&r, 2021);
    char buf[256];
    for (int i = 0; i < 50000; i++) {
        size_t n;
        if (i % 2) {
            n = harness_rng_below(&r, sizeof(buf));
            for (size_t k = 0; k < n; k++)
                buf[k] = (char)harness_rng_below(&r, 256);
        } else {
            n = sizeof(good) - 1;
            memcpy(buf, good, n);
            for (int k = 0; k < 3; k++)
                buf[harness_rng_below(&r, (uint32_t)n)] = (char)harness_rng_below(&r, 256);
            n = harness_rng_below(&r, (uint32_t)n + 1);
        }
        struct seen s = {0};
        int rc = acct_state_parse(buf, n, on_entry, on_bad, &s);
        assert_true(rc == -EINVAL || rc == s.n);
        for (int k = 0; k < s.n && k < 8; k++)
            for (const char *p = s.e[k].name; *p; p++)
                assert_true((unsigned char)*p > 0x20 && *p != 0x7f);
    }
}

/* ---- the table --------------------------------------------------------------- */

#define NOW 1800000000

/* A configuration with these userlist lines and [quota] lines. */
static struct config *cfg_new(const char *users, const char *const *quota, size_t n)
{
    struct config *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    struct msglist errs = {0};
    assert_int_equal(userlist_parse(users, "users", &c->auth.users, &errs, NULL), 0);
    config_quota_defaults(&c->quota);
    for (size_t i = 0; i < n; i++)
        config_quota_line(&c->quota, "f.conf", (int)i + 1, quota[i], &errs);
    assert_int_equal(errs.n, 0);
    return c;
}

static void cfg_free(struct config *c)
{
    userlist_unref(c->auth.users);
    config_quota_fini(&c->quota);
    free(c);
}

/* Worker wid moves n bytes each way for h's user. */
static void move(struct acct_hold *h, uint64_t n)
{
    acct_count(h->ctr, n, n);
}

static const struct acct_user_total *find(const struct acct_user_total *t, size_t n,
                                          const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

static void test_quotas(void **state)
{
    (void)state;
    static const char *const q[] = {"user alice = 64k/1d", "user bob = 2 sessions"};
    struct config *c = cfg_new("alice:plain:a\nbob:plain:b\ncarol:plain:c\n", q, 2);
    struct acct *a = acct_new(2, 2);
    assert_non_null(a);
    struct msglist warns = {0};
    acct_configure(a, c, NOW, &warns);
    assert_int_equal(warns.n, 1); /* carol is beyond max_users = 2 */
    assert_non_null(strstr(warns.msg[0], "1 users beyond the first 2"));

    struct acct_hold h1, h2, h3;
    assert_int_equal(acct_admit(a, 0, "alice", &h1), ACCT_OK);
    move(&h1, 40000); /* 80000 of 65536 */
    assert_int_equal(acct_admit(a, 1, "alice", &h2), ACCT_OVER_BYTES);
    assert_null(h2.ctr);
    acct_tick(a, 1000, NOW + 10);
    assert_true(acct_over(a, h1.slot));
    assert_true(acct_must_end(a) == false); /* end_sessions is off */
    acct_release(a, &h1);

    assert_int_equal(acct_admit(a, 0, "bob", &h1), ACCT_OK);
    assert_int_equal(acct_admit(a, 1, "bob", &h2), ACCT_OK);
    assert_int_equal(acct_admit(a, 1, "bob", &h3), ACCT_OVER_SESSIONS);
    acct_release(a, &h2);
    assert_int_equal(acct_admit(a, 1, "bob", &h3), ACCT_OK);
    acct_release(a, &h3);
    acct_release(a, &h1);
    acct_release(a, &h1); /* released twice: a no-op */

    /* carol and a name from nowhere count as ":other", never refused. */
    assert_int_equal(acct_admit(a, 0, "carol", &h1), ACCT_OK);
    assert_true(acct_hold_is(a, &h1, "mallory"));
    move(&h1, 5);
    acct_release(a, &h1);

    struct acct_user_total t[8];
    size_t n = acct_snapshot(a, t, 8);
    assert_int_equal(n, 3);
    const struct acct_user_total *al = find(t, n, "alice");
    assert_non_null(al);
    assert_int_equal(al->up, 40000);
    assert_int_equal(al->sessions, 1);
    assert_int_equal(al->refused, 1);
    assert_int_equal(al->quota_bytes, 65536);
    assert_int_equal(al->used, 80000);
    assert_true(al->over);
    assert_int_equal(find(t, n, "bob")->refused, 1);
    assert_int_equal(find(t, n, "bob")->active, 0);
    assert_true(find(t, n, ":other")->other);
    assert_int_equal(find(t, n, ":other")->down, 5);

    /* The period ends: alice starts again from zero. */
    acct_tick(a, 2000, NOW + 86400 + 1);
    assert_false(acct_over(a, al - t));
    assert_int_equal(acct_admit(a, 0, "alice", &h1), ACCT_OK);
    acct_release(a, &h1);

    msglist_fini(&warns);
    acct_free(a);
    cfg_free(c);
}

static void test_reload_and_state(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX + 32];
    harness_mkdtemp(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/q.state", dir);
    char sf[HARNESS_PATH_MAX + 64];
    snprintf(sf, sizeof(sf), "state_file = %s", path);
    const char *const q[] = {"user * = 1m/30d", sf};
    struct config *c = cfg_new("alice:plain:a\nbob:plain:b\n", q, 2);
    struct acct *a = acct_new(1, 16);
    acct_configure(a, c, NOW, NULL);
    struct acct_hold h;
    assert_int_equal(acct_admit(a, 0, "alice", &h), ACCT_OK);
    move(&h, 300000);
    acct_release(a, &h);

    /* A reload without bob: counts stay, bob drops out. */
    struct config *c2 = cfg_new("alice:plain:a\n", q, 2);
    acct_configure(a, c2, NOW + 5, NULL);
    struct acct_user_total t[4];
    size_t n = acct_snapshot(a, t, 4);
    assert_int_equal(n, 2); /* alice and ":other" */
    assert_int_equal(t[0].used, 600000);
    assert_int_equal(acct_state_save(a, NOW + 6), 0);
    acct_free(a);

    /* A new process: the state file brings alice's usage back. */
    a = acct_new(1, 16);
    acct_configure(a, c2, NOW + 100, NULL);
    struct msglist warns = {0};
    acct_state_load(a, NOW + 100, &warns);
    assert_int_equal(warns.n, 0);
    n = acct_snapshot(a, t, 4);
    assert_int_equal(t[0].used, 600000);
    assert_int_equal(t[0].period_start, NOW);
    assert_int_equal(acct_admit(a, 0, "alice", &h), ACCT_OK);
    move(&h, 300000); /* 1.2 MB of 1 MiB */
    acct_release(a, &h);
    assert_int_equal(acct_admit(a, 0, "alice", &h), ACCT_OVER_BYTES);
    acct_free(a);

    /* A mangled file: a warning, nothing loaded. */
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("garbage\n", fp);
    fclose(fp);
    a = acct_new(1, 16);
    acct_configure(a, c2, NOW + 100, NULL);
    acct_state_load(a, NOW + 100, &warns);
    assert_int_equal(warns.n, 1);
    assert_non_null(strstr(warns.msg[0], "not a ferry quota state file"));
    acct_free(a);

    msglist_fini(&warns);
    cfg_free(c);
    cfg_free(c2);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_entries),
        cmocka_unit_test(test_parse_bad_lines),
        cmocka_unit_test(test_parse_not_a_state_file),
        cmocka_unit_test(test_parse_random),
        cmocka_unit_test(test_quotas),
        cmocka_unit_test(test_reload_and_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
