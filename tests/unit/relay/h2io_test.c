/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2io_test.c: the HTTP/2 sending order (relay/h2io.c; TUNNEL.md, "Flow
 * control", Sending) with real nghttp2 sessions in memory and no sockets:
 * a data provider hands at most one 16 KiB quantum, a stream is young
 * while it sent under 64 KiB recently (a 250 ms bucket) and bulk after,
 * a light stream stays ahead of bulk ones however much it sent in total,
 * and a young stream's 64 KiB response leaves
 * in one piece while 8 bulk streams have DATA ready (without the young
 * weight nghttp2's round-robin puts 8 bulk frames between its quanta), on
 * a server session (h2conn.c's responses) and on a client session
 * (outbound_h2_stream.c's CONNECT uploads). Frames are read back from what
 * h2io_gather produces, in order. And a carrier that carries datagrams
 * keeps a shallow queue (TCP_NOTSENT_LOWAT and the gather, read back from
 * a real TCP socket) for a second after the last one, then the deep one.
 * And a gather goes out as whole TLS records while more frames follow.
 */
#include "harness.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/h2io.h"

#define NBULK 8

struct src {
    struct h2io_light light;
    size_t left; /* SIZE_MAX: endless */
    bool pause;  /* at 0 left: wait for more (deferred), not the end */
};

struct srv { /* one side: the server, or the client in the last test */
    nghttp2_session *s;
    struct h2io_sched q;
    struct src src[NBULK + 1];
};

static ssize_t on_read(nghttp2_session *ss, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *source, void *user)
{
    (void)ss;
    struct srv *sv = user;
    struct src *sr = source->ptr;
    if (sr->left == 0 && sr->pause)
        return NGHTTP2_ERR_DEFERRED;
    size_t n = h2io_quantum(&sv->q, id, &sr->light, sr->left, len);
    memset(buf, 'x', n);
    if (sr->left != SIZE_MAX)
        sr->left -= n;
    if (sr->left == 0 && !sr->pause)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* The client's side: requests (stream ids 1, 3, ...) with 1 GiB windows,
 * whose bytes go straight into the server session. */
static void client_feed(nghttp2_session *cl, nghttp2_session *sv, int requests)
{
    /* nghttp2_nv takes non-const pointers it only reads. */
    static char km[] = ":method", vm[] = "GET", ks[] = ":scheme", vs[] = "https", kp[] = ":path",
                vp[] = "/", ka[] = ":authority", va[] = "x";
    nghttp2_nv nv[] = {
        {(uint8_t *)km, (uint8_t *)vm, 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)ks, (uint8_t *)vs, 7, 5, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)kp, (uint8_t *)vp, 5, 1, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)ka, (uint8_t *)va, 10, 1, NGHTTP2_NV_FLAG_NONE},
    };
    for (int i = 0; i < requests; i++)
        assert_true(nghttp2_submit_request(cl, NULL, nv, 4, NULL, NULL) > 0);
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(cl, &p);
        assert_true(n >= 0);
        if (n == 0)
            break;
        assert_int_equal(nghttp2_session_mem_recv(sv, p, (size_t)n), n);
    }
}

static void respond(struct srv *sv, int32_t id, struct src *sr)
{
    static char k[] = ":status", v[] = "200";
    nghttp2_nv nv = {(uint8_t *)k, (uint8_t *)v, 7, 3, NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider dp = {.source.ptr = sr, .read_callback = on_read};
    h2io_young(sv->s, id);
    assert_int_equal(nghttp2_submit_response(sv->s, id, &nv, 1, &dp), 0);
}

/* The next frame the server sends (one nghttp2_session_mem_send each):
 * its type, stream and length through the pointers; false when none. */
static bool next_frame(struct srv *sv, uint8_t **buf, uint8_t *type, int32_t *id, uint32_t *len,
                       uint8_t *flags)
{
    uint32_t used = 0;
    assert_int_equal(h2io_gather(sv->s, &sv->q, buf, &used, 1, 64 * 1024), 0);
    if (used == 0)
        return false;
    const uint8_t *b = *buf;
    *len = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
    *type = b[3];
    *flags = b[4];
    *id = (int32_t)((uint32_t)(b[5] & 0x7f) << 24 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 8 |
                    b[8]);
    assert_int_equal(used, 9 + *len); /* one frame per call */
    return true;
}

/* Frames until stream young's END_STREAM: the bulk DATA frames before its
 * first DATA and between its first and last; its DATA frames count. */
static void young_order(struct srv *sv, uint8_t **buf, int32_t young, int *before, int *inside,
                        int *frames)
{
    uint8_t type, flags;
    int32_t id;
    uint32_t len;
    bool ended = false;
    *before = *inside = *frames = 0;
    for (int guard = 0; !ended && guard < 1000; guard++) {
        assert_true(next_frame(sv, buf, &type, &id, &len, &flags));
        if (type != NGHTTP2_DATA)
            continue;
        assert_true(len <= H2IO_QUANTUM);
        if (id == young) {
            ++*frames;
            ended = flags & NGHTTP2_FLAG_END_STREAM;
        } else if (*frames == 0) {
            ++*before;
        } else {
            ++*inside;
        }
    }
    assert_true(ended);
}

/* Send DATA until every one of the first NBULK streams is past 64 KiB. */
static void run_bulk(struct srv *sv, uint8_t **buf)
{
    uint8_t type, flags;
    int32_t id;
    uint32_t len;
    uint64_t data = 0;
    while (data < (uint64_t)NBULK * 2 * H2IO_YOUNG) {
        assert_true(next_frame(sv, buf, &type, &id, &len, &flags));
        if (type == NGHTTP2_DATA)
            data += len;
    }
    for (int i = 0; i < NBULK; i++)
        assert_true(sv->src[i].light.bulk);
}

static void test_quantum(void **state)
{
    (void)state;
    struct h2io_sched q = {0};
    struct h2io_light l = {0};
    /* Never more than a quantum, whatever nghttp2 offers. */
    assert_int_equal(h2io_quantum(&q, 5, &l, 1 << 20, 1 << 20), H2IO_QUANTUM);
    assert_int_equal(q.n, 0);
    assert_int_equal(h2io_quantum(&q, 5, &l, 100, 16384), 100);
    assert_int_equal(h2io_quantum(&q, 5, &l, 0, 16384), 0);
    assert_int_equal(q.n, 0);
    while (l.level + H2IO_QUANTUM < H2IO_YOUNG)
        assert_int_equal(h2io_quantum(&q, 5, &l, 1 << 20, 16384), H2IO_QUANTUM);
    assert_int_equal(q.n, 0);
    h2io_quantum(&q, 5, &l, 1 << 20, 16384); /* past 64 KiB at once: bulk */
    assert_int_equal(q.n, 1);
    assert_int_equal(q.due[0].id, 5);
    assert_int_equal(q.due[0].weight, H2IO_WEIGHT_BULK);
    q.n = 0;
    h2io_quantum(&q, 5, &l, 1 << 20, 16384);
    assert_int_equal(q.n, 0); /* once */
}

/* The rule is what a stream sent recently, not in total, with the
 * connection's DATA as the clock: a stream that sends 1,200 bytes for
 * every 100 KiB of the others' stays young for ever; one that sends every
 * quantum turns bulk after 64 KiB and stays bulk while it goes on,
 * however long; once the others have sent 4 MiB (its level, at most 128
 * KiB, drained by 64 KiB) it is not yet young, a little more and it is,
 * and bulk again after another 64 KiB alone; one that sends just under a
 * 64th of what the others send stays young. */
static void test_light_is_recent(void **state)
{
    (void)state;
    struct h2io_sched q = {0};
    struct h2io_light ping = {0}, bulk = {0}, slow = {0};
    for (int i = 0; i < 100000; i++) { /* 120 MB of pings in 10 GB */
        h2io_quantum(&q, 1, &ping, 1200, 16384);
        q.data += 100 * 1024;
    }
    assert_int_equal(q.n, 0);
    assert_false(ping.bulk);
    for (int i = 0; i < 4; i++)
        h2io_quantum(&q, 3, &bulk, 1 << 20, 16384);
    assert_int_equal(q.n, 1);
    assert_int_equal(q.due[0].weight, H2IO_WEIGHT_BULK);
    q.n = 0;
    for (int i = 0; i < 100000; i++)
        h2io_quantum(&q, 3, &bulk, 1 << 20, 16384);
    assert_int_equal(q.n, 0);
    assert_true(bulk.bulk);
    q.data += 4u << 20; /* the others' 4 MiB: level 64 KiB, still bulk */
    h2io_quantum(&q, 3, &bulk, 100, 16384);
    assert_int_equal(q.n, 0);
    q.data += (4u << 20) + 64 * 100; /* and 4 MiB more */
    h2io_quantum(&q, 3, &bulk, 100, 16384);
    assert_int_equal(q.n, 1);
    assert_int_equal(q.due[0].id, 3);
    assert_int_equal(q.due[0].weight, H2IO_WEIGHT_YOUNG);
    assert_false(bulk.bulk);
    q.n = 0;
    for (int i = 0; i < 4; i++)
        h2io_quantum(&q, 3, &bulk, 1 << 20, 16384);
    assert_int_equal(q.n, 1);
    assert_int_equal(q.due[0].weight, H2IO_WEIGHT_BULK);
    q.n = 0;
    /* 16 KiB for every 64 * 16 KiB + 1 KiB of the others' DATA. */
    for (int i = 0; i < 10000; i++) {
        h2io_quantum(&q, 5, &slow, 1 << 20, 16384);
        q.data += 64 * 16384 + 1024;
    }
    assert_int_equal(q.n, 0);
    assert_false(slow.bulk);
}

/* A server session (sv) and a client session whose windows (1 GiB)
 * never hold the server's DATA back, for the scheduling tests. */
struct pair {
    nghttp2_session_callbacks *cb, *ccb;
    nghttp2_session *cl;
};

static void pair_up(struct srv *sv, struct pair *p)
{
    assert_int_equal(nghttp2_session_callbacks_new(&p->cb), 0);
    assert_int_equal(nghttp2_session_server_new(&sv->s, p->cb, sv), 0);
    assert_int_equal(nghttp2_session_callbacks_new(&p->ccb), 0);
    assert_int_equal(nghttp2_session_client_new(&p->cl, p->ccb, NULL), 0);
    nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 30};
    assert_int_equal(nghttp2_submit_settings(p->cl, NGHTTP2_FLAG_NONE, &iv, 1), 0);
    assert_int_equal(nghttp2_session_set_local_window_size(p->cl, NGHTTP2_FLAG_NONE, 0, 1 << 30),
                     0);
}

static void pair_down(struct srv *sv, struct pair *p)
{
    nghttp2_session_del(p->cl);
    nghttp2_session_del(sv->s);
    nghttp2_session_callbacks_del(p->ccb);
    nghttp2_session_callbacks_del(p->cb);
}

static void test_young_goes_ahead_of_bulk(void **state)
{
    (void)state;
    struct srv sv = {0};
    struct pair pr;
    pair_up(&sv, &pr);
    nghttp2_session *cl = pr.cl;
    client_feed(cl, sv.s, NBULK);
    for (int i = 0; i < NBULK; i++) {
        sv.src[i].left = SIZE_MAX;
        respond(&sv, 1 + 2 * i, &sv.src[i]);
    }
    uint8_t *buf = malloc(64 * 1024);
    assert_non_null(buf);
    run_bulk(&sv, &buf);
    /* A young stream with 64 KiB to send. */
    client_feed(cl, sv.s, 1);
    int32_t young = 1 + 2 * NBULK;
    sv.src[NBULK].left = H2IO_YOUNG;
    respond(&sv, young, &sv.src[NBULK]);
    int bulk_before, bulk_inside, young_frames;
    young_order(&sv, &buf, young, &bulk_before, &bulk_inside, &young_frames);
    assert_int_equal(young_frames, H2IO_YOUNG / H2IO_QUANTUM);
    /* Before its first quantum, at most the bulk quanta due at the same
     * virtual time (one round); between its quanta none (round-robin at
     * equal weights: 8 per gap, 24). */
    assert_true(bulk_before <= NBULK);
    assert_int_equal(bulk_inside, 0);
    free(buf);
    pair_down(&sv, &pr);
}

/* A stream that sends a 48 KiB message (3 quanta) for every 300 of the
 * 8 bulk streams' quanta (4.7 MiB: a 100th of the traffic): each of its
 * messages leaves in one piece, no bulk frame between its quanta, long
 * after it has sent 64 KiB in total (20 messages, 960 KiB). With a total
 * count it turned bulk during its 2nd message, and from then on every
 * bulk stream sent a quantum between each two of its quanta (nghttp2's
 * round-robin at equal weights). */
static void test_light_stream_stays_ahead(void **state)
{
    (void)state;
    struct srv sv = {0};
    struct pair pr;
    pair_up(&sv, &pr);
    nghttp2_session *cl = pr.cl;
    client_feed(cl, sv.s, NBULK + 1);
    for (int i = 0; i < NBULK; i++) {
        sv.src[i].left = SIZE_MAX;
        respond(&sv, 1 + 2 * i, &sv.src[i]);
    }
    int32_t light = 1 + 2 * NBULK;
    sv.src[NBULK].pause = true;
    respond(&sv, light, &sv.src[NBULK]);
    uint8_t *buf = malloc(64 * 1024);
    assert_non_null(buf);
    run_bulk(&sv, &buf);
    uint8_t type, flags;
    int32_t id;
    uint32_t len;
    for (int msg = 0; msg < 20; msg++) {
        for (int f = 0; f < 300; f++) {
            assert_true(next_frame(&sv, &buf, &type, &id, &len, &flags));
            assert_int_not_equal(id, light);
        }
        sv.src[NBULK].left = 3 * H2IO_QUANTUM;
        h2io_resume(sv.s, &sv.q, light, &sv.src[NBULK].light);
        int before = 0, inside = 0, frames = 0;
        while (frames < 3) {
            assert_true(next_frame(&sv, &buf, &type, &id, &len, &flags));
            if (type != NGHTTP2_DATA)
                continue;
            if (id == light)
                frames++;
            else if (frames)
                inside++;
            else
                before++;
            assert_true(before + inside < 100);
        }
        assert_true(before <= NBULK); /* as a new young stream's (below) */
        assert_int_equal(inside, 0);
    }
    assert_false(sv.src[NBULK].light.bulk);
    for (int i = 0; i < NBULK; i++)
        assert_true(sv.src[i].light.bulk);
    free(buf);
    pair_down(&sv, &pr);
}

/* The client's side (outbound_h2_stream.c): a request's stream exists once its
 * HEADERS went out, and turns young from that frame's on_frame_send. */
static int on_send(nghttp2_session *ss, const nghttp2_frame *f, void *user)
{
    (void)ss;
    struct srv *c = user;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
        h2io_young_later(&c->q, f->hd.stream_id);
    return 0;
}

static void request(struct srv *c, struct src *sr)
{
    static char km[] = ":method", vm[] = "CONNECT", ka[] = ":authority", va[] = "x:1";
    nghttp2_nv nv[] = {
        {(uint8_t *)km, (uint8_t *)vm, 7, 7, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)ka, (uint8_t *)va, 10, 3, NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider dp = {.source.ptr = sr, .read_callback = on_read};
    assert_true(nghttp2_submit_request(c->s, NULL, nv, 2, &dp, NULL) > 0);
}

static void test_client_young_goes_ahead_of_bulk(void **state)
{
    (void)state;
    nghttp2_session_callbacks *cb, *scb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    assert_int_equal(nghttp2_session_callbacks_new(&scb), 0);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_send);
    struct srv c = {0};
    assert_int_equal(nghttp2_session_client_new(&c.s, cb, &c), 0);
    nghttp2_session *sv;
    assert_int_equal(nghttp2_session_server_new(&sv, scb, NULL), 0);
    /* The parent's SETTINGS and windows: 1 GiB. */
    nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 30};
    assert_int_equal(nghttp2_submit_settings(sv, NGHTTP2_FLAG_NONE, &iv, 1), 0);
    assert_int_equal(nghttp2_session_set_local_window_size(sv, NGHTTP2_FLAG_NONE, 0, 1 << 30), 0);
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(sv, &p);
        assert_true(n >= 0);
        if (n == 0)
            break;
        assert_int_equal(nghttp2_session_mem_recv(c.s, p, (size_t)n), n);
    }
    for (int i = 0; i < NBULK; i++) {
        c.src[i].left = SIZE_MAX;
        request(&c, &c.src[i]);
    }
    const uint8_t *magic;
    assert_int_equal(nghttp2_session_mem_send(c.s, &magic), 24); /* the preface: no frame */
    uint8_t *buf = malloc(64 * 1024);
    assert_non_null(buf);
    run_bulk(&c, &buf);
    c.src[NBULK].left = H2IO_YOUNG;
    request(&c, &c.src[NBULK]);
    int before, inside, frames;
    young_order(&c, &buf, 1 + 2 * NBULK, &before, &inside, &frames);
    assert_int_equal(frames, H2IO_YOUNG / H2IO_QUANTUM);
    assert_true(before <= NBULK);
    assert_int_equal(inside, 0);
    free(buf);
    nghttp2_session_del(c.s);
    nghttp2_session_del(sv);
    nghttp2_session_callbacks_del(cb);
    nghttp2_session_callbacks_del(scb);
}

