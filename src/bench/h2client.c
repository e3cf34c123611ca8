/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2client.c: --https-proxy h2, the bench's HTTP/2 client. Each generator
 * thread holds one TLS 1.3 connection to the proxy with ALPN h2 (a "mux"),
 * and every bench client connection (struct sclient) it opens is an
 * HTTP/2 CONNECT stream on it (RFC 9113 section 8.5: :method CONNECT and
 * :authority host:port, no :scheme or :path). nghttp2's client session is
 * driven through memory I/O from the thread's own loop: the bytes it
 * produces go out through the TLS session, the bytes read from it go in;
 * no thread of its own.
 *
 * To the scenarios a stream is a connection like any other: sclient_recv()
 * and sclient_send() take from and add to the stream's buffers, and the
 * stream's readiness reaches the scenario's io callback as the EPOLL bits a
 * socket would raise. Those callbacks are never called from inside an
 * nghttp2 callback: streams with news are queued and told once nghttp2 has
 * returned.
 *
 * Flow control on the bench's side never holds the proxy back: the stream
 * window is 16 MiB from the first SETTINGS and the connection window is
 * raised to 1 GiB at once; credit goes back as the scenario reads (a
 * stream's buffer is thus bounded by its window). What the bench sends is
 * bounded by the proxy's windows and by a 256 KiB send buffer per stream.
 *
 * A mux that fails (the TCP connection, TLS, no h2 in ALPN, a protocol
 * error, the proxy closing) fails every stream on it with the reason in
 * words; a mux that got GOAWAY takes no new streams; either way the next
 * stream opened on the thread gets a new mux. This room knows nothing of
 * scenarios and decides nothing about a run.
 */
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/sock.h"
#include "proto/parent.h"
#include "tls/tls.h"

#define H2_STREAM_WINDOW (16u << 20) /* SETTINGS_INITIAL_WINDOW_SIZE we announce */
#define H2_CONN_WINDOW   (1u << 30)  /* the connection window we open at once */
#define H2_TX_CAP        (256u << 10)
#define H2_OUT_HIGH      (256u << 10) /* bytes taken from nghttp2 per write round */
#define H2_READ_ROUNDS   256          /* TLS reads per wakeup, then a deferred turn */

struct h2s;

struct h2mux {
    struct loop *loop;
    struct io io;
    struct tls *tls;
    nghttp2_session *ng;
    struct task more; /* another read turn, after H2_READ_ROUNDS */
    bool more_queued;
    bool connected, handshaken, dead, goaway;
    unsigned depth; /* inside h2_run or the io handler */
    unsigned nstreams;
    struct h2s *streams; /* all of them (doubly linked) */
    struct h2s *pend;    /* those with news for their client */
    struct h2mux *next;  /* the thread's muxes */
    uint8_t *out;
    size_t olen, ooff, ocap;
    char err[200];
};

struct h2s {
    struct h2mux *m;
    struct sclient *sc;    /* NULL once the client closed it */
    const struct route *r; /* for a retry after REFUSED_STREAM */
    int32_t id;
    uint16_t status;
    uint8_t retries;
    bool opened, failed, eof, reset, ng_closed, wblocked, deferred, pend_on;
    uint8_t pend_ev;
    struct h2s *pnext, *snext, *sprev;
    uint8_t *rx;
    size_t rhead, rlen, rcap;
    uint8_t *tx; /* H2_TX_CAP bytes, from the first send */
    size_t thead, tlen;
};

static _Thread_local struct h2mux *h2_cur; /* where new streams go */
static _Thread_local struct h2mux *h2_all;
static _Thread_local char h2_why[256];   /* why the last stream failed */
static _Thread_local int h2_setup_state; /* the last connection's setup: 0 going, 1 up, -1 failed */

static void h2_run(struct h2mux *m);
static struct h2mux *h2_mux_for(struct loop *l, const struct route *r);
static void h2s_link(struct h2mux *m, struct h2s *s);
static void h2s_unlink(struct h2s *s);

/* News for the streams outside the mux's own handler: told from a turn
 * of its own, never from inside the caller (a scenario's callback). */
static void h2_kick(struct h2mux *m)
{
    if (!m->more_queued) {
        m->more_queued = true;
        loop_defer(m->loop, &m->more);
    }
}

static void h2s_tell(struct h2s *s, uint32_t ev)
{
    s->pend_ev |= (uint8_t)(ev & 0xff);
    if (ev & EPOLLRDHUP)
        s->pend_ev |= 0x80; /* EPOLLRDHUP is 0x2000: folded in here */
    if (s->pend_on)
        return;
    s->pend_on = true;
    s->pnext = s->m->pend;
    s->m->pend = s;
    if (!s->m->depth)
        h2_kick(s->m);
}

static uint32_t h2s_events(uint8_t pend)
{
    uint32_t ev = pend & (EPOLLIN | EPOLLOUT);
    if (pend & 0x80)
        ev |= EPOLLRDHUP;
    return ev;
}

static void h2_mux_free(struct h2mux *m);

/* A stream neither its client nor nghttp2 holds any more goes; so does a
 * dead mux with no stream left (never while it runs). */
static void h2s_maybe_free(struct h2s *s)
{
    if (s->sc || !s->ng_closed || s->pend_on)
        return;
    struct h2mux *m = s->m;
    h2s_unlink(s);
    free(s->rx);
    free(s->tx);
    free(s);
    if (m->dead && !m->nstreams && !m->depth && !m->more_queued)
        h2_mux_free(m);
}

/* The stream failed before it opened, or broke after: tell its client. */
static void h2s_fail(struct h2s *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void h2s_fail(struct h2s *s, const char *fmt, ...)
{
    if (s->sc && !s->failed && !s->reset) { /* the reason of this thread's last failure */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h2_why, sizeof(h2_why), fmt, ap);
        va_end(ap);
    }
    if (s->opened) {
        s->reset = true;
    } else if (!s->failed) {
        s->failed = true;
        if (s->sc) {
            s->sc->fail = s->status ? SC_FAIL_SOCKS : SC_FAIL_H2;
            s->sc->err = -ECONNRESET;
        }
    }
    h2s_tell(s, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
}

/* The connection is over: every stream on it fails with m->err. */
static void h2_mux_fail(struct h2mux *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void h2_mux_fail(struct h2mux *m, const char *fmt, ...)
{
    if (m->dead)
        return;
    m->dead = true;
    if (!m->handshaken)
        h2_setup_state = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof(m->err), fmt, ap);
    va_end(ap);
    if (h2_cur == m)
        h2_cur = NULL;
    if (m->io.fd >= 0) {
        int fd = m->io.fd;
        loop_io_del(m->loop, &m->io);
        close(fd);
    }
    for (struct h2s *s = m->streams; s; s = s->snext) {
        s->ng_closed = true;
        h2s_fail(s, "%s", m->err);
    }
}

/* ---- nghttp2's callbacks ---- */

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    (void)flags, (void)user;
    if (f->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7))
        return 0;
    struct h2s *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (s && valuelen == 3)
        s->status = (uint16_t)((value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0'));
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *user)
{
    struct h2mux *m = user;
    if (f->hd.type == NGHTTP2_GOAWAY) {
        m->goaway = true;
        if (h2_cur == m)
            h2_cur = NULL;
        return 0;
    }
    struct h2s *s = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    if (!s)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_RESPONSE && !s->opened &&
        !s->failed) {
        if (s->status == 200) {
            s->opened = true;
            h2s_tell(s, EPOLLIN | EPOLLOUT);
        } else if (s->status >= 200) {
            char st[8];
            snprintf(st, sizeof(st), "%u", s->status);
            h2s_fail(s, "the proxy answered the h2 CONNECT with :status %s", st);
        } else {
            s->status = 0; /* 1xx: the real answer is still to come */
        }
    }
    if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM) && s->opened) {
        s->eof = true;
        h2s_tell(s, EPOLLIN | EPOLLRDHUP);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user)
{
    (void)flags, (void)user;
    struct h2s *s = nghttp2_session_get_stream_user_data(ng, id);
    if (!s || !s->opened || !s->sc) {
        nghttp2_session_consume(ng, id, len); /* nobody reads it: give the credit back */
        return 0;
    }
    if (s->rhead && s->rhead == s->rlen)
        s->rhead = s->rlen = 0;
    if (s->rlen + len > s->rcap) {
        if (s->rhead) {
            memmove(s->rx, s->rx + s->rhead, s->rlen - s->rhead);
            s->rlen -= s->rhead;
            s->rhead = 0;
        }
        if (s->rlen + len > s->rcap) {
            size_t cap = s->rcap ? s->rcap : 65536;
            while (cap < s->rlen + len)
                cap *= 2;
            uint8_t *nb = realloc(s->rx, cap);
            if (!nb)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
            s->rx = nb;
            s->rcap = cap;
        }
    }
    memcpy(s->rx + s->rlen, data, len);
    s->rlen += len;
    h2s_tell(s, EPOLLIN);
    return 0;
}

