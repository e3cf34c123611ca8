/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/options.c: `ferry bench`'s command line: the usage text, the
 * scenario table (each scenario's function, its defaults for
 * --connections, --concurrency and --payload, the ranges it narrows, what
 * it needs and which parameters its report shows), and the parse of the
 * command line against the option table (options_table.c: for each option
 * how its argument is read, which field of struct bench_opts it sets, and
 * the range a value must be in), with the defaults and range checks.
 *
 * The ranges: a value outside them cannot give a figure worth the name (a
 * window of 0 s "measures" 0 MiB/s, a download of 0 bytes has no rate, a
 * ping every millisecond is a flood, not a ping) or cannot be run on this
 * kind of machine (a million held connections need four million
 * descriptors): it is a usage error (exit 2) naming the option and the
 * range, before anything starts. Options a scenario does not use are still
 * checked (a typo is a typo), against the same ranges.
 *
 * No I/O but the usage text and the usage errors on stderr; nothing here
 * starts, measures or reports anything.
 */
#include "bench/options_int.h"

#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util/addr.h"
#include "util/compiler.h"

static const char usage[] =
    "usage: ferry bench SCENARIO [options]\n"
    "\n"
    "Measure a proxy from the outside: a SOCKS5 proxy by default, an HTTP proxy\n"
    "with --http-proxy, a plain TCP relay with --relay, or no proxy with --direct.\n"
    "By default a ferry child is started on a free loopback port with its default\n"
    "configuration, and the targets (TCP echo, HTTP, UDP echo) run inside the\n"
    "bench; one command gives a number. The rules scenario measures ferry's\n"
    "access-rule lookup inside this process: no proxy, no network.\n"
    "\n"
    "Every byte that comes back is checked against what was sent. Wrong data (a\n"
    "changed, missing or extra byte, a wrong datagram) is not a figure: the run\n"
    "fails with a message naming the stream and offset.\n"
    "\n"
    "Scenarios:\n"
    "  throughput    N streams pump --payload chunks to an echo and back; MiB/s each way\n"
    "                (--direction up|down: one way only, counted at the receiver)\n"
    "  handshakes    full setups (connect, SOCKS5, 1 byte echoed, close); setups/s, latency\n"
    "  requests      one small HTTP request per new connection; req/s, latency; then\n"
    "                --downloads concurrent downloads of --download-size; MiB/s\n"
    "  connections   hold N concurrent connections; setup rate, proxy memory per connection\n"
    "                (Pss where the kernel has it, else RSS: see mem_source)\n"
    "  rules         the cost of one access-rule lookup with --rules N synthetic rules\n"
    "                (indexed and, for comparison, a plain scan); no proxy involved\n"
    "  udp           N clients, each with a UDP ASSOCIATE and one --payload datagram in\n"
    "                flight (lost after 100 ms): echoes/s, RTT, loss; --blast: unpaced;\n"
    "                CPU per echo of the proxy and of this bench (with --direct: what\n"
    "                the same socket operations cost without a proxy); with\n"
    "                ALLOC_COUNT_DIR=DIR LD_PRELOAD=build/micro/alloccount.so in the\n"
    "                environment, the proxy's allocations per datagram in the window\n"
    "                (a self-hosted ferry or tunnel pair inherits both; --proxy-pid:\n"
    "                start it so)\n"
    "  edge          new connections through an edge (SNI / Minecraft host routing):\n"
    "                connect, a canned first message, 1 byte back from the backend\n"
    "                the host routes to, close; conn/s, latency, misrouted, errors,\n"
    "                CPU per 1,000; --hold N: proxy memory per 10,000 idle (below)\n"
    "  wan           not a scenario: an emulated wide-area path (delay, loss, rate)\n"
    "                between two network namespaces: ferry bench wan --help\n"
    "\n"
    "What to measure:\n"
    "  (default)            a ferry child (this binary, or --ferry PATH), SOCKS5 or, with\n"
    "                       --http-proxy, HTTP; restarted before each connections run so\n"
    "                       every run starts cold\n"
    "  --proxy ADDR:PORT    any SOCKS5 proxy (an HTTP proxy with --http-proxy);\n"
    "                       --proxy-pid PID[,PID...] adds its CPU and memory (summed\n"
    "                       over the processes listed)\n"
    "  --relay ADDR:PORT    a plain TCP relay already forwarding to the echo target\n"
    "                       (use with --target-port; no SOCKS, e.g. haproxy in TCP mode)\n"
    "  --direct             no proxy at all: this machine's limit\n"
    "  --tunnel h2|wss      a ferry tunnel, self-hosted: client (SOCKS5 port) -> HTTP/2\n"
    "                       + TLS (wss: in a WebSocket) -> server; CPU and memory of\n"
    "                       both (see below)\n"
    "  --target ADDR:PORT   with any of the above: aim at a `ferry bench sink` there\n"
    "                       (see `ferry bench sink --help`) instead of the bench's own\n"
    "                       targets on 127.0.0.1, e.g. to measure a proxy on another\n"
    "                       host; the explicit consent to aim the load off this host:\n"
    "                       a --proxy or --relay off loopback is refused without it\n"
    "\n";

