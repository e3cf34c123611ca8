/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_udp.c: UDP relay. --connections clients each open a UDP ASSOCIATE
 * through the proxy (or, with --direct, talk to the echo themselves) and
 * keep exactly one sequence-numbered datagram of --payload bytes in flight:
 * an echo with the current sequence number counts and is timed; none within
 * 100 ms counts as lost and the next request goes out; a late echo of an
 * older request is ignored, never credited to a later one.
 *
 * --blast instead sends unpaced for the whole window while reading
 * concurrently, and reports what was offered and what came back.
 *
 * --rate N/s (open loop) sends N datagrams a second over all clients, each
 * client on its own fixed timetable (its share, interleaved with the
 * others'), however many are still in flight; an echo's RTT runs from the
 * time its datagram was due (wrk2's correction), and a datagram whose echo
 * has not come 200 ms after the window closed is lost. A client remembers
 * the last UD_SEEN datagrams it sent: an echo of an older one, or a second
 * echo of one, is late, never counted twice.
 *
 * A datagram that comes back changed (length, header, sequence, client or
 * payload) is the proxy corrupting data: it is counted in `corrupt`, never
 * as an echo, and fails the run. Sequence numbers carry the run's
 * generation, so a straggler from an earlier run is only late.
 *
 * With ALLOC_COUNT_DIR set and the proxy's processes started under
 * bench/micro/alloccount.so (LD_PRELOAD, the same variable: a self-hosted
 * ferry inherits both), their allocation counters are read at the two ends
 * of the window, as their CPU is: allocations per datagram relayed, in the
 * steady state only (set-up, warm-up and shutdown fall outside the window).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/hist.h"
#include "core/sock.h"

#define UD_TIMEOUT_MS 100
#define UD_MAX        65536
#define UD_ID_LEN     12 /* seq (8) + client index (4) at the start of the payload */
#define UD_BURST      64
#define UD_SEEN       1024 /* --rate: datagrams a client remembers */

struct ud_thread;

struct ud_client {
    struct sclient sc; /* the control connection (not in --direct) */
    struct io uio;
    struct ud_thread *th;
    struct timer timeout;
    struct task burst;
    uint32_t index;
    bool open, dead, waiting;
    uint64_t seq, sent_ns;
    uint8_t hdr[22];
    uint8_t hlen;
    struct sockaddr_storage to;
    socklen_t tolen;
    struct pace pace;            /* --rate: this client's timetable */
    uint64_t seen[UD_SEEN / 64]; /* --rate: echoed, by count % UD_SEEN */
};

struct ud_thread {
    struct gen g;
    struct bench *b;
    struct route route; /* the bench's, with UDP ASSOCIATE */
    uint64_t gen;       /* this run's generation, in the top bits of seq */
    struct ud_client *cl;
    unsigned n;
    uint8_t *sbuf, *rbuf;
    struct hist lat; /* ns */
    _Atomic bool measuring;
    _Atomic unsigned open, failed;
    _Atomic uint64_t echoes, lost, late, corrupt, sent, recvd, refused_rep;
};

static void bump(_Atomic uint64_t *v, uint64_t n)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* The top bit of the index field marks a datagram sent inside the
 * measurement window: only those count when they come back. */
#define UD_MEASURED 0x80000000u

static void ud_fill(struct ud_client *c, uint64_t seq, size_t payload, bool measured)
{
    uint8_t *p = c->th->sbuf;
    memcpy(p, c->hdr, c->hlen);
    uint8_t *d = p + c->hlen;
    uint32_t idx = c->index | (measured ? UD_MEASURED : 0);
    memcpy(d, &seq, 8);
    memcpy(d + 8, &idx, 4);
    if (payload > UD_ID_LEN)
        memcpy(d + UD_ID_LEN, pattern_at(seq * 31u + c->index), payload - UD_ID_LEN);
}

static void ud_send_next(struct ud_client *c)
{
    struct ud_thread *th = c->th;
    size_t payload = th->b->o.payload;
    c->seq++;
    ud_fill(c, c->seq, payload, false);
    c->sent_ns = now_ns();
    c->waiting = true;
    if (sendto(c->uio.fd, th->sbuf, c->hlen + payload, MSG_DONTWAIT, (struct sockaddr *)&c->to,
               c->tolen) < 0) {
        /* counted as lost when the timeout fires */
    }
    bump(&th->sent, 1);
    loop_timer_arm(&th->g.loop, &c->timeout, UD_TIMEOUT_MS);
}

static void ud_on_timeout(struct timer *t)
{
    struct ud_client *c = container_of(t, struct ud_client, timeout);
    if (atomic_load_explicit(&c->th->measuring, memory_order_relaxed))
        bump(&c->th->lost, 1);
    ud_send_next(c);
}

#define UD_GEN_SHIFT 40 /* seq: generation << 40 | count */

/* A wrong datagram: count it (warm-up included) and fail the run. */
static void ud_corrupt(struct ud_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ud_corrupt(struct ud_client *c, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    bump(&c->th->corrupt, 1);
    bench_fail(c->th->b, "udp: the proxy corrupted a datagram of client %u: %s", c->index, what);
}

#define UD_COUNT(seq) ((seq) & ((1ull << UD_GEN_SHIFT) - 1))

/* --rate: an echo of datagram seq of c (checked): credit it once, timed
 * from when it was due. */
static void ud_got_rate(struct ud_client *c, uint64_t seq, bool sent_measured, bool measuring)
{
    struct ud_thread *th = c->th;
    uint64_t k = UD_COUNT(seq) - 1; /* the k-th send of c's timetable */
    uint64_t bit = 1ull << (k % 64), *word = &c->seen[(k % UD_SEEN) / 64];
    if (c->seq - seq >= UD_SEEN || (*word & bit)) {
        if (measuring)
            bump(&th->late, 1); /* forgotten, or a second echo */
        return;
    }
    *word |= bit;
    if (!sent_measured)
        return;
    hist_add(&th->lat, now_ns() - (c->pace.t0_ns + (uint64_t)((double)k * c->pace.interval_ns)));
    bump(&th->echoes, 1);
}

/* --rate: send what is due of c's timetable (a bounded number). */
static void ud_send_due(struct ud_client *c, uint64_t now)
{
    struct ud_thread *th = c->th;
    size_t payload = th->b->o.payload;
    bool measuring = atomic_load_explicit(&th->measuring, memory_order_relaxed);
    uint64_t at;
    for (int i = 0; i < 256 && pace_take(&c->pace, now, &at); i++) {
        c->seq++;
        uint64_t k = UD_COUNT(c->seq) - 1;
        c->seen[(k % UD_SEEN) / 64] &= ~(1ull << (k % 64));
        ud_fill(c, c->seq, payload, measuring);
        (void)sendto(c->uio.fd, th->sbuf, c->hlen + payload, MSG_DONTWAIT,
                     (struct sockaddr *)&c->to, c->tolen); /* a failed send is lost */
        if (measuring)
            bump(&th->sent, 1);
    }
}

static void ud_on_pace(struct gen *g)
{
    struct ud_thread *th = g->scenario;
    uint64_t now = now_ns();
    for (unsigned i = 0; i < th->n; i++)
        if (th->cl[i].open && !th->cl[i].dead)
            ud_send_due(&th->cl[i], now);
}

/* An echo: check it is ours and whole, then credit it if it is current. */
static void ud_got(struct ud_client *c, const uint8_t *p, size_t len)
{
    struct ud_thread *th = c->th;
    size_t payload = th->b->o.payload;
    bool measuring = atomic_load_explicit(&th->measuring, memory_order_relaxed);
    if (len != c->hlen + payload) {
        ud_corrupt(c, "%zu bytes came back for a datagram of %zu", len, c->hlen + payload);
        return;
    }
    size_t diff = bench_first_diff(p, c->hdr, c->hlen);
    if (diff < c->hlen) {
        ud_corrupt(c, "byte %zu of the SOCKS5 UDP header is 0x%02x, 0x%02x was sent", diff, p[diff],
                   c->hdr[diff]);
        return;
    }
    const uint8_t *d = p + c->hlen;
    uint64_t seq;
    uint32_t idx;
    memcpy(&seq, d, 8);
    memcpy(&idx, d + 8, 4);
    bool sent_measured = idx & UD_MEASURED;
    idx &= ~UD_MEASURED;
    if (seq >> UD_GEN_SHIFT != th->gen) {
        if (measuring)
            bump(&th->late, 1); /* from an earlier run, to a reused port */
        return;
    }
    if (idx != c->index || seq > c->seq) {
        ud_corrupt(c, "its id (client %u, datagram %llu) was never sent by this client", idx,
                   (unsigned long long)(seq & ((1ull << UD_GEN_SHIFT) - 1)));
        return;
    }
    if (payload > UD_ID_LEN) {
        const uint8_t *want = pattern_at(seq * 31u + c->index);
        diff = bench_first_diff(d + UD_ID_LEN, want, payload - UD_ID_LEN);
        if (diff < payload - UD_ID_LEN) {
            ud_corrupt(c, "payload byte %zu of datagram %llu is 0x%02x, 0x%02x was sent",
                       diff + UD_ID_LEN, (unsigned long long)(seq & ((1ull << UD_GEN_SHIFT) - 1)),
                       d[UD_ID_LEN + diff], want[diff]);
            return;
        }
    }
    if (th->b->o.rate > 0) {
        ud_got_rate(c, seq, sent_measured, measuring);
        return;
    }
    if (th->b->o.blast) {
        if (sent_measured)
            bump(&th->recvd, 1);
        return;
    }
    if (seq != c->seq || !c->waiting) {
        if (measuring)
            bump(&th->late, 1);
        return;
    }
    c->waiting = false;
    loop_timer_stop(&th->g.loop, &c->timeout);
    if (measuring) {
        hist_add(&th->lat, now_ns() - c->sent_ns);
        bump(&th->echoes, 1);
    }
    ud_send_next(c);
}

static void ud_on_udp(struct io *io, uint32_t events)
{
    (void)events;
    struct ud_client *c = container_of(io, struct ud_client, uio);
    for (int i = 0; i < 256; i++) {
        ssize_t n = recv(io->fd, c->th->rbuf, UD_MAX, MSG_DONTWAIT);
        if (n < 0)
            return;
        ud_got(c, c->th->rbuf, (size_t)n);
    }
}

/* --blast: send a burst, then come back after other events. */
static void ud_on_burst(struct task *t)
{
    struct ud_client *c = container_of(t, struct ud_client, burst);
    struct ud_thread *th = c->th;
    size_t payload = th->b->o.payload;
    bool measuring = atomic_load_explicit(&th->measuring, memory_order_relaxed);
    for (int i = 0; i < UD_BURST; i++) {
        c->seq++;
        ud_fill(c, c->seq, payload, measuring);
        if (sendto(c->uio.fd, th->sbuf, c->hlen + payload, MSG_DONTWAIT, (struct sockaddr *)&c->to,
                   c->tolen) < 0)
            break;
        if (measuring)
            bump(&th->sent, 1);
    }
    loop_defer(&th->g.loop, &c->burst);
}

/* The relay's (or echo's) address is known: open the UDP socket and go. */
static int ud_start(struct ud_client *c, const struct addr *to)
{
    struct ud_thread *th = c->th;
    struct bench *b = th->b;
    const struct addr *echo = targets_udp(b->t);
    c->hlen = 0;
    if (b->o.mode != BENCH_DIRECT)
        c->hlen = (uint8_t)socks5_write_udp_header(c->hdr, sizeof(c->hdr), echo);
    c->tolen = addr_to_sockaddr(to, &c->to);
    int rc, fd = socket(to->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* Send from the address of our control connection: a relay accepts
     * datagrams only from the client it associated with (RFC 1928). */
    struct addr src;
    if (c->sc.io.fd >= 0 && sock_local_addr(c->sc.io.fd, &src) == 0 && src.family == to->family) {
        struct sockaddr_storage ss;
        src.port = 0;
        socklen_t sl = addr_to_sockaddr(&src, &ss);
        if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
            rc = -errno;
            close(fd);
            return rc;
        }
    }
    int sz = 4 << 20;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    rc = loop_io_add(&th->g.loop, &c->uio, fd, EPOLLIN);
    if (rc) {
        close(fd);
        return rc;
    }
    c->open = true;
    atomic_fetch_add(&th->open, 1);
    if (b->o.rate > 0) {
        /* Its share of the rate, from now, offset from its neighbours'. */
        double per = b->o.rate / b->o.connections;
        pace_init(&c->pace, now_ns() + (uint64_t)(1e9 / b->o.rate * c->index), per);
    } else if (b->o.blast)
        loop_defer(&th->g.loop, &c->burst);
    else
        ud_send_next(c);
    return 0;
}

static void ud_fail(struct ud_client *c)
{
    c->dead = true;
    if (c->sc.phase == SC_FAILED)
        bench_setup_failed(c->th->b, &c->sc, &c->th->route);
    if (c->sc.rep)
        bump(&c->th->refused_rep, 1);
    atomic_fetch_add(&c->th->failed, 1);
    sclient_close(&c->sc, false);
}

static void ud_on_ctl(struct io *io, uint32_t events)
{
    struct ud_client *c = container_of(io, struct ud_client, sc.io);
    if (c->open) {
        /* The control connection must stay open and silent: its end ends
         * the association, and this client with it. */
        char sink[64];
        ssize_t n = recv(io->fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            c->dead = true;
            loop_timer_stop(&c->th->g.loop, &c->timeout);
            loop_task_cancel(&c->burst);
        }
        return;
    }
    int rc = sclient_step(&c->sc, &c->th->route, events);
    if (rc < 0) {
        ud_fail(c);
        return;
    }
    if (rc == 0)
        return;
    struct addr to = c->sc.bnd;
    if (to.family == AF_INET && !to.ip[0] && !to.ip[1] && !to.ip[2] && !to.ip[3])
        to.ip[0] = 127, to.ip[3] = 1; /* a relay that answers 0.0.0.0: use loopback */
    if (ud_start(c, &to) < 0)
        ud_fail(c);
}

static void ud_on_start(struct gen *g)
{
    struct ud_thread *th = g->scenario;
    if (th->b->o.rate > 0)
        gen_pace(g, ud_on_pace);
    for (unsigned i = 0; i < th->n; i++) {
        struct ud_client *c = &th->cl[i];
        c->th = th;
        io_init(&c->uio, ud_on_udp);
        timer_init(&c->timeout, ud_on_timeout);
        task_init(&c->burst, ud_on_burst);
        if (th->b->o.mode == BENCH_DIRECT) {
            if (ud_start(c, targets_udp(th->b->t)) < 0)
                ud_fail(c);
        } else if (sclient_open(&c->sc, &g->loop, &th->route, ud_on_ctl) < 0) {
            ud_fail(c);
        }
    }
}

static uint64_t ud_sum(struct ud_thread *ths, unsigned n, size_t off)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < n; i++)
        s += atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)&ths[i] + off),
                                  memory_order_relaxed);
    return s;
}

