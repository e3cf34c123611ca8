/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loop_test.c: the event loop's ordering promises. Timers fire by deadline
 * and never early, a stopped timer stays silent, io runs before timers and
 * timers before deferred tasks, and a task queued by a task waits for the
 * next iteration. The ownership rule: an io, timer or task unlinked during
 * its batch is never run again and, handed to loop_release(), is freed
 * only after the batch. Every run is bounded: a guard timer stops the loop and
 * fails the test if the expected stop never comes.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>

#include "core/loop.h"

#define GUARD_MS 2000

/* Shared by the callbacks of one test: an event log and the loop. */
struct fixture {
    struct loop l;
    struct timer guard;
    bool guard_fired;
    char log[64][16];
    size_t nlog;
    unsigned iter; /* iterations seen by a level-triggered "ticker" io */
};

static struct fixture *fx; /* the callbacks' way back to the test */

static void note(const char *what)
{
    assert_true(fx->nlog < 64);
    snprintf(fx->log[fx->nlog++], sizeof(fx->log[0]), "%s", what);
}

static void guard_cb(struct timer *t)
{
    (void)t;
    fx->guard_fired = true;
    loop_stop(&fx->l);
}

static int setup(void **state)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    assert_int_equal(loop_init(&fx->l), 0);
    timer_init(&fx->guard, guard_cb);
    loop_timer_arm(&fx->l, &fx->guard, GUARD_MS);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    loop_flush_tasks(&fx->l);
    loop_fini(&fx->l);
    free(fx);
    fx = NULL;
    return 0;
}

static void run_loop(void)
{
    assert_int_equal(loop_run(&fx->l), 0);
    assert_false(fx->guard_fired);
}

/* ---- timers ----------------------------------------------------------- */

struct named_timer {
    struct timer t;
    const char *name;
    bool stops;
    unsigned fired;
    uint64_t fired_at;
};

static void named_timer_cb(struct timer *t)
{
    struct named_timer *nt = container_of(t, struct named_timer, t);
    nt->fired++;
    nt->fired_at = loop_now(&fx->l);
    /* Never early: the cached clock has reached the deadline. */
    assert_true(loop_now(&fx->l) >= t->node.key);
    assert_false(timer_armed(t)); /* disarmed before its callback */
    note(nt->name);
    if (nt->stops)
        loop_stop(&fx->l);
}

static void named_timer_init(struct named_timer *nt, const char *name, bool stops)
{
    memset(nt, 0, sizeof(*nt));
    timer_init(&nt->t, named_timer_cb);
    nt->name = name;
    nt->stops = stops;
}

static void test_timers_fire_in_deadline_order(void **state)
{
    (void)state;
    struct named_timer a, b, c, d;
    named_timer_init(&a, "a", true);
    named_timer_init(&b, "b", false);
    named_timer_init(&c, "c", false);
    named_timer_init(&d, "d", false);
    uint64_t start = loop_now(&fx->l);
    loop_timer_arm(&fx->l, &a.t, 15);
    loop_timer_arm(&fx->l, &b.t, 5);
    loop_timer_arm(&fx->l, &c.t, 10);
    loop_timer_arm(&fx->l, &d.t, 0); /* due at once */
    assert_true(timer_armed(&a.t));
    run_loop();
    assert_int_equal(fx->nlog, 4);
    assert_string_equal(fx->log[0], "d");
    assert_string_equal(fx->log[1], "b");
    assert_string_equal(fx->log[2], "c");
    assert_string_equal(fx->log[3], "a");
    assert_true(a.fired_at >= start + 15);
    assert_true(clock_ms() >= start + 15);
    assert_int_equal(a.fired + b.fired + c.fired + d.fired, 4);
    assert_false(timer_armed(&a.t));
}

static struct named_timer *stop_target;

static void stop_victim_cb(struct timer *t)
{
    (void)t;
    note("stopper");
    loop_timer_stop(&fx->l, &stop_target->t);
    assert_false(timer_armed(&stop_target->t));
}

