/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api.c: the JSON API under /api/ (docs/admin.md). Reads are a look at
 * the workers' sessions (snap.h) or relaxed reads of counters and of the
 * configuration in use; writes ask the workers to end sessions, or the
 * main thread to reload (SIGHUP, exactly as an operator's kill -HUP, then
 * the reload counters say how it went). Every answer is bounded: session
 * rows by limit (at most SNAP_ROWS_MAX), users by limit and offset.
 *
 * What it must not do: touch a session or the main thread's state.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/rules.h"
#include "admin/internal.h"
#include "auth/userlist.h"
#include "config/config.h"
#include "config/edge.h"
#include "config/outbound.h"
#include "core/loop.h"
#include "log/recent.h"
#include "util/parse.h"

#define USERS_MAX      1000 /* users one answer lists, at most */
#define RELOAD_WAIT_MS 10000

static void json_begin(struct admin_rq *r)
{
    r->rp->status = 200;
    r->rp->ctype = "application/json";
}

/* A number parameter of the query, within lo..hi; def when absent. -1
 * when present and not a number in range. */
static long num_param(const char *query, const char *name, long def, long lo, long hi)
{
    char v[32];
    uint64_t n;
    if (admin_query_param(query, name, v, sizeof(v)) < 0)
        return def;
    if (parse_u64(v, (uint64_t)lo, (uint64_t)hi, &n) < 0)
        return -1;
    return (long)n;
}

/* "sessions":[...], "total", "returned", "workers" of a look. */
static void sessions_json(struct mtext *t, const struct snap_query *q, unsigned answered,
                          size_t limit)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < q->nparts; i++)
        if (atomic_load_explicit(&q->parts[i].done, memory_order_acquire))
            total += q->parts[i].sessions;
    struct snap_row *rows = NULL;
    size_t n = admin_rows(q, limit, &rows);
    mtext_printf(t,
                 "\"total\":%llu,\"returned\":%zu,\"limit\":%zu,\"truncated\":%s,"
                 "\"workers\":%u,\"workers_answered\":%u,\"sessions\":[",
                 (unsigned long long)total, n, limit, total > n ? "true" : "false", q->nparts,
                 answered);
    for (size_t i = 0; i < n; i++) {
        if (i)
            mtext_printf(t, ",");
        admin_session_json(t, &rows[i]);
    }
    mtext_printf(t, "]");
    free(rows);
}

static void api_sessions(struct admin_rq *r)
{
    long limit = num_param(r->rq->query, "limit", 100, 0, SNAP_ROWS_MAX);
    char user[256] = "";
    if (limit < 0) {
        admin_error(r, 400, "limit: expected 0..1000");
        return;
    }
    if (admin_query_param(r->rq->query, "user", user, sizeof(user)) == 0 && !user[0]) {
        admin_error(r, 400, "user: empty");
        return;
    }
    unsigned answered;
    struct snap_query *q = admin_look(r->a, r->cfg, (size_t)limit, user, false, false, &answered);
    if (!q) {
        admin_error(r, 500, "out of memory");
        return;
    }
    json_begin(r);
    mtext_printf(&r->rp->body, "{");
    sessions_json(&r->rp->body, q, answered, (size_t)limit);
    mtext_printf(&r->rp->body, "}\n");
    snap_put(q);
}

/* Live sums of each user (sessions, bytes of open sessions) and the
 * accounting's totals when a room registered them. */
static void user_json(struct admin_rq *r, const struct user *u, const uint64_t *live)
{
    struct mtext *t = &r->rp->body;
    mtext_printf(t, "{\"name\":");
    admin_json_str(t, u->name);
    mtext_printf(t, ",\"sessions\":%llu,\"bytes_up\":%llu,\"bytes_down\":%llu,\"totals\":",
                 (unsigned long long)live[0], (unsigned long long)live[1],
                 (unsigned long long)live[2]);
    admin_totals_json(r, u->name);
    mtext_printf(t, "}");
}

/* The live figures of each user, summed over the answered workers, into
 * sums (3 per user of q->ul); false when out of memory. */
static uint64_t *user_sums(const struct snap_query *q)
{
    uint64_t *sums = calloc(q->ul->n * 3 + 1, sizeof(*sums));
    for (unsigned i = 0; sums && i < q->nparts; i++) {
        const struct snap_part *p = &q->parts[i];
        if (!atomic_load_explicit(&p->done, memory_order_acquire) || !p->users)
            continue;
        for (size_t k = 0; k < q->ul->n * 3; k++)
            sums[k] += p->users[k];
    }
    return sums;
}

