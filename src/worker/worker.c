/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker.c: a worker's thread body, its accept path and its command
 * channel. Accepting is bounded per wakeup so one busy listener cannot
 * starve sessions; descriptor exhaustion pauses accepting for a moment
 * instead of spinning on a listener that stays readable.
 */
#include "worker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "log/log.h"

#define ACCEPT_BATCH       64
#define ACCEPT_PAUSE_MS    100
#define ACCEPT_WARN_MS     10000 /* one exhaustion warning per worker this often */
#define BUF_POOL_MAX_FREE  64
#define PIPE_POOL_MAX_FREE 64
#define HEARTBEAT_MS       1000

static void listeners_enable(struct worker *w, bool on)
{
    for (size_t i = 0; i < w->nlisteners; i++) {
        struct listener *ls = &w->listeners[i];
        if (ls->io.fd >= 0)
            (void)loop_io_mod(&w->loop, &ls->io, on ? EPOLLIN : 0);
    }
}

static void on_accept_pause_end(struct timer *t)
{
    struct worker *w = container_of(t, struct worker, accept_pause);
    if (!w->draining)
        listeners_enable(w, true);
}

/* The worst lateness of any timer over the last second: a loop that is
 * late for its timers is late for its sockets too. */
static void on_heartbeat(struct timer *t)
{
    struct worker *w = container_of(t, struct worker, heartbeat);
    atomic_store_explicit(&w->stats.loop_lag_ms, w->loop.lag_ms, memory_order_relaxed);
    w->loop.lag_ms = 0;
    if (w->ops->tick)
        w->ops->tick(w);
    loop_timer_arm(&w->loop, &w->heartbeat, HEARTBEAT_MS);
}

/* Pause accepting for ACCEPT_PAUSE_MS. Exhaustion tends to last: the
 * warning is logged once per ACCEPT_WARN_MS per worker, with the number of
 * pauses in between (ferry_accept_errors_total counts every one). */
static void accept_pause(struct worker *w, int err)
{
    if (timer_armed(&w->accept_pause))
        return;
    uint64_t now = loop_now(&w->loop);
    if (now >= w->accept_warn_at) {
        log_warn("worker %u: accept: %s; pausing accepts for %d ms (raise the open files limit "
                 "or lower max_connections); said at most every %d s, %u pauses not logged "
                 "since",
                 w->id, strerror(-err), ACCEPT_PAUSE_MS, ACCEPT_WARN_MS / 1000, w->accept_unlogged);
        w->accept_warn_at = now + ACCEPT_WARN_MS;
        w->accept_unlogged = 0;
    } else {
        w->accept_unlogged++;
    }
    listeners_enable(w, false);
    loop_timer_arm(&w->loop, &w->accept_pause, ACCEPT_PAUSE_MS);
}

/* Accept up to max connections. Returns true when the queue is empty
 * (or accepting must pause), false when max was reached first. */
static bool accept_batch(struct listener *ls, unsigned max_accepts)
{
    struct io *io = &ls->io;
    struct worker *w = ls->w;
    uint32_t max = w->cur->cfg->max_connections;
    for (unsigned i = 0; i < max_accepts && io->fd >= 0; i++) {
        struct addr peer;
        int fd = sock_accept(io->fd, &peer);
        if (fd < 0) {
            switch (-fd) {
            case EAGAIN:
                return true;
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
                continue;
            case EMFILE:
            case ENFILE:
            case ENOBUFS:
            case ENOMEM:
                stat_add(&w->stats.accept_errors, 1);
                accept_pause(w, fd);
                return true;
            default:
                stat_add(&w->stats.accept_errors, 1);
                log_warn("worker %u: accept: %s", w->id, strerror(-fd));
                return true;
            }
        }
        stat_add(&w->stats.accepted, 1);
        if (atomic_fetch_add_explicit(&w->sh->sessions, 1, memory_order_relaxed) >= max) {
            atomic_fetch_sub_explicit(&w->sh->sessions, 1, memory_order_relaxed);
            stat_add(&w->stats.rejected_limit, 1);
            close(fd);
            continue;
        }
        w->nsessions++;
        stat_add(&w->stats.active, 1);
        w->ops->accept(w, ls, fd, &peer);
    }
    return io->fd < 0;
}

