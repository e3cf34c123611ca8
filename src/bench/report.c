/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/report.c: what `ferry bench` prints on stdout. In table mode, a
 * header before the first run (the scenario, what is measured, the
 * parameters the scenario uses) and a table after the last (median, min
 * and max of each figure, then notes, shortfalls and the failure); with
 * --json, one line with every figure of every run, every parameter, the
 * arguments as given and the builds of the bench and of the ferry it ran.
 *
 * Only printing: which runs passed is result.c's verdict, handed in; the
 * one thing done besides is asking git which commit a binary was built
 * from (build_info).
 */
#include "bench/report.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/edge.h"
#include "bench/options.h"
#include "bench/proc.h"
#include "bench/stats.h"
#include "util/parse.h"
#include "version.h"

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

static const char *https_proxy_name(uint8_t m)
{
    return m == HTTPS_PROXY_H1 ? "h1" : m == HTTPS_PROXY_H2 ? "h2" : "none";
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

/* The machine a report was made on. */
struct host_info {
    char cpu[128];  /* "model name" of /proc/cpuinfo, or "unknown" */
    unsigned cores; /* online */
    char sys[32], release[96], version[128], machine[32]; /* uname(2) */
};

static void host_info(struct host_info *h)
{
    memset(h, 0, sizeof(*h));
    snprintf(h->cpu, sizeof(h->cpu), "unknown");
    FILE *f = fopen("/proc/cpuinfo", "re");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon)
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        (void)str_copy(h->cpu, sizeof(h->cpu), colon);
        break;
    }
    if (f)
        fclose(f);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    h->cores = n > 0 ? (unsigned)n : 0;
    struct utsname u;
    if (uname(&u) == 0) {
        (void)str_copy(h->sys, sizeof(h->sys), u.sysname);
        (void)str_copy(h->release, sizeof(h->release), u.release);
        (void)str_copy(h->version, sizeof(h->version), u.version);
        (void)str_copy(h->machine, sizeof(h->machine), u.machine);
    }
}

