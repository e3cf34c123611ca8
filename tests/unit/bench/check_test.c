/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * check_test.c: how `ferry bench` reports wrong data: the first differing
 * byte of two buffers, and bench_fail(), which keeps the first message of a
 * run, ignores later ones, and is cleared between runs. Wrong data fails a
 * run; these are the pieces every scenario's check is built from.
 */
#include "harness.h"

#include <pthread.h>

#include "bench/bench.h"

static void test_first_diff(void **state)
{
    (void)state;
    const uint8_t a[] = {1, 2, 3, 4, 5};
    uint8_t b[] = {1, 2, 3, 4, 5};
    assert_int_equal(bench_first_diff(a, b, 5), 5);
    assert_int_equal(bench_first_diff(a, b, 0), 0);
    b[3] = 9;
    assert_int_equal(bench_first_diff(a, b, 5), 3);
    assert_int_equal(bench_first_diff(a, b, 3), 3); /* no difference within n */
    b[0] = 0;
    assert_int_equal(bench_first_diff(a, b, 5), 0);
}

static void test_fail_keeps_the_first_message(void **state)
{
    (void)state;
    static struct bench b; /* zeroed: not failed */
    assert_false(bench_has_failed(&b));
    bench_fail(&b, "stream %u: byte %u", 3u, 70000u);
    assert_true(bench_has_failed(&b));
    bench_fail(&b, "a later problem");
    assert_string_equal(b.fail_msg, "stream 3: byte 70000");
    bench_fail_reset(&b);
    assert_false(bench_has_failed(&b));
    assert_string_equal(b.fail_msg, "");
    bench_fail(&b, "next run");
    assert_string_equal(b.fail_msg, "next run");
}

static void test_fail_message_is_bounded(void **state)
{
    (void)state;
    static struct bench b;
    char big[1024];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bench_fail(&b, "%s", big);
    assert_true(bench_has_failed(&b));
    assert_int_equal(strlen(b.fail_msg), sizeof(b.fail_msg) - 1);
}

struct racer {
    struct bench *b;
    unsigned id;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < 100; i++)
        bench_fail(r->b, "thread %u attempt %d", r->id, i);
    return NULL;
}

/* Generator threads report concurrently: exactly one whole message wins. */
static void test_fail_from_many_threads(void **state)
{
    (void)state;
    static struct bench b;
    pthread_t t[8];
    struct racer r[8];
    for (unsigned i = 0; i < 8; i++) {
        r[i] = (struct racer){&b, i};
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (unsigned i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    assert_true(bench_has_failed(&b));
    unsigned id;
    int attempt;
    assert_int_equal(sscanf(b.fail_msg, "thread %u attempt %d", &id, &attempt), 2);
    assert_true(id < 8 && attempt == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_diff),
        cmocka_unit_test(test_fail_keeps_the_first_message),
        cmocka_unit_test(test_fail_message_is_bounded),
        cmocka_unit_test(test_fail_from_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