static int h2_submit(struct h2mux *m, struct h2s *s, const struct route *r);

/* Try a refused stream again: on this connection, or on the thread's
 * current one when this one is going away. 0, or -1: it fails. */
static int h2s_retry(struct h2mux *m, struct h2s *s)
{
    struct h2mux *to = m->goaway || m->dead ? h2_mux_for(m->loop, s->r) : m;
    if (!to || (to != m && s->pend_on)) /* queued on m's news: it stays there */
        return -1;
    s->retries++;
    s->deferred = false;
    s->thead = s->tlen = 0; /* nothing is sent before the answer */
    if (to != m) {
        h2s_unlink(s);
        h2s_link(to, s);
    }
    if (h2_submit(to, s, s->r))
        return -1;
    if (to != m)
        h2_kick(to); /* its own turn sends it */
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *user)
{
    struct h2mux *m = user;
    struct h2s *s = nghttp2_session_get_stream_user_data(ng, id);
    if (!s)
        return 0;
    /* RFC 9113 section 8.7: a refused stream was not processed and may be
     * tried again, as browsers do (a GOAWAY refuses the streams beyond
     * its last id). A few times. */
    if (code == NGHTTP2_REFUSED_STREAM && s->sc && !s->opened && !s->failed && s->retries < 3 &&
        h2s_retry(m, s) == 0)
        return 0;
    s->ng_closed = true;
    if (s->sc && (!s->eof || code != NGHTTP2_NO_ERROR)) {
        const char *what = code == NGHTTP2_REFUSED_STREAM ? "REFUSED_STREAM"
                           : code == NGHTTP2_NO_ERROR     ? "the stream closed"
                                                          : nghttp2_http2_strerror(code);
        h2s_fail(s, "the proxy reset the h2 CONNECT stream (%s)", what);
    }
    h2s_maybe_free(s);
    return 0;
}