static void api_users(struct admin_rq *r)
{
    long limit = num_param(r->rq->query, "limit", USERS_MAX, 0, USERS_MAX);
    long offset = num_param(r->rq->query, "offset", 0, 0, 100000000);
    if (limit < 0 || offset < 0) {
        admin_error(r, 400, "limit: expected 0..1000, offset: a number");
        return;
    }
    json_begin(r);
    struct mtext *t = &r->rp->body;
    if (!r->cfg->auth.users) {
        mtext_printf(t, "{\"total\":0,\"offset\":0,\"users\":[],\"authentication\":false}\n");
        return;
    }
    unsigned answered;
    struct snap_query *q = admin_look(r->a, r->cfg, 0, NULL, true, false, &answered);
    uint64_t *sums = q ? user_sums(q) : NULL;
    if (!sums) {
        snap_put(q);
        admin_error(r, 500, "out of memory");
        return;
    }
    const struct userlist *ul = q->ul;
    mtext_printf(t,
                 "{\"total\":%zu,\"offset\":%ld,\"limit\":%ld,\"workers\":%u,"
                 "\"workers_answered\":%u,\"users\":[",
                 ul->n, offset, limit, q->nparts, answered);
    for (size_t i = (size_t)offset, k = 0; i < ul->n && k < (size_t)limit; i++, k++) {
        if (k)
            mtext_printf(t, ",");
        user_json(r, &ul->users[i], &sums[i * 3]);
    }
    mtext_printf(t, "]}\n");
    free(sums);
    snap_put(q);
}

static const char *ob_kind(uint8_t kind)
{
    switch (kind) {
    case OUTBOUND_KIND_DIRECT:
        return "direct";
    case OUTBOUND_KIND_REJECT:
        return "reject";
    case OUTBOUND_KIND_POOL:
        return "pool";
    default:
        return "parent";
    }
}

static uint64_t ob_sum(const struct admin_rq *r, uint32_t i, unsigned col)
{
    const struct config *cfg = r->cfg;
    uint64_t v = 0;
    for (unsigned w = 0; cfg->ob_stats && w < r->a->nw && w < cfg->workers; w++)
        v += stat_get(&cfg->ob_stats[(size_t)w * cfg->ob_stride + (size_t)i * OB_STATS + col]);
    return v;
}

static void api_outbounds(struct admin_rq *r)
{
    const struct config *cfg = r->cfg;
    struct mtext *t = &r->rp->body;
    json_begin(r);
    mtext_printf(t, "{\"default\":");
    admin_json_str(t, cfg->default_outbound < cfg->noutbounds
                          ? cfg->outbounds[cfg->default_outbound].name
                          : "direct");
    mtext_printf(t, ",\"outbounds\":[");
    for (uint32_t i = 0; i < cfg->noutbounds; i++) {
        const struct config_outbound *o = &cfg->outbounds[i];
        const struct outbound_health *h = cfg->ob_health ? &cfg->ob_health[i] : NULL;
        bool up = !h || atomic_load_explicit(&h->up, memory_order_relaxed);
        if (o->kind == OUTBOUND_KIND_POOL && cfg->ob_health) {
            up = false;
            for (unsigned k = 0; k < o->nmembers; k++)
                up = up ||
                     atomic_load_explicit(&cfg->ob_health[o->members[k]].up, memory_order_relaxed);
        }
        mtext_printf(t, "%s{\"name\":", i ? "," : "");
        admin_json_str(t, o->name);
        mtext_printf(t, ",\"kind\":\"%s\",\"origin\":", ob_kind(o->kind));
        admin_json_str(t, o->origin);
        if (o->host[0]) {
            mtext_printf(t, ",\"parent\":");
            char hp[300];
            snprintf(hp, sizeof(hp), "%s:%u", o->host, o->port);
            admin_json_str(t, hp);
        }
        mtext_printf(
            t,
            ",\"state\":\"%s\",\"latency_us\":%llu,\"active\":%llu,\"sessions\":%llu,"
            "\"failures\":%llu,\"h2_connections\":%llu}",
            up ? "up" : "down",
            h ? (unsigned long long)atomic_load_explicit(&h->latency_us, memory_order_relaxed)
              : 0ull,
            (unsigned long long)ob_sum(r, i, OB_STAT_ACTIVE),
            (unsigned long long)ob_sum(r, i, OB_STAT_SESSIONS),
            (unsigned long long)ob_sum(r, i, OB_STAT_FAILURES),
            (unsigned long long)ob_sum(r, i, OB_STAT_H2_CONNS));
    }
    mtext_printf(t, "]}\n");
}

