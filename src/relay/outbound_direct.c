/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_direct.c: the direct outbound (outbound.h): resolve a name with
 * the worker's resolver, keep the addresses the rules allow (so a name
 * cannot bring in an address a range rule denies: no DNS rebinding), and
 * connect to them in turn from this host, each remaining address given an
 * even share of what is left of connect_timeout. The connected socket is
 * the session's c->up. It owns the session's timer only in states RESOLVE
 * and CONNECT, answers nothing to the client itself (conn_connected,
 * outbound_fail: a pool may try its next member; conn_fail for a denial)
 * and must not learn any front protocol.
 *
 * Where bytes leave: the addresses of a name are ordered (or filtered) by
 * ip_preference before the rules judge them, and each connect binds to the
 * session's source (its outbound's, else its listener's) when it has one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "relay/errmap.h"
#include "relay/outbound.h"
#include "relay/session.h"

/* Addresses to try while connecting, with the rule that allowed each. */
struct conn_addrs {
    uint8_t n;
    struct addr a[DNS_MAX_ADDRS];
    int32_t rule[DNS_MAX_ADDRS]; /* POLICY_RULE_NONE when no rule was asked */
};

#define SOURCE_WARN_MS 10000 /* a source that cannot be used is logged at most this often */

/* The session's outbound, when the configuration has outbounds. */
static const struct config_outbound *direct_outbound(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return cfg->outbounds && c->ob < cfg->noutbounds ? &cfg->outbounds[c->ob] : NULL;
}

/* Where the session's connects leave from: its outbound's source when it
 * has one, else its listener's (both may be unset: the kernel's choice). */
static const struct outbound_source *direct_source(const struct conn *c)
{
    const struct config_outbound *ob = direct_outbound(c);
    if (ob && (ob->source.addr.family || ob->source.device[0]))
        return &ob->source;
    const struct config *cfg = conn_cfg(c);
    return c->listen_index < cfg->nlisten ? &cfg->listen[c->listen_index].source : NULL;
}

/* A source that cannot be bound (an address not on this host, a device
 * without the privilege): said once per SOURCE_WARN_MS per worker thread. */
static void source_failed(struct conn *c, const struct outbound_source *src, const char *step,
                          int err)
{
    static _Thread_local uint64_t warned_ms;
    uint64_t now = loop_now(&c->w->loop);
    if (!warned_ms || now - warned_ms >= SOURCE_WARN_MS) {
        char ip[ADDR_STRLEN];
        warned_ms = now;
        log_error("conn %llu: cannot leave from %s%s%s%s: %s: %s%s", (unsigned long long)c->id,
                  src->addr.family ? "source " : "",
                  src->addr.family ? addr_format_ip(&src->addr, ip, sizeof(ip)) : "",
                  src->addr.family && src->device[0] ? ", " : "", src->device[0] ? "device " : "",
                  step, strerror(-err),
                  err == -EPERM ? " (SO_BINDTODEVICE may need CAP_NET_RAW)" : "");
    }
    c->err = err;
    conn_fail(c, OUT_FAILED, "source-failed");
}

/* Try the next address of the answer, giving each remaining address an even
 * share of what is left of the connect timeout. */
