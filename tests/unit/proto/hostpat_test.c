/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostpat_test.c: the route patterns and templates of proto/hostpat:
 * canonical forms and refusals, matching with a leading '*' that takes one
 * or more labels and inner '*' that take one, the captures each match
 * fills, and expansions: a capture into a backend name or an address,
 * the 255-byte bound, long labels, captures a pattern does not have.
 */
#include "harness.h"

#include "proto/hostpat.h"

static void canon_ok(const char *in, const char *want, unsigned caps)
{
    char out[HOSTNAME_MAX + 1];
    unsigned n = 99;
    assert_int_equal(hostpat_canon(in, strlen(in), out, &n), strlen(want));
    assert_string_equal(out, want);
    assert_int_equal(n, caps);
}

static void canon_bad(const char *in)
{
    char out[HOSTNAME_MAX + 1];
    unsigned n;
    assert_int_equal(hostpat_canon(in, strlen(in), out, &n), 0);
}

static void test_canon(void **state)
{
    (void)state;
    canon_ok("A.MC.Test.", "a.mc.test", 0);
    canon_ok("*.Example.com", "*.example.com", 1);
    canon_ok("*.*.mc.test", "*.*.mc.test", 2);
    canon_ok("mc.*.test", "mc.*.test", 1);
    canon_bad("*"); /* no literal label: that is unknown = */
    canon_bad("*.*");
    canon_bad("a*.test"); /* '*' only as a whole label */
    canon_bad("*a.test");
    canon_bad("a..test");
    canon_bad("");
    canon_bad("*.*.*.*.*.*.*.*.*.*.test"); /* ten captures */
    canon_ok("*.*.*.*.*.*.*.*.*.test", "*.*.*.*.*.*.*.*.*.test", 9);
}

static void cap_is(const char *host, const struct hostpat_caps *c, unsigned i, const char *want)
{
    assert_true(i < c->n);
    assert_int_equal(c->c[i].len, strlen(want));
    assert_memory_equal(host + c->c[i].off, want, strlen(want));
}

static void test_match(void **state)
{
    (void)state;
    struct hostpat_caps c;
    assert_true(hostpat_match("a.mc.test", "a.mc.test", &c));
    assert_int_equal(c.n, 0);
    assert_false(hostpat_match("a.mc.test", "b.mc.test", &c));
    assert_false(hostpat_match("a.mc.test", "x.a.mc.test", &c));
    /* A leading '*' takes one label or more, never none. */
    assert_true(hostpat_match("*.example.com", "www.example.com", &c));
    cap_is("www.example.com", &c, 0, "www");
    assert_true(hostpat_match("*.example.com", "x.y.example.com", &c));
    cap_is("x.y.example.com", &c, 0, "x.y");
    assert_false(hostpat_match("*.example.com", "example.com", &c));
    assert_false(hostpat_match("*.example.com", "wwwexample.com", &c));
    assert_false(hostpat_match("*.example.com", "www.example.org", &c));
    /* Inner '*' take exactly one label each. */
    assert_true(hostpat_match("*.*.mc.test", "lobby.eu.mc.test", &c));
    assert_int_equal(c.n, 2);
    cap_is("lobby.eu.mc.test", &c, 0, "lobby");
    cap_is("lobby.eu.mc.test", &c, 1, "eu");
    assert_true(hostpat_match("*.*.mc.test", "a.b.eu.mc.test", &c));
    cap_is("a.b.eu.mc.test", &c, 0, "a.b");
    cap_is("a.b.eu.mc.test", &c, 1, "eu");
    assert_true(hostpat_match("mc.*.test", "mc.eu.test", &c));
    cap_is("mc.eu.test", &c, 0, "eu");
    assert_false(hostpat_match("mc.*.test", "mc.a.b.test", &c));
    assert_false(hostpat_match("mc.*.test", "mc.test", &c));
    assert_int_equal(hostpat_literals("*.*.mc.test"), 2);
    assert_int_equal(hostpat_literals("a.mc.test"), 3);
    assert_string_equal(hostpat_suffix("*.*.mc.test"), "mc.test");
    assert_string_equal(hostpat_suffix("a.mc.test"), "a.mc.test");
}

