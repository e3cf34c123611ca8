/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_edge.c: `ferry bench edge`, new connections through an L4/L7 edge.
 * --concurrency slots each repeat: TCP connect (spread over 127.x.y.z
 * sources), the canned first message of --hello (edgehello.h: a Minecraft
 * handshake + Login Start, a 517-byte ClientHello, a ~1.8 KB post-quantum
 * sized one in two writes or in two TLS records), one byte read back,
 * an abortive close. Hosts alternate between a.test and b.test, and the
 * byte says which backend answered (edge.h): another backend's byte is a
 * misrouted connection, which is wrong data and fails the run. A
 * connection the edge closes or resets before the byte is an error (a
 * shortfall). Latency runs from connect() to the byte.
 *
 * What is measured: by default a ferry child started for each run with an
 * [edge bench] section (edge_self.c) in front of the bench's own backends
 * (edge_backend.c); with --edge-target ADDR:PORT any edge already running, routing
 * a.test and b.test (TLS SNI and Minecraft host) to the backends this
 * bench opens on 127.0.0.1:--target-port and the port after it
 * (18501/18502 by default: bench/peers/haproxy-edge.cfg, nginx-edge.conf).
 *
 * With --hold N, after the window: N connections opened the same way and
 * kept open after their byte, idle; the proxy's memory before and with
 * them gives its cost per 10,000.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/edge.h"
#include "bench/edgehello.h"
#include "bench/hist.h"
#include "bench/proc.h"
#include "core/sock.h"
#include "util/compiler.h"

/* The port a --edge-target's backends listen on by default (A; B is the
 * next one), as the peers' configurations in bench/peers/ name them. */
#define EDGE_PEER_BACKEND_PORT 18501u

/* What every slot of a run sends: per backend, the message for its host. */
struct ed_run {
    struct bench *b;
    struct addr edge;
    uint8_t msg[EDGE_BACKENDS][EDGEHELLO_MAX];
    size_t len[EDGE_BACKENDS];
    bool two_writes; /* tls-pq-segments: the first half, then the rest */
    bool holding;    /* the --hold phase: keep each connection after its byte */
};

enum ed_phase { ED_IDLE, ED_SENDING, ED_WAITING };

struct ed_thread;

struct ed_slot {
    struct io io;
    struct ed_thread *th;
    struct task restart;
    uint64_t t0_ns;
    size_t off;
    uint8_t host;
    uint8_t phase;
};

struct ed_thread {
    struct gen g;
    struct ed_run *run;
    struct ed_slot *slots;
    unsigned n;
    unsigned seq;
    struct hist lat; /* ns; the thread's until joined */
    _Atomic bool measuring;
    _Atomic uint64_t ok, errors, misrouted;
    unsigned hold_target, launched; /* --hold phase */
    int *held;
    _Atomic uint64_t nheld, hold_errors;
};

