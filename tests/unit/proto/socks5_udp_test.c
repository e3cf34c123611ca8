/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5_udp_test.c: the UDP request header of RFC 1928 section 7
 * (RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA) as proto/socks5 parses and
 * writes it. A datagram arrives whole, so unlike the TCP parsers there is no
 * "need more": every truncation is SOCKS5_E_UDP_SHORT. Every parse runs on
 * an exact-size heap copy so ASan catches a read past the datagram.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "proto/socks5.h"

/* Parse msg[0..len) from an exact-size heap copy, and check the parser did
 * not write to the datagram. */
static ssize_t parse_exact(const uint8_t *msg, size_t len, struct socks5_addr *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks5_parse_udp(copy, len, out);
    if (len)
        assert_memory_equal(copy, msg, len);
    free(copy);
    return rc;
}

/* RSV RSV FRAG ATYP=IPv4 ADDR PORT, then payload. Returns the length. */
static size_t make_v4(uint8_t *out, const char *ip, uint16_t port, const void *payload, size_t n)
{
    out[0] = 0;
    out[1] = 0;
    out[2] = 0;
    out[3] = SOCKS5_ATYP_IPV4;
    assert_int_equal(inet_pton(AF_INET, ip, out + 4), 1);
    out[8] = (uint8_t)(port >> 8);
    out[9] = (uint8_t)(port & 0xff);
    if (n)
        memcpy(out + 10, payload, n);
    return 10 + n;
}

static size_t make_v6(uint8_t *out, const char *ip, uint16_t port, const void *payload, size_t n)
{
    out[0] = 0;
    out[1] = 0;
    out[2] = 0;
    out[3] = SOCKS5_ATYP_IPV6;
    assert_int_equal(inet_pton(AF_INET6, ip, out + 4), 1);
    out[20] = (uint8_t)(port >> 8);
    out[21] = (uint8_t)(port & 0xff);
    if (n)
        memcpy(out + 22, payload, n);
    return 22 + n;
}

/* Domain of nlen raw bytes (not necessarily valid). */
static size_t make_domain(uint8_t *out, const void *name, size_t nlen, uint16_t port,
                          const void *payload, size_t n)
{
    out[0] = 0;
    out[1] = 0;
    out[2] = 0;
    out[3] = SOCKS5_ATYP_DOMAIN;
    out[4] = (uint8_t)nlen;
    if (nlen)
        memcpy(out + 5, name, nlen);
    out[5 + nlen] = (uint8_t)(port >> 8);
    out[6 + nlen] = (uint8_t)(port & 0xff);
    if (n)
        memcpy(out + 7 + nlen, payload, n);
    return 7 + nlen + n;
}

static void set_addr(struct addr *a, int family, const char *ip, uint16_t port)
{
    memset(a, 0, sizeof(*a));
    a->family = (uint8_t)family;
    a->port = port;
    assert_int_equal(inet_pton(family, ip, a->ip), 1);
}

/* ---- parse: well-formed headers ----------------------------------------- */

static void test_parse_ipv4(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_v4(msg, "192.0.2.33", 0xabcd, "hello", 5);
    struct socks5_addr d;
    memset(&d, 0xee, sizeof(d));
    assert_int_equal(parse_exact(msg, len, &d), 10);
    assert_int_equal(d.atyp, SOCKS5_ATYP_IPV4);
    assert_int_equal(d.port, 0xabcd);
    const uint8_t ip[4] = {192, 0, 2, 33};
    assert_memory_equal(d.u.ip, ip, 4);
    /* DATA starts right after the header. */
    assert_memory_equal(msg + 10, "hello", 5);

    struct addr a;
    assert_true(socks5_addr_to_addr(&d, &a));
    assert_int_equal(a.family, AF_INET);
    assert_int_equal(a.port, 0xabcd);
    assert_memory_equal(a.ip, ip, 4);
}

static void test_parse_ipv6(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_v6(msg, "2001:db8::1:2", 53, "x", 1);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), 22);
    assert_int_equal(d.atyp, SOCKS5_ATYP_IPV6);
    assert_int_equal(d.port, 53);
    uint8_t ip[16];
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::1:2", ip), 1);
    assert_memory_equal(d.u.ip, ip, 16);
    assert_int_equal(msg[22], 'x');
}

