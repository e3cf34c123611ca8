/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent_test.c: the client side of a parent proxy's handshake
 * (proto/parent), held to parent.h: the exact bytes sent in each dialect,
 * every reply path (success with its BND, each SOCKS5 REP, RFC 1929 and
 * method refusals, SOCKS4 codes, HTTP statuses, malformed replies), and
 * that a reply fed whole, split, or a byte at a time is read the same and
 * never a byte past its end.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "proto/parent.h"

static struct addr v4(const char *ip)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(ip, 0, &a), 0);
    return a;
}

/* Take what is pending: it must be exactly want[0..n). */
static void expect_send(struct parent_hs *h, const void *want, size_t n)
{
    const uint8_t *p = NULL;
    size_t len = parent_pending(h, &p);
    assert_int_equal(len, n);
    assert_memory_equal(p, want, n);
    /* Feeding while something is pending consumes nothing. */
    assert_int_equal(parent_feed(h, (const uint8_t *)"\x05\x00", 2), 0);
    parent_sent(h, n);
    assert_int_equal(parent_pending(h, &p), 0);
}

/* Feed reply (n bytes) plus a tail that belongs to the relayed stream, in
 * the given chunk size (0: whole); expects exactly n consumed. */
static void feed_reply(struct parent_hs *h, const void *reply, size_t n, size_t chunk)
{
    uint8_t buf[1024];
    static const char tail[] = "TAIL";
    assert_true(n + 4 <= sizeof(buf));
    memcpy(buf, reply, n);
    memcpy(buf + n, tail, 4);
    size_t total = n + 4, used = 0;
    if (chunk == 0)
        chunk = total;
    while (used < total && parent_state(h) == PARENT_MORE) {
        const uint8_t *unused;
        if (parent_pending(h, &unused))
            break;
        size_t k = total - used < chunk ? total - used : chunk;
        size_t got = parent_feed(h, buf + used, k);
        assert_true(got <= k);
        used += got;
        if (got < k)
            break;
    }
    if (parent_state(h) != PARENT_FAILED)
        assert_int_equal(used, n);
}

static void feed_done(struct parent_hs *h, const void *reply, size_t n, size_t chunk)
{
    feed_reply(h, reply, n, chunk);
    assert_int_equal(parent_state(h), PARENT_DONE);
    assert_int_equal(h->fail, PARENT_FAIL_NONE);
    const uint8_t *p;
    assert_int_equal(parent_pending(h, &p), 0);
    assert_int_equal(parent_feed(h, (const uint8_t *)"x", 1), 0);
}

static void feed_fail(struct parent_hs *h, const void *reply, size_t n, enum parent_fail f)
{
    feed_reply(h, reply, n, 1);
    assert_int_equal(parent_state(h), PARENT_FAILED);
    assert_string_equal(parent_fail_name(h->fail), parent_fail_name(f));
    assert_true(h->reason[0] != '\0');
    assert_int_equal(parent_feed(h, (const uint8_t *)"x", 1), 0);
}

static const size_t chunks[] = {0, 1, 2, 3, 7};
#define NCHUNKS (sizeof(chunks) / sizeof(chunks[0]))

static void test_socks5_noauth_ipv4(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCHUNKS; c++) {
        struct parent_hs h;
        struct addr ip = v4("192.0.2.7");
        assert_int_equal(
            parent_init(&h, PARENT_SOCKS5, PARENT_CMD_CONNECT, NULL, NULL, NULL, &ip, 443), 0);
        /* Without credentials the request goes with the greeting. */
        expect_send(&h, "\x05\x01\x00\x05\x01\x00\x01\xc0\x00\x02\x07\x01\xbb", 13);
        assert_int_equal(parent_want(&h), 2 + 7);
        /* The method's answer and the request's reply follow back to back. */
        feed_done(&h, "\x05\x00\x05\x00\x00\x01\x7f\x00\x00\x01\x12\x34", 12, chunks[c]);
        assert_int_equal(parent_want(&h), 0);
        struct addr bnd;
        assert_true(parent_bnd(&h, &bnd));
        assert_int_equal(bnd.family, AF_INET);
        assert_int_equal(bnd.port, 0x1234);
        assert_memory_equal(bnd.ip, "\x7f\x00\x00\x01", 4);
    }
}

