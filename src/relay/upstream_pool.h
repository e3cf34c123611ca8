/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upstream_pool.h: idle upstream connections of the HTTP proxy, kept per
 * worker for the next request to the same "host:port" (a keyed pool).
 *
 * This room keeps sockets and nothing else: it does not know HTTP, a
 * session, the configuration or the counters. An idle connection that
 * stirs (EOF, an error, unasked-for bytes) is closed and dropped; one idle
 * longer than the owner's idle time is dropped by a sweep timer. Entries
 * are freed after the loop's current batch (loop_release), since that
 * batch may still hold an event for their socket. Whether an exchange
 * leaves its connection fit to be pooled is decided by upstream_may_pool().
 * One loop's; not thread-safe.
 */
#ifndef FERRY_RELAY_UPSTREAM_POOL_H
#define FERRY_RELAY_UPSTREAM_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/loop.h"
#include "util/addr.h"
#include "util/list.h"

#define UPSTREAM_KEY_MAX       300  /* "host:port", NUL included; longer keys are cut */
#define UPSTREAM_POOL_SWEEP_MS 1000 /* how often idle connections are looked at */

/* The idle time an entry may stay, asked at every sweep (so it follows a
 * configuration reload). */
typedef uint32_t (*upstream_idle_fn)(void *ctx);

struct upstream_pool {
    struct list idle; /* idle entries, oldest first */
    uint32_t n;       /* entries in idle */
    struct timer sweep;
    struct loop *loop;
    upstream_idle_fn idle_ms;
    void *ctx;
};

/* What an exchange knows when it ends, for upstream_may_pool(). */
struct upstream_end {
    bool reusable;   /* the response let the connection persist */
    bool doubt;      /* a message of the exchange had doubtful framing */
    bool req_done;   /* the request was sent whole, body included */
    bool resp_eof;   /* the upstream closed its side */
    uint32_t unread; /* bytes the upstream sent beyond its response */
};

/* May the exchange's upstream connection serve another request? Only if
 * the response allowed it, the request went whole, the upstream neither
 * closed nor said anything beyond its response, and no message had
 * doubtful framing (a connection that saw doubt is never reused). Pure. */
bool upstream_may_pool(const struct upstream_end *e);

/* A new, empty pool on loop; idle_ms(ctx) is the idle time. NULL when
 * memory is exhausted. */
struct upstream_pool *upstream_pool_new(struct loop *loop, upstream_idle_fn idle_ms, void *ctx);

/* Close every idle connection, stop the sweep and free the pool (NULL is a
 * no-op). Entries are released through the loop, as always. */
void upstream_pool_free(struct upstream_pool *p);

/* Hand fd (connected, not registered with the loop) to the pool under key.
 * The pool owns fd from here on: when it already holds max entries, or
 * cannot register fd, fd is closed. Returns true when fd was pooled. */
bool upstream_pool_put(struct upstream_pool *p, int fd, const char *key, uint32_t max);

/* The newest idle connection to key, taken out of the pool, with its peer
 * address in *peer; -1 if none (entries whose peer cannot be read are
 * closed on the way). The caller owns the fd returned; it is not
 * registered with the loop. p may be NULL (an empty pool). */
int upstream_pool_take(struct upstream_pool *p, const char *key, struct addr *peer);

/* Drop entries idle for idle_ms or more and those that stirred; re-arm the
 * sweep while entries remain. The sweep timer runs it; a test may too. */
void upstream_pool_sweep(struct upstream_pool *p);

#endif
