/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks4_test.c: the SOCKS4/4a parser and reply writer of proto/socks4,
 * held to the contract in socks4.h: > 0 consumed, 0 need more, < 0
 * SOCKS4_E_*. Every message is also cut at every length, and the two
 * NUL-terminated fields are pushed to their bound: a field without its NUL
 * is judged as soon as 256 bytes of it are there.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "proto/socks4.h"

/* VER CMD PORT IP USERID NUL [HOSTNAME NUL] into out; returns its length.
 * host NULL: no HOSTNAME field. The fields' bytes are copied as given. */
static size_t make_request(uint8_t *out, uint8_t cmd, uint16_t port, const uint8_t ip[4],
                           const void *user, size_t ulen, const void *host, size_t hlen)
{
    size_t n = 0;
    out[n++] = SOCKS4_VERSION;
    out[n++] = cmd;
    out[n++] = (uint8_t)(port >> 8);
    out[n++] = (uint8_t)port;
    memcpy(out + n, ip, 4);
    n += 4;
    if (ulen)
        memcpy(out + n, user, ulen);
    n += ulen;
    out[n++] = 0;
    if (host) {
        if (hlen)
            memcpy(out + n, host, hlen);
        n += hlen;
        out[n++] = 0;
    }
    return n;
}

/* Parse msg[0..len) from an exact-size heap copy, so ASan sees any read
 * past len. */
static ssize_t parse_exact(const uint8_t *msg, size_t len, struct socks4_request *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks4_parse_request(copy, len, out);
    free(copy);
    return rc;
}

static bool request_equal(const struct socks4_request *a, const struct socks4_request *b)
{
    return a->cmd == b->cmd && a->port == b->port && memcmp(a->ip, b->ip, 4) == 0 &&
           strcmp(a->userid, b->userid) == 0 && strcmp(a->host, b->host) == 0;
}

/* Every prefix shorter than want is "need more"; every length from want on
 * gives want (bytes behind the request are not consumed), and a success
 * parses to the same fields. Then the same a byte at a time. */
static void check_every_length(const uint8_t *msg, size_t len, ssize_t want, size_t decided_at)
{
    struct socks4_request whole, part;
    memset(&whole, 0, sizeof(whole));
    assert_int_equal(parse_exact(msg, len, &whole), want);
    for (size_t k = 0; k <= len; k++) {
        memset(&part, 0xa5, sizeof(part));
        ssize_t got = parse_exact(msg, k, &part);
        if (k < decided_at) {
            if (got != 0)
                fail_msg("prefix %zu of %zu: %zd, expected 0 (decided at %zu)", k, len, got,
                         decided_at);
        } else {
            if (got != want)
                fail_msg("prefix %zu of %zu: %zd, expected %zd", k, len, got, want);
            if (want > 0)
                assert_true(request_equal(&part, &whole));
        }
    }
}

static const uint8_t ip_loop[4] = {127, 0, 0, 1};
static const uint8_t ip_4a[4] = {0, 0, 0, 1};

/* ---- SOCKS4 -------------------------------------------------------------- */

static void test_connect_empty_userid(void **state)
{
    (void)state;
    uint8_t msg[16];
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_loop, NULL, 0, NULL, 0);
    assert_int_equal(n, 9);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), 9);
    assert_int_equal(r.cmd, SOCKS4_CMD_CONNECT);
    assert_int_equal(r.port, 80);
    assert_memory_equal(r.ip, ip_loop, 4);
    assert_string_equal(r.userid, "");
    assert_string_equal(r.host, "");
    assert_false(socks4_is_4a(&r));
    check_every_length(msg, n, 9, 9);
}

static void test_connect_with_userid(void **state)
{
    (void)state;
    uint8_t msg[64];
    const uint8_t ip[4] = {192, 0, 2, 200};
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 0x1234, ip, "alice", 5, NULL, 0);
    assert_int_equal(n, 14);
    /* Port and address in network order, read byte by byte. */
    assert_int_equal(msg[2], 0x12);
    assert_int_equal(msg[3], 0x34);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), 14);
    assert_int_equal(r.port, 0x1234);
    assert_memory_equal(r.ip, ip, 4);
    assert_string_equal(r.userid, "alice");
    assert_string_equal(r.host, "");
    check_every_length(msg, n, 14, 14);
}

