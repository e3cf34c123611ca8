/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * check_test.c: how `ferry bench` reports wrong data: the first differing
 * byte of two buffers, and bench_fail(), which keeps the first message of a
 * run, ignores later ones, and is cleared between runs. Wrong data fails a
 * run; these are the pieces every scenario's check is built from. And the
 * checks before any run: bench_params_check() refuses parameters that cannot
 * give a figure (a zero window, a zero download) or cannot run here, naming
 * the option and its range; and a shortfall (result_shortfall) keeps every
 * part of what a run missed.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>

#include "bench/bench.h"

static void test_first_diff(void **state)
{
    (void)state;
    const uint8_t a[] = {1, 2, 3, 4, 5};
    uint8_t b[] = {1, 2, 3, 4, 5};
    assert_int_equal(bench_first_diff(a, b, 5), 5);
    assert_int_equal(bench_first_diff(a, b, 0), 0);
    b[3] = 9;
    assert_int_equal(bench_first_diff(a, b, 5), 3);
    assert_int_equal(bench_first_diff(a, b, 3), 3); /* no difference within n */
    b[0] = 0;
    assert_int_equal(bench_first_diff(a, b, 5), 0);
}

static void test_fail_keeps_the_first_message(void **state)
{
    (void)state;
    static struct bench b; /* zeroed: not failed */
    assert_false(bench_has_failed(&b));
    bench_fail(&b, "stream %u: byte %u", 3u, 70000u);
    assert_true(bench_has_failed(&b));
    bench_fail(&b, "a later problem");
    assert_string_equal(b.fail_msg, "stream 3: byte 70000");
    bench_fail_reset(&b);
    assert_false(bench_has_failed(&b));
    assert_string_equal(b.fail_msg, "");
    bench_fail(&b, "next run");
    assert_string_equal(b.fail_msg, "next run");
}

static void test_fail_message_is_bounded(void **state)
{
    (void)state;
    static struct bench b;
    char big[1024];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bench_fail(&b, "%s", big);
    assert_true(bench_has_failed(&b));
    assert_int_equal(strlen(b.fail_msg), sizeof(b.fail_msg) - 1);
}

struct racer {
    struct bench *b;
    unsigned id;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < 100; i++)
        bench_fail(r->b, "thread %u attempt %d", r->id, i);
    return NULL;
}

