/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * policy.c: where sessions meet the rules and limits of acl/: may this
 * client connect at all (per-address concurrency and rate), may this user
 * open another session, may this destination be reached (rules, and the
 * protected local ranges of a public listener), and how many bytes may
 * move now (bandwidth). Verdicts come from acl/; this room applies them to
 * a session and counts them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "acct/acct.h"
#include "acl/limits.h"
#include "acl/rules.h"
#include "log/log.h"
#include "proto/socks5.h"
#include "relay/session.h"

static uint8_t acl_cmd_of(const struct conn *c)
{
    if (c->proto == PROTO_HTTP)
        return ACL_CMD_HTTP;
    switch (c->cmd) {
    case SOCKS5_CMD_UDP_ASSOCIATE:
        return ACL_CMD_UDP;
    case SOCKS5_CMD_BIND:
        return ACL_CMD_BIND;
    default:
        return ACL_CMD_CONNECT;
    }
}

/* Loopback, link-local, unspecified, multicast or broadcast (the limited
 * one, and this host's subnets' among its addresses), or one of this
 * host's addresses. */
bool policy_protected(const struct config *cfg, const struct addr *a)
{
    if (!cfg->protect_local)
        return false;
    if (addr_is_loopback(a) || addr_is_any(a) || addr_is_multicast_or_broadcast(a))
        return true;
    if (a->family == AF_INET && a->ip[0] == 169 && a->ip[1] == 254)
        return true;
    if (a->family == AF_INET6 && a->ip[0] == 0xfe && (a->ip[1] & 0xc0) == 0x80)
        return true;
    for (size_t i = 0; i < cfg->nlocal_addrs; i++) {
        const struct addr *l = &cfg->local_addrs[i];
        if (l->family == a->family && memcmp(l->ip, a->ip, a->family == AF_INET6 ? 16 : 4) == 0)
            return true;
    }
    return false;
}

enum policy_verdict policy_eval(struct conn *c, uint8_t cmd, const char *name,
                                const struct addr *ip, uint16_t port, int32_t *rule)
{
    const struct config *cfg = conn_cfg(c);
    struct acl_result res = {ACL_V_ALLOW, -1, false};
    /* ::ffff:a.b.c.d is a.b.c.d on the wire: judge it as IPv4, or rules and
     * protected ranges written for IPv4 would not see it. */
    struct addr v4;
    if (ip && addr_is_v4mapped(ip)) {
        v4 = *ip;
        addr_unmap(&v4);
        ip = &v4;
    }
    /* A NAT64 or 6to4 address reaches the IPv4 address it embeds: a rule
     * denying that address, and the protected ranges, deny it too. */
    struct addr inner;
    bool embeds = ip && addr_embedded_v4(ip, &inner);
    bool inner_by_range = false;
    *rule = POLICY_RULE_NONE;
    /* A reverse socks remote's client comes from the server's side: the
     * private ranges here stay closed to it unless its allow= opens them,
     * whatever the rules say (they are for local clients too). */
    if (c->rev && c->rev->socks) {
        if (!ip)
            return POLICY_NEED_IP;
        if (!outbound_reverse_egress_ok(c->rev, ip) ||
            (embeds && !outbound_reverse_egress_ok(c->rev, &inner))) {
            *rule = POLICY_RULE_PROTECTED;
            return POLICY_DENY;
        }
    }
    if (c->own_dest) /* the operator's own (a decoy= web site), like a proxy_pass */
        return POLICY_ALLOW;
    if (cfg->acl) {
        struct acl_req q = {
            &c->client, c->authed ? c->user : NULL, cmd ? cmd : acl_cmd_of(c), name, ip, port};
        acl_check(cfg->acl, &q, &res);
        if (res.verdict == ACL_V_NEED_IP)
            return POLICY_NEED_IP;
        *rule = res.rule >= 0 ? res.rule : POLICY_RULE_DEFAULT;
        if (res.verdict == ACL_V_DENY)
            return POLICY_DENY;
        if (embeds) {
            struct acl_result r4 = {ACL_V_ALLOW, -1, false};
            q.ip = &inner;
            acl_check(cfg->acl, &q, &r4);
            if (r4.verdict == ACL_V_DENY && r4.rule >= 0) { /* a rule, not the default */
                *rule = r4.rule;
                return POLICY_DENY;
            }
            inner_by_range = r4.verdict == ACL_V_ALLOW && r4.by_range;
        }
    }
    /* A public listener must not be a way into this host or its link:
     * only a rule naming the range can open it. */
    if (ip && ((!res.by_range && policy_protected(cfg, ip)) ||
               (embeds && !inner_by_range && policy_protected(cfg, &inner)))) {
        *rule = POLICY_RULE_PROTECTED;
        return POLICY_DENY;
    }
    if (!ip && !cfg->acl && cfg->protect_local)
        return POLICY_NEED_IP; /* the protected ranges need the address */
    return POLICY_ALLOW;
}

