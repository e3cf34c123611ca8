/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_throughput.c: steady-state relay throughput. N connections are set up
 * through the proxy to the echo target before the window opens; then each
 * writes --payload sized chunks as fast as the path takes them while reading
 * the echo back and checking every byte. Reported per direction.
 *
 * The echo must be the stream sent, byte for byte and in order: a changed
 * byte, a byte beyond what was sent, or a clean close before everything
 * came back fails the run (bench_fail) and ends that stream; only bytes up
 * to the first wrong one count in the rate. A reset is a broken stream, a
 * figure of its own.
 *
 * --direction up|down measures one way at a time, counted where the bytes
 * arrive: up, each stream opens with SINK_MAGIC_DISCARD and its seed and
 * then only sends; the sink checks every byte and reports the total it has
 * received (the figure), or the offset of a wrong byte (a failed run).
 * down, each stream opens with SINK_MAGIC_SOURCE and its seed and then only
 * reads the pattern the source sends, checking every byte. A proxy that
 * relays one direction well and the other badly shows here, and not in the
 * echo's sum.
 *
 * --stalled N (h2 only) adds N streams on the same connections that send a
 * burst toward the echo and never read: the proxy's windows and buffers
 * for them fill, their echo piles up in the bench unconsumed and no credit
 * goes back for it, and they stay open for the whole run. They are not in
 * the rates; the question is whether the measured streams keep their rate
 * beside them (bench/compare.sh --only stall puts the two side by side).
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"

#define TP_EVENT_BUDGET 16 /* chunks per direction per wakeup, then yield */
/* What a stalled stream sends at most: more than the path to the echo and
 * back holds (the proxy's 16 MiB stream window each way, its buffers and
 * the sockets' around the echo), so that every window fills. */
#define TP_STALL_BURST  (64ull << 20)

struct tp_thread;

struct tp_conn {
    struct sclient sc;
    struct tp_thread *th;
    struct task task;
    unsigned index; /* the stream's number in reports */
    uint64_t seed, sent, recvd;
    bool open, dead;
    bool stalled;                  /* --stalled: sends its burst, never reads */
    uint8_t hello[SINK_HELLO_LEN]; /* up, down: the sink's or source's magic and seed */
    uint8_t hlen, hsent;           /* of hello: its length (0: echo), how much is sent */
    uint8_t alen;                  /* up: bytes of the sink's next report in ack */
    uint8_t ack[8];
    _Atomic uint64_t seen;   /* recvd, for the main thread's per-stream figures */
    _Atomic uint64_t unread; /* stalled: its echo held unread in the h2 client */
};

struct tp_thread {
    struct gen g;
    struct bench *b;
    struct tp_conn *conns;
    unsigned n; /* measured streams, then nstall stalled ones in conns */
    unsigned nstall;
    uint8_t *rbuf;
    bool started;
    _Atomic bool go;
    _Atomic uint64_t sent, recvd;
    _Atomic unsigned open, failed, broken, corrupt;
    _Atomic uint64_t stall_sent; /* bytes the stalled streams got through */
    _Atomic unsigned stall_open, stall_lost;
};

static void stat_store(_Atomic uint64_t *s, uint64_t v)
{
    atomic_store_explicit(s, v, memory_order_relaxed);
}

static void tp_kill(struct tp_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    atomic_fetch_add(c->stalled ? &c->th->stall_lost : &c->th->broken, 1);
    sclient_close(&c->sc, false);
}

/* A stalled stream: write the burst as far as the path takes it, read
 * nothing (its echo stays in the h2 client's buffer, its credit with it). */
static void tp_stall_pump(struct tp_conn *c)
{
    struct tp_thread *th = c->th;
    for (int i = 0; i < TP_EVENT_BUDGET; i++) {
        if (!(c->sc.ev & SC_WR) || c->sent >= TP_STALL_BURST)
            return;
        size_t want = (size_t)MIN((uint64_t)th->b->o.payload, TP_STALL_BURST - c->sent);
        ssize_t n = sclient_send(&c->sc, pattern_at(c->seed + c->sent), want);
        if (n > 0) {
            c->sent += (uint64_t)n;
            atomic_fetch_add_explicit(&th->stall_sent, (uint64_t)n, memory_order_relaxed);
        } else if (n < 0 && errno == EAGAIN) {
            c->sc.ev &= (uint8_t)~SC_WR;
            return;
        } else {
            tp_kill(c);
            return;
        }
    }
    loop_defer(&th->g.loop, &c->task);
}

