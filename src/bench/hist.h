/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hist.h: a bounded latency histogram for `ferry bench`, in the manner of
 * HdrHistogram: log-linear buckets, so every value is kept to within
 * 1/HIST_SUB_HALF of itself (under 0.8 %) in a fixed 43 KiB, however many
 * samples a run takes, and percentiles come from one walk over the
 * buckets, never from a sort of every sample. Pure: no I/O, no allocation
 * (the caller owns the struct; it may live in a calloc'd thread state).
 *
 * Values are unsigned 64-bit in whatever unit the caller chooses (the bench
 * uses nanoseconds). Values below HIST_SUB are kept exactly; larger ones in
 * buckets whose width is 2^(msb - HIST_SUB_BITS + 1); values beyond
 * HIST_MAX_VALUE are counted in the last bucket (max still records them).
 */
#ifndef FERRY_BENCH_HIST_H
#define FERRY_BENCH_HIST_H

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS  8
#define HIST_SUB       (1u << HIST_SUB_BITS) /* exact below this */
#define HIST_SUB_HALF  (HIST_SUB / 2)        /* buckets per power of two above it */
#define HIST_TOP_BIT   47                    /* values up to 2^48 - 1 (78 h in ns) */
#define HIST_MAX_VALUE ((1ull << (HIST_TOP_BIT + 1)) - 1)
#define HIST_BUCKETS   (HIST_SUB + (HIST_TOP_BIT - HIST_SUB_BITS + 1) * HIST_SUB_HALF)

/* Caller storage; all zeroes (or hist_reset()) is an empty histogram. */
struct hist {
    uint64_t n;   /* samples */
    uint64_t min; /* exact; meaningless while n is 0 */
    uint64_t max; /* exact */
    double sum;   /* for the mean */
    uint64_t count[HIST_BUCKETS];
};

/* Empty h. */
void hist_reset(struct hist *h);
/* Count one sample v. */
void hist_add(struct hist *h, uint64_t v);
/* Add every sample of src to dst (src is unchanged). */
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at percentile p (0..100, clamped) of h: the smallest value v
 * such that at least p % of the samples are <= v, to within a bucket's
 * width (a bucket stands for its midpoint, clamped to min..max); p 0 is
 * min, p 100 is max, exactly. 0 when h is empty. */
double hist_percentile(const struct hist *h, double p);
/* The mean of the samples (exact), 0 when h is empty. */
double hist_mean(const struct hist *h);

/* The bucket of v, and the lowest and highest values a bucket stands for
 * (exposed for the unit tests). */
size_t hist_bucket(uint64_t v);
uint64_t hist_bucket_low(size_t i);
uint64_t hist_bucket_high(size_t i);

#endif
