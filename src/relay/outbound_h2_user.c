/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2_user.c: the streams of the HTTP/2 outbound that are not a
 * session: h2out_user.h's calls (CONNECT-UDP flows, udp_tunnel.c and
 * outbound_h2rev_udp.c) and the looks the reverse remotes take at theirs
 * (outbound_h2.h, outbound_h2rev.c). Each is an extended CONNECT on the
 * worker's connection to the parent (outbound_h2.c): opening,
 * submitting, nghttp2's callbacks, credit, the end and the free are
 * outbound_h2_stream.c's. This file only reads and fills a stream's
 * buffers and asks outbound_h2_stream.c (outbound_h2_int.h) to move them;
 * it never touches a connection or a slot itself, and never calls a user
 * back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "relay/h2out_user.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2_int.h"

/* ---- streams of the reverse remotes (outbound_h2rev.c) -------------------- */

/* outbound_h2.h: s's news defers wake, no reverse owner sees its fields;
 * it carries datagrams, so its window becomes a datagram stream's. */
void outbound_h2_stream_rewake(struct ho_stream *s, struct task *wake)
{
    s->rv = NULL;
    s->wake = wake;
    outbound_h2_stream_udp_window(s); /* it carries datagrams now */
}

/* outbound_h2.h: s's HTTP/2 stream id, 0 before its HEADERS went out. */
int32_t outbound_h2_stream_id(const struct ho_stream *s)
{
    return s->id > 0 ? s->id : 0;
}

/* outbound_h2.h: the response's :status, 0 while none came. */
int outbound_h2_stream_status(const struct ho_stream *s)
{
    return s->status;
}

/* outbound_h2.h: closed, its connection gone, or failed before submitted. */
bool outbound_h2_stream_ended(const struct ho_stream *s)
{
    return s->gone || (!s->hc && !s->waiting);
}

/* outbound_h2.h: the parent speaks only http/1.1. */
bool outbound_h2_stream_http1(const struct ho_stream *s)
{
    return s->http1;
}

/* ---- streams of other users (h2out_user.h) -------------------------------- */

/* h2out_user.h: a new extended CONNECT on w's connection for outbound ob
 * of cfg, submitted now or waiting for the connection. */
struct ho_stream *h2out_open(struct worker *w, const struct config *cfg, uint16_t ob,
                             const char *proto, const char *path, struct task *wake)
{
    struct wcfg *wc = NULL;
    for (struct list *pos = w->cfgs.next; pos != &w->cfgs; pos = pos->next)
        if (container_of(pos, struct wcfg, link)->cfg == cfg)
            wc = container_of(pos, struct wcfg, link);
    struct ho_slot *sl = wc ? outbound_h2_slot(w, wc, ob) : NULL;
    struct ho_stream *s = sl && !outbound_h2_slot_http1(sl)
                              ? outbound_h2_stream_new(sl, wake, NULL, proto, path)
                              : NULL;
    if (s)
        outbound_h2_stream_queue(s);
    return s;
}

/* h2out_user.h: 0 (no answer), the 2xx status (open), or negative (over). */
int h2out_state(const struct ho_stream *s)
{
    if (s->http1)
        return -1;
    if (s->status >= 200 && s->status <= 299)
        return !s->hc ? H2OUT_LOST : s->gone || s->rx_eof ? -1 : s->status;
    if (s->status)
        return -s->status;
    if (!s->hc && !s->waiting)
        return H2OUT_LOST; /* its connection failed, or went */
    return s->gone ? -1 : 0;
}

/* h2out_user.h: the bytes received and not consumed yet. */
size_t h2out_peek(const struct ho_stream *s, const uint8_t **p)
{
    *p = s->rx + s->rx_off;
    return s->rx_len - s->rx_off;
}

/* h2out_user.h: n bytes of what h2out_peek showed are consumed. */
void h2out_consume(struct ho_stream *s, size_t n)
{
    s->rx_off += n;
    if (s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    if (!s->hc || s->gone || !n)
        return;
    outbound_h2_stream_consumed(s, n);
}

/* h2out_user.h: bytes written and not handed to nghttp2 yet. */
size_t h2out_unsent(const struct ho_stream *s)
{
    return s->tx_len - s->tx_off;
}

/* h2out_user.h: what was just written is a datagram. */
void h2out_datagram(struct ho_stream *s)
{
    outbound_h2_stream_datagram(s);
}

/* h2out_user.h: a[0..na) then b[0..nb), all or nothing. */
int h2out_write(struct ho_stream *s, const void *a, size_t na, const void *b, size_t nb)
{
    if (s->gone || (!s->hc && !s->waiting))
        return -EPIPE; /* while it waits, bytes wait with it */
    if (s->tx_off) {
        memmove(s->tx, s->tx + s->tx_off, s->tx_len - s->tx_off);
        s->tx_len -= s->tx_off;
        s->tx_off = 0;
    }
    if (na + nb > HO_TX_MAX - s->tx_len)
        return -EAGAIN;
    if (!s->tx && !(s->tx = malloc(HO_TX_MAX)))
        return -ENOMEM;
    memcpy(s->tx + s->tx_len, a, na);
    if (nb)
        memcpy(s->tx + s->tx_len + na, b, nb);
    s->tx_len += na + nb;
    if (!s->hc || s->id <= 0)
        return 0;
    outbound_h2_stream_more(s);
    return 0;
}

/* h2out_user.h: let go of s (reset if still open); NULL is a no-op. */
void h2out_close(struct ho_stream *s)
{
    if (s)
        outbound_h2_stream_release(s); /* an unfinished stream is reset, its credit given back */
}
