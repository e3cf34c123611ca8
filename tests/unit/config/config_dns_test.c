/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_dns_test.c: [dns] and the egress settings of config_load(): the
 * defaults, servers as c-ares takes them, TTL bounds, the hosts file,
 * ip_preference, and source= / device= on a listen line. Messages are
 * compared in full: they are what an operator reads.
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>

#include "config/config.h"
#include "dns/hosts.h"
#include "dns/resolver.h"
#include "fixture.h"

static void test_defaults(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "listen = 127.0.0.1:0\n", NULL);
    const struct config_dns *d = &x->c->dns;
    assert_null(d->servers);
    assert_null(d->hosts);
    assert_null(d->hosts_table);
    assert_int_equal(d->cache_size, DNS_CACHE_SIZE);
    assert_int_equal(d->min_ttl_ms, 0);
    assert_int_equal(d->max_ttl_ms, 300000);
    assert_int_equal(d->timeout_ms, 2000);
    assert_int_equal(d->tries, 2);
    assert_int_equal(x->c->ip_preference, IP_PREF_ANY);
    assert_int_equal(x->c->listen[0].source.addr.family, 0);
    assert_string_equal(x->c->listen[0].source.device, "");
}

static void test_every_key(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "ip_preference = IPv6-First\n"
                   "[dns]\n"
                   "servers = 1.1.1.1, [2606:4700::1111]:53 127.0.0.1:5353,::1\n"
                   "cache_size = 0\n"
                   "min_ttl = 30s\n"
                   "max_ttl = 1h\n"
                   "timeout = 500ms\n"
                   "tries = 3\n"
                   "hosts = none\n",
                   NULL);
    const struct config_dns *d = &x->c->dns;
    assert_string_equal(d->servers, "1.1.1.1:53,[2606:4700::1111]:53,127.0.0.1:5353,[::1]:53");
    assert_int_equal(d->cache_size, 0);
    assert_int_equal(d->min_ttl_ms, 30000);
    assert_int_equal(d->max_ttl_ms, 3600000);
    assert_int_equal(d->timeout_ms, 500);
    assert_int_equal(d->tries, 3);
    assert_string_equal(d->hosts, "none");
    assert_null(d->hosts_table);
    assert_int_equal(x->c->ip_preference, IP_PREF_IPV6_FIRST);
}

static void test_min_ttl_raises_the_default_max(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "[dns]\nmin_ttl = 1h\n", NULL);
    assert_int_equal(x->c->dns.max_ttl_ms, 3600000);
    expect_load_fails(x, "[dns]\nmax_ttl = 1m\nmin_ttl = 2m\n", NULL, 1);
    expect_msg(x, 0, "%s:3: dns.min_ttl: longer than dns.max_ttl (120000 ms > 60000 ms)", x->path);
}

static void test_servers_errors(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "[dns]\nservers = 1.1.1.1, ns.example\n", NULL, 1);
    expect_msg(x, 0,
               "%s:2: dns.servers: 'ns.example' is not a server address (expected addresses "
               "with optional ports, e.g. 1.1.1.1, [2606:4700::1111]:53, 127.0.0.1:5353)",
               x->path);
    expect_load_fails(x, "[dns]\nservers = ,\n", NULL, 1);
    expect_load_fails(x,
                      "[dns]\nservers = 1.0.0.1 1.0.0.2 1.0.0.3 1.0.0.4 1.0.0.5 1.0.0.6 1.0.0.7 "
                      "1.0.0.8 1.0.0.9 1.0.0.10 1.0.0.11 1.0.0.12 1.0.0.13 1.0.0.14 1.0.0.15 "
                      "1.0.0.16 1.0.0.17\n",
                      NULL, 1);
    expect_msg(x, 0, "%s:2: dns.servers: more than 16 servers", x->path);
}

