/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_check.c: the health checks of edge backends, and the probe they
 * and status fetches use (edge_check.h). Every interval each backend (an
 * address) of each route of an edge with health_check is connected to
 * within connect_timeout; on a Minecraft edge with status_cache = yes the
 * probe then asks for the status (a Handshake with the route's host,
 * intent 1, at the protocol the last client asked with, and a Status
 * Request, proto/mcframe.h) and the answer is kept in the route's cache
 * for that version (edge_cache.h). A failure marks the backend down
 * (every strategy skips it while another is up), a success up again; each
 * change is logged. A session asking a version the cache lacks runs the
 * same probe on its own worker (edge_serve.c).
 *
 * The checks of one configuration run on worker 0's loop and hold a
 * reference on it; a reload stops them (unlinked at once, freed after the
 * loop's batch, the loop's rule) and starts those of the new one. This
 * file must not touch sessions.
 */
#include "relay/edge_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "config/edge.h"
#include "core/loop.h"
#include "core/sock.h"
#include "log/log.h"
#include "proto/hostpat.h"
#include "proto/mcframe.h"
#include "relay/edge_cache.h"
#include "relay/errmap.h"
#include "worker/worker.h"

#define CHECK_IN_MAX  (MC_STATUS_JSON_MAX + 16)
#define DEFAULT_PROTO 765 /* 1.20.4: what a check asks as before any client did */

enum probe_phase { PR_IDLE, PR_CONNECT, PR_STATUS };

struct echeck {
    struct edge_checks *ck;
    uint16_t edge, route;
    uint32_t backend;
    struct timer next; /* the next check */
    uint64_t started_ms;
    struct edge_probe probe;
};

struct edge_checks {
    struct worker *w;
    struct config *cfg;
    struct release rel;
    uint32_t n;
    struct echeck p[];
};

static const struct config_edge *ck_edge(const struct echeck *p)
{
    return &p->ck->cfg->edges[p->edge];
}

static const struct edge_route *ck_route(const struct echeck *p)
{
    return &ck_edge(p)->routes[p->route];
}

static struct edge_backend *ck_backend(const struct echeck *p)
{
    return &ck_route(p)->backends[p->backend];
}

/* ---- the probe: connect, and maybe a status exchange ---------------------- */

static void probe_release(struct edge_probe *p)
{
    if (p->io.fd >= 0) {
        int fd = p->io.fd;
        loop_io_del(p->loop, &p->io);
        close(fd);
    }
    loop_timer_stop(p->loop, &p->timer);
    free(p->in);
    p->in = NULL;
    p->in_len = 0;
    p->phase = PR_IDLE;
}

static void probe_end(struct edge_probe *p, const char *failed, const uint8_t *json, size_t len)
{
    uint8_t *in = p->in; /* json may point into it: freed after the callback */
    p->in = NULL;
    probe_release(p);
    p->done(p, failed, json, len);
    free(in);
}

