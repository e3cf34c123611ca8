/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_h2_http.c: a plain request over HTTP/2 (RFC 9113 section 8.3,
 * ":scheme http" with :authority and :path) forwarded by the HTTP/1 proxy
 * (http.c) itself: the stream's session gets http.c's row (with proto=h2
 * in its access-log lines), and its client side translates. What http.c
 * reads from the client is the request written as HTTP/1.1 (its head by
 * proto/h2h1.c, then the DATA frames' bytes, chunked when no
 * content-length came, then the end); what http.c writes to the client
 * is read back (proto/h2h1.c) into HEADERS and DATA frames and
 * END_STREAM. So the rules, limits, authentication (Proxy-Authorization
 * per stream), outbounds, upstream pool and the F1 framing defences are
 * http.c's, with nothing done twice. A ":scheme https" request is not a
 * forward proxy's job: 501.
 *
 * It must not: read or write the carrier (only h2conn.h's stream calls),
 * or keep a response whose framing it cannot follow (the stream is reset).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "proto/h2h1.h"
#include "proto/http1.h"
#include "relay/front.h"
#include "relay/h2stream.h"
#include "relay/session.h"

#define RESP_HEAD_SLACK 512 /* what http.c's rewrite adds to a head */

struct h2http {
    uint8_t *head; /* the request head as HTTP/1.1 */
    size_t head_len, head_off;
    enum h2h1_body kind;
    bool req_done; /* the request's end is written (or it has no body) */
    bool resp_end; /* the response is complete: END_STREAM is queued */
    bool resp_bad; /* the response could not be followed */
    bool responded;
    uint8_t tail[96]; /* chunk framing waiting to be read */
    size_t tail_len, tail_off;
    struct http1_msg *m;
    uint8_t *rhead;
    struct h1h2_resp resp;
};

static void h2http_free(struct h2http *x)
{
    if (!x)
        return;
    free(x->head);
    free(x->m);
    free(x->rhead);
    free(x);
}

static ssize_t give(void *p, size_t len, const uint8_t *src, size_t *off, size_t n)
{
    size_t k = n - *off < len ? n - *off : len;
    memcpy(p, src + *off, k);
    *off += k;
    return (ssize_t)k;
}

/* A chunk of the request body: "%08zx\r\n" DATA "\r\n", read straight
 * into p when it is large enough, else through tail. */
static ssize_t h2http_chunk(struct conn *c, struct h2http *x, uint8_t *p, size_t len)
{
    uint8_t small[64];
    bool direct = len >= 16;
    uint8_t *dst = direct ? p : small;
    size_t cap = (direct ? len : sizeof(small)) - 12;
    if (cap > 0x7fffffff)
        cap = 0x7fffffff; /* the size line has 8 hex digits */
    ssize_t n = h2stream_rx_read(c, dst + 10, cap);
    if (n < 0)
        return -1;
    if (n == 0) {
        static const char last[] = "0\r\n\r\n";
        x->req_done = true;
        memcpy(x->tail, last, 5);
        x->tail_len = 5;
        x->tail_off = 0;
        return give(p, len, x->tail, &x->tail_off, x->tail_len);
    }
    h2stream_consumed(c, (size_t)n);
    char line[32];
    snprintf(line, sizeof(line), "%08zx\r\n", (size_t)n & 0x7fffffff);
    memcpy(dst, line, 10);
    memcpy(dst + 10 + n, "\r\n", 2);
    if (direct)
        return n + 12;
    memcpy(x->tail, small, (size_t)n + 12);
    x->tail_len = (size_t)n + 12;
    x->tail_off = 0;
    return give(p, len, x->tail, &x->tail_off, x->tail_len);
}

static ssize_t h2http_recv1(struct conn *c, struct h2http *x, void *p, size_t len)
{
    if (x->head_off < x->head_len)
        return give(p, len, x->head, &x->head_off, x->head_len);
    if (x->tail_off < x->tail_len)
        return give(p, len, x->tail, &x->tail_off, x->tail_len);
    if (!x->req_done && x->kind == H2H1_BODY_CHUNKED)
        return h2http_chunk(c, x, p, len);
    if (!x->req_done && x->kind == H2H1_BODY_LENGTH) {
        ssize_t n = h2stream_rx_read(c, p, len);
        if (n > 0)
            h2stream_consumed(c, (size_t)n);
        if (n != 0)
            return n;
        x->req_done = true;
    }
    /* The request is all read: the end once the response is (http.c then
     * ends the session), until then nothing. */
    if (x->resp_end || x->resp_bad)
        return 0;
    char sink[1];
    if (h2stream_rx_read(c, sink, 0) < 0 && errno != EAGAIN)
        return -1; /* reset */
    c->cli_ev &= (uint8_t)~SIDE_RD;
    errno = EAGAIN;
    return -1;
}

/* As a TLS client side reads (conn.c): as much as is there, so a short
 * read means drained; the end after bytes comes with the next call. */
ssize_t h2http_recv(struct conn *c, struct h2http *x, void *p, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = h2http_recv1(c, x, (uint8_t *)p + got, len - got);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (!got)
            return n;
        if (n == 0 || errno != EAGAIN)
            c->cli_ev |= SIDE_RDHUP;
        break;
    }
    return (ssize_t)got;
}

