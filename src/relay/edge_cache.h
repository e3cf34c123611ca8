/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_cache.h: the Minecraft status cache of edge routes (docs/edge.md
 * "Health checks and Minecraft status"): one Status Response JSON per
 * (route, protocol version), EDGE_STATUS_VERSIONS versions a route, the
 * least recently asked one making room. A backend behind ViaVersion or a
 * proxy answers each version its own way (its version name and protocol,
 * so the client shows it compatible or not), so one version's answer is
 * never served for another while the backend is up. At most one fetch of
 * a (route, version) runs at a time, and a fresh entry is not fetched
 * again: a status flood reaches a backend at most once per version per
 * TTL. Any thread: the route's mutex guards the entries.
 */
#ifndef FERRY_RELAY_EDGE_CACHE_H
#define FERRY_RELAY_EDGE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edge_route;

enum edge_look {
    EDGE_LOOK_FRESH, /* cached within the TTL: the copy is the answer */
    EDGE_LOOK_FETCH, /* the caller fetches it now (marked as being fetched) */
    EDGE_LOOK_WAIT,  /* another session is fetching it: look again soon */
    EDGE_LOOK_NONE,  /* a fetch of it failed lately, or no slot is free: fall back */
};

/* Route r's status for protocol proto at now_ms (clock_ms()), fresh within
 * ttl_ms; on EDGE_LOOK_FRESH *json is a heap copy (NUL-ended, the caller
 * frees) of *len bytes. A fetch that failed less than retry_ms ago, or one
 * running longer than stuck_ms (its session gone without a word), is
 * judged as the values say. */
enum edge_look edge_cache_lookup(const struct edge_route *r, int32_t proto, uint64_t now_ms,
                                 uint64_t ttl_ms, uint64_t retry_ms, char **json, size_t *len);

/* Keep json[0..len) as r's answer for proto (a check's or a fetch's); json
 * NULL: the fetch failed at now_ms (now_ms 0: it was given up, its client
 * gone, which is no failure). fetched: the caller held the fetch (lookup
 * said EDGE_LOOK_FETCH), which ends. A check storing a version not cached
 * takes a slot like a fetch does. */
void edge_cache_store(const struct edge_route *r, int32_t proto, const uint8_t *json, size_t len,
                      bool fetched, uint64_t now_ms);

/* A heap copy of the entry for proto whatever its age, else of the newest
 * entry of any version (proto 0: the newest); 0 when nothing is cached. */
size_t edge_cache_any(const struct edge_route *r, int32_t proto, char **json);

#endif