static void test_stopped_timer_does_not_fire(void **state)
{
    (void)state;
    struct named_timer early, late, end;
    named_timer_init(&early, "early", false);
    named_timer_init(&late, "late", false);
    named_timer_init(&end, "end", true);
    struct timer stopper;
    timer_init(&stopper, stop_victim_cb);

    loop_timer_arm(&fx->l, &early.t, 2);
    loop_timer_arm(&fx->l, &late.t, 8);
    loop_timer_arm(&fx->l, &end.t, 15);
    loop_timer_arm(&fx->l, &stopper, 1);
    loop_timer_stop(&fx->l, &early.t); /* stopped before the loop runs */
    loop_timer_stop(&fx->l, &early.t); /* twice is harmless */
    stop_target = &late;               /* stopped from another timer's callback */
    run_loop();
    assert_int_equal(early.fired, 0);
    assert_int_equal(late.fired, 0);
    assert_int_equal(end.fired, 1);
    assert_int_equal(fx->nlog, 2);
    assert_string_equal(fx->log[0], "stopper");
    assert_string_equal(fx->log[1], "end");
}

static void test_rearm_moves_timer(void **state)
{
    (void)state;
    struct named_timer a, b, c;
    named_timer_init(&a, "a", true);
    named_timer_init(&b, "b", false);
    named_timer_init(&c, "c", false);
    loop_timer_arm(&fx->l, &a.t, 3);
    loop_timer_arm(&fx->l, &b.t, 8);
    loop_timer_arm(&fx->l, &c.t, 500);
    uint64_t start = loop_now(&fx->l);
    loop_timer_arm(&fx->l, &a.t, 16); /* later: now after b */
    loop_timer_arm(&fx->l, &c.t, 1);  /* earlier: now first */
    assert_true(timer_armed(&a.t));
    assert_int_equal(fx->l.timers.len, 4); /* re-arming does not duplicate (guard + 3) */
    run_loop();
    assert_int_equal(fx->nlog, 3);
    assert_string_equal(fx->log[0], "c");
    assert_string_equal(fx->log[1], "b");
    assert_string_equal(fx->log[2], "a");
    assert_int_equal(a.fired, 1); /* once, not at the first deadline too */
    assert_true(a.fired_at >= start + 16);
}

static void rearm_once_cb(struct timer *t)
{
    note("tick");
    if (fx->nlog < 3)
        loop_timer_arm(&fx->l, t, 2); /* periodic: re-arm from its own callback */
    else
        loop_stop(&fx->l);
}

static void test_rearm_from_callback(void **state)
{
    (void)state;
    struct timer t;
    timer_init(&t, rearm_once_cb);
    loop_timer_arm(&fx->l, &t, 1);
    run_loop();
    assert_int_equal(fx->nlog, 3);
    assert_false(timer_armed(&t));
}

/* ---- io, timers and tasks within one iteration ----------------------- */

struct efd_io {
    struct io io;
    int fd;
    const char *name;
    unsigned calls;
    uint32_t events;
    bool drain;
    struct task *defer;    /* queued from the io callback, if set */
    struct efd_io *victim; /* unregistered from the io callback, if set */
};

static void efd_io_cb(struct io *io, uint32_t events)
{
    struct efd_io *e = container_of(io, struct efd_io, io);
    e->calls++;
    e->events = events;
    note(e->name);
    if (e->drain) {
        uint64_t v;
        assert_int_equal(read(e->fd, &v, sizeof(v)), sizeof(v));
    }
    if (e->defer)
        loop_defer(&fx->l, e->defer);
    if (e->victim && e->victim->io.fd >= 0)
        loop_io_del(&fx->l, &e->victim->io);
}

