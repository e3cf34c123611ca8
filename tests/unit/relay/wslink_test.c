/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wslink_test.c: the WebSocket link (relay/wslink.h) between a socket and
 * an nghttp2 session: the HTTP/2 client preface in masked binary frames
 * cut at every byte reaches nghttp2 whole; a PING is answered with its
 * PONG, a CLOSE with a CLOSE; an unmasked frame gets CLOSE 1002 and
 * nothing after it; what is sent comes out as frames (masked from a
 * client) whatever the socket takes at a time, with a queue that keeps
 * its start while the socket is full; the client's handshake checks the
 * 101 and keeps the bytes behind it.
 */
#include "harness.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>

#include "proto/http1.h"
#include "proto/ws.h"
#include "relay/wslink.h"

/* A socket for the link: takes at most `room` bytes per call (0: EAGAIN). */
struct sink {
    uint8_t buf[1 << 18];
    size_t len;
    size_t room;
};

static ssize_t sink_write(void *ctx, const uint8_t *p, size_t n)
{
    struct sink *s = ctx;
    if (s->room == 0)
        return -EAGAIN;
    size_t k = n < s->room ? n : s->room;
    assert_true(s->len + k <= sizeof(s->buf));
    memcpy(s->buf + s->len, p, k);
    s->len += k;
    return (ssize_t)k;
}

/* The frames in s->buf, read as the peer would (server: they must be
 * masked): data into out, the control opcodes into ctls, and the last
 * CLOSE's code. */
static void read_back(const struct sink *s, bool server, uint8_t *out, size_t *outlen, int *ctls,
                      size_t *nctl, uint16_t *code)
{
    struct ws_rx r;
    ws_rx_init(&r, server, 1u << 20);
    uint8_t *copy = malloc(s->len + 1);
    assert_non_null(copy);
    memcpy(copy, s->buf, s->len);
    *outlen = *nctl = 0;
    for (size_t at = 0; at < s->len;) {
        size_t d;
        int ctl;
        ssize_t k = ws_rx_read(&r, copy + at, s->len - at, &d, &ctl);
        assert_true(k > 0);
        memcpy(out + *outlen, copy + at, d);
        *outlen += d;
        if (ctl == WS_OP_CLOSE)
            *code = ws_rx_close_code(&r);
        if (ctl)
            ctls[(*nctl)++] = ctl;
        at += (size_t)k;
    }
    assert_int_equal(r.payload, false); /* ends on a frame boundary */
    free(copy);
}

static nghttp2_session *server_session(void)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session *s;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    assert_int_equal(nghttp2_session_server_new(&s, cb, NULL), 0);
    nghttp2_session_callbacks_del(cb);
    return s;
}

/* A masked binary frame of p[0..n) appended to out. */
static size_t put_frame(uint8_t *out, uint8_t op, const void *p, size_t n)
{
    const uint8_t key[4] = {0x11, 0x22, 0x33, 0x44};
    size_t h = ws_frame_header(out, op, n, key);
    memcpy(out + h, p, n);
    ws_mask(out + h, n, key, 0);
    return h + n;
}

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                              "\x00\x00\x00\x04\x00\x00\x00\x00\x00"; /* an empty SETTINGS */
#define PREFACE_LEN (sizeof(preface) - 1)

static void test_preface_at_every_cut(void **state)
{
    (void)state;
    uint8_t stream[256];
    size_t n = put_frame(stream, WS_OP_BINARY, preface, 10);
    n += put_frame(stream + n, WS_OP_BINARY, preface + 10, PREFACE_LEN - 10);
    for (size_t cut = 0; cut <= n; cut++) {
        struct wslink *ws = wslink_new(false);
        nghttp2_session *s = server_session();
        uint8_t a[256], b[256];
        memcpy(a, stream, cut);
        memcpy(b, stream + cut, n - cut);
        assert_int_equal(wslink_recv(ws, s, a, cut), WSLINK_OK);
        assert_int_equal(wslink_recv(ws, s, b, n - cut), WSLINK_OK);
        /* nghttp2 took the preface and owes a SETTINGS ACK. */
        assert_true(nghttp2_session_want_write(s));
        assert_false(wslink_pending(ws));
        nghttp2_session_del(s);
        wslink_free(ws);
    }
}

