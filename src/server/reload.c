/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reload.c: SIGHUP (server_reload). The configuration is loaded again; if
 * it is valid it is handed to the workers (new sessions use it,
 * established ones keep theirs), otherwise every error is logged and the
 * previous one stays. Listen addresses a reload adds are bound here first
 * (all or nothing: listen_plan), then handed to the workers with the
 * configuration; addresses it drops stop accepting, their sessions carry
 * on. Settings fixed for the life of the process are named in a warning
 * (warn_restart_needed). The steps a reload shares with the start
 * (binding, the verifier pool, accounting) are apply.c's (server_int.h).
 */
#include "server/server_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/auth.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "worker/worker.h"

static bool listen_equal(const struct config *a, const struct config *b)
{
    if (a->nlisten != b->nlisten)
        return false;
    for (size_t i = 0; i < a->nlisten; i++)
        if (!addr_equal(&a->listen[i].addr, &b->listen[i].addr))
            return false;
    return true;
}

/* The listen address of old that nc's address i is (as configured: an
 * address with port 0 stays the one bound before), or -1 when it is new. */
static long listen_find(const struct config *old, const struct config *nc, size_t i)
{
    for (size_t j = 0; j < old->nlisten; j++)
        if (addr_equal(&old->listen[j].addr, &nc->listen[i].addr))
            return (long)j;
    return -1;
}

/* Reload with changed listen addresses: bind the new ones (all or
 * nothing) and build each worker's set. On success s->lfds and s->bound
 * describe the new layout and sets[w] are ready to post. */
static int listen_plan(struct server *s, const struct config *nc, struct listen_set **sets)
{
    size_t nl = nc->nlisten;
    unsigned nw = s->nworkers;
    int *fds = malloc(nl * nw * sizeof(*fds));
    struct addr *bound = calloc(nl, sizeof(*bound));
    bool *fresh = calloc(nl, sizeof(*fresh));
    int rc = fds && bound && fresh ? 0 : -ENOMEM;
    for (size_t i = 0; i < nl * nw && fds; i++)
        fds[i] = -1;
    for (size_t i = 0; i < nl && !rc; i++) {
        long j = listen_find(s->cfg, nc, i);
        if (j >= 0) {
            bound[i] = s->bound[j];
            for (unsigned w = 0; w < nw; w++)
                fds[w * nl + i] = s->lfds[w * s->nlisten + (size_t)j];
        } else {
            fresh[i] = true;
            /* Never shared on a reload: --upgrade is about the ports the
             * old ferry serves at our start, not about ones added later. */
            rc = server_bind_address(nc, i, nw, fds, nl, &bound[i], true, false);
        }
    }
    for (unsigned w = 0; w < nw && !rc; w++) {
        struct listen_set *ls = sets[w] = calloc(1, sizeof(*ls));
        if (!ls || !(ls->fds = malloc(nl * sizeof(int))) ||
            !(ls->addrs = malloc(nl * sizeof(struct addr))) ||
            !(ls->fresh = malloc(nl * sizeof(bool))) ||
            !(ls->arr = calloc(nl ? nl : 1, sizeof(struct listener)))) {
            rc = -ENOMEM;
            break;
        }
        ls->n = nl;
        for (size_t i = 0; i < nl; i++) {
            ls->fds[i] = fds[w * nl + i];
            ls->addrs[i] = bound[i];
            ls->fresh[i] = fresh[i];
        }
    }
    if (rc) {
        for (size_t i = 0; i < nl && fds && fresh; i++)
            for (unsigned w = 0; w < nw && fresh[i]; w++)
                if (fds[w * nl + i] >= 0)
                    close(fds[w * nl + i]);
        for (unsigned w = 0; w < nw; w++) {
            listen_set_free(sets[w]);
            sets[w] = NULL;
        }
        free(fds);
        free(bound);
        free(fresh);
        return rc;
    }
    for (size_t i = 0; i < nl; i++) {
        char a[ADDR_STRLEN];
        if (fresh[i])
            log_info("reload: listening on %s", addr_format(&bound[i], a, sizeof(a)));
    }
    for (size_t j = 0; j < s->cfg->nlisten; j++) {
        bool kept = false;
        for (size_t i = 0; i < nl && !kept; i++)
            kept = listen_find(s->cfg, nc, i) == (long)j;
        char a[ADDR_STRLEN];
        if (!kept)
            log_info("reload: no longer listening on %s (established sessions carry on)",
                     addr_format(&s->bound[j], a, sizeof(a)));
    }
    free(s->lfds);
    free(s->bound);
    free(fresh);
    s->lfds = fds;
    s->bound = bound;
    s->nlisten = nl;
    return 0;
}

