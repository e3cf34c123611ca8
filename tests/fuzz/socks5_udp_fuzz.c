/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5_udp_fuzz.c: libFuzzer harness for the UDP header of RFC 1928
 * section 7 (RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA): socks5_parse_udp
 * and the writer of the relay's replies, socks5_write_udp_header.
 *
 * Each input is parsed whole and compared with a verdict worked out here
 * from the wire format: the header length, or the one error the bytes
 * call for, and fields equal to the bytes. A datagram arrives whole, so a
 * prefix is not "need more" but a shorter datagram: every prefix must give
 * SOCKS5_E_UDP_SHORT or the whole input's verdict, and the whole verdict
 * from the moment the bytes that decide it are there (the parser never
 * looks past the header). The datagram is also cut in two as a relay would
 * see it: the header alone parses as the whole did, and the payload behind
 * it does not change the verdict. A parsed header is written back (by the
 * relay's writer for addresses, by the client's request writer for names)
 * and must give the same bytes; an address made from the input goes through
 * the writer and back through the parser. Inputs are copied to the end of
 * a heap block so ASan sees any read past them. Any violation traps.
 * Linked with only src/proto, util/addr and util/parse.
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

/* The longest header: 4 + 1 + 255 + 2. Any verdict is known within it. */
#define HDR_MAX 262
#define WINDOW  (HDR_MAX + 1)

static bool domain_byte_ok(uint8_t c)
{
    return c > 0x20 && c != 0x7f;
}

/* The verdict on the datagram p[0..len) from the wire format alone; *at is
 * the shortest length with the same verdict (every shorter prefix is
 * SOCKS5_E_UDP_SHORT). */
static ssize_t model(const uint8_t *p, size_t len, size_t *at)
{
    *at = 0;
    if (len < 4)
        return SOCKS5_E_UDP_SHORT;
    *at = 4;
    if (p[0] != 0 || p[1] != 0)
        return SOCKS5_E_RSV;
    if (p[2] != 0)
        return SOCKS5_E_UDP_FRAG;
    size_t total;
    switch (p[3]) {
    case SOCKS5_ATYP_IPV4:
        total = 4 + 4 + 2;
        break;
    case SOCKS5_ATYP_IPV6:
        total = 4 + 16 + 2;
        break;
    case SOCKS5_ATYP_DOMAIN:
        if (len < 5) {
            *at = 0;
            return SOCKS5_E_UDP_SHORT;
        }
        *at = 5;
        if (p[4] == 0)
            return SOCKS5_E_DOMAIN;
        total = 4 + 1 + (size_t)p[4] + 2;
        break;
    default:
        return SOCKS5_E_ATYP;
    }
    if (len < total) {
        *at = 0;
        return SOCKS5_E_UDP_SHORT;
    }
    *at = total;
    if (p[3] == SOCKS5_ATYP_DOMAIN)
        for (size_t i = 0; i < p[4]; i++)
            if (!domain_byte_ok(p[5 + i]))
                return SOCKS5_E_DOMAIN;
    return (ssize_t)total;
}

static bool addr_equal_s5(const struct socks5_addr *a, const struct socks5_addr *b)
{
    if (a->atyp != b->atyp || a->port != b->port)
        return false;
    if (a->atyp == SOCKS5_ATYP_DOMAIN)
        return a->domain_len == b->domain_len && strcmp(a->u.domain, b->u.domain) == 0;
    return memcmp(a->u.ip, b->u.ip, a->atyp == SOCKS5_ATYP_IPV4 ? 4 : 16) == 0;
}

/* A successful parse names what the bytes say. */
static void check_fields(const uint8_t *p, ssize_t rc, const struct socks5_addr *d)
{
    CHECK(d->atyp == p[3]);
    size_t alen;
    if (p[3] == SOCKS5_ATYP_DOMAIN) {
        alen = 1 + (size_t)p[4];
        CHECK(d->domain_len == p[4] && d->domain_len >= 1);
        CHECK(strlen(d->u.domain) == d->domain_len);
        CHECK(memcmp(d->u.domain, p + 5, p[4]) == 0);
    } else {
        alen = p[3] == SOCKS5_ATYP_IPV4 ? 4 : 16;
        CHECK(memcmp(d->u.ip, p + 4, alen) == 0);
    }
    CHECK((size_t)rc == 4 + alen + 2);
    CHECK(d->port == (uint16_t)((p[4 + alen] << 8) | p[5 + alen]));
}

