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

/* A request the endpoint does not answer itself (any path but /metrics and
 * /healthz), handed to the admin hook: method and path as sent, query
 * after '?' ("" none), the whole head (for its fields) and the body. */
struct metrics_req {
    const char *method, *path, *query;
    const char *head;
    size_t hlen;
    const char *body;
    size_t blen;
};

/* The hook's answer: status (200, 401, ...), content type, extra header
 * lines ("Name: value\r\n" each) and the body. */
struct metrics_reply {
    int status;
    const char *ctype;
    struct mtext headers, body;
};

/* The admin API and status page (admin/), a room above this one, plug in
 * here (registered through metrics_source.admin). Both run on the metrics
 * thread. */
struct metrics_admin {
    void *arg;
    /* Answer rq under cfg (the configuration in use); false: not a path
     * of the hook's (the endpoint answers 404). */
    bool (*handle)(void *arg, struct metrics *m, const struct config *cfg,
                   const struct metrics_req *rq, struct metrics_reply *rp);
    /* Once a second. */
    void (*tick)(void *arg, const struct config *cfg);
};

/* A copy of the process-wide facts (reload counts, draining); any thread. */
void metrics_state_get(struct metrics *m, struct metrics_state *out);

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
