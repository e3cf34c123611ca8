/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2.c: the HTTP/2 outbound's connections to its parent: on
 * worker W, per outbound, one slot holding W's one TLS 1.3 connection to
 * the parent (no locks on the data path), the streams waiting for it and
 * the back-off. It takes each connection from DNS through TCP, TLS, the
 * WebSocket handshake (websocket = /PATH) and SETTINGS to its close, and
 * drives its nghttp2 client session with memory I/O from W's loop; the
 * streams on it are outbound_h2_stream.c's, and outbound.h's row that
 * sessions dial through is outbound_h2_row.c.
 *
 * A connection opens on first use and again when it dies, with
 * exponential back-off and full jitter (200 ms * 2^k, at most 30 s, k
 * forgotten after 60 s up); an attempt that fails fails the slot's
 * waiters as it says (ho_fail_as). mux = auto offers "h2,http/1.1" and,
 * when the parent picks http/1.1, marks the slot so that its sessions go
 * the per-session HTTP/1.1 CONNECT (outbound_https) from then on.
 * Connection credit is given on receipt (NO_AUTO_WINDOW_UPDATE; the flow
 * control is the server side's: h2conn.c, docs/architecture.md).
 * Keepalive PING after 20 s idle, 3 missed = dead (and TCP_USER_TIMEOUT).
 * A GOAWAY from the parent sends new sessions to a new connection while
 * the old one's streams finish (make-before-break). A connection is freed
 * late (loop_release), never inside its own callbacks.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/h2flow.h"
#include "proto/ws.h"
#include "relay/h2io.h"
#include "relay/outbound.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2_int.h"
#include "relay/outbound_h2rev.h"
#include "relay/session.h"
#include "relay/tunnel_log.h"
#include "relay/wslink.h"
#include "tls/tls.h"

#define HO_OUT_CAP     (64u * 1024) /* frames gathered before one TLS write */
#define HO_PING_IDLE   20000        /* keepalive PING after this long idle, ms */
#define HO_PING_MISSED 3            /* unanswered keepalives: the parent is gone */
#define HO_BACKOFF_MS  200
#define HO_BACKOFF_CAP 30000
#define HO_HEALTHY_MS  60000 /* up this long: the back-off starts again */

void outbound_h2_stat(const struct ho_slot *sl, unsigned col, int64_t d)
{
    const struct config *cfg = sl->wc->cfg;
    if (!cfg->ob_stats || sl->w->id >= cfg->workers)
        return;
    stat_t *s =
        &cfg->ob_stats[(size_t)sl->w->id * cfg->ob_stride + (size_t)sl->ob * OB_STATS + col];
    if (d >= 0)
        stat_add(s, (uint64_t)d);
    else
        stat_sub(s, (uint64_t)-d);
}

/* ---- nghttp2's session: the connection's own frames ------------------- */

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    struct ho_conn *hc = user;
    struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    hc->last_rx = loop_now(&hc->w->loop);
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        if (s && end)
            s->rx_eof = true;
        if (s)
            outbound_h2_stream_wake(s, SIDE_RD);
        break;
    case NGHTTP2_PING:
        if (f->hd.flags & NGHTTP2_FLAG_ACK) {
            hc->missed = 0;
            if (hc->ping_us) {
                uint64_t now = clock_us();
                h2flow_rtt_sample(&hc->rtt, now > hc->ping_us ? now - hc->ping_us : 1);
                hc->ping_us = 0;
            }
        }
        break;
    case NGHTTP2_GOAWAY:
        /* New sessions go to a new connection (make-before-break). */
        hc->goaway = true;
        if (hc->sl && hc->sl->cur == hc && hc->sl->wc != hc->w->cur)
            hc->sl->cur = NULL; /* an old generation's: nothing to replace */
        if (hc->sl && hc->sl->cur == hc && hc->sl->wc == hc->w->cur) {
            hc->sl->cur = NULL;
            hc->sl->prewarm = true; /* the replacement opens now, from the slot's timer */
            loop_timer_arm(&hc->w->loop, &hc->sl->timer, 0);
        }
        break;
    default:
        break;
    }
    return 0;
}

