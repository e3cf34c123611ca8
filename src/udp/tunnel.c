/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel.c: an association's flows through a tunnel outbound (tunnel.h).
 * Flows are found by "PORT HOST" in a table of names (dest_table.h), each
 * entry holding its struct udp_flow: the SOCKS header replies get (the
 * destination as the client named it: an address, or the name) and the
 * implementation's handle. Idleness is the table's: each datagram either
 * way pushes the entry's expiry to udp.idle from now, and the association's
 * sweep closes what expired. Nothing here allocates per datagram: a flow is
 * allocated when its destination is new.
 */
#include "udp/tunnel.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "acl/rules.h"
#include "config/config.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/socks5.h"
#include "udp/assoc.h"
#include "udp/owner.h"
#include "util/compiler.h"

#define TUN_HDR_MAX 262 /* RSV FRAG ATYP LEN NAME(255) PORT */

struct udp_flow {
    struct udp_assoc *a;
    struct udp_name *nm; /* its entry in a->tflows */
    void *impl;
    uint16_t hlen;
    uint8_t hdr[TUN_HDR_MAX]; /* the SOCKS header of its replies */
};

/* Set by relay/ as each worker starts (the same table every time). */
static _Atomic(const struct udp_tunnel_ops *) tun_ops_set;
#define tun_ops atomic_load_explicit(&tun_ops_set, memory_order_relaxed)

void udp_tunnel_register(const struct udp_tunnel_ops *ops)
{
    atomic_store_explicit(&tun_ops_set, ops, memory_order_relaxed);
}

bool udp_tunnel_carries(const struct config *cfg, uint16_t ob)
{
    const struct udp_tunnel_ops *ops = tun_ops;
    return ops && ob < cfg->noutbounds && ops->carries(cfg, ob);
}

bool udp_tunnel_possible(const struct config *cfg)
{
    if (udp_tunnel_carries(cfg, cfg->default_outbound))
        return true;
    for (uint32_t i = 0; cfg->acl && i < cfg->acl->n; i++) {
        int32_t v = cfg->acl->rules[i].via_index;
        if (v >= 0 && udp_tunnel_carries(cfg, (uint16_t)v))
            return true;
    }
    return false;
}

struct worker *udp_flow_worker(const struct udp_flow *f)
{
    return f->a->w;
}

/* The table lets an entry go: so does its flow. */
static void flow_drop(struct udp_name *nm)
{
    struct udp_flow *f = nm->flow;
    if (!f)
        return;
    nm->flow = NULL;
    if (f->impl) {
        tun_ops->close(f->impl);
        stat_add(&nm->a->w->stats.udp_tun_closed, 1);
    }
    free(f);
}

/* A new flow for key (name or address text host, port): NULL when the
 * association has udp.destinations flows, or it cannot open (counted). */
static struct udp_flow *flow_new(struct udp_assoc *a, uint16_t ob, const char *key, uint32_t hash,
                                 const char *host, const struct addr *d, uint16_t port)
{
    struct worker_stats *st = &a->w->stats;
    if (a->tflows.n >= a->cfg->destinations) {
        stat_add(&st->udp_drop_dest_limit, 1);
        return NULL;
    }
    struct udp_flow *f = calloc(1, sizeof(*f));
    struct udp_name *nm =
        f ? udp_names_add(&a->tflows, key, hash, a->cfg->destinations, flow_drop) : NULL;
    if (!nm) {
        free(f);
        stat_add(&st->udp_drop_queue, 1);
        return NULL;
    }
    nm->a = a;
    nm->status = DNS_OK; /* settled: expires */
    f->a = a;
    f->nm = nm;
    if (d) {
        struct addr x = *d;
        x.port = port;
        f->hlen = (uint16_t)socks5_write_udp_header(f->hdr, sizeof(f->hdr), &x);
    } else {
        size_t n = strlen(host);
        f->hdr[3] = SOCKS5_ATYP_DOMAIN;
        f->hdr[4] = (uint8_t)n;
        memcpy(f->hdr + 5, host, n);
        f->hdr[5 + n] = (uint8_t)(port >> 8);
        f->hdr[6 + n] = (uint8_t)port;
        f->hlen = (uint16_t)(7 + n);
    }
    nm->flow = f;
    a->tq.max_n = a->cfg->tunnel_queue;
    a->tq.max_bytes = a->cfg->tunnel_bytes;
    f->impl = tun_ops->open(f, a->w, a->conf, ob, host, port, &a->tq);
    if (!f->impl) {
        stat_add(&st->udp_drop_tunnel, 1);
        nm->expires_ms = 0;
        udp_names_expire(&a->tflows, 0, flow_drop);
        return NULL;
    }
    stat_add(&st->udp_tun_opened, 1);
    return f;
}

