/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http.c: the HTTP proxy (RFC 9110/9112) on the same port as SOCKS: its
 * front, which reads and judges each request head.
 *
 *   CONNECT host:port   -> 200, then the byte relay (splice included)
 *   GET http://host/... -> the forwarding exchange (http_fwd.c): the
 *                          request goes upstream, the response comes
 *                          back, and the client connection waits for its
 *                          next request (HTTP/1.1 keep-alive)
 *
 * Heads are parsed whole by proto/http1.c and rewritten there
 * (http1_rewrite_request: hop-by-hop fields dropped, Host set from the
 * target, Via added). This file is the request head: its syntax,
 * Proxy-Authorization and the user's slot, where it goes (CONNECT, an
 * absolute-form request, or on a websocket= listener the tunnel or the
 * decoy, front_ws.c), and the answers and timers of the states before the
 * exchange (HTTP_HEAD, AUTH_WAIT). Every error is a real response with a
 * short text body (http_error(), http_fwd.c). The user a request
 * authenticates as holds the session's per-user slot, also when a later
 * request on the connection is another's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acl/limits.h"
#include "auth/auth.h"
#include "core/buf.h"
#include "crypto/fcrypto.h"
#include "proto/http1.h"
#include "relay/errmap.h"
#include "relay/front.h"
#include "relay/front_ws.h"
#include "relay/h2conn.h"
#include "relay/http_int.h"
#include "relay/session.h"

/* ---- answers ------------------------------------------------------------- */

/* The front's answer to a failure on the way (front_ops.fail_reply): the
 * status and text errmap.c gives the outcome. */
static void http_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    http_error(c, o, errmap_http_status(o), errmap_http_text(o), why);
}

/* A request ferry does not take: a 4xx is the client's malformed request,
 * a 5xx (a version or transfer coding not spoken here) a failure. */
static enum outcome http_refused_outcome(int status)
{
    return status < 500 ? OUT_BAD_REQUEST : OUT_FAILED;
}

/* ---- the session's state ------------------------------------------------- */

static void hflow_release(struct conn *c, struct hflow *f)
{
    buf_put(&c->w->bufs, f->in);
    buf_put(&c->w->bufs, f->out);
    f->in = f->out = NULL;
    f->pass = 0;
}

static void http_free(struct conn *c)
{
    struct http_state *h = c->http;
    if (!h)
        return;
    http_log(c);
    hflow_release(c, &h->req);
    hflow_release(c, &h->resp);
    free(h->head_copy);
    free(h);
    c->http = NULL;
}

/* ---- request heads --------------------------------------------------------- */

static void http_request(struct conn *c);

static void http_drive(struct conn *c, uint32_t up_events);

static void http_start(struct conn *c)
{
    struct http_state *h = calloc(1, sizeof(*h));
    if (!h) {
        conn_close_err(c, "no-memory", -ENOMEM);
        return;
    }
    c->http = h;
    conn_set_state(c, CONN_ST_HTTP_HEAD);
    http_drive(c, 0);
}

/* The head that goes upstream (http1_rewrite_request): origin-form target,
 * our Host and Via. Kept until the response starts: a stale pooled
 * connection is retried with it. */
static int build_request_head(struct conn *c, const struct http1_msg *m, size_t path_off,
                              const char *authority, size_t alen)
{
    struct http_state *h = c->http;
    struct buf *o = h->req.out = buf_get_cap(&c->w->bufs, http_out_cap(c));
    if (!o)
        return -ENOMEM;
    ssize_t n = http1_rewrite_request(m, path_off, authority, alen, conn_cfg(c)->http.via,
                                      h->websocket, buf_tail(o), buf_room(o));
    if (n < 0)
        return -E2BIG;
    o->end += (uint32_t)n;
    free(h->head_copy);
    h->head_copy = malloc(buf_len(o));
    if (h->head_copy) {
        memcpy(h->head_copy, buf_head(o), buf_len(o));
        h->head_copy_len = buf_len(o);
    }
    return 0;
}

static void http_on_auth(void *owner, int result);

/* A refused authentication: 407 for wrong or throttled credentials; 503
 * for an attempt never verified because the pool is saturated (not a
 * wrong password, and not counted as a failure). */
static void http_auth_refused(struct conn *c, int result)
{
    if (result == AUTH_BUSY) {
        http_error(c, OUT_LIMIT, 503, "ferry: authentication is busy; try again", "auth-busy");
        return;
    }
    http_error(c, OUT_AUTH_FAILED, 407, "ferry: proxy authentication failed",
               result == AUTH_THROTTLED ? "auth-throttled" : "auth-failed");
}

