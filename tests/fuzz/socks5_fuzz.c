/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5_fuzz.c: libFuzzer harness for the SOCKS5 parsers of proto/socks5.
 *
 * Each input is parsed as a greeting and as a request, and every result is
 * checked against what the bytes say (return <= size, fields consistent with
 * the wire). Then the input is fed the way a socket delivers it: in two
 * chunks split at a point taken from the data, and one byte more at a time.
 * A prefix must parse to "need more" or to the whole input's verdict, and
 * the whole verdict must appear as soon as enough bytes are there. Prefixes
 * are copied to the end of a heap block so ASan sees any read past them.
 * Any violation traps. Linked with only src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* No parser looks past its longest message, so a prefix longer than this
 * must already give the whole input's verdict. */
#define WINDOW (SOCKS5_REQUEST_MAX + 1)

/* ---- greeting --------------------------------------------------------- */

static void check_greeting(const uint8_t *p, size_t len, ssize_t rc,
                           const struct socks5_greeting *g)
{
    CHECK(rc <= (ssize_t)len);
    if (rc < 0) {
        CHECK(rc == SOCKS5_E_VERSION);
        CHECK(len >= 1 && p[0] != SOCKS5_VERSION);
        CHECK(socks5_error_reply(rc) == -1);
        return;
    }
    if (len >= 1)
        CHECK(p[0] == SOCKS5_VERSION);
    if (rc == 0) {
        CHECK(len < 2 || len < 2 + (size_t)p[1]);
        return;
    }
    CHECK((size_t)rc == 2 + (size_t)p[1]);
    CHECK(g->nmethods == p[1]);
    bool want[256];
    memset(want, 0, sizeof(want));
    for (size_t i = 0; i < p[1]; i++)
        want[p[2 + i]] = true;
    for (unsigned m = 0; m < 256; m++)
        CHECK(socks5_offers(g, (uint8_t)m) == want[m]);
}

static bool greeting_equal(const struct socks5_greeting *a, const struct socks5_greeting *b)
{
    return a->nmethods == b->nmethods && memcmp(a->offered, b->offered, sizeof(a->offered)) == 0;
}

/* ---- request ---------------------------------------------------------- */

/* Length of the request starting at p, or 0 while it cannot be known yet. */
static size_t request_total(const uint8_t *p, size_t len)
{
    if (len < 4)
        return 0;
    switch (p[3]) {
    case SOCKS5_ATYP_IPV4:
        return 4 + 4 + 2;
    case SOCKS5_ATYP_IPV6:
        return 4 + 16 + 2;
    case SOCKS5_ATYP_DOMAIN:
        return len < 5 ? 0 : 4 + 1 + (size_t)p[4] + 2;
    default:
        return 0;
    }
}

static bool domain_byte_ok(uint8_t c)
{
    return c > 0x20 && c != 0x7f;
}

