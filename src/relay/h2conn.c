/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2conn.c: the HTTP/2 connection (h2conn.h): an nghttp2 server session
 * driven by the carrier session's events (memory I/O, no threads):
 * nghttp2's callbacks, which admit the streams and fill their receive
 * buffers, reading and flushing the socket, SETTINGS, GOAWAY, the
 * lingering close, the idle timeout, the connection's life and the abuse
 * budgets. A stream's state and the calls of its session are h2stream.c's
 * (h2stream.h); what the two share is h2conn_int.h.
 *
 * Flow control (docs/architecture.md, "HTTP/2 inbound"): nghttp2 runs
 * with NGHTTP2_OPT_NO_AUTO_WINDOW_UPDATE; the connection window is
 * returned as DATA arrives (consume_connection), a stream's as its session
 * reads the bytes on towards the destination (consume_stream, h2stream.c),
 * so a stalled stream blocks only itself. A stream's window starts at
 * [http2] window and doubles by proto/h2flow's rule up to window_max,
 * each growth admitted under the connection's budget and the worker's.
 * The TLS socket is always read: once a connection is over budget it is
 * told GOAWAY(ENHANCE_YOUR_CALM) and what it still sends is discarded.
 * Sending order (h2io.h): a response stream starts young (weight 256)
 * until it has sent 64 KiB, then bulk (1); DATA goes in 16 KiB quanta; the
 * socket has TCP_NOTSENT_LOWAT so the order is not lost in its queue.
 *
 * It must not: free the carrier or a stream inside an nghttp2 callback
 * (the carrier closes from its own drive; a stream's state goes when both
 * nghttp2 and its session let go), or write to the socket from a stream's
 * call (those queue and defer the carrier's task).
 */
#include "relay/h2conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "core/sock.h"
#include "log/log.h"
#include "proto/h2flow.h"
#include "proto/h2h1.h"
#include "proto/ws.h"
#include "relay/front.h"
#include "relay/h2conn_int.h"
#include "relay/h2io.h"
#include "relay/session.h"
#include "relay/tunnel_log.h"
#include "relay/wslink.h"
#include "tls/tls.h"

#define H2_OUT_CAP  (64u * 1024) /* frames gathered before one TLS write */
#define H2_READ_MAX (64u * 1024)

/* Over an abuse budget: GOAWAY(ENHANCE_YOUR_CALM), counted; the carrier
 * flushes it and closes. */
static const char *const calm_what[H2_CALM_COUNT] = {
    [H2_CALM_HEADER_LIST] = "header list",
    [H2_CALM_RAPID_RESET] = "stream reset",
    [H2_CALM_PING] = "PING",
    [H2_CALM_SETTINGS] = "SETTINGS",
    [H2_CALM_EMPTY_DATA] = "empty DATA",
};

static void h2conn_calm(struct h2conn *hc, enum stats_h2_calm why)
{
    if (hc->calm)
        return;
    hc->calm = true;
    struct worker *w = hc->c->w;
    stat_add(&w->stats.h2_goaway_calm[why], 1);
    char a[ADDR_STRLEN];
    log_info("h2: %s over its %s budget: GOAWAY(ENHANCE_YOUR_CALM)",
             addr_format(&hc->c->client, a, sizeof(a)), calm_what[why]);
    nghttp2_session_terminate_session(hc->s, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* ---- nghttp2 callbacks ------------------------------------------------ */

static int on_begin_frame(nghttp2_session *ss, const nghttp2_frame_hd *hd, void *user)
{
    (void)ss;
    struct h2conn *hc = user;
    /* A header block's size, counted as its frames arrive (CONTINUATION
     * floods never reach the decoder's per-field callbacks). */
    if (hd->type == NGHTTP2_HEADERS)
        hc->hdr_block = 0;
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
        hc->hdr_block += (uint32_t)hd->length;
        if (hc->hdr_block > h2cfg(hc)->max_header_list) {
            h2conn_calm(hc, H2_CALM_HEADER_LIST);
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
    }
    return 0;
}

static int on_begin_headers(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    struct h2conn *hc = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST || hc->calm)
        return 0;
    const struct config_http2 *hc2 = h2cfg(hc);
    /* Admission: the stream's window out of the budgets (the connection's
     * grows as it fills); one that cannot keep H2FLOW_WIN_MIN is refused. */
    uint32_t win = h2flow_admit(&hc->budget, &h2stream_worker_budget, 0, hc2->window);
    if (win < H2FLOW_WIN_MIN) {
        nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    struct h2stream *s = h2stream_new(hc, f->hd.stream_id, win);
    if (!s)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    if (s->win.window < hc2->window)
        nghttp2_session_set_local_window_size(ss, NGHTTP2_FLAG_NONE, s->id, (int32_t)s->win.window);
    nghttp2_session_set_stream_user_data(ss, s->id, s);
    return 0;
}

static void req_copy(struct h2stream_req *r, char *dst, size_t cap, const uint8_t *v, size_t n)
{
    if (n >= cap) {
        r->bad = true;
        return;
    }
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* A regular field, kept for a plain request (proto/h2h1.h). */
static void req_field(struct h2stream_req *r, const uint8_t *name, size_t namelen,
                      const uint8_t *value, size_t valuelen, size_t max)
{
    if (strcmp(r->method, "CONNECT") == 0)
        return; /* pseudo-header fields come first: a tunnel needs none of these */
    int chk = h2h1_field_check(name, namelen, value, valuelen);
    if (chk == H2H1_FIELD_BAD)
        r->field_bad = true;
    if (chk == H2H1_FIELD_DROP && namelen == 4 && memcmp(name, "host", 4) == 0 && !r->authority[0])
        req_copy(r, r->authority, sizeof(r->authority), value, valuelen);
    if (chk != H2H1_FIELD_OK)
        return;
    size_t need = r->flen + 4 + namelen + valuelen;
    if (need > r->fcap) {
        size_t cap = r->fcap ? r->fcap : 1024;
        while (cap < need)
            cap *= 2;
        uint8_t *nb = cap <= max + 4096 ? realloc(r->fields, cap) : NULL;
        if (!nb) {
            r->bad = true;
            return;
        }
        r->fields = nb;
        r->fcap = cap;
    }
    if (h2h1_field_add(r->fields, &r->flen, r->fcap, name, namelen, value, valuelen) < 0)
        r->bad = true;
}

static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    (void)flags;
    struct h2conn *hc = user;
    struct h2stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    if (!s || f->hd.type != NGHTTP2_HEADERS)
        return 0;
    s->hdr_bytes += (uint32_t)(namelen + valuelen + 32); /* RFC 9113 6.5.2 */
    if (s->hdr_bytes > h2cfg(hc)->max_header_list) {
        h2conn_calm(hc, H2_CALM_HEADER_LIST);
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    struct h2stream_req *r = &s->req;
    static const struct {
        const char *n;
        size_t off, cap;
    } fields[] = {
        {":method", offsetof(struct h2stream_req, method), sizeof(r->method)},
        {":authority", offsetof(struct h2stream_req, authority), sizeof(r->authority)},
        {":scheme", offsetof(struct h2stream_req, scheme), sizeof(r->scheme)},
        {":protocol", offsetof(struct h2stream_req, protocol), sizeof(r->protocol)},
        {":path", offsetof(struct h2stream_req, path), sizeof(r->path)},
        {"proxy-authorization", offsetof(struct h2stream_req, proxy_auth), sizeof(r->proxy_auth)},
        {"capsule-protocol", offsetof(struct h2stream_req, capsule_protocol),
         sizeof(r->capsule_protocol)},
    };
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (strlen(fields[i].n) == namelen && memcmp(fields[i].n, name, namelen) == 0) {
            req_copy(r, (char *)r + fields[i].off, fields[i].cap, value, valuelen);
            break;
        }
    }
    if (namelen && name[0] != ':')
        req_field(r, name, namelen, value, valuelen, h2cfg(hc)->max_header_list);
    return 0;
}

/* A request's header block is complete: its session starts. */
static void h2stream_open(struct h2conn *hc, struct h2stream *s)
{
    struct conn *c = hc->c;
    if (hc->goaway || hc->calm) {
        nghttp2_submit_rst_stream(hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
        return;
    }
    stat_add(&c->w->stats.h2_streams, 1);
    hc->streams_total++;
    if (conn_open_stream(c->w, c, s) < 0)
        nghttp2_submit_rst_stream(hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_REFUSED_STREAM);
}

static bool h2conn_rate(struct h2conn *hc, struct h2flow_rate *r, uint32_t limit,
                        enum stats_h2_calm what)
{
    if (!h2flow_rate_hit(r, loop_now(&hc->c->w->loop), limit))
        return false;
    h2conn_calm(hc, what);
    return true;
}

static void h2conn_ping_ack(struct h2conn *hc)
{
    if (!hc->ping_us)
        return;
    uint64_t now = clock_us();
    h2flow_rtt_sample(&hc->rtt, now > hc->ping_us ? now - hc->ping_us : 1);
    hc->ping_us = 0;
}

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    struct h2conn *hc = user;
    const struct config_http2 *hc2 = h2cfg(hc);
    struct h2stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS: /* a request, or trailers (END_STREAM) */
        if (s && end)
            s->rx_eof = true;
        if (s && f->headers.cat == NGHTTP2_HCAT_REQUEST && !s->c && !s->gone)
            h2stream_open(hc, s);
        else if (s && end)
            h2stream_wake(s, SIDE_RD);
        break;
    case NGHTTP2_DATA:
        if (f->hd.length == 0 && !end &&
            h2conn_rate(hc, &hc->r_empty, hc2->empty_data_rate, H2_CALM_EMPTY_DATA))
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        if (s && end) {
            s->rx_eof = true;
            h2stream_wake(s, SIDE_RD);
        }
        break;
    case NGHTTP2_RST_STREAM:
        /* Rapid Reset (CVE-2023-44487): streams the client cancels before
         * any response, per second. */
        if (s && !s->responded &&
            h2conn_rate(hc, &hc->r_reset, hc2->reset_rate, H2_CALM_RAPID_RESET))
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    case NGHTTP2_PING:
        if (f->hd.flags & NGHTTP2_FLAG_ACK)
            h2conn_ping_ack(hc);
        else if (h2conn_rate(hc, &hc->r_ping, hc2->ping_rate, H2_CALM_PING))
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK) &&
            h2conn_rate(hc, &hc->r_settings, hc2->settings_rate, H2_CALM_SETTINGS))
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        break;
    default:
        break;
    }
    return 0;
}

