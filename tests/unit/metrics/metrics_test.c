/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics_test.c: metrics_render() over fake workers: counters are summed
 * across workers exactly, the handshake histogram is cumulative and ends in
 * +Inf = _count, the process-wide state shows up, every line of the
 * exposition is well-formed (HELP and TYPE before a family's samples,
 * counters named *_total, valid names, escaped label values, numeric
 * values), and with a configuration that has rules each rule's hits appear
 * under its FILE:LINE label, escaped when the file name holds a double
 * quote or a backslash.
 */
#include "harness.h"

#include <ctype.h>
#include <errno.h>

#include "acl/rules.h"
#include "config/config.h"
#include "core/stats.h"
#include "metrics/metrics.h"
#include "worker/worker.h"

#define MAX_FAMILIES 256
#define NAME_MAX_LEN 128

/* Static, so zeroed and aligned as struct worker wants. */
static struct worker ws[2];
static struct shared sh;

static int setup(void **state)
{
    (void)state;
    memset(ws, 0, sizeof(ws));
    memset(&sh, 0, sizeof(sh));
    return 0;
}

/* The exposition for the fake workers, NUL-terminated; the caller frees. */
static char *render(const struct config *cfg, const struct metrics_state *st)
{
    struct metrics_source src = {ws, 2, &sh, NULL};
    struct mtext t = {0};
    metrics_render(&t, &src, cfg, st);
    assert_false(t.oom);
    assert_non_null(t.p);
    char *out = malloc(t.len + 1);
    assert_non_null(out);
    memcpy(out, t.p, t.len);
    out[t.len] = '\0';
    mtext_fini(&t);
    return out;
}

/* text holds line as a whole line. */
static void expect_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    }
    fail_msg("no line '%s' in the exposition:\n%s", line, text);
}

static void expect_no(const char *text, const char *what)
{
    if (strstr(text, what))
        fail_msg("'%s' should not be in the exposition:\n%s", what, text);
}

/* ---- a small exposition checker ------------------------------------------ */

struct family {
    char name[NAME_MAX_LEN];
    char type[16];
    bool help;
    bool samples;
};

struct checker {
    struct family f[MAX_FAMILIES];
    size_t n;
};

static struct family *family_get(struct checker *c, const char *name, size_t len, bool create)
{
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->f[i].name) == len && strncmp(c->f[i].name, name, len) == 0)
            return &c->f[i];
    if (!create)
        return NULL;
    assert_true(c->n < MAX_FAMILIES && len < NAME_MAX_LEN);
    struct family *f = &c->f[c->n++];
    memcpy(f->name, name, len);
    f->name[len] = '\0';
    return f;
}

static size_t name_len(const char *p, bool metric)
{
    size_t i = 0;
    while (isalpha((unsigned char)p[i]) || p[i] == '_' || (metric && p[i] == ':') ||
           (i > 0 && isdigit((unsigned char)p[i])))
        i++;
    return i;
}

/* The family a sample name belongs to: itself, or a histogram's base name
 * for _bucket, _sum and _count. */
static struct family *family_of_sample(struct checker *c, const char *name, size_t len)
{
    struct family *f = family_get(c, name, len, false);
    if (f && strcmp(f->type, "histogram") != 0)
        return f;
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && strncmp(name + len - sl, suffixes[i], sl) == 0) {
            f = family_get(c, name, len - sl, false);
            if (f && strcmp(f->type, "histogram") == 0)
                return f;
        }
    }
    return NULL;
}

static void check_sample(struct checker *c, const char *line, size_t lineno)
{
    size_t n = name_len(line, true);
    if (n == 0)
        fail_msg("line %zu: no metric name: %s", lineno, line);
    struct family *f = family_of_sample(c, line, n);
    if (!f || !f->help || !f->type[0])
        fail_msg("line %zu: sample before its HELP and TYPE: %s", lineno, line);
    f->samples = true;
    const char *p = line + n;
    if (*p == '{') {
        p++;
        for (;;) {
            size_t ln = name_len(p, false);
            if (ln == 0 || p[ln] != '=' || p[ln + 1] != '"')
                fail_msg("line %zu: bad label: %s", lineno, line);
            p += ln + 2;
            while (*p && *p != '"') {
                if (*p == '\\') {
                    if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                        fail_msg("line %zu: bad escape in a label value: %s", lineno, line);
                    p++;
                }
                p++;
            }
            if (*p != '"')
                fail_msg("line %zu: unterminated label value: %s", lineno, line);
            p++;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p != '}')
                fail_msg("line %zu: bad label list: %s", lineno, line);
            p++;
            break;
        }
    }
    if (*p != ' ')
        fail_msg("line %zu: no space before the value: %s", lineno, line);
    p++;
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || *end != '\0' || errno)
        fail_msg("line %zu: value is not a number: %s", lineno, line);
    if (strcmp(f->type, "counter") == 0 && v < 0)
        fail_msg("line %zu: negative counter: %s", lineno, line);
}

