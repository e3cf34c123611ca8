/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxy_fuzz.c: libFuzzer harness for the PROXY protocol parsers of
 * proto/proxy.
 *
 * The first byte picks the version (odd: v1, even: v2; the seeds use '1'
 * and '2'), the rest is what the socket delivered. The verdict is checked
 * against what the bytes say: a v2 verdict against a plain model of the
 * spec, a v1 success against the line split at its spaces, and a v1 error
 * against what must be in the line for it. A header that parses is written
 * back with the writers and must read back the same. Then the input is fed
 * the way a socket delivers it: every prefix must be "need more" until the
 * verdict and the verdict from then on, so every proper prefix of a complete
 * header is "need more" and exactly the header's bytes give the header; and
 * in two chunks split at a point taken from the data. Prefixes are copied to
 * the end of a heap block so ASan sees any read past them. Any violation
 * traps. Linked with only src/proto, util/addr and util/parse.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* Neither parser looks past its longest header, so a prefix this long must
 * already give the whole input's verdict. */
#define WINDOW (PROXY_V2_MAX + 1)

static bool header_equal(const struct proxy_header *a, const struct proxy_header *b)
{
    return a->local == b->local && memcmp(&a->src, &b->src, sizeof(a->src)) == 0 &&
           memcmp(&a->dst, &b->dst, sizeof(a->dst)) == 0;
}

static bool addr_is_zero(const struct addr *a)
{
    static const struct addr zero;
    return memcmp(a, &zero, sizeof(zero)) == 0;
}

/* The invariants of any successful parse. */
static void check_shape(const struct proxy_header *h)
{
    if (h->local) {
        CHECK(addr_is_zero(&h->src) && addr_is_zero(&h->dst));
        return;
    }
    CHECK(h->src.family == AF_INET || h->src.family == AF_INET6);
    CHECK(h->dst.family == h->src.family);
    CHECK(h->src.pad == 0 && h->dst.pad == 0);
    if (h->src.family == AF_INET) {
        static const uint8_t zero[12];
        CHECK(memcmp(h->src.ip + 4, zero, 12) == 0 && memcmp(h->dst.ip + 4, zero, 12) == 0);
    }
}

/* ---- v2: a model of spec 2.2 ------------------------------------------- */

static ssize_t v2_model(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < PROXY_V2_SIG_LEN && i < len; i++)
        if (p[i] != proxy_v2_sig[i])
            return PROXY_E_SIGNATURE;
    if (len < 13)
        return 0;
    if ((p[12] & 0xf0) != 0x20)
        return PROXY_E_VERSION;
    if (p[12] != 0x20 && p[12] != 0x21)
        return PROXY_E_COMMAND;
    if (len < 14)
        return 0;
    if (p[12] == 0x21 && p[13] != 0x00 && p[13] != 0x11 && p[13] != 0x21)
        return PROXY_E_FAMILY;
    if (len < 16)
        return 0;
    size_t alen = (size_t)p[14] * 256 + p[15];
    if (16 + alen > PROXY_V2_MAX)
        return PROXY_E_TOO_LONG;
    if (p[12] == 0x21 && ((p[13] == 0x11 && alen < 12) || (p[13] == 0x21 && alen < 36)))
        return PROXY_E_ADDRESS;
    return len < 16 + alen ? 0 : (ssize_t)(16 + alen);
}

static void check_v2(const uint8_t *p, size_t len, ssize_t rc, const struct proxy_header *h)
{
    CHECK(rc == v2_model(p, len));
    if (rc <= 0)
        return;
    check_shape(h);
    CHECK(h->local == (p[12] == 0x20 || p[13] == 0x00));
    if (h->local)
        return;
    size_t ipl = p[13] == 0x11 ? 4 : 16;
    CHECK(h->src.family == (ipl == 4 ? AF_INET : AF_INET6));
    const uint8_t *a = p + 16;
    CHECK(memcmp(h->src.ip, a, ipl) == 0 && memcmp(h->dst.ip, a + ipl, ipl) == 0);
    CHECK(h->src.port == (uint16_t)(a[2 * ipl] * 256 + a[2 * ipl + 1]));
    CHECK(h->dst.port == (uint16_t)(a[2 * ipl + 2] * 256 + a[2 * ipl + 3]));
}

