/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics/render.c: the Prometheus text exposition of ferry's counters:
 * the workers' counters summed, the rule hits of the configuration in use,
 * and the process-wide facts a scrape hands in (struct metrics_state).
 *
 * A function of its arguments: no I/O, no locks, no clock, no process
 * sampling (the endpoint does those and passes the results in), so unit
 * tests render fake workers and compare lines. Naming follows the
 * Prometheus conventions: ferry_ prefix, base units (seconds, bytes),
 * _total on counters; label values are escaped.
 */
#include "metrics/render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acct/acct.h"
#include "acl/rules.h"
#include "auth/auth.h"
#include "config/config.h"
#include "core/stats.h"
#include "util/blkcache.h"
#include "version.h"
#include "worker/worker.h"

/* ---- text ---------------------------------------------------------------- */

void mtext_fini(struct mtext *t)
{
    free(t->p);
    memset(t, 0, sizeof(*t));
}

static bool reserve(struct mtext *t, size_t more)
{
    if (t->oom)
        return false;
    if (t->len + more + 1 <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap : 16384;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->oom = true;
        return false;
    }
    t->p = p;
    t->cap = cap;
    return true;
}

void mtext_printf(struct mtext *t, const char *fmt, ...)
{
    for (int tries = 0; tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap > t->len ? t->cap - t->len : 0;
        int n = vsnprintf(t->p ? t->p + t->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            t->len += (size_t)n;
            return;
        }
        if (!reserve(t, (size_t)n))
            return;
    }
}

bool mtext_append(struct mtext *t, const void *p, size_t n)
{
    if (n == 0)
        return !t->oom;
    if (!reserve(t, n))
        return false;
    memcpy(t->p + t->len, p, n);
    t->len += n;
    return true;
}

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xe0) == 0xc0   ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || (n == 2 && s[0] < 0xc2) || (n == 4 && s[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return n;
}

/* A label value: backslash, double quote and newline escaped; a byte that
 * is not UTF-8 (a file name may hold any) becomes '?', since one invalid
 * label would make Prometheus reject the whole scrape. */
static void mt_label_value(struct mtext *t, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_len(p);
        if (*p == '\\' || *p == '"')
            mtext_printf(t, "\\%c", *p);
        else if (*p == '\n')
            mtext_printf(t, "\\n");
        else if (n == 0)
            mtext_printf(t, "?");
        else
            mtext_printf(t, "%.*s", (int)n, (const char *)p);
        p += n ? n : 1;
    }
}

