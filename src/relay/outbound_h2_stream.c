/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2_stream.c: the streams on an HTTP/2 outbound's connection:
 * a CONNECT (or an extended CONNECT, RFC 8441) submitted with its window,
 * nghttp2's per-stream callbacks that fill and drain its buffers, and the
 * calls that read, write, end, credit and release it. Its users are
 * sessions (outbound_h2_row.c) and the owners of streams that are not a
 * session (outbound_h2_user.c, the reverse remotes of outbound_h2rev.c);
 * the connection under it is outbound_h2.c's.
 *
 * Flow control is the server side's (h2conn.c, docs/architecture.md):
 * stream credit as the bytes reach the local client, auto-tuned stream
 * windows under budgets (proto/h2flow.h); a CONNECT-UDP stream's window
 * is small and fixed (h2io.h).
 *
 * It must not call into a session from an nghttp2 callback: news for a
 * session (a response, data, room, a reset) sets its c->up_ev bits and
 * defers its task, and the session reads it from there (conn_resume()
 * calls the event hook in state CONNECT). A stream no session holds
 * defers its owner's task instead; one that became a session's client
 * side (a reverse session) sets c->cli_ev instead of c->up_ev.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "proto/h2flow.h"
#include "proto/parent.h"
#include "relay/h2io.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2_int.h"
#include "relay/session.h"

/* News for a stream's session: readiness bits ev, and a look from its task. */
void outbound_h2_stream_wake(struct ho_stream *s, uint8_t ev)
{
    if (!s->c && s->wake && s->sl)
        loop_defer(&s->sl->w->loop, s->wake);
    if (!s->c)
        return;
    if (s->cli)
        s->c->cli_ev |= ev;
    else
        s->c->up_ev |= ev;
    loop_defer(&s->c->w->loop, &s->c->task);
}

/* The stream's memory, and its hold on the slot. */
void outbound_h2_stream_destroy(struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    free(s->rx);
    free(s->tx);
    free(s->xpath);
    free(s);
    if (sl)
        outbound_h2_slot_unref(sl);
}

static void hs_free(struct ho_stream *s)
{
    if (s->hc) {
        struct h2out_set *set = s->hc->w->h2out;
        h2flow_charge(&s->hc->budget, -(int64_t)s->win.window);
        h2flow_charge(&set->budget, -(int64_t)s->win.window);
        s->hc->nstreams--;
        ho_kick(s->hc);
    }
    if (s->hc || s->waiting)
        list_del(&s->link);
    outbound_h2_stream_destroy(s);
}

/* ---- nghttp2 callbacks ------------------------------------------------ */

int outbound_h2_on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
                          size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                          void *user)
{
    (void)flags;
    (void)user;
    struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    if (s && s->rv && f->hd.type == NGHTTP2_HEADERS)
        outbound_h2rev_header(s->rv, name, namelen, value, valuelen);
    if (!s || f->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7))
        return 0;
    int st = 0;
    for (size_t i = 0; i < valuelen; i++)
        st = value[i] >= '0' && value[i] <= '9' && valuelen == 3 ? st * 10 + (value[i] - '0') : 999;
    if (st >= 200 && !s->status)
        s->status = st;
    return 0;
}