/* The echo went wrong (fmt says where): fail the run, end the stream
 * (nothing after a wrong byte can be trusted). */
static void tp_corrupt(struct tp_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void tp_corrupt(struct tp_conn *c, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    bench_fail(c->th->b, "throughput: the proxy corrupted stream %u: %s", c->index, what);
    atomic_fetch_add(&c->th->corrupt, 1);
    c->dead = true;
    sclient_close(&c->sc, false);
}

/* Check n echoed bytes at p against the stream; count the good ones. */
static bool tp_check(struct tp_conn *c, const uint8_t *p, size_t n)
{
    struct tp_thread *th = c->th;
    size_t good = n;
    if (c->recvd + n > c->sent)
        good = (size_t)(c->sent - c->recvd); /* the rest was never sent */
    const uint8_t *want = pattern_at(c->seed + c->recvd);
    size_t diff = bench_first_diff(p, want, good);
    stat_store(&th->recvd, atomic_load_explicit(&th->recvd, memory_order_relaxed) + diff);
    uint64_t at = c->recvd + diff;
    c->recvd = at;
    atomic_store_explicit(&c->seen, at, memory_order_relaxed);
    if (diff < good) {
        tp_corrupt(c, "byte %llu of the echo is 0x%02x, 0x%02x was sent", (unsigned long long)at,
                   p[diff], want[diff]);
        return false;
    }
    if (good < n) {
        tp_corrupt(c, "%zu bytes came back beyond the %llu sent (from byte %llu on)", n - good,
                   (unsigned long long)c->sent, (unsigned long long)at);
        return false;
    }
    return true;
}

/* down: n bytes from the source at p, checked against the pattern. */
static bool tp_check_source(struct tp_conn *c, const uint8_t *p, size_t n)
{
    struct tp_thread *th = c->th;
    const uint8_t *want = pattern_at(c->seed + c->recvd);
    size_t diff = bench_first_diff(p, want, n);
    stat_store(&th->recvd, atomic_load_explicit(&th->recvd, memory_order_relaxed) + diff);
    c->recvd += diff;
    atomic_store_explicit(&c->seen, c->recvd, memory_order_relaxed);
    if (diff < n) {
        tp_corrupt(c, "byte %llu from the source is 0x%02x, the source sent 0x%02x",
                   (unsigned long long)c->recvd, p[diff], want[diff]);
        return false;
    }
    return true;
}

/* up: n bytes of the sink's reports at p; each whole one is the total the
 * sink has received (counted as the stream's figure), or a wrong byte. */
static bool tp_check_acks(struct tp_conn *c, const uint8_t *p, size_t n)
{
    struct tp_thread *th = c->th;
    for (size_t i = 0; i < n; i++) {
        c->ack[c->alen++] = p[i];
        if (c->alen < sizeof(c->ack))
            continue;
        c->alen = 0;
        uint64_t be, v;
        memcpy(&be, c->ack, sizeof(be));
        v = be64toh(be);
        if (v & SINK_CORRUPT) {
            tp_corrupt(c, "the sink found byte %llu of the stream wrong",
                       (unsigned long long)(v & ~SINK_CORRUPT));
            return false;
        }
        if (v < c->recvd || v > c->sent) {
            tp_corrupt(c, "the sink reports %llu bytes received where %llu were sent",
                       (unsigned long long)v, (unsigned long long)c->sent);
            return false;
        }
        stat_store(&th->recvd,
                   atomic_load_explicit(&th->recvd, memory_order_relaxed) + (v - c->recvd));
        c->recvd = v;
        atomic_store_explicit(&c->seen, v, memory_order_relaxed);
    }
    return true;
}

/* What came back, by direction. */
static bool tp_take(struct tp_conn *c, const uint8_t *p, size_t n)
{
    switch ((enum bench_direction)c->th->b->o.direction) {
    case DIR_BOTH:
        return tp_check(c, p, n);
    case DIR_UP:
        return tp_check_acks(c, p, n);
    case DIR_DOWN:
        return tp_check_source(c, p, n);
    }
    return false;
}

/* up, down: the magic and seed first. 1 all sent, 0 not yet (EAGAIN or
 * short), -1 the stream died. */
static int tp_hello(struct tp_conn *c)
{
    while (c->hsent < c->hlen) {
        ssize_t n = sclient_send(&c->sc, c->hello + c->hsent, c->hlen - c->hsent);
        if (n < 0 && errno == EAGAIN) {
            c->sc.ev &= (uint8_t)~SC_WR;
            return 0;
        }
        if (n <= 0) {
            tp_kill(c);
            return -1;
        }
        c->hsent = (uint8_t)(c->hsent + n);
    }
    return 1;
}

static void tp_pump(struct tp_conn *c)
{
    struct tp_thread *th = c->th;
    size_t payload = th->b->o.payload;
    for (int i = 0; i < TP_EVENT_BUDGET; i++) {
        bool progress = false;
        if (c->sc.ev & SC_RD) {
            ssize_t n = sclient_recv(&c->sc, th->rbuf, payload);
            if (n > 0) {
                if (!tp_take(c, th->rbuf, (size_t)n))
                    return;
                progress = true;
            } else if (n < 0 && errno == EAGAIN) {
                c->sc.ev &= (uint8_t)~SC_RD;
            } else if (n == 0 && c->recvd < c->sent && !c->hlen) {
                /* The echo never closes: the proxy ended the stream early. */
                tp_corrupt(c, "closed after %llu of the %llu bytes sent came back",
                           (unsigned long long)c->recvd, (unsigned long long)c->sent);
                return;
            } else {
                tp_kill(c); /* a reset, or a close with nothing outstanding */
                return;
            }
        }
        bool go = atomic_load_explicit(&th->go, memory_order_relaxed);
        if (go && (c->sc.ev & SC_WR) && c->hsent < c->hlen) {
            int h = tp_hello(c);
            if (h < 0)
                return;
            progress = progress || h > 0;
        }
        if ((c->sc.ev & SC_WR) && go && c->hsent == c->hlen && th->b->o.direction != DIR_DOWN) {
            ssize_t n = sclient_send(&c->sc, pattern_at(c->seed + c->sent), payload);
            if (n > 0) {
                c->sent += (uint64_t)n;
                stat_store(&th->sent,
                           atomic_load_explicit(&th->sent, memory_order_relaxed) + (uint64_t)n);
                progress = true;
                if ((size_t)n < payload && !c->sc.tls)
                    c->sc.ev &= (uint8_t)~SC_WR; /* TLS takes a record at a time */
            } else if (n < 0 && errno == EAGAIN) {
                c->sc.ev &= (uint8_t)~SC_WR;
            } else {
                tp_kill(c);
                return;
            }
        }
        if (!progress)
            return;
    }
    loop_defer(&th->g.loop, &c->task); /* budget spent: let the others run */
}

static void tp_on_task(struct task *t)
{
    struct tp_conn *c = container_of(t, struct tp_conn, task);
    if (c->dead)
        return;
    if (c->stalled)
        tp_stall_pump(c);
    else
        tp_pump(c);
}

static void tp_on_io(struct io *io, uint32_t events)
{
    struct tp_conn *c = container_of(io, struct tp_conn, sc.io);
    struct tp_thread *th = c->th;
    if (!c->open) {
        int rc = sclient_step(&c->sc, &th->b->route, events);
        if (rc < 0) {
            c->dead = true;
            atomic_fetch_add(&th->failed, 1);
            bench_setup_failed(th->b, &c->sc, &th->b->route);
            sclient_close(&c->sc, false);
            return;
        }
        if (rc == 0)
            return;
        c->open = true;
        atomic_fetch_add(c->stalled ? &th->stall_open : &th->open, 1);
    } else {
        sclient_step(&c->sc, &th->b->route, events); /* updates readiness only */
    }
    if (c->stalled && c->sc.via_h2)
        atomic_store_explicit(&c->unread, h2_stream_unread(&c->sc), memory_order_relaxed);
    if (!c->stalled) {
        tp_pump(c);
    } else if (events & (EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
        tp_kill(c); /* the echo never closes: the proxy ended it */
    } else {
        tp_stall_pump(c);
    }
}

static void tp_on_tick(struct gen *g)
{
    struct tp_thread *th = g->scenario;
    if (th->started || !atomic_load(&th->go))
        return;
    th->started = true; /* the window opened: kick every stream once */
    for (unsigned i = 0; i < th->n; i++)
        if (th->conns[i].open && !th->conns[i].dead)
            tp_pump(&th->conns[i]);
}

static void tp_on_start(struct gen *g)
{
    struct tp_thread *th = g->scenario;
    g->on_tick = tp_on_tick;
    for (unsigned i = 0; i < th->n + th->nstall; i++) {
        struct tp_conn *c = &th->conns[i];
        c->th = th;
        task_init(&c->task, tp_on_task);
        if (sclient_open(&c->sc, &g->loop, &th->b->route, tp_on_io) < 0) {
            c->dead = true;
            atomic_fetch_add(&th->failed, 1);
            bench_setup_failed(th->b, &c->sc, &th->b->route);
        }
    }
}

static uint64_t sum_bytes(struct tp_thread *ths, unsigned n, bool up)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < n; i++)
        s += atomic_load_explicit(up ? &ths[i].sent : &ths[i].recvd, memory_order_relaxed);
    return s;
}

