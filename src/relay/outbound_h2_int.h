/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2_int.h: what the HTTP/2 outbound's files share and nobody
 * else sees: the stream (struct ho_stream), the connection, slot and
 * worker's set it lives in, and the calls between the files: the
 * connections (outbound_h2.c), the streams on them (outbound_h2_stream.c),
 * outbound.h's row for sessions (outbound_h2_row.c) and the streams that
 * are not a session (outbound_h2_user.c). Only those four include it.
 * Everything runs on the worker's thread.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2_INT_H
#define FERRY_RELAY_OUTBOUND_H2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "config/config.h"
#include "core/loop.h"
#include "proto/h2flow.h"
#include "relay/h2io.h"
#include "util/addr.h"
#include "util/list.h"
#include "worker/worker.h"

#define HO_TX_MAX (128u * 1024) /* bytes a stream holds for the parent */

struct conn;
struct dns_req;
struct ho_conn;
struct ho_slot;
struct task;
struct tls;
struct wslink;

/* A stream on an HTTP/2 outbound's connection: a session's (c->ob_priv
 * from dial to close), or one no session holds (an owner's, woken by
 * wake). Owned by outbound_h2_stream.c, which frees it once its user let
 * go and nghttp2 closed it (or its connection, outbound_h2.c, died). */
struct ho_stream {
    struct list link;   /* in its connection's streams, or its slot's waiters */
    struct ho_slot *sl; /* the slot it waits in or came through */
    struct ho_conn *hc; /* NULL: waiting, or its connection is gone */
    struct conn *c;     /* NULL once its session let go */
    bool cli;           /* c reads it as its client side (a reverse session) */
    /* A stream no session holds (outbound_h2.h, h2out_user.h): an extended
     * CONNECT (RFC 8441) whose news defers wake; rv, a reverse owner, also
     * sees the response's fields. */
    struct task *wake;
    void *rv;
    const char *xproto; /* :protocol (NULL: a plain CONNECT), and ... */
    char *xpath;        /* ... :path (owned) */
    int32_t id;         /* 0: not submitted */
    int status;         /* the response's :status; 0 while none */
    bool waiting;       /* in sl->waiters */
    bool gone;          /* nghttp2 closed it (or its connection died) */
    bool reset;         /* ended without a clean END_STREAM both ways */
    bool retry;         /* refused by a GOAWAY before it was processed: dial again */
    bool http1;         /* the parent speaks http/1.1 (auto): go the HTTP/1 way */
    /* fast_open (outbound_h2_row.c): the session is to be answered once its
     * CONNECT went out (fast), and was (answered): the parent's refusal
     * then ends it instead of failing its dial (said: logged once). */
    bool fast, answered, said;
    uint8_t fail_o;       /* enum outcome of the attempt that failed it now ... */
    const char *fail_why; /* ... and why; NULL: none */
    bool rx_eof, tx_eof, deferred;
    uint8_t *rx; /* parent -> client, up to the granted window */
    size_t rx_off, rx_len, rx_cap;
    uint8_t *tx; /* client -> parent */
    size_t tx_off, tx_len;
    uint64_t handed, credited; /* bytes read by the session / credited back */
    struct h2flow_win win;
    /* Its recent DATA: young or bulk (h2io.h). */
    struct h2io_light light;
    struct addr ip; /* the destination as dialled, for a second dial */
    uint16_t port;
    bool has_name;
};

enum ho_state { HO_RESOLVE, HO_CONNECT, HO_TLS, HO_WS, HO_UP, HO_DEAD };

/* One TLS connection to the parent. */
struct ho_conn {
    struct list link; /* in the set's conns */
    struct ho_slot *sl;
    struct worker *w;
    uint8_t st; /* enum ho_state */
    uint8_t ev, rd_bit, wr_bit;
    bool goaway; /* the parent said GOAWAY: no new streams here */
    bool failed; /* nghttp2 failed */
    struct io io;
    struct timer timer;
    struct task task;
    struct release rel;
    struct dns_req *dns;
    struct tls *tls;
    nghttp2_session *s;
    struct list streams;
    uint32_t nstreams;
    uint8_t *out;
    uint32_t out_off, out_len;
    struct h2flow_budget budget;
    struct h2flow_rtt rtt;
    uint64_t ping_us;  /* an RTT probe outstanding since; 0: none */
    uint64_t probe_ms; /* loop ms of the last RTT probe (H2IO_PROBE_MS apart) */
    uint64_t last_rx;  /* loop ms of the last frame from the parent */
    uint32_t missed;   /* keepalive PINGs unanswered */
    uint64_t up_since; /* loop ms it came up */
    const char *why;   /* a failed attempt: why, for the sessions it fails */
    uint8_t fail_o;    /* ... their outcome */
    bool fail_all;     /* ... every waiter fails now (the parent is up but not
                        * usable: TLS, ALPN), else only pool members (the
                        * others wait up to tunnel_wait) */
    uint64_t t_start;  /* loop ms the attempt began */
    uint32_t deadline; /* connect budget, ms */
    bool reconnect;    /* an attempt after a loss */

