/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2out_user.h: streams on the HTTP/2 outbound's connections
 * (outbound_h2_stream.c) for users other than a session, such as a CONNECT-UDP
 * flow (udp_tunnel.c): an extended CONNECT (RFC 8441) with a :protocol and
 * a :path, on the worker's one connection to the parent, opened (or waited
 * for) as a session's CONNECT is. The user owns a task: every piece of news
 * on the stream (the response, bytes, room, its end) defers it, never
 * calling the user from inside nghttp2; the user looks with h2out_state()
 * and the calls below. Bytes read are credited back as they are consumed.
 *
 * A stream waiting for its connection waits as long as its user lets it
 * (no timer of its own here): the user closes it when it gives up.
 */
#ifndef FERRY_RELAY_H2OUT_USER_H
#define FERRY_RELAY_H2OUT_USER_H

#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "worker/worker.h"

struct config;
struct ho_stream;

/* Open a stream to outbound ob of cfg (an HTTPS parent spoken HTTP/2) with
 * :protocol proto (a string that outlives the stream) and :path path
 * (copied), and for connect-udp capsule-protocol: ?1 (outbound_h2_stream.c's one
 * header builder, shared with the reverse streams). News defers wake. NULL when cfg is no
 * configuration of w's, the parent speaks only http/1.1, or memory is
 * short. */
struct ho_stream *h2out_open(struct worker *w, const struct config *cfg, uint16_t ob,
                             const char *proto, const char *path, struct task *wake);
/* h2out_state() of a stream whose connection failed or went. */
#define H2OUT_LOST (-2)

/* 0 while no answer came, the 2xx :status while the stream is open, or
 * negative once it cannot carry anything: -status for a refusal, -1 for a
 * reset or an end (the parent's END_STREAM: what came before it is still
 * there to peek), H2OUT_LOST when its connection failed or went. */
int h2out_state(const struct ho_stream *s);
/* The bytes received and not consumed yet: *p and their count. */
size_t h2out_peek(const struct ho_stream *s, const uint8_t **p);
/* n bytes of what h2out_peek showed are consumed (and credited). */
void h2out_consume(struct ho_stream *s, size_t n);
/* Bytes written and not handed to nghttp2 yet. */
size_t h2out_unsent(const struct ho_stream *s);
/* Write a[0..na) then b[0..nb), all or nothing: 0, -EAGAIN (no room:
 * the stream holds 128 KiB), -EPIPE (not open) or -ENOMEM. */
int h2out_write(struct ho_stream *s, const void *a, size_t na, const void *b, size_t nb);
/* What s was just written is a datagram: its connection keeps a shallow
 * socket queue while datagrams go (h2io.h, H2IO_UDP_LOWAT). */
void h2out_datagram(struct ho_stream *s);
/* Let go of the stream (reset if still open). NULL is a no-op. */
void h2out_close(struct ho_stream *s);

#endif
