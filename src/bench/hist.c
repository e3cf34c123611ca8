/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hist.c: the bench's log-linear latency histogram (see hist.h). Bucket
 * i < HIST_SUB holds the value i; above, each power of two 2^m (m >=
 * HIST_SUB_BITS) is cut into HIST_SUB_HALF buckets of width
 * 2^(m - HIST_SUB_BITS + 1), so a bucket's width is at most 1/128 of the
 * values in it. Pure arithmetic: no I/O, no allocation.
 */
#include "bench/hist.h"

#include <string.h>

void hist_reset(struct hist *h)
{
    memset(h, 0, sizeof(*h));
}

static unsigned msb64(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

size_t hist_bucket(uint64_t v)
{
    if (v < HIST_SUB)
        return (size_t)v;
    if (v > HIST_MAX_VALUE)
        v = HIST_MAX_VALUE;
    unsigned m = msb64(v);
    unsigned shift = m - HIST_SUB_BITS + 1;
    size_t group = m - HIST_SUB_BITS; /* 0 for [2^8, 2^9) */
    size_t sub = (size_t)(v >> shift) - HIST_SUB_HALF;
    return HIST_SUB + group * HIST_SUB_HALF + sub;
}

uint64_t hist_bucket_low(size_t i)
{
    if (i < HIST_SUB)
        return i;
    size_t group = (i - HIST_SUB) / HIST_SUB_HALF, sub = (i - HIST_SUB) % HIST_SUB_HALF;
    unsigned shift = (unsigned)group + 1;
    return (uint64_t)(HIST_SUB_HALF + sub) << shift;
}

uint64_t hist_bucket_high(size_t i)
{
    if (i < HIST_SUB)
        return i;
    size_t group = (i - HIST_SUB) / HIST_SUB_HALF;
    return hist_bucket_low(i) + ((uint64_t)1 << (group + 1)) - 1;
}

void hist_add(struct hist *h, uint64_t v)
{
    if (h->n == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->n++;
    h->sum += (double)v;
    h->count[hist_bucket(v)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    if (src->n == 0)
        return;
    if (dst->n == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->n += src->n;
    dst->sum += src->sum;
    for (size_t i = 0; i < HIST_BUCKETS; i++)
        dst->count[i] += src->count[i];
}

double hist_percentile(const struct hist *h, double p)
{
    if (h->n == 0)
        return 0;
    if (!(p > 0))
        return (double)h->min;
    if (p >= 100)
        return (double)h->max;
    /* The rank of the sample sought, 1-based: ceil(p% of n), at least 1. */
    double want = p / 100.0 * (double)h->n;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->count[i];
        if (seen < rank)
            continue;
        double lo = (double)hist_bucket_low(i), hi = (double)hist_bucket_high(i);
        double v = (lo + hi) / 2;
        if (v < (double)h->min)
            v = (double)h->min;
        if (v > (double)h->max)
            v = (double)h->max;
        return v;
    }
    return (double)h->max;
}

double hist_mean(const struct hist *h)
{
    return h->n ? h->sum / (double)h->n : 0;
}
