/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev_assoc.h: a SOCKS5 UDP ASSOCIATE on a reverse socks
 * remote, the client half (outbound_h2rev_assoc.c; the wire is h2rev.h's
 * ferry-listen "assoc"): the relay port is the server's, the egress is
 * this host. Only socks.c calls it, on the session's worker thread.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2REV_ASSOC_H
#define FERRY_RELAY_OUTBOUND_H2REV_ASSOC_H

struct addr;
struct conn;
struct udp_owner;

/* Reverse session c (c->hos set, its SOCKS front took a UDP ASSOCIATE)
 * asks the server for a relay port: c->udp becomes a piped association
 * (udp/udp.h) judged by own, and ready(c, bnd) is called once the server
 * answered, with the relay's address for the reply; a refusal, or the
 * stream ending before it, fails c (conn_fail), and its end later closes
 * c. 0, or -ENOMEM / -EPIPE (the tunnel connection takes no stream) with
 * c untouched. */
int outbound_h2rev_assoc_open(struct conn *c, const struct udp_owner *own,
                              void (*ready)(struct conn *c, const struct addr *bnd));

#endif
