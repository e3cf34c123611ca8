/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_parent.c: the parent-proxy outbound (outbound.h): reach a
 * destination through a SOCKS5, SOCKS4a or HTTP CONNECT proxy named by an
 * [outbound NAME] section. It resolves the parent's host when it is a name
 * (the worker's resolver), connects to its addresses in turn within the
 * connect budget, then drives the client side of the parent's handshake
 * (proto/parent) over c->up and ends in conn_connected() with c->up a plain
 * socket carrying the destination's stream, or in outbound_fail() with a
 * neutral outcome and a log line that names the parent.
 *
 * Which name the parent sees: with remote_dns (socks5h, socks4a, http) the
 * destination name goes to the parent as a name; for plain socks5 it is
 * resolved here first and its first address is sent. The rules have
 * judged the destination before (conn_dial()). All handshake I/O on
 * c->up goes through parent_io_send() and parent_io_recv(), so a TLS layer
 * can take their place. It must not learn any front protocol, and answers
 * nothing to the client itself.
 */
#include <errno.h>
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
#include "relay/outbound_https.h"
#include "relay/session.h"
#include "util/compiler.h"

enum pd_phase {
    PD_RESOLVE_DST,    /* plain socks5: the destination name, here */
    PD_RESOLVE_PARENT, /* the parent's host name */
    PD_CONNECT,        /* TCP to one of the parent's addresses */
    PD_TLS,            /* an HTTPS parent: the TLS handshake (outbound_https.c) */
    PD_HANDSHAKE,      /* the parent's handshake (proto/parent) */
    PD_DONE,           /* c->up carries the destination's stream */
};

/* A dial through a parent: c->ob_priv from dial to close. */
struct parent_dial {
    struct parent_hs hs;
    struct dns_answer peers; /* the parent's addresses */
    uint8_t next_peer;
    uint8_t phase;   /* enum pd_phase */
    struct addr dst; /* the destination address to send (no name sent) */
    bool send_name;  /* send c->dst_name rather than dst */
};

static const struct config_outbound *pd_ob(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return c->ob < cfg->noutbounds ? &cfg->outbounds[c->ob] : NULL;
}

/* ---- I/O with the parent: the one place a TLS layer would take ---------- */

/* Send to the parent: bytes sent, or -errno (-EAGAIN: would block, *want
 * the readiness of c->up it waits for: TLS may have to read to write). */
static ssize_t parent_io_send(struct conn *c, const uint8_t *p, size_t len, uint8_t *want)
{
    if (c->tls)
        return https_write(c, p, len, want);
    ssize_t n = send(c->up.fd, p, len, MSG_NOSIGNAL);
    *want = SIDE_WR;
    return n < 0 ? -errno : n;
}

/* Receive from the parent: with peek, look without taking (what the
 * handshake does not consume stays for the relay). Bytes, 0 at EOF, or
 * -errno (-EAGAIN: nothing now, *want as for parent_io_send()). */
static ssize_t parent_io_recv(struct conn *c, uint8_t *p, size_t len, bool peek, uint8_t *want)
{
    if (c->tls)
        return peek ? https_peek(c, p, len, want) : https_read(c, p, len, want);
    ssize_t n = recv(c->up.fd, p, len, peek ? MSG_PEEK : 0);
    *want = SIDE_RD;
    return n < 0 ? -errno : n;
}

/* Bytes TLS holds decrypted that epoll will not announce again. */
static bool parent_io_pending(const struct conn *c)
{
    return c->tls && https_pending(c);
}

/* ---- failure ------------------------------------------------------------ */

/* Give back what this attempt holds: the lookup, the socket, the state. */
static void pd_release(struct conn *c)
{
    resolver_cancel(c->dns);
    c->dns = NULL;
    https_close(c);
    conn_close_fd(&c->up);
    free(c->ob_priv);
    c->ob_priv = NULL;
}

/* Fail the dial with o; what is the log's sentence about the parent (NULL:
 * no log line beyond the access log's). warn: the operator should look (a
 * parent down, refusing our credentials, speaking nonsense), else debug.
 * A parent that is down fails every session: one warning per second per
 * worker says how many more there were. */
static void pd_fail(struct conn *c, enum outcome o, const char *why, const char *what, bool warn)
{
    static _Thread_local uint64_t last_ms, suppressed;
    const struct config_outbound *ob = pd_ob(c);
    uint64_t now = loop_now(&c->w->loop);
    if (what && ob && warn && last_ms && now - last_ms < 1000) {
        suppressed++;
    } else if (what && ob && log_enabled(warn ? LOG_WARN : LOG_DEBUG)) {
        log_write(warn ? LOG_WARN : LOG_DEBUG, "conn %llu: outbound %s: parent %s port %u: %s%s",
                  (unsigned long long)c->id, ob->name, ob->host, ob->port, what,
                  warn && suppressed ? " (and other failures in the last second)" : "");
        if (warn) {
            last_ms = now;
            suppressed = 0;
        }
    }
    pd_release(c);
    outbound_fail(c, o, why);
}

void outbound_parent_outcome(uint8_t fail, enum outcome *o, const char **why)
{
    static const struct {
        uint8_t outcome;
        const char *why;
    } map[PARENT_FAIL_COUNT] = {
        [PARENT_FAIL_NONE] = {OUT_FAILED, "parent-failed"},
        [PARENT_FAIL_GENERAL] = {OUT_FAILED, "parent-failed"},
        [PARENT_FAIL_BAD_REPLY] = {OUT_FAILED, "parent-bad-reply"},
        [PARENT_FAIL_AUTH] = {OUT_FAILED, "parent-auth-failed"},
        [PARENT_FAIL_DENIED] = {OUT_DENIED, "parent-denied"},
        [PARENT_FAIL_NET_UNREACHABLE] = {OUT_NET_UNREACHABLE, "parent-net-unreachable"},
        [PARENT_FAIL_HOST_UNREACHABLE] = {OUT_HOST_UNREACHABLE, "parent-host-unreachable"},
        [PARENT_FAIL_REFUSED] = {OUT_REFUSED, "parent-refused"},
        [PARENT_FAIL_TIMEOUT] = {OUT_TIMEOUT, "parent-dest-timeout"}, /* its answer */
        [PARENT_FAIL_CMD_UNSUPPORTED] = {OUT_CMD_UNSUPPORTED, "parent-cmd-unsupported"},
        [PARENT_FAIL_ADDR_UNSUPPORTED] = {OUT_ADDR_UNSUPPORTED, "parent-addr-unsupported"},
    };
    uint8_t f = fail < PARENT_FAIL_COUNT ? fail : PARENT_FAIL_GENERAL;
    *o = (enum outcome)map[f].outcome;
    *why = map[f].why;
}

/* A failed handshake: its neutral failure to an outcome and a why for the
 * access log. An auth failure at the parent is not the client's: it is
 * answered as a general failure (SOCKS 0x01, HTTP 502). */
static void pd_fail_hs(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    uint8_t f = pd->hs.fail < PARENT_FAIL_COUNT ? pd->hs.fail : PARENT_FAIL_GENERAL;
    bool warn = f == PARENT_FAIL_AUTH || f == PARENT_FAIL_BAD_REPLY;
    char what[sizeof(pd->hs.reason)];
    memcpy(what, pd->hs.reason, sizeof(what));
    enum outcome o;
    const char *why;
    outbound_parent_outcome(f, &o, &why);
    pd_fail(c, o, why, what, warn);
}

/* ---- the handshake ------------------------------------------------------ */

static enum parent_proto pd_proto(uint8_t kind)
{
    switch (kind) {
    case OUTBOUND_KIND_SOCKS4:
        return PARENT_SOCKS4;
    case OUTBOUND_KIND_HTTP:
    case OUTBOUND_KIND_HTTPS:
        return PARENT_HTTP;
    default:
        return PARENT_SOCKS5;
    }
}

/* The handshake's bytes until it needs the socket to be ready again, is
 * done (conn_connected) or has failed. */
static void pd_pump(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    for (;;) {
        const uint8_t *out;
        size_t n = parent_pending(&pd->hs, &out);
        if (n) {
            if (!(c->up_ev & SIDE_WR))
                return;
            uint8_t want = SIDE_WR;
            ssize_t k = parent_io_send(c, out, n, &want);
            if (k == -EAGAIN) {
                c->up_ev &= (uint8_t)~want;
                return;
            }
            if (k < 0) {
                c->err = (int)k;
                pd_fail(c, OUT_FAILED, "parent-error", "send failed", false);
                return;
            }
            parent_sent(&pd->hs, (size_t)k);
            continue;
        }
        if (!(c->up_ev & SIDE_RD) && !parent_io_pending(c))
            return;
        /* SOCKS replies say their length: read that many and no more. An
         * HTTP head does not: peek, and take what it used. */
        uint8_t in[1024], want = SIDE_RD;
        size_t sure = parent_want(&pd->hs);
        bool peek = sure == 0;
        ssize_t got = parent_io_recv(c, in, peek ? sizeof(in) : MIN(sure, sizeof(in)), peek, &want);
        if (got == -EAGAIN) {
            c->up_ev &= (uint8_t)~want;
            return;
        }
        if (got <= 0) {
            c->err = (int)got;
            pd_fail(c, OUT_FAILED, "parent-closed",
                    got ? "connection lost during the handshake"
                        : "parent closed the connection during the handshake",
                    true);
            return;
        }
        size_t used = parent_feed(&pd->hs, in, (size_t)got);
        /* Take what the handshake consumed; the rest is the relay's. */
        if (peek && used && parent_io_recv(c, in, used, false, &want) != (ssize_t)used) {
            pd_fail(c, OUT_FAILED, "parent-error", "recv failed", false);
            return;
        }
        if (parent_state(&pd->hs) == PARENT_FAILED) {
            pd_fail_hs(c);
            return;
        }
        if (parent_state(&pd->hs) == PARENT_DONE) {
            pd->phase = PD_DONE;
            conn_connected(c);
            return;
        }
        if (used == 0)
            return; /* cannot happen: a handshake in progress with nothing to send reads */
    }
}

/* TCP to the parent is up: start its handshake. */
static void pd_handshake(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    const struct config_outbound *o = pd_ob(c);
    /* A plain HTTP request to an HTTP parent: no tunnel, the parent takes
     * the request itself (the HTTP front writes it in absolute form). */
    if (outbound_proxy_form(c)) {
        pd->phase = PD_DONE;
        conn_connected(c);
        return;
    }
    pd->phase = PD_HANDSHAKE;
    loop_timer_arm_at(&c->w->loop, &c->timer, c->deadline);
    int rc = parent_init(&pd->hs, pd_proto(o->kind), PARENT_CMD_CONNECT, o->user, o->pass,
                         pd->send_name ? c->dst_name : NULL, &pd->dst, c->dst_port);
    if (rc == -EAFNOSUPPORT) {
        pd_fail(c, OUT_ADDR_UNSUPPORTED, "parent-addr-unsupported",
                "a SOCKS4 parent cannot reach an IPv6 address", false);
        return;
    }
    if (rc) {
        pd_fail(c, OUT_FAILED, "parent-request",
                "the destination or credentials cannot be sent to this parent", true);
        return;
    }
    pd_pump(c);
}

/* ---- TLS under the handshake (an HTTPS parent) -------------------------- */

static void pd_tls(struct conn *c)
{
    const char *why = NULL;
    int rc = https_handshake(c, &why);
    if (rc == 1)
        pd_handshake(c);
    else if (rc < 0) /* a parent not to be trusted, or no TLS: the operator should look */
        pd_fail(c, OUT_FAILED, why, https_error(c), true);
}

static void pd_tls_start(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    if (https_start(c, pd_ob(c)) < 0) {
        pd_fail(c, OUT_FAILED, "no-memory", "cannot start TLS", false);
        return;
    }
    pd->phase = PD_TLS;
    pd_tls(c);
}

/* ---- reaching the parent ------------------------------------------------ */

/* Connect to the parent's next address, each remaining one given an even
 * share of what is left of the budget (the handshake has the rest). */
static void pd_connect_next(struct conn *c, int last_err)
{
    struct parent_dial *pd = c->ob_priv;
    struct worker *w = c->w;
    conn_close_fd(&c->up);
    uint64_t now = loop_now(&w->loop);
    /* Where bytes leave: the outbound's source, else the listener's. */
    const struct config *cfg = conn_cfg(c);
    const struct outbound_source *src = &cfg->outbounds[c->ob].source;
    if (!src->addr.family && !src->device[0] && c->listen_index < cfg->nlisten)
        src = &cfg->listen[c->listen_index].source;
    while (pd->next_peer < pd->peers.n && now < c->deadline) {
        const struct addr *a = &pd->peers.a[pd->next_peer++];
        if (src->addr.family && src->addr.family != a->family) {
            last_err = -EAFNOSUPPORT; /* the source is of the other family */
            continue;
        }
        int fd = sock_connect_from(a, src->addr.family ? &src->addr : NULL, src->device, NULL);
        if (fd < 0) {
            last_err = fd;
            continue;
        }
        int rc = outbound_watch_connect(c, fd, now, (uint64_t)(pd->peers.n - pd->next_peer));
        if (rc) {
            last_err = rc;
            continue;
        }
        pd->phase = PD_CONNECT;
        return;
    }
    if (now >= c->deadline)
        last_err = -ETIMEDOUT;
    c->err = last_err;
    char what[96];
    snprintf(what, sizeof(what), "cannot connect: %s", errmap_name(last_err));
    if (last_err == -ETIMEDOUT)
        pd_fail(c, OUT_TIMEOUT, "parent-timeout", what, true);
    else
        pd_fail(c, OUT_FAILED, "parent-unreachable", what, true);
}

static void pd_on_parent_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    struct parent_dial *pd = c->ob_priv;
    c->dns = NULL;
    if (status != DNS_OK) {
        stat_add(&c->w->stats.dns_failures, 1);
        char what[96];
        snprintf(what, sizeof(what), "cannot resolve: %s", dns_status_str(status));
        pd_fail(c, OUT_FAILED, "parent-unresolved", what, true);
        return;
    }
    pd->peers = *ans;
    for (uint8_t i = 0; i < pd->peers.n; i++)
        addr_unmap(&pd->peers.a[i]);
    pd->next_peer = 0;
    pd_connect_next(c, -EHOSTUNREACH);
}