static void family(struct mtext *t, const char *name, const char *type, const char *help)
{
    mtext_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct mtext *t, const char *name, const char *labels, uint64_t v)
{
    if (labels)
        mtext_printf(t, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    else
        mtext_printf(t, "%s %llu\n", name, (unsigned long long)v);
}

static void sample_f(struct mtext *t, const char *name, const char *labels, double v)
{
    if (labels)
        mtext_printf(t, "%s{%s} %.6f\n", name, labels, v);
    else
        mtext_printf(t, "%s %.6f\n", name, v);
}

static void counter(struct mtext *t, const char *name, const char *help, uint64_t v)
{
    family(t, name, "counter", help);
    sample(t, name, NULL, v);
}

static void gauge(struct mtext *t, const char *name, const char *help, uint64_t v)
{
    family(t, name, "gauge", help);
    sample(t, name, NULL, v);
}

/* ---- summing ------------------------------------------------------------- */

/* struct worker_stats holds nothing but stat_t (stats.h), so workers are
 * summed as arrays of counters. */
_Static_assert(sizeof(struct worker_stats) % sizeof(stat_t) == 0, "worker_stats holds stat_t only");
#define STATS_WORDS (sizeof(struct worker_stats) / sizeof(stat_t))

static void stats_sum(const struct metrics_source *src, uint64_t *out)
{
    memset(out, 0, STATS_WORDS * sizeof(*out));
    for (unsigned w = 0; w < src->nworkers; w++) {
        const stat_t *in = (const stat_t *)&src->ws[w].stats;
        for (size_t i = 0; i < STATS_WORDS; i++)
            out[i] += stat_get(&in[i]);
    }
}

uint64_t metrics_stat_sum(const struct metrics_source *src, size_t offset)
{
    uint64_t v = 0;
    for (unsigned w = 0; w < src->nworkers; w++)
        v += stat_get((const stat_t *)((const char *)&src->ws[w].stats + offset));
    return v;
}

/* Where a field (the first element of an array field) sits in the sums. */
#define IDX(f)        (offsetof(struct worker_stats, f) / sizeof(stat_t))
#define FIELD(sum, f) ((sum)[IDX(f)])

/* ---- the process --------------------------------------------------------- */

static void render_process(struct mtext *t, const struct metrics_state *st)
{
    const struct metrics_process *p = &st->proc;
    if (p->have_stat) {
        family(t, "process_cpu_seconds_total", "counter",
               "User and system CPU time spent, seconds.");
        sample_f(t, "process_cpu_seconds_total", NULL, p->cpu_s);
        gauge(t, "process_virtual_memory_bytes", "Virtual memory size, bytes.", p->vsize);
        gauge(t, "process_resident_memory_bytes", "Resident memory size, bytes.", p->rss_bytes);
    }
    if (p->have_fds)
        gauge(t, "process_open_fds", "Open file descriptors.", p->fds);
    if (p->have_max_fds)
        gauge(t, "process_max_fds", "The open files limit.", p->max_fds);
    family(t, "process_start_time_seconds", "gauge", "Start time since the Unix epoch, seconds.");
    sample_f(t, "process_start_time_seconds", NULL, st->start_time);
}

/* Where OpenSSL's and nghttp2's allocations came from (util/blkcache.h). */
static void render_block_cache(struct mtext *t)
{
    struct blkcache_stats b;
    blkcache_stats(&b);
    const char *name = "ferry_block_cache_total";
    family(t, name, "counter",
           "OpenSSL and nghttp2 allocations by source: hit (a thread's block cache), "
           "miss (libc, the cache was empty), large (libc, over 512 bytes); overflow: "
           "frees beyond the cache's bound, given back to libc.");
    sample(t, name, "result=\"hit\"", b.hits);
    sample(t, name, "result=\"miss\"", b.misses);
    sample(t, name, "result=\"large\"", b.large);
    sample(t, name, "result=\"overflow\"", b.overflow);
}

/* ---- the exposition ------------------------------------------------------ */

/* The build, the workers, and what happened at accept. */
static void render_server(struct mtext *t, const struct metrics_source *src,
                          const struct metrics_state *st, const uint64_t *s)
{
    family(t, "ferry_build_info", "gauge", "The running version (value 1).");
    sample(t, "ferry_build_info", "version=\"" FERRY_VERSION "\"", 1);
    gauge(t, "ferry_workers", "Worker threads.", src->nworkers);
    gauge(t, "ferry_draining", "1 while stopping: no longer accepting, sessions finishing.",
          st->draining);

    counter(t, "ferry_connections_accepted_total", "TCP connections accepted.", FIELD(s, accepted));
    counter(t, "ferry_accept_errors_total",
            "accept() failures (descriptor or memory exhaustion pauses accepting).",
            FIELD(s, accept_errors));
    family(t, "ferry_connections_rejected_total", "counter",
           "Connections closed at accept, by the limit that refused them.");
    sample(t, "ferry_connections_rejected_total", "reason=\"max_connections\"",
           FIELD(s, rejected_limit));
    sample(t, "ferry_connections_rejected_total", "reason=\"per_ip\"", FIELD(s, limit_per_ip));
    sample(t, "ferry_connections_rejected_total", "reason=\"rate\"", FIELD(s, limit_rate));
    sample(t, "ferry_connections_rejected_total", "reason=\"proxy_protocol\"",
           FIELD(s, proxy_rejected));
    counter(t, "ferry_user_limit_rejections_total",
            "Sessions refused after authentication: limits.per_user.", FIELD(s, limit_per_user));
}

static void render_sessions(struct mtext *t, const uint64_t *s)
{
    char l[96];
    family(t, "ferry_sessions_active", "gauge",
           "Sessions open now, by protocol (none: no byte received yet).");
    for (int p = 0; p < SP_COUNT; p++) {
        snprintf(l, sizeof(l), "protocol=\"%s\"", stats_proto_name(p));
        sample(t, "ferry_sessions_active", l, s[IDX(active_proto) + (size_t)p]);
    }
    family(t, "ferry_sessions_total", "counter",
           "Sessions ended, by protocol and outcome (abandoned: the client left before an "
           "answer).");
    for (int p = 0; p < SP_COUNT; p++) {
        for (int o = OC_UNSET; o < OC_COUNT; o++) {
            /* Before a protocol is known a session can only be abandoned,
             * refused at accept, fail to start, or be garbage. */
            if (p == SP_NONE && o != OC_UNSET && o != OC_LIMITED && o != OC_ERROR &&
                o != OC_BAD_REQUEST)
                continue;
            uint64_t v = s[IDX(sessions) + (size_t)p * OC_COUNT + (size_t)o];
            snprintf(l, sizeof(l), "protocol=\"%s\",outcome=\"%s\"", stats_proto_name(p),
                     stats_outcome_name(o));
            sample(t, "ferry_sessions_total", l, v);
        }
    }
    family(t, "ferry_handshake_duration_seconds", "histogram",
           "From accept (or the start of an HTTP request) to the success reply, destination "
           "connect included, seconds.");
    for (int p = SP_SOCKS5; p < SP_COUNT; p++) {
        uint64_t cum = 0;
        for (int b = 0; b < STATS_HS_BUCKETS; b++) {
            cum += s[IDX(hs_buckets) + (size_t)p * STATS_HS_BUCKETS + (size_t)b];
            if (b < STATS_HS_BUCKETS - 1)
                snprintf(l, sizeof(l), "protocol=\"%s\",le=\"%g\"", stats_proto_name(p),
                         stats_hs_bounds_us[b] / 1e6);
            else
                snprintf(l, sizeof(l), "protocol=\"%s\",le=\"+Inf\"", stats_proto_name(p));
            sample(t, "ferry_handshake_duration_seconds_bucket", l, cum);
        }
        snprintf(l, sizeof(l), "protocol=\"%s\"", stats_proto_name(p));
        sample_f(t, "ferry_handshake_duration_seconds_sum", l,
                 (double)s[IDX(hs_sum_us) + (size_t)p] / 1e6);
        sample(t, "ferry_handshake_duration_seconds_count", l, cum);
    }
}

static void render_rules(struct mtext *t, const struct metrics_source *src,
                         const struct config *cfg)
{
    if (!cfg || !cfg->acl || !cfg->rule_hits)
        return;
    const struct acl *acl = cfg->acl;
    unsigned nw = src->nworkers < cfg->workers ? src->nworkers : cfg->workers;
    family(t, "ferry_rule_hits_total", "counter",
           "Requests decided by each access rule of the configuration in use (rule: "
           "FILE:LINE, or default); counts start again at a reload.");
    for (uint32_t r = 0; r <= acl->n; r++) {
        uint64_t v = 0;
        for (unsigned w = 0; w < nw; w++)
            v += stat_get(&cfg->rule_hits[(size_t)w * cfg->rule_stride + r]);
        uint8_t action = r < acl->n ? acl->rules[r].action : acl->default_action;
        mtext_printf(t, "ferry_rule_hits_total{rule=\"");
        mt_label_value(t, r < acl->n ? acl->rules[r].name : "default");
        mtext_printf(t, "\",action=\"%s\"} %llu\n", action == ACL_DENY ? "deny" : "allow",
                     (unsigned long long)v);
    }
}

/* Outbound ob's per-worker column col, summed (config.h's ob_stats). */
static uint64_t ob_sum(const struct config *cfg, unsigned nw, uint32_t ob, unsigned col)
{
    uint64_t v = 0;
    for (unsigned w = 0; w < nw; w++)
        v += stat_get(&cfg->ob_stats[(size_t)w * cfg->ob_stride + (size_t)ob * OB_STATS + col]);
    return v;
}

/* A pool is up while one of its members is. */
static bool ob_up(const struct config *cfg, uint32_t i)
{
    const struct config_outbound *o = &cfg->outbounds[i];
    if (o->kind != OUTBOUND_KIND_POOL)
        return atomic_load_explicit(&cfg->ob_health[i].up, memory_order_relaxed) != 0;
    for (unsigned k = 0; k < o->nmembers; k++)
        if (atomic_load_explicit(&cfg->ob_health[o->members[k]].up, memory_order_relaxed))
            return true;
    return false;
}

/* One sample per outbound ("reject" carries nothing and is left out). */
static void ob_sample(struct mtext *t, const char *name, const char *name_value, uint64_t v,
                      double f, bool is_f)
{
    mtext_printf(t, "%s{outbound=\"", name);
    mt_label_value(t, name_value);
    if (is_f)
        mtext_printf(t, "\"} %.6f\n", f);
    else
        mtext_printf(t, "\"} %llu\n", (unsigned long long)v);
}

/* HTTPS parents spoken HTTP/2 (relay/outbound_h2.c): one connection per
 * worker carrying every session as a stream. */
static void render_outbounds_h2(struct mtext *t, const struct config *cfg, unsigned nw)
{
    static const struct {
        const char *name, *type, *help;
        unsigned col;
    } fam[] = {
        {"ferry_outbound_h2_connections", "gauge",
         "HTTP/2 connections to the parent up now (one per worker at most).", OB_STAT_H2_CONNS},
        {"ferry_outbound_h2_connections_total", "counter",
         "HTTP/2 connections to the parent that came up (reconnects included).", OB_STAT_H2_OPENED},
        {"ferry_outbound_h2_streams_total", "counter",
         "CONNECT streams opened on the HTTP/2 connections to the parent.", OB_STAT_H2_STREAMS},
        {"ferry_outbound_h2_reconnects_total", "counter",
         "HTTP/2 connections to the parent opened again after one was lost.",
         OB_STAT_H2_RECONNECTS},
    };
    bool any = false;
    for (uint32_t i = 0; i < cfg->noutbounds; i++)
        any |= cfg->outbounds[i].kind == OUTBOUND_KIND_HTTPS &&
               cfg->outbounds[i].mux != OUTBOUND_MUX_HTTP1;
    for (size_t f = 0; any && f < sizeof(fam) / sizeof(fam[0]); f++) {
        family(t, fam[f].name, fam[f].type, fam[f].help);
        for (uint32_t i = 0; i < cfg->noutbounds; i++) {
            const struct config_outbound *o = &cfg->outbounds[i];
            if (o->kind == OUTBOUND_KIND_HTTPS && o->mux != OUTBOUND_MUX_HTTP1)
                ob_sample(t, fam[f].name, o->name, ob_sum(cfg, nw, i, fam[f].col), 0, false);
        }
    }
}

/* Each configured outbound (and direct): health, what it carries, how
 * often dials through it failed. Counts start again at a reload. */
static void render_outbounds(struct mtext *t, const struct metrics_source *src,
                             const struct config *cfg)
{
    if (!cfg || !cfg->ob_health || !cfg->ob_stats)
        return;
    unsigned nw = src->nworkers < cfg->workers ? src->nworkers : cfg->workers;
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"ferry_outbound_up", "gauge",
         "1 while the outbound is up (its last connect or health check passed; a pool: one "
         "member is), 0 while it is down."},
        {"ferry_outbound_latency_seconds", "gauge",
         "How long the last successful connect or health check through the outbound took "
         "(parents and pool members; present once measured), seconds."},
        {"ferry_outbound_failures_total", "counter",
         "Dials through the outbound that failed, and its failed health checks."},
        {"ferry_outbound_sessions_total", "counter",
         "Dials through the outbound that reached their destination."},
        {"ferry_outbound_active", "gauge", "Sessions the outbound carries now."},
    };
    bool measured = false; /* a family without samples is left out */
    for (uint32_t i = 0; i < cfg->noutbounds; i++)
        measured |= cfg->outbounds[i].kind != OUTBOUND_KIND_POOL &&
                    atomic_load_explicit(&cfg->ob_health[i].latency_us, memory_order_relaxed);
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        if (f == 1 && !measured)
            continue;
        family(t, fam[f].name, fam[f].type, fam[f].help);
        for (uint32_t i = 0; i < cfg->noutbounds; i++) {
            const struct config_outbound *o = &cfg->outbounds[i];
            const struct outbound_health *h = &cfg->ob_health[i];
            if (o->kind == OUTBOUND_KIND_REJECT)
                continue;
            uint64_t lat = atomic_load_explicit(&h->latency_us, memory_order_relaxed);
            switch (f) {
            case 0:
                ob_sample(t, fam[f].name, o->name, ob_up(cfg, i), 0, false);
                break;
            case 1:
                if (lat && o->kind != OUTBOUND_KIND_POOL)
                    ob_sample(t, fam[f].name, o->name, 0, (double)lat / 1e6, true);
                break;
            case 2:
                ob_sample(t, fam[f].name, o->name,
                          ob_sum(cfg, nw, i, OB_STAT_FAILURES) +
                              atomic_load_explicit(&h->failures, memory_order_relaxed),
                          0, false);
                break;
            default:
                ob_sample(t, fam[f].name, o->name,
                          ob_sum(cfg, nw, i, f == 3 ? OB_STAT_SESSIONS : OB_STAT_ACTIVE), 0, false);
                break;
            }
        }
    }
    render_outbounds_h2(t, cfg, nw);
}

