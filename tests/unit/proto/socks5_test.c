/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5_test.c: the RFC 1928 parsers and writers of proto/socks5, held to
 * the contract in socks5.h: > 0 consumed, 0 need more, < 0 SOCKS5_E_*.
 * Every message is also fed one byte at a time, because that is how a slow
 * client delivers it.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "proto/socks5.h"

/* Build VER CMD RSV ATYP=DOMAIN LEN NAME PORT into out; returns its length. */
static size_t make_domain_request(uint8_t *out, uint8_t cmd, const uint8_t *name, size_t len,
                                  uint16_t port)
{
    out[0] = SOCKS5_VERSION;
    out[1] = cmd;
    out[2] = 0;
    out[3] = SOCKS5_ATYP_DOMAIN;
    out[4] = (uint8_t)len;
    memcpy(out + 5, name, len);
    out[5 + len] = (uint8_t)(port >> 8);
    out[6 + len] = (uint8_t)(port & 0xff);
    return 7 + len;
}

/* Parse msg[0..len) from an exact-size heap copy, so ASan sees any read past
 * len (a stack or static array would hide it). */
static ssize_t parse_request_exact(const uint8_t *msg, size_t len, struct socks5_request *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks5_parse_request(copy, len, out);
    free(copy);
    return rc;
}

static ssize_t parse_greeting_exact(const uint8_t *msg, size_t len, struct socks5_greeting *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks5_parse_greeting(copy, len, out);
    free(copy);
    return rc;
}

/* ---- greeting --------------------------------------------------------- */

static void test_greeting_zero_methods(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, 0};
    struct socks5_greeting g;
    assert_int_equal(socks5_parse_greeting(msg, sizeof(msg), &g), 2);
    assert_int_equal(g.nmethods, 0);
    for (unsigned m = 0; m < 256; m++)
        assert_false(socks5_offers(&g, (uint8_t)m));
}

static void test_greeting_one_method(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, 1, SOCKS5_METHOD_NONE};
    struct socks5_greeting g;
    assert_int_equal(parse_greeting_exact(msg, sizeof(msg), &g), 3);
    assert_int_equal(g.nmethods, 1);
    assert_true(socks5_offers(&g, SOCKS5_METHOD_NONE));
    assert_false(socks5_offers(&g, SOCKS5_METHOD_GSSAPI));
    assert_false(socks5_offers(&g, SOCKS5_METHOD_USERPASS));
    assert_false(socks5_offers(&g, SOCKS5_METHOD_NO_ACCEPTABLE));
}

static void test_greeting_255_methods(void **state)
{
    (void)state;
    uint8_t msg[SOCKS5_GREETING_MAX];
    msg[0] = 5;
    msg[1] = 255;
    /* Methods 255, 254, ... 1: every value except 0, covering all four
     * words of the bitmap including bit 63 of the last. */
    for (unsigned i = 0; i < 255; i++)
        msg[2 + i] = (uint8_t)(255 - i);
    struct socks5_greeting g;
    assert_int_equal(parse_greeting_exact(msg, sizeof(msg), &g), SOCKS5_GREETING_MAX);
    assert_int_equal(g.nmethods, 255);
    assert_false(socks5_offers(&g, 0));
    for (unsigned m = 1; m < 256; m++)
        assert_true(socks5_offers(&g, (uint8_t)m));
}

static void test_greeting_offers_duplicates_and_edges(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, 5, 0x02, 0x02, 0x3f, 0x40, 0xff};
    struct socks5_greeting g;
    assert_int_equal(socks5_parse_greeting(msg, sizeof(msg), &g), 7);
    assert_int_equal(g.nmethods, 5);
    const uint8_t yes[] = {0x02, 0x3f, 0x40, 0xff};
    for (size_t i = 0; i < sizeof(yes); i++)
        assert_true(socks5_offers(&g, yes[i]));
    unsigned count = 0;
    for (unsigned m = 0; m < 256; m++)
        count += socks5_offers(&g, (uint8_t)m);
    assert_int_equal(count, 4);
}

static void test_greeting_bad_version(void **state)
{
    (void)state;
    const uint8_t v4[] = {4, 1, 0};
    struct socks5_greeting g;
    /* Judged on the first byte alone: no need to wait for more. */
    for (size_t len = 1; len <= sizeof(v4); len++)
        assert_int_equal(parse_greeting_exact(v4, len, &g), SOCKS5_E_VERSION);
    const uint8_t bad[] = {0x00, 0x01, 0x06, 0x16 /* TLS */, 'G' /* HTTP */, 0xff};
    for (size_t i = 0; i < sizeof(bad); i++)
        assert_int_equal(parse_greeting_exact(&bad[i], 1, &g), SOCKS5_E_VERSION);
    assert_int_equal(socks5_error_reply(SOCKS5_E_VERSION), -1);
}

