/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hist_test.c: the bench's log-linear latency histogram: exact below 256,
 * within 1/128 above, percentiles by rank without a sort, merging, the
 * clamp beyond its top, and a random sample set checked against the sorted
 * truth.
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>

#include "bench/hist.h"
#include "bench/stats.h"

static struct hist h1, h2;

static void test_empty(void **state)
{
    (void)state;
    hist_reset(&h1);
    assert_true(hist_percentile(&h1, 50) == 0);
    assert_true(hist_percentile(&h1, 100) == 0);
    assert_true(hist_mean(&h1) == 0);
}

static void test_small_values_are_exact(void **state)
{
    (void)state;
    hist_reset(&h1);
    for (uint64_t v = 1; v <= 100; v++)
        hist_add(&h1, v);
    assert_true(hist_percentile(&h1, 0) == 1);
    assert_true(hist_percentile(&h1, 50) == 50);
    assert_true(hist_percentile(&h1, 90) == 90);
    assert_true(hist_percentile(&h1, 99) == 99);
    assert_true(hist_percentile(&h1, 99.9) == 100);
    assert_true(hist_percentile(&h1, 100) == 100);
    assert_true(fabs(hist_mean(&h1) - 50.5) < 1e-9);
    assert_int_equal(h1.n, 100);
}

static void test_buckets_tile_the_range(void **state)
{
    (void)state;
    /* Each bucket starts where the one before ended, widths <= 1/128. */
    for (size_t i = 1; i < HIST_BUCKETS; i++) {
        assert_true(hist_bucket_low(i) == hist_bucket_high(i - 1) + 1);
        uint64_t w = hist_bucket_high(i) - hist_bucket_low(i) + 1;
        assert_true(w == 1 || w * HIST_SUB_HALF <= hist_bucket_low(i));
        assert_int_equal(hist_bucket(hist_bucket_low(i)), i);
        assert_int_equal(hist_bucket(hist_bucket_high(i)), i);
    }
    assert_int_equal(hist_bucket(HIST_MAX_VALUE), HIST_BUCKETS - 1);
    assert_int_equal(hist_bucket(UINT64_MAX), HIST_BUCKETS - 1);
}

static void test_large_values_within_precision(void **state)
{
    (void)state;
    uint64_t vals[] = {256, 1000, 12345, 999999, 5000000, 123456789, 60000000000ull};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        hist_reset(&h1);
        hist_add(&h1, 1);
        hist_add(&h1, vals[i]);
        hist_add(&h1, HIST_MAX_VALUE);
        double got = hist_percentile(&h1, 50);
        assert_true(fabs(got - (double)vals[i]) <= (double)vals[i] / 128.0);
    }
}

static void test_beyond_the_top_is_clamped_but_max_exact(void **state)
{
    (void)state;
    hist_reset(&h1);
    hist_add(&h1, UINT64_MAX);
    assert_int_equal(h1.count[HIST_BUCKETS - 1], 1);
    assert_true(hist_percentile(&h1, 100) == (double)UINT64_MAX);
    assert_true(hist_percentile(&h1, 0) == (double)UINT64_MAX);
}

static void test_merge(void **state)
{
    (void)state;
    hist_reset(&h1);
    hist_reset(&h2);
    hist_add(&h1, 10);
    hist_add(&h1, 30);
    hist_add(&h2, 20);
    hist_add(&h2, 5);
    struct hist empty;
    hist_reset(&empty);
    hist_merge(&h1, &empty);
    hist_merge(&h1, &h2);
    assert_int_equal(h1.n, 4);
    assert_int_equal(h1.min, 5);
    assert_int_equal(h1.max, 30);
    assert_true(hist_percentile(&h1, 50) == 10);
    assert_true(hist_percentile(&h1, 75) == 20);
    assert_true(fabs(hist_mean(&h1) - 16.25) < 1e-9);
    /* Merging into an empty one copies. */
    hist_reset(&empty);
    hist_merge(&empty, &h2);
    assert_int_equal(empty.min, 5);
    assert_int_equal(empty.n, 2);
}

/* Random latencies (spread over 1 us .. 16 s, in ns) against the sorted
 * truth: every percentile within a bucket's precision. */
static void test_random_against_sorted_truth(void **state)
{
    (void)state;
    struct harness_rng r;
    harness_rng_init(&r, 19);
    enum { N = 20000 };
    static uint32_t us[N];
    hist_reset(&h1);
    for (size_t i = 0; i < N; i++) {
        uint32_t top = 1u << harness_rng_below(&r, 24); /* 1 us .. 16 s, log-spread */
        uint32_t v = top + harness_rng_below(&r, top);
        us[i] = v;
        hist_add(&h1, (uint64_t)v * 1000);
    }
    stats_sort_u32(us, N);
    double ps[] = {50, 90, 99, 99.9};
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
        size_t rank = (size_t)ceil(ps[k] / 100.0 * N);
        double truth = (double)us[rank - 1] * 1000;
        double got = hist_percentile(&h1, ps[k]);
        assert_true(fabs(got - truth) <= truth / 128.0 + 1);
    }
    assert_true(hist_percentile(&h1, 100) == (double)us[N - 1] * 1000);
    assert_true(hist_percentile(&h1, 0) == (double)us[0] * 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_small_values_are_exact),
        cmocka_unit_test(test_buckets_tile_the_range),
        cmocka_unit_test(test_large_values_within_precision),
        cmocka_unit_test(test_beyond_the_top_is_clamped_but_max_exact),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_random_against_sorted_truth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
