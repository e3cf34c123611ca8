/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics.c: the Prometheus endpoint: a small HTTP/1.x server on its own
 * thread (GET or HEAD of /metrics and /healthz, one request per
 * connection), and the renderer that turns the workers' counters into the
 * text exposition format.
 *
 * Naming follows the Prometheus conventions: ferry_ prefix, base units
 * (seconds, bytes), _total on counters; label values are escaped.
 */
#include "metrics/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acl/rules.h"
#include "config/config.h"
#include "core/loop.h"
#include "core/sock.h"
#include "core/stats.h"
#include "log/log.h"
#include "version.h"
#include "worker/worker.h"

/* Scrapers at once. When all are taken, a new connection takes the place
 * of the oldest one that has not sent a whole request yet (idle
 * connections never lock health checks out); only when every one is being
 * answered is it turned away. */
#define CLIENT_MAX          32
#define CLIENT_HEAD_MAX     4096  /* request head */
#define CLIENT_HEAD_TIMEOUT 5000  /* ms from accept to a whole request head */
#define CLIENT_TIMEOUT      10000 /* ms for a whole exchange */

/* ---- text ---------------------------------------------------------------- */

void mtext_fini(struct mtext *t)
{
    free(t->p);
    memset(t, 0, sizeof(*t));
}

static bool mtext_reserve(struct mtext *t, size_t more)
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

static void PRINTF_LIKE(2, 3) mt_printf(struct mtext *t, const char *fmt, ...)
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
        if (!mtext_reserve(t, (size_t)n))
            return;
    }
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
            mt_printf(t, "\\%c", *p);
        else if (*p == '\n')
            mt_printf(t, "\\n");
        else if (n == 0)
            mt_printf(t, "?");
        else
            mt_printf(t, "%.*s", (int)n, (const char *)p);
        p += n ? n : 1;
    }
}

static void family(struct mtext *t, const char *name, const char *type, const char *help)
{
    mt_printf(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct mtext *t, const char *name, const char *labels, uint64_t v)
{
    if (labels)
        mt_printf(t, "%s{%s} %llu\n", name, labels, (unsigned long long)v);
    else
        mt_printf(t, "%s %llu\n", name, (unsigned long long)v);
}

static void sample_f(struct mtext *t, const char *name, const char *labels, double v)
{
    if (labels)
        mt_printf(t, "%s{%s} %.6f\n", name, labels, v);
    else
        mt_printf(t, "%s %.6f\n", name, v);
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

/* Where a field (the first element of an array field) sits in the sums. */
#define IDX(f)        (offsetof(struct worker_stats, f) / sizeof(stat_t))
#define FIELD(sum, f) ((sum)[IDX(f)])

/* ---- process ------------------------------------------------------------- */

static void render_process(struct mtext *t, const struct metrics_state *st)
{
    long tick = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* Fields after the command name, which may hold spaces: state is
         * field 3; utime and stime are 14 and 15, vsize 23, rss 24. */
        char *p = strrchr(buf, ')');
        unsigned long long utime = 0, stime = 0, vsize = 0;
        long long rss = 0;
        if (p &&
            sscanf(p + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                   "%*d %*d %*u %llu %lld",
                   &utime, &stime, &vsize, &rss) == 4 &&
            tick > 0) {
            family(t, "process_cpu_seconds_total", "counter",
                   "User and system CPU time spent, seconds.");
            sample_f(t, "process_cpu_seconds_total", NULL, (double)(utime + stime) / (double)tick);
            gauge(t, "process_virtual_memory_bytes", "Virtual memory size, bytes.", vsize);
            gauge(t, "process_resident_memory_bytes", "Resident memory size, bytes.",
                  (uint64_t)(rss > 0 ? rss : 0) * (uint64_t)(page > 0 ? page : 4096));
        }
    }
    uint64_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            fds += e->d_name[0] != '.';
        closedir(d);
        gauge(t, "process_open_fds", "Open file descriptors.", fds > 0 ? fds - 1 : 0);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        gauge(t, "process_max_fds", "The open files limit.", (uint64_t)rl.rlim_cur);
    family(t, "process_start_time_seconds", "gauge", "Start time since the Unix epoch, seconds.");
    sample_f(t, "process_start_time_seconds", NULL, st->start_time);
}

/* ---- the exposition ------------------------------------------------------ */

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
        mt_printf(t, "ferry_rule_hits_total{rule=\"");
        mt_label_value(t, r < acl->n ? acl->rules[r].name : "default");
        mt_printf(t, "\",action=\"%s\"} %llu\n", action == ACL_DENY ? "deny" : "allow",
                  (unsigned long long)v);
    }
}

