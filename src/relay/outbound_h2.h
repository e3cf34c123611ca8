/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2.h: the streams of an HTTP/2 outbound's tunnel connection
 * (outbound_h2_stream.c) as the reverse remotes (outbound_h2rev.c) use them:
 * extended CONNECT streams (RFC 8441) that no session dialled, held by a
 * reverse object until one becomes the client side of a session. Only
 * relay/ includes it. Everything runs on the worker's thread.
 *
 * A stream no session holds is news-driven like a session's: anything
 * that happens to it (a response, data, room, its end) defers its owner's
 * wake task, the one mechanism h2out_user.h's streams use too; its
 * response's fields are shown to a reverse owner (rv) from inside
 * nghttp2's callbacks, so the owner only copies them there.
 */
#ifndef FERRY_RELAY_OUTBOUND_H2_H
#define FERRY_RELAY_OUTBOUND_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct conn;
struct ho_slot;
struct ho_stream;
struct h2rev_out_set;
struct task;
struct wcfg;
struct worker;

/* The worker's slot of outbound ob under configuration wc (created, and
 * holding wc, on first use); NULL when out of memory. */
struct ho_slot *outbound_h2_slot(struct worker *w, struct wcfg *wc, uint16_t ob);
/* Where outbound_h2rev.c keeps the worker's reverse state (NULL: out of
 * memory). */
struct h2rev_out_set **outbound_h2_rev_set(struct worker *w);

/* A new stream of slot sl: an extended CONNECT with :protocol protocol (a
 * string that outlives it) and :path path (copied), not submitted yet; its
 * news defers wake, and its response's fields go to
 * outbound_h2rev_header(rv) (rv NULL: nowhere). capsule-protocol: ?1 is
 * sent for connect-udp only. NULL when out of memory. */
struct ho_stream *outbound_h2_stream_new(struct ho_slot *sl, struct task *wake, void *rv,
                                         const char *protocol, const char *path);
/* s's news defers wake from now on, and no reverse owner sees its fields
 * (a reverse stream handed to a datagram flow, h2out_user.h's calls);
 * its window becomes a datagram stream's (h2io_udp_window, fixed). */
void outbound_h2_stream_rewake(struct ho_stream *s, struct task *wake);
/* Submit s on the slot's connection, or wait for one (opening it, after
 * the slot's back-off). */
void outbound_h2_stream_queue(struct ho_stream *s);
/* Submit s on the connection that carries peer: 0, or -1 when that
 * connection takes no new stream (s is untouched then). */
int outbound_h2_stream_beside(struct ho_stream *s, const struct ho_stream *peer);
/* s's HTTP/2 stream id on its connection (0: not submitted yet). */
int32_t outbound_h2_stream_id(const struct ho_stream *s);
/* A new stream on the connection that carries peer (its slot's), with
 * :protocol protocol and :path path as outbound_h2_stream_new's, rv
 * NULL, news deferring wake, submitted at once: NULL when out of memory
 * or when that connection takes no new stream. */
struct ho_stream *outbound_h2_stream_open_beside(const struct ho_stream *peer, struct task *wake,
                                                 void *rv, const char *protocol, const char *path);
/* The response's :status (0: none yet). */
int outbound_h2_stream_status(const struct ho_stream *s);
/* Is s over: closed, its connection gone, or failed before it was
 * submitted? */
bool outbound_h2_stream_ended(const struct ho_stream *s);
/* The parent turned out to speak only HTTP/1.1 (no streams at all). */
bool outbound_h2_stream_http1(const struct ho_stream *s);
/* s, submitted or not, carries datagrams from now on (a reverse stream
 * handed to a datagram flow, a reverse SOCKS association's): its window
 * shrinks to h2io_udp_window()'s, fixed. */
void outbound_h2_stream_udp_window(struct ho_stream *s);
/* Session c reads and writes s as its client side from now on (its
 * news sets c->cli_ev and defers c's task); the owner lets go. */
void outbound_h2_stream_adopt(struct ho_stream *s, struct conn *c);
/* Bytes of s, as outbound_ops read/write/shutdown_wr promise: -EAGAIN
 * (*want set), 0 at its end, -ECONNRESET / -EPIPE after a reset. */
ssize_t outbound_h2_stream_read(struct ho_stream *s, void *p, size_t len, uint8_t *want);
ssize_t outbound_h2_stream_write(struct ho_stream *s, const void *p, size_t len, uint8_t *want);
int outbound_h2_stream_shutdown(struct ho_stream *s);
/* delivered bytes of s reached their reader: stream credit back (and the
 * window may grow). */
void outbound_h2_stream_credit(struct ho_stream *s, uint64_t delivered);
/* The owner or session lets go of s: reset unless it ended cleanly both
 * ways; freed once nghttp2 lets go too. */
void outbound_h2_stream_release(struct ho_stream *s);

/* ---- outbound_h2rev.c, called by outbound_h2_stream.c ------------------- */

/* A response field of a stream owned by rv (inside nghttp2's callback). */
void outbound_h2rev_header(void *rv, const uint8_t *name, size_t namelen, const uint8_t *value,
                           size_t valuelen);

#endif