static void test_ping_close_and_errors(void **state)
{
    (void)state;
    uint8_t in[256], out[1024];
    int ctls[8];
    size_t n, outlen, nctl;
    uint16_t code = 0;
    struct sink *sk = calloc(1, sizeof(*sk));
    assert_non_null(sk);
    sk->room = sizeof(sk->buf);
    /* A PING: its PONG, with the payload. */
    struct wslink *ws = wslink_new(false);
    nghttp2_session *s = server_session();
    n = put_frame(in, WS_OP_PING, "hi", 2);
    assert_int_equal(wslink_recv(ws, s, in, n), WSLINK_OK);
    assert_true(wslink_pending(ws));
    assert_int_equal(wslink_send(ws, NULL, 0, sink_write, sk), 0);
    read_back(sk, false, out, &outlen, ctls, &nctl, &code);
    assert_int_equal(nctl, 1);
    assert_int_equal(ctls[0], WS_OP_PONG);
    /* A CLOSE with 1001: echoed, then nothing is framed any more. */
    sk->len = 0;
    uint8_t c1001[2] = {0x03, 0xe9};
    n = put_frame(in, WS_OP_CLOSE, c1001, 2);
    assert_int_equal(wslink_recv(ws, s, in, n), WSLINK_CLOSED);
    assert_int_equal(wslink_send(ws, (const uint8_t *)"late", 4, sink_write, sk), 4);
    read_back(sk, false, out, &outlen, ctls, &nctl, &code);
    assert_int_equal(nctl, 1);
    assert_int_equal(code, 1001);
    assert_int_equal(outlen, 0);
    nghttp2_session_del(s);
    wslink_free(ws);
    /* An unmasked frame from a client: CLOSE 1002, and the link stays broken. */
    sk->len = 0;
    ws = wslink_new(false);
    s = server_session();
    uint8_t bad[] = {0x82, 0x01, 0x00};
    assert_int_equal(wslink_recv(ws, s, bad, sizeof(bad)), WSLINK_BAD);
    assert_int_equal(wslink_recv(ws, s, bad, sizeof(bad)), WSLINK_BAD);
    assert_int_equal(wslink_send(ws, NULL, 0, sink_write, sk), 0);
    read_back(sk, false, out, &outlen, ctls, &nctl, &code);
    assert_int_equal(code, WS_CLOSE_PROTOCOL);
    /* Data in front of the error in the same read still reaches nghttp2. */
    nghttp2_session_del(s);
    wslink_free(ws);
    ws = wslink_new(false);
    s = server_session();
    n = put_frame(in, WS_OP_BINARY, preface, PREFACE_LEN);
    in[n++] = 0x81; /* a text frame */
    in[n++] = 0x80;
    assert_int_equal(wslink_recv(ws, s, in, n), WSLINK_BAD);
    assert_true(nghttp2_session_want_write(s)); /* the preface arrived */
    nghttp2_session_del(s);
    wslink_free(ws);
    free(sk);
}

/* PINGs while the socket takes nothing: their PONGs stop when the queue is
 * full, and our CLOSE (after a protocol error) still fits behind them. */
static void test_pong_flood_keeps_room_for_close(void **state)
{
    (void)state;
    struct sink *sk = calloc(1, sizeof(*sk));
    assert_non_null(sk);
    struct wslink *ws = wslink_new(false);
    nghttp2_session *s = server_session();
    /* 104 bytes: PONGs of 106 leave less than a CLOSE's 4 bytes of the
     * queue when nothing is reserved for it. */
    uint8_t in[256], payload[104], out[64];
    memset(payload, 'p', sizeof(payload));
    size_t n = put_frame(in, WS_OP_PING, payload, sizeof(payload));
    for (int i = 0; i < 2000; i++) {
        uint8_t copy[256];
        memcpy(copy, in, n);
        assert_int_equal(wslink_recv(ws, s, copy, n), WSLINK_OK);
    }
    uint8_t bad[] = {0x82, 0x00}; /* unmasked */
    assert_int_equal(wslink_recv(ws, s, bad, sizeof(bad)), WSLINK_BAD);
    sk->room = sizeof(sk->buf);
    assert_int_equal(wslink_send(ws, NULL, 0, sink_write, sk), 0);
    assert_true(sk->len < 70 * 1024); /* bounded */
    int ctls[1024];
    size_t outlen, nctl;
    uint16_t code = 0;
    read_back(sk, false, out, &outlen, ctls, &nctl, &code);
    assert_int_equal(outlen, 0);
    assert_true(nctl >= 2 && ctls[nctl - 1] == WS_OP_CLOSE);
    assert_int_equal(code, WS_CLOSE_PROTOCOL);
    nghttp2_session_del(s);
    wslink_free(ws);
    free(sk);
}