/* GET /api/routes: edge mode's sections, routes and backends, with their
 * health and counters (configured names only, as in /metrics). */
static void api_routes(struct admin_rq *r)
{
    const struct config *cfg = r->cfg;
    struct mtext *t = &r->rp->body;
    json_begin(r);
    mtext_printf(t, "{\"edges\":[");
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        mtext_printf(t, "%s{\"name\":", i ? "," : "");
        admin_json_str(t, e->name);
        mtext_printf(t, ",\"sniff\":\"%s\",\"halfopen\":%u,\"bans\":%llu,\"rejects\":{",
                     edge_sniff_name(e->sniff), (unsigned)atomic_load(&e->live->halfopen),
                     (unsigned long long)atomic_load(&e->live->bans));
        for (unsigned k = 0; k < EDGE_REJ_COUNT; k++)
            mtext_printf(t, "%s\"%s\":%llu", k ? "," : "", edge_reject_name((enum edge_reject)k),
                         (unsigned long long)atomic_load(&e->live->rejects[k]));
        mtext_printf(t, "},\"routes\":[");
        for (uint32_t j = 0; j < e->nroutes; j++) {
            const struct edge_route *rt = &e->routes[j];
            mtext_printf(t, "%s{\"host\":", j ? "," : "");
            admin_json_str(t, rt->host);
            mtext_printf(t, ",\"signed\":\"%s\",\"ok\":%llu,\"unreachable\":%llu,\"backends\":[",
                         edge_signed_name(edge_route_signed(e, rt)),
                         (unsigned long long)atomic_load(&rt->live->results[EDGE_RES_OK]),
                         (unsigned long long)atomic_load(&rt->live->results[EDGE_RES_UNREACHABLE]));
            for (uint32_t k = 0; k < rt->nbackends; k++) {
                const struct edge_backend *b = &rt->backends[k];
                char a[300]; /* ADDR:PORT, or a template NAME:PORT */
                mtext_printf(t, "%s{\"addr\":\"%s\",\"state\":\"%s\",\"active\":%u}", k ? "," : "",
                             edge_backend_format(b, a, sizeof(a)),
                             !e->health_ms || b->name      ? "unchecked"
                             : atomic_load(&b->check_down) ? "down"
                                                           : "up",
                             (unsigned)atomic_load(&b->active));
            }
            mtext_printf(t, "]}");
        }
        mtext_printf(t, "]}");
    }
    mtext_printf(t, "]}\n");
}

/* POST /api/sessions/ID/close and /api/users/NAME/kick. */
static void api_end(struct admin_rq *r, enum snap_op op, uint64_t id, const char *user)
{
    struct snap_query *q = snap_new(r->a->nw);
    if (!q) {
        admin_error(r, 500, "out of memory");
        return;
    }
    q->op = op;
    q->id = id;
    snprintf(q->user, sizeof(q->user), "%s", user ? user : "");
    unsigned answered = snap_run(q, r->a->ws, r->a->nw, ADMIN_WAIT_MS);
    uint64_t closed = 0;
    for (unsigned i = 0; i < q->nparts; i++)
        if (atomic_load_explicit(&q->parts[i].done, memory_order_acquire))
            closed += q->parts[i].closed;
    snap_put(q);
    char back[16];
    if (admin_query_param(r->rq->query, "back", back, sizeof(back)) == 0) {
        r->rp->status = 303; /* the page's form (no JavaScript): back to it */
        mtext_printf(&r->rp->headers, "Location: /status\r\n");
        return;
    }
    if (op == SNAP_CLOSE && !closed) {
        char msg[80];
        snprintf(msg, sizeof(msg), "no open session %llu", (unsigned long long)id);
        admin_error(r, answered < r->a->nw ? 504 : 404, msg);
        return;
    }
    json_begin(r);
    struct mtext *t = &r->rp->body;
    if (op == SNAP_CLOSE) {
        mtext_printf(t, "{\"id\":%llu,\"closed\":%llu", (unsigned long long)id,
                     (unsigned long long)closed);
    } else {
        mtext_printf(t, "{\"user\":");
        admin_json_str(t, user);
        mtext_printf(t, ",\"closed\":%llu", (unsigned long long)closed);
    }
    mtext_printf(t, ",\"workers\":%u,\"workers_answered\":%u}\n", r->a->nw, answered);
}

