/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ring.h: the status page's history: one sample per second for the last
 * RING_LEN seconds (15 minutes), in fixed memory. A sample is made from
 * the process's cumulative counters: ring_feed() takes their totals at a
 * moment and stores the rates since the previous feed (a counter that went
 * back, as rule or edge counters do at a reload, counts as 0) beside the
 * gauges. Pure: no clock, no locks, no I/O; one thread feeds and reads.
 */
#ifndef FERRY_ADMIN_RING_H
#define FERRY_ADMIN_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RING_LEN 900

/* Totals at one moment: counters (only ever grow) and gauges. */
struct ring_totals {
    uint64_t accepted, bytes_up, bytes_down, auth_ok, auth_failed, edge_routed; /* counters */
    uint64_t sessions, udp_assocs, tunnels;                                     /* gauges */
};

/* One second: rates per second over the interval, and the gauges. */
struct ring_sample {
    int64_t t; /* wall clock, seconds */
    double setups, up, down, auth_ok, auth_failed, edge_routed;
    uint64_t sessions, udp_assocs, tunnels;
};

struct ring {
    struct ring_sample s[RING_LEN];
    size_t head, n; /* next slot to write; samples held */
    struct ring_totals last;
    int64_t last_ms;
    bool have_last;
};

void ring_init(struct ring *r);
/* Totals tot at now_ms (a monotonic clock) and wall time t: append a
 * sample (from the second feed on; a feed less than 100 ms after the last
 * is ignored). */
void ring_feed(struct ring *r, const struct ring_totals *tot, int64_t now_ms, int64_t t);
/* The i-th sample held, oldest first (i < r->n). */
const struct ring_sample *ring_at(const struct ring *r, size_t i);

#endif