static void test_greeting_truncated(void **state)
{
    (void)state;
    uint8_t msg[SOCKS5_GREETING_MAX];
    struct socks5_greeting g;
    const unsigned counts[] = {0, 1, 3, 255};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t total = 2 + counts[c];
        msg[0] = 5;
        msg[1] = (uint8_t)counts[c];
        for (size_t i = 0; i < counts[c]; i++)
            msg[2 + i] = (uint8_t)i;
        for (size_t len = 0; len < total; len++)
            assert_int_equal(parse_greeting_exact(msg, len, &g), 0);
        assert_int_equal(parse_greeting_exact(msg, total, &g), (ssize_t)total);
    }
}

static void test_greeting_trailing_bytes(void **state)
{
    (void)state;
    /* A client that pipelines its request right behind the greeting. */
    const uint8_t msg[] = {5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80};
    struct socks5_greeting g;
    assert_int_equal(socks5_parse_greeting(msg, sizeof(msg), &g), 3);
    assert_true(socks5_offers(&g, 0));
    assert_false(socks5_offers(&g, 5));
    assert_false(socks5_offers(&g, 1));
}

/* ---- request ---------------------------------------------------------- */

static void test_request_ipv4(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, SOCKS5_CMD_CONNECT, 0, SOCKS5_ATYP_IPV4, 192, 0, 2, 7, 0x1f, 0x90};
    struct socks5_request r;
    assert_int_equal(parse_request_exact(msg, sizeof(msg), &r), 10);
    assert_int_equal(r.cmd, SOCKS5_CMD_CONNECT);
    assert_int_equal(r.dst.atyp, SOCKS5_ATYP_IPV4);
    assert_int_equal(r.dst.port, 8080);
    const uint8_t ip[] = {192, 0, 2, 7};
    assert_memory_equal(r.dst.u.ip, ip, 4);
}

static void test_request_ipv6(void **state)
{
    (void)state;
    uint8_t msg[22] = {5, SOCKS5_CMD_CONNECT, 0, SOCKS5_ATYP_IPV6};
    uint8_t ip[16];
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::1:2", ip), 1);
    memcpy(msg + 4, ip, 16);
    msg[20] = 0x01;
    msg[21] = 0xbb;
    struct socks5_request r;
    assert_int_equal(parse_request_exact(msg, sizeof(msg), &r), 22);
    assert_int_equal(r.cmd, SOCKS5_CMD_CONNECT);
    assert_int_equal(r.dst.atyp, SOCKS5_ATYP_IPV6);
    assert_int_equal(r.dst.port, 443);
    assert_memory_equal(r.dst.u.ip, ip, 16);
}

static void test_request_domain_one_byte(void **state)
{
    (void)state;
    uint8_t msg[SOCKS5_REQUEST_MAX];
    size_t n = make_domain_request(msg, SOCKS5_CMD_CONNECT, (const uint8_t *)"a", 1, 53);
    assert_int_equal(n, 8);
    struct socks5_request r;
    assert_int_equal(parse_request_exact(msg, n, &r), 8);
    assert_int_equal(r.dst.atyp, SOCKS5_ATYP_DOMAIN);
    assert_int_equal(r.dst.domain_len, 1);
    assert_string_equal(r.dst.u.domain, "a");
    assert_int_equal(r.dst.port, 53);
}

static void test_request_domain_255_bytes(void **state)
{
    (void)state;
    uint8_t name[255];
    for (size_t i = 0; i < sizeof(name); i++)
        name[i] = (i % 64 == 63) ? '.' : (uint8_t)('a' + i % 26);
    uint8_t msg[SOCKS5_REQUEST_MAX];
    size_t n = make_domain_request(msg, SOCKS5_CMD_CONNECT, name, sizeof(name), 65535);
    assert_int_equal(n, SOCKS5_REQUEST_MAX);
    struct socks5_request r;
    assert_int_equal(parse_request_exact(msg, n, &r), SOCKS5_REQUEST_MAX);
    assert_int_equal(r.dst.domain_len, 255);
    assert_int_equal(strlen(r.dst.u.domain), 255);
    assert_memory_equal(r.dst.u.domain, name, 255);
    assert_int_equal(r.dst.port, 65535);
}

