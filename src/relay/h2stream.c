/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2stream.c: the HTTP/2 server's streams: a stream's state from
 * h2stream_new() to h2stream_free() (its window charged to the
 * connection's budget and the worker's, h2stream_worker_budget), and the
 * stream as its session sees it (h2stream.h): the session's client side
 * (recv/send/shutdown, and the raw rx/tx of a plain request's
 * translation), its answer (respond, interim, respond_fields; nghttp2
 * reads the DATA through on_read_data), the stream credit given back as
 * its bytes reach the destination, and the window tuning that comes with
 * it (h2stream_tune: proto/h2flow's rule through h2io_window_consumed()).
 * The connection (h2conn.c; h2conn_int.h) admits each stream, feeds its
 * receive buffer from nghttp2's callbacks and says when it is gone.
 *
 * It must not: write to the socket or free the carrier (a call here only
 * fills or drains a stream's buffers, submits to nghttp2 and defers the
 * carrier's task, h2conn_kick()), or call nghttp2 once the carrier is
 * dying (hc->dying) or the stream is gone.
 */
#include "relay/h2stream.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/h2flow.h"
#include "proto/h2h1.h"
#include "relay/h2conn_int.h"
#include "relay/h2io.h"
#include "relay/session.h"

/* ---- a stream's state --------------------------------------------------- */

_Thread_local struct h2flow_budget h2stream_worker_budget;

struct h2stream *h2stream_new(struct h2conn *hc, int32_t id, uint32_t win)
{
    struct h2stream *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->hc = hc;
    s->id = id;
    list_add_tail(&hc->streams, &s->link);
    hc->nstreams++;
    s->win.window = win;
    h2flow_charge(&hc->budget, s->win.window);
    h2flow_charge(&h2stream_worker_budget, s->win.window);
    s->win.epoch_us = clock_us();
    return s;
}

void h2stream_free(struct h2stream *s)
{
    struct h2conn *hc = s->hc;
    h2flow_charge(&hc->budget, -(int64_t)s->win.window);
    h2flow_charge(&h2stream_worker_budget, -(int64_t)s->win.window);
    list_del(&s->link);
    hc->nstreams--;
    free(s->rx);
    free(s->tx);
    free(s->req.fields);
    free(s);
}

/* ---- a stream's session ------------------------------------------------ */

void h2stream_attach(struct h2stream *s, struct conn *c)
{
    s->c = c;
    c->tun_id = s->hc->c->id; /* the access line's tunnel= stream= peer= */
    c->tun_stream = (uint32_t)s->id;
    c->tun_peer = s->hc->c->client;
}

const void *h2stream_carrier(const struct conn *c)
{
    return c->h2s ? c->h2s->hc : NULL;
}

int32_t h2stream_id(const struct conn *c)
{
    return c->h2s ? c->h2s->id : 0;
}

const struct h2stream_req *h2stream_req(const struct conn *c)
{
    return &c->h2s->req;
}

/* The stream's window after consuming n more bytes: at each half window,
 * maybe grown (h2flow_tune, admitted under the budgets), then a new
 * epoch. */
static void h2stream_tune(struct h2stream *s, size_t n)
{
    struct h2conn *hc = s->hc;
    uint64_t now;
    if (s->win_fixed) {
        /* Our SETTINGS' initial window reaches a stream only once the
         * client acknowledged it, and may have raised this one since
         * h2stream_window_fix(): down again (nghttp2 then holds the
         * difference back from the credit it returns). */
        if (nghttp2_session_get_stream_effective_local_window_size(hc->s, s->id) >
            (int32_t)s->win.window)
            nghttp2_session_set_local_window_size(hc->s, NGHTTP2_FLAG_NONE, s->id,
                                                  (int32_t)s->win.window);
        return;
    }
    if (!h2io_window_consumed(hc->s, s->id, &s->win, n, &hc->budget, &h2stream_worker_budget,
                              &hc->rtt, hc->c->cli.fd, h2cfg(hc)->window_max, &now))
        return;
    uint64_t ms = loop_now(&hc->c->w->loop);
    if (!hc->ping_us && ms - hc->ping_ms >= H2IO_PROBE_MS) {
        hc->ping_us = now;
        hc->ping_ms = ms;
        nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    }
}

ssize_t h2stream_recv(struct conn *c, void *p, size_t len)
{
    if (c->h2s->http)
        return h2http_recv(c, c->h2s->http, p, len);
    return h2stream_rx_read(c, p, len);
}

ssize_t h2stream_send(struct conn *c, const void *p, size_t len)
{
    if (c->h2s->http)
        return h2http_send(c, c->h2s->http, p, len);
    return h2stream_tx_write(c, p, len);
}

int h2stream_shutdown(struct conn *c)
{
    if (c->h2s->http)
        return h2http_shutdown(c, c->h2s->http);
    return h2stream_tx_end(c);
}

void h2stream_set_http(struct conn *c, struct h2http *x)
{
    c->h2s->http = x;
}

struct h2http *h2stream_http(const struct conn *c)
{
    return c->h2s ? c->h2s->http : NULL;
}

size_t h2stream_tx_room(const struct conn *c)
{
    const struct h2stream *s = c->h2s;
    return H2_TX_MAX - (s->tx_len - s->tx_off);
}

bool h2stream_rx_done(const struct conn *c)
{
    return c->h2s->rx_eof;
}

void h2stream_consumed(struct conn *c, size_t n)
{
    struct h2stream *s = c->h2s;
    if (!n || s->gone || s->hc->dying)
        return;
    s->credited += n;
    nghttp2_session_consume_stream(s->hc->s, s->id, n);
    h2stream_tune(s, n);
    h2conn_kick(s->hc);
}

ssize_t h2stream_rx_read(struct conn *c, void *p, size_t len)
{
    struct h2stream *s = c->h2s;
    size_t have = s->rx_len - s->rx_off;
    if (have == 0) {
        if (s->rx_eof)
            return 0;
        errno = s->reset || s->gone || s->hc->dying ? ECONNRESET : EAGAIN;
        if (errno == EAGAIN)
            c->cli_ev &= (uint8_t)~SIDE_RD;
        return -1;
    }
    size_t n = have < len ? have : len;
    memcpy(p, s->rx + s->rx_off, n);
    s->rx_off += n;
    if (s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    s->handed += n;
    return (ssize_t)n;
}

void h2stream_credit(struct conn *c)
{
    struct h2stream *s = c->h2s;
    /* Every byte of c2u is the stream's: what reached the destination. */
    uint64_t done = c->c2u.bytes < s->handed ? c->c2u.bytes : s->handed;
    if (done <= s->credited || s->gone || s->hc->dying)
        return;
    size_t n = (size_t)(done - s->credited);
    s->credited = done;
    /* Stream credit on consumption: the bytes are in the destination's
     * socket, so a slow destination holds back only its own stream. */
    nghttp2_session_consume_stream(s->hc->s, s->id, n);
    h2stream_tune(s, n);
    h2conn_kick(s->hc);
}

void h2stream_window_fix(struct conn *c, uint32_t win)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying)
        return;
    s->win_fixed = true;
    if (win >= s->win.window)
        return;
    int64_t less = (int64_t)s->win.window - (int64_t)win;
    h2flow_charge(&s->hc->budget, -less);
    h2flow_charge(&h2stream_worker_budget, -less);
    s->win.window = win;
    nghttp2_session_set_local_window_size(s->hc->s, NGHTTP2_FLAG_NONE, s->id, (int32_t)win);
}

ssize_t h2stream_tx_write(struct conn *c, const void *p, size_t len)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying || s->tx_eof) {
        errno = EPIPE;
        return -1;
    }
    if (s->tx_off) {
        memmove(s->tx, s->tx + s->tx_off, s->tx_len - s->tx_off);
        s->tx_len -= s->tx_off;
        s->tx_off = 0;
    }
    size_t room = H2_TX_MAX - s->tx_len;
    if (room == 0) {
        c->cli_ev &= (uint8_t)~SIDE_WR; /* on_read_data wakes it */
        errno = EAGAIN;
        return -1;
    }
    if (!s->tx && !(s->tx = malloc(H2_TX_MAX))) {
        errno = ENOMEM;
        return -1;
    }
    size_t n = len < room ? len : room;
    memcpy(s->tx + s->tx_len, p, n);
    s->tx_len += n;
    if (c->cmd == CONN_CMD_UDP)
        h2io_udp_note(&s->hc->udp, loop_now(&c->w->loop));
    if (s->deferred) {
        s->deferred = false;
        h2io_resume(s->hc->s, &s->hc->sched, s->id, &s->light);
    }
    h2conn_kick(s->hc);
    return (ssize_t)n;
}

