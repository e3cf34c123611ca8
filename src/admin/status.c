/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * status.c: what the API and the status page show, gathered: the live
 * figures (counters summed), a look at the workers' sessions (snap.h)
 * merged into rows and top clients and users, recent errors; written as
 * JSON for the page's script (GET /api/status), with the per-second
 * history (GET /api/history). page.c writes the same view as HTML.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl/rules.h"
#include "admin/internal.h"
#include "auth/userlist.h"
#include "config/config.h"
#include "config/edge.h"
#include "config/outbound.h"
#include "core/loop.h"
#include "util/parse.h"
#include "worker/worker.h"

#define SUM(a, f) metrics_stat_sum(&(a)->src, offsetof(struct worker_stats, f))

void admin_live(struct admin *a, const struct config *cfg, struct admin_live *out)
{
    memset(out, 0, sizeof(*out));
    struct ring_totals *t = &out->tot;
    t->accepted = SUM(a, accepted);
    t->bytes_up = SUM(a, bytes_up);
    t->bytes_down = SUM(a, bytes_down);
    t->auth_ok = SUM(a, auth.ok);
    out->auth_denied = SUM(a, auth.denied);
    out->auth_throttled = SUM(a, auth.throttled);
    out->auth_busy = SUM(a, auth.busy);
    out->auth_cache_hits = SUM(a, auth.cache_hits);
    t->auth_failed = out->auth_denied + out->auth_throttled + out->auth_busy;
    t->sessions = SUM(a, active);
    t->tunnels = SUM(a, h2_conns);
    out->udp_datagrams_in = SUM(a, udp_in);
    out->udp_datagrams_out = SUM(a, udp_out);
    for (unsigned i = 0; i < CONFIG_MAX_LISTEN; i++)
        t->udp_assocs += atomic_load_explicit(&a->src.sh->udp_assocs[i], memory_order_relaxed);
    /* Tunnels: HTTP/2 connections in (clients' tunnels) and out (to parents). */
    for (uint32_t i = 0; cfg->ob_stats && i < cfg->noutbounds; i++)
        for (unsigned w = 0; w < a->nw && w < cfg->workers; w++)
            t->tunnels += stat_get(&cfg->ob_stats[(size_t)w * cfg->ob_stride +
                                                  (size_t)i * OB_STATS + OB_STAT_H2_CONNS]);
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        out->edge_routes += e->nroutes;
        for (uint32_t j = 0; j < e->nroutes; j++)
            for (unsigned r = 0; r < EDGE_RES_COUNT; r++)
                t->edge_routed += atomic_load(&e->routes[j].live->results[r]);
    }
}

/* ---- the workers' look --------------------------------------------------- */

struct snap_query *admin_look(struct admin *a, const struct config *cfg, size_t limit,
                              const char *user, bool with_users, bool with_clients,
                              unsigned *answered)
{
    struct snap_query *q = snap_new(a->nw);
    if (!q)
        return NULL;
    q->op = SNAP_LOOK;
    q->limit = limit;
    snprintf(q->user, sizeof(q->user), "%s", user ? user : "");
    q->want_clients = with_clients;
    q->ul = with_users && cfg->auth.users ? userlist_ref(cfg->auth.users) : NULL;
    *answered = snap_run(q, a->ws, a->nw, ADMIN_WAIT_MS);
    return q;
}

static int row_cmp(const void *x, const void *y)
{
    const struct snap_row *a = x, *b = y;
    uint64_t ta = a->up + a->down, tb = b->up + b->down;
    if (ta != tb)
        return ta < tb ? 1 : -1;
    return a->id < b->id ? -1 : a->id > b->id;
}

size_t admin_rows(const struct snap_query *q, size_t limit, struct snap_row **out)
{
    size_t n = 0;
    for (unsigned i = 0; i < q->nparts; i++)
        if (atomic_load_explicit(&q->parts[i].done, memory_order_acquire))
            n += q->parts[i].nrows;
    *out = malloc((n ? n : 1) * sizeof(**out));
    if (!*out)
        return 0;
    size_t k = 0;
    for (unsigned i = 0; i < q->nparts; i++) {
        const struct snap_part *p = &q->parts[i];
        if (!atomic_load_explicit(&p->done, memory_order_acquire) || !p->nrows)
            continue;
        memcpy(*out + k, p->rows, p->nrows * sizeof(*p->rows));
        k += p->nrows;
    }
    qsort(*out, k, sizeof(**out), row_cmp);
    return k < limit ? k : limit;
}

