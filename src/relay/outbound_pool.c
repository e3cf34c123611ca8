/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_pool.c: the pool outbound (outbound.h), a way out made of other
 * outbounds ("members = corp, web"), and the health every outbound keeps
 * (struct outbound_health, shared by the workers through atomics, no
 * locks).
 *
 * A pool dials nothing itself: it picks a member by its strategy
 * (outbound_pool_pick(), pure), gives it an even share of what is left of
 * the pool's connect budget, and hands the session over with conn_route()
 * (c->ob becomes the member, c->ob_rule stays the pool). When the member's
 * dial fails, outbound_fail() comes back here: a failure that is the
 * member's (its parent cannot be reached, answers nothing or nonsense,
 * refuses our credentials) marks it down for a back-off that doubles with
 * each failure in a row, and the next member is dialled while budget and
 * members remain. An answer about the destination (a denial, a name that
 * does not resolve) ends the dial: another member would say the same.
 *
 * It also counts what each outbound carries (config.ob_stats, per worker)
 * and logs each member's change between up and down once. It must not
 * learn any front protocol, and never answers the client itself.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "log/log.h"
#include "relay/errmap.h"
#include "relay/outbound.h"
#include "relay/session.h"

#define BACKOFF_MAX_MS 60000

/* ---- choosing a member (pure) -------------------------------------------- */

static bool member_up(const struct outbound_health *h, uint64_t now_ms)
{
    return atomic_load_explicit(&h->down_until_ms, memory_order_relaxed) <= now_ms;
}

int outbound_pool_pick(const struct config_outbound *pool, const struct outbound_health *health,
                       const uint64_t *active, uint16_t tried, uint64_t now_ms, uint32_t start)
{
    unsigned n = pool->nmembers;
    if (n == 0)
        return -1;
    if (pool->strategy == OUTBOUND_FAILOVER)
        start = 0;
    int best = -1, first_untried = -1;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = (start + i) % n;
        if (tried & (1u << k))
            continue;
        if (first_untried < 0 || (int)k < first_untried)
            first_untried = (int)k;
        if (!member_up(&health[pool->members[k]], now_ms))
            continue;
        if (pool->strategy != OUTBOUND_LEAST_CONN) {
            if (best < 0)
                best = (int)k; /* the first up from start: failover, round-robin */
        } else if (best < 0 || active[k] < active[best]) {
            best = (int)k; /* ties go to the first from start */
        }
    }
    /* Every member left is in its back-off: try them anyway, in order,
     * rather than refuse while one may have come back. */
    return best >= 0 ? best : first_untried;
}

/* ---- counters ------------------------------------------------------------ */

static stat_t *ob_stat(const struct conn *c, uint16_t ob, unsigned col)
{
    const struct config *cfg = conn_cfg(c);
    if (!cfg->ob_stats || c->w->id >= cfg->workers || ob >= cfg->noutbounds)
        return NULL;
    return &cfg->ob_stats[(size_t)c->w->id * cfg->ob_stride + (size_t)ob * OB_STATS + col];
}

static void ob_count(const struct conn *c, uint16_t ob, unsigned col)
{
    stat_t *s = ob_stat(c, ob, col);
    if (s)
        stat_add(s, 1);
}

uint64_t outbound_stat_sum(const struct config *cfg, uint16_t ob, unsigned col)
{
    uint64_t v = 0;
    if (!cfg->ob_stats || ob >= cfg->noutbounds)
        return 0;
    for (unsigned w = 0; w < cfg->workers; w++)
        v += stat_get(&cfg->ob_stats[(size_t)w * cfg->ob_stride + (size_t)ob * OB_STATS + col]);
    return v;
}

/* ---- health -------------------------------------------------------------- */

static void fmt_ms(char *out, size_t cap, uint64_t ms)
{
    if (ms % 1000 == 0)
        snprintf(out, cap, "%llus", (unsigned long long)(ms / 1000));
    else
        snprintf(out, cap, "%llums", (unsigned long long)ms);
}

