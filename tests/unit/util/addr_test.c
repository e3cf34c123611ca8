/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * addr_test.c: struct addr as text and as sockaddr. Numeric addresses
 * only: a host name must be refused, never looked up.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "util/addr.h"

static void assert_v4(const struct addr *a, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3,
                      uint16_t port)
{
    const uint8_t ip[4] = {b0, b1, b2, b3};
    assert_int_equal(a->family, AF_INET);
    assert_memory_equal(a->ip, ip, 4);
    assert_int_equal(a->port, port);
}

static void test_parse_ipv4_port(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("1.2.3.4:80", -1, &a), 0);
    assert_v4(&a, 1, 2, 3, 4, 80);
    assert_int_equal(addr_parse("255.255.255.255:65535", -1, &a), 0);
    assert_v4(&a, 255, 255, 255, 255, 65535);
    assert_int_equal(addr_parse("0.0.0.0:0", -1, &a), 0);
    assert_v4(&a, 0, 0, 0, 0, 0);
    /* The default port does not override an explicit one. */
    assert_int_equal(addr_parse("10.0.0.1:8080", 1080, &a), 0);
    assert_v4(&a, 10, 0, 0, 1, 8080);
}

static void test_parse_ipv6_port(void **state)
{
    (void)state;
    struct addr a;
    const uint8_t loop6[16] = {[15] = 1};
    assert_int_equal(addr_parse("[::1]:80", -1, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_memory_equal(a.ip, loop6, 16);
    assert_int_equal(a.port, 80);

    uint8_t want[16];
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::a:b", want), 1);
    assert_int_equal(addr_parse("[2001:db8::a:b]:65535", -1, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_memory_equal(a.ip, want, 16);
    assert_int_equal(a.port, 65535);
}

static void test_parse_default_port(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("1.2.3.4", 1080, &a), 0);
    assert_v4(&a, 1, 2, 3, 4, 1080);
    assert_int_equal(addr_parse("::1", 443, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(a.port, 443);
    assert_true(addr_is_loopback(&a));
    assert_int_equal(addr_parse("[::1]", 0, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(a.port, 0);
    assert_int_equal(addr_parse("fe80::1:2", 65535, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(a.port, 65535);
}

static void test_parse_missing_port(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse("1.2.3.4", -1, &a), -EINVAL);
    assert_int_equal(addr_parse("::1", -1, &a), -EINVAL);
    assert_int_equal(addr_parse("[::1]", -1, &a), -EINVAL);
    assert_int_equal(addr_parse("2001:db8::1", -1, &a), -EINVAL);
}

static void test_parse_bad_ports(void **state)
{
    (void)state;
    const char *bad[] = {
        "1.2.3.4:65536", "1.2.3.4:-1",  "1.2.3.4:",    "1.2.3.4:http", "1.2.3.4:8o",
        "1.2.3.4:+80",   "1.2.3.4: 80", "1.2.3.4:80 ", "1.2.3.4:0x50", "1.2.3.4:99999999999",
        "[::1]:65536",   "[::1]:",      "[::1]:-1",    "[::1]:abc",    "[::1]80",
        "1.2.3.4:80:90", "[::1]:80:90",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct addr a;
        /* A bad explicit port is an error even when a default exists. */
        if (addr_parse(bad[i], 1080, &a) != -EINVAL)
            fail_msg("addr_parse accepted '%s'", bad[i]);
    }
}

static void test_parse_garbage_and_names(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        ":",
        ":80",
        "[]:80",
        "[]",
        "[::1",
        "[::1]x",
        "::1]:80",
        "1.2.3:80",
        "1.2.3.4.5:80",
        "256.1.1.1:80",
        "1.2.3.-4:80",
        " 1.2.3.4:80",
        "[ ::1]:80",
        "localhost:80",
        "localhost",
        "example.com:443",
        "example.com",
        "[localhost]:80",
        "[fe80::1%lo]:80",
        "1.2.3.4/24:80",
        "gggg::1",
        "[::1:80",
        "[2001:db8::1::2]:80",
        "123456789012345678901234567890123456789012345678901234567890:80",
        "[123456789012345678901234567890123456789012345678901234567890]:80",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct addr a;
        if (addr_parse(bad[i], 1080, &a) != -EINVAL)
            fail_msg("addr_parse accepted '%s'", bad[i]);
    }
}

static void test_parse_ip(void **state)
{
    (void)state;
    struct addr a;
    assert_int_equal(addr_parse_ip("192.0.2.1", 99, &a), 0);
    assert_v4(&a, 192, 0, 2, 1, 99);
    assert_int_equal(addr_parse_ip("::", 7, &a), 0);
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(a.port, 7);
    assert_int_equal(addr_parse_ip("1.2.3.4:80", 0, &a), -EINVAL);
    assert_int_equal(addr_parse_ip("[::1]", 0, &a), -EINVAL);
    assert_int_equal(addr_parse_ip("host", 0, &a), -EINVAL);
}

static void test_format_round_trip(void **state)
{
    (void)state;
    /* Canonical texts survive parse -> format unchanged. */
    const char *texts[] = {
        "1.2.3.4:80",
        "0.0.0.0:0",
        "255.255.255.255:65535",
        "[::1]:80",
        "[::]:1080",
        "[2001:db8::1]:443",
        "[fe80::1:2:3:4]:1",
        "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535", /* the longest: 47 chars */
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct addr a, b;
        char buf[ADDR_STRLEN];
        assert_int_equal(addr_parse(texts[i], -1, &a), 0);
        assert_string_equal(addr_format(&a, buf, sizeof(buf)), texts[i]);
        assert_int_equal(addr_parse(buf, -1, &b), 0);
        assert_true(addr_equal(&a, &b));
    }
    /* Non-canonical input formats canonically. */
    struct addr a;
    char buf[ADDR_STRLEN];
    assert_int_equal(addr_parse("[2001:DB8:0:0:0:0:0:1]:8080", -1, &a), 0);
    assert_string_equal(addr_format(&a, buf, sizeof(buf)), "[2001:db8::1]:8080");
}

static void test_format_ip(void **state)
{
    (void)state;
    struct addr a;
    char buf[ADDR_STRLEN];
    assert_int_equal(addr_parse("10.20.30.40:5", -1, &a), 0);
    assert_string_equal(addr_format_ip(&a, buf, sizeof(buf)), "10.20.30.40");
    assert_int_equal(addr_parse("[::1]:5", -1, &a), 0);
    assert_string_equal(addr_format_ip(&a, buf, sizeof(buf)), "::1");
    struct addr b;
    assert_int_equal(addr_parse_ip(buf, 5, &b), 0);
    assert_true(addr_equal(&a, &b));

    memset(&a, 0, sizeof(a));
    assert_string_equal(addr_format_ip(&a, buf, sizeof(buf)), "-");
    assert_string_equal(addr_format(&a, buf, sizeof(buf)), "-");
}

static void test_format_truncates_safely(void **state)
{
    (void)state;
    struct addr a;
    char buf[8];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(addr_parse("192.168.100.200:65535", -1, &a), 0);
    assert_ptr_equal(addr_format(&a, buf, sizeof(buf)), buf);
    assert_int_equal(strlen(buf), 7); /* always NUL-terminated */
    assert_memory_equal(buf, "192.168", 7);

    memset(buf, 'x', sizeof(buf));
    assert_int_equal(addr_parse("[2001:db8::1]:1", -1, &a), 0);
    addr_format(&a, buf, 4);
    assert_true(strlen(buf) < 4);
    addr_format_ip(&a, buf, 5);
    assert_true(strlen(buf) < 5);
    /* len 0 writes nothing */
    buf[0] = 'Q';
    addr_format_ip(&a, buf, 0);
    assert_int_equal(buf[0], 'Q');
}

static void test_from_sockaddr(void **state)
{
    (void)state;
    struct addr a;
    char buf[ADDR_STRLEN];

    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(1080);
    assert_int_equal(inet_pton(AF_INET, "198.51.100.7", &sin.sin_addr), 1);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin);
    assert_string_equal(addr_format(&a, buf, sizeof(buf)), "198.51.100.7:1080");

    struct sockaddr_in6 sin6;
    memset(&sin6, 0, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(443);
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::99", &sin6.sin6_addr), 1);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin6);
    assert_int_equal(a.family, AF_INET6);
    assert_string_equal(addr_format(&a, buf, sizeof(buf)), "[2001:db8::99]:443");

    /* A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d: folded. */
    assert_int_equal(inet_pton(AF_INET6, "::ffff:203.0.113.5", &sin6.sin6_addr), 1);
    sin6.sin6_port = htons(50000);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin6);
    assert_v4(&a, 203, 0, 113, 5, 50000);
    assert_string_equal(addr_format(&a, buf, sizeof(buf)), "203.0.113.5:50000");
    assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6.sin6_addr), 1);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin6);
    assert_int_equal(a.family, AF_INET);
    assert_true(addr_is_loopback(&a));

    /* Not mapped: ::1.2.3.4 (deprecated IPv4-compatible) and 64:ff9b::/96 stay IPv6. */
    assert_int_equal(inet_pton(AF_INET6, "::1.2.3.4", &sin6.sin6_addr), 1);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin6);
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(inet_pton(AF_INET6, "64:ff9b::1.2.3.4", &sin6.sin6_addr), 1);
    addr_from_sockaddr(&a, (struct sockaddr *)&sin6);
    assert_int_equal(a.family, AF_INET6);

    /* Another family leaves the address unset. */
    struct sockaddr_un un;
    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    memset(&a, 0xff, sizeof(a));
    addr_from_sockaddr(&a, (struct sockaddr *)&un);
    assert_int_equal(a.family, 0);
    assert_int_equal(a.port, 0);
}

static void test_to_sockaddr(void **state)
{
    (void)state;
    struct addr a, back;
    struct sockaddr_storage ss;

    assert_int_equal(addr_parse("192.0.2.33:8443", -1, &a), 0);
    assert_int_equal(addr_to_sockaddr(&a, &ss), sizeof(struct sockaddr_in));
    const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)&ss;
    assert_int_equal(sin->sin_family, AF_INET);
    assert_int_equal(sin->sin_port, htons(8443));
    assert_int_equal(sin->sin_addr.s_addr, htonl(0xc0000221));
    addr_from_sockaddr(&back, (const struct sockaddr *)&ss);
    assert_true(addr_equal(&a, &back));

    assert_int_equal(addr_parse("[2001:db8::77]:53", -1, &a), 0);
    assert_int_equal(addr_to_sockaddr(&a, &ss), sizeof(struct sockaddr_in6));
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)&ss;
    assert_int_equal(sin6->sin6_family, AF_INET6);
    assert_int_equal(sin6->sin6_port, htons(53));
    assert_memory_equal(&sin6->sin6_addr, a.ip, 16);
    assert_int_equal(sin6->sin6_scope_id, 0);
    assert_int_equal(sin6->sin6_flowinfo, 0);
    addr_from_sockaddr(&back, (const struct sockaddr *)&ss);
    assert_true(addr_equal(&a, &back));

    memset(&a, 0, sizeof(a));
    assert_int_equal(addr_to_sockaddr(&a, &ss), 0);
}