static void test_socks5_auth_name(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCHUNKS; c++) {
        struct parent_hs h;
        assert_int_equal(parent_init(&h, PARENT_SOCKS5, PARENT_CMD_CONNECT, "alice", "s3cret",
                                     "example.org", NULL, 80),
                         0);
        expect_send(&h, "\x05\x02\x00\x02", 4);
        feed_reply(&h, "\x05\x02", 2, chunks[c]);
        expect_send(&h,
                    "\x01\x05"
                    "alice"
                    "\x06"
                    "s3cret",
                    14);
        feed_reply(&h, "\x01\x00", 2, chunks[c]);
        expect_send(&h,
                    "\x05\x01\x00\x03\x0b"
                    "example.org"
                    "\x00\x50",
                    18);
        /* BND as a domain: done, but no address to give. */
        feed_done(&h,
                  "\x05\x00\x00\x03\x03"
                  "bnd"
                  "\x00\x01",
                  10, chunks[c]);
        struct addr bnd;
        assert_false(parent_bnd(&h, &bnd));
    }
}

static void test_socks5_auth_offered_none_chosen(void **state)
{
    (void)state;
    struct parent_hs h;
    assert_int_equal(
        parent_init(&h, PARENT_SOCKS5, PARENT_CMD_CONNECT, "u", "p", "a.example", NULL, 1), 0);
    expect_send(&h, "\x05\x02\x00\x02", 4);
    feed_reply(&h, "\x05\x00", 2, 1);
    /* The parent wants no authentication: straight to the request. */
    expect_send(&h,
                "\x05\x01\x00\x03\x09"
                "a.example"
                "\x00\x01",
                16);
    struct addr ip6;
    assert_int_equal(addr_parse_ip("2001:db8::1", 0, &ip6), 0);
    uint8_t rep[22] = {5, 0, 0, 4};
    memcpy(rep + 4, ip6.ip, 16);
    rep[20] = 0;
    rep[21] = 9;
    feed_done(&h, rep, sizeof(rep), 1);
    struct addr bnd;
    assert_true(parent_bnd(&h, &bnd));
    assert_int_equal(bnd.family, AF_INET6);
    assert_int_equal(bnd.port, 9);
}

static void test_socks5_udp_associate_ipv6(void **state)
{
    (void)state;
    struct parent_hs h;
    struct addr ip6;
    assert_int_equal(addr_parse_ip("::1", 0, &ip6), 0);
    assert_int_equal(
        parent_init(&h, PARENT_SOCKS5, PARENT_CMD_UDP_ASSOCIATE, NULL, NULL, NULL, &ip6, 53), 0);
    uint8_t req[3 + 22] = {5, 1, 0, 5, 3, 0, 4};
    req[3 + 19] = 1;
    req[3 + 21] = 53;
    expect_send(&h, req, sizeof(req)); /* greeting and request at once */
    feed_done(&h, "\x05\x00\x05\x00\x00\x01\x7f\x00\x00\x01\x30\x39", 12, 0);
}

static void test_socks5_auth_refused(void **state)
{
    (void)state;
    struct parent_hs h;
    assert_int_equal(
        parent_init(&h, PARENT_SOCKS5, PARENT_CMD_CONNECT, "u", "bad", "x.example", NULL, 1), 0);
    expect_send(&h, "\x05\x02\x00\x02", 4);
    feed_reply(&h, "\x05\x02", 2, 0);
    expect_send(&h,
                "\x01\x01u\x03"
                "bad",
                7);
    feed_fail(&h, "\x01\x01", 2, PARENT_FAIL_AUTH);
    assert_non_null(strstr(h.reason, "parent refused the credentials"));
}