/* In two parts: ISO C compilers need only take string literals of 4095. */
static const char usage_options[] =
    "Options (a value out of its range is a usage error, exit status 2):\n"
    "  --runs R             repeat R times, report median/min/max (default 3; 1..100)\n"
    "  --duration S         measurement window in seconds (default 5; 0.1..3600);\n"
    "                       connections: how long the connections are held; rules:\n"
    "                       per lookup kind; requests: not used (it counts requests)\n"
    "  --warmup S           seconds of load before the window, not counted (default 1;\n"
    "                       0..600); throughput, handshakes and udp only: requests\n"
    "                       warms up with --warm-requests; connections and rules have\n"
    "                       no warm-up\n"
    "  --connections N      throughput streams (8; 1..10000), held connections (10000;\n"
    "                       1..250000) or udp clients (16; 1..10000)\n"
    "  --concurrency W      setups in flight for handshakes (32), requests (8),\n"
    "                       connections (256); 1..10000\n"
    "  --payload SIZE       throughput chunk size (default 64k; 1..1m); udp datagram\n"
    "                       payload (default 1200; 12..65485)\n"
    "  --blast              udp: send unpaced for the window; offered vs received pps\n"
    "  --no-echo-gro        udp: the echo reads every datagram alone; by default it\n"
    "                       takes a run its sender segmented (UDP_SEGMENT) in one read\n"
    "                       (UDP_GRO, as QUIC servers do) and answers with the same run\n"
    "  --rules N            rules: how many rules (default 1000; 0..1000000)\n"
    "  --http-proxy MODE    requests (and throughput, handshakes, connections): talk to\n"
    "                       the proxy as an HTTP proxy: connect (CONNECT tunnels) or\n"
    "                       absolute (GET http://host/path; requests only)\n"
    "  --https-proxy h1|h2  throughput, handshakes, requests: reach the proxy over TLS\n"
    "                       1.3. h1: a TLS connection per bench connection, then\n"
    "                       HTTP/1.1 (CONNECT, or absolute-form for requests;\n"
    "                       --http-proxy chooses). h2: one TLS connection (ALPN h2)\n"
    "                       per --threads thread, each bench connection an HTTP/2\n"
    "                       CONNECT stream on it (requests: a new stream each); no\n"
    "                       h2 in ALPN fails (\"h2 not offered\"), never falls back.\n"
    "                       The bench's windows (16 MiB per stream, 1 GiB for the\n"
    "                       connection, credit returned as it reads) never hold the\n"
    "                       proxy back. A self-hosted ferry gets a throwaway\n"
    "                       certificate and is verified by its pin\n"
    "  --stalled N          throughput with --https-proxy h2: N more CONNECT streams\n"
    "                       (0..--connections; spread over the threads' connections)\n"
    "                       that send a burst of up to 64 MiB to the echo and never\n"
    "                       read: their echo piles up in the bench, no credit goes\n"
    "                       back. Held for the whole run, not in the rates; the\n"
    "                       report says how many were held, what they sent and\n"
    "                       what of their echo waits unread\n"
    "  --proxy-cacert FILE  with --proxy and --https-proxy: the CA (PEM) the proxy's\n"
    "                       certificate must lead to; it must name the --proxy address\n"
    "  --proxy-pin PIN      with --proxy and --https-proxy: the proxy's pin, sha256//...\n"
    "                       (ferry cert prints it)\n"
    "  --requests N         measured requests (1000; 1..10000000), after\n"
    "                       --warm-requests N (100; 0..10000000)\n"
    "  --downloads L        concurrent large downloads (8; 1..1000) of --download-size\n"
    "                       (1m; 1..4g)\n"
    "  --ping S             connections: each sends 16 bytes every S seconds (0: off,\n"
    "                       the default; else 0.02..3600)\n"
    "  --threads T          load generator threads (default 1; 1..64)\n";

