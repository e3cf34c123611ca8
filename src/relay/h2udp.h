/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2udp.h: CONNECT-UDP (RFC 9298) on an HTTP/2 stream: an extended
 * CONNECT (RFC 8441) with :protocol connect-udp names one UDP target by
 * the default URI template; the stream's session (front_h2.c) becomes a
 * datagram relay between DATAGRAM capsules (RFC 9297, context id 0) on
 * the stream and one connected UDP socket to the target. The limits,
 * rule checks and counters are those of the SOCKS UDP relay ([udp]).
 *
 * Only front_h2.c (and conn.c's access log) call it; it must not touch the
 * h2 connection but through h2conn.h's stream calls.
 */
#ifndef FERRY_RELAY_H2UDP_H
#define FERRY_RELAY_H2UDP_H

#include <stddef.h>
#include <stdint.h>

struct addr;

struct conn;

/* Check the extended CONNECT of stream session c (masque_check_request):
 * 0 to go on (c->cmd is CONN_CMD_UDP, the target noted, c->h2u set), or
 * -1 after refusing it with masque_error_status's status (400, 501). */
int h2udp_check(struct conn *c);
/* The request is authenticated and admitted: judge the target by the
 * rules (resolving a name here first), open the UDP socket, answer 200
 * with capsule-protocol: ?1 and relay. Refuses as the CONNECT front does
 * (403 for a deny, 502 for a name that does not resolve, 429 over
 * udp.associations). */
void h2udp_go(struct conn *c);
/* The session's events (state CONN_ST_UDP): capsules from the client,
 * datagrams from the target. May close c. */
void h2udp_drive(struct conn *c);
/* The session ends (its front's end hook, before the access log): close
 * the socket and give back the association slot. NULL c->h2u: nothing. */
void h2udp_end(struct conn *c);
/* A reverse UDP source (h2rev.c): accept stream c, answered already,
 * carries the datagrams of peer to and from listener socket fd (which
 * outlives c): capsules from the client go out with sendto(fd, peer), the
 * listener hands peer's datagrams to h2udp_deliver; udp.idle without one
 * ends the stream as for CONNECT-UDP. 0 or -ENOMEM. */
int h2udp_reverse_start(struct conn *c, int fd, const struct addr *peer);
/* A reverse SOCKS association (h2rev.c): stream session c owns UDP
 * socket c->up (registered) for the application at ctl->target (its
 * control session, which must close c when it ends; the application's
 * port comes with its first datagram), and every datagram either way
 * counts as ctl's activity too (its idle timeout). Datagrams to it from
 * app's IP, one port, FRAG 0, with a payload within udp.max_datagram,
 * cross the stream whole (SOCKS UDP header included), one DATAGRAM
 * capsule each; what the client sends back goes to the application as
 * it comes. Others are dropped and counted. No idle expiry: it ends with
 * its stream. 0 or -ENOMEM. */
int h2udp_assoc_start(struct conn *c, struct conn *ctl);
/* One datagram p[0..n) for the client of c (state CONN_ST_UDP) as one
 * DATAGRAM capsule; p has CAPSULE_DATAGRAM_HDR_MAX bytes of room before
 * it. Over udp.max_datagram, the bandwidth limit or the stream's room:
 * dropped and counted. */
void h2udp_deliver(struct conn *c, uint8_t *p, size_t n);
/* Datagrams relayed up (client to target) and down, for the access log. */
void h2udp_counts(const struct conn *c, uint64_t *up, uint64_t *down);

#endif
