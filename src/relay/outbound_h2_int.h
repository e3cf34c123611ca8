/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2_int.h: what the HTTP/2 outbound's two files share and nobody
 * else sees: the stream (struct ho_stream) and the few calls into its
 * connection that outbound_h2_user.c, the streams that are not a session,
 * needs from outbound_h2.c, the connections. Only those two include it.
 * Everything runs on the worker's thread.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2_INT_H
#define FERRY_RELAY_OUTBOUND_H2_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/h2flow.h"
#include "relay/h2io.h"
#include "util/addr.h"
#include "util/list.h"

#define HO_TX_MAX (128u * 1024) /* bytes a stream holds for the parent */

struct conn;
struct ho_conn;
struct ho_slot;
struct task;

/* A stream on an HTTP/2 outbound's connection: a session's (c->ob_priv
 * from dial to close), or one no session holds (an owner's, woken by
 * wake). Owned by outbound_h2.c, which frees it once its user let go and
 * nghttp2 closed it. */
struct ho_stream {
    struct list link;   /* in its connection's streams, or its slot's waiters */
    struct ho_slot *sl; /* the slot it waits in or came through */
    struct ho_conn *hc; /* NULL: waiting, or its connection is gone */
    struct conn *c;     /* NULL once its session let go */
    bool cli;           /* c reads it as its client side (a reverse session) */
    /* A stream no session holds (outbound_h2.h, h2out_user.h): an extended
     * CONNECT (RFC 8441) whose news defers wake; rv, a reverse owner, also
     * sees the response's fields. */
    struct task *wake;
    void *rv;
    const char *xproto;   /* :protocol (NULL: a plain CONNECT), and ... */
    char *xpath;          /* ... :path (owned) */
    int32_t id;           /* 0: not submitted */
    int status;           /* the response's :status; 0 while none */
    bool waiting;         /* in sl->waiters */
    bool gone;            /* nghttp2 closed it (or its connection died) */
    bool reset;           /* ended without a clean END_STREAM both ways */
    bool retry;           /* refused by a GOAWAY before it was processed: dial again */
    bool http1;           /* the parent speaks http/1.1 (auto): go the HTTP/1 way */
    uint8_t fail_o;       /* enum outcome of the attempt that failed it now ... */
    const char *fail_why; /* ... and why; NULL: none */
    bool rx_eof, tx_eof, deferred;
    uint8_t *rx; /* parent -> client, up to the granted window */
    size_t rx_off, rx_len, rx_cap;
    uint8_t *tx; /* client -> parent */
    size_t tx_off, tx_len;
    uint64_t handed, credited; /* bytes read by the session / credited back */
    struct h2flow_win win;
    /* Its recent DATA: young or bulk (h2io.h). */
    struct h2io_light light;
    struct addr ip; /* the destination as dialled, for a second dial */
    uint16_t port;
    bool has_name;
};

/* Does slot sl's parent speak only http/1.1 (mux = auto picked it)? */
bool outbound_h2_slot_http1(const struct ho_slot *sl);
/* n bytes s (a datagram stream) received were consumed: stream credit back
 * to the parent, its window kept at s->win.window. */
void outbound_h2_stream_consumed(struct ho_stream *s, size_t n);
/* s (on a connection, submitted) has new bytes or its end to send: nghttp2
 * asks for them again and the connection writes. */
void outbound_h2_stream_more(struct ho_stream *s);
/* A datagram went into s: its connection keeps a shallow socket queue
 * (h2io.h, H2IO_UDP_LOWAT). A no-op while s waits. */
void outbound_h2_stream_datagram(struct ho_stream *s);

#endif