/* ---- v1: success against the line split at its spaces ------------------ */

/* Decimal 0-65535 without sign or leading zero; the whole of s[0..n). */
static bool port_ok(const uint8_t *s, size_t n, uint16_t want)
{
    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v <= 65535 && v == want;
}

/* s[0..n) is the text of a, per inet_pton of a's family. */
static bool ip_ok(const uint8_t *s, size_t n, const struct addr *a)
{
    char text[64];
    uint8_t ip[16];
    if (n == 0 || n >= sizeof(text) || memchr(s, '\0', n))
        return false;
    memcpy(text, s, n);
    text[n] = '\0';
    if (inet_pton(a->family, text, ip) != 1)
        return false;
    return memcmp(ip, a->ip, a->family == AF_INET ? 4 : 16) == 0;
}

static void check_v1_success(const uint8_t *p, size_t rc, const struct proxy_header *h)
{
    check_shape(h);
    CHECK(rc >= 15 && rc <= PROXY_V1_MAX);
    CHECK(p[rc - 2] == '\r' && p[rc - 1] == '\n');
    /* Only the final CRLF: no other CR or LF in the line. */
    for (size_t i = 0; i + 2 < rc; i++)
        CHECK(p[i] != '\r' && p[i] != '\n');
    if (memcmp(p, "PROXY UNKNOWN", 13) == 0) {
        CHECK(h->local);
        CHECK(rc == 15 || p[13] == ' ');
        return;
    }
    CHECK(!h->local);
    CHECK(memcmp(p, "PROXY TCP", 9) == 0 && p[10] == ' ');
    CHECK(h->src.family == (p[9] == '4' ? AF_INET : AF_INET6));
    CHECK(p[9] == '4' || p[9] == '6');
    /* Four fields after "PROXY TCPx ", separated by exactly one space. */
    size_t start = 11, field = 0;
    for (size_t i = 11; i <= rc - 2; i++) {
        if (i < rc - 2 && p[i] != ' ')
            continue;
        const uint8_t *f = p + start;
        size_t n = i - start;
        switch (field) {
        case 0:
            CHECK(ip_ok(f, n, &h->src));
            break;
        case 1:
            CHECK(ip_ok(f, n, &h->dst));
            break;
        case 2:
            CHECK(port_ok(f, n, h->src.port));
            break;
        case 3:
            CHECK(port_ok(f, n, h->dst.port));
            break;
        default:
            __builtin_trap();
        }
        field++;
        start = i + 1;
    }
    CHECK(field == 4);
    if (h->src.family == AF_INET) {
        /* Digits, dots and spaces only, and no number (octet or port)
         * with a leading zero, whatever inet_pton() would take. */
        for (size_t i = 11; i < rc - 2; i++) {
            CHECK((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == ' ');
            bool starts = p[i - 1] == '.' || p[i - 1] == ' ';
            CHECK(!(starts && p[i] == '0' && p[i + 1] >= '0' && p[i + 1] <= '9'));
        }
    }
}

static void check_v1(const uint8_t *p, size_t len, ssize_t rc, const struct proxy_header *h)
{
    CHECK(rc <= (ssize_t)len);
    size_t n = len < 5 ? len : 5;
    bool sig = memcmp(p, "PROXY", n) == 0;
    if (rc > 0) {
        CHECK(sig);
        check_v1_success(p, (size_t)rc, h);
        return;
    }
    switch (rc) {
    case 0:
        CHECK(sig && len < PROXY_V1_MAX);
        break;
    case PROXY_E_SIGNATURE:
        CHECK(!sig);
        break;
    case PROXY_E_TOO_LONG:
        /* Any LF before the limit ends the line or breaks it. */
        CHECK(sig && len >= PROXY_V1_MAX && !memchr(p, '\n', PROXY_V1_MAX));
        break;
    case PROXY_E_ADDRESS:
        /* Only the fields of a TCP line hold addresses and ports. */
        CHECK(sig && len > 11 && memcmp(p, "PROXY TCP", 9) == 0);
        break;
    case PROXY_E_SYNTAX:
        CHECK(sig && len > 5);
        break;
    default:
        __builtin_trap(); /* v2 codes never come from v1 */
    }
}

/* ---- both ---------------------------------------------------------------- */

static void check(enum proxy_version v, const uint8_t *p, size_t len, ssize_t rc,
                  const struct proxy_header *h)
{
    CHECK(rc <= (ssize_t)len);
    CHECK(proxy_strerror((int)(rc < 0 ? rc : 0)) != NULL);
    if (v == PROXY_V1)
        check_v1(p, len, rc, h);
    else
        check_v2(p, len, rc, h);
}

/* A parsed header written back reads back the same. */
static void check_round_trip(enum proxy_version v, const uint8_t *p, size_t rc,
                             const struct proxy_header *h)
{
    const struct addr *src = h->local ? NULL : &h->src;
    const struct addr *dst = h->local ? NULL : &h->dst;
    uint8_t out[PROXY_V1_MAX + 64];
    size_t n = v == PROXY_V1 ? proxy_write_v1((char *)out, sizeof(out), src, dst)
                             : proxy_write_v2(out, sizeof(out), src, dst);
    CHECK(n > 0 && n <= (v == PROXY_V1 ? PROXY_V1_MAX : 52));
    CHECK((v == PROXY_V1 ? proxy_write_v1((char *)out, n - 1, src, dst)
                         : proxy_write_v2(out, n - 1, src, dst)) == 0);
    struct proxy_header back;
    CHECK(proxy_parse(v, out, n, &back) == (ssize_t)n);
    CHECK(header_equal(&back, h));
    /* A v2 PROXY header without TLVs is written back byte for byte. */
    if (v == PROXY_V2 && !h->local && rc == n)
        CHECK(memcmp(out, p, n) == 0);
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
    if (size == 0)
        return 0;
    enum proxy_version v = (data[0] & 1) ? PROXY_V1 : PROXY_V2;
    data++;
    size--;

    struct proxy_header whole, part;
    ssize_t want = proxy_parse(v, data, size, &whole);
    check(v, data, size, want, &whole);
    if (want > 0)
        check_round_trip(v, data, (size_t)want, &whole);

    /* The other version's parser refuses it, unless there is nothing yet:
     * no first byte is both 'P' and CR. */
    struct proxy_header other;
    ssize_t alt = proxy_parse(v == PROXY_V1 ? PROXY_V2 : PROXY_V1, data, size, &other);
    CHECK(size == 0 || want == PROXY_E_SIGNATURE || alt == PROXY_E_SIGNATURE);
    CHECK(alt <= (ssize_t)size);

    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    size_t lim = size < WINDOW ? size : WINDOW;
    bool decided = false;
    for (size_t k = 0; k <= lim; k++) {
        const uint8_t *p = tail_copy(win, data, k);
        ssize_t got = proxy_parse(v, p, k, &part);
        if (got <= 0)
            check(v, p, k, got, &part);
        if (want > 0 && k < (size_t)want)
            CHECK(got == 0); /* every proper prefix of a header waits */
        if (got == 0) {
            CHECK(!decided);
            continue;
        }
        decided = true;
        CHECK(got == want);
        if (got > 0)
            CHECK(header_equal(&part, &whole));
    }
    CHECK(decided || (want == 0 && lim == size));
    if (want > 0) {
        /* Exactly the header's bytes give the header. */
        const uint8_t *p = tail_copy(win, data, (size_t)want);
        CHECK(proxy_parse(v, p, (size_t)want, &part) == want);
        CHECK(header_equal(&part, &whole));
    }

    /* Two chunks: the first alone is "need more" or already the verdict.
     * Where the first read ends comes from the last byte, so it moves
     * independently of the header's own fields. */
    size_t cut = size ? ((size_t)data[size - 1] * 31 + size) % (size + 1) : 0;
    if (cut <= WINDOW) {
        const uint8_t *p = tail_copy(win, data, cut);
        ssize_t got = proxy_parse(v, p, cut, &part);
        CHECK(got == 0 || got == want);
        if (got > 0)
            CHECK(header_equal(&part, &whole));
    }
    free(win);
    return 0;
}
