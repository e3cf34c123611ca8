/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * remote_test.c: ferry client's remote words (client/remote.c): every
 * form chisel's syntax has (socks, [ADDR:]PORT:socks, [ADDR:]PORT:HOST:PORT,
 * stdio:HOST:PORT, R:..., /udp), IPv6 in brackets, and every error: a bad
 * port, a missing part, unbalanced brackets, too many parts, duplicate
 * local ports, two stdio remotes. Also parse_host_port (util/parse.c),
 * which forward= listeners share.
 */
#include "harness.h"

#include <errno.h>
#include <netinet/in.h>

#include "client/remote.h"
#include "util/parse.h"

static struct remote parse_ok(const char *s)
{
    struct remote r;
    char err[700] = "";
    int rc = remote_parse(s, &r, err, sizeof(err));
    if (rc)
        fail_msg("%s: %s", s, err);
    return r;
}

/* Refused, with a message that names the word and says what. */
static void parse_bad(const char *s, const char *says)
{
    struct remote r;
    char err[700] = "";
    assert_int_equal(remote_parse(s, &r, err, sizeof(err)), -1);
    if (!strstr(err, says))
        fail_msg("%s: message '%s' lacks '%s'", s, err, says);
}

static void assert_local(const struct remote *r, const char *text)
{
    char a[ADDR_STRLEN];
    assert_string_equal(addr_format(&r->local, a, sizeof(a)), text);
}

static void test_socks_forms(void **state)
{
    (void)state;
    struct remote r = parse_ok("socks");
    assert_int_equal(r.kind, REMOTE_SOCKS);
    assert_false(r.reverse);
    assert_local(&r, "127.0.0.1:1080");
    r = parse_ok("1081:socks");
    assert_local(&r, "127.0.0.1:1081");
    r = parse_ok("0.0.0.0:1082:socks");
    assert_local(&r, "0.0.0.0:1082");
    r = parse_ok("[::1]:1083:socks");
    assert_local(&r, "[::1]:1083");
    r = parse_ok("localhost:1084:socks");
    assert_local(&r, "127.0.0.1:1084");
    r = parse_ok("R:socks");
    assert_true(r.reverse);
    assert_int_equal(r.kind, REMOTE_SOCKS);
    r = parse_ok("R:2080:socks");
    assert_true(r.reverse);
    assert_local(&r, "127.0.0.1:2080");
}

static void test_forward_forms(void **state)
{
    (void)state;
    struct remote r = parse_ok("8080:10.0.0.5:80");
    assert_int_equal(r.kind, REMOTE_FORWARD);
    assert_local(&r, "127.0.0.1:8080");
    assert_string_equal(r.host, "10.0.0.5");
    assert_int_equal(r.port, 80);
    r = parse_ok("0.0.0.0:8080:db.internal:5432");
    assert_local(&r, "0.0.0.0:8080");
    assert_string_equal(r.host, "db.internal");
    assert_int_equal(r.port, 5432);
    r = parse_ok("[::1]:8080:[2001:db8::1]:80");
    assert_local(&r, "[::1]:8080");
    assert_string_equal(r.host, "2001:db8::1");
    assert_int_equal(r.port, 80);
    r = parse_ok("8080:[::1]:80/tcp");
    assert_string_equal(r.host, "::1");
    assert_false(r.udp);
    r = parse_ok("5353:1.1.1.1:53/udp");
    assert_true(r.udp);
    assert_int_equal(r.port, 53);
    r = parse_ok("R:2222:127.0.0.1:22");
    assert_true(r.reverse);
    assert_local(&r, "127.0.0.1:2222");
    assert_string_equal(r.host, "127.0.0.1");
    r = parse_ok("R:0.0.0.0:5353:127.0.0.1:53/udp");
    assert_true(r.reverse && r.udp);
    r = parse_ok("1:h:65535");
    assert_int_equal(r.local.port, 1);
    assert_int_equal(r.port, 65535);
}

static void test_stdio(void **state)
{
    (void)state;
    struct remote r = parse_ok("stdio:example.com:22");
    assert_int_equal(r.kind, REMOTE_STDIO);
    assert_string_equal(r.host, "example.com");
    assert_int_equal(r.port, 22);
    r = parse_ok("stdio:[2001:db8::2]:22");
    assert_string_equal(r.host, "2001:db8::2");
    parse_bad("stdio:host", "expected stdio:HOST:PORT");
    parse_bad("stdio:host:22:1", "expected stdio:HOST:PORT");
    parse_bad("stdio::22", "host is missing");
    parse_bad("stdio:host:", "port is missing");
    parse_bad("stdio:host:0", "bad destination port");
    parse_bad("R:stdio:host:22", "cannot be reversed");
}