static void test_parse_domain(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_domain(msg, "example.org", 11, 443, "abc", 3);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), 4 + 1 + 11 + 2);
    assert_int_equal(d.atyp, SOCKS5_ATYP_DOMAIN);
    assert_int_equal(d.domain_len, 11);
    assert_string_equal(d.u.domain, "example.org");
    assert_int_equal(d.port, 443);
    assert_memory_equal(msg + 18, "abc", 3);
    struct addr a;
    assert_false(socks5_addr_to_addr(&d, &a));
}

static void test_parse_domain_one_and_255_bytes(void **state)
{
    (void)state;
    uint8_t msg[300];
    struct socks5_addr d;
    size_t len = make_domain(msg, "a", 1, 1, NULL, 0);
    assert_int_equal(parse_exact(msg, len, &d), 8);
    assert_string_equal(d.u.domain, "a");

    char name[256];
    memset(name, 'z', 255);
    name[255] = '\0';
    len = make_domain(msg, name, 255, 65535, "p", 1);
    assert_int_equal(parse_exact(msg, len, &d), 4 + 1 + 255 + 2);
    assert_int_equal(d.domain_len, 255);
    assert_string_equal(d.u.domain, name);
    assert_int_equal(d.port, 65535);
}

/* The header alone is a valid datagram with an empty payload. */
static void test_parse_zero_length_payload(void **state)
{
    (void)state;
    uint8_t msg[64];
    struct socks5_addr d;
    size_t len = make_v4(msg, "127.0.0.1", 7, NULL, 0);
    assert_int_equal(parse_exact(msg, len, &d), (ssize_t)len);
    len = make_v6(msg, "::1", 7, NULL, 0);
    assert_int_equal(parse_exact(msg, len, &d), (ssize_t)len);
    len = make_domain(msg, "localhost", 9, 7, NULL, 0);
    assert_int_equal(parse_exact(msg, len, &d), (ssize_t)len);
}

/* The returned offset does not depend on the payload's size or bytes (a
 * payload that looks like another header included). */
static void test_parse_data_offset(void **state)
{
    (void)state;
    static uint8_t msg[70000];
    static uint8_t payload[65507];
    struct harness_rng r;
    harness_rng_init(&r, 42);
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)harness_rng_next(&r);
    const size_t sizes[] = {0, 1, 9, 10, 22, 1200, 8192, 65507 - 22};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct socks5_addr d;
        size_t n = sizes[i];
        size_t len = make_v4(msg, "10.1.2.3", 9, payload, n);
        assert_int_equal(parse_exact(msg, len, &d), 10);
        assert_memory_equal(msg + 10, payload, n);
        len = make_v6(msg, "fe80::1", 9, payload, n);
        assert_int_equal(parse_exact(msg, len, &d), 22);
        len = make_domain(msg, "h.example", 9, 9, payload, n);
        assert_int_equal(parse_exact(msg, len, &d), 16);
    }
    /* A payload that is itself a SOCKS UDP header is just data. */
    uint8_t inner[10];
    size_t ilen = make_v4(inner, "1.2.3.4", 5, NULL, 0);
    struct socks5_addr d;
    size_t len = make_v4(msg, "5.6.7.8", 6, inner, ilen);
    assert_int_equal(parse_exact(msg, len, &d), 10);
    assert_int_equal(d.port, 6);
}

/* ---- parse: malformed headers ------------------------------------------- */

/* Every proper prefix of a valid header is SOCKS5_E_UDP_SHORT. */
static void expect_every_prefix_short(const uint8_t *msg, size_t hlen)
{
    for (size_t n = 0; n < hlen; n++) {
        struct socks5_addr d;
        ssize_t rc = parse_exact(msg, n, &d);
        if (rc != SOCKS5_E_UDP_SHORT)
            fail_msg("prefix of %zu of a %zu-byte header: got %zd, want %d", n, hlen, rc,
                     SOCKS5_E_UDP_SHORT);
    }
}

static void test_short_headers(void **state)
{
    (void)state;
    uint8_t msg[300];
    make_v4(msg, "127.0.0.1", 53, NULL, 0);
    expect_every_prefix_short(msg, 10);
    make_v6(msg, "::1", 53, NULL, 0);
    expect_every_prefix_short(msg, 22);
    make_domain(msg, "localhost", 9, 53, NULL, 0);
    expect_every_prefix_short(msg, 16);
    char name[255];
    memset(name, 'q', sizeof(name));
    make_domain(msg, name, 255, 53, NULL, 0);
    expect_every_prefix_short(msg, 262);
}