static void efd_open(struct efd_io *e, const char *name, uint64_t initial)
{
    memset(e, 0, sizeof(*e));
    e->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(e->fd >= 0);
    e->name = name;
    if (initial)
        assert_int_equal(write(e->fd, &initial, sizeof(initial)), sizeof(initial));
    io_init(&e->io, efd_io_cb);
    assert_int_equal(e->io.fd, -1);
    assert_int_equal(loop_io_add(&fx->l, &e->io, e->fd, EPOLLIN), 0);
    assert_int_equal(e->io.fd, e->fd);
}

static void efd_close(struct efd_io *e)
{
    loop_io_del(&fx->l, &e->io);
    close(e->fd);
}

static void log_task_cb(struct task *t)
{
    (void)t;
    note("task");
    loop_stop(&fx->l);
}

static void log_timer_cb(struct timer *t)
{
    (void)t;
    note("timer");
}

static void test_io_then_timers_then_tasks(void **state)
{
    (void)state;
    struct efd_io e;
    efd_open(&e, "io", 1);
    e.drain = true;
    struct task late, early;
    task_init(&late, log_task_cb);
    task_init(&early, log_task_cb);
    e.defer = &late;
    struct timer t;
    timer_init(&t, log_timer_cb);
    loop_timer_arm(&fx->l, &t, 0);
    loop_defer(&fx->l, &early);
    assert_true(task_queued(&early));
    run_loop();
    /* One iteration: the readable eventfd, the due timer, then both tasks
     * (the one queued before the loop and the one the io callback queued). */
    assert_int_equal(fx->nlog, 4);
    assert_string_equal(fx->log[0], "io");
    assert_string_equal(fx->log[1], "timer");
    assert_string_equal(fx->log[2], "task");
    assert_string_equal(fx->log[3], "task");
    assert_true(e.events & EPOLLIN);
    assert_false(task_queued(&late));
    assert_false(task_queued(&early));
    efd_close(&e);
}

static void ticker_cb(struct io *io, uint32_t events)
{
    (void)io;
    (void)events;
    fx->iter++; /* level-triggered and never drained: once per iteration */
}

struct chained_task {
    struct task t;
    struct task *next; /* queued from this task's callback */
    unsigned ran_at;   /* fx->iter when it ran */
    unsigned runs;
};

static void chained_cb(struct task *t)
{
    struct chained_task *c = container_of(t, struct chained_task, t);
    c->runs++;
    c->ran_at = fx->iter;
    if (c->next) {
        loop_defer(&fx->l, c->next);
        loop_defer(&fx->l, c->next); /* queued twice still runs once */
    } else {
        loop_stop(&fx->l);
    }
}

static void test_task_from_task_runs_next_iteration(void **state)
{
    (void)state;
    int efd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_true(efd >= 0);
    struct io tick;
    io_init(&tick, ticker_cb);
    assert_int_equal(loop_io_add(&fx->l, &tick, efd, EPOLLIN), 0);

    struct chained_task a, b;
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    task_init(&a.t, chained_cb);
    task_init(&b.t, chained_cb);
    a.next = &b.t;
    loop_defer(&fx->l, &a.t);
    loop_defer(&fx->l, &a.t);
    run_loop();
    assert_int_equal(a.runs, 1);
    assert_int_equal(b.runs, 1);
    assert_int_equal(a.ran_at, 1);
    assert_int_equal(b.ran_at, 2);
    assert_int_equal(fx->iter, 2);
    loop_io_del(&fx->l, &tick);
    close(efd);
}

static unsigned plain_runs;

static void plain_task_cb(struct task *t)
{
    (void)t;
    plain_runs++;
}

static void test_task_cancel(void **state)
{
    (void)state;
    struct task t, u;
    task_init(&t, plain_task_cb);
    task_init(&u, log_task_cb);
    plain_runs = 0;
    loop_defer(&fx->l, &t);
    loop_defer(&fx->l, &u);
    loop_task_cancel(&t);
    assert_false(task_queued(&t));
    loop_task_cancel(&t); /* twice is harmless */
    run_loop();
    assert_int_equal(plain_runs, 0);
    assert_int_equal(fx->nlog, 1);
}