int outbound_h2_on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
                              size_t len, void *user)
{
    (void)flags;
    struct ho_conn *hc = user;
    /* Connection credit on receipt: a stalled stream never starves others. */
    nghttp2_session_consume_connection(ss, len);
    struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, id);
    if (!s || (!s->c && !s->wake)) {
        nghttp2_session_consume_stream(ss, id, len);
        return 0;
    }
    if (!s->win.begun)
        h2flow_begin(&s->win, clock_us()); /* the first epoch starts with the data */
    if (s->rx_off && s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    if (s->rx_len + len > s->rx_cap) {
        if (s->rx_off) {
            memmove(s->rx, s->rx + s->rx_off, s->rx_len - s->rx_off);
            s->rx_len -= s->rx_off;
            s->rx_off = 0;
        }
        size_t cap = s->rx_cap ? s->rx_cap : 16384;
        while (cap < s->rx_len + len)
            cap *= 2;
        uint8_t *nb = cap > s->rx_cap ? realloc(s->rx, cap) : s->rx;
        if (!nb) {
            (void)nghttp2_submit_rst_stream(ss, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
            return 0;
        }
        s->rx = nb;
        s->rx_cap = cap;
    }
    memcpy(s->rx + s->rx_len, data, len);
    s->rx_len += len;
    (void)hc;
    outbound_h2_stream_wake(s, SIDE_RD);
    return 0;
}

int outbound_h2_on_stream_close(nghttp2_session *ss, int32_t id, uint32_t err, void *user)
{
    const struct ho_conn *hc = user;
    struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, id);
    if (!s)
        return 0;
    s->gone = true;
    if (err != NGHTTP2_NO_ERROR || !s->rx_eof)
        s->reset = true;
    if (err == NGHTTP2_REFUSED_STREAM && !s->status && hc->goaway)
        s->retry = true; /* past the GOAWAY's last stream: never processed, sent again */
    if (!s->c && !s->wake) {
        hs_free(s);
        return 0;
    }
    outbound_h2_stream_wake(s, SIDE_RD | SIDE_WR);
    return 0;
}

static ssize_t on_read_data(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *user)
{
    (void)ss;
    struct ho_conn *hc = user;
    struct ho_stream *s = src->ptr;
    size_t have = s->tx_len - s->tx_off;
    if (have == 0) {
        if (s->tx_eof) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = h2io_quantum(&hc->sched, id, &s->light, have, len);
    memcpy(buf, s->tx + s->tx_off, n);
    s->tx_off += n;
    if (s->tx_off == s->tx_len)
        s->tx_off = s->tx_len = 0;
    if (s->tx_off == s->tx_len && s->tx_eof)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    outbound_h2_stream_wake(s, SIDE_WR);
    return (ssize_t)n;
}

/* A CONNECT's HEADERS went out: nghttp2 has opened its stream, which
 * starts young (h2io.h) before its first DATA. */
int outbound_h2_on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    struct ho_conn *hc = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2io_young_later(&hc->sched, f->hd.stream_id);
    /* Its window other than SETTINGS' now: nghttp2 opens the stream as
     * the HEADERS go (at submit, the window would not be set). */
    const struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    if (s && s->win.window != hc->sl->wc->cfg->http2.window)
        nghttp2_session_set_local_window_size(ss, NGHTTP2_FLAG_NONE, f->hd.stream_id,
                                              (int32_t)s->win.window);
    return 0;
}

/* ---- streams on a connection ------------------------------------------ */

/* An extended CONNECT's headers past :method and :authority into
 * nv[0..4): :protocol proto, :scheme, :path path, and for CONNECT-UDP
 * capsule-protocol: ?1 (RFC 9297 section 3.4). Returns how many. */
static size_t hs_xheaders(nghttp2_nv *nv, const char *proto, const char *path)
{
    static char kproto[] = ":protocol", kscheme[] = ":scheme", vscheme[] = "https",
                kpath[] = ":path", kcap[] = "capsule-protocol", vcap[] = "?1";
    nv[0] = (nghttp2_nv){(uint8_t *)kproto, (uint8_t *)(uintptr_t)proto, 9, strlen(proto),
                         NGHTTP2_NV_FLAG_NONE};
    nv[1] = (nghttp2_nv){(uint8_t *)kscheme, (uint8_t *)vscheme, 7, 5, NGHTTP2_NV_FLAG_NONE};
    nv[2] = (nghttp2_nv){(uint8_t *)kpath, (uint8_t *)(uintptr_t)path, 5, strlen(path),
                         NGHTTP2_NV_FLAG_NONE};
    if (strcmp(proto, "connect-udp") != 0)
        return 3;
    nv[3] = (nghttp2_nv){(uint8_t *)kcap, (uint8_t *)vcap, 16, 2, NGHTTP2_NV_FLAG_NONE};
    return 4;
}

