/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_requests.c: small HTTP requests, each on a new proxied connection (what
 * a browser or API client does through a SOCKS proxy without keep-alive),
 * then a few large downloads. The HTTP target (the bench's own, or a
 * `ferry bench sink` with --target) answers /small with 128 bytes and
 * /bytes/N with N (--download-size); every body is checked against the
 * pattern.
 *
 * With --https-proxy h2 each request is a new CONNECT stream on the
 * thread's connection, made before the first request.
 *
 * A body that differs from what the target sent (a changed byte, a
 * Content-Length other than the target's, bytes beyond it, or a clean close
 * before all of it) is the proxy corrupting data: it is counted in
 * corrupt_bodies, never in the rates, and fails the run. A reset or a bad
 * status line is a failed request.
 *
 * With --rate N/s (open loop) the small requests start on a fixed
 * timetable, N a second over all threads, whether or not the ones before
 * have been answered; --concurrency is the most in flight, and a request
 * that finds no free slot waits for one. Latency runs from the scheduled
 * time (wrk2's correction for coordinated omission). The downloads after
 * them stay closed-loop: they measure bandwidth, not latency.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"

#define RQ_HEAD_MAX 1024

struct rq_thread;

struct rq_slot {
    struct sclient sc;
    struct rq_thread *th;
    struct task restart;
    bool sent, measured, head_done;
    uint64_t ticket;
    uint64_t sched_ns; /* paced: when this request was due */
    uint64_t body_len, body_got;
    uint16_t hlen;
    char head[RQ_HEAD_MAX];
};

/* A phase: `total` tickets, of which the first `warm` are not measured. */
struct rq_phase {
    const char *path;
    uint64_t body_len; /* what the target sends for path */
    uint64_t total, warm;
    double rate;           /* > 0: open loop, this many a second over all threads */
    _Atomic uint64_t next; /* next ticket to hand out */
    _Atomic uint64_t done; /* tickets completed (ok or failed) */
    _Atomic uint64_t failed, corrupt, bytes;
    _Atomic uint64_t t_first_ns; /* start of the first measured request */
    _Atomic uint64_t t_last_ns;  /* end of the last one */
};

struct rq_thread {
    struct gen g;
    struct bench *b;
    struct rq_phase *ph;
    struct route route;
    struct rq_slot *slots;
    unsigned n;
    bool begun;            /* the slots began (h2: once the connection is up) */
    struct hist lat;       /* ns */
    struct pace pace;      /* paced: this thread's share of the timetable */
    struct rq_slot **idle; /* paced: free slots (a stack) */
    unsigned nidle;
};

static void rq_begin(struct rq_slot *s);

enum rq_outcome { RQ_OK, RQ_FAILED, RQ_CORRUPT };

static void rq_end(struct rq_slot *s, enum rq_outcome how)
{
    struct rq_thread *th = s->th;
    struct rq_phase *ph = th->ph;
    if (how == RQ_CORRUPT)
        atomic_fetch_add(&ph->corrupt, 1); /* warm-up included: it fails the run */
    if (how == RQ_FAILED) {
        if (s->sc.phase == SC_FAILED)
            bench_setup_failed(th->b, &s->sc, &th->route);
        else
            bench_setup_note(th->b, "GET %s: no complete 200 response with a Content-Length",
                             ph->path);
    }
    if (s->measured) {
        uint64_t now = now_ns();
        if (how == RQ_OK) {
            hist_add(&th->lat, now - (ph->rate > 0 ? s->sched_ns : s->sc.t0_ns));
            atomic_fetch_add(&ph->bytes, s->body_len);
        } else if (how == RQ_FAILED) {
            atomic_fetch_add(&ph->failed, 1);
        }
        uint64_t last = atomic_load(&ph->t_last_ns);
        while (now > last && !atomic_compare_exchange_weak(&ph->t_last_ns, &last, now))
            ;
    }
    atomic_fetch_add(&ph->done, 1);
    sclient_close(&s->sc, false);
    loop_defer(&th->g.loop, &s->restart);
}

/* The body went wrong: fail the run, naming the request and the byte. */
static void rq_corrupt(struct rq_slot *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rq_corrupt(struct rq_slot *s, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    bench_fail(s->th->b, "requests: the proxy corrupted the response to GET %s (request %llu): %s",
               s->th->ph->path, (unsigned long long)s->ticket + 1, what);
    rq_end(s, RQ_CORRUPT);
}

/* Check n body bytes at p, which start at body offset s->body_got. */
static bool rq_check_body(struct rq_slot *s, const uint8_t *p, size_t n)
{
    if (s->body_got + n > s->body_len) {
        rq_corrupt(s, "%llu body bytes came where Content-Length is %llu",
                   (unsigned long long)(s->body_got + n), (unsigned long long)s->body_len);
        return false;
    }
    const uint8_t *want = pattern_at(s->body_got);
    size_t diff = bench_first_diff(p, want, n);
    if (diff < n) {
        rq_corrupt(s, "body byte %llu is 0x%02x, the target sent 0x%02x",
                   (unsigned long long)(s->body_got + diff), p[diff], want[diff]);
        return false;
    }
    s->body_got += n;
    return true;
}

/* Parse the response head once it is complete: 1 parsed, 0 need more,
 * -1 a bad one (the request failed), -2 a wrong body (already ended). */
static int rq_parse_head(struct rq_slot *s)
{
    s->head[s->hlen] = '\0';
    char *end = strstr(s->head, "\r\n\r\n");
    if (!end)
        return s->hlen >= RQ_HEAD_MAX - 1 ? -1 : 0;
    if (strncmp(s->head, "HTTP/1.1 200 ", 13) != 0)
        return -1;
    char *cl = strcasestr(s->head, "\r\ncontent-length:");
    if (!cl || cl > end)
        return -1;
    s->body_len = strtoull(cl + 17, NULL, 10);
    s->head_done = true;
    if (s->body_len != s->th->ph->body_len) {
        rq_corrupt(s, "Content-Length is %llu, the target sent %llu",
                   (unsigned long long)s->body_len, (unsigned long long)s->th->ph->body_len);
        return -2;
    }
    /* Body bytes that came with the head. */
    size_t extra = (size_t)(s->head + s->hlen - (end + 4));
    if (extra && !rq_check_body(s, (const uint8_t *)end + 4, extra))
        return -2;
    return 1;
}

static void rq_on_io(struct io *io, uint32_t events)
{
    struct rq_slot *s = container_of(io, struct rq_slot, sc.io);
    struct rq_thread *th = s->th;
    int rc = sclient_step(&s->sc, &th->route, events);
    if (rc < 0) {
        rq_end(s, RQ_FAILED);
        return;
    }
    if (rc == 0)
        return;
    if (!s->sent) {
        char req[1024], a[ADDR_STRLEN], auth[800] = "";
        addr_format(&th->route.dst, a, sizeof(a));
        if (th->route.http == HTTP_PROXY_ABSOLUTE &&
            route_proxy_auth(&th->route, auth, sizeof(auth))) {
            rq_end(s, RQ_FAILED);
            return;
        }
        int n = th->route.http == HTTP_PROXY_ABSOLUTE
                    ? snprintf(req, sizeof(req),
                               "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n%sConnection: "
                               "close\r\n\r\n",
                               a, th->ph->path, a, auth)
                    : snprintf(req, sizeof(req),
                               "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                               th->ph->path, a);
        if (sclient_send(&s->sc, req, (size_t)n) != n) {
            rq_end(s, RQ_FAILED);
            return;
        }
        s->sent = true;
    }
    static _Thread_local uint8_t body[65536];
    for (;;) {
        if (!s->head_done) {
            ssize_t n = sclient_recv(&s->sc, s->head + s->hlen, RQ_HEAD_MAX - 1 - s->hlen);
            if (n < 0 && errno == EAGAIN)
                return;
            if (n <= 0) {
                rq_end(s, RQ_FAILED);
                return;
            }
            s->hlen = (uint16_t)(s->hlen + n);
            int ph = rq_parse_head(s);
            if (ph == -2)
                return; /* ended as corrupt */
            if (ph < 0) {
                rq_end(s, RQ_FAILED);
                return;
            }
            continue;
        }
        if (s->body_got == s->body_len) {
            rq_end(s, RQ_OK);
            return;
        }
        size_t want = MIN(sizeof(body), (size_t)(s->body_len - s->body_got));
        ssize_t n = sclient_recv(&s->sc, body, want);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n == 0) {
            /* Connection: close, but only after the whole body. */
            rq_corrupt(s, "the connection closed after %llu of %llu body bytes",
                       (unsigned long long)s->body_got, (unsigned long long)s->body_len);
            return;
        }
        if (n < 0) {
            rq_end(s, RQ_FAILED);
            return;
        }
        if (!rq_check_body(s, body, (size_t)n))
            return;
    }
}

/* Begin a request on slot s (paced: due at sched_ns); false when every
 * ticket is handed out. */
static bool rq_begin_at(struct rq_slot *s, uint64_t sched_ns)
{
    struct rq_thread *th = s->th;
    struct rq_phase *ph = th->ph;
    uint64_t ticket = atomic_fetch_add(&ph->next, 1);
    if (ticket >= ph->total)
        return false; /* this slot is done */
    s->sched_ns = sched_ns;
    s->ticket = ticket;
    s->measured = ticket >= ph->warm;
    s->sent = s->head_done = false;
    s->hlen = 0;
    s->body_len = s->body_got = 0;
    if (s->measured) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&ph->t_first_ns, &zero, ph->rate > 0 ? sched_ns : now_ns());
    }
    if (sclient_open(&s->sc, &th->g.loop, &th->route, rq_on_io) < 0)
        rq_end(s, RQ_FAILED);
    return true;
}