#define UD_SUM(field) ud_sum(ths, started, offsetof(struct ud_thread, field))

/* Clients and per-thread state for one run: the run's generation in every
 * datagram id, the clients shared out over nth threads. Returns 0 or
 * -ENOMEM (the buffers allocated so far are freed with the threads). */
static int ud_prepare(struct bench *b, struct ud_thread *ths, unsigned nth, struct ud_client *cl)
{
    const struct bench_opts *o = &b->o;
    static _Atomic uint64_t generation; /* runs of this process */
    uint64_t gen = (atomic_fetch_add(&generation, 1) + 1) & 0xffffff;
    for (unsigned i = 0; i < o->connections; i++) {
        cl[i].sc.io.fd = -1;
        cl[i].uio.fd = -1;
        cl[i].index = i;
        cl[i].seq = gen << UD_GEN_SHIFT;
    }
    unsigned base = 0;
    for (unsigned t = 0; t < nth; t++) {
        ths[t].b = b;
        ths[t].route = b->route;
        ths[t].route.cmd = SOCKS5_CMD_UDP_ASSOCIATE;
        ths[t].gen = gen;
        ths[t].n = o->connections / nth + (t < o->connections % nth ? 1 : 0);
        ths[t].cl = cl + base;
        ths[t].sbuf = malloc(UD_MAX);
        ths[t].rbuf = malloc(UD_MAX);
        if (!ths[t].sbuf || !ths[t].rbuf)
            return -ENOMEM;
        base += ths[t].n;
    }
    return 0;
}