/* The user this request authenticated as holds the session's per-user slot
 * (limits.per_user) and is charged its bytes (limits.bandwidth_user). On a
 * keep-alive connection a request may be another user's than the one
 * before: the slot passes to that user, who must be admitted like a new
 * session. The same user again changes nothing. OUT_NONE, or the outcome
 * to refuse with (the former user's slot is given back all the same). */
static enum outcome http_admit_user(struct conn *c)
{
    if (c->lu && c->user && strcmp(c->lu->name, c->user) != 0)
        policy_release_user(c);
    /* Bandwidth follows by itself: the per-user bucket is found through
     * c->lu on every chunk, and http_fwd_start() (or the relay) starts a
     * limiter should the session have had none. */
    return policy_admit_user(c);
}

/* Basic credentials from a Proxy-Authorization field: the syntax is
 * proto's, the base64 decode libsodium's (crypto/), and the decoded copy is
 * wiped here whatever the verdict. Returns 0 or -1. */
int http_basic_value(const char *v, size_t vlen, char *user, size_t ucap, size_t *ulen, char *pass,
                     size_t pcap, size_t *plen)
{
    const char *tok;
    size_t tlen, n;
    uint8_t dec[HTTP1_BASIC_MAX];
    if (http1_basic_token(v, vlen, &tok, &tlen) < 0 ||
        fcrypto_base64_decode(dec, sizeof(dec), &n, tok, tlen) < 0)
        return -1; /* (a failed decode wipes dec itself) */
    int rc = http1_basic_split(dec, n, user, ucap, ulen, pass, pcap, plen);
    fcrypto_wipe(dec, sizeof(dec));
    return rc;
}

static int http_basic(const struct http1_header *pa, char *user, size_t ucap, size_t *ulen,
                      char *pass, size_t pcap, size_t *plen)
{
    return http_basic_value(pa->value, pa->vlen, user, ucap, ulen, pass, pcap, plen);
}

/* Parse the request head at the start of req.in into m and start the
 * exchange's bookkeeping for it. Returns 0, or -1 when the request was
 * answered (an error response). */
static int http_head_parse(struct conn *c, struct http1_msg *m, size_t headlen)
{
    struct http_state *h = c->http;
    int rc = http1_parse_request(buf_head(h->req.in), headlen, conn_cfg(c)->http.max_line, m);
    if (rc) {
        snprintf(h->method, sizeof(h->method), "-");
        int status = http1_error_status(rc);
        http_error(c, http_refused_outcome(status), status,
                   rc == HTTP1_E_SMUGGLING ? "ferry: ambiguous message framing"
                   : rc == HTTP1_E_CODING  ? "ferry: unsupported transfer coding"
                   : rc == HTTP1_E_VERSION ? "ferry: only HTTP/1.0 and HTTP/1.1 are spoken here"
                   : rc == HTTP1_E_URI_TOO_LONG ? "ferry: request line too long"
                   : rc == HTTP1_E_TOO_LARGE    ? "ferry: request header fields too large"
                                                : "ferry: malformed request",
                   "bad-request");
        return -1;
    }
    c->t_start = loop_now(&c->w->loop);
    c->t_start_us = clock_us();
    snprintf(h->method, sizeof(h->method), "%.*s", m->mlen < 20 ? (int)m->mlen : 20, m->method);
    h->status = 0;
    h->req_bytes = h->resp_bytes = 0;
    h->head_req = m->mlen == 4 && memcmp(m->method, "HEAD", 4) == 0;
    h->doubt = m->cl_repeated;
    h->empty = 0;
    /* RFC 9112 9.3: a proxy MUST NOT keep a connection with an HTTP/1.0
     * client persistent, keep-alive or not (a 1.0 proxy in front of it
     * may have forwarded that field blindly, and would wait for a close). */
    h->keepalive = m->minor == 1 && !m->conn_close;
    const struct http1_header *up = http1_find(m, "upgrade");
    h->websocket = m->upgrade && up && http1_has_token(up->value, up->vlen, "websocket");
    return 0;
}

/* Proxy-Authorization, when authentication is on: every request carries
 * it (a cached success makes that cheap); then the user's slot. Returns 0
 * to go on, or -1 when the request was answered or waits for a verdict
 * (state AUTH_WAIT: the head stays in req.in, parsed again then). */