/* TCP is up: a probe without status has passed; one with it asks. */
static void probe_connected(struct edge_probe *p)
{
    if (!p->status) {
        probe_end(p, NULL, NULL, 0);
        return;
    }
    uint8_t q[300];
    size_t n = mc_status_query(q, sizeof(q), p->host, p->to.port, p->proto);
    ssize_t k = n ? send(p->io.fd, q, n, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
    p->in = malloc(CHECK_IN_MAX);
    if (k != (ssize_t)n || !p->in) {
        probe_end(p, k < 0 ? "cannot send the status query" : "out of memory", NULL, 0);
        return;
    }
    p->phase = PR_STATUS;
}

/* Read the backend's answer until its first frame is complete. */
static void probe_read(struct edge_probe *p)
{
    for (;;) {
        ssize_t k = recv(p->io.fd, p->in + p->in_len, CHECK_IN_MAX - p->in_len, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (k <= 0) {
            probe_end(p, k == 0 ? "closed before a status answer" : "status read failed", NULL, 0);
            return;
        }
        p->in_len += (size_t)k;
        uint32_t id;
        size_t off, len, flen, joff, jlen;
        int rc = mc_frame(p->in, p->in_len, CHECK_IN_MAX, &id, &off, &len, &flen);
        if (rc == 0)
            continue;
        if (rc < 0 || id != 0 || mc_status_json(p->in + off, len, &joff, &jlen) != 1) {
            probe_end(p, "not a Minecraft status answer", NULL, 0);
            return;
        }
        probe_end(p, NULL, p->in + off + joff, jlen);
        return;
    }
}

static void probe_on_io(struct io *io, uint32_t events)
{
    struct edge_probe *p = container_of(io, struct edge_probe, io);
    if (p->phase == PR_STATUS) {
        probe_read(p);
        return;
    }
    if (p->phase != PR_CONNECT || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = sock_error(io->fd);
        char why[80];
        snprintf(why, sizeof(why), "cannot connect: %s", errmap_name(err ? err : -ECONNREFUSED));
        probe_end(p, why, NULL, 0);
        return;
    }
    probe_connected(p);
}

static void probe_on_timer(struct timer *t)
{
    struct edge_probe *p = container_of(t, struct edge_probe, timer);
    probe_end(p,
              p->phase == PR_CONNECT ? "no connection within connect_timeout"
                                     : "no status answer within connect_timeout",
              NULL, 0);
}

void edge_probe_init(struct edge_probe *p, struct loop *l)
{
    p->loop = l;
    p->phase = PR_IDLE;
    io_init(&p->io, probe_on_io);
    timer_init(&p->timer, probe_on_timer);
}

void edge_probe_start(struct edge_probe *p, uint32_t timeout_ms)
{
    loop_timer_arm(p->loop, &p->timer, timeout_ms);
    const char *failed = NULL;
    int fd = sock_connect_from(&p->to, NULL, NULL, &failed);
    if (fd < 0) {
        probe_end(p, "cannot connect", NULL, 0);
        return;
    }
    if (loop_io_add(p->loop, &p->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) {
        close(fd);
        probe_end(p, "cannot watch the socket", NULL, 0);
        return;
    }
    p->phase = PR_CONNECT;
}

void edge_probe_cancel(struct edge_probe *p)
{
    probe_release(p);
}

/* ---- the checks ----------------------------------------------------------- */

/* The check is over: mark the backend, keep a status answer, and the next
 * one an interval after this one began. */
static void check_done(struct edge_probe *pr, const char *failed, const uint8_t *json, size_t len)
{
    struct echeck *p = pr->arg;
    struct edge_backend *b = ck_backend(p);
    if (json)
        edge_cache_store(ck_route(p), pr->proto, json, len, false, clock_ms());
    uint8_t was = atomic_exchange_explicit(&b->check_down, failed != NULL, memory_order_relaxed);
    char a[ADDR_STRLEN];
    if (failed && !was)
        log_warn("edge %s: backend %s of route %s is down: %s", ck_edge(p)->name,
                 addr_format(&b->addr, a, sizeof(a)), ck_route(p)->host, failed);
    else if (!failed && was)
        log_info("edge %s: backend %s of route %s is up again", ck_edge(p)->name,
                 addr_format(&b->addr, a, sizeof(a)), ck_route(p)->host);
    loop_timer_arm_at(&p->ck->w->loop, &p->next, p->started_ms + ck_edge(p)->health_ms);
}

const char *edge_query_host(const struct edge_route *r)
{
    if (r->rewrite && !strchr(r->rewrite, '{'))
        return r->rewrite;
    return hostpat_suffix(r->host);
}

static void check_on_timer(struct timer *t)
{
    struct echeck *p = container_of(t, struct echeck, next);
    const struct edge_route *r = ck_route(p);
    int32_t proto = atomic_load_explicit(&r->live->client_proto, memory_order_relaxed);
    p->started_ms = loop_now(&p->ck->w->loop);
    p->probe.to = ck_backend(p)->addr;
    p->probe.status = ck_edge(p)->status_cache;
    p->probe.proto = proto ? proto : DEFAULT_PROTO;
    p->probe.host = edge_query_host(r);
    edge_probe_start(&p->probe, p->ck->cfg->connect_timeout_ms);
}

struct edge_checks *edge_checks_start(struct worker *w, struct config *cfg)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < cfg->nedges; i++)
        for (uint32_t j = 0; cfg->edges[i].health_ms && j < cfg->edges[i].nroutes; j++)
            for (uint32_t k = 0; k < cfg->edges[i].routes[j].nbackends; k++)
                n += !cfg->edges[i].routes[j].backends[k].name;
    if (!n)
        return NULL;
    struct edge_checks *ck = calloc(1, sizeof(*ck) + n * sizeof(ck->p[0]));
    if (!ck) {
        log_error("worker %u: out of memory for the edges' health checks; none will run", w->id);
        return NULL;
    }
    ck->w = w;
    ck->cfg = config_ref(cfg);
    for (uint32_t i = 0; i < cfg->nedges; i++) {
        const struct config_edge *e = &cfg->edges[i];
        for (uint32_t j = 0; e->health_ms && j < e->nroutes; j++) {
            for (uint32_t k = 0; k < e->routes[j].nbackends; k++) {
                if (e->routes[j].backends[k].name)
                    continue; /* resolved per session: nothing fixed to check */
                struct echeck *p = &ck->p[ck->n++];
                p->ck = ck;
                p->edge = (uint16_t)i;
                p->route = (uint16_t)j;
                p->backend = k;
                edge_probe_init(&p->probe, &w->loop);
                p->probe.done = check_done;
                p->probe.arg = p;
                timer_init(&p->next, check_on_timer);
                loop_timer_arm(&w->loop, &p->next, 0);
            }
        }
    }
    return ck;
}

static void checks_free(struct release *r)
{
    struct edge_checks *ck = container_of(r, struct edge_checks, rel);
    config_unref(ck->cfg);
    free(ck);
}

void edge_checks_stop(struct edge_checks *ck)
{
    if (!ck)
        return;
    struct loop *l = &ck->w->loop;
    for (uint32_t i = 0; i < ck->n; i++) {
        loop_timer_stop(l, &ck->p[i].next);
        edge_probe_cancel(&ck->p[i].probe);
    }
    loop_release(l, &ck->rel, checks_free);
}
