/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/params.c: the ranges of `ferry bench`'s numeric options. A value
 * outside them cannot give a figure worth the name (a window of 0 s
 * "measures" 0 MiB/s, a download of 0 bytes has no rate, a ping every
 * millisecond is a flood, not a ping) or cannot be run on this kind of
 * machine (a million held connections need four million descriptors): it is
 * a usage error (exit 2) naming the option and the range, before anything
 * starts. Options a scenario does not use are still checked (a typo is a
 * typo), against the same ranges.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

/* Limits shared with the option parser and the report. */
#define DURATION_MIN 0.1
#define DURATION_MAX 3600.0
#define WARMUP_MAX   600.0
#define PING_MIN     0.02 /* the generator's tick */
#define PING_MAX     3600.0

static int fail(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* An unsigned option in lo..hi; `what` says what it counts. */
static int check_u(char *msg, size_t cap, const char *opt, const char *scen, unsigned long long v,
                   unsigned long long lo, unsigned long long hi, const char *what)
{
    if (v >= lo && v <= hi)
        return 0;
    return fail(msg, cap, "%s must be %llu..%llu%s%s%s%s (got %llu)", opt, lo, hi,
                what[0] ? " " : "", what, scen ? " for " : "", scen ? scen : "", v);
}

int bench_params_check(const struct bench_opts *o, char *msg, size_t cap)
{
    const char *sc = o->scenario;
    bool tp = !strcmp(sc, "throughput"), cn = !strcmp(sc, "connections");
    bool udp = !strcmp(sc, "udp");
    if (check_u(msg, cap, "--runs", NULL, o->runs, 1, 100, ""))
        return -1;
    if (!(o->duration_s >= DURATION_MIN && o->duration_s <= DURATION_MAX))
        return fail(msg, cap, "--duration must be %g..%g seconds (got %g)", DURATION_MIN,
                    DURATION_MAX, o->duration_s);
    if (!(o->warmup_s >= 0 && o->warmup_s <= WARMUP_MAX))
        return fail(msg, cap, "--warmup must be 0..%g seconds (got %g)", WARMUP_MAX, o->warmup_s);
    if (!(o->ping_s == 0 || (o->ping_s >= PING_MIN && o->ping_s <= PING_MAX)))
        return fail(msg, cap, "--ping must be 0 (off) or %g..%g seconds (got %g)", PING_MIN,
                    PING_MAX, o->ping_s);
    /* --connections: streams, held connections or UDP clients. Each held
     * connection costs four descriptors on this machine (client, echo and
     * the proxy's two), and the kernel's ceiling per process is about 2^20. */
    if (cn && check_u(msg, cap, "--connections", sc, o->connections, 1, 250000, ""))
        return -1;
    if (tp && check_u(msg, cap, "--connections", sc, o->connections, 1, 10000, ""))
        return -1;
    if (udp && check_u(msg, cap, "--connections", sc, o->connections, 1, 10000, ""))
        return -1;
    if (check_u(msg, cap, "--connections", NULL, o->connections, 1, 250000, ""))
        return -1;
    if (check_u(msg, cap, "--concurrency", NULL, o->concurrency, 1, 10000, ""))
        return -1;
    if (udp) {
        if (check_u(msg, cap, "--payload", sc, o->payload, 12, 65507 - 22, "bytes"))
            return -1;
    } else if (check_u(msg, cap, "--payload", NULL, o->payload, 1, PATTERN_SLACK, "bytes")) {
        return -1;
    }
    if (check_u(msg, cap, "--requests", NULL, o->requests, 1, 10000000, ""))
        return -1;
    if (check_u(msg, cap, "--warm-requests", NULL, o->warm_requests, 0, 10000000, ""))
        return -1;
    if (check_u(msg, cap, "--downloads", NULL, o->downloads, 1, 1000, ""))
        return -1;
    /* Each download phase must end within the 120 s a phase is given. */
    if (check_u(msg, cap, "--download-size", NULL, o->download_size, 1, 4ull << 30, "bytes"))
        return -1;
    if (check_u(msg, cap, "--threads", NULL, o->threads, 1, 64, ""))
        return -1;
    if (o->proxy_workers &&
        check_u(msg, cap, "--proxy-workers", NULL, o->proxy_workers, 1, 256, ""))
        return -1;
    if (check_u(msg, cap, "--rules", NULL, o->nrules, 0, 1000000, ""))
        return -1;
    if (o->auth_cachettl_s > 86400)
        return fail(msg, cap, "--auth-cachettl must be 0..86400 seconds (got %d)",
                    o->auth_cachettl_s);
    return 0;
}
