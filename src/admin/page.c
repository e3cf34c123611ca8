/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * page.c: the status page as HTML, written whole by the server: the same
 * figures and tables the script (assets/app.js) keeps up to date from
 * GET /api/status, so that without JavaScript the page is still whole
 * (it then refreshes itself every 10 s, and its close buttons are plain
 * forms). The charts are the script's: it draws them from /api/history.
 * Also the login form.
 *
 * What it must not do: load anything from elsewhere (no CDN, no fonts):
 * its style and script are embedded in the binary (assets.c).
 */
#include <stdio.h>
#include <string.h>

#include "acl/rules.h"
#include "admin/internal.h"
#include "config/config.h"
#include "version.h"

static void page_head(struct mtext *t, const char *title, bool refresh)
{
    mtext_printf(t, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                    "<title>");
    admin_html(t, title);
    mtext_printf(t, "</title><link rel=\"stylesheet\" href=\"/status/app.css\">");
    if (refresh)
        mtext_printf(t, "<noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript>");
    mtext_printf(t, "</head>\n");
}

void admin_login_page(struct admin_rq *r, int status, const char *msg)
{
    struct mtext *t = &r->rp->body;
    r->rp->status = status;
    r->rp->ctype = "text/html; charset=utf-8";
    page_head(t, "ferry: sign in", false);
    mtext_printf(t, "<body class=\"login\"><form method=\"post\" action=\"/status/login\">"
                    "<h1>ferry status</h1><p>The token of <code>metrics.admin_token_file</code>:"
                    "</p><input type=\"password\" name=\"token\" autocomplete=\"current-password\" "
                    "autofocus required><button type=\"submit\">Sign in</button>");
    if (msg) {
        mtext_printf(t, "<p class=\"err\">");
        admin_html(t, msg);
        mtext_printf(t, "</p>");
    }
    mtext_printf(t, "</form></body></html>\n");
}

static void figure(struct mtext *t, const char *id, const char *value, const char *label)
{
    mtext_printf(t, "<div class=\"fig\"><span class=\"v\" id=\"f-%s\">", id);
    admin_html(t, value);
    mtext_printf(t, "</span><span class=\"l\">%s</span></div>", label);
}

static void figures(struct mtext *t, const struct admin_view *v, const struct ring *ring)
{
    const struct ring_sample *s = ring->n ? ring_at(ring, ring->n - 1) : NULL;
    const struct admin_live *l = &v->live;
    char b[64];
    mtext_printf(t, "<section class=\"figures\" id=\"figures\">");
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->tot.sessions);
    figure(t, "sessions", b, "sessions open");
    snprintf(b, sizeof(b), "%.1f", s ? s->setups : 0.0);
    figure(t, "setups", b, "setups/s");
    char u[32];
    snprintf(b, sizeof(b), "%s/s", admin_bytes(s ? s->up : 0.0, u, sizeof(u)));
    figure(t, "up", b, "up (client &rarr; destination)");
    snprintf(b, sizeof(b), "%s/s", admin_bytes(s ? s->down : 0.0, u, sizeof(u)));
    figure(t, "down", b, "down (destination &rarr; client)");
    snprintf(b, sizeof(b), "%llu / %llu", (unsigned long long)l->tot.auth_ok,
             (unsigned long long)(l->auth_denied + l->auth_throttled + l->auth_busy));
    figure(t, "auth", b, "logins ok / failed");
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->tot.udp_assocs);
    figure(t, "udp", b, "UDP associations");
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->tot.tunnels);
    figure(t, "tunnels", b, "tunnel connections");
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->edge_routes);
    figure(t, "edge", b, "edge routes");
    mtext_printf(t, "</section>\n");
}

/* A row's byte figures: sessions, up, down. */
static void bytes_cells(struct mtext *t, uint64_t sessions, uint64_t up, uint64_t down)
{
    char a[32], b[32];
    mtext_printf(t, "<td class=\"n\">%llu</td><td class=\"n\">%s</td><td class=\"n\">%s</td>",
                 (unsigned long long)sessions, admin_bytes((double)up, a, sizeof(a)),
                 admin_bytes((double)down, b, sizeof(b)));
}