/* The relay, and what refused destinations or protocols. */
static void render_relay(struct mtext *t, const uint64_t *s)
{
    family(t, "ferry_relay_bytes_total", "counter",
           "Bytes relayed between client and destination, HTTP heads included (up: client to "
           "destination; down: back).");
    sample(t, "ferry_relay_bytes_total", "direction=\"up\"", FIELD(s, bytes_up));
    sample(t, "ferry_relay_bytes_total", "direction=\"down\"", FIELD(s, bytes_down));
    counter(t, "ferry_relay_spliced_bytes_total",
            "The share of relayed bytes moved by splice(), bytes.", FIELD(s, splice_bytes));
    counter(t, "ferry_bandwidth_waits_total", "Times a session paused for a bandwidth limit.",
            FIELD(s, bw_throttled));
    counter(t, "ferry_denied_total", "Destinations refused by rules or protected ranges.",
            FIELD(s, denied));
    counter(t, "ferry_unknown_protocol_total",
            "Connections whose first byte was no protocol the listener speaks.",
            FIELD(s, unknown_protocol));
    gauge(t, "ferry_h2_connections", "HTTP/2 connections open now.", FIELD(s, h2_conns));
    counter(t, "ferry_h2_connections_total", "HTTP/2 connections opened (tunnels included).",
            FIELD(s, h2_conns_opened));
    counter(t, "ferry_h2_streams_total", "HTTP/2 request streams opened.", FIELD(s, h2_streams));
    counter(t, "ferry_h2_udp_streams_total", "CONNECT-UDP streams that began relaying.",
            FIELD(s, h2_udp_streams));
    counter(t, "ferry_h2_udp_aborted_total",
            "CONNECT-UDP streams reset for a capsule too long or malformed.",
            FIELD(s, h2_udp_aborted));
    counter(t, "ferry_h2_udp_capsules_skipped_total",
            "Capsules of a type CONNECT-UDP does not use, skipped.",
            FIELD(s, h2_udp_capsules_skipped));
    family(t, "ferry_h2_goaway_total", "counter",
           "GOAWAY frames sent: ENHANCE_YOUR_CALM to a client over an abuse budget (by "
           "budget), or NO_ERROR at a drain or a reload (shutdown).");
    static const char *const calm[H2_CALM_COUNT] = {
        [H2_CALM_HEADER_LIST] = "reason=\"header_list\"",
        [H2_CALM_RAPID_RESET] = "reason=\"rapid_reset\"",
        [H2_CALM_PING] = "reason=\"ping_flood\"",
        [H2_CALM_SETTINGS] = "reason=\"settings_flood\"",
        [H2_CALM_EMPTY_DATA] = "reason=\"empty_data\"",
    };
    for (int i = 0; i < H2_CALM_COUNT; i++)
        sample(t, "ferry_h2_goaway_total", calm[i], s[IDX(h2_goaway_calm) + (size_t)i]);
    sample(t, "ferry_h2_goaway_total", "reason=\"shutdown\"", FIELD(s, h2_goaway_shutdown));
}