/* Generator threads report concurrently: exactly one whole message wins. */
static void test_fail_from_many_threads(void **state)
{
    (void)state;
    static struct bench b;
    pthread_t t[8];
    struct racer r[8];
    for (unsigned i = 0; i < 8; i++) {
        r[i] = (struct racer){&b, i};
        assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (unsigned i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    assert_true(bench_has_failed(&b));
    unsigned id;
    int attempt;
    assert_int_equal(sscanf(b.fail_msg, "thread %u attempt %d", &id, &attempt), 2);
    assert_true(id < 8 && attempt == 0);
}

/* The defaults of bench_main, for a scenario. */
static struct bench_opts defaults(const char *scenario)
{
    struct bench_opts o;
    memset(&o, 0, sizeof(o));
    o.scenario = scenario;
    o.runs = 3;
    o.duration_s = 5;
    o.warmup_s = 1;
    o.threads = 1;
    o.connections = !strcmp(scenario, "connections") ? 10000 : !strcmp(scenario, "udp") ? 16 : 8;
    o.concurrency = 8;
    o.payload = !strcmp(scenario, "udp") ? 1200 : 65536;
    o.requests = 1000;
    o.warm_requests = 100;
    o.downloads = 8;
    o.download_size = 1 << 20;
    o.nrules = 1000;
    o.auth_cachettl_s = -1;
    return o;
}

static void expect_refused(const struct bench_opts *o, const char *needle1, const char *needle2)
{
    char msg[160] = "";
    assert_int_equal(bench_params_check(o, msg, sizeof(msg)), -1);
    if (!strstr(msg, needle1) || !strstr(msg, needle2))
        fail_msg("message '%s' lacks '%s' or '%s'", msg, needle1, needle2);
}

static void test_params_defaults_pass(void **state)
{
    (void)state;
    static const char *const sc[] = {"throughput",  "handshakes", "requests",
                                     "connections", "udp",        "rules"};
    for (size_t i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
        struct bench_opts o = defaults(sc[i]);
        char msg[160] = "";
        assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
    }
}

static void test_params_impossible_values(void **state)
{
    (void)state;
    struct bench_opts o = defaults("throughput");
    o.duration_s = 0; /* was: a run that "measured" 0 MiB/s */
    expect_refused(&o, "--duration", "0.1..3600");
    o.duration_s = 0.05;
    expect_refused(&o, "--duration", "0.1..3600");
    o.duration_s = 3601;
    expect_refused(&o, "--duration", "0.1..3600");
    o = defaults("throughput");
    o.warmup_s = -1;
    expect_refused(&o, "--warmup", "0..600");
    o = defaults("throughput");
    o.runs = 0;
    expect_refused(&o, "--runs", "1..100");
    o.runs = 101;
    expect_refused(&o, "--runs", "1..100");
    o = defaults("throughput");
    o.connections = 20000;
    expect_refused(&o, "--connections", "1..10000 for throughput");
    o = defaults("connections");
    o.connections = 300000;
    expect_refused(&o, "--connections", "1..250000 for connections");
    o.connections = 250000;
    char msg[160];
    assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
    o = defaults("udp");
    o.payload = 8;
    expect_refused(&o, "--payload", "12..65485 bytes for udp");
    o = defaults("throughput");
    o.payload = 0;
    expect_refused(&o, "--payload", "1..1048576");
    o = defaults("requests");
    o.download_size = 0;
    expect_refused(&o, "--download-size", "1..");
    o = defaults("requests");
    o.requests = 0;
    expect_refused(&o, "--requests", "1..");
    o = defaults("requests");
    o.downloads = 0;
    expect_refused(&o, "--downloads", "1..1000");
    o = defaults("connections");
    o.ping_s = 0.001; /* a flood, not a ping */
    expect_refused(&o, "--ping", "0.02..3600");
    o.ping_s = 0; /* off */
    assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
    o = defaults("handshakes");
    o.concurrency = 0;
    expect_refused(&o, "--concurrency", "1..10000");
    o = defaults("handshakes");
    o.threads = 65;
    expect_refused(&o, "--threads", "1..64");
    o = defaults("rules");
    o.nrules = 0; /* the cost of the default policy alone: allowed */
    assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
    o.nrules = 1000001;
    expect_refused(&o, "--rules", "0..1000000");
    o = defaults("handshakes");
    o.rate = 0.5; /* below one a second is not a load */
    expect_refused(&o, "--rate", "0 (off) or 1..10000000 per second");
    o.rate = -1;
    expect_refused(&o, "--rate", "1..10000000");
    o.rate = 2e7;
    expect_refused(&o, "--rate", "1..10000000");
    o.rate = 0; /* closed loop */
    assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
    o.rate = 5000;
    assert_int_equal(bench_params_check(&o, msg, sizeof(msg)), 0);
}

/* The block-wise compare finds the first wrong byte wherever it is: in the
 * first block, on a block's edge, deep in a long buffer, or nowhere. */
static void test_first_diff_in_long_buffers(void **state)
{
    (void)state;
    enum { N = 3 * 4096 + 77 };
    static uint8_t a[N], b[N];
    for (size_t i = 0; i < N; i++)
        a[i] = b[i] = (uint8_t)(i * 31u + 7u);
    assert_int_equal(bench_first_diff(a, b, N), N);
    size_t at[] = {0, 1, 4095, 4096, 4097, 8191, 8192, 3 * 4096, N - 1};
    for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
        b[at[k]] ^= 0x40;
        assert_int_equal(bench_first_diff(a, b, N), at[k]);
        assert_int_equal(bench_first_diff(a, b, at[k]), at[k]); /* not within n */
        b[at[k]] ^= 0x40;
    }
}

static void test_shortfall_keeps_every_part(void **state)
{
    (void)state;
    static struct result r;
    result_shortfall(&r, "%u of %u connections could not be set up", 64u, 10000u);
    result_shortfall(&r, "%u held connections did not echo", 3u);
    assert_string_equal(r.shortfall,
                        "64 of 10000 connections could not be set up; 3 held connections did not "
                        "echo");
    static struct result big;
    char x[1024];
    memset(x, 'x', sizeof(x) - 1);
    x[sizeof(x) - 1] = '\0';
    result_shortfall(&big, "%s", x);
    result_shortfall(&big, "%s", x);
    assert_int_equal(strlen(big.shortfall), sizeof(big.shortfall) - 1);
}

static void test_first_setup_failure_is_kept(void **state)
{
    (void)state;
    static struct bench b;
    char why[200];
    assert_string_equal(bench_setup_reason(&b, why, sizeof(why)), "");
    struct sclient s;
    memset(&s, 0, sizeof(s));
    struct route r;
    memset(&r, 0, sizeof(r));
    r.mode = BENCH_PROXY;
    s.fail = SC_FAIL_SOCKS;
    s.rep = SOCKS5_REP_CONNECTION_REFUSED;
    s.phase = SC_FAILED;
    bench_setup_failed(&b, &s, &r);
    bench_setup_note(&b, "a later one");
    bench_setup_reason(&b, why, sizeof(why));
    assert_non_null(strstr(why, "first failure: SOCKS5 reply 5"));
    bench_fail_reset(&b);
    assert_string_equal(bench_setup_reason(&b, why, sizeof(why)), "");
    s.fail = SC_FAIL_SOCKET;
    s.rep = 0;
    s.err = -ECONNREFUSED;
    bench_setup_failed(&b, &s, &r);
    bench_setup_reason(&b, why, sizeof(why));
    assert_non_null(strstr(why, "connection to the proxy: Connection refused"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_diff),
        cmocka_unit_test(test_first_diff_in_long_buffers),
        cmocka_unit_test(test_fail_keeps_the_first_message),
        cmocka_unit_test(test_fail_message_is_bounded),
        cmocka_unit_test(test_fail_from_many_threads),
        cmocka_unit_test(test_params_defaults_pass),
        cmocka_unit_test(test_params_impossible_values),
        cmocka_unit_test(test_shortfall_keeps_every_part),
        cmocka_unit_test(test_first_setup_failure_is_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