static nghttp2_session *ho_session(struct ho_conn *hc)
{
    static const struct h2io_callbacks cb = {
        .header = outbound_h2_on_header,
        .frame_recv = on_frame_recv,
        .data_chunk = outbound_h2_on_data_chunk,
        .stream_close = outbound_h2_on_stream_close,
        .frame_send = outbound_h2_on_frame_send,
    };
    return h2io_session_new(false, &cb, hc, 0);
}

/* ---- the connection ----------------------------------------------------- */

/* hc's tunnel-open line (end NULL) or its tunnel-close line. */
static void ho_tunnel_log(const struct ho_conn *hc, const char *end)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    uint64_t now = loop_now(&hc->w->loop);
    tunnel_log(hc->sl->wc->cfg, &(struct tunnel_log){.side = "client",
                                                     .id = hc->id,
                                                     .peer = &hc->peer,
                                                     .local = hc->local.family ? &hc->local : NULL,
                                                     .user = o->user,
                                                     .via = o->name,
                                                     .transport = hc->ws ? "ws" : "h2",
                                                     .end = end,
                                                     .ms = now - hc->up_since,
                                                     .streams = hc->streams_total,
                                                     .up = hc->tx_bytes,
                                                     .down = hc->rx_bytes});
}

static void ho_conn_free(struct release *r)
{
    struct ho_conn *hc = container_of(r, struct ho_conn, rel);
    struct ho_slot *sl = hc->sl;
    free(hc);
    outbound_h2_slot_unref(sl);
}

static void slot_attempt(struct ho_slot *sl);

/* The attempt hc fails its waiters with outcome o and why: all of them
 * (all), or those dialled as a pool member (the pool tries the next). */
static void ho_fail_as(struct ho_conn *hc, enum outcome o, const char *why, bool all)
{
    hc->fail_o = (uint8_t)o;
    hc->why = why;
    hc->fail_all = all;
}

static void slot_fail_waiters(struct ho_slot *sl, const struct ho_conn *hc)
{
    struct list *pos, *next;
    for (pos = sl->waiters.next; pos != &sl->waiters; pos = next) {
        next = pos->next;
        struct ho_stream *s = container_of(pos, struct ho_stream, link);
        if (!hc->fail_all && (!s->c || s->c->ob_rule == s->c->ob))
            continue;
        list_del(&s->link);
        s->waiting = false;
        s->fail_o = hc->fail_o;
        s->fail_why = hc->why;
        outbound_h2_stream_wake(s, SIDE_RD);
    }
}

/* The slot's waiters: each session looks again (a connection came up,
 * the parent turned out to speak http/1.1, or none will come soon). */
static void slot_serve(struct ho_slot *sl)
{
    struct ho_conn *hc = sl->cur;
    while (!list_empty(&sl->waiters)) {
        struct ho_stream *s = container_of(sl->waiters.next, struct ho_stream, link);
        list_del(&s->link);
        s->waiting = false;
        if (hc && hc->st == HO_UP) {
            outbound_h2_stream_submit(hc, s);
        } else {
            s->http1 = sl->http1;
            outbound_h2_stream_wake(s, SIDE_RD);
        }
    }
}

static void ho_up(struct ho_conn *hc);
static void ho_ws_begin(struct ho_conn *hc);
static ssize_t ho_write(void *ctx, const uint8_t *p, size_t n);

/* Close hc: its streams fail (reset), the slot's back-off starts when it
 * was the slot's current one and failed. */