static const char usage_options_load[] =
    "  --rate N[/s]         handshakes, requests, udp: open loop: N setups, requests or\n"
    "                       datagrams a second on a fixed timetable, whether or not\n"
    "                       the earlier ones were answered; latency runs from each\n"
    "                       one's scheduled time (wrk2's correction for coordinated\n"
    "                       omission). --concurrency (default 1000 with --rate) is\n"
    "                       then the most in flight: one that finds none free waits,\n"
    "                       and its wait counts. Default 0: closed loop; 1..10000000\n"
    "  --direction D        throughput: both (default: an echo; each stream sends and\n"
    "                       reads it back), up (the client sends; the sink checks,\n"
    "                       drops and reports what it received) or down (a source\n"
    "                       sends; the client checks); counted where bytes arrive\n";

static const char usage_edge[] =
    "  --hello KIND         edge: the first message: tls (a 517-byte ClientHello, the\n"
    "                       default), mc (a Minecraft handshake + Login Start),\n"
    "                       tls-pq-segments (a 1812-byte post-quantum-sized\n"
    "                       ClientHello in 2 writes) or tls-pq-records (the same in\n"
    "                       2 TLS records, one write). Hosts alternate a.test and\n"
    "                       b.test; each backend answers its own byte, so a byte of\n"
    "                       the other is counted as misrouted and fails the run\n"
    "  --edge-target ADDR:PORT  edge: measure an edge already running on loopback\n"
    "                       (HAProxy, nginx, a ferry: bench/peers/) that routes\n"
    "                       a.test and b.test to the bench's backends on 127.0.0.1:\n"
    "                       --target-port and the next port (default 18501, 18502);\n"
    "                       --proxy-pid adds its CPU and memory. Without it a ferry\n"
    "                       with an [edge bench] section (sniff auto, a few routes,\n"
    "                       no flood limits, no access log) is started for each run\n"
    "  --hold N             edge: after the window, open N more connections and keep\n"
    "                       them idle after their byte: held, and the proxy's memory\n"
    "                       per 10,000 (0..250000; default 0: off)\n"
    "  --proxy-cgroup DIR   edge: move the self-hosted ferry into this cgroup (writes its\n"
    "                       PID to DIR/cgroup.procs once started), e.g. one with a CPU\n"
    "                       quota, so the edge and not the generator sets the rate\n";

static const char usage_options2[] =
    "  --ferry PATH         ferry binary to self-host (default: this one)\n"
    "  --chain N            self-host N ferries in a row (default 1; 1..8): the clients\n"
    "                       talk to the first, each sends every session on to the next\n"
    "                       (its SOCKS5 parent), the last dials the targets; proxy CPU and\n"
    "                       memory are those of all N; not with --proxy, --relay, --direct\n"
    "  --tunnel h2          throughput, handshakes, requests, connections, udp: start a\n"
    "                       tunnel pair and measure through it: a ferry with a SOCKS5\n"
    "                       port and an https:// outbound (mux = h2, pinned: what\n"
    "                       `ferry client https://ADDR --pin PIN socks` runs) in front\n"
    "                       of a ferry with a tls:// listener and a throwaway\n"
    "                       certificate; every session an HTTP/2 CONNECT stream on\n"
    "                       the TLS connection between them. Proxy CPU and memory\n"
    "                       are those of both.\n"
    "  --tunnel wss         the same, the HTTP/2 connection inside a WebSocket (RFC\n"
    "                       6455) on /tunnel: `ferry client wss://ADDR/tunnel socks`\n"
    "  --wan SPEC           behind an emulated wide-area path (root; see ferry bench wan\n"
    "                       --help), e.g. delay=25ms,loss=1%,rate=1gbit,gso=off: the\n"
    "                       clients (and a --tunnel's client, a chain's first ferries)\n"
    "                       in namespace A, the last self-hosted ferry and the targets\n"
    "                       in B; with --direct, plain TCP from A to the targets in B\n"
    "  --proxy-workers N    workers of the self-hosted ferry (default: its own; 1..256)\n"
    "  --proxy-set K=V      extra config line for each self-hosted ferry (repeatable)\n"
    "  --target-port P      fixed port for the echo target (default: any free port)\n"
    "  --no-spread          do not spread client source addresses over 127.0.0.0/8\n"
    "  --auth MODE          none (default), plain or argon2: authenticate as bench/benchpass\n"
    "                       (RFC 1929; Proxy-Authorization: Basic with --http-proxy);\n"
    "                       a self-hosted ferry gets a matching userlist\n"
    "  --auth-cachettl S    self-hosted ferry's auth.cachettl (0 disables the cache;\n"
    "                       0..86400)\n"
    "  --allow-failures     a run that missed its parameters (see below) is reported\n"
    "                       with its shortfall and passes; for comparing proxies that\n"
    "                       cannot take the load asked for (bench/compare.sh uses it)\n"
    "  --json               print one JSON line with every figure, every parameter (and\n"
    "                       the arguments as given), the ferry version and, when the\n"
    "                       binary lies in a git work tree, its commit\n"
    "  -h, --help           show this help\n"
    "\n"
    "Without --json, the header (scenario, what is measured, the parameters the\n"
    "scenario uses) is printed before the first run and the table after the last.\n"
    "Rates are in binary units: MiB/s (2^20 bytes per second), s/GiB. Latency\n"
    "figures (latency_*, rtt_*) are in ms: p50, p90, p95, p99, p99.9 and max, from\n"
    "a log-bucket histogram (each within 0.8 %; max exact). On a terminal, stderr\n"
    "shows the elapsed time, the interim rate and the set-up counts as it goes;\n"
    "the JSON line carries a timestamp, the CPU model, core count and kernel.\n"
    "\n"
    "A run fails when it did not do what its parameters asked: connections, streams,\n"
    "associations or handshakes that could not be set up, requests or downloads that\n"
    "failed, streams or held connections that ended early. The report ends with\n"
    "\"FAILED (run N): 64 of 10000 connections could not be set up (first failure:\n"
    "...)\", and --json has \"ok\": false, \"error\" and \"shortfalls\". With\n"
    "--allow-failures such a run passes with a SHORTFALL line, unless nothing at all\n"
    "could be set up. Wrong data always fails the run.\n"
    "\n"
    "Exit status: 0 every run passed; 1 a run failed (wrong data, a shortfall,\n"
    "nothing could be set up, a target that refuses, the self-hosted ferry\n"
    "failed); 2 bad usage (an impossible value, e.g. --duration 0 or --connections\n"
    "0, is named with its range). A failed run is still reported with its figures.\n";

