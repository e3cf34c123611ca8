/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_test.c: config_load() over real files in a private temporary
 * directory. Messages are compared in full, because "FILE:LINE: KEY: ..."
 * is the contract an operator reads; several problems in one file must all
 * be reported by one load.
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "fixture.h"
#include "util/compiler.h"

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void expect_listen(const struct config *c, size_t i, const char *text, const char *origin)
{
    char buf[ADDR_STRLEN];
    assert_true(i < c->nlisten);
    assert_string_equal(addr_format(&c->listen[i].addr, buf, sizeof(buf)), text);
    assert_string_equal(c->listen[i].origin, origin);
}

/* ---- defaults and every key ------------------------------------------- */

static void test_defaults_without_file(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    assert_int_equal(x->errs.n, 0);
    const struct config *c = x->c;
    assert_null(c->path);
    assert_int_equal(c->nlisten, 1);
    expect_listen(c, 0, "127.0.0.1:1080", "built-in default");
    assert_int_equal(c->handshake_timeout_ms, 10000);
    assert_int_equal(c->connect_timeout_ms, 10000);
    assert_int_equal(c->iotimeout_ms, 0);
    assert_int_equal(c->shutdown_timeout_ms, 30000);
    assert_int_equal(c->workers, config_default_workers());
    assert_true(c->workers >= 1 && c->workers <= CONFIG_MAX_WORKERS);
    assert_true(c->max_connections > 0);
    assert_int_equal(c->backlog, 4096);
    assert_int_equal(c->buffer_size, 16384);
    assert_int_equal(c->splice, SPLICE_AUTO);
    assert_int_equal(c->log_level, LOG_INFO);
    assert_null(c->log_file);
    assert_true(c->access_log);
    assert_false(c->open_proxy);
}

/* [tls] defaults and bounds, and the tls:// flag of a listen address (the
 * certificate itself is loaded only with a tls:// address: e2e tests). */
static void test_tls_keys(void **state)
{
    struct ctx *x = *state;
    assert_int_equal(load_text(x, "listen = 127.0.0.1:1080\n", NULL), 0);
    assert_false(x->c->listen[0].tls);
    assert_int_equal(x->c->tls.min_version, 13);
    assert_int_equal(x->c->tls.handshake_ms, 10000);
    assert_int_equal(x->c->tls.per_ip_handshakes, 16);
    assert_null(x->c->tls.ctx);
    assert_int_equal(load_text(x,
                               "[tls]\nmin_version = 1.2\nhandshake_timeout = 2s\n"
                               "per_ip_handshakes = 0\ncert = a.pem\nkey = a.key\n",
                               NULL),
                     0);
    assert_int_equal(x->c->tls.min_version, 12);
    assert_int_equal(x->c->tls.handshake_ms, 2000);
    assert_int_equal(x->c->tls.per_ip_handshakes, 0);
    assert_int_equal(x->c->tls.cert_line, 5);
    assert_int_equal(x->c->tls.key_line, 6);
    assert_null(x->c->tls.ctx); /* no tls:// address: nothing loaded */
    assert_int_not_equal(load_text(x, "[tls]\nper_ip_handshakes = 70000\n", NULL), 0);
    assert_int_not_equal(load_text(x, "[tls]\nmin_version = 1.0\n", NULL), 0);
    assert_int_not_equal(load_text(x, "listen = tls://127.0.0.1:1\n", NULL), 0);
    assert_non_null(
        strstr(x->errs.msg[0], ":1: listen: a tls:// address needs [tls] cert and key"));
    assert_int_not_equal(load_text(x, "listen = tls://nohost:1\n", NULL), 0);
}

static void test_empty_file_keeps_defaults(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "", NULL);
    assert_string_equal(x->c->path, x->path);
    expect_listen(x->c, 0, "127.0.0.1:1080", "built-in default");
    expect_load_ok(x, "\n; only a comment\n# and another\n\n   \n", NULL);
    assert_int_equal(x->c->nlisten, 1);
    assert_int_equal(x->c->handshake_timeout_ms, 10000);
}

static void test_every_key_valid(void **state)
{
    struct ctx *x = *state;
    char log_path[HARNESS_PATH_MAX + 32];
    snprintf(log_path, sizeof(log_path), "log_file = %s/ferry.log\n", x->dir);
    char text[2048];
    snprintf(text, sizeof(text),
             "listen = 127.0.0.1:1081\n"
             "workers = 3\n"
             "handshake_timeout = 500ms\n"
             "connect_timeout = 2s\n"
             "iotimeout = 5m\n"
             "shutdown_timeout = 1h\n"
             "max_connections = 1000\n"
             "backlog = 128\n"
             "buffer_size = 32k\n"
             "pipe_size = 64KiB\n"
             "splice = no\n"
             "log_level = debug\n"
             "%s"
             "access_log = off\n"
             "open_proxy = no\n",
             log_path);
    expect_load_ok(x, text, NULL);
    const struct config *c = x->c;
    assert_string_equal(c->path, x->path);
    assert_int_equal(c->nlisten, 1);
    char origin[HARNESS_PATH_MAX + 8];
    snprintf(origin, sizeof(origin), "%s:1", x->path);
    expect_listen(c, 0, "127.0.0.1:1081", origin);
    assert_int_equal(c->workers, 3);
    assert_int_equal(c->handshake_timeout_ms, 500);
    assert_int_equal(c->connect_timeout_ms, 2000);
    assert_int_equal(c->iotimeout_ms, 300000);
    assert_int_equal(c->shutdown_timeout_ms, 3600000);
    assert_int_equal(c->max_connections, 1000);
    assert_int_equal(c->backlog, 128);
    assert_int_equal(c->buffer_size, 32768);
    assert_int_equal(c->pipe_size, 65536);
    assert_int_equal(c->splice, SPLICE_NEVER);
    assert_int_equal(c->log_level, LOG_DEBUG);
    char want_log[HARNESS_PATH_MAX + 16];
    snprintf(want_log, sizeof(want_log), "%s/ferry.log", x->dir);
    assert_string_equal(c->log_file, want_log);
    assert_false(c->access_log);
    assert_false(c->open_proxy);
}