/* Session c goes on stream id of hc: its access line names them. */
static void hs_tunnel_name(struct conn *c, const struct ho_conn *hc, int32_t id)
{
    c->tun_id = hc->id;
    c->tun_stream = (uint32_t)id;
    c->tun_peer = hc->peer;
}

void outbound_h2_stream_submit(struct ho_conn *hc, struct ho_stream *s)
{
    const struct conn *c = s->c;
    const struct config_outbound *o = sl_ob(hc->sl);
    const struct config_http2 *h2 = &hc->sl->wc->cfg->http2;
    struct h2out_set *set = hc->w->h2out;
    /* nghttp2_nv takes non-const pointers it only reads: copies. */
    char kmethod[] = ":method", vmethod[] = "CONNECT", kauth[] = ":authority",
         kcred[] = "proxy-authorization";
    char auth[300], cred[1100] = "";
    struct addr t = s->ip;
    if (s->xproto) { /* an extended CONNECT names the server (RFC 8441 section 4) */
        snprintf(auth, sizeof(auth), strchr(o->host, ':') ? "[%s]:%u" : "%s:%u", o->host,
                 (unsigned)o->port);
    } else if (c->dst_name && addr_parse_ip(c->dst_name, c->dst_port, &t) != 0) {
        snprintf(auth, sizeof(auth), "%s:%u", c->dst_name, (unsigned)c->dst_port);
    } else { /* an address, or a name that is an address literal */
        t.port = c->dst_port;
        addr_format(&t, auth, sizeof(auth)); /* [v6]:port, RFC 9113 8.5 */
    }
    nghttp2_nv nv[9] = {
        {(uint8_t *)kmethod, (uint8_t *)vmethod, 7, 7, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)kauth, (uint8_t *)auth, 10, strlen(auth), NGHTTP2_NV_FLAG_NONE},
    };
    size_t nnv = 2;
    if (s->xproto)
        nnv += hs_xheaders(nv + nnv, s->xproto, s->xpath);
    if (o->user) {
        memcpy(cred, "Basic ", 6);
        size_t n = parent_basic_credentials(o->user, o->pass, cred + 6, sizeof(cred) - 6);
        if (n)
            nv[nnv++] = (nghttp2_nv){(uint8_t *)kcred, (uint8_t *)cred, 19, 6 + n,
                                     NGHTTP2_NV_FLAG_NO_INDEX};
    }
    /* A CONNECT-UDP stream's window is small and fixed (h2io.h). */
    uint32_t want = s->xproto && strcmp(s->xproto, "connect-udp") == 0
                        ? h2io_udp_window(hc->sl->wc->cfg->udp.max_datagram)
                        : h2->window;
    s->win.window = h2flow_admit(&hc->budget, &set->budget, 0, want);
    if (s->win.window < H2FLOW_WIN_MIN)
        s->win.window = H2FLOW_WIN_MIN; /* every admitted stream keeps this much */
    h2flow_charge(&hc->budget, s->win.window);
    h2flow_charge(&set->budget, s->win.window);
    s->win.epoch_us = clock_us();
    nghttp2_data_provider dp = {.source.ptr = s, .read_callback = on_read_data};
    int32_t id = nghttp2_submit_request(hc->s, NULL, nv, nnv, &dp, s);
    s->hc = hc;
    list_add_tail(&hc->streams, &s->link);
    hc->nstreams++;
    if (id < 0) {
        /* Stream ids used up (or nghttp2 out of memory): this connection
         * takes no more; the session is dialled again on a new one. */
        s->gone = s->reset = s->retry = true;
        hc->goaway = true;
        if (hc->sl->cur == hc)
            hc->sl->cur = NULL;
        outbound_h2_stream_wake(s, SIDE_RD);
        return;
    }
    s->id = id;
    outbound_h2_stat(hc->sl, OB_STAT_H2_STREAMS, 1);
    hc->streams_total++;
    if (s->c)
        hs_tunnel_name(s->c, hc, id);
    ho_kick(hc);
}

