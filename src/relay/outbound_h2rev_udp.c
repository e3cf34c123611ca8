/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev_udp.c: the client half of a reverse UDP forward
 * (R:[ADDR:]PORT:HOST:PORT/udp; the wire is h2rev.h's). The server hands
 * each new source of datagrams on its UDP port to one ferry-accept stream
 * (answered 200 with ferry-peer); here that stream becomes a flow: one UDP
 * socket connected to the remote's HOST:PORT (a name is resolved here, the
 * egress), every DATAGRAM capsule (RFC 9297, context id 0) from the stream
 * goes out of it as one datagram, and every datagram that comes back is
 * one capsule on the stream, so boundaries are kept, empty datagrams
 * included. Payloads over udp.max_datagram are dropped and counted both
 * ways; what waits for HTTP/2 is bounded by udp.tunnel_queue_bytes (a
 * datagram that does not fit is dropped and counted, never waited for).
 * The flow ends when its stream does (the server's udp.idle expiry sends
 * END_STREAM), or when the tunnel connection goes.
 *
 * News comes through the flow's task (h2out_user.h: never inside
 * nghttp2); a closed flow is freed after the batch.
 */
#include "relay/outbound_h2rev_udp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/capsule.h"
#include "relay/h2out_user.h"
#include "relay/outbound_h2.h"
#include "worker/worker.h"

/* A capsule from the server is parsed whole up to this payload (the
 * largest UDP payload and its context id); longer is malformed. */
#define RVU_CAPSULE_MAX (65535u + CAPSULE_VARINT_LEN_MAX)
/* Datagrams read from the target per wake (the socket is level-triggered). */
#define RVU_DOWN_BUDGET 64u

struct rvu_flow {
    struct list link; /* in its remote's flows */
    struct worker *w;
    const struct config *cfg;
    const struct config_reverse *cr;
    struct ho_stream *s;
    struct io io; /* the socket to the target; fd -1 until resolved */
    struct dns_req *dns;
    struct task task;
    struct release rel;
    char peer[ADDR_STRLEN]; /* the server's source, for the log */
};

/* Datagrams from the target land behind room for the capsule's header. */
static _Thread_local uint8_t rvu_buf[CAPSULE_DATAGRAM_HDR_MAX + 65535];

static void rvu_free(struct release *r)
{
    free(container_of(r, struct rvu_flow, rel));
}

/* End the flow (why: for the log; NULL: quietly). */
static void rvu_close(struct rvu_flow *fl, const char *why)
{
    if (why)
        log_debug("reverse udp: flow from %s ends: %s", fl->peer, why);
    if (fl->dns)
        resolver_cancel(fl->dns);
    if (fl->io.fd >= 0) {
        int fd = fl->io.fd;
        loop_io_del(&fl->w->loop, &fl->io);
        close(fd);
    }
    h2out_close(fl->s);
    loop_task_cancel(&fl->task);
    list_del(&fl->link);
    loop_release(&fl->w->loop, &fl->rel, rvu_free);
}

/* The server's capsules, each sent to the target (once it has a socket).
 * false: the stream is malformed. */
static bool rvu_up(struct rvu_flow *fl)
{
    const uint8_t *p;
    size_t n = h2out_peek(fl->s, &p), used = 0;
    struct worker_stats *st = &fl->w->stats;
    while (used < n && fl->io.fd >= 0) {
        struct capsule c;
        ssize_t r = capsule_parse(p + used, n - used, RVU_CAPSULE_MAX, &c);
        if (r == 0)
            break;
        struct capsule_datagram d;
        if (r < 0 || (c.type == CAPSULE_TYPE_DATAGRAM && capsule_datagram_parse(&c, &d) < 0)) {
            h2out_consume(fl->s, n);
            return false;
        }
        used += (size_t)r;
        if (c.type != CAPSULE_TYPE_DATAGRAM)
            stat_add(&st->h2_udp_capsules_skipped, 1); /* RFC 9297 section 3.2 */
        else if (d.context_id != CAPSULE_CONTEXT_UDP)
            stat_add(&st->udp_drop_context, 1);
        else if (d.len > fl->cfg->udp.max_datagram)
            stat_add(&st->udp_drop_size, 1);
        else if (send(fl->io.fd, d.payload, d.len, MSG_NOSIGNAL) < 0)
            stat_add(&st->udp_drop_send, 1);
        else {
            stat_add(&st->udp_in, 1);
            stat_add(&st->udp_bytes_in, d.len);
        }
    }
    if (used)
        h2out_consume(fl->s, used);
    return true;
}

