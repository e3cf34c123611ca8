/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/main.c: `ferry bench SCENARIO [options]`: options, the proxy under
 * test (a ferry child, --proxy, --relay or --direct), R runs of the
 * scenario, and the report (median, min and max of each figure; a table or
 * one JSON line).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/proc.h"
#include "bench/stats.h"
#include "crypto/fcrypto.h"
#include "util/parse.h"
#include "version.h"

#define MAX_RUNS   100
/* The credentials of --auth (RFC 1929); a self-hosted ferry gets a userlist
 * holding them, an external proxy must know them. */
#define BENCH_USER "bench"
#define BENCH_PASS "benchpass"

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
    "                the same socket operations cost without a proxy)\n"
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
    "  --requests N         measured requests (1000; 1..10000000), after\n"
    "                       --warm-requests N (100; 0..10000000)\n"
    "  --downloads L        concurrent large downloads (8; 1..1000) of --download-size\n"
    "                       (1m; 1..4g)\n"
    "  --ping S             connections: each sends 16 bytes every S seconds (0: off,\n"
    "                       the default; else 0.02..3600)\n"
    "  --threads T          load generator threads (default 1; 1..64)\n";

static const char usage_options2[] =
    "  --ferry PATH         ferry binary to self-host (default: this one)\n"
    "  --proxy-workers N    workers of the self-hosted ferry (default: its own; 1..256)\n"
    "  --proxy-set K=V      extra config line for the self-hosted ferry (repeatable)\n"
    "  --target-port P      fixed port for the echo target (default: any free port)\n"
    "  --no-spread          do not spread client source addresses over 127.0.0.0/8\n"
    "  --auth MODE          none (default), plain or argon2: authenticate with RFC 1929 as\n"
    "                       bench/benchpass; a self-hosted ferry gets a matching userlist\n"
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
    "Rates are in binary units: MiB/s (2^20 bytes per second), s/GiB.\n"
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
    "nothing could be set up, the self-hosted ferry failed); 2 bad usage. A failed\n"
    "run is still reported with its figures.\n";

void result_add(struct result *r, const char *name, const char *unit, double v)
{
    if (r->n < RESULT_MAX_METRICS)
        r->m[r->n++] = (struct metric){name, unit, v};
}

void result_note(struct result *r, const char *fmt, ...)
{
    size_t len = strlen(r->note);
    if (len && len + 2 < sizeof(r->note)) {
        memcpy(r->note + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + len, sizeof(r->note) - len, fmt, ap);
    va_end(ap);
}

void result_shortfall(struct result *r, const char *fmt, ...)
{
    size_t len = strlen(r->shortfall);
    if (len && len + 2 < sizeof(r->shortfall)) {
        memcpy(r->shortfall + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->shortfall + len, sizeof(r->shortfall) - len, fmt, ap);
    va_end(ap);
}

void bench_setup_note(struct bench *b, const char *fmt, ...)
{
    if (atomic_exchange(&b->setup_claimed, true))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->setup_fail, sizeof(b->setup_fail), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&b->setup_noted, true, memory_order_release);
}

void bench_setup_failed(struct bench *b, const struct sclient *s, const struct route *r)
{
    if (atomic_load_explicit(&b->setup_claimed, memory_order_relaxed))
        return; /* cheap: most failures after the first stop here */
    char why[sizeof(b->setup_fail)];
    sclient_fail_reason(s, r, why, sizeof(why));
    bench_setup_note(b, "%s", why);
}

const char *bench_setup_reason(struct bench *b, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (atomic_load_explicit(&b->setup_noted, memory_order_acquire))
        snprintf(buf, cap, " (first failure: %s)", b->setup_fail);
    return buf;
}

void bench_fail(struct bench *b, const char *fmt, ...)
{
    if (atomic_exchange(&b->fail_claimed, true))
        return; /* the first report names the problem; the rest are counted */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->fail_msg, sizeof(b->fail_msg), fmt, ap);
    va_end(ap);
    atomic_store_explicit(&b->failed, true, memory_order_release);
}

bool bench_has_failed(const struct bench *b)
{
    return atomic_load_explicit(&b->failed, memory_order_acquire);
}

void bench_fail_reset(struct bench *b)
{
    atomic_store(&b->failed, false);
    atomic_store(&b->fail_claimed, false);
    b->fail_msg[0] = '\0';
    atomic_store(&b->setup_noted, false);
    atomic_store(&b->setup_claimed, false);
    b->setup_fail[0] = '\0';
}

size_t bench_first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