size_t h2stream_room(const struct conn *c)
{
    const struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying || s->tx_eof)
        return 0;
    return h2stream_tx_room(c);
}

int h2stream_tx_end(struct conn *c)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying) {
        errno = ENOTCONN;
        return -1;
    }
    s->tx_eof = true;
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->hc->s, s->id);
    }
    h2conn_kick(s->hc);
    return 0;
}

/* nghttp2 reads a response's DATA (the data provider of h2stream_respond*()):
 * from s->tx in h2io's quanta, waking the session once there is room again;
 * with nothing queued it defers until h2stream_tx_write() or
 * h2stream_tx_end() resumes it. */
static ssize_t on_read_data(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *user)
{
    (void)ss;
    struct h2conn *hc = user;
    struct h2stream *s = src->ptr;
    size_t have = s->tx_len - s->tx_off;
    size_t n = h2io_quantum(&hc->sched, id, &s->light, have, len);
    bool was_full = s->tx_len >= H2_TX_MAX;
    if (n)
        memcpy(buf, s->tx + s->tx_off, n);
    s->tx_off += n;
    if (s->tx_off == s->tx_len)
        s->tx_off = s->tx_len = 0;
    if (n && was_full)
        h2stream_wake(s, SIDE_WR);
    if (s->tx_off == s->tx_len && s->tx_eof) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
    }
    if (n == 0) {
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    return (ssize_t)n;
}