static void test_key_value_variants(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "splice = yes\nlog_level = warning\naccess_log = TRUE\n", NULL);
    assert_int_equal(x->c->splice, SPLICE_ALWAYS);
    assert_int_equal(x->c->log_level, LOG_WARN);
    assert_true(x->c->access_log);
    expect_load_ok(x, "splice = auto\nlog_level = ERROR\niotimeout = 0\nshutdown_timeout = 0\n",
                   NULL);
    assert_int_equal(x->c->splice, SPLICE_AUTO);
    assert_int_equal(x->c->log_level, LOG_ERROR);
    assert_int_equal(x->c->iotimeout_ms, 0);
    assert_int_equal(x->c->shutdown_timeout_ms, 0);
    expect_load_ok(x, "pipe_size = 0\n", NULL); /* 0: the kernel's default */
    assert_int_equal(x->c->pipe_size, 0);
    /* Range edges. */
    expect_load_ok(x,
                   "workers = 256\nbacklog = 65535\nbuffer_size = 1m\npipe_size = 4k\n"
                   "handshake_timeout = 24h\niotimeout = 168h\nmax_connections = 10000000\n",
                   NULL);
    assert_int_equal(x->c->workers, 256);
    assert_int_equal(x->c->backlog, 65535);
    assert_int_equal(x->c->buffer_size, 1 << 20);
    assert_int_equal(x->c->pipe_size, 4096);
    assert_int_equal(x->c->handshake_timeout_ms, 86400000);
    assert_int_equal(x->c->iotimeout_ms, 604800000);
    assert_int_equal(x->c->max_connections, 10000000);
    expect_load_ok(x, "workers = 1\nbacklog = 1\nbuffer_size = 1024\nhandshake_timeout = 1ms\n",
                   NULL);
    assert_int_equal(x->c->workers, 1);
    assert_int_equal(x->c->buffer_size, 1024);
    assert_int_equal(x->c->handshake_timeout_ms, 1);
}

/* Durations take days and compounds (each unit once, largest first); the
 * key's bound applies to the sum. */
static void test_compound_durations(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "iotimeout = 7d\nhandshake_timeout = 1h30m\nconnect_timeout = 1m30s\n"
                   "shutdown_timeout = 1s500ms\n[http]\nkeepalive_timeout = 1d\n"
                   "response_timeout = 2h0m5s\n[udp]\nidle = 12h30m\n",
                   NULL);
    assert_int_equal(x->c->iotimeout_ms, 7 * 86400000);
    assert_int_equal(x->c->handshake_timeout_ms, 5400000);
    assert_int_equal(x->c->connect_timeout_ms, 90000);
    assert_int_equal(x->c->shutdown_timeout_ms, 1500);
    assert_int_equal(x->c->http.keepalive_ms, 86400000);
    assert_int_equal(x->c->http.response_ms, 7205000);
    assert_int_equal(x->c->udp.idle_ms, 45000000);
    expect_load_ok(x, "iotimeout = 6d23h59m59s999ms\n", NULL);
    assert_int_equal(x->c->iotimeout_ms, 604799999);
    expect_load_ok(x, "iotimeout = 2d12h\n", NULL);
    assert_int_equal(x->c->iotimeout_ms, 216000000);
}

static void test_auto_values(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "workers = auto\nmax_connections = auto\n", NULL);
    assert_true(x->c->workers >= 1);
    assert_int_equal(x->c->workers, config_default_workers());
    assert_true(x->c->max_connections >= 1 && x->c->max_connections <= 10000000);
    assert_true(config_default_workers() >= 1);
}

static void test_empty_log_file_means_stderr(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "log_file =\n", NULL);
    assert_null(x->c->log_file);
    expect_load_ok(x, "log_file = \"\"\n", NULL);
    assert_null(x->c->log_file);
}

/* log_file is judged before a start (config_check_log_file): a missing
 * directory, a directory in its place, or a file that cannot be opened for
 * appending is "FILE:LINE: log_file: ..."; nothing is created. */
