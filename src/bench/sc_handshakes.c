/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_handshakes.c: connection setup rate and latency. --concurrency slots
 * each repeat a full setup: TCP connect (from a random 127.x.y.z source, so
 * one source's ephemeral ports are not the limit), greeting, method, request,
 * reply, one byte echoed end to end, then an abortive close (no TIME_WAIT).
 * Latency runs from connect() to the echoed byte. Failures are counted by
 * kind: the OS (connect errors, resets) apart from the proxy (SOCKS replies),
 * and apart from both, a wrong echo (another byte, or more than one): that
 * is the proxy corrupting data, and fails the run. Socket-level failures
 * are told by where (connect(), before the proxy's reply, after it), beside
 * the kernel's accept-queue drops in the window (TcpExtListenOverflows).
 *
 * With --rate N/s (open loop) the setups start on a fixed timetable instead,
 * N a second over all threads, whether or not the ones before have ended;
 * --concurrency is then the most in flight, and a setup that finds no free
 * slot waits for one. Its latency runs from its scheduled time, so waiting
 * (for a slot, or for a late loop) counts: wrk2's correction for the
 * coordinated omission of a closed loop, where a slow proxy also slows the
 * sending and hides its own queue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"

struct hs_thread;

struct hs_slot {
    struct sclient sc;
    struct hs_thread *th;
    struct task restart;
    bool sent;
    uint64_t sched_ns; /* --rate: when this setup was due */
};

struct hs_thread {
    struct gen g;
    struct bench *b;
    struct hs_slot *slots;
    unsigned n;
    struct hist lat;       /* ns; owned by the thread until it is joined */
    struct pace pace;      /* --rate: this thread's share of the timetable */
    struct hs_slot **idle; /* --rate: free slots (a stack) */
    unsigned nidle;
    _Atomic uint64_t backlog; /* --rate: setups due that wait for a slot */
    _Atomic bool measuring;
    _Atomic uint64_t ok, fail_socket, fail_socks, addrnotavail;
    /* fail_socket by where: connect(), before the proxy's reply, after it */
    _Atomic uint64_t fail_connect, fail_early, fail_late;
    _Atomic uint64_t fail_data; /* wrong echoes, warm-up included */
    uint64_t total;             /* all completions, measured or not */
};

static void bump(_Atomic uint64_t *v)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static void hs_begin(struct hs_slot *s);

static void hs_finish(struct hs_slot *s, bool ok)
{
    struct hs_thread *th = s->th;
    bool measuring = atomic_load_explicit(&th->measuring, memory_order_relaxed);
    if (ok) {
        if (measuring) {
            uint64_t t0 = th->b->o.rate > 0 ? s->sched_ns : s->sc.t0_ns;
            hist_add(&th->lat, now_ns() - t0);
            bump(&th->ok);
        }
    } else if (s->sc.fail == SC_FAIL_DATA) {
        bump(&th->fail_data); /* always: any wrong echo fails the run */
    } else {
        bench_setup_failed(th->b, &s->sc, &th->b->route);
    }
    if (!ok && s->sc.fail != SC_FAIL_DATA && measuring) {
        if (s->sc.fail == SC_FAIL_SOCKS) {
            bump(&th->fail_socks);
        } else {
            bump(&th->fail_socket);
            if (s->sc.err == -EADDRNOTAVAIL)
                bump(&th->addrnotavail);
            /* A reset seen as connect()'s result came after the handshake. */
            bool reset = s->sc.err == -ECONNRESET || s->sc.err == -EPIPE;
            bump(s->sc.fail_phase == SC_CONNECT && !reset ? &th->fail_connect
                 : s->sc.fail_phase == SC_OPEN            ? &th->fail_late
                                                          : &th->fail_early);
        }
    }
    sclient_close(&s->sc, true);
    loop_defer(&th->g.loop, &s->restart); /* begin again after this event batch */
}

static void hs_on_io(struct io *io, uint32_t events)
{
    struct hs_slot *s = container_of(io, struct hs_slot, sc.io);
    const struct route *r = &s->th->b->route;
    int rc = sclient_step(&s->sc, r, events);
    if (rc < 0) {
        hs_finish(s, false);
        return;
    }
    if (rc == 0)
        return;
    if (!s->sent) {
        uint8_t one = 0x5a;
        if (sclient_send(&s->sc, &one, 1) != 1) {
            s->sc.fail = SC_FAIL_SOCKET;
            s->sc.fail_phase = SC_OPEN;
            s->sc.err = -errno;
            hs_finish(s, false);
            return;
        }
        s->sent = true;
    }
    uint8_t back[2];
    ssize_t n = sclient_recv(&s->sc, back, sizeof(back));
    if (n == 1 && back[0] == 0x5a) {
        hs_finish(s, true);
    } else if (n > 0) {
        char a[ADDR_STRLEN];
        if (n == 1)
            bench_fail(s->th->b,
                       "handshakes: the proxy corrupted data: the byte echoed through a new "
                       "tunnel (to %s) came back as 0x%02x, 0x5a was sent",
                       addr_format(&r->dst, a, sizeof(a)), back[0]);
        else
            bench_fail(s->th->b,
                       "handshakes: the proxy corrupted data: 2 or more bytes came back "
                       "through a new tunnel (to %s) where 1 (0x5a) was sent",
                       addr_format(&r->dst, a, sizeof(a)));
        s->sc.fail = SC_FAIL_DATA;
        hs_finish(s, false);
    } else if (n == 0 || (n < 0 && errno != EAGAIN)) {
        s->sc.fail = SC_FAIL_SOCKET;
        s->sc.fail_phase = SC_OPEN;
        s->sc.err = n == 0 ? -ECONNRESET : -errno;
        hs_finish(s, false);
    }
}

static void hs_begin(struct hs_slot *s)
{
    struct hs_thread *th = s->th;
    s->sent = false;
    if (atomic_load_explicit(&th->g.stop, memory_order_relaxed))
        return;
    if (sclient_open(&s->sc, &th->g.loop, &th->b->route, hs_on_io) < 0)
        hs_finish(s, false);
}

/* --rate: start every setup that is due, while a slot is free (a bounded
 * number per call: the loop must breathe); what is due and waits is the
 * backlog. */
static void hs_pace_run(struct hs_thread *th)
{
    uint64_t now = now_ns(), at;
    for (int i = 0; i < 1024 && th->nidle && pace_take(&th->pace, now, &at); i++) {
        struct hs_slot *s = th->idle[--th->nidle];
        s->sched_ns = at;
        hs_begin(s);
    }
    uint64_t due = 0, next = pace_next_ns(&th->pace);
    if (next <= now)
        due = (uint64_t)((double)(now - next) / th->pace.interval_ns) + 1;
    atomic_store_explicit(&th->backlog, due, memory_order_relaxed);
}

static void hs_on_pace(struct gen *g)
{
    hs_pace_run(g->scenario);
}

static void hs_on_restart(struct task *t)
{
    struct hs_slot *s = container_of(t, struct hs_slot, restart);
    struct hs_thread *th = s->th;
    if (th->b->o.rate <= 0) {
        hs_begin(s);
        return;
    }
    th->idle[th->nidle++] = s;
    hs_pace_run(th);
}

static void hs_on_start(struct gen *g)
{
    struct hs_thread *th = g->scenario;
    const struct bench_opts *o = &th->b->o;
    for (unsigned i = 0; i < th->n; i++) {
        struct hs_slot *s = &th->slots[i];
        s->th = th;
        task_init(&s->restart, hs_on_restart);
        if (o->rate > 0)
            th->idle[th->nidle++] = s;
        else
            hs_begin(s);
    }
    if (o->rate > 0) {
        /* Each thread its share, the threads' timetables interleaved. */
        unsigned nth = MIN(o->threads, o->concurrency);
        double per = o->rate / nth;
        pace_init(&th->pace, now_ns() + (uint64_t)(1e9 / o->rate * g->id), per);
        gen_pace(g, hs_on_pace);
    }
}

static uint64_t hs_sum(struct hs_thread *ths, unsigned n, size_t off)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < n; i++)
        s += atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)&ths[i] + off),
                                  memory_order_relaxed);
    return s;
}