static void test_socks5_no_acceptable(void **state)
{
    (void)state;
    for (int creds = 0; creds < 2; creds++) {
        struct parent_hs h;
        struct addr ip = v4("127.0.0.1");
        assert_int_equal(parent_init(&h, PARENT_SOCKS5, PARENT_CMD_CONNECT, creds ? "u" : NULL,
                                     creds ? "p" : NULL, NULL, &ip, 1),
                         0);
        const uint8_t *p;
        parent_sent(&h, parent_pending(&h, &p));
        feed_fail(&h, "\x05\xff", 2, PARENT_FAIL_AUTH);
    }
}

/* Bring a SOCKS5 handshake without credentials to the reply. */
static void s5_to_reply(struct parent_hs *h)
{
    struct addr ip = v4("127.0.0.1");
    assert_int_equal(parent_init(h, PARENT_SOCKS5, PARENT_CMD_CONNECT, NULL, NULL, NULL, &ip, 1),
                     0);
    const uint8_t *p;
    parent_sent(h, parent_pending(h, &p)); /* greeting and request */
    assert_int_equal(parent_feed(h, (const uint8_t *)"\x05\x00", 2), 2);
    assert_int_equal(parent_pending(h, &p), 0);
}

/* parent_want() never asks for a byte past the end of a reply, whatever
 * its address type, so a caller reading that many loses nothing of the
 * stream after it. */
static void test_want_stays_within_the_reply(void **state)
{
    (void)state;
    static const struct {
        const char *reply;
        size_t n;
    } t[] = {
        {"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50", 10},
        {"\x05\x00\x00\x04\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01\x00\x50", 22},
        {"\x05\x00\x00\x03\x00\x00\x50", 7},
        {"\x05\x00\x00\x03\x03"
         "abc"
         "\x00\x50",
         10},
        {"\x05\x05\x00\x01\0\0\0\0\0\0", 10},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct parent_hs h;
        s5_to_reply(&h);
        size_t at = 0;
        while (parent_state(&h) == PARENT_MORE) {
            size_t w = parent_want(&h);
            assert_true(w > 0 && at + w <= t[i].n);
            size_t used = parent_feed(&h, (const uint8_t *)t[i].reply + at, w);
            /* all of it, unless the reply ended the handshake on the way
             * (a failure is judged at its REP byte; an empty name is bad) */
            assert_true(used == w || parent_state(&h) != PARENT_MORE);
            at += used;
        }
        assert_true(at <= t[i].n);
    }
}

static void test_socks5_rep_codes(void **state)
{
    (void)state;
    static const struct {
        uint8_t rep;
        enum parent_fail f;
    } t[] = {
        {1, PARENT_FAIL_GENERAL},         {2, PARENT_FAIL_DENIED},
        {3, PARENT_FAIL_NET_UNREACHABLE}, {4, PARENT_FAIL_HOST_UNREACHABLE},
        {5, PARENT_FAIL_REFUSED},         {6, PARENT_FAIL_TIMEOUT},
        {7, PARENT_FAIL_CMD_UNSUPPORTED}, {8, PARENT_FAIL_ADDR_UNSUPPORTED},
        {9, PARENT_FAIL_GENERAL},         {0xff, PARENT_FAIL_GENERAL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct parent_hs h;
        s5_to_reply(&h);
        uint8_t rep[10] = {5, t[i].rep, 0, 1, 0, 0, 0, 0, 0, 0};
        feed_fail(&h, rep, sizeof(rep), t[i].f);
    }
    /* A failure reply is judged at its REP byte: a parent that closes
     * right after it is still understood. */
    struct parent_hs h;
    s5_to_reply(&h);
    assert_int_equal(parent_feed(&h, (const uint8_t *)"\x05\x05", 2), 2);
    assert_int_equal(parent_state(&h), PARENT_FAILED);
    assert_int_equal(h.fail, PARENT_FAIL_REFUSED);
}

static void test_socks5_malformed(void **state)
{
    (void)state;
    struct parent_hs h;
    struct addr ip = v4("127.0.0.1");
    const uint8_t *p;
    /* The method: a wrong version; a method not offered. */
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, NULL, &ip, 1), 0);
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "\x04\x00", 2, PARENT_FAIL_BAD_REPLY);
    assert_string_equal(h.reason, "bad reply from parent");
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, NULL, &ip, 1), 0);
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "\x05\x02", 2, PARENT_FAIL_BAD_REPLY);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, NULL, &ip, 1), 0);
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "\x05\x01", 2, PARENT_FAIL_BAD_REPLY);
    /* The auth status: a wrong version. */
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, "u", "p", NULL, &ip, 1), 0);
    parent_sent(&h, parent_pending(&h, &p));
    feed_reply(&h, "\x05\x02", 2, 0);
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "\x02\x00", 2, PARENT_FAIL_BAD_REPLY);
    /* The reply: version, RSV, ATYP, an empty domain. */
    static const char *const bad[] = {
        "\x04\x00\x00\x01\x00\x00\x00\x00\x00\x00", "\x05\x00\x01\x01\x00\x00\x00\x00\x00\x00",
        "\x05\x00\x00\x02\x00\x00\x00\x00\x00\x00", "\x05\x00\x00\x03\x00\x00\x00\x00\x00\x00"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s5_to_reply(&h);
        feed_fail(&h, bad[i], 10, PARENT_FAIL_BAD_REPLY);
    }
}

