/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * render.h: the Prometheus text exposition (format 0.0.4) of ferry's
 * counters. metrics_render() sums the workers' counters and writes every
 * family from them, from the rules of a configuration and from the facts
 * a scrape gathered (struct metrics_state): a function of its arguments,
 * with no I/O, no locks and no clock, so a test can render fake workers.
 *
 * What it must not do: serve, sample the process or read a clock; the
 * endpoint (endpoint.c) gathers those facts and hands them in.
 */
#ifndef FERRY_METRICS_RENDER_H
#define FERRY_METRICS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/compiler.h"

struct config;
struct worker;
struct shared;
struct metrics_admin;

/* What a scrape reads: the server's workers and shared state. */
struct metrics_source {
    const struct worker *ws;
    unsigned nworkers;
    const struct shared *sh;
    const struct metrics_admin *admin; /* the admin API's hooks (metrics.h); NULL: none */
};

/* The process as a scrape found it (the process_* families); a figure
 * whose have_* is false is left out. */
struct metrics_process {
    bool have_stat; /* cpu_s, vsize and rss_bytes */
    double cpu_s;   /* user + system */
    uint64_t vsize, rss_bytes;
    bool have_fds;
    uint64_t fds; /* open descriptors */
    bool have_max_fds;
    uint64_t max_fds; /* the open files limit */
};

/* Process-wide facts: those the main thread changes, and those the
 * endpoint samples at each scrape (log_dropped, proc). */
struct metrics_state {
    double start_time; /* wall clock at start, seconds */
    uint64_t reloads_ok, reloads_failed;
    double last_reload; /* wall clock of the last successful load */
    bool draining;
    uint64_t log_dropped; /* log records dropped so far */
    struct metrics_process proc;
};

/* A growing text buffer; oom is set (and text dropped) if it cannot grow. */
struct mtext {
    char *p;
    size_t len, cap;
    bool oom;
};

/* Free t's text; t is empty again. */
void mtext_fini(struct mtext *t);
/* Append printf-style; on allocation failure set t->oom and append nothing
 * more. */
void mtext_printf(struct mtext *t, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Append n bytes of p (n may be 0). Returns false (and sets t->oom) if
 * t cannot grow. */
bool mtext_append(struct mtext *t, const void *p, size_t n);

/* One counter of struct worker_stats (its byte offset, a multiple of
 * sizeof(stat_t)) summed over src's workers, read relaxed. */
uint64_t metrics_stat_sum(const struct metrics_source *src, size_t offset);

/* Append the whole exposition for src, the rules of cfg (may be NULL) and
 * st. Reads the counters relaxed, as they are at this moment. */
void metrics_render(struct mtext *t, const struct metrics_source *src, const struct config *cfg,
                    const struct metrics_state *st);

#endif
