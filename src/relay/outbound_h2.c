/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2.c: an HTTPS parent spoken HTTP/2 (outbound.h's outbound_h2):
 * every session through the outbound on worker W is a CONNECT stream (RFC
 * 9113 section 8.5) on W's one TLS 1.3 connection to the parent (no locks
 * on the data path), opened on first use and opened again when it dies,
 * with exponential back-off and full jitter (200 ms * 2^k, at most 30 s,
 * k forgotten after 60 s up). A session arriving while it is down waits up
 * to the outbound's tunnel_wait, then fails as tunnel-down (SOCKS
 * 0x03, HTTP 503). mux = auto offers "h2,http/1.1" and, when the parent
 * picks http/1.1, hands its sessions to the per-session HTTP/1.1 CONNECT
 * (outbound_https) from then on.
 *
 * The connection drives an nghttp2 client session with memory I/O from the
 * worker's loop; flow control is the server side's (h2conn.c,
 * docs/architecture.md): NO_AUTO_WINDOW_UPDATE, connection credit on
 * receipt, stream credit as the bytes reach the local client, auto-tuned
 * stream windows under budgets (proto/h2flow.h). Keepalive PING after 20 s
 * idle, 3 missed = dead (and TCP_USER_TIMEOUT). A GOAWAY from the parent
 * sends new sessions to a new connection while the old one's streams
 * finish; streams it refused are dialled again.
 *
 * It must not call into a session from an nghttp2 callback: news for a
 * session (a response, data, room, a reset) sets its c->up_ev bits and
 * defers its task, and the session reads it from there (conn_resume()
 * calls the event hook in state CONNECT). A connection is freed late
 * (loop_release), never inside its own callbacks.
 *
 * The reverse remotes (outbound_h2rev.c) use the same streams through
 * outbound_h2.h: extended CONNECTs owned by no session (their news
 * defers the owner's task), one of which may become a session's client
 * side (its news sets c->cli_ev instead of c->up_ev). What such a stream's
 * owner calls (h2out_user.h, and the reverse remotes' looks) is in
 * outbound_h2_user.c, which shares struct ho_stream and a few calls into
 * the connection with this file through outbound_h2_int.h.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/h2flow.h"
#include "proto/parent.h"
#include "proto/ws.h"
#include "relay/h2io.h"
#include "relay/outbound.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2_int.h"
#include "relay/outbound_h2rev.h"
#include "relay/session.h"
#include "relay/tunnel_log.h"
#include "relay/wslink.h"
#include "tls/tls.h"

#define HO_OUT_CAP     (64u * 1024) /* frames gathered before one TLS write */
#define HO_PING_IDLE   20000        /* keepalive PING after this long idle, ms */
#define HO_PING_MISSED 3            /* unanswered keepalives: the parent is gone */
#define HO_BACKOFF_MS  200
#define HO_BACKOFF_CAP 30000
#define HO_HEALTHY_MS  60000 /* up this long: the back-off starts again */

enum ho_state { HO_RESOLVE, HO_CONNECT, HO_TLS, HO_WS, HO_UP, HO_DEAD };

struct ho_conn;
struct ho_slot;

/* One TLS connection to the parent. */
struct ho_conn {
    struct list link; /* in the set's conns */
    struct ho_slot *sl;
    struct worker *w;
    uint8_t st; /* enum ho_state */
    uint8_t ev, rd_bit, wr_bit;
    bool goaway; /* the parent said GOAWAY: no new streams here */
    bool failed; /* nghttp2 failed */
    struct io io;
    struct timer timer;
    struct task task;
    struct release rel;
    struct dns_req *dns;
    struct tls *tls;
    nghttp2_session *s;
    struct list streams;
    uint32_t nstreams;
    uint8_t *out;
    uint32_t out_off, out_len;
    struct h2flow_budget budget;
    struct h2flow_rtt rtt;
    uint64_t ping_us;  /* an RTT probe outstanding since; 0: none */
    uint64_t probe_ms; /* loop ms of the last RTT probe (H2IO_PROBE_MS apart) */
    uint64_t last_rx;  /* loop ms of the last frame from the parent */
    uint32_t missed;   /* keepalive PINGs unanswered */
    uint64_t up_since; /* loop ms it came up */
    const char *why;   /* a failed attempt: why, for the sessions it fails */
    uint8_t fail_o;    /* ... their outcome */
    bool fail_all;     /* ... every waiter fails now (the parent is up but not
                        * usable: TLS, ALPN), else only pool members (the
                        * others wait up to tunnel_wait) */
    uint64_t t_start;  /* loop ms the attempt began */
    uint32_t deadline; /* connect budget, ms */
    bool reconnect;    /* an attempt after a loss */

    struct h2io_sched sched; /* young/bulk weight changes due (h2io.h) */
    struct h2io_udp udp;     /* datagrams on it: a shallower queue (h2io.h) */
    struct wslink *ws;       /* websocket = /PATH: the transport (wslink.h); NULL: TLS only */
    /* The tunnel's name in the logs (tunnel_log.h, c->tun_id), given when
     * it comes up, and what its close line counts. */
    uint64_t id;
    struct addr peer, local;
    uint64_t streams_total, rx_bytes, tx_bytes;
};

/* An outbound of a configuration on this worker: its current connection,
 * the sessions waiting for one, and the back-off. */
struct ho_slot {
    struct list link; /* in the set's slots */
    struct worker *w;
    struct wcfg *wc; /* held */
    uint16_t ob;
    struct ho_conn *cur;
    struct list waiters;
    struct timer timer; /* the next attempt after a back-off */
    uint32_t k;         /* failures in a row */
    uint64_t retry_at;  /* no attempt before (loop ms) */
    bool lost;          /* a connection was lost: the next one is a reconnect */
    uint32_t refs;      /* its connections and streams: freed at 0 when its
                         * configuration is no longer the current one */
    bool http1;         /* auto: the parent picked http/1.1 */
    bool prewarm;       /* open a connection with nobody waiting (after a GOAWAY) */
};

struct h2out_set {
    struct list slots, conns;
    struct h2flow_budget budget; /* the worker's, for granted stream windows */
    bool ending;                 /* the worker's end: free at once */
    struct h2rev_out_set *rev;   /* outbound_h2rev.c's reverse remotes, or NULL */
};

static const struct config_outbound *sl_ob(const struct ho_slot *sl)
{
    return &sl->wc->cfg->outbounds[sl->ob];
}

static void ho_stat(const struct ho_slot *sl, unsigned col, int64_t d)
{
    const struct config *cfg = sl->wc->cfg;
    if (!cfg->ob_stats || sl->w->id >= cfg->workers)
        return;
    stat_t *s =
        &cfg->ob_stats[(size_t)sl->w->id * cfg->ob_stride + (size_t)sl->ob * OB_STATS + col];
    if (d >= 0)
        stat_add(s, (uint64_t)d);
    else
        stat_sub(s, (uint64_t)-d);
}

static void ho_kick(struct ho_conn *hc)
{
    loop_defer(&hc->w->loop, &hc->task);
}

/* News for a stream's session: readiness bits ev, and a look from its task. */
static void hs_wake(struct ho_stream *s, uint8_t ev)
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

static void slot_unref(struct ho_slot *sl);

/* The stream's memory, and its hold on the slot. */
static void hs_destroy(struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    free(s->rx);
    free(s->tx);
    free(s->xpath);
    free(s);
    if (sl)
        slot_unref(sl);
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
    hs_destroy(s);
}

/* ---- nghttp2 callbacks ------------------------------------------------ */

static int on_header(nghttp2_session *ss, const nghttp2_frame *f, const uint8_t *name,
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

static int on_frame_recv(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    struct ho_conn *hc = user;
    struct ho_stream *s = nghttp2_session_get_stream_user_data(ss, f->hd.stream_id);
    hc->last_rx = loop_now(&hc->w->loop);
    bool end = f->hd.flags & NGHTTP2_FLAG_END_STREAM;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        if (s && end)
            s->rx_eof = true;
        if (s)
            hs_wake(s, SIDE_RD);
        break;
    case NGHTTP2_PING:
        if (f->hd.flags & NGHTTP2_FLAG_ACK) {
            hc->missed = 0;
            if (hc->ping_us) {
                uint64_t now = clock_us();
                h2flow_rtt_sample(&hc->rtt, now > hc->ping_us ? now - hc->ping_us : 1);
                hc->ping_us = 0;
            }
        }
        break;
    case NGHTTP2_GOAWAY:
        /* New sessions go to a new connection (make-before-break). */
        hc->goaway = true;
        if (hc->sl && hc->sl->cur == hc && hc->sl->wc != hc->w->cur)
            hc->sl->cur = NULL; /* an old generation's: nothing to replace */
        if (hc->sl && hc->sl->cur == hc && hc->sl->wc == hc->w->cur) {
            hc->sl->cur = NULL;
            hc->sl->prewarm = true; /* the replacement opens now, from the slot's timer */
            loop_timer_arm(&hc->w->loop, &hc->sl->timer, 0);
        }
        break;
    default:
        break;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *ss, uint8_t flags, int32_t id, const uint8_t *data,
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
    hs_wake(s, SIDE_RD);
    return 0;
}

static int on_stream_close(nghttp2_session *ss, int32_t id, uint32_t err, void *user)
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
    hs_wake(s, SIDE_RD | SIDE_WR);
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
    hs_wake(s, SIDE_WR);
    return (ssize_t)n;
}

/* A CONNECT's HEADERS went out: nghttp2 has opened its stream, which
 * starts young (h2io.h) before its first DATA. */
static int on_frame_send(nghttp2_session *ss, const nghttp2_frame *f, void *user)
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

static nghttp2_session *ho_session(struct ho_conn *hc)
{
    static const struct h2io_callbacks cb = {
        .header = on_header,
        .frame_recv = on_frame_recv,
        .data_chunk = on_data_chunk,
        .stream_close = on_stream_close,
        .frame_send = on_frame_send,
    };
    return h2io_session_new(false, &cb, hc, 0);
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

/* Submit s's CONNECT on hc (up). */
/* Session c goes on stream id of hc: its access line names them. */
static void hs_tunnel_name(struct conn *c, const struct ho_conn *hc, int32_t id)
{
    c->tun_id = hc->id;
    c->tun_stream = (uint32_t)id;
    c->tun_peer = hc->peer;
}

/* hc's tunnel-open line (end NULL) or its tunnel-close line. */
static void ho_tunnel_log(const struct ho_conn *hc, const char *end)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    uint64_t now = loop_now(&hc->w->loop);
    tunnel_log(hc->sl->wc->cfg, &(struct tunnel_log){.side = "client",
                                                     .id = hc->id,
                                                     .peer = &hc->peer,
                                                     .local = hc->local.family ? &hc->local : NULL,
                                                     .user = o->user,
                                                     .via = o->name,
                                                     .transport = hc->ws ? "ws" : "h2",
                                                     .end = end,
                                                     .ms = now - hc->up_since,
                                                     .streams = hc->streams_total,
                                                     .up = hc->tx_bytes,
                                                     .down = hc->rx_bytes});
}

static void hs_submit(struct ho_conn *hc, struct ho_stream *s)
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
        hs_wake(s, SIDE_RD);
        return;
    }
    s->id = id;
    ho_stat(hc->sl, OB_STAT_H2_STREAMS, 1);
    hc->streams_total++;
    if (s->c)
        hs_tunnel_name(s->c, hc, id);
    ho_kick(hc);
}