static int http_head_auth(struct conn *c, const struct http1_msg *m)
{
    struct http_state *h = c->http;
    const struct config *cfg = conn_cfg(c);
    if (config_auth_enabled(cfg) && !h->authed) {
        const struct http1_header *pa = http1_find(m, "proxy-authorization");
        char user[256], pass[256];
        size_t ulen, plen;
        if (!pa || http_basic(pa, user, sizeof(user), &ulen, pass, sizeof(pass), &plen) < 0) {
            http_error(c, OUT_AUTH_FAILED, 407, "ferry: proxy authentication required",
                       "auth-required");
            return -1;
        }
        conn_set_user(c, user, ulen);
        struct auth_params p;
        config_auth_params(cfg, &p);
        int r = c->w->auth ? auth_begin(c->w->auth, &p, &c->client, user, ulen, pass, plen,
                                        http_on_auth, c, &c->auth)
                           : AUTH_BUSY;
        explicit_bzero(pass, sizeof(pass));
        if (r == AUTH_PENDING) {
            conn_set_state(c, CONN_ST_AUTH_WAIT);
            return -1;
        }
        if (r != AUTH_OK) {
            http_auth_refused(c, r);
            return -1;
        }
        h->authed = true;
    }
    if (h->authed) {
        c->authed = true;
        enum outcome o = http_admit_user(c);
        if (o == OUT_LIMIT) {
            http_error(c, OUT_LIMIT, 429, "ferry: too many sessions for this user", "user-limit");
            return -1;
        }
        if (o != OUT_NONE) {
            /* A quota: 403 with the reason, as the body and the log say. */
            bool bytes = c->why && strcmp(c->why, "quota-bytes") == 0;
            http_error(c, o, 403,
                       bytes ? "ferry: this user's quota is used up (bytes for this period)"
                             : "ferry: this user's quota is used up (sessions open at once)",
                       c->why);
            return -1;
        }
    }
    h->authed = false; /* the next request brings its own credentials */
    return 0;
}

/* Where the request goes (host, port), and what of it goes: CONNECT hands
 * the bytes behind the head to the tunnel; an absolute-form request is
 * rewritten into req.out with its body framing set. The head is consumed.
 * Returns HTTP_CONNECT or HTTP_FORWARD, or -1 when the request was
 * answered. */
static int http_head_target(struct conn *c, const struct http1_msg *m, size_t headlen, char *host,
                            size_t hcap, uint16_t *port)
{
    struct http_state *h = c->http;
    if (m->mlen == 7 && memcmp(m->method, "CONNECT", 7) == 0) {
        if (http1_parse_authority(m->target, m->tlen, host, hcap, port)) {
            http_error(c, OUT_BAD_REQUEST, 400, "ferry: CONNECT needs host:port", "bad-request");
            return -1;
        }
        buf_consume(h->req.in, (uint32_t)headlen);
        /* Bytes behind the head belong to the tunnel: hand them over. */
        if (buf_len(h->req.in)) {
            c->c2u.buf = h->req.in;
            h->req.in = NULL;
        }
        return HTTP_CONNECT;
    }
    size_t path_off;
    if (http1_parse_absolute(m->target, m->tlen, host, hcap, port, &path_off)) {
        bool https = m->tlen > 8 && strncasecmp(m->target, "https://", 8) == 0;
        http_error(c, OUT_BAD_REQUEST, 400,
                   https ? "ferry: use CONNECT for https (e.g. curl --proxytunnel)"
                         : "ferry: this is a proxy; send an absolute URI (http://host/path) or "
                           "CONNECT host:port",
                   "bad-request");
        return -1;
    }
    const char *auth_start = m->target + 7;
    size_t alen = (size_t)(m->target + path_off - auth_start);
    if (alen >= sizeof(h->authority)) {
        http_error(c, OUT_BAD_REQUEST, 400, "ferry: malformed request", "bad-request");
        return -1;
    }
    memcpy(h->authority, auth_start, alen);
    h->alen = (uint16_t)alen;
    if (build_request_head(c, m, path_off, auth_start, alen)) {
        http_error(c, OUT_BAD_REQUEST, 431, "ferry: request header fields too large",
                   "bad-request");
        return -1;
    }
    http1_body_request(&h->req.body, m);
    buf_consume(h->req.in, (uint32_t)headlen);
    h->scanned = 0;
    return HTTP_FORWARD;
}

/* An origin-form request on a websocket= listener (front_ws.h): the
 * HTTP/2 tunnel inside a WebSocket, the decoy, or an error. */