static bool str_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Settings that are fixed for the life of the process in this version. */
static void warn_restart_needed(const struct config *old, const struct config *nc)
{
    if (old->metrics_listen.family != nc->metrics_listen.family ||
        (nc->metrics_listen.family && !addr_equal(&old->metrics_listen, &nc->metrics_listen)))
        log_warn("reload: metrics.listen changed; applies after a restart");
    if (!str_equal(old->user, nc->user) || !str_equal(old->group, nc->group))
        log_warn("reload: user or group changed; applies after a restart");
    if (old->workers != nc->workers)
        log_warn("reload: workers changed; applies after a restart");
    if (!str_equal(old->log_file, nc->log_file))
        log_warn("reload: log_file changed; applies after a restart");
    if (old->log_target != nc->log_target || old->syslog_facility != nc->syslog_facility ||
        !str_equal(old->syslog_address, nc->syslog_address))
        log_warn("reload: log_target, syslog_address or syslog_facility changed; applies after "
                 "a restart");
    if (old->backlog != nc->backlog)
        log_warn("reload: backlog changed; applies after a restart");
    if (old->limits.ip_table != nc->limits.ip_table)
        log_warn("reload: limits.ip_table changed; applies after a restart");
    if (config_auth_enabled(old) &&
        (old->auth.workers != nc->auth.workers || old->auth.queue != nc->auth.queue ||
         old->auth.cache_size != nc->auth.cache_size))
        log_warn("reload: auth.workers, auth.queue or auth.cache_size changed; they apply after "
                 "a restart");
    /* The rest of [dns] (hosts = PATH re-read, cache_size, min_ttl,
     * max_ttl) applies at once: resolver_update(). */
    const struct config_dns *od = &old->dns, *nd = &nc->dns;
    if (!str_equal(od->servers, nd->servers) || od->timeout_ms != nd->timeout_ms ||
        od->tries != nd->tries || (od->hosts == NULL) != (nd->hosts == NULL))
        log_warn("reload: dns.servers, dns.timeout, dns.tries, or whether dns.hosts is set, "
                 "changed; they apply after a restart");
}

static void reload_failed(struct server *s, struct config *nc)
{
    config_unref(nc);
    log_error("reload: still running the previous configuration");
    metrics_reloaded(s->metrics, NULL);
}

void server_reload(struct server *s)
{
    struct config *nc = NULL;
    struct msglist errs = {0};
    log_info("SIGHUP: reloading %s", s->cli->path ? s->cli->path : "(built-in defaults)");
    if (config_load(s->cli, &nc, &errs)) {
        size_t nerr = 0;
        for (size_t i = 0; i < errs.n; i++) {
            bool warning = strncmp(errs.msg[i], "warning: ", 9) == 0;
            nerr += !warning;
            if (warning)
                log_warn("reload: %s", errs.msg[i] + 9);
            else
                log_error("reload: %s", errs.msg[i]);
        }
        log_error("reload: the new configuration has %zu error%s; still running the previous "
                  "one",
                  nerr, nerr == 1 ? "" : "s");
        msglist_fini(&errs);
        metrics_reloaded(s->metrics, NULL);
        return;
    }
    msglist_fini(&errs);
    for (size_t i = 0; i < nc->warnings.n; i++)
        log_warn("reload: %s", nc->warnings.msg[i]);
    warn_restart_needed(s->cfg, nc);
    if (server_auth_ensure(s, nc)) {
        reload_failed(s, nc);
        return;
    }
    struct listen_set **sets = calloc(s->nworkers, sizeof(*sets));
    if (!sets) {
        log_error("reload: out of memory");
        reload_failed(s, nc);
        return;
    }
    if (!listen_equal(s->cfg, nc)) {
        int rc = listen_plan(s, nc, sets);
        if (rc) {
            if (rc == -ENOMEM)
                log_error("reload: out of memory for the new listen addresses");
            free(sets);
            reload_failed(s, nc);
            return;
        }
    }
    server_auth_apply_helpers(s, nc);
    if (s->auth_started)
        throttle_configure(&s->auth.t, nc->auth.max_failures, nc->auth.failure_window_ms,
                           nc->auth.block_ms);
    log_set_level(nc->log_level);
    log_set_format(nc->log_format);
    server_acct_apply(s, nc, "reload: ");
    for (unsigned i = 0; i < s->nworkers; i++) {
        if (worker_post_config(&s->ws[i], nc, sets[i]) < 0) {
            log_error("reload: worker %u: out of memory; it keeps the previous configuration", i);
            for (size_t k = 0; sets[i] && k < sets[i]->n; k++)
                if (sets[i]->fresh[k])
                    close(sets[i]->fds[k]);
            listen_set_free(sets[i]);
        }
    }
    free(sets);
    config_unref(s->cfg);
    s->cfg = nc;
    metrics_reloaded(s->metrics, nc);
    server_log_tls_pin(nc, "reload: ");
    char backend[4200];
    config_auth_describe(nc, backend, sizeof(backend));
    if (config_auth_enabled(nc))
        log_info("reload: configuration applied to new sessions (%s)", backend);
    else
        log_info("reload: configuration applied to new sessions (no authentication)");
}
