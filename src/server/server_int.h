/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server_int.h: what server.c (start, signals, shutdown), reload.c
 * (SIGHUP) and apply.c (the steps both take to put a configuration into
 * effect) share, inside server/ only: the main thread's state and those
 * steps. Nothing outside server/ includes it. server.c calls reload.c,
 * both call apply.c, and apply.c calls neither.
 */
#ifndef FERRY_SERVER_SERVER_INT_H
#define FERRY_SERVER_SERVER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "acl/limits.h"
#include "auth/auth.h"
#include "config/config.h"
#include "util/addr.h"
#include "worker/worker.h"

struct metrics;
struct admin;

/* Everything the main thread keeps. */
struct server {
    const struct config_cli *cli;
    struct config *cfg; /* current; one reference */
    struct shared sh;
    struct worker *ws;
    unsigned nworkers;
    struct auth auth;
    bool auth_started;
    struct limits limits;
    /* Listening sockets as the workers have them: lfds[w * nlisten + i]
     * (numbers only; the workers own them) and the bound addresses. */
    int *lfds;
    struct addr *bound;
    size_t nlisten;
    struct metrics *metrics;
    struct admin *admin;      /* the admin API's state, with metrics */
    unsigned inited, started; /* workers initialised, threads started */
};

/* ---- apply.c ---- */

/* Refuse an address whose port another process holds (SO_REUSEPORT would
 * let a second ferry of the same user join it silently): -EADDRINUSE,
 * logged naming the setting what (and origin, or NULL; at_start adds the
 * hint about --upgrade), else 0. */
int server_check_port_free(const struct addr *a, const char *what, const char *origin,
                           bool at_start);
/* Bind listen address i of cfg once per worker: fds[w * stride + i].
 * Port 0 is resolved by the first bind and reused by the other workers.
 * exclusive: refuse a port another process holds; at_start adds the hint
 * about --upgrade to that error. 0 or -errno (logged). */
int server_bind_address(const struct config *cfg, size_t i, unsigned nworkers, int *fds,
                        size_t stride, struct addr *bound, bool exclusive, bool at_start);
/* Start the verifier pool with the first configuration that turns
 * authentication on (a no-op otherwise). 0 or -errno (logged). */
int server_auth_ensure(struct server *s, const struct config *cfg);
/* Make the authentication helpers follow cfg, once it is sure to be used. */
void server_auth_apply_helpers(struct server *s, const struct config *cfg);
/* Configure the accounting for cfg before any worker sees it; warnings are
 * logged with prefix. */
void server_acct_apply(struct server *s, const struct config *cfg, const char *prefix);
/* Log the pin of the certificate tls:// listeners serve (when: a prefix
 * for the log line). */
void server_log_tls_pin(const struct config *cfg, const char *when);

/* SIGHUP: load the configuration again and, if valid, bind what it adds
 * and hand it to the workers; otherwise log why and keep the current one
 * (reload.c). */
void server_reload(struct server *s);

#endif