static void http_websocket(struct conn *c, int route, const char *key, size_t headlen)
{
    struct http_state *h = c->http;
    struct wslink *ws = NULL;
    switch ((enum front_ws_route)route) {
    case FRONT_WS_NONE:
        return;
    case FRONT_WS_NOT_FOUND:
        http_error(c, OUT_BAD_REQUEST, 404, "ferry: not found", "not-found");
        return;
    case FRONT_WS_BAD:
        http_error(c, OUT_BAD_REQUEST, 400, "ferry: malformed WebSocket handshake", "bad-request");
        return;
    case FRONT_WS_VERSION:
        http_error(c, OUT_BAD_REQUEST, 426, "ferry: WebSocket version 13 only", "bad-request");
        return;
    case FRONT_WS_DECOY:
        /* The request goes as it came, with what follows it. */
        h->method[0] = '\0'; /* the decoy's row logs the session */
        c->c2u.buf = h->req.in;
        h->req.in = NULL;
        http_free(c);
        conn_set_front(c, &front_ws_decoy);
        front_ws_decoy.start(c);
        return;
    case FRONT_WS_TUNNEL:
        ws = front_ws_link(key, buf_head(h->req.in) + headlen, buf_len(h->req.in) - headlen);
        h->status = 101;
        http_free(c); /* its access-log line: GET 101 */
        if (!ws) {
            conn_close_err(c, "no-memory", -ENOMEM);
            return;
        }
        h2conn_begin_ws(c, ws);
        return;
    }
}

/* A complete request head is at the start of req.in: judge it, then send
 * the request on its way. m is freed on one path, before anything that may
 * end the session. */
static void http_request_head(struct conn *c, size_t headlen)
{
    struct http1_msg *m = malloc(sizeof(*m));
    if (!m) {
        conn_close_err(c, "no-memory", -ENOMEM);
        return;
    }
    char host[256], key[WS_KEY_LEN + 1];
    uint16_t port = 0;
    int kind = -1, route = FRONT_WS_NONE;
    if (http_head_parse(c, m, headlen) == 0 &&
        (route = front_ws_route(c, m, key)) == FRONT_WS_NONE && http_head_auth(c, m) == 0)
        kind = http_head_target(c, m, headlen, host, sizeof(host), &port);
    free(m);
    if (route != FRONT_WS_NONE) {
        http_websocket(c, route, key, headlen);
        return;
    }
    if (kind < 0)
        return; /* answered, or waiting for an authentication verdict */
    c->http->kind = (uint8_t)kind;
    c->proxy_form = kind == HTTP_FORWARD; /* an HTTP parent takes it as a proxy */
    if (kind == HTTP_CONNECT) {
        c->cmd = CONN_CMD_CONNECT;
        http_dial(c, host, port);
        return;
    }
    http_forward_to(c, host, port);
}

static void http_on_auth(void *owner, int result)
{
    struct conn *c = owner;
    c->auth = NULL;
    if (result != AUTH_OK) {
        http_auth_refused(c, result);
        return;
    }
    /* Judge the head again, now as an authenticated request. */
    conn_set_state(c, CONN_ST_HTTP_HEAD);
    c->http->authed = true;
    http_request(c);
}

/* The buffer a request head is read into, able to hold cap bytes of it: a
 * session's first bytes are in c2u.buf (the protocol was sniffed there),
 * kept or moved over; later requests start in their own buffer. NULL when
 * memory is exhausted. */
static struct buf *http_head_buf(struct conn *c, uint32_t cap)
{
    struct http_state *h = c->http;
    if (h->req.in)
        return h->req.in;
    if (c->c2u.buf && cap <= c->c2u.buf->cap) {
        h->req.in = c->c2u.buf;
        c->c2u.buf = NULL;
        return h->req.in;
    }
    h->req.in = buf_get_cap(&c->w->bufs, cap + 1);
    if (h->req.in && c->c2u.buf) {
        memcpy(buf_tail(h->req.in), buf_head(c->c2u.buf), buf_len(c->c2u.buf));
        h->req.in->end += buf_len(c->c2u.buf);
        buf_put(&c->w->bufs, c->c2u.buf);
        c->c2u.buf = NULL;
    }
    return h->req.in;
}