static void test_request_domain_printable_edges(void **state)
{
    (void)state;
    /* 0x21 and 0x7e are the printable edges; both are accepted. */
    const char *names[] = {"!", "~", "xn--bcher-kva.example", "under_score-dash.9"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        uint8_t msg[SOCKS5_REQUEST_MAX];
        size_t len = strlen(names[i]);
        size_t n = make_domain_request(msg, 1, (const uint8_t *)names[i], len, 80);
        struct socks5_request r;
        assert_int_equal(parse_request_exact(msg, n, &r), (ssize_t)n);
        assert_string_equal(r.dst.u.domain, names[i]);
        assert_int_equal(r.dst.domain_len, len);
    }
}

static void test_request_port_byte_order(void **state)
{
    (void)state;
    const uint16_t ports[] = {0, 1, 255, 256, 0x0102, 0x8000, 0xff00, 0xffff};
    for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
        /* Network byte order on the wire: most significant byte first. */
        uint8_t msg[] = {5, 1, 0, 1, 10, 0, 0, 1, (uint8_t)(ports[i] >> 8), (uint8_t)ports[i]};
        struct socks5_request r;
        assert_int_equal(socks5_parse_request(msg, sizeof(msg), &r), 10);
        assert_int_equal(r.dst.port, ports[i]);
    }
}

static void test_request_bad_version(void **state)
{
    (void)state;
    const uint8_t msg[] = {4, 1, 0, 1, 10, 0, 0, 1, 0, 80};
    struct socks5_request r;
    for (size_t len = 1; len <= sizeof(msg); len++)
        assert_int_equal(parse_request_exact(msg, len, &r), SOCKS5_E_VERSION);
    assert_int_equal(parse_request_exact(msg, 0, &r), 0);
}

static void test_request_rsv_nonzero(void **state)
{
    (void)state;
    const uint8_t rsv[] = {1, 0x80, 0xff};
    struct socks5_request r;
    for (size_t i = 0; i < sizeof(rsv); i++) {
        const uint8_t msg[] = {5, 1, rsv[i], 1, 10, 0, 0, 1, 0, 80};
        assert_int_equal(parse_request_exact(msg, 2, &r), 0);
        /* Decided as soon as byte 3 (RSV) arrives. */
        for (size_t len = 3; len <= sizeof(msg); len++)
            assert_int_equal(parse_request_exact(msg, len, &r), SOCKS5_E_RSV);
    }
    assert_int_equal(socks5_error_reply(SOCKS5_E_RSV), SOCKS5_REP_GENERAL_FAILURE);
}

static void test_request_unknown_atyp(void **state)
{
    (void)state;
    struct socks5_request r;
    for (unsigned atyp = 0; atyp < 256; atyp++) {
        if (atyp == SOCKS5_ATYP_IPV4 || atyp == SOCKS5_ATYP_IPV6 || atyp == SOCKS5_ATYP_DOMAIN)
            continue;
        const uint8_t msg[] = {5, 1, 0, (uint8_t)atyp, 10, 0, 0, 1, 0, 80};
        assert_int_equal(parse_request_exact(msg, 3, &r), 0);
        /* Decided as soon as byte 4 (ATYP) arrives. */
        for (size_t len = 4; len <= sizeof(msg); len++)
            assert_int_equal(parse_request_exact(msg, len, &r), SOCKS5_E_ATYP);
    }
    assert_int_equal(socks5_error_reply(SOCKS5_E_ATYP), SOCKS5_REP_ATYP_NOT_SUPPORTED);
}

static void test_request_empty_domain(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, 1, 0, SOCKS5_ATYP_DOMAIN, 0, 0, 80};
    struct socks5_request r;
    assert_int_equal(parse_request_exact(msg, 4, &r), 0);
    for (size_t len = 5; len <= sizeof(msg); len++)
        assert_int_equal(parse_request_exact(msg, len, &r), SOCKS5_E_DOMAIN);
    assert_int_equal(socks5_error_reply(SOCKS5_E_DOMAIN), SOCKS5_REP_GENERAL_FAILURE);
}

static void test_request_domain_bad_bytes(void **state)
{
    (void)state;
    const uint8_t bad[] = {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x1f, ' ', 0x7f};
    const size_t where[] = {0, 3, 6}; /* first, middle and last byte of "example" */
    for (size_t b = 0; b < sizeof(bad); b++) {
        for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
            uint8_t name[] = "example";
            name[where[w]] = bad[b];
            uint8_t msg[SOCKS5_REQUEST_MAX];
            size_t n = make_domain_request(msg, 1, name, 7, 80);
            struct socks5_request r;
            assert_int_equal(parse_request_exact(msg, n, &r), SOCKS5_E_DOMAIN);
            /* The same with bytes following: still an error. */
            msg[n] = 0x41;
            assert_int_equal(parse_request_exact(msg, n + 1, &r), SOCKS5_E_DOMAIN);
        }
    }
}