static void test_socks4a_and_4(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCHUNKS; c++) {
        struct parent_hs h;
        assert_int_equal(
            parent_init(&h, PARENT_SOCKS4, 1, "bob", "ignored", "example.org", NULL, 8080), 0);
        expect_send(&h,
                    "\x04\x01\x1f\x90\x00\x00\x00\x01"
                    "bob\0"
                    "example.org\0",
                    24);
        feed_done(&h, "\x00\x5a\x00\x50\x0a\x00\x00\x01", 8, chunks[c]);
        struct addr bnd;
        assert_true(parent_bnd(&h, &bnd));
        assert_int_equal(bnd.port, 80);
        assert_memory_equal(bnd.ip, "\x0a\x00\x00\x01", 4);
    }
    struct parent_hs h;
    struct addr ip = v4("10.1.2.3");
    assert_int_equal(parent_init(&h, PARENT_SOCKS4, 1, NULL, NULL, NULL, &ip, 22), 0);
    expect_send(&h, "\x04\x01\x00\x16\x0a\x01\x02\x03\x00", 9);
    feed_done(&h, "\x04\x5a\x00\x00\x00\x00\x00\x00", 8, 1);
    struct addr ip6;
    assert_int_equal(addr_parse_ip("::1", 0, &ip6), 0);
    assert_int_equal(parent_init(&h, PARENT_SOCKS4, 1, NULL, NULL, NULL, &ip6, 22), -EAFNOSUPPORT);
    assert_int_equal(parent_state(&h), PARENT_FAILED);
}

static void test_socks4_failures(void **state)
{
    (void)state;
    static const struct {
        uint8_t cd;
        enum parent_fail f;
    } t[] = {{0x5b, PARENT_FAIL_GENERAL},
             {0x5c, PARENT_FAIL_AUTH},
             {0x5d, PARENT_FAIL_AUTH},
             {0x00, PARENT_FAIL_BAD_REPLY}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct parent_hs h;
        assert_int_equal(parent_init(&h, PARENT_SOCKS4, 1, NULL, NULL, "a.example", NULL, 1), 0);
        const uint8_t *p;
        parent_sent(&h, parent_pending(&h, &p));
        uint8_t rep[8] = {0, t[i].cd};
        feed_fail(&h, rep, 8, t[i].f);
    }
    struct parent_hs h;
    assert_int_equal(parent_init(&h, PARENT_SOCKS4, 1, NULL, NULL, "a.example", NULL, 1), 0);
    const uint8_t *p;
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "\x05\x5a\0\0\0\0\0\0", 8, PARENT_FAIL_BAD_REPLY);
}