void h2stream_respond(struct conn *c, int status, bool end, const char *name, const char *value)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying || s->responded)
        return;
    /* nghttp2_nv takes non-const pointers it only reads: copies. */
    char key[8] = ":status", st[8], xn[32] = "", xv[64] = "";
    snprintf(st, sizeof(st), "%03u", (unsigned)status % 1000u);
    if (name) {
        snprintf(xn, sizeof(xn), "%s", name);
        snprintf(xv, sizeof(xv), "%s", value ? value : "");
    }
    nghttp2_nv nv[2] = {
        {(uint8_t *)key, (uint8_t *)st, 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)xn, (uint8_t *)xv, strlen(xn), strlen(xv), NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider dp = {.source.ptr = s, .read_callback = on_read_data};
    s->responded = true;
    if (end)
        s->tx_eof = true;
    else
        h2io_young(s->hc->s, s->id); /* before its first DATA */
    nghttp2_submit_response(s->hc->s, s->id, nv, name ? 2 : 1, end ? NULL : &dp);
    h2conn_kick(s->hc);
}

void h2stream_respond_fields(struct conn *c, int status, const struct h1h2_field *f, size_t n,
                             bool end)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying || s->responded)
        return;
    nghttp2_nv *nv = calloc(n + 1, sizeof(*nv));
    if (!nv) {
        nghttp2_submit_rst_stream(s->hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        h2conn_kick(s->hc);
        return;
    }
    /* nghttp2 copies names and values (no NO_COPY flags): pointers into
     * the translator's buffers do for the call. */
    char key[8] = ":status", st[8];
    snprintf(st, sizeof(st), "%03u", (unsigned)status % 1000u);
    nv[0] = (nghttp2_nv){(uint8_t *)key, (uint8_t *)st, 7, 3, NGHTTP2_NV_FLAG_NONE};
    for (size_t i = 0; i < n; i++)
        nv[i + 1] = (nghttp2_nv){(uint8_t *)(uintptr_t)f[i].name, (uint8_t *)(uintptr_t)f[i].value,
                                 f[i].nlen, f[i].vlen, NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider dp = {.source.ptr = s, .read_callback = on_read_data};
    s->responded = true;
    if (end)
        s->tx_eof = true;
    else
        h2io_young(s->hc->s, s->id); /* before its first DATA */
    if (nghttp2_submit_response(s->hc->s, s->id, nv, n + 1, end ? NULL : &dp) < 0)
        nghttp2_submit_rst_stream(s->hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
    free(nv);
    h2conn_kick(s->hc);
}

void h2stream_interim(struct conn *c, int status)
{
    struct h2stream *s = c->h2s;
    if (s->gone || s->hc->dying || s->responded)
        return;
    char key[8] = ":status", st[8];
    snprintf(st, sizeof(st), "%03u", (unsigned)status % 1000u);
    nghttp2_nv nv = {(uint8_t *)key, (uint8_t *)st, 7, 3, NGHTTP2_NV_FLAG_NONE};
    nghttp2_submit_headers(s->hc->s, NGHTTP2_FLAG_NONE, s->id, NULL, &nv, 1, NULL);
    h2conn_kick(s->hc);
}

void h2stream_detach(struct conn *c)
{
    struct h2stream *s = c->h2s;
    if (!s)
        return;
    c->h2s = NULL;
    s->c = NULL;
    if (c->authed && c->user && !s->hc->user[0]) /* the tunnel's user, for its close line */
        snprintf(s->hc->user, sizeof(s->hc->user), "%s", c->user);
    if (s->hc->dying)
        return; /* the carrier frees it */
    if (s->gone) {
        struct h2conn *hc = s->hc;
        h2stream_free(s);
        h2conn_kick(hc); /* a draining connection may be done now */
        return;
    }
    /* Bytes unread or undelivered give their credit back: nobody will
     * deliver them. */
    size_t left = s->rx_len - s->rx_off + (size_t)(s->handed - s->credited);
    if (left)
        nghttp2_session_consume_stream(s->hc->s, s->id, left);
    s->rx_off = s->rx_len = 0;
    if (!s->responded || !s->tx_eof)
        nghttp2_submit_rst_stream(s->hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CONNECT_ERROR);
    else if (!s->rx_eof)
        s->rst_after = true; /* the client need not send on (RFC 9113 8.1) */
    else if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->hc->s, s->id);
    }
    h2conn_kick(s->hc);
}