struct tp_rate {
    struct tp_thread *ths;
    unsigned n;
    uint64_t last;
    uint64_t last_ns;
};

static double tp_rate(void *arg)
{
    struct tp_rate *r = arg;
    uint64_t now = now_ns(), b = sum_bytes(r->ths, r->n, false);
    double v =
        r->last_ns ? (double)(b - r->last) / ((double)(now - r->last_ns) / 1e9) / 1048576.0 : 0;
    r->last = b;
    r->last_ns = now;
    return v;
}

/* Wait (up to 30 s) until every stream is open or has failed. Returns
 * how many are open; fewer than asked for is a shortfall. */
static unsigned tp_wait_open(struct bench *b, struct result *res, struct tp_thread *ths,
                             unsigned started)
{
    const struct bench_opts *o = &b->o;
    uint64_t t_setup = now_ns();
    unsigned open = 0, failed = 0, sopen = 0;
    while (now_ns() - t_setup < 30ull * 1000000000u) {
        open = failed = sopen = 0;
        for (unsigned t = 0; t < started; t++) {
            open += atomic_load(&ths[t].open);
            sopen += atomic_load(&ths[t].stall_open);
            failed += atomic_load(&ths[t].failed);
        }
        if (open + sopen + failed >= o->connections + o->stalled)
            break;
        bench_progress_count(b, "set-up: streams open", open + sopen, o->connections + o->stalled,
                             (double)(now_ns() - t_setup) / 1e9);
        bench_window(b, NULL, 0.01, NULL, NULL, NULL);
    }
    bench_progress_count(b, NULL, 0, 0, 0);
    if (sopen < o->stalled) {
        char why[200];
        result_shortfall(res, "%u of %u stalled streams could not be set up%s", o->stalled - sopen,
                         o->stalled, bench_setup_reason(b, why, sizeof(why)));
    }
    if (open < o->connections) {
        char why[200];
        result_shortfall(res, "%u of %u streams could not be set up%s", o->connections - open,
                         o->connections, bench_setup_reason(b, why, sizeof(why)));
        res->nothing = open == 0;
    }
    return open;
}

