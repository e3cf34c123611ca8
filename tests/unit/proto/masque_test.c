/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * masque_test.c: the connect-udp request of RFC 9298 as proto/masque reads
 * and writes it: the default URI template's :path (IPv4, IPv6 and name
 * targets, percent-decoding, every way a path can be wrong), the path
 * writer and its round trip, the Capsule-Protocol boolean (RFC 9297
 * section 3.4, RFC 8941) and the pseudo-header checks of RFC 9298
 * section 3.4. Paths are parsed from exact-size heap copies without a NUL
 * so ASan catches a read past them.
 */
#include "harness.h"

#include "proto/masque.h"

static int parse_exact(const char *path, struct masque_target *t)
{
    size_t len = strlen(path);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, path, len);
    int rc = masque_parse_path(copy, len, t);
    free(copy);
    return rc;
}

static void check_target(const char *path, const char *host, uint16_t port)
{
    struct masque_target t;
    assert_int_equal(parse_exact(path, &t), 0);
    assert_string_equal(t.host, host);
    assert_int_equal(t.host_len, strlen(host));
    assert_int_equal(t.port, port);
}

static void test_parse_targets(void **state)
{
    (void)state;
    check_target("/.well-known/masque/udp/192.0.2.6/443/", "192.0.2.6", 443);
    check_target("/.well-known/masque/udp/2001%3Adb8%3A%3A42/53/", "2001:db8::42", 53);
    check_target("/.well-known/masque/udp/%3a%3a1/1/", "::1", 1);
    check_target("/.well-known/masque/udp/example.com/65535/", "example.com", 65535);
    check_target("/.well-known/masque/udp/a/0080/", "a", 80);
    /* A raw ':' is a valid path byte: accepted as the decoded form. */
    check_target("/.well-known/masque/udp/::1/443/", "::1", 443);
    /* Percent-encoded digits in the port decode to digits. */
    check_target("/.well-known/masque/udp/h/%34%34%33/", "h", 443);
}

static void test_parse_host_255(void **state)
{
    (void)state;
    char path[1200], host[256];
    memset(host, 'a', 255);
    host[255] = '\0';
    snprintf(path, sizeof(path), "/.well-known/masque/udp/%s/9/", host);
    check_target(path, host, 9);
    /* 255 bytes as %61 escapes: decoded length counts. */
    size_t n = (size_t)snprintf(path, sizeof(path), "/.well-known/masque/udp/");
    for (int i = 0; i < 255; i++)
        n += (size_t)snprintf(path + n, sizeof(path) - n, "%%61");
    snprintf(path + n, sizeof(path) - n, "/9/");
    check_target(path, host, 9);
    /* 256 bytes: too long. */
    struct masque_target t;
    snprintf(path, sizeof(path), "/.well-known/masque/udp/%sb/9/", host);
    assert_int_equal(parse_exact(path, &t), MASQUE_E_HOST);
}

static void test_parse_bad_paths(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        int rc;
    } bad[] = {
        {"", MASQUE_E_PREFIX},
        {"/", MASQUE_E_PREFIX},
        {"/.well-known/masque/udp", MASQUE_E_PREFIX},
        {"/.well-known/masque/tcp/h/1/", MASQUE_E_PREFIX},
        {"/.WELL-KNOWN/masque/udp/h/1/", MASQUE_E_PREFIX},
        {"/.well-known/masque/udp/", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53/x", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53//", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/x/53/", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53/?a=b", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53?/", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp/h/53/#f", MASQUE_E_SHAPE},
        {"/.well-known/masque/udp//53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/h%00x/53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/h%0a/53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/a%20b/53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/a%7f/53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/fe80%3A%3A1%25eth0/53/", MASQUE_E_HOST},
        {"/.well-known/masque/udp/a b/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a\x01/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a\xc3\xa9/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a%/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a%4/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a%zz/53/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/a/%3/", MASQUE_E_ENCODING},
        {"/.well-known/masque/udp/h/0/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/00000/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/65536/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/99999/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/123456789/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/-1/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/+53/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/0x35/", MASQUE_E_PORT},
        {"/.well-known/masque/udp/h/5%2F3/", MASQUE_E_PORT},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct masque_target t;
        int rc = parse_exact(bad[i].path, &t);
        if (rc != bad[i].rc)
            fail_msg("%s: got %d, want %d", bad[i].path, rc, bad[i].rc);
    }
    /* A NUL byte inside the raw path. */
    struct masque_target t;
    const char nul[] = "/.well-known/masque/udp/a\0b/53/";
    assert_int_equal(masque_parse_path(nul, sizeof(nul) - 1, &t), MASQUE_E_ENCODING);
}

