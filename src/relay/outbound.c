/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.c: from a configured outbound (config/outbound.h) to the row
 * that carries it (outbound.h), the built-in "reject", and what happens
 * when a dial through a row fails.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "relay/outbound.h"
#include "relay/session.h"

const struct outbound_ops *outbound_ops_for(const struct config_outbound *o)
{
    switch (o->kind) {
    case OUTBOUND_KIND_DIRECT:
        return &outbound_direct;
    case OUTBOUND_KIND_REJECT:
        return &outbound_reject;
    case OUTBOUND_KIND_SOCKS5:
    case OUTBOUND_KIND_SOCKS4:
    case OUTBOUND_KIND_HTTP:
        return &outbound_parent;
    case OUTBOUND_KIND_HTTPS:
        return o->mux == OUTBOUND_MUX_HTTP1 ? &outbound_https : &outbound_h2;
    case OUTBOUND_KIND_POOL:
        return &outbound_pool;
    default:
        return NULL;
    }
}

bool outbound_proxy_form(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return c->proxy_form && c->ob < cfg->noutbounds &&
           cfg->outbounds[c->ob].kind == OUTBOUND_KIND_HTTP;
}

void outbound_fail(struct conn *c, enum outcome o, const char *why)
{
    if (!outbound_pool_failover(c, o, why))
        conn_fail(c, o, why);
}

int outbound_watch_connect(struct conn *c, int fd, uint64_t now, uint64_t left)
{
    struct loop *l = &c->w->loop;
    int rc = loop_io_add(l, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        return rc;
    }
    c->up_ev = 0;
    conn_set_state(c, CONN_ST_CONNECT);
    loop_timer_arm_at(l, &c->timer, now + (c->deadline - now) / (left + 1));
    return 0;
}

/* ---- reject: a rule's "via reject" ---------------------------------------- */

static void reject_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    (void)name;
    (void)ip;
    (void)port;
    stat_add(&c->w->stats.denied, 1);
    conn_fail(c, OUT_DENIED, "rejected");
}

static void reject_event(struct conn *c, uint32_t events)
{
    (void)c;
    (void)events;
}

static int reject_bnd(const struct conn *c, struct addr *out)
{
    (void)c;
    (void)out;
    return -ENOTCONN;
}

static void reject_close(struct conn *c)
{
    (void)c;
}

const struct outbound_ops outbound_reject = {
    .name = "reject",
    .splice = true,
    .dial = reject_dial,
    .event = reject_event,
    .timeout = reject_close,
    .bnd = reject_bnd,
    .close = reject_close,
};
