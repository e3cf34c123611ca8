/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2io.h: what the HTTP/2 server (h2conn.c) and the HTTP/2 client
 * (outbound_h2.c) share around an nghttp2 session driven by memory I/O:
 * gathering the frames nghttp2 has to send into one buffer for a single
 * TLS write, and growing one stream's receive window as its bytes are
 * consumed (proto/h2flow.h's rule, each growth admitted under a
 * connection budget and a worker budget). It writes to no socket, owns no
 * session and knows nothing of the connections' lifetimes.
 */
#ifndef FERRY_RELAY_H2IO_H
#define FERRY_RELAY_H2IO_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/h2flow.h"

/* Append what s has to send to *buf (*len bytes used) while fewer than
 * upto are gathered; a frame that does not fit in cap grows *buf (free()
 * and realloc() memory). 0, -EPROTO (nghttp2 failed) or -ENOMEM. */
int h2io_gather(nghttp2_session *s, uint8_t **buf, uint32_t *len, uint32_t upto, uint32_t cap);

/* n more bytes of stream id's window win were consumed (delivered on). At
 * each half window an epoch ends: the window may double (h2flow_tune with
 * the larger of rtt's smoothed RTT and fd's TCP_INFO RTT, at most
 * window_max), admitted under conn and worker and charged to both, and
 * nghttp2 is told the new size. Returns whether an epoch ended (*now_us:
 * when), so the caller may probe the RTT. */
bool h2io_window_consumed(nghttp2_session *s, int32_t id, struct h2flow_win *win, size_t n,
                          struct h2flow_budget *conn, struct h2flow_budget *worker,
                          const struct h2flow_rtt *rtt, int fd, uint32_t window_max,
                          uint64_t *now_us);

#endif
