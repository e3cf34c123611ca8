/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * options_test.c: `ferry bench`'s command line (options.c). The scenario
 * table gives each scenario its defaults for --connections, --concurrency
 * and --payload (what --help promises), and an option given on the command
 * line wins over them wherever it stands; every kind of option lands in its
 * field; the arguments are kept as given although getopt_long reorders
 * them; a usage error (unknown scenario, a value that does not parse or is
 * out of range, a combination that makes no sense) is exit status 2, and
 * --help is 0. Also the verdict on a run (result.c).
 */
#include "harness.h"

#include <errno.h>

#include "bench/bench.h"
#include "bench/options.h"

static struct bench_opts o;
static struct bench_cli cli;

/* Parse "bench" followed by the NULL-terminated words. */
static int parse_words(const char *first, ...)
{
    static char store[48][64];
    static char *argv[49];
    int argc = 0;
    snprintf(store[argc], sizeof(store[argc]), "bench");
    argv[argc] = store[argc];
    argc++;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w; w = va_arg(ap, const char *)) {
        assert_true(argc < 48);
        snprintf(store[argc], sizeof(store[argc]), "%s", w);
        argv[argc] = store[argc];
        argc++;
    }
    va_end(ap);
    argv[argc] = NULL;
    memset(&o, 0, sizeof(o));
    return bench_opts_parse(argc, argv, &o, &cli);
}

#define PARSE(...) parse_words(__VA_ARGS__, (const char *)NULL)

/* The defaults --help documents, scenario by scenario. */
static void test_defaults_per_scenario(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unsigned connections, concurrency;
        size_t payload;
    } want[] = {
        {"throughput", 8, 8, 65536}, {"handshakes", 8, 32, 65536},
        {"requests", 8, 8, 65536},   {"connections", 10000, 256, 65536},
        {"udp", 16, 8, 1200},        {"rules", 8, 8, 65536},
        {"edge", 8, 32, 65536},
    };
    assert_int_equal(bench_nscenarios, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct bench_scenario *sc = bench_scenario_find(want[i].name);
        assert_non_null(sc);
        assert_non_null(sc->run);
        struct bench_opts d;
        bench_opts_defaults(&d, sc);
        assert_string_equal(d.scenario, want[i].name);
        assert_int_equal(d.connections, want[i].connections);
        assert_int_equal(d.concurrency, want[i].concurrency);
        assert_int_equal(d.payload, want[i].payload);
        /* The same through the command line. */
        assert_int_equal(PARSE(want[i].name), BENCH_RUN);
        assert_ptr_equal(cli.sc, sc);
        assert_int_equal(o.connections, want[i].connections);
        assert_int_equal(o.concurrency, want[i].concurrency);
        assert_int_equal(o.payload, want[i].payload);
        /* Each scenario's defaults are within its own ranges. */
        char msg[160] = "";
        assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), 0);
    }
    assert_null(bench_scenario_find("bogus"));
    assert_null(bench_scenario_find(NULL));
}

static void test_defaults_shared(void **state)
{
    (void)state;
    assert_int_equal(PARSE("handshakes"), BENCH_RUN);
    assert_int_equal(o.runs, 3);
    assert_true(o.duration_s == 5 && o.warmup_s == 1 && o.ping_s == 0);
    assert_int_equal(o.threads, 1);
    assert_int_equal(o.requests, 1000);
    assert_int_equal(o.warm_requests, 100);
    assert_int_equal(o.downloads, 8);
    assert_int_equal(o.download_size, 1 << 20);
    assert_true(o.spread_src && o.echo_gro);
    assert_false(o.json || o.blast || o.allow_failures);
    assert_string_equal(o.ferry, "/proc/self/exe");
    assert_string_equal(o.auth, "none");
    assert_int_equal(o.nrules, 1000);
    assert_int_equal(o.auth_cachettl_s, -1);
    assert_int_equal(o.mode, BENCH_SELF);
    assert_int_equal(o.http_proxy, HTTP_PROXY_NONE);
    assert_int_equal(o.proxy_workers, 0);
    assert_int_equal(cli.target_port, 0);
    assert_string_equal(cli.proxy_conf, "");
}

/* A value given wins over the scenario's default, before or after the
 * scenario's name; one not given still takes the scenario's. */
