/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench.h: `ferry bench`, the load generator. It is built on core/ (loop,
 * sockets) and proto/ (SOCKS5 client messages) and never reaches into
 * relay/: it measures a proxy from the outside, ferry included, speaking
 * SOCKS5 to it or, with --http-proxy, HTTP; --direct and --relay measure
 * the path without a SOCKS proxy, and the rules scenario measures ferry's
 * rule lookup in-process, with no proxy at all.
 *
 * Every byte that comes back is checked. Wrong data (a changed, missing or
 * extra byte, a datagram or echo that is not what was sent) is never a
 * figure: the scenario reports it with bench_fail(), counts it in its own
 * metric, and the run fails.
 *
 * One bench process holds the targets (TCP echo, sink, source, HTTP, UDP
 * echo) on one thread, the load on --threads generator threads, and, when
 * self-hosted, a ferry child process on an ephemeral loopback port (with
 * --chain N, N of them in a row, each the SOCKS5 parent of the one before).
 * With --target the targets are a `ferry bench sink` elsewhere, and none
 * run here. The edge scenario (sc_edge.c, edge.h) sets up
 * its own: two backends that answer one byte, and a ferry with an [edge]
 * section (or --edge-target, an edge already running) in front of them. The load is a closed loop
 * (the next when the last is done) or, with --rate, an open one on a fixed timetable (struct pace).
 */
#ifndef FERRY_BENCH_BENCH_H
#define FERRY_BENCH_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/wan.h"
#include "core/loop.h"
#include "proto/socks5.h"
#include "util/addr.h"

enum bench_mode {
    BENCH_SELF,   /* a ferry child (--chain: children) started by the bench */
    BENCH_PROXY,  /* --proxy ADDR: any SOCKS5 (or, with --http-proxy, HTTP) proxy */
    BENCH_DIRECT, /* --direct: no proxy, the machine's limit */
    BENCH_RELAY,  /* --relay ADDR: a plain TCP relay to the echo target (no SOCKS) */
};

struct bench_opts {
    const char *scenario;
    enum bench_mode mode;
    struct addr proxy;   /* --proxy / --relay */
    pid_t proxy_pids[8]; /* --proxy-pid PID[,PID...] */
    unsigned nproxy_pids;
    const char *ferry;         /* binary for self-hosting */
    unsigned chain;            /* --chain: self-hosted ferries in a row, 1..BENCH_MAX_CHAIN */
    const char *proxy_set[64]; /* --proxy-set K=V as given (argv strings) */
    unsigned nproxy_set;
    unsigned proxy_workers; /* 0 = ferry's default */
    unsigned runs;
    double warmup_s, duration_s;
    unsigned threads; /* generator threads */
    unsigned connections;
    unsigned concurrency; /* handshakes/requests: setups in flight */
    size_t payload;
    unsigned requests, warm_requests;
    unsigned downloads;
    size_t download_size;
    double ping_s;        /* connections: one message per connection every ping_s (0 = off) */
    uint16_t target_port; /* fixed echo port (for relays configured in advance) */
    bool spread_src;      /* bind clients to random 127.x.y.z sources */
    const char *auth;     /* none, plain or argon2 */
    int auth_cachettl_s;  /* -1: ferry's default */
    bool json;
    bool blast;               /* udp: unpaced sending instead of one request in flight */
    bool echo_gro;            /* udp: the echo takes coalesced runs (UDP_GRO) */
    uint8_t http_proxy;       /* requests: enum http_proxy_mode */
    uint8_t https_proxy;      /* --https-proxy: enum https_proxy_mode (TLS to the proxy) */
    unsigned stalled;         /* throughput, h2: streams that send a burst and never read */
    uint8_t tunnel;           /* --tunnel: enum tunnel_mode (a self-hosted client + server) */
    const char *wan;          /* --wan SPEC: an emulated path (bench/wan.h), or NULL */
    struct wan_conf wan_conf; /* with wan: what SPEC says */
    const char *proxy_cacert; /* --proxy-cacert FILE: an external TLS proxy's CA */
    const char *proxy_pin;    /* --proxy-pin sha256//...: an external TLS proxy's pin */
    unsigned nrules;          /* rules: how many synthetic rules */
    bool allow_failures;      /* --allow-failures: a shortfall is reported, not failed */
    double rate;              /* --rate N/s: open loop (handshakes, requests, udp); 0 closed */
    uint8_t direction;        /* throughput --direction: enum bench_direction */
    uint8_t edge_hello;       /* edge --hello: enum edge_hello (bench/edge.h) */
    bool has_edge_target;     /* edge --edge-target: an edge already running, not ferry's */
    struct addr edge_target;  /* there (loopback) */
    unsigned hold;            /* edge --hold N: idle connections held after the window */
    const char *proxy_cgroup; /* edge --proxy-cgroup DIR: the self-hosted ferry joins it */
    bool has_target;          /* --target: the echo/sink/source is a `ferry bench sink` */
    struct addr target;       /* there (any host: --target is the consent to aim off-host) */
    bool progress;            /* stderr is a TTY */
    int argc;                 /* the arguments after `ferry` as given, for the report */
    const char **argv;        /* (the first argc of argv_total) */
    int argv_total;
};