static void test_request_any_cmd_parses(void **state)
{
    (void)state;
    for (unsigned cmd = 0; cmd < 256; cmd++) {
        const uint8_t msg[] = {5, (uint8_t)cmd, 0, 1, 127, 0, 0, 1, 0, 22};
        struct socks5_request r;
        assert_int_equal(socks5_parse_request(msg, sizeof(msg), &r), 10);
        assert_int_equal(r.cmd, cmd);
        assert_int_equal(r.dst.port, 22);
    }
}

static void test_request_trailing_bytes(void **state)
{
    (void)state;
    /* The request followed by the first bytes of the client's payload. */
    uint8_t msg[64];
    size_t n = make_domain_request(msg, 1, (const uint8_t *)"example.org", 11, 80);
    memcpy(msg + n, "GET / HTTP/1.1\r\n", 16);
    struct socks5_request r;
    assert_int_equal(socks5_parse_request(msg, n + 16, &r), (ssize_t)n);
    assert_string_equal(r.dst.u.domain, "example.org");
    assert_int_equal(r.dst.port, 80);

    const uint8_t v4[] = {5, 1, 0, 1, 10, 1, 2, 3, 0, 80, 5, 1, 0, 1};
    assert_int_equal(socks5_parse_request(v4, sizeof(v4), &r), 10);
}

static void test_request_truncated(void **state)
{
    (void)state;
    uint8_t v6[22] = {5, 1, 0, SOCKS5_ATYP_IPV6};
    v6[19] = 1;
    uint8_t dom[SOCKS5_REQUEST_MAX];
    size_t ndom = make_domain_request(dom, 1, (const uint8_t *)"example.com", 11, 443);
    const uint8_t v4[] = {5, 1, 0, 1, 10, 0, 0, 1, 0, 80};
    const struct {
        const uint8_t *p;
        size_t n;
    } msgs[] = {{v4, sizeof(v4)}, {v6, sizeof(v6)}, {dom, ndom}};
    for (size_t m = 0; m < sizeof(msgs) / sizeof(msgs[0]); m++) {
        struct socks5_request r;
        for (size_t len = 0; len < msgs[m].n; len++)
            assert_int_equal(parse_request_exact(msgs[m].p, len, &r), 0);
        assert_int_equal(parse_request_exact(msgs[m].p, msgs[m].n, &r), (ssize_t)msgs[m].n);
    }
}

/* Feed msg one byte more at a time. Every prefix must say "need more" until
 * the verdict, and from then on every longer prefix must give that same
 * verdict (and, when it is a success, the same parsed request). */
static void check_incremental_request(const uint8_t *msg, size_t n)
{
    struct socks5_request whole, part;
    memset(&whole, 0xa5, sizeof(whole));
    ssize_t want = parse_request_exact(msg, n, &whole);
    assert_int_not_equal(want, 0);
    bool decided = false;
    for (size_t len = 0; len <= n; len++) {
        memset(&part, 0x5a, sizeof(part));
        ssize_t got = parse_request_exact(msg, len, &part);
        if (!decided && got == 0)
            continue;
        decided = true;
        assert_int_equal(got, want);
        if (want > 0) {
            assert_int_equal(part.cmd, whole.cmd);
            assert_int_equal(part.dst.atyp, whole.dst.atyp);
            assert_int_equal(part.dst.port, whole.dst.port);
            assert_int_equal(part.dst.domain_len, whole.dst.domain_len);
            if (whole.dst.atyp == SOCKS5_ATYP_DOMAIN)
                assert_string_equal(part.dst.u.domain, whole.dst.u.domain);
            else
                assert_memory_equal(part.dst.u.ip, whole.dst.u.ip, 16);
        }
    }
    assert_true(decided);
}

