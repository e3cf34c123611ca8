/*
 * bench/main.c: `ferry bench SCENARIO [options]`: options, the proxy under
 * test (a ferry child, --proxy, --relay or --direct), R runs of the
 * scenario, and the report (median, min and max of each figure; a table or
 * one JSON line).
 */
#include <errno.h>
#include <getopt.h>
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
    "Measure a SOCKS5 proxy. By default a ferry child is started on a free loopback\n"
    "port with its default configuration, and the targets (TCP echo, HTTP, UDP echo)\n"
    "run inside the bench; one command gives a number.\n"
    "\n"
    "Scenarios:\n"
    "  throughput    N streams pump --payload chunks to an echo and back; MiB/s each way\n"
    "  handshakes    full setups (connect, SOCKS5, 1 byte echoed, close); setups/s, latency\n"
    "  requests      one small HTTP request per new connection; req/s, latency; then\n"
    "                --downloads concurrent downloads of --download-size; MiB/s\n"
    "  connections   hold N concurrent connections; setup rate, proxy memory per connection\n"
    "  rules         the cost of one access-rule lookup with --rules N synthetic rules\n"
    "                (indexed and, for comparison, a plain scan); no proxy involved\n"
    "  udp           N clients, each with a UDP ASSOCIATE and one --payload datagram in\n"
    "                flight (lost after 100 ms): echoes/s, RTT, loss; --blast: unpaced\n"
    "\n"
    "What to measure:\n"
    "  (default)            a ferry child (this binary, or --ferry PATH)\n"
    "  --proxy ADDR:PORT    any SOCKS5 proxy; --proxy-pid PID[,PID...] adds its CPU and\n"
    "                       memory (summed over the processes listed)\n"
    "  --relay ADDR:PORT    a plain TCP relay already forwarding to the echo target\n"
    "                       (use with --target-port; no SOCKS, e.g. haproxy in TCP mode)\n"
    "  --direct             no proxy at all: this machine's limit\n"
    "\n"
    "Options:\n"
    "  --runs R             repeat R times, report median/min/max (default 3)\n"
    "  --duration S         measurement window in seconds (default 5)\n"
    "  --warmup S           seconds before the window, not counted (default 1)\n"
    "  --connections N      throughput streams (8), held connections (10000) or udp\n"
    "                       clients (16)\n"
    "  --concurrency W      setups in flight for handshakes (32), requests (8),\n"
    "                       connections (256)\n"
    "  --payload SIZE       throughput chunk size (default 64k); udp datagram payload\n"
    "                       (default 1200)\n"
    "  --blast              udp: send unpaced for the window; offered vs received pps\n"
    "  --rules N            rules: how many rules (default 1000)\n"
    "  --http-proxy MODE    requests (and throughput, handshakes): talk to the proxy as an\n"
    "                       HTTP proxy: connect (CONNECT tunnels) or absolute\n"
    "                       (GET http://host/path; requests only)\n"
    "  --requests N         measured requests (1000), after --warm-requests N (100)\n"
    "  --downloads L        concurrent large downloads (8) of --download-size (1m)\n"
    "  --ping S             connections: each sends 16 bytes every S seconds (off)\n"
    "  --threads T          load generator threads (default 1)\n"
    "  --ferry PATH         ferry binary to self-host (default: this one)\n"
    "  --proxy-workers N    workers of the self-hosted ferry (default: its own)\n"
    "  --proxy-set K=V      extra config line for the self-hosted ferry (repeatable)\n"
    "  --target-port P      fixed port for the echo target (default: any free port)\n"
    "  --no-spread          do not spread client source addresses over 127.0.0.0/8\n"
    "  --auth MODE          none (default), plain or argon2: authenticate with RFC 1929 as\n"
    "                       bench/benchpass; a self-hosted ferry gets a matching userlist\n"
    "  --auth-cachettl S    self-hosted ferry's auth.cachettl (0 disables the cache)\n"
    "  --json               print one JSON line with every figure and parameter\n"
    "  -h, --help           show this help\n";

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
    if (*v == '\0' || *end || !(d >= 0) || d > 86400)
        return bad_value(opt, v);
    *out = d;
    return 0;
}