static void test_loopback_any_equal(void **state)
{
    (void)state;
    struct addr a, b;
    const char *loop[] = {"127.0.0.1", "127.255.255.254", "127.1.2.3", "::1"};
    const char *not_loop[] = {
        "128.0.0.1", "126.255.255.255", "10.0.0.1", "0.0.0.0", "::", "::2", "fe80::1", "1::1"};
    for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
        assert_int_equal(addr_parse(loop[i], 1, &a), 0);
        assert_true(addr_is_loopback(&a));
    }
    for (size_t i = 0; i < sizeof(not_loop) / sizeof(not_loop[0]); i++) {
        assert_int_equal(addr_parse(not_loop[i], 1, &a), 0);
        assert_false(addr_is_loopback(&a));
    }

    assert_int_equal(addr_parse("0.0.0.0", 1, &a), 0);
    assert_true(addr_is_any(&a));
    assert_int_equal(addr_parse("::", 1, &a), 0);
    assert_true(addr_is_any(&a));
    assert_int_equal(addr_parse("0.0.0.1", 1, &a), 0);
    assert_false(addr_is_any(&a));
    assert_int_equal(addr_parse("::1", 1, &a), 0);
    assert_false(addr_is_any(&a));

    memset(&a, 0, sizeof(a));
    assert_false(addr_is_loopback(&a)); /* unset is neither */
    assert_false(addr_is_any(&a));

    assert_int_equal(addr_parse("10.0.0.1:80", -1, &a), 0);
    assert_int_equal(addr_parse("10.0.0.1:80", -1, &b), 0);
    assert_true(addr_equal(&a, &b));
    b.ip[9] = 0x77; /* beyond the four bytes of an IPv4 address */
    assert_true(addr_equal(&a, &b));
    assert_int_equal(addr_parse("10.0.0.1:81", -1, &b), 0);
    assert_false(addr_equal(&a, &b));
    assert_int_equal(addr_parse("10.0.0.2:80", -1, &b), 0);
    assert_false(addr_equal(&a, &b));
    assert_int_equal(addr_parse("[::ffff:10.0.0.1]:80", -1, &b), 0);
    assert_false(addr_equal(&a, &b)); /* different family */
    assert_int_equal(addr_parse("[2001:db8::1]:80", -1, &a), 0);
    assert_int_equal(addr_parse("[2001:db8::2]:80", -1, &b), 0);
    assert_false(addr_equal(&a, &b));
    assert_int_equal(addr_parse("[2001:db8::1]:80", -1, &b), 0);
    assert_true(addr_equal(&a, &b));
}

