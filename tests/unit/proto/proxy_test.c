/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxy_test.c: the PROXY protocol v1/v2 parsers and writers of proto/proxy,
 * held to the contract in proxy.h: > 0 consumed, 0 need more, < 0
 * PROXY_E_*, and an error as soon as the bytes make it certain. Every header
 * is also fed one byte at a time, because the spec allows an intermediary to
 * deliver it that way, and every verdict must then appear at the same byte
 * whatever came before.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proto/proxy.h"

#define V1_LINE(s) ((const uint8_t *)(s)), (sizeof(s) - 1)

/* Parse msg[0..len) from an exact-size heap copy, so ASan sees any read past
 * len (a stack or static array would hide it). */
static ssize_t parse_exact(enum proxy_version v, const uint8_t *msg, size_t len,
                           struct proxy_header *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = proxy_parse(v, copy, len, out);
    free(copy);
    return rc;
}

/* Field by field (the struct has padding, which struct copies need not keep). */
static bool header_equal(const struct proxy_header *a, const struct proxy_header *b)
{
    return a->local == b->local && memcmp(&a->src, &b->src, sizeof(a->src)) == 0 &&
           memcmp(&a->dst, &b->dst, sizeof(a->dst)) == 0;
}

/*
 * Feed msg[0..len) one byte at a time, each call seeing the whole prefix so
 * far. Until the verdict every call must return 0 and leave out alone; from
 * the verdict on every call must return that same verdict. Returns the
 * verdict (0 if none came) and, in *at, the prefix length where it came.
 */
static ssize_t feed(enum proxy_version v, const uint8_t *msg, size_t len, size_t *at,
                    struct proxy_header *out)
{
    struct proxy_header h, poison;
    memset(&poison, 0xa5, sizeof(poison));
    ssize_t verdict = 0;
    *at = 0;
    for (size_t k = 0; k <= len; k++) {
        memcpy(&h, &poison, sizeof(h));
        ssize_t rc = parse_exact(v, msg, k, &h);
        assert_true(rc <= (ssize_t)k);
        if (verdict == 0 && rc != 0) {
            verdict = rc;
            *at = k;
            if (rc > 0)
                *out = h;
        }
        assert_int_equal(rc, verdict);
        if (rc <= 0)
            assert_memory_equal(&h, &poison, sizeof(h)); /* untouched */
        else
            assert_true(header_equal(&h, out));
    }
    return verdict;
}

/* A complete header must parse as the whole, byte by byte, at its end. */
static void expect_header(enum proxy_version v, const uint8_t *msg, size_t len,
                          struct proxy_header *out)
{
    size_t at;
    assert_int_equal(parse_exact(v, msg, len, out), (ssize_t)len);
    struct proxy_header fed;
    assert_int_equal(feed(v, msg, len, &at, &fed), (ssize_t)len);
    assert_int_equal(at, len);
    assert_true(header_equal(&fed, out));
}

/* A bad header must give err exactly once its byte at-1 is there. */
static void expect_error_at(enum proxy_version v, const uint8_t *msg, size_t len, ssize_t err,
                            size_t want_at)
{
    struct proxy_header h;
    size_t at;
    assert_int_equal(parse_exact(v, msg, len, &h), err);
    assert_int_equal(feed(v, msg, len, &at, &h), err);
    if (at != want_at)
        fail_msg("error %zd at byte %zu, expected at %zu: \"%.*s\"", err, at, want_at, (int)len,
                 (const char *)msg);
}

static void set_ip4(struct addr *a, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3, uint16_t port)
{
    memset(a, 0, sizeof(*a));
    a->family = AF_INET;
    a->ip[0] = b0;
    a->ip[1] = b1;
    a->ip[2] = b2;
    a->ip[3] = b3;
    a->port = port;
}

static void set_ip(struct addr *a, const char *text, uint16_t port)
{
    assert_int_equal(addr_parse_ip(text, port, a), 0);
}

/* ---- v1: good lines --------------------------------------------------- */

static void test_v1_tcp4(void **state)
{
    (void)state;
    struct proxy_header h;
    struct addr src, dst;
    expect_header(PROXY_V1, V1_LINE("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"), &h);
    assert_false(h.local);
    set_ip4(&src, 192, 168, 0, 1, 56324);
    set_ip4(&dst, 192, 168, 0, 11, 443);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));

    /* The spec's longest TCP4 line: 56 bytes. */
    const char max[] = "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n";
    assert_int_equal(sizeof(max) - 1, 56);
    expect_header(PROXY_V1, V1_LINE(max), &h);
    set_ip4(&src, 255, 255, 255, 255, 65535);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &src));

    /* Zeros: "0" is a number, not a leading zero. */
    expect_header(PROXY_V1, V1_LINE("PROXY TCP4 0.0.0.0 10.0.100.9 0 1\r\n"), &h);
    set_ip4(&src, 0, 0, 0, 0, 0);
    set_ip4(&dst, 10, 0, 100, 9, 1);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));
}

static void test_v1_tcp6(void **state)
{
    (void)state;
    struct proxy_header h;
    struct addr src, dst;
    expect_header(PROXY_V1, V1_LINE("PROXY TCP6 2001:db8::1 ::1 65535 0\r\n"), &h);
    assert_false(h.local);
    assert_int_equal(h.src.family, AF_INET6);
    assert_int_equal(h.dst.family, AF_INET6);
    set_ip(&src, "2001:db8::1", 65535);
    set_ip(&dst, "::1", 0);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));

    /* The spec's longest TCP6 line: 104 bytes. */
    const char max[] = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                       "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_int_equal(sizeof(max) - 1, 104);
    expect_header(PROXY_V1, V1_LINE(max), &h);
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(h.src.ip[i], 0xff);

    /* Upper-case hex, and a mapped IPv4 address as inet_ntop() writes it:
     * reported as the header states it, AF_INET6. */
    expect_header(PROXY_V1, V1_LINE("PROXY TCP6 ::ffff:192.0.2.1 2001:DB8::A 1 2\r\n"), &h);
    set_ip(&src, "::ffff:192.0.2.1", 1);
    set_ip(&dst, "2001:db8::a", 2);
    assert_int_equal(h.src.family, AF_INET6);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));
}

