/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats.c: percentiles, medians and latency sample arrays for the bench.
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

double stats_percentile(const uint32_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    if (p <= 0)
        return sorted[0];
    if (p >= 100)
        return sorted[n - 1];
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)rank;
    double frac = rank - (double)lo;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return (double)sorted[lo] + frac * ((double)sorted[lo + 1] - (double)sorted[lo]);
}

double stats_mean(const uint32_t *v, size_t n)
{
    if (n == 0)
        return 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return sum / (double)n;
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

void lat_add(struct lat *l, uint64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 65536;
        if (cap > (64u << 20))
            return; /* 64 Mi samples is plenty; later ones are not kept */
        uint32_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    uint64_t us = ns / 1000;
    l->v[l->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

void lat_free(struct lat *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

void lat_merge(struct lat *out, struct lat *parts, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].n;
    out->v = malloc((total ? total : 1) * sizeof(*out->v));
    out->n = 0;
    out->cap = out->v ? total : 0;
    if (!out->v)
        return;
    for (size_t i = 0; i < n; i++) {
        if (parts[i].n == 0)
            continue; /* its array may be NULL */
        memcpy(out->v + out->n, parts[i].v, parts[i].n * sizeof(*out->v));
        out->n += parts[i].n;
    }
    stats_sort_u32(out->v, out->n);
}