/* NAT64 (64:ff9b::/96) and 6to4 (2002::/16) stand for an IPv4 address. */
static void test_embedded_v4(void **state)
{
    (void)state;
    struct addr a, v4;
    assert_int_equal(addr_parse("[64:ff9b::7f00:1]:80", -1, &a), 0);
    assert_true(addr_embedded_v4(&a, &v4));
    assert_v4(&v4, 127, 0, 0, 1, 80);
    assert_int_equal(addr_parse("[64:ff9b::169.254.169.254]:80", -1, &a), 0);
    assert_true(addr_embedded_v4(&a, &v4));
    assert_v4(&v4, 169, 254, 169, 254, 80);
    assert_int_equal(addr_parse("[2002:7f00:1::1]:53", -1, &a), 0);
    assert_true(addr_embedded_v4(&a, &v4));
    assert_v4(&v4, 127, 0, 0, 1, 53);
    assert_int_equal(addr_parse("[2002:c000:0201:5::9]:1", -1, &a), 0);
    assert_true(addr_embedded_v4(&a, &v4));
    assert_v4(&v4, 192, 0, 2, 1, 1);
    /* Neighbours of the prefixes, other IPv6 and IPv4 embed nothing. */
    static const char *const none[] = {"[64:ff9b:1::7f00:1]:80",
                                       "[64:ff9a::7f00:1]:80",
                                       "[2003:7f00:1::1]:80",
                                       "[2001:db8::1]:80",
                                       "[::ffff:127.0.0.1]:80",
                                       "[::1]:80",
                                       "127.0.0.1:80"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        assert_int_equal(addr_parse(none[i], -1, &a), 0);
        if (addr_embedded_v4(&a, &v4))
            fail_msg("%s embeds an IPv4 address?", none[i]);
    }
}

