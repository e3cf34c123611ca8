/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * relay.c: the relay's face to the worker (struct worker_ops): admit an
 * accepted connection and open its session on the first front row (the
 * PROXY header or the sniff of the protocol), close every session on
 * abort, and give back the worker's per-relay state at the end. This is
 * the top of relay/: it may name any room below it, and nothing in relay/
 * calls back into it.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "acct/acct.h"
#include "acl/limits.h"
#include "auth/auth.h"
#include "config/config.h"
#include "core/sock.h"
#include "log/log.h"
#include "relay/edge_check.h"
#include "relay/front.h"
#include "relay/front_udp.h"
#include "relay/h2conn.h"
#include "relay/h2rev.h"
#include "relay/outbound.h"
#include "relay/outbound_h2rev.h"
#include "relay/session.h"
#include "relay/udp_tunnel.h"
#include "udp/udp.h"

static void relay_accept(struct worker *w, struct listener *ls, int fd, const struct addr *peer)
{
    bool tracked = false;
    /* Behind a load balancer the limits apply to the address in the PROXY
     * header, not to the balancer: admission waits for it. */
    const struct config *cfg = w->cur->cfg;
    uint8_t pp = ls->index < cfg->nlisten ? cfg->listen[ls->index].proxy_protocol : 0;
    if (!pp && !policy_admit_client(w, peer, &tracked)) {
        /* Over the address's limits: closed before reading a byte. */
        sock_abort(fd);
        close(fd);
        stat_add(&w->stats.sessions[SP_NONE][errmap_stats(OUT_LIMIT)], 1);
        worker_session_ended(w);
        return;
    }
    /* direct is the only outbound for now. */
    /* A PROXY header comes before the TLS handshake (front_proxy hands over
     * to front_tls on a tls:// listener). */
    bool tls = ls->index < cfg->nlisten && cfg->listen[ls->index].tls;
    bool fwd = ls->index < cfg->nlisten && cfg->listen[ls->index].forward_port;
    bool edge = ls->index < cfg->nlisten && cfg->listen[ls->index].edge;
    const struct front_ops *first = edge  ? &front_edge
                                    : pp  ? &front_proxy
                                    : tls ? &front_tls
                                    : fwd ? &front_forward
                                          : &front_sniff;
    int rc = conn_open(w, (uint8_t)ls->index, fd, peer, tracked, first,
                       pp ? CONN_ST_PROXY : CONN_ST_GREETING, &outbound_direct);
    if (rc) {
        close(fd);
        if (tracked)
            limits_ip_release(w->sh->limits, peer);
        stat_add(&w->stats.sessions[SP_NONE][errmap_stats(OUT_FAILED)], 1);
        worker_session_ended(w);
    }
}

static void relay_abort_all(struct worker *w)
{
    /* Closing one session may close others (an HTTP/2 connection its
     * streams): take the first until none is left. */
    while (!list_empty(&w->sessions)) {
        struct conn *c = container_of(w->sessions.next, struct conn, link);
        conn_close(c, "shutdown");
    }
}

static void relay_worker_fini(struct worker *w)
{
    outbound_checks_stop(w->ob_checks);
    w->ob_checks = NULL;
    edge_checks_stop(w->edge_checks);
    w->edge_checks = NULL;
    udp_worker_fini(w);
    front_udp_stop(w); /* before the HTTP/2 connections its flows use */
    http_pool_fini(w);
    outbound_h2_worker_fini(w);
    if (w->auth) {
        auth_worker_fini(w->auth);
        free(w->auth);
        w->auth = NULL;
    }
    conn_freelist_fini(w);
}

/* A configuration came (at start or by a reload): the health checks
 * follow it, and when authentication is on, give this worker its
 * credential cache and result port, once the pool exists. */
static void relay_config_changed(struct worker *w)
{
    /* The pools' and edges' health checks run on worker 0 only, for the newest
     * configuration: those of the one before stop (its health is its own). */
    if (w->id == 0) {
        outbound_checks_stop(w->ob_checks);
        w->ob_checks = outbound_checks_start(w, w->cur->cfg);
        edge_checks_stop(w->edge_checks);
        w->edge_checks = edge_checks_start(w, w->cur->cfg);
    }
    /* HTTP/2 connections opened under the former configuration say
     * GOAWAY: their open streams finish, new ones come on a new
     * connection under the new one. */
    h2conn_goaway_all(w);
    h2rev_close_all(); /* reverse listeners go: the client registers again */
    outbound_h2_config_changed(w);
    outbound_h2rev_config_changed(w); /* worker 0 registers the reverse remotes */
    udp_tunnel_start();               /* udp/'s hook for datagrams through a tunnel */
    front_udp_apply(w);               /* [udp] forward = ... (worker 0) */
    const struct config *cfg = w->cur->cfg;
    struct auth *a = atomic_load(&w->sh->auth);
    if (w->auth || !a || !config_auth_enabled(cfg))
        return;
    struct auth_worker *aw = malloc(sizeof(*aw));
    if (!aw || auth_worker_init(aw, a, &w->loop, cfg->auth.cache_size) < 0) {
        free(aw);
        log_error("worker %u: cannot set up authentication (out of memory); clients that "
                  "must authenticate will be refused",
                  w->id);
        return;
    }
    aw->stats = &w->stats.auth;
    w->auth = aw;
}

/* A drain: HTTP/2 connections say GOAWAY and let their streams finish. */
static void relay_drain(struct worker *w)
{
    h2conn_goaway_all(w);
    h2rev_close_all();
    outbound_h2rev_fini(w); /* a client's reverse remotes take no new connection */
}

/* Once a second: with quota.end_sessions, the sessions of users over
 * their byte quota end (a stream session alone, not its connection). */
static void relay_tick(struct worker *w)
{
    struct acct *a = w->sh->acct;
    if (!acct_must_end(a))
        return;
    struct list *it = w->sessions.next;
    while (it != &w->sessions) {
        struct conn *c = container_of(it, struct conn, link);
        it = it->next; /* closing c unlinks it; a user's session closes nothing else */
        if (c->acct.ctr && acct_over(a, c->acct.slot) && c->state != CONN_ST_LINGER)
            conn_close(c, "quota-bytes");
    }
}

const struct worker_ops relay_worker_ops = {
    .tick = relay_tick,
    .drain = relay_drain,
    .accept = relay_accept,
    .abort_all = relay_abort_all,
    .fini = relay_worker_fini,
    .config_changed = relay_config_changed,
};