static void check_meta(struct checker *c, const char *line, size_t lineno)
{
    bool help = strncmp(line, "# HELP ", 7) == 0;
    bool type = strncmp(line, "# TYPE ", 7) == 0;
    if (!help && !type)
        fail_msg("line %zu: a comment that is neither HELP nor TYPE: %s", lineno, line);
    const char *name = line + 7;
    size_t n = name_len(name, true);
    if (n == 0 || name[n] != ' ' || name[n + 1] == '\0')
        fail_msg("line %zu: bad %s line: %s", lineno, help ? "HELP" : "TYPE", line);
    struct family *f = family_get(c, name, n, true);
    if (f->samples)
        fail_msg("line %zu: HELP/TYPE after the family's samples: %s", lineno, line);
    const char *rest = name + n + 1;
    if (help) {
        if (f->help)
            fail_msg("line %zu: second HELP: %s", lineno, line);
        f->help = true;
        return;
    }
    if (f->type[0])
        fail_msg("line %zu: second TYPE: %s", lineno, line);
    if (strcmp(rest, "counter") && strcmp(rest, "gauge") && strcmp(rest, "histogram"))
        fail_msg("line %zu: unknown type: %s", lineno, line);
    if (strcmp(rest, "counter") == 0 && (n < 6 || strncmp(name + n - 6, "_total", 6) != 0))
        fail_msg("line %zu: counter without _total: %s", lineno, line);
    snprintf(f->type, sizeof(f->type), "%s", rest);
}

