/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_https.c: TLS 1.3 under a parent proxy's handshake (an HTTPS
 * parent, RFC 9110 section 9.3.6 over RFC 8446). The parent row
 * (outbound_parent.c) connects TCP, calls https_start() and
 * https_handshake() until the parent is verified, then speaks HTTP CONNECT
 * and lets the relay run, both through the stream calls here. The TLS
 * itself is tls/'s; this file only ties a session's c->tls to its c->up
 * readiness and says why a parent was not trusted (the parent row logs
 * it). It knows no front protocol and answers no client.
 */
#include <errno.h>
#include <string.h>

#include "config/config.h"
#include "log/log.h"
#include "relay/conn.h"
#include "relay/outbound_https.h"
#include "relay/session.h"
#include "tls/tls.h"

_Static_assert((int)TLS_WANT_READ == (int)SIDE_RD && (int)TLS_WANT_WRITE == (int)SIDE_WR,
               "tls/ waits are the relay's readiness bits");

int https_start(struct conn *c, const struct config_outbound *o)
{
    https_close(c);
    if (!o->tls)
        return -EINVAL;
    c->tls = tls_client_new(o->tls, c->up.fd, o->host);
    return c->tls ? 0 : -ENOMEM;
}

int https_handshake(struct conn *c, const char **why)
{
    if (!(c->up_ev & (SIDE_RD | SIDE_WR)))
        return 0;
    uint8_t want = 0;
    int rc = tls_handshake(c->tls, &want);
    if (rc == 0) {
        if (log_enabled(LOG_DEBUG)) {
            char alpn[32];
            tls_alpn(c->tls, alpn, sizeof(alpn));
            log_debug("conn %llu: TLS with the parent is up (ALPN %s)", (unsigned long long)c->id,
                      alpn[0] ? alpn : "none");
        }
        return 1;
    }
    if (rc == -EAGAIN) {
        c->up_ev &= (uint8_t)~want;
        return 0;
    }
    bool verify = rc == -EPROTO && strncmp(tls_error(c->tls), "certificate ", 12) == 0;
    *why = verify ? "tls-verify-failed" : "tls-handshake-failed";
    c->err = rc;
    return rc;
}

/* Errors of the relay's calls are logged at info: the session's access
 * line says upstream-error, this says what TLS made of it. */
static ssize_t https_result(struct conn *c, ssize_t n)
{
    if (n < 0 && n != -EAGAIN && n != -EINTR)
        log_info("conn %llu: %s", (unsigned long long)c->id, tls_error(c->tls));
    return n;
}

ssize_t https_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    return https_result(c, tls_read(c->tls, p, len, want));
}

ssize_t https_peek(struct conn *c, void *p, size_t len, uint8_t *want)
{
    return https_result(c, tls_peek(c->tls, p, len, want));
}

ssize_t https_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    return https_result(c, tls_write(c->tls, p, len, want));
}

int https_shutdown_wr(struct conn *c, uint8_t *want)
{
    return (int)https_result(c, tls_shutdown_wr(c->tls, want));
}

bool https_pending(const struct conn *c)
{
    return tls_pending(c->tls);
}

const char *https_error(const struct conn *c)
{
    return c->tls ? tls_error(c->tls) : "";
}

void https_close(struct conn *c)
{
    tls_free(c->tls);
    c->tls = NULL;
}
