/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_check.c: the health checks of pools (health_check = INTERVAL,
 * health_target = HOST:PORT). Every interval, each member of each such
 * pool is checked by a real CONNECT through it to the target within the
 * member's connect budget: a direct member connects to the target; a
 * SOCKS5, SOCKS4a or HTTP parent is connected to and asked, by the same
 * handshake machine sessions use (proto/parent), to CONNECT to the target
 * (a name goes to the parent as a name); an HTTPS parent the same after
 * a TLS handshake that verifies it (tls/, the member's context: a wrong
 * pin or CA fails the check). The result marks the member up or down
 * (outbound_pool.c), with the same log lines as sessions.
 *
 * The checks of one configuration run on one loop (worker 0's) and hold a
 * reference on that configuration; a reload stops them and starts those of
 * the new one, whose health is fresh. Stopped checks are unlinked at once
 * and freed after the loop's batch (the loop's rule), so no event, timer
 * or lookup reaches them afterwards. This file must not touch sessions.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/parent.h"
#include "relay/errmap.h"
#include "relay/outbound.h"
#include "tls/tls.h"
#include "worker/worker.h"

enum probe_phase {
    PR_IDLE,      /* waiting for the next interval */
    PR_RESOLVE,   /* the address to connect to (the target, or the parent) */
    PR_CONNECT,   /* TCP */
    PR_TLS,       /* an HTTPS parent: the TLS handshake */
    PR_HANDSHAKE, /* a parent's CONNECT to the target */
};

/* One member of one pool. */
struct probe {
    struct ob_checks *ck;
    uint16_t pool, member; /* indexes of cfg->outbounds */
    uint8_t phase;         /* enum probe_phase */
    struct io io;
    struct timer timer; /* the next check, or this one's deadline */
    struct dns_req *dns;
    uint64_t started_ms; /* loop ms, for the next interval */
    uint64_t t0_us;
    struct parent_hs hs;
    struct tls *tls; /* an HTTPS parent's, during a check */
};

struct ob_checks {
    struct worker *w;
    struct config *cfg;
    struct release rel;
    uint32_t n;
    struct probe p[];
};

static const struct config_outbound *probe_member(const struct probe *p)
{
    return &p->ck->cfg->outbounds[p->member];
}

static const struct config_outbound *probe_pool(const struct probe *p)
{
    return &p->ck->cfg->outbounds[p->pool];
}

/* Give back the attempt's lookup and socket. */
static void probe_release(struct probe *p)
{
    struct loop *l = &p->ck->w->loop;
    resolver_cancel(p->dns);
    p->dns = NULL;
    tls_free(p->tls);
    p->tls = NULL;
    if (p->io.fd >= 0) {
        int fd = p->io.fd;
        loop_io_del(l, &p->io);
        close(fd);
    }
}

/* The check is over: the next one an interval after this one began. */
static void probe_end(struct probe *p)
{
    struct loop *l = &p->ck->w->loop;
    probe_release(p);
    p->phase = PR_IDLE;
    loop_timer_arm_at(l, &p->timer, p->started_ms + probe_pool(p)->health_ms);
}

static void probe_ok(struct probe *p, const char *how)
{
    uint64_t now = clock_us();
    outbound_mark_up(p->ck->cfg, p->member, p->pool, now > p->t0_us ? now - p->t0_us : 1, how);
    probe_end(p);
}