/* "timestamp" (UTC, ISO 8601, when the report was made) and "host". */
static void json_host(void)
{
    char ts[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct host_info h;
    host_info(&h);
    printf(",\"timestamp\":");
    print_json_string(ts);
    printf(",\"host\":{\"cpu\":");
    print_json_string(h.cpu);
    printf(",\"cores\":%u,\"kernel\":{\"sysname\":", h.cores);
    print_json_string(h.sys);
    printf(",\"release\":");
    print_json_string(h.release);
    printf(",\"version\":");
    print_json_string(h.version);
    printf(",\"machine\":");
    print_json_string(h.machine);
    printf("}}");
}

/* ---- the header ---------------------------------------------------------- */

/* The parameters in shows (SCP_*), in their order. */
static void print_params(const struct bench_opts *o, unsigned shows)
{
    if (shows & SCP_WARMUP)
        printf(", warm-up %gs", o->warmup_s);
    if (shows & SCP_WINDOW)
        printf(", window %gs", o->duration_s);
    if (shows & SCP_HOLD)
        printf(", hold %gs", o->duration_s);
    if (shows & SCP_WINDOW_EACH)
        printf(", window %gs per lookup kind", o->duration_s);
    if (shows & SCP_THREADS)
        printf(", threads %u", o->threads);
    if (shows & SCP_CONNECTIONS)
        printf(", connections %u", o->connections);
    if (shows & SCP_CLIENTS)
        printf(", clients %u", o->connections);
    if (shows & SCP_CONCURRENCY)
        printf(", concurrency %u", o->concurrency);
    if (shows & SCP_REQUESTS)
        printf(", requests %u (+%u warm-up)", o->requests, o->warm_requests);
    if (shows & SCP_DOWNLOADS)
        printf(", downloads %u x %zu B", o->downloads, o->download_size);
    if (shows & SCP_PAYLOAD)
        printf(", payload %zu B", o->payload);
    if (o->rate > 0)
        printf(", rate %g/s (open loop: latency from the scheduled time)", o->rate);
    if (o->direction == DIR_UP)
        printf(", direction up (client -> sink, counted at the sink)");
    else if (o->direction == DIR_DOWN)
        printf(", direction down (source -> client, counted at the client)");
    if ((shows & SCP_PING) && o->ping_s > 0)
        printf(", ping every %gs", o->ping_s);
    else if (shows & SCP_PING)
        printf(", ping off");
    if (shows & SCP_UDP_MODES)
        printf("%s%s", o->blast ? ", blast" : "", o->echo_gro ? "" : ", echo without GRO");
    if (shows & SCP_RULES)
        printf(", rules %u", o->nrules);
    if ((shows & SCP_EDGE) && o->hold)
        printf(", hold %u", o->hold);
}

void bench_report_header(const struct bench *b, const char *target)
{
    const struct bench_opts *o = &b->o;
    const struct bench_scenario *sc = bench_scenario_find(o->scenario);
    if (o->json || !sc)
        return;
    bool in_process = sc->flags & SCF_NO_PROXY;
    bool self = o->mode == BENCH_SELF && !in_process && !o->has_edge_target;
    printf("ferry bench %s: %s\n", o->scenario, target);
    printf("  runs %u", o->runs);
    print_params(o, sc->shows);
    if (!in_process && strcmp(o->auth, "none") != 0)
        printf(", auth %s", o->auth);
    if (o->https_proxy)
        printf(", https proxy %s (TLS 1.3, %s)", https_proxy_name(o->https_proxy),
               self           ? "self-signed, pinned"
               : o->proxy_pin ? "pinned"
                              : "CA-verified");
    if (o->http_proxy)
        printf(", http proxy %s", http_proxy_name(o->http_proxy));
    if (o->stalled)
        printf(", + %u stalled stream%s", o->stalled, o->stalled == 1 ? "" : "s");
    if (self && o->chain > 1)
        printf(", chain %u", o->chain);
    if (self && o->tunnel)
        printf(", tunnel %s (client and server pinned, TLS 1.3; CPU and memory of both)",
               o->tunnel == TUNNEL_WSS ? "wss" : "h2");
    for (unsigned i = 0; i < o->nproxy_set && self; i++)
        printf(", %s", o->proxy_set[i]);
    if (o->allow_failures)
        printf(", failures allowed");
    if (o->has_target) {
        char a[ADDR_STRLEN];
        printf(", target %s (a ferry bench sink)", addr_format(&o->target, a, sizeof(a)));
    }
    struct host_info h;
    host_info(&h);
    printf("\n  host: %s, %u cores, %s %s (%s)\n\n", h.cpu, h.cores, h.sys, h.release, h.machine);
    fflush(stdout);
}

/* ---- JSON ---------------------------------------------------------------- */

/* What the line starts with: the verdict, what was measured, the builds
 * (fi: of the self-hosted ferry, or NULL) and the arguments as given. */
static void json_head(const struct bench *b, bool in_process, const char *target, const char *error,
                      const struct build_info *bi, const struct build_info *fi)
{
    const struct bench_opts *o = &b->o;
    printf("{\"scenario\":\"%s\",\"mode\":\"%s\",\"ok\":%s", o->scenario,
           in_process           ? "none"
           : o->has_edge_target ? "edge-target"
                                : mode_name(o->mode),
           error ? "false" : "true");
    if (error) {
        printf(",\"error\":");
        print_json_string(error);
    }
    printf(",\"target\":");
    print_json_string(target);
    printf(",\"version\":\"%s\"", FERRY_VERSION);
    json_host();
    print_build_json("bench_build", bi);
    if (fi)
        print_build_json("ferry_build", fi);
    printf(",\"args\":[");
    for (int i = 0; i < o->argc; i++) {
        if (i)
            putchar(',');
        print_json_string(o->argv[i]);
    }
    printf("]%s,", o->argc < o->argv_total ? ",\"args_truncated\":true" : "");
}

/* "params": every parameter, used by the scenario or not. */
static void json_params(const struct bench_opts *o, const struct bench_scenario *sc,
                        const struct build_info *fi)
{
    char a[ADDR_STRLEN];
    printf("\"params\":{\"runs\":%u,\"duration_s\":%g,\"warmup_s\":%g,"
           "\"connections\":%u,\"concurrency\":%u,\"payload\":%zu,\"requests\":%u,"
           "\"warm_requests\":%u,\"downloads\":%u,\"download_size\":%zu,\"ping_s\":%g,"
           "\"threads\":%u,\"proxy_workers\":%u,\"spread_src\":%s,\"auth\":\"%s\","
           "\"auth_cachettl_s\":%d,\"blast\":%s,\"echo_gro\":%s,\"http_proxy\":\"%s\","
           "\"https_proxy\":\"%s\",\"stalled\":%u,\"target_port\":%u,\"allow_failures\":%s",
           o->runs, o->duration_s, o->warmup_s, o->connections, o->concurrency, o->payload,
           o->requests, o->warm_requests, o->downloads, o->download_size, o->ping_s, o->threads,
           o->proxy_workers, o->spread_src ? "true" : "false", o->auth, o->auth_cachettl_s,
           o->blast ? "true" : "false", o->echo_gro ? "true" : "false",
           http_proxy_name(o->http_proxy), https_proxy_name(o->https_proxy), o->stalled,
           (unsigned)o->target_port, o->allow_failures ? "true" : "false");
    if (sc->shows & SCP_RULES)
        printf(",\"rules\":%u", o->nrules);
    if (sc->shows & SCP_EDGE) {
        printf(",\"hello\":\"%s\",\"hold\":%u", edge_hello_name(o->edge_hello), o->hold);
        if (o->has_edge_target) {
            printf(",\"edge_target\":");
            print_json_string(addr_format(&o->edge_target, a, sizeof(a)));
        }
    }
    static const char *const dirs[] = {"both", "up", "down"};
    printf(",\"rate\":%g,\"direction\":\"%s\"", o->rate, dirs[o->direction % 3]);
    if (o->has_target) {
        printf(",\"target\":");
        print_json_string(addr_format(&o->target, a, sizeof(a)));
    }
    if (fi) {
        printf(",\"chain\":%u", o->chain); /* ferries in a row, the bench's own */
        printf(",\"tunnel\":\"%s\"", o->tunnel == TUNNEL_H2    ? "h2"
                                     : o->tunnel == TUNNEL_WSS ? "wss"
                                                               : "none");
        printf(",\"ferry\":"); /* resolved: the default is /proc/self/exe */
        print_json_string(fi->path);
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
}

/* "metrics": each figure of the first run, over every run. */
static void json_metrics(const struct result *runs, unsigned nruns)
{
    const struct result *first = &runs[0];
    double v[BENCH_MAX_RUNS];
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
}

/* "shortfalls" (what runs missed of their parameters, failed or allowed;
 * only when there are any) and "notes". */
static void json_notes(const struct result *runs, unsigned nruns)
{
    bool anysf = false;
    for (unsigned r = 0; r < nruns; r++)
        anysf = anysf || runs[r].shortfall[0];
    if (anysf) {
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
    printf("]");
}

static void report_json(const struct bench *b, const struct bench_scenario *sc, const char *target,
                        const struct result *runs, unsigned nruns, const char *error,
                        unsigned mem_src)
{
    const struct bench_opts *o = &b->o;
    bool in_process = sc->flags & SCF_NO_PROXY;
    /* an in-process scenario runs no proxy; --edge-target measures another's */
    bool self = o->mode == BENCH_SELF && !in_process && !o->has_edge_target;
    static struct build_info bi, fi; /* PATH_MAX each: not on the stack */
    build_info("/proc/self/exe", true, &bi);
    if (self && !strcmp(o->ferry, "/proc/self/exe"))
        fi = bi;
    else if (self)
        build_info(o->ferry, false, &fi);
    json_head(b, in_process, target, error, &bi, self ? &fi : NULL);
    json_params(o, sc, self ? &fi : NULL);
    if (self) {
        char a[ADDR_STRLEN];
        printf(",\"proxy_instances\":[");
        for (unsigned r = 0; r < nruns; r++) {
            printf("%s{\"run\":%u,\"pid\":%d,\"addr\":", r ? "," : "", r + 1,
                   (int)runs[r].hop[0].pid);
            print_json_string(addr_format(&runs[r].hop[0].addr, a, sizeof(a)));
            printf(",\"chain\":[");
            for (unsigned i = 0; i < runs[r].nhops; i++) {
                printf("%s{\"pid\":%d,\"addr\":", i ? "," : "", (int)runs[r].hop[i].pid);
                print_json_string(addr_format(&runs[r].hop[i].addr, a, sizeof(a)));
                putchar('}');
            }
            printf("]}");
        }
        putchar(']');
    }
    if (mem_src)
        printf(",\"mem_source\":\"%s\"", mem_source_name(mem_src));
    json_metrics(runs, nruns);
    json_notes(runs, nruns);
    printf("}\n");
    fflush(stdout);
}

/* ---- the table ----------------------------------------------------------- */

static void report_table(const struct bench *b, bool self, const struct result *runs,
                         unsigned nruns, const char *error, unsigned mem_src)
{
    const struct result *first = &runs[0];
    double v[BENCH_MAX_RUNS];
    char a[ADDR_STRLEN];
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
    if (self && nruns > 1 && (runs[0].hop[0].pid != runs[nruns - 1].hop[0].pid))
        for (unsigned r = 0; r < nruns; r++) {
            printf("  run %u: ferry pid %d at %s", r + 1, (int)runs[r].hop[0].pid,
                   addr_format(&runs[r].hop[0].addr, a, sizeof(a)));
            for (unsigned i = 1; i < runs[r].nhops; i++)
                printf(" -> pid %d at %s", (int)runs[r].hop[i].pid,
                       addr_format(&runs[r].hop[i].addr, a, sizeof(a)));
            putchar('\n');
        }
    for (unsigned r = 0; r < nruns; r++)
        if (runs[r].note[0])
            printf("  note (run %u): %s\n", r + 1, runs[r].note);
    for (unsigned r = 0; r < nruns; r++)
        if (runs[r].shortfall[0] && !(error && !strcmp(error, runs[r].shortfall)))
            printf("  SHORTFALL (run %u%s): %s\n", r + 1,
                   b->o.allow_failures ? ", allowed by --allow-failures" : "", runs[r].shortfall);
    if (error)
        printf("  FAILED (run %u): %s\n", nruns, error);
    fflush(stdout);
}

void bench_report(const struct bench *b, const char *target, const struct result *runs,
                  unsigned nruns, const char *error)
{
    const struct bench_opts *o = &b->o;
    const struct bench_scenario *sc = bench_scenario_find(o->scenario);
    if (!sc || nruns == 0)
        return;
    unsigned mem_src = 0;
    for (unsigned r = 0; r < nruns; r++)
        mem_src |= runs[r].mem_src;
    if (o->json) {
        report_json(b, sc, target, runs, nruns, error, mem_src);
        return;
    }
    /* The table mode printed target before the runs (bench_report_header). */
    bool self = o->mode == BENCH_SELF && !(sc->flags & SCF_NO_PROXY) && !o->has_edge_target;
    report_table(b, self, runs, nruns, error, mem_src);
}
