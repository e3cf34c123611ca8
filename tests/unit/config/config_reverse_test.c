/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_reverse_test.c: "reverse =" lines of an [outbound NAME] (what
 * `ferry client R:...` writes): forward and socks remotes, the key
 * repeating, allow= ranges, the egress check of a socks remote (private
 * ranges closed unless allowed), the format used in logs, "listen =
 * none", [http2] reverse_grace, and the errors naming FILE:LINE.
 */
#include "harness.h"

#include <errno.h>

#include "config/config.h"
#include "fixture.h"

static const char tunnel[] = "listen = none\n[outbound t]\nurl = https://127.0.0.1:8443\n";

static struct addr ip(const char *s)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(s, 80, &a), 0);
    return a;
}

static void test_lines(void **state)
{
    struct ctx *x = *state;
    char text[512], buf[300];
    snprintf(text, sizeof(text),
             "%sreverse = 127.0.0.1:2222 forward=127.0.0.1:22\n"
             "reverse = [::1]:1080 socks allow=10.1.0.0/16,::1\n"
             "reverse = 0.0.0.0:8080 forward=[2001:db8::1]:80\n"
             "[http2]\nreverse_grace = 1m\n",
             tunnel);
    expect_load_ok(x, text, NULL);
    const struct config *c = x->c;
    assert_int_equal(c->nlisten, 0);
    assert_int_equal(c->http2.reverse_grace_ms, 60000);
    const struct config_outbound *o = &c->outbounds[c->noutbounds - 1];
    assert_int_equal(o->nrev, 3);
    assert_false(o->rev[0].socks);
    assert_string_equal(o->rev[0].host, "127.0.0.1");
    assert_int_equal(o->rev[0].port, 22);
    assert_int_equal(o->rev[0].bind.port, 2222);
    assert_string_equal(outbound_reverse_format(&o->rev[0], buf, sizeof(buf)),
                        "R:127.0.0.1:2222:127.0.0.1:22");
    assert_true(o->rev[1].socks);
    assert_int_equal(o->rev[1].nallow, 2);
    assert_string_equal(outbound_reverse_format(&o->rev[1], buf, sizeof(buf)),
                        "R:[::1]:1080:socks");
    assert_string_equal(outbound_reverse_format(&o->rev[2], buf, sizeof(buf)),
                        "R:0.0.0.0:8080:[2001:db8::1]:80");
}

static void test_egress(void **state)
{
    (void)state;
    struct config_reverse r;
    memset(&r, 0, sizeof(r));
    r.socks = true;
    static const char *const closed[] = {
        "127.0.0.1",   "10.2.3.4",   "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.1.1", "100.64.0.1", "0.0.0.0",    "224.0.0.1",      "::1",
        "fe80::1",     "fd00::1",    "::"};
    static const char *const open[] = {"192.0.2.1", "172.32.0.1", "100.128.0.1", "2001:db8::1",
                                       "8.8.8.8"};
    for (size_t i = 0; i < sizeof(closed) / sizeof(closed[0]); i++) {
        struct addr a = ip(closed[i]);
        if (outbound_reverse_egress_ok(&r, &a))
            fail_msg("%s let through", closed[i]);
    }
    for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
        struct addr a = ip(open[i]);
        if (!outbound_reverse_egress_ok(&r, &a))
            fail_msg("%s refused", open[i]);
    }
    assert_int_equal(acl_cidr_parse("127.0.0.0/8", &r.allow[0]), 0);
    r.nallow = 1;
    struct addr lo = ip("127.0.0.5"), ten = ip("10.0.0.1");
    assert_true(outbound_reverse_egress_ok(&r, &lo));
    assert_false(outbound_reverse_egress_ok(&r, &ten));
}

static void test_errors(void **state)
{
    struct ctx *x = *state;
    char text[512];
    snprintf(text, sizeof(text),
             "%sreverse = 2222 forward=h:22\n"
             "reverse = 127.0.0.1:2222 forward=h:22 allow=10.0.0.0/8\n"
             "reverse = 127.0.0.1:2222 socks color=red\n",
             tunnel);
    expect_load_fails(x, text, NULL, 3);
    expect_msg(x, 0,
               "%s:4: outbound t.reverse: '2222' is not ADDR:PORT (the address the server "
               "binds, e.g. 127.0.0.1:2222 or [::1]:2222)",
               x->path);
    expect_msg(x, 1,
               "%s:5: outbound t.reverse: '127.0.0.1:2222 forward=h:22 allow=10.0.0.0/8': "
               "allow= applies to a socks remote only (a forward reaches its one target)",
               x->path);
    expect_msg(x, 2,
               "%s:6: outbound t.reverse: unknown option 'color=red' (known: forward=HOST:PORT, "
               "socks, udp, allow=CIDR,...)",
               x->path);
}

static void test_needs_h2(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound s]\nurl = socks5://127.0.0.1:1080\n"
                      "reverse = 127.0.0.1:2222 socks\n",
                      NULL, 1);
    expect_msg(x, 0,
               "%s:1: outbound s: reverse needs an https:// url spoken HTTP/2 (mux = auto or h2): "
               "the server binds through ferry-listen streams",
               x->path);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_lines),
        T(test_egress),
        T(test_errors),
        T(test_needs_h2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