static int client_cmp(const void *x, const void *y)
{
    const struct snap_client *a = x, *b = y;
    uint64_t ta = a->up + a->down, tb = b->up + b->down;
    return ta < tb ? 1 : ta > tb ? -1 : 0;
}

size_t admin_top_clients(const struct snap_query *q, struct snap_client *out, size_t n)
{
    size_t cap = (size_t)q->nparts * SNAP_CLIENTS_MAX + 1, k = 0;
    struct snap_client *all = calloc(cap, sizeof(*all));
    if (!all)
        return 0;
    struct snap_client other = {0};
    for (unsigned i = 0; i < q->nparts; i++) {
        const struct snap_part *p = &q->parts[i];
        if (!atomic_load_explicit(&p->done, memory_order_acquire))
            continue;
        for (size_t j = 0; j < p->nclients; j++) {
            size_t e = 0;
            while (e < k && !addr_equal(&all[e].addr, &p->clients[j].addr))
                e++;
            if (e == k)
                all[k++].addr = p->clients[j].addr;
            all[e].sessions += p->clients[j].sessions;
            all[e].up += p->clients[j].up;
            all[e].down += p->clients[j].down;
        }
        other.sessions += p->other.sessions;
        other.up += p->other.up;
        other.down += p->other.down;
    }
    if (other.sessions)
        all[k++] = other; /* family 0: "other" */
    qsort(all, k, sizeof(*all), client_cmp);
    size_t m = k < n ? k : n;
    if (m)
        memcpy(out, all, m * sizeof(*out));
    free(all);
    return m;
}

static int user_cmp(const void *x, const void *y)
{
    const struct view_user *a = x, *b = y;
    uint64_t ta = a->up + a->down, tb = b->up + b->down;
    return ta < tb ? 1 : ta > tb ? -1 : 0;
}

/* The top users by live bytes, from the look's per-user sums. */
static void top_users(struct admin_view *v)
{
    const struct snap_query *q = v->q;
    if (!q->ul)
        return;
    for (size_t u = 0; u < q->ul->n; u++) {
        struct view_user e = {q->ul->users[u].name, 0, 0, 0};
        for (unsigned i = 0; i < q->nparts; i++) {
            const struct snap_part *p = &q->parts[i];
            if (!atomic_load_explicit(&p->done, memory_order_acquire) || !p->users)
                continue;
            e.sessions += p->users[u * 3];
            e.up += p->users[u * 3 + 1];
            e.down += p->users[u * 3 + 2];
        }
        if (!e.sessions)
            continue;
        if (v->nusers < VIEW_TOP) {
            v->users[v->nusers++] = e;
        } else if (e.up + e.down > v->users[VIEW_TOP - 1].up + v->users[VIEW_TOP - 1].down) {
            v->users[VIEW_TOP - 1] = e;
        } else {
            continue;
        }
        qsort(v->users, v->nusers, sizeof(v->users[0]), user_cmp);
    }
}

int admin_view_gather(struct admin_rq *r, struct admin_view *v)
{
    memset(v, 0, sizeof(*v));
    admin_live(r->a, r->cfg, &v->live);
    v->q = admin_look(r->a, r->cfg, VIEW_ROWS, NULL, true, true, &v->answered);
    if (!v->q)
        return -ENOMEM;
    for (unsigned i = 0; i < v->q->nparts; i++)
        if (atomic_load_explicit(&v->q->parts[i].done, memory_order_acquire))
            v->sessions += v->q->parts[i].sessions;
    v->nclients = admin_top_clients(v->q, v->clients, VIEW_TOP);
    top_users(v);
    v->nrows = admin_rows(v->q, VIEW_ROWS, &v->rows);
    v->nerrs = log_recent_copy(v->errs, LOG_RECENT_N);
    return 0;
}

void admin_view_fini(struct admin_view *v)
{
    free(v->rows);
    snap_put(v->q);
}

