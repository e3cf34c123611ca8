/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2flow.c: the numbers behind the HTTP/2 inbound's flow control and abuse
 * budgets (h2flow.h). Pure arithmetic: the connection (relay/h2conn.c)
 * measures time and RTT and applies the results; nothing here touches a
 * socket, allocates or logs.
 */
#include "proto/h2flow.h"

void h2flow_rtt_sample(struct h2flow_rtt *r, uint64_t sample_us)
{
    if (sample_us == 0)
        return;
    if (r->srtt_us == 0) {
        r->srtt_us = sample_us;
        r->rttvar_us = sample_us / 2;
        return;
    }
    uint64_t diff = r->srtt_us > sample_us ? r->srtt_us - sample_us : sample_us - r->srtt_us;
    r->rttvar_us = (3 * r->rttvar_us + diff) / 4;
    r->srtt_us = (7 * r->srtt_us + sample_us) / 8;
}

uint64_t h2flow_rtt_use(const struct h2flow_rtt *r, uint64_t tcp_rtt_us)
{
    return r->srtt_us > tcp_rtt_us ? r->srtt_us : tcp_rtt_us;
}

void h2flow_begin(struct h2flow_win *win, uint64_t now_us)
{
    if (win->begun)
        return;
    win->begun = true;
    win->epoch_us = now_us;
}

uint32_t h2flow_tune(const struct h2flow_win *win, uint64_t now_us, uint64_t rtt_us, uint32_t max)
{
    uint32_t w = win->window;
    if (w == 0 || rtt_us == 0 || w >= max || (uint64_t)win->consumed * 2 <= w)
        return w;
    uint64_t elapsed = now_us > win->epoch_us ? now_us - win->epoch_us : 0;
    /* elapsed < 4 * consumed / window * rtt, in integers: bounded so the
     * products fit 64 bits (an epoch of 18 minutes or an RTT of a minute
     * never grows a window anyway). */
    if (elapsed >= (1ull << 30) || rtt_us >= (1ull << 26))
        return w;
    if (elapsed * w >= 4ull * win->consumed * rtt_us)
        return w;
    uint64_t grown = (uint64_t)w * 2;
    return grown > max ? max : (uint32_t)grown;
}

static uint64_t budget_room(const struct h2flow_budget *b)
{
    return b->granted < b->cap ? b->cap - b->granted : 0;
}

uint32_t h2flow_admit(struct h2flow_budget *conn, const struct h2flow_budget *worker, uint32_t cur,
                      uint32_t want)
{
    if (want <= cur)
        return cur;
    uint64_t need = want - cur;
    if (budget_room(conn) < need && conn->cap < conn->max) {
        uint64_t grown = conn->cap * 2;
        if (grown > conn->max)
            grown = conn->max;
        if (budget_room(worker) >= grown - conn->cap)
            conn->cap = grown;
    }
    uint64_t room = budget_room(conn);
    uint64_t wroom = budget_room(worker);
    if (wroom < room)
        room = wroom;
    if (need > room)
        need = room;
    return cur + (uint32_t)need;
}

bool h2flow_admit_stream(const struct h2flow_budget *conn, const struct h2flow_budget *worker)
{
    return budget_room(conn) >= H2FLOW_WIN_MIN && budget_room(worker) >= H2FLOW_WIN_MIN;
}

void h2flow_charge(struct h2flow_budget *b, int64_t delta)
{
    if (delta >= 0)
        b->granted += (uint64_t)delta;
    else
        b->granted = (uint64_t)-delta > b->granted ? 0 : b->granted - (uint64_t)-delta;
}

bool h2flow_rate_hit(struct h2flow_rate *r, uint64_t now_ms, uint32_t limit)
{
    if (now_ms - r->start_ms >= 1000 || now_ms < r->start_ms) {
        r->start_ms = now_ms;
        r->count = 0;
    }
    r->count++;
    return limit && r->count > limit;
}