void bench_usage(FILE *f)
{
    fputs(usage, f);
    fputs(usage_options, f);
    fputs(usage_options_load, f);
    fputs(usage_edge, f);
    fputs(usage_options2, f);
}

/* ---- the scenarios ------------------------------------------------------- */

const struct bench_scenario bench_scenarios[] = {
    {
        .name = "throughput",
        .run = scenario_throughput,
        .shows = SCP_WARMUP | SCP_WINDOW | SCP_THREADS | SCP_CONNECTIONS | SCP_PAYLOAD,
        .def = {[SV_CONNECTIONS] = 8, [SV_CONCURRENCY] = 8, [SV_PAYLOAD] = 65536},
        .range = {[SV_CONNECTIONS] = {.lo = 1, .hi = 10000}},
    },
    {
        .name = "handshakes",
        .run = scenario_handshakes,
        .shows = SCP_WARMUP | SCP_WINDOW | SCP_THREADS | SCP_CONCURRENCY,
        .def = {[SV_CONNECTIONS] = 8, [SV_CONCURRENCY] = 32, [SV_PAYLOAD] = 65536},
    },
    {
        .name = "requests",
        .run = scenario_requests,
        .flags = SCF_HTTP_ABSOLUTE,
        .shows = SCP_THREADS | SCP_CONCURRENCY | SCP_REQUESTS | SCP_DOWNLOADS,
        .def = {[SV_CONNECTIONS] = 8, [SV_CONCURRENCY] = 8, [SV_PAYLOAD] = 65536},
    },
    {
        /* Each held connection costs four descriptors on this machine
         * (client, echo and the proxy's two); the kernel's ceiling per
         * process is about 2^20. */
        .name = "connections",
        .run = scenario_connections,
        .flags = SCF_HOLDS | SCF_COLD,
        .shows = SCP_HOLD | SCP_THREADS | SCP_CONNECTIONS | SCP_CONCURRENCY | SCP_PING,
        .def = {[SV_CONNECTIONS] = 10000, [SV_CONCURRENCY] = 256, [SV_PAYLOAD] = 65536},
        .range = {[SV_CONNECTIONS] = {.lo = 1, .hi = 250000}},
    },
    {
        /* The payload: at least the bench's own 12-byte header, at most the
         * largest UDP payload (65507) less a SOCKS5 UDP header of up to 22. */
        .name = "udp",
        .run = scenario_udp,
        .flags = SCF_UDP,
        .shows = SCP_WARMUP | SCP_WINDOW | SCP_THREADS | SCP_CLIENTS | SCP_PAYLOAD | SCP_UDP_MODES,
        .def = {[SV_CONNECTIONS] = 16, [SV_CONCURRENCY] = 8, [SV_PAYLOAD] = 1200},
        .range = {[SV_CONNECTIONS] = {.lo = 1, .hi = 10000},
                  [SV_PAYLOAD] = {.lo = 12, .hi = 65507 - 22}},
    },
    {
        /* Owns its set-up: a ferry with an [edge] section and the
         * backends (sc_edge.c), or --edge-target. */
        .name = "edge",
        .run = scenario_edge,
        .flags = SCF_OWN_SETUP,
        .shows = SCP_WARMUP | SCP_WINDOW | SCP_THREADS | SCP_CONCURRENCY | SCP_EDGE,
        .def = {[SV_CONNECTIONS] = 8, [SV_CONCURRENCY] = 32, [SV_PAYLOAD] = 65536},
        .describe = scenario_edge_describe,
    },
    {
        .name = "rules",
        .run = scenario_rules,
        .flags = SCF_NO_PROXY,
        .shows = SCP_WINDOW_EACH | SCP_RULES,
        .def = {[SV_CONNECTIONS] = 8, [SV_CONCURRENCY] = 8, [SV_PAYLOAD] = 65536},
    },
};