static void rq_begin(struct rq_slot *s)
{
    (void)rq_begin_at(s, 0);
}

/* Paced: begin every request that is due while a slot is free (a bounded
 * number per call). */
static void rq_pace_run(struct rq_thread *th)
{
    uint64_t now = now_ns(), at;
    for (int i = 0; i < 1024 && th->nidle; i++) {
        if (atomic_load(&th->ph->next) >= th->ph->total || !pace_take(&th->pace, now, &at))
            return;
        (void)rq_begin_at(th->idle[--th->nidle], at);
    }
}

static void rq_on_pace(struct gen *g)
{
    struct rq_thread *th = g->scenario;
    if (th->begun)
        rq_pace_run(th);
}

static void rq_on_restart(struct task *t)
{
    struct rq_slot *s = container_of(t, struct rq_slot, restart);
    if (s->th->ph->rate <= 0) {
        rq_begin(s);
        return;
    }
    s->th->idle[s->th->nidle++] = s;
    rq_pace_run(s->th);
}

static void rq_begin_all(struct rq_thread *th)
{
    if (th->ph->rate > 0) {
        /* The timetable starts now; each thread its share, interleaved. */
        unsigned nth = MIN(th->b->o.threads, th->b->o.concurrency);
        pace_init(&th->pace, now_ns() + (uint64_t)(1e9 / th->ph->rate * th->g.id),
                  th->ph->rate / nth);
        for (unsigned i = 0; i < th->n; i++)
            th->idle[th->nidle++] = &th->slots[th->n - 1 - i];
        gen_pace(&th->g, rq_on_pace);
        rq_pace_run(th);
        return;
    }
    for (unsigned i = 0; i < th->n; i++)
        rq_begin(&th->slots[i]);
}

