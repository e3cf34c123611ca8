/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev_udp.h: the datagram flows of reverse UDP forwards
 * (R:...:HOST:PORT/udp), the client half; outbound_h2rev.c hands each
 * accept stream the server answered for a new source to one flow, which
 * egresses through its own UDP socket to HOST:PORT (h2rev.h: the wire).
 * Only outbound_h2rev.c calls it, on the worker's thread.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2REV_UDP_H
#define FERRY_RELAY_OUTBOUND_H2REV_UDP_H

#include "util/addr.h"
#include "util/list.h"

struct config;
struct config_reverse;
struct ho_stream;
struct worker;

/* Take accept stream s, answered 200 for source peer of udp remote cr
 * (under cfg, which outlives the flow), as a flow in the list flows: its
 * capsules go to cr's HOST:PORT (resolved here) and the replies come back
 * on it. 0, or -ENOMEM with s untouched. A flow that cannot get its
 * socket, or whose target does not resolve, ends at once (logged). */
int outbound_h2rev_udp_open(struct worker *w, const struct config *cfg, struct ho_stream *s,
                            const struct config_reverse *cr, const struct addr *peer,
                            struct list *flows);
/* Close every flow of the list (its remote goes). */
void outbound_h2rev_udp_close_all(struct list *flows);

#endif
