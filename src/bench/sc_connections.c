/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_connections.c: many concurrent, mostly idle connections. Open N
 * proxied connections (at most --concurrency setups in flight), hold them
 * for --duration seconds (optionally each echoing a 16-byte message every
 * --ping seconds), then check every one still echoes. Reports the setup
 * rate and the proxy's memory per held connection: its proportional set
 * size (Pss) where the kernel has it, else its RSS (result.mem_src says).
 *
 * An echo that differs from the message sent (a changed byte, more bytes,
 * bytes nobody asked for) is the proxy corrupting data: counted in
 * corrupt_echoes, and the run fails. A connection the proxy closes is only
 * unhealthy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"

#define CN_MSG 16

struct cn_thread;

struct cn_conn {
    struct sclient sc;
    struct cn_thread *th;
    uint32_t index;
    uint8_t state; /* 0 idle-not-started, 1 opening, 2 open, 3 dead */
    uint8_t got;   /* bytes of the current echo received */
    bool waiting;  /* a message is out */
    bool check;    /* the next echo completes the final health check */
    uint64_t msgs;
    uint64_t next_ping_ms;
};

struct cn_thread {
    struct gen g;
    struct bench *b;
    struct cn_conn *conns;
    unsigned n, next, inflight;
    unsigned conc;
    struct route *routes; /* one per echo port */
    unsigned nroutes;
    _Atomic unsigned open, failed, dead, corrupt;
    _Atomic unsigned checked_ok;
    _Atomic int phase; /* 0 open/hold, 1 check */
    bool check_sent;
    uint64_t now_ms;
};

static void cn_fill(struct cn_thread *th);

static void cn_dead(struct cn_conn *c)
{
    if (c->state == 3)
        return;
    bool was_open = c->state == 2;
    c->state = 3;
    sclient_close(&c->sc, false);
    if (was_open)
        atomic_fetch_add(&c->th->dead, 1);
}

/* A wrong echo: fail the run, and end the connection without counting it
 * healthy or dead. */
static void cn_corrupt(struct cn_conn *c, const char *what, const uint8_t *got, size_t n)
{
    const uint8_t *want = pattern_at(c->index * 131u + c->msgs * CN_MSG) + c->got;
    if (!c->waiting || c->got + n > CN_MSG)
        bench_fail(c->th->b,
                   "connections: the proxy corrupted connection %u: %s (%zu bytes, %u of "
                   "message %llu already in)",
                   c->index, what, n, c->got, (unsigned long long)c->msgs + 1);
    else {
        size_t diff = bench_first_diff(got, want, n);
        bench_fail(c->th->b,
                   "connections: the proxy corrupted connection %u: byte %zu of echo %llu is "
                   "0x%02x, 0x%02x was sent",
                   c->index, c->got + diff, (unsigned long long)c->msgs + 1, got[diff], want[diff]);
    }
    atomic_fetch_add(&c->th->corrupt, 1);
    c->state = 3;
    sclient_close(&c->sc, false);
}

static void cn_send(struct cn_conn *c)
{
    uint8_t msg[CN_MSG];
    memcpy(msg, pattern_at(c->index * 131u + c->msgs * CN_MSG), CN_MSG);
    if (send(c->sc.io.fd, msg, CN_MSG, MSG_NOSIGNAL) != CN_MSG) {
        cn_dead(c);
        return;
    }
    c->waiting = true;
    c->got = 0;
}

static void cn_on_io(struct io *io, uint32_t events)
{
    struct cn_conn *c = container_of(io, struct cn_conn, sc.io);
    struct cn_thread *th = c->th;
    int rc = sclient_step(&c->sc, th->routes + (c->index % th->nroutes), events);
    if (c->state == 1) {
        if (rc == 0)
            return;
        th->inflight--;
        if (rc < 0) {
            c->state = 3;
            atomic_fetch_add(&th->failed, 1);
            bench_setup_failed(th->b, &c->sc, th->routes + (c->index % th->nroutes));
            sclient_close(&c->sc, false);
        } else {
            c->state = 2;
            atomic_fetch_add(&th->open, 1);
        }
        cn_fill(th);
        return;
    }
    if (c->state != 2)
        return;
    uint8_t buf[CN_MSG];
    for (;;) {
        ssize_t n = recv(io->fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            cn_dead(c);
            return;
        }
        if (!c->waiting) {
            cn_corrupt(c, "bytes came back that were never sent", buf, (size_t)n);
            return;
        }
        if (c->got + n > CN_MSG) {
            cn_corrupt(c, "more came back than the 16 bytes sent", buf, (size_t)n);
            return;
        }
        const uint8_t *want = pattern_at(c->index * 131u + c->msgs * CN_MSG) + c->got;
        if (memcmp(buf, want, (size_t)n) != 0) {
            cn_corrupt(c, "wrong bytes", buf, (size_t)n);
            return;
        }
        c->got = (uint8_t)(c->got + n);
        if (c->got == CN_MSG) {
            c->waiting = false;
            c->msgs++;
            if (c->check) {
                c->check = false;
                atomic_fetch_add(&th->checked_ok, 1);
            }
        }
    }
}