/* ---- what a stream's user calls ------------------------------------------ */

void outbound_h2_stream_release(struct ho_stream *s)
{
    s->c = NULL;
    s->rv = NULL;
    s->wake = NULL;
    if (!s->hc) {
        if (s->waiting)
            list_del(&s->link);
        outbound_h2_stream_destroy(s);
        return;
    }
    if (s->gone) {
        hs_free(s);
        return;
    }
    struct ho_conn *hc = s->hc;
    /* Bytes unread or undelivered give their credit back. */
    size_t left = s->rx_len - s->rx_off + (size_t)(s->handed - s->credited);
    if (left)
        nghttp2_session_consume_stream(hc->s, s->id, left);
    s->rx_off = s->rx_len = 0;
    if (!s->tx_eof || !s->rx_eof || s->status < 200 || s->status > 299)
        nghttp2_submit_rst_stream(hc->s, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
    else if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(hc->s, s->id);
    }
    ho_kick(hc);
}

void outbound_h2_stream_queue(struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    if (sl->cur && sl->cur->st == HO_UP && !sl->cur->goaway)
        outbound_h2_stream_submit(sl->cur, s);
    else
        outbound_h2_slot_wait(sl, s);
}

int outbound_h2_stream_beside(struct ho_stream *s, const struct ho_stream *peer)
{
    struct ho_conn *hc = peer->hc;
    if (!hc || hc->st != HO_UP || hc->goaway || peer->gone)
        return -1;
    outbound_h2_stream_submit(hc, s);
    return s->gone ? -1 : 0;
}

ssize_t outbound_h2_stream_read(struct ho_stream *s, void *p, size_t len, uint8_t *want)
{
    size_t have = s ? s->rx_len - s->rx_off : 0;
    if (have == 0) {
        if (s && s->rx_eof)
            return 0;
        if (!s || s->gone || !s->hc)
            return -ECONNRESET;
        *want = SIDE_RD;
        return -EAGAIN;
    }
    size_t n = have < len ? have : len;
    memcpy(p, s->rx + s->rx_off, n);
    s->rx_off += n;
    if (s->rx_off == s->rx_len)
        s->rx_off = s->rx_len = 0;
    s->handed += n;
    return (ssize_t)n;
}

ssize_t outbound_h2_stream_write(struct ho_stream *s, const void *p, size_t len, uint8_t *want)
{
    if (!s || s->gone || !s->hc || s->tx_eof)
        return -EPIPE;
    if (s->tx_off) {
        memmove(s->tx, s->tx + s->tx_off, s->tx_len - s->tx_off);
        s->tx_len -= s->tx_off;
        s->tx_off = 0;
    }
    size_t room = HO_TX_MAX - s->tx_len;
    if (room == 0) {
        *want = SIDE_WR; /* on_read_data wakes it */
        return -EAGAIN;
    }
    if (!s->tx && !(s->tx = malloc(HO_TX_MAX)))
        return -ENOMEM;
    size_t n = len < room ? len : room;
    memcpy(s->tx + s->tx_len, p, n);
    s->tx_len += n;
    if (s->deferred) {
        s->deferred = false;
        h2io_resume(s->hc->s, &s->hc->sched, s->id, &s->light);
    }
    ho_kick(s->hc);
    return (ssize_t)n;
}

int outbound_h2_stream_shutdown(struct ho_stream *s)
{
    if (!s || s->gone || !s->hc)
        return -ENOTCONN;
    s->tx_eof = true;
    if (s->deferred) {
        s->deferred = false;
        nghttp2_session_resume_data(s->hc->s, s->id);
    }
    ho_kick(s->hc);
    return 0;
}

/* Stream credit on consumption: the bytes reached the local client, so a
 * slow client holds back only its own stream; at each half window the
 * window may grow (proto/h2flow.h's rule), admitted under the budgets. */
