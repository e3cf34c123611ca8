/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front.c: the two front rows a session has before its protocol is known:
 * the PROXY protocol header of a trusted load balancer (which replaces the
 * client address, then hands over to the sniff), and the sniff of the
 * first byte, which picks the protocol row among those the listener
 * speaks. This room knows every protocol row by name, so that conn.c
 * knows none; it must not grow protocol logic of its own.
 */
#include "relay/front.h"

#include <errno.h>
#include <sys/socket.h>

#include "acl/rules.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/sock.h"
#include "log/log.h"
#include "proto/proxy.h"
#include "relay/session.h"

/* Before a protocol: the access log has nothing to name. */
static void front_pre_end(struct conn *c)
{
    conn_access_log(c, "-", "-");
}

const struct front_ops *front_after_pre(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return c->listen_index < cfg->nlisten && cfg->listen[c->listen_index].forward_port
               ? &front_forward
               : &front_sniff;
}

/* ---- the first byte ------------------------------------------------------ */

/* The row a first byte stands for, or NULL. HTTP: a method's first letter,
 * or the CR of an empty line before the request line (RFC 9112 2.2; http.c
 * skips a few). */
static const struct front_ops *front_sniff_pick(uint8_t first)
{
    if (first == 0x05)
        return &front_socks5;
    if (first == 0x04)
        return &front_socks4;
    if ((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z') || first == '\r')
        return &front_http;
    return NULL;
}

/* The first byte picks the protocol, among those the listener speaks. */
static void front_sniff_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    if (buf_len(b) == 0) {
        if (c->c2u.flags & HALF_EOF)
            conn_close(c, "client-closed");
        return;
    }
    const struct config *cfg = conn_cfg(c);
    uint8_t allowed = c->listen_index < cfg->nlisten ? cfg->listen[c->listen_index].protocols : 0;
    if (!allowed)
        allowed = cfg->protocols;
    const struct front_ops *f = front_sniff_pick(*buf_head(b));
    if (!f || !(allowed & f->proto)) {
        conn_bad_handshake(c);
        stat_add(&c->w->stats.unknown_protocol, 1);
        conn_close(c, f ? "protocol-not-enabled" : "unknown-protocol");
        return;
    }
    conn_set_front(c, f);
    f->start(c);
}

/* Handed over from the PROXY header: go on if anything is there already. */
static void front_sniff_start(struct conn *c)
{
    if ((c->c2u.buf && buf_len(c->c2u.buf)) || (c->cli_ev & SIDE_RD) || (c->c2u.flags & HALF_EOF))
        front_sniff_drive(c, 0);
}

static void front_sniff_timeout(struct conn *c)
{
    conn_bad_handshake(c);
    conn_close(c, "handshake-timeout");
}

const struct front_ops front_sniff = {
    .name = "sniff",
    .sp = SP_NONE,
    .start = front_sniff_start,
    .drive = front_sniff_drive,
    .timeout = front_sniff_timeout,
    .end = front_pre_end,
};

/* ---- PROXY protocol ------------------------------------------------------ */

static bool proxy_trusted(const struct config *cfg, const struct addr *peer)
{
    for (size_t i = 0; i < cfg->nproxy_from; i++)
        if (acl_cidr_contains(&cfg->proxy_from[i], peer))
            return true;
    return false;
}

/* Refusals come in floods (a scanner, a misrouted health check): one log
 * line per second per worker says how many. */
static void proxy_refused(struct conn *c, const char *why)
{
    static _Thread_local uint64_t last_ms, suppressed;
    uint64_t now = loop_now(&c->w->loop);
    stat_add(&c->w->stats.proxy_rejected, 1);
    if (last_ms && now - last_ms < 1000) {
        suppressed++;
    } else {
        char a[ADDR_STRLEN];
        log_warn("proxy_protocol: connection from %s refused: %s%s",
                 addr_format(&c->client, a, sizeof(a)), why,
                 suppressed ? " (and others in the last second)" : "");
        last_ms = now;
        suppressed = 0;
    }
    conn_bad_handshake(c);
    conn_close(c, "proxy-protocol");
}

/* On a tls:// listener the PROXY header comes in plaintext before the
 * ClientHello, and OpenSSL reads the socket itself afterwards: a byte of
 * the ClientHello read into our buffer would be lost to it. So the header
 * is only peeked (MSG_PEEK: the socket keeps every byte) and, once whole,
 * exactly its length is consumed (front_proxy_take), leaving the
 * ClientHello in the socket. This is simpler than replaying bytes through
 * a memory BIO. Each peek sees everything queued; the socket is
 * edge-triggered, so a later segment brings a new event. */
static int front_proxy_peek(struct conn *c)
{
    struct half *h = &c->c2u;
    if (!h->buf && !(h->buf = buf_get(&c->w->bufs)))
        return -ENOMEM;
    if (!(c->cli_ev & SIDE_RD))
        return 0;
    struct buf *b = h->buf;
    b->start = b->end = 0;
    ssize_t n = recv(c->cli.fd, b->data, b->cap, MSG_PEEK);
    if (n > 0) {
        b->end = (uint32_t)n;
        if ((uint32_t)n < b->cap)
            c->cli_ev &= (uint8_t)~SIDE_RD;
    } else if (n == 0) {
        h->flags |= HALF_EOF;
    } else if (errno == EAGAIN) {
        c->cli_ev &= (uint8_t)~SIDE_RD;
    } else if (errno != EINTR) {
        return -errno;
    }
    return 0;
}

/* Consume the n peeked bytes of the header; true if more were peeked (the
 * ClientHello's start is already waiting: no new edge will say so). */
static bool front_proxy_take(struct conn *c, uint32_t n, int *err)
{
    struct buf *b = c->c2u.buf;
    bool more = buf_len(b) > n;
    ssize_t got;
    do
        got = recv(c->cli.fd, b->data, n, 0);
    while (got < 0 && errno == EINTR);
    *err = got == (ssize_t)n ? 0 : got < 0 ? -errno : -EIO;
    b->start = b->end = 0;
    return more;
}

/* At accept: only a trusted load balancer may send a PROXY header. */
static void front_proxy_start(struct conn *c)
{
    if (!proxy_trusted(conn_cfg(c), &c->client))
        proxy_refused(c, "not in proxy_protocol_from");
}

static void front_proxy_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    const struct config *cfg = conn_cfg(c);
    bool tls = cfg->listen[c->listen_index].tls;
    int rc = tls ? front_proxy_peek(c) : conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    uint8_t ver = cfg->listen[c->listen_index].proxy_protocol;
    struct proxy_header h;
    ssize_t n = proxy_parse(ver == 2 ? PROXY_V2 : PROXY_V1, buf_head(b), buf_len(b), &h);
    if (n == 0) {
        if (c->c2u.flags & HALF_EOF)
            proxy_refused(c, "closed before a whole PROXY header");
        else if (buf_room(b) == 0)
            proxy_refused(c, "PROXY header larger than the buffer");
        return;
    }
    if (n < 0) {
        proxy_refused(c, proxy_strerror((int)n));
        return;
    }
    bool more = false;
    if (tls)
        more = front_proxy_take(c, (uint32_t)n, &rc);
    else
        buf_consume(b, (uint32_t)n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    if (!h.local) {
        addr_unmap(&h.src); /* as accept() reports them, for rules and limits */
        c->client = h.src;
    }
    bool tracked;
    if (!policy_admit_client(c->w, &c->client, &tracked)) {
        conn_set_outcome(c, OUT_LIMIT);
        sock_abort(c->cli.fd);
        conn_close(c, "limit");
        return;
    }
    c->ip_tracked = tracked;
    conn_set_state(c, CONN_ST_GREETING);
    if (tls) {
        if (more)
            c->cli_ev |= SIDE_RD;
        conn_set_front(c, &front_tls);
        front_tls.start(c);
        return;
    }
    const struct front_ops *next = front_after_pre(c);
    conn_set_front(c, next);
    next->start(c);
}

static void front_proxy_timeout(struct conn *c)
{
    proxy_refused(c, "no PROXY header within handshake_timeout");
}

const struct front_ops front_proxy = {
    .name = "proxy",
    .sp = SP_NONE,
    .start = front_proxy_start,
    .drive = front_proxy_drive,
    .timeout = front_proxy_timeout,
    .end = front_pre_end,
};