/* POST /api/reload: SIGHUP to ourselves (the main thread's signalfd takes
 * it, as it takes an operator's), then wait for the reload counters. */
static void api_reload(struct admin_rq *r)
{
    struct metrics_state before, now;
    metrics_state_get(r->m, &before);
    if (kill(getpid(), SIGHUP) < 0) {
        admin_error(r, 500, strerror(errno));
        return;
    }
    uint64_t end = clock_ms() + RELOAD_WAIT_MS;
    do {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        metrics_state_get(r->m, &now);
    } while (now.reloads_ok == before.reloads_ok && now.reloads_failed == before.reloads_failed &&
             clock_ms() < end);
    if (now.reloads_failed != before.reloads_failed) {
        admin_error(r, 500,
                    "the reload failed; the configuration in use is unchanged (the log "
                    "says why)");
    } else if (now.reloads_ok == before.reloads_ok) {
        admin_error(r, 504, "the reload did not finish within 10 s");
    } else {
        json_begin(r);
        mtext_printf(&r->rp->body, "{\"reload\":\"ok\",\"reloads_ok\":%llu}\n",
                     (unsigned long long)now.reloads_ok);
    }
}

/* POST /api/sessions/ID/close */
static void route_session(struct admin_rq *r, const char *rest, bool post)
{
    const char *slash = strchr(rest, '/');
    char num[32];
    uint64_t id;
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (!slash || strcmp(slash, "/close") != 0) {
        admin_error(r, 404, "no such path (try POST /api/sessions/ID/close)");
        return;
    }
    if (!post) {
        admin_error(r, 405, "only POST");
        mtext_printf(&r->rp->headers, "Allow: POST\r\n");
        return;
    }
    if (n == 0 || n >= sizeof(num) ||
        (memcpy(num, rest, n), num[n] = '\0', parse_u64(num, 1, UINT64_MAX, &id) < 0)) {
        admin_error(r, 400, "a session id is a positive number");
        return;
    }
    api_end(r, SNAP_CLOSE, id, NULL);
}

/* POST /api/users/NAME/kick */
static void route_user(struct admin_rq *r, const char *rest, bool post)
{
    const char *slash = strrchr(rest, '/');
    char name[256];
    if (!slash || strcmp(slash, "/kick") != 0) {
        admin_error(r, 404, "no such path (try POST /api/users/NAME/kick)");
        return;
    }
    if (!post) {
        admin_error(r, 405, "only POST");
        mtext_printf(&r->rp->headers, "Allow: POST\r\n");
        return;
    }
    /* The name as a query value would be decoded: reuse that. */
    char q[600];
    snprintf(q, sizeof(q), "n=%.*s", (int)(slash - rest), rest);
    if (admin_query_param(q, "n", name, sizeof(name)) < 0 || !name[0] ||
        !userlist_name_ok(name, strlen(name))) {
        admin_error(r, 400, "not a user name");
        return;
    }
    if (!r->cfg->auth.users || !userlist_find(r->cfg->auth.users, name, strlen(name))) {
        admin_error(r, 404, "no such user in the userlist");
        return;
    }
    api_end(r, SNAP_KICK, 0, name);
}

void admin_api(struct admin_rq *r)
{
    const char *p = r->rq->path + 4; /* after "/api" */
    bool get = strcmp(r->rq->method, "GET") == 0 || strcmp(r->rq->method, "HEAD") == 0;
    bool post = strcmp(r->rq->method, "POST") == 0;
    static const struct {
        const char *path;
        bool post;
        void (*fn)(struct admin_rq *r);
    } routes[] = {
        {"/sessions", false, api_sessions},      {"/users", false, api_users},
        {"/outbounds", false, api_outbounds},    {"/status", false, admin_status_json},
        {"/history", false, admin_history_json}, {"/reload", true, api_reload},
        {"/routes", false, api_routes},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        if (strcmp(p, routes[i].path) != 0)
            continue;
        if (routes[i].post ? !post : !get) {
            admin_error(r, 405, routes[i].post ? "only POST" : "only GET and HEAD");
            mtext_printf(&r->rp->headers, "Allow: %s\r\n", routes[i].post ? "POST" : "GET, HEAD");
            return;
        }
        routes[i].fn(r);
        return;
    }
    if (strncmp(p, "/sessions/", 10) == 0)
        route_session(r, p + 10, post);
    else if (strncmp(p, "/users/", 7) == 0)
        route_user(r, p + 7, post);
    else
        admin_error(r, 404, "no such path (see docs/admin.md)");
}