static void render_auth(struct mtext *t, const uint64_t *s)
{
    family(t, "ferry_auth_total", "counter",
           "Authentication verdicts (throttled: refused unverified after repeated failures; "
           "busy: the verifier queue was full; unavailable: refused because the helper or PAM "
           "gave no verdict).");
    sample(t, "ferry_auth_total", "result=\"ok\"", FIELD(s, auth.ok));
    sample(t, "ferry_auth_total", "result=\"denied\"", FIELD(s, auth.denied));
    sample(t, "ferry_auth_total", "result=\"throttled\"", FIELD(s, auth.throttled));
    sample(t, "ferry_auth_total", "result=\"busy\"", FIELD(s, auth.busy));
    sample(t, "ferry_auth_total", "result=\"unavailable\"", FIELD(s, auth.unavailable));
    counter(t, "ferry_auth_cache_hits_total",
            "Successful verdicts answered from the credential cache.", FIELD(s, auth.cache_hits));
    counter(t, "ferry_auth_cache_shared_hits_total",
            "Cache hits found in the table all workers share: a success first verified on "
            "another worker.",
            FIELD(s, auth.cache_shared_hits));
    counter(t, "ferry_auth_blocks_total", "Client addresses blocked by the failure throttle.",
            FIELD(s, auth.blocks));
    counter(t, "ferry_auth_shared_verifications_total",
            "Attempts that waited for the verification of identical credentials already "
            "on the verifier pool instead of queueing their own.",
            FIELD(s, auth.shared));
}

