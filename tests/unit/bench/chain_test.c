/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * chain_test.c: the configuration `ferry bench --chain N` gives each ferry
 * it starts (child_conf_format, proc.c), read back by ferry's own config
 * loader: every ferry but the last sends its sessions to the next one as a
 * SOCKS5 parent at an IP address (`outbound = next`, [outbound next]), the
 * last dials directly; --proxy-set lines stay top-level, before every
 * section; only the first ferry gets the [auth] section; a buffer too
 * small is an error, never a cut config; --https-proxy gives the ferry a
 * tls:// listener and a [tls] section naming the certificate beside it. And the command line:
 * --chain is 1 by default, 1..8, and only for the self-hosted ferry.
 */
#include "harness.h"

#include <errno.h>

#include "bench/bench.h"
#include "bench/options.h"
#include "bench/proc.h"
#include "config/fixture.h"
#include "config/outbound.h"
#include "tls/selfsigned.h"

/* The address 127.0.0.1:port. */
static struct addr loopback(uint16_t port)
{
    struct addr a;
    char s[32];
    snprintf(s, sizeof(s), "127.0.0.1:%u", port);
    assert_int_equal(addr_parse(s, -1, &a), 0);
    return a;
}

static const struct config_outbound *default_outbound(const struct config *c)
{
    assert_true(c->default_outbound < c->noutbounds);
    return &c->outbounds[c->default_outbound];
}

/* A chain of three, as main.c starts it: each hop's config loads, and says
 * where its sessions go. */
static void test_each_hop_sends_to_the_next(void **state)
{
    struct ctx *x = *state;
    static const uint16_t ports[3] = {40001, 40002, 40003};
    char text[4096];
    for (unsigned i = 0; i < 3; i++) {
        struct addr next = loopback(i + 1 < 3 ? ports[i + 1] : 1);
        struct child_conf cc = {.workers = 2, .next = i + 1 < 3 ? &next : NULL};
        int n = child_conf_format(text, sizeof(text), &cc);
        assert_true(n > 0);
        assert_int_equal((size_t)n, strlen(text));
        expect_load_ok(x, text, NULL);
        assert_int_equal(x->c->workers, 2);
        const struct config_outbound *ob = default_outbound(x->c);
        if (i + 1 < 3) {
            assert_string_equal(ob->name, CHILD_NEXT_OUTBOUND);
            assert_int_equal(ob->kind, OUTBOUND_KIND_SOCKS5);
            assert_false(ob->remote_dns); /* socks5://, an IP: nothing to resolve */
            assert_string_equal(ob->host, "127.0.0.1");
            assert_int_equal(ob->port, ports[i + 1]);
            assert_null(ob->user);
        } else {
            assert_int_equal(ob->kind, OUTBOUND_KIND_DIRECT);
            assert_null(strstr(text, "[outbound"));
            assert_null(strstr(text, "outbound ="));
        }
    }
}

/* --proxy-set lines are top-level keys: written before the [outbound next]
 * section, they are not read as keys of it. */
static void test_extra_lines_stay_top_level(void **state)
{
    struct ctx *x = *state;
    struct addr next = loopback(40100);
    struct child_conf cc = {.extra = "connect_timeout = 7s\naccess_log = no\n", .next = &next};
    char text[4096];
    assert_true(child_conf_format(text, sizeof(text), &cc) > 0);
    expect_load_ok(x, text, NULL);
    assert_int_equal(x->c->connect_timeout_ms, 7000);
    assert_false(x->c->access_log);
    assert_int_equal(default_outbound(x->c)->port, 40100);
    const char *sec = strstr(text, "[outbound next]\n");
    assert_non_null(sec);
    assert_true(strstr(text, "access_log = no\n") < sec);
    assert_true(strstr(text, "outbound = next\n") < sec);
    /* Without a final newline it is added. */
    cc.extra = "access_log = no";
    assert_true(child_conf_format(text, sizeof(text), &cc) > 0);
    assert_non_null(strstr(text, "access_log = no\n[outbound next]\n"));
}

/* The first ferry authenticates the clients: [auth] after the outbound
 * section, and it loads with its users file beside the config. */
static void test_auth_section_after_the_outbound(void **state)
{
    struct ctx *x = *state;
    struct addr next = loopback(40200);
    struct child_conf cc = {
        .next = &next, .userlist = "bench:plain:benchpass", .auth_extra = "cachettl = 0"};
    char text[4096], users[HARNESS_PATH_MAX];
    assert_true(child_conf_format(text, sizeof(text), &cc) > 0);
    const char *sec = strstr(text, "[outbound next]\nurl = socks5://127.0.0.1:40200\n");
    const char *auth = strstr(text, "[auth]\nuserlist = users\ncachettl = 0\n");
    assert_non_null(sec);
    assert_non_null(auth);
    assert_true(sec < auth);
    harness_path(users, sizeof(users), x->dir, "users");
    harness_write_file(users, "bench:plain:benchpass\n");
    expect_load_ok(x, text, NULL);
    unlink(users);
    assert_true(config_auth_enabled(x->c));
    assert_int_equal(default_outbound(x->c)->port, 40200);
}