static void on_listener(struct io *io, uint32_t events)
{
    (void)events;
    (void)accept_batch(container_of(io, struct listener, io), ACCEPT_BATCH);
}

/* Draining: take what already waits in the accept queues (those clients
 * completed their handshake with us and must not be reset), then close. A
 * connection that lands in the short gap before close() is moved to another
 * ferry on the same port by the kernel with net.ipv4.tcp_migrate_req = 1. */
static void worker_accept_rest(struct worker *w)
{
    for (size_t i = 0; i < w->nlisteners; i++) {
        struct listener *ls = &w->listeners[i];
        for (int round = 0; ls->io.fd >= 0 && round < 64; round++)
            if (accept_batch(ls, ACCEPT_BATCH))
                break;
    }
}

static void worker_stop_listening(struct worker *w)
{
    for (size_t i = 0; i < w->nlisteners; i++) {
        struct listener *ls = &w->listeners[i];
        if (ls->io.fd >= 0) {
            int fd = ls->io.fd;
            loop_io_del(&w->loop, &ls->io);
            close(fd);
        }
    }
    loop_timer_stop(&w->loop, &w->accept_pause);
}

static void listen_set_drop(struct listen_set *stale, struct listen_set *next);

/* Drop every generation (all sessions have ended) and any posted one. */
static void worker_cfgs_fini(struct worker *w)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &w->cfgs)
    {
        struct wcfg *wc = container_of(pos, struct wcfg, link);
        list_del(&wc->link);
        config_unref(wc->cfg);
        free(wc);
    }
    w->cur = NULL;
    struct worker_update *u = atomic_exchange(&w->next, NULL);
    if (u) {
        config_unref(u->cfg);
        listen_set_drop(u->ls, NULL);
        free(u);
    }
}

/* Make cfg (whose reference the caller hands over) the current one. */
static int worker_cfg_set(struct worker *w, struct config *cfg)
{
    struct wcfg *wc = calloc(1, sizeof(*wc));
    if (!wc)
        return -ENOMEM;
    wc->cfg = cfg;
    list_add_tail(&w->cfgs, &wc->link);
    struct wcfg *old = w->cur;
    w->cur = wc;
    if (old && old->sessions == 0) {
        list_del(&old->link);
        config_unref(old->cfg);
        free(old);
    }
    /* Buffers of an old size are freed rather than pooled as they return. */
    w->bufs.size = cfg->buffer_size;
    w->pipes.size = cfg->pipe_size;
    return 0;
}

struct wcfg *worker_cfg_hold(struct worker *w)
{
    w->cur->sessions++;
    return w->cur;
}

void worker_cfg_release(struct worker *w, struct wcfg *wc)
{
    if (--wc->sessions == 0 && wc != w->cur) {
        list_del(&wc->link);
        config_unref(wc->cfg);
        free(wc);
    }
}

void listen_set_free(struct listen_set *ls)
{
    if (!ls)
        return;
    free(ls->fds);
    free(ls->addrs);
    free(ls->fresh);
    free(ls->arr);
    free(ls);
}

/* Close the sockets of a set that never reached its worker, except those
 * the next set (may be NULL) names again, which stay new in that one. */
static void listen_set_drop(struct listen_set *stale, struct listen_set *next)
{
    if (!stale)
        return;
    for (size_t i = 0; i < stale->n; i++) {
        if (!stale->fresh[i])
            continue;
        bool kept = false;
        for (size_t j = 0; next && j < next->n; j++) {
            if (next->fds[j] == stale->fds[i]) {
                next->fresh[j] = true;
                kept = true;
            }
        }
        if (!kept)
            close(stale->fds[i]);
    }
    listen_set_free(stale);
}