void bench_window(const struct bench *b, const char *label, double seconds,
                  double (*rate)(void *arg), void *arg, const char *unit)
{
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    uint64_t start = now_ns();
    for (;;) {
        uint64_t now = now_ns();
        if (now >= end)
            break;
        uint64_t step = MIN(end - now, (uint64_t)250000000u);
        struct timespec ts = {(time_t)(step / 1000000000u), (long)(step % 1000000000u)};
        nanosleep(&ts, NULL);
        /* A failed run is not worth finishing. Checked after the sleep, so
         * that a caller polling in short windows still sleeps. */
        if (bench_has_failed(b))
            break;
        if (b->o.progress && label) {
            double r = rate ? rate(arg) : 0;
            fprintf(stderr, "\r\033[K  %s %.1f/%.1f s", label, (double)(now_ns() - start) / 1e9,
                    seconds);
            if (rate)
                fprintf(stderr, "  %.1f %s", r, unit);
            fflush(stderr);
        }
    }
    if (b->o.progress && label)
        fprintf(stderr, "\r\033[K");
}

static const struct {
    const char *name;
    scenario_fn fn;
} scenarios[] = {
    {"throughput", scenario_throughput},
    {"handshakes", scenario_handshakes},
    {"requests", scenario_requests},
    {"connections", scenario_connections},
    {"udp", scenario_udp},
    {"rules", scenario_rules},
};

static int bad_value(const char *opt, const char *v)
{
    fprintf(stderr, "ferry bench: %s: invalid value '%s'\nTry 'ferry bench --help'.\n", opt, v);
    return 2;
}

static int parse_seconds(const char *opt, const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    /* Any finite number here; bench_params_check() says what range it must be in. */
    if (*v == '\0' || *end || !isfinite(d))
        return bad_value(opt, v);
    *out = d;
    return 0;
}

static int parse_count(const char *opt, const char *v, uint64_t min, uint64_t max, unsigned *out)
{
    uint64_t n;
    if (parse_u64(v, min, max, &n)) {
        if (max >= UINT_MAX)
            return bad_value(opt, v);
        fprintf(stderr,
                "ferry bench: %s must be %llu..%llu (got '%s')\nTry 'ferry bench --help'.\n", opt,
                (unsigned long long)min, (unsigned long long)max, v);
        return 2;
    }
    *out = (unsigned)n;
    return 0;
}

static const char *mode_name(enum bench_mode m)
{
    switch (m) {
    case BENCH_SELF:
        return "ferry";
    case BENCH_PROXY:
        return "proxy";
    case BENCH_DIRECT:
        return "direct";
    case BENCH_RELAY:
        return "relay";
    }
    return "?";
}

/* Raise the open-files limit for the bench (and the child it starts). */
static void raise_nofile(unsigned long want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_max < want) {
        struct rlimit r2 = {want, want};
        if (setrlimit(RLIMIT_NOFILE, &r2) == 0)
            return;
    }
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

/* What a report says about a ferry binary: where it is, its version, and
 * the commit of the git work tree it lies in, if any. */
struct build_info {
    char path[PATH_MAX];
    char version[64];
    char commit[64]; /* empty: unknown */
    bool dirty;      /* the work tree had uncommitted changes to tracked files */
    const char *commit_source;
};

static const char commit_from_git[] =
    "git: HEAD of the work tree holding the binary, read at run time (the binary "
    "may have been built from other sources; see tree_dirty)";
static const char commit_none[] = "none: the binary does not lie in a git work tree";

static void build_info(const char *binary, bool is_self, struct build_info *bi)
{
    memset(bi, 0, sizeof(*bi));
    if (!realpath(binary, bi->path))
        snprintf(bi->path, sizeof(bi->path), "%s", binary);
    bi->commit_source = commit_none;
    char line[256];
    if (is_self) {
        snprintf(bi->version, sizeof(bi->version), "%s", FERRY_VERSION);
#ifdef FERRY_COMMIT
        snprintf(bi->commit, sizeof(bi->commit), "%s", FERRY_COMMIT);
        bi->commit_source = "build: compiled in with -DFERRY_COMMIT";
        return;
#endif
    } else {
        const char *ver[] = {bi->path, "--version", NULL};
        if (proc_capture(ver, line, sizeof(line)) == 0 && strncmp(line, "ferry ", 6) == 0)
            (void)str_copy(bi->version, sizeof(bi->version), line + 6);
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", bi->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    if (!dir[0])
        dir[0] = '/', dir[1] = '\0';
    const char *head[] = {"git", "-C", dir, "rev-parse", "--short", "HEAD", NULL};
    if (proc_capture(head, line, sizeof(line)) != 0 || !line[0])
        return;
    (void)str_copy(bi->commit, sizeof(bi->commit), line);
    bi->commit_source = commit_from_git;
    /* --no-optional-locks: never take the index lock of someone's tree. */
    const char *st[] = {"git",         "--no-optional-locks",  "-C", dir, "status",
                        "--porcelain", "--untracked-files=no", NULL};
    bi->dirty = proc_capture(st, line, sizeof(line)) == 0 && line[0];
}

static void print_build_json(const char *key, const struct build_info *bi)
{
    printf(",\"%s\":{\"binary\":", key);
    print_json_string(bi->path);
    printf(",\"version\":");
    print_json_string(bi->version[0] ? bi->version : "unknown");
    if (bi->commit[0]) {
        printf(",\"commit\":");
        print_json_string(bi->commit);
        if (bi->commit_source == commit_from_git)
            printf(",\"tree_dirty\":%s", bi->dirty ? "true" : "false");
    }
    printf(",\"commit_source\":");
    print_json_string(bi->commit_source);
    putchar('}');
}

static const char *mem_source_name(unsigned src)
{
    return src == MEM_SRC_PSS ? "pss" : src == MEM_SRC_RSS ? "rss" : "pss+rss";
}

static const char *http_proxy_name(uint8_t m)
{
    return m == HTTP_PROXY_CONNECT ? "connect" : m == HTTP_PROXY_ABSOLUTE ? "absolute" : "none";
}

/* Metric `name` of a run, 0 if the run has none (a run that failed early,
 * CPU figures of a process that went away). */
static double run_metric(const struct result *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->m[i].name, name))
            return r->m[i].v;
    return 0;
}