/* --https-proxy: listen = tls://127.0.0.1:0 and [tls] cert/key in tls_dir,
 * which ferry's loader accepts with a certificate made as proc.c makes it. */
static void test_tls_listener(void **state)
{
    struct ctx *x = *state;
    struct tls_cert_conf conf = {.names = {"localhost", "127.0.0.1"}, .nnames = 2, .days = 1};
    struct tls_cert cert;
    char err[256];
    memset(&cert, 0, sizeof(cert));
    assert_int_equal(tls_cert_make(&conf, &cert, err, sizeof(err)), 0);
    assert_int_equal(tls_cert_write(&cert, x->dir, true, err, sizeof(err)), 0);
    tls_cert_fini(&cert);
    struct child_conf cc = {.tls = true, .tls_dir = x->dir};
    char text[4096], want[HARNESS_PATH_MAX * 3], path[HARNESS_PATH_MAX];
    assert_true(child_conf_format(text, sizeof(text), &cc) > 0);
    assert_non_null(strstr(text, "listen = tls://127.0.0.1:0\n"));
    snprintf(want, sizeof(want), "[tls]\ncert = %s/cert.pem\nkey = %s/key.pem\n", x->dir, x->dir);
    assert_non_null(strstr(text, want));
    expect_load_ok(x, text, NULL);
    harness_path(path, sizeof(path), x->dir, "cert.pem");
    unlink(path);
    harness_path(path, sizeof(path), x->dir, "key.pem");
    unlink(path);
    /* Without tls, the plain listener as before. */
    struct child_conf plain = {0};
    assert_true(child_conf_format(text, sizeof(text), &plain) > 0);
    assert_non_null(strstr(text, "listen = 127.0.0.1:0\n"));
    assert_null(strstr(text, "[tls]"));
}

/* --tunnel h2: the client ferry (hop 0) has the mixed port `ferry client
 * ... socks` opens and the server (hop 1) as an https:// parent over h2,
 * verified by the server's pin; the server is a tls:// ferry like
 * --https-proxy's. Both load. */
static void test_tunnel_client_and_server(void **state)
{
    struct ctx *x = *state;
    struct tls_cert_conf conf = {.names = {"localhost", "127.0.0.1"}, .nnames = 2, .days = 1};
    struct tls_cert cert;
    char err[256], text[4096], want[256], path[HARNESS_PATH_MAX];
    memset(&cert, 0, sizeof(cert));
    assert_int_equal(tls_cert_make(&conf, &cert, err, sizeof(err)), 0);
    assert_int_equal(tls_cert_write(&cert, x->dir, true, err, sizeof(err)), 0);
    struct addr server = loopback(40400);
    struct child_conf client = {.next = &server, .next_pin = cert.pin};
    assert_true(child_conf_format(text, sizeof(text), &client) > 0);
    assert_non_null(strstr(text, "listen = 127.0.0.1:0 protocols=socks5+socks4+http\n"));
    snprintf(want, sizeof(want),
             "[outbound next]\nurl = https://127.0.0.1:40400\npin = %s\nmux = h2\n", cert.pin);
    assert_non_null(strstr(text, want));
    expect_load_ok(x, text, NULL);
    const struct config_outbound *ob = default_outbound(x->c);
    assert_string_equal(ob->name, CHILD_NEXT_OUTBOUND);
    assert_int_equal(ob->kind, OUTBOUND_KIND_HTTPS);
    assert_int_equal(ob->mux, OUTBOUND_MUX_H2);
    assert_true(ob->has_pin);
    assert_int_equal(ob->port, 40400);
    assert_int_equal(x->c->nlisten, 1);
    assert_int_equal(x->c->listen[0].protocols, PROTO_ALL);
    /* The server: tls:// and [tls], no outbound. */
    struct child_conf srv = {.tls = true, .tls_dir = x->dir};
    assert_true(child_conf_format(text, sizeof(text), &srv) > 0);
    assert_non_null(strstr(text, "listen = tls://127.0.0.1:0\n"));
    assert_null(strstr(text, "[outbound"));
    expect_load_ok(x, text, NULL);
    /* --tunnel wss: websocket = /tunnel on both ends; both load. */
    client.ws_path = srv.ws_path = BENCH_WS_PATH;
    assert_true(child_conf_format(text, sizeof(text), &client) > 0);
    assert_non_null(strstr(text, "mux = h2\nwebsocket = /tunnel\n"));
    expect_load_ok(x, text, NULL);
    assert_string_equal(default_outbound(x->c)->ws_path, "/tunnel");
    assert_true(child_conf_format(text, sizeof(text), &srv) > 0);
    assert_non_null(strstr(text, "listen = tls://127.0.0.1:0 websocket=/tunnel\n"));
    expect_load_ok(x, text, NULL);
    assert_string_equal(x->c->listen[0].ws_path, "/tunnel");
    tls_cert_fini(&cert);
    harness_path(path, sizeof(path), x->dir, "cert.pem");
    unlink(path);
    harness_path(path, sizeof(path), x->dir, "key.pem");
    unlink(path);
}