/* ---- the connection ----------------------------------------------------- */

static void ho_conn_free(struct release *r)
{
    struct ho_conn *hc = container_of(r, struct ho_conn, rel);
    struct ho_slot *sl = hc->sl;
    free(hc);
    slot_unref(sl);
}

static void slot_attempt(struct ho_slot *sl);

/* The attempt hc fails its waiters with outcome o and why: all of them
 * (all), or those dialled as a pool member (the pool tries the next). */
static void ho_fail_as(struct ho_conn *hc, enum outcome o, const char *why, bool all)
{
    hc->fail_o = (uint8_t)o;
    hc->why = why;
    hc->fail_all = all;
}

static void slot_fail_waiters(struct ho_slot *sl, const struct ho_conn *hc)
{
    struct list *pos, *next;
    for (pos = sl->waiters.next; pos != &sl->waiters; pos = next) {
        next = pos->next;
        struct ho_stream *s = container_of(pos, struct ho_stream, link);
        if (!hc->fail_all && (!s->c || s->c->ob_rule == s->c->ob))
            continue;
        list_del(&s->link);
        s->waiting = false;
        s->fail_o = hc->fail_o;
        s->fail_why = hc->why;
        hs_wake(s, SIDE_RD);
    }
}

/* The slot's waiters: each session looks again (a connection came up,
 * the parent turned out to speak http/1.1, or none will come soon). */
