/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2conn.h: an HTTP/2 connection (RFC 9113) on a tls:// listener whose
 * client chose "h2" by ALPN (or inside a WebSocket, front_ws.c). The
 * connection is a session of its own (the carrier: its struct conn owns
 * the socket and the TLS, state CONN_ST_H2, front row front_h2conn) that
 * drives an nghttp2 server session from the worker's loop with memory
 * I/O: it reads the TLS socket always, feeds nghttp2, and writes what
 * nghttp2 produces with backpressure. Each request stream becomes a
 * session of its own whose client side is the stream (h2stream.h). Flow
 * control follows docs/architecture.md ("HTTP/2 inbound"): connection
 * credit on receipt, stream credit on consumption, auto-tuned stream
 * windows admitted under connection and worker budgets (proto/h2flow.h).
 * Abuse budgets end a connection with GOAWAY(ENHANCE_YOUR_CALM).
 *
 * The carrier never frees itself inside an nghttp2 callback, and stream
 * sessions only ever queue work for the carrier (its task), so no stream
 * call can end the connection under it.
 */
#ifndef FERRY_RELAY_H2CONN_H
#define FERRY_RELAY_H2CONN_H

struct conn;
struct worker;

/* The carrier's row (state CONN_ST_H2). */
extern const struct front_ops front_h2conn;

/* The TLS handshake of c settled on ALPN "h2": make c the carrier of an
 * HTTP/2 connection (server SETTINGS go out at once). May close c. */
void h2conn_begin(struct conn *c);
/* The same for an HTTP/2 connection inside a WebSocket (front_ws.c
 * answered the Upgrade: its 101 and any early bytes are in ws, which c now
 * owns; wslink.h). May close c. */
struct wslink;
void h2conn_begin_ws(struct conn *c, struct wslink *ws);
/* Send GOAWAY (the last stream id) on every HTTP/2 connection of the
 * worker and let open streams finish; the connection closes when none is
 * left (a drain or a reload). */
void h2conn_goaway_all(struct worker *w);

#endif
