/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2io.c: the pieces the HTTP/2 server and client share (h2io.h): frame
 * gathering for memory I/O, the sending order (young streams before bulk,
 * 16 KiB quanta, a shallow socket queue) and the stream window's growth on
 * consumption. nghttp2 schedules by RFC 7540's tree on both sides: ferry
 * never sends SETTINGS_NO_RFC7540_PRIORITIES, and nghttp2 uses RFC 9218's
 * urgencies only when the local side did (its extpri calls are no-ops
 * otherwise, and client sessions have none). No socket writes but
 * setsockopt, no sessions, no logging.
 */
#include "relay/h2io.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/loop.h"
#include "util/blkcache.h"

void h2io_carrier(int fd)
{
    int one = 1, lowat = (int)H2IO_NOTSENT_LOWAT;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
}

uint32_t h2io_whole_records(uint32_t len, bool more)
{
    return more && len > H2IO_RECORD ? len - len % H2IO_RECORD : len;
}

void h2io_keep_tail(uint8_t *buf, uint32_t *off, uint32_t *len)
{
    memmove(buf, buf + *off, *len - *off);
    *len -= *off;
    *off = 0;
}

void h2io_udp_note(struct h2io_udp *u, uint64_t now_ms)
{
    u->last_ms = now_ms;
}

uint32_t h2io_udp_window(uint32_t max_datagram)
{
    /* A capsule: its payload, the context id and two varint headers. */
    uint64_t two = 2 * ((uint64_t)max_datagram + 32);
    return two > H2IO_UDP_WINDOW ? (uint32_t)two : H2IO_UDP_WINDOW;
}

uint32_t h2io_depth_of(uint64_t cwnd_bytes, uint64_t rtt_us)
{
    if (rtt_us < H2IO_DEEP_RTT_US || !cwnd_bytes)
        return H2IO_NOTSENT_LOWAT;
    /* cwnd is at most 2^32 segments of 64 KiB: no overflow times 4000 */
    uint64_t q =
        rtt_us / 10 < H2IO_DEPTH_US ? cwnd_bytes / 10 : cwnd_bytes * H2IO_DEPTH_US / rtt_us;
    if (q < H2IO_NOTSENT_LOWAT)
        return H2IO_NOTSENT_LOWAT;
    return q > H2IO_DEPTH_MAX ? H2IO_DEPTH_MAX : (uint32_t)q;
}

uint32_t h2io_udp_upto(struct h2io_udp *u, int fd, uint64_t now_ms, uint32_t deep)
{
    bool shallow = u->last_ms && now_ms - u->last_ms < H2IO_UDP_HOLD_MS;
    if (!shallow && (!u->probe_ms || now_ms - u->probe_ms >= H2IO_DEPTH_MS)) {
        u->probe_ms = now_ms ? now_ms : 1;
        struct tcp_info ti;
        socklen_t tl = sizeof(ti);
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
            u->depth = h2io_depth_of((uint64_t)ti.tcpi_snd_cwnd * ti.tcpi_snd_mss, ti.tcpi_rtt);
    }
    uint32_t lowat = shallow ? H2IO_UDP_LOWAT : u->depth ? u->depth : H2IO_NOTSENT_LOWAT;
    if (lowat != (u->lowat ? u->lowat : H2IO_NOTSENT_LOWAT)) {
        int v = (int)lowat;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v));
        u->lowat = lowat;
    }
    return shallow && deep > H2IO_UDP_GATHER ? H2IO_UDP_GATHER : deep;
}

static void h2io_weigh(nghttp2_session *s, int32_t id, int32_t weight)
{
    nghttp2_priority_spec pri;
    nghttp2_priority_spec_init(&pri, 0, weight, 0);
    /* A stream that closed meanwhile is no error: nothing to order. */
    (void)nghttp2_session_change_stream_priority(s, id, &pri);
}

void h2io_young(nghttp2_session *s, int32_t id)
{
    h2io_weigh(s, id, H2IO_WEIGHT_YOUNG);
}

static void h2io_due(struct h2io_sched *q, int32_t id, int32_t weight)
{
    if (q->n < H2IO_DUE_MAX) {
        q->due[q->n].id = id;
        q->due[q->n].weight = weight;
        q->n++;
    }
}

void h2io_young_later(struct h2io_sched *q, int32_t id)
{
    h2io_due(q, id, H2IO_WEIGHT_YOUNG);
}

/* Drain what the connection's DATA since l's last drain took away; the
 * level never passes 2 * H2IO_YOUNG, so a bulk stream that pauses while
 * the others send 4 MiB is light again. */
static void h2io_drain(const struct h2io_sched *q, struct h2io_light *l)
{
    uint64_t drain = (q->data - l->at) / H2IO_LIGHT_SHARE;
    l->level = l->level > drain ? l->level - drain : 0;
    l->at = q->data;
}

void h2io_resume(nghttp2_session *s, struct h2io_sched *q, int32_t id, struct h2io_light *l)
{
    h2io_drain(q, l);
    if (l->bulk && l->level < H2IO_YOUNG) {
        l->bulk = false;
        h2io_weigh(s, id, H2IO_WEIGHT_YOUNG);
    }
    nghttp2_session_resume_data(s, id);
}