void metrics_render(struct mtext *t, const struct metrics_source *src, const struct config *cfg,
                    const struct metrics_state *st)
{
    uint64_t s[STATS_WORDS];
    stats_sum(src, s);
    char l[96];

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

    render_sessions(t, s);

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

    family(t, "ferry_auth_total", "counter",
           "Authentication verdicts (throttled: refused unverified after repeated failures; "
           "busy: the verifier queue was full).");
    sample(t, "ferry_auth_total", "result=\"ok\"", FIELD(s, auth.ok));
    sample(t, "ferry_auth_total", "result=\"denied\"", FIELD(s, auth.denied));
    sample(t, "ferry_auth_total", "result=\"throttled\"", FIELD(s, auth.throttled));
    sample(t, "ferry_auth_total", "result=\"busy\"", FIELD(s, auth.busy));
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

    counter(t, "ferry_dns_queries_total", "Destination names looked up.", FIELD(s, dns_queries));
    counter(t, "ferry_dns_cache_hits_total", "Lookups answered from the cache.",
            FIELD(s, dns_cache_hits));
    counter(t, "ferry_dns_failures_total", "Lookups that found no usable address.",
            FIELD(s, dns_failures));

    counter(t, "ferry_http_error_responses_total", "Error responses of the HTTP proxy.",
            FIELD(s, http_errors));
    counter(t, "ferry_http_pool_reuses_total",
            "HTTP requests sent on a pooled upstream connection.", FIELD(s, http_pool_hits));

    counter(t, "ferry_udp_associations_total", "UDP associations opened.", FIELD(s, udp_assocs));
    uint64_t assocs = 0;
    for (size_t i = 0; i < CONFIG_MAX_LISTEN; i++)
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
    };
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
        snprintf(l, sizeof(l), "reason=\"%s\"", drops[i].reason);
        sample(t, "ferry_udp_dropped_total", l, s[drops[i].off / sizeof(stat_t)]);
    }

    render_rules(t, src, cfg);

    counter(t, "ferry_log_records_dropped_total",
            "Log records dropped because the log queue was full.", log_dropped_total());
    family(t, "ferry_config_reloads_total", "counter", "Configuration reloads (SIGHUP).");
    sample(t, "ferry_config_reloads_total", "result=\"ok\"", st->reloads_ok);
    sample(t, "ferry_config_reloads_total", "result=\"failed\"", st->reloads_failed);
    family(t, "ferry_config_last_reload_success_timestamp_seconds", "gauge",
           "When the configuration in use was loaded, seconds since the Unix epoch.");
    sample_f(t, "ferry_config_last_reload_success_timestamp_seconds", NULL, st->last_reload);

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
    render_process(t, st);
}

/* ---- the endpoint -------------------------------------------------------- */

struct mclient {
    struct list link;
    struct metrics *m;
    struct io io;
    struct timer timer;
    struct release rel; /* freed after the batch that closed it */
    char head[CLIENT_HEAD_MAX];
    size_t hlen;
    struct mtext out;
    size_t sent;
    bool closed;
};