uint64_t admin_rule_hits(const struct admin_rq *r, uint32_t i)
{
    const struct config *cfg = r->cfg;
    uint64_t n = 0;
    for (unsigned w = 0; cfg->rule_hits && w < r->a->nw && w < cfg->workers; w++)
        n += stat_get(&cfg->rule_hits[(size_t)w * cfg->rule_stride + i]);
    return n;
}

static void live_json(struct mtext *t, const struct admin_live *l, const struct ring *ring)
{
    const struct ring_sample *s = ring->n ? ring_at(ring, ring->n - 1) : NULL;
    mtext_printf(t,
                 "\"live\":{\"sessions\":%llu,\"setups_per_s\":%.1f,\"bytes_up_per_s\":%.0f,"
                 "\"bytes_down_per_s\":%.0f,\"accepted\":%llu,\"bytes_up\":%llu,"
                 "\"bytes_down\":%llu,\"auth_ok\":%llu,\"auth_denied\":%llu,"
                 "\"auth_throttled\":%llu,\"auth_busy\":%llu,\"auth_cache_hits\":%llu,"
                 "\"udp_associations\":%llu,\"udp_datagrams_in\":%llu,"
                 "\"udp_datagrams_out\":%llu,\"tunnel_connections\":%llu,\"edge_routes\":%llu,"
                 "\"edge_routed\":%llu}",
                 (unsigned long long)l->tot.sessions, s ? s->setups : 0.0, s ? s->up : 0.0,
                 s ? s->down : 0.0, (unsigned long long)l->tot.accepted,
                 (unsigned long long)l->tot.bytes_up, (unsigned long long)l->tot.bytes_down,
                 (unsigned long long)l->tot.auth_ok, (unsigned long long)l->auth_denied,
                 (unsigned long long)l->auth_throttled, (unsigned long long)l->auth_busy,
                 (unsigned long long)l->auth_cache_hits, (unsigned long long)l->tot.udp_assocs,
                 (unsigned long long)l->udp_datagrams_in, (unsigned long long)l->udp_datagrams_out,
                 (unsigned long long)l->tot.tunnels, (unsigned long long)l->edge_routes,
                 (unsigned long long)l->tot.edge_routed);
}

static void tops_json(struct admin_rq *r, const struct admin_view *v)
{
    struct mtext *t = &r->rp->body;
    char ip[ADDR_STRLEN];
    mtext_printf(t, ",\"top_clients\":[");
    for (size_t i = 0; i < v->nclients; i++) {
        const struct snap_client *c = &v->clients[i];
        mtext_printf(t, "%s{\"client\":", i ? "," : "");
        admin_json_str(t, c->addr.family ? addr_format_ip(&c->addr, ip, sizeof(ip)) : "other");
        mtext_printf(t, ",\"sessions\":%llu,\"bytes_up\":%llu,\"bytes_down\":%llu}",
                     (unsigned long long)c->sessions, (unsigned long long)c->up,
                     (unsigned long long)c->down);
    }
    mtext_printf(t, "],\"top_users\":[");
    for (size_t i = 0; i < v->nusers; i++) {
        const struct view_user *u = &v->users[i];
        mtext_printf(t, "%s{\"user\":", i ? "," : "");
        admin_json_str(t, u->name);
        mtext_printf(t, ",\"sessions\":%llu,\"bytes_up\":%llu,\"bytes_down\":%llu,\"totals\":",
                     (unsigned long long)u->sessions, (unsigned long long)u->up,
                     (unsigned long long)u->down);
        admin_totals_json(r, u->name); /* the per-user accounting's, when plugged in */
        mtext_printf(t, "}");
    }
    mtext_printf(t, "]");
}

static void rules_json(struct admin_rq *r)
{
    struct mtext *t = &r->rp->body;
    const struct acl *acl = r->cfg->acl;
    mtext_printf(t, ",\"rules\":[");
    for (uint32_t i = 0; acl && i <= acl->n; i++) {
        uint8_t action = i < acl->n ? acl->rules[i].action : acl->default_action;
        mtext_printf(t, "%s{\"rule\":", i ? "," : "");
        admin_json_str(t, i < acl->n ? acl->rules[i].name : "default");
        mtext_printf(t, ",\"action\":\"%s\",\"hits\":%llu}", action == ACL_DENY ? "deny" : "allow",
                     (unsigned long long)admin_rule_hits(r, i));
    }
    mtext_printf(t, "]");
}