/* Every line well-formed; every family has HELP, TYPE and samples. */
static void check_exposition(const char *text)
{
    static struct checker c;
    memset(&c, 0, sizeof(c));
    size_t len = strlen(text);
    assert_true(len > 0 && text[len - 1] == '\n');
    char *copy = strdup(text);
    assert_non_null(copy);
    size_t lineno = 0;
    for (char *line = copy, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        lineno++;
        if (line[0] == '\0')
            fail_msg("line %zu: empty", lineno);
        if (line[0] == '#')
            check_meta(&c, line, lineno);
        else
            check_sample(&c, line, lineno);
    }
    for (size_t i = 0; i < c.n; i++)
        if (!c.f[i].help || !c.f[i].type[0] || !c.f[i].samples)
            fail_msg("family %s lacks HELP, TYPE or samples", c.f[i].name);
    free(copy);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_counters_summed_across_workers(void **state)
{
    (void)state;
    struct worker_stats *a = &ws[0].stats, *b = &ws[1].stats;
    stat_add(&a->accepted, 3);
    stat_add(&b->accepted, 4);
    stat_add(&a->sessions[SP_SOCKS5][OC_OK], 2);
    stat_add(&b->sessions[SP_SOCKS5][OC_OK], 5);
    stat_add(&b->sessions[SP_HTTP][OC_DENIED], 1);
    stat_add(&a->sessions[SP_NONE][OC_BAD_REQUEST], 6);
    stat_add(&a->bytes_up, 1000);
    stat_add(&b->bytes_up, 234);
    stat_add(&b->bytes_down, 99);
    stat_add(&a->proxy_rejected, 1);
    stat_add(&b->proxy_rejected, 2);
    stat_add(&a->limit_per_ip, 8);
    stat_add(&a->auth.denied, 1);
    stat_add(&b->auth.denied, 1);
    stat_add(&b->udp_drop_frag, 11);
    stat_add(&a->active, 2);
    stat_add(&a->active_proto[SP_SOCKS5], 2);
    stat_add(&b->active, 1);
    stat_add(&b->active_proto[SP_HTTP], 1);
    stat_add(&b->loop_lag_ms, 250);
    sh.udp_assocs[0] = 2;
    sh.udp_assocs[63] = 1;
    struct metrics_state st = {.start_time = 1700000000.5,
                               .reloads_ok = 3,
                               .reloads_failed = 1,
                               .last_reload = 1700000100.25,
                               .draining = true};
    char *text = render(NULL, &st);
    check_exposition(text);
    expect_line(text, "ferry_workers 2");
    expect_line(text, "ferry_draining 1");
    expect_line(text, "ferry_connections_accepted_total 7");
    expect_line(text, "ferry_sessions_total{protocol=\"socks5\",outcome=\"ok\"} 7");
    expect_line(text, "ferry_sessions_total{protocol=\"socks5\",outcome=\"denied\"} 0");
    expect_line(text, "ferry_sessions_total{protocol=\"http\",outcome=\"denied\"} 1");
    expect_line(text, "ferry_sessions_total{protocol=\"none\",outcome=\"bad_request\"} 6");
    expect_no(text, "ferry_sessions_total{protocol=\"none\",outcome=\"ok\"}");
    expect_line(text, "ferry_relay_bytes_total{direction=\"up\"} 1234");
    expect_line(text, "ferry_relay_bytes_total{direction=\"down\"} 99");
    expect_line(text, "ferry_connections_rejected_total{reason=\"proxy_protocol\"} 3");
    expect_line(text, "ferry_connections_rejected_total{reason=\"per_ip\"} 8");
    expect_line(text, "ferry_connections_rejected_total{reason=\"max_connections\"} 0");
    expect_line(text, "ferry_auth_total{result=\"denied\"} 2");
    expect_line(text, "ferry_auth_total{result=\"ok\"} 0");
    expect_line(text, "ferry_udp_dropped_total{reason=\"fragment\"} 11");
    expect_line(text, "ferry_udp_associations_active 3");
    expect_line(text, "ferry_sessions_active{protocol=\"socks5\"} 2");
    expect_line(text, "ferry_sessions_active{protocol=\"http\"} 1");
    expect_line(text, "ferry_sessions_active{protocol=\"none\"} 0");
    expect_line(text, "ferry_worker_sessions_active{worker=\"0\"} 2");
    expect_line(text, "ferry_worker_sessions_active{worker=\"1\"} 1");
    expect_line(text, "ferry_worker_loop_lag_seconds{worker=\"1\"} 0.250000");
    expect_line(text, "ferry_config_reloads_total{result=\"ok\"} 3");
    expect_line(text, "ferry_config_reloads_total{result=\"failed\"} 1");
    expect_line(text, "ferry_config_last_reload_success_timestamp_seconds 1700000100.250000");
    expect_line(text, "process_start_time_seconds 1700000000.500000");
    expect_line(text, "# TYPE ferry_connections_accepted_total counter");
    expect_no(text, "ferry_rule_hits_total"); /* no configuration, no rules */
    free(text);
}

static void test_all_zero(void **state)
{
    (void)state;
    struct metrics_state st = {0};
    char *text = render(NULL, &st);
    check_exposition(text);
    expect_line(text, "ferry_connections_accepted_total 0");
    expect_line(text, "ferry_draining 0");
    expect_line(text, "ferry_handshake_duration_seconds_bucket{protocol=\"socks5\",le=\"+Inf\"} 0");
    expect_line(text, "ferry_handshake_duration_seconds_count{protocol=\"http\"} 0");
    free(text);
}

static void test_histogram_cumulative(void **state)
{
    (void)state;
    /* socks5: 50 us and 100 us land in le=0.0001 (bounds are inclusive),
     * 101 us in le=0.00025, 1 ms in le=0.001 (twice, other worker), 20 s
     * above the last bound. */
    stats_hs_observe(&ws[0].stats, SP_SOCKS5, 50);
    stats_hs_observe(&ws[0].stats, SP_SOCKS5, 100);
    stats_hs_observe(&ws[0].stats, SP_SOCKS5, 101);
    stats_hs_observe(&ws[1].stats, SP_SOCKS5, 1000);
    stats_hs_observe(&ws[1].stats, SP_SOCKS5, 1000);
    stats_hs_observe(&ws[1].stats, SP_SOCKS5, 20000000);
    stats_hs_observe(&ws[1].stats, SP_HTTP, 10000000);
    struct metrics_state st = {0};
    char *text = render(NULL, &st);
    check_exposition(text);
    static const struct {
        const char *le;
        unsigned v;
    } want[] = {
        {"0.0001", 2}, {"0.00025", 3}, {"0.0005", 3}, {"0.001", 5}, {"0.0025", 5}, {"0.005", 5},
        {"0.01", 5},   {"0.025", 5},   {"0.05", 5},   {"0.1", 5},   {"0.25", 5},   {"0.5", 5},
        {"1", 5},      {"2.5", 5},     {"10", 5},     {"+Inf", 6},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), STATS_HS_BUCKETS);
    char line[160];
    for (size_t i = 0; i < STATS_HS_BUCKETS; i++) {
        snprintf(line, sizeof(line),
                 "ferry_handshake_duration_seconds_bucket{protocol=\"socks5\",le=\"%s\"} %u",
                 want[i].le, want[i].v);
        expect_line(text, line);
    }
    expect_line(text, "ferry_handshake_duration_seconds_count{protocol=\"socks5\"} 6");
    expect_line(text, "ferry_handshake_duration_seconds_sum{protocol=\"socks5\"} 20.002251");
    /* 10 s is the last bound itself */
    expect_line(text, "ferry_handshake_duration_seconds_bucket{protocol=\"http\",le=\"10\"} 1");
    expect_line(text, "ferry_handshake_duration_seconds_bucket{protocol=\"http\",le=\"2.5\"} 0");
    expect_line(text, "ferry_handshake_duration_seconds_bucket{protocol=\"http\",le=\"+Inf\"} 1");
    expect_line(text, "ferry_handshake_duration_seconds_count{protocol=\"socks4\"} 0");
    /* before a protocol is known there is no handshake to time */
    expect_no(text, "ferry_handshake_duration_seconds_count{protocol=\"none\"}");
    free(text);
}

