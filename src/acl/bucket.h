/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bucket.h: a token bucket in integer arithmetic. rate tokens a second,
 * at most burst held (rate 0: the burst once, never refilled). Time is
 * passed in, in microseconds, so it is tested without a clock. Not
 * thread-safe: callers serialise.
 */
#ifndef FERRY_ACL_BUCKET_H
#define FERRY_ACL_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct bucket {
    uint64_t tokens_u; /* tokens x 1e6 (micro-tokens) */
    uint64_t last_us;
};

static inline void bucket_init(struct bucket *b, uint64_t burst, uint64_t now_us)
{
    b->tokens_u = burst * 1000000u;
    b->last_us = now_us;
}

static inline void bucket_refill(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_us)
{
    if (now_us > b->last_us) {
        uint64_t dt = now_us - b->last_us;
        uint64_t cap = burst * 1000000u;
        /* rate * dt micro-tokens, without overflowing for long idle times;
         * rate 0 refills nothing */
        uint64_t add = !rate ? 0 : dt > cap / rate ? cap : rate * dt;
        b->tokens_u = b->tokens_u + add > cap ? cap : b->tokens_u + add;
        b->last_us = now_us;
    }
}

/* Take n tokens if there are that many. */
static inline bool bucket_take(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_us,
                               uint64_t n)
{
    bucket_refill(b, rate, burst, now_us);
    if (b->tokens_u < n * 1000000u)
        return false;
    b->tokens_u -= n * 1000000u;
    return true;
}

/* Spend n tokens whatever is there (a debt stops at zero). */
static inline void bucket_spend(struct bucket *b, uint64_t rate, uint64_t burst, uint64_t now_us,
                                uint64_t n)
{
    bucket_refill(b, rate, burst, now_us);
    b->tokens_u = b->tokens_u > n * 1000000u ? b->tokens_u - n * 1000000u : 0;
}

/* Whole tokens available now. */
static inline uint64_t bucket_avail(struct bucket *b, uint64_t rate, uint64_t burst,
                                    uint64_t now_us)
{
    bucket_refill(b, rate, burst, now_us);
    return b->tokens_u / 1000000u;
}

/* Microseconds until n tokens are there (0 if they are, or if rate is 0:
 * then they never come, and callers must not wait). */
static inline uint64_t bucket_wait_us(const struct bucket *b, uint64_t rate, uint64_t n)
{
    uint64_t need = n * 1000000u;
    if (b->tokens_u >= need || !rate)
        return 0;
    return (need - b->tokens_u + rate - 1) / rate;
}

#endif
