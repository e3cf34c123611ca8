/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_parent.c: the parent's side of plain HTTP requests through an HTTP
 * parent (see http_parent.h): the pool key, the absolute-form head with
 * the parent's credentials (proto/http1's http1_proxy_form, the Basic
 * token from proto/parent), taking an idle connection to the parent, and
 * the log line of a 407. The credentials pass through a stack copy that is
 * wiped. It neither dials nor answers the client.
 */
#include "relay/http_parent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crypto/fcrypto.h"
#include "log/log.h"
#include "proto/http1.h"
#include "proto/parent.h"
#include "relay/outbound.h"
#include "relay/upstream_pool.h"

/* What the absolute form adds to a head at most: "http://" and the
 * authority (HTTP_PARENT_AUTHORITY_MAX), "Proxy-Authorization: Basic ",
 * base64 of 256 + 1 + 256 bytes, CRLF. */
#define HTTP_PARENT_SLACK 1024

int http_parent_key(const struct config *cfg, uint16_t ob, char *key, size_t cap)
{
    const struct config_outbound *o = &cfg->outbounds[ob];
    int n = snprintf(key, cap, "parent:%s@%s:%u", o->name, o->host, o->port);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int http_parent_head(struct conn *c, struct buf **head, uint32_t cap, const char *authority,
                     size_t alen)
{
    const struct config_outbound *o = &conn_cfg(c)->outbounds[c->ob];
    char pauth[6 + 4 * ((256 + 1 + 256 + 2) / 3) + 1] = "Basic ";
    size_t plen = 0;
    if (o->user) {
        size_t n = parent_basic_credentials(o->user, o->pass, pauth + 6, sizeof(pauth) - 6);
        if (!n)
            return -EINVAL;
        plen = 6 + n;
    }
    struct buf *in = *head, *out = buf_get_cap(&c->w->bufs, cap + HTTP_PARENT_SLACK);
    ssize_t n = out ? http1_proxy_form(buf_head(in), buf_len(in), authority, alen,
                                       plen ? pauth : NULL, plen, buf_tail(out), buf_room(out))
                    : -ENOMEM;
    fcrypto_wipe(pauth, sizeof(pauth));
    if (n < 0) {
        buf_put(&c->w->bufs, out);
        return n == -ENOMEM ? -ENOMEM : n == HTTP1_E_TOO_LARGE ? -E2BIG : -EINVAL;
    }
    out->end += (uint32_t)n;
    buf_put(&c->w->bufs, in);
    *head = out;
    return 0;
}

int http_parent_take(struct conn *c, const char *host, uint16_t port, uint16_t ob)
{
    const struct config *cfg = conn_cfg(c);
    char key[UPSTREAM_KEY_MAX];
    struct addr peer;
    if (!c->w->http || http_parent_key(cfg, ob, key, sizeof(key)) < 0)
        return -1;
    int fd = upstream_pool_take(c->w->http, key, &peer);
    if (fd < 0)
        return -1;
    /* The name's rule again, noted this time (the hit, c->rule): it still
     * sends the request this way, or the connection goes back to none. */
    if (policy_dest(c, 0, host, NULL, port) != POLICY_ALLOW || c->ob_rule != ob) {
        close(fd);
        return -1;
    }
    c->ob = ob;
    c->out = outbound_ops_for(&cfg->outbounds[ob]);
    c->dialed = true;
    c->proxy_form = true;
    return fd;
}

void http_parent_refused_log(const struct conn *c)
{
    const struct config_outbound *o = &conn_cfg(c)->outbounds[c->ob];
    log_warn("conn %llu: outbound %s: parent %s port %u: %s (407 to a plain HTTP request)",
             (unsigned long long)c->id, o->name, o->host, o->port,
             o->user ? "parent refused ferry's credentials"
                     : "parent requires credentials and none are configured");
}