/* --https-proxy h2: the slots begin once the thread's connection is up, so
 * that every request is a new stream on a warm connection (its handshake
 * is not in the figures); a connection that failed lets them begin and
 * fail with its reason. */
static void rq_on_tick(struct gen *g)
{
    struct rq_thread *th = g->scenario;
    if (th->begun || h2_connect(&g->loop, &th->route) == 0)
        return;
    th->begun = true;
    rq_begin_all(th);
}

static void rq_on_start(struct gen *g)
{
    struct rq_thread *th = g->scenario;
    for (unsigned i = 0; i < th->n; i++) {
        th->slots[i].th = th;
        task_init(&th->slots[i].restart, rq_on_restart);
    }
    if (th->route.h2 && h2_connect(&g->loop, &th->route) == 0) {
        g->on_tick = rq_on_tick;
        return;
    }
    th->begun = true;
    rq_begin_all(th);
}

/* Run one phase to completion (bounded by 120 s) on nth threads with
 * `conc` slots. Fills lat (ns) and returns the measured seconds. */
static double rq_run(struct bench *b, struct rq_phase *ph, unsigned conc, struct hist *lat,
                     bool *timed_out)
{
    unsigned nth = MIN(b->o.threads, conc);
    struct rq_thread *ths = calloc(nth, sizeof(*ths));
    struct rq_slot *slots = calloc(conc, sizeof(*slots));
    struct rq_slot **idle = calloc(conc, sizeof(*idle));
    double secs = 0;
    *timed_out = false;
    hist_reset(lat);
    if (!ths || !slots || !idle)
        goto out;
    for (unsigned i = 0; i < conc; i++)
        slots[i].sc.io.fd = -1;
    unsigned base = 0, started = 0;
    for (unsigned t = 0; t < nth; t++) {
        ths[t].b = b;
        ths[t].ph = ph;
        ths[t].route = b->route;
        ths[t].route.dst = *targets_http(b->t);
        ths[t].n = conc / nth + (t < conc % nth ? 1 : 0);
        ths[t].slots = slots + base;
        ths[t].idle = idle + base;
        base += ths[t].n;
    }
    for (; started < nth; started++)
        if (gen_start(&ths[started].g, started, &ths[started], rq_on_start))
            break;
    uint64_t t0 = now_ns();
    /* Paced: the timetable's own length, and 120 s beyond it. */
    uint64_t limit =
        120ull * 1000000000u + (ph->rate > 0 ? (uint64_t)(ph->total / ph->rate * 1e9) : 0);
    while (atomic_load(&ph->done) < ph->total && !bench_has_failed(b)) {
        if (now_ns() - t0 > limit) {
            *timed_out = true;
            break;
        }
        bench_progress_count(b,
                             ph->warm == ph->total              ? "warm-up requests done"
                             : ph->body_len == BENCH_HTTP_SMALL ? "requests done"
                                                                : "downloads done",
                             (unsigned)atomic_load(&ph->done), (unsigned)ph->total,
                             (double)(now_ns() - t0) / 1e9);
        bench_window(b, NULL, 0.005, NULL, NULL, NULL);
    }
    bench_progress_count(b, NULL, 0, 0, 0);
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    for (unsigned i = 0; i < conc; i++)
        sclient_close(&slots[i].sc, false);
    for (unsigned t = 0; t < started; t++)
        hist_merge(lat, &ths[t].lat);
    uint64_t first = atomic_load(&ph->t_first_ns), last = atomic_load(&ph->t_last_ns);
    secs = last > first ? (double)(last - first) / 1e9 : 0;
out:
    free(ths);
    free(slots);
    free(idle);
    return secs;
}