static void slot_serve(struct ho_slot *sl)
{
    struct ho_conn *hc = sl->cur;
    while (!list_empty(&sl->waiters)) {
        struct ho_stream *s = container_of(sl->waiters.next, struct ho_stream, link);
        list_del(&s->link);
        s->waiting = false;
        if (hc && hc->st == HO_UP) {
            hs_submit(hc, s);
        } else {
            s->http1 = sl->http1;
            hs_wake(s, SIDE_RD);
        }
    }
}

static void ho_up(struct ho_conn *hc);
static void ho_ws_begin(struct ho_conn *hc);
static ssize_t ho_write(void *ctx, const uint8_t *p, size_t n);

/* Close hc: its streams fail (reset), the slot's back-off starts when it
 * was the slot's current one and failed. */
static void ho_conn_close(struct ho_conn *hc, const char *why, bool failure)
{
    struct ho_slot *sl = hc->sl;
    struct loop *l = &hc->w->loop;
    if (hc->st == HO_DEAD)
        return;
    if (hc->st == HO_UP)
        ho_stat(sl, OB_STAT_H2_CONNS, -1);
    if (hc->st == HO_UP && hc->ws) { /* a CLOSE, as far as the socket takes it */
        wslink_close(hc->ws, WS_CLOSE_GOING_AWAY);
        wslink_send(hc->ws, NULL, 0, ho_write, hc);
    }
    if (log_enabled(failure ? LOG_WARN : LOG_DEBUG))
        log_write(failure ? LOG_WARN : LOG_DEBUG,
                  "outbound %s: parent %s port %u: %s (HTTP/2 connection)", sl_ob(sl)->name,
                  sl_ob(sl)->host, sl_ob(sl)->port, why);
    if (hc->st == HO_UP) /* a word, as the server's end says it; the line above has the why */
        ho_tunnel_log(hc, failure ? "error" : hc->goaway ? "goaway" : "closed");
    hc->st = HO_DEAD;
    resolver_cancel(hc->dns);
    hc->dns = NULL;
    while (!list_empty(&hc->streams)) {
        struct ho_stream *s = container_of(hc->streams.next, struct ho_stream, link);
        list_del(&s->link);
        s->hc = NULL;
        s->reset = s->reset || !s->gone; /* a stream that had ended stays clean */
        s->gone = true;
        if (!s->c && !s->wake) {
            hs_destroy(s);
            continue;
        }
        hs_wake(s, SIDE_RD | SIDE_WR);
    }
    if (hc->s)
        nghttp2_session_del(hc->s);
    hc->s = NULL;
    tls_free(hc->tls);
    hc->tls = NULL;
    wslink_free(hc->ws);
    hc->ws = NULL;
    if (hc->io.fd >= 0) {
        if (failure)
            sock_abort(hc->io.fd);
        loop_io_del(l, &hc->io);
        close(hc->io.fd);
        hc->io.fd = -1;
    }
    loop_timer_stop(l, &hc->timer);
    loop_task_cancel(&hc->task);
    free(hc->out);
    hc->out = NULL;
    list_del(&hc->link);
    if (hc->w->h2out->ending) {
        if (sl->cur == hc)
            sl->cur = NULL;
        free(hc);
        sl->refs--;
        return;
    }
    if (sl->cur == hc) {
        sl->cur = NULL;
        uint64_t now = loop_now(l);
        if (hc->up_since && now - hc->up_since >= HO_HEALTHY_MS)
            sl->k = 0;
        if (failure) {
            /* Full jitter: anywhere in [0, 200 ms * 2^k], at most 30 s. */
            uint64_t cap = HO_BACKOFF_MS << (sl->k < 8 ? sl->k : 8);
            if (cap > HO_BACKOFF_CAP)
                cap = HO_BACKOFF_CAP;
            sl->retry_at = now + (uint64_t)random() % (cap + 1);
            sl->k++;
            sl->lost = sl->lost || hc->up_since;
        }
        if (hc->why)
            slot_fail_waiters(sl, hc);
        if (!list_empty(&sl->waiters))
            loop_timer_arm_at(l, &sl->timer, sl->retry_at > now ? sl->retry_at : now);
    }
    loop_release(l, &hc->rel, ho_conn_free);
}

