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
    static const char *const names[SP_COUNT] = {"none", "socks5", "socks4", "http"};
    return (unsigned)p < SP_COUNT ? names[p] : "none";
}

const char *stats_outcome_name(enum stats_outcome o)
{
    static const char *const names[OC_COUNT] = {
        "abandoned", "ok",      "denied",      "auth_failed", "limited",     "unreachable",
        "refused",   "timeout", "unsupported", "error",       "bad_request",
    };
    return (unsigned)o < OC_COUNT ? names[o] : "error";
}

enum stats_outcome stats_outcome_of_rep(uint8_t rep)
{
    switch (rep) {
    case 0x00:
        return OC_OK;
    case 0x02:
        return OC_DENIED;
    case 0x03:
    case 0x04:
        return OC_UNREACHABLE;
    case 0x05:
        return OC_REFUSED;
    case 0x06:
        return OC_TIMEOUT;
    case 0x07:
    case 0x08:
        return OC_UNSUPPORTED;
    default:
        return OC_ERROR;
    }
}
