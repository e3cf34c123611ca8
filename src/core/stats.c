/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats.c: names of the counters' labels and the handshake histogram.
 */
#include "core/stats.h"

/* 100 us to 10 s: loopback setups land in the first buckets, a remote
 * destination or an Argon2id verification in the middle ones. */
const uint32_t stats_hs_bounds_us[STATS_HS_BUCKETS - 1] = {
    100,   250,    500,    1000,   2500,    5000,    10000,    25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 10000000,
};

void stats_hs_observe(struct worker_stats *st, enum stats_proto p, uint64_t us)
{
    unsigned i = 0;
    while (i < STATS_HS_BUCKETS - 1 && us > stats_hs_bounds_us[i])
        i++;
    stat_add(&st->hs_buckets[p][i], 1);
    stat_add(&st->hs_sum_us[p], us);
}

const char *stats_proto_name(enum stats_proto p)
{
    static const char *const names[SP_COUNT] = {"none", "socks5", "socks4", "http", "forward"};
    return (unsigned)p < SP_COUNT ? names[p] : "none";
}

const char *stats_outcome_name(enum stats_outcome o)
{
    static const char *const names[OC_COUNT] = {
        "abandoned", "ok",      "denied",      "auth_failed", "limited",     "unreachable",
        "refused",   "timeout", "unsupported", "error",       "bad_request", "quota",
    };
    return (unsigned)o < OC_COUNT ? names[o] : "error";
}