static void ho_conn_close(struct ho_conn *hc, const char *why, bool failure)
{
    struct ho_slot *sl = hc->sl;
    struct loop *l = &hc->w->loop;
    if (hc->st == HO_DEAD)
        return;
    if (hc->st == HO_UP)
        outbound_h2_stat(sl, OB_STAT_H2_CONNS, -1);
    if (hc->st == HO_UP && hc->ws) { /* a CLOSE, as far as the socket takes it */
        wslink_close(hc->ws, WS_CLOSE_GOING_AWAY);
        wslink_send(hc->ws, NULL, 0, ho_write, hc);
    }
    if (log_enabled(failure ? LOG_WARN : LOG_DEBUG))
        log_write(failure ? LOG_WARN : LOG_DEBUG,
                  "outbound %s: parent %s port %u: %s (HTTP/2 connection)", sl_ob(sl)->name,
                  sl_ob(sl)->host, sl_ob(sl)->port, why);
    if (hc->st == HO_UP) /* a word, as the server's end says it; the line above has the why */
        ho_tunnel_log(hc, failure ? "error" : hc->goaway ? "goaway" : "closed");
    hc->st = HO_DEAD;
    resolver_cancel(hc->dns);
    hc->dns = NULL;
    while (!list_empty(&hc->streams)) {
        struct ho_stream *s = container_of(hc->streams.next, struct ho_stream, link);
        list_del(&s->link);
        s->hc = NULL;
        s->reset = s->reset || !s->gone; /* a stream that had ended stays clean */
        s->gone = true;
        if (!s->c && !s->wake) {
            outbound_h2_stream_destroy(s);
            continue;
        }
        outbound_h2_stream_wake(s, SIDE_RD | SIDE_WR);
    }
    if (hc->s)
        nghttp2_session_del(hc->s);
    hc->s = NULL;
    tls_free(hc->tls);
    hc->tls = NULL;
    wslink_free(hc->ws);
    hc->ws = NULL;
    if (hc->io.fd >= 0) {
        if (failure)
            sock_abort(hc->io.fd);
        loop_io_del(l, &hc->io);
        close(hc->io.fd);
        hc->io.fd = -1;
    }
    loop_timer_stop(l, &hc->timer);
    loop_task_cancel(&hc->task);
    free(hc->out);
    hc->out = NULL;
    list_del(&hc->link);
    if (hc->w->h2out->ending) {
        if (sl->cur == hc)
            sl->cur = NULL;
        free(hc);
        sl->refs--;
        return;
    }
    if (sl->cur == hc) {
        sl->cur = NULL;
        uint64_t now = loop_now(l);
        if (hc->up_since && now - hc->up_since >= HO_HEALTHY_MS)
            sl->k = 0;
        if (failure) {
            /* Full jitter: anywhere in [0, 200 ms * 2^k], at most 30 s. */
            uint64_t cap = HO_BACKOFF_MS << (sl->k < 8 ? sl->k : 8);
            if (cap > HO_BACKOFF_CAP)
                cap = HO_BACKOFF_CAP;
            sl->retry_at = now + (uint64_t)random() % (cap + 1);
            sl->k++;
            sl->lost = sl->lost || hc->up_since;
        }
        if (hc->why)
            slot_fail_waiters(sl, hc);
        if (!list_empty(&sl->waiters))
            loop_timer_arm_at(l, &sl->timer, sl->retry_at > now ? sl->retry_at : now);
    }
    loop_release(l, &hc->rel, ho_conn_free);
}

/* TLS done: h2 (start the session) or http/1.1 (auto: fall back); with
 * websocket = /PATH, the WebSocket handshake first. */
static void ho_tls_done(struct ho_conn *hc)
{
    struct ho_slot *sl = hc->sl;
    const struct config_outbound *o = sl_ob(sl);
    if (o->ws_path[0]) {
        ho_ws_begin(hc);
        return;
    }
    char alpn[32];
    tls_alpn(hc->tls, alpn, sizeof(alpn));
    if (strcmp(alpn, "h2") != 0) {
        if (o->mux == OUTBOUND_MUX_AUTO) {
            sl->http1 = true; /* from now on: HTTP/1.1 CONNECT per session */
            sl->k = 0;
            log_info("outbound %s: the parent speaks %s: HTTP/1.1 CONNECT per session", o->name,
                     alpn[0] ? alpn : "no ALPN");
            ho_conn_close(hc, "the parent chose http/1.1", false);
            slot_serve(sl);
            return;
        }
        ho_fail_as(hc, OUT_FAILED, "parent-no-h2", true);
        ho_conn_close(hc, "the parent does not speak h2 (ALPN) but mux = h2", true);
        slot_serve(sl);
        return;
    }
    ho_up(hc);
}