/* The table's header, before the first run: what is measured and the
 * parameters this scenario uses (no others: a warm-up the scenario does not
 * have is not shown). Not in --json mode: the JSON line carries them all. */
static void print_header(const struct bench *b, const char *target)
{
    const struct bench_opts *o = &b->o;
    const char *sc = o->scenario;
    bool self = o->mode == BENCH_SELF && strcmp(sc, "rules") != 0;
    if (o->json)
        return;
    printf("ferry bench %s: %s\n", sc, target);
    printf("  runs %u", o->runs);
    if (!strcmp(sc, "throughput"))
        printf(", warm-up %gs, window %gs, threads %u, connections %u, payload %zu B", o->warmup_s,
               o->duration_s, o->threads, o->connections, o->payload);
    else if (!strcmp(sc, "handshakes"))
        printf(", warm-up %gs, window %gs, threads %u, concurrency %u", o->warmup_s, o->duration_s,
               o->threads, o->concurrency);
    else if (!strcmp(sc, "requests"))
        printf(", threads %u, concurrency %u, requests %u (+%u warm-up), downloads %u x %zu B",
               o->threads, o->concurrency, o->requests, o->warm_requests, o->downloads,
               o->download_size);
    else if (!strcmp(sc, "connections")) {
        printf(", hold %gs, threads %u, connections %u, concurrency %u, ping ", o->duration_s,
               o->threads, o->connections, o->concurrency);
        if (o->ping_s > 0)
            printf("every %gs", o->ping_s);
        else
            printf("off");
    } else if (!strcmp(sc, "udp"))
        printf(", warm-up %gs, window %gs, threads %u, clients %u, payload %zu B%s%s", o->warmup_s,
               o->duration_s, o->threads, o->connections, o->payload, o->blast ? ", blast" : "",
               o->echo_gro ? "" : ", echo without GRO");
    else if (!strcmp(sc, "rules"))
        printf(", window %gs per lookup kind, rules %u", o->duration_s, o->nrules);
    if (strcmp(sc, "rules") != 0 && strcmp(o->auth, "none") != 0)
        printf(", auth %s", o->auth);
    if (o->http_proxy)
        printf(", http proxy %s", http_proxy_name(o->http_proxy));
    for (unsigned i = 0; i < o->nproxy_set && self; i++)
        printf(", %s", o->proxy_set[i]);
    if (o->allow_failures)
        printf(", failures allowed");
    printf("\n\n");
    fflush(stdout);
}

/* The report of the runs done. error is NULL when every run passed, else
 * why the last one failed (the figures are still shown). */