static int rx_append(struct h2stream *s, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    if (s->rx_off && s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    if (s->rx_len + n > s->rx_cap && s->rx_off) {
        memmove(s->rx, s->rx + s->rx_off, s->rx_len - s->rx_off);
        s->rx_len -= s->rx_off;
        s->rx_off = 0;
    }
    if (s->rx_len + n > s->rx_cap) {
        size_t cap = s->rx_cap ? s->rx_cap : 16384;
        while (cap < s->rx_len + n)
            cap *= 2;
        uint8_t *nb = realloc(s->rx, cap);
        if (!nb)
            return -1;
        s->rx = nb;
        s->rx_cap = cap;
    }
    memcpy(s->rx + s->rx_len, p, n);
    s->rx_len += n;
    return 0;
}

static int on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user)
{
    (void)flags;
    (void)user;
    /* The connection's credit comes back on receipt: a stalled stream never
     * holds the others' window. */
    nghttp2_session_consume_connection(ss, len);
    struct h2stream *s = nghttp2_session_get_stream_user_data(ss, id);
    if (!s || !s->c) { /* no session reads it: dropped, credit returned */
        nghttp2_session_consume_stream(ss, id, len);
        return 0;
    }
    if (!s->win.begun)
        h2flow_begin(&s->win, clock_us()); /* the first epoch starts with the data */
    if (rx_append(s, data, len) < 0)
        return nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
    h2stream_wake(s, SIDE_RD);
    return 0;
}