/* The transport is ready: the HTTP/2 session starts. */
static void ho_up(struct ho_conn *hc)
{
    struct ho_slot *sl = hc->sl;
    const struct config_outbound *o = sl_ob(sl);
    const struct config_http2 *h2 = &sl->wc->cfg->http2;
    tls_keep_buffers(hc->tls); /* busy and long-lived: no allocation per record */
    hc->out = malloc(HO_OUT_CAP);
    hc->s = hc->out ? ho_session(hc) : NULL;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, h2->window},
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h2->max_streams},
    };
    if (!hc->s || nghttp2_submit_settings(hc->s, NGHTTP2_FLAG_NONE, iv, 3) ||
        nghttp2_session_set_local_window_size(hc->s, NGHTTP2_FLAG_NONE, 0,
                                              (int32_t)h2->conn_budget_max)) {
        ho_conn_close(hc, "out of memory", true);
        slot_serve(sl);
        return;
    }
    hc->budget.cap = h2->conn_budget;
    hc->budget.max = h2->conn_budget_max;
    struct h2out_set *set = hc->w->h2out;
    if (!set->budget.cap)
        set->budget.cap = set->budget.max = h2->worker_budget;
    hc->st = HO_UP;
    uint64_t now = loop_now(&hc->w->loop);
    hc->up_since = hc->last_rx = now;
    if (hc->ws && wslink_start(hc->ws, hc->s) != WSLINK_OK)
        hc->failed = true; /* frames that came with the 101 */
    outbound_h2_stat(sl, OB_STAT_H2_CONNS, 1);
    outbound_h2_stat(sl, OB_STAT_H2_OPENED, 1);
    hc->id = atomic_fetch_add_explicit(&hc->w->sh->next_id, 1, memory_order_relaxed) + 1;
    if (sock_local_addr(hc->io.fd, &hc->local) < 0)
        hc->local.family = 0;
    ho_tunnel_log(hc, NULL);
    if (hc->reconnect)
        outbound_h2_stat(sl, OB_STAT_H2_RECONNECTS, 1);
    outbound_mark_up(sl->wc->cfg, sl->ob, -1, (clock_ms() - hc->t_start) * 1000, "HTTP/2 connect");
    log_debug("outbound %s: HTTP/2 connection up", o->name);
    hc->ping_us = clock_us();
    nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    loop_timer_arm(&hc->w->loop, &hc->timer, HO_PING_IDLE);
    slot_serve(sl);
}

static int ho_handshake(struct ho_conn *hc)
{
    uint8_t want = 0;
    int rc = tls_handshake(hc->tls, &want);
    if (rc == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        return 0;
    }
    if (rc < 0) {
        /* A certificate's problem in the same words as the HTTP/1.1 path
         * ("certificate pin mismatch: ..."); others say they are TLS's. */
        bool verify = strncmp(tls_error(hc->tls), "certificate ", 12) == 0;
        char what[200];
        snprintf(what, sizeof(what), "%s%s", verify ? "" : "TLS: ", tls_error(hc->tls));
        ho_fail_as(hc, OUT_FAILED, verify ? "tls-verify-failed" : "tls-handshake-failed", true);
        ho_conn_close(hc, what, true);
        return -1;
    }
    ho_tls_done(hc);
    return hc->st == HO_UP || hc->st == HO_WS ? 1 : -1;
}

/* tls_write() and tls_read() as the link wants them, keeping the
 * readiness bits. */
static ssize_t ho_write(void *ctx, const uint8_t *p, size_t n)
{
    struct ho_conn *hc = ctx;
    uint8_t want = SIDE_WR;
    ssize_t k = tls_write(hc->tls, p, n, &want);
    if (k == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        hc->wr_bit = want;
    } else if (k > 0) {
        hc->wr_bit = SIDE_WR;
        hc->tx_bytes += (uint64_t)k;
    }
    return k;
}