/* Keep up to conc setups in flight until all of this thread's are started. */
static void cn_fill(struct cn_thread *th)
{
    while (th->inflight < th->conc && th->next < th->n) {
        struct cn_conn *c = &th->conns[th->next++];
        c->th = th;
        c->state = 1;
        th->inflight++;
        if (sclient_open(&c->sc, &th->g.loop, th->routes + (c->index % th->nroutes), cn_on_io) <
            0) {
            th->inflight--;
            c->state = 3;
            atomic_fetch_add(&th->failed, 1);
            bench_setup_failed(th->b, &c->sc, th->routes + (c->index % th->nroutes));
        }
    }
}

static void cn_on_tick(struct gen *g)
{
    struct cn_thread *th = g->scenario;
    uint64_t now = now_ns() / 1000000;
    if (atomic_load(&th->phase) == 1) {
        if (!th->check_sent) {
            th->check_sent = true;
            for (unsigned i = 0; i < th->n; i++) {
                struct cn_conn *c = &th->conns[i];
                /* One still waiting for a ping's echo passes when it arrives. */
                if (c->state != 2)
                    continue;
                c->check = true;
                if (!c->waiting)
                    cn_send(c);
            }
        }
        return;
    }
    double ping = th->b->o.ping_s;
    if (ping <= 0 || th->next < th->n || th->inflight)
        return;
    /* Spread pings over the interval: each connection has its own phase. */
    uint64_t every = (uint64_t)(ping * 1000);
    for (unsigned i = 0; i < th->n; i++) {
        struct cn_conn *c = &th->conns[i];
        if (c->state != 2)
            continue;
        if (!c->next_ping_ms)
            c->next_ping_ms = now + (uint64_t)i * every / (th->n ? th->n : 1);
        if (now >= c->next_ping_ms) {
            c->next_ping_ms += every;
            if (c->waiting) {
                cn_dead(c); /* the last echo never came back */
                continue;
            }
            cn_send(c);
        }
    }
}

static void cn_on_start(struct gen *g)
{
    struct cn_thread *th = g->scenario;
    g->on_tick = cn_on_tick;
    cn_fill(th);
}

/* Wait (up to 120 s from t0) until every connection is open or has
 * failed. Returns how many are open; *failed: how many failed. */
static unsigned cn_wait_open(struct bench *b, struct cn_thread *ths, unsigned started, uint64_t t0,
                             unsigned *failed)
{
    unsigned open = 0;
    *failed = 0;
    while (now_ns() - t0 < 120ull * 1000000000u) {
        open = *failed = 0;
        for (unsigned t = 0; t < started; t++) {
            open += atomic_load(&ths[t].open);
            *failed += atomic_load(&ths[t].failed);
        }
        if (open + *failed >= b->o.connections)
            break;
        bench_progress_count(b, "set-up: open", open, b->o.connections,
                             (double)(now_ns() - t0) / 1e9);
        bench_window(b, NULL, 0.01, NULL, NULL, NULL);
    }
    bench_progress_count(b, NULL, 0, 0, 0);
    return open;
}

/* After the hold: every thread checks its connections still echo; wait
 * (up to 10 s) until the open ones are all checked, then stop the threads.
 * Returns how many echoed right; *corrupt: how many echoed wrong. */
static unsigned cn_check(struct bench *b, struct cn_thread *ths, unsigned started, unsigned open,
                         unsigned *corrupt)
{
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].phase, 1);
    unsigned dead = 0, ok = 0;
    uint64_t tc = now_ns();
    while (now_ns() - tc < 10ull * 1000000000u) {
        ok = dead = *corrupt = 0;
        for (unsigned t = 0; t < started; t++) {
            ok += atomic_load(&ths[t].checked_ok);
            dead += atomic_load(&ths[t].dead);
            *corrupt += atomic_load(&ths[t].corrupt);
        }
        if (ok + dead + *corrupt >= open || bench_has_failed(b))
            break;
        bench_window(b, NULL, 0.01, NULL, NULL, NULL);
    }
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    *corrupt = 0;
    for (unsigned t = 0; t < started; t++)
        *corrupt += atomic_load(&ths[t].corrupt);
    return ok;
}