struct hs_rate {
    struct hs_thread *ths;
    unsigned n;
    uint64_t last, last_ns;
};

static double hs_rate(void *arg)
{
    struct hs_rate *r = arg;
    uint64_t now = now_ns(), v = hs_sum(r->ths, r->n, offsetof(struct hs_thread, ok));
    double rate = r->last_ns ? (double)(v - r->last) / ((double)(now - r->last_ns) / 1e9) : 0;
    r->last = v;
    r->last_ns = now;
    return rate;
}

/* Socket-level failures by where they happened, and what the kernel
 * dropped at full accept queues in the window (overflows; < 0: unknown). */
static void hs_socket_notes(struct result *res, struct hs_thread *ths, unsigned started,
                            uint64_t f_sock, int64_t overflows)
{
    uint64_t f_conn = hs_sum(ths, started, offsetof(struct hs_thread, fail_connect));
    uint64_t f_early = hs_sum(ths, started, offsetof(struct hs_thread, fail_early));
    uint64_t f_late = hs_sum(ths, started, offsetof(struct hs_thread, fail_late));
    if (f_sock)
        result_note(res,
                    "%llu setups failed at the socket level: %llu at connect(), %llu closed or "
                    "reset by the proxy before its reply, %llu reset after it (the echo)",
                    (unsigned long long)f_sock, (unsigned long long)f_conn,
                    (unsigned long long)f_early, (unsigned long long)f_late);
    if (overflows > 0)
        result_note(res,
                    "the kernel dropped %lld connections at a full accept queue in the window "
                    "(TcpExtListenOverflows: every listener in this network namespace, the "
                    "proxy's and the targets')",
                    (long long)overflows);
}