static struct task *flush_next;

static void flush_chain_cb(struct task *t)
{
    plain_runs++;
    if (flush_next && flush_next != t) {
        struct task *n = flush_next;
        flush_next = NULL;
        loop_defer(&fx->l, n);
    }
}

static void test_flush_tasks(void **state)
{
    (void)state;
    struct task a, b;
    task_init(&a, flush_chain_cb);
    task_init(&b, flush_chain_cb);
    plain_runs = 0;
    flush_next = &b;
    loop_defer(&fx->l, &a);
    loop_flush_tasks(&fx->l); /* outside loop_run: runs a, then b that a queued */
    assert_int_equal(plain_runs, 2);
    assert_true(list_empty(&fx->l.tasks));
}

/* ---- io delivery ------------------------------------------------------ */

struct pipe_io {
    struct io io;
    int rfd, wfd;
    uint32_t events;
    char got[8];
    ssize_t n;
};

static struct pipe_io *the_pipe;

static void pipe_read_cb(struct io *io, uint32_t events)
{
    struct pipe_io *p = container_of(io, struct pipe_io, io);
    p->events = events;
    p->n = read(p->rfd, p->got, sizeof(p->got));
    note("read");
    loop_stop(&fx->l);
}

static void pipe_write_timer_cb(struct timer *t)
{
    (void)t;
    note("write");
    assert_int_equal(write(the_pipe->wfd, "ping", 4), 4);
}

static void test_pipe_delivers_epollin(void **state)
{
    (void)state;
    struct pipe_io p;
    memset(&p, 0, sizeof(p));
    int fds[2];
    assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    p.rfd = fds[0];
    p.wfd = fds[1];
    io_init(&p.io, pipe_read_cb);
    assert_int_equal(loop_io_add(&fx->l, &p.io, p.rfd, EPOLLIN), 0);
    /* Adding the same fd twice is refused with -errno. */
    struct io dup;
    io_init(&dup, pipe_read_cb);
    assert_int_equal(loop_io_add(&fx->l, &dup, p.rfd, EPOLLIN), -EEXIST);
    assert_int_equal(dup.fd, -1);

    /* Nothing readable yet: the loop must sleep until the timer writes. */
    the_pipe = &p;
    struct timer t;
    timer_init(&t, pipe_write_timer_cb);
    loop_timer_arm(&fx->l, &t, 5);
    run_loop();
    assert_int_equal(fx->nlog, 2);
    assert_string_equal(fx->log[0], "write");
    assert_string_equal(fx->log[1], "read");
    assert_true(p.events & EPOLLIN);
    assert_int_equal(p.n, 4);
    assert_memory_equal(p.got, "ping", 4);
    loop_io_del(&fx->l, &p.io);
    assert_int_equal(p.io.fd, -1);
    loop_io_del(&fx->l, &p.io); /* safe on an unregistered io */
    close(p.rfd);
    close(p.wfd);
}

static void stop_on_out_cb(struct io *io, uint32_t events)
{
    (void)io;
    if (events & EPOLLOUT) {
        note("out");
        loop_stop(&fx->l);
    }
}

static void test_io_mod_to_epollout(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    struct io w;
    io_init(&w, stop_on_out_cb);
    assert_int_equal(loop_io_add(&fx->l, &w, fds[1], 0), 0);
    assert_int_equal(loop_io_mod(&fx->l, &w, EPOLLOUT), 0);
    assert_int_equal(w.events, EPOLLOUT);
    assert_int_equal(loop_io_mod(&fx->l, &w, EPOLLOUT), 0); /* unchanged: no syscall */
    run_loop();
    assert_int_equal(fx->nlog, 1);
    loop_io_del(&fx->l, &w);
    close(fds[0]);
    close(fds[1]);
}

static void end_timer_cb(struct timer *t)
{
    (void)t;
    loop_stop(&fx->l);
}

