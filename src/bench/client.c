/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client.c: the bench's client side: a SOCKS5 client connection driven by
 * a generator thread's loop, and the generator threads themselves. The
 * handshake is done the strict way real clients do it (greeting, wait for
 * the method, request, wait for the reply), never pipelined, so a proxy is
 * not flattered. With --https-proxy the connection to the proxy is TLS 1.3
 * first (tls/tls.h, driven nonblocking by the same loop, the certificate
 * always verified), and everything after the handshake goes through the
 * session; with --https-proxy h2 a connection is a CONNECT stream on the
 * thread's HTTP/2 connection instead (h2client.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/sock.h"
#include "proto/parent.h"
#include "tls/tls.h"

uint8_t *pattern_ext;

void pattern_init(void)
{
    if (pattern_ext)
        return;
    pattern_ext = malloc(PATTERN_LEN + PATTERN_SLACK);
    if (!pattern_ext)
        abort(); /* the bench cannot run without its payload */
    /* xorshift64: deterministic and fast; the libc generator is banned here */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < PATTERN_LEN; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        pattern_ext[i] = (uint8_t)(x >> 32);
    }
    for (size_t i = 0; i < PATTERN_SLACK; i++)
        pattern_ext[PATTERN_LEN + i] = pattern_ext[i % PATTERN_LEN];
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sclient_open(struct sclient *s, struct loop *l, const struct route *r, io_cb cb)
{
    memset(s, 0, sizeof(*s));
    io_init(&s->io, cb);
    s->t0_ns = now_ns();
    s->phase = SC_CONNECT;
    if (r->h2) {
        s->via_h2 = true;
        s->phase = SC_H2;
        int rc = h2_stream_open(s, l, r);
        if (rc) {
            s->fail = SC_FAIL_H2;
            s->err = rc;
            s->phase = SC_FAILED;
        }
        return rc;
    }
    const struct addr *to = r->mode == BENCH_DIRECT ? &r->dst : &r->via;
    int fd = bench_connect(to, r->spread_src);
    if (fd < 0) {
        s->fail = SC_FAIL_SOCKET;
        s->err = fd;
        s->phase = SC_FAILED;
        return fd;
    }
    int rc = loop_io_add(l, &s->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        s->fail = SC_FAIL_SOCKET;
        s->err = rc;
        s->phase = SC_FAILED;
        return rc;
    }
    return 0;
}

static int sc_fail(struct sclient *s, uint8_t kind, int err)
{
    if (s->phase != SC_FAILED)
        s->fail_phase = s->phase;
    s->fail = kind;
    s->err = err;
    s->phase = SC_FAILED;
    return -1;
}

/* errno from a TLS call's result; EAGAIN clears the readiness it waits for. */
static ssize_t tls_ret(struct sclient *s, ssize_t rc, uint8_t want)
{
    if (rc >= 0)
        return rc;
    if (rc == -EAGAIN)
        s->ev &= (uint8_t) ~((want & TLS_WANT_WRITE) ? SC_WR : SC_RD);
    errno = (int)-rc;
    return -1;
}

ssize_t sclient_recv(struct sclient *s, void *p, size_t n)
{
    if (s->via_h2)
        return h2_stream_recv(s, p, n);
    if (!s->tls)
        return recv(s->io.fd, p, n, 0);
    uint8_t want = 0;
    return tls_ret(s, tls_read(s->tls, p, n, &want), want);
}

ssize_t sclient_send(struct sclient *s, const void *p, size_t n)
{
    if (s->via_h2)
        return h2_stream_send(s, p, n);
    if (!s->tls)
        return send(s->io.fd, p, n, MSG_NOSIGNAL);
    uint8_t want = 0;
    return tls_ret(s, tls_write(s->tls, p, n, &want), want);
}

/* Handshake messages are small: all of one goes out at once, or the
 * connection fails. */
static int sc_send(struct sclient *s, const uint8_t *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = sclient_send(s, p + done, n - done);
        if (w <= 0)
            return sc_fail(s, SC_FAIL_SOCKET, w < 0 ? -errno : -EAGAIN);
        done += (size_t)w;
    }
    return 0;
}

