/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats_test.c: the statistics `ferry bench` reports over runs: medians,
 * min and max (latency percentiles: hist_test.c).
 */
#include "harness.h"

#include <math.h>

#include "bench/bench.h"
#include "bench/stats.h"

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
        cmocka_unit_test(test_median_odd_even_and_unsorted),
        cmocka_unit_test(test_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
