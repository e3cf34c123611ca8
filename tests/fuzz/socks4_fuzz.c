/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks4_fuzz.c: libFuzzer harness for the SOCKS4/4a parser and reply
 * writer of proto/socks4.
 *
 * Each input is parsed whole and compared with a verdict worked out here
 * from the wire format (VER CMD PORT IP USERID NUL [HOSTNAME NUL], 4a when
 * IP is 0.0.0.x with x != 0, fields bounded at 255 bytes). Then it is fed
 * the way a socket delivers it: one byte more at a time, and in two chunks
 * split at a point taken from the data. A prefix must parse to "need more"
 * or to the whole input's verdict, and the verdict must appear exactly when
 * enough bytes are there. Prefixes are copied to the end of a heap block so
 * ASan sees any read past them. The reply for the request is written and
 * read back. Any violation traps. Linked with only src/proto, util/addr
 * and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/socks4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* The longest message, plus one: any verdict is known within it. */
#define WINDOW (8 + 2 * (SOCKS4_FIELD_MAX + 1) + 1)

/* The verdict on p[0..len) from the wire format alone; *at is the length
 * at which it becomes known (for "need more": 0). */
static ssize_t model(const uint8_t *p, size_t len, size_t *at)
{
    *at = 0;
    if (len < 1)
        return 0;
    if (p[0] != SOCKS4_VERSION) {
        *at = 1;
        return SOCKS4_E_VERSION;
    }
    if (len < 8)
        return 0;
    /* USERID: up to 255 bytes, then NUL */
    size_t u = 8;
    while (u < len && u < 8 + SOCKS4_FIELD_MAX + 1 && p[u] != 0)
        u++;
    if (u == 8 + SOCKS4_FIELD_MAX + 1) {
        *at = u;
        return SOCKS4_E_FIELD;
    }
    if (u == len)
        return 0;
    bool is4a = p[4] == 0 && p[5] == 0 && p[6] == 0 && p[7] != 0;
    if (!is4a) {
        *at = u + 1;
        return (ssize_t)(u + 1);
    }
    size_t hs = u + 1, h = hs;
    while (h < len && h < hs + SOCKS4_FIELD_MAX + 1 && p[h] != 0)
        h++;
    if (h == hs + SOCKS4_FIELD_MAX + 1) {
        *at = h;
        return SOCKS4_E_FIELD;
    }
    if (h == len)
        return 0;
    *at = h + 1;
    if (h == hs)
        return SOCKS4_E_FIELD;
    for (size_t i = hs; i < h; i++)
        if (p[i] <= 0x20 || p[i] == 0x7f)
            return SOCKS4_E_FIELD;
    return (ssize_t)(h + 1);
}

static void check_request(const uint8_t *p, size_t len, ssize_t rc, const struct socks4_request *r)
{
    size_t at;
    ssize_t want = model(p, len, &at);
    CHECK(rc == want);
    CHECK(rc <= (ssize_t)len);
    if (rc <= 0)
        return;
    CHECK(r->cmd == p[1]);
    CHECK(r->port == (uint16_t)((p[2] << 8) | p[3]));
    CHECK(memcmp(r->ip, p + 4, 4) == 0);
    size_t ul = strlen(r->userid);
    CHECK(ul <= SOCKS4_FIELD_MAX && memcmp(r->userid, p + 8, ul) == 0 && p[8 + ul] == 0);
    size_t hl = strlen(r->host);
    if (socks4_is_4a(r)) {
        CHECK(hl >= 1 && hl <= SOCKS4_FIELD_MAX);
        CHECK(memcmp(r->host, p + 9 + ul, hl) == 0 && p[9 + ul + hl] == 0);
        CHECK((size_t)rc == 8 + ul + 1 + hl + 1);
        for (size_t i = 0; i < hl; i++)
            CHECK((uint8_t)r->host[i] > 0x20 && (uint8_t)r->host[i] != 0x7f);
    } else {
        CHECK(hl == 0);
        CHECK((size_t)rc == 8 + ul + 1);
    }
}

static bool request_equal(const struct socks4_request *a, const struct socks4_request *b)
{
    return a->cmd == b->cmd && a->port == b->port && memcmp(a->ip, b->ip, 4) == 0 &&
           strcmp(a->userid, b->userid) == 0 && strcmp(a->host, b->host) == 0;
}

/* The server's answer to a parsed request, read back. */
static void check_reply(const struct socks4_request *r, uint8_t rep)
{
    uint8_t out[SOCKS4_REPLY_LEN];
    struct addr a;
    memset(&a, 0, sizeof(a));
    a.family = AF_INET;
    a.port = r->port;
    memcpy(a.ip, r->ip, 4);
    CHECK(socks4_write_reply(out, rep, &a) == SOCKS4_REPLY_LEN);
    CHECK(out[0] == 0 && out[1] == rep);
    CHECK(out[2] == (uint8_t)(r->port >> 8) && out[3] == (uint8_t)r->port);
    CHECK(memcmp(out + 4, r->ip, 4) == 0);
    CHECK(socks4_write_reply(out, rep, NULL) == SOCKS4_REPLY_LEN);
    static const uint8_t zeros[6] = {0};
    CHECK(out[0] == 0 && out[1] == rep && memcmp(out + 2, zeros, 6) == 0);
}

/* Copy data[0..k) to the end of win[WINDOW] and return where it starts. */
static const uint8_t *tail_copy(uint8_t *win, const uint8_t *data, size_t k)
{
    uint8_t *p = win + WINDOW - k;
    if (k)
        memcpy(p, data, k);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    struct socks4_request whole, part;
    memset(&whole, 0, sizeof(whole));
    ssize_t want = socks4_parse_request(data, size, &whole);
    check_request(data, size, want, &whole);
    if (want > 0) {
        check_reply(&whole, SOCKS4_GRANTED);
        check_reply(&whole, SOCKS4_REJECTED);
    }
    size_t at;
    (void)model(data, size, &at);

    /* One byte more at a time: "need more" until exactly `at`. */
    size_t lim = size < WINDOW ? size : WINDOW;
    for (size_t k = 0; k <= lim; k++) {
        const uint8_t *p = tail_copy(win, data, k);
        memset(&part, 0x5a, sizeof(part));
        ssize_t got = socks4_parse_request(p, k, &part);
        check_request(p, k, got, &part);
        if (want == 0 || k < at) {
            CHECK(got == 0);
            continue;
        }
        CHECK(got == want);
        if (got > 0)
            CHECK(request_equal(&part, &whole));
    }
    /* Everything is known within WINDOW bytes. */
    if (size >= WINDOW)
        CHECK(want != 0);

    /* Two chunks: the first alone is "need more" or already the verdict. */
    size_t cut = size ? ((size_t)data[size - 1] * 31 + data[0]) % (size + 1) : 0;
    if (cut <= WINDOW) {
        const uint8_t *p = tail_copy(win, data, cut);
        ssize_t got = socks4_parse_request(p, cut, &part);
        CHECK(got == 0 || got == want);
        if (got > 0)
            CHECK(request_equal(&part, &whole));
    }
    free(win);
    return 0;
}
