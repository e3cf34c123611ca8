/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * render_test.c: the renderer (metrics/render.c) is a function of its
 * arguments: the process figures and the log's drop count come in with
 * struct metrics_state (a figure the scrape could not read is left out,
 * family and all), the same inputs give the same text byte for byte, and a
 * rule label that is not UTF-8 (a file name may hold any byte) becomes '?'
 * instead of breaking the scrape; each outbound's health and counters
 * are rendered. And the text buffer the endpoint answers with:
 * printf-style appends that grow it, raw appends of any length.
 */
#include "harness.h"

#include "config/config.h"
#include "core/stats.h"
#include "metrics/render.h"
#include "worker/worker.h"

static struct worker ws[3];
static struct shared sh;

static char *render(const struct config *cfg, const struct metrics_state *st)
{
    struct metrics_source src = {ws, 3, &sh, NULL};
    struct mtext t = {0};
    metrics_render(&t, &src, cfg, st);
    assert_false(t.oom);
    char *out = malloc(t.len + 1);
    assert_non_null(out);
    memcpy(out, t.p, t.len);
    out[t.len] = '\0';
    mtext_fini(&t);
    return out;
}

static void expect_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    fail_msg("no line '%s' in:\n%s", line, text);
}

static void expect_no(const char *text, const char *what)
{
    if (strstr(text, what))
        fail_msg("'%s' should not be in:\n%s", what, text);
}

static void test_process_figures_come_from_the_state(void **state)
{
    (void)state;
    struct metrics_state st = {.start_time = 1.5, .log_dropped = 42};
    st.proc = (struct metrics_process){.have_stat = true,
                                       .cpu_s = 12.25,
                                       .vsize = 1000,
                                       .rss_bytes = 4096,
                                       .have_fds = true,
                                       .fds = 17,
                                       .have_max_fds = true,
                                       .max_fds = 1024};
    char *text = render(NULL, &st);
    expect_line(text, "# TYPE process_cpu_seconds_total counter");
    expect_line(text, "process_cpu_seconds_total 12.250000");
    expect_line(text, "process_virtual_memory_bytes 1000");
    expect_line(text, "process_resident_memory_bytes 4096");
    expect_line(text, "process_open_fds 17");
    expect_line(text, "process_max_fds 1024");
    expect_line(text, "process_start_time_seconds 1.500000");
    expect_line(text, "ferry_log_records_dropped_total 42");
    expect_line(text, "ferry_workers 3");
    free(text);
}

/* What a scrape could not read is left out, HELP and TYPE included. */
static void test_unknown_process_figures_are_left_out(void **state)
{
    (void)state;
    struct metrics_state st = {.start_time = 2};
    st.proc.have_fds = true;
    st.proc.fds = 5;
    char *text = render(NULL, &st);
    expect_no(text, "process_cpu_seconds_total");
    expect_no(text, "process_virtual_memory_bytes");
    expect_no(text, "process_resident_memory_bytes");
    expect_no(text, "process_max_fds");
    expect_line(text, "process_open_fds 5");
    expect_line(text, "process_start_time_seconds 2.000000");
    free(text);
}

/* No clock, no sampling inside: the same inputs, the same bytes. */
static void test_same_inputs_same_text(void **state)
{
    (void)state;
    stat_add(&ws[0].stats.accepted, 5);
    stat_add(&ws[2].stats.bytes_up, 77);
    struct metrics_state st = {.start_time = 3, .reloads_ok = 1};
    char *a = render(NULL, &st);
    char *b = render(NULL, &st);
    assert_string_equal(a, b);
    expect_line(a, "ferry_connections_accepted_total 5");
    expect_line(a, "ferry_relay_bytes_total{direction=\"up\"} 77");
    free(a);
    free(b);
}