const char *policy_rule_name(const struct conn *c, int32_t rule)
{
    const struct config *cfg = conn_cfg(c);
    if (rule == POLICY_RULE_PROTECTED)
        return "protected";
    if (rule == POLICY_RULE_DEFAULT)
        return "default";
    if (rule >= 0 && cfg->acl && (uint32_t)rule < cfg->acl->n)
        return cfg->acl->rules[rule].name;
    return NULL;
}

void policy_note(struct conn *c, enum policy_verdict v, int32_t rule)
{
    const struct config *cfg = conn_cfg(c);
    const char *name = policy_rule_name(c, rule);
    if (name)
        c->rule = name;
    if (cfg->acl && (rule >= 0 || rule == POLICY_RULE_DEFAULT)) {
        uint32_t col = rule >= 0 ? (uint32_t)rule : cfg->acl->n;
        if (cfg->rule_hits && col <= cfg->acl->n && c->w->id < cfg->workers)
            stat_add(&cfg->rule_hits[(size_t)c->w->id * cfg->rule_stride + col], 1);
    }
    if (v == POLICY_DENY)
        stat_add(&c->w->stats.denied, 1);
    else
        c->ob_rule = conn_via(c, rule);
}

enum policy_verdict policy_dest(struct conn *c, uint8_t cmd, const char *name,
                                const struct addr *ip, uint16_t port)
{
    int32_t rule;
    enum policy_verdict v = policy_eval(c, cmd, name, ip, port, &rule);
    if (v != POLICY_NEED_IP)
        policy_note(c, v, rule);
    return v;
}

/* ---- per-address limits at accept ------------------------------------------ */

bool policy_admit_client(struct worker *w, const struct addr *peer, bool *tracked)
{
    const struct config *cfg = w->cur->cfg;
    const struct config_limits *lim = &cfg->limits;
    struct limits *l = w->sh->limits;
    *tracked = false;
    if (!l || (!lim->per_ip && !lim->rate))
        return true;
    bool log;
    uint64_t now_us = loop_now(&w->loop) * 1000u;
    enum limits_verdict v =
        limits_ip_admit(l, peer, now_us, lim->per_ip, lim->rate, lim->burst, &log, tracked);
    if (v == LIMITS_OK)
        return true;
    stat_add(v == LIMITS_RATE ? &w->stats.limit_rate : &w->stats.limit_per_ip, 1);
    if (log) {
        char a[ADDR_STRLEN];
        if (v == LIMITS_RATE)
            log_warn("limits: %s opens connections faster than limits.rate (%u/s, burst %u); "
                     "closing them",
                     addr_format_ip(peer, a, sizeof(a)), lim->rate, lim->burst);
        else
            log_warn("limits: %s has limits.per_ip (%u) connections open; closing new ones",
                     addr_format_ip(peer, a, sizeof(a)), lim->per_ip);
    }
    return false;
}

void policy_release_client(struct conn *c)
{
    if (c->ip_tracked && c->w->sh->limits)
        limits_ip_release(c->w->sh->limits, &c->client);
    c->ip_tracked = false;
}

/* ---- users --------------------------------------------------------------------- */

/* The user's quotas (acct/): a slot in their accounting, or a refusal. */
static enum outcome policy_admit_quota(struct conn *c)
{
    struct acct *a = c->w->sh->acct;
    if (c->acct.ctr && !acct_hold_is(a, &c->acct, c->user))
        acct_release(a, &c->acct); /* HTTP keep-alive: another user's request now */
    if (c->acct.ctr && acct_recheck(a, &c->acct) == ACCT_OK)
        return OUT_NONE; /* the same user's next request: only bytes may have run out */
    if (c->acct.ctr) {
        acct_release(a, &c->acct);
        c->why = "quota-bytes";
        return OUT_QUOTA;
    }
    if (!acct_enabled(a))
        return OUT_NONE;
    enum acct_verdict v = acct_admit(a, c->w->id, c->user, &c->acct);
    if (v == ACCT_OK)
        return OUT_NONE;
    c->why = v == ACCT_OVER_BYTES ? "quota-bytes" : "quota-sessions";
    return OUT_QUOTA;
}

enum outcome policy_admit_user(struct conn *c)
{
    const struct config_limits *lim = &conn_cfg(c)->limits;
    struct limits *l = c->w->sh->limits;
    if (!c->user)
        return OUT_NONE;
    if (!c->lu && l && (lim->per_user || lim->bw_user)) {
        bool over;
        uint64_t burst = lim->bw_user / 4 > 65536 ? lim->bw_user / 4 : 65536;
        c->lu = limits_user_admit(l, c->user, lim->per_user, burst, loop_now(&c->w->loop) * 1000u,
                                  &over);
        if (over) {
            stat_add(&c->w->stats.limit_per_user, 1);
            return OUT_LIMIT;
        }
    }
    enum outcome o = policy_admit_quota(c);
    if (o != OUT_NONE)
        policy_release_user(c); /* refused: the per-user slot goes back too */
    return o;
}