static void test_request_incremental_matches_whole(void **state)
{
    (void)state;
    uint8_t buf[SOCKS5_REQUEST_MAX + 4];
    const uint8_t v4[] = {5, 1, 0, 1, 10, 0, 0, 1, 0x12, 0x34, 0xee};
    check_incremental_request(v4, sizeof(v4));
    uint8_t v6[24] = {5, 3, 0, SOCKS5_ATYP_IPV6, 0xfe, 0x80};
    v6[19] = 9;
    v6[20] = 0xab;
    v6[21] = 0xcd;
    check_incremental_request(v6, sizeof(v6));
    size_t n = make_domain_request(buf, 1, (const uint8_t *)"example.net", 11, 8443);
    check_incremental_request(buf, n);
    uint8_t name[255];
    memset(name, 'z', sizeof(name));
    n = make_domain_request(buf, 2, name, sizeof(name), 1);
    check_incremental_request(buf, n);

    /* Errors: each is announced at one length and kept from then on. */
    const uint8_t bad_ver[] = {6, 1, 0, 1, 10, 0, 0, 1, 0, 80};
    check_incremental_request(bad_ver, sizeof(bad_ver));
    const uint8_t bad_rsv[] = {5, 1, 2, 1, 10, 0, 0, 1, 0, 80};
    check_incremental_request(bad_rsv, sizeof(bad_rsv));
    const uint8_t bad_atyp[] = {5, 1, 0, 2, 10, 0, 0, 1, 0, 80};
    check_incremental_request(bad_atyp, sizeof(bad_atyp));
    const uint8_t empty_dom[] = {5, 1, 0, 3, 0, 0, 80};
    check_incremental_request(empty_dom, sizeof(empty_dom));
    n = make_domain_request(buf, 1, (const uint8_t *)"ex ample", 8, 80);
    check_incremental_request(buf, n);
}

static void test_greeting_incremental_matches_whole(void **state)
{
    (void)state;
    const uint8_t msg[] = {5, 3, 0, 2, 0x80, 0x99};
    struct socks5_greeting whole, part;
    ssize_t want = socks5_parse_greeting(msg, sizeof(msg), &whole);
    assert_int_equal(want, 5);
    for (size_t len = 0; len <= sizeof(msg); len++) {
        ssize_t got = parse_greeting_exact(msg, len, &part);
        if (len < 5) {
            assert_int_equal(got, 0);
            continue;
        }
        assert_int_equal(got, want);
        assert_int_equal(part.nmethods, whole.nmethods);
        assert_memory_equal(part.offered, whole.offered, sizeof(whole.offered));
    }
}

/* ---- replies ---------------------------------------------------------- */

static void test_error_reply_mapping(void **state)
{
    (void)state;
    assert_int_equal(socks5_error_reply(SOCKS5_E_VERSION), -1);
    assert_int_equal(socks5_error_reply(SOCKS5_E_RSV), SOCKS5_REP_GENERAL_FAILURE);
    assert_int_equal(socks5_error_reply(SOCKS5_E_ATYP), SOCKS5_REP_ATYP_NOT_SUPPORTED);
    assert_int_equal(socks5_error_reply(SOCKS5_E_DOMAIN), SOCKS5_REP_GENERAL_FAILURE);
    /* Not a parse error at all: nothing to send. */
    assert_int_equal(socks5_error_reply(-99), -1);
    assert_int_equal(socks5_error_reply(0), -1);
    assert_int_equal(socks5_error_reply(10), -1);
}

static void test_write_method(void **state)
{
    (void)state;
    uint8_t out[2] = {0xaa, 0xaa};
    assert_int_equal(socks5_write_method(out, SOCKS5_METHOD_NONE), 2);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], 0);
    assert_int_equal(socks5_write_method(out, SOCKS5_METHOD_NO_ACCEPTABLE), 2);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], 0xff);
}

static void test_write_reply_ipv4(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("192.0.2.10:443", -1, &a), 0);
    uint8_t out[SOCKS5_REPLY_MAX];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks5_write_reply(out, sizeof(out), SOCKS5_REP_SUCCEEDED, &a), 10);
    const uint8_t want[] = {5, 0, 0, 1, 192, 0, 2, 10, 0x01, 0xbb};
    assert_memory_equal(out, want, sizeof(want));
    assert_int_equal(out[10], 0xee); /* nothing written past the reply */
}

static void test_write_reply_ipv6(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("[2001:db8::5]:1080", -1, &a), 0);
    uint8_t out[SOCKS5_REPLY_MAX + 2];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks5_write_reply(out, sizeof(out), SOCKS5_REP_HOST_UNREACHABLE, &a), 22);
    assert_int_equal(out[0], 5);
    assert_int_equal(out[1], SOCKS5_REP_HOST_UNREACHABLE);
    assert_int_equal(out[2], 0);
    assert_int_equal(out[3], SOCKS5_ATYP_IPV6);
    assert_memory_equal(out + 4, a.ip, 16);
    assert_int_equal(out[20], 1080 >> 8);
    assert_int_equal(out[21], 1080 & 0xff);
    assert_int_equal(out[22], 0xee);
}

