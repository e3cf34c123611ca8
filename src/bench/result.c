/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/result.c: what a run records and the verdict on it. A scenario
 * adds its figures, notes and shortfalls to its struct result, reports
 * wrong data with bench_fail() and the first failed setup with
 * bench_setup_failed(), from any generator thread; bench_window() sleeps
 * through a measurement window and ends it early once the run has failed;
 * result_verdict() turns all that into the run's status.
 *
 * This room is below the scenarios and the driver (main.c): it calls
 * neither, so a scenario and the driver never call each other through it.
 * It prints only the verdict's one line on stderr; the report is report.c's.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "util/compiler.h"

void result_add(struct result *r, const char *name, const char *unit, double v)
{
    if (r->n < RESULT_MAX_METRICS)
        r->m[r->n++] = (struct metric){name, unit, v};
}

void result_latency(struct result *r, const struct hist *h, bool rtt, bool mean)
{
    /* Names are kept as pointers: one literal table per prefix. */
    static const char *const names[2][7] = {
        {"latency_mean", "latency_p50", "latency_p90", "latency_p95", "latency_p99",
         "latency_p99_9", "latency_max"},
        {"rtt_mean", "rtt_p50", "rtt_p90", "rtt_p95", "rtt_p99", "rtt_p99_9", "rtt_max"},
    };
    static const double ps[] = {50, 90, 95, 99, 99.9, 100};
    const char *const *n = names[rtt ? 1 : 0];
    if (mean)
        result_add(r, n[0], "ms", hist_mean(h) / 1e6);
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        result_add(r, n[i + 1], "ms", hist_percentile(h, ps[i]) / 1e6);
}

void result_note(struct result *r, const char *fmt, ...)
{
    size_t len = strlen(r->note);
    if (len && len + 2 < sizeof(r->note)) {
        memcpy(r->note + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + len, sizeof(r->note) - len, fmt, ap);
    va_end(ap);
}

void result_shortfall(struct result *r, const char *fmt, ...)
{
    size_t len = strlen(r->shortfall);
    if (len && len + 2 < sizeof(r->shortfall)) {
        memcpy(r->shortfall + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->shortfall + len, sizeof(r->shortfall) - len, fmt, ap);
    va_end(ap);
}

void bench_setup_note(struct bench *b, const char *fmt, ...)
{
    if (atomic_exchange(&b->setup_claimed, true))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->setup_fail, sizeof(b->setup_fail), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&b->setup_noted, true, memory_order_release);
}

void bench_setup_failed(struct bench *b, const struct sclient *s, const struct route *r)
{
    if (atomic_load_explicit(&b->setup_claimed, memory_order_relaxed))
        return; /* cheap: most failures after the first stop here */
    char why[sizeof(b->setup_fail)];
    sclient_fail_reason(s, r, why, sizeof(why));
    bench_setup_note(b, "%s", why);
}

const char *bench_setup_reason(struct bench *b, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (atomic_load_explicit(&b->setup_noted, memory_order_acquire))
        snprintf(buf, cap, " (first failure: %s)", b->setup_fail);
    return buf;
}

void bench_fail(struct bench *b, const char *fmt, ...)
{
    if (atomic_exchange(&b->fail_claimed, true))
        return; /* the first report names the problem; the rest are counted */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->fail_msg, sizeof(b->fail_msg), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&b->failed, true, memory_order_release);
}

bool bench_has_failed(const struct bench *b)
{
    return atomic_load_explicit(&b->failed, memory_order_acquire);
}

void bench_fail_reset(struct bench *b)
{
    atomic_store(&b->failed, false);
    atomic_store(&b->fail_claimed, false);
    b->fail_msg[0] = '\0';
    atomic_store(&b->setup_noted, false);
    atomic_store(&b->setup_claimed, false);
    b->setup_fail[0] = '\0';
}

size_t bench_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    /* Every byte received is checked: memcmp (vectorized) over blocks, the
     * byte loop only inside the block that differs. */
    size_t i = 0;
    while (i < n) {
        size_t len = MIN(n - i, (size_t)4096);
        if (memcmp(a + i, b + i, len) != 0)
            break;
        i += len;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

void bench_window(const struct bench *b, const char *label, double seconds,
                  double (*rate)(void *arg), void *arg, const char *unit)
{
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    uint64_t start = now_ns();
    for (;;) {
        uint64_t now = now_ns();
        if (now >= end)
            break;
        uint64_t step = MIN(end - now, (uint64_t)250000000u);
        struct timespec ts = {(time_t)(step / 1000000000u), (long)(step % 1000000000u)};
        nanosleep(&ts, NULL);
        /* A failed run is not worth finishing. Checked after the sleep, so
         * that a caller polling in short windows still sleeps. */
        if (bench_has_failed(b))
            break;
        if (b->o.progress && label) {
            double r = rate ? rate(arg) : 0;
            fprintf(stderr, "\r\033[K  %s %.1f/%.1f s", label, (double)(now_ns() - start) / 1e9,
                    seconds);
            if (rate)
                fprintf(stderr, "  %.1f %s", r, unit);
            fflush(stderr);
        }
    }
    if (b->o.progress && label)
        fprintf(stderr, "\r\033[K");
}

void bench_progress_count(const struct bench *b, const char *label, unsigned done, unsigned total,
                          double elapsed_s)
{
    static uint64_t last_ns; /* the main thread's: at most 5 lines a second */
    if (!b->o.progress)
        return;
    uint64_t now = now_ns();
    if (label && now - last_ns < 200000000u)
        return;
    last_ns = label ? now : 0;
    if (label)
        fprintf(stderr, "\r\033[K  %s %u/%u (%.1f s)", label, done, total, elapsed_s);
    else
        fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* The verdict on run k (1-based) that returned rc, told on stderr: wrong
 * data fails it; so does a shortfall (result_shortfall), unless
 * --allow-failures and something was set up. A failure still reported with
 * its figures leaves its message in err. Returns the run's status: 0 or
 * -errno. */
int result_verdict(const struct bench *b, const struct result *r, unsigned k, int rc, char *err,
                   size_t cap)
{
    if (bench_has_failed(b)) {
        fprintf(stderr, "ferry bench: run %u failed: %s\n", k, b->fail_msg);
        snprintf(err, cap, "%s", b->fail_msg);
        return rc ? rc : -EBADMSG;
    }
    if (r->shortfall[0] && (r->nothing || !b->o.allow_failures)) {
        fprintf(stderr, "ferry bench: run %u FAILED: %s\n", k, r->shortfall);
        snprintf(err, cap, "%s", r->shortfall);
        return rc ? rc : -EPROTO;
    }
    if (rc) {
        fprintf(stderr, "ferry bench: run %u failed: %s%s%s\n", k, strerror(-rc),
                r->note[0] ? ": " : "", r->note);
        return rc;
    }
    if (r->shortfall[0])
        fprintf(stderr, "ferry bench: run %u: %s (allowed by --allow-failures)\n", k, r->shortfall);
    return 0;
}