static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t code, void *user)
{
    (void)user;
    struct h2stream *s = nghttp2_session_get_stream_user_data(ss, id);
    if (!s)
        return 0;
    s->gone = true;
    struct conn *c = s->c;
    if (!c) {
        h2stream_free(s);
        return 0;
    }
    if (code != NGHTTP2_NO_ERROR || !s->rx_eof || !s->tx_eof) {
        /* Reset by the client (RST_STREAM) or torn down: the destination
         * sees a reset too (RFC 9113 section 8.5). */
        s->reset = true;
        if (c->up.fd >= 0)
            sock_abort(c->up.fd);
        conn_close(c, "client-reset"); /* detaches, and frees s (gone) */
        return 0;
    }
    h2stream_wake(s, SIDE_RD | SIDE_WR); /* its session frees s when it ends */
    return 0;
}

/* A refused stream's END_STREAM is out: now tell the client to stop
 * sending (a reset submitted with the response would overtake it). */
static int on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    (void)user;
    if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA))
        return 0;
    struct h2stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    if (s && s->rst_after && !s->rx_eof) {
        s->rst_after = false;
        nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    }
    return 0;
}

/* ---- the carrier ------------------------------------------------------ */

static void h2conn_release(struct release *r)
{
    free(container_of(r, struct h2conn, rel));
}