static ssize_t ho_wsread(void *ctx, uint8_t *p, size_t n)
{
    struct ho_conn *hc = ctx;
    if (!(hc->ev & hc->rd_bit) && !tls_pending(hc->tls))
        return -EAGAIN;
    uint8_t want = SIDE_RD;
    ssize_t k = tls_read(hc->tls, p, n, &want);
    if (k == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        hc->rd_bit = want;
    } else if (k > 0) {
        hc->rd_bit = SIDE_RD;
    }
    return k;
}

/* The WebSocket opening handshake (RFC 6455 4.1) on the TLS connection:
 * the Upgrade to the outbound's path goes out, the 101 is awaited (the
 * connect budget still runs). */
static void ho_ws_begin(struct ho_conn *hc)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    char host[300];
    bool v6 = strchr(o->host, ':') != NULL;
    snprintf(host, sizeof(host), o->port == 443 ? "%s%s%s" : "%s%s%s:%u", v6 ? "[" : "", o->host,
             v6 ? "]" : "", o->port);
    hc->ws = wslink_new(true);
    int rc = hc->ws ? wslink_client_begin(hc->ws, host, o->ws_path) : -ENOMEM;
    if (rc) {
        ho_conn_close(hc, rc == -ENOMEM ? "out of memory" : "a bad WebSocket path", true);
        slot_serve(hc->sl);
        return;
    }
    hc->st = HO_WS;
}

/* Send the Upgrade, read the answer. 1 once up, 0 while waiting, -1 when
 * the connection was closed. */
static int ho_ws_step(struct ho_conn *hc)
{
    const char *why = "";
    ssize_t rc = 0;
    if (hc->ev & hc->wr_bit)
        rc = wslink_send(hc->ws, NULL, 0, ho_write, hc);
    int r = rc < 0 && rc != -EAGAIN ? (int)rc : wslink_client_read(hc->ws, ho_wsread, hc, &why);
    if (r == 0)
        return 0;
    if (r < 0) {
        char what[160];
        snprintf(what, sizeof(what), "WebSocket: %s", why[0] ? why : errmap_name(r));
        ho_fail_as(hc, OUT_FAILED, "parent-websocket", true);
        ho_conn_close(hc, what, true);
        slot_serve(hc->sl);
        return -1;
    }
    ho_up(hc);
    return hc->st == HO_UP ? 1 : -1;
}

/* Write what nghttp2 has for the parent. 0, or -errno. */
static int ho_flush(struct ho_conn *hc)
{
    if (hc->ws && (hc->ev & hc->wr_bit)) {
        ssize_t n = wslink_send(hc->ws, NULL, 0, ho_write, hc); /* PONG, CLOSE */
        if (n < 0 && n != -EAGAIN)
            return (int)n;
    }
    for (;;) {
        uint32_t upto = h2io_udp_upto(&hc->udp, hc->io.fd, loop_now(&hc->w->loop), HO_OUT_CAP);
        int rc = h2io_gather(hc->s, &hc->sched, &hc->out, &hc->out_len, upto, HO_OUT_CAP);
        if (rc)
            return rc;
        if (hc->out_off == hc->out_len)
            return 0;
        if (!(hc->ev & hc->wr_bit))
            return 0;
        const uint8_t *p = hc->out + hc->out_off;
        size_t len = h2io_whole_records(hc->out_len - hc->out_off,
                                        !hc->ws && nghttp2_session_want_write(hc->s));
        ssize_t n = hc->ws ? wslink_send(hc->ws, p, len, ho_write, hc) : ho_write(hc, p, len);
        if (n == -EAGAIN)
            return 0;
        if (n < 0)
            return (int)n;
        hc->out_off += (uint32_t)n;
        if (hc->out_off == hc->out_len)
            hc->out_off = hc->out_len = 0;
        else if ((size_t)n == len)
            h2io_keep_tail(hc->out, &hc->out_off, &hc->out_len);
    }
}

/* Read the parent's bytes into nghttp2 (always: the socket is never left
 * unread). 0, 1 at its end, or -errno. */