/* "corp" or "corp (member of pool p)". */
static void ob_label(const struct config *cfg, uint16_t ob, int pool, char *out, size_t cap)
{
    if (pool >= 0 && (uint32_t)pool < cfg->noutbounds)
        snprintf(out, cap, "%s (member of pool %s)", cfg->outbounds[ob].name,
                 cfg->outbounds[pool].name);
    else
        snprintf(out, cap, "%s", cfg->outbounds[ob].name);
}

void outbound_mark_down(const struct config *cfg, uint16_t ob, int pool, uint64_t now_ms,
                        const char *reason)
{
    if (ob >= cfg->noutbounds)
        return;
    struct outbound_health *h = &cfg->ob_health[ob];
    uint32_t backoff = pool >= 0 && (uint32_t)pool < cfg->noutbounds
                           ? cfg->outbounds[pool].backoff_ms
                           : cfg->outbounds[ob].backoff_ms;
    uint32_t row = atomic_fetch_add_explicit(&h->fails_in_row, 1, memory_order_relaxed);
    uint64_t cap = backoff > BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS;
    uint64_t ms = (uint64_t)backoff << (row < 16 ? row : 16);
    if (ms > cap)
        ms = cap;
    atomic_store_explicit(&h->down_until_ms, now_ms + ms, memory_order_relaxed);
    if (atomic_exchange_explicit(&h->up, 0, memory_order_relaxed) == 1) {
        char name[2 * OUTBOUND_NAME_MAX + 24], dur[24];
        ob_label(cfg, ob, pool, name, sizeof(name));
        fmt_ms(dur, sizeof(dur), ms);
        log_warn("outbound %s: down: %s; skipping it for %s", name, reason, dur);
    }
}

void outbound_mark_up(const struct config *cfg, uint16_t ob, int pool, uint64_t latency_us,
                      const char *how)
{
    if (ob >= cfg->noutbounds)
        return;
    struct outbound_health *h = &cfg->ob_health[ob];
    if (atomic_load_explicit(&h->fails_in_row, memory_order_relaxed))
        atomic_store_explicit(&h->fails_in_row, 0, memory_order_relaxed);
    if (atomic_load_explicit(&h->down_until_ms, memory_order_relaxed))
        atomic_store_explicit(&h->down_until_ms, 0, memory_order_relaxed);
    if (latency_us)
        atomic_store_explicit(&h->latency_us, latency_us, memory_order_relaxed);
    if (atomic_load_explicit(&h->up, memory_order_relaxed) == 1 ||
        atomic_exchange_explicit(&h->up, 1, memory_order_relaxed) == 1)
        return;
    char name[2 * OUTBOUND_NAME_MAX + 24];
    ob_label(cfg, ob, pool, name, sizeof(name));
    log_info("outbound %s: up: %s in %.1f ms", name, how, (double)latency_us / 1000.0);
}

/* The pool a session's dial goes through (c->ob is its member), or -1. */
static int conn_pool(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    if (c->ob_rule == c->ob || c->ob_rule >= cfg->noutbounds)
        return -1;
    return cfg->outbounds[c->ob_rule].kind == OUTBOUND_KIND_POOL ? c->ob_rule : -1;
}

void outbound_carried(struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    outbound_released(c); /* an HTTP session's earlier request */
    if (c->ob >= cfg->noutbounds)
        return;
    int pool = conn_pool(c);
    ob_count(c, c->ob, OB_STAT_SESSIONS);
    ob_count(c, c->ob, OB_STAT_ACTIVE);
    c->ob_held = (uint16_t)(c->ob + 1);
    if (pool >= 0) {
        ob_count(c, (uint16_t)pool, OB_STAT_SESSIONS);
        ob_count(c, (uint16_t)pool, OB_STAT_ACTIVE);
        c->ob_held_pool = (uint16_t)(pool + 1);
    }
    /* A direct connect times the destination, not the way out: it only
     * brings a member that was down back up (the common case reads one
     * shared line and writes nothing). */
    const struct outbound_health *h = &cfg->ob_health[c->ob];
    bool direct = cfg->outbounds[c->ob].kind == OUTBOUND_KIND_DIRECT;
    if (direct && atomic_load_explicit(&h->up, memory_order_relaxed) &&
        !atomic_load_explicit(&h->fails_in_row, memory_order_relaxed))
        return;
    uint64_t now = clock_us();
    uint64_t lat = direct ? 0 : now > c->ob_t0_us ? now - c->ob_t0_us : 1;
    outbound_mark_up(cfg, c->ob, pool, lat, "a session connected through it");
}