static void test_log_file_checked(void **state)
{
    struct ctx *x = *state;
    char text[4400], logf[HARNESS_PATH_MAX], sub[HARNESS_PATH_MAX];
    /* No log_file, and an empty one: standard error, nothing to check. */
    expect_load_ok(x, "workers = 1\n", NULL);
    assert_int_equal(config_check_log_file(x->c, &x->errs), 0);
    expect_load_ok(x, "log_file =\n", NULL);
    assert_int_equal(config_check_log_file(x->c, &x->errs), 0);
    assert_int_equal(x->errs.n, 0);

    /* A directory that does not exist. */
    expect_load_ok(x, "workers = 1\n\nlog_file = /nonexistent/dir/ferry.log\n", NULL);
    assert_int_equal(x->c->log_file_line, 3);
    assert_int_equal(config_check_log_file(x->c, &x->errs), -EINVAL);
    expect_msg(x, 0,
               "%s:3: log_file: /nonexistent/dir/ferry.log: the directory /nonexistent/dir: No "
               "such file or directory",
               x->path);
    msglist_fini(&x->errs);

    /* A file where the directory should be (the config file itself). */
    snprintf(text, sizeof(text), "log_file = %s/ferry.log\n", x->path);
    expect_load_ok(x, text, NULL);
    assert_int_equal(config_check_log_file(x->c, &x->errs), -EINVAL);
    expect_msg(x, 0, "%s:1: log_file: %s/ferry.log: %s is not a directory", x->path, x->path,
               x->path);
    msglist_fini(&x->errs);

    /* A directory where the file should be. */
    snprintf(text, sizeof(text), "log_file = %s\n", x->dir);
    expect_load_ok(x, text, NULL);
    assert_int_equal(config_check_log_file(x->c, &x->errs), -EINVAL);
    expect_msg(x, 0, "%s:1: log_file: %s: cannot open it for appending: Is a directory", x->path,
               x->dir);
    msglist_fini(&x->errs);

    /* A new file in a writable directory: fine, and not created by the check. */
    harness_path(logf, sizeof(logf), x->dir, "ferry.log");
    snprintf(text, sizeof(text), "log_file = %s\n", logf);
    expect_load_ok(x, text, NULL);
    assert_int_equal(config_check_log_file(x->c, &x->errs), 0);
    assert_int_equal(x->errs.n, 0);
    assert_int_equal(access(logf, F_OK), -1);
    /* An existing one: fine, and left as it was. */
    harness_write_file(logf, "old\n");
    assert_int_equal(config_check_log_file(x->c, &x->errs), 0);
    struct stat st;
    assert_int_equal(stat(logf, &st), 0);
    assert_int_equal(st.st_size, 4);
    assert_int_equal(unlink(logf), 0);

    /* Permissions: only meaningful without root's override. */
    harness_path(sub, sizeof(sub), x->dir, "ro");
    assert_int_equal(mkdir(sub, 0555), 0);
    snprintf(text, sizeof(text), "log_file = %s/ferry.log\n", sub);
    expect_load_ok(x, text, NULL);
    if (geteuid() != 0) {
        assert_int_equal(config_check_log_file(x->c, &x->errs), -EINVAL);
        expect_msg(x, 0,
                   "%s:1: log_file: %s/ferry.log: cannot create a file in %s: Permission denied",
                   x->path, sub, sub);
        msglist_fini(&x->errs);
    }
    assert_int_equal(rmdir(sub), 0);
}

/* ---- bad values ------------------------------------------------------- */

static void test_every_key_bad_value(void **state)
{
    struct ctx *x = *state;
    /* One bad line per file; the expected text follows "FILE:1: ". */
    static const struct {
        const char *line;
        const char *msg;
    } cases[] = {
        {"workers = 0", "workers: '0' is out of range (expected auto or 1..256)"},
        {"workers = 257", "workers: '257' is out of range (expected auto or 1..256)"},
        {"workers = many", "workers: 'many' is not a whole number (expected auto or 1..256)"},
        {"handshake_timeout = 0",
         "handshake_timeout: '0' is out of range (expected a duration such as 10s or 500ms, "
         "up to 24h)"},
        {"handshake_timeout = 25h",
         "handshake_timeout: '25h' is out of range (expected a duration such as 10s or 500ms, "
         "up to 24h)"},
        {"connect_timeout = 10x",
         "connect_timeout: '10x' is not a duration (expected a duration such as 10s or 500ms, "
         "up to 24h)"},
        {"iotimeout = 169h",
         "iotimeout: '169h' is out of range (expected a duration such as 5m, up to 7 days; 0 "
         "disables)"},
        {"iotimeout = 8d",
         "iotimeout: '8d' is out of range (expected a duration such as 5m, up to 7 days; 0 "
         "disables)"},
        {"iotimeout = 7d1ms",
         "iotimeout: '7d1ms' is out of range (expected a duration such as 5m, up to 7 days; 0 "
         "disables)"},
        {"iotimeout = 30m1h",
         "iotimeout: '30m1h' is not a duration (expected a duration such as 5m, up to 7 days; 0 "
         "disables)"},
        {"iotimeout = 1h 30m",
         "iotimeout: '1h 30m' is not a duration (expected a duration such as 5m, up to 7 days; "
         "0 disables)"},
        {"connect_timeout = 1d1s",
         "connect_timeout: '1d1s' is out of range (expected a duration such as 10s or 500ms, "
         "up to 24h)"},
        {"shutdown_timeout = -1",
         "shutdown_timeout: '-1' is not a duration (expected a duration such as 30s, up to 24h)"},
        {"max_connections = 0",
         "max_connections: '0' is out of range (expected auto or 1..10000000)"},
        {"max_connections = 10000001",
         "max_connections: '10000001' is out of range (expected auto or 1..10000000)"},
        {"max_connections = lots",
         "max_connections: 'lots' is not a whole number (expected auto or 1..10000000)"},
        {"backlog = 0", "backlog: '0' is out of range (expected 1..65535)"},
        {"backlog = 65536", "backlog: '65536' is out of range (expected 1..65535)"},
        {"backlog = 1k", "backlog: '1k' is not a whole number (expected 1..65535)"},
        {"buffer_size = 512", "buffer_size: '512' is out of range (expected a size from 1k to 1m)"},
        {"buffer_size = 2m", "buffer_size: '2m' is out of range (expected a size from 1k to 1m)"},
        {"buffer_size = big", "buffer_size: 'big' is not a size (expected a size from 1k to 1m)"},
        {"pipe_size = 1k", "pipe_size: '1k' is out of range (expected 0 for the kernel default, "
                           "or a size from 4k to 1m)"},
        {"pipe_size = 2m", "pipe_size: '2m' is out of range (expected 0 for the kernel default, "
                           "or a size from 4k to 1m)"},
        {"splice = maybe", "splice: 'maybe' is not valid (expected auto, yes or no)"},
        {"log_level = loud",
         "log_level: 'loud' is not a log level (expected debug, info, warn or error)"},
        {"access_log = 2", "access_log: '2' is not a boolean (expected yes or no)"},
        {"open_proxy = perhaps", "open_proxy: 'perhaps' is not a boolean (expected yes or no)"},
        {"listen = localhost:1080",
         "listen: 'localhost:1080' is not a numeric address and port (expected e.g. "
         "127.0.0.1:1080 or [::1]:1080)"},
        {"listen = 127.0.0.1",
         "listen: '127.0.0.1' is not a numeric address and port (expected e.g. "
         "127.0.0.1:1080 or [::1]:1080)"},
        {"listen = 127.0.0.1:65536",
         "listen: '127.0.0.1:65536' is not a numeric address and port (expected e.g. "
         "127.0.0.1:1080 or [::1]:1080)"},
        {"listen =", "listen: no address given"},
        {"listen = , ,", "listen: no address given"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "%s\n", cases[i].line);
        expect_load_fails(x, text, NULL, 1);
        expect_msg(x, 0, "%s:1: %s", x->path, cases[i].msg);
    }
}