/* The figures, notes and shortfall of a run whose threads have stopped:
 * the window lasted secs; cpu: the proxy's CPU seconds in it (have_cpu:
 * known); overflows: the kernel's accept-queue drops in it (< 0: unknown). */
static void hs_figures(struct bench *b, struct result *res, struct hs_thread *ths, unsigned started,
                       double secs, bool have_cpu, double cpu, int64_t overflows)
{
    const struct bench_opts *o = &b->o;
    uint64_t ok = hs_sum(ths, started, offsetof(struct hs_thread, ok));
    uint64_t f_sock = hs_sum(ths, started, offsetof(struct hs_thread, fail_socket));
    uint64_t f_socks = hs_sum(ths, started, offsetof(struct hs_thread, fail_socks));
    uint64_t f_port = hs_sum(ths, started, offsetof(struct hs_thread, addrnotavail));
    uint64_t f_data = hs_sum(ths, started, offsetof(struct hs_thread, fail_data));
    struct hist *all = calloc(1, sizeof(*all));
    if (!all)
        return;
    for (unsigned t = 0; t < started; t++)
        hist_merge(all, &ths[t].lat);
    result_add(res, "setups", "1/s", (double)ok / secs);
    if (o->rate > 0) {
        result_add(res, "scheduled", "1/s", o->rate);
        uint64_t backlog = hs_sum(ths, started, offsetof(struct hs_thread, backlog));
        result_add(res, "backlog", "", (double)backlog);
        if (backlog)
            result_note(res,
                        "%llu setups were due and still waiting for a free slot when the "
                        "window closed: the proxy (or --concurrency %u) did not keep up with "
                        "--rate %g/s; their wait is in the latency of those that ran",
                        (unsigned long long)backlog, o->concurrency, o->rate);
    }
    result_latency(res, all, false, false);
    result_add(res, "failed_socket", "", (double)f_sock);
    result_add(res, "failed_socks", "", (double)f_socks);
    result_add(res, "failed_data", "", (double)f_data);
    if (have_cpu) {
        result_add(res, "proxy_cpu", "s/s", cpu / secs);
        result_add(res, "proxy_cpu_per_1k", "s/1000", ok ? cpu / ((double)ok / 1000.0) : 0);
    }
    if (f_port)
        result_note(res,
                    "%llu connects failed with EADDRNOTAVAIL: the OS ran out of ephemeral "
                    "ports, not the proxy of capacity (spread sources are %s)",
                    (unsigned long long)f_port, o->spread_src ? "on" : "off");
    else
        hs_socket_notes(res, ths, started, f_sock, overflows);
    if (f_socks)
        result_note(res, "%llu setups got %s or a protocol error", (unsigned long long)f_socks,
                    o->http_proxy ? "an HTTP status other than 200" : "a SOCKS failure reply");
    if (f_data)
        result_note(res,
                    "%llu setups echoed a wrong byte (warm-up included): the proxy "
                    "corrupts data",
                    (unsigned long long)f_data);
    if (f_sock + f_socks) {
        char why[200];
        result_shortfall(res, "%llu of %llu setups in the window failed%s",
                         (unsigned long long)(f_sock + f_socks),
                         (unsigned long long)(ok + f_sock + f_socks),
                         bench_setup_reason(b, why, sizeof(why)));
    }
    res->nothing = ok == 0;
    free(all);
}

