/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.h: the second seam of a session, how its other side is reached.
 * An outbound takes a destination (a name or an address, and a port), meets
 * the rules on the way, and ends in conn_connected() with c->up connected,
 * or in conn_fail() with the reason. The session core (conn.c) and the
 * fronts use it only through c->out, so a parent proxy or a stream of a
 * tunnel connection is one more row, not a change to the relay.
 *
 * The rows: direct (outbound_direct.c) resolves with the worker's resolver
 * and connects from this host; reject refuses; a parent proxy (SOCKS5,
 * SOCKS4a, HTTP CONNECT, HTTPS) and a pool of them are rows of their own.
 * conn_dial() (conn.c) picks the row for a destination: the outbound named
 * by the rule that allowed it ("via NAME"), else the config's default
 * (config/outbound.h), and records it in c->ob.
 */
#ifndef FERRY_RELAY_OUTBOUND_H
#define FERRY_RELAY_OUTBOUND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/outbound.h"
#include "relay/errmap.h"
#include "util/addr.h"

struct conn;
struct config;
struct worker;

/* One kind of outbound. Every hook runs on the session's worker thread. */
struct outbound_ops {
    const char *name; /* for logs and debugging */
    /* After conn_connected(), c->up is a plain connected socket that the
     * relay may splice(); false: a byte stream the buffer pump must carry. */
    bool splice;
    /* Reach name (NULL: ip) at port within connect_timeout, the rules met
     * for each address tried; c->dst_name, c->dst_port, c->target and
     * c->rule are set on the way. Ends, now or from a later event, in
     * conn_connected() or in conn_fail(). The session's timer and states
     * RESOLVE and CONNECT are the outbound's until then. */
    void (*dial)(struct conn *c, const char *name, const struct addr *ip, uint16_t port);
    /* Events on c->up in state CONNECT. */
    void (*event)(struct conn *c, uint32_t events);
    /* The session's timer fired in state RESOLVE or CONNECT. */
    void (*timeout)(struct conn *c);
    /* Where the destination sees this session come from (a SOCKS reply's
     * BND), after conn_connected(). 0 or -errno. */
    int (*bnd)(const struct conn *c, struct addr *out);
    /* The session ends (or lingers): give back what a dial holds. c->up is
     * the core's to close. */
    void (*close)(struct conn *c);

    /* A byte stream over c->up (splice false), as the relay's pump
     * (pump.c) carries it; NULL: recv(), send() and shutdown(SHUT_WR) on the
     * socket itself. read returns bytes, 0 at the stream's clean end (EOF),
     * or -errno; write returns the bytes taken or -errno; shutdown_wr ends
     * the sending side (an EOF to the far end) and returns 0 or -errno. On
     * -EAGAIN each sets *want to SIDE_RD or SIDE_WR (conn.h): the readiness
     * of c->up it waits for, which need not be its own direction's (TLS
     * reads may have to write and writes to read). A write that returned
     * -EAGAIN is offered the same bytes again. pending: bytes the stream
     * holds in user space that read would return with no new readiness of
     * c->up (edge-triggered epoll will not announce them); NULL: none. */
    ssize_t (*read)(struct conn *c, void *p, size_t len, uint8_t *want);
    ssize_t (*write)(struct conn *c, const void *p, size_t len, uint8_t *want);
    int (*shutdown_wr)(struct conn *c, uint8_t *want);
    bool (*pending)(const struct conn *c);
    /* After the pump moved bytes (a stream outbound): account for what
     * reached the client (c->u2c.bytes), e.g. flow-control credit. NULL:
     * nothing to do. */
    void (*credit)(struct conn *c);
    /* After read or write failed: the outbound's own name for why (a
     * fast-opened stream the parent refused: "parent-refused"), the
     * access log's end=; NULL (or a NULL op): the pump's "upstream-error". */
    const char *(*why)(const struct conn *c);
};

extern const struct outbound_ops outbound_direct;
extern const struct outbound_ops outbound_reject;
/* A parent proxy: SOCKS5, SOCKS4a, HTTP CONNECT (outbound_parent.c). */
extern const struct outbound_ops outbound_parent;
/* The same through TLS 1.3: an HTTPS parent (outbound_parent.c,
 * outbound_https.c). */
extern const struct outbound_ops outbound_https;
/* An HTTPS parent with mux h2 or auto: CONNECT streams on the worker's
 * shared HTTP/2 connection (outbound_h2.c); auto falls back to
 * outbound_https when the parent's ALPN says http/1.1. */
extern const struct outbound_ops outbound_h2;
/* outbound_pool.c: members tried by strategy, failing over. */
extern const struct outbound_ops outbound_pool;