static void test_listen_address_too_long(void **state)
{
    struct ctx *x = *state;
    /* One word longer than any address (128 bytes), on a short line. */
    char text[512] = "listen = ";
    memset(text + 9, '1', 130);
    memcpy(text + 9 + 130, "\n", 2);
    expect_load_fails(x, text, NULL, 1);
    expect_msg(x, 0, "%s:1: listen: address too long", x->path);
}

/* ---- keys: unknown, twice, repeated ----------------------------------- */

static void test_unknown_key(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "listne = 127.0.0.1:1080\n", NULL, 1);
    expect_msg(x, 0, "%s:1: listne: unknown key (did you mean 'listen'?)", x->path);
    expect_load_fails(x, "\n\nwrokers = 2\n", NULL, 1);
    expect_msg(x, 0, "%s:3: wrokers: unknown key (did you mean 'workers'?)", x->path);
    expect_load_fails(x, "iotimout = 5m\n", NULL, 1);
    expect_msg(x, 0, "%s:1: iotimout: unknown key (did you mean 'iotimeout'?)", x->path);
    expect_load_fails(x, "frobnicate = 1\n", NULL, 1);
    expect_msg(x, 0, "%s:1: frobnicate: unknown key", x->path);
}

/* A key written outside the section it belongs to, or a top-level key
 * written inside a section, is told where it goes: every key of every
 * section, and both directions. */
static void test_misplaced_key_hint(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "per_ip = 3\n", NULL, 1);
    expect_msg(x, 0, "%s:1: per_ip: unknown key (did you mean [limits] per_ip?)", x->path);
    expect_load_fails(x, "\npool_size = 3\n", NULL, 1);
    expect_msg(x, 0, "%s:2: pool_size: unknown key (did you mean [http] pool_size?)", x->path);
    /* In the wrong section. */
    expect_load_fails(x, "[http]\nper_ip = 3\n", NULL, 1);
    expect_msg(x, 0, "%s:2: http.per_ip: unknown key (did you mean [limits] per_ip?)", x->path);
    /* A name in two sections names both. */
    expect_load_fails(x, "queue = 3\n", NULL, 1);
    expect_msg(x, 0, "%s:1: queue: unknown key (did you mean [auth] queue or [udp] queue?)",
               x->path);
    /* The reverse: a top-level key inside a section. */
    expect_load_fails(x, "[limits]\nper_ip = 3\niotimeout = 5m\n", NULL, 1);
    expect_msg(x, 0,
               "%s:3: limits.iotimeout: unknown key (did you mean 'iotimeout' at the top "
               "(before any section)?)",
               x->path);
    /* Both at once: workers is a top-level key and an [auth] key. */
    expect_load_fails(x, "[limits]\nworkers = 2\n", NULL, 1);
    expect_msg(x, 0,
               "%s:2: limits.workers: unknown key (did you mean 'workers' at the top (before "
               "any section) or [auth] workers?)",
               x->path);
    expect_load_fails(x, "[http]\nlisten = 127.0.0.1:9\n", NULL, 1);
    expect_msg(x, 0,
               "%s:2: http.listen: unknown key (did you mean 'listen' at the top (before any "
               "section) or [metrics] listen?)",
               x->path);
    /* Every sectioned key, written at the top, points at its section. */
    static const char *const sectioned[][2] = {
        {"limits", "per_user"},  {"limits", "rate"}, {"limits", "burst"},  {"limits", "ip_table"},
        {"http", "max_header"},  {"http", "via"},    {"auth", "userlist"}, {"auth", "cachettl"},
        {"udp", "associations"}, {"udp", "gso"},
    };
    for (size_t i = 0; i < ARRAY_LEN(sectioned); i++) {
        char text[128];
        snprintf(text, sizeof(text), "%s = 1\n", sectioned[i][1]);
        expect_load_fails(x, text, NULL, 1);
        expect_msg(x, 0, "%s:1: %s: unknown key (did you mean [%s] %s?)", x->path, sectioned[i][1],
                   sectioned[i][0], sectioned[i][1]);
    }
}