/* The warm-up, the window, the threads stopped, the figures. */
static void hs_measure(struct bench *b, struct result *res, struct hs_thread *ths, unsigned started)
{
    const struct bench_opts *o = &b->o;
    struct hs_rate rate = {ths, started, 0, 0};
    bench_window(b, "warm-up", o->warmup_s, NULL, NULL, NULL);
    struct proc_sample p0, p1;
    bool have_cpu = bench_sample(b, &p0);
    uint64_t ov0 = 0, ov1 = 0;
    bool have_ov = bench_listen_overflows(&ov0);
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].measuring, true);
    uint64_t t0 = now_ns();
    bench_window(b, "measure", o->duration_s, hs_rate, &rate, "setups/s");
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].measuring, false);
    double secs = (double)(now_ns() - t0) / 1e9;
    have_cpu = have_cpu && bench_sample(b, &p1);
    have_ov = have_ov && bench_listen_overflows(&ov1);
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    hs_figures(b, res, ths, started, secs, have_cpu, have_cpu ? p1.cpu_s - p0.cpu_s : 0,
               have_ov ? (int64_t)(ov1 - ov0) : -1);
}

int scenario_handshakes(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    unsigned nth = MIN(o->threads, o->concurrency);
    struct hs_thread *ths = calloc(nth, sizeof(*ths));
    struct hs_slot *slots = calloc(o->concurrency, sizeof(*slots));
    struct hs_slot **idle = calloc(o->concurrency, sizeof(*idle));
    if (!ths || !slots || !idle) {
        free(ths);
        free(slots);
        free(idle);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < o->concurrency; i++)
        slots[i].sc.io.fd = -1;
    targets_set_abort_on_eof(b->t, true);
    unsigned base = 0, started = 0;
    for (unsigned t = 0; t < nth; t++) {
        ths[t].b = b;
        ths[t].n = o->concurrency / nth + (t < o->concurrency % nth ? 1 : 0);
        ths[t].slots = slots + base;
        ths[t].idle = idle + base;
        base += ths[t].n;
    }
    int rc = 0;
    for (; started < nth; started++) {
        if (gen_start(&ths[started].g, started, &ths[started], hs_on_start)) {
            rc = -ENOMEM;
            break;
        }
    }
    if (!rc) {
        hs_measure(b, res, ths, started);
    } else {
        for (unsigned t = 0; t < started; t++)
            gen_stop_join(&ths[t].g);
    }
    for (unsigned i = 0; i < o->concurrency; i++)
        sclient_close(&slots[i].sc, true);
    targets_set_abort_on_eof(b->t, false);
    free(ths);
    free(slots);
    free(idle);
    return rc;
}
