/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ws_test.c: WebSocket framing and the opening handshake (RFC 6455) as
 * proto/ws reads and writes them: the examples of section 5.7, every cut
 * of a stream, each rule of section 5 the reader enforces (with the close
 * code it asks for), fragmented messages with a control frame between the
 * fragments, the writer read back, and the handshake's checks with the
 * worked example of section 1.3 (Sec-WebSocket-Accept through
 * relay/wslink's OpenSSL SHA-1).
 */
#include "harness.h"

#include "proto/http1.h"
#include "proto/ws.h"
#include "relay/wslink.h"

/* Read the whole stream msg[0..len) fed in pieces of step bytes (from an
 * exact-size heap copy per piece); data goes to out. Returns the last
 * rc (negative: an error), the control opcodes seen in ctls. */
static ssize_t read_all(bool server, const uint8_t *msg, size_t len, size_t step, uint8_t *out,
                        size_t *outlen, int *ctls, size_t *nctl)
{
    struct ws_rx r;
    ws_rx_init(&r, server, 1u << 20);
    *outlen = 0;
    *nctl = 0;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < step ? len - off : step;
        uint8_t *piece = malloc(n);
        assert_non_null(piece);
        memcpy(piece, msg + off, n);
        size_t at = 0;
        while (at < n) {
            size_t data;
            int ctl;
            ssize_t k = ws_rx_read(&r, piece + at, n - at, &data, &ctl);
            if (k < 0) {
                free(piece);
                return k;
            }
            assert_true(k > 0 && data <= (size_t)k);
            memcpy(out + *outlen, piece + at, data);
            *outlen += data;
            if (ctl)
                ctls[(*nctl)++] = ctl;
            at += (size_t)k;
        }
        free(piece);
        off += n;
    }
    return 0;
}

static ssize_t read_one(bool server, const uint8_t *msg, size_t len)
{
    uint8_t out[256];
    int ctls[8];
    size_t outlen, nctl;
    assert_true(len <= sizeof(out));
    return read_all(server, msg, len, len, out, &outlen, ctls, &nctl);
}