void outbound_h2_stream_credit(struct ho_stream *s, uint64_t delivered)
{
    if (!s || !s->hc || s->gone)
        return;
    struct ho_conn *hc = s->hc;
    uint64_t done = delivered < s->handed ? delivered : s->handed;
    if (done <= s->credited)
        return;
    size_t n = (size_t)(done - s->credited);
    s->credited = done;
    nghttp2_session_consume_stream(hc->s, s->id, n);
    uint64_t now;
    if (h2io_window_consumed(hc->s, s->id, &s->win, n, &hc->budget, &hc->w->h2out->budget, &hc->rtt,
                             hc->io.fd, hc->sl->wc->cfg->http2.window_max, &now) &&
        !hc->ping_us && loop_now(&hc->w->loop) - hc->probe_ms >= H2IO_PROBE_MS) {
        hc->ping_us = now; /* an RTT probe for the next epoch */
        hc->probe_ms = loop_now(&hc->w->loop);
        nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    }
    ho_kick(hc);
}

/* ---- streams of the reverse remotes (outbound_h2rev.c) -------------------- */

struct ho_stream *outbound_h2_stream_new(struct ho_slot *sl, struct task *wake, void *rv,
                                         const char *protocol, const char *path)
{
    struct ho_stream *s = calloc(1, sizeof(*s));
    if (!s || !(s->xpath = strdup(path))) {
        free(s);
        return NULL;
    }
    s->sl = sl;
    sl->refs++;
    s->wake = wake;
    s->rv = rv;
    s->xproto = protocol;
    return s;
}

struct ho_stream *outbound_h2_stream_open_beside(const struct ho_stream *peer, struct task *wake,
                                                 void *rv, const char *protocol, const char *path)
{
    struct ho_stream *s = outbound_h2_stream_new(peer->sl, wake, rv, protocol, path);
    if (s && outbound_h2_stream_beside(s, peer) < 0) {
        outbound_h2_stream_release(s);
        return NULL;
    }
    return s;
}

void outbound_h2_stream_adopt(struct ho_stream *s, struct conn *c)
{
    s->rv = NULL;
    s->wake = NULL;
    s->c = c;
    s->cli = true;
    if (s->hc)
        hs_tunnel_name(c, s->hc, s->id);
}

/* ---- what outbound_h2_user.c asks of a stream's connection ---------------- */

void outbound_h2_stream_consumed(struct ho_stream *s, size_t n)
{
    nghttp2_session_consume_stream(s->hc->s, s->id, n);
    /* A datagram stream's window is fixed: our SETTINGS' initial window,
     * applied to open streams once the parent acknowledged it, may have
     * raised it: down again (nghttp2 holds the difference back). */
    if (nghttp2_session_get_stream_effective_local_window_size(s->hc->s, s->id) >
        (int32_t)s->win.window)
        nghttp2_session_set_local_window_size(s->hc->s, NGHTTP2_FLAG_NONE, s->id,
                                              (int32_t)s->win.window);
    ho_kick(s->hc);
}

void outbound_h2_stream_more(struct ho_stream *s)
{
    if (s->deferred) {
        s->deferred = false;
        h2io_resume(s->hc->s, &s->hc->sched, s->id, &s->light);
    }
    ho_kick(s->hc);
}

void outbound_h2_stream_udp_window(struct ho_stream *s)
{
    struct ho_conn *hc = s->hc;
    if (!hc || s->gone)
        return;
    uint32_t win = h2io_udp_window(hc->sl->wc->cfg->udp.max_datagram);
    if (win >= s->win.window)
        return;
    int64_t less = (int64_t)s->win.window - (int64_t)win;
    h2flow_charge(&hc->budget, -less);
    h2flow_charge(&hc->w->h2out->budget, -less);
    s->win.window = win;
    if (s->id > 0)
        nghttp2_session_set_local_window_size(hc->s, NGHTTP2_FLAG_NONE, s->id, (int32_t)win);
}

void outbound_h2_stream_datagram(struct ho_stream *s)
{
    if (s->hc)
        h2io_udp_note(&s->hc->udp, loop_now(&s->hc->w->loop));
}