void outbound_released(struct conn *c)
{
    stat_t *s;
    if (c->ob_held && (s = ob_stat(c, (uint16_t)(c->ob_held - 1), OB_STAT_ACTIVE)))
        stat_sub(s, 1);
    if (c->ob_held_pool && (s = ob_stat(c, (uint16_t)(c->ob_held_pool - 1), OB_STAT_ACTIVE)))
        stat_sub(s, 1);
    c->ob_held = c->ob_held_pool = 0;
}

/* ---- failing over ---------------------------------------------------------- */

enum fail_kind {
    FAIL_STOP,   /* an answer about the destination: no other member is tried */
    FAIL_NEXT,   /* the member is fine, the destination was not: try the next */
    FAIL_OUTAGE, /* the member itself failed: mark it down, try the next */
};

/* Whose failure was it? A parent that answered about the destination
 * (refused, unreachable, general failure, a command or address it cannot
 * carry) is up; one that cannot be reached, resolved or understood, that
 * says nothing within its share of the budget, or that refuses our
 * credentials (it will refuse every session until they are fixed) is
 * down. A direct member's failures are the destination's as far as a
 * session can tell: only a health check marks it down. */
static enum fail_kind fail_kind(uint8_t kind, enum outcome o, const char *why)
{
    static const char *const answers[] = {
        "parent-refused", "parent-net-unreachable", "parent-host-unreachable",
        "parent-failed",  "parent-cmd-unsupported", "parent-addr-unsupported",
        "parent-request", "parent-dest-timeout",
    };
    if (o == OUT_DENIED || !why || !strcmp(why, "no-memory") || !strcmp(why, "resolve-failed"))
        return FAIL_STOP;
    if (kind == OUTBOUND_KIND_DIRECT)
        return FAIL_NEXT;
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (!strcmp(why, answers[i]))
            return FAIL_NEXT;
    return FAIL_OUTAGE;
}

/* Members of the pool not tried yet that are up (all untried ones when
 * none is): how many ways the rest of the budget is shared. */
static unsigned pool_left(const struct config *cfg, const struct config_outbound *p, uint16_t tried,
                          uint64_t now)
{
    unsigned up = 0, untried = 0;
    for (unsigned i = 0; i < p->nmembers; i++) {
        if (tried & (1u << i))
            continue;
        untried++;
        if (member_up(&cfg->ob_health[p->members[i]], now))
            up++;
    }
    return up ? up : untried;
}

/* Dial the pool's next member from position start on. */
static void pool_try(struct conn *c, uint32_t start)
{
    struct worker *w = c->w;
    const struct config *cfg = conn_cfg(c);
    const struct config_outbound *p = &cfg->outbounds[c->ob_rule];
    uint64_t now = loop_now(&w->loop);
    uint64_t active[OUTBOUND_MAX_MEMBERS] = {0};
    if (p->strategy == OUTBOUND_LEAST_CONN)
        for (unsigned i = 0; i < p->nmembers; i++)
            active[i] = outbound_stat_sum(cfg, p->members[i], OB_STAT_ACTIVE);
    int k;
    /* A member this build cannot carry (an https parent without TLS) is
     * passed over like one that failed. */
    while ((k = outbound_pool_pick(p, cfg->ob_health, active, c->ob_tried, now, start)) >= 0 &&
           !outbound_ops_for(&cfg->outbounds[p->members[k]]))
        c->ob_tried |= (uint16_t)(1u << k);
    if (k < 0) {
        conn_fail(c, OUT_FAILED, "outbound-unavailable");
        return;
    }
    uint16_t m = p->members[k];
    unsigned left = pool_left(cfg, p, c->ob_tried, now);
    uint64_t rest = c->ob_deadline > now ? c->ob_deadline - now : 0;
    uint64_t share = left > 1 ? rest / left : rest;
    uint32_t own = cfg->outbounds[m].connect_timeout_ms;
    if (own)
        share = own < rest ? own : rest;
    c->deadline = now + share;
    loop_timer_arm_at(&w->loop, &c->timer, c->deadline);
    c->ob_tried |= (uint16_t)(1u << k);
    c->ob_tries++;
    struct addr dst = c->target;
    conn_route(c, m, c->ob_name ? c->dst_name : NULL, &dst, c->dst_port);
}

