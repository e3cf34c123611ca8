/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ban_test.c: the dynamic ban table of acl/ban: the after-th failure
 * within the window bans, failures spread wider than the window do not,
 * a ban ends on time and the count starts again, failures while banned do
 * not extend it, after 0 never bans, sources do not affect each other, and
 * a small table under many sources keeps its bans rather than forgetting
 * them for strangers.
 */
#include "harness.h"

#include "acl/ban.h"

#define S 1000000ull

static struct addr ip4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
    struct addr x = {.family = AF_INET};
    x.ip[0] = a;
    x.ip[1] = b;
    x.ip[2] = c;
    x.ip[3] = d;
    return x;
}

static void test_bans(void **state)
{
    (void)state;
    struct ban_table t;
    assert_int_equal(ban_init(&t, 1024), 0);
    struct addr a = ip4(10, 0, 0, 1), b = ip4(10, 0, 0, 2);
    uint64_t now = 100 * S;
    assert_false(ban_fail(&t, &a, now, 3, 10 * S, 60 * S));
    assert_false(ban_fail(&t, &a, now + 1 * S, 3, 10 * S, 60 * S));
    assert_false(ban_check(&t, &a, now + 1 * S));
    assert_true(ban_fail(&t, &a, now + 2 * S, 3, 10 * S, 60 * S));
    assert_true(ban_check(&t, &a, now + 2 * S));
    assert_false(ban_check(&t, &b, now + 2 * S));
    /* Failures while banned do not extend it; it ends on time. */
    assert_false(ban_fail(&t, &a, now + 50 * S, 3, 10 * S, 60 * S));
    assert_true(ban_check(&t, &a, now + 61 * S));
    assert_false(ban_check(&t, &a, now + 62 * S + 1));
    /* The count starts again after the ban. */
    assert_false(ban_fail(&t, &a, now + 63 * S, 3, 10 * S, 60 * S));
    assert_false(ban_check(&t, &a, now + 63 * S));
    /* Spread wider than the window: never three within it. */
    for (int i = 0; i < 10; i++)
        assert_false(ban_fail(&t, &b, now + (uint64_t)i * 6 * S, 3, 10 * S, 60 * S));
    assert_false(ban_check(&t, &b, now + 60 * S));
    assert_false(ban_fail(&t, &b, now, 0, 10 * S, 60 * S)); /* after 0: off */
    ban_fini(&t);
}

static void test_small_table_keeps_bans(void **state)
{
    (void)state;
    struct ban_table t;
    assert_int_equal(ban_init(&t, 4), 0); /* one set of 4 ways */
    struct addr bad = ip4(192, 0, 2, 1);
    uint64_t now = 10 * S;
    assert_true(ban_fail(&t, &bad, now, 1, S, 60 * S));
    for (uint32_t i = 0; i < 1000; i++) {
        struct addr x = ip4(198, 51, (uint8_t)(i >> 8), (uint8_t)i);
        ban_fail(&t, &x, now + i, 5, S, 60 * S); /* one failure each: not banned */
        assert_true(ban_check(&t, &bad, now + i));
    }
    ban_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bans),
        cmocka_unit_test(test_small_table_keeps_bans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
