/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * apply.c: the steps that put a configuration into effect, taken both at
 * start (server.c) and on SIGHUP (reload.c): binding a listen address once
 * per worker, the verifier pool and the authentication helpers, the
 * accounting, and the log line with the pin tls:// listeners serve. Below
 * both callers (server_int.h), it calls neither.
 */
#include "server/server_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "acct/acct.h"
#include "auth/auth.h"
#include "core/sock.h"
#include "log/log.h"

/* Refuse an address whose port another process holds: SO_REUSEPORT would
 * let a second ferry of the same user join it silently, splitting the
 * clients between two processes. Only an upgrade (--upgrade) shares on
 * purpose. what names the setting for the error; at_start adds the hint. */
int server_check_port_free(const struct addr *a, const char *what, const char *origin,
                           bool at_start)
{
    if (sock_port_held_elsewhere(a) != 1)
        return 0; /* free, ours, or a probe error the real bind reports */
    char t[ADDR_STRLEN];
    log_error("%s %s%s%s%s: %s: another process holds port %u%s", what,
              addr_format(a, t, sizeof(t)), origin ? " (" : "", origin ? origin : "",
              origin ? ")" : "", strerror(EADDRINUSE), (unsigned)a->port,
              at_start ? " (is ferry already running? to take over from it without "
                         "downtime, start this one with --upgrade)"
                       : "");
    return -EADDRINUSE;
}

/* Bind listen address i of cfg once per worker: fds[w * stride + i].
 * Port 0 is resolved by the first bind and reused by the other workers.
 * exclusive: refuse a port another process holds (server_check_port_free). */
int server_bind_address(const struct config *cfg, size_t i, unsigned nworkers, int *fds,
                        size_t stride, struct addr *bound, bool exclusive, bool at_start)
{
    *bound = cfg->listen[i].addr;
    if (exclusive) {
        int rc = server_check_port_free(bound, "listen", cfg->listen[i].origin, at_start);
        if (rc)
            return rc;
    }
    for (unsigned w = 0; w < nworkers; w++) {
        int fd = sock_listen(bound, (int)cfg->backlog, true);
        if (fd < 0) {
            char a[ADDR_STRLEN];
            log_error("listen %s (%s): %s", addr_format(bound, a, sizeof(a)), cfg->listen[i].origin,
                      strerror(-fd));
            return fd;
        }
        /* Accepted sockets inherit TCP_NODELAY on Linux: one setsockopt
         * here instead of one per connection. */
        sock_set_nodelay(fd);
        fds[w * stride + i] = fd;
        if (bound->port == 0) {
            int rc = sock_local_addr(fd, bound);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The verifier pool, started with the first configuration that turns
 * authentication on. */
int server_auth_ensure(struct server *s, const struct config *cfg)
{
    if (s->auth_started || !config_auth_enabled(cfg))
        return 0;
    const struct config_auth *a = &cfg->auth;
    int rc = auth_start(&s->auth, a->workers, a->queue, 65536, a->max_failures,
                        a->failure_window_ms, a->block_ms, a->cache_size);
    if (rc) {
        log_error("authentication: cannot start the verifier pool: %s", strerror(-rc));
        return rc;
    }
    s->auth_started = true;
    atomic_store(&s->sh.auth, &s->auth);
    return 0;
}

/* The helpers follow the configuration being applied: its command (the
 * children of an older one are replaced as they come free), or none (the
 * idle ones are stopped). Called once the configuration is sure to be
 * used, so a reload that fails changes nothing. Out of memory keeps the
 * previous command (said in the log; with none, attempts fail closed). */
void server_auth_apply_helpers(struct server *s, const struct config *cfg)
{
    const struct config_auth *a = &cfg->auth;
    if (!s->auth_started)
        return;
    if (!a->helper_argv)
        helper_pool_clear(&s->auth.helpers);
    else if (helper_pool_configure(&s->auth.helpers, a->helper_argv, a->helper_children,
                                   a->helper_timeout_ms) < 0)
        log_error("authentication: out of memory for the helper's command; the helpers keep "
                  "the previous one");
}

/* tls:// listeners: the pin a client may use for the certificate served
 * (curl --proxy-pinnedpubkey, an HTTPS outbound's pin). */
void server_log_tls_pin(const struct config *cfg, const char *when)
{
    if (cfg->tls.ctx)
        log_info("%stls: serving %s, pin %s", when, cfg->tls.cert, cfg->tls.pin);
}

/* The accounting follows cfg (before any worker sees it): new users get
 * their slots, quotas change, counts stay. Warnings are logged with
 * prefix. */
void server_acct_apply(struct server *s, const struct config *cfg, const char *prefix)
{
    struct msglist warns = {0};
    if (s->sh.acct && cfg->quota.max_users != s->cfg->quota.max_users)
        log_warn("%squota.max_users changed; applies after a restart", prefix);
    acct_configure(s->sh.acct, cfg, (int64_t)time(NULL), &warns);
    for (size_t i = 0; i < warns.n; i++)
        log_warn("%s%s", prefix, warns.msg[i]);
    msglist_fini(&warns);
}