/* A domain length that runs past the end of the datagram. */
static void test_domain_length_past_end(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_domain(msg, "abcdef", 6, 80, NULL, 0);
    msg[4] = 200;
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_UDP_SHORT);
}

static void test_rsv_nonzero(void **state)
{
    (void)state;
    const uint8_t bad[] = {0x01, 0x80, 0xff};
    for (size_t b = 0; b < 2; b++) {
        for (size_t i = 0; i < sizeof(bad); i++) {
            uint8_t msg[64];
            size_t len = make_v4(msg, "127.0.0.1", 53, "data", 4);
            msg[b] = bad[i];
            struct socks5_addr d;
            assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_RSV);
            /* Judged from the first four bytes: the rest need not be there. */
            assert_int_equal(parse_exact(msg, 4, &d), SOCKS5_E_RSV);
        }
    }
    uint8_t msg[64];
    size_t len = make_v6(msg, "::1", 53, NULL, 0);
    msg[0] = 0xff;
    msg[1] = 0xff;
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_RSV);
}

static void test_frag_nonzero(void **state)
{
    (void)state;
    for (unsigned f = 1; f <= 255; f++) {
        uint8_t msg[64];
        size_t len = make_v4(msg, "127.0.0.1", 53, "data", 4);
        msg[2] = (uint8_t)f;
        struct socks5_addr d;
        assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_UDP_FRAG);
        assert_int_equal(parse_exact(msg, 4, &d), SOCKS5_E_UDP_FRAG);
        len = make_domain(msg, "localhost", 9, 53, NULL, 0);
        msg[2] = (uint8_t)f;
        assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_UDP_FRAG);
    }
}

/* A datagram with both a bad RSV and a FRAG is rejected either way. */
static void test_rsv_and_frag(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_v4(msg, "127.0.0.1", 53, NULL, 0);
    msg[1] = 1;
    msg[2] = 1;
    struct socks5_addr d;
    ssize_t rc = parse_exact(msg, len, &d);
    assert_true(rc == SOCKS5_E_RSV || rc == SOCKS5_E_UDP_FRAG);
}

static void test_unknown_atyp(void **state)
{
    (void)state;
    const uint8_t atyps[] = {0x00, 0x02, 0x05, 0x06, 0x7f, 0xff};
    for (size_t i = 0; i < sizeof(atyps); i++) {
        uint8_t msg[64];
        size_t len = make_v4(msg, "127.0.0.1", 53, "data", 4);
        msg[3] = atyps[i];
        struct socks5_addr d;
        assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_ATYP);
        /* ATYP is the fourth byte: a bare four-byte header already tells. */
        assert_int_equal(parse_exact(msg, 4, &d), SOCKS5_E_ATYP);
    }
}

static void test_empty_domain(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t len = make_domain(msg, NULL, 0, 53, "data", 4);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), SOCKS5_E_DOMAIN);
    /* The zero length byte alone is enough to judge. */
    assert_int_equal(parse_exact(msg, 5, &d), SOCKS5_E_DOMAIN);
}

static void test_control_char_domain(void **state)
{
    (void)state;
    const uint8_t bad[] = {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1f, 0x20, 0x7f};
    for (size_t i = 0; i < sizeof(bad); i++) {
        for (size_t pos = 0; pos < 3; pos++) {
            uint8_t name[3] = {'a', 'b', 'c'};
            name[pos] = bad[i];
            uint8_t msg[64];
            size_t len = make_domain(msg, name, 3, 53, "data", 4);
            struct socks5_addr d;
            ssize_t rc = parse_exact(msg, len, &d);
            if (rc != SOCKS5_E_DOMAIN)
                fail_msg("byte 0x%02x at %zu: got %zd, want %d", bad[i], pos, rc, SOCKS5_E_DOMAIN);
        }
    }
    /* High bytes are not control characters: left to the resolver. */
    uint8_t msg[64];
    const uint8_t utf8[] = {0xc3, 0xa9, 'x'};
    size_t len = make_domain(msg, utf8, 3, 53, NULL, 0);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, len, &d), 10);
}