static void check_request(const uint8_t *p, size_t len, ssize_t rc, const struct socks5_request *r)
{
    CHECK(rc <= (ssize_t)len);
    if (rc < 0) {
        CHECK(len >= 1);
        switch (rc) {
        case SOCKS5_E_VERSION:
            CHECK(p[0] != SOCKS5_VERSION);
            break;
        case SOCKS5_E_RSV:
            CHECK(p[0] == SOCKS5_VERSION && len >= 3 && p[2] != 0);
            break;
        case SOCKS5_E_ATYP:
            CHECK(p[0] == SOCKS5_VERSION && len >= 4 && p[2] == 0);
            CHECK(p[3] != SOCKS5_ATYP_IPV4 && p[3] != SOCKS5_ATYP_IPV6 &&
                  p[3] != SOCKS5_ATYP_DOMAIN);
            break;
        case SOCKS5_E_DOMAIN: {
            CHECK(p[0] == SOCKS5_VERSION && len >= 5 && p[2] == 0);
            CHECK(p[3] == SOCKS5_ATYP_DOMAIN);
            if (p[4] == 0)
                break;
            /* A non-empty name is judged once complete, and must hold a bad byte. */
            CHECK(len >= request_total(p, len));
            bool bad = false;
            for (size_t i = 0; i < p[4]; i++)
                bad = bad || !domain_byte_ok(p[5 + i]);
            CHECK(bad);
            break;
        }
        default:
            __builtin_trap();
        }
        int rep = socks5_error_reply(rc);
        CHECK(rep == -1 || (rep >= 0 && rep <= SOCKS5_REP_ATYP_NOT_SUPPORTED));
        CHECK((rep == -1) == (rc == SOCKS5_E_VERSION));
        return;
    }
    if (len >= 1)
        CHECK(p[0] == SOCKS5_VERSION);
    if (len >= 3)
        CHECK(p[2] == 0);
    if (rc == 0) {
        size_t total = request_total(p, len);
        CHECK(total == 0 || len < total);
        if (len >= 5 && p[3] == SOCKS5_ATYP_DOMAIN)
            CHECK(p[4] != 0);
        return;
    }

    CHECK((size_t)rc == request_total(p, len));
    CHECK(r->cmd == p[1]);
    CHECK(r->dst.atyp == p[3]);
    size_t alen;
    if (p[3] == SOCKS5_ATYP_DOMAIN) {
        alen = 1 + (size_t)p[4];
        CHECK(r->dst.domain_len == p[4]);
        CHECK(r->dst.domain_len >= 1);
        CHECK(strlen(r->dst.u.domain) == r->dst.domain_len);
        CHECK(memcmp(r->dst.u.domain, p + 5, p[4]) == 0);
        for (size_t i = 0; i < r->dst.domain_len; i++)
            CHECK(domain_byte_ok((uint8_t)r->dst.u.domain[i]));
    } else {
        alen = p[3] == SOCKS5_ATYP_IPV4 ? 4 : 16;
        CHECK(memcmp(r->dst.u.ip, p + 4, alen) == 0);
    }
    CHECK(r->dst.port == (uint16_t)((p[4 + alen] << 8) | p[5 + alen]));
}

static bool request_equal(const struct socks5_request *a, const struct socks5_request *b)
{
    if (a->cmd != b->cmd || a->dst.atyp != b->dst.atyp || a->dst.port != b->dst.port)
        return false;
    if (a->dst.atyp == SOCKS5_ATYP_DOMAIN)
        return a->dst.domain_len == b->dst.domain_len &&
               strcmp(a->dst.u.domain, b->dst.u.domain) == 0;
    return memcmp(a->dst.u.ip, b->dst.u.ip, a->dst.atyp == SOCKS5_ATYP_IPV4 ? 4 : 16) == 0;
}

/* Answer the parsed request the way the server would, and read the reply
 * back: a reply has a request's shape with REP in place of CMD. */
static void check_reply(const struct socks5_request *r, uint8_t rep)
{
    uint8_t out[SOCKS5_REPLY_MAX];
    struct addr a;
    CHECK(socks5_rep_str(rep) != NULL);
    if (!socks5_addr_to_addr(&r->dst, &a)) {
        CHECK(r->dst.atyp == SOCKS5_ATYP_DOMAIN);
        CHECK(socks5_write_reply(out, sizeof(out), rep, NULL) == 10);
        CHECK(out[0] == SOCKS5_VERSION && out[1] == rep && out[3] == SOCKS5_ATYP_IPV4);
        return;
    }
    CHECK(a.port == r->dst.port);
    size_t n = socks5_write_reply(out, sizeof(out), rep, &a);
    CHECK(n == (r->dst.atyp == SOCKS5_ATYP_IPV6 ? 22u : 10u));
    CHECK(socks5_write_reply(out, n - 1, rep, &a) == 0);
    struct socks5_request back;
    CHECK(socks5_parse_request(out, n, &back) == (ssize_t)n);
    CHECK(back.cmd == rep);
    CHECK(back.dst.atyp == r->dst.atyp && back.dst.port == r->dst.port);
    CHECK(memcmp(back.dst.u.ip, r->dst.u.ip, n == 22 ? 16 : 4) == 0);
}

/* ---- feeding ---------------------------------------------------------- */