/* A config that does not fit is refused whole, at every cut. */
static void test_too_small_is_an_error(void **state)
{
    (void)state;
    struct addr next = loopback(40300);
    struct child_conf cc = {.workers = 3, .extra = "access_log = no\n", .next = &next};
    char text[4096];
    int n = child_conf_format(text, sizeof(text), &cc);
    assert_true(n > 0);
    for (size_t cap = 0; cap <= (size_t)n; cap++) {
        char small[4096];
        assert_int_equal(child_conf_format(small, cap, &cc), -1);
    }
    assert_int_equal(child_conf_format(text, (size_t)n + 1, &cc), n);
}

static struct bench_opts o;
static struct bench_cli cli;

static int parse(int argc, const char **words)
{
    static char store[16][64];
    static char *argv[17];
    for (int i = 0; i < argc; i++) {
        snprintf(store[i], sizeof(store[i]), "%s", words[i]);
        argv[i] = store[i];
    }
    argv[argc] = NULL;
    memset(&o, 0, sizeof(o));
    return bench_opts_parse(argc, argv, &o, &cli);
}

#define PARSE(...)                                                             \
    parse((int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
          (const char *[]){__VA_ARGS__})

static void test_chain_option(void **state)
{
    (void)state;
    assert_int_equal(PARSE("bench", "throughput"), BENCH_RUN);
    assert_int_equal(o.chain, 1);
    assert_int_equal(PARSE("bench", "--chain", "2", "throughput"), BENCH_RUN);
    assert_int_equal(o.chain, 2);
    assert_int_equal(PARSE("bench", "handshakes", "--chain", "8"), BENCH_RUN);
    assert_int_equal(o.chain, BENCH_MAX_CHAIN);
    /* Out of range, or not a number: usage errors. */
    assert_int_equal(PARSE("bench", "throughput", "--chain", "0"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--chain", "9"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--chain", "two"), 2);
    /* It starts ferries: not with a proxy of someone else's, nor none. */
    assert_int_equal(PARSE("bench", "throughput", "--chain", "2", "--proxy", "127.0.0.1:1080"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--chain", "2", "--direct"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--chain", "2", "--relay", "127.0.0.1:1",
                           "--target-port", "9"),
                     2);
    assert_int_equal(PARSE("bench", "rules", "--chain", "2"), 2);
    /* --chain 1 is today's single ferry: fine with anything. */
    assert_int_equal(PARSE("bench", "throughput", "--chain", "1", "--direct"), BENCH_RUN);
    /* Through HTTP or UDP, the first ferry still takes it. */
    assert_int_equal(PARSE("bench", "requests", "--chain", "3", "--http-proxy", "absolute"),
                     BENCH_RUN);
    assert_int_equal(PARSE("bench", "udp", "--chain", "2"), BENCH_RUN);
    /* The range check itself (bench_params_check), for a row built by hand. */
    struct bench_opts d;
    bench_opts_defaults(&d, bench_scenario_find("throughput"));
    assert_int_equal(d.chain, 1);
    char msg[160] = "";
    d.chain = 9;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--chain must be 1..8 ferries (got 9)");
}

/* --tunnel: h2 or wss, self-hosted scenarios through a proxy only (TCP,
 * and udp over h2), and neither --chain nor --https-proxy beside it. */
static void test_tunnel_option(void **state)
{
    (void)state;
    assert_int_equal(PARSE("bench", "throughput"), BENCH_RUN);
    assert_int_equal(o.tunnel, TUNNEL_NONE);
    assert_int_equal(bench_hops(&o), 1);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2"), BENCH_RUN);
    assert_int_equal(o.tunnel, TUNNEL_H2);
    assert_int_equal(bench_hops(&o), 2);
    assert_int_equal(PARSE("bench", "handshakes", "--tunnel", "h2"), BENCH_RUN);
    assert_int_equal(PARSE("bench", "requests", "--tunnel", "h2"), BENCH_RUN);
    assert_int_equal(PARSE("bench", "connections", "--tunnel", "h2"), BENCH_RUN);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2", "--chain", "1"), BENCH_RUN);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "wss"), BENCH_RUN);
    assert_int_equal(o.tunnel, TUNNEL_WSS);
    assert_int_equal(bench_hops(&o), 2);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h3"), 2);
    assert_int_equal(PARSE("bench", "udp", "--tunnel", "h2"), BENCH_RUN);
    assert_int_equal(PARSE("bench", "rules", "--tunnel", "h2"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2", "--direct"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2", "--proxy", "127.0.0.1:1080"),
                     2);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2", "--chain", "2"), 2);
    assert_int_equal(PARSE("bench", "throughput", "--tunnel", "h2", "--https-proxy", "h2"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_hop_sends_to_the_next, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extra_lines_stay_top_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_section_after_the_outbound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_listener, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tunnel_client_and_server, setup, teardown),
        cmocka_unit_test(test_too_small_is_an_error),
        cmocka_unit_test(test_tunnel_option),
        cmocka_unit_test(test_chain_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