static void direct_next(struct conn *c, int last_err)
{
    struct worker *w = c->w;
    conn_close_fd(&c->up);
    uint64_t now = loop_now(&w->loop);
    const struct outbound_source *src = direct_source(c);
    const struct addr *from = src && src->addr.family ? &src->addr : NULL;
    const char *device = src && src->device[0] ? src->device : NULL;
    while (c->ans && c->next_addr < c->ans->n && now < c->deadline) {
        const char *rule = policy_rule_name(c, c->ans->rule[c->next_addr]);
        if (rule)
            c->rule = rule;
        const struct addr *a = &c->ans->a[c->next_addr++];
        c->target = *a;
        if (from && from->family != a->family) {
            char f[ADDR_STRLEN], t[ADDR_STRLEN];
            log_debug("conn %llu: skipping %s: the source %s is of the other family",
                      (unsigned long long)c->id, addr_format(a, t, sizeof(t)),
                      addr_format_ip(from, f, sizeof(f)));
            last_err = -EAFNOSUPPORT;
            continue;
        }
        const char *step = NULL;
        int fd = sock_connect_from(a, from, device, &step);
        if (fd < 0 && step && strcmp(step, "connect") != 0 && strcmp(step, "socket") != 0) {
            source_failed(c, src, step, fd);
            return;
        }
        if (fd < 0) {
            last_err = fd;
            continue;
        }
        int rc = outbound_watch_connect(c, fd, now, (uint64_t)(c->ans->n - c->next_addr));
        if (rc) {
            last_err = rc;
            continue;
        }
        return;
    }
    if (now >= c->deadline)
        last_err = -ETIMEDOUT;
    c->err = last_err;
    if (last_err == -EAFNOSUPPORT && from) {
        outbound_fail(c, OUT_NET_UNREACHABLE, "source-family-mismatch");
        return;
    }
    outbound_fail(c, errmap_connect(last_err),
                  last_err == -ETIMEDOUT ? "connect-timeout" : "connect-failed");
}

static void direct_check(struct conn *c, uint32_t events)
{
    /* EPOLLOUT alone means the connect succeeded; only an error or hangup
     * needs SO_ERROR to say why. */
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    int err = (events & (EPOLLERR | EPOLLHUP)) ? sock_error(c->up.fd) : 0;
    if (err == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
        sock_set_nodelay(c->up.fd);
        free(c->ans);
        c->ans = NULL;
        conn_connected(c);
        return;
    }
    if (err == 0)
        err = -ECONNREFUSED; /* hung up without an error: treat as refused */
    direct_next(c, err);
}

/* The session's ip_preference: its outbound's when set, else the
 * configuration's. */
static uint8_t direct_ip_preference(const struct conn *c)
{
    const struct config_outbound *ob = direct_outbound(c);
    return ob && ob->ip_preference_set ? ob->ip_preference : conn_cfg(c)->ip_preference;
}

/* Order (ipv4-first, ipv6-first) or filter (ipv4, ipv6) the addresses of
 * in into out by pref, keeping the resolver's order within a family. */
static void order_by_preference(const struct dns_answer *in, uint8_t pref, struct dns_answer *out)
{
    int fam[2] = {0, 0}; /* families to take, in turn; 0: none */
    switch (pref) {
    case IP_PREF_IPV4:
        fam[0] = AF_INET;
        break;
    case IP_PREF_IPV6:
        fam[0] = AF_INET6;
        break;
    case IP_PREF_IPV4_FIRST:
        fam[0] = AF_INET, fam[1] = AF_INET6;
        break;
    case IP_PREF_IPV6_FIRST:
        fam[0] = AF_INET6, fam[1] = AF_INET;
        break;
    default:
        *out = *in;
        return;
    }
    out->n = 0;
    for (int k = 0; k < 2 && fam[k]; k++) {
        for (uint8_t i = 0; i < in->n; i++) {
            struct addr a = in->a[i];
            addr_unmap(&a);
            if (a.family == fam[k])
                out->a[out->n++] = a;
        }
    }
}

/* ans ordered or filtered by the session's ip_preference into out; false
 * (the session failed) when no address is left. */
static bool direct_prefer(struct conn *c, const struct dns_answer *ans, struct dns_answer *out)
{
    uint8_t pref = direct_ip_preference(c);
    order_by_preference(ans, pref, out);
    if (out->n)
        return true;
    c->target = ans->a[0];
    addr_unmap(&c->target);
    conn_fail(c, OUT_HOST_UNREACHABLE,
              pref == IP_PREF_IPV4 ? "no-ipv4-address" : "no-ipv6-address");
    return false;
}

/* Connect to the addresses of ans (already judged), rule the one that
 * allowed them all (POLICY_RULE_NONE: none asked). */
static void direct_connect(struct conn *c, const struct dns_answer *all, int32_t rule)
{
    struct dns_answer ans;
    if (!direct_prefer(c, all, &ans))
        return;
    struct conn_addrs *t = c->ans = malloc(sizeof(*c->ans));
    if (!t) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    t->n = 0;
    for (uint8_t i = 0; i < ans.n; i++) {
        t->a[t->n] = ans.a[i];
        addr_unmap(&t->a[t->n]);
        t->rule[t->n++] = rule;
    }
    c->next_addr = 0;
    direct_next(c, -EHOSTUNREACH);
}

