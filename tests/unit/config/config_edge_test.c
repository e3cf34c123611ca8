/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_edge_test.c: [edge NAME] sections of config_load() (config/edge.c):
 * defaults, every key, routes and their matching (exact beats wildcard,
 * the longest wildcard wins, canonical names), the listeners added to the
 * listen list, and the messages (FILE:LINE) for what is wrong.
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>

#include "config/config.h"
#include "fixture.h"
#include "proto/hostpat.h"

static void test_defaults_and_listeners(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "listen = 127.0.0.1:0\n"
                   "[edge games]\n"
                   "listen = 127.0.0.1:25565, [::1]:443\n"
                   "route = a.mc.test -> 10.0.0.5:25565\n",
                   NULL);
    const struct config *c = x->c;
    assert_int_equal(c->nedges, 1);
    const struct config_edge *e = &c->edges[0];
    assert_string_equal(e->name, "games");
    assert_int_equal(e->sniff, EDGE_SNIFF_AUTO);
    assert_int_equal(e->strategy, EDGE_ROUND_ROBIN);
    assert_int_equal(e->unknown, -1);
    assert_false(e->proxy_v2);
    assert_int_equal(e->first_byte_ms, 5000);
    assert_int_equal(e->hello_ms, 10000);
    assert_int_equal(e->max_hello, 1024);
    assert_int_equal(c->nlisten, 3);
    assert_int_equal(c->listen[0].edge, 0);
    assert_int_equal(c->listen[1].edge, 1);
    assert_int_equal(c->listen[2].edge, 1);
    assert_int_equal(c->listen[2].addr.port, 443);
    assert_false(c->protect_local);
}

/* A file with edges and no listen: no built-in proxy listener opens. */
static void test_edge_only(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "[edge e]\nlisten = 127.0.0.1:0\nroute = a.b -> 127.0.0.1:1\n", NULL);
    assert_int_equal(x->c->nlisten, 1);
    assert_int_equal(x->c->listen[0].edge, 1);
}

static void test_every_key_and_matching(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "listen = 127.0.0.1:0\n"
                   "[edge web]\n"
                   "listen = 127.0.0.1:0\n"
                   "sniff = tls\n"
                   "strategy = least-connections\n"
                   "proxy_protocol = v2\n"
                   "first_byte_timeout = 2s\n"
                   "hello_timeout = 3s\n"
                   "max_hello = 2048\n"
                   "max_halfopen = 10\n"
                   "per_source_connections = 5\n"
                   "per_source_rate = 7\n"
                   "route = Exact.Example.COM. -> 10.0.0.1:443\n"
                   "route = *.example.com -> 10.0.0.2:443, 10.0.0.3:443\n"
                   "route = *.b.example.com -> 10.0.0.4:443,10.0.0.5:443 strategy=first-healthy "
                   "proxy_protocol=off\n"
                   "unknown = *.example.com\n",
                   NULL);
    const struct config_edge *e = &x->c->edges[0];
    assert_int_equal(e->sniff, EDGE_SNIFF_TLS);
    assert_int_equal(e->strategy, EDGE_LEAST_CONN);
    assert_true(e->proxy_v2);
    assert_int_equal(e->first_byte_ms, 2000);
    assert_int_equal(e->hello_ms, 3000);
    assert_int_equal(e->max_hello, 2048);
    assert_int_equal(e->max_halfopen, 10);
    assert_int_equal(e->per_source, 5);
    assert_int_equal(e->rate, 7);
    assert_int_equal(e->burst, 14);
    assert_int_equal(e->unknown, 1);
    assert_int_equal(e->routes[1].nbackends, 2);
    assert_int_equal(e->routes[1].strategy, -1);
    assert_int_equal(e->routes[1].proxy_v2, -1);
    assert_int_equal(e->routes[2].nbackends, 2);
    assert_int_equal(e->routes[2].backends[1].addr.port, 443);
    assert_int_equal(e->routes[2].strategy, EDGE_FIRST_HEALTHY);
    assert_int_equal(e->routes[2].proxy_v2, 0);
    assert_string_equal(e->routes[0].host, "exact.example.com");
    assert_int_equal(edge_route_find(e, "exact.example.com", NULL), 0);
    assert_int_equal(edge_route_find(e, "x.example.com", NULL), 1);
    assert_int_equal(edge_route_find(e, "x.b.example.com", NULL), 2);
    assert_int_equal(edge_route_find(e, "b.example.com", NULL), 1);
    assert_int_equal(edge_route_find(e, "example.com", NULL), -1);
    assert_int_equal(edge_route_find(e, "xexample.com", NULL), -1);
}