/* The carrier closes: its stream sessions close (their destinations are
 * reset), nghttp2 goes, and the struct is freed after this batch of
 * events (the loop's rule), though nothing of the batch names it. */
static void h2conn_free(struct h2conn *hc)
{
    hc->dying = true;
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &hc->streams)
    {
        struct h2stream *s = container_of(pos, struct h2stream, link);
        if (s->c) {
            if (s->c->up.fd >= 0)
                sock_abort(s->c->up.fd);
            conn_close(s->c, "h2-connection-closed");
        }
        h2stream_free(s);
    }
    struct conn *c = hc->c;
    tunnel_log(conn_cfg(c), &(struct tunnel_log){.side = "server",
                                                 .id = c->id,
                                                 .peer = &c->client,
                                                 .user = hc->user[0] ? hc->user : NULL,
                                                 .transport = hc->ws ? "ws" : "h2",
                                                 .end = c->why ? c->why : "-",
                                                 .ms = loop_now(&c->w->loop) - c->t_start,
                                                 .streams = hc->streams_total,
                                                 .up = hc->rx_bytes,
                                                 .down = hc->tx_bytes});
    nghttp2_session_del(hc->s);
    free(hc->out);
    wslink_free(hc->ws);
    hc->ws = NULL;
    hc->s = NULL;
    stat_sub(&hc->c->w->stats.h2_conns, 1);
    loop_release(&hc->c->w->loop, &hc->rel, h2conn_release);
}

/* conn_cli_send() as a wslink_write_fn. */
static ssize_t h2conn_ws_write(void *ctx, const uint8_t *p, size_t n)
{
    ssize_t k = conn_cli_send(ctx, p, n);
    return k < 0 ? -errno : k;
}

/* Bytes to the client: as they are, or framed by the WebSocket link. */
static ssize_t h2conn_send(struct h2conn *hc, const uint8_t *p, size_t n)
{
    if (!hc->ws)
        return conn_cli_send(hc->c, p, n);
    ssize_t k = wslink_send(hc->ws, p, n, h2conn_ws_write, hc->c);
    if (k >= 0)
        return k;
    errno = (int)-k;
    return -1;
}