/* What DATA carries: the stream's send buffer. */
static ssize_t on_read_data(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *user)
{
    (void)ng, (void)id, (void)flags, (void)user;
    struct h2s *s = src->ptr;
    if (s->tlen == s->thead) {
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = MIN(len, s->tlen - s->thead);
    memcpy(buf, s->tx + s->thead, n);
    s->thead += n;
    if (s->thead == s->tlen)
        s->thead = s->tlen = 0;
    if (s->wblocked && s->tlen - s->thead <= H2_TX_CAP / 2) {
        s->wblocked = false;
        h2s_tell(s, EPOLLOUT);
    }
    return (ssize_t)n;
}

/* ---- the connection ---- */

/* Write what nghttp2 has for the proxy, as far as the socket takes it. */
static void h2_flush(struct h2mux *m)
{
    while (m->handshaken && !m->dead) {
        while (m->ooff < m->olen) {
            uint8_t want = 0;
            ssize_t w = tls_write(m->tls, m->out + m->ooff, m->olen - m->ooff, &want);
            if (w == -EAGAIN)
                return; /* the socket's readiness calls us again */
            if (w < 0) {
                h2_mux_fail(m, "writing to the h2 proxy: %s", strerror((int)-w));
                return;
            }
            m->ooff += (size_t)w;
        }
        m->olen = m->ooff = 0;
        while (m->olen < H2_OUT_HIGH) {
            const uint8_t *d;
            ssize_t n = nghttp2_session_mem_send(m->ng, &d);
            if (n < 0) {
                h2_mux_fail(m, "HTTP/2 session: %s", nghttp2_strerror((int)n));
                return;
            }
            if (n == 0)
                break;
            if (m->olen + (size_t)n > m->ocap) {
                size_t cap = MAX(m->ocap * 2, m->olen + (size_t)n);
                uint8_t *nb = realloc(m->out, cap);
                if (!nb) {
                    h2_mux_fail(m, "%s", "no memory");
                    return;
                }
                m->out = nb;
                m->ocap = cap;
            }
            memcpy(m->out + m->olen, d, (size_t)n);
            m->olen += (size_t)n;
        }
        if (!m->olen)
            return;
    }
}

/* Flush, then tell the streams their news (the outermost call only: a
 * client told may open, write or close streams, which runs this again). */
static void h2_run(struct h2mux *m)
{
    h2_flush(m);
    if (m->depth)
        return;
    m->depth++;
    struct h2s *s;
    while ((s = m->pend)) {
        m->pend = s->pnext;
        s->pend_on = false;
        uint32_t ev = h2s_events(s->pend_ev);
        s->pend_ev = 0;
        if (s->sc)
            s->sc->io.cb(&s->sc->io, ev);
        else
            h2s_maybe_free(s);
        h2_flush(m);
    }
    m->depth--;
    if (m->dead && !m->nstreams && !m->more_queued)
        h2_mux_free(m);
}

/* Connect, handshake, check that h2 was agreed. 1 once ready, 0 waiting,
 * -1 failed (told). */
static int h2_setup(struct h2mux *m, uint32_t events)
{
    if (!m->connected) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return 0;
        int err = sock_error(m->io.fd);
        if (err) {
            h2_mux_fail(m, "connection to the h2 proxy: %s", strerror(-err));
            return -1;
        }
        m->connected = true;
    }
    uint8_t want = 0;
    int rc = tls_handshake(m->tls, &want);
    if (rc == -EAGAIN)
        return 0;
    if (rc) {
        const char *e = *tls_error(m->tls) ? tls_error(m->tls) : strerror(-rc);
        h2_mux_fail(m, "TLS handshake with the proxy: %s%s", e,
                    strstr(e, "no application protocol") ? " (h2 not offered)" : "");
        return -1;
    }
    char alpn[32];
    tls_alpn(m->tls, alpn, sizeof(alpn));
    if (strcmp(alpn, "h2") != 0) {
        h2_mux_fail(m, "h2 not offered: the proxy's TLS handshake agreed on ALPN '%s'",
                    alpn[0] ? alpn : "(none)");
        return -1;
    }
    m->handshaken = true;
    h2_setup_state = 1;
    return 1;
}

