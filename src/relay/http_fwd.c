/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_fwd.c: the forwarding exchange of the HTTP proxy. http.c reads a
 * request head; an absolute-form request comes here with its rewritten
 * head: it goes upstream in origin-form, the response comes back, and the
 * client connection waits for its next request (HTTP/1.1 keep-alive;
 * HTTP/1.0 clients are closed); idle upstream connections wait in a
 * per-worker pool (relay/upstream_pool.c, which upstream_may_pool()
 * guards), and a request that finds a pooled one stale is sent again once
 * on a fresh one. Through an HTTP parent the request goes to the parent in
 * absolute form instead (http_parent.c), and the parent's 407 is our 502.
 * This file is the exchange: the state machine, its answers and its timers.
 *
 * Bodies are forwarded verbatim, straight from the read buffer, while
 * http1_body_scan() tells where each message ends. Nothing is buffered
 * whole. Every error is a real response with a short text body, unless the
 * client already has (part of) the origin's response: then the connection
 * closes without another. Each response gets one access-log line.
 *
 * While a response is owed, the origin may stay silent for [http]
 * response_timeout (a client that does not read is backpressure, not
 * silence); while a request body is owed, the client may stay silent for
 * [http] body_timeout (an origin that does not read it is the origin's
 * stall). Whichever side stalled is named in the log: client-timeout (408
 * while the client has nothing of the response) or upstream-timeout (504).
 * Bytes are counted as forwarded, heads included, in the session's c2u and
 * u2c (the relay's counters); each access-log line shows its request's
 * share. Forwarded bytes obey the bandwidth limits like relayed ones:
 * request bodies and responses are read only as fast as policy_bw_allow()
 * lets them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "proto/http1.h"
#include "relay/errmap.h"
#include "relay/http_int.h"
#include "relay/http_parent.h"
#include "relay/outbound.h"
#include "relay/session.h"
#include "relay/upstream_pool.h"

/* Under bandwidth limits, reads ask for at most HTTP_BW_CHUNK; paused by
 * the limiter, the exchange looks again every HTTP_BW_POLL_MS (the
 * limiter's own timer resumes only the byte relay, see conn_resume()). A
 * bucket holds at least 64 KiB and a quarter second of tokens, so those
 * that come in after the limiter's timer and before the next look are
 * kept: pausing this way loses no throughput. */
#define HTTP_BW_CHUNK   (16 * 1024)
#define HTTP_BW_POLL_MS 50

/* http_response_head(): the parent proxy answered 407 (not forwarded). */
#define HTTP_PARENT_407 1

/* ---- the pool -------------------------------------------------------------- */

/* The pool's idle time: the worker's current configuration, so a reload
 * applies to connections already idle. */
static uint32_t pool_idle_ms(void *ctx)
{
    struct worker *w = ctx;
    return w->cur->cfg->http.pool_idle_ms;
}

void http_pool_fini(struct worker *w)
{
    upstream_pool_free(w->http);
    w->http = NULL;
}

/* The pool key of an upstream connection to the current "host:port" that
 * left by outbound ob: a listener's source= (or device=) is another way
 * out for the outbounds without a source of their own, so a connection
 * made from it is never handed to a session of another listener. */
static void pool_key(const struct conn *c, uint16_t ob, char *key, size_t len)
{
    const struct config *cfg = conn_cfg(c);
    const struct outbound_source *ls =
        c->listen_index < cfg->nlisten ? &cfg->listen[c->listen_index].source : NULL;
    const struct outbound_source *os = &cfg->outbounds[ob].source;
    if (ls && (ls->addr.family || ls->device[0]) && !os->addr.family && !os->device[0])
        snprintf(key, len, "%s@%u/%u", c->http->key, ob, c->listen_index);
    else
        snprintf(key, len, "%s@%u", c->http->key, ob);
}

/* Give the session's upstream connection to the pool (or close it). */
static void pool_put(struct conn *c)
{
    struct worker *w = c->w;
    int fd = c->up.fd;
    if (fd < 0)
        return;
    uint32_t max = conn_cfg(c)->http.pool_size;
    if (max && !w->http)
        w->http = upstream_pool_new(&w->loop, pool_idle_ms, w);
    loop_io_del(&w->loop, &c->up);
    /* A connection straight to the origin is kept under a key that names
     * the outbound it left by (a source address makes it another way
     * out); one to an HTTP parent taking requests in absolute form, under
     * the parent's key (requests to any origin share it). A tunnel
     * through any other parent is not kept: its key would have to name
     * both ends, and the pool checks the peer's address against the rules,
     * which would be the parent's. */
    char key[UPSTREAM_KEY_MAX + 12];
    pool_key(c, c->ob, key, sizeof(key));
    bool direct = conn_cfg(c)->outbounds[c->ob].kind == OUTBOUND_KIND_DIRECT;
    bool parent = c->http->to_parent && http_parent_key(conn_cfg(c), c->ob, key, sizeof(key)) == 0;
    if (!max || !w->http || !(direct || parent) || strlen(key) >= UPSTREAM_KEY_MAX) {
        close(fd);
        return;
    }
    upstream_pool_put(w->http, fd, key, max);
}

/* ---- answers ------------------------------------------------------------- */

/* Has the client been given, or is it owed, bytes of the origin's answer?
 * Then no answer of ours can follow: it would be taken for the rest of
 * that one, or for the answer to the client's next request. */
static bool http_answered(const struct http_state *h)
{
    return h->resp_head || (h->resp.out && buf_len(h->resp.out));
}

static void http_abort(struct conn *c, const char *why, int err);

/* A complete error response with a short text body, then a lingering close;
 * or, once http_answered(), only the close (http_abort). */
void http_error(struct conn *c, enum outcome o, int status, const char *text, const char *why)
{
    if (c->http && http_answered(c->http)) {
        http_abort(c, why, c->err); /* e.g. the origin's 413, then its reset */
        return;
    }
    char msg[1024], retry[40] = "";
    unsigned after = errmap_http_retry_after(o);
    if (after && status == errmap_http_status(o))
        snprintf(retry, sizeof(retry), "Retry-After: %u\r\n", after);
    const char *extra = status == 407   ? "Proxy-Authenticate: Basic realm=\"ferry\"\r\n"
                        : status == 426 ? "Sec-WebSocket-Version: 13\r\n" /* RFC 6455 4.4 */
                                        : retry;
    int body = (int)strlen(text) + 1;
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %d\r\n%sConnection: close\r\n\r\n%s\n",
                     status, http1_reason(status), body, extra, text);
    if (c->http)
        c->http->status = status;
    c->why = why;
    conn_set_outcome(c, o);
    stat_add(&c->w->stats.http_errors, 1);
    int rc = conn_send_client(c, (const uint8_t *)msg, (size_t)n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    conn_linger(c);
}

/* ---- the access log ------------------------------------------------------ */

/* One line per request: the method marks a request not logged yet. */
void http_log(struct conn *c)
{
    struct http_state *h = c->http;
    if (!h || !h->method[0])
        return;
    char reply[16];
    snprintf(reply, sizeof(reply), "%d", h->status);
    /* This request's share of the session's bytes (a queued reply of ours
     * may hold a counter below its base for a while: then none). */
    uint64_t up = c->c2u.bytes, down = c->u2c.bytes;
    c->c2u.bytes = up > h->up_base ? up - h->up_base : 0;
    c->u2c.bytes = down > h->down_base ? down - h->down_base : 0;
    conn_access_log(c, h->method, h->status ? reply : "-");
    c->c2u.bytes = up;
    c->u2c.bytes = down;
    h->method[0] = '\0';
}

/* ---- forwarding -------------------------------------------------------------- */

/* One send to c->up (up) or the client, or -errno; -EAGAIN with *want, the readiness it waits
 * for. c->up of a stream outbound (an HTTPS parent's TLS, outbound.h) is
 * written through the outbound's call. */
static ssize_t hflow_send(struct conn *c, bool up, const uint8_t *p, size_t len, uint8_t *want)
{
    if (up && c->out->write) /* a stream outbound: TLS, or an HTTP/2 stream (no fd) */
        return c->out->write(c, p, len, want);
    *want = SIDE_WR;
    ssize_t n = up ? send(c->up.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : conn_cli_send(c, p, len);
    return n < 0 ? -errno : n;
}

/* Send out, then the cleared body bytes of in, to c->up (up) or the
 * client; add what went to
 * *total (the session's count, heads included) and the body bytes to
 * *count. Returns 0 when all went, 1 when fd is full, or -errno. */
static int hflow_flush(struct conn *c, struct hflow *f, bool up, uint8_t *ev, uint64_t *count,
                       uint64_t *total)
{
    uint8_t want;
    while (f->out && buf_len(f->out)) {
        if (!(*ev & SIDE_WR))
            return 1;
        ssize_t n = hflow_send(c, up, buf_head(f->out), buf_len(f->out), &want);
        if (n < 0) {
            if (n == -EAGAIN) {
                *ev &= (uint8_t)~want;
                return 1;
            }
            if (n == -EINTR)
                continue;
            return (int)n;
        }
        buf_consume(f->out, (uint32_t)n);
        *total += (uint64_t)n;
    }
    while (f->pass) {
        if (!(*ev & SIDE_WR))
            return 1;
        ssize_t n = hflow_send(c, up, buf_head(f->in), f->pass, &want);
        if (n < 0) {
            if (n == -EAGAIN) {
                *ev &= (uint8_t)~want;
                return 1;
            }
            if (n == -EINTR)
                continue;
            return (int)n;
        }
        buf_consume(f->in, (uint32_t)n);
        f->pass -= (uint32_t)n;
        *count += (uint64_t)n;
        *total += (uint64_t)n;
    }
    return 0;
}

/* Read from fd into f->in, no more than the bandwidth limits allow now.
 * Returns bytes read, 0 (nothing now, or EOF: see f->eof; or nothing
 * allowed: *paused is set, and reading waits for the limiter), or -errno. */
static ssize_t hflow_read(struct conn *c, struct hflow *f, bool up, uint8_t *ev, uint32_t cap,
                          bool *paused)
{
    /* c->up of a stream outbound: read through its call, and bytes it
     * holds decrypted count as readable (epoll will not say so again). */
    bool stream = up && c->out->read;
    if ((!(*ev & SIDE_RD) && !(stream && c->out->pending && c->out->pending(c))) || f->eof)
        return 0;
    if (!f->in && !(f->in = buf_get_cap(&c->w->bufs, cap)))
        return -ENOMEM;
    if (buf_room(f->in) == 0)
        buf_compact(f->in);
    uint32_t room = buf_room(f->in);
    if (room == 0)
        return 0;
    /* Asked only when a read is due, as the relay does: a refusal arms the
     * limiter's timer and counts a pause. Bytes wait in the kernel
     * meanwhile, which pushes back on the sender. */
    uint32_t allow = policy_bw_allow(c, c->bw && room > HTTP_BW_CHUNK ? HTTP_BW_CHUNK : room);
    if (!allow) {
        *paused = true;
        return 0;
    }
    if (allow < room)
        room = allow;
    for (;;) {
        uint8_t want = SIDE_RD;
        ssize_t n = stream ? c->out->read(c, buf_tail(f->in), room, &want)
                    : up   ? recv(c->up.fd, buf_tail(f->in), room, 0)
                           : conn_cli_recv(c, buf_tail(f->in), room);
        if (n < 0 && !stream)
            n = -errno;
        if (n > 0) {
            policy_bw_spend(c, (uint32_t)n);
            f->in->end += (uint32_t)n;
            /* A short read empties a socket, not TLS (a record at a time). */
            if ((uint32_t)n < room && !(*ev & SIDE_RDHUP) && !stream)
                *ev &= (uint8_t)~SIDE_RD;
            return n;
        }
        if (n == 0) {
            f->eof = true;
            return 0;
        }
        if (n == -EAGAIN) {
            *ev &= (uint8_t)~want;
            return 0;
        }
        if (n != -EINTR)
            return n;
    }
}

/* Judge body bytes of f->in beyond those already cleared. */
static int hflow_scan(struct hflow *f)
{
    if (!f->in || f->body.done)
        return 0;
    uint32_t avail = buf_len(f->in) - f->pass;
    if (!avail)
        return 0;
    ssize_t n = http1_body_scan(&f->body, buf_head(f->in) + f->pass, avail);
    if (n < 0)
        return (int)n;
    f->pass += (uint32_t)n;
    return 0;
}

/* Send what is queued for the client, then the lingering close (while the
 * client's socket is full, this runs again on its next event). */
static void http_abort_flush(struct conn *c)
{
    struct http_state *h = c->http;
    uint64_t before = c->u2c.bytes;
    int rc = hflow_flush(c, &h->resp, false, &c->cli_ev, &h->resp_bytes, &c->u2c.bytes);
    if (rc < 0)
        conn_close(c, c->why); /* the client is gone too: the first error is the one logged */
    else if (rc == 0)
        conn_linger(c);
    else if (c->u2c.bytes != before)
        c->last_active = loop_now(&c->w->loop);
}

/* The exchange failed once http_answered() (state HTTP_FWD): end the
 * connection without a response of our own. The access log keeps the
 * status the client got. */
static void http_abort(struct conn *c, const char *why, int err)
{
    struct http_state *h = c->http;
    c->why = why;
    c->err = err;
    h->closing = true;
    h->owed = h->body_wait = h->paused = false;
    conn_close_fd(&c->up);
    /* From here on only the client's reading matters: iotimeout, if any. */
    c->last_active = loop_now(&c->w->loop);
    conn_arm_idle(c);
    http_abort_flush(c);
}

/* The response head is complete in resp.in: rewrite it into resp.out. */
static int http_response_head(struct conn *c, size_t headlen)
{
    struct http_state *h = c->http;
    struct http1_msg *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    int rc = http1_parse_response(buf_head(h->resp.in), headlen, m);
    if (rc) {
        free(m);
        return rc;
    }
    if (h->to_parent && m->status == 407) {
        free(m);
        return HTTP_PARENT_407; /* the parent's own credentials: not the client's business */
    }
    bool informational = m->status >= 100 && m->status < 200 && m->status != 101;
    bool switching = m->status == 101 && h->websocket;
    if (m->status == 101 && !h->websocket) {
        free(m);
        return HTTP1_E_BAD; /* an upgrade nobody asked for */
    }
    h->doubt |= m->cl_repeated;
    if (!informational) {
        h->status = m->status;
        http1_body_response(&h->resp.body, m, h->head_req);
        if (h->resp.body.kind == HTTP1_BODY_CLOSE)
            h->keepalive = false; /* only the close can end it for the client too */
        h->up_reuse = !m->conn_close && (m->minor == 1 || m->conn_keepalive) &&
                      h->resp.body.kind != HTTP1_BODY_CLOSE && !switching;
    }
    struct buf *o =
        h->resp.out ? h->resp.out : (h->resp.out = buf_get_cap(&c->w->bufs, http_out_cap(c)));
    if (!o) {
        free(m);
        return -ENOMEM;
    }
    ssize_t n = http1_rewrite_response(m, conn_cfg(c)->http.via, switching, h->keepalive,
                                       buf_tail(o), buf_room(o));
    free(m);
    if (n < 0)
        return HTTP1_E_TOO_LARGE;
    o->end += (uint32_t)n;
    buf_consume(h->resp.in, (uint32_t)headlen);
    h->scanned = 0;
    if (!informational)
        h->resp_head = true;
    if (switching)
        h->kind = HTTP_CONNECT; /* from here on, bytes both ways */
    return 0;
}

/* Both messages are done: log, then wait for the next request or close. */
static void http_exchange_done(struct conn *c)
{
    struct http_state *h = c->http;
    c->why = "done";
    http_log(c);
    c->why = NULL;
    /* The next request starts here: should it fail before its head is
     * parsed, its own line shows its own status and time. */
    h->status = 0;
    h->req_bytes = h->resp_bytes = 0;
    h->up_base = c->c2u.bytes;
    h->down_base = c->u2c.bytes;
    c->t_start = loop_now(&c->w->loop);
    free(h->head_copy);
    h->head_copy = NULL;
    /* Reusable only if the upstream said nothing beyond its response. */
    struct upstream_end end = {.reusable = h->up_reuse,
                               .doubt = h->doubt,
                               .req_done = h->req.body.done,
                               .resp_eof = h->resp.eof,
                               .unread = h->resp.in ? buf_len(h->resp.in) : 0};
    bool up_ok = upstream_may_pool(&end);
    h->doubt = false;
    if (up_ok)
        pool_put(c);
    else
        conn_close_fd(&c->up);
    /* The dial is over: what its row held (a parent's handshake state)
     * goes, since the next request may leave by another row. */
    c->out->close(c);
    buf_put(&c->w->bufs, h->resp.in);
    buf_put(&c->w->bufs, h->resp.out);
    buf_put(&c->w->bufs, h->req.out);
    h->resp.in = h->resp.out = h->req.out = NULL;
    h->resp.pass = h->req.pass = 0;
    h->resp.eof = false;
    h->resp_head = false;
    h->to_parent = false;
    h->kind = HTTP_NONE;
    c->reply = OUT_NONE;
    c->target = (struct addr){0};
    if (!h->keepalive || h->req.eof) {
        conn_close(c, "done");
        return;
    }
    /* What the client sent behind the request is the next one. */
    if (h->req.in && buf_len(h->req.in) == 0) {
        buf_put(&c->w->bufs, h->req.in);
        h->req.in = NULL;
    }
    conn_set_state(c, CONN_ST_HTTP_HEAD);
    loop_timer_arm(&c->w->loop, &c->timer, conn_cfg(c)->http.keepalive_ms);
    loop_defer(&c->w->loop, &c->task); /* a pipelined request may be waiting */
}

/* A pooled connection that turns out closed before any response byte: the
 * request is sent again on a fresh one, once, when nothing of a body has
 * gone yet. (So a failed redial never finds the client owed bytes.) */
static bool http_retry(struct conn *c)
{
    struct http_state *h = c->http;
    if (!h->reused || h->retried || http_answered(h) || (h->resp.in && buf_len(h->resp.in)) ||
        !h->head_copy || h->req_bytes)
        return false;
    h->retried = true;
    h->reused = false;
    conn_close_fd(&c->up);
    /* The head counts once, as sent to the connection that answers. */
    uint32_t unsent = h->req.out ? buf_len(h->req.out) : 0;
    uint64_t sent = h->head_copy_len > unsent ? h->head_copy_len - unsent : 0;
    c->c2u.bytes = c->c2u.bytes > sent ? c->c2u.bytes - sent : 0;
    buf_put(&c->w->bufs, h->req.out);
    h->req.out = buf_get_cap(&c->w->bufs, http_out_cap(c));
    if (!h->req.out)
        return false;
    memcpy(buf_tail(h->req.out), h->head_copy, h->head_copy_len);
    h->req.out->end += h->head_copy_len;
    h->resp.eof = false;
    struct addr ip;
    const char *host = c->dst_name;
    bool is_ip = host && addr_parse_ip(host, c->dst_port, &ip) == 0;
    conn_dial(c, is_ip ? NULL : host, &ip, c->dst_port);
    return true;
}

/* Bytes of f waiting to be sent. */
static uint32_t hflow_pending(const struct hflow *f)
{
    return (f->out ? buf_len(f->out) : 0) + f->pass;
}

static uint64_t min_deadline(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* The one deadline state HTTP_FWD owns, 0 for none: the earliest of the
 * origin's silence while it owes the response (response_timeout), the
 * client's silence while it owes the request body (body_timeout), the
 * exchange's inactivity (iotimeout), and the next look at the bandwidth
 * limiter while paused by it. */
static uint64_t http_fwd_deadline(const struct conn *c)
{
    const struct http_state *h = c->http;
    const struct config *cfg = conn_cfg(c);
    uint32_t idle = conn_iotimeout(c);
    uint64_t d = idle ? c->last_active + idle : 0;
    if (h->owed)
        d = min_deadline(d, h->origin_since + cfg->http.response_ms);
    if (h->body_wait)
        d = min_deadline(d, h->client_since + cfg->http.body_ms);
    if (h->paused)
        d = min_deadline(d, loop_now(&c->w->loop) + HTTP_BW_POLL_MS);
    return d;
}

/* Bring the timer forward to the deadline if that is earlier. A later
 * deadline is left to the timer: when it fires, http_timeout() looks at
 * what has expired and re-arms (coarse, as the relay's idle accounting:
 * no heap update for every byte). */
static void http_fwd_arm(struct conn *c)
{
    uint64_t d = http_fwd_deadline(c);
    if (d && (!timer_armed(&c->timer) || c->timer.node.key > d))
        loop_timer_arm_at(&c->w->loop, &c->timer, d);
}

/* The exchange is blocked until the next event: say what on, for the
 * timer. The origin owes the response once it has the whole request or
 * has started to answer (or does not take the request): while then nothing
 * comes from it for response_timeout, it is silent. Not while the client
 * holds the response back by not reading it (backpressure), nor while the
 * limiter pauses reading it, nor while the client is still sending its
 * body: then the origin may rightly wait. The client owes the rest of its
 * body while nothing of it waits to go upstream (an origin that does not
 * take it is the origin's stall) and the limiter is not what holds it:
 * while then nothing comes from it for body_timeout, it is silent (after
 * Expect: 100-continue too). Both may owe at once (an early response). */
static void http_fwd_blocked(struct conn *c, bool up_full, bool cli_full, bool req_paused,
                             bool resp_paused)
{
    struct http_state *h = c->http;
    uint64_t now = loop_now(&c->w->loop);
    bool resp_done = h->resp_head && h->resp.body.done;
    bool req_sent = h->req.body.done && !hflow_pending(&h->req);
    bool resp_started = h->resp_head || (h->resp.in && buf_len(h->resp.in));
    bool owed = !resp_done && !cli_full && !resp_paused && (req_sent || resp_started || up_full);
    bool body_wait = !h->req.body.done && !hflow_pending(&h->req) && !req_paused;
    if (owed && !h->owed)
        h->origin_since = now; /* the wait starts now */
    if (body_wait && !h->body_wait)
        h->client_since = now;
    h->owed = owed;
    h->body_wait = body_wait;
    h->cli_full = cli_full;
    h->paused = req_paused || resp_paused;
    http_fwd_arm(c);
}

/* What one round of http_forward() saw, for the timer when it stops. */
struct fwd_round {
    bool progress, origin, client;
    bool up_full, cli_full, req_paused, resp_paused;
};

/* How a half of a round ends: go on, start the next round at once (a
 * response head was rewritten), or stop (the session moved on: an answer,
 * a close, a retry, the tunnel, the next request). */
enum fwd_step { FWD_ON, FWD_AGAIN, FWD_END };

/* Client -> upstream: the head, then the body. */
static enum fwd_step http_fwd_request(struct conn *c, struct fwd_round *r)
{
    struct http_state *h = c->http;
    uint32_t pending = hflow_pending(&h->req);
    int rc = hflow_flush(c, &h->req, true, &c->up_ev, &h->req_bytes, &c->c2u.bytes);
    r->origin |= rc >= 0 && hflow_pending(&h->req) != pending; /* the origin takes bytes */
    r->up_full = rc == 1;
    if (rc < 0) {
        if (!http_retry(c)) {
            c->err = rc;
            http_error(c, OUT_FAILED, 502, "ferry: the destination closed the connection",
                       "upstream-error");
        }
        return FWD_END;
    }
    if (h->req.body.done || h->req.pass != 0)
        return FWD_ON;
    if (h->req.in && buf_len(h->req.in)) {
        if (hflow_scan(&h->req) < 0) {
            http_error(c, OUT_BAD_REQUEST, 400, "ferry: bad chunked request body", "bad-request");
            return FWD_END;
        }
        r->progress |= h->req.pass > 0;
        return FWD_ON;
    }
    ssize_t n = hflow_read(c, &h->req, false, &c->cli_ev, conn_cfg(c)->buffer_size, &r->req_paused);
    if (n < 0) {
        conn_close_err(c, "client-error", (int)n);
        return FWD_END;
    }
    if (n == 0 && h->req.eof && !h->req.body.done) {
        conn_close(c, "client-closed"); /* gone mid-body */
        return FWD_END;
    }
    r->progress |= n > 0;
    r->client |= n > 0;
    return FWD_ON;
}

/* A WebSocket switched: what is left of both buffers goes through the
 * relay like any tunnel bytes. */
static void http_fwd_switch(struct conn *c)
{
    struct http_state *h = c->http;
    loop_timer_stop(&c->w->loop, &c->timer);
    if (h->req.in && buf_len(h->req.in)) {
        c->c2u.buf = h->req.in;
        h->req.in = NULL;
    }
    if (h->resp.in && buf_len(h->resp.in)) {
        c->u2c.buf = h->resp.in;
        h->resp.in = NULL;
    }
    conn_relay_start(c);
}

/* Read from the upstream: a head (bounded by max_header) or body bytes. */
static enum fwd_step http_fwd_read_response(struct conn *c, struct fwd_round *r)
{
    struct http_state *h = c->http;
    uint32_t cap = h->resp_head ? conn_cfg(c)->buffer_size : conn_cfg(c)->http.max_header + 1;
    ssize_t n = hflow_read(c, &h->resp, true, &c->up_ev, cap, &r->resp_paused);
    if (n < 0) {
        if (http_retry(c))
            return FWD_END;
        c->err = (int)n;
        if (h->resp_head)
            conn_close_err(c, "upstream-error", (int)n);
        else
            http_error(c, OUT_FAILED, 502, "ferry: the destination closed the connection",
                       "upstream-error");
        return FWD_END;
    }
    if (n == 0 && h->resp.eof) {
        if (h->resp_head && h->resp.body.kind == HTTP1_BODY_CLOSE) {
            h->resp.body.done = true;
            r->progress = true;
        } else if (!h->resp_head) {
            if (!http_retry(c))
                http_error(c, OUT_FAILED, 502, "ferry: the destination closed without a response",
                           "upstream-closed");
            return FWD_END;
        } else {
            conn_close(c, "upstream-closed"); /* cut short mid-body */
            return FWD_END;
        }
    }
    r->progress |= n > 0;
    r->origin |= n > 0 || h->resp.eof;
    return FWD_ON;
}

/* Upstream -> client: heads (1xx first), then the body. */
static enum fwd_step http_fwd_response(struct conn *c, struct fwd_round *r)
{
    struct http_state *h = c->http;
    int rc = hflow_flush(c, &h->resp, false, &c->cli_ev, &h->resp_bytes, &c->u2c.bytes);
    if (rc < 0) {
        conn_close_err(c, "client-error", rc);
        return FWD_END;
    }
    if (c->out->credit)
        c->out->credit(c); /* an HTTP/2 parent's stream: credit for what reached the client */
    r->cli_full = rc == 1;
    if (h->kind == HTTP_CONNECT && rc == 0) {
        http_fwd_switch(c);
        return FWD_END;
    }
    if (rc != 0 || h->resp.pass)
        return FWD_ON;
    if (h->resp_head && h->resp.body.done) {
        if (h->req.body.done) {
            http_exchange_done(c);
            return FWD_END;
        }
    } else if (h->resp.in && buf_len(h->resp.in) && !h->resp_head) {
        ssize_t end = http1_head_end(buf_head(h->resp.in), buf_len(h->resp.in),
                                     conn_cfg(c)->http.max_header, &h->scanned);
        int hrc = end > 0 ? http_response_head(c, (size_t)end) : 0;
        if (hrc == HTTP_PARENT_407) {
            http_parent_refused_log(c);
            http_error(c, OUT_FAILED, 502, "ferry: the parent proxy refused ferry's credentials",
                       "parent-auth-failed");
            return FWD_END;
        }
        if (end < 0 || hrc < 0) {
            c->err = 0;
            http_error(c, OUT_FAILED, 502, "ferry: the destination sent a malformed response",
                       "bad-response");
            return FWD_END;
        }
        if (end > 0) {
            r->progress = true;
            return FWD_AGAIN;
        }
    } else if (h->resp_head && h->resp.in && buf_len(h->resp.in)) {
        if (hflow_scan(&h->resp) < 0) {
            conn_close(c, "bad-response"); /* mid-body: no clean answer left */
            return FWD_END;
        }
        r->progress |= h->resp.pass > 0;
    }
    if (!h->resp.pass && !(h->resp_head && h->resp.body.done))
        return http_fwd_read_response(c, r);
    return FWD_ON;
}

/* Move both messages of the exchange (state HTTP_FWD) as far as they go,
 * for a bounded number of rounds; then wait for an event (saying what on,
 * for the timer) or yield to the other sessions. */
void http_forward(struct conn *c)
{
    struct http_state *h = c->http;
    if (h->closing) {
        http_abort_flush(c);
        return;
    }
    h->paused = false; /* each pass asks the limiter again */
    for (int round = 0; round < 64; round++) {
        struct fwd_round r = {0};
        enum fwd_step step = http_fwd_request(c, &r);
        if (step == FWD_ON)
            step = http_fwd_response(c, &r);
        if (step == FWD_END)
            return;
        if (step == FWD_AGAIN)
            continue;
        if (r.origin)
            h->origin_since = loop_now(&c->w->loop);
        if (r.client)
            h->client_since = loop_now(&c->w->loop);
        if (!r.progress) {
            http_fwd_blocked(c, r.up_full, r.cli_full, r.req_paused, r.resp_paused);
            return;
        }
        c->last_active = loop_now(&c->w->loop);
    }
    loop_defer(&c->w->loop, &c->task); /* yield to the other sessions */
}

/* ---- starting the exchange -------------------------------------------------- */

/* The request goes upstream; the response is waited for, bounded by
 * response_timeout while the origin owes it and by iotimeout like any
 * relayed traffic (see http_fwd_deadline()). */
static void http_fwd_start(struct conn *c)
{
    struct http_state *h = c->http;
    conn_set_state(c, CONN_ST_HTTP_FWD);
    c->last_active = loop_now(&c->w->loop);
    h->origin_since = h->client_since = c->last_active;
    h->owed = h->body_wait = h->cli_full = h->paused = false;
    loop_timer_stop(&c->w->loop, &c->timer); /* the connect deadline is over */
    policy_bw_start(c);
    http_forward(c);
}

/* A name is resolved by the dial; an address literal is dialled as it is. */
void http_dial(struct conn *c, const char *host, uint16_t port)
{
    struct addr ip;
    bool is_ip = addr_parse_ip(host, port, &ip) == 0;
    conn_dial(c, is_ip ? NULL : host, &ip, port);
}

/* The request head goes to an HTTP parent (c->ob): put it in absolute form
 * (http_parent.c). False when it could not be (answered: 502). */
static bool http_to_parent(struct conn *c)
{
    struct http_state *h = c->http;
    int rc = http_parent_head(c, &h->req.out, http_out_cap(c), h->authority, h->alen);
    if (rc) {
        c->err = rc;
        http_error(c, OUT_FAILED, 502, "ferry: the request cannot be sent to the parent proxy",
                   "parent-request");
        return false;
    }
    h->to_parent = true;
    return true;
}

/* A plain request the name's rule sends through the HTTP parent ob: to an
 * idle connection to that parent when the pool has one, else dialled (the
 * address's rule may still choose another way, after a resolve). */
static void http_forward_parent(struct conn *c, const char *host, uint16_t port, uint16_t ob)
{
    struct http_state *h = c->http;
    int fd = http_parent_take(c, host, port, ob);
    if (fd >= 0) {
        if (loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) == 0) {
            stat_add(&c->w->stats.http_pool_hits, 1);
            h->reused = true;
            if (!http_to_parent(c))
                return;
            conn_succeeded(c);
            c->up_ev = SIDE_WR;
            http_fwd_start(c);
            return;
        }
        close(fd);
    }
    h->reused = false;
    http_dial(c, host, port);
}

/* A forwarded request goes to an idle connection to the same place when
 * the pool has one (that saves a connect), else to a new one. */
void http_forward_to(struct conn *c, const char *host, uint16_t port)
{
    struct http_state *h = c->http;
    h->to_parent = false; /* until this request's connection says otherwise */
    snprintf(h->key, sizeof(h->key), "%s:%u", host, port);
    free(c->dst_name);
    c->dst_name = strdup(host);
    c->dst_port = port;
    /* The outbound the name's rule picks; an address rule (after a
     * resolve) may pick another, and then the session dials. */
    int32_t rule;
    uint16_t ob = conn_cfg(c)->default_outbound;
    bool allowed = policy_eval(c, 0, host, NULL, port, &rule) == POLICY_ALLOW;
    if (allowed)
        ob = conn_via(c, rule);
    /* Only a request its name's rule allows may take a pooled parent
     * connection; any other goes to the dial, which judges it. */
    if (allowed && conn_cfg(c)->outbounds[ob].kind == OUTBOUND_KIND_HTTP) {
        http_forward_parent(c, host, port, ob);
        return;
    }
    char key[UPSTREAM_KEY_MAX + 12];
    pool_key(c, ob, key, sizeof(key));
    struct addr peer;
    int fd = strlen(key) < UPSTREAM_KEY_MAX ? upstream_pool_take(c->w->http, key, &peer) : -1;
    if (fd >= 0 && policy_dest(c, 0, host, &peer, port) != POLICY_ALLOW) {
        close(fd); /* the rules changed, or this address is no longer wanted */
        c->target = peer;
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    if (fd >= 0 && c->ob_rule != ob) {
        close(fd); /* the address's rule sends it another way */
        fd = -1;
    }
    if (fd >= 0) {
        c->ob = ob;
        c->dialed = true;
        if (loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) == 0) {
            stat_add(&c->w->stats.http_pool_hits, 1);
            conn_succeeded(c);
            h->reused = true;
            c->target = peer;
            c->up_ev = SIDE_WR;
            http_fwd_start(c);
            return;
        }
        close(fd);
    }
    h->reused = false;
    http_dial(c, host, port);
}

/* The outbound reached the origin (or the parent) of a forwarded request. */
void http_fwd_connected(struct conn *c)
{
    struct http_state *h = c->http;
    /* The exchange reads and writes c->up itself, through the row's stream
     * calls when it carries a byte stream of its own (hflow_send(),
     * hflow_read(): an HTTPS parent's TLS). */
    h->to_parent = false;
    if (outbound_proxy_form(c) && !http_to_parent(c))
        return;
    conn_succeeded(c);
    c->up_ev = SIDE_WR;
    http_fwd_start(c);
}

/* ---- timeouts ---------------------------------------------------------------- */

/* The exchange waited too long for one side: say which. The client (its
 * body, or reading the response): 408 while it has nothing of the
 * response (RFC 9110 15.5.9), else the close (at once if it does not
 * read). The origin: 504, or the close once the client has part of the
 * response (http_error knows). */
static void http_stalled(struct conn *c, bool client)
{
    if (!client) {
        http_error(c, OUT_TIMEOUT, 504, "ferry: the destination did not answer in time",
                   "upstream-timeout");
        return;
    }
    if (c->http->cli_full) {
        conn_close(c, "client-timeout");
        return;
    }
    http_error(c, OUT_BAD_REQUEST, 408, "ferry: the request body did not arrive in time",
               "client-timeout");
}

/* The session's timer in state HTTP_FWD: the side that stalled is
 * answered (http_stalled()), or the timer is armed again. */
void http_fwd_timeout(struct conn *c)
{
    struct http_state *h = c->http;
    const struct config *cfg = conn_cfg(c);
    uint64_t now = loop_now(&c->w->loop);
    uint32_t idle = conn_iotimeout(c);
    bool idle_over = idle && now - c->last_active >= idle;
    if (!h) {
        conn_close(c, "timeout");
        return;
    }
    if (h->closing) {
        /* flushing what the client was owed, before closing */
        if (idle_over)
            conn_close(c, c->why);
        else
            conn_arm_idle(c);
        return;
    }
    if (h->owed && now - h->origin_since >= cfg->http.response_ms) {
        http_stalled(c, false); /* the origin went silent */
        return;
    }
    if (h->body_wait && now - h->client_since >= cfg->http.body_ms) {
        http_stalled(c, true); /* the client went silent mid-request */
        return;
    }
    if (idle_over) {
        /* Nothing moved either way: the side the exchange waits on
         * stalled (the client first: an origin may wait for the body). */
        if (h->body_wait || h->cli_full || h->owed) {
            http_stalled(c, h->body_wait || h->cli_full);
            return;
        }
        if (!http_answered(h)) {
            http_error(c, OUT_TIMEOUT, 504, "ferry: the destination did not answer in time",
                       "upstream-timeout");
            return;
        }
        conn_close(c, "idle-timeout");
        return;
    }
    if (h->paused) {
        /* Paused by the limiter: go on from the task, as after a yield
         * (the next pass asks again and re-arms). */
        loop_defer(&c->w->loop, &c->task);
        return;
    }
    uint64_t d = http_fwd_deadline(c);
    if (d)
        loop_timer_arm_at(&c->w->loop, &c->timer, d);
}