static void test_key_set_twice(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "workers = 2\nbacklog = 10\n\nworkers = 3\n", NULL, 1);
    expect_msg(x, 0, "%s:4: workers: set twice (first on line 1)", x->path);
    /* Even when the first value was itself bad, both problems are shown. */
    expect_load_fails(x, "# c\nsplice = perhaps\nsplice = yes\n", NULL, 2);
    expect_msg(x, 0, "%s:2: splice: 'perhaps' is not valid (expected auto, yes or no)", x->path);
    expect_msg(x, 1, "%s:3: splice: set twice (first on line 2)", x->path);
}

static void test_listen_repeated_and_lists(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "listen = 127.0.0.1:1081, 127.0.0.1:1082\n"
                   "workers = 1\n"
                   "listen = [::1]:1083 127.0.0.2:1084,[::1]:1085\n",
                   NULL);
    const struct config *c = x->c;
    char o1[HARNESS_PATH_MAX + 8], o3[HARNESS_PATH_MAX + 8];
    snprintf(o1, sizeof(o1), "%s:1", x->path);
    snprintf(o3, sizeof(o3), "%s:3", x->path);
    /* The file's listen lines replace the built-in 127.0.0.1:1080. */
    assert_int_equal(c->nlisten, 5);
    expect_listen(c, 0, "127.0.0.1:1081", o1);
    expect_listen(c, 1, "127.0.0.1:1082", o1);
    expect_listen(c, 2, "[::1]:1083", o3);
    expect_listen(c, 3, "127.0.0.2:1084", o3);
    expect_listen(c, 4, "[::1]:1085", o3);
}

static void test_listen_bad_word_in_list(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "listen = 127.0.0.1:1081, nowhere:80, [::1]:99999\n", NULL, 2);
    const char *tail = "is not a numeric address and port (expected e.g. 127.0.0.1:1080 or "
                       "[::1]:1080)";
    expect_msg(x, 0, "%s:1: listen: 'nowhere:80' %s", x->path, tail);
    expect_msg(x, 1, "%s:1: listen: '[::1]:99999' %s", x->path, tail);
}

static void test_duplicate_listen(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "listen = 127.0.0.1:1081\nlisten = 127.0.0.2:1081, 127.0.0.1:1081\n", NULL,
                      1);
    expect_msg(x, 0, "%s:2: listen: 127.0.0.1:1081 is listed twice (also at %s:1)", x->path,
               x->path);
    /* Port 0 asks the kernel for a free port each time: not a duplicate. */
    expect_load_ok(x, "listen = 127.0.0.1:0, 127.0.0.1:0\n", NULL);
    assert_int_equal(x->c->nlisten, 2);
}

/* ---- syntax ----------------------------------------------------------- */

static void test_syntax_error_line(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "workers = 2\n# fine\nthis line has no equals sign\nbacklog = 5\n", NULL,
                      1);
    expect_msg(x, 0, "%s:3: syntax error: expected 'key = value', a comment, or a blank line",
               x->path);
}

static void test_section_is_error(void **state)
{
    struct ctx *x = *state;
    const char *msg = "unknown section [server] (known: [auth], [udp], [http], [rules], [limits], "
                      "[metrics], [dns], [tls], [http2], [quota], [outbound NAME], [edge NAME]; "
                      "other keys go at the top)";
    /* Reported at the header's own line, whether or not keys follow it. */
    expect_load_fails(x, "workers = 2\n[server]\nbacklog = 5\n", NULL, 1);
    expect_msg(x, 0, "%s:2: %s", x->path, msg);
    expect_load_fails(x, "workers = 2\n\n[server]\n", NULL, 1);
    expect_msg(x, 0, "%s:3: %s", x->path, msg);
    expect_load_fails(x, "[a]\n[b]\nworkers = 0\n", NULL, 2);
    expect_msg(x, 0,
               "%s:1: unknown section [a] (known: [auth], [udp], [http], [rules], [limits], "
               "[metrics], [dns], [tls], [http2], [quota], [outbound NAME], [edge NAME]; other "
               "keys go at the top)",
               x->path);
    expect_msg(x, 1,
               "%s:2: unknown section [b] (known: [auth], [udp], [http], [rules], [limits], "
               "[metrics], [dns], [tls], [http2], [quota], [outbound NAME], [edge NAME]; other "
               "keys go at the top)",
               x->path);
    expect_load_fails(x, "[server\n", NULL, 1);
    expect_msg(x, 0, "%s:1: syntax error: section header without ']'", x->path);
}

static void test_inline_comments(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "; a comment\n"
                   "# another\n"
                   "workers = 2 ; two workers\n"
                   "backlog = 100 # a comment too\n"
                   "listen = 127.0.0.1:1090 ; loopback only\n"
                   "   splice = no\t# indented\n",
                   NULL);
    assert_int_equal(x->c->workers, 2);
    assert_int_equal(x->c->backlog, 100);
    char origin[HARNESS_PATH_MAX + 8];
    snprintf(origin, sizeof(origin), "%s:5", x->path);
    expect_listen(x->c, 0, "127.0.0.1:1090", origin);
    assert_int_equal(x->c->nlisten, 1);
    assert_int_equal(x->c->splice, SPLICE_NEVER);
}