/* Read what the proxy sent into nghttp2, a bounded number of records. */
static void h2_read(struct h2mux *m)
{
    static _Thread_local uint8_t buf[65536];
    for (int i = 0; i < H2_READ_ROUNDS; i++) {
        uint8_t want = 0;
        ssize_t n = tls_read(m->tls, buf, sizeof(buf), &want);
        if (n == -EAGAIN)
            return;
        if (n <= 0) {
            h2_mux_fail(m, "the h2 proxy %s",
                        n == 0 ? "closed the connection (close_notify)"
                               : "connection broke or was reset");
            return;
        }
        ssize_t used = nghttp2_session_mem_recv(m->ng, buf, (size_t)n);
        if (used < 0) {
            h2_mux_fail(m, "HTTP/2 from the proxy: %s", nghttp2_strerror((int)used));
            return;
        }
    }
    h2_kick(m);
}

static void h2_on_io(struct io *io, uint32_t events)
{
    struct h2mux *m = container_of(io, struct h2mux, io);
    m->depth++;
    if (!m->handshaken && !m->dead)
        (void)h2_setup(m, events);
    if (m->handshaken && !m->dead)
        h2_read(m);
    m->depth--;
    h2_run(m);
}

static void h2_on_more(struct task *t)
{
    struct h2mux *m = container_of(t, struct h2mux, more);
    m->more_queued = false;
    m->depth++;
    if (m->handshaken && !m->dead)
        h2_read(m);
    m->depth--;
    h2_run(m);
}

static void h2_mux_free(struct h2mux *m)
{
    for (struct h2mux **p = &h2_all; *p; p = &(*p)->next) {
        if (*p == m) {
            *p = m->next;
            break;
        }
    }
    if (h2_cur == m)
        h2_cur = NULL;
    while (m->streams) {
        struct h2s *s = m->streams;
        m->streams = s->snext;
        if (s->sc)
            s->sc->h2 = NULL;
        free(s->rx);
        free(s->tx);
        free(s);
    }
    if (m->io.fd >= 0) {
        int fd = m->io.fd;
        loop_io_del(m->loop, &m->io);
        close(fd);
    }
    nghttp2_session_del(m->ng);
    tls_free(m->tls);
    free(m->out);
    free(m);
}