static void test_hosts_file(void **state)
{
    struct ctx *x = *state;
    char hosts[HARNESS_PATH_MAX], text[HARNESS_PATH_MAX + 64];
    harness_path(hosts, sizeof(hosts), x->dir, "hosts");
    harness_write_file(hosts, "192.0.2.1 a.example b.example\n");
    expect_load_ok(x, "[dns]\nhosts = hosts\n", NULL); /* next to the config file */
    assert_int_equal(dns_hosts_count(x->c->dns.hosts_table), 2);
    snprintf(text, sizeof(text), "[dns]\nhosts = %s\n", hosts);
    expect_load_ok(x, text, NULL);
    assert_int_equal(dns_hosts_count(x->c->dns.hosts_table), 2);
    unlink(hosts);
    expect_load_fails(x, text, NULL, 1);
    expect_msg(x, 0, "%s:2: dns.hosts: cannot read %s: No such file or directory", x->path, hosts);
}

static void test_ip_preference(void **state)
{
    struct ctx *x = *state;
    static const char *const names[] = {"any", "ipv4", "ipv6", "ipv4-first", "ipv6-first"};
    for (uint8_t i = 0; i < 5; i++) {
        uint8_t p = 99;
        assert_int_equal(outbound_ip_preference_parse(names[i], &p), 0);
        assert_int_equal(p, i);
        assert_string_equal(outbound_ip_preference_name(i), names[i]);
    }
    uint8_t p;
    assert_int_equal(outbound_ip_preference_parse("ipv4first", &p), -EINVAL);
    assert_int_equal(outbound_ip_preference_parse("", &p), -EINVAL);
    expect_load_fails(x, "ip_preference = v6\n", NULL, 1);
    expect_msg(x, 0,
               "%s:1: ip_preference: 'v6' is not an IP preference (expected any, ipv4, ipv6, "
               "ipv4-first or ipv6-first)",
               x->path);
}

static void test_listen_source(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "listen = 127.0.0.1:0 source=127.0.0.2 device=lo, [::1]:0 source=::1\n",
                   NULL);
    struct addr want;
    addr_parse_ip("127.0.0.2", 0, &want);
    assert_true(addr_equal(&x->c->listen[0].source.addr, &want));
    assert_string_equal(x->c->listen[0].source.device, "lo");
    addr_parse_ip("::1", 0, &want);
    assert_true(addr_equal(&x->c->listen[1].source.addr, &want));
    assert_string_equal(x->c->listen[1].source.device, "");
    expect_load_fails(x, "listen = 127.0.0.1:0 source=[::1]\n", NULL, 1);
    expect_msg(x, 0, "%s:1: listen: source: '[::1]' is not an IP address (expected e.g. 192.0.2.7)",
               x->path);
    expect_load_fails(x, "listen = 127.0.0.1:0 source=device=lo\n", NULL, 1);
    expect_msg(x, 0,
               "%s:1: listen: source: 'device=lo' is not an IP address (expected e.g. 192.0.2.7)",
               x->path);
    expect_load_fails(x, "listen = 127.0.0.1:0 device=nosuchdev0\n", NULL, 1);
    expect_msg(x, 0, "%s:1: listen: device: 'nosuchdev0' is not a network interface of this host",
               x->path);
    struct outbound_source s = {0};
    assert_int_equal(config_source_parse("::ffff:10.0.0.1", &s), 0);
    assert_int_equal(s.addr.family, AF_INET); /* mapped: the IPv4 address */
    assert_int_equal(config_source_parse("device=a/b", &s), -EINVAL);
    assert_int_equal(config_source_parse("device=0123456789abcdef", &s), -EINVAL);
    assert_int_equal(config_source_parse("device=nosuchdev0", &s), -ENODEV);
    assert_int_equal(config_source_parse("device=lo", &s), 0);
    assert_string_equal(s.device, "lo");
    assert_int_equal(s.addr.family, AF_INET); /* kept */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_defaults),       T(test_every_key),  T(test_min_ttl_raises_the_default_max),
        T(test_servers_errors), T(test_hosts_file), T(test_ip_preference),
        T(test_listen_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