static void test_quoted_values(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "log_file = \"/var/log/ferry proxy.log\"\n"
                   "listen = \"127.0.0.1:1085\"\n"
                   "workers = \"4\"\n"
                   "log_level = \"warn\"\n",
                   NULL);
    assert_string_equal(x->c->log_file, "/var/log/ferry proxy.log");
    char origin[HARNESS_PATH_MAX + 8];
    snprintf(origin, sizeof(origin), "%s:2", x->path);
    expect_listen(x->c, 0, "127.0.0.1:1085", origin);
    assert_int_equal(x->c->workers, 4);
    assert_int_equal(x->c->log_level, LOG_WARN);
    /* One pair only, and only when both ends are quotes. */
    expect_load_fails(x, "workers = \"4\n", NULL, 1);
    expect_msg(x, 0, "%s:1: workers: '\"4' is not a whole number (expected auto or 1..256)",
               x->path);
}

static void test_crlf_and_no_final_newline(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "workers = 2\r\nbacklog = 7\r\n", NULL);
    assert_int_equal(x->c->workers, 2);
    assert_int_equal(x->c->backlog, 7);
    expect_load_fails(x, "workers = 2\r\n\r\nbacklog = x", NULL, 1);
    expect_msg(x, 0, "%s:3: backlog: 'x' is not a whole number (expected 1..65535)", x->path);
}

static void test_long_line(void **state)
{
    struct ctx *x = *state;
    size_t n = 6000;
    char *text = malloc(n + 64);
    assert_non_null(text);
    memcpy(text, "log_file = /", 12);
    memset(text + 12, 'a', n);
    memcpy(text + 12 + n, "\nworkers = 0\n", 14);
    expect_load_fails(x, text, NULL, 2);
    free(text);
    char prefix[HARNESS_PATH_MAX + 32];
    snprintf(prefix, sizeof(prefix), "%s:1: line longer than ", x->path);
    assert_true(has_prefix(x->errs.msg[0], prefix));
    /* The line after it is still counted right. */
    expect_msg(x, 1, "%s:2: workers: '0' is out of range (expected auto or 1..256)", x->path);
}

static void test_long_line_within_limit(void **state)
{
    struct ctx *x = *state;
    /* Lines up to CONFIG_LINE_MAX (4000) characters are allowed: a long
     * log_file path or a long list of listen addresses must load. */
    char text[1024];
    int n = snprintf(text, sizeof(text), "log_file = /");
    memset(text + n, 'p', 600);
    memcpy(text + n + 600, "\n", 2);
    expect_load_ok(x, text, NULL);
    assert_int_equal(strlen(x->c->log_file), 601);

    char list[1024] = "listen =";
    size_t len = strlen(list);
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(list + len, sizeof(list) - len, " 127.0.0.1:%d,", 20000 + i);
    memcpy(list + len, "\n", 2);
    expect_load_ok(x, list, NULL);
    assert_int_equal(x->c->nlisten, 20);
}

static void test_unreadable_files(void **state)
{
    struct ctx *x = *state;
    char missing[HARNESS_PATH_MAX + 16];
    harness_path(missing, sizeof(missing), x->dir, "missing.conf");
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.path = missing;
    assert_int_equal(config_load(&cli, &x->c, &x->errs), -EINVAL);
    assert_null(x->c);
    assert_int_equal(x->errs.n, 1);
    expect_msg(x, 0, "%s: cannot open: No such file or directory", missing);
    msglist_fini(&x->errs);

    harness_write_bytes(x->path, "workers = 2\n\0backlog = 3\n", 25);
    cli.path = x->path;
    assert_int_equal(config_load(&cli, &x->c, &x->errs), -EINVAL);
    assert_int_equal(x->errs.n, 1);
    expect_msg(x, 0, "%s: contains a NUL byte; not a text file", x->path);
}

/* ---- several at once -------------------------------------------------- */

static void test_all_errors_reported_at_once(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "workers = 0\n"
                      "backlog = 10\n"
                      "bogus = 1\n"
                      "buffer_size = tiny\n"
                      "backlog = 11\n"
                      "no equals here\n",
                      NULL, 5);
    expect_msg(x, 0, "%s:1: workers: '0' is out of range (expected auto or 1..256)", x->path);
    expect_msg(x, 1, "%s:3: bogus: unknown key", x->path);
    expect_msg(x, 2, "%s:4: buffer_size: 'tiny' is not a size (expected a size from 1k to 1m)",
               x->path);
    expect_msg(x, 3, "%s:5: backlog: set twice (first on line 2)", x->path);
    expect_msg(x, 4, "%s:6: syntax error: expected 'key = value', a comment, or a blank line",
               x->path);
}

static void test_errors_accumulate_across_loads(void **state)
{
    struct ctx *x = *state;
    /* errs is appended to, not reset: a caller may collect from several. */
    harness_write_file(x->path, "workers = 0\n");
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.path = x->path;
    assert_int_equal(config_load(&cli, &x->c, &x->errs), -EINVAL);
    assert_int_equal(config_load(&cli, &x->c, &x->errs), -EINVAL);
    assert_int_equal(x->errs.n, 2);
    assert_string_equal(x->errs.msg[0], x->errs.msg[1]);
    /* A good load after a failed one succeeds with the old errors kept. */
    harness_write_file(x->path, "workers = 1\n");
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    assert_int_equal(x->errs.n, 2);
    assert_int_equal(x->c->workers, 1);
}

/* ---- command line ----------------------------------------------------- */