/* Patterns with captures, backends by name, rewrite= and forward_suffix. */
static void test_captures_names_rewrite(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(
        x,
        "[edge g]\n"
        "listen = 127.0.0.1:0\n"
        "forward_suffix = strip\n"
        "route = *.mc.test -> {1}.backends.test:25565, 10.0.0.1:25565 rewrite={1}.internal "
        "forward_suffix=keep\n"
        "route = *.*.mc.test -> {2}-{1}.pods.test:25566\n"
        "route = lobby.*.mc.test -> 10.0.0.2:25565\n"
        "route = *.ip.test -> 127.0.0.{1}:25565\n",
        NULL);
    const struct config_edge *e = &x->c->edges[0];
    const struct edge_route *r = e->routes;
    assert_true(e->strip_suffix);
    assert_int_equal(r[0].ncaps, 1);
    assert_true(r[0].named && r[0].wildcard);
    assert_string_equal(r[0].backends[0].name, "{1}.backends.test");
    assert_int_equal(r[0].backends[0].addr.port, 25565);
    assert_null(r[0].backends[1].name);
    assert_string_equal(r[0].rewrite, "{1}.internal");
    assert_false(edge_route_strips(e, &r[0]));
    assert_true(edge_route_strips(e, &r[1]));
    assert_int_equal(r[1].ncaps, 2);
    assert_false(r[2].named);
    struct hostpat_caps caps;
    assert_int_equal(edge_route_find(e, "a.mc.test", &caps), 0);
    assert_int_equal(caps.n, 1);
    assert_int_equal(edge_route_find(e, "a.eu.mc.test", &caps), 1);
    assert_int_equal(caps.n, 2);
    /* lobby.*.mc.test has three literal labels: it beats *.*.mc.test. */
    assert_int_equal(edge_route_find(e, "lobby.eu.mc.test", &caps), 2);
    assert_int_equal(edge_route_find(e, "2.ip.test", &caps), 3);
    char b[300];
    assert_string_equal(edge_backend_format(&r[1].backends[0], b, sizeof(b)),
                        "{2}-{1}.pods.test:25566");
}

static void test_errors(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "listen = 127.0.0.1:0\n"
                      "route = a.b -> 127.0.0.1:1\n"
                      "[edge g]\n"
                      "listen = 127.0.0.1:0\n"
                      "strategy = random\n"
                      "route = a.b -> 127.0.0.1\n"
                      "route = a.b -> 127.0.0.1:1\n"
                      "route = A.B -> 127.0.0.1:2\n"
                      "sniff = ssh\n"
                      "max_hello = 4096\n"
                      "sniff = mc\n"
                      "[edge g]\n"
                      "[edge h]\n"
                      "route = *x.b -> 127.0.0.1:1\n"
                      "route = c.d -> 127.0.0.1:1 weight=2\n",
                      NULL, 12);
    expect_msg(x, 0, "%s:2: route: unknown key (it goes in an [edge NAME] section)", x->path);
    expect_msg(x, 1,
               "%s:5: edge g: strategy: 'random' is not valid (expected round-robin, "
               "least-connections or first-healthy)",
               x->path);
    expect_msg(x, 2,
               "%s:6: edge g: route: '127.0.0.1' is not an address or a name with its port "
               "(expected e.g. 10.0.0.5:25565, [::1]:443 or {1}.backends.internal:25565)",
               x->path);
    expect_msg(x, 3, "%s:8: edge g: route: a second route for a.b (first on line 7)", x->path);
    expect_msg(x, 4, "%s:9: edge g: sniff: 'ssh' is not valid (expected mc, tls or auto)", x->path);
    expect_msg(x, 5,
               "%s:10: edge g: max_hello: '4096' is not valid (expected a size in bytes (64 to "
               "2048))",
               x->path);
    expect_msg(x, 6, "%s:11: edge g: sniff: set twice in this section", x->path);
    expect_msg(x, 7, "%s:12: [edge g]: a second section of that name (first at %s:3)", x->path,
               x->path);
    expect_msg(x, 8,
               "%s:14: edge h: route: '*x.b' is not a host name or pattern (letters, digits, '-' "
               "and dots; '*' as a whole label, at most 9, and one label that is not '*')",
               x->path);
    expect_msg(x, 9,
               "%s:15: edge h: route: 'weight=2' is not a route option (expected "
               "strategy=round-robin|least-connections|first-healthy, proxy_protocol=v2|off, "
               "signed=off|hop|token, forward_suffix=keep|strip or rewrite=HOST, HOST with "
               "{1}..{0} of the route's captures)",
               x->path);
    expect_msg(x, 10, "%s:13: edge h: no listen address (listen = ADDR:PORT[, ...])", x->path);
    expect_msg(x, 11, "%s:13: edge h: no route (route = HOST -> BACKEND[, ...])", x->path);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_defaults_and_listeners), T(test_edge_only),
        T(test_every_key_and_matching), T(test_errors),
        T(test_captures_names_rewrite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
