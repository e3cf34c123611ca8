/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helper_test.c: the external helper pool, driven directly with small
 * /bin/sh helpers: OK/ERR verdicts from one long-lived child; a child
 * that exits is a failed attempt (HELPER_UNAVAILABLE), counted, and its
 * slot backs off (an attempt during the back-off fails at once, it does
 * not wait) before a restart that is counted; a child that never answers
 * is killed at the timeout; garbage and BH; a changed command replaces
 * the children; fini reaps everything. Every wait is bounded.
 */
#include "harness.h"

#include <sys/stat.h>
#include <time.h>

#include "auth/helper.h"

/* Answers OK for "alice s3cret", ERR otherwise; exits on "crash", never
 * answers "hang", says "WHAT" to "garbage" and BH to "bh". Logs each start
 * to $1. */
static const char script[] = "#!/bin/sh\n"
                             "echo start >> \"$1\"\n"
                             "while read u p; do\n"
                             "  case \"$u\" in\n"
                             "  crash) exit 3;;\n"
                             "  hang) exec sleep 60;;\n"
                             "  garbage) echo WHAT;;\n"
                             "  bh) echo 'BH message=\"down\"';;\n"
                             "  *) if [ \"$u $p\" = 'alice s3cret' ]; then echo OK; else echo "
                             "'ERR message=\"no\"'; fi;;\n"
                             "  esac\n"
                             "done\n";

struct fixture {
    char dir[HARNESS_PATH_MAX];
    char prog[HARNESS_PATH_MAX];
    char log[HARNESS_PATH_MAX];
    struct helper_pool hp;
};

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    harness_mkdtemp(fx->dir, sizeof(fx->dir));
    harness_path(fx->prog, sizeof(fx->prog), fx->dir, "helper.sh");
    harness_path(fx->log, sizeof(fx->log), fx->dir, "starts");
    harness_write_file(fx->prog, script);
    assert_int_equal(chmod(fx->prog, 0755), 0);
    assert_int_equal(helper_pool_init(&fx->hp), 0);
    char *argv[] = {fx->prog, fx->log, NULL};
    assert_int_equal(helper_pool_configure(&fx->hp, argv, 1, 1000), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    helper_pool_fini(&fx->hp);
    assert_int_equal(atomic_load(&fx->hp.running), 0);
    unlink(fx->prog);
    unlink(fx->log);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static int check(struct fixture *fx, const char *user, const char *pass)
{
    return helper_pool_check(&fx->hp, user, strlen(user), pass, strlen(pass));
}

/* Lines in the start log: how many children were started. */
static int starts(const struct fixture *fx)
{
    FILE *f = fopen(fx->log, "r");
    if (!f)
        return 0;
    int n = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

/* Retry (bounded) until alice gets in again after a failure. */
static void until_ok(struct fixture *fx)
{
    uint64_t t0 = ms_now();
    while (check(fx, "alice", "s3cret") != HELPER_OK) {
        assert_true(ms_now() - t0 < 10000);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void test_verdicts_one_child(void **state)
{
    struct fixture *fx = *state;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(check(fx, "alice", "s3cret"), HELPER_OK);
        assert_int_equal(check(fx, "alice", "wrong"), HELPER_DENIED);
        assert_int_equal(check(fx, "bob", "s3cret"), HELPER_DENIED);
    }
    assert_int_equal(starts(fx), 1);
    assert_int_equal(atomic_load(&fx->hp.requests), 9);
    assert_int_equal(atomic_load(&fx->hp.running), 1);
    assert_int_equal(atomic_load(&fx->hp.restarts), 0);
}

static void test_crash_backs_off_then_restarts(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_OK);
    assert_int_equal(check(fx, "crash", "x"), HELPER_UNAVAILABLE);
    assert_int_equal(atomic_load(&fx->hp.failures[HELPER_FAIL_CRASH]), 1);
    assert_int_equal(atomic_load(&fx->hp.running), 0);
    /* Backing off: refused at once, never a wait for the timeout. */
    uint64_t t0 = ms_now();
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_UNAVAILABLE);
    assert_true(ms_now() - t0 < 500);
    until_ok(fx);
    assert_int_equal(atomic_load(&fx->hp.restarts), 1);
    assert_int_equal(starts(fx), 2);
    /* Crashes in a row double the back-off; a good answer resets it. */
    assert_int_equal(check(fx, "crash", "x"), HELPER_UNAVAILABLE);
    assert_int_equal(fx->hp.c[0].backoff_ms, HELPER_BACKOFF_MIN_MS);
    struct timespec ts = {0, (HELPER_BACKOFF_MIN_MS + 50) * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(check(fx, "crash", "x"), HELPER_UNAVAILABLE);
    assert_int_equal(fx->hp.c[0].backoff_ms, 2 * HELPER_BACKOFF_MIN_MS);
    until_ok(fx);
    assert_int_equal(fx->hp.c[0].backoff_ms, 0);
}

static void test_hang_is_killed_at_the_timeout(void **state)
{
    struct fixture *fx = *state;
    uint64_t t0 = ms_now();
    assert_int_equal(check(fx, "hang", "x"), HELPER_UNAVAILABLE);
    uint64_t took = ms_now() - t0;
    assert_true(took >= 900 && took < 5000);
    assert_int_equal(atomic_load(&fx->hp.failures[HELPER_FAIL_TIMEOUT]), 1);
    until_ok(fx);
}

static void test_garbage_and_bh(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(check(fx, "bh", "x"), HELPER_UNAVAILABLE);
    assert_int_equal(atomic_load(&fx->hp.running), 1); /* BH keeps the child */
    assert_int_equal(check(fx, "garbage", "x"), HELPER_UNAVAILABLE);
    assert_int_equal(atomic_load(&fx->hp.failures[HELPER_FAIL_PROTOCOL]), 1);
    until_ok(fx);
    assert_int_equal(starts(fx), 2);
}

static void test_new_command_replaces_children(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_OK);
    char again[] = "again";
    char *argv[] = {fx->prog, fx->log, again, NULL};
    assert_int_equal(helper_pool_configure(&fx->hp, argv, 2, 1000), 0);
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_OK);
    assert_int_equal(starts(fx), 2);
    assert_int_equal(atomic_load(&fx->hp.running), 1);
    helper_pool_clear(&fx->hp);
    assert_int_equal(atomic_load(&fx->hp.running), 0);
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_UNAVAILABLE);
}

static void test_spawn_failure(void **state)
{
    struct fixture *fx = *state;
    char missing[] = "/nonexistent/helper";
    char *argv[] = {missing, NULL};
    assert_int_equal(helper_pool_configure(&fx->hp, argv, 1, 1000), 0);
    uint64_t t0 = ms_now();
    assert_int_equal(check(fx, "alice", "s3cret"), HELPER_UNAVAILABLE);
    assert_true(ms_now() - t0 < 1500);
    assert_true(atomic_load(&fx->hp.failures[HELPER_FAIL_SPAWN]) >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verdicts_one_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_backs_off_then_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang_is_killed_at_the_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_and_bh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_command_replaces_children, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