static void test_cli_overrides(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "127.0.0.1:2000";
    cli.listen[1] = "[::1]:2001";
    cli.nlisten = 2;
    cli.workers = "4";
    expect_load_ok(x, "listen = 127.0.0.1:1081\nworkers = 2\n", &cli);
    const struct config *c = x->c;
    assert_int_equal(c->nlisten, 2); /* -l replaces the file's addresses */
    expect_listen(c, 0, "127.0.0.1:2000", "command line (-l)");
    expect_listen(c, 1, "[::1]:2001", "command line (-l)");
    assert_int_equal(c->workers, 4);

    memset(&cli, 0, sizeof(cli));
    cli.workers = "auto";
    expect_load_ok(x, "workers = 2\n", &cli);
    assert_int_equal(x->c->workers, config_default_workers());
    expect_listen(x->c, 0, "127.0.0.1:1080", "built-in default");

    /* Without a file at all. */
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "127.0.0.9:3000";
    cli.nlisten = 1;
    cli.workers = "256";
    config_free(x->c);
    x->c = NULL;
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    assert_int_equal(x->c->workers, 256);
    expect_listen(x->c, 0, "127.0.0.9:3000", "command line (-l)");
}

static void test_cli_errors(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "nope";
    cli.listen[1] = "127.0.0.1:99999";
    cli.nlisten = 2;
    cli.workers = "0";
    expect_load_fails(x, "", &cli, 3);
    expect_msg(x, 0,
               "command line (-l): listen: 'nope' is not a numeric address and port (expected "
               "e.g. 127.0.0.1:1080 or [::1]:1080)");
    expect_msg(x, 1,
               "command line (-l): listen: '127.0.0.1:99999' is not a numeric address and port "
               "(expected e.g. 127.0.0.1:1080 or [::1]:1080)");
    expect_msg(x, 2, "command line (-w): '0' is not a worker count (expected auto or 1..256)");

    memset(&cli, 0, sizeof(cli));
    cli.workers = "two";
    expect_load_fails(x, "", &cli, 1);
    expect_msg(x, 0, "command line (-w): 'two' is not a worker count (expected auto or 1..256)");
    cli.workers = "257";
    expect_load_fails(x, "", &cli, 1);
    expect_msg(x, 0, "command line (-w): '257' is not a worker count (expected auto or 1..256)");

    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "127.0.0.1:2000";
    cli.listen[1] = "127.0.0.1:2000";
    cli.nlisten = 2;
    expect_load_fails(x, "", &cli, 1);
    expect_msg(x, 0,
               "command line (-l): listen: 127.0.0.1:2000 is listed twice (also at command "
               "line (-l))");
}

/* ---- open proxy ------------------------------------------------------- */

static const char open_tail[] =
    "is not a loopback address and no authentication is configured, so anyone who can reach it "
    "could use this proxy; configure [auth] userlist or [rules], or set 'open_proxy = yes' if "
    "that is what you want";

static void test_open_proxy_refused(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x, "workers = 1\nlisten = 127.0.0.1:1080, 0.0.0.0:1080\n", NULL, 1);
    expect_msg(x, 0, "%s:2: listen: 0.0.0.0:1080 %s", x->path, open_tail);
    expect_load_fails(x, "listen = [::]:1080\nopen_proxy = no\n", NULL, 1);
    expect_msg(x, 0, "%s:1: listen: [::]:1080 %s", x->path, open_tail);
    expect_load_fails(x, "listen = 192.0.2.1:1080\n", NULL, 1);
    expect_msg(x, 0, "%s:1: listen: 192.0.2.1:1080 %s", x->path, open_tail);

    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "[2001:db8::1]:1080";
    cli.nlisten = 1;
    expect_load_fails(x, "", &cli, 1);
    expect_msg(x, 0, "command line (-l): listen: [2001:db8::1]:1080 %s", open_tail);
}

static void test_open_proxy_accepted(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "listen = 0.0.0.0:1080, [::]:1080\nopen_proxy = yes\n", NULL);
    assert_true(x->c->open_proxy);
    assert_int_equal(x->c->nlisten, 2);
    /* Loopback of either family needs no such consent. */
    expect_load_ok(x, "listen = 127.0.0.1:1080, [::1]:1080, 127.8.9.10:1\n", NULL);
    assert_false(x->c->open_proxy);
    assert_int_equal(x->c->nlisten, 3);

    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "0.0.0.0:1080";
    cli.nlisten = 1;
    expect_load_ok(x, "open_proxy = on\n", &cli);
    expect_listen(x->c, 0, "0.0.0.0:1080", "command line (-l)");
}

/* A file beside ferry.conf, removed by the end of the test that wrote it. */
static void write_beside(struct ctx *x, const char *name, const char *text, char *path, size_t cap)
{
    harness_path(path, cap, x->dir, name);
    harness_write_file(path, text);
}