int worker_post_config(struct worker *w, struct config *cfg, struct listen_set *ls)
{
    struct worker_update *u = malloc(sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->cfg = config_ref(cfg);
    u->ls = ls;
    /* Take back an update the worker has not picked up yet, fold it into
     * this one, then publish: the worker sees one or the other, whole. */
    struct worker_update *stale = atomic_exchange(&w->next, NULL);
    if (stale) {
        if (!u->ls) {
            u->ls = stale->ls; /* listen unchanged since the stale one */
        } else {
            listen_set_drop(stale->ls, u->ls);
        }
        config_unref(stale->cfg);
        free(stale);
    }
    atomic_store(&w->next, u);
    worker_command(w, WORKER_CMD_CONFIG);
    return 0;
}

static void listen_set_release(struct release *r)
{
    listen_set_free(container_of(r, struct listen_set, rel));
}

/* Switch to the listeners of ls: kept sockets move (and are registered
 * again, since epoll holds their address), dropped ones close, new ones
 * are registered. A draining worker closes the new ones at once. The old
 * array goes back into ls and is freed with it after this batch of events,
 * which may still hold one for an old listener (the loop's rule). */
static void worker_apply_listeners(struct worker *w, struct listen_set *ls)
{
    struct listener *arr = ls->arr;
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++) {
        struct listener *nl = &arr[n];
        nl->w = w;
        nl->addr = ls->addrs[i];
        nl->index = (unsigned)i;
        io_init(&nl->io, on_listener);
        for (size_t j = 0; j < w->nlisteners; j++) {
            struct listener *ol = &w->listeners[j];
            if (ol->io.fd >= 0 && ol->io.fd == ls->fds[i]) {
                loop_io_del(&w->loop, &ol->io);
                ol->io.fd = -1; /* moved, not closed */
            }
        }
        if (w->draining) {
            close(ls->fds[i]);
            continue;
        }
        int rc =
            loop_io_add(&w->loop, &nl->io, ls->fds[i], timer_armed(&w->accept_pause) ? 0 : EPOLLIN);
        if (rc) {
            char a[ADDR_STRLEN];
            log_error("worker %u: cannot watch %s: %s", w->id, addr_format(&nl->addr, a, sizeof(a)),
                      strerror(-rc));
            close(ls->fds[i]);
            continue;
        }
        n++;
    }
    for (size_t j = 0; j < w->nlisteners; j++) {
        struct listener *ol = &w->listeners[j];
        if (ol->io.fd >= 0) {
            int fd = ol->io.fd;
            loop_io_del(&w->loop, &ol->io);
            close(fd);
        }
    }
    ls->arr = w->listeners;
    w->listeners = arr;
    w->nlisteners = n;
    loop_release(&w->loop, &ls->rel, listen_set_release);
}

#define DNS_REPORT_MS 10000 /* a dead DNS server is reported at most this often */

/* A lookup no DNS server answered: counted, and said in the log at most
 * once per DNS_REPORT_MS per worker (with how many more there were). */
static void on_dns_unanswered(void *arg, const char *name, int status)
{
    struct worker *w = arg;
    stat_add(&w->stats.dns_unanswered, 1);
    uint64_t now = loop_now(&w->loop);
    if (w->dns_warned_ms && now - w->dns_warned_ms < DNS_REPORT_MS) {
        w->dns_unreported++;
        return;
    }
    char more[64] = "";
    if (w->dns_unreported)
        snprintf(more, sizeof(more), "; %u more since the last report", w->dns_unreported);
    log_warn("worker %u: dns: no server answered for %s (%s; servers: %s)%s", w->id, name,
             status == DNS_TIMEOUT ? "timed out" : "refused or unreachable",
             w->dns.servers ? w->dns.servers : "resolv.conf's", more);
    w->dns_warned_ms = now;
    w->dns_unreported = 0;
}

