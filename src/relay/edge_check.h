/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_check.h: the active side of edge mode's backends (docs/edge.md
 * "Health checks and Minecraft status"): a health check of every backend
 * of every route of an edge with health_check = INTERVAL (a TCP connect;
 * on an edge with status_cache = yes, a Minecraft status query whose
 * answer fills the route's status cache for that protocol version), and
 * the probe both the checks and sessions fetching a status use.
 */
#ifndef FERRY_RELAY_EDGE_CHECK_H
#define FERRY_RELAY_EDGE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "util/addr.h"

struct config;
struct edge_route;
struct worker;
struct edge_checks;

/* One connect to a backend, and with status a Minecraft status exchange,
 * on one loop. The caller owns the storage (freed through loop_release
 * when freed from a callback) and sets to, status, proto, host (which
 * must outlive the probe), done and arg before edge_probe_start(). */
struct edge_probe {
    struct loop *loop;
    struct io io;
    struct timer timer;
    uint8_t phase;
    bool status;
    int32_t proto;
    const char *host;
    struct addr to;
    uint8_t *in;
    size_t in_len;
    /* The outcome: failed NULL when it passed, json[0..len) the status
     * JSON (valid during the call only; NULL without status). Called once
     * per start, maybe from within edge_probe_start(). */
    void (*done)(struct edge_probe *p, const char *failed, const uint8_t *json, size_t len);
    void *arg;
};

/* Ready p for l (nothing runs yet). */
void edge_probe_init(struct edge_probe *p, struct loop *l);
/* Connect, and ask; done is called within timeout_ms. */
void edge_probe_start(struct edge_probe *p, uint32_t timeout_ms);
/* Stop a probe that runs (done is not called); a no-op on an idle one. */
void edge_probe_cancel(struct edge_probe *p);

/* The host a status query for route r names: its rewrite= when that has
 * no captures, else its host, a pattern's part after its last '*'. */
const char *edge_query_host(const struct edge_route *r);

/* Start the checks of cfg on w's loop (worker 0), each at once and then
 * every interval; NULL when no edge asks for them (or out of memory, said
 * in the log). Stop with edge_checks_stop() on w's thread. */
struct edge_checks *edge_checks_start(struct worker *w, struct config *cfg);
void edge_checks_stop(struct edge_checks *ck);

#endif
