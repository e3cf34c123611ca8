/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wslink.h: the WebSocket transport of ferry's tunnel (RFC 6455): an
 * HTTP/2 session's bytes carried as the payload of binary messages, for a
 * TLS-terminating reverse proxy or CDN in front of ferry serve. The link
 * sits on the byte path between the socket (TLS or plain) and nghttp2's
 * memory I/O of an HTTP/2 connection, on either end: the server's carrier
 * (h2conn.c, after front_ws.c answered the Upgrade with 101) and the
 * outbound's connection (outbound_h2.c, after wslink_client_* did the
 * opening handshake). It frames what nghttp2 writes (masked from a
 * client, plain from a server), unframes what arrives in place and feeds
 * nghttp2, answers PING with PONG and CLOSE with CLOSE, and on a protocol
 * error queues a CLOSE with the right code (proto/ws.h checks the rules).
 * Without a link (the plain h2 path) none of this runs.
 *
 * One link per connection, owned by it (wslink_free when it ends); one
 * worker thread; no syscalls of its own: the caller's write function does
 * the writing.
 */
#ifndef FERRY_RELAY_WSLINK_H
#define FERRY_RELAY_WSLINK_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct wslink;

/* Write n bytes of p to the peer: the bytes written (> 0), or -errno
 * (-EAGAIN: no room now; the same bytes are offered again later). */
typedef ssize_t (*wslink_write_fn)(void *ctx, const uint8_t *p, size_t n);
/* Read up to n bytes: the bytes read, 0 at the end, or -errno (-EAGAIN). */
typedef ssize_t (*wslink_read_fn)(void *ctx, uint8_t *p, size_t n);

/* What wslink_recv() found. */
enum wslink_rc {
    WSLINK_OK = 0,
    WSLINK_CLOSED = 1, /* the peer's CLOSE: ours is queued, the connection ends */
    WSLINK_BAD = -1,   /* a WebSocket protocol error: our CLOSE(code) is queued */
    WSLINK_H2 = -2,    /* nghttp2 refused the bytes */
};

/* A link; client: our frames are masked and the peer's must not be.
 * NULL when memory is exhausted. */
struct wslink *wslink_new(bool client);
/* wslink_free(NULL) is a no-op. */
void wslink_free(struct wslink *ws);
/* Queue n raw bytes (an opening handshake's head) ahead of any frame.
 * 0, or -ENOMEM. */
int wslink_raw(struct wslink *ws, const void *p, size_t n);
/* Keep n bytes that arrived behind the opening handshake: wslink_start()
 * feeds them. 0, or -ENOMEM. */
int wslink_keep(struct wslink *ws, const uint8_t *p, size_t n);
/* The HTTP/2 session s is ready: feed it the kept bytes. A WSLINK_*. */
int wslink_start(struct wslink *ws, nghttp2_session *s);

/* Unframe buf[0..n) (modified in place) into s, answering control frames.
 * A WSLINK_*; once not OK, later calls ignore their bytes. */
int wslink_recv(struct wslink *ws, nghttp2_session *s, uint8_t *buf, size_t n);
/* Frame as much of p[0..n) as fits as one binary message (none once our
 * CLOSE is queued: the bytes are taken and dropped) and write queued
 * bytes with wr. Returns the payload bytes taken, or -errno: -EAGAIN when
 * none could be taken because earlier bytes still wait for room. n 0:
 * only write what is queued (0, -EAGAIN while some remain, or -errno). */
ssize_t wslink_send(struct wslink *ws, const uint8_t *p, size_t n, wslink_write_fn wr, void *ctx);
/* Bytes queued that the socket has not taken yet. */
bool wslink_pending(const struct wslink *ws);
/* Queue our CLOSE with code (once; a 1000 when the tunnel ends in order). */
void wslink_close(struct wslink *ws, uint16_t code);

/* ---- the client's opening handshake (RFC 6455 section 4.1) ------------- */

/* Queue the Upgrade request for path at host (the Host field's value).
 * 0, or -EINVAL (a value that cannot be sent) / -ENOMEM. */
int wslink_client_begin(struct wslink *ws, const char *host, const char *path);
/* Read the server's answer with rd: 1 once a valid 101 is in (bytes behind
 * it kept for wslink_start), 0 while more is needed, or -errno with *why
 * saying what was wrong (-EPROTO: not our 101, -ECONNRESET: closed first). */
int wslink_client_read(struct wslink *ws, wslink_read_fn rd, void *ctx, const char **why);

/* The Sec-WebSocket-Accept for key (RFC 6455 section 4.2.2: base64 of
 * the SHA-1 of key and the GUID) into out. 0 or -1. */
int wslink_accept(const char *key, char out[32]);

#endif
