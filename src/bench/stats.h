/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats.h: the small statistics `ferry bench` reports over runs: median,
 * min, max (latency percentiles: hist.h). Pure functions.
 */
#ifndef FERRY_BENCH_STATS_H
#define FERRY_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Median of n values (sorts a copy; the input is left as it is). 0 when n
 * is 0; the mean of the two middle values when n is even. */
double stats_median(const double *v, size_t n);
double stats_min(const double *v, size_t n);
double stats_max(const double *v, size_t n);
void stats_sort_u32(uint32_t *v, size_t n);

#endif