size_t h2io_quantum(struct h2io_sched *q, int32_t id, struct h2io_light *l, size_t have, size_t len)
{
    size_t n = have < len ? have : len;
    if (n > H2IO_QUANTUM)
        n = H2IO_QUANTUM;
    if (n == 0)
        return 0;
    h2io_drain(q, l);
    q->data += n;
    l->at = q->data;
    l->level += n;
    if (l->level > 2 * H2IO_YOUNG)
        l->level = 2 * H2IO_YOUNG;
    /* At most one change per quantum (and so per frame: h2io_sched). */
    bool bulk = l->level >= H2IO_YOUNG;
    if (bulk != l->bulk) {
        l->bulk = bulk;
        h2io_due(q, id, bulk ? H2IO_WEIGHT_BULK : H2IO_WEIGHT_YOUNG);
    }
    return n;
}

int h2io_gather(nghttp2_session *s, struct h2io_sched *q, uint8_t **buf, uint32_t *len,
                uint32_t upto, uint32_t cap)
{
    while (*len < upto) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(s, &p);
        for (uint32_t i = 0; i < q->n; i++)
            h2io_weigh(s, q->due[i].id, q->due[i].weight);
        q->n = 0;
        if (n < 0)
            return -EPROTO;
        if (n == 0)
            break;
        if (*len + (size_t)n > cap) {
            /* A frame bigger than the room (never past 16 KiB + 9 by
             * default): the buffer grows for it. */
            uint8_t *nb = realloc(*buf, *len + (size_t)n);
            if (!nb)
                return -ENOMEM;
            *buf = nb;
        }
        memcpy(*buf + *len, p, (size_t)n);
        *len += (uint32_t)n;
    }
    return 0;
}

bool h2io_window_consumed(nghttp2_session *s, int32_t id, struct h2flow_win *win, size_t n,
                          struct h2flow_budget *conn, struct h2flow_budget *worker,
                          const struct h2flow_rtt *rtt, int fd, uint32_t window_max,
                          uint64_t *now_us)
{
    win->consumed += (uint32_t)n;
    if ((uint64_t)win->consumed * 2 <= win->window)
        return false;
    uint64_t now = clock_us();
    uint64_t tcp_rtt = 0;
    struct tcp_info ti;
    socklen_t tl = sizeof(ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
        tcp_rtt = ti.tcpi_rtt;
    uint32_t want = h2flow_tune(win, now, h2flow_rtt_use(rtt, tcp_rtt), window_max);
    uint32_t got = h2flow_admit(conn, worker, win->window, want);
    if (got > win->window) {
        h2flow_charge(conn, got - win->window);
        h2flow_charge(worker, got - win->window);
        win->window = got;
        nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, id, (int32_t)got);
    }
    win->consumed = 0;
    win->epoch_us = now;
    *now_us = now;
    return true;
}

static void *mem_malloc(size_t n, void *user)
{
    (void)user;
    return blkcache_alloc(n);
}

static void mem_free(void *p, void *user)
{
    (void)user;
    blkcache_free(p);
}

static void *mem_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    return blkcache_calloc(n, size);
}

static void *mem_realloc(void *p, size_t n, void *user)
{
    (void)user;
    return blkcache_realloc(p, n);
}

/* nghttp2 allocates an item per frame it queues (WINDOW_UPDATEs are
 * frequent on the small fixed CONNECT-UDP window): from the per-thread
 * block cache, not libc. */
static nghttp2_mem h2io_mem = {NULL, mem_malloc, mem_free, mem_calloc, mem_realloc};

nghttp2_session *h2io_session_new(bool server, const struct h2io_callbacks *c, void *user,
                                  size_t deflate_max)
{
    nghttp2_session_callbacks *cb;
    nghttp2_option *opt;
    nghttp2_session *s = NULL;
    if (nghttp2_session_callbacks_new(&cb))
        return NULL;
    if (nghttp2_option_new(&opt)) {
        nghttp2_session_callbacks_del(cb);
        return NULL;
    }
    if (c->begin_frame)
        nghttp2_session_callbacks_set_on_begin_frame_callback(cb, c->begin_frame);
    if (c->begin_headers)
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, c->begin_headers);
    if (c->header)
        nghttp2_session_callbacks_set_on_header_callback(cb, c->header);
    if (c->frame_recv)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, c->frame_recv);
    if (c->data_chunk)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, c->data_chunk);
    if (c->stream_close)
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, c->stream_close);
    if (c->frame_send)
        nghttp2_session_callbacks_set_on_frame_send_callback(cb, c->frame_send);
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* nghttp2's own Rapid Reset guard counts every RST_STREAM received
     * (1000, then 33 a second) and tears the connection down with
     * GOAWAY(INTERNAL_ERROR): a tunnel whose local clients close hard sends
     * one per session after its answer, so a busy tunnel lost its connection
     * every ~1,000 sessions (and the sessions caught in the hand-over).
     * The server's budget (h2conn.c: resets of streams not yet answered,
     * [http2] resets_per_second) is the guard; this one is off. */
    if (server)
        nghttp2_option_set_stream_reset_rate_limit(opt, UINT64_MAX, UINT64_MAX);
    if (deflate_max)
        nghttp2_option_set_max_deflate_dynamic_table_size(opt, deflate_max);
    int rc = server ? nghttp2_session_server_new3(&s, cb, user, opt, &h2io_mem)
                    : nghttp2_session_client_new3(&s, cb, user, opt, &h2io_mem);
    if (rc)
        s = NULL;
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    return s;
}