static void test_every_field_value(void **state)
{
    (void)state;
    /* Every CMD parses (the relay judges it); ports at the edges. */
    static const uint16_t ports[] = {0, 1, 255, 256, 0x8000, 0xffff};
    uint8_t msg[32];
    for (unsigned cmd = 0; cmd < 256; cmd += 17) {
        for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
            const uint8_t ip[4] = {(uint8_t)cmd, 2, 3, (uint8_t)(i + 1)};
            size_t n = make_request(msg, (uint8_t)cmd, ports[i], ip, "u", 1, NULL, 0);
            struct socks4_request r;
            assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
            assert_int_equal(r.cmd, cmd);
            assert_int_equal(r.port, ports[i]);
            assert_memory_equal(r.ip, ip, 4);
        }
    }
    /* BIND has the same shape as CONNECT. */
    size_t n = make_request(msg, SOCKS4_CMD_BIND, 21, ip_loop, "ftp", 3, NULL, 0);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_int_equal(r.cmd, SOCKS4_CMD_BIND);
}

static void test_userid_bytes(void **state)
{
    (void)state;
    /* USERID is opaque: any byte but NUL is kept as it is. */
    uint8_t user[255];
    for (size_t i = 0; i < sizeof(user); i++)
        user[i] = (uint8_t)(i + 1);
    uint8_t msg[300];
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 1, ip_loop, user, sizeof(user), NULL, 0);
    assert_int_equal(n, 8 + 255 + 1);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_int_equal(strlen(r.userid), 255);
    assert_memory_equal(r.userid, user, 255);
    check_every_length(msg, n, (ssize_t)n, n);
}

static void test_userid_too_long(void **state)
{
    (void)state;
    uint8_t msg[600];
    uint8_t user[300];
    memset(user, 'u', sizeof(user));
    /* 256 bytes then a NUL: too long. */
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 1, ip_loop, user, 256, NULL, 0);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), SOCKS4_E_FIELD);
    /* Without a NUL: "need more" up to 255 bytes, refused at the 256th. */
    n = make_request(msg, SOCKS4_CMD_CONNECT, 1, ip_loop, user, 300, NULL, 0);
    for (size_t k = 0; k <= 8 + 300; k++) {
        ssize_t got = parse_exact(msg, k, &r);
        assert_int_equal(got, k < 8 + 256 ? 0 : SOCKS4_E_FIELD);
    }
    check_every_length(msg, 8 + 300, SOCKS4_E_FIELD, 8 + 256);
}

static void test_trailing_bytes(void **state)
{
    (void)state;
    /* A client may send data behind the request: it is not consumed. */
    uint8_t msg[64];
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_loop, "bob", 3, NULL, 0);
    memcpy(msg + n, "GET / HTTP/1.0\r\n", 16);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n + 16, &r), (ssize_t)n);
    assert_string_equal(r.userid, "bob");
    /* Even a trailing "4a-looking" NUL-terminated field is left alone
     * when DSTIP is not 0.0.0.x. */
    n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_loop, "bob", 3, "host", 4);
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)(n - 5));
    assert_string_equal(r.host, "");
}

static void test_bad_version(void **state)
{
    (void)state;
    uint8_t msg[32];
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_loop, "u", 1, NULL, 0);
    struct socks4_request r;
    static const uint8_t versions[] = {0, 1, 3, 5, 0x44, 0x47, 0xff};
    for (size_t i = 0; i < sizeof(versions); i++) {
        msg[0] = versions[i];
        /* Judged on the first byte alone. */
        for (size_t k = 1; k <= n; k++)
            assert_int_equal(parse_exact(msg, k, &r), SOCKS4_E_VERSION);
    }
    assert_int_equal(parse_exact(msg, 0, &r), 0);
}

/* ---- SOCKS4a ------------------------------------------------------------- */