/* Read and judge a request head (state HTTP_HEAD). */
static void http_request(struct conn *c)
{
    struct http_state *h = c->http;
    uint32_t cap = conn_cfg(c)->http.max_header;
    struct buf *b = http_head_buf(c, cap);
    if (!b) {
        conn_close_err(c, "no-memory", -ENOMEM);
        return;
    }
    for (;;) {
        /* RFC 9112 2.2: empty lines before a request line are ignored,
         * a few of them (HTTP1_EMPTY_LINES_MAX). */
        ssize_t skip = http1_empty_lines(buf_head(b), buf_len(b), HTTP1_EMPTY_LINES_MAX - h->empty);
        if (skip > 0) {
            buf_consume(b, (uint32_t)skip);
            h->empty = (uint8_t)(h->empty + skip / 2);
            h->scanned = 0;
        }
        ssize_t end = skip < 0 ? skip : http1_head_end(buf_head(b), buf_len(b), cap, &h->scanned);
        if (end > 0) {
            http_request_head(c, (size_t)end);
            return;
        }
        if (end < 0) {
            snprintf(h->method, sizeof(h->method), "-");
            int status = http1_error_status((int)end);
            http_error(c, http_refused_outcome(status), status,
                       end == HTTP1_E_TOO_LARGE ? "ferry: request header fields too large"
                                                : "ferry: malformed request",
                       "bad-request");
            return;
        }
        if (!(c->cli_ev & SIDE_RD) || h->req.eof)
            break;
        if (buf_room(b) == 0)
            buf_compact(b);
        uint32_t room = buf_room(b);
        if (room == 0)
            break;
        ssize_t n = conn_cli_recv(c, buf_tail(b), room);
        if (n > 0) {
            b->end += (uint32_t)n;
            if ((uint32_t)n < room && !(c->cli_ev & SIDE_RDHUP))
                c->cli_ev &= (uint8_t)~SIDE_RD;
        } else if (n == 0) {
            h->req.eof = true;
        } else if (errno == EAGAIN) {
            c->cli_ev &= (uint8_t)~SIDE_RD;
        } else if (errno != EINTR) {
            conn_close_err(c, "client-error", -errno);
            return;
        }
    }
    if (h->req.eof) {
        /* A client that leaves between requests ends a keep-alive session
         * normally; one that leaves mid-head does not. */
        if (buf_len(b)) {
            snprintf(h->method, sizeof(h->method), "-");
            conn_close(c, "truncated-request");
        } else {
            conn_close(c, "client-closed");
        }
    }
}

/* ---- after connecting ------------------------------------------------------ */

static void http_connected(struct conn *c)
{
    struct http_state *h = c->http;
    if (h->kind == HTTP_CONNECT) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        h->status = 200;
        c->reply = OUT_OK;
        conn_succeeded(c);
        int rc = conn_send_client(c, (const uint8_t *)ok, sizeof(ok) - 1);
        if (rc) {
            conn_close_err(c, "client-error", rc);
            return;
        }
        conn_relay_start(c);
        return;
    }
    http_fwd_connected(c);
}

static void http_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    if (!c->http)
        return;
    if (c->state == CONN_ST_HTTP_HEAD) {
        http_request(c);
    } else if (c->state == CONN_ST_HTTP_FWD) {
        http_forward(c);
        if (c->state != CONN_ST_CLOSED)
            relay_count_bytes(c); /* the metrics follow a long exchange as it goes */
    }
}

static void http_timeout(struct conn *c)
{
    struct http_state *h = c->http;
    switch ((enum conn_state)c->state) {
    case CONN_ST_HTTP_HEAD:
        if (h && h->req.in && buf_len(h->req.in)) {
            snprintf(h->method, sizeof(h->method), "-");
            http_error(c, OUT_BAD_REQUEST, 408, "ferry: request timeout", "handshake-timeout");
        } else {
            conn_close(c, "keepalive-timeout");
        }
        return;
    case CONN_ST_AUTH_WAIT:
        auth_abandon(c->auth);
        c->auth = NULL;
        /* not verified: no failure */
        http_error(c, OUT_LIMIT, 503, "ferry: authentication is busy; try again", "auth-timeout");
        return;
    case CONN_ST_HTTP_FWD:
        http_fwd_timeout(c);
        return;
    default:
        conn_close(c, "timeout");
        return;
    }
}

/* ---- the front row --------------------------------------------------------- */

const struct front_ops front_http = {
    .name = "http",
    .proto = PROTO_HTTP,
    .sp = SP_HTTP,
    .start = http_start,
    .drive = http_drive,
    .connected = http_connected,
    .fail_reply = http_fail_reply,
    .timeout = http_timeout,
    .end = http_free,
};