static void report(const struct bench *b, const char *target, struct result *runs, unsigned nruns,
                   const char *error)
{
    const struct bench_opts *o = &b->o;
    const struct result *first = &runs[0];
    double v[MAX_RUNS];
    bool is_rules = !strcmp(o->scenario, "rules");
    bool self = o->mode == BENCH_SELF && !is_rules; /* rules runs no proxy */
    unsigned mem_src = 0;
    for (unsigned r = 0; r < nruns; r++)
        mem_src |= runs[r].mem_src;
    char a[ADDR_STRLEN];
    if (o->json) {
        printf("{\"scenario\":\"%s\",\"mode\":\"%s\",\"ok\":%s", o->scenario,
               is_rules ? "none" : mode_name(o->mode), error ? "false" : "true");
        if (error) {
            printf(",\"error\":");
            print_json_string(error);
        }
        printf(",\"target\":");
        print_json_string(target);
        printf(",\"version\":\"%s\"", FERRY_VERSION);
        static struct build_info bi, fi; /* PATH_MAX each: not on the stack */
        build_info("/proc/self/exe", true, &bi);
        print_build_json("bench_build", &bi);
        if (self) {
            if (!strcmp(o->ferry, "/proc/self/exe"))
                fi = bi;
            else
                build_info(o->ferry, false, &fi);
            print_build_json("ferry_build", &fi);
        }
        printf(",\"args\":[");
        for (int i = 0; i < o->argc; i++) {
            if (i)
                putchar(',');
            print_json_string(o->argv[i]);
        }
        printf("]%s,", o->argc < o->argv_total ? ",\"args_truncated\":true" : "");
        printf("\"params\":{\"runs\":%u,\"duration_s\":%g,\"warmup_s\":%g,"
               "\"connections\":%u,\"concurrency\":%u,\"payload\":%zu,\"requests\":%u,"
               "\"warm_requests\":%u,\"downloads\":%u,\"download_size\":%zu,\"ping_s\":%g,"
               "\"threads\":%u,\"proxy_workers\":%u,\"spread_src\":%s,\"auth\":\"%s\","
               "\"auth_cachettl_s\":%d,\"blast\":%s,\"echo_gro\":%s,\"http_proxy\":\"%s\","
               "\"target_port\":%u,\"allow_failures\":%s",
               o->runs, o->duration_s, o->warmup_s, o->connections, o->concurrency, o->payload,
               o->requests, o->warm_requests, o->downloads, o->download_size, o->ping_s, o->threads,
               o->proxy_workers, o->spread_src ? "true" : "false", o->auth, o->auth_cachettl_s,
               o->blast ? "true" : "false", o->echo_gro ? "true" : "false",
               http_proxy_name(o->http_proxy), (unsigned)o->target_port,
               o->allow_failures ? "true" : "false");
        if (is_rules)
            printf(",\"rules\":%u", o->nrules);
        if (self) {
            printf(",\"ferry\":"); /* resolved: the default is /proc/self/exe */
            print_json_string(fi.path);
            printf(",\"proxy_set\":[");
            for (unsigned i = 0; i < o->nproxy_set; i++) {
                if (i)
                    putchar(',');
                print_json_string(o->proxy_set[i]);
            }
            putchar(']');
        }
        if (o->mode == BENCH_PROXY || o->mode == BENCH_RELAY) {
            printf(",\"proxy\":");
            print_json_string(addr_format(&o->proxy, a, sizeof(a)));
            printf(",\"proxy_pids\":[");
            for (unsigned i = 0; i < o->nproxy_pids; i++)
                printf("%s%d", i ? "," : "", (int)o->proxy_pids[i]);
            putchar(']');
        }
        printf("}");
        if (self) {
            printf(",\"proxy_instances\":[");
            for (unsigned r = 0; r < nruns; r++) {
                printf("%s{\"run\":%u,\"pid\":%d,\"addr\":", r ? "," : "", r + 1,
                       (int)runs[r].proxy_pid);
                print_json_string(addr_format(&runs[r].proxy, a, sizeof(a)));
                putchar('}');
            }
            putchar(']');
        }
        if (mem_src)
            printf(",\"mem_source\":\"%s\"", mem_source_name(mem_src));
        printf(",\"metrics\":{");
        for (size_t i = 0; i < first->n; i++) {
            for (unsigned r = 0; r < nruns; r++)
                v[r] = run_metric(&runs[r], first->m[i].name);
            printf("%s\"%s\":{\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"unit\":\"%s\","
                   "\"runs\":[",
                   i ? "," : "", first->m[i].name, stats_median(v, nruns), stats_min(v, nruns),
                   stats_max(v, nruns), first->m[i].unit);
            for (unsigned r = 0; r < nruns; r++)
                printf("%s%.6g", r ? "," : "", v[r]);
            printf("]}");
        }
        printf("}");
        bool anysf = false;
        for (unsigned r = 0; r < nruns; r++)
            anysf = anysf || runs[r].shortfall[0];
        if (anysf) { /* what runs missed of their parameters, failed or allowed */
            printf(",\"shortfalls\":[");
            bool first_sf = true;
            for (unsigned r = 0; r < nruns; r++) {
                if (!runs[r].shortfall[0])
                    continue;
                printf("%s{\"run\":%u,\"what\":", first_sf ? "" : ",", r + 1);
                print_json_string(runs[r].shortfall);
                putchar('}');
                first_sf = false;
            }
            putchar(']');
        }
        printf(",\"notes\":[");
        bool any = false;
        for (unsigned r = 0; r < nruns; r++) {
            if (runs[r].note[0]) {
                printf("%s", any ? "," : "");
                print_json_string(runs[r].note);
                any = true;
            }
        }
        printf("]}\n");
        fflush(stdout);
        return;
    }
    (void)target; /* the table mode printed it before the run (print_header) */
    printf("  %-26s %12s %12s %12s  %s\n", "figure", "median", "min", "max", "unit");
    for (size_t i = 0; i < first->n; i++) {
        for (unsigned r = 0; r < nruns; r++)
            v[r] = run_metric(&runs[r], first->m[i].name);
        printf("  %-26s %12.2f %12.2f %12.2f  %s\n", first->m[i].name, stats_median(v, nruns),
               stats_min(v, nruns), stats_max(v, nruns), first->m[i].unit);
    }
    if (mem_src)
        printf("  memory figures: %s\n",
               mem_src == MEM_SRC_PSS   ? "Pss (proportional set size, shared pages split)"
               : mem_src == MEM_SRC_RSS ? "RSS (Pss not available; shared pages counted whole)"
                                        : "Pss for some processes, RSS for others");
    if (self && nruns > 1 && (runs[0].proxy_pid != runs[nruns - 1].proxy_pid))
        for (unsigned r = 0; r < nruns; r++)
            printf("  run %u: ferry pid %d at %s\n", r + 1, (int)runs[r].proxy_pid,
                   addr_format(&runs[r].proxy, a, sizeof(a)));
    for (unsigned r = 0; r < nruns; r++)
        if (runs[r].note[0])
            printf("  note (run %u): %s\n", r + 1, runs[r].note);
    for (unsigned r = 0; r < nruns; r++)
        if (runs[r].shortfall[0] && !(error && !strcmp(error, runs[r].shortfall)))
            printf("  SHORTFALL (run %u%s): %s\n", r + 1,
                   o->allow_failures ? ", allowed by --allow-failures" : "", runs[r].shortfall);
    if (error)
        printf("  FAILED (run %u): %s\n", nruns, error);
    fflush(stdout);
}