static void test_template_check(void **state)
{
    (void)state;
    assert_int_equal(hostpat_template_check("{1}.backends.internal", 21, 1), 0);
    assert_int_equal(hostpat_template_check("127.0.0.{2}", 11, 2), 0);
    assert_int_equal(hostpat_template_check("plain.host", 10, 0), 0);
    assert_int_equal(hostpat_template_check("{2}.x", 5, 1), HOSTPAT_E_CAPTURE);
    assert_int_equal(hostpat_template_check("{1}.x", 5, 0), HOSTPAT_E_CAPTURE);
    assert_int_equal(hostpat_template_check("{0}.x", 5, 1), HOSTPAT_E_SYNTAX);
    assert_int_equal(hostpat_template_check("{1.x", 4, 1), HOSTPAT_E_SYNTAX);
    assert_int_equal(hostpat_template_check("{12}.x", 6, 9), HOSTPAT_E_SYNTAX);
    assert_int_equal(hostpat_template_check("a_b.x", 5, 0), HOSTPAT_E_SYNTAX);
    assert_int_equal(hostpat_template_check("", 0, 0), HOSTPAT_E_SYNTAX);
}

static void test_expand(void **state)
{
    (void)state;
    struct hostpat_caps c;
    char out[HOSTNAME_MAX + 1];
    const char *h = "lobby.eu.mc.test";
    assert_true(hostpat_match("*.*.mc.test", h, &c));
    assert_int_equal(hostpat_expand("{1}.{2}.Backends.internal", h, &c, out, sizeof(out)), 26);
    assert_string_equal(out, "lobby.eu.backends.internal");
    assert_int_equal(hostpat_expand("{2}-{1}", h, &c, out, sizeof(out)), 8);
    assert_string_equal(out, "eu-lobby");
    assert_int_equal(hostpat_expand("{3}.x", h, &c, out, sizeof(out)), HOSTPAT_E_CAPTURE);
    assert_int_equal(hostpat_expand("{1}.x", h, NULL, out, sizeof(out)), HOSTPAT_E_CAPTURE);
    /* An address template: the capture is the last octet. */
    assert_true(hostpat_match("*.ip.test", "2.ip.test", &c));
    assert_int_equal(hostpat_expand("127.0.0.{1}", "2.ip.test", &c, out, sizeof(out)), 9);
    assert_string_equal(out, "127.0.0.2");
    /* Bounds: 255 bytes, 63-byte labels, no empty label or trailing dot. */
    char host[HOSTNAME_MAX + 1], tmpl[64];
    memset(host, 'a', 63);
    memcpy(host + 63, ".t", 3);
    assert_true(hostpat_match("*.t", host, &c));
    snprintf(tmpl, sizeof(tmpl), "{1}.{1}.{1}.{1}");
    assert_int_equal(hostpat_expand(tmpl, host, &c, out, sizeof(out)), 255);
    snprintf(tmpl, sizeof(tmpl), "{1}.{1}.{1}.{1}.x");
    assert_int_equal(hostpat_expand(tmpl, host, &c, out, sizeof(out)), HOSTPAT_E_TOO_LONG);
    snprintf(tmpl, sizeof(tmpl), "x{1}");
    assert_int_equal(hostpat_expand(tmpl, host, &c, out, sizeof(out)), HOSTPAT_E_NAME);
    assert_int_equal(hostpat_expand("{1}..x", host, &c, out, sizeof(out)), HOSTPAT_E_NAME);
    assert_int_equal(hostpat_expand("{1}.", host, &c, out, sizeof(out)), HOSTPAT_E_NAME);
    assert_int_equal(hostpat_expand("{1}.x", host, &c, out, 10), HOSTPAT_E_TOO_LONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canon),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_template_check),
        cmocka_unit_test(test_expand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