/* Write gathered frames; gather more while nghttp2 has them. Returns 0,
 * or -errno (the carrier closes). */
static int h2conn_flush(struct h2conn *hc)
{
    struct conn *c = hc->c;
    if (hc->ws && (c->cli_ev & SIDE_WR) && h2conn_send(hc, NULL, 0) < 0 && errno != EAGAIN)
        return -errno; /* what the link queued (a 101, PONG, CLOSE) first */
    for (;;) {
        uint32_t upto = h2io_udp_upto(&hc->udp, c->cli.fd, loop_now(&c->w->loop), H2_OUT_CAP / 2);
        int rc = h2io_gather(hc->s, &hc->sched, &hc->out, &hc->out_len, upto, H2_OUT_CAP);
        if (rc)
            return rc;
        if (hc->out_off == hc->out_len)
            return 0;
        if (!(c->cli_ev & SIDE_WR))
            return 0;
        uint32_t len = h2io_whole_records(hc->out_len - hc->out_off,
                                          !hc->ws && nghttp2_session_want_write(hc->s));
        ssize_t n = h2conn_send(hc, hc->out + hc->out_off, len);
        if (n < 0)
            return errno == EAGAIN ? 0 : -errno;
        hc->out_off += (uint32_t)n;
        hc->tx_bytes += (uint64_t)n;
        c->last_active = loop_now(&c->w->loop);
        if (hc->out_off == hc->out_len)
            hc->out_off = hc->out_len = 0;
        else if ((uint32_t)n == len)
            h2io_keep_tail(hc->out, &hc->out_off, &hc->out_len);
        else
            return 0;
    }
}

/* Read what the client sent and feed it to nghttp2. 0, 1 at the end of
 * the connection, or -errno. */
static int h2conn_read(struct h2conn *hc)
{
    struct conn *c = hc->c;
    uint8_t buf[16384];
    for (uint32_t budget = H2_READ_MAX * 16; (c->cli_ev & SIDE_RD) && budget;) {
        ssize_t n = conn_cli_recv(c, buf, sizeof(buf));
        if (n == 0)
            return 1;
        if (n < 0) {
            if (errno == EAGAIN)
                return 0;
            return errno == EINTR ? 0 : -errno;
        }
        budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
        hc->rx_bytes += (uint64_t)n;
        if (budget == 0)
            h2conn_kick(hc); /* fairness: go on after the others */
        c->last_active = loop_now(&c->w->loop);
        if (hc->calm || hc->failed)
            continue; /* over budget or broken: read and discard until closed */
        if (hc->ws) {
            int wr = wslink_recv(hc->ws, hc->s, buf, (size_t)n);
            if (wr == WSLINK_CLOSED) {
                h2conn_send(hc, NULL, 0); /* our CLOSE, if it fits */
                return 1;
            }
            hc->failed = wr != WSLINK_OK;
            if (hc->failed)
                log_debug("h2: conn %llu: %s", (unsigned long long)c->id,
                          wr == WSLINK_BAD ? "WebSocket protocol error: CLOSE sent"
                                           : "HTTP/2 error inside the WebSocket");
            continue;
        }
        ssize_t rv = nghttp2_session_mem_recv(hc->s, buf, (size_t)n);
        if (rv < 0) {
            if (!hc->calm)
                log_debug("h2: conn %llu: %s", (unsigned long long)c->id,
                          nghttp2_strerror((int)rv));
            hc->failed = true;
        }
    }
    return 0;
}

/* The GOAWAY of a broken or abusive connection is out: its streams end,
 * and a lingering close (conn.c) keeps the GOAWAY from being destroyed by
 * a reset while the client still sends. */