static void test_write_reply_null_and_unset(void **state)
{
    (void)state;
    const uint8_t want[] = {5, SOCKS5_REP_CONNECTION_REFUSED, 0, 1, 0, 0, 0, 0, 0, 0};
    uint8_t out[SOCKS5_REPLY_MAX];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks5_write_reply(out, sizeof(out), SOCKS5_REP_CONNECTION_REFUSED, NULL), 10);
    assert_memory_equal(out, want, sizeof(want));

    /* An unset address (family 0) is written as 0.0.0.0:0 too. */
    struct addr unset;
    memset(&unset, 0, sizeof(unset));
    unset.port = 9999;
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks5_write_reply(out, sizeof(out), SOCKS5_REP_CONNECTION_REFUSED, &unset),
                     10);
    assert_memory_equal(out, want, sizeof(want));
}

static void test_write_reply_cap_too_small(void **state)
{
    (void)state;
    struct addr v4, v6;
    assert_int_equal(addr_parse("10.0.0.1:80", -1, &v4), 0);
    assert_int_equal(addr_parse("[::1]:80", -1, &v6), 0);
    uint8_t out[SOCKS5_REPLY_MAX];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks5_write_reply(out, 9, 0, &v4), 0);
    assert_int_equal(socks5_write_reply(out, 9, 0, NULL), 0);
    assert_int_equal(socks5_write_reply(out, 0, 0, NULL), 0);
    assert_int_equal(socks5_write_reply(out, 21, 0, &v6), 0);
    for (size_t i = 0; i < sizeof(out); i++)
        assert_int_equal(out[i], 0xee); /* nothing was written */
    /* Exactly enough is enough. */
    assert_int_equal(socks5_write_reply(out, 10, 0, &v4), 10);
    assert_int_equal(socks5_write_reply(out, 22, 0, &v6), 22);
}

static void test_write_reply_parses_back(void **state)
{
    (void)state;
    /* A reply has the shape of a request with REP in place of CMD. */
    const char *addrs[] = {"203.0.113.9:65535", "[fe80::1:2:3]:1"};
    for (size_t i = 0; i < 2; i++) {
        struct addr a, back;
        assert_int_equal(addr_parse(addrs[i], -1, &a), 0);
        uint8_t out[SOCKS5_REPLY_MAX];
        size_t n = socks5_write_reply(out, sizeof(out), SOCKS5_REP_TTL_EXPIRED, &a);
        struct socks5_request r;
        assert_int_equal(socks5_parse_request(out, n, &r), (ssize_t)n);
        assert_int_equal(r.cmd, SOCKS5_REP_TTL_EXPIRED);
        assert_true(socks5_addr_to_addr(&r.dst, &back));
        assert_true(addr_equal(&a, &back));
    }
}

static void test_addr_to_addr(void **state)
{
    (void)state;
    struct socks5_addr s;
    struct addr a;
    char text[ADDR_STRLEN];

    memset(&s, 0, sizeof(s));
    s.atyp = SOCKS5_ATYP_IPV4;
    s.port = 8080;
    memcpy(s.u.ip, (const uint8_t[]){198, 51, 100, 1}, 4);
    assert_true(socks5_addr_to_addr(&s, &a));
    assert_int_equal(a.family, AF_INET);
    assert_string_equal(addr_format(&a, text, sizeof(text)), "198.51.100.1:8080");

    memset(&s, 0, sizeof(s));
    s.atyp = SOCKS5_ATYP_IPV6;
    s.port = 443;
    s.u.ip[0] = 0x20;
    s.u.ip[1] = 0x01;
    s.u.ip[2] = 0x0d;
    s.u.ip[3] = 0xb8;
    s.u.ip[15] = 0x42;
    assert_true(socks5_addr_to_addr(&s, &a));
    assert_int_equal(a.family, AF_INET6);
    assert_string_equal(addr_format(&a, text, sizeof(text)), "[2001:db8::42]:443");

    memset(&s, 0, sizeof(s));
    s.atyp = SOCKS5_ATYP_DOMAIN;
    s.domain_len = 7;
    memcpy(s.u.domain, "example", 8);
    assert_false(socks5_addr_to_addr(&s, &a));
    assert_int_equal(a.family, 0);

    s.atyp = 0x02;
    assert_false(socks5_addr_to_addr(&s, &a));
}

static void test_rep_str(void **state)
{
    (void)state;
    assert_string_equal(socks5_rep_str(SOCKS5_REP_SUCCEEDED), "succeeded");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_GENERAL_FAILURE), "general-failure");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_NOT_ALLOWED), "not-allowed");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_NETWORK_UNREACHABLE), "network-unreachable");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_HOST_UNREACHABLE), "host-unreachable");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_CONNECTION_REFUSED), "connection-refused");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_TTL_EXPIRED), "ttl-expired");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_COMMAND_NOT_SUPPORTED), "command-not-supported");
    assert_string_equal(socks5_rep_str(SOCKS5_REP_ATYP_NOT_SUPPORTED),
                        "address-type-not-supported");
    assert_string_equal(socks5_rep_str(9), "unknown");
    assert_string_equal(socks5_rep_str(0xff), "unknown");
}