int scenario_requests(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    struct hist *lat = malloc(sizeof(*lat));
    bool timed_out;
    if (!lat)
        return -ENOMEM;
    uint64_t warm_corrupt = 0;
    if (o->warm_requests) {
        /* Warm-up first, on its own, so the CPU sampled below is that of
         * the measured requests only. */
        struct rq_phase warm = {.path = "/small",
                                .body_len = BENCH_HTTP_SMALL,
                                .total = o->warm_requests,
                                .warm = o->warm_requests,
                                .rate = o->rate};
        rq_run(b, &warm, o->concurrency, lat, &timed_out);
        warm_corrupt = atomic_load(&warm.corrupt);
    }
    struct rq_phase small = {.path = "/small",
                             .body_len = BENCH_HTTP_SMALL,
                             .total = o->requests,
                             .warm = 0,
                             .rate = o->rate};
    struct proc_sample p0, p1;
    bool have_cpu = bench_sample(b, &p0);
    double secs = rq_run(b, &small, o->concurrency, lat, &timed_out);
    have_cpu = have_cpu && bench_sample(b, &p1);
    uint64_t ok = lat->n;
    result_add(res, "requests", "1/s", secs > 0 ? (double)ok / secs : 0);
    if (o->rate > 0)
        result_add(res, "scheduled", "1/s", o->rate);
    result_latency(res, lat, false, true);
    result_add(res, "failed_requests", "", (double)atomic_load(&small.failed));
    if (have_cpu && ok)
        result_add(res, "proxy_cpu_per_1k_requests", "s/1000",
                   (p1.cpu_s - p0.cpu_s) / ((double)ok / 1000.0));

    char large_path[40];
    snprintf(large_path, sizeof(large_path), "/bytes/%zu", o->download_size);
    struct rq_phase large = {
        .path = large_path, .body_len = o->download_size, .total = o->downloads, .warm = 0};
    bool timed_out2;
    double dsecs = rq_run(b, &large, o->downloads, lat, &timed_out2);
    uint64_t bytes = atomic_load(&large.bytes);
    result_add(res, "download", "MiB/s", dsecs > 0 ? (double)bytes / dsecs / 1048576.0 : 0);
    result_add(res, "failed_downloads", "", (double)atomic_load(&large.failed));
    uint64_t corrupt = warm_corrupt + atomic_load(&small.corrupt) + atomic_load(&large.corrupt);
    result_add(res, "corrupt_bodies", "", (double)corrupt);
    free(lat);
    if (corrupt)
        result_note(res,
                    "%llu responses came back wrong (body, length or truncated; warm-up "
                    "included) and are not counted",
                    (unsigned long long)corrupt);
    if (atomic_load(&small.failed) || atomic_load(&large.failed)) {
        char why[200];
        result_shortfall(res, "%llu of %u requests and %llu of %u downloads failed%s",
                         (unsigned long long)atomic_load(&small.failed), o->requests,
                         (unsigned long long)atomic_load(&large.failed), o->downloads,
                         bench_setup_reason(b, why, sizeof(why)));
    }
    if (timed_out || timed_out2)
        result_shortfall(res, "a phase did not finish within 120 s");
    res->nothing = ok == 0 && bytes == 0;
    return 0;
}