/* A client's data as masked frames, through a socket that takes 7 bytes at
 * a time and is sometimes full: the peer reads the bytes back in order. */
static void test_send_through_a_slow_socket(void **state)
{
    (void)state;
    struct sink *sk = calloc(1, sizeof(*sk));
    assert_non_null(sk);
    struct wslink *ws = wslink_new(true);
    uint8_t *data = malloc(200000), *out = malloc(sizeof(sk->buf));
    assert_true(data && out);
    for (size_t i = 0; i < 200000; i++)
        data[i] = (uint8_t)(i * 31 + 7);
    size_t sent = 0;
    for (unsigned round = 0; sent < 200000 || wslink_pending(ws); round++) {
        assert_true(round < 1000000);
        sk->room = round % 5 == 4 ? 0 : 7;
        ssize_t k = wslink_send(ws, data + sent, 200000 - sent, sink_write, sk);
        if (k == -EAGAIN)
            continue;
        assert_true(k >= 0);
        sent += (size_t)k;
    }
    int ctls[4];
    size_t outlen, nctl;
    uint16_t code;
    read_back(sk, true, out, &outlen, ctls, &nctl, &code);
    assert_int_equal(outlen, 200000);
    assert_memory_equal(out, data, 200000);
    assert_int_equal(nctl, 0);
    wslink_free(ws);
    free(data);
    free(out);
    free(sk);
}

/* The client's handshake: the request, our 101 and the bytes behind it. */
struct script {
    const char *text;
    size_t off;
    size_t piece; /* bytes per read */
};

static ssize_t script_read(void *ctx, uint8_t *p, size_t n)
{
    struct script *sc = ctx;
    size_t left = strlen(sc->text) - sc->off;
    if (left == 0)
        return -EAGAIN;
    size_t k = left < sc->piece ? left : sc->piece;
    k = k < n ? k : n;
    memcpy(p, sc->text + sc->off, k);
    sc->off += k;
    return (ssize_t)k;
}

static void test_client_handshake(void **state)
{
    (void)state;
    struct sink *sk = calloc(1, sizeof(*sk));
    assert_non_null(sk);
    sk->room = sizeof(sk->buf);
    struct wslink *ws = wslink_new(true);
    assert_int_equal(wslink_client_begin(ws, "h.example:8443", "/tunnel"), 0);
    assert_int_equal(wslink_send(ws, NULL, 0, sink_write, sk), 0);
    sk->buf[sk->len] = 0;
    struct http1_msg *m = malloc(sizeof(*m));
    assert_non_null(m);
    assert_int_equal(http1_parse_request(sk->buf, sk->len, 8192, m), 0);
    char key[WS_KEY_LEN + 1], accept[32], resp[512];
    assert_int_equal(ws_check_request(m, key), 0);
    assert_non_null(strstr((const char *)sk->buf, "Host: h.example:8443\r\n"));
    assert_int_equal(wslink_accept(key, accept), 0);
    size_t n = ws_write_response(resp, sizeof(resp), accept);
    /* An unmasked PING rides behind the 101 (server frames are plain). */
    memcpy(resp + n, "\x89\x01z", 4);
    struct script sc = {resp, 0, 1000}; /* the PING comes with the 101 */
    const char *why = "";
    int rc;
    while ((rc = wslink_client_read(ws, script_read, &sc, &why)) == 0)
        assert_true(sc.off < strlen(resp) || sc.off == 0);
    assert_int_equal(rc, 1);
    nghttp2_session *s = server_session();
    assert_int_equal(wslink_start(ws, s), WSLINK_OK);
    assert_true(wslink_pending(ws)); /* its PONG */
    nghttp2_session_del(s);
    wslink_free(ws);
    /* A wrong accept, and a 404. */
    const char *bad[] = {
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    };
    for (size_t i = 0; i < 2; i++) {
        ws = wslink_new(true);
        assert_int_equal(wslink_client_begin(ws, "h", "/t"), 0);
        struct script b = {bad[i], 0, 5}; /* in small pieces */
        while ((rc = wslink_client_read(ws, script_read, &b, &why)) == 0)
            ;
        assert_int_equal(rc, -EPROTO);
        assert_non_null(strstr(why, i ? "not found (404)" : "not a valid WebSocket 101"));
        wslink_free(ws);
    }
    free(m);
    free(sk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preface_at_every_cut),
        cmocka_unit_test(test_ping_close_and_errors),
        cmocka_unit_test(test_pong_flood_keeps_room_for_close),
        cmocka_unit_test(test_send_through_a_slow_socket),
        cmocka_unit_test(test_client_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