/* ---- client side (ferry bench) ----------------------------------------- */

static void test_client_greeting_and_method(void **state)
{
    (void)state;
    uint8_t out[SOCKS5_GREETING_MAX + 1];
    const uint8_t methods[] = {SOCKS5_METHOD_NONE, SOCKS5_METHOD_USERPASS};
    assert_int_equal(socks5_write_greeting(out, sizeof(out), methods, 2), 4);
    const uint8_t want[] = {5, 2, 0, 2};
    assert_memory_equal(out, want, 4);
    struct socks5_greeting g;
    assert_int_equal(socks5_parse_greeting(out, 4, &g), 4);
    assert_true(socks5_offers(&g, 0) && socks5_offers(&g, 2));

    uint8_t many[256];
    memset(many, 0, sizeof(many));
    assert_int_equal(socks5_write_greeting(out, sizeof(out), many, 255), SOCKS5_GREETING_MAX);
    assert_int_equal(socks5_write_greeting(out, sizeof(out), many, 256), 0);
    assert_int_equal(socks5_write_greeting(out, sizeof(out), many, 0), 0);
    assert_int_equal(socks5_write_greeting(out, 3, methods, 2), 0);
    assert_int_equal(socks5_write_greeting(out, 4, methods, 2), 4);

    uint8_t m = 0xaa;
    const uint8_t sel[] = {5, 0xff, 0x77};
    assert_int_equal(socks5_parse_method(sel, 0, &m), 0);
    assert_int_equal(socks5_parse_method(sel, 1, &m), 0);
    assert_int_equal(m, 0xaa);
    assert_int_equal(socks5_parse_method(sel, 3, &m), 2);
    assert_int_equal(m, 0xff);
    const uint8_t v4[] = {4, 0};
    assert_int_equal(socks5_parse_method(v4, 1, &m), SOCKS5_E_VERSION);
}

static void check_request_round_trip(uint8_t cmd, const struct socks5_addr *dst, size_t want_len)
{
    uint8_t out[SOCKS5_REQUEST_MAX];
    size_t n = socks5_write_request(out, sizeof(out), cmd, dst);
    assert_int_equal(n, want_len);
    assert_int_equal(socks5_write_request(out, n - 1, cmd, dst), 0);
    struct socks5_request r;
    assert_int_equal(parse_request_exact(out, n, &r), (ssize_t)n);
    assert_int_equal(r.cmd, cmd);
    assert_int_equal(r.dst.atyp, dst->atyp);
    assert_int_equal(r.dst.port, dst->port);
    if (dst->atyp == SOCKS5_ATYP_DOMAIN)
        assert_string_equal(r.dst.u.domain, dst->u.domain);
    else
        assert_memory_equal(r.dst.u.ip, dst->u.ip, dst->atyp == SOCKS5_ATYP_IPV4 ? 4 : 16);
}

static void test_client_write_request(void **state)
{
    (void)state;
    struct socks5_addr s;
    struct addr a;
    assert_int_equal(socks5_addr_from_name(&s, "example.com", 443), 0);
    assert_int_equal(s.atyp, SOCKS5_ATYP_DOMAIN);
    assert_int_equal(s.domain_len, 11);
    check_request_round_trip(SOCKS5_CMD_CONNECT, &s, 18);

    char name[257];
    memset(name, 'n', 255);
    name[255] = '\0';
    assert_int_equal(socks5_addr_from_name(&s, name, 1), 0);
    check_request_round_trip(SOCKS5_CMD_CONNECT, &s, SOCKS5_REQUEST_MAX);
    name[255] = 'n';
    name[256] = '\0';
    assert_int_equal(socks5_addr_from_name(&s, name, 1), -1);
    assert_int_equal(socks5_addr_from_name(&s, "", 1), -1);

    assert_int_equal(addr_parse("192.0.2.1:8080", -1, &a), 0);
    socks5_addr_from_addr(&s, &a);
    assert_int_equal(s.atyp, SOCKS5_ATYP_IPV4);
    check_request_round_trip(SOCKS5_CMD_BIND, &s, 10);
    assert_int_equal(addr_parse("[2001:db8::3]:53", -1, &a), 0);
    socks5_addr_from_addr(&s, &a);
    assert_int_equal(s.atyp, SOCKS5_ATYP_IPV6);
    check_request_round_trip(SOCKS5_CMD_UDP_ASSOCIATE, &s, 22);

    /* Malformed destinations are refused rather than written. */
    uint8_t out[SOCKS5_REQUEST_MAX];
    memset(&s, 0, sizeof(s));
    s.atyp = SOCKS5_ATYP_DOMAIN;
    assert_int_equal(socks5_write_request(out, sizeof(out), 1, &s), 0);
    s.atyp = 0x02;
    assert_int_equal(socks5_write_request(out, sizeof(out), 1, &s), 0);
}

