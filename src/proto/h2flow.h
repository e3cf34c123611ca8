/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2flow.h: the arithmetic of HTTP/2 flow control and abuse budgets as
 * ferry's tunnel uses them (../docs/architecture.md, "HTTP/2 inbound"):
 * the smoothed round-trip time (RFC 9002 section 5.3), the auto-tuning of
 * a stream's receive window (quic-go's rule: double it when more than half
 * of it was consumed in an epoch shorter than 4 * consumed/window * sRTT),
 * the admission of window growth under a connection budget and a worker
 * budget, and per-second event budgets (Rapid Reset, PING and SETTINGS
 * floods). Pure: no syscalls, no allocation, no logging; time is given.
 */
#ifndef FERRY_PROTO_H2FLOW_H
#define FERRY_PROTO_H2FLOW_H

#include <stdbool.h>
#include <stdint.h>

#define H2FLOW_WIN_MIN      (16u * 1024)        /* every admitted stream keeps this */
#define H2FLOW_WIN_INITIAL  (256u * 1024)       /* a stream's first window */
#define H2FLOW_WIN_MAX      (16u * 1024 * 1024) /* auto-tuning stops here */
#define H2FLOW_CONN_INITIAL (4u * 1024 * 1024)  /* a connection's first budget */
#define H2FLOW_CONN_MAX     (64u * 1024 * 1024) /* ... grown to at most */

/* A smoothed round-trip time in microseconds (0: no sample yet). */
struct h2flow_rtt {
    uint64_t srtt_us;
    uint64_t rttvar_us;
};

/* Take one RTT sample (RFC 9002 5.3: the first sets srtt and rttvar =
 * sample/2; later ones srtt = 7/8 srtt + 1/8 sample, rttvar = 3/4 rttvar +
 * 1/4 |srtt - sample|). A zero sample is ignored. */
void h2flow_rtt_sample(struct h2flow_rtt *r, uint64_t sample_us);
/* The RTT the tuning uses: the larger of the smoothed PING RTT and the
 * kernel's (TCP_INFO tcpi_rtt), in microseconds. */
uint64_t h2flow_rtt_use(const struct h2flow_rtt *r, uint64_t tcp_rtt_us);

/* One stream's receive window and its tuning epoch. */
struct h2flow_win {
    uint32_t window;   /* the window granted (what the peer may have in flight) */
    uint32_t consumed; /* bytes consumed in this epoch (credit to return) */
    uint64_t epoch_us; /* when the epoch began */
    bool begun;        /* the first DATA arrived (h2flow_begin) */
};

/* The stream's first DATA arrived at now_us: its first epoch begins
 * there, not when the stream opened, so the CONNECT's answer, the origin's
 * set-up and a request's round trip (two or three RTTs on a wide-area
 * path) do not count as time the window took to drain, and the first
 * window can double at its first epoch's end. Only the first call counts. */
void h2flow_begin(struct h2flow_win *win, uint64_t now_us);

/* The window a stream's epoch asks for: twice win->window when more than
 * half of it was consumed and the epoch (now_us - epoch_us) lasted less
 * than 4 * consumed / window * rtt_us, capped at max; else the same. With
 * no RTT known (0) the window does not grow. */
uint32_t h2flow_tune(const struct h2flow_win *win, uint64_t now_us, uint64_t rtt_us, uint32_t max);

/* Memory admitted to windows: granted of cap bytes, cap growing to max. */
struct h2flow_budget {
    uint64_t granted;
    uint64_t cap;
    uint64_t max;
};

/* Growth of a window from cur to want bytes, under a connection budget
 * and the worker's: the part both can take (want capped so the sum stays
 * within each), never below cur. A connection budget that is spent grows
 * (doubles, up to its max) when the worker's has room for it. Returns the
 * new window; the caller charges the difference with h2flow_charge(). */
uint32_t h2flow_admit(struct h2flow_budget *conn, const struct h2flow_budget *worker, uint32_t cur,
                      uint32_t want);
/* Whether a new stream may be admitted with H2FLOW_WIN_MIN bytes: the
 * connection's and the worker's budgets still hold them. */
bool h2flow_admit_stream(const struct h2flow_budget *conn, const struct h2flow_budget *worker);
/* Charge (delta > 0) or give back (delta < 0) bytes of a budget; never
 * below zero. */
void h2flow_charge(struct h2flow_budget *b, int64_t delta);

/* A per-second event budget: at most limit events in any one-second
 * window (a fixed window restarted at the first event after it ends). */
struct h2flow_rate {
    uint64_t start_ms;
    uint32_t count;
};

/* Count one event at now_ms. True when it goes over limit (0: no limit). */
bool h2flow_rate_hit(struct h2flow_rate *r, uint64_t now_ms, uint32_t limit);

#endif