/* Gathered frames go out as whole TLS records while more follow: two
 * 16 KiB DATA frames (32,786 bytes) write 32,768 now and keep 18 for the
 * next gather, which (the last) goes out whole. */
static void test_whole_records(void **state)
{
    (void)state;
    const uint32_t frame = H2IO_QUANTUM + 9;
    assert_int_equal(h2io_whole_records(2 * frame, true), 2 * H2IO_RECORD);
    assert_int_equal(h2io_whole_records(4 * frame, true), 4 * H2IO_RECORD);
    assert_int_equal(h2io_whole_records(2 * frame, false), 2 * frame); /* the last: all */
    assert_int_equal(h2io_whole_records(H2IO_RECORD + 1, true), H2IO_RECORD);
    assert_int_equal(h2io_whole_records(H2IO_RECORD, true), H2IO_RECORD);
    assert_int_equal(h2io_whole_records(100, true), 100); /* under a record: no waiting */
    uint8_t buf[64];
    for (unsigned i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)i;
    uint32_t off = 48, len = 60;
    h2io_keep_tail(buf, &off, &len);
    assert_int_equal(off, 0);
    assert_int_equal(len, 12);
    for (unsigned i = 0; i < 12; i++)
        assert_int_equal(buf[i], 48 + i);
}