static void test_given_beats_scenario_default(void **state)
{
    (void)state;
    assert_int_equal(PARSE("--concurrency", "5", "handshakes"), BENCH_RUN);
    assert_int_equal(o.concurrency, 5);
    assert_int_equal(o.connections, 8);
    assert_int_equal(PARSE("udp", "--payload", "100"), BENCH_RUN);
    assert_int_equal(o.payload, 100);
    assert_int_equal(o.connections, 16);
    assert_int_equal(PARSE("connections", "--connections", "8"), BENCH_RUN);
    assert_int_equal(o.connections, 8);
    assert_int_equal(o.concurrency, 256);
    /* Given as another scenario's default (8): still given. */
    assert_int_equal(PARSE("udp", "--payload", "1200", "--connections", "8"), BENCH_RUN);
    assert_int_equal(o.payload, 1200);
    assert_int_equal(o.connections, 8);
}

static void test_every_kind_of_option(void **state)
{
    (void)state;
    assert_int_equal(PARSE("requests", "--runs", "2", "--duration", "0.5", "--warmup", "0",
                           "--download-size", "2m", "--downloads", "3", "--requests", "50",
                           "--warm-requests", "0", "--threads", "4", "--no-spread", "--json",
                           "--allow-failures", "--auth", "plain", "--auth-cachettl", "7",
                           "--proxy-workers", "3", "--ferry", "/bin/ferry", "--http-proxy",
                           "absolute", "--rules", "0"),
                     BENCH_RUN);
    assert_int_equal(o.runs, 2);
    assert_true(o.duration_s == 0.5 && o.warmup_s == 0);
    assert_int_equal(o.download_size, 2 << 20);
    assert_int_equal(o.downloads, 3);
    assert_int_equal(o.requests, 50);
    assert_int_equal(o.warm_requests, 0);
    assert_int_equal(o.threads, 4);
    assert_false(o.spread_src);
    assert_true(o.json && o.allow_failures);
    assert_string_equal(o.auth, "plain");
    assert_int_equal(o.auth_cachettl_s, 7);
    assert_int_equal(o.proxy_workers, 3);
    assert_string_equal(o.ferry, "/bin/ferry");
    assert_int_equal(o.http_proxy, HTTP_PROXY_ABSOLUTE);
    assert_int_equal(o.nrules, 0);

    assert_int_equal(PARSE("udp", "--blast", "--no-echo-gro", "--ping", "0.5", "--proxy",
                           "127.0.0.1:1080", "--proxy-pid", "10,20"),
                     BENCH_RUN);
    assert_true(o.blast);
    assert_false(o.echo_gro);
    assert_true(o.ping_s == 0.5);
    assert_int_equal(o.mode, BENCH_PROXY);
    assert_int_equal(o.nproxy_pids, 2);
    assert_int_equal(o.proxy_pids[0], 10);
    assert_int_equal(o.proxy_pids[1], 20);

    assert_int_equal(PARSE("throughput", "--relay", "127.0.0.1:9000", "--target-port", "7000"),
                     BENCH_RUN);
    assert_int_equal(o.mode, BENCH_RELAY);
    assert_int_equal(cli.target_port, 7000);
    assert_int_equal(PARSE("throughput", "--direct"), BENCH_RUN);
    assert_int_equal(o.mode, BENCH_DIRECT);

    assert_int_equal(PARSE("throughput", "--proxy-set", "splice=off", "--proxy-set", "a=b=c"),
                     BENCH_RUN);
    assert_string_equal(cli.proxy_conf, "splice = off\na = b=c\n");
    assert_int_equal(o.nproxy_set, 2);
    assert_string_equal(o.proxy_set[0], "splice=off");
    /* An unambiguous abbreviation, as getopt_long takes it. */
    assert_int_equal(PARSE("rules", "--dur", "0.2"), BENCH_RUN);
    assert_true(o.duration_s == 0.2);
}

/* getopt_long moves options before the scenario; the report shows argv
 * as given. */
static void test_arguments_kept_as_given(void **state)
{
    (void)state;
    assert_int_equal(PARSE("rules", "--runs", "1"), BENCH_RUN);
    assert_int_equal(o.argc, 4);
    assert_int_equal(o.argv_total, 4);
    assert_string_equal(o.argv[0], "bench");
    assert_string_equal(o.argv[1], "rules");
    assert_string_equal(o.argv[2], "--runs");
    assert_string_equal(o.argv[3], "1");
    assert_string_equal(o.scenario, "rules");
}