static void h2http_end_resp(struct conn *c, struct h2http *x)
{
    x->resp_end = true;
    (void)h2stream_tx_end(c);
    c->cli_ev |= SIDE_RD; /* the end of the request side can be read now */
}

/* One translator event for the bytes at p. Returns how many it used, or
 * -1 when the response cannot be followed. */
static ssize_t h2http_event(struct conn *c, struct h2http *x, const uint8_t *p, size_t len,
                            size_t room)
{
    size_t used = 0, dlen = 0;
    const uint8_t *data = NULL;
    switch (h1h2_resp_step(&x->resp, p, len, room, &used, &data, &dlen, x->m)) {
    case H1H2_HEAD: {
        bool done = h1h2_resp_done(&x->resp);
        x->responded = true;
        h2stream_respond_fields(c, x->resp.status, x->resp.f, x->resp.nf, done);
        /* nghttp2 has copied the fields: the head's buffers go (no other
         * head follows a final one). */
        free(x->rhead);
        free(x->m);
        x->rhead = NULL;
        x->m = NULL;
        if (done) {
            x->resp_end = true;
            c->cli_ev |= SIDE_RD;
        }
        break;
    }
    case H1H2_DATA:
        if (h2stream_tx_write(c, data, dlen) != (ssize_t)dlen)
            return -1;
        break;
    case H1H2_END:
        h2http_end_resp(c, x);
        break;
    case H1H2_ERROR:
        x->resp_bad = true;
        return -1;
    case H1H2_INTERIM:
        h2stream_interim(c, x->resp.status);
        break;
    case H1H2_NEED:
        break;
    }
    return (ssize_t)used;
}

ssize_t h2http_send(struct conn *c, struct h2http *x, const void *p, size_t len)
{
    const uint8_t *b = p;
    size_t off = 0;
    if (x->resp_bad) {
        errno = EPIPE;
        return -1;
    }
    while (off < len && !x->resp_end) {
        size_t room = h2stream_tx_room(c);
        ssize_t n = h2http_event(c, x, b + off, len - off, room);
        if (n < 0) {
            if (!x->responded) {
                x->responded = true;
                h2stream_respond_fields(c, 502, NULL, 0, true);
            }
            errno = EPIPE;
            return -1;
        }
        if (n == 0 && !x->resp_end) {
            if (room == 0)
                break;
            /* An event without input (a HEAD with no body, then END). */
            if (h1h2_resp_done(&x->resp))
                continue;
            break;
        }
        off += (size_t)n;
    }
    if (x->resp_end)
        return (ssize_t)len; /* nothing of this response follows its end */
    if (off == 0) {
        c->cli_ev &= (uint8_t)~SIDE_WR; /* the stream's queue wakes it */
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)off;
}