/* Read what is there into rbuf. Returns 0, or -1 after failing s. */
static int sc_read(struct sclient *s)
{
    while (s->ev & SC_RD) {
        if (s->rlen == sizeof(s->rbuf))
            return 0;
        ssize_t n = sclient_recv(s, s->rbuf + s->rlen, sizeof(s->rbuf) - s->rlen);
        if (n > 0) {
            s->rlen = (uint16_t)(s->rlen + n);
        } else if (n == 0) {
            /* The proxy closed before answering: it refused us at the socket level
             * (e.g. over its connection limit) rather than with a SOCKS reply. */
            return sc_fail(s, SC_FAIL_SOCKET, -ECONNRESET);
        } else if (errno == EAGAIN) {
            s->ev &= (uint8_t)~SC_RD;
        } else if (errno != EINTR) {
            return sc_fail(s, SC_FAIL_SOCKET, -errno);
        }
    }
    return 0;
}

static void sc_consume(struct sclient *s, size_t n)
{
    memmove(s->rbuf, s->rbuf + n, s->rlen - n);
    s->rlen = (uint16_t)(s->rlen - n);
}

/* What a phase's step returns: one of sclient_step()'s results, or
 * STEP_NEXT: the phase changed, go on with the next. */
#define STEP_NEXT 2

static int step_proto(struct sclient *s, const struct route *r);

static int step_connect(struct sclient *s, const struct route *r)
{
    if (!(s->ev & SC_WR))
        return 0;
    int err = sock_error(s->io.fd);
    if (err)
        return sc_fail(s, SC_FAIL_SOCKET, err);
    if (r->tls && !s->tls) {
        s->tls = tls_client_new(r->tls, s->io.fd, r->tls_host);
        if (!s->tls)
            return sc_fail(s, SC_FAIL_SOCKET, -ENOMEM);
        s->phase = SC_TLS;
        return STEP_NEXT;
    }
    return step_proto(s, r);
}

/* The TLS handshake with the proxy, then the proxy protocol over it. */
static int step_tls(struct sclient *s, const struct route *r)
{
    uint8_t want = 0;
    int rc = tls_handshake(s->tls, &want);
    if (rc == -EAGAIN) {
        s->ev &= (uint8_t) ~((want & TLS_WANT_WRITE) ? SC_WR : SC_RD);
        return 0;
    }
    if (rc)
        return sc_fail(s, rc == -EPROTO ? SC_FAIL_TLS : SC_FAIL_SOCKET, rc);
    return step_proto(s, r);
}

int route_proxy_auth(const struct route *r, char *out, size_t cap)
{
    char token[700];
    out[0] = '\0';
    if (!r->user)
        return 0;
    if (!parent_basic_credentials(r->user, r->pass, token, sizeof(token)))
        return -EINVAL;
    int n = snprintf(out, cap, "Proxy-Authorization: Basic %s\r\n", token);
    return n > 0 && (size_t)n < cap ? 0 : -ENOSPC;
}

/* Connected (and through TLS): the first message of the proxy protocol. */
static int step_proto(struct sclient *s, const struct route *r)
{
    if (r->mode == BENCH_DIRECT || r->mode == BENCH_RELAY || r->http == HTTP_PROXY_ABSOLUTE) {
        s->phase = SC_OPEN;
        return 1;
    }
    if (r->http == HTTP_PROXY_CONNECT) {
        char req[1024], a[ADDR_STRLEN], auth[800];
        addr_format(&r->dst, a, sizeof(a));
        if (route_proxy_auth(r, auth, sizeof(auth)))
            return sc_fail(s, SC_FAIL_SOCKET, -EINVAL);
        int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", a, a, auth);
        if (sc_send(s, (const uint8_t *)req, (size_t)n))
            return -1;
        s->phase = SC_HTTP;
        return STEP_NEXT;
    }
    uint8_t msg[3];
    uint8_t method = r->user ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_NONE;
    size_t n = socks5_write_greeting(msg, sizeof(msg), &method, 1);
    if (sc_send(s, msg, n))
        return -1;
    s->phase = SC_METHOD;
    return STEP_NEXT;
}

/* The SOCKS5 request: CONNECT to the target, or UDP ASSOCIATE. */
static int send_request(struct sclient *s, const struct route *r)
{
    struct socks5_addr dst;
    uint8_t cmd = r->cmd ? r->cmd : SOCKS5_CMD_CONNECT;
    if (cmd == SOCKS5_CMD_UDP_ASSOCIATE) {
        struct addr any = {.family = AF_INET}; /* 0.0.0.0:0, as most clients send */
        socks5_addr_from_addr(&dst, &any);
    } else {
        socks5_addr_from_addr(&dst, &r->dst);
    }
    uint8_t req[SOCKS5_REQUEST_MAX];
    size_t len = socks5_write_request(req, sizeof(req), cmd, &dst);
    if (sc_send(s, req, len))
        return -1;
    s->phase = SC_REPLY;
    return STEP_NEXT;
}