/* Written paths encode as RFC 6570 simple expansion and parse back. */
static void test_format_round_trip(void **state)
{
    (void)state;
    char out[MASQUE_PATH_MAX + 1];
    assert_int_equal(masque_format_path(out, sizeof(out), "2001:db8::42", 12, 443), 47);
    assert_string_equal(out, "/.well-known/masque/udp/2001%3Adb8%3A%3A42/443/");
    assert_int_equal(masque_format_path(out, sizeof(out), "192.0.2.6", 9, 53), 37);
    assert_string_equal(out, "/.well-known/masque/udp/192.0.2.6/53/");
    masque_format_path(out, sizeof(out), "a_b-c.d~e/f g", 13, 65535);
    assert_string_equal(out, "/.well-known/masque/udp/a_b-c.d~e%2Ff%20g/65535/");
    /* Every byte value as a host of one byte; all but the bad ones parse back. */
    for (int c = 0; c < 256; c++) {
        char h = (char)c;
        size_t n = masque_format_path(out, sizeof(out), &h, 1, 1);
        assert_int_equal(strlen(out), n);
        struct masque_target t;
        int rc = masque_parse_path(out, n, &t);
        if (c <= 0x20 || c == 0x7f || c == '%') {
            assert_int_equal(rc, MASQUE_E_HOST);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(t.host_len, 1);
            assert_int_equal((uint8_t)t.host[0], c);
            assert_int_equal(t.port, 1);
        }
    }
    /* The longest: 255 escaped bytes, 5 port digits. */
    char host[255];
    memset(host, '#', sizeof(host));
    assert_int_equal(masque_format_path(out, sizeof(out), host, 255, 65535), MASQUE_PATH_MAX);
    struct masque_target t;
    assert_int_equal(masque_parse_path(out, MASQUE_PATH_MAX, &t), 0);
    assert_int_equal(t.host_len, 255);
    assert_memory_equal(t.host, host, 255);
    /* Short of room: the length needed, cap must hold the NUL too. */
    char small[40];
    memset(small, 'x', sizeof(small));
    assert_int_equal(masque_format_path(small, 37, "192.0.2.6", 9, 53), 37);
    assert_int_equal(small[0], 'x');
    assert_int_equal(masque_format_path(small, 38, "192.0.2.6", 9, 53), 37);
    assert_string_equal(small, "/.well-known/masque/udp/192.0.2.6/53/");
    /* No port 0, no host over 255 bytes. */
    assert_int_equal(masque_format_path(out, sizeof(out), "h", 1, 0), 0);
    assert_int_equal(masque_format_path(out, sizeof(out), host, 256, 1), 0);
}

static bool cp(const char *v)
{
    size_t len = strlen(v);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, v, len);
    bool b = masque_capsule_protocol_is_true(copy, len);
    free(copy);
    return b;
}