static void rvu_on_task(struct task *t)
{
    struct rvu_flow *fl = container_of(t, struct rvu_flow, task);
    int state = h2out_state(fl->s);
    if (!rvu_up(fl)) {
        rvu_close(fl, "a malformed capsule from the server");
        return;
    }
    if (state < 0)
        rvu_close(fl, state == H2OUT_LOST ? "the tunnel connection went" : "the stream ended");
}

/* Datagrams from the target, each one capsule on the stream, or dropped. */
static void rvu_on_io(struct io *io, uint32_t events)
{
    (void)events;
    struct rvu_flow *fl = container_of(io, struct rvu_flow, io);
    struct worker_stats *st = &fl->w->stats;
    uint8_t *p = rvu_buf + CAPSULE_DATAGRAM_HDR_MAX;
    for (unsigned i = 0; i < RVU_DOWN_BUDGET; i++) {
        ssize_t n = recv(io->fd, p, 65535, 0);
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            continue; /* an ICMP error from an earlier send: read on */
        }
        if ((size_t)n > fl->cfg->udp.max_datagram) {
            stat_add(&st->udp_drop_size, 1);
            continue;
        }
        uint8_t hdr[CAPSULE_DATAGRAM_HDR_MAX];
        size_t h = capsule_write_datagram_header(hdr, sizeof(hdr), (size_t)n);
        if (h2out_unsent(fl->s) + h + (size_t)n > fl->cfg->udp.tunnel_bytes ||
            h2out_write(fl->s, hdr, h, p, (size_t)n) < 0) {
            stat_add(&st->udp_drop_queue, 1); /* the tunnel is behind: dropped, not waited for */
            continue;
        }
        stat_add(&st->udp_out, 1);
        stat_add(&st->udp_bytes_out, (uint64_t)n);
    }
}

/* The target's address is known: its socket. */
static void rvu_connect(struct rvu_flow *fl, const struct addr *a)
{
    int fd = socket(a->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(a, &ss);
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl) < 0 ||
        loop_io_add(&fl->w->loop, &fl->io, fd, EPOLLIN) < 0) {
        log_warn("reverse udp: %s:%u: no socket: %s", fl->cr->host, (unsigned)fl->cr->port,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        rvu_close(fl, NULL);
        return;
    }
    loop_defer(&fl->w->loop, &fl->task); /* capsules may wait already */
}

static void rvu_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct rvu_flow *fl = arg;
    fl->dns = NULL;
    if (status != DNS_OK || !ans->n) {
        log_warn("reverse udp: %s does not resolve (%s)", fl->cr->host, dns_status_str(status));
        rvu_close(fl, NULL);
        return;
    }
    struct addr a = ans->a[0];
    addr_unmap(&a);
    a.port = fl->cr->port;
    rvu_connect(fl, &a);
}

int outbound_h2rev_udp_open(struct worker *w, const struct config *cfg, struct ho_stream *s,
                            const struct config_reverse *cr, const struct addr *peer,
                            struct list *flows)
{
    struct rvu_flow *fl = calloc(1, sizeof(*fl));
    if (!fl)
        return -ENOMEM;
    fl->w = w;
    fl->cfg = cfg;
    fl->cr = cr;
    fl->s = s;
    io_init(&fl->io, rvu_on_io);
    fl->io.fd = -1;
    task_init(&fl->task, rvu_on_task);
    addr_format(peer, fl->peer, sizeof(fl->peer));
    list_add_tail(flows, &fl->link);
    outbound_h2_stream_rewake(s, &fl->task);
    stat_add(&w->stats.udp_assocs, 1);
    struct addr a;
    if (addr_parse_ip(cr->host, cr->port, &a) == 0) {
        rvu_connect(fl, &a);
        return 0;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, cr->host, cr->port, &status, &ans)) {
        rvu_on_dns(fl, status, &ans);
        return 0;
    }
    fl->dns = resolver_query(&w->dns, cr->host, cr->port, rvu_on_dns, fl);
    if (!fl->dns)
        rvu_close(fl, NULL);
    return 0;
}

void outbound_h2rev_udp_close_all(struct list *flows)
{
    while (!list_empty(flows))
        rvu_close(container_of(flows->next, struct rvu_flow, link), NULL);
}