static void test_v1_unknown(void **state)
{
    (void)state;
    struct proxy_header h;
    static const struct addr zero;
    expect_header(PROXY_V1, V1_LINE("PROXY UNKNOWN\r\n"), &h);
    assert_true(h.local);
    assert_memory_equal(&h.src, &zero, sizeof(zero));
    assert_memory_equal(&h.dst, &zero, sizeof(zero));

    /* Anything up to the CRLF is ignored, even what would be bad in TCP4. */
    expect_header(PROXY_V1, V1_LINE("PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n"), &h);
    assert_true(h.local);
    expect_header(PROXY_V1, V1_LINE("PROXY UNKNOWN  what ever 0999 :::\r\n"), &h);
    assert_true(h.local);
    expect_header(PROXY_V1, V1_LINE("PROXY UNKNOWN \r\n"), &h);
    assert_true(h.local);
}

static void test_v1_trailing_data_not_consumed(void **state)
{
    (void)state;
    struct proxy_header h;
    const char msg[] = "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET / HTTP/1.1\r\n\r\n";
    assert_int_equal(parse_exact(PROXY_V1, V1_LINE(msg), &h), 47);
    /* A second header right behind is the application's, not ours. */
    const char two[] = "PROXY UNKNOWN\r\nPROXY UNKNOWN\r\n";
    assert_int_equal(parse_exact(PROXY_V1, V1_LINE(two), &h), 15);
    /* A v2 signature behind a v1 line is payload too. */
    uint8_t mix[15 + PROXY_V2_SIG_LEN];
    memcpy(mix, "PROXY UNKNOWN\r\n", 15);
    memcpy(mix + 15, proxy_v2_sig, PROXY_V2_SIG_LEN);
    assert_int_equal(parse_exact(PROXY_V1, mix, sizeof(mix), &h), 15);
}

/* Every prefix of a good line is "need more", then the whole line at once,
 * and more bytes after it do not change the verdict. */
static void test_v1_truncated_every_length(void **state)
{
    (void)state;
    const char *lines[] = {
        "PROXY TCP4 1.2.3.4 5.6.7.8 80 443\r\n",
        "PROXY TCP6 fe80::1 2001:db8:0:0:1:0:0:1 1024 8080\r\n",
        "PROXY UNKNOWN\r\n",
        "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        size_t n = strlen(lines[i]);
        uint8_t buf[PROXY_V1_MAX + 8];
        memcpy(buf, lines[i], n);
        memcpy(buf + n, "abcdefg", 7);
        struct proxy_header h;
        for (size_t k = 0; k < n; k++)
            assert_int_equal(parse_exact(PROXY_V1, buf, k, &h), 0);
        for (size_t k = n; k <= n + 7; k++)
            assert_int_equal(parse_exact(PROXY_V1, buf, k, &h), (ssize_t)n);
    }
}

/* ---- v1: the 107-byte limit ------------------------------------------- */

/* "PROXY UNKNOWN " + fill bytes of 'x' + end; returns the length. */
static size_t unknown_line(uint8_t *out, size_t fill, const char *end)
{
    memcpy(out, "PROXY UNKNOWN ", 14);
    memset(out + 14, 'x', fill);
    memcpy(out + 14 + fill, end, strlen(end));
    return 14 + fill + strlen(end);
}

static void test_v1_length_limit(void **state)
{
    (void)state;
    uint8_t buf[256];
    struct proxy_header h;

    /* The spec's worst case is exactly 107 bytes. */
    const char worst[] = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                         "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    assert_int_equal(sizeof(worst) - 1, PROXY_V1_MAX);
    expect_header(PROXY_V1, V1_LINE(worst), &h);
    assert_true(h.local);

    size_t n = unknown_line(buf, 91, "\r\n");
    assert_int_equal(n, 107);
    expect_header(PROXY_V1, buf, n, &h);

    /* 108 bytes: the CR is byte 107, its LF would be the 108th. */
    n = unknown_line(buf, 92, "\r\n");
    assert_int_equal(n, 108);
    expect_error_at(PROXY_V1, buf, n, PROXY_E_TOO_LONG, 107);

    /* No CRLF at all: still waiting at 106 bytes, refused at 107. */
    n = unknown_line(buf, 93 + 50, "");
    expect_error_at(PROXY_V1, buf, n, PROXY_E_TOO_LONG, 107);
    assert_int_equal(parse_exact(PROXY_V1, buf, 106, &h), 0);

    /* A lone CR at the end of the window does not save it. */
    n = unknown_line(buf, 92, "\rx");
    expect_error_at(PROXY_V1, buf, n, PROXY_E_TOO_LONG, 107);

    /* A TCP6 line over 107 bytes is refused before its end: two 45-byte
     * addresses fit inet_pton but not the line. */
    const char long6[] = "PROXY TCP6 1111:2222:3333:4444:5555:6666:255.255.255.255 "
                         "1111:2222:3333:4444:5555:6666:255.255.255.255 1 2\r\n";
    expect_error_at(PROXY_V1, V1_LINE(long6), PROXY_E_TOO_LONG, 107);
}

