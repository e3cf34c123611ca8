/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev_assoc.c: the client half of a SOCKS5 UDP ASSOCIATE on a
 * reverse socks remote (R:...:socks; the wire is h2rev.h's "assoc"). The
 * application is on the server's side: its relay port is a UDP socket of
 * the server, and here is the egress. The control session (a SOCKS front
 * on a reverse stream, c->hos) opens one ferry-listen stream naming its
 * own stream id, on the same tunnel connection; the server answers 200
 * with ferry-bound (the relay's address: the SOCKS reply's BND), and from
 * then on every DATAGRAM capsule (RFC 9297, context id 0) on the stream
 * is one whole SOCKS UDP datagram of the application's, header included.
 *
 * Those datagrams go into a piped association of the UDP relay
 * (udp_assoc_open_piped, udp/udp.h): its destinations, names (resolved
 * here), [udp] limits, counters and the control session's rules and
 * egress policy (policy.c: allow= of the remote) are the direct relay's;
 * only its client side is this stream. Each reply it hands back is one
 * capsule; what waits for HTTP/2 is bounded by udp.tunnel_queue_bytes (a
 * reply that does not fit is dropped and counted, never waited for).
 *
 * The stream lives as long as the association, which lives as long as
 * the control session (conn.c closes c->udp, which closes this); the
 * stream ending (the server went, or the tunnel connection) ends the
 * control session, and so the association. News comes through the
 * object's task (h2out_user.h: never inside nghttp2).
 */
#include "relay/outbound_h2rev_assoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "log/log.h"
#include "proto/capsule.h"
#include "relay/h2out_user.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2rev.h"
#include "relay/session.h"
#include "udp/udp.h"

/* A capsule from the server is parsed whole up to this payload: the
 * largest UDP payload and its context id; longer is malformed. */
#define RVA_CAPSULE_MAX (65535u + CAPSULE_VARINT_LEN_MAX)

struct rva {
    struct rv_obj o; /* r NULL: the answer's ferry-bound lands in o.peer */
    struct conn *c;  /* the control session */
    struct udp_assoc *ua;
    void (*ready)(struct conn *c, const struct addr *bnd);
    bool answered;
    struct task task;
    struct release rel;
};

static void rva_free(struct release *r)
{
    free(container_of(r, struct rva, rel));
}

/* The association closes (udp_assoc_close, from the control's end). */
static void rva_pipe_close(void *arg)
{
    struct rva *x = arg;
    if (x->o.s)
        outbound_h2_stream_release(x->o.s);
    x->o.s = NULL;
    loop_task_cancel(&x->task);
    loop_release(&x->c->w->loop, &x->rel, rva_free);
}

/* A reply for the application: one capsule, or dropped. */
static bool rva_pipe_deliver(void *arg, const uint8_t *p, size_t n)
{
    struct rva *x = arg;
    struct worker_stats *st = &x->c->w->stats;
    uint8_t hdr[CAPSULE_DATAGRAM_HDR_MAX];
    size_t h = capsule_write_datagram_header(hdr, sizeof(hdr), n);
    if (!x->answered || h2out_unsent(x->o.s) + h + n > conn_cfg(x->c)->udp.tunnel_bytes ||
        h2out_write(x->o.s, hdr, h, p, n) < 0) {
        stat_add(&st->udp_drop_queue, 1); /* the tunnel is behind: dropped, not waited for */
        return false;
    }
    h2out_datagram(x->o.s);
    return true;
}

/* The server's capsules, each one datagram of the application's. false:
 * the stream is malformed. */
static bool rva_up(struct rva *x)
{
    const uint8_t *p;
    size_t n = h2out_peek(x->o.s, &p), used = 0;
    struct worker_stats *st = &x->c->w->stats;
    while (used < n) {
        struct capsule cp;
        ssize_t r = capsule_parse(p + used, n - used, RVA_CAPSULE_MAX, &cp);
        if (r == 0)
            break;
        struct capsule_datagram d;
        if (r < 0 || (cp.type == CAPSULE_TYPE_DATAGRAM && capsule_datagram_parse(&cp, &d) < 0)) {
            h2out_consume(x->o.s, n);
            return false;
        }
        used += (size_t)r;
        if (cp.type != CAPSULE_TYPE_DATAGRAM)
            stat_add(&st->h2_udp_capsules_skipped, 1); /* RFC 9297 section 3.2 */
        else if (d.context_id != CAPSULE_CONTEXT_UDP)
            stat_add(&st->udp_drop_context, 1);
        else
            udp_assoc_input(x->ua, d.payload, d.len);
    }
    if (used)
        h2out_consume(x->o.s, used);
    return true;
}

/* The stream's news. The control session may close from here (and this
 * object with it, freed after the batch). */
static void rva_on_task(struct task *t)
{
    struct rva *x = container_of(t, struct rva, task);
    struct conn *c = x->c;
    int state = h2out_state(x->o.s);
    if (!x->answered && state > 0) {
        struct addr bnd;
        if (addr_parse(x->o.peer, -1, &bnd) < 0) {
            log_warn("conn %llu: reverse UDP ASSOCIATE: the server's answer has no ferry-bound",
                     (unsigned long long)c->id);
            conn_fail(c, OUT_FAILED, "udp-socket");
            return;
        }
        x->answered = true;
        x->ready(c, &bnd);
        if (c->udp != x->ua)
            return; /* the control session closed (and this with it) */
    }
    if (!x->answered) {
        if (state < 0)
            conn_fail(c, state == -429 ? OUT_LIMIT : OUT_FAILED,
                      state == -429 ? "udp-associations-limit" : "udp-socket");
        return;
    }
    if (!rva_up(x)) {
        conn_close(c, "capsule-malformed");
        return;
    }
    if (state < 0)
        conn_close(c, state == H2OUT_LOST ? "tunnel-lost" : "udp-closed");
}

int outbound_h2rev_assoc_open(struct conn *c, const struct udp_owner *own,
                              void (*ready)(struct conn *c, const struct addr *bnd))
{
    struct rva *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->c = c;
    x->ready = ready;
    task_init(&x->task, rva_on_task);
    char path[64];
    snprintf(path, sizeof(path), "/ferry/listen/assoc/%ld", (long)outbound_h2_stream_id(c->hos));
    x->o.s = outbound_h2_stream_open_beside(c->hos, &x->task, &x->o, "ferry-listen", path);
    if (x->o.s) /* it carries datagrams: the small fixed window of one */
        outbound_h2_stream_udp_window(x->o.s);
    const struct udp_pipe pipe = {rva_pipe_deliver, rva_pipe_close, x};
    int rc =
        x->o.s ? udp_assoc_open_piped(c->w, conn_cfg(c), &c->client, own, &pipe, &c->udp) : -EPIPE;
    if (rc) {
        if (x->o.s)
            outbound_h2_stream_release(x->o.s);
        free(x);
        return rc;
    }
    x->ua = c->udp;
    return 0;
}