static int parse_count(const char *opt, const char *v, uint64_t min, uint64_t max, unsigned *out)
{
    uint64_t n;
    if (parse_u64(v, min, max, &n))
        return bad_value(opt, v);
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

static void report(const struct bench *b, const char *target, struct result *runs, unsigned nruns)
{
    const struct bench_opts *o = &b->o;
    const struct result *first = &runs[0];
    double v[MAX_RUNS];
    if (o->json) {
        printf("{\"scenario\":\"%s\",\"mode\":\"%s\",\"target\":", o->scenario, mode_name(o->mode));
        print_json_string(target);
        printf(",\"version\":\"%s\",\"params\":{\"runs\":%u,\"duration_s\":%g,\"warmup_s\":%g,"
               "\"connections\":%u,\"concurrency\":%u,\"payload\":%zu,\"requests\":%u,"
               "\"warm_requests\":%u,\"downloads\":%u,\"download_size\":%zu,\"ping_s\":%g,"
               "\"threads\":%u,\"proxy_workers\":%u,\"spread_src\":%s,\"auth\":\"%s\","
               "\"auth_cachettl_s\":%d,\"blast\":%s,\"http_proxy\":\"%s\"},\"metrics\":{",
               FERRY_VERSION, o->runs, o->duration_s, o->warmup_s, o->connections, o->concurrency,
               o->payload, o->requests, o->warm_requests, o->downloads, o->download_size, o->ping_s,
               o->threads, o->proxy_workers, o->spread_src ? "true" : "false", o->auth,
               o->auth_cachettl_s, o->blast ? "true" : "false",
               o->http_proxy == HTTP_PROXY_CONNECT    ? "connect"
               : o->http_proxy == HTTP_PROXY_ABSOLUTE ? "absolute"
                                                      : "none");
        for (size_t i = 0; i < first->n; i++) {
            for (unsigned r = 0; r < nruns; r++)
                v[r] = i < runs[r].n ? runs[r].m[i].v : 0;
            printf("%s\"%s\":{\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"unit\":\"%s\","
                   "\"runs\":[",
                   i ? "," : "", first->m[i].name, stats_median(v, nruns), stats_min(v, nruns),
                   stats_max(v, nruns), first->m[i].unit);
            for (unsigned r = 0; r < nruns; r++)
                printf("%s%.6g", r ? "," : "", v[r]);
            printf("]}");
        }
        printf("},\"notes\":[");
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
    printf("ferry bench %s: %s\n", o->scenario, target);
    printf("  runs %u, warm-up %gs, window %gs, threads %u", o->runs, o->warmup_s, o->duration_s,
           o->threads);
    if (!strcmp(o->scenario, "throughput"))
        printf(", connections %u, payload %zu", o->connections, o->payload);
    else if (!strcmp(o->scenario, "handshakes"))
        printf(", concurrency %u, auth %s", o->concurrency, o->auth);
    else if (!strcmp(o->scenario, "requests"))
        printf(", concurrency %u, requests %u (+%u warm-up), downloads %u x %zu", o->concurrency,
               o->requests, o->warm_requests, o->downloads, o->download_size);
    else if (!strcmp(o->scenario, "udp"))
        printf(", clients %u, payload %zu%s", o->connections, o->payload,
               o->blast ? ", blast" : "");
    else if (!strcmp(o->scenario, "connections"))
        printf(", connections %u, concurrency %u, ping %gs", o->connections, o->concurrency,
               o->ping_s);
    printf("\n\n  %-26s %12s %12s %12s  %s\n", "figure", "median", "min", "max", "unit");
    for (size_t i = 0; i < first->n; i++) {
        for (unsigned r = 0; r < nruns; r++)
            v[r] = i < runs[r].n ? runs[r].m[i].v : 0;
        printf("  %-26s %12.2f %12.2f %12.2f  %s\n", first->m[i].name, stats_median(v, nruns),
               stats_min(v, nruns), stats_max(v, nruns), first->m[i].unit);
    }
    for (unsigned r = 0; r < nruns; r++)
        if (runs[r].note[0])
            printf("  note (run %u): %s\n", r + 1, runs[r].note);
    fflush(stdout);
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
        {"http-proxy", required_argument, NULL, 'H'},
        {"rules", required_argument, NULL, 'U'},
        {"auth", required_argument, NULL, 'A'},
        {"auth-cachettl", required_argument, NULL, 'C'},
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
    o->ferry = "/proc/self/exe";
    o->auth = "none";
    o->nrules = 1000;
    o->auth_cachettl_s = -1;
    bool set_conn = false, set_conc = false, set_payload = false;
    char extra[4096] = "";
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
            if ((rc = parse_count("--runs", optarg, 1, MAX_RUNS, &o->runs)))
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
            if ((rc = parse_count("--connections", optarg, 1, 1000000, &o->connections)))
                return rc;
            set_conn = true;
            break;
        case 'c':
            if ((rc = parse_count("--concurrency", optarg, 1, 100000, &o->concurrency)))
                return rc;
            set_conc = true;
            break;
        case 's':
        case 'S':
            if (parse_size(optarg, ch == 's' ? 1 : 0, ch == 's' ? PATTERN_SLACK : (1ull << 40), &n))
                return bad_value(ch == 's' ? "--payload" : "--download-size", optarg);
            if (ch == 's') {
                o->payload = (size_t)n;
                set_payload = true;
            } else {
                o->download_size = (size_t)n;
            }
            break;
        case 'q':
            if ((rc = parse_count("--requests", optarg, 1, 100000000, &o->requests)))
                return rc;
            break;
        case 'Q':
            if ((rc = parse_count("--warm-requests", optarg, 0, 100000000, &o->warm_requests)))
                return rc;
            break;
        case 'L':
            if ((rc = parse_count("--downloads", optarg, 1, 10000, &o->downloads)))
                return rc;
            break;
        case 'i':
            if ((rc = parse_seconds("--ping", optarg, &o->ping_s)))
                return rc;
            break;
        case 't':
            if ((rc = parse_count("--threads", optarg, 1, 64, &o->threads)))
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
            if (!eq || eq == optarg || len + strlen(optarg) + 4 >= sizeof(extra))
                return bad_value("--proxy-set", optarg);
            snprintf(extra + len, sizeof(extra) - len, "%.*s = %s\n", (int)(eq - optarg), optarg,
                     eq + 1);
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
        case 'U':
            if ((rc = parse_count("--rules", optarg, 0, 10000000, &o->nrules)))
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
            return 0;
        default:
            fputs("Try 'ferry bench --help'.\n", stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fputs(usage, stderr);
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
    if (is_udp && (o->payload < 12 || o->payload > 65507 - 22)) {
        fputs("ferry bench: udp: --payload must be 12..65485 bytes\n", stderr);
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
        unsigned k = 0;
        for (rc = 0; !rc && k < o->runs; k++)
            rc = scenario_rules(&b, &rr[k]);
        if (!rc) {
            char t[64];
            snprintf(t, sizeof(t), "%u access rules (no proxy)", o->nrules);
            report(&b, t, rr, k);
        }
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

    /* Enough echo ports that the proxy's outgoing connections (one source
     * address) do not run out of ephemeral ports. */
    unsigned ports = is_cn ? MIN(16u, 1 + o->connections / 20000) : 1;
    b.t = targets_start(o->target_port, ports, o->download_size);
    if (!b.t)
        return 1;

    struct child child = {0};
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
    switch (o->mode) {
    case BENCH_SELF: {
        char userlist[FCRYPTO_PWHASH_MAX + 64] = "", auth_extra[64] = "";
        if (strcmp(o->auth, "plain") == 0) {
            snprintf(userlist, sizeof(userlist), "%s:plain:%s", BENCH_USER, BENCH_PASS);
        } else if (strcmp(o->auth, "argon2") == 0) {
            char phc[FCRYPTO_PWHASH_MAX];
            if (fcrypto_init() ||
                fcrypto_pwhash(phc, BENCH_PASS, strlen(BENCH_PASS), FCRYPTO_PWHASH_OPS_DEFAULT,
                               FCRYPTO_PWHASH_MEM_DEFAULT)) {
                fputs("ferry bench: cannot hash the bench password\n", stderr);
                targets_stop(b.t);
                return 1;
            }
            snprintf(userlist, sizeof(userlist), "%s:%s", BENCH_USER, phc);
        }
        if (o->auth_cachettl_s >= 0)
            snprintf(auth_extra, sizeof(auth_extra), "cachettl = %d", o->auth_cachettl_s);
        rc = child_start(&child, o->ferry, o->proxy_workers, extra, userlist[0] ? userlist : NULL,
                         auth_extra);
        if (rc) {
            fprintf(stderr, "ferry bench: cannot start %s: %s\n", o->ferry, strerror(-rc));
            targets_stop(b.t);
            return 1;
        }
        b.route.via = child.addr;
        b.pids[0] = child.pid;
        b.npids = 1;
        snprintf(target, sizeof(target), "ferry (self-hosted, pid %d) at %s", (int)child.pid,
                 addr_format(&child.addr, a, sizeof(a)));
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

    struct result *runs = calloc(o->runs, sizeof(*runs));
    unsigned done = 0;
    rc = runs ? 0 : -ENOMEM;
    for (; !rc && done < o->runs; done++) {
        if (o->progress)
            fprintf(stderr, "\r\033[Krun %u/%u %s\n", done + 1, o->runs, o->scenario);
        rc = fn(&b, &runs[done]);
        if (rc)
            fprintf(stderr, "ferry bench: run %u failed: %s%s%s\n", done + 1, strerror(-rc),
                    runs[done].note[0] ? ": " : "", runs[done].note);
    }
    if (!rc)
        report(&b, target, runs, done);
    free(runs);
    if (o->mode == BENCH_SELF) {
        int st = child_stop(&child);
        if (st != 0 && !rc) {
            fprintf(stderr, "ferry bench: the self-hosted ferry exited with status %d\n", st);
            rc = -ECHILD;
        }
    }
    targets_stop(b.t);
    return rc ? 1 : 0;
}
