/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_check.c: the health checks of edge backends and the status cache
 * they fill (edge_check.h). Every interval each backend of each route of
 * an edge with health_check is connected to within connect_timeout; on a
 * Minecraft edge with status_cache = yes the check then asks for the
 * status (a Handshake with the route's host, intent 1, and a Status
 * Request, proto/mcframe.h) and keeps the JSON of the answer as the
 * route's cache. A failure marks the backend down (every strategy skips
 * it while another is up), a success up again; each change is logged.
 *
 * The checks of one configuration run on worker 0's loop and hold a
 * reference on it; a reload stops them (unlinked at once, freed after the
 * loop's batch, the loop's rule) and starts those of the new one. This
 * file must not touch sessions: front_edge.c reads the cache through
 * edge_status_copy().
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
#include "relay/errmap.h"
#include "worker/worker.h"

#define CHECK_IN_MAX  (MC_STATUS_JSON_MAX + 16)
#define DEFAULT_PROTO 765 /* 1.20.4: what a check asks as before any client did */

enum check_phase { CK_IDLE, CK_CONNECT, CK_STATUS };

struct echeck {
    struct edge_checks *ck;
    uint16_t edge, route;
    uint32_t backend;
    uint8_t phase; /* enum check_phase */
    struct io io;
    struct timer timer;
    uint64_t started_ms;
    uint8_t *in;
    size_t in_len;
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

size_t edge_status_copy(const struct edge_route *r, char *out, size_t cap, uint64_t *age_ms)
{
    struct edge_route_live *l = r->live;
    size_t n = 0;
    pthread_mutex_lock(&l->status_mu);
    if (l->status && l->status_len < cap) {
        memcpy(out, l->status, l->status_len);
        out[l->status_len] = '\0';
        n = l->status_len;
        uint64_t now = clock_us() / 1000;
        *age_ms = now > l->status_ms ? now - l->status_ms : 0;
    }
    pthread_mutex_unlock(&l->status_mu);
    return n;
}

static void status_store(const struct edge_route *r, const uint8_t *json, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, json, len);
    copy[len] = '\0';
    struct edge_route_live *l = r->live;
    pthread_mutex_lock(&l->status_mu);
    char *old = l->status;
    l->status = copy;
    l->status_len = len;
    l->status_ms = clock_us() / 1000;
    pthread_mutex_unlock(&l->status_mu);
    free(old);
}

static void check_release(struct echeck *p)
{
    if (p->io.fd >= 0) {
        int fd = p->io.fd;
        loop_io_del(&p->ck->w->loop, &p->io);
        close(fd);
    }
    free(p->in);
    p->in = NULL;
    p->in_len = 0;
}

/* The check is over: mark the backend, and the next one an interval
 * after this one began. */
static void check_end(struct echeck *p, const char *failed)
{
    struct edge_backend *b = ck_backend(p);
    uint8_t was = atomic_exchange_explicit(&b->check_down, failed != NULL, memory_order_relaxed);
    char a[ADDR_STRLEN];
    if (failed && !was)
        log_warn("edge %s: backend %s of route %s is down: %s", ck_edge(p)->name,
                 addr_format(&b->addr, a, sizeof(a)), ck_route(p)->host, failed);
    else if (!failed && was)
        log_info("edge %s: backend %s of route %s is up again", ck_edge(p)->name,
                 addr_format(&b->addr, a, sizeof(a)), ck_route(p)->host);
    check_release(p);
    p->phase = CK_IDLE;
    loop_timer_arm_at(&p->ck->w->loop, &p->timer, p->started_ms + ck_edge(p)->health_ms);
}

/* The host a status query names: the route's rewrite= when it has no
 * captures, else the route's host, a pattern's part after its last '*'. */
static const char *query_host(const struct edge_route *r)
{
    if (r->rewrite && !strchr(r->rewrite, '{'))
        return r->rewrite;
    return hostpat_suffix(r->host);
}

/* TCP is up: a check without the status cache has passed; one with it asks. */
static void check_connected(struct echeck *p)
{
    const struct config_edge *e = ck_edge(p);
    if (!e->status_cache) {
        check_end(p, NULL);
        return;
    }
    const struct edge_route *r = ck_route(p);
    int32_t proto = atomic_load_explicit(&r->live->client_proto, memory_order_relaxed);
    uint8_t q[300];
    size_t n = mc_status_query(q, sizeof(q), query_host(r), ck_backend(p)->addr.port,
                               proto ? proto : DEFAULT_PROTO);
    ssize_t k = n ? send(p->io.fd, q, n, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
    p->in = malloc(CHECK_IN_MAX);
    if (k != (ssize_t)n || !p->in) {
        check_end(p, k < 0 ? "cannot send the status query" : "out of memory");
        return;
    }
    p->phase = CK_STATUS;
}

/* Read the backend's answer until its first frame is complete. */
static void check_read(struct echeck *p)
{
    for (;;) {
        ssize_t k = recv(p->io.fd, p->in + p->in_len, CHECK_IN_MAX - p->in_len, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (k <= 0) {
            check_end(p, k == 0 ? "closed before a status answer" : "status read failed");
            return;
        }
        p->in_len += (size_t)k;
        uint32_t id;
        size_t off, len, flen, joff, jlen;
        int rc = mc_frame(p->in, p->in_len, CHECK_IN_MAX, &id, &off, &len, &flen);
        if (rc == 0)
            continue;
        if (rc < 0 || id != 0 || mc_status_json(p->in + off, len, &joff, &jlen) != 1) {
            check_end(p, "not a Minecraft status answer");
            return;
        }
        status_store(ck_route(p), p->in + off + joff, jlen);
        check_end(p, NULL);
        return;
    }
}

static void check_on_io(struct io *io, uint32_t events)
{
    struct echeck *p = container_of(io, struct echeck, io);
    if (p->phase == CK_STATUS) {
        check_read(p);
        return;
    }
    if (p->phase != CK_CONNECT || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    if (events & (EPOLLERR | EPOLLHUP)) {
        int err = sock_error(io->fd);
        char why[80];
        snprintf(why, sizeof(why), "cannot connect: %s", errmap_name(err ? err : -ECONNREFUSED));
        check_end(p, why);
        return;
    }
    check_connected(p);
}

static void check_start(struct echeck *p)
{
    struct worker *w = p->ck->w;
    p->started_ms = loop_now(&w->loop);
    loop_timer_arm(&w->loop, &p->timer, p->ck->cfg->connect_timeout_ms);
    struct addr to = ck_backend(p)->addr;
    const char *failed = NULL;
    int fd = sock_connect_from(&to, NULL, NULL, &failed);
    if (fd < 0) {
        check_end(p, "cannot connect");
        return;
    }
    if (loop_io_add(&w->loop, &p->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)) {
        close(fd);
        check_end(p, "cannot watch the socket");
        return;
    }
    p->phase = CK_CONNECT;
}

static void check_on_timer(struct timer *t)
{
    struct echeck *p = container_of(t, struct echeck, timer);
    if (p->phase == CK_IDLE)
        check_start(p);
    else
        check_end(p, p->phase == CK_CONNECT ? "no connection within connect_timeout"
                                            : "no status answer within connect_timeout");
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
                io_init(&p->io, check_on_io);
                timer_init(&p->timer, check_on_timer);
                loop_timer_arm(&w->loop, &p->timer, 0);
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
        loop_timer_stop(l, &ck->p[i].timer);
        check_release(&ck->p[i]);
    }
    loop_release(l, &ck->rel, checks_free);
}