/* TLS done: h2 (start the session) or http/1.1 (auto: fall back); with
 * websocket = /PATH, the WebSocket handshake first. */
static void ho_tls_done(struct ho_conn *hc)
{
    struct ho_slot *sl = hc->sl;
    const struct config_outbound *o = sl_ob(sl);
    if (o->ws_path[0]) {
        ho_ws_begin(hc);
        return;
    }
    char alpn[32];
    tls_alpn(hc->tls, alpn, sizeof(alpn));
    if (strcmp(alpn, "h2") != 0) {
        if (o->mux == OUTBOUND_MUX_AUTO) {
            sl->http1 = true; /* from now on: HTTP/1.1 CONNECT per session */
            sl->k = 0;
            log_info("outbound %s: the parent speaks %s: HTTP/1.1 CONNECT per session", o->name,
                     alpn[0] ? alpn : "no ALPN");
            ho_conn_close(hc, "the parent chose http/1.1", false);
            slot_serve(sl);
            return;
        }
        ho_fail_as(hc, OUT_FAILED, "parent-no-h2", true);
        ho_conn_close(hc, "the parent does not speak h2 (ALPN) but mux = h2", true);
        slot_serve(sl);
        return;
    }
    ho_up(hc);
}

/* The transport is ready: the HTTP/2 session starts. */
static void ho_up(struct ho_conn *hc)
{
    struct ho_slot *sl = hc->sl;
    const struct config_outbound *o = sl_ob(sl);
    const struct config_http2 *h2 = &sl->wc->cfg->http2;
    tls_keep_buffers(hc->tls); /* busy and long-lived: no allocation per record */
    hc->out = malloc(HO_OUT_CAP);
    hc->s = hc->out ? ho_session(hc) : NULL;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, h2->window},
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h2->max_streams},
    };
    if (!hc->s || nghttp2_submit_settings(hc->s, NGHTTP2_FLAG_NONE, iv, 3) ||
        nghttp2_session_set_local_window_size(hc->s, NGHTTP2_FLAG_NONE, 0,
                                              (int32_t)h2->conn_budget_max)) {
        ho_conn_close(hc, "out of memory", true);
        slot_serve(sl);
        return;
    }
    hc->budget.cap = h2->conn_budget;
    hc->budget.max = h2->conn_budget_max;
    struct h2out_set *set = hc->w->h2out;
    if (!set->budget.cap)
        set->budget.cap = set->budget.max = h2->worker_budget;
    hc->st = HO_UP;
    uint64_t now = loop_now(&hc->w->loop);
    hc->up_since = hc->last_rx = now;
    if (hc->ws && wslink_start(hc->ws, hc->s) != WSLINK_OK)
        hc->failed = true; /* frames that came with the 101 */
    ho_stat(sl, OB_STAT_H2_CONNS, 1);
    ho_stat(sl, OB_STAT_H2_OPENED, 1);
    hc->id = atomic_fetch_add_explicit(&hc->w->sh->next_id, 1, memory_order_relaxed) + 1;
    if (sock_local_addr(hc->io.fd, &hc->local) < 0)
        hc->local.family = 0;
    ho_tunnel_log(hc, NULL);
    if (hc->reconnect)
        ho_stat(sl, OB_STAT_H2_RECONNECTS, 1);
    outbound_mark_up(sl->wc->cfg, sl->ob, -1, (clock_ms() - hc->t_start) * 1000, "HTTP/2 connect");
    log_debug("outbound %s: HTTP/2 connection up", o->name);
    hc->ping_us = clock_us();
    nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    loop_timer_arm(&hc->w->loop, &hc->timer, HO_PING_IDLE);
    slot_serve(sl);
}

static int ho_handshake(struct ho_conn *hc)
{
    uint8_t want = 0;
    int rc = tls_handshake(hc->tls, &want);
    if (rc == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        return 0;
    }
    if (rc < 0) {
        /* A certificate's problem in the same words as the HTTP/1.1 path
         * ("certificate pin mismatch: ..."); others say they are TLS's. */
        bool verify = strncmp(tls_error(hc->tls), "certificate ", 12) == 0;
        char what[200];
        snprintf(what, sizeof(what), "%s%s", verify ? "" : "TLS: ", tls_error(hc->tls));
        ho_fail_as(hc, OUT_FAILED, verify ? "tls-verify-failed" : "tls-handshake-failed", true);
        ho_conn_close(hc, what, true);
        return -1;
    }
    ho_tls_done(hc);
    return hc->st == HO_UP || hc->st == HO_WS ? 1 : -1;
}

/* tls_write() and tls_read() as the link wants them, keeping the
 * readiness bits. */
static ssize_t ho_write(void *ctx, const uint8_t *p, size_t n)
{
    struct ho_conn *hc = ctx;
    uint8_t want = SIDE_WR;
    ssize_t k = tls_write(hc->tls, p, n, &want);
    if (k == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        hc->wr_bit = want;
    } else if (k > 0) {
        hc->wr_bit = SIDE_WR;
        hc->tx_bytes += (uint64_t)k;
    }
    return k;
}

static ssize_t ho_wsread(void *ctx, uint8_t *p, size_t n)
{
    struct ho_conn *hc = ctx;
    if (!(hc->ev & hc->rd_bit) && !tls_pending(hc->tls))
        return -EAGAIN;
    uint8_t want = SIDE_RD;
    ssize_t k = tls_read(hc->tls, p, n, &want);
    if (k == -EAGAIN) {
        hc->ev &= (uint8_t)~want;
        hc->rd_bit = want;
    } else if (k > 0) {
        hc->rd_bit = SIDE_RD;
    }
    return k;
}