static int ho_read(struct ho_conn *hc)
{
    uint8_t buf[16384];
    for (uint32_t budget = 1u << 20; budget;) {
        if (!(hc->ev & hc->rd_bit) && !tls_pending(hc->tls))
            return 0;
        uint8_t want = SIDE_RD;
        ssize_t n = tls_read(hc->tls, buf, sizeof(buf), &want);
        if (n == 0)
            return 1;
        if (n == -EAGAIN) {
            hc->ev &= (uint8_t)~want;
            hc->rd_bit = want;
            return 0;
        }
        if (n < 0)
            return (int)n;
        hc->rd_bit = SIDE_RD;
        hc->rx_bytes += (uint64_t)n;
        budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
        if (!budget)
            ho_kick(hc); /* fairness: go on after the others */
        if (hc->failed)
            continue;
        if (hc->ws) {
            int wr = wslink_recv(hc->ws, hc->s, buf, (size_t)n);
            if (wr == WSLINK_CLOSED)
                return 1; /* the parent's CLOSE: the connection ends */
            hc->failed = wr != WSLINK_OK;
            continue;
        }
        ssize_t rv = nghttp2_session_mem_recv(hc->s, buf, (size_t)n);
        if (rv < 0) {
            log_info("outbound %s: HTTP/2: %s", sl_ob(hc->sl)->name, nghttp2_strerror((int)rv));
            hc->failed = true;
        }
    }
    return 0;
}

static void ho_drive(struct ho_conn *hc)
{
    if (hc->st == HO_CONNECT) {
        if (!(hc->ev & (SIDE_WR | SIDE_RDHUP)))
            return;
        int err = sock_error(hc->io.fd);
        if (err || (hc->ev & SIDE_RDHUP)) {
            char what[96];
            snprintf(what, sizeof(what), "cannot connect: %s",
                     errmap_name(err ? err : -ECONNREFUSED));
            ho_fail_as(hc, OUT_FAILED, "parent-unreachable", false);
            ho_conn_close(hc, what, true);
            return;
        }
        hc->st = HO_TLS;
        hc->tls = tls_client_new(sl_ob(hc->sl)->tls_h2, hc->io.fd, sl_ob(hc->sl)->host);
        if (!hc->tls) {
            ho_conn_close(hc, "cannot start TLS", true);
            return;
        }
    }
    if (hc->st == HO_TLS && ho_handshake(hc) <= 0)
        return;
    if (hc->st == HO_WS && ho_ws_step(hc) <= 0)
        return;
    if (hc->st != HO_UP)
        return;
    int rc = ho_read(hc);
    if (rc == 0)
        rc = ho_flush(hc);
    if (rc) {
        /* After its GOAWAY, or idle (its iotimeout), the parent closing
         * is no failure: the next session reconnects without a back-off. */
        ho_conn_close(hc, rc > 0 ? "the parent closed the connection" : errmap_name(rc),
                      !(rc > 0 && (hc->goaway || hc->nstreams == 0)));
        return;
    }
    bool flushed = hc->out_len == 0 && !nghttp2_session_want_write(hc->s) &&
                   !(hc->ws && wslink_pending(hc->ws));
    if (flushed && hc->failed) {
        ho_conn_close(hc, "HTTP/2 protocol error", true);
    } else if (flushed && !nghttp2_session_want_read(hc->s)) {
        ho_conn_close(hc, "the parent ended the session", !hc->goaway);
    } else if (hc->goaway && hc->nstreams == 0 && flushed) {
        ho_conn_close(hc, "GOAWAY, streams done", false);
    } else if (hc->nstreams == 0 && flushed && hc->sl->wc != hc->w->cur && !hc->goaway) {
        ho_conn_close(hc, "configuration replaced", false);
    }
}