/* The external helpers' pool (auth.helper): zeros without one. */
static void render_auth_helpers(struct mtext *t, const struct metrics_source *src)
{
    const struct auth *a = src->sh ? atomic_load(&src->sh->auth) : NULL;
    const struct helper_pool *hp = a ? &a->helpers : NULL;
    gauge(t, "ferry_auth_helper_children", "Authentication helper processes running now.",
          hp ? atomic_load(&hp->running) : 0);
    counter(t, "ferry_auth_helper_requests_total", "Verifications sent to authentication helpers.",
            hp ? atomic_load(&hp->requests) : 0);
    counter(t, "ferry_auth_helper_restarts_total",
            "Authentication helpers started again after one was given up on.",
            hp ? atomic_load(&hp->restarts) : 0);
    family(t, "ferry_auth_helper_failures_total", "counter",
           "Authentication helpers given up on, by reason (crash: exited or closed its end; "
           "timeout: no reply within auth.helper_timeout, killed; protocol: not a reply, "
           "killed; spawn: could not be started).");
    for (int i = 0; i < HELPER_FAIL_COUNT; i++) {
        char label[40];
        snprintf(label, sizeof(label), "reason=\"%s\"", helper_failure_name(i));
        sample(t, "ferry_auth_helper_failures_total", label,
               hp ? atomic_load(&hp->failures[i]) : 0);
    }
}

static void render_dns_http(struct mtext *t, const uint64_t *s)
{
    counter(t, "ferry_dns_queries_total", "Destination names looked up.", FIELD(s, dns_queries));
    counter(t, "ferry_dns_cache_hits_total", "Lookups answered from the cache.",
            FIELD(s, dns_cache_hits));
    counter(t, "ferry_dns_failures_total", "Lookups that found no usable address.",
            FIELD(s, dns_failures));
    counter(t, "ferry_dns_unanswered_total",
            "Lookups no DNS server answered (every try timed out or was refused).",
            FIELD(s, dns_unanswered));

    counter(t, "ferry_http_error_responses_total", "Error responses of the HTTP proxy.",
            FIELD(s, http_errors));
    counter(t, "ferry_http_pool_reuses_total",
            "HTTP requests sent on a pooled upstream connection.", FIELD(s, http_pool_hits));
}