static void test_capsule_protocol_field(void **state)
{
    (void)state;
    assert_true(cp("?1"));
    assert_true(cp(" ?1 "));
    assert_true(cp("?1;a"));
    assert_true(cp("?1;a=1;b=?0;c=\"x\\\"y\";d=tok/en:1;e=:AQID:;f=-1.5;*g=*"));
    assert_true(cp("?1; a=2"));
    assert_false(cp("?0"));
    assert_false(cp("?0;a"));
    assert_false(cp(""));
    assert_false(cp("?"));
    assert_false(cp("?2"));
    assert_false(cp("1"));
    assert_false(cp("true"));
    assert_false(cp("?1,?1")); /* a list, not an item */
    assert_false(cp("?1 ;a"));
    assert_false(cp("?1;"));
    assert_false(cp("?1;A=1"));
    assert_false(cp("?1;1a"));
    assert_false(cp("?1;a="));
    assert_false(cp("?1;a=\"x"));
    assert_false(cp("?1;a=\"\\x\""));
    assert_false(cp("?1;a=:AQ"));
    assert_false(cp("?1;a=?"));
    assert_false(cp("?1;a=1."));
    assert_false(cp("?1;a=-"));
    assert_false(cp("?1;a=@"));
    assert_false(cp("?1x"));
}

static struct masque_field f(const char *s)
{
    struct masque_field x = {s, s ? strlen(s) : 0};
    return x;
}

static struct masque_request good_request(void)
{
    struct masque_request r = {
        .method = f("CONNECT"),
        .protocol = f("connect-udp"),
        .scheme = f("https"),
        .authority = f("proxy.example:443"),
        .path = f("/.well-known/masque/udp/2001%3Adb8%3A%3A42/443/"),
        .capsule_protocol = f("?1"),
    };
    return r;
}

static void test_check_request(void **state)
{
    (void)state;
    struct masque_target t;
    struct masque_request r = good_request();
    assert_int_equal(masque_check_request(&r, &t), 0);
    assert_string_equal(t.host, "2001:db8::42");
    assert_int_equal(t.port, 443);
    /* capsule-protocol absent or unparseable: connect-udp uses capsules anyway. */
    r.capsule_protocol = f(NULL);
    assert_int_equal(masque_check_request(&r, &t), 0);
    r.capsule_protocol = f("yes");
    assert_int_equal(masque_check_request(&r, &t), 0);
    r.capsule_protocol = f("?0");
    assert_int_equal(masque_check_request(&r, &t), MASQUE_E_CAPSULE);

    static const struct {
        size_t off;
        const char *value;
        int rc;
    } bad[] = {
        {offsetof(struct masque_request, method), NULL, MASQUE_E_METHOD},
        {offsetof(struct masque_request, method), "GET", MASQUE_E_METHOD},
        {offsetof(struct masque_request, method), "connect", MASQUE_E_METHOD},
        {offsetof(struct masque_request, protocol), NULL, MASQUE_E_PROTOCOL},
        {offsetof(struct masque_request, protocol), "websocket", MASQUE_E_PROTOCOL},
        {offsetof(struct masque_request, protocol), "connect-udp2", MASQUE_E_PROTOCOL},
        {offsetof(struct masque_request, scheme), NULL, MASQUE_E_SCHEME},
        {offsetof(struct masque_request, scheme), "http", MASQUE_E_SCHEME},
        {offsetof(struct masque_request, authority), NULL, MASQUE_E_AUTHORITY},
        {offsetof(struct masque_request, authority), "", MASQUE_E_AUTHORITY},
        {offsetof(struct masque_request, path), NULL, MASQUE_E_PREFIX},
        {offsetof(struct masque_request, path), "/", MASQUE_E_PREFIX},
        {offsetof(struct masque_request, path), "/.well-known/masque/udp/h/0/", MASQUE_E_PORT},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = good_request();
        struct masque_field *x = (struct masque_field *)(void *)((char *)&r + bad[i].off);
        *x = f(bad[i].value);
        assert_int_equal(masque_check_request(&r, &t), bad[i].rc);
        assert_int_equal(masque_error_status(bad[i].rc),
                         bad[i].rc == MASQUE_E_PROTOCOL ? 501 : 400);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_targets),          cmocka_unit_test(test_parse_host_255),
        cmocka_unit_test(test_parse_bad_paths),        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_capsule_protocol_field), cmocka_unit_test(test_check_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