static void test_bad_ports(void **state)
{
    (void)state;
    parse_bad("0:h:80", "bad local port '0'");
    parse_bad("65536:h:80", "bad local port '65536'");
    parse_bad("x:h:80", "bad local port 'x'");
    parse_bad("-1:h:80", "bad local port");
    parse_bad("8080:h:0", "bad destination port '0'");
    parse_bad("8080:h:65536", "bad destination port");
    parse_bad("8080:h:http", "bad destination port 'http'");
    parse_bad("99999:socks", "bad local port");
    parse_bad("0:socks", "bad local port");
}

static void test_missing_parts(void **state)
{
    (void)state;
    parse_bad("", "empty");
    parse_bad("8080", "expected [ADDR:]PORT:HOST:PORT");
    parse_bad("8080:host", "expected [ADDR:]PORT:HOST:PORT");
    parse_bad(":h:80", "local port is missing");
    parse_bad("8080::80", "host is missing");
    parse_bad("8080:h:", "port is missing");
    parse_bad(":socks", "local port is missing");
    parse_bad("1.2.3.4:5:6:7:8", "too many parts");
    parse_bad("a:b:1:socks", "expected [ADDR:]PORT:socks");
    parse_bad("8080:h:80/sctp", "unknown suffix");
    parse_bad("socks/udp", "no /udp");
    parse_bad("stdio:h:53/udp", "stdio carries no /udp");
}

static void test_bad_addresses(void **state)
{
    (void)state;
    parse_bad("[::1:8080:h:80", "unbalanced brackets");
    parse_bad("::1]:8080:h:80", "unbalanced brackets");
    parse_bad("8080:[2001:db8::1:80", "unbalanced brackets");
    parse_bad("8080:[[::1]]:80", "unbalanced brackets");
    parse_bad("example.com:8080:h:80", "bad local address 'example.com'");
    parse_bad("[1.2.3.4]:8080:h:80", "bad local address");
    parse_bad("8080:bad host:80", "bad destination host");
    parse_bad("8080:[nothex]:80", "bad destination host");
    parse_bad("8080:a/b:80", "unknown suffix");
}

static void test_list(void **state)
{
    (void)state;
    struct remote v[4];
    char err[700] = "";
    v[0] = parse_ok("socks");
    v[1] = parse_ok("8080:h:80");
    v[2] = parse_ok("stdio:h:22");
    v[3] = parse_ok("[::1]:8080:h:81");
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), 0);
    v[3] = parse_ok("127.0.0.1:1080:h:80");
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "same local port 1080"));
    v[3] = parse_ok("0.0.0.0:8080:socks"); /* the wildcard holds 127.0.0.1's port too */
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "same local port 8080"));
    v[3] = parse_ok("stdio:h:23");
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "at most one stdio"));
    v[3] = parse_ok("R:8080:h:80"); /* a port on the server: no clash */
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), 0);
    v[3] = parse_ok("8080:h:53/udp"); /* a UDP port beside the TCP one: no clash */
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), 0);
    v[2] = parse_ok("127.0.0.1:8080:h2:53/udp");
    assert_int_equal(remote_check_list(v, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "same local port 8080"));
}

static void test_format(void **state)
{
    (void)state;
    char b[300];
    struct remote r = parse_ok("[::1]:8080:[2001:db8::1]:80");
    assert_string_equal(remote_format(&r, b, sizeof(b)), "[::1]:8080:[2001:db8::1]:80");
    r = parse_ok("R:socks");
    assert_string_equal(remote_format(&r, b, sizeof(b)), "R:127.0.0.1:1080:socks");
    r = parse_ok("stdio:h:22");
    assert_string_equal(remote_format(&r, b, sizeof(b)), "stdio:h:22");
}

static void test_host_port(void **state)
{
    (void)state;
    char h[256];
    uint16_t p;
    assert_int_equal(parse_host_port("10.0.0.5:80", h, sizeof(h), &p), 0);
    assert_string_equal(h, "10.0.0.5");
    assert_int_equal(p, 80);
    assert_int_equal(parse_host_port("[2001:db8::1]:443", h, sizeof(h), &p), 0);
    assert_string_equal(h, "2001:db8::1");
    assert_int_equal(parse_host_port("db_1.internal:5432", h, sizeof(h), &p), 0);
    assert_int_equal(parse_host_port("2001:db8::1:80", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("host", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port(":80", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("[::1]80", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("[::1:80", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("h]:80", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("h:0", h, sizeof(h), &p), -ERANGE);
    assert_int_equal(parse_host_port("h:65536", h, sizeof(h), &p), -ERANGE);
    assert_int_equal(parse_host_port("h:", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("a b:1", h, sizeof(h), &p), -EINVAL);
    assert_int_equal(parse_host_port("abcdef:1", h, 4, &p), -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_socks_forms),   cmocka_unit_test(test_forward_forms),
        cmocka_unit_test(test_stdio),         cmocka_unit_test(test_bad_ports),
        cmocka_unit_test(test_missing_parts), cmocka_unit_test(test_bad_addresses),
        cmocka_unit_test(test_list),          cmocka_unit_test(test_format),
        cmocka_unit_test(test_host_port),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