static void direct_begin(struct conn *c, const struct dns_answer *all)
{
    struct dns_answer ordered;
    const struct dns_answer *ans = &ordered;
    if (!direct_prefer(c, all, &ordered))
        return;
    struct conn_addrs *t = c->ans = malloc(sizeof(*c->ans));
    if (!t) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    /* Rules on address ranges apply to what a name resolved to (no DNS
     * rebinding into a denied range): keep the addresses allowed, each with
     * the rule that allowed it, for the log of the one connected to. */
    t->n = 0;
    int32_t first_rule = POLICY_RULE_NONE;
    for (uint8_t i = 0; i < ans->n; i++) {
        struct addr a = ans->a[i];
        addr_unmap(&a);
        int32_t rule = POLICY_RULE_NONE;
        enum policy_verdict v = policy_eval(c, 0, c->dst_name, &a, c->dst_port, &rule);
        if (i == 0)
            first_rule = rule;
        if (v == POLICY_ALLOW) {
            t->a[t->n] = a;
            t->rule[t->n++] = rule;
        }
    }
    if (!t->n) {
        policy_note(c, POLICY_DENY, first_rule);
        c->target = ans->a[0];
        addr_unmap(&c->target);
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    /* The rule that allows the address may send it another way than the
     * one the name went (a range rule naming a parent, or a direct
     * outbound with its own source): hand the address over. */
    uint16_t went = c->ob_rule;
    uint16_t via = c->edge ? went : conn_via(c, t->rule[0]); /* an edge backend: from here */
    policy_note(c, POLICY_ALLOW, t->rule[0]);                /* one hit per request */
    if (via != went) {
        struct addr a = t->a[0];
        free(c->ans);
        c->ans = NULL;
        c->ob_rule = via;
        conn_route(c, via, NULL, &a, c->dst_port);
        return;
    }
    c->next_addr = 0;
    direct_next(c, -EHOSTUNREACH);
}

static void direct_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    c->dns = NULL;
    if (status != DNS_OK) {
        stat_add(&c->w->stats.dns_failures, 1);
        log_debug("conn %llu: resolve %s: %s", (unsigned long long)c->id, c->dst_name,
                  dns_status_str(status));
        outbound_fail(c, errmap_dns(status), "resolve-failed");
        return;
    }
    direct_begin(c, ans);
}

static void direct_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    struct worker *w = c->w;
    struct dns_answer ans = {0};
    if (!name) {
        /* An address judged by the rules already (conn_dial, or the
         * direct_begin() that handed it here). */
        ans.a[0] = *ip;
        ans.a[0].port = port;
        ans.n = 1;
        direct_connect(c, &ans, POLICY_RULE_NONE);
        return;
    }
    /* Clients often send an IP literal as a "domain". */
    if (addr_parse_ip(name, port, &ans.a[0]) == 0) {
        ans.n = 1;
        direct_begin(c, &ans);
        return;
    }
    int status;
    if (resolver_lookup_now(&w->dns, c->dst_name, port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        direct_on_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, port, direct_on_dns, c);
    if (!c->dns) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

static void direct_timeout(struct conn *c)
{
    if (c->state == CONN_ST_RESOLVE) /* the resolver may still be trying: say which wait ran out */
        outbound_fail(c, OUT_TIMEOUT, "resolve-timeout");
    else
        direct_next(c, -ETIMEDOUT);
}

static int direct_bnd(const struct conn *c, struct addr *out)
{
    return sock_local_addr(c->up.fd, out);
}

static void direct_close(struct conn *c)
{
    resolver_cancel(c->dns);
    c->dns = NULL;
    free(c->ans);
    c->ans = NULL;
}

const struct outbound_ops outbound_direct = {
    .name = "direct",
    .splice = true,
    .dial = direct_dial,
    .event = direct_check,
    .timeout = direct_timeout,
    .bnd = direct_bnd,
    .close = direct_close,
};