/* The self-hosted ferry: its configuration, kept to start it again. */
struct self_host {
    struct child child;
    bool running;
    char extra[4096]; /* --proxy-set lines */
    char userlist[FCRYPTO_PWHASH_MAX + 64];
    char auth_extra[64];
};

static int self_start(struct bench *b, struct self_host *sh)
{
    const struct bench_opts *o = &b->o;
    int rc = child_start(&sh->child, o->ferry, o->proxy_workers, sh->extra,
                         sh->userlist[0] ? sh->userlist : NULL, sh->auth_extra);
    if (rc) {
        fprintf(stderr, "ferry bench: cannot start %s: %s\n", o->ferry, strerror(-rc));
        child_stop(&sh->child); /* its temporary directory */
        return rc;
    }
    sh->running = true;
    b->route.via = sh->child.addr;
    b->pids[0] = sh->child.pid;
    b->npids = 1;
    return 0;
}

/* Stop it; a non-zero exit status is a failure of the run it served. */
static int self_stop(struct bench *b, struct self_host *sh)
{
    if (!sh->running)
        return 0;
    sh->running = false;
    b->npids = 0;
    int st = child_stop(&sh->child);
    if (st != 0) {
        fprintf(stderr, "ferry bench: the self-hosted ferry exited with status %d\n", st);
        return -ECHILD;
    }
    return 0;
}

/* The verdict on run k (1-based) that returned rc, told on stderr: wrong
 * data fails it; so does a shortfall (result_shortfall), unless
 * --allow-failures and something was set up. A failure still reported with
 * its figures leaves its message in err. Returns the run's status: 0 or
 * -errno. */
static int run_outcome(const struct bench *b, const struct result *r, unsigned k, int rc, char *err,
                       size_t cap)
{
    if (bench_has_failed(b)) {
        fprintf(stderr, "ferry bench: run %u failed: %s\n", k, b->fail_msg);
        snprintf(err, cap, "%s", b->fail_msg);
        return rc ? rc : -EBADMSG;
    }
    if (r->shortfall[0] && (r->nothing || !b->o.allow_failures)) {
        fprintf(stderr, "ferry bench: run %u FAILED: %s\n", k, r->shortfall);
        snprintf(err, cap, "%s", r->shortfall);
        return rc ? rc : -EPROTO;
    }
    if (rc) {
        fprintf(stderr, "ferry bench: run %u failed: %s%s%s\n", k, strerror(-rc),
                r->note[0] ? ": " : "", r->note);
        return rc;
    }
    if (r->shortfall[0])
        fprintf(stderr, "ferry bench: run %u: %s (allowed by --allow-failures)\n", k, r->shortfall);
    return 0;
}

