/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_https.h: TLS under a parent proxy's handshake (an HTTPS parent,
 * OUTBOUND_KIND_HTTPS): what the parent row (outbound_parent.c) calls
 * between its TCP connect and its HTTP CONNECT, and the stream calls
 * (outbound.h: read, write, shutdown_wr, pending) that carry the CONNECT
 * and then the relay through TLS. The session's TLS object is c->tls,
 * from https_start() until https_close(). Not for use outside relay/.
 */
#ifndef FERRY_RELAY_OUTBOUND_HTTPS_H
#define FERRY_RELAY_OUTBOUND_HTTPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/outbound.h"

struct conn;

/* c->up is connected to the parent o: start a TLS client session on it
 * (SNI and the certificate checks of o->tls). 0, or -ENOMEM / -EINVAL (o
 * has no TLS context). */
int https_start(struct conn *c, const struct config_outbound *o);

/* Drive the TLS handshake after an event on c->up (or at once after
 * https_start()). 1: done, the parent verified; 0: waiting for c->up; a
 * negative errno: failed, with *why set for the access log
 * ("tls-verify-failed", "tls-handshake-failed") and the sentence for the
 * operator in https_error() (a certificate pin mismatch, a verify failure,
 * the parent closing); the caller logs it and ends the dial
 * (outbound_fail(), OUT_FAILED: the parent is up but is not the one
 * configured). */
int https_handshake(struct conn *c, const char **why);

/* The stream calls of outbound.h over c->tls, and a read that leaves the
 * bytes in place (a handshake that must not read past its reply). */
ssize_t https_read(struct conn *c, void *p, size_t len, uint8_t *want);
ssize_t https_peek(struct conn *c, void *p, size_t len, uint8_t *want);
ssize_t https_write(struct conn *c, const void *p, size_t len, uint8_t *want);
int https_shutdown_wr(struct conn *c, uint8_t *want);
bool https_pending(const struct conn *c);

/* Why the last TLS call on c->tls failed ("" when none). */
const char *https_error(const struct conn *c);

/* Free c->tls (no close_notify: the session is over). NULL-safe. */
void https_close(struct conn *c);

#endif