static int lowat_of(int fd)
{
    int v = -1;
    socklen_t l = sizeof(v);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, &l), 0);
    return v;
}

/* Datagrams on a carrier: a shallow socket queue and gather while they
 * go, the deep ones H2IO_UDP_HOLD_MS after the last. */
static void test_udp_shallow_queue(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    h2io_carrier(fd);
    assert_int_equal(lowat_of(fd), H2IO_NOTSENT_LOWAT);
    struct h2io_udp u = {0};
    /* No datagram yet: the deep settings. */
    assert_int_equal(h2io_udp_upto(&u, fd, 5000, 64 * 1024), 64 * 1024);
    assert_int_equal(lowat_of(fd), H2IO_NOTSENT_LOWAT);
    h2io_udp_note(&u, 5000);
    assert_int_equal(h2io_udp_upto(&u, fd, 5000, 64 * 1024), H2IO_UDP_GATHER);
    assert_int_equal(lowat_of(fd), H2IO_UDP_LOWAT);
    assert_int_equal(h2io_udp_upto(&u, fd, 5000 + H2IO_UDP_HOLD_MS - 1, 1024), 1024);
    assert_int_equal(lowat_of(fd), H2IO_UDP_LOWAT);
    /* A quiet second: deep again. */
    assert_int_equal(h2io_udp_upto(&u, fd, 5000 + H2IO_UDP_HOLD_MS, 64 * 1024), 64 * 1024);
    assert_int_equal(lowat_of(fd), H2IO_NOTSENT_LOWAT);
    close(fd);
}