static uint64_t sum_stall(struct tp_thread *ths, unsigned n)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < n; i++)
        s += atomic_load_explicit(&ths[i].stall_sent, memory_order_relaxed);
    return s;
}

/* Before the load starts: until the stalled streams' bursts stop moving
 * (nothing more for 300 ms: every window on their path is full) or went
 * through whole; at most 20 s. */
static void tp_wait_stalled(struct bench *b, struct tp_thread *ths, unsigned started)
{
    uint64_t t0 = now_ns(), last = sum_stall(ths, started), t_last = t0;
    while (!bench_has_failed(b) && now_ns() - t0 < 20ull * 1000000000u &&
           now_ns() - t_last < 300ull * 1000000u && last < b->o.stalled * TP_STALL_BURST) {
        bench_window(b, NULL, 0.05, NULL, NULL, NULL);
        uint64_t now = sum_stall(ths, started);
        if (now != last) {
            last = now;
            t_last = now_ns();
        }
    }
}

/* The stalled streams' figures: how many were held to the end, what their
 * bursts got through (before and during the window). */
static void tp_stall_report(struct result *res, struct tp_thread *ths, unsigned started,
                            uint64_t in_window)
{
    unsigned sopen = 0, lost = 0;
    for (unsigned t = 0; t < started; t++) {
        sopen += atomic_load(&ths[t].stall_open);
        lost += atomic_load(&ths[t].stall_lost);
    }
    uint64_t sent = sum_stall(ths, started), unread = 0;
    for (unsigned t = 0; t < started; t++)
        for (unsigned i = ths[t].n; i < ths[t].n + ths[t].nstall; i++)
            unread += atomic_load_explicit(&ths[t].conns[i].unread, memory_order_relaxed);
    result_add(res, "stalled_streams", "", sopen - lost);
    result_add(res, "stalled_sent", "MiB", (double)sent / 1048576.0);
    result_add(res, "stalled_sent_in_window", "MiB", (double)in_window / 1048576.0);
    result_add(res, "stalled_unread", "MiB", (double)unread / 1048576.0);
    if (lost)
        result_shortfall(res, "%u of %u stalled streams were ended by the proxy", lost, sopen);
    if (sopen && sent >= (uint64_t)sopen * TP_STALL_BURST)
        result_note(res,
                    "the stalled streams' whole bursts (%llu MiB each) went through: "
                    "their windows never filled",
                    (unsigned long long)(TP_STALL_BURST >> 20));
}

