/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_parent.h: plain HTTP requests (absolute-form) through an HTTP
 * parent proxy, for the HTTP front (http.c). Through an HTTP parent a
 * request is not tunnelled: it goes to the parent in absolute form
 * (RFC 9112 3.2.2) with the parent's own credentials, over a keep-alive
 * connection to the parent that the worker's upstream pool keeps per
 * parent (requests to any origin share it). This room knows the parent's
 * side of that: the pool key, the head, an idle connection to take, the
 * log line of a refusal. The exchange itself (timers, bodies, answers) is
 * http_fwd.c's; it must not learn another front, nor dial (the parent row,
 * outbound_parent.c, dials, told by outbound_proxy_form()). Not for use
 * outside relay/.
 */
#ifndef FERRY_RELAY_HTTP_PARENT_H
#define FERRY_RELAY_HTTP_PARENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "relay/session.h"

/* The pool key of idle connections to the HTTP parent ob:
 * "parent:NAME@HOST:PORT" (the host and port too, so a reload that points
 * the name elsewhere finds none of the old ones). 0, or -1 when it does
 * not fit in cap. */
int http_parent_key(const struct config *cfg, uint16_t ob, char *key, size_t cap);

/* Put the request head in *head (origin form, as http1_rewrite_request
 * wrote it, unsent) in the absolute form the session's HTTP parent (c->ob)
 * takes, with "Proxy-Authorization: Basic" for the parent's credentials
 * when it has some. authority is the client's (as in its target). *head
 * is replaced by a buffer of the worker's (at least cap bytes, more for
 * what is added). 0, or -ENOMEM, -E2BIG, -EINVAL (a head or authority
 * that cannot be put so); *head is unchanged then. */
int http_parent_head(struct conn *c, struct buf **head, uint32_t cap, const char *authority,
                     size_t alen);

/* A plain request for host:port whose name's rule allows it through the
 * HTTP parent ob: an idle connection to that parent from the pool, if
 * there is one. Then the rule is noted (c->rule, c->ob_rule) and the
 * session is routed (c->ob, c->out, c->dialed), and the fd (not
 * registered with the loop) is returned; else -1, and the session dials. */
int http_parent_take(struct conn *c, const char *host, uint16_t port, uint16_t ob);

/* The parent answered 407 to a request sent in absolute form: a warning
 * that names the outbound and says the parent refused ferry's credentials
 * (or wanted some, none being configured). */
void http_parent_refused_log(const struct conn *c);

#endif
