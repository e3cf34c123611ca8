/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * admin.c: the admin room's object and its door: the metrics endpoint's
 * hook (which paths are ours, who may pass), the once-a-second sample for
 * the history, and the helpers api.c and page.c share (the workers' look
 * at their sessions merged, query strings, JSON and HTML escaping).
 *
 * What it must not do: touch a session (snap.c asks the workers), or
 * render a page or an API answer itself (page.c, api.c).
 */
#include "admin/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth/userlist.h"
#include "config/config.h"
#include "config/edge.h"
#include "config/outbound.h"
#include "core/loop.h"
#include "log/fields.h"
#include "worker/worker.h"

#define COOKIE_NAME "ferry_admin"

/* ---- figures ------------------------------------------------------------- */

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

static void on_tick(void *arg, const struct config *cfg)
{
    struct admin *a = arg;
    if (!cfg->metrics_admin)
        return;
    struct admin_live l;
    admin_live(a, cfg, &l);
    ring_feed(&a->ring, &l.tot, (int64_t)clock_ms(), (int64_t)time(NULL));
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

/* ---- text ---------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int admin_query_param(const char *query, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *p = query; p && *p;) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t k = 0;
            for (size_t i = nl + 1; i < len; i++) {
                char ch = p[i];
                if (ch == '+')
                    ch = ' ';
                else if (ch == '%' && i + 2 < len + 1 && hexval(p[i + 1]) >= 0 &&
                         hexval(p[i + 2]) >= 0) {
                    ch = (char)(hexval(p[i + 1]) * 16 + hexval(p[i + 2]));
                    i += 2;
                }
                if (k + 1 >= cap)
                    return -1;
                out[k++] = ch;
            }
            out[k] = '\0';
            return 0;
        }
        p = end ? end + 1 : NULL;
    }
    return -1;
}

void admin_json_str(struct mtext *t, const char *s)
{
    char buf[1024];
    size_t n = strlen(s), used = 0;
    mtext_printf(t, "\"");
    while (used < n) {
        size_t took = 0;
        size_t w = log_json_escape(buf, sizeof(buf), s + used, n - used, &took);
        mtext_append(t, buf, w);
        if (!took)
            break;
        used += took;
    }
    mtext_printf(t, "\"");
}

void admin_html(struct mtext *t, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            mtext_printf(t, "&amp;");
            break;
        case '<':
            mtext_printf(t, "&lt;");
            break;
        case '>':
            mtext_printf(t, "&gt;");
            break;
        case '"':
            mtext_printf(t, "&quot;");
            break;
        case '\'':
            mtext_printf(t, "&#39;");
            break;
        default:
            mtext_append(t, s, 1);
        }
    }
}

const char *admin_bytes(double v, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    unsigned u = 0;
    while (v >= 1000.0 && u < 5) {
        v /= 1000.0;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

void admin_error(struct admin_rq *r, int status, const char *msg)
{
    r->rp->status = status;
    r->rp->ctype = "application/json";
    mtext_printf(&r->rp->body, "{\"error\":");
    admin_json_str(&r->rp->body, msg);
    mtext_printf(&r->rp->body, ",\"status\":%d}\n", status);
}

/* ---- the door ------------------------------------------------------------ */

/* The value of header name in the head, trimmed, into out; false if
 * absent (or too long). */
static bool header(const struct metrics_req *rq, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < rq->hlen;) {
        const char *h = rq->head + i;
        const char *eol = memchr(h, '\n', rq->hlen - i);
        size_t len = eol ? (size_t)(eol - h) : rq->hlen - i;
        if (len > nl && strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            size_t b = nl + 1, e = len;
            while (b < e && (h[b] == ' ' || h[b] == '\t'))
                b++;
            while (e > b && (h[e - 1] == '\r' || h[e - 1] == ' ' || h[e - 1] == '\t'))
                e--;
            if (e - b >= cap)
                return false;
            memcpy(out, h + b, e - b);
            out[e - b] = '\0';
            return true;
        }
        i += len + 1;
    }
    return false;
}

/* The cookie the login form sets: a keyed hash of the token, so it is
 * not the token itself, and changes when the token (or the process) does. */
static void cookie_value(const struct admin *a, const char *token,
                         char hex[2 * FCRYPTO_TAG_LEN + 1])
{
    uint8_t tag[FCRYPTO_TAG_LEN];
    fcrypto_tag2(tag, a->key, "cookie", 6, token, strlen(token));
    for (size_t i = 0; i < sizeof(tag); i++)
        snprintf(hex + 2 * i, 3, "%02x", tag[i]);
}

/* Constant time in the secret: both sides are hashed first, so neither
 * the length nor the first differing byte of the token shows. */
static bool token_equal(const struct admin *a, const char *given, const char *token)
{
    uint8_t x[FCRYPTO_TAG_LEN], y[FCRYPTO_TAG_LEN];
    fcrypto_tag2(x, a->key, "token", 5, given, strlen(given));
    fcrypto_tag2(y, a->key, "token", 5, token, strlen(token));
    return fcrypto_equal(x, y, sizeof(x));
}

/* Who is asking: 1 a bearer token, 2 the page's cookie, 0 nobody. */
static int authenticated(struct admin *a, const struct config *cfg, const struct metrics_req *rq)
{
    char v[1024];
    if (header(rq, "Authorization", v, sizeof(v)) && strncasecmp(v, "Bearer ", 7) == 0)
        return token_equal(a, v + 7, cfg->admin_token) ? 1 : 0;
    if (!header(rq, "Cookie", v, sizeof(v)))
        return 0;
    char want[2 * FCRYPTO_TAG_LEN + 1];
    cookie_value(a, cfg->admin_token, want);
    for (char *p = v; (p = strstr(p, COOKIE_NAME "=")) != NULL; p++) {
        if (p != v && p[-1] != ' ' && p[-1] != ';')
            continue;
        const char *val = p + strlen(COOKIE_NAME "=");
        if (strcspn(val, "; ") == 2 * FCRYPTO_TAG_LEN &&
            fcrypto_equal(val, want, 2 * FCRYPTO_TAG_LEN))
            return 2;
    }
    return 0;
}