/* A config file named name in a fresh directory, with rules on lines 3-5. */
struct rules_ctx {
    char dir[HARNESS_PATH_MAX];
    char path[HARNESS_PATH_MAX];
    struct config *c;
};

static void load_rules(struct rules_ctx *x, const char *name)
{
    harness_mkdtemp(x->dir, sizeof(x->dir));
    harness_path(x->path, sizeof(x->path), x->dir, name);
    harness_write_file(x->path, "workers = 2\n"
                                "[rules]\n"
                                "allow to 10.0.0.0/8\n"
                                "deny to 192.0.2.0/24 port 80\n"
                                "allow to *.example.com\n");
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.path = x->path;
    struct msglist errs = {0};
    int rc = config_load(&cli, &x->c, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_message("  error: %s\n", errs.msg[i]);
    msglist_fini(&errs);
    assert_int_equal(rc, 0);
    assert_non_null(x->c->acl);
    assert_int_equal(x->c->acl->n, 3);
    assert_non_null(x->c->rule_hits);
}

static void unload_rules(struct rules_ctx *x)
{
    config_free(x->c);
    assert_int_equal(unlink(x->path), 0);
    assert_int_equal(rmdir(x->dir), 0);
}

static void hit(struct config *c, unsigned worker, uint32_t rule, uint64_t n)
{
    stat_add(&c->rule_hits[(size_t)worker * c->rule_stride + rule], n);
}

static void test_rule_hits(void **state)
{
    (void)state;
    struct rules_ctx x;
    load_rules(&x, "ferry.conf");
    hit(x.c, 0, 0, 2);
    hit(x.c, 1, 0, 3);
    hit(x.c, 1, 1, 1);
    hit(x.c, 0, 3, 4); /* the column after the last rule: the default */
    hit(x.c, 1, 3, 1);
    struct metrics_state st = {0};
    char *text = render(x.c, &st);
    check_exposition(text);
    expect_line(text, "# TYPE ferry_rule_hits_total counter");
    expect_line(text, "ferry_rule_hits_total{rule=\"ferry.conf:3\",action=\"allow\"} 5");
    expect_line(text, "ferry_rule_hits_total{rule=\"ferry.conf:4\",action=\"deny\"} 1");
    expect_line(text, "ferry_rule_hits_total{rule=\"ferry.conf:5\",action=\"allow\"} 0");
    expect_line(text, "ferry_rule_hits_total{rule=\"default\",action=\"allow\"} 5");
    free(text);
    unload_rules(&x);
}

static void test_rule_label_escaped(void **state)
{
    (void)state;
    struct rules_ctx x;
    load_rules(&x, "we\"ird\\name.conf");
    hit(x.c, 1, 1, 7);
    struct metrics_state st = {0};
    char *text = render(x.c, &st);
    check_exposition(text);
    expect_line(text,
                "ferry_rule_hits_total{rule=\"we\\\"ird\\\\name.conf:3\",action=\"allow\"} 0");
    expect_line(text, "ferry_rule_hits_total{rule=\"we\\\"ird\\\\name.conf:4\",action=\"deny\"} 7");
    expect_no(text, "rule=\"we\"ird");
    free(text);
    unload_rules(&x);
}

#define T(f) cmocka_unit_test_setup(f, setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_counters_summed_across_workers),
        T(test_all_zero),
        T(test_histogram_cumulative),
        T(test_rule_hits),
        T(test_rule_label_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