static void test_http_connect(void **state)
{
    (void)state;
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n"
                             "Proxy-Agent: test\r\n"
                             "\r\n";
    for (size_t c = 0; c < NCHUNKS; c++) {
        struct parent_hs h;
        assert_int_equal(parent_init(&h, PARENT_HTTP, 1, "user", "pass", "example.org", NULL, 443),
                         0);
        static const char req[] = "CONNECT example.org:443 HTTP/1.1\r\n"
                                  "Host: example.org:443\r\n"
                                  "Proxy-Authorization: Basic dXNlcjpwYXNz\r\n"
                                  "\r\n";
        expect_send(&h, req, strlen(req));
        feed_done(&h, ok, strlen(ok), chunks[c]);
        struct addr bnd;
        assert_false(parent_bnd(&h, &bnd));
    }
    /* An IPv6 destination is bracketed; no credentials, no field. */
    struct parent_hs h;
    struct addr ip6;
    assert_int_equal(addr_parse_ip("2001:db8::5", 0, &ip6), 0);
    assert_int_equal(parent_init(&h, PARENT_HTTP, 1, NULL, NULL, NULL, &ip6, 8443), 0);
    static const char req6[] = "CONNECT [2001:db8::5]:8443 HTTP/1.1\r\n"
                               "Host: [2001:db8::5]:8443\r\n"
                               "\r\n";
    expect_send(&h, req6, strlen(req6));
    /* An interim 1xx is skipped; bare LF line ends are taken; any 2xx. */
    static const char resp[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 OK\n\n";
    feed_done(&h, resp, strlen(resp), 1);
}

static void test_http_statuses(void **state)
{
    (void)state;
    static const struct {
        int status;
        enum parent_fail f;
    } t[] = {
        {407, PARENT_FAIL_AUTH},    {403, PARENT_FAIL_DENIED},
        {502, PARENT_FAIL_REFUSED}, {503, PARENT_FAIL_HOST_UNREACHABLE},
        {504, PARENT_FAIL_TIMEOUT}, {500, PARENT_FAIL_GENERAL},
        {404, PARENT_FAIL_GENERAL}, {405, PARENT_FAIL_CMD_UNSUPPORTED},
        {301, PARENT_FAIL_GENERAL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        struct parent_hs h;
        assert_int_equal(parent_init(&h, PARENT_HTTP, 1, "u", "p", "a.example", NULL, 1), 0);
        const uint8_t *p;
        parent_sent(&h, parent_pending(&h, &p));
        char resp[128];
        int n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d Whatever\r\nContent-Length: 0\r\n\r\n",
                         t[i].status);
        feed_fail(&h, resp, (size_t)n, t[i].f);
    }
    struct parent_hs h;
    assert_int_equal(parent_init(&h, PARENT_HTTP, 1, "u", "p", "a.example", NULL, 1), 0);
    const uint8_t *p;
    parent_sent(&h, parent_pending(&h, &p));
    feed_fail(&h, "HTTP/1.1 407 No\r\n\r\n", 19, PARENT_FAIL_AUTH);
    assert_non_null(strstr(h.reason, "parent refused the credentials"));
}

static void test_http_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "SSH-2.0-OpenSSH\r\n\r\n",
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "\r\n\r\n",
        "HTTP/1.1 099 x\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct parent_hs h;
        assert_int_equal(parent_init(&h, PARENT_HTTP, 1, NULL, NULL, "a.example", NULL, 1), 0);
        const uint8_t *p;
        parent_sent(&h, parent_pending(&h, &p));
        feed_fail(&h, bad[i], strlen(bad[i]), PARENT_FAIL_BAD_REPLY);
    }
    /* A head that does not end within the bound. */
    struct parent_hs h;
    assert_int_equal(parent_init(&h, PARENT_HTTP, 1, NULL, NULL, "a.example", NULL, 1), 0);
    const uint8_t *p;
    parent_sent(&h, parent_pending(&h, &p));
    static const char line[] = "HTTP/1.1 200 OK\r\n";
    assert_int_equal(parent_feed(&h, (const uint8_t *)line, strlen(line)), strlen(line));
    uint8_t junk[1000];
    memset(junk, 'a', sizeof(junk));
    junk[sizeof(junk) - 2] = '\r';
    junk[sizeof(junk) - 1] = '\n';
    size_t total = strlen(line);
    while (parent_state(&h) == PARENT_MORE && total < 2 * PARENT_HTTP_HEAD_MAX)
        total += parent_feed(&h, junk, sizeof(junk));
    assert_int_equal(parent_state(&h), PARENT_FAILED);
    assert_int_equal(h.fail, PARENT_FAIL_BAD_REPLY);
    assert_true(total <= PARENT_HTTP_HEAD_MAX + 1);
}