/* The resolver options [dns] of cfg says. */
static void worker_resolver_opts(struct worker *w, const struct config *cfg,
                                 struct resolver_opts *o)
{
    resolver_opts_default(o);
    o->servers = cfg->dns.servers;
    o->cache_size = cfg->dns.cache_size;
    o->min_ttl_ms = cfg->dns.min_ttl_ms;
    o->max_ttl_ms = cfg->dns.max_ttl_ms;
    o->timeout_ms = cfg->dns.timeout_ms;
    o->tries = cfg->dns.tries;
    o->hosts_system = cfg->dns.hosts == NULL;
    o->hosts = cfg->dns.hosts_table;
    o->unanswered = on_dns_unanswered;
    o->unanswered_arg = w;
}

static int worker_resolver_init(struct worker *w, const struct config *cfg)
{
    struct resolver_opts o;
    worker_resolver_opts(w, cfg, &o);
    return resolver_init(&w->dns, &w->loop, &o);
}

/* A reload: what of [dns] may change at once (resolver_update()). */
static void worker_resolver_update(struct worker *w, const struct config *cfg)
{
    struct resolver_opts o;
    worker_resolver_opts(w, cfg, &o);
    if (resolver_update(&w->dns, &o) < 0)
        log_error("worker %u: out of memory for dns.cache_size; the cache keeps its size", w->id);
}

void worker_call_post(struct worker *w, struct worker_call *call)
{
    struct worker_call *head = atomic_load_explicit(&w->calls, memory_order_relaxed);
    do
        call->next = head;
    while (!atomic_compare_exchange_weak_explicit(&w->calls, &head, call, memory_order_release,
                                                  memory_order_relaxed));
    worker_command(w, WORKER_CMD_CALL);
}

/* Run the calls posted so far, oldest first. */
static void worker_run_calls(struct worker *w)
{
    struct worker_call *stack = atomic_exchange_explicit(&w->calls, NULL, memory_order_acquire);
    struct worker_call *fifo = NULL;
    while (stack) {
        struct worker_call *next = stack->next;
        stack->next = fifo;
        fifo = stack;
        stack = next;
    }
    while (fifo) {
        struct worker_call *next = fifo->next; /* fn may free the call */
        fifo->fn(w, fifo);
        fifo = next;
    }
}

static void on_command(struct io *io, uint32_t events)
{
    (void)events;
    struct worker *w = container_of(io, struct worker, ctl);
    uint64_t v;
    while (read(io->fd, &v, sizeof(v)) > 0)
        ;
    uint32_t cmd = atomic_exchange(&w->cmd, 0);
    if (cmd & WORKER_CMD_CONFIG) {
        struct worker_update *u = atomic_exchange(&w->next, NULL);
        struct config *cfg = u ? u->cfg : NULL;
        struct listen_set *ls = u ? u->ls : NULL;
        free(u);
        if (cfg && worker_cfg_set(w, cfg) < 0) {
            log_error("worker %u: out of memory applying the new configuration", w->id);
            config_unref(cfg);
        } else if (cfg) {
            worker_resolver_update(w, cfg);
            if (w->ops->config_changed)
                w->ops->config_changed(w);
        }
        if (ls)
            worker_apply_listeners(w, ls);
    }
    if (cmd & (WORKER_CMD_DRAIN | WORKER_CMD_ABORT)) {
        bool first = !w->draining;
        if (!(cmd & WORKER_CMD_ABORT) && !w->draining)
            worker_accept_rest(w);
        w->draining = true;
        if (first && !(cmd & WORKER_CMD_ABORT) && w->ops->drain)
            w->ops->drain(w);
        worker_stop_listening(w);
    }
    if (cmd & WORKER_CMD_ABORT)
        w->ops->abort_all(w);
    if (cmd & WORKER_CMD_CALL)
        worker_run_calls(w);
    if (w->draining && w->nsessions == 0)
        loop_stop(&w->loop);
}

void worker_session_ended(struct worker *w)
{
    atomic_fetch_sub_explicit(&w->sh->sessions, 1, memory_order_relaxed);
    w->nsessions--;
    stat_sub(&w->stats.active, 1);
    stat_add(&w->stats.closed, 1);
    if (w->draining && w->nsessions == 0)
        loop_stop(&w->loop);
}