static nghttp2_session_callbacks *h2_callbacks(void)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb))
        return NULL;
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    return cb;
}

/* The HTTP/2 session: our SETTINGS and the connection window first. */
static int h2_session(struct h2mux *m)
{
    nghttp2_session_callbacks *cb = h2_callbacks();
    nghttp2_option *opt;
    if (!cb || nghttp2_option_new(&opt)) {
        nghttp2_session_callbacks_del(cb);
        return -ENOMEM;
    }
    nghttp2_option_set_no_auto_window_update(opt, 1); /* credit when the scenario reads */
    int rc = nghttp2_session_client_new2(&m->ng, cb, m, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    if (rc)
        return -ENOMEM;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    if (nghttp2_submit_settings(m->ng, NGHTTP2_FLAG_NONE, iv, 2) ||
        nghttp2_submit_window_update(m->ng, NGHTTP2_FLAG_NONE, 0,
                                     H2_CONN_WINDOW - NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE))
        return -ENOMEM;
    return 0;
}

/* A new connection to the proxy on loop l. NULL with h2_why told. */
static struct h2mux *h2_mux_new(struct loop *l, const struct route *r)
{
    struct h2mux *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(h2_why, sizeof(h2_why), "no memory");
        return NULL;
    }
    m->loop = l;
    io_init(&m->io, h2_on_io);
    task_init(&m->more, h2_on_more);
    int fd = bench_connect(&r->via, r->spread_src);
    int rc = fd < 0 ? fd : h2_session(m);
    if (!rc && !(m->tls = tls_client_new(r->tls, fd, r->tls_host)))
        rc = -ENOMEM;
    if (!rc)
        rc = loop_io_add(l, &m->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        snprintf(h2_why, sizeof(h2_why), "connection to the h2 proxy: %s", strerror(-rc));
        h2_setup_state = -1;
        if (fd >= 0)
            close(fd);
        nghttp2_session_del(m->ng);
        tls_free(m->tls);
        free(m);
        return NULL;
    }
    m->next = h2_all;
    h2_all = m;
    h2_setup_state = 0;
    return m;
}

/* The CONNECT request of stream s to r->dst. */
static int h2_submit(struct h2mux *m, struct h2s *s, const struct route *r)
{
    char a[ADDR_STRLEN], token[700], basic[720];
    addr_format(&r->dst, a, sizeof(a));
    nghttp2_nv nv[3];
    size_t n = 0;
#define NV(k, v)                                                                            \
    nv[n++] = (nghttp2_nv){(uint8_t *)(uintptr_t)(k), (uint8_t *)(uintptr_t)(v), strlen(k), \
                           strlen(v), NGHTTP2_NV_FLAG_NONE}
    NV(":method", "CONNECT");
    NV(":authority", a);
    if (r->user) {
        if (!parent_basic_credentials(r->user, r->pass, token, sizeof(token)))
            return -EINVAL;
        snprintf(basic, sizeof(basic), "Basic %s", token);
        NV("proxy-authorization", basic);
    }
#undef NV
    nghttp2_data_provider dp = {.source.ptr = s, .read_callback = on_read_data};
    int32_t id = nghttp2_submit_request(m->ng, NULL, nv, n, &dp, s);
    if (id < 0)
        return -ENOMEM;
    s->id = id;
    s->r = r;
    return 0;
}

static void h2s_link(struct h2mux *m, struct h2s *s)
{
    s->m = m;
    s->sprev = NULL;
    s->snext = m->streams;
    if (m->streams)
        m->streams->sprev = s;
    m->streams = s;
    m->nstreams++;
}

static void h2s_unlink(struct h2s *s)
{
    struct h2mux *m = s->m;
    if (s->sprev)
        s->sprev->snext = s->snext;
    else
        m->streams = s->snext;
    if (s->snext)
        s->snext->sprev = s->sprev;
    s->snext = s->sprev = NULL;
    m->nstreams--;
}

/* The connection new streams on loop l go to: the current one, or a new
 * one. NULL with h2_why told. */
static struct h2mux *h2_mux_for(struct loop *l, const struct route *r)
{
    struct h2mux *m = h2_cur;
    if (!m || m->dead || m->goaway || m->loop != l) {
        m = h2_mux_new(l, r);
        if (m)
            h2_cur = m;
    }
    return m;
}