static int step_method(struct sclient *s, const struct route *r)
{
    if (sc_read(s))
        return -1;
    uint8_t method;
    ssize_t n = socks5_parse_method(s->rbuf, s->rlen, &method);
    if (n == 0)
        return 0;
    uint8_t want = r->user ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_NONE;
    if (n < 0 || method != want)
        return sc_fail(s, SC_FAIL_SOCKS, 0);
    sc_consume(s, (size_t)n);
    s->phase = SC_AUTH;
    if (!r->user)
        return send_request(s, r); /* no sub-negotiation: straight to the request */
    uint8_t up[520];
    size_t len =
        socks5_write_userpass(up, sizeof(up), r->user, strlen(r->user), r->pass, strlen(r->pass));
    if (sc_send(s, up, len))
        return -1;
    return STEP_NEXT;
}

static int step_auth(struct sclient *s, const struct route *r)
{
    if (r->user) {
        if (sc_read(s))
            return -1;
        uint8_t status;
        ssize_t n = socks5_parse_auth_status(s->rbuf, s->rlen, &status);
        if (n == 0)
            return 0;
        if (n < 0 || status != SOCKS5_AUTH_OK)
            return sc_fail(s, SC_FAIL_SOCKS, 0);
        sc_consume(s, (size_t)n);
    }
    return send_request(s, r);
}

static int step_reply(struct sclient *s, const struct route *r)
{
    (void)r;
    if (sc_read(s))
        return -1;
    struct socks5_reply rep;
    ssize_t n = socks5_parse_reply(s->rbuf, s->rlen, &rep);
    if (n == 0)
        return 0;
    if (n < 0)
        return sc_fail(s, SC_FAIL_SOCKS, 0);
    s->rep = rep.rep;
    if (rep.rep != SOCKS5_REP_SUCCEEDED)
        return sc_fail(s, SC_FAIL_SOCKS, 0);
    if (!socks5_addr_to_addr(&rep.bnd, &s->bnd))
        memset(&s->bnd, 0, sizeof(s->bnd));
    sc_consume(s, (size_t)n);
    s->phase = SC_OPEN;
    return 1;
}

/* An HTTP CONNECT answer: "HTTP/1.x 200 ..." then everything up to the
 * blank line, and nothing after it. */
static int step_http(struct sclient *s, const struct route *r)
{
    (void)r;
    while (s->ev & SC_RD) {
        uint8_t b[64];
        ssize_t n = sclient_recv(s, b, sizeof(b));
        if (n == 0)
            return sc_fail(s, SC_FAIL_SOCKET, -ECONNRESET);
        if (n < 0) {
            if (errno == EAGAIN) {
                s->ev &= (uint8_t)~SC_RD;
                break;
            }
            if (errno == EINTR)
                continue;
            return sc_fail(s, SC_FAIL_SOCKET, -errno);
        }
        for (ssize_t i = 0; i < n; i++) {
            if (s->rlen < 12)
                s->rbuf[s->rlen++] = b[i];
            if (s->rlen == 12 && !s->http_state) {
                if (memcmp(s->rbuf, "HTTP/1.", 7) != 0 || memcmp(s->rbuf + 8, " 200", 4))
                    return sc_fail(s, SC_FAIL_SOCKS, 0);
                s->http_state = 1;
            }
            static const char end[] = "\r\n\r\n";
            s->crlf = b[i] == (uint8_t)end[s->crlf] ? (uint8_t)(s->crlf + 1) : b[i] == '\r' ? 1 : 0;
            if (s->crlf == 4) {
                if (!s->http_state || i + 1 != n)
                    return sc_fail(s, SC_FAIL_SOCKS, 0);
                s->rlen = 0;
                s->phase = SC_OPEN;
                return 1;
            }
        }
    }
    return 0;
}

/* An h2 CONNECT stream: its answer decides. */
static int step_h2(struct sclient *s, const struct route *r)
{
    (void)r;
    int st = h2_stream_state(s);
    if (st > 0) {
        s->phase = SC_OPEN;
        return 1;
    }
    if (st < 0) {
        if (!s->fail)
            s->fail = SC_FAIL_H2;
        s->fail_phase = SC_H2;
        s->phase = SC_FAILED;
        return -1;
    }
    return 0;
}