int bench_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"proxy", required_argument, NULL, 'p'},
        {"proxy-pid", required_argument, NULL, 'P'},
        {"relay", required_argument, NULL, 'R'},
        {"direct", no_argument, NULL, 'D'},
        {"runs", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"warmup", required_argument, NULL, 'W'},
        {"connections", required_argument, NULL, 'n'},
        {"concurrency", required_argument, NULL, 'c'},
        {"payload", required_argument, NULL, 's'},
        {"requests", required_argument, NULL, 'q'},
        {"warm-requests", required_argument, NULL, 'Q'},
        {"downloads", required_argument, NULL, 'L'},
        {"download-size", required_argument, NULL, 'S'},
        {"ping", required_argument, NULL, 'i'},
        {"threads", required_argument, NULL, 't'},
        {"ferry", required_argument, NULL, 'f'},
        {"proxy-workers", required_argument, NULL, 'w'},
        {"proxy-set", required_argument, NULL, 'x'},
        {"target-port", required_argument, NULL, 'T'},
        {"no-spread", no_argument, NULL, 'N'},
        {"json", no_argument, NULL, 'j'},
        {"blast", no_argument, NULL, 'B'},
        {"no-echo-gro", no_argument, NULL, 'G'},
        {"http-proxy", required_argument, NULL, 'H'},
        {"rules", required_argument, NULL, 'U'},
        {"auth", required_argument, NULL, 'A'},
        {"auth-cachettl", required_argument, NULL, 'C'},
        {"allow-failures", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct bench b;
    memset(&b, 0, sizeof(b));
    struct bench_opts *o = &b.o;
    o->runs = 3;
    o->duration_s = 5;
    o->warmup_s = 1;
    o->threads = 1;
    o->payload = 65536;
    o->requests = 1000;
    o->warm_requests = 100;
    o->downloads = 8;
    o->download_size = 1 << 20;
    o->spread_src = true;
    o->echo_gro = true;
    o->ferry = "/proc/self/exe";
    o->auth = "none";
    o->nrules = 1000;
    o->auth_cachettl_s = -1;
    /* As given: getopt_long reorders argv. */
    static const char *args[128];
    o->argc = MIN(argc, (int)(sizeof(args) / sizeof(args[0])));
    memcpy(args, argv, (size_t)o->argc * sizeof(*args));
    o->argv = args;
    o->argv_total = argc;
    bool set_conn = false, set_conc = false, set_payload = false;
    static struct self_host sh; /* large: not on the stack */
    memset(&sh, 0, sizeof(sh));
    char *extra = sh.extra;
    const size_t extra_cap = sizeof(sh.extra);
    unsigned target_port = 0;
    uint64_t n;
    int ch, rc;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
        case 'R':
            if (addr_parse(optarg, -1, &o->proxy))
                return bad_value(ch == 'p' ? "--proxy" : "--relay", optarg);
            o->mode = ch == 'p' ? BENCH_PROXY : BENCH_RELAY;
            break;
        case 'P': {
            char list[256], *save = NULL;
            if (snprintf(list, sizeof(list), "%s", optarg) >= (int)sizeof(list))
                return bad_value("--proxy-pid", optarg);
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (o->nproxy_pids == 8 || parse_u64(tok, 1, 4194304, &n))
                    return bad_value("--proxy-pid", optarg);
                o->proxy_pids[o->nproxy_pids++] = (pid_t)n;
            }
            break;
        }
        case 'D':
            o->mode = BENCH_DIRECT;
            break;
        case 'r':
            if ((rc = parse_count("--runs", optarg, 0, UINT_MAX, &o->runs)))
                return rc;
            break;
        case 'd':
            if ((rc = parse_seconds("--duration", optarg, &o->duration_s)))
                return rc;
            break;
        case 'W':
            if ((rc = parse_seconds("--warmup", optarg, &o->warmup_s)))
                return rc;
            break;
        case 'n':
            if ((rc = parse_count("--connections", optarg, 0, UINT_MAX, &o->connections)))
                return rc;
            set_conn = true;
            break;
        case 'c':
            if ((rc = parse_count("--concurrency", optarg, 0, UINT_MAX, &o->concurrency)))
                return rc;
            set_conc = true;
            break;
        case 's':
        case 'S':
            if (parse_size(optarg, 0, 1ull << 40, &n))
                return bad_value(ch == 's' ? "--payload" : "--download-size", optarg);
            if (ch == 's') {
                o->payload = (size_t)n;
                set_payload = true;
            } else {
                o->download_size = (size_t)n;
            }
            break;
        case 'q':
            if ((rc = parse_count("--requests", optarg, 0, UINT_MAX, &o->requests)))
                return rc;
            break;
        case 'Q':
            if ((rc = parse_count("--warm-requests", optarg, 0, UINT_MAX, &o->warm_requests)))
                return rc;
            break;
        case 'L':
            if ((rc = parse_count("--downloads", optarg, 0, UINT_MAX, &o->downloads)))
                return rc;
            break;
        case 'i':
            if ((rc = parse_seconds("--ping", optarg, &o->ping_s)))
                return rc;
            break;
        case 't':
            if ((rc = parse_count("--threads", optarg, 0, UINT_MAX, &o->threads)))
                return rc;
            break;
        case 'f':
            o->ferry = optarg;
            break;
        case 'w':
            if ((rc = parse_count("--proxy-workers", optarg, 1, 256, &o->proxy_workers)))
                return rc;
            break;
        case 'x': {
            const char *eq = strchr(optarg, '=');
            size_t len = strlen(extra);
            if (!eq || eq == optarg || len + strlen(optarg) + 4 >= extra_cap ||
                o->nproxy_set == sizeof(o->proxy_set) / sizeof(o->proxy_set[0]))
                return bad_value("--proxy-set", optarg);
            snprintf(extra + len, extra_cap - len, "%.*s = %s\n", (int)(eq - optarg), optarg,
                     eq + 1);
            o->proxy_set[o->nproxy_set++] = optarg;
            break;
        }
        case 'T':
            if ((rc = parse_count("--target-port", optarg, 1, 65535, &target_port)))
                return rc;
            break;
        case 'N':
            o->spread_src = false;
            break;
        case 'j':
            o->json = true;
            break;
        case 'B':
            o->blast = true;
            break;
        case 'G':
            o->echo_gro = false;
            break;
        case 'F':
            o->allow_failures = true;
            break;
        case 'U':
            if ((rc = parse_count("--rules", optarg, 0, UINT_MAX, &o->nrules)))
                return rc;
            break;
        case 'H':
            if (strcmp(optarg, "connect") == 0)
                o->http_proxy = HTTP_PROXY_CONNECT;
            else if (strcmp(optarg, "absolute") == 0)
                o->http_proxy = HTTP_PROXY_ABSOLUTE;
            else
                return bad_value("--http-proxy", optarg);
            break;
        case 'A':
            if (strcmp(optarg, "none") && strcmp(optarg, "plain") && strcmp(optarg, "argon2"))
                return bad_value("--auth", optarg);
            o->auth = optarg;
            break;
        case 'C': {
            unsigned ttl;
            if ((rc = parse_count("--auth-cachettl", optarg, 0, 86400, &ttl)))
                return rc;
            o->auth_cachettl_s = (int)ttl;
            break;
        }
        case 'h':
            fputs(usage, stdout);
            fputs(usage_options, stdout);
            fputs(usage_options2, stdout);
            return 0;
        default:
            fputs("Try 'ferry bench --help'.\n", stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
        fputs(usage_options, stderr);
        fputs(usage_options2, stderr);
        return 2;
    }
    o->scenario = argv[optind];
    if (optind + 1 < argc) {
        fprintf(stderr, "ferry bench: unexpected argument '%s'\n", argv[optind + 1]);
        return 2;
    }
    scenario_fn fn = NULL;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        if (!strcmp(o->scenario, scenarios[i].name))
            fn = scenarios[i].fn;
    if (!fn) {
        fprintf(stderr, "ferry bench: unknown scenario '%s'\nTry 'ferry bench --help'.\n",
                o->scenario);
        return 2;
    }
    bool is_tp = !strcmp(o->scenario, "throughput"), is_cn = !strcmp(o->scenario, "connections");
    bool is_udp = !strcmp(o->scenario, "udp");
    if (!set_conn)
        o->connections = is_cn ? 10000 : is_udp ? 16 : 8;
    if (is_udp && !set_payload)
        o->payload = 1200;
    if (!set_conc)
        o->concurrency = !strcmp(o->scenario, "handshakes") ? 32 : is_cn ? 256 : 8;
    if (o->http_proxy && (is_udp || o->mode == BENCH_DIRECT || o->mode == BENCH_RELAY)) {
        fputs("ferry bench: --http-proxy needs a proxy (self-hosted or --proxy) and a TCP "
              "scenario\n",
              stderr);
        return 2;
    }
    if (o->http_proxy == HTTP_PROXY_ABSOLUTE && strcmp(o->scenario, "requests") != 0) {
        fputs("ferry bench: --http-proxy absolute only makes sense for requests\n", stderr);
        return 2;
    }
    if (is_udp && o->mode == BENCH_RELAY) {
        fputs("ferry bench: udp needs a SOCKS5 proxy (or --direct), not a TCP relay\n", stderr);
        return 2;
    }
    char msg[160];
    if (bench_params_check(o, msg, sizeof(msg))) {
        fprintf(stderr, "ferry bench: %s\nTry 'ferry bench --help'.\n", msg);
        return 2;
    }
    if (o->mode == BENCH_RELAY && !target_port) {
        fputs("ferry bench: --relay needs --target-port (the port the relay forwards to)\n",
              stderr);
        return 2;
    }
    (void)is_tp;
    if (!strcmp(o->scenario, "rules")) {
        /* The decision alone: no proxy, no targets. */
        struct result *rr = calloc(o->runs, sizeof(*rr));
        if (!rr)
            return 1;
        char t[64], err[512] = "";
        snprintf(t, sizeof(t), "%u access rules (no proxy)", o->nrules);
        print_header(&b, t);
        unsigned k = 0;
        for (rc = 0; !rc && k < o->runs;) {
            bench_fail_reset(&b);
            rc = scenario_rules(&b, &rr[k]);
            k++;
            rc = run_outcome(&b, &rr[k - 1], k, rc, err, sizeof(err));
        }
        if (!rc || err[0])
            report(&b, t, rr, k, err[0] ? err : NULL);
        free(rr);
        return rc ? 1 : 0;
    }
    o->target_port = (uint16_t)target_port;
    o->progress = isatty(STDERR_FILENO) && !o->json;

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* Each held connection costs a client and an echo descriptor here, and
     * two in the proxy; leave room. */
    raise_nofile(MAX(65536ul, 4ul * o->connections + 4096));
    /* A connections run the open-files limit cannot hold would only end in
     * failed setups after a long wait: say so now (--allow-failures runs it
     * all the same and reports the shortfall). */
    struct rlimit nofile;
    if (is_cn && !o->allow_failures && getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
        nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < 2ull * o->connections + 256) {
        fprintf(stderr,
                "ferry bench: --connections %u needs about %llu open files here (a client and "
                "an echo descriptor each), and as many in the proxy; the limit is %llu and "
                "could not be raised (root without CAP_SYS_RESOURCE?): use --connections %llu "
                "or fewer, or --allow-failures to run it anyway\n",
                o->connections, 2ull * o->connections + 256, (unsigned long long)nofile.rlim_cur,
                (unsigned long long)(nofile.rlim_cur > 256 ? (nofile.rlim_cur - 256) / 2 : 0));
        return 1;
    }

    /* Enough echo ports that the proxy's outgoing connections (one source
     * address) do not run out of ephemeral ports. */
    unsigned ports = is_cn ? MIN(16u, 1 + o->connections / 20000) : 1;
    b.t = targets_start(o->target_port, ports, o->download_size, o->echo_gro);
    if (!b.t)
        return 1;

    char target[256];
    char a[ADDR_STRLEN];
    b.route.mode = o->mode;
    b.route.dst = *targets_echo(b.t, 0);
    b.route.spread_src = o->spread_src;
    b.route.http = o->http_proxy;
    if (strcmp(o->auth, "none") != 0) {
        b.route.user = BENCH_USER;
        b.route.pass = BENCH_PASS;
    }
    /* A connections run measures what holding connections costs a proxy
     * from cold; a second run on the same process would find its pools
     * warm and understate it. So each gets a fresh ferry. */
    bool restart = o->mode == BENCH_SELF && is_cn;
    switch (o->mode) {
    case BENCH_SELF: {
        if (strcmp(o->auth, "plain") == 0) {
            snprintf(sh.userlist, sizeof(sh.userlist), "%s:plain:%s", BENCH_USER, BENCH_PASS);
        } else if (strcmp(o->auth, "argon2") == 0) {
            char phc[FCRYPTO_PWHASH_MAX];
            if (fcrypto_init() ||
                fcrypto_pwhash(phc, BENCH_PASS, strlen(BENCH_PASS), FCRYPTO_PWHASH_OPS_DEFAULT,
                               FCRYPTO_PWHASH_MEM_DEFAULT)) {
                fputs("ferry bench: cannot hash the bench password\n", stderr);
                targets_stop(b.t);
                return 1;
            }
            snprintf(sh.userlist, sizeof(sh.userlist), "%s:%s", BENCH_USER, phc);
        }
        if (o->auth_cachettl_s >= 0)
            snprintf(sh.auth_extra, sizeof(sh.auth_extra), "cachettl = %d", o->auth_cachettl_s);
        if (self_start(&b, &sh)) {
            targets_stop(b.t);
            return 1;
        }
        if (restart && o->runs > 1)
            snprintf(target, sizeof(target), "ferry (self-hosted, a fresh one for each run)");
        else
            snprintf(target, sizeof(target), "ferry (self-hosted, pid %d) at %s", (int)sh.child.pid,
                     addr_format(&sh.child.addr, a, sizeof(a)));
        break;
    }
    case BENCH_PROXY:
    case BENCH_RELAY:
        b.route.via = o->proxy;
        memcpy(b.pids, o->proxy_pids, sizeof(b.pids));
        b.npids = o->nproxy_pids;
        snprintf(target, sizeof(target), "%s at %s%s", o->mode == BENCH_PROXY ? "proxy" : "relay",
                 addr_format(&o->proxy, a, sizeof(a)), b.npids ? "" : " (no --proxy-pid: no CPU)");
        break;
    case BENCH_DIRECT:
        snprintf(target, sizeof(target), "direct (no proxy)");
        break;
    }

    print_header(&b, target);
    struct result *runs = calloc(o->runs, sizeof(*runs));
    unsigned done = 0;
    char err[512] = ""; /* why a run failed, when it is still reported */
    rc = runs ? 0 : -ENOMEM;
    while (!rc && done < o->runs) {
        if (restart && done > 0) {
            rc = self_stop(&b, &sh);
            if (rc || (rc = self_start(&b, &sh)))
                break;
        }
        if (o->progress)
            fprintf(stderr, "\r\033[Krun %u/%u %s\n", done + 1, o->runs, o->scenario);
        struct result *r = &runs[done++];
        if (o->mode == BENCH_SELF) {
            r->proxy_pid = sh.child.pid;
            r->proxy = sh.child.addr;
        }
        bench_fail_reset(&b);
        rc = fn(&b, r);
        rc = run_outcome(&b, r, done, rc, err, sizeof(err));
    }
    if (!rc || err[0])
        report(&b, target, runs, done, err[0] ? err : NULL);
    free(runs);
    if (o->mode == BENCH_SELF) {
        int st = self_stop(&b, &sh);
        rc = rc ? rc : st;
    }
    targets_stop(b.t);
    return rc ? 1 : 0;
}