/* Random datagrams: a result is either an error of the documented set or a
 * header length within the datagram (ASan checks the reads). */
static void test_random_datagrams(void **state)
{
    (void)state;
    struct harness_rng r;
    harness_rng_init(&r, 0x5eed);
    uint8_t msg[300];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = harness_rng_below(&r, sizeof(msg) + 1);
        for (size_t i = 0; i < len; i++)
            msg[i] = (uint8_t)harness_rng_next(&r);
        /* Bias towards headers that get past the first checks. */
        if (len >= 4 && (iter & 1)) {
            msg[0] = msg[1] = msg[2] = 0;
            const uint8_t atyps[] = {1, 3, 4};
            msg[3] = atyps[harness_rng_below(&r, 3)];
            if (msg[3] == SOCKS5_ATYP_DOMAIN && len >= 5) {
                msg[4] = (uint8_t)harness_rng_below(&r, 40);
                for (size_t i = 5; i < len && i < 5u + msg[4]; i++)
                    msg[i] = (uint8_t)('a' + harness_rng_below(&r, 26));
            }
        }
        struct socks5_addr d;
        ssize_t rc = parse_exact(msg, len, &d);
        if (rc > 0) {
            assert_true((size_t)rc <= len);
            assert_true(rc == 10 || rc == 22 || (rc >= 8 && rc <= 262));
        } else {
            assert_true(rc == SOCKS5_E_UDP_SHORT || rc == SOCKS5_E_RSV || rc == SOCKS5_E_UDP_FRAG ||
                        rc == SOCKS5_E_ATYP || rc == SOCKS5_E_DOMAIN);
        }
    }
}

/* ---- write ---------------------------------------------------------------- */

static void test_write_ipv4(void **state)
{
    (void)state;
    struct addr a;
    set_addr(&a, AF_INET, "198.51.100.7", 0x1234);
    assert_int_equal(socks5_udp_header_len(&a), 10);
    uint8_t out[32];
    memset(out, 0xaa, sizeof(out));
    assert_int_equal(socks5_write_udp_header(out, sizeof(out), &a), 10);
    const uint8_t want[] = {0, 0, 0, SOCKS5_ATYP_IPV4, 198, 51, 100, 7, 0x12, 0x34};
    assert_memory_equal(out, want, sizeof(want));
    assert_int_equal(out[10], 0xaa); /* nothing written past the header */
}

static void test_write_ipv6(void **state)
{
    (void)state;
    struct addr a;
    set_addr(&a, AF_INET6, "2001:db8::ff", 65535);
    assert_int_equal(socks5_udp_header_len(&a), 22);
    uint8_t out[32];
    memset(out, 0xaa, sizeof(out));
    assert_int_equal(socks5_write_udp_header(out, sizeof(out), &a), 22);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 0);
    assert_int_equal(out[3], SOCKS5_ATYP_IPV6);
    assert_memory_equal(out + 4, a.ip, 16);
    assert_int_equal(out[20], 0xff);
    assert_int_equal(out[21], 0xff);
    assert_int_equal(out[22], 0xaa);
}