static void render_udp(struct mtext *t, const struct metrics_source *src, const uint64_t *s)
{
    char l[96];
    counter(t, "ferry_udp_associations_total", "UDP associations opened.", FIELD(s, udp_assocs));
    uint64_t assocs = 0;
    for (size_t i = 0; i < sizeof(src->sh->udp_assocs) / sizeof(src->sh->udp_assocs[0]); i++)
        assocs += atomic_load_explicit(&src->sh->udp_assocs[i], memory_order_relaxed);
    gauge(t, "ferry_udp_associations_active", "UDP associations open now.", assocs);
    counter(t, "ferry_udp_associations_rejected_total",
            "UDP associations refused: udp.associations reached.", FIELD(s, udp_rejected));
    family(t, "ferry_udp_datagrams_total", "counter",
           "Datagrams relayed (up: client to destination; down: back).");
    sample(t, "ferry_udp_datagrams_total", "direction=\"up\"", FIELD(s, udp_in));
    sample(t, "ferry_udp_datagrams_total", "direction=\"down\"", FIELD(s, udp_out));
    family(t, "ferry_udp_bytes_total", "counter", "Datagram payload relayed, bytes.");
    sample(t, "ferry_udp_bytes_total", "direction=\"up\"", FIELD(s, udp_bytes_in));
    sample(t, "ferry_udp_bytes_total", "direction=\"down\"", FIELD(s, udp_bytes_out));
    counter(t, "ferry_udp_tunnel_flows_total",
            "Destinations opened as CONNECT-UDP streams through a tunnel outbound.",
            FIELD(s, udp_tun_opened));
    uint64_t opened = FIELD(s, udp_tun_opened), closed = FIELD(s, udp_tun_closed);
    gauge(t, "ferry_udp_tunnel_flows_active", "Tunnel flows (CONNECT-UDP streams) open now.",
          opened > closed ? opened - closed : 0);
    family(t, "ferry_udp_dropped_total", "counter", "Datagrams dropped, by reason.");
    static const struct {
        const char *reason;
        size_t off;
    } drops[] = {
        {"denied", offsetof(struct worker_stats, udp_drop_denied)},
        {"source", offsetof(struct worker_stats, udp_drop_source)},
        {"fragment", offsetof(struct worker_stats, udp_drop_frag)},
        {"malformed", offsetof(struct worker_stats, udp_drop_malformed)},
        {"size", offsetof(struct worker_stats, udp_drop_size)},
        {"destinations", offsetof(struct worker_stats, udp_drop_dest_limit)},
        {"unknown_source", offsetof(struct worker_stats, udp_drop_unknown)},
        {"queue", offsetof(struct worker_stats, udp_drop_queue)},
        {"dns", offsetof(struct worker_stats, udp_drop_dns)},
        {"send", offsetof(struct worker_stats, udp_drop_send)},
        {"bandwidth", offsetof(struct worker_stats, udp_drop_bandwidth)},
        {"parent", offsetof(struct worker_stats, udp_drop_parent)},
        {"context", offsetof(struct worker_stats, udp_drop_context)},
        {"tunnel", offsetof(struct worker_stats, udp_drop_tunnel)},
    };
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
        snprintf(l, sizeof(l), "reason=\"%s\"", drops[i].reason);
        sample(t, "ferry_udp_dropped_total", l, s[drops[i].off / sizeof(stat_t)]);
    }
}

/* What the main thread and the log report. */
static void render_state(struct mtext *t, const struct metrics_state *st)
{
    counter(t, "ferry_log_records_dropped_total",
            "Log records dropped: the log queue was full, or the syslog target did not take them.",
            st->log_dropped);
    family(t, "ferry_config_reloads_total", "counter", "Configuration reloads (SIGHUP).");
    sample(t, "ferry_config_reloads_total", "result=\"ok\"", st->reloads_ok);
    sample(t, "ferry_config_reloads_total", "result=\"failed\"", st->reloads_failed);
    family(t, "ferry_config_last_reload_success_timestamp_seconds", "gauge",
           "When the configuration in use was loaded, seconds since the Unix epoch.");
    sample_f(t, "ferry_config_last_reload_success_timestamp_seconds", NULL, st->last_reload);
}

static void render_workers(struct mtext *t, const struct metrics_source *src)
{
    char l[96];
    family(t, "ferry_worker_sessions_active", "gauge", "Sessions open now, by worker.");
    for (unsigned w = 0; w < src->nworkers; w++) {
        snprintf(l, sizeof(l), "worker=\"%u\"", w);
        sample(t, "ferry_worker_sessions_active", l, stat_get(&src->ws[w].stats.active));
    }
    family(t, "ferry_worker_loop_lag_seconds", "gauge",
           "How late the worker's latest timer ran over the last second (a busy loop is late), "
           "seconds.");
    for (unsigned w = 0; w < src->nworkers; w++) {
        snprintf(l, sizeof(l), "worker=\"%u\"", w);
        sample_f(t, "ferry_worker_loop_lag_seconds", l,
                 (double)stat_get(&src->ws[w].stats.loop_lag_ms) / 1e3);
    }
}

/* Edge mode (config/edge.h): labelled by configured names only (the edge
 * section and its routes' hosts as written), never by what clients send. */
static void edge_labels(struct mtext *t, const char *edge, const char *key, const char *value)
{
    mtext_printf(t, "{edge=\"");
    mt_label_value(t, edge);
    mtext_printf(t, "\",%s=\"", key);
    mt_label_value(t, value);
    mtext_printf(t, "\"");
}

/* Edges with health checks: each backend's state, and the status
 * answered at the edge. */
