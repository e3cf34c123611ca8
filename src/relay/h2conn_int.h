/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2conn_int.h: what the HTTP/2 server's two files share and nobody else
 * sees: the connection (struct h2conn) and a stream's state (struct
 * h2stream), the worker's window budget, and the few small calls between
 * them. h2conn.c, the connection, admits each stream (a request's
 * HEADERS: h2stream_new), fills its receive buffer from nghttp2's
 * callbacks, and lets go of it when nghttp2 closes it; h2stream.c owns a
 * stream's state (h2stream_new, h2stream_free) and the calls of its
 * session (h2stream.h): it drains the receive buffer, fills the send
 * buffer (which nghttp2 reads through its data provider there) and asks
 * the connection to move the bytes (h2conn_kick). Only those two include
 * it. Everything runs on the worker's thread.
 */
#ifndef FERRY_RELAY_H2CONN_INT_H
#define FERRY_RELAY_H2CONN_INT_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/h2flow.h"
#include "relay/h2io.h"
#include "relay/h2stream.h"
#include "relay/session.h"
#include "util/list.h"

#define H2_TX_MAX (128u * 1024) /* bytes a stream holds for the client */

struct h2conn;
struct h2http;
struct wslink;

struct h2stream {
    struct list link; /* in hc->streams */
    struct h2conn *hc;
    struct conn *c; /* the stream's session; NULL once it ended */
    int32_t id;
    bool gone;      /* nghttp2 closed the stream */
    bool responded; /* the response HEADERS are submitted */
    bool rx_eof;    /* END_STREAM from the client */
    bool tx_eof;    /* our END_STREAM is due after tx */
    bool deferred;  /* the data provider waits for tx */
    bool reset;     /* the client reset it */
    bool rst_after; /* RST_STREAM(NO_ERROR) once our END_STREAM is out */
    bool win_fixed; /* h2stream_window_fix(): never tuned */
    uint8_t *rx;    /* client -> destination, up to the granted window */
    size_t rx_off, rx_len, rx_cap;
    uint8_t *tx; /* destination -> client, at most H2_TX_MAX */
    size_t tx_off, tx_len;
    uint32_t hdr_bytes; /* the header list's size so far (RFC 9113 6.5.2) */
    uint64_t handed;    /* bytes its session has read from rx */
    uint64_t credited;  /* ... of which the client got credit back for */
    struct h2flow_win win;
    /* Its recent DATA: young or bulk (h2io.h). */
    struct h2io_light light;
    struct h2stream_req req;
    struct h2http *http; /* a plain request's translation (front_h2_http.c) */
};

struct h2conn {
    struct conn *c; /* the carrier */
    nghttp2_session *s;
    struct list streams;
    uint32_t nstreams;
    struct h2flow_budget budget;
    struct h2flow_rtt rtt;
    struct h2io_sched sched; /* young/bulk weight changes due */
    struct h2io_udp udp;     /* CONNECT-UDP on it: a shallower queue */
    struct h2flow_rate r_reset, r_ping, r_settings, r_empty;
    uint64_t ping_us; /* when our PING went out; 0: none outstanding */
    uint64_t ping_ms; /* when the last one did */
    uint32_t hdr_block;
    bool calm;    /* over an abuse budget: GOAWAY(ENHANCE_YOUR_CALM) queued */
    bool goaway;  /* a graceful GOAWAY was sent */
    bool failed;  /* nghttp2 failed: flush what is queued, then close */
    bool dying;   /* the carrier is closing: no nghttp2 calls from streams */
    uint8_t *out; /* frames gathered for the next TLS write */
    uint32_t out_off, out_len;
    struct wslink *ws;  /* the WebSocket transport (wslink.h); NULL: plain h2 */
    struct release rel; /* freed after the batch of events that closed it */
    /* For the tunnel-close line (tunnel_log.h): streams it carried, bytes
     * read from and written to the client, the first authenticated user
     * of its streams ("": none). */
    uint64_t streams_total, rx_bytes, tx_bytes;
    char user[256];
};

/* The worker's budget for granted stream windows (one loop per thread;
 * h2conn.c sets its cap with the worker's first connection, and admits
 * each new stream's window under it). */
extern _Thread_local struct h2flow_budget h2stream_worker_budget;

static inline const struct config_http2 *h2cfg(const struct h2conn *hc)
{
    return &conn_cfg(hc->c)->http2;
}

static inline void h2conn_kick(struct h2conn *hc)
{
    if (!hc->dying)
        loop_defer(&hc->c->w->loop, &hc->c->task);
}

/* Wake a stream's session for readiness bits ev. */
static inline void h2stream_wake(struct h2stream *s, uint8_t ev)
{
    if (!s->c)
        return;
    s->c->cli_ev |= ev;
    loop_defer(&s->c->w->loop, &s->c->task);
}

/* A new stream id on hc (its request's HEADERS began) with a receive
 * window of win bytes, already admitted: charged to hc's budget and the
 * worker's, in hc's list. NULL without memory. */
struct h2stream *h2stream_new(struct h2conn *hc, int32_t id, uint32_t win);
/* Free s, which both nghttp2 and its session have let go of (or whose
 * carrier is dying): its window goes back to the budgets, it leaves its
 * connection's list. */
void h2stream_free(struct h2stream *s);

#endif