/* The unsent queue grows with a long fast path's rate (4 ms, or a tenth
 * of the RTT, of cwnd per RTT) and never shrinks below the floor; short
 * RTTs keep the floor. */
static void test_depth_of(void **state)
{
    (void)state;
    assert_int_equal(h2io_depth_of(0, 50000), H2IO_NOTSENT_LOWAT);
    /* loopback and LAN: the floor, however large the window */
    assert_int_equal(h2io_depth_of(64u << 20, 50), H2IO_NOTSENT_LOWAT);
    assert_int_equal(h2io_depth_of(64u << 20, H2IO_DEEP_RTT_US - 1), H2IO_NOTSENT_LOWAT);
    /* 100 Mbit/s at 80 ms: 1 MB per RTT is 25 KB in 2 ms, under the floor */
    assert_int_equal(h2io_depth_of(1000000, 80000), H2IO_NOTSENT_LOWAT);
    /* 1 Gbit/s start-up at 100 ms: 2.89 x 12.5 MB per RTT, 1.4 MB in 4 ms */
    assert_int_equal(h2io_depth_of(36125000, 100000), 36125000ull * H2IO_DEPTH_US / 100000);
    /* 10 ms at 1 Gbit/s: a tenth of the RTT, 1 ms of 1.25 MB per RTT */
    assert_int_equal(h2io_depth_of(12500000, 10000), 12500000 / 10);
    /* the ceiling */
    assert_int_equal(h2io_depth_of(400u << 20, 10000), H2IO_DEPTH_MAX);
    assert_int_equal(h2io_depth_of(UINT32_MAX * 65536ull, H2IO_DEEP_RTT_US), H2IO_DEPTH_MAX);
}

