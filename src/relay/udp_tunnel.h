/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_tunnel.h: UDP associations through an HTTP/2 tunnel outbound, each
 * destination a CONNECT-UDP stream (udp_tunnel.c implements udp/tunnel.h's
 * flows on outbound_h2.c's connections).
 */
#ifndef FERRY_RELAY_UDP_TUNNEL_H
#define FERRY_RELAY_UDP_TUNNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct worker;
struct udp_tq;
struct ut_flow;

/* The user of a flow: deliver gets each datagram from the destination;
 * end says the flow cannot go on (lost: its tunnel connection failed or
 * went; why: for the log), and the user closes it (ut_flow_close), from
 * inside the call or later. Both are called from the flow's task. */
struct ut_user {
    void (*deliver)(void *arg, const uint8_t *data, size_t len);
    void (*end)(void *arg, bool lost, const char *why);
};

/* Can outbound ob of cfg carry flows (an HTTPS parent spoken HTTP/2)? */
bool ut_carries(const struct config *cfg, uint16_t ob);
/* Open a flow (a CONNECT-UDP stream) to host (a name or an IP literal)
 * and port through outbound ob, its queue counted in q (which outlives
 * it). NULL when it cannot (memory, a parent that speaks only HTTP/1.1). */
struct ut_flow *ut_flow_open(struct worker *w, const struct config *cfg, uint16_t ob,
                             const char *host, uint16_t port, struct udp_tq *q,
                             const struct ut_user *u, void *arg);
/* Send one datagram's payload: 0 when taken, else the offset in struct
 * worker_stats of the drop's counter (udp_drop_queue, udp_drop_tunnel). */
int ut_flow_send(struct ut_flow *fl, const uint8_t *data, size_t len);
/* Give the flow's queue back, reset its stream, free it after the batch.
 * NULL is a no-op. */
void ut_flow_close(struct ut_flow *fl);

/* Register the flows' implementation with udp/ (the hook that keeps udp/
 * below relay/). Idempotent; each worker calls it as it starts. */
void udp_tunnel_start(void);

#endif