/* Copy data[0..k) to the end of win[WINDOW] and return where it starts. */
static const uint8_t *tail_copy(uint8_t *win, const uint8_t *data, size_t k)
{
    uint8_t *p = win + WINDOW - k;
    if (k)
        memcpy(p, data, k);
    return p;
}

/* Write a parsed header back: the same bytes must come out. */
static void check_write_back(const uint8_t *p, ssize_t rc, const struct socks5_addr *d)
{
    uint8_t out[HDR_MAX + 8];
    struct addr a;
    if (socks5_addr_to_addr(d, &a)) {
        CHECK(a.port == d->port);
        size_t n = socks5_write_udp_header(out, sizeof(out), &a);
        CHECK(n == (size_t)rc);
        CHECK(socks5_udp_header_len(&a) == n);
        CHECK(memcmp(out, p, n) == 0);
        CHECK(socks5_write_udp_header(out, n - 1, &a) == 0);
    } else {
        /* A name: the client's request writer lays out ATYP ADDR PORT the
         * same way behind VER CMD RSV; make those RSV RSV FRAG. */
        CHECK(d->atyp == SOCKS5_ATYP_DOMAIN);
        size_t n = socks5_write_request(out, sizeof(out), 0, d);
        CHECK(n == (size_t)rc);
        out[0] = 0;
        CHECK(memcmp(out, p, n) == 0);
    }
}

/* An address built from the input, written as a reply's header and parsed
 * back, with a payload behind it. */
static void check_writer(const uint8_t *data, size_t size, uint8_t *win)
{
    if (size < 3)
        return;
    struct addr a;
    memset(&a, 0, sizeof(a));
    a.family = (data[0] & 1) ? AF_INET6 : AF_INET;
    a.port = (uint16_t)((data[1] << 8) | data[2]);
    size_t alen = a.family == AF_INET6 ? 16 : 4;
    size_t have = size - 3 < alen ? size - 3 : alen;
    memcpy(a.ip, data + 3, have);
    size_t plen = size - 3 - have;
    if (plen > WINDOW - 22)
        plen = WINDOW - 22;

    uint8_t buf[WINDOW];
    size_t h = socks5_write_udp_header(buf, sizeof(buf), &a);
    CHECK(h == socks5_udp_header_len(&a));
    CHECK(h == (a.family == AF_INET6 ? 22u : 10u));
    CHECK(buf[0] == 0 && buf[1] == 0 && buf[2] == 0);
    memcpy(buf + h, data + 3 + have, plen);

    const uint8_t *p = tail_copy(win, buf, h + plen);
    struct socks5_addr d;
    CHECK(socks5_parse_udp(p, h + plen, &d) == (ssize_t)h);
    struct addr back;
    CHECK(socks5_addr_to_addr(&d, &back));
    CHECK(addr_equal(&back, &a));
    /* Cut anywhere inside the header, it is too short. */
    for (size_t k = 0; k < h; k++)
        CHECK(socks5_parse_udp(tail_copy(win, buf, k), k, &d) == SOCKS5_E_UDP_SHORT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    size_t lim = size < WINDOW ? size : WINDOW;

    /* The whole datagram (data is a block of exactly size bytes). */
    struct socks5_addr whole, part;
    size_t at;
    ssize_t want = model(data, size, &at);
    ssize_t got = socks5_parse_udp(data, size, &whole);
    CHECK(got == want);
    CHECK(got <= (ssize_t)size);
    CHECK(got != 0);
    if (got > 0) {
        check_fields(data, got, &whole);
        check_write_back(data, got, &whole);
    }

    /* Every prefix: too short until the deciding byte, then the verdict. */
    for (size_t k = 0; k <= lim; k++) {
        const uint8_t *p = tail_copy(win, data, k);
        ssize_t r = socks5_parse_udp(p, k, &part);
        if (k < at)
            CHECK(r == SOCKS5_E_UDP_SHORT);
        else
            CHECK(r == want);
        if (r > 0 && want > 0)
            CHECK(addr_equal_s5(&part, &whole));
    }

    /* Split as the relay splits it: the header alone, then the payload
     * behind it, does not change what the header says. */
    if (want > 0) {
        const uint8_t *p = tail_copy(win, data, (size_t)want);
        CHECK(socks5_parse_udp(p, (size_t)want, &part) == want);
        CHECK(addr_equal_s5(&part, &whole));
    }

    check_writer(data, size, win);
    free(win);
    return 0;
}