/* Wait (up to 30 s) until every client has its association open or has
 * failed. Returns how many are open. */
static unsigned ud_wait_open(struct bench *b, struct ud_thread *ths, unsigned started)
{
    uint64_t t_setup = now_ns();
    unsigned open = 0, failed = 0;
    while (now_ns() - t_setup < 30ull * 1000000000u) {
        open = failed = 0;
        for (unsigned t = 0; t < started; t++) {
            open += atomic_load(&ths[t].open);
            failed += atomic_load(&ths[t].failed);
        }
        if (open + failed >= b->o.connections)
            break;
        bench_progress_count(b, "set-up: associations open", open, b->o.connections,
                             (double)(now_ns() - t_setup) / 1e9);
        bench_window(b, NULL, 0.01, NULL, NULL, NULL);
    }
    bench_progress_count(b, NULL, 0, 0, 0);
    return open;
}

/* Not one association: say why. Returns -ECONNREFUSED. */
static int ud_none_open(struct bench *b, struct result *res, struct ud_thread *ths,
                        unsigned started)
{
    const struct bench_opts *o = &b->o;
    uint64_t refused = 0;
    for (unsigned t = 0; t < started; t++)
        refused += atomic_load(&ths[t].refused_rep);
    char why[200];
    result_note(res, "no UDP association could be opened%s",
                refused ? " (the proxy replied with a SOCKS failure: no UDP ASSOCIATE?)" : "");
    result_shortfall(res, "%u of %u clients could not open a UDP association%s", o->connections,
                     o->connections, bench_setup_reason(b, why, sizeof(why)));
    res->nothing = true;
    return -ECONNREFUSED;
}