const size_t bench_nscenarios = sizeof(bench_scenarios) / sizeof(bench_scenarios[0]);

const struct bench_scenario *bench_scenario_find(const char *name)
{
    for (size_t i = 0; name && i < bench_nscenarios; i++)
        if (!strcmp(name, bench_scenarios[i].name))
            return &bench_scenarios[i];
    return NULL;
}

/* ---- the options --------------------------------------------------------- */

#define OPT_VAL 256 /* getopt_long's value of bench_optdefs[i]: OPT_VAL + i */

/* The defaults that do not depend on the scenario. */
static const struct bench_opts base_defaults = {
    .runs = 3,
    .duration_s = 5,
    .warmup_s = 1,
    .threads = 1,
    .requests = 1000,
    .warm_requests = 100,
    .downloads = 8,
    .download_size = 1 << 20,
    .spread_src = true,
    .echo_gro = true,
    .ferry = "/proc/self/exe",
    .chain = 1,
    .auth = "none",
    .nrules = 1000,
    .auth_cachettl_s = -1,
};

/* The scenario's defaults for the SV_* options not given. */
static void scenario_defaults(struct bench_opts *o, const struct bench_scenario *sc, unsigned given)
{
    for (size_t i = 0; i < BENCH_NOPTS; i++) {
        const struct optdef *d = &bench_optdefs[i];
        if (d->sv == SV_NONE || (given & (1u << d->sv)))
            continue;
        void *p = (char *)o + d->off;
        if (d->field == F_SIZE)
            *(size_t *)p = (size_t)sc->def[d->sv];
        else
            *(unsigned *)p = (unsigned)sc->def[d->sv];
    }
}

void bench_opts_defaults(struct bench_opts *o, const struct bench_scenario *sc)
{
    *o = base_defaults;
    o->scenario = sc->name;
    scenario_defaults(o, sc, 0);
}

/* ---- the ranges ---------------------------------------------------------- */

static int fail(char *msg, size_t cap, const char *fmt, ...) PRINTF_LIKE(3, 4);