/* throughput --direction: which way the bytes go. both: every stream
 * sends to the echo and reads it back; up: the client sends, the sink
 * checks and discards, and tells the client how much it has received;
 * down: the source sends, the client reads and checks. Bytes are counted
 * where they arrive. */
enum bench_direction { DIR_BOTH, DIR_UP, DIR_DOWN };

/* --chain: at most this many self-hosted ferries in a row (each is a
 * process whose CPU is sampled: struct bench's pids[]). */
#define BENCH_MAX_CHAIN 8

/* --tunnel: the self-hosted pair the clients go through. h2: a ferry with
 * a SOCKS5 (+ SOCKS4, HTTP) port and one https:// outbound with mux = h2
 * (what `ferry client URL socks` runs) in front of a ferry serving a
 * tls:// listener; every session an HTTP/2 CONNECT stream on the one TLS
 * connection per worker between them. wss: the same HTTP/2 connection
 * inside a WebSocket (websocket = BENCH_WS_PATH on both; `ferry client
 * wss://ADDR/PATH socks`). */
enum tunnel_mode { TUNNEL_NONE, TUNNEL_H2, TUNNEL_WSS };
#define BENCH_WS_PATH "/tunnel"

/* The ferries the bench starts itself for o (self-hosted): --chain of
 * them, or the two of a --tunnel (client, then server). */
static inline unsigned bench_hops(const struct bench_opts *o)
{
    return o->tunnel ? 2 : o->chain;
}

/* A named figure of one run. */
struct metric {
    const char *name;
    const char *unit;
    double v;
};

#define RESULT_MAX_METRICS 40

/* Where memory figures come from (bit flags: a proxy of several processes
 * may mix them). */
#define MEM_SRC_PSS 1u /* Pss of /proc/PID/smaps_rollup: shared pages split */
#define MEM_SRC_RSS 2u /* VmRSS of /proc/PID/status: shared pages counted whole */

struct result {
    struct metric m[RESULT_MAX_METRICS];
    size_t n;
    char note[512];      /* hints for the reader (e.g. the OS ran out of ports) */
    char shortfall[384]; /* what the run missed of its parameters (see result_shortfall) */
    bool nothing;        /* nothing at all could be set up: fails even with --allow-failures */
    unsigned mem_src;    /* MEM_SRC_* of the memory figures, 0 if none */
    struct {
        pid_t pid;          /* self-hosted: a ferry child this run measured */
        struct addr addr;   /* and where it listened */
    } hop[BENCH_MAX_CHAIN]; /* hop[0]: the one the clients talk to */
    unsigned nhops;         /* self-hosted: --chain; 0 otherwise */
};

