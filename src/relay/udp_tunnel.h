/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_tunnel.h: UDP associations through an HTTP/2 tunnel outbound, each
 * destination a CONNECT-UDP stream (udp_tunnel.c implements udp/tunnel.h's
 * flows on outbound_h2.c's connections).
 */
#ifndef FERRY_RELAY_UDP_TUNNEL_H
#define FERRY_RELAY_UDP_TUNNEL_H

/* Register the flows' implementation with udp/ (the hook that keeps udp/
 * below relay/). Idempotent; each worker calls it as it starts. */
void udp_tunnel_start(void);

#endif
