/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2h1_fuzz.c: libFuzzer harness for proto/h2h1's response translator
 * (an HTTP/1.1 response read into a status, fields and body bytes for
 * HTTP/2) and its request side (fields judged and a request head written).
 *
 * The first input byte picks HEAD or not, the body room and whether the
 * input's end is a close; the rest is the response. It is translated fed
 * whole and fed a byte at a time: both must give the same events' result
 * (verdict, status, body bytes). No step claims more input than it was
 * given, no DATA exceeds the room or points outside the input, fields
 * point into the translator's buffers. The same bytes, split at NULs into
 * name/value pairs, are judged as request fields and those accepted
 * written into a head that must fit and end in CRLF CRLF. Inputs live in
 * exact-size heap copies so ASan sees overreads. Any violation traps.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/h2h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

struct result {
    int status;
    bool end, error;
    uint8_t body[8192];
    size_t blen;
    bool overflow;
};

static struct http1_msg msg;
static uint8_t hb[4096];

static void translate(const uint8_t *p, size_t len, size_t chunk, size_t room, bool head_req,
                      bool eof, struct result *res)
{
    struct h1h2_resp r;
    h1h2_resp_init(&r, hb, sizeof(hb), head_req);
    memset(res, 0, sizeof(*res));
    size_t off = 0;
    for (int guard = 0; guard < 1 << 20 && !res->end && !res->error; guard++) {
        size_t n = len - off < chunk ? len - off : chunk;
        uint8_t *copy = malloc(n ? n : 1);
        if (n)
            memcpy(copy, p + off, n);
        size_t used = 0, dlen = 0;
        const uint8_t *d = NULL;
        enum h1h2_event ev = h1h2_resp_step(&r, copy, n, room, &used, &d, &dlen, &msg);
        CHECK(used <= n);
        if (ev == H1H2_HEAD) {
            res->status = r.status;
            CHECK(r.status >= 200 && r.status <= 999);
            for (unsigned i = 0; i < r.nf; i++)
                CHECK(r.f[i].name >= r.names &&
                      r.f[i].name + r.f[i].nlen <= r.names + sizeof(r.names));
            if (h1h2_resp_done(&r))
                res->end = true;
        } else if (ev == H1H2_INTERIM) {
            CHECK(r.status == 100 && !res->status);
        } else if (ev == H1H2_DATA) {
            CHECK(dlen > 0 && dlen <= room && d >= copy && d + dlen <= copy + n);
            if (res->blen + dlen <= sizeof(res->body))
                memcpy(res->body + res->blen, d, dlen);
            else
                res->overflow = true;
            res->blen += dlen;
        } else if (ev == H1H2_END) {
            res->end = true;
        } else if (ev == H1H2_ERROR) {
            res->error = true;
        }
        free(copy);
        off += used;
        if (ev == H1H2_NEED && used == 0) {
            if (off < len)
                continue;
            if (eof) {
                enum h1h2_event e = h1h2_resp_eof(&r);
                res->end = e == H1H2_END;
                res->error = e == H1H2_ERROR;
            }
            break;
        }
    }
}

static void request_side(const uint8_t *p, size_t len)
{
    static uint8_t fl[8192], out[16384];
    size_t flen = 0;
    size_t i = 0;
    while (i < len) {
        const uint8_t *n = p + i;
        const uint8_t *z = memchr(n, 0, len - i);
        size_t nlen = z ? (size_t)(z - n) : len - i;
        i += nlen + 1;
        const uint8_t *v = i < len ? p + i : n;
        const uint8_t *z2 = i < len ? memchr(v, 0, len - i) : NULL;
        size_t vlen = i < len ? (z2 ? (size_t)(z2 - v) : len - i) : 0;
        i += vlen + 1;
        if (h2h1_field_check(n, nlen, v, vlen) == H2H1_FIELD_OK)
            (void)h2h1_field_add(fl, &flen, sizeof(fl), n, nlen, v, vlen);
    }
    struct h2h1_req r = {"POST", "example.com:80", "/x", fl, flen, len & 1};
    enum h2h1_body kind;
    ssize_t hl = h2h1_request_head(&r, out, sizeof(out), &kind);
    CHECK(hl == HTTP1_E_TOO_LARGE || hl == HTTP1_E_BAD || hl > 0);
    if (hl > 0) {
        CHECK((size_t)hl <= sizeof(out) && hl >= 4);
        CHECK(memcmp(out + hl - 4, "\r\n\r\n", 4) == 0);
        /* a head ferry writes, ferry's own parser takes */
        size_t scanned = 0;
        CHECK(http1_head_end(out, (size_t)hl, sizeof(out), &scanned) == hl);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool head_req = data[0] & 1, eof = data[0] & 2;
    size_t room = (data[0] >> 2) % 8 == 0 ? 1 : (size_t)((data[0] >> 2) * 97);
    static struct result a, b;
    translate(data + 1, size - 1, size, room, head_req, eof, &a);
    translate(data + 1, size - 1, 1, room, head_req, eof, &b);
    CHECK(a.end == b.end && a.error == b.error && a.status == b.status && a.blen == b.blen);
    if (!a.overflow)
        CHECK(memcmp(a.body, b.body, a.blen) == 0);
    request_side(data + 1, size - 1);
    return 0;
}
