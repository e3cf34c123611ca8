/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_udp.h: UDP port forwards ([udp] forward = [ADDR:]PORT HOST:PORT):
 * datagrams to ADDR:PORT go to HOST:PORT through the default outbound,
 * which must be a tunnel (an HTTPS parent spoken HTTP/2): one association
 * per source address (its own CONNECT-UDP stream, udp_tunnel.h), forgotten
 * after udp.idle without a datagram either way, at most udp.associations
 * at once per forward. Worker 0 serves every forward.
 */
#ifndef FERRY_RELAY_FRONT_UDP_H
#define FERRY_RELAY_FRONT_UDP_H

#include "worker/worker.h"

/* The worker's configuration changed (or came): close the forwards and
 * open those of w->cur's configuration (worker 0 only; others: no-op). */
void front_udp_apply(struct worker *w);
/* Close the forwards (the worker ends). */
void front_udp_stop(struct worker *w);

#endif