/* The WebSocket opening handshake (RFC 6455 4.1) on the TLS connection:
 * the Upgrade to the outbound's path goes out, the 101 is awaited (the
 * connect budget still runs). */
static void ho_ws_begin(struct ho_conn *hc)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    char host[300];
    bool v6 = strchr(o->host, ':') != NULL;
    snprintf(host, sizeof(host), o->port == 443 ? "%s%s%s" : "%s%s%s:%u", v6 ? "[" : "", o->host,
             v6 ? "]" : "", o->port);
    hc->ws = wslink_new(true);
    int rc = hc->ws ? wslink_client_begin(hc->ws, host, o->ws_path) : -ENOMEM;
    if (rc) {
        ho_conn_close(hc, rc == -ENOMEM ? "out of memory" : "a bad WebSocket path", true);
        slot_serve(hc->sl);
        return;
    }
    hc->st = HO_WS;
}

/* Send the Upgrade, read the answer. 1 once up, 0 while waiting, -1 when
 * the connection was closed. */
static int ho_ws_step(struct ho_conn *hc)
{
    const char *why = "";
    ssize_t rc = 0;
    if (hc->ev & hc->wr_bit)
        rc = wslink_send(hc->ws, NULL, 0, ho_write, hc);
    int r = rc < 0 && rc != -EAGAIN ? (int)rc : wslink_client_read(hc->ws, ho_wsread, hc, &why);
    if (r == 0)
        return 0;
    if (r < 0) {
        char what[160];
        snprintf(what, sizeof(what), "WebSocket: %s", why[0] ? why : errmap_name(r));
        ho_fail_as(hc, OUT_FAILED, "parent-websocket", true);
        ho_conn_close(hc, what, true);
        slot_serve(hc->sl);
        return -1;
    }
    ho_up(hc);
    return hc->st == HO_UP ? 1 : -1;
}

/* Write what nghttp2 has for the parent. 0, or -errno. */
static int ho_flush(struct ho_conn *hc)
{
    if (hc->ws && (hc->ev & hc->wr_bit)) {
        ssize_t n = wslink_send(hc->ws, NULL, 0, ho_write, hc); /* PONG, CLOSE */
        if (n < 0 && n != -EAGAIN)
            return (int)n;
    }
    for (;;) {
        uint32_t upto = h2io_udp_upto(&hc->udp, hc->io.fd, loop_now(&hc->w->loop), HO_OUT_CAP);
        int rc = h2io_gather(hc->s, &hc->sched, &hc->out, &hc->out_len, upto, HO_OUT_CAP);
        if (rc)
            return rc;
        if (hc->out_off == hc->out_len)
            return 0;
        if (!(hc->ev & hc->wr_bit))
            return 0;
        const uint8_t *p = hc->out + hc->out_off;
        size_t len = h2io_whole_records(hc->out_len - hc->out_off,
                                        !hc->ws && nghttp2_session_want_write(hc->s));
        ssize_t n = hc->ws ? wslink_send(hc->ws, p, len, ho_write, hc) : ho_write(hc, p, len);
        if (n == -EAGAIN)
            return 0;
        if (n < 0)
            return (int)n;
        hc->out_off += (uint32_t)n;
        if (hc->out_off == hc->out_len)
            hc->out_off = hc->out_len = 0;
        else if ((size_t)n == len)
            h2io_keep_tail(hc->out, &hc->out_off, &hc->out_len);
    }
}

/* Read the parent's bytes into nghttp2 (always: the socket is never left
 * unread). 0, 1 at its end, or -errno. */
static int ho_read(struct ho_conn *hc)
{
    uint8_t buf[16384];
    for (uint32_t budget = 1u << 20; budget;) {
        if (!(hc->ev & hc->rd_bit) && !tls_pending(hc->tls))
            return 0;
        uint8_t want = SIDE_RD;
        ssize_t n = tls_read(hc->tls, buf, sizeof(buf), &want);
        if (n == 0)
            return 1;
        if (n == -EAGAIN) {
            hc->ev &= (uint8_t)~want;
            hc->rd_bit = want;
            return 0;
        }
        if (n < 0)
            return (int)n;
        hc->rd_bit = SIDE_RD;
        hc->rx_bytes += (uint64_t)n;
        budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
        if (!budget)
            ho_kick(hc); /* fairness: go on after the others */
        if (hc->failed)
            continue;
        if (hc->ws) {
            int wr = wslink_recv(hc->ws, hc->s, buf, (size_t)n);
            if (wr == WSLINK_CLOSED)
                return 1; /* the parent's CLOSE: the connection ends */
            hc->failed = wr != WSLINK_OK;
            continue;
        }
        ssize_t rv = nghttp2_session_mem_recv(hc->s, buf, (size_t)n);
        if (rv < 0) {
            log_info("outbound %s: HTTP/2: %s", sl_ob(hc->sl)->name, nghttp2_strerror((int)rv));
            hc->failed = true;
        }
    }
    return 0;
}

