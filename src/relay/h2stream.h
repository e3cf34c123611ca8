/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2stream.h: the streams of an HTTP/2 connection (h2conn.h) as the
 * sessions that read and write them see them. Each request stream becomes
 * a session of its own (struct conn without a client socket, front row
 * front_h2 of front_h2.c) whose client side is the stream:
 * conn_cli_recv/send/shutdown() of conn.c come here. A stream's credit
 * goes back to the client as its bytes reach the destination, so a
 * stalled stream blocks only itself (docs/architecture.md, "HTTP/2
 * inbound").
 *
 * A stream's state (struct h2stream) lives until both its session and
 * nghttp2 have let go of it; these calls only fill or drain its buffers
 * and queue work for the carrier (its task), so no stream call can end
 * the connection under it.
 */
#ifndef FERRY_RELAY_H2STREAM_H
#define FERRY_RELAY_H2STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct conn;
struct h2stream;

/* What a stream asked for: its request's pseudo-header fields and the one
 * regular field a proxy needs. Strings are NUL-terminated (possibly
 * empty); too long a value marks the request bad. */
struct h2stream_req {
    char method[16];
    char authority[300];
    char scheme[16];
    char protocol[32];
    char path[512];
    char proxy_auth[512];      /* Proxy-Authorization */
    char capsule_protocol[64]; /* Capsule-Protocol (RFC 9297 3.4), connect-udp */
    bool bad;                  /* a value too long for its field */
    /* The regular fields, for a plain request (proto/h2h1.h's list;
     * a Host field fills an empty authority instead). */
    uint8_t *fields;
    size_t flen, fcap;
    bool field_bad; /* a malformed field (RFC 9113 8.2.2) */
};

/* ---- for a stream's session (c->h2s set) ------------------------------ */

/* The session c now reads and writes stream s (conn_open_stream). */
void h2stream_attach(struct h2stream *s, struct conn *c);

/* The HTTP/2 connection carrying stream session c (only compared). */
const void *h2stream_carrier(const struct conn *c);
/* The HTTP/2 stream id of stream session c (0: none). */
int32_t h2stream_id(const struct conn *c);
/* The stream's request. */
const struct h2stream_req *h2stream_req(const struct conn *c);
/* The client side of a stream session, as conn_cli_recv/send/shutdown()
 * (conn.c) promise: -1 with errno EAGAIN when nothing is there / no room
 * (the connection sets SIDE_RD / SIDE_WR and resumes the session when
 * that changes), 0 at END_STREAM, -1 with ECONNRESET after the client
 * reset the stream. Shutdown queues END_STREAM after the data. */
ssize_t h2stream_recv(struct conn *c, void *p, size_t len);
ssize_t h2stream_send(struct conn *c, const void *p, size_t len);
int h2stream_shutdown(struct conn *c);
/* The bytes h2stream_send() would take now in one call (0 once the stream
 * cannot send): a datagram relay sends a whole capsule or drops it. */
size_t h2stream_room(const struct conn *c);
/* The same without the plain-request translation (front_h2_http.c):
 * the stream's own bytes, and its END_STREAM. */
ssize_t h2stream_rx_read(struct conn *c, void *p, size_t len);
ssize_t h2stream_tx_write(struct conn *c, const void *p, size_t len);
int h2stream_tx_end(struct conn *c);
/* n bytes read by h2stream_rx_read() were taken on by the session: the
 * client gets their credit back (a plain request's body). */
void h2stream_consumed(struct conn *c, size_t n);
/* Bytes h2stream_tx_write() takes now. */
size_t h2stream_tx_room(const struct conn *c);
/* Did the request's HEADERS come with END_STREAM (or has it come)? */
bool h2stream_rx_done(const struct conn *c);
/* A plain request's translation state (front_h2_http.c): while set (the
 * session owns it; NULL: none), conn_cli_recv/send/shutdown() go through
 * h2http_recv/send/shutdown(), which keep the promises of
 * h2stream_recv/send/shutdown() for the request written as HTTP/1.1 and
 * an HTTP/1.1 response read back into HEADERS, DATA and END_STREAM
 * (send: -1 with EPIPE for a response that cannot be followed). */
struct h2http;
void h2stream_set_http(struct conn *c, struct h2http *x);
/* The session's translation state, or NULL. */
struct h2http *h2stream_http(const struct conn *c);
ssize_t h2http_recv(struct conn *c, struct h2http *x, void *p, size_t len);
ssize_t h2http_send(struct conn *c, struct h2http *x, const void *p, size_t len);
int h2http_shutdown(struct conn *c, struct h2http *x);
/* Start a plain (non-CONNECT) request's session (front_h2_http.c). */
void h2http_start(struct conn *c);
struct h1h2_field;
/* Answer with status and n fields (a plain request's response); end:
 * with END_STREAM, else DATA from h2stream_tx_write() follows. */
void h2stream_respond_fields(struct conn *c, int status, const struct h1h2_field *f, size_t n,
                             bool end);
/* An interim response (a 100 Continue) before the final one. */
void h2stream_interim(struct conn *c, int status);
/* After the pump moved bytes: give the client credit for those that
 * reached the destination (c->c2u.bytes), maybe growing the window. */
void h2stream_credit(struct conn *c);
/* c's stream keeps a receive window of win bytes from now on, never tuned
 * (a CONNECT-UDP stream, h2io_udp_window()): a larger one shrinks (the
 * client may still fill what it was granted before). */
void h2stream_window_fix(struct conn *c, uint32_t win);
/* Answer the request with status (and one extra field, name NULL: none);
 * end: with END_STREAM (a refusal), else the tunnel's data follows. */
void h2stream_respond(struct conn *c, int status, bool end, const char *name, const char *value);
/* The session ends: let go of the stream. A stream that did not finish
 * cleanly is reset (RST_STREAM CONNECT_ERROR, RFC 9113 section 8.5); a
 * refused one whose request body still flows gets RST_STREAM(NO_ERROR). */
void h2stream_detach(struct conn *c);

#endif