/* Find the parent: its host is an address literal, or a name to resolve. */
static void pd_find_parent(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    const struct config_outbound *o = pd_ob(c);
    struct worker *w = c->w;
    pd->phase = PD_RESOLVE_PARENT;
    memset(&pd->peers, 0, sizeof(pd->peers));
    if (addr_parse_ip(o->host, o->port, &pd->peers.a[0]) == 0) {
        pd->peers.n = 1;
        pd_connect_next(c, -EHOSTUNREACH);
        return;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, o->host, o->port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        pd_on_parent_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, o->host, o->port, pd_on_parent_dns, c);
    if (!c->dns) {
        pd_fail(c, OUT_FAILED, "no-memory", NULL, false);
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

/* Plain socks5: the destination name resolved here, and its first
 * address sent. The rules allowed the name as such (conn_dial(); when only
 * an address could tell, the direct outbound resolved it, judged each
 * address and handed one over). */
static void pd_on_dst_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    struct parent_dial *pd = c->ob_priv;
    c->dns = NULL;
    if (status != DNS_OK || ans->n == 0) {
        stat_add(&c->w->stats.dns_failures, 1);
        log_debug("conn %llu: resolve %s: %s", (unsigned long long)c->id, c->dst_name,
                  dns_status_str(status));
        pd_fail(c, errmap_dns(status), "resolve-failed", NULL, false);
        return;
    }
    pd->dst = ans->a[0];
    pd->dst.port = c->dst_port;
    addr_unmap(&pd->dst);
    c->target = pd->dst;
    pd_find_parent(c);
}

static void pd_resolve_dst(struct conn *c)
{
    struct worker *w = c->w;
    struct parent_dial *pd = c->ob_priv;
    pd->phase = PD_RESOLVE_DST;
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, c->dst_name, c->dst_port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        pd_on_dst_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, c->dst_port, pd_on_dst_dns, c);
    if (!c->dns) {
        pd_fail(c, OUT_FAILED, "no-memory", NULL, false);
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

/* ---- the row ------------------------------------------------------------ */

/* conn_dial() has judged the destination, set c->dst_name and c->dst_port
 * and started the connect budget (c->deadline, the session's timer). */
static void ob_parent_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    const struct config_outbound *o = pd_ob(c);
    https_close(c); /* an HTTP session's previous request may have left one */
    free(c->ob_priv);
    struct parent_dial *pd = c->ob_priv = calloc(1, sizeof(*pd));
    if (!pd || !o) {
        pd_fail(c, OUT_FAILED, pd ? "no-outbound" : "no-memory", NULL, false);
        return;
    }
    /* Clients often send an IP literal as a "domain". */
    struct addr lit;
    if (name && addr_parse_ip(name, port, &lit) == 0) {
        ip = &lit;
        name = NULL;
    }
    if (!name) {
        pd->dst = *ip;
        pd->dst.port = port;
        addr_unmap(&pd->dst);
        c->target = pd->dst;
        pd_find_parent(c);
        return;
    }
    pd->send_name = o->remote_dns;
    if (pd->send_name)
        pd_find_parent(c);
    else
        pd_resolve_dst(c);
}

static void ob_parent_event(struct conn *c, uint32_t events)
{
    struct parent_dial *pd = c->ob_priv;
    if (!pd)
        return;
    if (pd->phase == PD_HANDSHAKE) {
        pd_pump(c);
        return;
    }
    if (pd->phase == PD_TLS) {
        pd_tls(c);
        return;
    }
    if (pd->phase != PD_CONNECT || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    int err = (events & (EPOLLERR | EPOLLHUP)) ? sock_error(c->up.fd) : 0;
    if (err == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
        sock_set_nodelay(c->up.fd);
        if (pd_ob(c)->kind == OUTBOUND_KIND_HTTPS)
            pd_tls_start(c);
        else
            pd_handshake(c);
        return;
    }
    if (err == 0)
        err = -ECONNREFUSED;
    pd_connect_next(c, err);
}

static void ob_parent_timeout(struct conn *c)
{
    struct parent_dial *pd = c->ob_priv;
    if (!pd) {
        outbound_fail(c, OUT_TIMEOUT, "connect-timeout");
        return;
    }
    switch ((enum pd_phase)pd->phase) {
    case PD_RESOLVE_DST:
        pd_fail(c, OUT_TIMEOUT, "connect-timeout", NULL, false);
        break;
    case PD_RESOLVE_PARENT:
        pd_fail(c, OUT_TIMEOUT, "parent-timeout", "no answer from DNS within the connect budget",
                true);
        break;
    case PD_CONNECT:
        pd_connect_next(c, -ETIMEDOUT);
        break;
    case PD_TLS:
        pd_fail(c, OUT_TIMEOUT, "parent-timeout", "no TLS handshake within the connect budget",
                true);
        break;
    case PD_HANDSHAKE:
        pd_fail(c, OUT_TIMEOUT, "parent-timeout", "no answer within the connect budget", true);
        break;
    case PD_DONE:
        break;
    }
}

static int ob_parent_bnd(const struct conn *c, struct addr *out)
{
    const struct parent_dial *pd = c->ob_priv;
    if (pd && parent_bnd(&pd->hs, out))
        return 0;
    return sock_local_addr(c->up.fd, out);
}

static void ob_parent_close(struct conn *c)
{
    https_close(c);
    resolver_cancel(c->dns);
    c->dns = NULL;
    free(c->ob_priv);
    c->ob_priv = NULL;
}

const struct outbound_ops outbound_parent = {
    .name = "parent",
    .splice = true,
    .dial = ob_parent_dial,
    .event = ob_parent_event,
    .timeout = ob_parent_timeout,
    .bnd = ob_parent_bnd,
    .close = ob_parent_close,
};

/* An HTTPS parent: the same dial with TLS 1.3 under the HTTP CONNECT, and
 * the relay through TLS: a byte stream the buffer pump carries
 * (outbound_https.c). */
const struct outbound_ops outbound_https = {
    .name = "https",
    .splice = false,
    .dial = ob_parent_dial,
    .event = ob_parent_event,
    .timeout = ob_parent_timeout,
    .bnd = ob_parent_bnd,
    .close = ob_parent_close,
    .read = https_read,
    .write = https_write,
    .shutdown_wr = https_shutdown_wr,
    .pending = https_pending,
};