/* ---- v1: errors, each at the byte that makes it certain ---------------- */

struct v1_bad {
    const char *line;
    ssize_t err;
    size_t at; /* prefix length at which err first appears */
};

static void run_v1_bad(const struct v1_bad *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_error_at(PROXY_V1, (const uint8_t *)t[i].line, strlen(t[i].line), t[i].err, t[i].at);
}

static void test_v1_signature(void **state)
{
    (void)state;
    static const struct v1_bad t[] = {
        {"proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SIGNATURE, 1},
        {"Proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SIGNATURE, 2},
        {"GET / HTTP/1.1\r\n", PROXY_E_SIGNATURE, 1},
        {"PROXZ TCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SIGNATURE, 5},
        {" PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SIGNATURE, 1},
        {"\x05\x01\x00", PROXY_E_SIGNATURE, 1},
    };
    run_v1_bad(t, sizeof(t) / sizeof(t[0]));

    /* A v2 header given to the v1 parser: refused on its first byte. */
    uint8_t v2[PROXY_V2_HDR_LEN + PROXY_V2_ADDR4_LEN];
    struct addr a;
    set_ip4(&a, 1, 2, 3, 4, 5);
    size_t n = proxy_write_v2(v2, sizeof(v2), &a, &a);
    assert_int_equal(n, sizeof(v2));
    expect_error_at(PROXY_V1, v2, n, PROXY_E_SIGNATURE, 1);
}

static void test_v1_syntax(void **state)
{
    (void)state;
    static const struct v1_bad t[] = {
        /* extra or missing spaces, other blanks */
        {"PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 7},
        {"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 12},
        {"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 20},
        {"PROXY TCP4 1.2.3.4 5.6.7.8  1 2\r\n", PROXY_E_SYNTAX, 28},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1  2\r\n", PROXY_E_SYNTAX, 30},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", PROXY_E_SYNTAX, 31},
        {"PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 6},
        {"PROXY\tTCP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 6},
        {"PROXY TCP4\t1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 11},
        /* line endings */
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", PROXY_E_SYNTAX, 31},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", PROXY_E_SYNTAX, 32},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n", PROXY_E_SYNTAX, 32},
        {"PROXY TCP4 1.2.3.4\n5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 19},
        {"PROXY UNKNOWN\n", PROXY_E_SYNTAX, 14},
        {"PROXY UNKNOWN junk\n", PROXY_E_SYNTAX, 19},
        {"PROXY UNKNOWN junk\r junk\r\n", PROXY_E_SYNTAX, 20},
        {"PROXY UNKNOWN\r\r\n", PROXY_E_SYNTAX, 15},
        {"PROXY\r\n", PROXY_E_SYNTAX, 6},
        /* missing and extra fields */
        {"PROXY TCP4\r\n", PROXY_E_SYNTAX, 11},
        {"PROXY TCP4 1.2.3.4\r\n", PROXY_E_SYNTAX, 19},
        {"PROXY TCP4 1.2.3.4 5.6.7.8\r\n", PROXY_E_SYNTAX, 27},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", PROXY_E_SYNTAX, 29},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", PROXY_E_SYNTAX, 31},
        {"PROXY \r\n", PROXY_E_SYNTAX, 7},
        /* protocol names: case-sensitive, TCP4/TCP6/UNKNOWN only */
        {"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 7},
        {"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 10},
        {"PROXY TCP 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 10},
        {"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 8},
        {"PROXY TCP46 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_SYNTAX, 11},
        {"PROXY UNKNOWNX\r\n", PROXY_E_SYNTAX, 14},
        {"PROXY unknown\r\n", PROXY_E_SYNTAX, 7},
        {"PROXY UNKNOW\r\n", PROXY_E_SYNTAX, 13},
    };
    run_v1_bad(t, sizeof(t) / sizeof(t[0]));
}

static void test_v1_bad_ports(void **state)
{
    (void)state;
    static const struct v1_bad t[] = {
        {"PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n", PROXY_E_ADDRESS, 29},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 00 2\r\n", PROXY_E_ADDRESS, 29},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 01\r\n", PROXY_E_ADDRESS, 31},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", PROXY_E_ADDRESS, 32},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n", PROXY_E_ADDRESS, 34},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 99999 2\r\n", PROXY_E_ADDRESS, 32},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 4294967376 2\r\n", PROXY_E_ADDRESS, 33},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 +80 2\r\n", PROXY_E_ADDRESS, 28},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n", PROXY_E_ADDRESS, 28},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 0x50 2\r\n", PROXY_E_ADDRESS, 29},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 80a 2\r\n", PROXY_E_ADDRESS, 30},
        {"PROXY TCP4 1.2.3.4 5.6.7.8 1 2x\r\n", PROXY_E_ADDRESS, 31},
    };
    run_v1_bad(t, sizeof(t) / sizeof(t[0]));

    /* The edges that are fine. */
    struct proxy_header h;
    expect_header(PROXY_V1, V1_LINE("PROXY TCP4 1.2.3.4 5.6.7.8 0 65535\r\n"), &h);
    assert_int_equal(h.src.port, 0);
    assert_int_equal(h.dst.port, 65535);
    expect_header(PROXY_V1, V1_LINE("PROXY TCP4 1.2.3.4 5.6.7.8 10 100\r\n"), &h);
    assert_int_equal(h.src.port, 10);
    assert_int_equal(h.dst.port, 100);
}

static void test_v1_bad_addresses(void **state)
{
    (void)state;
    static const struct v1_bad t[] = {
        /* TCP4 wants a dotted quad, nothing else */
        {"PROXY TCP4 ::1 ::1 1 2\r\n", PROXY_E_ADDRESS, 12},
        {"PROXY TCP4 1.2.3.4 ::ffff:1.2.3.4 1 2\r\n", PROXY_E_ADDRESS, 20},
        {"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 13},
        {"PROXY TCP4 1.2.3.010 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 19},
        {"PROXY TCP4 256.1.1.1 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 14},
        {"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 17},
        {"PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 19},
        {"PROXY TCP4 1..2.3 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 14},
        {"PROXY TCP4 .1.2.3 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 12},
        {"PROXY TCP4 1.2.3. 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 18},
        {"PROXY TCP4 localhost 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 12},
        {"PROXY TCP4 0x7f.0.0.1 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 13},
        {"PROXY TCP4 1.2.3.4 5.6.7.1234 1 2\r\n", PROXY_E_ADDRESS, 29},
        {"PROXY TCP4 2130706433 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 15},
        /* TCP6 wants IPv6 text */
        {"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 19},
        {"PROXY TCP6 ::1 5.6.7.8 1 2\r\n", PROXY_E_ADDRESS, 23},
        {"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", PROXY_E_ADDRESS, 19},
        {"PROXY TCP6 [::1] ::1 1 2\r\n", PROXY_E_ADDRESS, 12},
        {"PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", PROXY_E_ADDRESS, 29},
        {"PROXY TCP6 ::1::2 ::1 1 2\r\n", PROXY_E_ADDRESS, 18},
        {"PROXY TCP6 ::: ::1 1 2\r\n", PROXY_E_ADDRESS, 15},
        {"PROXY TCP6 12345:: ::1 1 2\r\n", PROXY_E_ADDRESS, 19},
        {"PROXY TCP6 ::g ::1 1 2\r\n", PROXY_E_ADDRESS, 14},
        {"PROXY TCP6 ::ffff:01.2.3.4 ::1 1 2\r\n", PROXY_E_ADDRESS, 27},
        /* 46 characters: longer than any IPv6 text, refused at the 46th */
        {"PROXY TCP6 0000000000000000000000000000000000000000000000 ::1 1 2\r\n", PROXY_E_ADDRESS,
         57},
    };
    run_v1_bad(t, sizeof(t) / sizeof(t[0]));
}

/* The parser must not read the NUL of a C string or any byte past len, and
 * NUL bytes inside a line are just bad bytes. */
static void test_v1_nul_bytes(void **state)
{
    (void)state;
    const uint8_t nul_ip[] = "PROXY TCP4 1.2.3.4\0 5.6.7.8 1 2\r\n";
    expect_error_at(PROXY_V1, nul_ip, sizeof(nul_ip) - 1, PROXY_E_ADDRESS, 19);
    const uint8_t nul_port[] = "PROXY TCP4 1.2.3.4 5.6.7.8 1\0 2\r\n";
    expect_error_at(PROXY_V1, nul_port, sizeof(nul_port) - 1, PROXY_E_ADDRESS, 29);
    /* UNKNOWN ignores what precedes the CRLF, whatever it is. */
    const uint8_t nul_unknown[] = "PROXY UNKNOWN \0\xff\r\n";
    struct proxy_header h;
    expect_header(PROXY_V1, nul_unknown, sizeof(nul_unknown) - 1, &h);
    assert_true(h.local);
}

/* ---- v2 ---------------------------------------------------------------- */

/* SIG VER|CMD FAM LEN(alen) body[0..blen); returns the bytes written. */
static size_t v2_make(uint8_t *out, uint8_t vercmd, uint8_t fam, uint16_t alen, const uint8_t *body,
                      size_t blen)
{
    memcpy(out, proxy_v2_sig, PROXY_V2_SIG_LEN);
    out[12] = vercmd;
    out[13] = fam;
    out[14] = (uint8_t)(alen >> 8);
    out[15] = (uint8_t)alen;
    if (blen)
        memcpy(out + PROXY_V2_HDR_LEN, body, blen);
    return PROXY_V2_HDR_LEN + blen;
}

static const uint8_t body4[PROXY_V2_ADDR4_LEN] = {192, 0, 2,    1,    198,  51,
                                                  100, 7, 0xdc, 0x05, 0x01, 0xbb};

static const uint8_t body6[PROXY_V2_ADDR6_LEN] = {
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, /* 2001:db8::1 */
    0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, /* ::1 */
    0xff, 0xff, 0x00, 0x00};

static void test_v2_ipv4(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t n = v2_make(msg, 0x21, 0x11, 12, body4, sizeof(body4));
    struct proxy_header h;
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(n, 28);
    assert_false(h.local);
    struct addr src, dst;
    set_ip4(&src, 192, 0, 2, 1, 56325);
    set_ip4(&dst, 198, 51, 100, 7, 443);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));
}

static void test_v2_ipv6(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t n = v2_make(msg, 0x21, 0x21, 36, body6, sizeof(body6));
    struct proxy_header h;
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(n, 52);
    assert_false(h.local);
    struct addr src, dst;
    set_ip(&src, "2001:db8::1", 65535);
    set_ip(&dst, "::1", 0);
    assert_true(addr_equal(&h.src, &src));
    assert_true(addr_equal(&h.dst, &dst));
}

static void test_v2_local(void **state)
{
    (void)state;
    uint8_t msg[PROXY_V2_MAX];
    struct proxy_header h;
    static const struct addr zero;

    size_t n = v2_make(msg, 0x20, 0x00, 0, NULL, 0);
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(n, 16);
    assert_true(h.local);
    assert_memory_equal(&h.src, &zero, sizeof(zero));
    assert_memory_equal(&h.dst, &zero, sizeof(zero));

    /* LOCAL skips the address block whatever the family says, and whatever
     * its length: the receiver must not assume zero (spec 2.2). */
    n = v2_make(msg, 0x20, 0x11, 12, body4, sizeof(body4));
    expect_header(PROXY_V2, msg, n, &h);
    assert_true(h.local);
    assert_memory_equal(&h.src, &zero, sizeof(zero));
    uint8_t unix_body[216];
    memset(unix_body, 'u', sizeof(unix_body));
    const uint8_t fams[] = {0x12, 0x21, 0x22, 0x31, 0x32, 0x00, 0x13, 0x41, 0xff};
    for (size_t i = 0; i < sizeof(fams); i++) {
        n = v2_make(msg, 0x20, fams[i], sizeof(unix_body), unix_body, sizeof(unix_body));
        expect_header(PROXY_V2, msg, n, &h);
        assert_true(h.local);
    }
    /* A LOCAL block shorter than its family's addresses is fine too. */
    n = v2_make(msg, 0x20, 0x21, 3, body6, 3);
    expect_header(PROXY_V2, msg, n, &h);
    assert_true(h.local);
}

static void test_v2_unspec(void **state)
{
    (void)state;
    uint8_t msg[64];
    struct proxy_header h;
    size_t n = v2_make(msg, 0x21, 0x00, 0, NULL, 0);
    expect_header(PROXY_V2, msg, n, &h);
    assert_true(h.local);
    /* Address information under UNSPEC is ignored. */
    n = v2_make(msg, 0x21, 0x00, 12, body4, sizeof(body4));
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(n, 28);
    assert_true(h.local);
    assert_int_equal(h.src.family, 0);
}

static void test_v2_tlvs_skipped(void **state)
{
    (void)state;
    /* Addresses, then ALPN "h2", AUTHORITY "example.com", NOOP of 0 bytes,
     * then the application's first bytes. */
    uint8_t body[128];
    size_t b = 0;
    memcpy(body, body4, sizeof(body4));
    b += sizeof(body4);
    const uint8_t tlvs[] = {0x01, 0x00, 0x02, 'h', '2', 0x02, 0x00, 0x0b, 'e',  'x',  'a',
                            'm',  'p',  'l',  'e', '.', 'c',  'o',  'm',  0x04, 0x00, 0x00};
    memcpy(body + b, tlvs, sizeof(tlvs));
    b += sizeof(tlvs);
    uint8_t msg[256];
    size_t n = v2_make(msg, 0x21, 0x11, (uint16_t)b, body, b);
    assert_int_equal(n, 16 + 12 + 22);
    struct proxy_header h;
    expect_header(PROXY_V2, msg, n, &h);
    assert_false(h.local);
    assert_int_equal(h.src.port, 56325);
    assert_int_equal(h.dst.port, 443);

    memcpy(msg + n, "GET / HTTP/1.1\r\n", 16);
    assert_int_equal(parse_exact(PROXY_V2, msg, n + 16, &h), (ssize_t)n);

    /* TLV contents are not judged: a TLV claiming more than the block, or
     * a stray byte, is skipped with the rest of the declared length. */
    const uint8_t odd[] = {0x20, 0xff, 0xff, 0x00};
    memcpy(body + sizeof(body4), odd, sizeof(odd));
    b = sizeof(body4) + sizeof(odd);
    n = v2_make(msg, 0x21, 0x11, (uint16_t)b, body, b);
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(n, 16 + 16);

    /* IPv6 with TLVs. */
    memcpy(body, body6, sizeof(body6));
    memcpy(body + sizeof(body6), tlvs, sizeof(tlvs));
    b = sizeof(body6) + sizeof(tlvs);
    n = v2_make(msg, 0x21, 0x21, (uint16_t)b, body, b);
    expect_header(PROXY_V2, msg, n, &h);
    assert_int_equal(h.src.family, AF_INET6);
    assert_int_equal(h.dst.port, 0);
}

static void test_v2_trailing_data_not_consumed(void **state)
{
    (void)state;
    uint8_t msg[128];
    size_t n = v2_make(msg, 0x21, 0x11, 12, body4, sizeof(body4));
    /* A second v2 header right behind belongs to the application. */
    size_t m = v2_make(msg + n, 0x21, 0x11, 12, body4, sizeof(body4));
    struct proxy_header h;
    assert_int_equal(parse_exact(PROXY_V2, msg, n + m, &h), (ssize_t)n);
    assert_int_equal(parse_exact(PROXY_V2, msg, n + 1, &h), (ssize_t)n);
}

static void test_v2_truncated_every_length(void **state)
{
    (void)state;
    uint8_t msg[PROXY_V2_MAX];
    size_t lens[4];
    uint8_t *starts[4];
    uint8_t *p = msg;
    starts[0] = p;
    lens[0] = v2_make(p, 0x21, 0x11, 12, body4, sizeof(body4));
    p += lens[0];
    starts[1] = p;
    lens[1] = v2_make(p, 0x21, 0x21, 36, body6, sizeof(body6));
    p += lens[1];
    starts[2] = p;
    lens[2] = v2_make(p, 0x20, 0x00, 0, NULL, 0);
    p += lens[2];
    starts[3] = p;
    uint8_t pad[100];
    memset(pad, 0, sizeof(pad));
    memcpy(pad, body4, sizeof(body4));
    lens[3] = v2_make(p, 0x21, 0x11, sizeof(pad), pad, sizeof(pad));
    for (size_t i = 0; i < 4; i++) {
        struct proxy_header h;
        for (size_t k = 0; k < lens[i]; k++)
            assert_int_equal(parse_exact(PROXY_V2, starts[i], k, &h), 0);
        assert_int_equal(parse_exact(PROXY_V2, starts[i], lens[i], &h), (ssize_t)lens[i]);
    }
}

static void test_v2_signature(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t n = v2_make(msg, 0x21, 0x11, 12, body4, sizeof(body4));
    /* Each signature byte is judged as it arrives. */
    for (size_t i = 0; i < PROXY_V2_SIG_LEN; i++) {
        uint8_t bad[64];
        memcpy(bad, msg, n);
        bad[i] ^= 0x40;
        expect_error_at(PROXY_V2, bad, n, PROXY_E_SIGNATURE, i + 1);
    }
    /* A v1 line given to the v2 parser: refused on its first byte. */
    expect_error_at(PROXY_V2, V1_LINE("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), PROXY_E_SIGNATURE, 1);
    expect_error_at(PROXY_V2, V1_LINE("PROXY UNKNOWN\r\n"), PROXY_E_SIGNATURE, 1);
    /* A near miss: CRLF CRLF then no NUL, as an HTTP client could send. */
    expect_error_at(PROXY_V2, V1_LINE("\r\n\r\nGET"), PROXY_E_SIGNATURE, 5);
}

static void test_v2_version(void **state)
{
    (void)state;
    const uint8_t vers[] = {0x01, 0x11, 0x31, 0x10, 0xf1, 0x00, 0x21 ^ 0x80};
    for (size_t i = 0; i < sizeof(vers); i++) {
        uint8_t msg[64];
        size_t n = v2_make(msg, vers[i], 0x11, 12, body4, sizeof(body4));
        expect_error_at(PROXY_V2, msg, n, PROXY_E_VERSION, 13);
    }
}

static void test_v2_command(void **state)
{
    (void)state;
    const uint8_t cmds[] = {0x22, 0x23, 0x2f};
    for (size_t i = 0; i < sizeof(cmds); i++) {
        uint8_t msg[64];
        size_t n = v2_make(msg, cmds[i], 0x11, 12, body4, sizeof(body4));
        expect_error_at(PROXY_V2, msg, n, PROXY_E_COMMAND, 13);
    }
}

static void test_v2_family(void **state)
{
    (void)state;
    /* UDP and UNIX are valid v2 but not relayed by ferry; the rest are not
     * valid v2 at all. Both are refused under PROXY, at the family byte. */
    const uint8_t fams[] = {0x12, 0x22, 0x31, 0x32, 0x01, 0x02, 0x10, 0x20,
                            0x13, 0x23, 0x30, 0x41, 0x44, 0xf1, 0xff};
    uint8_t body[216];
    memset(body, 0, sizeof(body));
    for (size_t i = 0; i < sizeof(fams); i++) {
        uint8_t msg[256];
        size_t n = v2_make(msg, 0x21, fams[i], sizeof(body), body, sizeof(body));
        expect_error_at(PROXY_V2, msg, n, PROXY_E_FAMILY, 14);
    }
}

static void test_v2_length_too_short(void **state)
{
    (void)state;
    uint8_t msg[64];
    const uint16_t short4[] = {0, 4, 8, 11};
    for (size_t i = 0; i < sizeof(short4) / sizeof(short4[0]); i++) {
        size_t n = v2_make(msg, 0x21, 0x11, short4[i], body4, short4[i]);
        expect_error_at(PROXY_V2, msg, n, PROXY_E_ADDRESS, 16);
    }
    const uint16_t short6[] = {0, 12, 32, 35};
    for (size_t i = 0; i < sizeof(short6) / sizeof(short6[0]); i++) {
        size_t n = v2_make(msg, 0x21, 0x21, short6[i], body6, short6[i]);
        expect_error_at(PROXY_V2, msg, n, PROXY_E_ADDRESS, 16);
    }
}

static void test_v2_length_limit(void **state)
{
    (void)state;
    static uint8_t msg[PROXY_V2_MAX + 64];
    uint8_t body[PROXY_V2_MAX];
    memset(body, 0, sizeof(body));
    memcpy(body, body4, sizeof(body4));
    struct proxy_header h;

    /* 16 + 1008 = 1024: the largest we take. */
    size_t n = v2_make(msg, 0x21, 0x11, PROXY_V2_MAX - 16, body, PROXY_V2_MAX - 16);
    assert_int_equal(n, PROXY_V2_MAX);
    expect_header(PROXY_V2, msg, n, &h);
    assert_false(h.local);

    /* One more is refused as soon as the length is there, LOCAL included. */
    n = v2_make(msg, 0x21, 0x11, PROXY_V2_MAX - 15, body, PROXY_V2_MAX - 15);
    expect_error_at(PROXY_V2, msg, n, PROXY_E_TOO_LONG, 16);
    n = v2_make(msg, 0x20, 0x00, PROXY_V2_MAX - 15, body, PROXY_V2_MAX - 15);
    expect_error_at(PROXY_V2, msg, n, PROXY_E_TOO_LONG, 16);
    n = v2_make(msg, 0x21, 0x21, 0xffff, body, 4);
    expect_error_at(PROXY_V2, msg, n, PROXY_E_TOO_LONG, 16);
}

/* The first bad field in wire order decides, whatever follows it. */
static void test_v2_error_order(void **state)
{
    (void)state;
    uint8_t msg[64];
    struct proxy_header h;
    size_t n = v2_make(msg, 0x13, 0x31, 0xffff, NULL, 0);
    assert_int_equal(parse_exact(PROXY_V2, msg, n, &h), PROXY_E_VERSION);
    n = v2_make(msg, 0x22, 0x31, 0xffff, NULL, 0);
    assert_int_equal(parse_exact(PROXY_V2, msg, n, &h), PROXY_E_COMMAND);
    n = v2_make(msg, 0x21, 0x31, 0xffff, NULL, 0);
    assert_int_equal(parse_exact(PROXY_V2, msg, n, &h), PROXY_E_FAMILY);
    n = v2_make(msg, 0x21, 0x11, 0xffff, NULL, 0);
    assert_int_equal(parse_exact(PROXY_V2, msg, n, &h), PROXY_E_TOO_LONG);
}

/* ---- writers ----------------------------------------------------------- */

static void test_write_v1(void **state)
{
    (void)state;
    struct addr src, dst;
    char out[PROXY_V1_MAX + 1];
    struct proxy_header h;

    set_ip4(&src, 192, 168, 0, 1, 56324);
    set_ip4(&dst, 192, 168, 0, 11, 443);
    const char want4[] = "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n";
    memset(out, '#', sizeof(out));
    size_t n = proxy_write_v1(out, sizeof(out), &src, &dst);
    assert_int_equal(n, sizeof(want4) - 1);
    assert_memory_equal(out, want4, n);
    assert_int_equal(out[n], '#'); /* no NUL written */
    /* Exactly enough room is enough; one byte less is nothing. */
    assert_int_equal(proxy_write_v1(out, n, &src, &dst), n);
    memset(out, '#', sizeof(out));
    assert_int_equal(proxy_write_v1(out, n - 1, &src, &dst), 0);
    assert_int_equal(out[0], '#');
    assert_int_equal(proxy_write_v1(out, 0, &src, &dst), 0);

    set_ip(&src, "2001:db8::1", 1);
    set_ip(&dst, "::1", 65535);
    const char want6[] = "PROXY TCP6 2001:db8::1 ::1 1 65535\r\n";
    n = proxy_write_v1(out, sizeof(out), &src, &dst);
    assert_int_equal(n, sizeof(want6) - 1);
    assert_memory_equal(out, want6, n);

    /* The longest line the writer can make still fits the parser. */
    memset(src.ip, 0xff, 16);
    memset(dst.ip, 0xff, 16);
    src.port = dst.port = 65535;
    n = proxy_write_v1(out, sizeof(out), &src, &dst);
    assert_int_equal(n, 104);
    expect_header(PROXY_V1, (const uint8_t *)out, n, &h);

    /* Families differ, or unset: nothing. */
    set_ip4(&dst, 1, 2, 3, 4, 5);
    assert_int_equal(proxy_write_v1(out, sizeof(out), &src, &dst), 0);
    assert_int_equal(proxy_write_v1(out, sizeof(out), &dst, &src), 0);
    struct addr unset;
    memset(&unset, 0, sizeof(unset));
    assert_int_equal(proxy_write_v1(out, sizeof(out), &unset, &unset), 0);
    assert_int_equal(proxy_write_v1(out, sizeof(out), &dst, NULL), 0);

    /* No source: UNKNOWN, which parses back as local. */
    n = proxy_write_v1(out, sizeof(out), NULL, NULL);
    assert_int_equal(n, 15);
    assert_memory_equal(out, "PROXY UNKNOWN\r\n", 15);
    assert_int_equal(proxy_write_v1(out, 14, NULL, NULL), 0);
    expect_header(PROXY_V1, (const uint8_t *)out, n, &h);
    assert_true(h.local);
}

static void test_write_v2(void **state)
{
    (void)state;
    struct addr src, dst;
    uint8_t out[64];
    uint8_t want[64];

    set_ip4(&src, 192, 0, 2, 1, 56325);
    set_ip4(&dst, 198, 51, 100, 7, 443);
    size_t wn = v2_make(want, 0x21, 0x11, 12, body4, sizeof(body4));
    size_t n = proxy_write_v2(out, sizeof(out), &src, &dst);
    assert_int_equal(n, 28);
    assert_memory_equal(out, want, wn);
    assert_int_equal(proxy_write_v2(out, 28, &src, &dst), 28);
    assert_int_equal(proxy_write_v2(out, 27, &src, &dst), 0);

    set_ip(&src, "2001:db8::1", 65535);
    set_ip(&dst, "::1", 0);
    wn = v2_make(want, 0x21, 0x21, 36, body6, sizeof(body6));
    n = proxy_write_v2(out, sizeof(out), &src, &dst);
    assert_int_equal(n, 52);
    assert_memory_equal(out, want, wn);
    assert_int_equal(proxy_write_v2(out, 51, &src, &dst), 0);

    /* LOCAL: signature, 0x20, UNSPEC, length 0. */
    wn = v2_make(want, 0x20, 0x00, 0, NULL, 0);
    n = proxy_write_v2(out, sizeof(out), NULL, NULL);
    assert_int_equal(n, 16);
    assert_memory_equal(out, want, wn);
    assert_int_equal(proxy_write_v2(out, 15, NULL, NULL), 0);

    /* Families differ, or unset: nothing. */
    set_ip4(&dst, 1, 2, 3, 4, 5);
    assert_int_equal(proxy_write_v2(out, sizeof(out), &src, &dst), 0);
    struct addr unset;
    memset(&unset, 0, sizeof(unset));
    assert_int_equal(proxy_write_v2(out, sizeof(out), &unset, &unset), 0);
    assert_int_equal(proxy_write_v2(out, sizeof(out), &dst, NULL), 0);
}

/* Writer -> parser for both versions and families, over random addresses
 * and ports including the edges, fed whole and byte by byte. */
static void test_round_trip(void **state)
{
    (void)state;
    struct harness_rng rng;
    harness_rng_init(&rng, 0x50524f5859ull);
    for (unsigned round = 0; round < 400; round++) {
        struct addr src, dst;
        memset(&src, 0, sizeof(src));
        memset(&dst, 0, sizeof(dst));
        src.family = dst.family = (round & 1) ? AF_INET6 : AF_INET;
        size_t ipl = src.family == AF_INET ? 4 : 16;
        for (size_t i = 0; i < ipl; i++) {
            /* Runs of zeros exercise "::" and the mapped forms. */
            src.ip[i] = (round & 2) ? 0 : (uint8_t)harness_rng_next(&rng);
            dst.ip[i] = (uint8_t)harness_rng_next(&rng);
        }
        if (round % 8 == 3 && ipl == 16) {
            memset(src.ip, 0, 10);
            src.ip[10] = src.ip[11] = 0xff; /* ::ffff:a.b.c.d */
        }
        const uint16_t edge[] = {0, 1, 9, 10, 99, 100, 65535};
        src.port = round < 7 ? edge[round] : (uint16_t)harness_rng_next(&rng);
        dst.port = round < 7 ? edge[6 - round] : (uint16_t)harness_rng_next(&rng);

        struct proxy_header h;
        char line[PROXY_V1_MAX];
        size_t n = proxy_write_v1(line, sizeof(line), &src, &dst);
        assert_true(n > 0 && n <= PROXY_V1_MAX);
        if (round < 40) {
            expect_header(PROXY_V1, (const uint8_t *)line, n, &h);
        } else {
            assert_int_equal(parse_exact(PROXY_V1, (const uint8_t *)line, n, &h), (ssize_t)n);
        }
        assert_false(h.local);
        assert_true(addr_equal(&h.src, &src));
        assert_true(addr_equal(&h.dst, &dst));

        uint8_t bin[64];
        n = proxy_write_v2(bin, sizeof(bin), &src, &dst);
        assert_int_equal(n, PROXY_V2_HDR_LEN + 2 * ipl + 4);
        if (round < 40)
            expect_header(PROXY_V2, bin, n, &h);
        else
            assert_int_equal(parse_exact(PROXY_V2, bin, n, &h), (ssize_t)n);
        assert_false(h.local);
        assert_true(addr_equal(&h.src, &src));
        assert_true(addr_equal(&h.dst, &dst));
    }
    /* LOCAL round trips too. */
    uint8_t bin[16];
    struct proxy_header h;
    size_t n = proxy_write_v2(bin, sizeof(bin), NULL, NULL);
    expect_header(PROXY_V2, bin, n, &h);
    assert_true(h.local);
}

/* ---- misc -------------------------------------------------------------- */

static void test_strerror(void **state)
{
    (void)state;
    const int codes[] = {PROXY_E_SIGNATURE, PROXY_E_VERSION,  PROXY_E_COMMAND, PROXY_E_FAMILY,
                         PROXY_E_ADDRESS,   PROXY_E_TOO_LONG, PROXY_E_SYNTAX};
    const size_t nc = sizeof(codes) / sizeof(codes[0]);
    const char *unknown = proxy_strerror(-100);
    assert_non_null(unknown);
    assert_non_null(proxy_strerror(0));
    for (size_t i = 0; i < nc; i++) {
        const char *s = proxy_strerror(codes[i]);
        assert_non_null(s);
        assert_true(strlen(s) > 0 && strlen(s) < 64);
        assert_non_null(strstr(s, "PROXY"));
        assert_string_not_equal(s, unknown);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(s, proxy_strerror(codes[j]));
    }
}

static void test_empty_and_bad_version(void **state)
{
    (void)state;
    struct proxy_header h;
    assert_int_equal(proxy_parse(PROXY_V1, NULL, 0, &h), 0);
    assert_int_equal(proxy_parse(PROXY_V2, NULL, 0, &h), 0);
    const uint8_t line[] = "PROXY UNKNOWN\r\n";
    assert_int_equal(proxy_parse((enum proxy_version)3, line, sizeof(line) - 1, &h),
                     PROXY_E_SIGNATURE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_tcp4),
        cmocka_unit_test(test_v1_tcp6),
        cmocka_unit_test(test_v1_unknown),
        cmocka_unit_test(test_v1_trailing_data_not_consumed),
        cmocka_unit_test(test_v1_truncated_every_length),
        cmocka_unit_test(test_v1_length_limit),
        cmocka_unit_test(test_v1_signature),
        cmocka_unit_test(test_v1_syntax),
        cmocka_unit_test(test_v1_bad_ports),
        cmocka_unit_test(test_v1_bad_addresses),
        cmocka_unit_test(test_v1_nul_bytes),
        cmocka_unit_test(test_v2_ipv4),
        cmocka_unit_test(test_v2_ipv6),
        cmocka_unit_test(test_v2_local),
        cmocka_unit_test(test_v2_unspec),
        cmocka_unit_test(test_v2_tlvs_skipped),
        cmocka_unit_test(test_v2_trailing_data_not_consumed),
        cmocka_unit_test(test_v2_truncated_every_length),
        cmocka_unit_test(test_v2_signature),
        cmocka_unit_test(test_v2_version),
        cmocka_unit_test(test_v2_command),
        cmocka_unit_test(test_v2_family),
        cmocka_unit_test(test_v2_length_too_short),
        cmocka_unit_test(test_v2_length_limit),
        cmocka_unit_test(test_v2_error_order),
        cmocka_unit_test(test_write_v1),
        cmocka_unit_test(test_write_v2),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_empty_and_bad_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