static void ho_drive(struct ho_conn *hc)
{
    if (hc->st == HO_CONNECT) {
        if (!(hc->ev & (SIDE_WR | SIDE_RDHUP)))
            return;
        int err = sock_error(hc->io.fd);
        if (err || (hc->ev & SIDE_RDHUP)) {
            char what[96];
            snprintf(what, sizeof(what), "cannot connect: %s",
                     errmap_name(err ? err : -ECONNREFUSED));
            ho_fail_as(hc, OUT_FAILED, "parent-unreachable", false);
            ho_conn_close(hc, what, true);
            return;
        }
        hc->st = HO_TLS;
        hc->tls = tls_client_new(sl_ob(hc->sl)->tls_h2, hc->io.fd, sl_ob(hc->sl)->host);
        if (!hc->tls) {
            ho_conn_close(hc, "cannot start TLS", true);
            return;
        }
    }
    if (hc->st == HO_TLS && ho_handshake(hc) <= 0)
        return;
    if (hc->st == HO_WS && ho_ws_step(hc) <= 0)
        return;
    if (hc->st != HO_UP)
        return;
    int rc = ho_read(hc);
    if (rc == 0)
        rc = ho_flush(hc);
    if (rc) {
        /* After its GOAWAY, or idle (its iotimeout), the parent closing
         * is no failure: the next session reconnects without a back-off. */
        ho_conn_close(hc, rc > 0 ? "the parent closed the connection" : errmap_name(rc),
                      !(rc > 0 && (hc->goaway || hc->nstreams == 0)));
        return;
    }
    bool flushed = hc->out_len == 0 && !nghttp2_session_want_write(hc->s) &&
                   !(hc->ws && wslink_pending(hc->ws));
    if (flushed && hc->failed) {
        ho_conn_close(hc, "HTTP/2 protocol error", true);
    } else if (flushed && !nghttp2_session_want_read(hc->s)) {
        ho_conn_close(hc, "the parent ended the session", !hc->goaway);
    } else if (hc->goaway && hc->nstreams == 0 && flushed) {
        ho_conn_close(hc, "GOAWAY, streams done", false);
    } else if (hc->nstreams == 0 && flushed && hc->sl->wc != hc->w->cur && !hc->goaway) {
        ho_conn_close(hc, "configuration replaced", false);
    }
}

static void ho_on_io(struct io *io, uint32_t events)
{
    struct ho_conn *hc = container_of(io, struct ho_conn, io);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_WR;
    if (events & (EPOLLHUP | EPOLLERR))
        hc->ev |= SIDE_RDHUP;
    ho_drive(hc);
}

static void ho_on_task(struct task *t)
{
    ho_drive(container_of(t, struct ho_conn, task));
}

/* The connect budget while connecting; keepalive once up. */
static void ho_on_timer(struct timer *t)
{
    struct ho_conn *hc = container_of(t, struct ho_conn, timer);
    struct loop *l = &hc->w->loop;
    if (hc->st != HO_UP) {
        /* After TCP (TLS unanswered) every waiter times out, as an
         * HTTP/1.1 parent's sessions would. */
        ho_fail_as(hc, OUT_TIMEOUT, "parent-timeout", hc->st >= HO_TLS);
        ho_conn_close(hc,
                      hc->st == HO_WS    ? "no WebSocket 101 within the connect budget"
                      : hc->st == HO_TLS ? "no TLS handshake within the connect budget"
                                         : "no connection within the connect budget",
                      true);
        return;
    }
    uint64_t now = loop_now(l);
    if (now - hc->last_rx < HO_PING_IDLE) {
        loop_timer_arm_at(l, &hc->timer, hc->last_rx + HO_PING_IDLE);
        return;
    }
    if (hc->missed >= HO_PING_MISSED) {
        ho_conn_close(hc, "no answer to 3 keepalive PINGs", true);
        return;
    }
    hc->missed++;
    hc->ping_us = clock_us();
    nghttp2_submit_ping(hc->s, NGHTTP2_FLAG_NONE, NULL);
    loop_timer_arm(l, &hc->timer, HO_PING_IDLE);
    ho_drive(hc);
}

static void ho_connect_to(struct ho_conn *hc, const struct addr *a)
{
    const struct config_outbound *o = sl_ob(hc->sl);
    const struct outbound_source *src = &o->source;
    int fd = sock_connect_from(a, src->addr.family ? &src->addr : NULL, src->device, NULL);
    if (fd < 0) {
        ho_fail_as(hc, OUT_FAILED, "parent-unreachable", false);
        ho_conn_close(hc, errmap_name(fd), true);
        return;
    }
    unsigned int uto = HO_PING_IDLE * HO_PING_MISSED;
    hc->peer = *a;
    h2io_carrier(fd); /* the order stays ours: TCP_NODELAY, TCP_NOTSENT_LOWAT */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
    if (loop_io_add(&hc->w->loop, &hc->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) {
        close(fd);
        ho_conn_close(hc, "out of memory", true);
        return;
    }
    hc->st = HO_CONNECT;
}

static void ho_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct ho_conn *hc = arg;
    hc->dns = NULL;
    if (status != DNS_OK || ans->n == 0) {
        ho_fail_as(hc, OUT_FAILED, "parent-unresolved", false);
        ho_conn_close(hc, dns_status_str(status), true);
        return;
    }
    struct addr a = ans->a[0];
    addr_unmap(&a);
    a.port = sl_ob(hc->sl)->port;
    ho_connect_to(hc, &a);
}

/* Open the slot's connection now. */
static void slot_attempt(struct ho_slot *sl)
{
    struct worker *w = sl->w;
    const struct config_outbound *o = sl_ob(sl);
    struct ho_conn *hc = calloc(1, sizeof(*hc));
    if (!hc) {
        slot_serve(sl);
        return;
    }
    hc->sl = sl;
    sl->refs++;
    hc->w = w;
    hc->rd_bit = SIDE_RD;
    hc->wr_bit = SIDE_WR;
    hc->reconnect = sl->lost;
    hc->t_start = clock_ms();
    list_init(&hc->streams);
    io_init(&hc->io, ho_on_io);
    timer_init(&hc->timer, ho_on_timer);
    task_init(&hc->task, ho_on_task);
    list_add_tail(&w->h2out->conns, &hc->link);
    sl->cur = hc;
    hc->st = HO_RESOLVE;
    const struct config *cfg = sl->wc->cfg;
    uint32_t budget = o->connect_timeout_ms ? o->connect_timeout_ms : cfg->connect_timeout_ms;
    loop_timer_arm(&w->loop, &hc->timer, budget);
    struct addr a;
    if (addr_parse_ip(o->host, o->port, &a) == 0) {
        ho_connect_to(hc, &a);
        return;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, o->host, o->port, &status, &ans)) {
        ho_on_dns(hc, status, &ans);
        return;
    }
    hc->dns = resolver_query(&w->dns, o->host, o->port, ho_on_dns, hc);
    if (!hc->dns)
        ho_conn_close(hc, "out of memory", true);
}