    struct h2io_sched sched; /* young/bulk weight changes due (h2io.h) */
    struct h2io_udp udp;     /* datagrams on it: a shallower queue (h2io.h) */
    struct wslink *ws;       /* websocket = /PATH: the transport (wslink.h); NULL: TLS only */
    /* The tunnel's name in the logs (tunnel_log.h, c->tun_id), given when
     * it comes up, and what its close line counts. */
    uint64_t id;
    struct addr peer, local;
    uint64_t streams_total, rx_bytes, tx_bytes;
};

/* An outbound of a configuration on this worker: its current connection,
 * the sessions waiting for one, and the back-off. */
struct ho_slot {
    struct list link; /* in the set's slots */
    struct worker *w;
    struct wcfg *wc; /* held */
    uint16_t ob;
    struct ho_conn *cur;
    struct list waiters;
    struct timer timer; /* the next attempt after a back-off */
    uint32_t k;         /* failures in a row */
    uint64_t retry_at;  /* no attempt before (loop ms) */
    bool lost;          /* a connection was lost: the next one is a reconnect */
    uint32_t refs;      /* its connections and streams: freed at 0 when its
                         * configuration is no longer the current one */
    bool http1;         /* auto: the parent picked http/1.1 */
    bool prewarm;       /* open a connection with nobody waiting (after a GOAWAY) */
};

struct h2out_set {
    struct list slots, conns;
    struct h2flow_budget budget; /* the worker's, for granted stream windows */
    bool ending;                 /* the worker's end: free at once */
    struct h2rev_out_set *rev;   /* outbound_h2rev.c's reverse remotes, or NULL */
};

/* The outbound slot sl's configuration. */
static inline const struct config_outbound *sl_ob(const struct ho_slot *sl)
{
    return &sl->wc->cfg->outbounds[sl->ob];
}

/* hc writes (and reads) again from its task: it has something to send. */
static inline void ho_kick(struct ho_conn *hc)
{
    loop_defer(&hc->w->loop, &hc->task);
}

/* ---- outbound_h2.c: the connections and their slots ---------------------- */

/* Add d (negative: take) to the slot's outbound's counter col (OB_STAT_*)
 * for its worker; a no-op without counters. */
void outbound_h2_stat(const struct ho_slot *sl, unsigned col, int64_t d);
/* s waits in sl's waiters for the slot's connection, which opens now or
 * when the back-off ends (the slot's timer). */
void outbound_h2_slot_wait(struct ho_slot *sl, struct ho_stream *s);
/* A connection or stream of sl let go of it: sl is freed at the last one
 * when its configuration is no longer the worker's current one. */
void outbound_h2_slot_unref(struct ho_slot *sl);
/* Does slot sl's parent speak only http/1.1 (mux = auto picked it)? */
bool outbound_h2_slot_http1(const struct ho_slot *sl);

/* ---- outbound_h2_stream.c: the streams --------------------------------- */

/* News for s's user: its session's readiness bits ev (c->up_ev, or
 * c->cli_ev for a session's client side) and a look from its task; a
 * stream no session holds defers its owner's task. Safe from nghttp2's
 * callbacks: it only defers. */
void outbound_h2_stream_wake(struct ho_stream *s, uint8_t ev);
/* Free s's memory and its hold on its slot; s is on no list any more. */
void outbound_h2_stream_destroy(struct ho_stream *s);
/* Submit s's CONNECT on hc (up) with a window admitted under the budgets:
 * s joins hc's streams. When nghttp2 takes no more streams, hc takes no
 * new ones and s is woken to be dialled again (s->retry). */
void outbound_h2_stream_submit(struct ho_conn *hc, struct ho_stream *s);
/* nghttp2's callbacks for the streams of a connection (user: its struct
 * ho_conn), which outbound_h2.c's session registers: a response's fields
 * (its :status; a reverse owner sees them all), DATA into the stream's
 * buffer (connection credit on receipt), the stream's end (freed when
 * nobody holds it), and a CONNECT's HEADERS gone out (the stream is young
 * and gets its own window). */
int outbound_h2_on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                          size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                          void *user);
int outbound_h2_on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                              size_t len, void *user);
int outbound_h2_on_stream_close(nghttp2_session *ss, int32_t id, uint32_t err, void *user);
int outbound_h2_on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *user);

/* ---- what outbound_h2_user.c asks of a stream's connection ---------------- */

/* n bytes s (a datagram stream) received were consumed: stream credit back
 * to the parent, its window kept at s->win.window. */
void outbound_h2_stream_consumed(struct ho_stream *s, size_t n);
/* s (on a connection, submitted) has new bytes or its end to send: nghttp2
 * asks for them again and the connection writes. */
void outbound_h2_stream_more(struct ho_stream *s);
/* A datagram went into s: its connection keeps a shallow socket queue
 * (h2io.h, H2IO_UDP_LOWAT). A no-op while s waits. */
void outbound_h2_stream_datagram(struct ho_stream *s);

#endif
