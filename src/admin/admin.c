/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * admin.c: the admin room's object and its door: the metrics endpoint's
 * hook (which paths are ours, who may pass: the token, the page's cookie
 * and its sign-in form) and the once-a-second sample for the history.
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

#include "config/config.h"
#include "core/loop.h"

#define COOKIE_NAME "ferry_admin"

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

/* Once a second (metrics.h's tick): a sample for the history, while admin
 * is on. */
static void on_tick(void *arg, const struct config *cfg)
{
    struct admin *a = arg;
    if (!cfg->metrics_admin)
        return;
    struct admin_live l;
    admin_live(a, cfg, &l);
    ring_feed(&a->ring, &l.tot, (int64_t)clock_ms(), (int64_t)time(NULL));
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