/* What the measurement window cost. */
struct ud_window {
    double secs;
    bool have_cpu;                    /* the proxy's CPU is known */
    double cpu;                       /* the proxy's CPU seconds in the window */
    double self_cpu;                  /* this process's */
    bool have_allocs;                 /* every proxy process's allocations are counted */
    uint64_t allocs[BENCH_MAX_CHAIN]; /* each one's in the window (bench's pids[]) */
    unsigned nprocs;
};

/* Allocations per datagram relayed, counted (ALLOC_COUNT_DIR, see
 * bench_sample): each of the datagrams (an echo is two at every proxy
 * process: out and back) over what the proxy's processes allocated in the
 * window, summed; a tunnel's client and server also each alone. */
static void ud_figures_allocs(struct bench *b, struct result *res, const struct ud_window *w,
                              uint64_t datagrams)
{
    if (!w->have_allocs) {
        const char *dir = getenv("ALLOC_COUNT_DIR");
        if (dir && *dir && b->npids)
            result_note(res, "ALLOC_COUNT_DIR is set but not every proxy process has a counter "
                             "there (started without LD_PRELOAD=alloccount.so?): no allocation "
                             "figures");
        return;
    }
    if (!datagrams)
        return;
    uint64_t sum = 0;
    for (unsigned i = 0; i < w->nprocs; i++)
        sum += w->allocs[i];
    result_add(res, "proxy_allocs_per_datagram", "", (double)sum / (double)datagrams);
    if (b->o.tunnel && w->nprocs == 2) {
        result_add(res, "client_allocs_per_datagram", "", (double)w->allocs[0] / (double)datagrams);
        result_add(res, "server_allocs_per_datagram", "", (double)w->allocs[1] / (double)datagrams);
    }
}

