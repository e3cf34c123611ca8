/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upstream_pool.c: the keyed pool of idle upstream connections (see
 * upstream_pool.h). A list ordered by the time each entry went idle: takes
 * look from the newest end, the sweep from the oldest. Knows sockets and
 * the loop only; the HTTP exchange decides what goes in.
 */
#include "relay/upstream_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sock.h"

/* An idle upstream connection waiting for a request to the same place. */
struct pooled {
    struct list link;
    struct io io;
    struct release rel; /* freed after the batch that dropped it */
    struct upstream_pool *pool;
    uint64_t since; /* loop ms it went idle; 0: it stirred, drop it */
    char key[UPSTREAM_KEY_MAX];
};

bool upstream_may_pool(const struct upstream_end *e)
{
    return e->reusable && !e->doubt && e->req_done && !e->resp_eof && e->unread == 0;
}

static void pooled_release(struct release *r)
{
    free(container_of(r, struct pooled, rel));
}

/* Drop e from the pool; freed after this batch of events, which may still
 * hold one for its socket (a session takes a pooled connection while the
 * upstream's EOF waits further down the batch). */
static void pooled_free(struct pooled *e)
{
    struct upstream_pool *p = e->pool;
    list_del(&e->link);
    p->n--;
    if (e->io.fd >= 0) {
        int fd = e->io.fd;
        loop_io_del(p->loop, &e->io);
        close(fd);
    }
    loop_release(p->loop, &e->rel, pooled_release);
}

/* Anything from an idle upstream (EOF, an error, unasked-for bytes) makes
 * it unusable. Freed late: the loop may hold another event for it. */
static void pooled_on_io(struct io *io, uint32_t events)
{
    (void)events;
    struct pooled *e = container_of(io, struct pooled, io);
    struct upstream_pool *p = e->pool;
    int fd = io->fd;
    loop_io_del(p->loop, io);
    close(fd);
    e->since = 0; /* swept at once */
    loop_timer_arm(p->loop, &p->sweep, 0);
}

void upstream_pool_sweep(struct upstream_pool *p)
{
    uint64_t now = loop_now(p->loop);
    uint32_t idle = p->idle_ms(p->ctx);
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &p->idle)
    {
        struct pooled *e = container_of(pos, struct pooled, link);
        if (e->io.fd < 0 || now - e->since >= idle)
            pooled_free(e);
    }
    if (p->n)
        loop_timer_arm(p->loop, &p->sweep, UPSTREAM_POOL_SWEEP_MS);
}

static void pool_on_sweep(struct timer *t)
{
    upstream_pool_sweep(container_of(t, struct upstream_pool, sweep));
}

struct upstream_pool *upstream_pool_new(struct loop *loop, upstream_idle_fn idle_ms, void *ctx)
{
    struct upstream_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    list_init(&p->idle);
    timer_init(&p->sweep, pool_on_sweep);
    p->loop = loop;
    p->idle_ms = idle_ms;
    p->ctx = ctx;
    return p;
}

void upstream_pool_free(struct upstream_pool *p)
{
    if (!p)
        return;
    while (!list_empty(&p->idle))
        pooled_free(container_of(p->idle.next, struct pooled, link));
    loop_timer_stop(p->loop, &p->sweep);
    free(p);
}

bool upstream_pool_put(struct upstream_pool *p, int fd, const char *key, uint32_t max)
{
    struct pooled *e = p->n < max ? calloc(1, sizeof(*e)) : NULL;
    if (!e) {
        close(fd);
        return false;
    }
    e->pool = p;
    e->since = loop_now(p->loop);
    snprintf(e->key, sizeof(e->key), "%s", key);
    io_init(&e->io, pooled_on_io);
    if (loop_io_add(p->loop, &e->io, fd, EPOLLIN | EPOLLRDHUP) < 0) {
        close(fd);
        free(e);
        return false;
    }
    list_add_tail(&p->idle, &e->link);
    p->n++;
    if (!timer_armed(&p->sweep))
        loop_timer_arm(p->loop, &p->sweep, UPSTREAM_POOL_SWEEP_MS);
    return true;
}

int upstream_pool_take(struct upstream_pool *p, const char *key, struct addr *peer)
{
    if (!p)
        return -1;
    struct list *pos = p->idle.prev, *prev;
    for (; pos != &p->idle; pos = prev) {
        prev = pos->prev; /* read before pos is unlinked (it then points at itself) */
        struct pooled *e = container_of(pos, struct pooled, link);
        if (e->io.fd < 0 || strcmp(e->key, key) != 0)
            continue;
        int fd = e->io.fd;
        loop_io_del(p->loop, &e->io);
        e->io.fd = -1;
        pooled_free(e);
        if (sock_peer_addr(fd, peer) < 0) {
            close(fd);
            continue;
        }
        return fd;
    }
    return -1;
}