/* Echoed bytes of each measured stream so far into out (conns order). */
static void tp_seen(const struct tp_thread *ths, unsigned started, uint64_t *out)
{
    size_t k = 0;
    for (unsigned t = 0; t < started; t++)
        for (unsigned i = 0; i < ths[t].n; i++)
            out[k++] = atomic_load_explicit(&ths[t].conns[i].seen, memory_order_relaxed);
}

/* The slowest and the fastest measured stream's echo over the window
 * (streams that died are in it with what they managed): fair shares. */
static void tp_per_stream(struct result *res, const uint64_t *a, const uint64_t *z, size_t n,
                          double secs, bool up)
{
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        double r = (double)(z[i] - a[i]) / secs / 1048576.0;
        lo = i == 0 || r < lo ? r : lo;
        hi = r > hi ? r : hi;
    }
    result_add(res, up ? "slowest_stream_up" : "slowest_stream_down", "MiB/s", lo);
    result_add(res, up ? "fastest_stream_up" : "fastest_stream_down", "MiB/s", hi);
}

/* The rates of the window: sent and received bytes (the receiver's count:
 * for up, the sink's reports) over secs, by direction. */
static void tp_rates(struct result *res, const struct bench_opts *o, uint64_t sent,
                     uint64_t received, double secs)
{
    double mib = (double)received / secs / 1048576.0;
    switch ((enum bench_direction)o->direction) {
    case DIR_BOTH:
        result_add(res, "up", "MiB/s", (double)sent / secs / 1048576.0);
        result_add(res, "down", "MiB/s", mib);
        result_add(res, "total", "MiB/s", (double)(sent + received) / secs / 1048576.0);
        if (!received)
            result_note(res, "no byte came back during the window: the path stalled");
        return;
    case DIR_UP:
        result_add(res, "up", "MiB/s", mib);
        result_add(res, "total", "MiB/s", mib);
        if (!received)
            result_note(res, "the sink received nothing during the window: the path stalled");
        return;
    case DIR_DOWN:
        result_add(res, "down", "MiB/s", mib);
        result_add(res, "total", "MiB/s", mib);
        if (!received)
            result_note(res, "nothing came from the source during the window: the path "
                             "stalled");
        return;
    }
}

