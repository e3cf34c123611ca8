/*
 * worker.c: a worker's thread body, its accept path and its command
 * channel. Accepting is bounded per wakeup so one busy listener cannot
 * starve sessions; descriptor exhaustion pauses accepting for a moment
 * instead of spinning on a listener that stays readable.
 */
#include "core/worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "log/log.h"

#define ACCEPT_BATCH       64
#define ACCEPT_PAUSE_MS    100
#define BUF_POOL_MAX_FREE  64
#define PIPE_POOL_MAX_FREE 64

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

static void accept_pause(struct worker *w, int err)
{
    if (timer_armed(&w->accept_pause))
        return;
    log_warn("worker %u: accept: %s; pausing accepts for %d ms (raise the open files limit "
             "or lower max_connections)",
             w->id, strerror(-err), ACCEPT_PAUSE_MS);
    listeners_enable(w, false);
    loop_timer_arm(&w->loop, &w->accept_pause, ACCEPT_PAUSE_MS);
}

static void on_listener(struct io *io, uint32_t events)
{
    (void)events;
    struct listener *ls = container_of(io, struct listener, io);
    struct worker *w = ls->w;
    uint32_t max = w->cur->cfg->max_connections;
    for (int i = 0; i < ACCEPT_BATCH && io->fd >= 0; i++) {
        struct addr peer;
        int fd = sock_accept(io->fd, &peer);
        if (fd < 0) {
            switch (-fd) {
            case EAGAIN:
                return;
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
                return;
            default:
                stat_add(&w->stats.accept_errors, 1);
                log_warn("worker %u: accept: %s", w->id, strerror(-fd));
                return;
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

/* Drop every generation (all sessions have ended) and any posted one. */
static void worker_cfgs_fini(struct worker *w)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &w->cfgs)
    {
        struct wcfg *wc = container_of(pos, struct wcfg, link);
        list_del(&wc->link);
        config_unref(wc->cfg);
        free(wc->rule_hits);
        free(wc);
    }
    w->cur = NULL;
    config_unref(atomic_exchange(&w->next_cfg, NULL));
}

/* Make cfg (whose reference the caller hands over) the current one. */
static int worker_cfg_set(struct worker *w, struct config *cfg)
{
    struct wcfg *wc = calloc(1, sizeof(*wc));
    if (!wc)
        return -ENOMEM;
    wc->cfg = cfg;
    wc->nrule_hits = config_rule_count(cfg);
    if (wc->nrule_hits && !(wc->rule_hits = calloc(wc->nrule_hits, sizeof(*wc->rule_hits))))
        wc->nrule_hits = 0; /* counts lost, rules still apply */
    list_add_tail(&w->cfgs, &wc->link);
    struct wcfg *old = w->cur;
    w->cur = wc;
    if (old && old->sessions == 0) {
        list_del(&old->link);
        config_unref(old->cfg);
        free(old->rule_hits);
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
        free(wc->rule_hits);
        free(wc);
    }
}

void worker_post_config(struct worker *w, struct config *cfg)
{
    struct config *old = atomic_exchange(&w->next_cfg, config_ref(cfg));
    config_unref(old); /* posted before and never picked up */
    worker_command(w, WORKER_CMD_CONFIG);
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
        struct config *cfg = atomic_exchange(&w->next_cfg, NULL);
        if (cfg && worker_cfg_set(w, cfg) < 0) {
            log_error("worker %u: out of memory applying the new configuration", w->id);
            config_unref(cfg);
        } else if (cfg && w->ops->config_changed) {
            w->ops->config_changed(w);
        }
    }
    if (cmd & (WORKER_CMD_DRAIN | WORKER_CMD_ABORT)) {
        w->draining = true;
        worker_stop_listening(w);
    }
    if (cmd & WORKER_CMD_ABORT)
        w->ops->abort_all(w);
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
    atomic_init(&w->next_cfg, NULL);
    if (worker_cfg_set(w, config_ref(cfg)) < 0) {
        config_unref(cfg);
        return -ENOMEM;
    }
    timer_init(&w->accept_pause, on_accept_pause_end);
    io_init(&w->ctl, on_command);
    int rc = loop_init(&w->loop);
    if (rc)
        goto out_cfg;
    buf_pool_init(&w->bufs, cfg->buffer_size, BUF_POOL_MAX_FREE);
    pipe_pool_init(&w->pipes, cfg->pipe_size, PIPE_POOL_MAX_FREE);
    rc = resolver_init(&w->dns, &w->loop);
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