static void probe_fail(struct probe *p, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void probe_fail(struct probe *p, const char *fmt, ...)
{
    const struct config *cfg = p->ck->cfg;
    char reason[480], what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(reason, sizeof(reason), "health check to %s port %u: %s", probe_pool(p)->health_host,
             probe_pool(p)->health_port, what);
    atomic_fetch_add_explicit(&cfg->ob_health[p->member].failures, 1, memory_order_relaxed);
    outbound_mark_down(cfg, p->member, p->pool, loop_now(&p->ck->w->loop), reason);
    probe_end(p);
}

/* Send to the parent (through TLS for an HTTPS one): bytes or -errno. */
static ssize_t probe_send(struct probe *p, const uint8_t *b, size_t n)
{
    uint8_t want;
    if (p->tls)
        return tls_write(p->tls, b, n, &want);
    ssize_t k = send(p->io.fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    return k < 0 ? -errno : k;
}

/* Receive (peek: leave the bytes) from the parent: bytes, 0 at EOF, -errno. */
static ssize_t probe_recv(struct probe *p, uint8_t *b, size_t n, bool peek)
{
    uint8_t want;
    if (p->tls)
        return peek ? tls_peek(p->tls, b, n, &want) : tls_read(p->tls, b, n, &want);
    ssize_t k = recv(p->io.fd, b, n, (peek ? MSG_PEEK : 0) | MSG_DONTWAIT);
    return k < 0 ? -errno : k;
}

/* A parent's handshake, until it needs the socket again, is done or has
 * failed. Bytes past the parent's reply are left unread: the socket
 * closes. Every call tries until EAGAIN, so TLS's turned-around waits
 * (a read that must write) need no bookkeeping here. */
static void probe_pump(struct probe *p)
{
    for (;;) {
        const uint8_t *out;
        size_t n = parent_pending(&p->hs, &out);
        if (n) {
            ssize_t k = probe_send(p, out, n);
            if (k == -EAGAIN)
                return;
            if (k < 0) {
                probe_fail(p, "send: %s", p->tls ? tls_error(p->tls) : errmap_name((int)k));
                return;
            }
            parent_sent(&p->hs, (size_t)k);
            continue;
        }
        uint8_t in[512];
        ssize_t got = probe_recv(p, in, sizeof(in), true);
        if (got == -EAGAIN)
            return;
        if (got <= 0) {
            probe_fail(p, "%s during the parent's handshake",
                       !got     ? "connection closed"
                       : p->tls ? tls_error(p->tls)
                                : errmap_name((int)got));
            return;
        }
        size_t used = parent_feed(&p->hs, in, (size_t)got);
        if (used && probe_recv(p, in, used, false) != (ssize_t)used) {
            probe_fail(p, "%s", "recv failed");
            return;
        }
        if (parent_state(&p->hs) == PARENT_FAILED) {
            probe_fail(p, "%s", p->hs.reason[0] ? p->hs.reason : "the parent refused");
            return;
        }
        if (parent_state(&p->hs) == PARENT_DONE) {
            probe_ok(p, "its health check passed");
            return;
        }
        if (!used) {
            probe_fail(p, "%s", "the parent's handshake did not advance");
            return;
        }
    }
}

static enum parent_proto probe_proto(uint8_t kind)
{
    if (kind == OUTBOUND_KIND_SOCKS4)
        return PARENT_SOCKS4;
    if (kind == OUTBOUND_KIND_HTTP || kind == OUTBOUND_KIND_HTTPS)
        return PARENT_HTTP;
    return PARENT_SOCKS5;
}

static void probe_ask(struct probe *p);

/* An HTTPS parent: the TLS handshake (the parent verified), then its
 * CONNECT as for any parent. */
static void probe_tls(struct probe *p)
{
    uint8_t want;
    int rc = tls_handshake(p->tls, &want);
    if (rc == 0)
        probe_ask(p);
    else if (rc != -EAGAIN)
        probe_fail(p, "%s", tls_error(p->tls));
}

/* TCP is up: a direct member has passed; a parent is asked to CONNECT to
 * the target (an HTTPS one once TLS is up). */
static void probe_connected(struct probe *p)
{
    const struct config_outbound *m = probe_member(p);
    if (m->kind == OUTBOUND_KIND_DIRECT) {
        probe_ok(p, "its health check passed");
        return;
    }
    if (m->kind == OUTBOUND_KIND_HTTPS) {
        p->tls = m->tls ? tls_client_new(m->tls, p->io.fd, m->host) : NULL;
        if (!p->tls) {
            probe_fail(p, "%s", "cannot start TLS");
            return;
        }
        p->phase = PR_TLS;
        probe_tls(p);
        return;
    }
    probe_ask(p);
}

static void probe_ask(struct probe *p)
{
    const struct config_outbound *m = probe_member(p), *pool = probe_pool(p);
    struct addr ip;
    memset(&ip, 0, sizeof(ip));
    bool literal = addr_parse_ip(pool->health_host, pool->health_port, &ip) == 0;
    int rc = parent_init(&p->hs, probe_proto(m->kind), PARENT_CMD_CONNECT, m->user, m->pass,
                         literal ? NULL : pool->health_host, &ip, pool->health_port);
    if (rc) {
        probe_fail(p, "%s", "the target cannot be sent to this parent");
        return;
    }
    p->phase = PR_HANDSHAKE;
    probe_pump(p);
}

static void probe_on_io(struct io *io, uint32_t events)
{
    struct probe *p = container_of(io, struct probe, io);
    if (p->phase == PR_HANDSHAKE) {
        probe_pump(p);
        return;
    }
    if (p->phase == PR_TLS) {
        probe_tls(p);
        return;
    }
    if (p->phase != PR_CONNECT || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = sock_error(io->fd);
        probe_fail(p, "cannot connect: %s", errmap_name(err ? err : -ECONNREFUSED));
        return;
    }
    probe_connected(p);
}

static void probe_connect(struct probe *p, const struct addr *a)
{
    struct addr to = *a;
    addr_unmap(&to);
    /* From where the member's sessions leave, so the check sees what they
     * would (a source address, a device). */
    const struct outbound_source *src = &probe_member(p)->source;
    const char *failed = NULL;
    int fd = sock_connect_from(&to, src->addr.family ? &src->addr : NULL, src->device, &failed);
    if (fd < 0) {
        probe_fail(p, "cannot connect%s%s%s: %s", failed ? " (" : "", failed ? failed : "",
                   failed ? ")" : "", errmap_name(fd));
        return;
    }
    int rc = loop_io_add(&p->ck->w->loop, &p->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        probe_fail(p, "cannot watch the socket: %s", errmap_name(rc));
        return;
    }
    p->phase = PR_CONNECT;
}

static void probe_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct probe *p = arg;
    p->dns = NULL;
    if (status != DNS_OK || ans->n == 0) {
        probe_fail(p, "cannot resolve: %s", dns_status_str(status));
        return;
    }
    probe_connect(p, &ans->a[0]);
}

/* Where the check connects: the target for a direct member, else the
 * parent. */
static void probe_start(struct probe *p)
{
    struct worker *w = p->ck->w;
    const struct config_outbound *m = probe_member(p), *pool = probe_pool(p);
    const struct config *cfg = p->ck->cfg;
    bool direct = m->kind == OUTBOUND_KIND_DIRECT;
    const char *host = direct ? pool->health_host : m->host;
    uint16_t port = direct ? pool->health_port : m->port;
    uint32_t budget = m->connect_timeout_ms ? m->connect_timeout_ms : cfg->connect_timeout_ms;
    p->started_ms = loop_now(&w->loop);
    p->t0_us = clock_us();
    p->phase = PR_RESOLVE;
    loop_timer_arm(&w->loop, &p->timer, budget);
    struct addr a;
    if (addr_parse_ip(host, port, &a) == 0) {
        probe_connect(p, &a);
        return;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, host, port, &status, &ans)) {
        probe_on_dns(p, status, &ans);
        return;
    }
    p->dns = resolver_query(&w->dns, host, port, probe_on_dns, p);
    if (!p->dns)
        probe_fail(p, "%s", "out of memory");
}