static void slot_on_timer(struct timer *t)
{
    struct ho_slot *sl = container_of(t, struct ho_slot, timer);
    if (!sl->cur && (!list_empty(&sl->waiters) || sl->prewarm))
        slot_attempt(sl);
    sl->prewarm = false;
}

static struct h2out_set *set_get(struct worker *w)
{
    if (!w->h2out) {
        w->h2out = calloc(1, sizeof(*w->h2out));
        if (!w->h2out)
            return NULL;
        list_init(&w->h2out->slots);
        list_init(&w->h2out->conns);
    }
    return w->h2out;
}

struct h2rev_out_set **outbound_h2_rev_set(struct worker *w)
{
    struct h2out_set *set = set_get(w);
    return set ? &set->rev : NULL;
}

struct ho_slot *outbound_h2_slot(struct worker *w, struct wcfg *wc, uint16_t ob)
{
    if (!set_get(w))
        return NULL;
    struct list *pos;
    for (pos = w->h2out->slots.next; pos != &w->h2out->slots; pos = pos->next) {
        struct ho_slot *sl = container_of(pos, struct ho_slot, link);
        if (sl->wc == wc && sl->ob == ob)
            return sl;
    }
    struct ho_slot *sl = calloc(1, sizeof(*sl));
    if (!sl)
        return NULL;
    sl->w = w;
    sl->wc = wc;
    sl->wc->sessions++; /* held while the slot lives */
    sl->ob = ob;
    list_init(&sl->waiters);
    timer_init(&sl->timer, slot_on_timer);
    list_add_tail(&w->h2out->slots, &sl->link);
    return sl;
}

/* ---- the row ------------------------------------------------------------ */