static void render_edge_checks(struct mtext *t, const struct config *cfg)
{
    bool any = false;
    for (uint32_t i = 0; i < cfg->nedges; i++)
        any |= cfg->edges[i].health_ms != 0;
    if (!any)
        return;
    family(t, "ferry_edge_backend_up", "gauge",
           "1 when the last health check of an edge backend passed, by edge, route and backend.");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        for (uint32_t j = 0; e->health_ms && j < e->nroutes; j++) {
            for (uint32_t k = 0; k < e->routes[j].nbackends; k++) {
                const struct edge_backend *b = &e->routes[j].backends[k];
                char a[ADDR_STRLEN];
                if (b->name)
                    continue; /* a name resolved per session: not checked */
                mtext_printf(t, "ferry_edge_backend_up");
                edge_labels(t, e->name, "route", e->routes[j].host);
                mtext_printf(t, ",backend=\"%s\"} %d\n", addr_format(&b->addr, a, sizeof(a)),
                             !atomic_load(&b->check_down));
            }
        }
    }
    family(t, "ferry_edge_status_total", "counter",
           "Minecraft status answered at the edge, by edge and source (cache, offline: "
           "offline_motd, legacy: a legacy ping's canned reply).");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        for (unsigned k = 0; e->health_ms && k < EDGE_STATUS_COUNT; k++) {
            mtext_printf(t, "ferry_edge_status_total");
            edge_labels(t, e->name, "result", edge_status_name((enum edge_status)k));
            mtext_printf(t, "} %llu\n", (unsigned long long)atomic_load(&e->live->status[k]));
        }
    }
}

static void render_edges(struct mtext *t, const struct config *cfg)
{
    if (!cfg || !cfg->nedges)
        return;
    family(t, "ferry_edge_sessions_total", "counter",
           "Edge connections routed, by edge, route and result (ok: the backend answered; "
           "backend-unreachable: the dial failed).");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        for (uint32_t j = 0; j < e->nroutes; j++) {
            for (unsigned r = 0; r < EDGE_RES_COUNT; r++) {
                mtext_printf(t, "ferry_edge_sessions_total");
                edge_labels(t, e->name, "route", e->routes[j].host);
                mtext_printf(t, ",result=\"%s\"} %llu\n", edge_result_name((enum edge_result)r),
                             (unsigned long long)atomic_load(&e->routes[j].live->results[r]));
            }
        }
    }
    family(t, "ferry_edge_rejects_total", "counter",
           "Edge connections closed before a backend was dialled, by edge and reason.");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        for (unsigned r = 0; r < EDGE_REJ_COUNT; r++) {
            mtext_printf(t, "ferry_edge_rejects_total");
            edge_labels(t, e->name, "reason", edge_reject_name((enum edge_reject)r));
            mtext_printf(t, "} %llu\n", (unsigned long long)atomic_load(&e->live->rejects[r]));
        }
    }
    bool keys = false;
    for (uint32_t i = 0; i < cfg->nedges; i++)
        keys |= cfg->edges[i].ring != NULL;
    if (keys)
        family(t, "ferry_edge_signed_total", "counter",
               "Signed host names judged on routes that ask for one, by edge and result.");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        if (!e->ring)
            continue;
        for (unsigned r = 0; r < SIGNKEY_RESULT_COUNT; r++) {
            mtext_printf(t, "ferry_edge_signed_total");
            edge_labels(t, e->name, "result", signkey_result_name((enum signkey_result)r));
            mtext_printf(t, "} %llu\n",
                         (unsigned long long)atomic_load(&e->live->signed_results[r]));
        }
    }
    render_edge_checks(t, cfg);
    family(t, "ferry_edge_bans_total", "counter",
           "Sources an edge banned after ban_after failures within ban_window.");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        mtext_printf(t, "ferry_edge_bans_total{edge=\"");
        mt_label_value(t, cfg->edges[i].name);
        mtext_printf(t, "\"} %llu\n", (unsigned long long)atomic_load(&cfg->edges[i].live->bans));
    }
    family(t, "ferry_edge_halfopen", "gauge",
           "Edge connections accepted whose first message is not complete yet.");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        mtext_printf(t, "ferry_edge_halfopen{edge=\"");
        mt_label_value(t, cfg->edges[i].name);
        mtext_printf(t, "\"} %u\n", (unsigned)atomic_load(&cfg->edges[i].live->halfopen));
    }
}

/* ---- accounting (acct/) ------------------------------------------------ */

/* name{user="U"(,direction="D")} v */
static void user_sample(struct mtext *t, const char *name, const struct acct_user_total *u,
                        const char *dir, uint64_t v)
{
    mtext_printf(t, "%s{user=\"", name);
    mt_label_value(t, u->name);
    if (dir)
        mtext_printf(t, "\",direction=\"%s", dir);
    mtext_printf(t, "\"} %llu\n", (unsigned long long)v);
}

/* Per user: only the userlist's users (at most quota.max_users) and
 * ":other", a name no userlist can hold: what the wire says never makes
 * a series. */