static void bump(_Atomic uint64_t *v)
{
    atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

static void abort_close(int fd)
{
    struct linger lg = {1, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/* The slot's connection is done: ok (the right byte came), or an error
 * (why: for the first failure's note). Counted, closed (or held), and the
 * slot begins again after this batch. */
static void ed_finish(struct ed_slot *s, bool ok, const char *why)
{
    struct ed_thread *th = s->th;
    bool measuring = atomic_load_explicit(&th->measuring, memory_order_relaxed);
    int fd = s->io.fd;
    loop_io_del(&th->g.loop, &s->io);
    s->phase = ED_IDLE;
    if (th->run->holding && ok) {
        th->held[atomic_load(&th->nheld)] = fd;
        bump(&th->nheld);
    } else {
        if (fd >= 0)
            abort_close(fd);
        if (ok && measuring) {
            hist_add(&th->lat, now_ns() - s->t0_ns);
            bump(&th->ok);
        } else if (!ok && why && (measuring || th->run->holding)) {
            bench_setup_note(th->run->b, "%s", why);
            bump(th->run->holding ? &th->hold_errors : &th->errors);
        }
    }
    loop_defer(&th->g.loop, &s->restart);
}

/* Send what is left of the message (the first half alone first, for two
 * writes); once all is sent, wait for the byte. */
static void ed_send(struct ed_slot *s)
{
    const struct ed_run *run = s->th->run;
    size_t len = run->len[s->host], half = len / 2;
    while (s->off < len) {
        size_t end = run->two_writes && s->off < half ? half : len;
        ssize_t n = send(s->io.fd, run->msg[s->host] + s->off, end - s->off, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            ed_finish(s, false, "sending the first message failed (the edge closed or reset)");
            return;
        }
        s->off += (size_t)n;
    }
    s->phase = ED_WAITING;
    (void)loop_io_mod(&s->th->g.loop, &s->io, EPOLLIN | EPOLLRDHUP);
}

static void ed_on_io(struct io *io, uint32_t events)
{
    struct ed_slot *s = container_of(io, struct ed_slot, io);
    if (s->phase == ED_SENDING) {
        /* an error, or a hang-up that leaves nothing to write to */
        if ((events & (EPOLLERR | EPOLLHUP)) && (sock_error(io->fd) || !(events & EPOLLOUT))) {
            ed_finish(s, false, "connect to the edge failed");
            return;
        }
        if (events & EPOLLOUT)
            ed_send(s);
        return;
    }
    uint8_t back[2];
    ssize_t n = recv(io->fd, back, sizeof(back), 0);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        ed_finish(s, false, "the edge closed the connection before a backend's byte");
        return;
    }
    if (back[0] != EDGE_BACKEND_BYTE(s->host)) {
        struct ed_thread *th = s->th;
        bump(&th->misrouted);
        bench_fail(th->run->b, "edge: misrouted: %s went to the backend answering 0x%02x, not %c",
                   edge_hosts[s->host], back[0], EDGE_BACKEND_BYTE(s->host));
        ed_finish(s, false, NULL);
        return;
    }
    ed_finish(s, true, NULL);
}

static void ed_begin(struct ed_slot *s)
{
    struct ed_thread *th = s->th;
    const struct ed_run *run = th->run;
    if (atomic_load_explicit(&th->g.stop, memory_order_relaxed))
        return;
    if (run->holding) {
        if (th->launched >= th->hold_target)
            return;
        th->launched++;
    }
    s->host = (uint8_t)(th->seq++ % EDGE_BACKENDS);
    s->off = 0;
    s->t0_ns = now_ns();
    s->phase = ED_SENDING;
    int fd = bench_connect(&run->edge, run->b->o.spread_src);
    io_init(&s->io, ed_on_io);
    if (fd < 0) {
        ed_finish(s, false, "connect to the edge failed at once");
        return;
    }
    if (loop_io_add(&th->g.loop, &s->io, fd, EPOLLOUT) < 0) {
        close(fd);
        ed_finish(s, false, "epoll");
    }
}

static void ed_on_restart(struct task *t)
{
    ed_begin(container_of(t, struct ed_slot, restart));
}

static void ed_on_start(struct gen *g)
{
    struct ed_thread *th = g->scenario;
    for (unsigned i = 0; i < th->n; i++) {
        struct ed_slot *s = &th->slots[i];
        s->th = th;
        s->io.fd = -1;
        task_init(&s->restart, ed_on_restart);
        ed_begin(s);
    }
}

/* Sum of the atomic counter at off over the threads. */
static uint64_t ed_sum(struct ed_thread *ths, unsigned n, size_t off)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v += atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)&ths[i] + off),
                                  memory_order_relaxed);
    return v;
}

#define ED_SUM(ths, n, field) ed_sum((ths), (n), offsetof(struct ed_thread, field))

struct ed_rate {
    struct ed_thread *ths;
    unsigned n;
    uint64_t last, last_ns;
};