/* --blast: offered against received. */
static void ud_figures_blast(struct bench *b, struct result *res, struct ud_thread *ths,
                             unsigned started, const struct ud_window *w)
{
    const struct bench_opts *o = &b->o;
    uint64_t sent = UD_SUM(sent), recvd = UD_SUM(recvd);
    double secs = w->secs, cpu = w->cpu;
    result_add(res, "offered", "pps", (double)sent / secs);
    result_add(res, "received", "pps", (double)recvd / secs);
    result_add(res, "delivered", "%", sent ? 100.0 * (double)recvd / (double)sent : 0);
    result_add(res, "received_payload", "MiB/s",
               (double)recvd * (double)o->payload / secs / 1048576.0);
    /* Per datagram moved both ways, and per one delivered back: the
     * first flatters a proxy that drops most of what is offered
     * (dropped datagrams cost it little), the second does not. */
    if (w->have_cpu && recvd) {
        result_add(res, "proxy_cpu_per_datagram", "us", cpu / (double)(sent + recvd) * 1e6);
        result_add(res, "proxy_cpu_per_delivered", "us", cpu / (double)recvd * 1e6);
    }
    if (recvd)
        result_add(res, "bench_cpu_per_delivered", "us", w->self_cpu / (double)recvd * 1e6);
    else
        bench_fail(b,
                   "udp --blast: no datagram came back in the window (%llu sent): "
                   "the path through the proxy is broken",
                   (unsigned long long)sent);
}