static void render_users(struct mtext *t, const struct acct_user_total *u, size_t n)
{
    static const char *const fam[][3] = {
        {"ferry_user_bytes_total", "counter", "Payload relayed for the user (TCP and UDP), bytes."},
        {"ferry_user_sessions_total", "counter", "Sessions the user opened."},
        {"ferry_user_sessions_active", "gauge", "Sessions the user has open now."},
        {"ferry_user_udp_datagrams_total", "counter", "UDP datagrams relayed for the user."},
        {"ferry_user_quota_refused_total", "counter",
         "Sessions refused because the user reached a quota."},
        {"ferry_user_quota_bytes", "gauge", "The user's byte quota per period ([quota])."},
        {"ferry_user_quota_used_bytes", "gauge", "Bytes the user used in the running period."},
    };
    bool quotas = false; /* a family without samples is left out */
    for (size_t i = 0; i < n; i++)
        quotas |= u[i].quota_bytes != 0;
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        if (f >= 5 && !quotas)
            break;
        family(t, fam[f][0], fam[f][1], fam[f][2]);
        for (size_t i = 0; i < n; i++) {
            switch (f) {
            case 0:
            case 3:
                user_sample(t, fam[f][0], &u[i], "up", f ? u[i].dgram_up : u[i].up);
                user_sample(t, fam[f][0], &u[i], "down", f ? u[i].dgram_down : u[i].down);
                break;
            case 1:
            case 2:
            case 4:
                user_sample(t, fam[f][0], &u[i], NULL,
                            f == 1   ? u[i].sessions
                            : f == 2 ? u[i].active
                                     : u[i].refused);
                break;
            default:
                if (u[i].quota_bytes)
                    user_sample(t, fam[f][0], &u[i], NULL, f == 5 ? u[i].quota_bytes : u[i].used);
                break;
            }
        }
    }
}

/* Listen address i as a label: "[tls://]ADDR:PORT", and "#i" after it
 * when another listen line reads the same (two ports 0, a proxy listener
 * and an edge's on the same address): labels must not repeat. */
static const char *listener_label(const struct config *cfg, size_t i, char *buf, size_t len)
{
    char a[ADDR_STRLEN], b[ADDR_STRLEN];
    addr_format(&cfg->listen[i].addr, a, sizeof(a));
    bool twin = false;
    for (size_t j = 0; j < cfg->nlisten && !twin; j++)
        twin = j != i && cfg->listen[j].tls == cfg->listen[i].tls &&
               !strcmp(addr_format(&cfg->listen[j].addr, b, sizeof(b)), a);
    snprintf(buf, len, "%s%s", cfg->listen[i].tls ? "tls://" : "", a);
    if (twin) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "#%zu", i);
    }
    return buf;
}

/* Per listen address and per outbound: bounded by the configuration. */
static void render_listeners(struct mtext *t, const struct metrics_source *src,
                             const struct config *cfg)
{
    static const char *const fam[] = {"ferry_listener_bytes_total",
                                      "ferry_listener_sessions_total"};
    family(t, fam[0], "counter",
           "Payload relayed for sessions accepted on the listen address, bytes.");
    for (int d = 0; d < 3; d++) {
        if (d == 2)
            family(t, fam[1], "counter",
                   "Sessions accepted on the listen address (HTTP/2 streams included).");
        for (size_t i = 0; i < cfg->nlisten; i++) {
            struct acct_user_total l;
            char a[ADDR_STRLEN + 16];
            acct_listener_sum(src->sh->acct, (unsigned)i, &l);
            mtext_printf(t, "%s{listener=\"%s", fam[d / 2], listener_label(cfg, i, a, sizeof(a)));
            if (d < 2)
                mtext_printf(t, "\",direction=\"%s", d ? "down" : "up");
            mtext_printf(t, "\"} %llu\n",
                         (unsigned long long)(d == 0   ? l.up
                                              : d == 1 ? l.down
                                                       : l.sessions));
        }
    }
    if (!cfg->ob_stats)
        return;
    unsigned nw = src->nworkers < cfg->workers ? src->nworkers : cfg->workers;
    family(t, "ferry_outbound_bytes_total", "counter",
           "Payload relayed through the outbound, bytes; counts start again at a reload.");
    for (uint32_t i = 0; i < cfg->noutbounds; i++) {
        if (cfg->outbounds[i].kind == OUTBOUND_KIND_REJECT)
            continue;
        for (int d = 0; d < 2; d++) {
            mtext_printf(t, "ferry_outbound_bytes_total{outbound=\"");
            mt_label_value(t, cfg->outbounds[i].name);
            mtext_printf(
                t, "\",direction=\"%s\"} %llu\n", d ? "down" : "up",
                (unsigned long long)ob_sum(cfg, nw, i, d ? OB_STAT_BYTES_DOWN : OB_STAT_BYTES_UP));
        }
    }
}

static void render_acct(struct mtext *t, const struct metrics_source *src, const struct config *cfg)
{
    const struct acct *a = src->sh ? src->sh->acct : NULL;
    if (!cfg || !acct_enabled(a))
        return;
    size_t cap = acct_snapshot_cap(a);
    struct acct_user_total *u = malloc(cap * sizeof(*u));
    if (!u) {
        t->oom = true;
        return;
    }
    render_users(t, u, acct_snapshot(a, u, cap));
    free(u);
    render_listeners(t, src, cfg);
}

void metrics_render(struct mtext *t, const struct metrics_source *src, const struct config *cfg,
                    const struct metrics_state *st)
{
    uint64_t s[STATS_WORDS];
    stats_sum(src, s);
    render_server(t, src, st, s);
    render_sessions(t, s);
    render_relay(t, s);
    render_auth(t, s);
    render_auth_helpers(t, src);
    render_dns_http(t, s);
    render_udp(t, src, s);
    render_rules(t, src, cfg);
    render_outbounds(t, src, cfg);
    render_edges(t, cfg);
    render_acct(t, src, cfg);
    render_state(t, st);
    render_workers(t, src);
    render_block_cache(t);
    render_process(t, st);
}