void policy_release_user(struct conn *c)
{
    if (c->lu && c->w->sh->limits)
        limits_user_release(c->w->sh->limits, c->lu);
    c->lu = NULL;
    acct_release(c->w->sh->acct, &c->acct);
}

/* ---- bandwidth ------------------------------------------------------------------ */

struct conn_bw {
    struct timer t;
    struct conn *c;
    struct bucket b;
    struct release rel;
};

static void bw_release(struct release *r)
{
    free(container_of(r, struct conn_bw, rel));
}

static void bw_on_timer(struct timer *t)
{
    /* The session goes on from its task, as after a yield (conn.c). */
    struct conn_bw *bw = container_of(t, struct conn_bw, t);
    loop_defer(&bw->c->w->loop, &bw->c->task);
}

static uint64_t bw_burst(uint64_t rate)
{
    return rate / 4 > 65536 ? rate / 4 : 65536;
}

void policy_bw_start(struct conn *c)
{
    const struct config_limits *lim = &conn_cfg(c)->limits;
    if (c->bw || (!lim->bw_conn && !(lim->bw_user && c->lu)))
        return;
    c->bw = calloc(1, sizeof(*c->bw));
    if (!c->bw)
        return; /* unlimited rather than broken */
    c->bw->c = c;
    timer_init(&c->bw->t, bw_on_timer);
    bucket_init(&c->bw->b, bw_burst(lim->bw_conn), loop_now(&c->w->loop) * 1000u);
}

void policy_bw_stop(struct conn *c)
{
    if (!c->bw)
        return;
    loop_timer_stop(&c->w->loop, &c->bw->t);
    /* Its timer may be the one running now: free after the batch. */
    loop_release(&c->w->loop, &c->bw->rel, bw_release);
    c->bw = NULL;
}

/* Tokens for at most want bytes now, from the connection's bucket and the
 * user's; when there are none, *wait_us says how long until there are.
 * Changes nothing. */
static uint64_t bw_avail(struct conn *c, uint64_t want, uint64_t *wait_us)
{
    const struct config_limits *lim = &conn_cfg(c)->limits;
    uint64_t now_us = clock_ms() * 1000u;
    uint64_t allow = want;
    *wait_us = 0;
    if (lim->bw_conn) {
        uint64_t burst = bw_burst(lim->bw_conn);
        uint64_t avail = bucket_avail(&c->bw->b, lim->bw_conn, burst, now_us);
        if (avail < allow)
            allow = avail;
        if (!allow)
            *wait_us = bucket_wait_us(&c->bw->b, lim->bw_conn, want < burst ? want : burst);
    }
    if (allow && lim->bw_user && c->lu)
        allow = limits_user_bw_avail(c->w->sh->limits, c->lu, lim->bw_user, bw_burst(lim->bw_user),
                                     now_us, allow, wait_us);
    return allow;
}

uint32_t policy_bw_allow(struct conn *c, uint32_t want)
{
    if (!c->bw)
        return want;
    if (timer_armed(&c->bw->t))
        return 0; /* waiting for tokens already */
    uint64_t wait_us;
    uint64_t allow = bw_avail(c, want, &wait_us);
    if (!allow) {
        /* Come back when tokens are there: no busy loop, no EAGAIN spin.
         * Bytes wait in the kernel's socket buffer meanwhile, which pushes
         * back on the sender. */
        uint64_t ms = wait_us / 1000 + 1;
        loop_timer_arm(&c->w->loop, &c->bw->t, ms > 1000 ? 1000 : ms);
        stat_add(&c->w->stats.bw_throttled, 1);
        return 0;
    }
    return (uint32_t)allow;
}

uint32_t policy_bw_avail(struct conn *c, uint32_t want)
{
    if (!c->bw)
        return want;
    uint64_t wait_us;
    return (uint32_t)bw_avail(c, want, &wait_us);
}

void policy_bw_spend(struct conn *c, uint32_t n)
{
    if (!c->bw || !n)
        return;
    const struct config_limits *lim = &conn_cfg(c)->limits;
    uint64_t now_us = clock_ms() * 1000u;
    if (lim->bw_conn)
        bucket_spend(&c->bw->b, lim->bw_conn, bw_burst(lim->bw_conn), now_us, n);
    if (lim->bw_user && c->lu)
        limits_user_bw_spend(c->w->sh->limits, c->lu, lim->bw_user, bw_burst(lim->bw_user), now_us,
                             n);
}