static void h2conn_linger(struct h2conn *hc)
{
    struct conn *c = hc->c;
    hc->dying = true; /* stream sessions let go without a word to nghttp2 */
    struct list *pos;
    for (pos = hc->streams.next; pos != &hc->streams; pos = pos->next) {
        struct h2stream *s = container_of(pos, struct h2stream, link);
        if (s->c) {
            if (s->c->up.fd >= 0)
                sock_abort(s->c->up.fd);
            conn_close(s->c, "h2-goaway");
        }
    }
    c->why = hc->calm ? "h2-calm" : "h2-error";
    conn_linger(c);
}

/* The connection ends in order (why): inside a WebSocket, a CLOSE goes
 * first (1001 after our GOAWAY, a drain or a reload, or an idle timeout;
 * 1000 otherwise; RFC 6455 7.4.1), as far as the socket takes it now. */
static void h2conn_end_in_order(struct h2conn *hc, const char *why)
{
    if (hc->ws) {
        bool away = hc->goaway || strcmp(why, "idle-timeout") == 0;
        wslink_close(hc->ws, away ? WS_CLOSE_GOING_AWAY : WS_CLOSE_NORMAL);
        h2conn_send(hc, NULL, 0);
    }
    conn_close(hc->c, why);
}

static void h2conn_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    struct h2conn *hc = c->h2;
    int rc = h2conn_read(hc);
    if (rc) {
        conn_close_err(c, rc > 0 ? "client-closed" : "client-error", rc > 0 ? 0 : rc);
        return;
    }
    rc = h2conn_flush(hc);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    bool flushed = hc->out_len == 0 && !nghttp2_session_want_write(hc->s) &&
                   !(hc->ws && wslink_pending(hc->ws));
    if (flushed && (hc->calm || hc->failed)) {
        h2conn_linger(hc);
        return;
    }
    if (flushed && !nghttp2_session_want_read(hc->s))
        h2conn_end_in_order(hc, "done");
    else if (flushed && hc->goaway && hc->nstreams == 0)
        h2conn_end_in_order(hc, "goaway");
}

static void h2conn_timeout(struct conn *c)
{
    struct h2conn *hc = c->h2;
    uint32_t idle = conn_iotimeout(c);
    if (!idle) {
        loop_timer_stop(&c->w->loop, &c->timer);
        return;
    }
    if (hc->nstreams == 0 && loop_now(&c->w->loop) - c->last_active >= idle) {
        h2conn_end_in_order(hc, "idle-timeout");
        return;
    }
    loop_timer_arm(&c->w->loop, &c->timer, idle);
}

static void h2conn_end(struct conn *c)
{
    if (c->h2)
        h2conn_free(c->h2);
    c->h2 = NULL;
}

const struct front_ops front_h2conn = {
    .name = "h2",
    .sp = SP_NONE,
    .drive = h2conn_drive,
    .timeout = h2conn_timeout,
    .end = h2conn_end,
};

static nghttp2_session *h2conn_session(struct h2conn *hc)
{
    static const struct h2io_callbacks cb = {
        .begin_frame = on_begin_frame,
        .begin_headers = on_begin_headers,
        .header = on_header,
        .frame_recv = on_frame_recv,
        .data_chunk = on_data_chunk,
        .stream_close = on_stream_close,
        .frame_send = on_frame_send,
    };
    return h2io_session_new(true, &cb, hc, 4096);
}

/* SETTINGS (RFC 9113 6.5.2; ENABLE_CONNECT_PROTOCOL of RFC 8441), and the
 * connection window: credit comes back on receipt, so a large one costs
 * no memory of its own (the stream windows bound it). */
static int h2conn_settings(struct h2conn *hc)
{
    const struct config_http2 *hc2 = h2cfg(hc);
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, hc2->max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, hc2->window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, hc2->max_header_list},
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
    };
    if (nghttp2_submit_settings(hc->s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])))
        return -1;
    return nghttp2_session_set_local_window_size(hc->s, NGHTTP2_FLAG_NONE, 0,
                                                 (int32_t)hc2->conn_budget_max);
}