static void test_io_deleted_in_same_iteration_is_skipped(void **state)
{
    (void)state;
    /* Both eventfds are readable in the first iteration; whichever runs
     * first unregisters the other, whose queued event must be ignored. */
    struct efd_io a, b;
    efd_open(&a, "a", 1);
    efd_open(&b, "b", 1);
    a.drain = b.drain = true;
    a.victim = &b;
    b.victim = &a;
    struct timer end;
    timer_init(&end, end_timer_cb);
    loop_timer_arm(&fx->l, &end, 20);
    run_loop();
    assert_int_equal(a.calls + b.calls, 1);
    assert_int_equal(fx->nlog, 1);
    efd_close(&a);
    efd_close(&b);
}

/* ---- freeing during dispatch (the loop's ownership rule) ------------- */

/* An object that embeds an io and is freed through loop_release(). */
struct owned {
    struct efd_io e;
    struct release rel;
    struct owned *other; /* closed and released by this one's callback */
    unsigned calls;
    bool *released; /* set by the release callback, which then frees */
};

static void owned_release_cb(struct release *r)
{
    struct owned *o = container_of(r, struct owned, rel);
    *o->released = true;
    note("release");
    free(o);
}

static void owned_io_cb(struct io *io, uint32_t events)
{
    (void)events;
    struct owned *self = container_of(io, struct owned, e.io);
    self->calls++;
    note("io");
    uint64_t v;
    assert_int_equal(read(self->e.fd, &v, sizeof(v)), sizeof(v));
    struct owned *victim = self->other;
    if (!victim)
        return;
    /* Unlink the other at once (its event may be further down this
     * batch), and free it only through the loop. */
    victim->other = NULL;
    self->other = NULL;
    int fd = victim->e.fd;
    loop_io_del(&fx->l, &victim->e.io);
    close(fd);
    loop_release(&fx->l, &victim->rel, owned_release_cb);
}

static struct owned *owned_open(bool *released)
{
    struct owned *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    efd_open(&o->e, "owned", 1);
    o->e.io.cb = owned_io_cb;
    o->released = released;
    *released = false;
    return o;
}

static void note_task_cb(struct task *t)
{
    (void)t;
    note("task");
}

static void test_io_released_during_its_batch(void **state)
{
    (void)state;
    /* Both eventfds are readable, so both events come in the first batch.
     * Whichever callback runs first closes the other and releases it: the
     * other's queued event must be skipped (its callback never runs), and
     * its memory must stay valid until the batch is over (ASan reports a
     * read of freed memory), then be freed after the io callbacks, the
     * timers and the tasks of that iteration. */
    bool rel_a, rel_b;
    struct owned *a = owned_open(&rel_a);
    struct owned *b = owned_open(&rel_b);
    a->other = b;
    b->other = a;
    struct task t;
    task_init(&t, note_task_cb);
    loop_defer(&fx->l, &t);
    struct timer end;
    timer_init(&end, end_timer_cb);
    loop_timer_arm(&fx->l, &end, 0); /* stops the loop after one iteration */
    run_loop();
    assert_true(rel_a != rel_b); /* exactly one was released... */
    struct owned *survivor = rel_a ? b : a;
    assert_int_equal(survivor->calls, 1); /* ...by the one callback that ran */
    assert_int_equal(fx->nlog, 3);
    assert_string_equal(fx->log[0], "io");
    assert_string_equal(fx->log[1], "task");
    assert_string_equal(fx->log[2], "release");
    efd_close(&survivor->e);
    free(survivor);
}

/* A task that cancels and frees another task queued behind it in the same
 * batch: the freed one never runs and the loop never reads it. */
struct owned_task {
    struct task t;
    struct owned_task *victim;
    unsigned runs;
};

static unsigned victim_task_runs;

static void victim_task_cb(struct task *t)
{
    (void)t;
    victim_task_runs++;
}