/* The per-user accounting's all-time bytes of user, when a room plugged
 * it in (admin_set_user_totals): the top users table's last column. */
static void user_total_cell(struct admin_rq *r, const char *user)
{
    struct admin_user_totals tot;
    char b[32];
    if (!r->a->user_totals)
        return;
    if (r->a->user_totals(r->a->user_totals_arg, user, &tot))
        mtext_printf(&r->rp->body, "<td class=\"n\">%s</td>",
                     admin_bytes((double)(tot.bytes_up + tot.bytes_down), b, sizeof(b)));
    else
        mtext_printf(&r->rp->body, "<td class=\"n\">&ndash;</td>");
}

static void tops(struct admin_rq *r, const struct admin_view *v)
{
    struct mtext *t = &r->rp->body;
    char ip[ADDR_STRLEN];
    mtext_printf(t, "<section><h2>Top clients <small>by bytes of open sessions</small></h2>"
                    "<table id=\"t-clients\"><thead><tr><th>client</th><th class=\"n\">sessions"
                    "</th><th class=\"n\">up</th><th class=\"n\">down</th></tr></thead><tbody>");
    for (size_t i = 0; i < v->nclients; i++) {
        const struct snap_client *c = &v->clients[i];
        mtext_printf(t, "<tr><td>");
        admin_html(t, c->addr.family ? addr_format_ip(&c->addr, ip, sizeof(ip)) : "other");
        mtext_printf(t, "</td>");
        bytes_cells(t, c->sessions, c->up, c->down);
        mtext_printf(t, "</tr>");
    }
    mtext_printf(t,
                 "</tbody></table></section>\n<section><h2>Top users <small>by bytes of "
                 "open sessions</small></h2><table id=\"t-users\"><thead><tr><th>user</th>"
                 "<th class=\"n\">sessions</th><th class=\"n\">up</th><th class=\"n\">down</th>");
    if (r->a->user_totals)
        mtext_printf(t, "<th class=\"n\">all time</th>");
    mtext_printf(t, "</tr></thead><tbody>");
    for (size_t i = 0; i < v->nusers; i++) {
        mtext_printf(t, "<tr><td>");
        admin_html(t, v->users[i].name);
        mtext_printf(t, "</td>");
        bytes_cells(t, v->users[i].sessions, v->users[i].up, v->users[i].down);
        user_total_cell(r, v->users[i].name);
        mtext_printf(t, "</tr>");
    }
    mtext_printf(t, "</tbody></table></section>\n");
}