void h2conn_begin(struct conn *c)
{
    h2conn_begin_ws(c, NULL);
}

void h2conn_begin_ws(struct conn *c, struct wslink *ws)
{
    const struct config *cfg = conn_cfg(c);
    const struct config_http2 *hc2 = &cfg->http2;
    uint8_t allowed = cfg->listen[c->listen_index].protocols;
    if (!((allowed ? allowed : cfg->protocols) & PROTO_HTTP)) {
        /* HTTP/2 is an HTTP proxy: a listener without http does not speak it. */
        wslink_free(ws);
        conn_bad_handshake(c);
        stat_add(&c->w->stats.unknown_protocol, 1);
        conn_close(c, "protocol-not-enabled");
        return;
    }
    if (c->cli_tls)
        tls_keep_buffers(c->cli_tls); /* busy and long-lived: no allocation per record */
    struct h2conn *hc = calloc(1, sizeof(*hc));
    if (hc) {
        hc->out = malloc(H2_OUT_CAP);
        hc->c = c;
        list_init(&hc->streams);
        hc->budget.cap = hc2->conn_budget;
        hc->budget.max = hc2->conn_budget_max;
        hc->s = hc->out ? h2conn_session(hc) : NULL;
    }
    if (!hc || !hc->s || h2conn_settings(hc)) {
        if (hc && hc->s)
            nghttp2_session_del(hc->s);
        if (hc)
            free(hc->out);
        free(hc);
        wslink_free(ws);
        conn_close_err(c, "no-memory", -ENOMEM);
        return;
    }
    if (!h2stream_worker_budget.cap)
        h2stream_worker_budget.cap = h2stream_worker_budget.max = hc2->worker_budget;
    stat_add(&c->w->stats.h2_conns, 1);
    stat_add(&c->w->stats.h2_conns_opened, 1);
    c->h2 = hc;
    hc->ws = ws; /* bytes that came behind the Upgrade go to nghttp2 now */
    tunnel_log(
        cfg, &(struct tunnel_log){
                 .side = "server", .id = c->id, .peer = &c->client, .transport = ws ? "ws" : "h2"});
    if (ws && wslink_start(ws, hc->s) != WSLINK_OK)
        hc->failed = true;
    /* Ordering stays in user space: small frames go out at once, and the
     * socket queues little that is not sent yet. */
    h2io_carrier(c->cli.fd);
    conn_set_front(c, &front_h2conn);
    conn_set_state(c, CONN_ST_H2);
    conn_set_outcome(c, OUT_OK);
    c->last_active = loop_now(&c->w->loop);
    uint32_t idle = conn_iotimeout(c);
    if (idle)
        loop_timer_arm(&c->w->loop, &c->timer, idle);
    else
        loop_timer_stop(&c->w->loop, &c->timer);
    /* An RTT probe for the window tuning. */
    hc->ping_us = clock_us();
    hc->ping_ms = loop_now(&c->w->loop);
    nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    c->cli_ev |= SIDE_RD; /* bytes that came with the handshake wait in OpenSSL */
    h2conn_drive(c, 0);
}

void h2conn_goaway_all(struct worker *w)
{
    struct list *pos;
    for (pos = w->sessions.next; pos != &w->sessions; pos = pos->next) {
        struct conn *c = container_of(pos, struct conn, link);
        if (c->front != &front_h2conn || !c->h2 || c->h2->goaway)
            continue;
        struct h2conn *hc = c->h2;
        hc->goaway = true;
        nghttp2_submit_goaway(hc->s, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(hc->s), NGHTTP2_NO_ERROR,
                              NULL, 0);
        stat_add(&w->stats.h2_goaway_shutdown, 1);
        h2conn_kick(hc);
    }
}