/* What a connections run counts. */
struct cn_counts {
    unsigned open, failed, ok, corrupt;
    double setup_s;
};

/* The figures, notes and shortfalls of a run; mem: the proxy's memory
 * before and while holding (have_mem: known). */
static void cn_figures(struct bench *b, struct result *res, const struct cn_counts *c,
                       bool have_mem, const struct proc_sample *before,
                       const struct proc_sample *held)
{
    unsigned n = b->o.connections, open = c->open, failed = c->failed;
    result_add(res, "connections", "", open);
    result_add(res, "failed_setups", "", failed);
    result_add(res, "setup_rate", "1/s", c->setup_s > 0 ? (double)open / c->setup_s : 0);
    result_add(res, "healthy", "", c->ok);
    result_add(res, "corrupt_echoes", "", c->corrupt);
    if (have_mem && open) {
        result_add(res, "proxy_mem", "MiB", held->mem_kib / 1024.0);
        result_add(res, "proxy_mem_per_conn", "B",
                   (held->mem_kib - before->mem_kib) * 1024.0 / open);
    }
    if (c->corrupt)
        result_note(res, "%u connections echoed wrong data", c->corrupt);
    if (failed) {
        struct rlimit rl;
        /* A proxied connection costs the proxy two descriptors (and the
         * bench two: client and echo), so the open-files limit may be the
         * ceiling rather than the proxy. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2ull * n + 256)
            result_note(res,
                        "the open-files limit here is %llu and could not be raised (root "
                        "without CAP_SYS_RESOURCE?): a process can relay about %llu "
                        "connections at two descriptors each",
                        (unsigned long long)rl.rlim_cur,
                        (unsigned long long)(rl.rlim_cur > 256 ? (rl.rlim_cur - 128) / 2 : 0));
    }
    if (failed || open + failed < n) {
        char why[200];
        result_shortfall(res, "%u of %u connections could not be set up%s", n - open, n,
                         bench_setup_reason(b, why, sizeof(why)));
    }
    if (c->ok + c->corrupt < open)
        result_shortfall(res, "%u of %u held connections did not echo at the end of the hold",
                         open - c->ok - c->corrupt, open);
    res->nothing = open == 0;
}

int scenario_connections(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    unsigned n = o->connections;
    unsigned nth = MIN(o->threads, n);
    struct cn_thread *ths = calloc(nth, sizeof(*ths));
    struct cn_conn *conns = calloc(n, sizeof(*conns));
    unsigned nroutes = targets_echo_count(b->t);
    struct route *routes = calloc(nroutes, sizeof(*routes));
    int rc = 0;
    if (!ths || !conns || !routes) {
        rc = -ENOMEM;
        goto out;
    }
    for (unsigned i = 0; i < nroutes; i++) {
        routes[i] = b->route;
        routes[i].dst = *targets_echo(b->t, i);
    }
    for (unsigned i = 0; i < n; i++) {
        conns[i].sc.io.fd = -1;
        conns[i].index = i;
    }
    struct proc_sample before, held;
    bool have_mem = bench_sample(b, &before);

    unsigned base = 0, started = 0;
    for (unsigned t = 0; t < nth; t++) {
        ths[t].b = b;
        ths[t].n = n / nth + (t < n % nth ? 1 : 0);
        ths[t].conns = conns + base;
        ths[t].conc = MAX(1u, o->concurrency / nth);
        ths[t].routes = routes;
        ths[t].nroutes = nroutes;
        base += ths[t].n;
    }
    uint64_t t0 = now_ns();
    for (; started < nth; started++)
        if (gen_start(&ths[started].g, started, &ths[started], cn_on_start)) {
            rc = -ENOMEM;
            break;
        }
    struct cn_counts c;
    c.open = cn_wait_open(b, ths, started, t0, &c.failed);
    c.setup_s = (double)(now_ns() - t0) / 1e9;
    bench_window(b, "hold", o->duration_s, NULL, NULL, NULL);
    have_mem = have_mem && bench_sample(b, &held);
    res->mem_src = have_mem ? held.mem_src | before.mem_src : 0;
    c.ok = cn_check(b, ths, started, c.open, &c.corrupt);
    cn_figures(b, res, &c, have_mem, &before, &held);
out:
    for (unsigned i = 0; conns && i < n; i++)
        sclient_close(&conns[i].sc, false);
    free(ths);
    free(conns);
    free(routes);
    return rc;
}