/* The guard judges what the rules mean, not that some rule lines exist. */
static void test_open_proxy_rules_judged(void **state)
{
    struct ctx *x = *state;
    char rules[HARNESS_PATH_MAX], users[HARNESS_PATH_MAX];
    const char *tail = "so anyone who can reach it could use this proxy";

    /* An empty or comment-only rules_file, under rules_default = allow. */
    static const char *const empty[] = {"", "# nothing yet\n\n   # more\n"};
    for (size_t i = 0; i < ARRAY_LEN(empty); i++) {
        write_beside(x, "r.rules", empty[i], rules, sizeof(rules));
        expect_load_fails(x, "listen = 0.0.0.0:1080\nrules_file = r.rules\n", NULL, 1);
        expect_msg(x, 0,
                   "%s:1: listen: 0.0.0.0:1080 is not a loopback address and no authentication "
                   "is configured, and rules_file (%s:2) holds no rule, so rules_default = allow "
                   "lets anyone who can reach it use this proxy; write rules that allow only "
                   "what you mean and set 'rules_default = deny', configure [auth] userlist, or "
                   "set 'open_proxy = yes' if that is what you want",
                   x->path, x->path);
        /* Under rules_default = deny it denies everything: not open. */
        expect_load_ok(x, "listen = 0.0.0.0:1080\nrules_file = r.rules\nrules_default = deny\n",
                       NULL);
    }

    /* A single deny rule, in the file or in [rules]. */
    write_beside(x, "r.rules", "deny to 10.0.0.1\n", rules, sizeof(rules));
    expect_load_fails(x, "listen = 0.0.0.0:1080\nrules_file = r.rules\n", NULL, 1);
    assert_non_null(strstr(x->errs.msg[0], "rules_default = allow lets through whatever no rule "
                                           "denies, so anyone who can reach it could use this "
                                           "proxy; set 'rules_default = deny' (or end the rules "
                                           "with 'deny')"));
    expect_load_fails(x, "listen = [::]:1080\n[rules]\ndeny to 10.0.0.1\n", NULL, 1);
    assert_true(has_prefix(x->errs.msg[0], x->path));
    assert_non_null(strstr(x->errs.msg[0], tail));
    /* ... closed by a final catch-all deny. */
    expect_load_ok(
        x, "listen = [::]:1080\n[rules]\ndeny to 10.0.0.1\nallow from 10.0.0.0/8\ndeny\n", NULL);

    /* Allow from everyone to everywhere, named by its FILE:LINE. */
    write_beside(x, "r.rules", "# c\nallow from 10.0.0.0/8\nallow from 0.0.0.0/0 port 443\n", rules,
                 sizeof(rules));
    expect_load_fails(x, "listen = 0.0.0.0:1080\nrules_default = deny\nrules_file = r.rules\n",
                      NULL, 1);
    expect_msg(
        x, 0,
        "%s:1: listen: 0.0.0.0:1080 is not a loopback address and no authentication is "
        "configured, and the rule at r.rules:3 lets any client address reach any destination, "
        "so anyone who can reach it could use this proxy; narrow that rule's 'from' or "
        "'to', configure [auth] userlist, or set 'open_proxy = yes' if that is what you "
        "want",
        x->path);

    /* Allow with from restricted, under rules_default = deny: accepted. */
    expect_load_ok(
        x, "listen = 0.0.0.0:1080\nrules_default = deny\n[rules]\nallow from 10.0.0.0/8\n", NULL);
    expect_load_ok(
        x, "listen = 0.0.0.0:1080\nrules_default = deny\n[rules]\nallow to example.com\n", NULL);

    /* Authentication on, or open_proxy = yes: the rules are not judged. */
    write_beside(x, "users.txt", "alice:plain:secret\n", users, sizeof(users));
    expect_load_ok(x, "listen = 0.0.0.0:1080\nrules_file = r.rules\n[auth]\nuserlist = users.txt\n",
                   NULL);
    expect_load_ok(x, "listen = 0.0.0.0:1080\nopen_proxy = yes\nrules_file = r.rules\n", NULL);
    /* On loopback nothing is judged. */
    expect_load_ok(x, "listen = 127.0.0.1:1080\nrules_file = r.rules\n", NULL);
    unlink(rules);
    unlink(users);
}

/* ---- environment ------------------------------------------------------ */

static void test_ferry_log_env(void **state)
{
    struct ctx *x = *state;
    assert_int_equal(setenv("FERRY_LOG", "debug", 1), 0);
    expect_load_ok(x, "log_level = error\n", NULL); /* the environment wins */
    assert_int_equal(x->c->log_level, LOG_DEBUG);

    assert_int_equal(setenv("FERRY_LOG", "WARNING", 1), 0);
    expect_load_ok(x, "", NULL);
    assert_int_equal(x->c->log_level, LOG_WARN);

    assert_int_equal(setenv("FERRY_LOG", "", 1), 0); /* empty: not set */
    expect_load_ok(x, "log_level = error\n", NULL);
    assert_int_equal(x->c->log_level, LOG_ERROR);

    assert_int_equal(setenv("FERRY_LOG", "chatty", 1), 0);
    expect_load_fails(x, "workers = 0\n", NULL, 2);
    expect_msg(x, 0, "%s:1: workers: '0' is out of range (expected auto or 1..256)", x->path);
    expect_msg(x, 1,
               "environment: FERRY_LOG: 'chatty' is not a log level (expected debug, info, "
               "warn or error)");

    assert_int_equal(unsetenv("FERRY_LOG"), 0);
    expect_load_ok(x, "", NULL);
    assert_int_equal(x->c->log_level, LOG_INFO);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_defaults_without_file),
        T(test_tls_keys),
        T(test_empty_file_keeps_defaults),
        T(test_every_key_valid),
        T(test_key_value_variants),
        T(test_compound_durations),
        T(test_auto_values),
        T(test_empty_log_file_means_stderr),
        T(test_log_file_checked),
        T(test_every_key_bad_value),
        T(test_listen_address_too_long),
        T(test_unknown_key),
        T(test_misplaced_key_hint),
        T(test_key_set_twice),
        T(test_listen_repeated_and_lists),
        T(test_listen_bad_word_in_list),
        T(test_duplicate_listen),
        T(test_syntax_error_line),
        T(test_section_is_error),
        T(test_inline_comments),
        T(test_quoted_values),
        T(test_crlf_and_no_final_newline),
        T(test_long_line),
        T(test_long_line_within_limit),
        T(test_unreadable_files),
        T(test_all_errors_reported_at_once),
        T(test_errors_accumulate_across_loads),
        T(test_cli_overrides),
        T(test_cli_errors),
        T(test_open_proxy_refused),
        T(test_open_proxy_accepted),
        T(test_open_proxy_rules_judged),
        T(test_ferry_log_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