static void test_4a_hostname(void **state)
{
    (void)state;
    uint8_t msg[64];
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 443, ip_4a, "alice", 5, "example.com", 11);
    assert_int_equal(n, 8 + 6 + 12);
    struct socks4_request r;
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_true(socks4_is_4a(&r));
    assert_string_equal(r.userid, "alice");
    assert_string_equal(r.host, "example.com");
    assert_int_equal(r.port, 443);
    check_every_length(msg, n, (ssize_t)n, n);

    /* Empty USERID, then the name. */
    n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, NULL, 0, "localhost", 9);
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_string_equal(r.userid, "");
    assert_string_equal(r.host, "localhost");
    check_every_length(msg, n, (ssize_t)n, n);

    /* Bytes behind the HOSTNAME are not consumed. */
    memcpy(msg + n, "data", 4);
    assert_int_equal(parse_exact(msg, n + 4, &r), (ssize_t)n);
}

static void test_4a_which_addresses(void **state)
{
    (void)state;
    /* 0.0.0.x with x != 0 is 4a; anything else is plain SOCKS4. */
    static const uint8_t is4a[][4] = {{0, 0, 0, 1}, {0, 0, 0, 7}, {0, 0, 0, 255}};
    static const uint8_t not4a[][4] = {{0, 0, 0, 0}, {0, 0, 1, 0},   {0, 1, 0, 1},
                                       {1, 0, 0, 1}, {127, 0, 0, 1}, {0, 0, 1, 1}};
    uint8_t msg[64];
    struct socks4_request r;
    for (size_t i = 0; i < sizeof(is4a) / sizeof(is4a[0]); i++) {
        size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, is4a[i], "u", 1, "h", 1);
        assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
        assert_true(socks4_is_4a(&r));
        assert_string_equal(r.host, "h");
        /* Without the HOSTNAME, it is not complete. */
        assert_int_equal(parse_exact(msg, n - 2, &r), 0);
    }
    for (size_t i = 0; i < sizeof(not4a) / sizeof(not4a[0]); i++) {
        size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, not4a[i], "u", 1, NULL, 0);
        assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
        assert_false(socks4_is_4a(&r));
        assert_string_equal(r.host, "");
    }
}

static void test_4a_hostname_lengths(void **state)
{
    (void)state;
    uint8_t msg[700], host[300];
    memset(host, 'h', sizeof(host));
    struct socks4_request r;
    /* 255 fits, with a USERID of 255 too. */
    uint8_t user[255];
    memset(user, 'u', sizeof(user));
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, user, 255, host, 255);
    assert_int_equal(n, 8 + 256 + 256);
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_int_equal(strlen(r.userid), 255);
    assert_int_equal(strlen(r.host), 255);
    /* 256 then a NUL: too long. */
    n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, "u", 1, host, 256);
    assert_int_equal(parse_exact(msg, n, &r), SOCKS4_E_FIELD);
    /* No NUL: refused as soon as 256 bytes of the name are there. */
    n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, "u", 1, host, 300);
    size_t start = 8 + 2;
    check_every_length(msg, n - 1, SOCKS4_E_FIELD, start + 256);
    assert_int_equal(parse_exact(msg, start + 255, &r), 0);
    assert_int_equal(parse_exact(msg, start + 256, &r), SOCKS4_E_FIELD);
}

static void test_4a_bad_hostname(void **state)
{
    (void)state;
    uint8_t msg[64];
    struct socks4_request r;
    /* Empty: judged when its NUL arrives. */
    size_t n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, "u", 1, "", 0);
    check_every_length(msg, n, SOCKS4_E_FIELD, n);
    /* Spaces, controls and DEL anywhere in the name. */
    static const uint8_t bad[] = {0x01, 0x09, 0x0a, 0x0d, 0x1f, 0x20, 0x7f};
    for (size_t i = 0; i < sizeof(bad); i++) {
        for (size_t pos = 0; pos < 3; pos++) {
            uint8_t name[3] = {'a', 'b', 'c'};
            name[pos] = bad[i];
            n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, "u", 1, name, 3);
            assert_int_equal(parse_exact(msg, n, &r), SOCKS4_E_FIELD);
            /* Not before the whole name is there. */
            assert_int_equal(parse_exact(msg, n - 1, &r), 0);
        }
    }
    /* The USERID may hold such bytes: only the name is a host. */
    const uint8_t odd_user[] = {' ', 0x01, 0x7f};
    n = make_request(msg, SOCKS4_CMD_CONNECT, 80, ip_4a, odd_user, 3, "ok.example", 10);
    assert_int_equal(parse_exact(msg, n, &r), (ssize_t)n);
    assert_string_equal(r.host, "ok.example");
}

