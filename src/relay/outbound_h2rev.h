/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev.h: the client half of reverse tunnels (chisel's R:
 * remotes), the server half being h2rev.h. Each "reverse =" remote of an
 * HTTP/2 outbound ([outbound NAME], config/outbound.h) is registered on
 * worker 0's tunnel connection with a ferry-listen stream, and a few
 * ferry-accept streams wait beside it, so a connection to the server's
 * port costs no round trip. An accept stream the server answers 200
 * becomes a session whose client side is the stream (c->hos): a forward
 * remote dials its one target (front_forward), a socks remote serves
 * SOCKS5/SOCKS4/HTTP on it (front_sniff) and may reach only what
 * outbound_reverse_egress_ok allows; both leave from this host (direct),
 * under the rules, limits and access log of any session.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2REV_H
#define FERRY_RELAY_OUTBOUND_H2REV_H

#include <stddef.h>
#include <sys/types.h>

struct conn;
struct ho_stream;
struct rv_remote;
struct worker;

#define RV_FIELD_MAX 64

/* The owner of a reverse stream (outbound_h2.h's rv): its remote, and
 * what the answer said. An association's stream (outbound_h2rev_assoc.c)
 * has r NULL and keeps the answer's ferry-bound in peer. */
struct rv_obj {
    struct rv_remote *r;
    struct ho_stream *s;
    char peer[RV_FIELD_MAX]; /* accept: ferry-peer */
};

/* A configuration came (at start, or a reload): worker 0 registers the
 * remotes of w->cur (from its own thread) and lets go of older ones. */
void outbound_h2rev_config_changed(struct worker *w);

/* The worker drains or ends: every reverse remote lets go of its streams
 * (the server's ports close; sessions already open finish). */
void outbound_h2rev_fini(struct worker *w);

/* The client side of a reverse session (c->hos), as conn_cli_recv(),
 * conn_cli_send() and conn_cli_shutdown() promise. */
ssize_t outbound_h2rev_recv(struct conn *c, void *p, size_t len);
ssize_t outbound_h2rev_send(struct conn *c, const void *p, size_t len);
int outbound_h2rev_shutdown(struct conn *c);
/* After the pump moved bytes: credit for those that reached the target. */
void outbound_h2rev_credit(struct conn *c);
/* The session ends: let go of its stream. */
void outbound_h2rev_detach(struct conn *c);

#endif
