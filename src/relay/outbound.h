/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.h: the second seam of a session, how its other side is reached.
 * An outbound takes a destination (a name or an address, and a port), meets
 * the rules on the way, and ends in conn_connected() with c->up connected,
 * or in conn_fail() with the reason. The session core (conn.c) and the
 * fronts use it only through c->out, so a parent proxy or a stream of a
 * tunnel connection is one more row, not a change to the relay.
 *
 * The rows: direct (outbound_direct.c) resolves with the worker's resolver
 * and connects from this host; reject refuses; a parent proxy (SOCKS5,
 * SOCKS4a, HTTP CONNECT, HTTPS) and a pool of them are rows of their own.
 * conn_dial() (conn.c) picks the row for a destination: the outbound named
 * by the rule that allowed it ("via NAME"), else the config's default
 * (config/outbound.h), and records it in c->ob.
 */
#ifndef FERRY_RELAY_OUTBOUND_H
#define FERRY_RELAY_OUTBOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "config/outbound.h"
#include "relay/errmap.h"
#include "util/addr.h"

struct conn;

/* One kind of outbound. Every hook runs on the session's worker thread. */
struct outbound_ops {
    const char *name; /* for logs and debugging */
    /* After conn_connected(), c->up is a plain connected socket that the
     * relay may splice(); false: a byte stream the buffer pump must carry. */
    bool splice;
    /* Reach name (NULL: ip) at port within connect_timeout, the rules met
     * for each address tried; c->dst_name, c->dst_port, c->target and
     * c->rule are set on the way. Ends, now or from a later event, in
     * conn_connected() or in conn_fail(). The session's timer and states
     * RESOLVE and CONNECT are the outbound's until then. */
    void (*dial)(struct conn *c, const char *name, const struct addr *ip, uint16_t port);
    /* Events on c->up in state CONNECT. */
    void (*event)(struct conn *c, uint32_t events);
    /* The session's timer fired in state RESOLVE or CONNECT. */
    void (*timeout)(struct conn *c);
    /* Where the destination sees this session come from (a SOCKS reply's
     * BND), after conn_connected(). 0 or -errno. */
    int (*bnd)(const struct conn *c, struct addr *out);
    /* The session ends (or lingers): give back what a dial holds. c->up is
     * the core's to close. */
    void (*close)(struct conn *c);
};

extern const struct outbound_ops outbound_direct;
extern const struct outbound_ops outbound_reject;
/* A parent proxy: SOCKS5, SOCKS4a, HTTP CONNECT (outbound_parent.c). */
extern const struct outbound_ops outbound_parent;

/* The row that carries sessions for a configured outbound; NULL for a
 * kind this build cannot carry. */
const struct outbound_ops *outbound_ops_for(const struct config_outbound *o);

/* A dial through c->out failed with o (the outbound has given back what
 * it held for this attempt): a pool tries its next member within the
 * connect budget; otherwise the session fails (conn_fail()). */
void outbound_fail(struct conn *c, enum outcome o, const char *why);

#endif
