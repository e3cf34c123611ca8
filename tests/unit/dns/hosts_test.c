/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hosts_test.c: the hosts-file table of dns/hosts.c: what a line means,
 * case and trailing dots, several addresses of one name in file order,
 * duplicates, comments, lines that are skipped, and a missing file.
 */
#include "harness.h"

#include <errno.h>
#include <string.h>

#include "dns/hosts.h"
#include "dns/resolver.h"

static struct dns_hosts *parse(const char *text)
{
    struct dns_hosts *h = NULL;
    assert_int_equal(dns_hosts_parse(text, &h), 0);
    assert_non_null(h);
    return h;
}

static void expect_addrs(const struct dns_hosts *h, const char *key, unsigned n, ...)
{
    struct dns_answer ans;
    if (!dns_hosts_lookup(h, key, &ans))
        fail_msg("%s: not in the table", key);
    assert_int_equal(ans.n, n);
    va_list ap;
    va_start(ap, n);
    for (unsigned i = 0; i < n; i++) {
        struct addr want;
        assert_int_equal(addr_parse_ip(va_arg(ap, const char *), 0, &want), 0);
        assert_true(addr_equal(&ans.a[i], &want));
    }
    va_end(ap);
}

static void test_lines(void **state)
{
    (void)state;
    struct dns_hosts *h = parse("# a comment\n"
                                "127.0.0.1\tlocalhost Box.Example box   # trailing comment\n"
                                "\n"
                                "   ::1 box.example.\r\n"
                                "10.0.0.1 other\n"
                                "not-an-address name\n"
                                "10.0.0.2\n"
                                "10.0.0.3 other\n"
                                "10.0.0.1 other\n");
    expect_addrs(h, "box.example", 2, "127.0.0.1", "::1");
    expect_addrs(h, "box", 1, "127.0.0.1");
    expect_addrs(h, "other", 2, "10.0.0.1", "10.0.0.3"); /* file order, no duplicates */
    struct dns_answer ans;
    assert_false(dns_hosts_lookup(h, "name", &ans));
    assert_false(dns_hosts_lookup(h, "comment", &ans));
    assert_false(dns_hosts_lookup(h, "absent", &ans));
    assert_int_equal(dns_hosts_count(h), 7);
    assert_ptr_equal(dns_hosts_ref(h), h);
    dns_hosts_unref(h);
    dns_hosts_unref(h);
}

static void test_many_addresses_are_capped(void **state)
{
    (void)state;
    char text[2048] = "";
    for (int i = 1; i <= DNS_MAX_ADDRS + 4; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "10.0.0.%d many\n", i);
    struct dns_hosts *h = parse(text);
    struct dns_answer ans;
    assert_true(dns_hosts_lookup(h, "many", &ans));
    assert_int_equal(ans.n, DNS_MAX_ADDRS);
    dns_hosts_unref(h);
}

static void test_empty_and_missing(void **state)
{
    (void)state;
    struct dns_hosts *h = parse("");
    struct dns_answer ans;
    assert_false(dns_hosts_lookup(h, "x", &ans));
    assert_false(dns_hosts_lookup(NULL, "x", &ans));
    dns_hosts_unref(h);
    dns_hosts_unref(NULL);
    h = NULL;
    assert_int_equal(dns_hosts_load("/nonexistent/hosts", &h), -ENOENT);
    assert_null(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_many_addresses_are_capped),
        cmocka_unit_test(test_empty_and_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