/* A browser's cross-site POST carries an Origin that is not ours: with
 * the cookie (which SameSite=Strict already keeps from other sites) such
 * a request is refused all the same. */
static bool same_origin(const struct metrics_req *rq)
{
    char origin[512], host[512];
    if (!header(rq, "Origin", origin, sizeof(origin)))
        return true;
    if (!header(rq, "Host", host, sizeof(host)))
        return false;
    const char *o = strstr(origin, "://");
    return o && strcmp(o + 3, host) == 0;
}

/* POST /status/login with token=...: the cookie, then back to the page. */
static void login(struct admin_rq *r)
{
    char form[1100], token[1024];
    size_t n = r->rq->blen < sizeof(form) - 1 ? r->rq->blen : sizeof(form) - 1;
    memcpy(form, r->rq->body, n);
    form[n] = '\0';
    bool ok = admin_query_param(form, "token", token, sizeof(token)) == 0 &&
              token_equal(r->a, token, r->cfg->admin_token);
    fcrypto_wipe(form, sizeof(form));
    fcrypto_wipe(token, sizeof(token));
    if (!ok) {
        admin_login_page(r, 401, "That token is not the one in metrics.admin_token_file.");
        return;
    }
    char c[2 * FCRYPTO_TAG_LEN + 1];
    cookie_value(r->a, r->cfg->admin_token, c);
    r->rp->status = 303;
    mtext_printf(&r->rp->headers,
                 "Location: /status\r\nSet-Cookie: " COOKIE_NAME
                 "=%s; Path=/; HttpOnly; SameSite=Strict\r\n",
                 c);
}

static bool is_asset_path(const char *path)
{
    return strncmp(path, "/status/", 8) == 0 && strchr(path + 8, '/') == NULL &&
           strcmp(path, "/status/login") != 0 && strcmp(path, "/status/logout") != 0;
}

static void serve_asset(struct admin_rq *r, const char *name)
{
    size_t len;
    const char *ctype;
    const unsigned char *p = admin_asset(name, &len, &ctype);
    if (!p) {
        admin_error(r, 404, "no such file");
        return;
    }
    r->rp->status = 200;
    r->rp->ctype = ctype;
    mtext_append(&r->rp->body, p, len);
}

static bool on_request(void *arg, struct metrics *m, const struct config *cfg,
                       const struct metrics_req *rq, struct metrics_reply *rp)
{
    struct admin *a = arg;
    bool api = strncmp(rq->path, "/api/", 5) == 0 || strcmp(rq->path, "/api") == 0;
    bool page = strcmp(rq->path, "/status") == 0 || strncmp(rq->path, "/status/", 8) == 0;
    if (!cfg->metrics_admin || !cfg->admin_token || (!api && !page))
        return false;
    struct admin_rq r = {a, m, cfg, rq, rp, false};
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    bool post = strcmp(rq->method, "POST") == 0;
    if (is_asset_path(rq->path)) {
        if (!get) {
            admin_error(&r, 405, "only GET and HEAD");
            mtext_printf(&rp->headers, "Allow: GET, HEAD\r\n");
        } else {
            serve_asset(&r, rq->path + 8);
        }
        return true;
    }
    if (strcmp(rq->path, "/status/login") == 0) {
        if (post)
            login(&r);
        else
            admin_login_page(&r, 200, NULL);
        return true;
    }
    int who = authenticated(a, cfg, rq);
    r.cookie = who == 2;
    if (!who && page) {
        admin_login_page(&r, 401, NULL);
    } else if (!who) {
        admin_error(&r, 401, "missing or wrong token (send Authorization: Bearer TOKEN)");
        mtext_printf(&rp->headers, "WWW-Authenticate: Bearer realm=\"ferry\"\r\n");
    } else if (post && r.cookie && !same_origin(rq)) {
        admin_error(&r, 403, "cross-origin request refused");
    } else if (strcmp(rq->path, "/status/logout") == 0) {
        rp->status = 303;
        mtext_printf(&rp->headers, "Location: /status\r\nSet-Cookie: " COOKIE_NAME
                                   "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict\r\n");
    } else if (page) {
        if (get)
            admin_page(&r);
        else
            admin_error(&r, 405, "only GET and HEAD");
    } else {
        admin_api(&r);
    }
    return true;
}

/* ---- the object ---------------------------------------------------------- */

struct admin *admin_new(struct worker *ws, unsigned nw, const struct shared *sh)
{
    struct admin *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->ws = ws;
    a->nw = nw;
    a->src = (struct metrics_source){ws, nw, sh, NULL};
    ring_init(&a->ring);
    fcrypto_random(a->key, sizeof(a->key));
    a->hooks = (struct metrics_admin){a, on_request, on_tick};
    return a;
}

const struct metrics_admin *admin_hooks(struct admin *a)
{
    return a ? &a->hooks : NULL;
}

void admin_set_user_totals(struct admin *a, admin_user_totals_fn fn, void *arg)
{
    a->user_totals = fn;
    a->user_totals_arg = arg;
}

void admin_free(struct admin *a)
{
    if (!a)
        return;
    fcrypto_wipe(a->key, sizeof(a->key));
    free(a);
}