/* Paced: one datagram in flight per client; echoes, RTT, loss. */
static void ud_figures_paced(struct bench *b, struct result *res, struct ud_thread *ths,
                             unsigned started, const struct ud_window *w)
{
    const struct bench_opts *o = &b->o;
    uint64_t echoes = UD_SUM(echoes), lost = UD_SUM(lost), late = UD_SUM(late);
    double secs = w->secs;
    struct hist *all = calloc(1, sizeof(*all));
    if (!all)
        return;
    for (unsigned t = 0; t < started; t++)
        hist_merge(all, &ths[t].lat);
    if (o->rate > 0) {
        /* Sent in the window; what has not come back by now is lost. */
        uint64_t sent = UD_SUM(sent);
        lost = sent > echoes ? sent - echoes : 0;
        result_add(res, "scheduled", "pps", o->rate);
        result_add(res, "offered", "pps", (double)sent / secs);
    }
    result_add(res, "echoes", "1/s", (double)echoes / secs);
    result_add(res, "payload", "MiB/s", (double)echoes * (double)o->payload / secs / 1048576.0);
    result_latency(res, all, true, false);
    result_add(res, "loss", "%",
               echoes + lost ? 100.0 * (double)lost / (double)(echoes + lost) : 0);
    result_add(res, "late", "", (double)late);
    if (w->have_cpu && echoes)
        result_add(res, "proxy_cpu_per_echo", "us", w->cpu / (double)echoes * 1e6);
    if (echoes)
        result_add(res, "bench_cpu_per_echo", "us", w->self_cpu / (double)echoes * 1e6);
    else
        bench_fail(b,
                   "udp: no echo came back in the window (%llu lost): the path "
                   "through the proxy is broken",
                   (unsigned long long)lost);
    free(all);
}

/* Progress: echoes a second since the last call. */
struct ud_rate {
    struct ud_thread *ths;
    unsigned n;
    uint64_t last, last_ns;
};

static double ud_rate(void *arg)
{
    struct ud_rate *r = arg;
    uint64_t now = now_ns(), v = ud_sum(r->ths, r->n, offsetof(struct ud_thread, echoes));
    double rate = r->last_ns ? (double)(v - r->last) / ((double)(now - r->last_ns) / 1e9) : 0;
    r->last = v;
    r->last_ns = now;
    return rate;
}

/* The warm-up and the window with open of the clients associated; the
 * threads are stopped before the figures are read. */
