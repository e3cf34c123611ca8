/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats.c: percentiles and medians for the bench (latency percentiles
 * come from hist.c's histogram, not from sorted samples).
 */
#include "bench/stats.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void stats_sort_u32(uint32_t *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_u32);
}

double stats_median(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *c = malloc(n * sizeof(*c));
    if (!c)
        return v[0];
    memcpy(c, v, n * sizeof(*c));
    qsort(c, n, sizeof(*c), cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

double stats_min(const double *v, size_t n)
{
    double m = n ? v[0] : 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

double stats_max(const double *v, size_t n)
{
    double m = n ? v[0] : 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}