/* Let the open streams go: the warm-up, the window, the figures. */
static void tp_measure(struct bench *b, struct result *res, struct tp_thread *ths, unsigned started,
                       unsigned open)
{
    const struct bench_opts *o = &b->o;
    if (o->stalled)
        tp_wait_stalled(b, ths, started);
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].go, true);
    struct tp_rate rate = {ths, started, 0, 0};
    bench_window(b, "warm-up", o->warmup_s, tp_rate, &rate, "MiB/s");
    struct proc_sample p0, p1;
    bool have_cpu = bench_sample(b, &p0);
    uint64_t up0 = sum_bytes(ths, started, true), down0 = sum_bytes(ths, started, false);
    uint64_t *seen = calloc(2 * (size_t)o->connections, sizeof(*seen));
    if (seen)
        tp_seen(ths, started, seen);
    uint64_t stall0 = sum_stall(ths, started), t0 = now_ns();
    bench_window(b, "measure", o->duration_s, tp_rate, &rate, "MiB/s");
    uint64_t up1 = sum_bytes(ths, started, true), down1 = sum_bytes(ths, started, false);
    uint64_t stall1 = sum_stall(ths, started);
    if (seen)
        tp_seen(ths, started, seen + o->connections);
    double secs = (double)(now_ns() - t0) / 1e9;
    have_cpu = have_cpu && bench_sample(b, &p1);

    unsigned corrupt = 0, broken = 0;
    for (unsigned t = 0; t < started; t++) {
        corrupt += atomic_load(&ths[t].corrupt);
        broken += atomic_load(&ths[t].broken);
    }
    tp_rates(res, o, up1 - up0, down1 - down0, secs);
    if (have_cpu) {
        /* Bytes the proxy moved: each way once, the echo's twice. */
        uint64_t moved = o->direction == DIR_BOTH ? up1 - up0 + down1 - down0 : down1 - down0;
        double gib = (double)moved / 1073741824.0;
        result_add(res, "proxy_cpu", "s/s", (p1.cpu_s - p0.cpu_s) / secs);
        result_add(res, "proxy_cpu_per_gib", "s/GiB", gib > 0 ? (p1.cpu_s - p0.cpu_s) / gib : 0);
    }
    if (seen && o->connections > 1)
        tp_per_stream(res, seen, seen + o->connections, o->connections, secs,
                      o->direction == DIR_UP);
    free(seen);
    result_add(res, "streams", "", open);
    result_add(res, "corrupt_streams", "", corrupt);
    result_add(res, "broken_streams", "", broken);
    if (corrupt)
        result_note(res, "%u streams came back wrong (not counted from the first wrong byte)",
                    corrupt);
    if (broken)
        result_shortfall(res, "%u of %u streams ended early (reset, or closed by the proxy)",
                         broken, open);
    if (o->stalled)
        tp_stall_report(res, ths, started, stall1 - stall0);
}

/* Each thread's slice of conns: its measured streams, then its stalled
 * ones (spread like the measured, so each shares their connection).
 * Measured streams are numbered 0.., stalled ones from --connections on. */
static void tp_layout(struct tp_thread *ths, unsigned nth, struct tp_conn *conns,
                      const struct bench_opts *o)
{
    unsigned at = 0, base = 0, sbase = o->connections;
    for (unsigned t = 0; t < nth; t++) {
        struct tp_thread *th = &ths[t];
        th->n = o->connections / nth + (t < o->connections % nth ? 1 : 0);
        th->nstall = o->stalled / nth + (t < o->stalled % nth ? 1 : 0);
        th->conns = conns + at;
        for (unsigned i = 0; i < th->n + th->nstall; i++) {
            struct tp_conn *c = &th->conns[i];
            c->stalled = i >= th->n;
            c->index = c->stalled ? sbase++ : base++;
            c->seed = (uint64_t)c->index * 7919u;
            c->sc.io.fd = -1;
            if (o->direction != DIR_BOTH && !c->stalled) {
                uint64_t be = htobe64(c->seed);
                memcpy(c->hello, o->direction == DIR_UP ? SINK_MAGIC_DISCARD : SINK_MAGIC_SOURCE,
                       SINK_MAGIC_LEN);
                memcpy(c->hello + SINK_MAGIC_LEN, &be, sizeof(be));
                c->hlen = SINK_HELLO_LEN;
            }
        }
        at += th->n + th->nstall;
    }
}

int scenario_throughput(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    unsigned nth = MIN(o->threads, o->connections), total = o->connections + o->stalled;
    struct tp_thread *ths = calloc(nth, sizeof(*ths));
    struct tp_conn *conns = calloc(total, sizeof(*conns));
    if (!ths || !conns) {
        free(ths);
        free(conns);
        return -ENOMEM;
    }
    tp_layout(ths, nth, conns, o);
    for (unsigned t = 0; t < nth; t++) {
        ths[t].b = b;
        ths[t].rbuf = malloc(o->payload);
    }
    unsigned started = 0;
    int rc = 0;
    for (; started < nth; started++) {
        if (!ths[started].rbuf || gen_start(&ths[started].g, started, &ths[started], tp_on_start)) {
            rc = -ENOMEM;
            break;
        }
    }

    /* Wait (bounded) until every stream is open or has failed. */
    unsigned open = 0;
    if (!rc) {
        open = tp_wait_open(b, res, ths, started);
        rc = open ? 0 : -ECONNREFUSED;
    }
    if (!rc)
        tp_measure(b, res, ths, started, open);

    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    for (unsigned i = 0; i < total; i++)
        sclient_close(&conns[i].sc, false);
    for (unsigned t = 0; t < nth; t++)
        free(ths[t].rbuf);
    free(ths);
    free(conns);
    return rc;
}