static void killer_task_cb(struct task *t)
{
    struct owned_task *k = container_of(t, struct owned_task, t);
    k->runs++;
    note("killer");
    if (k->victim) {
        loop_task_cancel(&k->victim->t);
        free(k->victim);
        k->victim = NULL;
    }
}

static void test_task_cancels_the_next_task(void **state)
{
    (void)state;
    struct owned_task k;
    memset(&k, 0, sizeof(k));
    task_init(&k.t, killer_task_cb);
    struct owned_task *v = calloc(1, sizeof(*v));
    assert_non_null(v);
    task_init(&v->t, victim_task_cb);
    struct task last;
    task_init(&last, log_task_cb); /* stops the loop */
    k.victim = v;
    victim_task_runs = 0;
    loop_defer(&fx->l, &k.t);
    loop_defer(&fx->l, &v->t); /* right behind the killer */
    loop_defer(&fx->l, &last);
    run_loop();
    assert_int_equal(k.runs, 1);
    assert_int_equal(victim_task_runs, 0);
    assert_int_equal(fx->nlog, 2);
    assert_string_equal(fx->log[0], "killer");
    assert_string_equal(fx->log[1], "task");
}

/* A timer callback that stops and releases another timer due in the same
 * pass: the other never fires. */
struct owned_timer {
    struct timer t;
    struct release rel;
    struct owned_timer *victim;
    unsigned fired;
};

static unsigned timers_released;

static void owned_timer_release(struct release *r)
{
    timers_released++;
    free(container_of(r, struct owned_timer, rel));
}

static void owned_timer_cb(struct timer *t)
{
    struct owned_timer *o = container_of(t, struct owned_timer, t);
    o->fired++;
    note("timer");
    struct owned_timer *v = o->victim;
    if (v) {
        v->victim = NULL;
        o->victim = NULL;
        loop_timer_stop(&fx->l, &v->t);
        loop_release(&fx->l, &v->rel, owned_timer_release);
    }
}

static void test_timer_released_by_another(void **state)
{
    (void)state;
    struct owned_timer *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    timer_init(&a->t, owned_timer_cb);
    timer_init(&b->t, owned_timer_cb);
    a->victim = b;
    b->victim = a;
    timers_released = 0;
    loop_timer_arm(&fx->l, &a->t, 1);
    loop_timer_arm(&fx->l, &b->t, 1);
    struct timer end;
    timer_init(&end, end_timer_cb);
    loop_timer_arm(&fx->l, &end, 10);
    run_loop();
    assert_int_equal(timers_released, 1);
    assert_int_equal(fx->nlog, 1); /* only the first fired */
    struct owned_timer *survivor = a->fired ? a : b;
    assert_int_equal(survivor->fired, 1);
    free(survivor);
}

static unsigned plain_releases;

static void plain_release_cb(struct release *r)
{
    (void)r;
    plain_releases++;
}

static void test_release_outside_the_loop(void **state)
{
    (void)state;
    /* Teardown: pending releases run at loop_flush_tasks() (and any left
     * at loop_fini(), which the teardown of this test covers). */
    struct release r1, r2;
    plain_releases = 0;
    loop_release(&fx->l, &r1, plain_release_cb);
    loop_flush_tasks(&fx->l);
    assert_int_equal(plain_releases, 1);
    assert_true(list_empty(&fx->l.releases));
    loop_release(&fx->l, &r2, plain_release_cb);
    loop_fini(&fx->l);
    assert_int_equal(plain_releases, 2);
    assert_int_equal(loop_init(&fx->l), 0); /* for the teardown */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_timers_fire_in_deadline_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_timer_does_not_fire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rearm_moves_timer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rearm_from_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_then_timers_then_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_from_task_runs_next_iteration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipe_delivers_epollin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_mod_to_epollout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_deleted_in_same_iteration_is_skipped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_io_released_during_its_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_cancels_the_next_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer_released_by_another, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_outside_the_loop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