static void test_init_refusals(void **state)
{
    (void)state;
    struct parent_hs h;
    struct addr ip = v4("127.0.0.1");
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    /* Header injection through a name or credentials. */
    assert_int_equal(parent_init(&h, PARENT_HTTP, 1, NULL, NULL, "a\r\nX: y", NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_HTTP, 1, "u\n", "p", "a", NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, "", NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, big, NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, big, "p", "a", NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, "", "p", "a", NULL, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS4, 1, big, NULL, "a", NULL, 1), -EINVAL);
    /* Commands a dialect does not carry; no destination. */
    assert_int_equal(parent_init(&h, PARENT_HTTP, 3, NULL, NULL, NULL, &ip, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS4, 3, NULL, NULL, NULL, &ip, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 2, NULL, NULL, NULL, &ip, 1), -EINVAL);
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, NULL, NULL, NULL, NULL, 1), -EINVAL);
    assert_int_equal(parent_state(&h), PARENT_FAILED);
    const uint8_t *p;
    assert_int_equal(parent_pending(&h, &p), 0);
}

static void test_partial_send(void **state)
{
    (void)state;
    struct parent_hs h;
    assert_int_equal(parent_init(&h, PARENT_SOCKS5, 1, "u", "p", "a.example", NULL, 1), 0);
    const uint8_t *p;
    assert_int_equal(parent_pending(&h, &p), 4);
    parent_sent(&h, 1);
    assert_int_equal(parent_pending(&h, &p), 3);
    assert_memory_equal(p, "\x02\x00\x02", 3);
    assert_int_equal(parent_feed(&h, (const uint8_t *)"\x05\x02", 2), 0);
    parent_sent(&h, 99); /* more than pending: clamped */
    assert_int_equal(parent_pending(&h, &p), 0);
    assert_int_equal(parent_feed(&h, (const uint8_t *)"\x05\x02", 2), 2);
    assert_int_equal(parent_pending(&h, &p), 5);
}

static void test_basic_credentials(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(parent_basic_credentials("Aladdin", "open sesame", out, sizeof(out)), 28);
    assert_string_equal(out, "QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    assert_int_equal(parent_basic_credentials("a", NULL, out, sizeof(out)), 4);
    assert_string_equal(out, "YTo=");
    assert_int_equal(parent_basic_credentials("ab", "c", out, sizeof(out)), 8);
    assert_string_equal(out, "YWI6Yw==");
    assert_int_equal(parent_basic_credentials("Aladdin", "open sesame", out, 28), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socks5_noauth_ipv4),
        cmocka_unit_test(test_socks5_auth_name),
        cmocka_unit_test(test_socks5_auth_offered_none_chosen),
        cmocka_unit_test(test_socks5_udp_associate_ipv6),
        cmocka_unit_test(test_socks5_auth_refused),
        cmocka_unit_test(test_socks5_no_acceptable),
        cmocka_unit_test(test_socks5_rep_codes),
        cmocka_unit_test(test_want_stays_within_the_reply),
        cmocka_unit_test(test_socks5_malformed),
        cmocka_unit_test(test_socks4a_and_4),
        cmocka_unit_test(test_socks4_failures),
        cmocka_unit_test(test_http_connect),
        cmocka_unit_test(test_http_statuses),
        cmocka_unit_test(test_http_malformed),
        cmocka_unit_test(test_init_refusals),
        cmocka_unit_test(test_partial_send),
        cmocka_unit_test(test_basic_credentials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
