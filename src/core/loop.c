/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loop.c: epoll, a timer heap, a deferred-task list and a release list (the
 * late frees of objects a batch may still reference): the whole runtime
 * of a worker thread. Nothing here allocates per event or logs; errors are
 * returned as -errno to the caller.
 */
#include "core/loop.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "util/compiler.h"

#define LOOP_MAX_EVENTS 256

uint64_t clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void loop_update_time(struct loop *l)
{
    l->now_ms = clock_ms();
}

int loop_init(struct loop *l)
{
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return -errno;
    l->stopping = false;
    l->lag_ms = 0;
    heap_init(&l->timers);
    list_init(&l->tasks);
    list_init(&l->releases);
    loop_update_time(l);
    return 0;
}

static void loop_run_releases(struct loop *l);

void loop_fini(struct loop *l)
{
    loop_run_releases(l);
    if (l->epfd >= 0)
        close(l->epfd);
    l->epfd = -1;
    heap_fini(&l->timers);
}

void loop_stop(struct loop *l)
{
    l->stopping = true;
}

void io_init(struct io *io, io_cb cb)
{
    io->fd = -1;
    io->events = 0;
    io->cb = cb;
}

int loop_io_add(struct loop *l, struct io *io, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = io};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    io->fd = fd;
    io->events = events;
    return 0;
}

int loop_io_mod(struct loop *l, struct io *io, uint32_t events)
{
    if (io->events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = io};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
        return -errno;
    io->events = events;
    return 0;
}

void loop_io_del(struct loop *l, struct io *io)
{
    if (io->fd >= 0)
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->fd = -1;
    io->events = 0;
}

void timer_init(struct timer *t, timer_cb cb)
{
    t->node.key = 0;
    t->node.idx = HEAP_NONE;
    t->cb = cb;
}

void loop_timer_arm_at(struct loop *l, struct timer *t, uint64_t deadline_ms)
{
    if (timer_armed(t)) {
        t->node.key = deadline_ms;
        heap_update(&l->timers, &t->node);
        return;
    }
    t->node.key = deadline_ms;
    /* The heap grows by doubling; if even that fails the timer fires at the
     * next iteration rather than never, so no deadline is silently lost. */
    if (heap_push(&l->timers, &t->node) < 0)
        t->node.idx = HEAP_NONE;
}

void loop_timer_arm(struct loop *l, struct timer *t, uint64_t delay_ms)
{
    loop_timer_arm_at(l, t, l->now_ms + delay_ms);
}

void loop_timer_stop(struct loop *l, struct timer *t)
{
    heap_remove(&l->timers, &t->node);
}

void task_init(struct task *t, task_cb cb)
{
    list_init(&t->link);
    t->cb = cb;
}

void loop_defer(struct loop *l, struct task *t)
{
    if (!task_queued(t))
        list_add_tail(&l->tasks, &t->link);
}

void loop_task_cancel(struct task *t)
{
    list_del(&t->link);
}

static int loop_next_timeout(struct loop *l)
{
    if (!list_empty(&l->tasks))
        return 0;
    struct heap_node *top = heap_top(&l->timers);
    if (!top)
        return -1;
    if (top->key <= l->now_ms)
        return 0;
    uint64_t d = top->key - l->now_ms;
    return d > 60000 ? 60000 : (int)d;
}

static void loop_run_timers(struct loop *l)
{
    struct heap_node *top;
    while ((top = heap_top(&l->timers)) && top->key <= l->now_ms) {
        struct timer *t = container_of(top, struct timer, node);
        if (l->now_ms - top->key > l->lag_ms)
            l->lag_ms = l->now_ms - top->key;
        heap_remove(&l->timers, top);
        t->cb(t);
    }
}

/* Move every entry of from to (empty) to. */
static void list_take(struct list *to, struct list *from)
{
    list_init(to);
    if (list_empty(from))
        return;
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    list_init(from);
}

static void loop_run_tasks(struct loop *l)
{
    /* Take the current list: tasks queued while running wait for the next
     * iteration, so a task that re-queues itself cannot starve io. The
     * head is taken afresh each time (never a saved next pointer): a task
     * may cancel any other one, which then simply leaves the batch. */
    struct list batch;
    list_take(&batch, &l->tasks);
    while (!list_empty(&batch)) {
        struct task *t = container_of(batch.next, struct task, link);
        list_del(&t->link);
        t->cb(t);
    }
}

/* After the batch: nothing can reach a released object but its callback.
 * A release may release more; they run in the same pass. */
static void loop_run_releases(struct loop *l)
{
    while (!list_empty(&l->releases)) {
        struct release *r = container_of(l->releases.next, struct release, link);
        list_del(&r->link);
        r->cb(r);
    }
}

void loop_release(struct loop *l, struct release *r, release_cb cb)
{
    r->cb = cb;
    list_add_tail(&l->releases, &r->link);
}

void loop_flush_tasks(struct loop *l)
{
    while (!list_empty(&l->tasks) || !list_empty(&l->releases)) {
        loop_run_tasks(l);
        loop_run_releases(l);
    }
}

int loop_run(struct loop *l)
{
    struct epoll_event evs[LOOP_MAX_EVENTS];
    while (!l->stopping) {
        int n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, loop_next_timeout(l));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        loop_update_time(l);
        /* An io closed by an earlier callback of this batch has fd -1 and
         * is skipped; its memory lives until loop_run_releases(). */
        for (int i = 0; i < n; i++) {
            struct io *io = evs[i].data.ptr;
            if (io->fd >= 0)
                io->cb(io, evs[i].events);
        }
        loop_run_timers(l);
        loop_run_tasks(l);
        loop_run_releases(l);
    }
    return 0;
}
