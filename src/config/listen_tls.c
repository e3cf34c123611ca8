/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * listen_tls.c: the server side of tls:// listeners, made once when the
 * configuration loads: the [tls] certificate and key are loaded into a
 * server context (tls/), so --check and a reload report a certificate that
 * does not load or a key that does not match, naming the line that set it,
 * and a reload with a bad certificate keeps the running configuration. The
 * context is shared by every worker's sessions (immutable, refcounted:
 * sessions outlive a reload). It reads files only through OpenSSL and
 * decides nothing about sessions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "tls/tls.h"

/* The first tls:// listener, or NULL. */
static const struct config_listen *first_tls_listener(const struct config *c)
{
    for (size_t i = 0; i < c->nlisten; i++)
        if (c->listen[i].tls)
            return &c->listen[i];
    return NULL;
}

void config_tls_load(struct config *c, struct msglist *errs)
{
    const struct config_listen *l = first_tls_listener(c);
    if (!l)
        return;
    const char *file = c->path ? c->path : "config";
    if (!c->tls.cert || !c->tls.key || !*c->tls.cert || !*c->tls.key) {
        msglist_push(errs, "%s: listen: a tls:// address needs [tls] cert and key (PEM files)",
                     l->origin);
        return;
    }
    /* ALPN: only http/1.1 until HTTP/2 is served (RFC 7301: a client must
     * not be told h2 works). */
    struct tls_server_conf conf = {
        .cert_file = c->tls.cert,
        .key_file = c->tls.key,
        .alpn = "h2,http/1.1", /* our preference first (RFC 7301 3.2) */
        .alpn_strict = true,
        .tls12 = c->tls.min_version == 12,
        .ticket_rotation_ms = c->tls.ticket_rotation_ms,
    };
    char why[TLS_ERROR_MAX];
    c->tls.ctx = tls_server_ctx_new(&conf, why, sizeof(why));
    if (!c->tls.ctx) {
        bool key = strncmp(why, "key ", 4) == 0;
        const char *src = key ? c->tls.key_src : c->tls.cert_src;
        msglist_push(errs, "%s:%d: tls.%s: %s", src ? src : file,
                     key ? c->tls.key_line : c->tls.cert_line, key ? "key" : "cert", why);
        return;
    }
    if (tls_server_pin(c->tls.ctx, c->tls.pin) < 0)
        snprintf(c->tls.pin, sizeof(c->tls.pin), "-");
}

void config_tls_fini(struct config *c)
{
    tls_ctx_free(c->tls.ctx);
    c->tls.ctx = NULL;
    free(c->tls.cert);
    free(c->tls.key);
    c->tls.cert = c->tls.key = NULL;
}