struct metrics {
    pthread_t thread;
    struct loop loop;
    struct io lis, ctl;
    struct metrics_source src;
    pthread_mutex_t mu; /* guards cfg and st */
    struct config *cfg;
    struct metrics_state st;
    struct list clients;
    unsigned nclients;
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void client_release(struct release *r)
{
    struct mclient *c = container_of(r, struct mclient, rel);
    mtext_fini(&c->out);
    free(c);
}

static void client_close(struct mclient *c)
{
    if (c->closed)
        return;
    c->closed = true;
    struct metrics *m = c->m;
    loop_timer_stop(&m->loop, &c->timer);
    if (c->io.fd >= 0) {
        int fd = c->io.fd;
        loop_io_del(&m->loop, &c->io);
        c->io.fd = -1;
        close(fd);
    }
    list_del(&c->link);
    m->nclients--;
    loop_release(&m->loop, &c->rel, client_release); /* after this batch of events */
}

static void client_respond(struct mclient *c, int status, const char *reason, const char *ctype,
                           const char *extra, const struct mtext *body, bool head_only)
{
    size_t blen = body ? body->len : 0;
    mt_printf(&c->out,
              "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
              "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
              status, reason, ctype, blen, extra ? extra : "");
    if (body && !head_only && mtext_reserve(&c->out, blen)) {
        memcpy(c->out.p + c->out.len, body->p, blen);
        c->out.len += blen;
    }
}

static void client_text(struct mclient *c, int status, const char *reason, const char *text,
                        const char *extra, bool head_only)
{
    struct mtext b = {0};
    mt_printf(&b, "%s\n", text);
    client_respond(c, status, reason, "text/plain; charset=utf-8", extra, &b, head_only);
    mtext_fini(&b);
}

/* The request head is complete: decide the response. */
static void client_handle(struct mclient *c)
{
    struct metrics *m = c->m;
    char *eol = memchr(c->head, '\n', c->hlen);
    size_t llen = eol ? (size_t)(eol - c->head) : 0;
    if (llen && c->head[llen - 1] == '\r')
        llen--;
    char line[CLIENT_HEAD_MAX];
    memcpy(line, c->head, llen);
    line[llen] = '\0';
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || strchr(sp2 + 1, ' ')) {
        client_text(c, 400, "Bad Request", "bad request", NULL, false);
        return;
    }
    *sp1 = *sp2 = '\0';
    const char *method = line, *target = sp1 + 1;
    bool head = strcmp(method, "HEAD") == 0;
    if (!head && strcmp(method, "GET") != 0) {
        client_text(c, 405, "Method Not Allowed", "only GET and HEAD", "Allow: GET, HEAD\r\n",
                    false);
        return;
    }
    size_t plen = strcspn(target, "?");
    if (plen == 8 && strncmp(target, "/metrics", 8) == 0) {
        struct mtext body = {0};
        pthread_mutex_lock(&m->mu);
        struct config *cfg = config_ref(m->cfg);
        struct metrics_state st = m->st;
        pthread_mutex_unlock(&m->mu);
        metrics_render(&body, &m->src, cfg, &st);
        config_unref(cfg);
        if (body.oom)
            client_text(c, 500, "Internal Server Error", "out of memory", NULL, head);
        else
            client_respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", NULL, &body,
                           head);
        mtext_fini(&body);
        return;
    }
    if (plen == 8 && strncmp(target, "/healthz", 8) == 0) {
        pthread_mutex_lock(&m->mu);
        bool draining = m->st.draining;
        pthread_mutex_unlock(&m->mu);
        if (draining)
            client_text(c, 503, "Service Unavailable", "draining", NULL, head);
        else
            client_text(c, 200, "OK", "ok", NULL, head);
        return;
    }
    client_text(c, 404, "Not Found", "not found (try /metrics or /healthz)", NULL, head);
}

static void client_write(struct mclient *c)
{
    while (c->sent < c->out.len) {
        ssize_t n =
            send(c->io.fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR)
                continue;
            client_close(c);
            return;
        }
        c->sent += (size_t)n;
    }
    client_close(c);
}

static void client_read(struct mclient *c)
{
    for (;;) {
        if (c->hlen == sizeof(c->head)) {
            client_text(c, 431, "Request Header Fields Too Large", "request head too large", NULL,
                        false);
            break;
        }
        ssize_t n = recv(c->io.fd, c->head + c->hlen, sizeof(c->head) - c->hlen, 0);
        if (n == 0) {
            client_close(c); /* gone before a whole request */
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR)
                continue;
            client_close(c);
            return;
        }
        size_t from = c->hlen > 3 ? c->hlen - 3 : 0;
        c->hlen += (size_t)n;
        bool done = false;
        for (size_t i = from; i < c->hlen && !done; i++)
            done = (i + 4 <= c->hlen && memcmp(c->head + i, "\r\n\r\n", 4) == 0) ||
                   (i + 1 < c->hlen && memcmp(c->head + i, "\n\n", 2) == 0);
        if (done) {
            client_handle(c);
            loop_timer_arm(&c->m->loop, &c->timer, CLIENT_TIMEOUT); /* to send the answer */
            break;
        }
    }
    if (c->out.oom) {
        client_close(c);
        return;
    }
    (void)loop_io_mod(&c->m->loop, &c->io, EPOLLOUT);
    client_write(c);
}

static void on_client(struct io *io, uint32_t events)
{
    struct mclient *c = container_of(io, struct mclient, io);
    if (c->out.len)
        client_write(c);
    else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        client_read(c);
}

static void on_client_timeout(struct timer *t)
{
    client_close(container_of(t, struct mclient, timer));
}

/* Make room for one more client: close the oldest that has not sent a
 * whole request (clients are listed in accept order). false if every
 * client is being answered. */