/* Copy data[0..k) to the end of win[WINDOW] and return where it starts. */
static const uint8_t *tail_copy(uint8_t *win, const uint8_t *data, size_t k)
{
    uint8_t *p = win + WINDOW - k;
    if (k)
        memcpy(p, data, k);
    return p;
}

static void feed_greeting(const uint8_t *data, size_t size, size_t cut, uint8_t *win)
{
    struct socks5_greeting whole, part;
    ssize_t want = socks5_parse_greeting(data, size, &whole);
    check_greeting(data, size, want, &whole);

    size_t lim = size < WINDOW ? size : WINDOW;
    bool decided = false;
    for (size_t k = 0; k <= lim; k++) {
        const uint8_t *p = tail_copy(win, data, k);
        ssize_t got = socks5_parse_greeting(p, k, &part);
        if (got <= 0)
            check_greeting(p, k, got, &part); /* a success must equal the whole, checked */
        if (got == 0) {
            CHECK(!decided);
            CHECK(want <= 0 || (size_t)want > k);
            continue;
        }
        decided = true;
        CHECK(got == want);
        if (got > 0)
            CHECK(greeting_equal(&part, &whole));
    }
    CHECK(decided || (want == 0 && lim == size));

    /* Two chunks: the first alone is "need more" or already the verdict. */
    if (cut <= WINDOW) {
        const uint8_t *p = tail_copy(win, data, cut);
        ssize_t got = socks5_parse_greeting(p, cut, &part);
        CHECK(got == 0 || got == want);
    }
}

static void feed_request(const uint8_t *data, size_t size, size_t cut, uint8_t *win)
{
    struct socks5_request whole, part;
    ssize_t want = socks5_parse_request(data, size, &whole);
    check_request(data, size, want, &whole);
    if (want > 0) {
        check_reply(&whole, (uint8_t)(data[1] % 10));
        /* The client-side writer gives back exactly the bytes parsed. */
        uint8_t out[SOCKS5_REQUEST_MAX];
        CHECK(socks5_write_request(out, sizeof(out), whole.cmd, &whole.dst) == (size_t)want);
        CHECK(memcmp(out, data, (size_t)want) == 0);
    }
    /* A reply has the request's shape: same verdict, REP in CMD's place. */
    struct socks5_reply reply;
    ssize_t as_reply = socks5_parse_reply(data, size, &reply);
    CHECK(as_reply == want);
    if (want > 0) {
        struct socks5_request r2 = {.cmd = reply.rep, .dst = reply.bnd};
        CHECK(request_equal(&r2, &whole));
    }

    size_t lim = size < WINDOW ? size : WINDOW;
    bool decided = false;
    for (size_t k = 0; k <= lim; k++) {
        const uint8_t *p = tail_copy(win, data, k);
        ssize_t got = socks5_parse_request(p, k, &part);
        if (got <= 0)
            check_request(p, k, got, &part);
        if (got == 0) {
            CHECK(!decided);
            CHECK(want <= 0 || (size_t)want > k);
            continue;
        }
        decided = true;
        CHECK(got == want);
        if (got > 0)
            CHECK(request_equal(&part, &whole));
    }
    CHECK(decided || (want == 0 && lim == size));

    if (cut <= WINDOW) {
        const uint8_t *p = tail_copy(win, data, cut);
        ssize_t got = socks5_parse_request(p, cut, &part);
        CHECK(got == 0 || got == want);
        if (got > 0)
            CHECK(request_equal(&part, &whole));
    }
}

static void feed_method(const uint8_t *data, size_t size)
{
    uint8_t m = 0;
    ssize_t rc = socks5_parse_method(data, size, &m);
    if (size >= 1 && data[0] != SOCKS5_VERSION)
        CHECK(rc == SOCKS5_E_VERSION);
    else if (size < 2)
        CHECK(rc == 0);
    else
        CHECK(rc == 2 && m == data[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    /* Where the socket's first read ends: from the first and last bytes,
     * so it moves independently of the message's own fields. */
    size_t cut = size ? ((size_t)data[size - 1] * 31 + data[0]) % (size + 1) : 0;
    feed_greeting(data, size, cut, win);
    feed_method(data, size);
    feed_request(data, size, cut, win);
    free(win);
    return 0;
}