int h2_connect(struct loop *l, const struct route *r)
{
    struct h2mux *m = h2_cur;
    if ((!m || m->dead || m->goaway || m->loop != l) && h2_setup_state < 0)
        return -1; /* the last one failed: no new attempt on every call */
    m = h2_mux_for(l, r);
    if (!m)
        return -1;
    return m->handshaken ? 1 : 0;
}

int h2_stream_open(struct sclient *sc, struct loop *l, const struct route *r)
{
    struct h2mux *m = h2_mux_for(l, r);
    if (!m)
        return -ECONNREFUSED;
    struct h2s *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(h2_why, sizeof(h2_why), "no memory");
        return -ENOMEM;
    }
    h2s_link(m, s);
    s->sc = sc;
    sc->h2 = s;
    int rc = h2_submit(m, s, r);
    if (rc) {
        snprintf(h2_why, sizeof(h2_why), "cannot submit the h2 CONNECT: %s", strerror(-rc));
        sc->h2 = NULL;
        s->sc = NULL;
        s->ng_closed = true;
        h2s_maybe_free(s);
        return rc;
    }
    h2_flush(m);
    return 0;
}

int h2_stream_state(const struct sclient *sc)
{
    const struct h2s *s = sc->h2;
    if (!s)
        return -1;
    if (s->failed)
        return -1;
    return s->opened ? 1 : 0;
}

ssize_t h2_stream_recv(struct sclient *sc, void *p, size_t n)
{
    struct h2s *s = sc->h2;
    if (!s) {
        errno = EBADF;
        return -1;
    }
    if (s->rlen == s->rhead) {
        if (s->eof)
            return 0;
        errno = s->reset || s->failed || s->m->dead ? ECONNRESET : EAGAIN;
        if (errno == EAGAIN)
            sc->ev &= (uint8_t)~SC_RD;
        return -1;
    }
    size_t k = MIN(n, s->rlen - s->rhead);
    memcpy(p, s->rx + s->rhead, k);
    s->rhead += k;
    if (!s->m->dead) { /* the connection's credit even when the stream is gone */
        nghttp2_session_consume(s->m->ng, s->id, k);
        h2_flush(s->m); /* a WINDOW_UPDATE may be due */
    }
    return (ssize_t)k;
}

size_t h2_stream_unread(const struct sclient *sc)
{
    const struct h2s *s = sc->h2;
    return s ? s->rlen - s->rhead : 0;
}

ssize_t h2_stream_send(struct sclient *sc, const void *p, size_t n)
{
    struct h2s *s = sc->h2;
    if (!s || s->reset || s->failed || s->ng_closed || s->m->dead) {
        errno = s && (s->reset || s->m->dead) ? ECONNRESET : EPIPE;
        return -1;
    }
    if (!s->tx && !(s->tx = malloc(H2_TX_CAP))) {
        errno = ENOMEM;
        return -1;
    }
    if (s->thead && s->tlen + n > H2_TX_CAP) {
        memmove(s->tx, s->tx + s->thead, s->tlen - s->thead);
        s->tlen -= s->thead;
        s->thead = 0;
    }
    size_t k = MIN(n, H2_TX_CAP - s->tlen);
    if (k < n)
        s->wblocked = true; /* told EPOLLOUT once half of the buffer is free */
    if (!k) {
        sc->ev &= (uint8_t)~SC_WR;
        errno = EAGAIN;
        return -1;
    }
    memcpy(s->tx + s->tlen, p, k);
    s->tlen += k;
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->m->ng, s->id);
    }
    h2_flush(s->m);
    return (ssize_t)k;
}

void h2_stream_close(struct sclient *sc)
{
    struct h2s *s = sc->h2;
    if (!s)
        return;
    sc->h2 = NULL;
    s->sc = NULL;
    struct h2mux *m = s->m;
    if (!s->ng_closed && !m->dead) {
        /* Sent from the mux's own turn: sending it here could free s under us. */
        nghttp2_submit_rst_stream(m->ng, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
        h2_kick(m);
    }
    h2s_maybe_free(s);
}

const char *h2_fail_reason(void)
{
    return h2_why;
}

void h2_thread_end(void)
{
    while (h2_all)
        h2_mux_free(h2_all);
    h2_cur = NULL;
}
