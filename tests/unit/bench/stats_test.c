/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats_test.c: the statistics `ferry bench` reports: percentiles by linear
 * interpolation between closest ranks, medians of runs, and latency sample
 * arrays.
 */
#include "harness.h"

#include <math.h>

#include "bench/bench.h"
#include "bench/stats.h"

static void test_percentile_empty_and_single(void **state)
{
    (void)state;
    assert_true(stats_percentile(NULL, 0, 50) == 0);
    uint32_t one[] = {42};
    assert_true(stats_percentile(one, 1, 0) == 42);
    assert_true(stats_percentile(one, 1, 50) == 42);
    assert_true(stats_percentile(one, 1, 99) == 42);
    assert_true(stats_percentile(one, 1, 100) == 42);
}

static void test_percentile_interpolates(void **state)
{
    (void)state;
    uint32_t v[] = {10, 20, 30, 40, 50};
    assert_true(stats_percentile(v, 5, 0) == 10);
    assert_true(stats_percentile(v, 5, 50) == 30);
    assert_true(stats_percentile(v, 5, 100) == 50);
    /* rank 0.25 * 4 = 1.0 -> 20; rank 0.95 * 4 = 3.8 -> 40 + 0.8 * 10 */
    assert_true(stats_percentile(v, 5, 25) == 20);
    assert_true(fabs(stats_percentile(v, 5, 95) - 48.0) < 1e-9);
    /* out-of-range p clamps */
    assert_true(stats_percentile(v, 5, -3) == 10);
    assert_true(stats_percentile(v, 5, 250) == 50);
}

static void test_percentile_of_1_to_100(void **state)
{
    (void)state;
    uint32_t v[100];
    for (uint32_t i = 0; i < 100; i++)
        v[i] = i + 1;
    assert_true(fabs(stats_percentile(v, 100, 50) - 50.5) < 1e-9);
    assert_true(fabs(stats_percentile(v, 100, 99) - 99.01) < 1e-9);
    assert_true(fabs(stats_mean(v, 100) - 50.5) < 1e-9);
}

static void test_median_odd_even_and_unsorted(void **state)
{
    (void)state;
    double odd[] = {3.0, 1.0, 2.0};
    assert_true(stats_median(odd, 3) == 2.0);
    /* the input is left untouched */
    assert_true(odd[0] == 3.0 && odd[1] == 1.0 && odd[2] == 2.0);
    double even[] = {4.0, 1.0, 3.0, 2.0};
    assert_true(stats_median(even, 4) == 2.5);
    assert_true(stats_median(NULL, 0) == 0);
    double one[] = {7.5};
    assert_true(stats_median(one, 1) == 7.5);
    assert_true(stats_min(even, 4) == 1.0);
    assert_true(stats_max(even, 4) == 4.0);
}

static void test_lat_add_converts_and_merges_sorted(void **state)
{
    (void)state;
    struct lat a = {0}, b = {0}, all;
    lat_add(&a, 5000000); /* 5 ms */
    lat_add(&a, 1000);    /* 1 us */
    lat_add(&b, 3000000); /* 3 ms */
    lat_add(&b, 999);     /* rounds down to 0 us */
    assert_int_equal(a.n, 2);
    assert_int_equal(a.v[0], 5000);
    struct lat parts[2] = {a, b};
    lat_merge(&all, parts, 2);
    assert_int_equal(all.n, 4);
    assert_int_equal(all.v[0], 0);
    assert_int_equal(all.v[1], 1);
    assert_int_equal(all.v[2], 3000);
    assert_int_equal(all.v[3], 5000);
    lat_free(&all);
    lat_free(&a);
    lat_free(&b);
    assert_null(a.v);
    assert_int_equal(a.n, 0);
}

static void test_lat_merge_with_empty_parts(void **state)
{
    (void)state;
    struct lat empty = {0}, one = {0}, all;
    lat_add(&one, 2000);
    struct lat parts[3] = {empty, one, empty};
    lat_merge(&all, parts, 3);
    assert_int_equal(all.n, 1);
    assert_int_equal(all.v[0], 2);
    lat_free(&all);
    struct lat none[1] = {{0}};
    lat_merge(&all, none, 1);
    assert_int_equal(all.n, 0);
    lat_free(&all);
    lat_free(&one);
}

static void test_lat_huge_value_saturates(void **state)
{
    (void)state;
    struct lat l = {0};
    lat_add(&l, UINT64_MAX);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0], UINT32_MAX);
    lat_free(&l);
}

static void test_sort(void **state)
{
    (void)state;
    struct harness_rng r;
    harness_rng_init(&r, 7);
    uint32_t v[1000];
    for (size_t i = 0; i < 1000; i++)
        v[i] = harness_rng_below(&r, 50);
    stats_sort_u32(v, 1000);
    for (size_t i = 1; i < 1000; i++)
        assert_true(v[i - 1] <= v[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentile_empty_and_single),
        cmocka_unit_test(test_percentile_interpolates),
        cmocka_unit_test(test_percentile_of_1_to_100),
        cmocka_unit_test(test_median_odd_even_and_unsorted),
        cmocka_unit_test(test_lat_add_converts_and_merges_sorted),
        cmocka_unit_test(test_lat_merge_with_empty_parts),
        cmocka_unit_test(test_lat_huge_value_saturates),
        cmocka_unit_test(test_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
