/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_tunnel.c: the flows of udp/tunnel.h as CONNECT-UDP streams (RFC
 * 9298) on the HTTP/2 outbound's connection (h2out_user.h): the request
 * names the destination by the default URI template
 * (/.well-known/masque/udp/HOST/PORT/, masque_format_path), and every
 * datagram is one DATAGRAM capsule with context id 0 (RFC 9297), so
 * boundaries are kept, empty datagrams included. Datagrams written before
 * the parent answers travel with the request (no round trip is waited
 * for); the parent's answer decides whether the stream goes on.
 *
 * The association's queue (udp_tq) counts the capsules written into the
 * stream and not yet taken by HTTP/2: a ring of their sizes per flow says
 * which were taken, looked at whenever the stream has news. Capsules from
 * the parent are parsed in place in the stream's receive buffer and
 * credited back as they are handed to the client, so a UDP stream never
 * holds the connection's window. A malformed capsule ends the flow.
 *
 * A flow's news comes through its task (never inside nghttp2). One that
 * has no answer within the outbound's tunnel_wait plus connect_timeout
 * counts as a lost tunnel. Closed flows are freed after the batch.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "log/log.h"
#include "proto/capsule.h"
#include "proto/masque.h"
#include "relay/h2out_user.h"
#include "relay/udp_tunnel.h"
#include "udp/tunnel.h"
#include "util/compiler.h"

/* A capsule from the parent is parsed whole up to this payload (the
 * largest UDP payload and its context id); longer is malformed. */
#define UT_CAPSULE_MAX (65535u + CAPSULE_VARINT_LEN_MAX)

struct ut_flow {
    const struct ut_user *u;
    void *arg; /* the user's; NULL once closed */
    struct worker *w;
    struct ho_stream *s;
    struct udp_tq *q;
    struct task task;
    struct timer timer; /* until the parent answers */
    struct release rel;
    bool open;
    uint64_t written, taken; /* capsule bytes written / seen taken by HTTP/2 */
    uint32_t rh, rn, rcap;   /* the ring of queued capsules' sizes */
    uint32_t ring[];
};

bool ut_carries(const struct config *cfg, uint16_t ob)
{
    const struct config_outbound *o = &cfg->outbounds[ob];
    return o->kind == OUTBOUND_KIND_HTTPS && o->mux != OUTBOUND_MUX_HTTP1;
}

/* Give back to the queue what HTTP/2 took (all: everything, the flow
 * ends). */
static void ut_settle(struct ut_flow *fl, bool all)
{
    uint64_t gone = all ? fl->written : fl->written - h2out_unsent(fl->s);
    while (fl->rn && fl->taken + fl->ring[fl->rh] <= gone) {
        uint32_t sz = fl->ring[fl->rh];
        fl->taken += sz;
        fl->rh = (fl->rh + 1) % fl->rcap;
        fl->rn--;
        fl->q->n--;
        fl->q->bytes -= sz;
    }
}

/* Hand the parent's datagrams to the client. false: the flow ended. */
static bool ut_drain(struct ut_flow *fl)
{
    const uint8_t *p;
    size_t n = h2out_peek(fl->s, &p), used = 0;
    struct worker_stats *st = &fl->w->stats;
    while (used < n && fl->arg) {
        struct capsule c;
        ssize_t r = capsule_parse(p + used, n - used, UT_CAPSULE_MAX, &c);
        if (r == 0)
            break;
        struct capsule_datagram d;
        if (r < 0 || (c.type == CAPSULE_TYPE_DATAGRAM && capsule_datagram_parse(&c, &d) < 0)) {
            h2out_consume(fl->s, n);
            fl->u->end(fl->arg, false, "a malformed capsule from the parent");
            return false;
        }
        used += (size_t)r;
        if (c.type != CAPSULE_TYPE_DATAGRAM)
            stat_add(&st->h2_udp_capsules_skipped, 1);
        else if (d.context_id != CAPSULE_CONTEXT_UDP)
            stat_add(&st->udp_drop_context, 1);
        else
            fl->u->deliver(fl->arg, d.payload, d.len);
    }
    if (used)
        h2out_consume(fl->s, used);
    return fl->arg != NULL;
}

static void ut_on_task(struct task *t)
{
    struct ut_flow *fl = container_of(t, struct ut_flow, task);
    if (!fl->arg)
        return;
    int state = h2out_state(fl->s);
    if (state > 0 && !fl->open) {
        fl->open = true;
        loop_timer_stop(&fl->w->loop, &fl->timer);
    }
    ut_settle(fl, false);
    if (state != 0 && !ut_drain(fl))
        return;
    if (state >= 0)
        return;
    if (state == H2OUT_LOST)
        fl->u->end(fl->arg, true, "the tunnel connection failed or went");
    else if (state == -1)
        fl->u->end(fl->arg, false, "the parent ended the stream");
    else {
        stat_add(&fl->w->stats.udp_drop_tunnel, 1);
        fl->u->end(fl->arg, false, "the parent refused the destination");
    }
}

