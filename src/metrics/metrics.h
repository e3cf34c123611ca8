/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.h: the Prometheus endpoint. A thread of its own, with its own
 * loop, serves GET /metrics (text exposition format 0.0.4, rendered by
 * render.h) and GET /healthz on metrics.listen. A scrape sums the workers'
 * counters at that moment: the data path never takes a lock or does more
 * than a relaxed increment for it.
 *
 * The main thread tells it about the configuration in use (for the rule
 * counters), reloads and draining; those few calls take a mutex that only
 * the scrape also takes.
 */
#ifndef FERRY_METRICS_METRICS_H
#define FERRY_METRICS_METRICS_H

#include "metrics/render.h"

struct config;
struct metrics;

/* Serve on listen_fd (a listening socket, taken over). cfg: one reference
 * is taken. Returns 0 or -errno. */
int metrics_start(struct metrics **out, int listen_fd, const struct metrics_source *src,
                  struct config *cfg);
/* A reload happened: ok with its new configuration, or failed (cfg NULL). */
void metrics_reloaded(struct metrics *m, struct config *cfg);
void metrics_set_draining(struct metrics *m);
/* Stop the thread and free everything; NULL is a no-op. */
void metrics_stop(struct metrics *m);

#endif
