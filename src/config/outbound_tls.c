/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_tls.c: the TLS client context of an HTTPS outbound, made once
 * when the configuration loads (so --check and a reload report a CA file
 * that cannot be read, with the section's FILE:LINE) and shared by every
 * worker's sessions through it (tls/: contexts are immutable and
 * refcounted, so sessions outlive a reload). It reads files only through
 * OpenSSL and decides nothing about sessions.
 */
#include <errno.h>
#include <stdio.h>

#include "config/outbound.h"
#include "tls/tls.h"

int outbound_tls_load(struct config_outbound *o, char *err, size_t errlen)
{
    if (o->kind != OUTBOUND_KIND_HTTPS || o->tls)
        return 0;
    /* ALPN "http/1.1": HTTP/1.1 CONNECT is what this parent is spoken
     * (RFC 7301); h2 comes with the tunnel. */
    struct tls_client_conf conf = {
        .pin = o->has_pin ? o->pin : NULL,
        .ca_file = o->has_pin ? NULL : o->ca_file,
        .alpn = "http/1.1",
    };
    char why[TLS_ERROR_MAX];
    o->tls = tls_client_ctx_new(&conf, why, sizeof(why));
    if (o->tls && o->mux != OUTBOUND_MUX_HTTP1) {
        /* The shared HTTP/2 connection (relay/outbound_h2.c): auto also
         * offers http/1.1 and falls back to the context above. */
        conf.alpn = o->ws_path[0]               ? "http/1.1" /* the Upgrade is HTTP/1.1 */
                    : o->mux == OUTBOUND_MUX_H2 ? "h2"
                                                : "h2,http/1.1";
        o->tls_h2 = tls_client_ctx_new(&conf, why, sizeof(why));
    }
    if (!o->tls || (o->mux != OUTBOUND_MUX_HTTP1 && !o->tls_h2)) {
        snprintf(err, errlen, "outbound %s: %s", o->name, why);
        return -EINVAL;
    }
    return 0;
}

void outbound_tls_fini(struct config_outbound *o)
{
    tls_ctx_free(o->tls);
    o->tls = NULL;
    tls_ctx_free(o->tls_h2);
    o->tls_h2 = NULL;
}