static void ho_on_io(struct io *io, uint32_t events)
{
    struct ho_conn *hc = container_of(io, struct ho_conn, io);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_WR;
    if (events & (EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_RDHUP;
    ho_drive(hc);
}

static void ho_on_task(struct task *t)
{
    ho_drive(container_of(t, struct ho_conn, task));
}

/* The connect budget while connecting; keepalive once up. */
static void ho_on_timer(struct timer *t)
{
    struct ho_conn *hc = container_of(t, struct ho_conn, timer);
    struct loop *l = &hc->w->loop;
    if (hc->st != HO_UP) {
        /* After TCP (TLS unanswered) every waiter times out, as an
         * HTTP/1.1 parent's sessions would. */
        ho_fail_as(hc, OUT_TIMEOUT, "parent-timeout", hc->st >= HO_TLS);
        ho_conn_close(hc,
                      hc->st == HO_WS    ? "no WebSocket 101 within the connect budget"
                      : hc->st == HO_TLS ? "no TLS handshake within the connect budget"
                                         : "no connection within the connect budget",
                      true);
        return;
    }
    uint64_t now = loop_now(l);
    if (now - hc->last_rx < HO_PING_IDLE) {
        loop_timer_arm_at(l, &hc->timer, hc->last_rx + HO_PING_IDLE);
        return;
    }
    if (hc->missed >= HO_PING_MISSED) {
        ho_conn_close(hc, "no answer to 3 keepalive PINGs", true);
        return;
    }
    hc->missed++;
    hc->ping_us = clock_us();
    nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    loop_timer_arm(l, &hc->timer, HO_PING_IDLE);
    ho_drive(hc);
}

static void ho_connect_to(struct ho_conn *hc, const struct addr *a)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    const struct outbound_source *src = &o->source;
    int fd = sock_connect_from(a, src->addr.family ? &src->addr : NULL, src->device, NULL);
    if (fd < 0) {
        ho_fail_as(hc, OUT_FAILED, "parent-unreachable", false);
        ho_conn_close(hc, errmap_name(fd), true);
        return;
    }
    unsigned int uto = HO_PING_IDLE * HO_PING_MISSED;
    hc->peer = *a;
    h2io_carrier(fd); /* the order stays ours: TCP_NODELAY, TCP_NOTSENT_LOWAT */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
    if (loop_io_add(&hc->w->loop, &hc->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) {
        close(fd);
        ho_conn_close(hc, "out of memory", true);
        return;
    }
    hc->st = HO_CONNECT;
}

static void ho_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct ho_conn *hc = arg;
    hc->dns = NULL;
    if (status != DNS_OK || ans->n == 0) {
        ho_fail_as(hc, OUT_FAILED, "parent-unresolved", false);
        ho_conn_close(hc, dns_status_str(status), true);
        return;
    }
    struct addr a = ans->a[0];
    addr_unmap(&a);
    a.port = sl_ob(hc->sl)->port;
    ho_connect_to(hc, &a);
}

/* Open the slot's connection now. */
static void slot_attempt(struct ho_slot *sl)
{
    struct worker *w = sl->w;
    const struct config_outbound *o = sl_ob(sl);
    struct ho_conn *hc = calloc(1, sizeof(*hc));
    if (!hc) {
        slot_serve(sl);
        return;
    }
    hc->sl = sl;
    sl->refs++;
    hc->w = w;
    hc->rd_bit = SIDE_RD;
    hc->wr_bit = SIDE_WR;
    hc->reconnect = sl->lost;
    hc->t_start = clock_ms();
    list_init(&hc->streams);
    io_init(&hc->io, ho_on_io);
    timer_init(&hc->timer, ho_on_timer);
    task_init(&hc->task, ho_on_task);
    list_add_tail(&w->h2out->conns, &hc->link);
    sl->cur = hc;
    hc->st = HO_RESOLVE;
    const struct config *cfg = sl->wc->cfg;
    uint32_t budget = o->connect_timeout_ms ? o->connect_timeout_ms : cfg->connect_timeout_ms;
    loop_timer_arm(&w->loop, &hc->timer, budget);
    struct addr a;
    if (addr_parse_ip(o->host, o->port, &a) == 0) {
        ho_connect_to(hc, &a);
        return;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, o->host, o->port, &status, &ans)) {
        ho_on_dns(hc, status, &ans);
        return;
    }
    hc->dns = resolver_query(&w->dns, o->host, o->port, ho_on_dns, hc);
    if (!hc->dns)
        ho_conn_close(hc, "out of memory", true);
}

