/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ws_fuzz.c: libFuzzer harness for proto/ws: WebSocket frames (RFC 6455
 * section 5) read in place, and the opening handshake's checks.
 *
 * The first input byte picks the side (bit 0: a server reading a client's
 * masked frames) and a frame cap (small, so 1009 is reached, or large);
 * the rest is a stream read frame by frame, once whole and once in two
 * chunks cut where the second byte says: both reads agree on the data
 * bytes, the control frames seen and the error. No read claims more than
 * it was given, data never outgrows what was consumed, a control
 * payload is at most 125 bytes, and every error is a close code a peer
 * may be sent. Each frame header the writer makes for the data's length
 * reads back. The same bytes as an HTTP head go through the request and
 * response checks, and a request they accept yields a 24-character key.
 * The stream is copied to the end of a heap block so ASan sees any read
 * past it. Any violation traps. Linked with only src/proto, util/addr and
 * util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http1.h"
#include "proto/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

struct result {
    uint8_t *data;
    size_t len;
    int ctls[64];
    size_t nctl;
    ssize_t err;
};

/* Read s[0..len) in two pieces cut at cut into a fresh reader. */
static void read_stream(bool server, uint64_t cap, const uint8_t *s, size_t len, size_t cut,
                        struct result *out)
{
    struct ws_rx r;
    ws_rx_init(&r, server, cap);
    memset(out, 0, sizeof(*out));
    out->data = malloc(len ? len : 1);
    if (!out->data)
        return;
    size_t pieces[2] = {cut, len - cut}, at = 0;
    for (int k = 0; k < 2 && !out->err; k++) {
        uint8_t *blk = malloc(pieces[k] ? pieces[k] : 1);
        if (!blk)
            return;
        memcpy(blk, s + at, pieces[k]);
        size_t off = 0;
        while (off < pieces[k]) {
            size_t d;
            int ctl;
            ssize_t n = ws_rx_read(&r, blk + off, pieces[k] - off, &d, &ctl);
            if (n < 0) {
                CHECK(n == -WS_CLOSE_PROTOCOL || n == -WS_CLOSE_UNSUPPORTED ||
                      n == -WS_CLOSE_TOO_BIG);
                out->err = n;
                break;
            }
            CHECK(n > 0 && (size_t)n <= pieces[k] - off && d <= (size_t)n);
            memcpy(out->data + out->len, blk + off, d);
            out->len += d;
            if (ctl) {
                CHECK(ctl == WS_OP_CLOSE || ctl == WS_OP_PING || ctl == WS_OP_PONG);
                CHECK(r.ctl_len <= WS_CTRL_MAX);
                if (out->nctl < 64)
                    out->ctls[out->nctl++] = ctl;
            }
            off += (size_t)n;
        }
        free(blk);
        at += pieces[k];
    }
    if (!out->err)
        out->err = r.err; /* found behind data the last call returned */
}

static void check_writer(size_t len, bool mask)
{
    uint8_t hdr[WS_HDR_MAX];
    const uint8_t key[4] = {9, 8, 7, 6};
    size_t h = ws_frame_header(hdr, WS_OP_BINARY, len, mask ? key : NULL);
    CHECK(h >= 2 && h <= WS_HDR_MAX);
    struct ws_rx r;
    ws_rx_init(&r, mask, UINT64_MAX);
    size_t d;
    int ctl;
    CHECK(ws_rx_read(&r, hdr, h, &d, &ctl) == (ssize_t)h && d == 0 && ctl == 0);
    CHECK(r.left == len && r.payload == (len != 0));
}

static void check_handshake(const uint8_t *p, size_t len)
{
    struct http1_msg *m = malloc(sizeof(*m));
    if (!m)
        return;
    char key[WS_KEY_LEN + 1];
    if (http1_parse_request(p, len, 8192, m) == 0 && ws_check_request(m, key) == 0)
        CHECK(strlen(key) == WS_KEY_LEN);
    if (http1_parse_response(p, len, m) == 0 && ws_check_response(m, "x") == 0)
        CHECK(m->status == 101);
    free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    bool server = data[0] & 1;
    uint64_t cap = (data[0] & 2) ? (uint64_t)1 << 20 : (uint64_t)(data[0] >> 2);
    const uint8_t *s = data + 2;
    size_t len = size - 2;
    size_t cut = len ? data[1] % (len + 1) : 0;
    struct result whole, split;
    read_stream(server, cap, s, len, len, &whole);
    read_stream(server, cap, s, len, cut, &split);
    if (whole.data && split.data) {
        CHECK(whole.err == split.err && whole.len == split.len && whole.nctl == split.nctl);
        CHECK(whole.len == 0 || memcmp(whole.data, split.data, whole.len) == 0);
        CHECK(memcmp(whole.ctls, split.ctls, whole.nctl * sizeof(int)) == 0);
    }
    free(whole.data);
    free(split.data);
    check_writer(len * 97, server);
    check_handshake(s, len);
    return 0;
}