int worker_init(struct worker *w, unsigned id, struct shared *sh, const struct worker_ops *ops,
                struct config *cfg, const int *fds, const struct addr *addrs, size_t n)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->sh = sh;
    w->ops = ops;
    list_init(&w->sessions);
    list_init(&w->cfgs);
    atomic_init(&w->next, NULL);
    atomic_init(&w->calls, NULL);
    if (worker_cfg_set(w, config_ref(cfg)) < 0) {
        config_unref(cfg);
        return -ENOMEM;
    }
    timer_init(&w->accept_pause, on_accept_pause_end);
    timer_init(&w->heartbeat, on_heartbeat);
    io_init(&w->ctl, on_command);
    int rc = loop_init(&w->loop);
    if (rc)
        goto out_cfg;
    buf_pool_init(&w->bufs, cfg->buffer_size, BUF_POOL_MAX_FREE);
    pipe_pool_init(&w->pipes, cfg->pipe_size, PIPE_POOL_MAX_FREE);
    rc = worker_resolver_init(w, cfg);
    if (rc)
        goto out_loop;
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) {
        rc = -errno;
        goto out_dns;
    }
    rc = loop_io_add(&w->loop, &w->ctl, efd, EPOLLIN);
    if (rc) {
        close(efd);
        goto out_dns;
    }
    w->listeners = calloc(n ? n : 1, sizeof(*w->listeners));
    if (!w->listeners) {
        rc = -ENOMEM;
        goto out_ctl;
    }
    for (size_t i = 0; i < n; i++) {
        struct listener *ls = &w->listeners[i];
        ls->w = w;
        ls->addr = addrs[i];
        ls->index = (unsigned)i;
        io_init(&ls->io, on_listener);
        rc = loop_io_add(&w->loop, &ls->io, fds[i], EPOLLIN);
        if (rc)
            goto out_listeners;
        w->nlisteners++;
    }
    if (w->ops->config_changed)
        w->ops->config_changed(w);
    loop_timer_arm(&w->loop, &w->heartbeat, HEARTBEAT_MS);
    return 0;

out_listeners:
    for (size_t i = 0; i < w->nlisteners; i++)
        loop_io_del(&w->loop, &w->listeners[i].io);
    free(w->listeners);
    w->listeners = NULL;
    w->nlisteners = 0;
out_ctl:
    close(w->ctl.fd);
    w->ctl.fd = -1;
out_dns:
    resolver_fini(&w->dns);
out_loop:
    loop_fini(&w->loop);
out_cfg:
    worker_cfgs_fini(w);
    return rc;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    int rc = loop_run(&w->loop);
    if (rc)
        log_error("worker %u: event loop failed: %s", w->id, strerror(-rc));
    /* The loop ended with sessions left only if it failed; never leak them. */
    if (w->nsessions)
        w->ops->abort_all(w);
    loop_flush_tasks(&w->loop);
    uint64_t one = 1;
    ssize_t wr = write(w->sh->exit_efd, &one, sizeof(one));
    (void)wr;
    return NULL;
}

int worker_start(struct worker *w)
{
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    return -rc;
}

void worker_command(struct worker *w, enum worker_cmd cmd)
{
    atomic_fetch_or(&w->cmd, (uint32_t)cmd);
    uint64_t one = 1;
    ssize_t wr = write(w->ctl.fd, &one, sizeof(one));
    (void)wr;
}

void worker_join(struct worker *w)
{
    pthread_join(w->thread, NULL);
}

void worker_fini(struct worker *w)
{
    worker_run_calls(w); /* posted after the loop stopped: they find no session */
    worker_stop_listening(w);
    loop_flush_tasks(&w->loop);
    if (w->ops->fini)
        w->ops->fini(w);
    free(w->listeners);
    w->listeners = NULL;
    resolver_fini(&w->dns);
    if (w->ctl.fd >= 0)
        close(w->ctl.fd);
    w->ctl.fd = -1;
    buf_pool_fini(&w->bufs);
    pipe_pool_fini(&w->pipes);
    loop_fini(&w->loop);
    worker_cfgs_fini(w);
}