static void test_label_not_utf8(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "caf\xc3\xa9-\xff.conf");
    harness_write_file(path, "workers = 3\n[rules]\ndeny to 192.0.2.0/24\n");
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.path = path;
    struct msglist errs = {0};
    struct config *c = NULL;
    assert_int_equal(config_load(&cli, &c, &errs), 0);
    msglist_fini(&errs);
    stat_add(&c->rule_hits[0], 2);
    struct metrics_state st = {0};
    char *text = render(c, &st);
    /* é is kept, the lone 0xff is not */
    expect_line(text, "ferry_rule_hits_total{rule=\"caf\xc3\xa9-?.conf:3\",action=\"deny\"} 2");
    free(text);
    config_free(c);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* Each outbound but reject: up (a pool while one member is), latency once
 * measured, failures (dials and checks), sessions and active summed over
 * the workers. */
static void test_outbounds(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "ob.conf");
    harness_write_file(path, "workers = 3\n[outbound a]\nurl = socks5://127.0.0.1:1\n"
                             "[outbound b]\nurl = http://127.0.0.1:2\n"
                             "[outbound p]\nmembers = a, b\n");
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.path = path;
    struct msglist errs = {0};
    struct config *c = NULL;
    assert_int_equal(config_load(&cli, &c, &errs), 0);
    msglist_fini(&errs);
    assert_int_equal(c->noutbounds, 5); /* direct, reject, a, b, p */
    for (unsigned w = 0; w < 3; w++) {
        stat_t *row = &c->ob_stats[(size_t)w * c->ob_stride];
        stat_add(&row[2 * OB_STATS + OB_STAT_SESSIONS], 2);
        stat_add(&row[2 * OB_STATS + OB_STAT_ACTIVE], 1);
        stat_add(&row[3 * OB_STATS + OB_STAT_FAILURES], 1);
    }
    struct metrics_state st = {0};
    char *text = render(c, &st);
    expect_no(text, "ferry_outbound_latency_seconds"); /* no family without samples */
    free(text);
    atomic_store(&c->ob_health[2].up, 0);
    atomic_store(&c->ob_health[3].failures, 4);
    atomic_store(&c->ob_health[3].latency_us, 1500);
    text = render(c, &st);
    expect_line(text, "ferry_outbound_up{outbound=\"direct\"} 1");
    expect_line(text, "ferry_outbound_up{outbound=\"a\"} 0");
    expect_line(text, "ferry_outbound_up{outbound=\"p\"} 1");
    expect_line(text, "ferry_outbound_sessions_total{outbound=\"a\"} 6");
    expect_line(text, "ferry_outbound_active{outbound=\"a\"} 3");
    expect_line(text, "ferry_outbound_failures_total{outbound=\"b\"} 7");
    expect_line(text, "ferry_outbound_latency_seconds{outbound=\"b\"} 0.001500");
    expect_line(text, "# TYPE ferry_outbound_failures_total counter");
    expect_no(text, "outbound=\"reject\"");
    expect_no(text, "ferry_outbound_latency_seconds{outbound=\"a\"}");
    atomic_store(&c->ob_health[3].up, 0);
    free(text);
    text = render(c, &st);
    expect_line(text, "ferry_outbound_up{outbound=\"p\"} 0");
    free(text);
    config_free(c);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

static void test_text_buffer(void **state)
{
    (void)state;
    struct mtext t = {0};
    assert_true(mtext_append(&t, "", 0));
    mtext_printf(&t, "%s=%d\n", "a", 1);
    char big[40000];
    memset(big, 'x', sizeof(big));
    assert_true(mtext_append(&t, big, sizeof(big)));
    mtext_printf(&t, "%d", 2);
    assert_false(t.oom);
    assert_int_equal(t.len, 4 + sizeof(big) + 1);
    assert_memory_equal(t.p, "a=1\n", 4);
    assert_int_equal(t.p[4 + sizeof(big)], '2');
    mtext_fini(&t);
    assert_null(t.p);
    assert_int_equal(t.len, 0);
}

static int setup(void **state)
{
    (void)state;
    memset(ws, 0, sizeof(ws));
    memset(&sh, 0, sizeof(sh));
    return 0;
}

#define T(f) cmocka_unit_test_setup(f, setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_process_figures_come_from_the_state),
        T(test_unknown_process_figures_are_left_out),
        T(test_same_inputs_same_text),
        T(test_label_not_utf8),
        T(test_outbounds),
        T(test_text_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