static bool make_room(struct metrics *m)
{
    for (struct list *l = m->clients.next; l != &m->clients; l = l->next) {
        struct mclient *c = container_of(l, struct mclient, link);
        if (!c->out.len) {
            client_close(c);
            return true;
        }
    }
    return false;
}

static void on_listen(struct io *io, uint32_t events)
{
    (void)events;
    struct metrics *m = container_of(io, struct metrics, lis);
    for (int i = 0; i < 16; i++) {
        int fd = sock_accept(io->fd, NULL);
        if (fd < 0)
            return;
        bool room = m->nclients < CLIENT_MAX || make_room(m);
        struct mclient *c = room ? calloc(1, sizeof(*c)) : NULL;
        if (!c) {
            close(fd);
            continue;
        }
        c->m = m;
        io_init(&c->io, on_client);
        timer_init(&c->timer, on_client_timeout);
        list_add_tail(&m->clients, &c->link);
        m->nclients++;
        if (loop_io_add(&m->loop, &c->io, fd, EPOLLIN) < 0) {
            close(fd);
            c->io.fd = -1;
            client_close(c);
            continue;
        }
        loop_timer_arm(&m->loop, &c->timer, CLIENT_HEAD_TIMEOUT);
    }
}

static void on_ctl(struct io *io, uint32_t events)
{
    (void)events;
    struct metrics *m = container_of(io, struct metrics, ctl);
    uint64_t v;
    ssize_t n = read(io->fd, &v, sizeof(v));
    (void)n;
    loop_stop(&m->loop);
}

static void *metrics_main(void *arg)
{
    struct metrics *m = arg;
    int rc = loop_run(&m->loop);
    if (rc)
        log_error("metrics: event loop failed: %s", strerror(-rc));
    return NULL;
}

int metrics_start(struct metrics **out, int listen_fd, const struct metrics_source *src,
                  struct config *cfg)
{
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m) {
        close(listen_fd);
        return -ENOMEM;
    }
    m->src = *src;
    list_init(&m->clients);
    pthread_mutex_init(&m->mu, NULL);
    m->cfg = config_ref(cfg);
    m->st.start_time = m->st.last_reload = wall_now();
    io_init(&m->lis, on_listen);
    io_init(&m->ctl, on_ctl);
    int rc = loop_init(&m->loop);
    if (rc)
        goto fail;
    rc = loop_io_add(&m->loop, &m->lis, listen_fd, EPOLLIN);
    if (rc)
        goto fail_loop;
    listen_fd = -1;
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) {
        rc = -errno;
        goto fail_loop;
    }
    rc = loop_io_add(&m->loop, &m->ctl, efd, EPOLLIN);
    if (rc) {
        close(efd);
        goto fail_loop;
    }
    rc = -pthread_create(&m->thread, NULL, metrics_main, m);
    if (rc)
        goto fail_loop;
    *out = m;
    return 0;

fail_loop:
    if (m->ctl.fd >= 0)
        close(m->ctl.fd);
    if (m->lis.fd >= 0)
        close(m->lis.fd);
    loop_fini(&m->loop);
fail:
    if (listen_fd >= 0)
        close(listen_fd);
    config_unref(m->cfg);
    pthread_mutex_destroy(&m->mu);
    free(m);
    return rc;
}

void metrics_reloaded(struct metrics *m, struct config *cfg)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (cfg) {
        struct config *old = m->cfg;
        m->cfg = config_ref(cfg);
        m->st.reloads_ok++;
        m->st.last_reload = wall_now();
        pthread_mutex_unlock(&m->mu);
        config_unref(old);
        return;
    }
    m->st.reloads_failed++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_set_draining(struct metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->st.draining = true;
    pthread_mutex_unlock(&m->mu);
}

void metrics_stop(struct metrics *m)
{
    if (!m)
        return;
    uint64_t one = 1;
    ssize_t n = write(m->ctl.fd, &one, sizeof(one));
    (void)n;
    pthread_join(m->thread, NULL);
    while (!list_empty(&m->clients))
        client_close(container_of(m->clients.next, struct mclient, link));
    loop_flush_tasks(&m->loop);
    int lfd = m->lis.fd, cfd = m->ctl.fd;
    loop_io_del(&m->loop, &m->lis);
    loop_io_del(&m->loop, &m->ctl);
    close(lfd);
    close(cfd);
    loop_fini(&m->loop);
    config_unref(m->cfg);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
