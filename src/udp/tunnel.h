/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel.h: UDP through a tunnel outbound (an HTTPS parent spoken HTTP/2,
 * ferry client's way out): each destination of an association becomes one
 * flow, a CONNECT-UDP stream (RFC 9298) to the parent, opened on the first
 * datagram for it and closed when the destination has been idle for
 * udp.idle (or when the parent ends it; the next datagram opens a new one).
 * Names travel as names: the parent resolves them.
 *
 * udp/ sits below relay/, which owns the HTTP/2 connections: relay/
 * registers the flows' implementation here (udp_tunnel_register, a hook,
 * as outbound rows are a table), so nothing in udp/ includes relay/.
 *
 * What the flows of one association hold toward the parent and have not
 * handed to HTTP/2 yet is one bounded queue (udp.tunnel_queue datagrams or
 * udp.tunnel_queue_bytes bytes): a datagram that does not fit is dropped
 * and counted (reason "queue"), so a flooding association never waits, and
 * never makes a TCP stream or another association wait. A flow whose
 * tunnel connection fails or goes ends its association (the application
 * sees its control connection close); a flow the parent refuses or ends
 * only drops its datagrams (reason "tunnel") until it is opened again.
 */
#ifndef FERRY_UDP_TUNNEL_H
#define FERRY_UDP_TUNNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"

struct config;
struct worker;
struct udp_assoc;
struct udp_budget;
struct udp_flow;

/* An association's queue toward the parent, shared by its flows. The
 * implementation adds a datagram (its bytes on the stream) when it takes
 * it and removes it when HTTP/2 took it or the flow ended. */
struct udp_tq {
    uint32_t n, max_n;
    uint64_t bytes, max_bytes;
};

/* The implementation of flows (relay/udp_tunnel.c). */
struct udp_tunnel_ops {
    /* Can outbound ob of cfg carry flows? */
    bool (*carries)(const struct config *cfg, uint16_t ob);
    /* Open a flow to host (a name or an IP literal) and port through ob,
     * for udp flow f of worker w; NULL when it cannot (memory, an outbound
     * that turned out to speak only HTTP/1.1). */
    void *(*open)(struct udp_flow *f, struct worker *w, const struct config *cfg, uint16_t ob,
                  const char *host, uint16_t port, struct udp_tq *q);
    /* Send one datagram's payload: 0 when taken, else the stat to count
     * the drop in (an offset into struct worker_stats, udp_drop_*). */
    int (*send)(void *impl, const uint8_t *data, size_t len);
    /* The flow ends: give its queue back, close its stream, free (late). */
    void (*close)(void *impl);
};

/* Register the implementation (relay/ does as each worker starts). */
void udp_tunnel_register(const struct udp_tunnel_ops *ops);
/* Can outbound ob of cfg carry flows (an implementation is registered and
 * says so)? */
bool udp_tunnel_carries(const struct config *cfg, uint16_t ob);
/* Can any datagram under cfg go through a tunnel (the default outbound or
 * a rule's via)? Then udp.max_datagram counts payloads, not whole SOCKS
 * datagrams. */
bool udp_tunnel_possible(const struct config *cfg);

/* A datagram of association a to name (NULL: to d) at port through
 * outbound ob: on the destination's flow, opened now if it has none
 * (within udp.destinations). Counted as relayed when taken. */
void udp_tunnel_send(struct udp_assoc *a, uint16_t ob, const char *name, const struct addr *d,
                     uint16_t port, const uint8_t *data, size_t len);
/* Close the flows idle for udp.idle (the association's sweep). */
void udp_tunnel_sweep(struct udp_assoc *a, uint64_t now);
/* Close every flow of a (a closes). */
void udp_tunnel_close_all(struct udp_assoc *a);

/* For the implementation: a datagram from the destination of flow f, for
 * the client (dropped and counted over udp.max_datagram). */
void udp_flow_deliver(struct udp_flow *f, const uint8_t *data, size_t len);
/* For the implementation: flow f cannot go on (why: for the log); lost:
 * its tunnel connection failed or went, and the association ends too.
 * The flow is closed (ops->close) from here. */
void udp_flow_end(struct udp_flow *f, bool lost, const char *why);
/* For the implementation: the worker's counters of f's association. */
struct worker *udp_flow_worker(const struct udp_flow *f);

#endif