/* Port 0 and the any address are written as they are. */
static void test_write_zero_address(void **state)
{
    (void)state;
    struct addr a;
    set_addr(&a, AF_INET, "0.0.0.0", 0);
    uint8_t out[10];
    assert_int_equal(socks5_write_udp_header(out, sizeof(out), &a), 10);
    const uint8_t want[10] = {0, 0, 0, SOCKS5_ATYP_IPV4, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(out, want, 10);
}

/* A cap one short writes nothing and returns 0; an exact cap suffices. */
static void test_write_small_cap(void **state)
{
    (void)state;
    struct addr v4, v6;
    set_addr(&v4, AF_INET, "127.0.0.1", 80);
    set_addr(&v6, AF_INET6, "::1", 80);
    uint8_t out[32];
    for (size_t cap = 0; cap < 10; cap++) {
        memset(out, 0xaa, sizeof(out));
        assert_int_equal(socks5_write_udp_header(out, cap, &v4), 0);
        for (size_t i = 0; i < sizeof(out); i++)
            assert_int_equal(out[i], 0xaa);
    }
    for (size_t cap = 0; cap < 22; cap++) {
        memset(out, 0xaa, sizeof(out));
        assert_int_equal(socks5_write_udp_header(out, cap, &v6), 0);
        for (size_t i = 0; i < sizeof(out); i++)
            assert_int_equal(out[i], 0xaa);
    }
    /* Exact-size heap buffers: ASan sees any write past cap. */
    uint8_t *b10 = malloc(10);
    uint8_t *b22 = malloc(22);
    assert_non_null(b10);
    assert_non_null(b22);
    assert_int_equal(socks5_write_udp_header(b10, 10, &v4), 10);
    assert_int_equal(socks5_write_udp_header(b22, 22, &v6), 22);
    free(b10);
    free(b22);
}

/* ---- round trip ------------------------------------------------------------ */

static void roundtrip(const struct addr *src, const uint8_t *payload, size_t n)
{
    uint8_t msg[64 + 1500];
    size_t h = socks5_write_udp_header(msg, sizeof(msg), src);
    assert_int_equal(h, socks5_udp_header_len(src));
    memcpy(msg + h, payload, n);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, h + n, &d), (ssize_t)h);
    assert_int_equal(d.atyp, src->family == AF_INET6 ? SOCKS5_ATYP_IPV6 : SOCKS5_ATYP_IPV4);
    struct addr back;
    assert_true(socks5_addr_to_addr(&d, &back));
    assert_true(addr_equal(&back, src));
    assert_memory_equal(msg + h, payload, n);
}

static void test_roundtrip(void **state)
{
    (void)state;
    struct addr a;
    set_addr(&a, AF_INET, "127.0.0.1", 1);
    roundtrip(&a, (const uint8_t *)"ping", 4);
    set_addr(&a, AF_INET6, "::1", 65535);
    roundtrip(&a, (const uint8_t *)"", 0);

    struct harness_rng r;
    harness_rng_init(&r, 7);
    uint8_t payload[1500];
    for (int iter = 0; iter < 2000; iter++) {
        memset(&a, 0, sizeof(a));
        a.family = (iter & 1) ? AF_INET6 : AF_INET;
        a.port = (uint16_t)harness_rng_next(&r);
        for (size_t i = 0; i < (a.family == AF_INET6 ? 16u : 4u); i++)
            a.ip[i] = (uint8_t)harness_rng_next(&r);
        size_t n = harness_rng_below(&r, sizeof(payload) + 1);
        for (size_t i = 0; i < n; i++)
            payload[i] = (uint8_t)harness_rng_next(&r);
        roundtrip(&a, payload, n);
    }
}

/* A header built by the client side's own helper parses back too. */
static void test_roundtrip_from_socks5_addr(void **state)
{
    (void)state;
    struct addr a;
    set_addr(&a, AF_INET6, "fd00::5", 5353);
    struct socks5_addr s;
    socks5_addr_from_addr(&s, &a);
    uint8_t msg[32];
    size_t h = socks5_write_udp_header(msg, sizeof(msg), &a);
    struct socks5_addr d;
    assert_int_equal(parse_exact(msg, h, &d), 22);
    assert_int_equal(d.atyp, s.atyp);
    assert_int_equal(d.port, s.port);
    assert_memory_equal(d.u.ip, s.u.ip, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ipv4),
        cmocka_unit_test(test_parse_ipv6),
        cmocka_unit_test(test_parse_domain),
        cmocka_unit_test(test_parse_domain_one_and_255_bytes),
        cmocka_unit_test(test_parse_zero_length_payload),
        cmocka_unit_test(test_parse_data_offset),
        cmocka_unit_test(test_short_headers),
        cmocka_unit_test(test_domain_length_past_end),
        cmocka_unit_test(test_rsv_nonzero),
        cmocka_unit_test(test_frag_nonzero),
        cmocka_unit_test(test_rsv_and_frag),
        cmocka_unit_test(test_unknown_atyp),
        cmocka_unit_test(test_empty_domain),
        cmocka_unit_test(test_control_char_domain),
        cmocka_unit_test(test_random_datagrams),
        cmocka_unit_test(test_write_ipv4),
        cmocka_unit_test(test_write_ipv6),
        cmocka_unit_test(test_write_zero_address),
        cmocka_unit_test(test_write_small_cap),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_roundtrip_from_socks5_addr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