/* Section 5.7: "Hello" masked (a client's), as binary here, and a PING. */
static void test_rfc_examples(void **state)
{
    (void)state;
    const uint8_t masked[] = {0x82, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    for (size_t step = 1; step <= sizeof(masked); step++) {
        uint8_t out[16];
        int ctls[4];
        size_t n, nctl;
        assert_int_equal(read_all(true, masked, sizeof(masked), step, out, &n, ctls, &nctl), 0);
        assert_int_equal(n, 5);
        assert_memory_equal(out, "Hello", 5);
        assert_int_equal(nctl, 0);
    }
    /* The unmasked one is a server's: a client reads it, a server refuses it. */
    const uint8_t plain[] = {0x82, 0x05, 'H', 'e', 'l', 'l', 'o'};
    assert_int_equal(read_one(false, plain, sizeof(plain)), 0);
    assert_int_equal(read_one(true, plain, sizeof(plain)), -WS_CLOSE_PROTOCOL);
    assert_int_equal(read_one(false, masked, sizeof(masked)), -WS_CLOSE_PROTOCOL);
    /* A PING with "Hello", then its payload. */
    const uint8_t ping[] = {0x89, 0x05, 'H', 'e', 'l', 'l', 'o'};
    struct ws_rx r;
    ws_rx_init(&r, false, 1u << 20);
    uint8_t buf[sizeof(ping)];
    memcpy(buf, ping, sizeof(ping));
    size_t data;
    int ctl;
    assert_int_equal(ws_rx_read(&r, buf, sizeof(buf), &data, &ctl), (ssize_t)sizeof(ping));
    assert_int_equal(ctl, WS_OP_PING);
    assert_int_equal(data, 0);
    assert_int_equal(r.ctl_len, 5);
    assert_memory_equal(r.ctl, "Hello", 5);
}

/* The rules of section 5, each with its close code. */
static void test_rules(void **state)
{
    (void)state;
    static const struct {
        uint8_t b[16];
        size_t n;
        int want;
    } cases[] = {
        {{0xc2, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_PROTOCOL},         /* RSV1 */
        {{0x83, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_PROTOCOL},         /* opcode 3 */
        {{0x8b, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_PROTOCOL},         /* opcode 0xb */
        {{0x81, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_UNSUPPORTED},      /* text */
        {{0x09, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_PROTOCOL},         /* a fragmented PING */
        {{0x89, 0xfe, 0, 126, 0, 0, 0, 0}, 8, -WS_CLOSE_PROTOCOL}, /* a 126-byte PING */
        {{0x80, 0x80, 0, 0, 0, 0}, 6, -WS_CLOSE_PROTOCOL},         /* a continuation of nothing */
        {{0x82, 0xfe, 0, 125, 0, 0, 0, 0}, 8, -WS_CLOSE_PROTOCOL}, /* 16-bit length < 126 */
        {{0x82, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0}, 14, -WS_CLOSE_PROTOCOL},
        {{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 14, -WS_CLOSE_PROTOCOL},
        {{0x82, 0xff, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0}, 14, -WS_CLOSE_TOO_BIG},
        {{0x88, 0x81, 0, 0, 0, 0, 0x03}, 7, -WS_CLOSE_PROTOCOL},       /* a 1-byte close */
        {{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xed}, 8, -WS_CLOSE_PROTOCOL}, /* close 1005 */
        {{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8}, 8, 0},                  /* close 1000 */
        {{0x88, 0x82, 0, 0, 0, 0, 0x0f, 0xa0}, 8, 0},                  /* close 4000 */
        {{0x82, 0x00}, 2, -WS_CLOSE_PROTOCOL},                         /* unmasked, to a server */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(read_one(true, cases[i].b, cases[i].n), cases[i].want);
    /* A new message inside a fragmented one. */
    const uint8_t nested[] = {0x02, 0x80, 0, 0, 0, 0, 0x82, 0x80, 0, 0, 0, 0};
    assert_int_equal(read_one(true, nested, sizeof(nested)), -WS_CLOSE_PROTOCOL);
}

/* A message in three fragments with a PING and a PONG between them, fed at
 * every piece size: the data is whole, the controls seen in order. */
static void test_fragments(void **state)
{
    (void)state;
    uint8_t msg[64], out[64];
    size_t n = 0;
    const uint8_t key[4] = {1, 2, 3, 4};
    n += ws_frame_header(msg + n, WS_OP_BINARY, 3, key);
    msg[0] &= 0x7f; /* not FIN */
    memcpy(msg + n, "abc", 3);
    ws_mask(msg + n, 3, key, 0);
    n += 3;
    n += ws_control_frame(msg + n, sizeof(msg) - n, WS_OP_PING, (const uint8_t *)"p", 1, key);
    size_t at = n;
    n += ws_frame_header(msg + n, WS_OP_CONT, 2, key);
    msg[at] &= 0x7f;
    memcpy(msg + n, "de", 2);
    ws_mask(msg + n, 2, key, 0);
    n += 2;
    n += ws_control_frame(msg + n, sizeof(msg) - n, WS_OP_PONG, NULL, 0, key);
    n += ws_frame_header(msg + n, WS_OP_CONT, 1, key);
    msg[n] = 'f' ^ key[0];
    n++;
    for (size_t step = 1; step <= n; step++) {
        int ctls[4];
        size_t outlen, nctl;
        assert_int_equal(read_all(true, msg, n, step, out, &outlen, ctls, &nctl), 0);
        assert_int_equal(outlen, 6);
        assert_memory_equal(out, "abcdef", 6);
        assert_int_equal(nctl, 2);
        assert_int_equal(ctls[0], WS_OP_PING);
        assert_int_equal(ctls[1], WS_OP_PONG);
    }
}

/* Headers of each length size, masked and not, read back. */
static void test_writer_round_trip(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 125, 126, 65535, 65536, 70000};
    const uint8_t key[4] = {0xde, 0xad, 0xbe, 0xef};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (int m = 0; m < 2; m++) {
            size_t len = lens[i];
            uint8_t *frame = malloc(WS_HDR_MAX + len + 1), *out = malloc(len + 1);
            assert_true(frame && out);
            size_t h = ws_frame_header(frame, WS_OP_BINARY, len, m ? key : NULL);
            assert_int_equal(h, (len < 126 ? 2 : len < 65536 ? 4 : 10) + (m ? 4 : 0));
            for (size_t k = 0; k < len; k++)
                frame[h + k] = (uint8_t)(k * 7);
            if (m)
                ws_mask(frame + h, len, key, 0);
            int ctls[2];
            size_t outlen, nctl;
            assert_int_equal(read_all(m, frame, h + len, 4096, out, &outlen, ctls, &nctl), 0);
            assert_int_equal(outlen, len);
            for (size_t k = 0; k < len; k++)
                assert_int_equal(out[k], (uint8_t)(k * 7));
            free(frame);
            free(out);
        }
    }
    uint8_t small[8];
    assert_int_equal(ws_control_frame(small, sizeof(small), WS_OP_PING, small, 7, NULL), 0);
}

static int parse_req(const char *text, struct http1_msg *m)
{
    return http1_parse_request((const uint8_t *)text, strlen(text), 8192, m);
}

/* Section 1.3's worked example, and the request's checks. */
static void test_handshake(void **state)
{
    (void)state;
    char accept[32], key[WS_KEY_LEN + 1];
    assert_int_equal(wslink_accept("dGhlIHNhbXBsZSBub25jZQ==", accept), 0);
    assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    struct http1_msg *m = malloc(sizeof(*m));
    assert_non_null(m);
    char req[512];
    assert_true(
        ws_write_request(req, sizeof(req), "h.example", "/tunnel", "dGhlIHNhbXBsZSBub25jZQ=="));
    assert_int_equal(parse_req(req, m), 0);
    assert_int_equal(ws_check_request(m, key), 0);
    assert_string_equal(key, "dGhlIHNhbXBsZSBub25jZQ==");
    assert_int_equal(ws_write_request(req, sizeof(req), "h", "/a b", "k"), 0);
    assert_int_equal(ws_write_request(req, 40, "h", "/a", "k"), 0);
    static const struct {
        const char *text;
        int want;
    } bad[] = {
        {"GET /t HTTP/1.1\r\nHost: h\r\n\r\n", WS_E_NOT_UPGRADE},
        {"POST /t HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
         "Content-Length: 0\r\n\r\n",
         WS_E_BAD},
        {"GET /t HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
         WS_E_BAD},
        {"GET /t HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\nSec-WebSocket-Version: 13\r\n\r\n",
         WS_E_BAD},
        {"GET /t HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\nSec-WebSocket-Version: 13\r\n\r\n",
         WS_E_BAD},
        {"GET /t HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
         WS_E_VERSION},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse_req(bad[i].text, m), 0);
        assert_int_equal(ws_check_request(m, key), bad[i].want);
    }
    /* The 101, ours and others'. */
    char resp[256];
    size_t n = ws_write_response(resp, sizeof(resp), accept);
    assert_true(n);
    assert_int_equal(http1_parse_response((const uint8_t *)resp, n, m), 0);
    assert_int_equal(ws_check_response(m, accept), 0);
    assert_int_equal(ws_check_response(m, "s3pPLMBiTxaQ9kYGzzhZRbK+xOp="), WS_E_ACCEPT);
    const char *r404 = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(http1_parse_response((const uint8_t *)r404, strlen(r404), m), 0);
    assert_int_equal(ws_check_response(m, accept), WS_E_STATUS);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_examples), cmocka_unit_test(test_rules),
        cmocka_unit_test(test_fragments),    cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