/* The handshake, a step per phase (SC_OPEN and SC_FAILED have none). */
static int (*const steps[])(struct sclient *s, const struct route *r) = {
    [SC_CONNECT] = step_connect, [SC_TLS] = step_tls,     [SC_METHOD] = step_method,
    [SC_AUTH] = step_auth,       [SC_REPLY] = step_reply, [SC_HTTP] = step_http,
    [SC_H2] = step_h2,
};

int sclient_step(struct sclient *s, const struct route *r, uint32_t events)
{
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        s->ev |= SC_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        s->ev |= SC_WR;
    if (events & (EPOLLRDHUP | EPOLLHUP))
        s->ev |= SC_RDHUP;
    for (;;) {
        if (s->phase == SC_OPEN)
            return 1;
        if (s->phase == SC_FAILED)
            return -1;
        int rc = steps[s->phase](s, r);
        if (rc != STEP_NEXT)
            return rc;
    }
}

void sclient_close(struct sclient *s, bool abortive)
{
    h2_stream_close(s); /* a no-op unless an open h2 stream */
    tls_free(s->tls);   /* no close_notify: the bench closes hard or at the end */
    s->tls = NULL;
    if (s->io.fd < 0)
        return;
    if (abortive)
        sock_abort(s->io.fd);
    int fd = s->io.fd;
    s->io.fd = -1;
    close(fd);
}

void sclient_fail_reason(const struct sclient *s, const struct route *r, char *buf, size_t cap)
{
    const char *via = r->mode == BENCH_DIRECT ? "the target" : "the proxy";
    if (s->via_h2 && s->fail && *h2_fail_reason()) {
        snprintf(buf, cap, "%s", h2_fail_reason());
    } else if (s->fail == SC_FAIL_TLS) {
        snprintf(buf, cap, "TLS handshake with the proxy: %s",
                 s->tls && *tls_error(s->tls) ? tls_error(s->tls) : "failed");
    } else if (s->fail == SC_FAIL_SOCKS) {
        if (r->http)
            snprintf(buf, cap, "the HTTP proxy answered CONNECT with a status other than 200");
        else if (s->rep)
            snprintf(buf, cap, "SOCKS5 reply %u (%s)", s->rep, socks5_rep_str(s->rep));
        else
            snprintf(buf, cap,
                     "the SOCKS5 proxy refused the method or the credentials, or broke "
                     "the protocol");
    } else if (s->err == -ECONNRESET && s->phase == SC_FAILED) {
        snprintf(buf, cap, "%s closed or reset the connection before it was set up", via);
    } else if (s->err) {
        snprintf(buf, cap, "connection to %s: %s", via, strerror(-s->err));
    } else {
        snprintf(buf, cap, "unknown");
    }
}

/* ---- generator threads ---- */

static void gen_on_tick(struct timer *t)
{
    struct gen *g = container_of(t, struct gen, tick);
    if (atomic_load(&g->stop)) {
        loop_stop(&g->loop);
        return;
    }
    if (g->on_tick)
        g->on_tick(g);
    loop_timer_arm(&g->loop, &g->tick, 20);
}

static void gen_on_pace(struct timer *t)
{
    struct gen *g = container_of(t, struct gen, pace_timer);
    if (atomic_load(&g->stop))
        return;
    g->on_pace(g);
    loop_timer_arm(&g->loop, &g->pace_timer, 1);
}

void gen_pace(struct gen *g, void (*cb)(struct gen *g))
{
    g->on_pace = cb;
    timer_init(&g->pace_timer, gen_on_pace);
    loop_timer_arm(&g->loop, &g->pace_timer, 1);
}

static void *gen_main(void *arg)
{
    struct gen *g = arg;
    loop_update_time(&g->loop);
    if (g->on_start)
        g->on_start(g);
    loop_timer_arm(&g->loop, &g->tick, 20);
    loop_run(&g->loop);
    h2_thread_end();
    return NULL;
}

int gen_start(struct gen *g, unsigned id, void *scenario, void (*on_start)(struct gen *g))
{
    memset(g, 0, sizeof(*g));
    g->id = id;
    g->scenario = scenario;
    g->on_start = on_start;
    timer_init(&g->tick, gen_on_tick);
    int rc = loop_init(&g->loop);
    if (rc)
        return rc;
    rc = pthread_create(&g->thread, NULL, gen_main, g);
    if (rc) {
        loop_fini(&g->loop);
        return -rc;
    }
    return 0;
}

void gen_stop_join(struct gen *g)
{
    atomic_store(&g->stop, true);
    pthread_join(g->thread, NULL);
    loop_fini(&g->loop);
}