void udp_tunnel_send(struct udp_assoc *a, uint16_t ob, const char *name, const struct addr *d,
                     uint16_t port, const uint8_t *data, size_t len)
{
    struct worker_stats *st = &a->w->stats;
    if (len > a->cfg->max_datagram) {
        stat_add(&st->udp_drop_size, 1);
        return;
    }
    char host[ADDR_STRLEN], key[8 + 256];
    if (!name) {
        addr_format_ip(d, host, sizeof(host));
        name = host;
    } else {
        d = NULL;
    }
    snprintf(key, sizeof(key), "%u %s", port, name);
    uint32_t hash = udp_names_hash(&a->tflows, key);
    struct udp_name *nm = udp_names_find(&a->tflows, key, hash);
    struct udp_flow *f = nm ? nm->flow : flow_new(a, ob, key, hash, name, d, port);
    if (!f)
        return; /* counted */
    f->nm->expires_ms = loop_now(&a->w->loop) + a->cfg->idle_ms;
    int why = tun_ops->send(f->impl, data, len);
    if (why) {
        stat_add((stat_t *)((char *)st + why), 1);
        return;
    }
    stat_add(&st->udp_in, 1);
    stat_add(&st->udp_bytes_in, len);
    a->up += len;
}

void udp_flow_deliver(struct udp_flow *f, const uint8_t *data, size_t len)
{
    struct udp_assoc *a = f->a;
    struct worker_stats *st = &a->w->stats;
    if (len > a->cfg->max_datagram) {
        stat_add(&st->udp_drop_size, 1);
        return;
    }
    struct udp_budget bw = udp_budget_start(a, len);
    if (!udp_budget_fits(a, &bw, len))
        return;
    udp_budget_take(&bw, len);
    udp_budget_end(a, &bw);
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&a->client, &ss);
    struct iovec v[2] = {{f->hdr, f->hlen}, {(void *)(uintptr_t)data, len}};
    struct msghdr m = {.msg_name = &ss, .msg_namelen = sl, .msg_iov = v, .msg_iovlen = 2};
    if (!a->port_fixed || sendmsg(a->cio.fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        stat_add(&st->udp_drop_send, 1);
        return;
    }
    f->nm->expires_ms = loop_now(&a->w->loop) + a->cfg->idle_ms;
    stat_add(&st->udp_out, 1);
    stat_add(&st->udp_bytes_out, len);
    a->down += len;
    udp_activity(a);
}

void udp_flow_end(struct udp_flow *f, bool lost, const char *why)
{
    struct udp_assoc *a = f->a;
    char c[ADDR_STRLEN];
    addr_format_ip(&a->client, c, sizeof(c));
    log_debug("udp: association of %s: flow to %s: %s", c, f->nm->name, why);
    f->nm->expires_ms = 0; /* closed by the expiry below, with what else has expired */
    udp_names_expire(&a->tflows, loop_now(&a->w->loop), flow_drop);
    if (lost && !a->tun_lost) {
        a->tun_lost = true;
        log_info("udp: association of %s: %s; the association ends", c, why);
        udp_end(a, "tunnel-lost"); /* may close a */
    }
}

void udp_tunnel_sweep(struct udp_assoc *a, uint64_t now)
{
    udp_names_expire(&a->tflows, now, flow_drop);
}

void udp_tunnel_close_all(struct udp_assoc *a)
{
    udp_names_fini(&a->tflows, flow_drop);
}
