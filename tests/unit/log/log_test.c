/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log_test.c: the asynchronous logger. Records reach the sink in order and
 * whole; a full queue drops records without blocking the producer and the
 * writer reports the count in-band; everything queued is flushed by
 * log_stop(); levels filter.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "log/log.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        c++;
    return c;
}

static void test_records_in_order_and_flushed(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "log");
    log_set_level(LOG_DEBUG);
    assert_int_equal(log_start(path), 0);
    for (int i = 0; i < 1000; i++)
        log_write(LOG_INFO, "record %d of %d", i, 1000);
    log_stop(); /* must flush everything queued */
    char *text = slurp(path);
    assert_int_equal(count(text, "\n"), 1000);
    const char *p = text;
    for (int i = 0; i < 1000; i++) {
        char want[64];
        snprintf(want, sizeof(want), "info  record %d of 1000\n", i);
        p = strstr(p, want);
        assert_non_null(p);
    }
    /* ISO 8601 UTC timestamp with milliseconds at the start of a line. */
    assert_true(strlen(text) > 24 && text[4] == '-' && text[10] == 'T' && text[23] == 'Z');
    free(text);
    unlink(path);
    rmdir(dir);
}

static void test_levels_filter(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "log");
    log_set_level(LOG_WARN);
    assert_int_equal(log_start(path), 0);
    log_debug("hidden debug");
    log_info("hidden info");
    log_warn("shown warn");
    log_error("shown error");
    log_stop();
    char *text = slurp(path);
    assert_null(strstr(text, "hidden"));
    assert_non_null(strstr(text, "warn  shown warn\n"));
    assert_non_null(strstr(text, "error shown error\n"));
    free(text);
    unlink(path);
    rmdir(dir);
    log_set_level(LOG_INFO);
}

static void test_level_names(void **state)
{
    (void)state;
    enum log_level l;
    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_DEBUG);
    assert_int_equal(log_level_parse("WARNING", &l), 0);
    assert_int_equal(l, LOG_WARN);
    assert_int_equal(log_level_parse("Error", &l), 0);
    assert_int_equal(l, LOG_ERROR);
    assert_int_equal(log_level_parse("loud", &l), -EINVAL);
    assert_string_equal(log_level_name(LOG_INFO), "info");
}

static void test_long_record_truncated_and_marked(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "log");
    assert_int_equal(log_start(path), 0);
    char big[4000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_write(LOG_INFO, "%s", big);
    log_stop();
    char *text = slurp(path);
    assert_true(strlen(text) <= LOG_LINE_MAX);
    assert_non_null(strstr(text, "...\n"));
    assert_int_equal(count(text, "\n"), 1);
    free(text);
    unlink(path);
    rmdir(dir);
}

struct reader {
    int fd;
    char *buf;
    size_t n, cap;
};

static void *drain_fifo(void *arg)
{
    struct reader *r = arg;
    for (;;) {
        if (r->n + 65536 > r->cap) {
            r->cap = r->cap * 2 + 65536;
            r->buf = realloc(r->buf, r->cap + 1);
        }
        ssize_t n = read(r->fd, r->buf + r->n, r->cap - r->n);
        if (n <= 0)
            break;
        r->n += (size_t)n;
    }
    r->buf[r->n] = '\0';
    return NULL;
}

/* The sink is a FIFO nobody reads at first: the writer blocks, the queue
 * fills, producers drop instead of blocking, and once the FIFO is read the
 * writer reports the drops in-band. */
static void test_full_queue_drops_and_reports(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    int rfd = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(rfd >= 0);
    assert_int_equal(log_start(path), 0);
    uint64_t before = log_dropped_total();

    const int total = 3 * LOG_QUEUE_LEN;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < total; i++)
        log_write(LOG_INFO, "flood %d padding padding padding padding padding padding", i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Producers never waited on the blocked sink. */
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    uint64_t dropped = log_dropped_total() - before;
    assert_true(dropped > 0);
    assert_true(dropped <= (uint64_t)total);

    int flags = fcntl(rfd, F_GETFL);
    fcntl(rfd, F_SETFL, flags & ~O_NONBLOCK);
    struct reader r = {.fd = rfd};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_fifo, &r), 0);
    log_stop(); /* closes the write end: the reader sees EOF */
    pthread_join(th, NULL);
    close(rfd);

    size_t lines = count(r.buf, "flood ");
    assert_int_equal(lines + dropped, (size_t)total);
    assert_non_null(strstr(r.buf, "records dropped (queue of 8192 full)"));
    free(r.buf);
    unlink(path);
    rmdir(dir);
}

static void *producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < 2000; i++)
        log_write(LOG_INFO, "thread %d line %d", id, i);
    return NULL;
}

static void test_many_threads_whole_lines(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "log");
    assert_int_equal(log_start(path), 0);
    uint64_t before = log_dropped_total();
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    log_stop();
    uint64_t dropped = log_dropped_total() - before;
    char *text = slurp(path);
    size_t lines = count(text, " line ");
    assert_int_equal(lines + dropped, 8000u);
    /* every line is whole: a timestamp, a level and the text */
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(nl - p > 30);
        assert_true(p[23] == 'Z');
        p = nl + 1;
    }
    free(text);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_in_order_and_flushed),
        cmocka_unit_test(test_levels_filter),
        cmocka_unit_test(test_level_names),
        cmocka_unit_test(test_long_record_truncated_and_marked),
        cmocka_unit_test(test_full_queue_drops_and_reports),
        cmocka_unit_test(test_many_threads_whole_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