static void test_client_parse_reply(void **state)
{
    (void)state;
    struct addr a, back;
    assert_int_equal(addr_parse("[2001:db8::9]:1080", -1, &a), 0);
    uint8_t out[SOCKS5_REPLY_MAX];
    size_t n = socks5_write_reply(out, sizeof(out), SOCKS5_REP_NOT_ALLOWED, &a);
    struct socks5_reply r;
    for (size_t len = 0; len < n; len++)
        assert_int_equal(socks5_parse_reply(out, len, &r), 0);
    assert_int_equal(socks5_parse_reply(out, n, &r), (ssize_t)n);
    assert_int_equal(r.rep, SOCKS5_REP_NOT_ALLOWED);
    assert_true(socks5_addr_to_addr(&r.bnd, &back));
    assert_true(addr_equal(&a, &back));

    /* A server may name its bound address as a domain. */
    uint8_t msg[SOCKS5_REQUEST_MAX];
    size_t m = make_domain_request(msg, SOCKS5_REP_SUCCEEDED, (const uint8_t *)"proxy.lan", 9, 7);
    assert_int_equal(socks5_parse_reply(msg, m, &r), (ssize_t)m);
    assert_int_equal(r.rep, 0);
    assert_string_equal(r.bnd.u.domain, "proxy.lan");
    assert_int_equal(r.bnd.port, 7);

    const uint8_t bad_ver[] = {4, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    assert_int_equal(socks5_parse_reply(bad_ver, 1, &r), SOCKS5_E_VERSION);
    const uint8_t bad_rsv[] = {5, 0, 9, 1, 0, 0, 0, 0, 0, 0};
    assert_int_equal(socks5_parse_reply(bad_rsv, 3, &r), SOCKS5_E_RSV);
    const uint8_t bad_atyp[] = {5, 0, 0, 9, 0, 0, 0, 0, 0, 0};
    assert_int_equal(socks5_parse_reply(bad_atyp, 4, &r), SOCKS5_E_ATYP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greeting_zero_methods),
        cmocka_unit_test(test_greeting_one_method),
        cmocka_unit_test(test_greeting_255_methods),
        cmocka_unit_test(test_greeting_offers_duplicates_and_edges),
        cmocka_unit_test(test_greeting_bad_version),
        cmocka_unit_test(test_greeting_truncated),
        cmocka_unit_test(test_greeting_trailing_bytes),
        cmocka_unit_test(test_greeting_incremental_matches_whole),
        cmocka_unit_test(test_request_ipv4),
        cmocka_unit_test(test_request_ipv6),
        cmocka_unit_test(test_request_domain_one_byte),
        cmocka_unit_test(test_request_domain_255_bytes),
        cmocka_unit_test(test_request_domain_printable_edges),
        cmocka_unit_test(test_request_port_byte_order),
        cmocka_unit_test(test_request_bad_version),
        cmocka_unit_test(test_request_rsv_nonzero),
        cmocka_unit_test(test_request_unknown_atyp),
        cmocka_unit_test(test_request_empty_domain),
        cmocka_unit_test(test_request_domain_bad_bytes),
        cmocka_unit_test(test_request_any_cmd_parses),
        cmocka_unit_test(test_request_trailing_bytes),
        cmocka_unit_test(test_request_truncated),
        cmocka_unit_test(test_request_incremental_matches_whole),
        cmocka_unit_test(test_error_reply_mapping),
        cmocka_unit_test(test_write_method),
        cmocka_unit_test(test_write_reply_ipv4),
        cmocka_unit_test(test_write_reply_ipv6),
        cmocka_unit_test(test_write_reply_null_and_unset),
        cmocka_unit_test(test_write_reply_cap_too_small),
        cmocka_unit_test(test_write_reply_parses_back),
        cmocka_unit_test(test_addr_to_addr),
        cmocka_unit_test(test_rep_str),
        cmocka_unit_test(test_client_greeting_and_method),
        cmocka_unit_test(test_client_write_request),
        cmocka_unit_test(test_client_parse_reply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