static void test_multicast_or_broadcast(void **state)
{
    (void)state;
    static const char *const yes[] = {"224.0.0.1", "224.0.0.251",     "239.255.255.250",
                                      "232.1.2.3", "255.255.255.255", "ff02::1",
                                      "ff05::1:3", "ff0e::101"};
    static const char *const no[] = {"223.255.255.255", "240.0.0.1", "255.255.255.254",
                                     "10.255.255.255",  "fe80::1",   "fd00::ff",
                                     "::ffff:224.0.0.1" /* judged once unmapped */};
    struct addr a;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        assert_int_equal(addr_parse_ip(yes[i], 0, &a), 0);
        if (!addr_is_multicast_or_broadcast(&a))
            fail_msg("%s is not multicast or broadcast?", yes[i]);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        assert_int_equal(addr_parse_ip(no[i], 0, &a), 0);
        if (addr_is_multicast_or_broadcast(&a))
            fail_msg("%s is multicast or broadcast?", no[i]);
    }
    memset(&a, 0, sizeof(a));
    assert_false(addr_is_multicast_or_broadcast(&a));
}

static void test_prefix(void **state)
{
    (void)state;
    struct addr a, want;
    assert_int_equal(addr_parse("203.0.113.77:9", -1, &a), 0);
    struct addr k = addr_prefix(&a, 24, 48);
    assert_int_equal(addr_parse("203.0.113.0:0", -1, &want), 0);
    assert_true(addr_equal(&k, &want));
    k = addr_prefix(&a, 21, 48); /* not on a byte: 113 = 0x71 -> 0x70 */
    assert_int_equal(addr_parse("203.0.112.0:0", -1, &want), 0);
    assert_true(addr_equal(&k, &want));
    assert_int_equal(addr_parse("[2001:db8:1234:5678:9abc::1]:9", -1, &a), 0);
    k = addr_prefix(&a, 24, 48);
    assert_int_equal(addr_parse("[2001:db8:1234::]:0", -1, &want), 0);
    assert_true(addr_equal(&k, &want));
    k = addr_prefix(&a, 32, 64);
    assert_int_equal(addr_parse("[2001:db8:1234:5678::]:0", -1, &want), 0);
    assert_true(addr_equal(&k, &want));
    k = addr_prefix(&a, 32, 128);
    a.port = 0;
    assert_true(addr_equal(&k, &a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ipv4_port),
        cmocka_unit_test(test_parse_ipv6_port),
        cmocka_unit_test(test_parse_default_port),
        cmocka_unit_test(test_parse_missing_port),
        cmocka_unit_test(test_parse_bad_ports),
        cmocka_unit_test(test_parse_garbage_and_names),
        cmocka_unit_test(test_parse_ip),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_format_ip),
        cmocka_unit_test(test_format_truncates_safely),
        cmocka_unit_test(test_from_sockaddr),
        cmocka_unit_test(test_to_sockaddr),
        cmocka_unit_test(test_loopback_any_equal),
        cmocka_unit_test(test_embedded_v4),
        cmocka_unit_test(test_multicast_or_broadcast),
        cmocka_unit_test(test_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