static void slot_on_timer(struct timer *t)
{
    struct ho_slot *sl = container_of(t, struct ho_slot, timer);
    if (!sl->cur && (!list_empty(&sl->waiters) || sl->prewarm))
        slot_attempt(sl);
    sl->prewarm = false;
}

static struct h2out_set *set_get(struct worker *w)
{
    if (!w->h2out) {
        w->h2out = calloc(1, sizeof(*w->h2out));
        if (!w->h2out)
            return NULL;
        list_init(&w->h2out->slots);
        list_init(&w->h2out->conns);
    }
    return w->h2out;
}

struct h2rev_out_set **outbound_h2_rev_set(struct worker *w)
{
    struct h2out_set *set = set_get(w);
    return set ? &set->rev : NULL;
}

struct ho_slot *outbound_h2_slot(struct worker *w, struct wcfg *wc, uint16_t ob)
{
    if (!set_get(w))
        return NULL;
    struct list *pos;
    for (pos = w->h2out->slots.next; pos != &w->h2out->slots; pos = pos->next) {
        struct ho_slot *sl = container_of(pos, struct ho_slot, link);
        if (sl->wc == wc && sl->ob == ob)
            return sl;
    }
    struct ho_slot *sl = calloc(1, sizeof(*sl));
    if (!sl)
        return NULL;
    sl->w = w;
    sl->wc = wc;
    sl->wc->sessions++; /* held while the slot lives */
    sl->ob = ob;
    list_init(&sl->waiters);
    timer_init(&sl->timer, slot_on_timer);
    list_add_tail(&w->h2out->slots, &sl->link);
    return sl;
}

/* s waits for the slot's connection, which opens now or after the
 * back-off. */
void outbound_h2_slot_wait(struct ho_slot *sl, struct ho_stream *s)
{
    struct loop *l = &sl->w->loop;
    list_add_tail(&sl->waiters, &s->link);
    s->waiting = true;
    if (!sl->cur && loop_now(l) >= sl->retry_at)
        slot_attempt(sl);
    else if (!sl->cur && !timer_armed(&sl->timer))
        loop_timer_arm_at(l, &sl->timer, sl->retry_at);
}

/* outbound_h2_int.h: the calls below. */
bool outbound_h2_slot_http1(const struct ho_slot *sl)
{
    return sl->http1;
}

/* ---- the worker's set ----------------------------------------------------- */

static void slot_free(struct ho_slot *sl)
{
    loop_timer_stop(&sl->w->loop, &sl->timer);
    list_del(&sl->link);
    worker_cfg_release(sl->w, sl->wc);
    free(sl);
}

void outbound_h2_slot_unref(struct ho_slot *sl)
{
    if (--sl->refs == 0 && sl->wc != sl->w->cur && !sl->w->h2out->ending)
        slot_free(sl);
}

void outbound_h2_config_changed(struct worker *w)
{
    if (!w->h2out)
        return;
    struct list *pos, *next;
    for (pos = w->h2out->conns.next; pos != &w->h2out->conns; pos = next) {
        next = pos->next;
        struct ho_conn *hc = container_of(pos, struct ho_conn, link);
        if (hc->nstreams == 0 && hc->sl->wc != w->cur)
            ho_conn_close(hc, "configuration replaced", false);
    }
    for (pos = w->h2out->slots.next; pos != &w->h2out->slots; pos = next) {
        next = pos->next;
        struct ho_slot *sl = container_of(pos, struct ho_slot, link);
        if (sl->wc != w->cur && sl->refs == 0)
            slot_free(sl);
    }
}

void outbound_h2_worker_fini(struct worker *w)
{
    if (!w->h2out)
        return;
    outbound_h2rev_fini(w);
    w->h2out->ending = true;
    while (!list_empty(&w->h2out->conns)) {
        struct ho_conn *hc = container_of(w->h2out->conns.next, struct ho_conn, link);
        ho_conn_close(hc, "worker ends", false);
    }
    while (!list_empty(&w->h2out->slots))
        slot_free(container_of(w->h2out->slots.next, struct ho_slot, link));
    free(w->h2out);
    w->h2out = NULL;
}
