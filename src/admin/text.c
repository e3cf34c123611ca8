/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * text.c: the text helpers api.c, status.c and page.c share: query
 * strings, JSON strings (log/'s escaper), a session as JSON (/api/sessions
 * and /api/status write it alike), HTML escaping, byte sizes for people,
 * and the JSON error answer.
 */
#include <stdio.h>
#include <string.h>

#include "admin/internal.h"
#include "log/fields.h"
#include "util/addr.h"
#include "util/parse.h"

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
                else if (ch == '%' && i + 2 < len + 1 && hex_digit(p[i + 1]) >= 0 &&
                         hex_digit(p[i + 2]) >= 0) {
                    ch = (char)(hex_digit(p[i + 1]) * 16 + hex_digit(p[i + 2]));
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

void admin_session_json(struct mtext *t, const struct snap_row *s)
{
    char ip[ADDR_STRLEN];
    mtext_printf(t, "{\"id\":%llu,\"client\":", (unsigned long long)s->id);
    admin_json_str(t, addr_format(&s->client, ip, sizeof(ip)));
    mtext_printf(t, ",\"user\":");
    if (s->user[0])
        admin_json_str(t, s->user);
    else
        mtext_printf(t, "null");
    mtext_printf(t, ",\"protocol\":");
    admin_json_str(t, s->proto);
    mtext_printf(t, ",\"state\":");
    admin_json_str(t, s->state);
    mtext_printf(t, ",\"destination\":");
    admin_json_str(t, s->dest);
    mtext_printf(t, ",\"outbound\":");
    admin_json_str(t, s->outbound);
    mtext_printf(t,
                 ",\"bytes_up\":%llu,\"bytes_down\":%llu,\"age_s\":%.3f,\"idle_s\":%.3f,"
                 "\"worker\":%u}",
                 (unsigned long long)s->up, (unsigned long long)s->down, (double)s->age_ms / 1000.0,
                 (double)s->idle_ms / 1000.0, s->worker);
}