static void ud_measure(struct bench *b, struct result *res, struct ud_thread *ths, unsigned started,
                       unsigned open)
{
    const struct bench_opts *o = &b->o;
    bench_window(b, "warm-up", o->warmup_s, NULL, NULL, NULL);
    struct proc_sample p0, p1;
    struct ud_window w;
    w.have_cpu = bench_sample(b, &p0);
    double self0 = self_cpu_s();
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].measuring, true);
    uint64_t t0 = now_ns();
    struct ud_rate rate = {ths, started, 0, 0};
    bench_window(b, "measure", o->duration_s, o->blast ? NULL : ud_rate, &rate, "echoes/s");
    for (unsigned t = 0; t < started; t++)
        atomic_store(&ths[t].measuring, false);
    w.secs = (double)(now_ns() - t0) / 1e9;
    /* The load generator's own CPU (clients and echo): with --direct,
     * what the same socket operations cost without a proxy. */
    w.self_cpu = self_cpu_s() - self0;
    w.have_cpu = w.have_cpu && bench_sample(b, &p1);
    w.nprocs = b->npids;
    w.have_allocs = w.have_cpu && p0.have_allocs && p1.have_allocs;
    for (unsigned i = 0; w.have_allocs && i < w.nprocs; i++)
        w.allocs[i] = p1.allocs[i] - p0.allocs[i];
    if (o->blast || o->rate > 0) /* let datagrams still in flight come back and count */
        bench_window(b, NULL, 0.2, NULL, NULL, NULL);
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    w.cpu = w.have_cpu ? p1.cpu_s - p0.cpu_s : 0;
    if (o->blast)
        ud_figures_blast(b, res, ths, started, &w);
    else
        ud_figures_paced(b, res, ths, started, &w);
    /* Paced or blast, the datagrams that went out and came back. */
    ud_figures_allocs(b, res, &w, 2 * (o->blast ? UD_SUM(recvd) : UD_SUM(echoes)));
    uint64_t corrupt = UD_SUM(corrupt);
    result_add(res, "clients", "", open);
    result_add(res, "corrupt", "", (double)corrupt);
    if (open < o->connections) {
        char why[200];
        result_shortfall(res, "%u of %u clients could not open a UDP association%s",
                         o->connections - open, o->connections,
                         bench_setup_reason(b, why, sizeof(why)));
    }
    if (corrupt)
        result_note(res, "%llu datagrams came back wrong (warm-up included)",
                    (unsigned long long)corrupt);
}

int scenario_udp(struct bench *b, struct result *res)
{
    const struct bench_opts *o = &b->o;
    if (o->mode == BENCH_RELAY) {
        result_note(res, "the udp scenario needs a SOCKS5 proxy (or --direct), not a TCP relay");
        return -EINVAL;
    }
    if (o->payload < UD_ID_LEN || o->payload > 65507 - 22) {
        result_note(res, "--payload must be %d..%d bytes for udp", UD_ID_LEN, 65507 - 22);
        return -EINVAL;
    }
    unsigned nth = MIN(o->threads, o->connections);
    struct ud_thread *ths = calloc(nth, sizeof(*ths));
    struct ud_client *cl = calloc(o->connections, sizeof(*cl));
    int rc = 0;
    unsigned started = 0;
    if (!ths || !cl) {
        rc = -ENOMEM;
        goto out;
    }
    rc = ud_prepare(b, ths, nth, cl);
    if (rc)
        goto out_free;
    for (; started < nth; started++)
        if (gen_start(&ths[started].g, started, &ths[started], ud_on_start)) {
            rc = -ENOMEM;
            break;
        }
    unsigned open = rc ? 0 : ud_wait_open(b, ths, started);
    if (!rc && open == 0)
        rc = ud_none_open(b, res, ths, started);
    if (!rc) {
        ud_measure(b, res, ths, started, open);
    } else {
        for (unsigned t = 0; t < started; t++)
            gen_stop_join(&ths[t].g);
    }
    started = 0;
out_free:
    for (unsigned t = 0; t < started; t++)
        gen_stop_join(&ths[t].g);
    for (unsigned i = 0; cl && i < o->connections; i++) {
        sclient_close(&cl[i].sc, false);
        if (cl[i].uio.fd >= 0)
            close(cl[i].uio.fd);
    }
    for (unsigned t = 0; t < nth; t++) {
        free(ths[t].sbuf);
        free(ths[t].rbuf);
    }
out:
    free(ths);
    free(cl);
    return rc;
}