static void ut_on_timer(struct timer *t)
{
    struct ut_flow *fl = container_of(t, struct ut_flow, timer);
    if (fl->arg && !fl->open)
        fl->u->end(fl->arg, true, "no answer from the tunnel in time");
}

struct ut_flow *ut_flow_open(struct worker *w, const struct config *cfg, uint16_t ob,
                             const char *host, uint16_t port, struct udp_tq *q,
                             const struct ut_user *u, void *arg)
{
    char path[sizeof(MASQUE_PATH_PREFIX) + 3 * MASQUE_HOST_MAX + 16];
    size_t hl = strlen(host);
    size_t pl = masque_format_path(path, sizeof(path), host, hl, port);
    if (!pl || pl >= sizeof(path))
        return NULL;
    uint32_t rcap = cfg->udp.tunnel_queue;
    struct ut_flow *fl = calloc(1, sizeof(*fl) + (size_t)rcap * sizeof(uint32_t));
    if (!fl)
        return NULL;
    fl->u = u;
    fl->arg = arg;
    fl->w = w;
    fl->q = q;
    fl->rcap = rcap;
    task_init(&fl->task, ut_on_task);
    timer_init(&fl->timer, ut_on_timer);
    fl->s = h2out_open(w, cfg, ob, "connect-udp", path, &fl->task);
    if (!fl->s) {
        free(fl);
        return NULL;
    }
    const struct config_outbound *o = &cfg->outbounds[ob];
    uint32_t ct = o->connect_timeout_ms ? o->connect_timeout_ms : cfg->connect_timeout_ms;
    loop_timer_arm(&w->loop, &fl->timer, (uint64_t)o->tunnel_wait_ms + (ct ? ct : 10000));
    return fl;
}

int ut_flow_send(struct ut_flow *fl, const uint8_t *data, size_t len)
{
    uint8_t hdr[CAPSULE_DATAGRAM_HDR_MAX];
    size_t h = capsule_write_datagram_header(hdr, sizeof(hdr), len);
    ut_settle(fl, false);
    struct udp_tq *q = fl->q;
    if (!h || q->n >= q->max_n || fl->rn >= fl->rcap || q->bytes + h + len > q->max_bytes)
        return (int)offsetof(struct worker_stats, udp_drop_queue);
    int rc = h2out_write(fl->s, hdr, h, data, len);
    if (rc == -EAGAIN)
        return (int)offsetof(struct worker_stats, udp_drop_queue);
    if (rc)
        return (int)offsetof(struct worker_stats, udp_drop_tunnel);
    h2out_datagram(fl->s);
    fl->ring[(fl->rh + fl->rn) % fl->rcap] = (uint32_t)(h + len);
    fl->rn++;
    fl->written += h + len;
    q->n++;
    q->bytes += h + len;
    return 0;
}

static void ut_free(struct release *r)
{
    free(container_of(r, struct ut_flow, rel));
}

void ut_flow_close(struct ut_flow *fl)
{
    if (!fl)
        return;
    ut_settle(fl, true);
    fl->arg = NULL;
    h2out_close(fl->s);
    fl->s = NULL;
    loop_timer_stop(&fl->w->loop, &fl->timer);
    loop_task_cancel(&fl->task);
    loop_release(&fl->w->loop, &fl->rel, ut_free);
}

/* ---- udp/'s flows (udp/tunnel.h) ------------------------------------------ */

static void ut_udp_deliver(void *arg, const uint8_t *data, size_t len)
{
    udp_flow_deliver(arg, data, len);
}

static void ut_udp_end(void *arg, bool lost, const char *why)
{
    udp_flow_end(arg, lost, why);
}

static const struct ut_user ut_udp_user = {ut_udp_deliver, ut_udp_end};

static void *ut_open(struct udp_flow *f, struct worker *w, const struct config *cfg, uint16_t ob,
                     const char *host, uint16_t port, struct udp_tq *q)
{
    return ut_flow_open(w, cfg, ob, host, port, q, &ut_udp_user, f);
}

static int ut_send(void *impl, const uint8_t *data, size_t len)
{
    return ut_flow_send(impl, data, len);
}

static void ut_close(void *impl)
{
    ut_flow_close(impl);
}

static const struct udp_tunnel_ops ut_ops = {
    .carries = ut_carries,
    .open = ut_open,
    .send = ut_send,
    .close = ut_close,
};

void udp_tunnel_start(void)
{
    udp_tunnel_register(&ut_ops);
}