/* Does the session's request go to its outbound as to a proxy: a plain
 * HTTP request (c->proxy_form, set by the HTTP front) whose outbound
 * (c->ob) is an HTTP parent? Then the parent row connects without a
 * CONNECT handshake and the front sends the request in absolute form
 * (RFC 9112 3.2.2). Every other outbound tunnels as for any session. */
bool outbound_proxy_form(const struct conn *c);

/* The row that carries sessions for a configured outbound; NULL for a
 * kind this build cannot carry. */
const struct outbound_ops *outbound_ops_for(const struct config_outbound *o);

/* A dial through c->out failed with o (the outbound has given back what
 * it held for this attempt): a pool tries its next member within the
 * connect budget; otherwise the session fails (conn_fail()). */
void outbound_fail(struct conn *c, enum outcome o, const char *why);

/* Watch fd, a nonblocking connect() in progress to one of the session's
 * addresses, as c->up: the session enters CONNECT with a timer that gives
 * this address its share of the connect budget left (c->deadline split
 * evenly over this one and the `left` addresses still untried after it).
 * Returns 0, or -errno with fd closed (try the next address). */
int outbound_watch_connect(struct conn *c, int fd, uint64_t now, uint64_t left);

/* A parent's failure (enum parent_fail of proto/parent.h) as the outcome
 * a session fails with and the access log's why (outbound_parent.c). */
void outbound_parent_outcome(uint8_t fail, enum outcome *o, const char **why);

/* The worker's HTTP/2 parent connections (outbound_h2.c): close those of
 * configurations no longer current that carry nothing (after a reload),
 * and free them all at the worker's end (after its sessions closed). */
void outbound_h2_config_changed(struct worker *w);
void outbound_h2_worker_fini(struct worker *w);

/* ---- pools and health (outbound_pool.c, outbound_check.c) ---------------- */

/* Which member of pool (a position in pool->members) a dial tries next,
 * or -1 when every member is in tried (bits by position). A member is up
 * when health[member].down_until_ms <= now_ms. failover: the first member
 * up; round-robin: the first up from position start on, cyclically;
 * least-connections: the member up with the fewest active[position]
 * sessions, ties to the first from start. When no untried member is up,
 * the first untried one in order (a pool tries members in their back-off
 * rather than refuse). Pure: reads health, nothing else. */
int outbound_pool_pick(const struct config_outbound *pool, const struct outbound_health *health,
                       const uint64_t *active, uint16_t tried, uint64_t now_ms, uint32_t start);

/* outbound_fail()'s pool part: count the failure, mark the outbound down
 * when the failure was its own (its parent unreachable, silent, garbled,
 * refusing our credentials), and when c's dial goes through a pool, time
 * is left and a member untried, give back the attempt and dial the next
 * member: true. false: the session fails (the caller answers). */
bool outbound_pool_failover(struct conn *c, enum outcome o, const char *why);

/* Health of outbound ob of cfg (any thread; atomics). Down: skipped by
 * pools until now_ms + the back-off (the pool's backoff, pool < 0: the
 * outbound's own; doubled for each failure in a row, at most 60 s or the
 * backoff when longer), logged at warn with reason on the change. Up:
 * back in, latency_us recorded (0: not), logged at info on the change,
 * how saying what passed. pool: the pool it serves, for the log; -1. */
void outbound_mark_down(const struct config *cfg, uint16_t ob, int pool, uint64_t now_ms,
                        const char *reason);
void outbound_mark_up(const struct config *cfg, uint16_t ob, int pool, uint64_t latency_us,
                      const char *how);

/* c reached its destination through c->ob (conn_connected): counted as
 * carried and active (with its pool), the outbound's health updated. */
void outbound_carried(struct conn *c);
/* c no longer counts as active through what it was carried by (at close;
 * once: it forgets). */
void outbound_released(struct conn *c);
/* Outbound ob's column col (OB_STAT_*) summed over cfg's workers. */
uint64_t outbound_stat_sum(const struct config *cfg, uint16_t ob, unsigned col);

/* Health checks (outbound_check.c): every pool with health_check, each
 * member every interval: a real CONNECT through it to health_target
 * within the member's connect budget; the result marks it up or down.
 * They run on w's loop only (worker 0), hold a reference on cfg, and stop
 * with outbound_checks_stop() (on w's thread, or after its loop ended),
 * which frees them after the loop's current batch. NULL: no pool checks,
 * or no memory (logged). */
struct ob_checks;
struct ob_checks *outbound_checks_start(struct worker *w, struct config *cfg);
void outbound_checks_stop(struct ob_checks *ck);

#endif
