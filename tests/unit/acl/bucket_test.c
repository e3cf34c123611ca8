/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bucket_test.c: the token bucket of acl/bucket.h, with time passed in. A
 * new bucket holds burst; tokens come back at rate a second, fractions
 * included, never above burst; take is all or nothing; spend leaves no
 * debt below zero; wait_us says exactly when enough tokens are back; time
 * standing still or going back adds nothing; a long idle time (even with
 * huge rates) neither overflows nor overfills; rate 0 never refills.
 */
#include "harness.h"

#include "acl/bucket.h"

#define T0  1000000000ull /* an arbitrary start, in microseconds */
#define SEC 1000000ull

static void test_new_bucket_holds_burst(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 5, T0);
    assert_int_equal(bucket_avail(&b, 10, 5, T0), 5);
    for (int i = 0; i < 5; i++)
        assert_true(bucket_take(&b, 10, 5, T0, 1));
    assert_false(bucket_take(&b, 10, 5, T0, 1));
    assert_int_equal(bucket_avail(&b, 10, 5, T0), 0);

    bucket_init(&b, 0, T0);
    assert_int_equal(bucket_avail(&b, 10, 0, T0), 0);
    assert_false(bucket_take(&b, 10, 0, T0 + SEC, 1)); /* burst 0 holds nothing */
}

static void test_refill_over_time(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 10, T0);
    assert_true(bucket_take(&b, 10, 10, T0, 10));
    /* 10 a second: one every 100 ms. */
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 99999), 0);
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 100000), 1);
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 550000), 5);
    assert_true(bucket_take(&b, 10, 10, T0 + 550000, 5));
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 550000), 0);
    /* Fractions are kept: 0.5 token left over from 550 ms, so 50 ms more
     * make one. */
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 599999), 0);
    assert_int_equal(bucket_avail(&b, 10, 10, T0 + 600000), 1);

    /* Many small steps add up to the same as one big one. */
    struct bucket s;
    bucket_init(&s, 1000, T0);
    assert_true(bucket_take(&s, 7, 1000, T0, 1000));
    for (uint64_t t = 1; t <= 1000; t++)
        (void)bucket_avail(&s, 7, 1000, T0 + t * 1000); /* every ms for 1 s */
    assert_int_equal(bucket_avail(&s, 7, 1000, T0 + SEC), 7);
}

static void test_burst_cap(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 3, T0);
    assert_int_equal(bucket_avail(&b, 100, 3, T0 + 10 * SEC), 3);
    assert_false(bucket_take(&b, 100, 3, T0 + 10 * SEC, 4));
    /* A failed take takes nothing. */
    assert_int_equal(bucket_avail(&b, 100, 3, T0 + 10 * SEC), 3);
    assert_true(bucket_take(&b, 100, 3, T0 + 10 * SEC, 3));
    assert_false(bucket_take(&b, 100, 3, T0 + 10 * SEC, 1));
    /* Refilled exactly to burst, not beyond, however long it waits. */
    assert_int_equal(bucket_avail(&b, 100, 3, T0 + 20 * SEC), 3);
    assert_int_equal(b.tokens_u, 3 * SEC);
}

static void test_take_several(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 100, T0);
    assert_true(bucket_take(&b, 1000, 100, T0, 60));
    assert_false(bucket_take(&b, 1000, 100, T0, 41));
    assert_true(bucket_take(&b, 1000, 100, T0, 40));
    assert_true(bucket_take(&b, 1000, 100, T0 + 1000, 1)); /* 1 ms at 1000/s */
    assert_false(bucket_take(&b, 1000, 100, T0 + 1000, 1));
    assert_true(bucket_take(&b, 1000, 100, T0, 0)); /* zero is always there */
}

static void test_spend_no_debt(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 1000, T0);
    bucket_spend(&b, 1000, 1000, T0, 400);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0), 600);
    /* More than there is: down to zero, no debt carried. */
    bucket_spend(&b, 1000, 1000, T0, 100000);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0), 0);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + 1000), 1);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + 500000), 500);
    /* spend refills first. */
    bucket_spend(&b, 1000, 1000, T0 + 600000, 50);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + 600000), 550);
}