static double ed_rate(void *arg)
{
    struct ed_rate *r = arg;
    uint64_t now = now_ns(), v = ED_SUM(r->ths, r->n, ok);
    double rate = r->last_ns ? (double)(v - r->last) / ((double)(now - r->last_ns) / 1e9) : 0;
    r->last = v;
    r->last_ns = now;
    return rate;
}

/* Start the threads over the run's slots; how many started. */
static unsigned ed_start(struct ed_run *run, struct ed_thread *ths, unsigned nth,
                         struct ed_slot *slots, unsigned nslots)
{
    unsigned base = 0, started = 0;
    for (unsigned t = 0; t < nth; t++) {
        ths[t].run = run;
        ths[t].n = nslots / nth + (t < nslots % nth ? 1 : 0);
        ths[t].slots = slots + base;
        base += ths[t].n;
    }
    for (; started < nth; started++)
        if (gen_start(&ths[started].g, started, &ths[started], ed_on_start))
            break;
    return started;
}

/* Join the threads and close what their slots still hold. */
static void ed_join(struct ed_thread *ths, unsigned started, struct ed_slot *slots, unsigned n)
{
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    for (unsigned i = 0; i < n; i++)
        if (slots[i].io.fd >= 0) {
            abort_close(slots[i].io.fd);
            slots[i].io.fd = -1;
        }
}

static void ed_figures(struct bench *b, struct result *res, struct ed_thread *ths, unsigned n,
                       double secs, const struct proc_sample *p0, const struct proc_sample *p1)
{
    uint64_t ok = ED_SUM(ths, n, ok), err = ED_SUM(ths, n, errors);
    uint64_t mis = ED_SUM(ths, n, misrouted);
    struct hist *all = calloc(1, sizeof(*all));
    if (!all)
        return;
    for (unsigned t = 0; t < n; t++)
        hist_merge(all, &ths[t].lat);
    result_add(res, "connections", "1/s", (double)ok / secs);
    result_latency(res, all, false, false);
    result_add(res, "misrouted", "", (double)mis);
    result_add(res, "errors", "", (double)err);
    if (p0 && p1) {
        double cpu = p1->cpu_s - p0->cpu_s;
        result_add(res, "proxy_cpu", "s/s", cpu / secs);
        result_add(res, "proxy_cpu_per_1k", "s/1000", ok ? cpu / ((double)ok / 1000.0) : 0);
    }
    if (err) {
        char why[200];
        result_shortfall(res, "%llu of %llu connections in the window failed%s",
                         (unsigned long long)err, (unsigned long long)(ok + err),
                         bench_setup_reason(b, why, sizeof(why)));
    }
    res->nothing = ok == 0;
    free(all);
}

