/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ring.c: the per-second history of ring.h.
 */
#include "admin/ring.h"

#include <string.h>

void ring_init(struct ring *r)
{
    memset(r, 0, sizeof(*r));
}

static double rate(uint64_t now, uint64_t before, double secs)
{
    return now > before ? (double)(now - before) / secs : 0.0;
}

void ring_feed(struct ring *r, const struct ring_totals *tot, int64_t now_ms, int64_t t)
{
    if (r->have_last && now_ms - r->last_ms < 100)
        return;
    if (r->have_last) {
        double secs = (double)(now_ms - r->last_ms) / 1000.0;
        const struct ring_totals *a = &r->last;
        struct ring_sample *s = &r->s[r->head];
        s->t = t;
        s->setups = rate(tot->accepted, a->accepted, secs);
        s->up = rate(tot->bytes_up, a->bytes_up, secs);
        s->down = rate(tot->bytes_down, a->bytes_down, secs);
        s->auth_ok = rate(tot->auth_ok, a->auth_ok, secs);
        s->auth_failed = rate(tot->auth_failed, a->auth_failed, secs);
        s->edge_routed = rate(tot->edge_routed, a->edge_routed, secs);
        s->sessions = tot->sessions;
        s->udp_assocs = tot->udp_assocs;
        s->tunnels = tot->tunnels;
        r->head = (r->head + 1) % RING_LEN;
        if (r->n < RING_LEN)
            r->n++;
    }
    r->last = *tot;
    r->last_ms = now_ms;
    r->have_last = true;
}

const struct ring_sample *ring_at(const struct ring *r, size_t i)
{
    return &r->s[(r->head + RING_LEN - r->n + i) % RING_LEN];
}
