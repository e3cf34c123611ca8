/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_check.h: the active side of edge mode's backends (docs/edge.md
 * "Health checks and Minecraft status"): a health check of every backend
 * of every route of an edge with health_check = INTERVAL (a TCP connect;
 * on an edge with status_cache = yes, a Minecraft status query whose
 * answer fills the route's status cache), and the cache's reading side for
 * sessions.
 */
#ifndef FERRY_RELAY_EDGE_CHECK_H
#define FERRY_RELAY_EDGE_CHECK_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct edge_route;
struct worker;
struct edge_checks;

/* Start the checks of cfg on w's loop (worker 0), each at once and then
 * every interval; NULL when no edge asks for them (or out of memory, said
 * in the log). Stop with edge_checks_stop() on w's thread. */
struct edge_checks *edge_checks_start(struct worker *w, struct config *cfg);
void edge_checks_stop(struct edge_checks *ck);

/* Copy route r's cached status JSON into out (cap bytes, NUL-ended):
 * its length with *age_ms since it was fetched, or 0 when nothing is
 * cached or it does not fit. Any thread. */
size_t edge_status_copy(const struct edge_route *r, char *out, size_t cap, uint64_t *age_ms);

#endif