static void test_usage_errors(void **state)
{
    (void)state;
    assert_int_equal(PARSE("--runs", "2"), 2);          /* no scenario */
    assert_int_equal(PARSE("bogus"), 2);                /* unknown scenario */
    assert_int_equal(PARSE("rules", "extra"), 2);       /* a second word */
    assert_int_equal(PARSE("rules", "--bogus"), 2);     /* unknown option */
    assert_int_equal(PARSE("rules", "--runs", "x"), 2); /* does not parse */
    assert_int_equal(PARSE("rules", "--duration", "inf"), 2);
    assert_int_equal(PARSE("rules", "--payload", "1x"), 2);
    assert_int_equal(PARSE("rules", "--proxy", "nowhere"), 2);
    assert_int_equal(PARSE("rules", "--proxy-pid", "0"), 2);
    assert_int_equal(PARSE("rules", "--proxy-set", "novalue"), 2);
    assert_int_equal(PARSE("rules", "--proxy-set", "=x"), 2);
    assert_int_equal(PARSE("rules", "--proxy-workers", "0"), 2); /* parse range 1..256 */
    assert_int_equal(PARSE("rules", "--target-port", "65536"), 2);
    assert_int_equal(PARSE("rules", "--auth", "kerberos"), 2);
    assert_int_equal(PARSE("rules", "--http-proxy", "socks"), 2);
    assert_int_equal(PARSE("rules", "--pro", "x"), 2); /* ambiguous */
    /* Out of range, after the defaults: the checks of bench_params_check. */
    assert_int_equal(PARSE("rules", "--runs", "0"), 2);
    assert_int_equal(PARSE("throughput", "--connections", "20000"), 2);
    assert_int_equal(PARSE("connections", "--connections", "20000"), BENCH_RUN);
    assert_int_equal(PARSE("udp", "--payload", "8"), 2);
    assert_int_equal(PARSE("throughput", "--payload", "8"), BENCH_RUN);
    /* Combinations. */
    assert_int_equal(PARSE("udp", "--http-proxy", "connect"), 2);
    assert_int_equal(PARSE("handshakes", "--http-proxy", "absolute"), 2);
    assert_int_equal(PARSE("handshakes", "--http-proxy", "connect"), BENCH_RUN);
    assert_int_equal(PARSE("handshakes", "--direct", "--http-proxy", "connect"), 2);
    assert_int_equal(PARSE("udp", "--relay", "127.0.0.1:1", "--target-port", "9"), 2);
    assert_int_equal(PARSE("handshakes", "--relay", "127.0.0.1:1"), 2); /* no --target-port */
    /* --https-proxy h1|h2; an external proxy is verified, a self-hosted one by its pin. */
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1"), BENCH_RUN);
    assert_int_equal(PARSE("requests", "--https-proxy", "h1"), BENCH_RUN);
    assert_int_equal(o.http_proxy, HTTP_PROXY_ABSOLUTE); /* h1 requests: absolute-form */
    assert_int_equal(PARSE("throughput", "--https-proxy", "h2"), BENCH_RUN);
    assert_int_equal(o.https_proxy, HTTPS_PROXY_H2);
    assert_int_equal(PARSE("requests", "--https-proxy", "h2"), BENCH_RUN);
    assert_int_equal(o.http_proxy, HTTP_PROXY_CONNECT); /* h2: CONNECT streams only */
    assert_int_equal(PARSE("requests", "--https-proxy", "h2", "--http-proxy", "absolute"), 2);
    assert_int_equal(PARSE("handshakes", "--https-proxy", "h2", "--proxy", "127.0.0.1:1"), 2);
    assert_int_equal(PARSE("throughput", "--https-proxy", "tls"), 2);
    assert_int_equal(PARSE("udp", "--https-proxy", "h1"), 2);
    assert_int_equal(PARSE("connections", "--https-proxy", "h1"), 2); /* not yet */
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1", "--direct"), 2);
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1", "--proxy", "127.0.0.1:1"), 2);
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1", "--proxy", "127.0.0.1:1",
                           "--proxy-cacert", "/nonexistent.pem"),
                     BENCH_RUN); /* the file is read when the run starts */
    assert_int_equal(PARSE("throughput", "--proxy-cacert", "/x.pem"), 2); /* no --https-proxy */
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1", "--proxy", "127.0.0.1:1",
                           "--proxy-pin", "sha256//short"),
                     2);
    /* --stalled: h2 throughput only, at most --connections. */
    assert_int_equal(
        PARSE("throughput", "--https-proxy", "h2", "--connections", "7", "--stalled", "1"),
        BENCH_RUN);
    assert_int_equal(o.stalled, 1);
    assert_int_equal(PARSE("throughput", "--https-proxy", "h2", "--stalled", "0"), BENCH_RUN);
    assert_int_equal(
        PARSE("throughput", "--https-proxy", "h2", "--connections", "2", "--stalled", "3"), 2);
    assert_int_equal(PARSE("throughput", "--https-proxy", "h1", "--stalled", "1"), 2);
    assert_int_equal(PARSE("throughput", "--stalled", "1"), 2); /* SOCKS5 */
    assert_int_equal(PARSE("throughput", "--http-proxy", "connect", "--stalled", "1"), 2);
    assert_int_equal(PARSE("requests", "--https-proxy", "h2", "--stalled", "1"), 2);
}