static void test_wait_us(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 10, T0);
    assert_int_equal(bucket_wait_us(&b, 10, 1), 0);
    assert_int_equal(bucket_wait_us(&b, 10, 10), 0);
    assert_true(bucket_take(&b, 10, 10, T0, 10));
    assert_int_equal(bucket_wait_us(&b, 10, 1), 100000);
    assert_int_equal(bucket_wait_us(&b, 10, 4), 400000);
    (void)bucket_avail(&b, 10, 10, T0 + 30000); /* 0.3 token */
    assert_int_equal(bucket_wait_us(&b, 10, 1), 70000);

    /* Rounded up: after wait_us the tokens are there, one us before not. */
    static const uint64_t rates[] = {3, 7, 10, 999, 65536, 1048576, 1000000007};
    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
        uint64_t rate = rates[i], burst = rate < 100 ? 100 : rate;
        for (uint64_t n = 1; n <= 3; n++) {
            struct bucket x;
            bucket_init(&x, burst, T0);
            assert_true(bucket_take(&x, rate, burst, T0, burst));
            uint64_t w = bucket_wait_us(&x, rate, n);
            assert_true(w > 0);
            struct bucket early = x;
            if (w > 1)
                assert_false(bucket_take(&early, rate, burst, T0 + w - 1, n));
            assert_true(bucket_take(&x, rate, burst, T0 + w, n));
        }
    }
}

static void test_time_still_or_backwards(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 5, T0);
    assert_true(bucket_take(&b, 1, 5, T0, 5));
    assert_int_equal(bucket_avail(&b, 1, 5, T0), 0);
    assert_int_equal(bucket_avail(&b, 1, 5, T0 - 10 * SEC), 0); /* a clock step back */
    assert_int_equal(b.last_us, T0);
    assert_int_equal(bucket_avail(&b, 1, 5, T0 + SEC), 1);
}

static void test_long_idle_no_overflow(void **state)
{
    (void)state;
    struct bucket b;
    /* Years of idle time at a high rate: rate * dt is far beyond 64 bits. */
    bucket_init(&b, 1000000, 0);
    assert_true(bucket_take(&b, 1000000, 1000000, 0, 1000000));
    assert_int_equal(bucket_avail(&b, 1000000, 1000000, UINT64_MAX / 2), 1000000);
    assert_int_equal(bucket_avail(&b, 1000000, 1000000, UINT64_MAX), 1000000);

    /* The bandwidth shape: a 1 TiB/s rate, burst a quarter of it. */
    uint64_t rate = 1ull << 40, burst = rate / 4;
    bucket_init(&b, burst, T0);
    bucket_spend(&b, rate, burst, T0, burst);
    assert_int_equal(bucket_avail(&b, rate, burst, T0), 0);
    assert_int_equal(bucket_avail(&b, rate, burst, T0 + 3600 * SEC), burst);
    bucket_spend(&b, rate, burst, T0 + 3600 * SEC, burst);
    assert_int_equal(bucket_avail(&b, rate, burst, T0 + 3600 * SEC + 1), rate / SEC);

    /* Idle times just around the point where the bucket fills. */
    bucket_init(&b, 1000, T0);
    bucket_spend(&b, 1000, 1000, T0, 1000);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + SEC - 1000), 999);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + SEC), 1000);
    assert_int_equal(bucket_avail(&b, 1000, 1000, T0 + SEC + 1), 1000);
}

/* Rate 0: no tokens a second, so none ever come back, however long. */
static void test_rate_zero(void **state)
{
    (void)state;
    struct bucket b;
    bucket_init(&b, 5, T0);
    assert_int_equal(bucket_avail(&b, 0, 5, T0), 5);
    assert_true(bucket_take(&b, 0, 5, T0, 5));
    assert_int_equal(bucket_avail(&b, 0, 5, T0 + SEC), 0);
    assert_int_equal(bucket_avail(&b, 0, 5, T0 + 2 * SEC), 0);
    assert_false(bucket_take(&b, 0, 5, T0 + 3 * SEC, 1));
    uint64_t later = T0 + 3600 * SEC;
    uint64_t got = bucket_avail(&b, 0, 5, later);
    if (got != 0)
        fail_msg("rate 0: %llu tokens after an idle hour (expected none: rate 0 refills "
                 "nothing; bucket_refill adds the whole burst once dt > burst * 1e6 us)",
                 (unsigned long long)got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_bucket_holds_burst),
        cmocka_unit_test(test_refill_over_time),
        cmocka_unit_test(test_burst_cap),
        cmocka_unit_test(test_take_several),
        cmocka_unit_test(test_spend_no_debt),
        cmocka_unit_test(test_wait_us),
        cmocka_unit_test(test_time_still_or_backwards),
        cmocka_unit_test(test_long_idle_no_overflow),
        cmocka_unit_test(test_rate_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