static int fail(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* Option d's value in o against r (narrowed for scenario scen, or NULL). */
static int check_range(const struct optdef *d, const struct bench_opts *o, struct bench_range r,
                       const char *scen, char *msg, size_t cap)
{
    const void *p = (const char *)o + d->off;
    if (d->field == F_DOUBLE) {
        double v = *(const double *)p;
        if ((v >= r.lo && v <= r.hi) || ((d->rg & RG_ZERO_OFF) && v == 0))
            return 0;
        return fail(msg, cap, "%s must be %s%.10g..%.10g %s (got %g)", d->name,
                    d->rg & RG_ZERO_OFF ? "0 (off) or " : "", r.lo, r.hi, d->unit, v);
    }
    unsigned long long v;
    if (d->field == F_INT) {
        int i = *(const int *)p;
        if (i < 0 && (d->rg & RG_NEG_DEFAULT))
            return 0;
        v = (unsigned long long)i;
    } else {
        v = d->field == F_SIZE ? *(const size_t *)p : *(const unsigned *)p;
    }
    unsigned long long lo = (unsigned long long)r.lo, hi = (unsigned long long)r.hi;
    if ((v >= lo && v <= hi) || (v == 0 && (d->rg & RG_ZERO_DEFAULT)))
        return 0;
    return fail(msg, cap, "%s must be %llu..%llu%s%s%s%s (got %llu)", d->name, lo, hi,
                d->unit[0] ? " " : "", d->unit, scen ? " for " : "", scen ? scen : "", v);
}

int bench_params_check(const struct bench_opts *o, char *msg, size_t cap)
{
    const struct bench_scenario *sc = bench_scenario_find(o->scenario);
    for (size_t i = 0; i < BENCH_NOPTS; i++) {
        const struct optdef *d = &bench_optdefs[i];
        struct bench_range r = d->ok;
        const char *scen = NULL;
        if (d->sv != SV_NONE && sc && sc->range[d->sv].hi > 0) {
            r = sc->range[d->sv];
            scen = sc->name;
        }
        if (r.hi > 0 && check_range(d, o, r, scen, msg, cap))
            return -1;
    }
    return 0;
}

/* ---- the command line ---------------------------------------------------- */

/* --https-proxy and its verification options, once the scenario is known;
 * without --http-proxy the HTTP mode becomes connect (absolute for
 * requests). Returns 0, or 2 (told). */
static int check_https(struct bench_opts *o, const struct bench_scenario *sc)
{
    if (!o->https_proxy) {
        if (o->proxy_cacert || o->proxy_pin)
            return bench_usage_error("--proxy-cacert and --proxy-pin need --https-proxy");
        return 0;
    }
    if (strcmp(sc->name, "throughput") && strcmp(sc->name, "handshakes") &&
        strcmp(sc->name, "requests"))
        return bench_usage_error("--https-proxy: not yet for this scenario (throughput, handshakes "
                                 "and requests only)");
    if (o->mode != BENCH_SELF && o->mode != BENCH_PROXY)
        return bench_usage_error("--https-proxy needs a proxy (self-hosted or --proxy)");
    if (o->mode == BENCH_SELF && (o->proxy_cacert || o->proxy_pin))
        return bench_usage_error("--proxy-cacert and --proxy-pin are for an external proxy "
                                 "(--proxy): a self-hosted ferry is verified by its own pin");
    if (o->mode == BENCH_PROXY && !o->proxy_cacert == !o->proxy_pin)
        return bench_usage_error("--https-proxy with --proxy needs one of --proxy-cacert FILE or "
                                 "--proxy-pin sha256//... (the proxy is never trusted unverified)");
    if (o->https_proxy == HTTPS_PROXY_H2 && o->http_proxy == HTTP_PROXY_ABSOLUTE)
        return bench_usage_error("--https-proxy h2 opens CONNECT streams only: not with "
                                 "--http-proxy absolute");
    if (!o->http_proxy)
        o->http_proxy = (sc->flags & SCF_HTTP_ABSOLUTE) && o->https_proxy == HTTPS_PROXY_H1
                            ? HTTP_PROXY_ABSOLUTE
                            : HTTP_PROXY_CONNECT;
    return 0;
}

/* --stalled: a stream that never reads only says something about its
 * neighbours when it shares their connection, so h2 throughput only (with
 * h1 or SOCKS a stalled client is a TCP connection of its own). Returns 0,
 * or 2 (told). */
static int check_stalled(const struct bench_opts *o, const struct bench_scenario *sc)
{
    if (!o->stalled)
        return 0;
    if (strcmp(sc->name, "throughput") || o->https_proxy != HTTPS_PROXY_H2)
        return bench_usage_error("--stalled is for throughput with --https-proxy h2 (streams that "
                                 "share the measured streams' connection; elsewhere a stalled "
                                 "client is a TCP connection of its own)");
    if (o->stalled > o->connections) {
        char msg[120];
        snprintf(msg, sizeof(msg), "--stalled must be 0..%u (--connections) (got %u)",
                 o->connections, o->stalled);
        return bench_usage_error(msg);
    }
    return 0;
}

/* --tunnel: the bench starts the pair itself, and the clients speak SOCKS5
 * (or, with --http-proxy, HTTP) to the client's port, plain TCP: so a TCP
 * scenario, self-hosted, no --chain and no --https-proxy. Returns 0, or 2
 * (told). */
static int check_tunnel(const struct bench_opts *o, const struct bench_scenario *sc)
{
    if (!o->tunnel)
        return 0;
    if (sc->flags & SCF_NO_PROXY)
        return bench_usage_error("--tunnel is for the scenarios through a proxy (throughput, "
                                 "handshakes, requests, connections, udp)");
    if (o->mode != BENCH_SELF)
        return bench_usage_error("--tunnel starts its own client and server: not with --proxy, "
                                 "--relay or --direct");
    if (o->chain > 1)
        return bench_usage_error(
            "--tunnel and --chain: choose one (a tunnel is a pair of its own)");
    if (o->https_proxy)
        return bench_usage_error("--tunnel: the bench speaks SOCKS5 to the tunnel's client (the "
                                 "tunnel itself is TLS): not with --https-proxy");
    return 0;
}

/* --rate, --direction: which scenarios they mean something for; with
 * --rate and no --concurrency, room for a queue to show (1000 in flight).
 * Returns 0, or 2 (told). */
static int check_open_loop(struct bench_opts *o, struct bench_cli *c)
{
    const char *name = c->sc->name;
    if (o->rate > 0 && strcmp(name, "handshakes") && strcmp(name, "requests") &&
        strcmp(name, "udp"))
        return bench_usage_error("--rate is for handshakes, requests and udp (throughput measures "
                                 "what the path takes; connections holds them)");
    if (o->rate > 0 && o->blast)
        return bench_usage_error("--rate and --blast: choose one (a timetable, or unpaced)");
    if (o->rate > 0 && !(c->given & (1u << SV_CONCURRENCY)))
        o->concurrency = 1000;
    if (o->direction != DIR_BOTH && strcmp(name, "throughput"))
        return bench_usage_error("--direction is for throughput");
    if (o->direction != DIR_BOTH && (o->https_proxy || o->stalled))
        return bench_usage_error("--direction up|down: not with --https-proxy (yet)");
    return 0;
}

/* Off-host only by consent: --target names the sink the bench aims at; a
 * --proxy or --relay elsewhere without it would dial the bench's loopback
 * targets from its own host (its own loopback), or carry the load to
 * another machine unasked. Returns 0, or 2 (told). */
static int check_off_host(const struct bench_opts *o)
{
    char a[ADDR_STRLEN], msg[400];
    if ((o->mode == BENCH_PROXY || o->mode == BENCH_RELAY) && !addr_is_loopback(&o->proxy) &&
        !o->has_target) {
        snprintf(msg, sizeof(msg),
                 "%s %s is not on this host's loopback: the bench's targets listen on "
                 "127.0.0.1 only, which a proxy elsewhere cannot reach; start `ferry bench "
                 "sink --listen ADDR:PORT` where that proxy can reach it and give --target "
                 "ADDR:PORT (the explicit consent to aim the load off this host)",
                 o->mode == BENCH_PROXY ? "--proxy" : "--relay",
                 addr_format(&o->proxy, a, sizeof(a)));
        return bench_usage_error(msg);
    }
    if (o->has_target && o->mode == BENCH_RELAY)
        return bench_usage_error("--target and --relay: a relay forwards to a target of its own "
                                 "configuration (use --proxy or --direct with --target)");
    return 0;
}

/* edge: its own set-up and options, and no others'. */
static int check_edge(const struct bench_opts *o, const struct bench_cli *c)
{
    bool edge = c->sc->flags & SCF_OWN_SETUP;
    if (!edge)
        return c->edge_given
                   ? bench_usage_error("--hello, --edge-target, --hold and --proxy-cgroup "
                                       "are for edge")
                   : 0;
    if (o->mode != BENCH_SELF || o->tunnel || o->chain > 1 || o->has_target)
        return bench_usage_error("edge starts its own ferry (or measures --edge-target): not with "
                                 "--proxy, --relay, --direct, --tunnel, --chain or --target");
    if (o->http_proxy || o->https_proxy || strcmp(o->auth, "none") != 0 || o->rate > 0)
        return bench_usage_error("edge speaks no proxy protocol: not with --http-proxy, "
                                 "--https-proxy, --auth or --rate");
    if (o->has_edge_target && (o->nproxy_set || o->proxy_workers || o->proxy_cgroup))
        return bench_usage_error("--proxy-set, --proxy-workers and --proxy-cgroup are for the "
                                 "self-hosted ferry, not --edge-target");
    if (!o->has_edge_target && c->target_port)
        return bench_usage_error("--target-port with edge: the port of --edge-target's backends");
    return 0;
}

/* The options combined, once the scenario is known. */
static int check_combination(struct bench_opts *o, struct bench_cli *c)
{
    const struct bench_scenario *sc = c->sc;
    if (check_edge(o, c))
        return 2;
    if (check_tunnel(o, sc) || check_open_loop(o, c) || check_off_host(o))
        return 2;
    if (o->wan && (o->mode == BENCH_PROXY || o->mode == BENCH_RELAY || (sc->flags & SCF_NO_PROXY)))
        return bench_usage_error(
            "--wan puts the self-hosted ferries (or, with --direct, the targets) "
            "behind an emulated path: not with --proxy, --relay or rules");
    if (o->http_proxy &&
        ((sc->flags & SCF_UDP) || o->mode == BENCH_DIRECT || o->mode == BENCH_RELAY))
        return bench_usage_error("--http-proxy needs a proxy (self-hosted or --proxy) and a TCP "
                                 "scenario");
    if (o->http_proxy == HTTP_PROXY_ABSOLUTE && !(sc->flags & SCF_HTTP_ABSOLUTE))
        return bench_usage_error("--http-proxy absolute only makes sense for requests");
    if (check_https(o, sc) || check_stalled(o, sc))
        return 2;
    if (o->chain > 1 && ((sc->flags & SCF_NO_PROXY) || o->mode != BENCH_SELF))
        return bench_usage_error("--chain starts its own ferries: not with --proxy, --relay, "
                                 "--direct or the rules scenario (to measure a chain of your own, "
                                 "point --proxy at its first proxy)");
    if ((sc->flags & SCF_UDP) && o->mode == BENCH_RELAY)
        return bench_usage_error("udp needs a SOCKS5 proxy (or --direct), not a TCP relay");
    char msg[160];
    if (bench_params_check(o, msg, sizeof(msg))) {
        fprintf(stderr, "ferry bench: %s\nTry 'ferry bench --help'.\n", msg);
        return 2;
    }
    if (o->mode == BENCH_RELAY && !c->target_port)
        return bench_usage_error("--relay needs --target-port (the port the relay forwards to)");
    if (o->has_target && (sc->flags & SCF_NO_PROXY))
        return bench_usage_error("--target: the rules scenario has no target");
    if (o->has_target && c->target_port)
        return bench_usage_error("--target and --target-port: the port is the sink's");
    return 0;
}

/* After the options: the scenario, its defaults, the checks. */
static int parse_scenario(int argc, char **argv, struct bench_opts *o, struct bench_cli *c)
{
    if (optind >= argc) {
        bench_usage(stderr);
        return 2;
    }
    o->scenario = argv[optind];
    if (optind + 1 < argc) {
        fprintf(stderr, "ferry bench: unexpected argument '%s'\n", argv[optind + 1]);
        return 2;
    }
    c->sc = bench_scenario_find(o->scenario);
    if (!c->sc) {
        fprintf(stderr, "ferry bench: unknown scenario '%s'\nTry 'ferry bench --help'.\n",
                o->scenario);
        return 2;
    }
    scenario_defaults(o, c->sc, c->given);
    int rc = check_combination(o, c);
    return rc ? rc : BENCH_RUN;
}

int bench_opts_parse(int argc, char **argv, struct bench_opts *o, struct bench_cli *c)
{
    static struct option longopts[BENCH_NOPTS + 1];
    size_t help = 0;
    for (size_t i = 0; i < BENCH_NOPTS; i++) {
        longopts[i] = (struct option){bench_optdefs[i].name + 2, bench_optdefs[i].has_arg, NULL,
                                      OPT_VAL + (int)i};
        if (strcmp(bench_optdefs[i].name, "--help") == 0)
            help = i;
    }
    memset(c, 0, sizeof(*c));
    *o = base_defaults;
    /* As given: getopt_long reorders argv. */
    o->argc = MIN(argc, (int)(sizeof(c->args) / sizeof(c->args[0])));
    memcpy(c->args, argv, (size_t)o->argc * sizeof(*c->args));
    o->argv = c->args;
    o->argv_total = argc;

    int ch;
    optind = 0; /* glibc: start afresh */
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        size_t i = ch == 'h' ? help : (size_t)(ch - OPT_VAL);
        if (ch != 'h' && (ch < OPT_VAL || i >= BENCH_NOPTS)) {
            fputs("Try 'ferry bench --help'.\n", stderr);
            return 2;
        }
        const struct optdef *d = &bench_optdefs[i];
        int rc = d->set(d, optarg, o, c);
        if (rc)
            return rc;
        if (c->help) {
            bench_usage(stdout);
            return 0;
        }
        if (d->sv != SV_NONE)
            c->given |= 1u << d->sv;
    }
    return parse_scenario(argc, argv, o, c);
}