static void test_help_is_exit_0(void **state)
{
    (void)state;
    assert_int_equal(PARSE("--help"), 0);
    assert_true(cli.help);
    assert_int_equal(PARSE("rules", "-h"), 0);
    assert_int_equal(PARSE("--bogus", "--help"), 2); /* the first problem wins */
}

/* A scenario's narrower range is named with it; the option's own is not. */
static void test_range_messages(void **state)
{
    (void)state;
    char msg[160];
    struct bench_opts d;
    bench_opts_defaults(&d, bench_scenario_find("udp"));
    d.connections = 10001;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--connections must be 1..10000 for udp (got 10001)");
    bench_opts_defaults(&d, bench_scenario_find("handshakes"));
    d.connections = 250001;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--connections must be 1..250000 (got 250001)");
    d.connections = 8;
    d.download_size = 0;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--download-size must be 1..4294967296 bytes (got 0)");
    d.download_size = 1;
    d.auth_cachettl_s = 86401;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--auth-cachettl must be 0..86400 seconds (got 86401)");
    d.auth_cachettl_s = -1; /* the default */
    d.proxy_workers = 0;    /* the default */
    d.ping_s = 0;           /* off */
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), 0);
    d.ping_s = 0.01;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--ping must be 0 (off) or 0.02..3600 seconds (got 0.01)");
    d.ping_s = 0;
    d.proxy_workers = 257;
    assert_int_equal(bench_params_check(&d, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "--proxy-workers must be 1..256 (got 257)");
}

/* ---- the verdict on a run (result.c) ---- */

static void test_verdict(void **state)
{
    (void)state;
    static struct bench b;
    static struct result r;
    char err[128];
    memset(&b, 0, sizeof(b));
    memset(&r, 0, sizeof(r));
    err[0] = '\0';
    assert_int_equal(result_verdict(&b, &r, 1, 0, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    /* A shortfall fails the run unless --allow-failures... */
    result_shortfall(&r, "3 of 8 streams ended early");
    assert_int_equal(result_verdict(&b, &r, 1, 0, err, sizeof(err)), -EPROTO);
    assert_string_equal(err, "3 of 8 streams ended early");
    err[0] = '\0';
    b.o.allow_failures = true;
    assert_int_equal(result_verdict(&b, &r, 1, 0, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    /* ...and even then when nothing could be set up. */
    r.nothing = true;
    assert_int_equal(result_verdict(&b, &r, 1, 0, err, sizeof(err)), -EPROTO);
    /* Wrong data always fails it, first. */
    bench_fail(&b, "stream 1: byte 5 differs");
    assert_int_equal(result_verdict(&b, &r, 2, 0, err, sizeof(err)), -EBADMSG);
    assert_string_equal(err, "stream 1: byte 5 differs");
    /* A scenario's own error is kept, without a message to report. */
    bench_fail_reset(&b);
    memset(&r, 0, sizeof(r));
    err[0] = '\0';
    assert_int_equal(result_verdict(&b, &r, 1, -ENOMEM, err, sizeof(err)), -ENOMEM);
    assert_string_equal(err, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_per_scenario),
        cmocka_unit_test(test_defaults_shared),
        cmocka_unit_test(test_given_beats_scenario_default),
        cmocka_unit_test(test_every_kind_of_option),
        cmocka_unit_test(test_arguments_kept_as_given),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_help_is_exit_0),
        cmocka_unit_test(test_range_messages),
        cmocka_unit_test(test_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