static void probe_on_timer(struct timer *t)
{
    struct probe *p = container_of(t, struct probe, timer);
    if (p->phase == PR_IDLE)
        probe_start(p);
    else
        probe_fail(p, "%s", "no answer within the connect budget");
}

struct ob_checks *outbound_checks_start(struct worker *w, struct config *cfg)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < cfg->noutbounds; i++)
        if (cfg->outbounds[i].kind == OUTBOUND_KIND_POOL && cfg->outbounds[i].health_ms)
            n += cfg->outbounds[i].nmembers;
    if (!n)
        return NULL;
    struct ob_checks *ck = calloc(1, sizeof(*ck) + n * sizeof(ck->p[0]));
    if (!ck) {
        log_error("worker %u: out of memory for the pools' health checks; none will run", w->id);
        return NULL;
    }
    ck->w = w;
    ck->cfg = config_ref(cfg);
    for (uint32_t i = 0; i < cfg->noutbounds; i++) {
        const struct config_outbound *o = &cfg->outbounds[i];
        if (o->kind != OUTBOUND_KIND_POOL || !o->health_ms)
            continue;
        for (unsigned k = 0; k < o->nmembers; k++) {
            struct probe *p = &ck->p[ck->n++];
            p->ck = ck;
            p->pool = (uint16_t)i;
            p->member = o->members[k];
            io_init(&p->io, probe_on_io);
            timer_init(&p->timer, probe_on_timer);
            loop_timer_arm(&w->loop, &p->timer, 0); /* the first check at once */
        }
    }
    return ck;
}

static void checks_free(struct release *r)
{
    struct ob_checks *ck = container_of(r, struct ob_checks, rel);
    config_unref(ck->cfg);
    free(ck);
}

void outbound_checks_stop(struct ob_checks *ck)
{
    if (!ck)
        return;
    struct loop *l = &ck->w->loop;
    for (uint32_t i = 0; i < ck->n; i++) {
        loop_timer_stop(l, &ck->p[i].timer);
        probe_release(&ck->p[i]);
    }
    loop_release(l, &ck->rel, checks_free);
}