/* On a connected loopback socket TCP_INFO is read (at most every
 * H2IO_DEPTH_MS) and its short RTT keeps the floor. */
static void test_depth_reads_the_socket(void **state)
{
    (void)state;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(ls, 1), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    int peer = accept(ls, NULL, NULL);
    assert_true(peer >= 0);
    h2io_carrier(fd);
    struct h2io_udp u = {0};
    assert_int_equal(h2io_udp_upto(&u, fd, 7000, 64 * 1024), 64 * 1024);
    assert_int_equal(u.probe_ms, 7000);
    assert_int_equal(u.depth, H2IO_NOTSENT_LOWAT);
    assert_int_equal(lowat_of(fd), H2IO_NOTSENT_LOWAT);
    /* a deeper depth (as a long path would give) is set on the socket,
     * and kept until the next read */
    u.depth = 512 * 1024;
    assert_int_equal(h2io_udp_upto(&u, fd, 7000 + H2IO_DEPTH_MS - 1, 64 * 1024), 64 * 1024);
    assert_int_equal(lowat_of(fd), 512 * 1024);
    /* datagrams: shallow whatever the depth */
    h2io_udp_note(&u, 7050);
    assert_int_equal(h2io_udp_upto(&u, fd, 7060, 64 * 1024), H2IO_UDP_GATHER);
    assert_int_equal(lowat_of(fd), H2IO_UDP_LOWAT);
    /* a quiet second later the socket is read again: loopback, the floor */
    assert_int_equal(h2io_udp_upto(&u, fd, 7050 + H2IO_UDP_HOLD_MS, 64 * 1024), 64 * 1024);
    assert_int_equal(lowat_of(fd), H2IO_NOTSENT_LOWAT);
    close(peer);
    close(fd);
    close(ls);
}

/* A CONNECT-UDP stream's window: 32 KiB, or room for two of the largest
 * capsules (payload, context id, type and length varints) when
 * udp.max_datagram is raised, so a capsule split across windows always
 * completes. */
static void test_udp_window(void **state)
{
    (void)state;
    assert_int_equal(h2io_udp_window(9012), H2IO_UDP_WINDOW);
    assert_int_equal(h2io_udp_window(0), H2IO_UDP_WINDOW);
    for (uint32_t max = 1; max <= 65535; max += 997)
        assert_true(h2io_udp_window(max) >= 2 * (max + 1 + 2 * 8));
    assert_true(h2io_udp_window(65507) < 256 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantum),
        cmocka_unit_test(test_light_is_recent),
        cmocka_unit_test(test_light_stream_stays_ahead),
        cmocka_unit_test(test_young_goes_ahead_of_bulk),
        cmocka_unit_test(test_client_young_goes_ahead_of_bulk),
        cmocka_unit_test(test_udp_shallow_queue),
        cmocka_unit_test(test_depth_of),
        cmocka_unit_test(test_depth_reads_the_socket),
        cmocka_unit_test(test_udp_window),
        cmocka_unit_test(test_whole_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