/* ---- what a run records (result.c) ---- */
/* Add figure name (unit) = v; beyond RESULT_MAX_METRICS figures it is
 * dropped. name and unit are kept as pointers: string literals. */
void result_add(struct result *r, const char *name, const char *unit, double v);
struct hist;
/* The latency figures of h (nanoseconds) in milliseconds: PREFIX_p50,
 * _p90, _p95, _p99, _p99_9 and _max, PREFIX "latency" (rtt false) or
 * "rtt"; with mean, PREFIX_mean first. */
void result_latency(struct result *r, const struct hist *h, bool rtt, bool mean);
/* Append a hint for the reader to r->note ("; " between parts; cut at its
 * size). */
void result_note(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record that the run did not do what its parameters asked (connections
 * that could not be set up, requests that failed, streams that ended
 * early): the figures are not those of the load asked for. Appended to
 * r->shortfall ("; " between parts). Such a run fails (exit 1) unless
 * --allow-failures; with nothing set up at all (set r->nothing) it fails
 * either way. Wrong data is not a shortfall: that is bench_fail(). */
void result_shortfall(struct result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- parameters (options.c) ---- */
#define BENCH_MAX_RUNS 100 /* --runs */
/* Check every numeric option against the range that makes sense for
 * o->scenario (defaults already resolved): the option's own range, or the
 * narrower one of the scenario's row, named "for SCENARIO"; a scenario not
 * in the table gets the options' own. Returns 0, or -1 with a message
 * naming the first option out of range (in the option table's order) and
 * its allowed range in msg (e.g. "--duration must be 0.1..3600 seconds
 * (got 0)"): a usage error. Pure: no I/O. */
int bench_params_check(const struct bench_opts *o, char *msg, size_t cap);

/* ---- targets (target.c, target_stream.c) ---- */
struct targets;
/* Start echo listeners (nports of them; the first on port if non-zero),
 * the HTTP server and the UDP echo on ip (127.0.0.1, or with --wan the
 * path's B address, started in B), in their own thread.
 * With udp_gro the UDP echo takes a run of datagrams its sender segmented
 * (UDP_SEGMENT) in one read and answers it with the same run. Every echo
 * port is also a sink, a source and the HTTP server, chosen by the
 * client's first bytes (SINK_MAGIC_*, "GET "). They listen on ip (127.0.0.1,
 * or B's address of a --wan path). */
struct targets *targets_start(const char *ip, uint16_t port, unsigned nports, size_t download_size,
                              bool udp_gro);
/* `ferry bench sink`: the same servers on one address: TCP (echo, sink,
 * source, HTTP by the first bytes) and the UDP echo on at's port (0: any
 * free one; the TCP port is then also the UDP port). NULL after telling
 * why on stderr. */
struct targets *targets_listen(const struct addr *at, bool udp_gro);
/* --target: no servers here; every target address is at (a `ferry bench
 * sink` elsewhere). Stopping it frees it. */
struct targets *targets_remote(const struct addr *at);
void targets_stop(struct targets *t);
const struct addr *targets_echo(const struct targets *t, unsigned i);
unsigned targets_echo_count(const struct targets *t);
const struct addr *targets_http(const struct targets *t);
const struct addr *targets_udp(const struct targets *t);
/* Handshake runs: close echo connections abortively (RST) at EOF, so no
 * TIME_WAIT piles up on the proxy's outgoing ports. */
void targets_set_abort_on_eof(struct targets *t, bool on);

#define BENCH_HTTP_SMALL 128 /* body bytes of GET /small */
/* GET /bytes/N: a body of N bytes of the pattern (N up to 2^32); GET /large
 * is /bytes/download_size of a local target. */

/* The first bytes a client sends to choose what an echo port does (each
 * followed by an 8-byte big-endian seed: the stream's offset in the
 * pattern). Anything else is echoed, the first bytes included.
 * SINK: every byte is checked against the pattern and dropped; after each
 * read the sink sends the total received so far (8 bytes, big-endian), or
 * SINK_CORRUPT | offset of the first wrong byte, then closes. SOURCE: the
 * pattern from the seed on, until the client closes. */
#define SINK_MAGIC_DISCARD "FBD1"
#define SINK_MAGIC_SOURCE  "FBS1"
#define SINK_MAGIC_LEN     4
#define SINK_HELLO_LEN     12
#define SINK_CORRUPT       (1ull << 63)

/* The deterministic byte stream every payload is drawn from: byte i of a
 * stream is pattern[(seed + i) % PATTERN_LEN]. pattern_ext holds
 * PATTERN_LEN + PATTERN_SLACK bytes so any chunk up to the slack can be sent
 * or compared without wrapping. */
#define PATTERN_LEN   (1048573u) /* prime: never aligned with chunk sizes */
#define PATTERN_SLACK (1u << 20)
extern uint8_t *pattern_ext;
void pattern_init(void);
static inline const uint8_t *pattern_at(uint64_t off)
{
    return pattern_ext + (off % PATTERN_LEN);
}

/* ---- client connections (client.c) ---- */

enum sc_phase {
    SC_CONNECT,
    SC_TLS,
    SC_METHOD,
    SC_AUTH,
    SC_REPLY,
    SC_HTTP,
    SC_H2, /* an h2 CONNECT stream waiting for its answer */
    SC_OPEN,
    SC_FAILED
};

/* --https-proxy: how the clients reach the proxy over TLS 1.3 (none: plain
 * TCP): h1, a TLS connection per client connection with HTTP/1.1 on it; h2,
 * one TLS connection per generator thread with ALPN h2, each client
 * connection an HTTP/2 CONNECT stream on it (h2client.c). */
enum https_proxy_mode { HTTPS_PROXY_NONE, HTTPS_PROXY_H1, HTTPS_PROXY_H2 };

struct tls_ctx;
struct tls;

/* How requests reach an HTTP proxy (--http-proxy). */
enum http_proxy_mode { HTTP_PROXY_NONE, HTTP_PROXY_CONNECT, HTTP_PROXY_ABSOLUTE };

enum sc_fail {
    SC_FAIL_NONE,
    SC_FAIL_SOCKET, /* the OS: connect() errors, resets before a reply */
    SC_FAIL_SOCKS,  /* the proxy: a SOCKS failure reply or a protocol error */
    SC_FAIL_DATA,   /* the proxy: data through the tunnel came back wrong */
    SC_FAIL_TLS,    /* the TLS handshake with the proxy (or its verification) failed */
    SC_FAIL_H2,     /* the h2 connection the stream was on failed (h2_fail_reason()) */
};

/* Where a client connection goes and how. */
struct route {
    enum bench_mode mode;
    struct addr via; /* proxy or relay; unused when direct */
    struct addr dst; /* the target */
    bool spread_src;
    const char *user, *pass; /* RFC 1929 credentials, or NULL for no auth */
    uint8_t cmd;             /* SOCKS5 command: CONNECT (0 means CONNECT) or UDP ASSOCIATE */
    uint8_t http;            /* enum http_proxy_mode: talk HTTP to the proxy instead */
    struct tls_ctx *tls;     /* non-NULL: TLS 1.3 to the proxy first (--https-proxy) */
    char tls_host[64];       /* the name the proxy's certificate is checked against */
    bool h2;                 /* with tls: each connection is an h2 CONNECT stream */
};

/* "Proxy-Authorization: Basic ...\r\n" for r's credentials into out (""
 * without them), for an HTTP proxy. 0, or -EINVAL / -ENOSPC. */
int route_proxy_auth(const struct route *r, char *out, size_t cap);

/* One client connection; embedded in a scenario's own struct. */
struct sclient {
    struct io io;
    uint8_t phase;
    uint8_t ev; /* SIDE-like readiness: 1 readable, 2 writable, 4 rdhup */
    uint8_t fail;
    uint8_t fail_phase; /* the enum sc_phase it failed in */
    uint8_t rep;
    int err; /* -errno of a socket-level failure */
    uint16_t rlen;
    uint8_t rbuf[32];
    uint64_t t0_ns;
    uint8_t http_state; /* SC_HTTP: status checked (1), blank-line progress */
    uint8_t crlf;
    struct addr bnd; /* BND of the reply (the relay's UDP address for UDP ASSOCIATE) */
    struct tls *tls; /* the TLS session to the proxy (route->tls), or NULL */
    struct h2s *h2;  /* route->h2: the stream (h2client.c); NULL once closed */
    bool via_h2;     /* opened as an h2 stream (h2 may be NULL by now) */
};

#define SC_RD    1u
#define SC_WR    2u
#define SC_RDHUP 4u

/* Start connecting; io callback cb receives all events. Returns 0 or
 * -errno (then s->fail says which kind). */
int sclient_open(struct sclient *s, struct loop *l, const struct route *r, io_cb cb);
/* Advance the handshake with the events just received. Returns 1 once the
 * connection is open for data, 0 while in progress, -1 on failure. */
int sclient_step(struct sclient *s, const struct route *r, uint32_t events);
void sclient_close(struct sclient *s, bool abortive);
/* Read from an open connection: through its TLS session when it has one,
 * else recv(2). > 0 bytes, 0 at EOF, or -1 with errno set (EAGAIN: nothing
 * now; with TLS, the socket readiness it waits for is cleared from s->ev). */
ssize_t sclient_recv(struct sclient *s, void *p, size_t n);
/* Write to an open connection the same way (send(2) with MSG_NOSIGNAL, or
 * one TLS record at a time: a short count says nothing about the socket
 * then). After EAGAIN with TLS, offer the same bytes again. > 0 or -1 with
 * errno set. */
ssize_t sclient_send(struct sclient *s, const void *p, size_t n);
/* Why a failed connection failed, in words, into buf (e.g. "the proxy
 * closed the connection before replying", "SOCKS5 reply 5 (connection
 * refused)", "connect: Connection refused"). */
void sclient_fail_reason(const struct sclient *s, const struct route *r, char *buf, size_t cap);

/* A nonblocking TCP connect to dst (from a random 127.x.y.z source when
 * spread and dst is on 127/8). The socket, or -errno. (connect.c) */
int bench_connect(const struct addr *dst, bool spread);

/* ---- h2 CONNECT streams (h2client.c) ---- */
/* Open sc as a CONNECT stream to r->dst on this thread's h2 connection to
 * r->via (made, with TLS from r->tls and ALPN h2, when there is none or it
 * is failed or going away). sc->io.cb is told the stream's readiness as
 * EPOLL bits, from the loop l, never from inside the caller. 0 or -errno
 * (h2_fail_reason() says why). */
int h2_stream_open(struct sclient *sc, struct loop *l, const struct route *r);
/* This thread's h2 connection to r->via, made when there is none (so that
 * streams opened later find it warm): 1 once its TLS handshake agreed on h2,
 * 0 while connecting (call again), -1 when it failed (h2_fail_reason()). */
int h2_connect(struct loop *l, const struct route *r);
/* 1 once the proxy answered 200, 0 while waiting, -1 failed (sc->fail set). */
int h2_stream_state(const struct sclient *sc);
/* As sclient_recv()/sclient_send() for an h2 stream: the stream's buffers;
 * reading returns flow-control credit to the proxy. */
ssize_t h2_stream_recv(struct sclient *sc, void *p, size_t n);
ssize_t h2_stream_send(struct sclient *sc, const void *p, size_t n);
/* Bytes the proxy sent on sc's stream that nobody has read yet (held in
 * the stream's buffer, their credit not yet returned); 0 without a stream. */
size_t h2_stream_unread(const struct sclient *sc);
/* Detach sc from its stream, resetting the stream (CANCEL) if still open. */
void h2_stream_close(struct sclient *sc);
/* Why the last h2 stream of this thread failed, in words ("" if none). */
const char *h2_fail_reason(void);
/* Free this thread's h2 connections (the generator's end); their streams'
 * clients see them closed. */
void h2_thread_end(void);

uint64_t now_ns(void);
/* CPU time of this process (every thread: clients and targets), seconds. */
double self_cpu_s(void);

/* ---- generator threads (client.c) ---- */

struct gen {
    unsigned id;
    pthread_t thread;
    struct loop loop;
    struct timer tick;
    _Atomic bool stop;
    void *scenario; /* the scenario's per-thread state */
    void (*on_start)(struct gen *g);
    void (*on_tick)(struct gen *g); /* every 20 ms, on the thread */
    struct timer pace_timer;
    void (*on_pace)(struct gen *g); /* every 1 ms once gen_pace() was called */
};

/* From on_start: call cb every millisecond on g's thread (the open-loop
 * timetable's clock; a send due between two calls goes out late, and its
 * latency, counted from its scheduled time, says so). */
void gen_pace(struct gen *g, void (*cb)(struct gen *g));

/* --rate: a fixed timetable. Send k is due at t0 + k * interval; it is
 * due whether or not the ones before it have been answered. */
struct pace {
    uint64_t t0_ns;
    double interval_ns;
    uint64_t k;
};
static inline void pace_init(struct pace *p, uint64_t t0_ns, double per_s)
{
    p->t0_ns = t0_ns;
    p->interval_ns = 1e9 / per_s;
    p->k = 0;
}
/* The scheduled time of the next send. */
static inline uint64_t pace_next_ns(const struct pace *p)
{
    return p->t0_ns + (uint64_t)((double)p->k * p->interval_ns);
}
/* The next send, if it is due at now: its scheduled time in *at, true. */
static inline bool pace_take(struct pace *p, uint64_t now, uint64_t *at)
{
    uint64_t t = pace_next_ns(p);
    if (t > now)
        return false;
    *at = t;
    p->k++;
    return true;
}

int gen_start(struct gen *g, unsigned id, void *scenario, void (*on_start)(struct gen *g));
void gen_stop_join(struct gen *g);

/* ---- the environment ---- */
struct proc_sample {
    double cpu_s;     /* user + system CPU seconds of the whole process */
    double mem_kib;   /* Pss where the kernel has it, else RSS (see mem_src) */
    unsigned mem_src; /* MEM_SRC_* flags of the processes summed */
    /* bench_sample only: the allocations each of the proxy's processes
     * (struct bench's pids[], in that order) has made so far, as counted
     * by bench/micro/alloccount.so in $ALLOC_COUNT_DIR; have_allocs: every
     * one of them has such a counter. */
    uint64_t allocs[BENCH_MAX_CHAIN];
    bool have_allocs;
};
bool proc_sample(pid_t pid, struct proc_sample *out);

/* Shared by scenarios: options, route, targets, the proxy's pid. Owned by
 * bench_main; scenarios read it, and report wrong data with bench_fail(). */
struct bench {
    struct bench_opts o;
    struct targets *t;
    struct wan_path *wan;        /* --wan: the path up (clients in A, the rest in B), or NULL */
    struct route route;          /* dst = echo 0 */
    pid_t pids[BENCH_MAX_CHAIN]; /* the proxy's processes (ss-local + ss-server, a chain) */
    unsigned npids;              /* 0: CPU and memory unknown */
    _Atomic bool fail_claimed;   /* a thread is writing fail_msg */
    _Atomic bool failed;         /* fail_msg is written: the run has failed */
    char fail_msg[256];
    _Atomic bool setup_claimed; /* a thread is writing setup_fail */
    _Atomic bool setup_noted;   /* setup_fail is written */
    char setup_fail[160];       /* why the first failed setup of the run failed */
};

/* ---- the run's state (result.c) ---- */
/* Record that the run must fail because what came back was wrong (not
 * slow, not refused: wrong). Any thread may call it; the first message is
 * kept, later ones are dropped (each scenario counts them). Windows and
 * waits end early once it is set. */
void bench_fail(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool bench_has_failed(const struct bench *b);
/* Before each run, on the main thread with no generator running. */
void bench_fail_reset(struct bench *b);
/* Keep why the first failed setup of the run failed (any thread; later
 * ones are dropped), for the shortfall message. */
void bench_setup_failed(struct bench *b, const struct sclient *s, const struct route *r);
/* The same with the reason in words (printf-style). */
void bench_setup_note(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* " (first failure: REASON)" when a setup failure was noted, else "". */
const char *bench_setup_reason(struct bench *b, char *buf, size_t cap);

/* The verdict on run k (1-based) that returned rc, told on stderr: wrong
 * data (bench_fail) fails it; so does a shortfall, unless --allow-failures
 * and something was set up; so does rc. A failure that is still reported
 * with its figures leaves its message in err (cap bytes). Returns the
 * run's status: 0 or -errno. */
int result_verdict(const struct bench *b, const struct result *r, unsigned k, int rc, char *err,
                   size_t cap);

/* The first offset at which a and b differ; n if they do not. */
size_t bench_first_diff(const uint8_t *a, const uint8_t *b, size_t n);

/* CPU and memory of all the proxy's processes, summed, and their
 * allocation counters when $ALLOC_COUNT_DIR names where they are kept
 * (proc.c). Returns whether the CPU and memory are known. */
bool bench_sample(const struct bench *b, struct proc_sample *out);
/* The kernel's count of connections dropped at a full accept queue
 * (TcpExtListenOverflows in /proc/net/netstat: this network namespace,
 * every listener in it); false when unknown. */
bool bench_listen_overflows(uint64_t *out);

/* Sleep in small steps until the window ends, or until bench_fail() was
 * called (after at least one step); print progress if asked. */
void bench_window(const struct bench *b, const char *label, double seconds,
                  double (*rate)(void *arg), void *arg, const char *unit);
/* On a terminal (--json off): "  LABEL DONE/TOTAL (ELAPSED s)" on stderr's
 * status line, for a set-up phase (at most 5 times a second); label NULL
 * clears the line. Nothing otherwise. Main thread only. */
void bench_progress_count(const struct bench *b, const char *label, unsigned done, unsigned total,
                          double elapsed_s);

/* ---- the scenarios (sc_*.c; their table: options.h) ---- */
/* Run one measurement: fill r, return 0 or -errno. */
typedef int (*scenario_fn)(struct bench *b, struct result *r);
int scenario_throughput(struct bench *b, struct result *r);
int scenario_handshakes(struct bench *b, struct result *r);
int scenario_requests(struct bench *b, struct result *r);
int scenario_connections(struct bench *b, struct result *r);
int scenario_udp(struct bench *b, struct result *r);
int scenario_rules(struct bench *b, struct result *r);
int scenario_edge(struct bench *b, struct result *r);
/* What `ferry bench edge` measures, in words, for the report's header. */
void scenario_edge_describe(const struct bench_opts *o, char *out, size_t cap);

/* `ferry bench sink [--listen ADDR:PORT]` (argv[0] is "sink"): serve the
 * bench's targets on one address until SIGINT or SIGTERM; the exit status
 * (sink.c). */
int bench_sink_main(int argc, char **argv);

/* `ferry bench ARGS` (argv[0] is "bench"): the exit status (main.c). */
int bench_main(int argc, char **argv);

#endif