static void rules_errors(struct admin_rq *r, const struct admin_view *v)
{
    struct mtext *t = &r->rp->body;
    const struct acl *acl = r->cfg->acl;
    mtext_printf(t, "<section><h2>Rules <small>hits since the last reload</small></h2>"
                    "<table id=\"t-rules\"><thead><tr><th>rule</th><th>action</th>"
                    "<th class=\"n\">hits</th></tr></thead><tbody>");
    for (uint32_t i = 0; acl && i <= acl->n; i++) {
        uint8_t action = i < acl->n ? acl->rules[i].action : acl->default_action;
        mtext_printf(t, "<tr><td>");
        admin_html(t, i < acl->n ? acl->rules[i].name : "default");
        mtext_printf(t, "</td><td>%s</td><td class=\"n\">%llu</td></tr>",
                     action == ACL_DENY ? "deny" : "allow",
                     (unsigned long long)admin_rule_hits(r, i));
    }
    mtext_printf(t, "</tbody></table></section>\n<section><h2>Recent warnings and errors</h2>"
                    "<table id=\"t-errors\"><thead><tr><th>time (UTC)</th><th>level</th>"
                    "<th>message</th></tr></thead><tbody>");
    for (size_t i = 0; i < v->nerrs; i++) {
        time_t tt = (time_t)v->errs[i].time;
        struct tm tm;
        char ts[32];
        gmtime_r(&tt, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
        mtext_printf(t, "<tr><td class=\"nw\">%s</td><td class=\"lvl-%s\">%s</td><td>", ts,
                     log_level_name(v->errs[i].level), log_level_name(v->errs[i].level));
        admin_html(t, v->errs[i].msg);
        mtext_printf(t, "</td></tr>");
    }
    if (!v->nerrs)
        mtext_printf(t, "<tr><td colspan=\"3\" class=\"none\">none since the start</td></tr>");
    mtext_printf(t, "</tbody></table></section>\n");
}

static void session_rows(struct mtext *t, const struct admin_view *v)
{
    char ip[ADDR_STRLEN], a[32], b[32];
    mtext_printf(t,
                 "<section class=\"wide\"><h2>Sessions <small id=\"s-count\">%zu shown of "
                 "%llu, the largest first</small></h2><table id=\"t-sessions\"><thead><tr>"
                 "<th class=\"n\">id</th><th>client</th><th>user</th><th>protocol</th>"
                 "<th>destination</th><th>outbound</th><th class=\"n\">up</th>"
                 "<th class=\"n\">down</th><th class=\"n\">age (s)</th><th class=\"n\">idle (s)"
                 "</th><th></th></tr></thead><tbody>",
                 v->nrows, (unsigned long long)v->sessions);
    for (size_t i = 0; i < v->nrows; i++) {
        const struct snap_row *s = &v->rows[i];
        mtext_printf(t, "<tr><td class=\"n\">%llu</td><td>", (unsigned long long)s->id);
        admin_html(t, addr_format(&s->client, ip, sizeof(ip)));
        mtext_printf(t, "</td><td>");
        admin_html(t, s->user);
        mtext_printf(t, "</td><td>");
        admin_html(t, s->proto);
        mtext_printf(t, "</td><td>");
        admin_html(t, s->dest);
        mtext_printf(t, "</td><td>");
        admin_html(t, s->outbound);
        mtext_printf(t,
                     "</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%.0f</td>"
                     "<td class=\"n\">%.0f</td><td><form method=\"post\" action=\"/api/sessions/"
                     "%llu/close?back=1\"><button class=\"close\" type=\"submit\">close</button>"
                     "</form></td></tr>",
                     admin_bytes((double)s->up, a, sizeof(a)),
                     admin_bytes((double)s->down, b, sizeof(b)), (double)s->age_ms / 1000.0,
                     (double)s->idle_ms / 1000.0, (unsigned long long)s->id);
    }
    mtext_printf(t, "</tbody></table></section>\n");
}

void admin_page(struct admin_rq *r)
{
    struct admin_view v;
    if (admin_view_gather(r, &v) < 0) {
        admin_error(r, 500, "out of memory");
        return;
    }
    struct mtext *t = &r->rp->body;
    r->rp->status = 200;
    r->rp->ctype = "text/html; charset=utf-8";
    page_head(t, "ferry status", true);
    mtext_printf(t,
                 "<body><header><h1>ferry</h1><span class=\"meta\">" FERRY_VERSION
                 " &middot; %u workers (%u answered) &middot; <span id=\"updated\">server-"
                 "rendered</span></span><form method=\"post\" action=\"/status/logout\">"
                 "<button type=\"submit\">sign out</button></form></header>\n",
                 v.q->nparts, v.answered);
    figures(t, &v, &r->a->ring);
    mtext_printf(t, "<section class=\"charts\" id=\"charts\"><noscript><p class=\"note\">The "
                    "charts of the last 15 minutes need JavaScript; without it this page "
                    "refreshes every 10 s.</p></noscript></section>\n<div class=\"grid\">");
    tops(r, &v);
    rules_errors(r, &v);
    mtext_printf(t, "</div>\n");
    session_rows(t, &v);
    mtext_printf(t, "<script src=\"/status/app.js\"></script></body></html>\n");
    admin_view_fini(&v);
}