static void errors_json(struct mtext *t, const struct admin_view *v)
{
    mtext_printf(t, ",\"errors\":[");
    for (size_t i = 0; i < v->nerrs; i++) {
        mtext_printf(t, "%s{\"time\":%lld,\"level\":\"%s\",\"message\":", i ? "," : "",
                     (long long)v->errs[i].time, log_level_name(v->errs[i].level));
        admin_json_str(t, v->errs[i].msg);
        mtext_printf(t, "}");
    }
    mtext_printf(t, "]");
}

void admin_status_json(struct admin_rq *r)
{
    struct admin_view v;
    if (admin_view_gather(r, &v) < 0) {
        admin_error(r, 500, "out of memory");
        return;
    }
    struct mtext *t = &r->rp->body;
    r->rp->status = 200;
    r->rp->ctype = "application/json";
    mtext_printf(t, "{\"time\":%lld,", (long long)time(NULL));
    live_json(t, &v.live, &r->a->ring);
    tops_json(r, &v);
    rules_json(r);
    errors_json(t, &v);
    mtext_printf(t, ",\"total\":%llu,\"workers\":%u,\"workers_answered\":%u,\"sessions\":[",
                 (unsigned long long)v.sessions, v.q->nparts, v.answered);
    for (size_t i = 0; i < v.nrows; i++) {
        struct snap_row *s = &v.rows[i];
        if (i)
            mtext_printf(t, ",");
        admin_session_json(t, s);
    }
    mtext_printf(t, "]}\n");
    admin_view_fini(&v);
}

/* GET /api/history[?since=T]: the samples after wall time T (all 900 by
 * default), oldest first, as columns. */
void admin_history_json(struct admin_rq *r)
{
    char v[32];
    uint64_t since = 0;
    if (admin_query_param(r->rq->query, "since", v, sizeof(v)) == 0 &&
        parse_u64(v, 0, UINT64_MAX, &since) < 0) {
        admin_error(r, 400, "since: a time in seconds");
        return;
    }
    const struct ring *ring = &r->a->ring;
    size_t from = 0;
    while (from < ring->n && (uint64_t)ring_at(ring, from)->t <= since)
        from++;
    struct mtext *t = &r->rp->body;
    r->rp->status = 200;
    r->rp->ctype = "application/json";
    mtext_printf(t, "{\"interval_s\":1,\"capacity\":%d,\"samples\":[", RING_LEN);
    for (size_t i = from; i < ring->n; i++) {
        const struct ring_sample *s = ring_at(ring, i);
        mtext_printf(t, "%s[%lld,%llu,%.2f,%.0f,%.0f,%.2f,%.2f,%llu,%llu,%.2f]",
                     i > from ? "," : "", (long long)s->t, (unsigned long long)s->sessions,
                     s->setups, s->up, s->down, s->auth_ok, s->auth_failed,
                     (unsigned long long)s->udp_assocs, (unsigned long long)s->tunnels,
                     s->edge_routed);
    }
    mtext_printf(t, "],\"columns\":[\"time\",\"sessions\",\"setups_per_s\",\"bytes_up_per_s\","
                    "\"bytes_down_per_s\",\"auth_ok_per_s\",\"auth_failed_per_s\","
                    "\"udp_associations\",\"tunnel_connections\",\"edge_routed_per_s\"]}\n");
}

void admin_totals_json(struct admin_rq *r, const char *user)
{
    struct mtext *t = &r->rp->body;
    struct admin_user_totals tot;
    if (!r->a->user_totals || !r->a->user_totals(r->a->user_totals_arg, user, &tot)) {
        mtext_printf(t, "null");
        return;
    }
    mtext_printf(t,
                 "{\"bytes_up\":%llu,\"bytes_down\":%llu,\"sessions\":%llu,"
                 "\"udp_datagrams\":%llu",
                 (unsigned long long)tot.bytes_up, (unsigned long long)tot.bytes_down,
                 (unsigned long long)tot.sessions, (unsigned long long)tot.udp_datagrams);
    if (tot.have_quota)
        mtext_printf(t, ",\"quota_bytes\":%llu,\"quota_used\":%llu",
                     (unsigned long long)tot.quota_bytes, (unsigned long long)tot.quota_used);
    mtext_printf(t, "}");
}
