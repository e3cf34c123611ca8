/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front.h: the first seam of a session, its front protocol. A front is
 * what the client speaks (SOCKS5, SOCKS4, HTTP/1; later an HTTP/2 stream or
 * an edge sniffer); each is one row of `struct front_ops`, and the session
 * core (conn.c) drives the session through c->front without ever naming a
 * protocol. Two rows come before any protocol: the PROXY header of a
 * trusted load balancer, and the sniff of the first byte that picks the
 * protocol row (front.c).
 *
 * Adding a protocol: a file with its row, and a line in front_sniff_pick()
 * (front.c). Nothing in conn.c changes.
 */
#ifndef FERRY_RELAY_FRONT_H
#define FERRY_RELAY_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/errmap.h"

struct conn;
struct log_field;

/* One front protocol. Every hook runs on the session's worker thread and
 * may end the session (conn_close, conn_fail, conn_linger); the caller
 * touches the session no more after a hook returns unless its state says
 * it is still open. The core keeps RESOLVE and CONNECT (the outbound's),
 * RELAY, LINGER and CLOSED to itself, the client's hangup in AUTH_WAIT and
 * the idle timer of UDP; every other event and timer of a state goes to
 * the front (conn.c, conn_front_owns()). */
struct front_ops {
    const char *name;      /* for logs and debugging */
    const char *log_proto; /* " proto=..." in its access-log lines; NULL: none */
    uint8_t
        proto;  /* PROTO_* bit of config.h the listener must allow; 0 for the pre-protocol rows */
    uint8_t sp; /* enum stats_proto the session is counted under */
    /* The row was just given the session; bytes already read are in
     * c->c2u.buf. */
    void (*start)(struct conn *c);
    /* An event (or a resume after a yield or a bandwidth pause, with
     * up_events 0) in a state the front owns. */
    void (*drive)(struct conn *c, uint32_t up_events);
    /* The outbound reached the destination: answer the client and go on
     * (conn_relay_start for a tunnel). */
    void (*connected)(struct conn *c);
    /* Answer the client with the protocol's form of the failure o (through
     * errmap.h), then linger (conn_linger) or close. c->why is set. */
    void (*fail_reply)(struct conn *c, enum outcome o, const char *why);
    /* The session's timer fired in a state the front owns. */
    void (*timeout)(struct conn *c);
    /* The session ends: write its access-log line(s) and free what the
     * front holds (c->state is not CLOSED yet, descriptors still open). */
    void (*end)(struct conn *c);
    /* Optional: its own fields for the session's access-log line(s),
     * appended after the common ones (at most room of them; strings may
     * point into buf, len bytes, or at memory that outlives the call).
     * Returns how many it wrote. */
    size_t (*log_fields)(const struct conn *c, struct log_field *f, size_t room, char *buf,
                         size_t len);
};

/* The rows before a protocol is known (front.c): a PROXY protocol header
 * first (proxy_protocol listeners), or the first byte of the protocol. */
extern const struct front_ops front_proxy;
extern const struct front_ops front_sniff;
/* A tls:// listener: the TLS handshake, then the sniff (front_tls.c). */
extern const struct front_ops front_tls;

/* The protocol rows. */
extern const struct front_ops front_socks5; /* socks.c */
extern const struct front_ops front_socks4; /* socks.c */
extern const struct front_ops front_http;   /* http.c */
extern const struct front_ops front_h2;     /* front_h2.c: one HTTP/2 stream */
extern const struct front_ops front_edge;   /* front_edge.c: an [edge NAME] listener */
/* A forward= listener: no protocol, a fixed destination (front_forward.c). */
extern const struct front_ops front_forward;

/* The row that follows the pre-protocol rows on the session's listener:
 * front_forward on a forward= listener, else front_sniff (front.c). */
const struct front_ops *front_after_pre(const struct conn *c);

#endif