void outbound_h2_stream_release(struct ho_stream *s)
{
    s->c = NULL;
    s->rv = NULL;
    s->wake = NULL;
    if (!s->hc) {
        if (s->waiting)
            list_del(&s->link);
        hs_destroy(s);
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

static void ob_h2_release(struct conn *c)
{
    struct ho_stream *s = c->ob_priv;
    c->ob_priv = NULL;
    if (s)
        outbound_h2_stream_release(s);
}

static void ob_h2_fail(struct conn *c, enum outcome o, const char *why)
{
    ob_h2_release(c);
    outbound_fail(c, o, why);
}

/* s waits for the slot's connection, which opens now or after the
 * back-off. */
static void slot_wait(struct ho_slot *sl, struct ho_stream *s)
{
    struct loop *l = &sl->w->loop;
    list_add_tail(&sl->waiters, &s->link);
    s->waiting = true;
    if (!sl->cur && loop_now(l) >= sl->retry_at)
        slot_attempt(sl);
    else if (!sl->cur && !timer_armed(&sl->timer))
        loop_timer_arm_at(l, &sl->timer, sl->retry_at);
}

/* Wait for the slot's connection, or go on it now. */
static void ob_h2_queue(struct conn *c, struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    struct loop *l = &c->w->loop;
    const struct config_outbound *o = sl_ob(sl);
    uint64_t now = loop_now(l);
    conn_set_state(c, CONN_ST_CONNECT);
    if (sl->cur && sl->cur->st == HO_UP && !sl->cur->goaway) {
        loop_timer_arm_at(l, &c->timer, c->deadline > now + 1000 ? c->deadline : now + 1000);
        hs_submit(sl->cur, s);
        return;
    }
    /* A pool's member keeps to the pool's connect budget: the next member
     * may be up. */
    uint64_t until = now + o->tunnel_wait_ms;
    if (c->ob_rule != c->ob && c->deadline < until)
        until = c->deadline;
    loop_timer_arm_at(l, &c->timer, until);
    slot_wait(sl, s);
}

void outbound_h2_stream_queue(struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    if (sl->cur && sl->cur->st == HO_UP && !sl->cur->goaway)
        hs_submit(sl->cur, s);
    else
        slot_wait(sl, s);
}

int outbound_h2_stream_beside(struct ho_stream *s, const struct ho_stream *peer)
{
    struct ho_conn *hc = peer->hc;
    if (!hc || hc->st != HO_UP || hc->goaway || peer->gone)
        return -1;
    hs_submit(hc, s);
    return s->gone ? -1 : 0;
}

static void ob_h2_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    free(c->ob_priv);
    c->ob_priv = NULL;
    struct ho_slot *sl = outbound_h2_slot(c->w, c->wc, c->ob);
    if (sl && sl->http1) {
        c->out = &outbound_https; /* auto, and the parent speaks http/1.1 */
        c->out->dial(c, name, ip, port);
        return;
    }
    struct ho_stream *s = sl ? calloc(1, sizeof(*s)) : NULL;
    if (!s) {
        outbound_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    s->sl = sl;
    sl->refs++;
    s->c = c;
    s->port = port;
    s->has_name = name != NULL;
    if (ip)
        s->ip = *ip;
    if (!name) {
        s->ip.port = port;
        addr_unmap(&s->ip);
        c->target = s->ip;
    }
    c->ob_priv = s;
    ob_h2_queue(c, s);
}

static void ob_h2_event(struct conn *c, uint32_t events)
{
    (void)events;
    struct ho_stream *s = c->ob_priv;
    if (!s || s->waiting)
        return;
    if (s->http1) {
        struct addr ip = s->ip;
        uint16_t port = s->port;
        bool named = s->has_name;
        ob_h2_release(c);
        c->out = &outbound_https;
        c->out->dial(c, named ? c->dst_name : NULL, &ip, port);
        return;
    }
    if (s->retry) {
        struct addr ip = s->ip;
        uint16_t port = s->port;
        bool named = s->has_name;
        ob_h2_release(c);
        ob_h2_dial(c, named ? c->dst_name : NULL, &ip, port);
        return;
    }
    if (s->status >= 200 && s->status <= 299) {
        c->up_ev |= SIDE_WR; /* the stream takes bytes from now on */
        conn_connected(c);
        return;
    }
    if (s->status) {
        enum outcome o;
        const char *why;
        outbound_parent_outcome((uint8_t)parent_http_status_fail(s->status), &o, &why);
        if (log_enabled(s->status == 407 ? LOG_WARN : LOG_DEBUG)) {
            const struct config_outbound *ob = sl_ob(s->sl);
            char words[80];
            parent_http_status_why(s->status, ob->user != NULL, words, sizeof(words));
            log_write(s->status == 407 ? LOG_WARN : LOG_DEBUG,
                      "conn %llu: outbound %s: parent %s port %u: %s", (unsigned long long)c->id,
                      ob->name, ob->host, ob->port, words);
        }
        ob_h2_fail(c, o, why);
        return;
    }
    if (!s->hc && s->id == 0 && s->fail_why)
        ob_h2_fail(c, (enum outcome)s->fail_o, s->fail_why); /* the log said why (warn) */
    else if (s->gone || (!s->hc && s->id == 0))
        /* The connection went (or never came) before an answer. */
        ob_h2_fail(c, s->id ? OUT_FAILED : OUT_TUNNEL_DOWN, s->id ? "parent-reset" : "tunnel-down");
}

static void ob_h2_timeout(struct conn *c)
{
    struct ho_stream *s = c->ob_priv;
    if (s && s->waiting)
        ob_h2_fail(c, OUT_TUNNEL_DOWN, "tunnel-down");
    else
        ob_h2_fail(c, OUT_TIMEOUT, "parent-timeout");
}

static int ob_h2_bnd(const struct conn *c, struct addr *out)
{
    (void)c;
    memset(out, 0, sizeof(*out));
    out->family = AF_INET;
    return 0;
}

static void ob_h2_close(struct conn *c)
{
    ob_h2_release(c);
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

static ssize_t ob_h2_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    return outbound_h2_stream_read(c->ob_priv, p, len, want);
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

static ssize_t ob_h2_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    return outbound_h2_stream_write(c->ob_priv, p, len, want);
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

static int ob_h2_shutdown_wr(struct conn *c, uint8_t *want)
{
    (void)want;
    return outbound_h2_stream_shutdown(c->ob_priv);
}

static bool ob_h2_pending(const struct conn *c)
{
    const struct ho_stream *s = c->ob_priv;
    return s && (s->rx_len > s->rx_off || s->rx_eof || s->gone);
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

static void ob_h2_credit(struct conn *c)
{
    outbound_h2_stream_credit(c->ob_priv, c->u2c.bytes);
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

const struct outbound_ops outbound_h2 = {
    .name = "https-h2",
    .splice = false,
    .dial = ob_h2_dial,
    .event = ob_h2_event,
    .timeout = ob_h2_timeout,
    .bnd = ob_h2_bnd,
    .close = ob_h2_close,
    .read = ob_h2_read,
    .write = ob_h2_write,
    .shutdown_wr = ob_h2_shutdown_wr,
    .pending = ob_h2_pending,
    .credit = ob_h2_credit,
};

/* ---- what outbound_h2_user.c asks of a stream's connection ---------------- */

/* outbound_h2_int.h: the calls below. */
bool outbound_h2_slot_http1(const struct ho_slot *sl)
{
    return sl->http1;
}

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

/* ---- the worker's set ----------------------------------------------------- */

static void slot_free(struct ho_slot *sl)
{
    loop_timer_stop(&sl->w->loop, &sl->timer);
    list_del(&sl->link);
    worker_cfg_release(sl->w, sl->wc);
    free(sl);
}

static void slot_unref(struct ho_slot *sl)
{
    if (--sl->refs == 0 && sl->wc != sl->w->cur && !sl->w->h2out->ending)
        slot_free(sl);
}

void outbound_h2_config_changed(struct worker *w)
{
    if (!w->h2out)
        return;
    struct list *pos, *next;
    for (pos = w->h2out->conns.next; pos != &w->h2out->conns; pos = next) {
        next = pos->next;
        struct ho_conn *hc = container_of(pos, struct ho_conn, link);
        if (hc->nstreams == 0 && hc->sl->wc != w->cur)
            ho_conn_close(hc, "configuration replaced", false);
    }
    for (pos = w->h2out->slots.next; pos != &w->h2out->slots; pos = next) {
        next = pos->next;
        struct ho_slot *sl = container_of(pos, struct ho_slot, link);
        if (sl->wc != w->cur && sl->refs == 0)
            slot_free(sl);
    }
}

void outbound_h2_worker_fini(struct worker *w)
{
    if (!w->h2out)
        return;
    outbound_h2rev_fini(w);
    w->h2out->ending = true;
    while (!list_empty(&w->h2out->conns)) {
        struct ho_conn *hc = container_of(w->h2out->conns.next, struct ho_conn, link);
        ho_conn_close(hc, "worker ends", false);
    }
    while (!list_empty(&w->h2out->slots))
        slot_free(container_of(w->h2out->slots.next, struct ho_slot, link));
    free(w->h2out);
    w->h2out = NULL;
}