bool outbound_pool_failover(struct conn *c, enum outcome o, const char *why)
{
    const struct config *cfg = conn_cfg(c);
    if (c->ob >= cfg->noutbounds)
        return false;
    uint64_t now = loop_now(&c->w->loop);
    int pool = conn_pool(c);
    if (o != OUT_DENIED)
        ob_count(c, c->ob, OB_STAT_FAILURES);
    enum fail_kind fk = fail_kind(cfg->outbounds[c->ob].kind, o, why);
    if (fk == FAIL_OUTAGE) {
        char reason[96];
        snprintf(reason, sizeof(reason), "a session's connect failed: %s%s%s%s", why,
                 c->err ? " (" : "", c->err ? errmap_name(c->err) : "", c->err ? ")" : "");
        outbound_mark_down(cfg, c->ob, pool, now, reason);
    }
    if (pool < 0)
        return false;
    const struct config_outbound *p = &cfg->outbounds[pool];
    bool untried = false;
    for (unsigned i = 0; i < p->nmembers; i++)
        untried |= !(c->ob_tried & (1u << i));
    if (fk == FAIL_STOP || !untried || now >= c->ob_deadline) {
        if (o != OUT_DENIED)
            ob_count(c, (uint16_t)pool, OB_STAT_FAILURES);
        return false;
    }
    log_debug("conn %llu: outbound %s (member of pool %s): %s; trying the next member",
              (unsigned long long)c->id, cfg->outbounds[c->ob].name, p->name, why);
    /* Give back what the failed attempt held (the row has; again is
     * harmless), then go on from the member after it. */
    c->out->close(c);
    conn_close_fd(&c->up);
    c->err = 0;
    uint32_t start = 0;
    for (unsigned i = 0; i < p->nmembers; i++)
        if (p->members[i] == c->ob)
            start = i + 1;
    pool_try(c, start);
    return true;
}

/* ---- the row --------------------------------------------------------------- */

static void pool_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    const struct config *cfg = conn_cfg(c);
    uint16_t pool = c->ob;
    const struct config_outbound *p = &cfg->outbounds[pool];
    c->ob_rule = pool;
    c->ob_tried = 0;
    c->ob_tries = 0;
    c->ob_deadline = c->deadline;
    c->ob_name = name != NULL;
    if (!name) {
        c->target = *ip;
        c->target.port = port;
    }
    uint32_t start = 0;
    if (p->strategy != OUTBOUND_FAILOVER && p->nmembers)
        start = atomic_fetch_add_explicit(&cfg->ob_health[pool].turn, 1, memory_order_relaxed) %
                p->nmembers;
    pool_try(c, start);
}

/* The pool hands every session to a member before it returns: these
 * hooks only run if it could not (no member), and have nothing to do. */
static void pool_event(struct conn *c, uint32_t events)
{
    (void)c;
    (void)events;
}

static void pool_timeout(struct conn *c)
{
    conn_fail(c, OUT_TIMEOUT, "connect-timeout");
}

static int pool_bnd(const struct conn *c, struct addr *out)
{
    (void)c;
    (void)out;
    return -ENOTCONN;
}

static void pool_close(struct conn *c)
{
    (void)c;
}

const struct outbound_ops outbound_pool = {
    .name = "pool",
    .splice = true,
    .dial = pool_dial,
    .event = pool_event,
    .timeout = pool_timeout,
    .bnd = pool_bnd,
    .close = pool_close,
};