/* The warm-up and the window; the threads are joined after it. */
static int ed_measure(struct ed_run *run, struct result *res)
{
    struct bench *b = run->b;
    const struct bench_opts *o = &b->o;
    unsigned nth = MIN(o->threads, o->concurrency);
    struct ed_thread *ths = calloc(nth, sizeof(*ths));
    struct ed_slot *slots = calloc(o->concurrency, sizeof(*slots));
    if (!ths || !slots) {
        free(ths);
        free(slots);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < o->concurrency; i++)
        slots[i].io.fd = -1;
    unsigned started = ed_start(run, ths, nth, slots, o->concurrency);
    int rc = started == nth ? 0 : -ENOMEM;
    if (!rc) {
        struct ed_rate rate = {ths, started, 0, 0};
        bench_window(b, "warm-up", o->warmup_s, NULL, NULL, NULL);
        struct proc_sample p0, p1;
        bool have_cpu = bench_sample(b, &p0);
        for (unsigned t = 0; t < started; t++)
            atomic_store(&ths[t].measuring, true);
        uint64_t t0 = now_ns();
        double gen0 = self_cpu_s();
        bench_window(b, "measure", o->duration_s, ed_rate, &rate, "conn/s");
        for (unsigned t = 0; t < started; t++)
            atomic_store(&ths[t].measuring, false);
        double secs = (double)(now_ns() - t0) / 1e9;
        double gen = self_cpu_s() - gen0;
        have_cpu = have_cpu && bench_sample(b, &p1);
        ed_join(ths, started, slots, o->concurrency);
        ed_figures(b, res, ths, started, secs, have_cpu ? &p0 : NULL, have_cpu ? &p1 : NULL);
        /* the bench's own share (clients and backends): which side, the
         * edge or the generator, set the rate */
        result_add(res, "generator_cpu", "s/s", gen / secs);
    } else {
        ed_join(ths, started, slots, o->concurrency);
    }
    free(ths);
    free(slots);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Wait until every held connection is open or failed (bounded); how many
 * are held. */
static uint64_t ed_hold_wait(struct bench *b, struct ed_thread *ths, unsigned n)
{
    const struct bench_opts *o = &b->o;
    uint64_t t0 = now_ns(), limit = (30 + o->hold / 500) * 1000000000ull;
    while (!bench_has_failed(b) && now_ns() - t0 < limit) {
        uint64_t held = ED_SUM(ths, n, nheld), err = ED_SUM(ths, n, hold_errors);
        bench_progress_count(b, "holding", (unsigned)held, o->hold, (double)(now_ns() - t0) / 1e9);
        if (held + err >= o->hold)
            break;
        sleep_ms(20);
    }
    bench_progress_count(b, NULL, 0, 0, 0);
    return ED_SUM(ths, n, nheld);
}

/* The figures of the --hold phase. */
static void ed_hold_figures(struct bench *b, struct result *res, uint64_t held, uint64_t err,
                            const struct proc_sample *p0, const struct proc_sample *p1)
{
    result_add(res, "held", "", (double)held);
    if (p0 && p1 && held) {
        double kib = p1->mem_kib - p0->mem_kib;
        result_add(res, "held_mem_per_10k", "MiB", kib / 1024.0 * 10000.0 / (double)held);
        res->mem_src |= p1->mem_src;
    }
    if (held < b->o.hold) {
        char why[200];
        result_shortfall(res, "%llu of %u held connections could not be set up (%llu failed)%s",
                         (unsigned long long)(b->o.hold - held), b->o.hold, (unsigned long long)err,
                         bench_setup_reason(b, why, sizeof(why)));
    }
}

/* --hold: N connections opened and kept; the proxy's memory with them. */
static int ed_hold(struct ed_run *run, struct result *res)
{
    struct bench *b = run->b;
    const struct bench_opts *o = &b->o;
    unsigned nslots = MIN(o->concurrency, o->hold), nth = MIN(o->threads, nslots);
    struct ed_thread *ths = calloc(nth, sizeof(*ths));
    struct ed_slot *slots = calloc(nslots, sizeof(*slots));
    int *held = calloc(o->hold, sizeof(*held));
    int rc = ths && slots && held ? 0 : -ENOMEM;
    for (unsigned t = 0, base = 0; !rc && t < nth; t++) {
        ths[t].hold_target = o->hold / nth + (t < o->hold % nth ? 1 : 0);
        ths[t].held = held + base;
        base += ths[t].hold_target;
    }
    for (unsigned i = 0; !rc && i < nslots; i++)
        slots[i].io.fd = -1;
    struct proc_sample p0, p1;
    bool have_mem = !rc && bench_sample(b, &p0);
    run->holding = true;
    unsigned started = rc ? 0 : ed_start(run, ths, nth, slots, nslots);
    if (!rc && started == nth) {
        uint64_t n = ed_hold_wait(b, ths, started);
        sleep_ms(200); /* let the proxy settle */
        have_mem = have_mem && bench_sample(b, &p1);
        ed_hold_figures(b, res, n, ED_SUM(ths, started, hold_errors), have_mem ? &p0 : NULL,
                        have_mem ? &p1 : NULL);
    } else if (!rc) {
        rc = -ENOMEM;
    }
    if (ths && slots)
        ed_join(ths, started, slots, nslots);
    for (unsigned t = 0; t < started; t++)
        for (uint64_t i = 0; i < atomic_load(&ths[t].nheld); i++)
            abort_close(ths[t].held[i]);
    run->holding = false;
    free(ths);
    free(slots);
    free(held);
    return rc;
}

/* The messages of --hello, one per host. */
static int edge_messages(struct ed_run *run, unsigned kind)
{
    for (unsigned i = 0; i < EDGE_BACKENDS; i++) {
        uint8_t *m = run->msg[i];
        size_t cap = sizeof(run->msg[i]);
        const char *h = edge_hosts[i];
        switch (kind) {
        case EDGE_HELLO_MC:
            run->len[i] = edgehello_mc(m, cap, h, 25565, "bench");
            break;
        case EDGE_HELLO_TLS:
            run->len[i] = edgehello_tls(m, cap, h, EDGEHELLO_TLS_SIZE, 1, 0);
            break;
        case EDGE_HELLO_PQ_SEGMENTS:
            run->len[i] = edgehello_tls(m, cap, h, EDGEHELLO_PQ_SIZE, 1, 1);
            break;
        default:
            run->len[i] = edgehello_tls(m, cap, h, EDGEHELLO_PQ_SIZE, 2, 1);
            break;
        }
        if (!run->len[i])
            return -EINVAL;
    }
    run->two_writes = kind == EDGE_HELLO_PQ_SEGMENTS;
    return 0;
}

void scenario_edge_describe(const struct bench_opts *o, char *out, size_t cap)
{
    static const char *const what[] = {
        [EDGE_HELLO_TLS] = "a 517-byte ClientHello",
        [EDGE_HELLO_MC] = "a Minecraft handshake + Login Start",
        [EDGE_HELLO_PQ_SEGMENTS] = "a 1812-byte ClientHello in 2 writes",
        [EDGE_HELLO_PQ_RECORDS] = "a 1812-byte ClientHello in 2 TLS records",
    };
    char a[ADDR_STRLEN];
    unsigned port = o->target_port ? o->target_port : EDGE_PEER_BACKEND_PORT;
    int n = o->has_edge_target
                ? snprintf(out, cap, "edge at %s (backends on 127.0.0.1:%u and :%u)",
                           addr_format(&o->edge_target, a, sizeof(a)), port, port + 1)
                : snprintf(out, cap, "ferry edge (self-hosted, a fresh one for each run)");
    if (n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, "; --hello %s: %s", edge_hello_name(o->edge_hello),
                 what[o->edge_hello % 4]);
}

int scenario_edge(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    struct ed_run *run = calloc(1, sizeof(*run));
    if (!run)
        return -ENOMEM;
    run->b = b;
    int rc = edge_messages(run, o->edge_hello);
    uint16_t base =
        o->has_edge_target ? (o->target_port ? o->target_port : EDGE_PEER_BACKEND_PORT) : 0;
    struct edge_backends *be = rc ? NULL : edge_backends_start(base);
    struct child c;
    memset(&c, 0, sizeof(c));
    bool self = !o->has_edge_target;
    if (!rc && !be)
        rc = -EADDRINUSE;
    if (!rc && self)
        rc = edge_self_start(b, &c, be, &run->edge);
    else if (!rc) {
        run->edge = o->edge_target;
        memcpy(b->pids, o->proxy_pids, sizeof(o->proxy_pids));
        b->npids = o->nproxy_pids;
    }
    if (!rc && self) {
        res->hop[0].pid = c.pid;
        res->hop[0].addr = run->edge;
    }
    if (!rc)
        rc = ed_measure(run, res);
    if (!rc && o->hold && !bench_has_failed(b))
        rc = ed_hold(run, res);
    if (self && c.pid > 0) {
        int st = child_stop(&c);
        b->npids = 0;
        if (st != 0 && !rc) {
            fprintf(stderr, "ferry bench: the self-hosted ferry exited with status %d\n", st);
            rc = -ECHILD;
        }
    }
    edge_backends_stop(be);
    free(run);
    return rc;
}
