/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loop.h: the event loop. One per worker thread; a loop is not thread-safe
 * and is only ever touched by the thread that runs it.
 *
 * Three kinds of work run on it:
 *   io     a file descriptor registered with epoll; its callback gets the
 *          epoll event bits.
 *   timer  a deadline in the loop's cached monotonic milliseconds.
 *   task   a callback deferred to the end of the current iteration: used to
 *          free objects late (never inside their own callback) and to
 *          continue work that yielded for fairness.
 *
 * Every iteration: wait for events, refresh the cached clock once, run io
 * callbacks, then expired timers, then deferred tasks, then releases.
 *
 * Freeing during dispatch (the one ownership rule; docs/architecture.md):
 * the batch of events an iteration works through may still hold an event
 * for any io of the loop, so no callback frees memory that embeds an io,
 * a timer or a task. Its owner unlinks the object at once (loop_io_del
 * marks the io closed, and a closed io's queued events are skipped;
 * loop_timer_stop and loop_task_cancel take timers and tasks out) and
 * hands it to loop_release(): the loop calls the release callback, which
 * frees, after the batch: after every io callback, timer and task of the
 * iteration. Outside loop_run (teardown), loop_flush_tasks() runs them.
 */
#ifndef FERRY_CORE_LOOP_H
#define FERRY_CORE_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "util/heap.h"
#include "util/list.h"

struct loop;
struct io;
struct timer;
struct task;
struct release;

typedef void (*io_cb)(struct io *io, uint32_t events);
typedef void (*timer_cb)(struct timer *t);
typedef void (*task_cb)(struct task *t);
typedef void (*release_cb)(struct release *r);

/* Embedded in its owner; fd < 0 means "not registered" (closed) and any
 * event still queued for it in this iteration is skipped: the owner's
 * memory must therefore live until the batch ends (loop_release). */
struct io {
    int fd;
    uint32_t events;
    io_cb cb;
};

struct timer {
    struct heap_node node; /* node.key is the deadline in loop milliseconds */
    timer_cb cb;
};

struct task {
    struct list link; /* linked while queued */
    task_cb cb;
};

/* Embedded in an object to be freed after the current batch. */
struct release {
    struct list link; /* linked while pending */
    release_cb cb;
};

struct loop {
    int epfd;
    bool stopping;
    uint64_t now_ms; /* cached CLOCK_MONOTONIC, refreshed once per iteration */
    uint64_t lag_ms; /* how late the last timer ran: a sign of an overloaded loop */
    struct heap timers;
    struct list tasks;
    struct list releases;
};

int loop_init(struct loop *l);
/* Runs releases still pending, then closes the loop. */
void loop_fini(struct loop *l);

/* Run until loop_stop(). Returns 0, or -errno if epoll_wait fails hard. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

static inline uint64_t loop_now(const struct loop *l)
{
    return l->now_ms;
}
void loop_update_time(struct loop *l);
uint64_t clock_ms(void);
/* CLOCK_MONOTONIC in microseconds (for latency histograms). */
uint64_t clock_us(void);

void io_init(struct io *io, io_cb cb);
/* Register fd with the given EPOLL* bits. Returns 0 or -errno. */
int loop_io_add(struct loop *l, struct io *io, int fd, uint32_t events);
int loop_io_mod(struct loop *l, struct io *io, uint32_t events);
/* Unregister and mark closed (fd -1): an event of the current batch still
 * queued for io is skipped. Does not close the fd and does not free: an
 * owner that goes away frees through loop_release(). Safe on an
 * unregistered io. */
void loop_io_del(struct loop *l, struct io *io);

void timer_init(struct timer *t, timer_cb cb);
/* (Re)arm to fire delay_ms from the loop's cached now. */
void loop_timer_arm(struct loop *l, struct timer *t, uint64_t delay_ms);
void loop_timer_arm_at(struct loop *l, struct timer *t, uint64_t deadline_ms);
void loop_timer_stop(struct loop *l, struct timer *t);
static inline bool timer_armed(const struct timer *t)
{
    return heap_node_queued(&t->node);
}

void task_init(struct task *t, task_cb cb);
/* Queue t to run at the end of this iteration (or the next, when called
 * from a task). A task already queued stays queued once. */
void loop_defer(struct loop *l, struct task *t);
void loop_task_cancel(struct task *t);
/* Run queued tasks and pending releases until none is left (for teardown
 * outside loop_run). */
void loop_flush_tasks(struct loop *l);

/* Free an object after the current batch: cb(r) runs once every io
 * callback, timer and task of this iteration has run (from a release, or
 * outside loop_run, at the next loop_flush_tasks() or loop_fini()). The
 * owner has already unlinked the object (io deleted, timer stopped, task
 * cancelled) so nothing but cb reaches it. Once per object; never fails
 * and never allocates. */
void loop_release(struct loop *l, struct release *r, release_cb cb);

static inline bool task_queued(const struct task *t)
{
    return !list_empty(&t->link);
}

#endif