static void test_incremental_matches_whole(void **state)
{
    (void)state;
    /* Fed a byte at a time into one growing buffer, as the session does. */
    uint8_t msg[64];
    size_t n = make_request(msg, SOCKS4_CMD_BIND, 8080, ip_4a, "carol", 5, "a.b.c", 5);
    struct socks4_request whole, part;
    assert_int_equal(parse_exact(msg, n, &whole), (ssize_t)n);
    struct harness_rng rng;
    harness_rng_init(&rng, 4);
    for (int round = 0; round < 50; round++) {
        size_t k = 0;
        ssize_t got = 0;
        while (got == 0 && k < n) {
            k += 1 + harness_rng_below(&rng, 4);
            if (k > n)
                k = n;
            got = parse_exact(msg, k, &part);
        }
        assert_int_equal(got, (ssize_t)n);
        assert_int_equal(k, n);
        assert_true(request_equal(&part, &whole));
    }
}

/* ---- replies --------------------------------------------------------- */

static void test_reply_ipv4(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("192.0.2.7:4660", -1, &a), 0);
    uint8_t out[SOCKS4_REPLY_LEN];
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks4_write_reply(out, SOCKS4_GRANTED, &a), 8);
    const uint8_t want[] = {0x00, 0x5a, 0x12, 0x34, 192, 0, 2, 7};
    assert_memory_equal(out, want, 8);
}

static void test_reply_null_and_other_families(void **state)
{
    (void)state;
    uint8_t out[SOCKS4_REPLY_LEN];
    const uint8_t zeros_rejected[] = {0x00, 0x5b, 0, 0, 0, 0, 0, 0};
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks4_write_reply(out, SOCKS4_REJECTED, NULL), 8);
    assert_memory_equal(out, zeros_rejected, 8);

    /* SOCKS4 cannot carry IPv6: port and address are zeros. */
    struct addr a6;
    assert_int_equal(addr_parse("[2001:db8::1]:443", -1, &a6), 0);
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks4_write_reply(out, SOCKS4_REJECTED, &a6), 8);
    assert_memory_equal(out, zeros_rejected, 8);

    struct addr unset;
    memset(&unset, 0, sizeof(unset));
    memset(out, 0xee, sizeof(out));
    assert_int_equal(socks4_write_reply(out, SOCKS4_GRANTED, &unset), 8);
    const uint8_t zeros_granted[] = {0x00, 0x5a, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(out, zeros_granted, 8);

    /* Any code goes in the second byte; the first is always 0. */
    for (unsigned rep = 0; rep < 256; rep++) {
        socks4_write_reply(out, (uint8_t)rep, NULL);
        assert_int_equal(out[0], 0);
        assert_int_equal(out[1], rep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_empty_userid),
        cmocka_unit_test(test_connect_with_userid),
        cmocka_unit_test(test_every_field_value),
        cmocka_unit_test(test_userid_bytes),
        cmocka_unit_test(test_userid_too_long),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_bad_version),
        cmocka_unit_test(test_4a_hostname),
        cmocka_unit_test(test_4a_which_addresses),
        cmocka_unit_test(test_4a_hostname_lengths),
        cmocka_unit_test(test_4a_bad_hostname),
        cmocka_unit_test(test_incremental_matches_whole),
        cmocka_unit_test(test_reply_ipv4),
        cmocka_unit_test(test_reply_null_and_other_families),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