int h2http_shutdown(struct conn *c, struct h2http *x)
{
    if (!x->resp_end && !x->resp_bad && h1h2_resp_eof(&x->resp) == H1H2_END && x->responded)
        h2http_end_resp(c, x);
    return 0;
}

/* ---- the row: http.c's, logged as h2 ---------------------------------- */

static void h2http_row_start(struct conn *c)
{
    front_http.start(c);
}

static void h2http_row_drive(struct conn *c, uint32_t ev)
{
    front_http.drive(c, ev);
}

static void h2http_row_connected(struct conn *c)
{
    front_http.connected(c);
}

static void h2http_row_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    front_http.fail_reply(c, o, why);
}

static void h2http_row_timeout(struct conn *c)
{
    front_http.timeout(c);
}

static void h2http_row_end(struct conn *c)
{
    struct h2http *x = h2stream_http(c);
    /* A close-delimited response ends when http.c is done with it. */
    if (x && !x->resp_end && c->why && strcmp(c->why, "done") == 0)
        h2http_shutdown(c, x);
    front_http.end(c);
    h2stream_set_http(c, NULL);
    h2http_free(x);
    h2stream_detach(c);
}

static const struct front_ops front_h2_http = {
    .name = "h2-http",
    .log_proto = "h2",
    .proto = PROTO_HTTP,
    .sp = SP_HTTP,
    .start = h2http_row_start,
    .drive = h2http_row_drive,
    .connected = h2http_row_connected,
    .fail_reply = h2http_row_fail_reply,
    .timeout = h2http_row_timeout,
    .end = h2http_row_end,
};

/* Refuse a request before http.c has it: front_h2's answer (HEADERS
 * with the status, END_STREAM) and access-log line. */
static void h2http_refuse(struct conn *c, enum outcome o, const char *why)
{
    conn_fail(c, o, why);
}

void h2http_start(struct conn *c)
{
    const struct h2stream_req *r = h2stream_req(c);
    c->cmd = CONN_CMD_CONNECT;
    if (r->bad || r->field_bad || !r->authority[0] || !r->path[0] || !r->scheme[0]) {
        h2http_refuse(c, OUT_BAD_REQUEST, "bad-request");
        return;
    }
    if (strcmp(r->scheme, "http") != 0) {
        /* ":scheme https" asks the proxy to speak TLS to the origin: a
         * client wanting https uses CONNECT. */
        h2http_refuse(c, OUT_CMD_UNSUPPORTED, "scheme-unsupported");
        return;
    }
    const struct config *cfg = conn_cfg(c);
    struct h2http *x = calloc(1, sizeof(*x));
    size_t rcap = cfg->http.max_header + RESP_HEAD_SLACK;
    if (x) {
        x->head = malloc(cfg->http.max_header);
        x->m = malloc(sizeof(*x->m));
        x->rhead = malloc(rcap);
    }
    if (!x || !x->head || !x->m || !x->rhead) {
        h2http_free(x);
        h2http_refuse(c, OUT_FAILED, "no-memory");
        return;
    }
    struct h2h1_req q = {r->method, r->authority, r->path,
                         r->fields, r->flen,      !h2stream_rx_done(c)};
    ssize_t n = h2h1_request_head(&q, x->head, cfg->http.max_header, &x->kind);
    if (n < 0) {
        h2http_free(x);
        h2http_refuse(c, OUT_BAD_REQUEST, "bad-request");
        return;
    }
    x->head_len = (size_t)n;
    uint8_t *fit = realloc(x->head, (size_t)n); /* a few hundred bytes, not max_header */
    if (fit)
        x->head = fit;
    x->req_done = x->kind == H2H1_BODY_NONE;
    h1h2_resp_init(&x->resp, x->rhead, rcap, strcmp(r->method, "HEAD") == 0);
    h2stream_set_http(c, x);
    conn_set_front(c, &front_h2_http);
    c->cmd = 0;
    c->cli_ev |= SIDE_RD; /* the head is there to read */
    front_h2_http.start(c);
}
