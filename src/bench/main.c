/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/main.c: `ferry bench SCENARIO [options]`, the driver. It has the
 * command line read (options.c), sets up what is measured (a ferry child,
 * --chain N of them in a row or a --tunnel's client and server, --proxy,
 * --relay or --direct, and the targets), runs the scenario R
 * times, has each run judged (result.c) and the runs reported (report.c),
 * and stops what it started.
 *
 * The top of the bench room: nothing in bench/ calls into it. It knows no
 * scenario by name (the scenario table says what each needs) and prints
 * no figures itself.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/options.h"
#include "bench/proc.h"
#include "bench/report.h"
#include "config/outbound.h"
#include "crypto/fcrypto.h"
#include "tls/tls.h"
#include "util/compiler.h"

/* The credentials of --auth (RFC 1929); a self-hosted ferry gets a userlist
 * holding them, an external proxy must know them. */
#define BENCH_USER "bench"
#define BENCH_PASS "benchpass"

/* The self-hosted ferries: bench_hops() of them in a row (hop 0 is the one
 * the clients talk to; the last dials the targets): --chain N, or with
 * --tunnel the client (hop 0) and the server (hop 1). Their configuration
 * is kept to start them again. */
struct self_host {
    struct child hop[BENCH_MAX_CHAIN];
    unsigned running;  /* how many of hop[] run: hop[n - running ..] */
    const char *extra; /* --proxy-set lines (struct bench_cli), for every hop */
    char userlist[FCRYPTO_PWHASH_MAX + 64];
    char auth_extra[64];
};

static int self_stop(struct bench *b, struct self_host *sh);

/* --https-proxy: the clients' TLS context, verifying the proxy by pin (a
 * self-hosted ferry's, or --proxy-pin) or by the CA file (--proxy-cacert:
 * the certificate must name the proxy's address); it replaces the one
 * before (a restarted ferry has a new certificate). Between runs only: no
 * client uses it meanwhile. Returns 0, or 1 (told). */
static int route_tls(struct bench *b, const char *ca_file, const char *pin_text)
{
    uint8_t pin[TLS_PIN_LEN];
    if (pin_text && outbound_pin_parse(pin_text, pin)) {
        fprintf(stderr, "ferry bench: bad pin '%s'\n", pin_text);
        return 1;
    }
    struct tls_client_conf tc = {
        .pin = pin_text ? pin : NULL,
        .ca_file = ca_file,
        /* h2 alone: a proxy without it fails clearly rather than falling back */
        .alpn = b->o.https_proxy == HTTPS_PROXY_H2 ? "h2" : "http/1.1"};
    char err[256];
    struct tls_ctx *ctx = tls_client_ctx_new(&tc, err, sizeof(err));
    if (!ctx) {
        fprintf(stderr, "ferry bench: TLS to the proxy: %s\n", err);
        return 1;
    }
    tls_ctx_free(b->route.tls);
    b->route.tls = ctx;
    addr_format_ip(&b->route.via, b->route.tls_host, sizeof(b->route.tls_host));
    return 0;
}

/* Start the chain from its end: each ferry but the last needs the address
 * of the next, known once that one listens (and with --tunnel the pin of
 * the server's certificate, made as it starts). Only the first
 * authenticates the clients (--auth): the hops behind it take whatever it
 * sends on. */
static int self_start(struct bench *b, struct self_host *sh)
{
    const struct bench_opts *o = &b->o;
    unsigned n = bench_hops(o);
    for (unsigned k = 0; k < n; k++) {
        unsigned i = n - 1 - k;
        struct child_conf cc = {
            .workers = o->proxy_workers,
            .extra = sh->extra,
            .next = i + 1 < n ? &sh->hop[i + 1].addr : NULL,
            .next_pin = o->tunnel && i + 1 < n ? sh->hop[i + 1].pin : NULL,
            .userlist = i == 0 && sh->userlist[0] ? sh->userlist : NULL,
            .auth_extra = sh->auth_extra,
            .tls = (i == 0 && o->https_proxy) || (o->tunnel && i == n - 1),
            .ws_path = o->tunnel == TUNNEL_WSS ? BENCH_WS_PATH : NULL,
        };
        int rc = child_start(&sh->hop[i], o->ferry, &cc);
        if (rc) {
            if (o->tunnel)
                fprintf(stderr, "ferry bench: cannot start %s (the tunnel's %s): %s\n", o->ferry,
                        i == 0 ? "client" : "server", strerror(-rc));
            else if (n > 1)
                fprintf(stderr, "ferry bench: cannot start %s (ferry %u of a chain of %u): %s\n",
                        o->ferry, i + 1, n, strerror(-rc));
            else
                fprintf(stderr, "ferry bench: cannot start %s: %s\n", o->ferry, strerror(-rc));
            child_stop(&sh->hop[i]); /* its temporary directory */
            self_stop(b, sh);
            return rc;
        }
        sh->running++;
        b->pids[i] = sh->hop[i].pid;
    }
    b->route.via = sh->hop[0].addr;
    b->npids = n;
    if (o->https_proxy && route_tls(b, NULL, sh->hop[0].pin)) {
        self_stop(b, sh);
        return -EPROTO;
    }
    return 0;
}

/* Stop them, the first first (no new sessions while the hops behind it
 * go); a non-zero exit status of any is a failure of the run they served. */
static int self_stop(struct bench *b, struct self_host *sh)
{
    unsigned n = bench_hops(&b->o), bad = 0;
    int first_status = 0;
    for (unsigned i = n - sh->running; i < n; i++) {
        int st = child_stop(&sh->hop[i]);
        if (st != 0 && !bad) {
            bad = i + 1;
            first_status = st;
        }
    }
    sh->running = 0;
    b->npids = 0;
    if (bad && b->o.tunnel) {
        fprintf(stderr, "ferry bench: the tunnel's self-hosted %s exited with status %d\n",
                bad == 1 ? "client" : "server", first_status);
        return -ECHILD;
    }
    if (bad && n > 1) {
        fprintf(stderr,
                "ferry bench: self-hosted ferry %u of the chain of %u exited with status %d\n", bad,
                n, first_status);
        return -ECHILD;
    }
    if (bad) {
        fprintf(stderr, "ferry bench: the self-hosted ferry exited with status %d\n", first_status);
        return -ECHILD;
    }
    return 0;
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

/* A scenario that runs in this process (rules: no proxy, no targets) or
 * that starts what it measures itself (edge). */
static int run_in_process(struct bench *b, const struct bench_scenario *sc)
{
    const struct bench_opts *o = &b->o;
    struct result *rr = calloc(o->runs, sizeof(*rr));
    if (!rr)
        return 1;
    char t[256], err[512] = "";
    if (sc->describe)
        sc->describe(o, t, sizeof(t));
    else
        snprintf(t, sizeof(t), "%u access rules (no proxy)", o->nrules);
    bench_report_header(b, t);
    unsigned k = 0;
    int rc;
    for (rc = 0; !rc && k < o->runs;) {
        bench_fail_reset(b);
        rc = sc->run(b, &rr[k]);
        k++;
        rc = result_verdict(b, &rr[k - 1], k, rc, err, sizeof(err));
    }
    if (!rc || err[0])
        bench_report(b, t, rr, k, err[0] ? err : NULL);
    free(rr);
    return rc ? 1 : 0;
}

/* This process, ready for the load: SIGPIPE ignored, the open-files limit
 * raised. Returns 0, or 1 after telling why the connections asked for
 * cannot be held. */
static int prepare_process(const struct bench_opts *o, const struct bench_scenario *sc)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    /* Each held connection costs a client and an echo descriptor here, and
     * two in the proxy; leave room. */
    raise_nofile(MAX(65536ul, 4ul * MAX(o->connections, o->hold) + 4096));
    /* A connections run the open-files limit cannot hold would only end in
     * failed setups after a long wait: say so now (--allow-failures runs it
     * all the same and reports the shortfall). */
    struct rlimit nofile;
    if ((sc->flags & SCF_HOLDS) && !o->allow_failures && getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
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
    return 0;
}

/* "N ferries in a row (self-hosted): pid P at ADDR -> pid P at ADDR ...". */
static void chain_words(const struct self_host *sh, unsigned n, char *out, size_t cap)
{
    char a[ADDR_STRLEN];
    int len = snprintf(out, cap, "%u ferries in a row (self-hosted):", n);
    for (unsigned i = 0; i < n && len > 0 && (size_t)len < cap; i++)
        len += snprintf(out + len, cap - (size_t)len, "%s pid %d at %s", i ? " ->" : "",
                        (int)sh->hop[i].pid, addr_format(&sh->hop[i].addr, a, sizeof(a)));
}

/* "ferry tunnel h2 (self-hosted): client pid P, SOCKS5 at ADDR -> server
 * pid P at tls://ADDR" (wss: "... HTTP/2 in a WebSocket + TLS 1.3 ..."). */
static void tunnel_words(const struct self_host *sh, bool wss, char *out, size_t cap)
{
    char a[ADDR_STRLEN], b[ADDR_STRLEN];
    snprintf(out, cap,
             "ferry tunnel %s (self-hosted): client pid %d, SOCKS5 at %s -> HTTP/2%s + TLS 1.3 "
             "-> server pid %d at tls://%s%s",
             wss ? "wss" : "h2", (int)sh->hop[0].pid, addr_format(&sh->hop[0].addr, a, sizeof(a)),
             wss ? " in a WebSocket" : "", (int)sh->hop[1].pid,
             addr_format(&sh->hop[1].addr, b, sizeof(b)), wss ? BENCH_WS_PATH : "");
}

/* Start the self-hosted ferry, with a userlist for --auth; target := it in
 * words. Returns 0, or 1 (told on stderr). */
static int self_setup(struct bench *b, struct self_host *sh, bool restart, char *target, size_t cap)
{
    const struct bench_opts *o = &b->o;
    char a[ADDR_STRLEN];
    if (strcmp(o->auth, "plain") == 0) {
        snprintf(sh->userlist, sizeof(sh->userlist), "%s:plain:%s", BENCH_USER, BENCH_PASS);
    } else if (strcmp(o->auth, "argon2") == 0) {
        char phc[FCRYPTO_PWHASH_MAX];
        if (fcrypto_init() ||
            fcrypto_pwhash(phc, BENCH_PASS, strlen(BENCH_PASS), FCRYPTO_PWHASH_OPS_DEFAULT,
                           FCRYPTO_PWHASH_MEM_DEFAULT)) {
            fputs("ferry bench: cannot hash the bench password\n", stderr);
            return 1;
        }
        snprintf(sh->userlist, sizeof(sh->userlist), "%s:%s", BENCH_USER, phc);
    }
    if (o->auth_cachettl_s >= 0)
        snprintf(sh->auth_extra, sizeof(sh->auth_extra), "cachettl = %d", o->auth_cachettl_s);
    if (self_start(b, sh))
        return 1;
    if (restart && o->runs > 1 && o->tunnel)
        snprintf(target, cap,
                 "ferry tunnel %s (self-hosted client and server, a fresh pair "
                 "for each run)",
                 o->tunnel == TUNNEL_WSS ? "wss" : "h2");
    else if (o->tunnel)
        tunnel_words(sh, o->tunnel == TUNNEL_WSS, target, cap);
    else if (restart && o->runs > 1 && o->chain > 1)
        snprintf(target, cap, "%u ferries in a row (self-hosted, fresh ones for each run)",
                 o->chain);
    else if (restart && o->runs > 1)
        snprintf(target, cap, "ferry (self-hosted, a fresh one for each run)");
    else if (o->chain == 1)
        snprintf(target, cap, "ferry (self-hosted, pid %d) at %s", (int)sh->hop[0].pid,
                 addr_format(&sh->hop[0].addr, a, sizeof(a)));
    else
        chain_words(sh, o->chain, target, cap);
    return 0;
}

/* The route to the echo target through what is measured, and that started
 * if it is ours; target := it in words. Returns 0, or 1 (told). */
static int route_setup(struct bench *b, struct self_host *sh, bool restart, char *target,
                       size_t cap)
{
    const struct bench_opts *o = &b->o;
    char a[ADDR_STRLEN];
    b->route.mode = o->mode;
    b->route.dst = *targets_echo(b->t, 0);
    b->route.spread_src = o->spread_src;
    b->route.http = o->http_proxy;
    b->route.h2 = o->https_proxy == HTTPS_PROXY_H2;
    if (strcmp(o->auth, "none") != 0) {
        b->route.user = BENCH_USER;
        b->route.pass = BENCH_PASS;
    }
    switch (o->mode) {
    case BENCH_SELF:
        return self_setup(b, sh, restart, target, cap);
    case BENCH_PROXY:
    case BENCH_RELAY:
        b->route.via = o->proxy;
        _Static_assert(sizeof(b->pids) >= sizeof(o->proxy_pids), "--proxy-pid fits in pids");
        memcpy(b->pids, o->proxy_pids, sizeof(o->proxy_pids));
        b->npids = o->nproxy_pids;
        if (o->https_proxy && route_tls(b, o->proxy_cacert, o->proxy_pin))
            return 1;
        snprintf(target, cap, "%s at %s%s", o->mode == BENCH_PROXY ? "proxy" : "relay",
                 addr_format(&o->proxy, a, sizeof(a)), b->npids ? "" : " (no --proxy-pid: no CPU)");
        break;
    case BENCH_DIRECT:
        snprintf(target, cap, "direct (no proxy)");
        break;
    }
    return 0;
}

/* --runs runs of sc through what route_setup() set up (with restart, a
 * fresh self-hosted ferry for each), the report, and the self-hosted ferry
 * stopped. Returns the exit status. */
static int run_all(struct bench *b, struct self_host *sh, const struct bench_scenario *sc,
                   bool restart, const char *target)
{
    const struct bench_opts *o = &b->o;
    bench_report_header(b, target);
    struct result *runs = calloc(o->runs, sizeof(*runs));
    unsigned done = 0;
    char err[512] = ""; /* why a run failed, when it is still reported */
    int rc = runs ? 0 : -ENOMEM;
    while (!rc && done < o->runs) {
        if (restart && done > 0) {
            rc = self_stop(b, sh);
            if (rc || (rc = self_start(b, sh)))
                break;
        }
        if (o->progress)
            fprintf(stderr, "\r\033[Krun %u/%u %s\n", done + 1, o->runs, o->scenario);
        struct result *r = &runs[done++];
        for (unsigned i = 0; o->mode == BENCH_SELF && i < bench_hops(o); i++) {
            r->hop[i].pid = sh->hop[i].pid;
            r->hop[i].addr = sh->hop[i].addr;
            r->nhops = bench_hops(o);
        }
        bench_fail_reset(b);
        rc = sc->run(b, r);
        rc = result_verdict(b, r, done, rc, err, sizeof(err));
    }
    if (!rc || err[0])
        bench_report(b, target, runs, done, err[0] ? err : NULL);
    free(runs);
    if (o->mode == BENCH_SELF) {
        int st = self_stop(b, sh);
        rc = rc ? rc : st;
    }
    return rc ? 1 : 0;
}

int bench_main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "sink"))
        return bench_sink_main(argc - 1, argv + 1);
    static struct bench_cli cli; /* large: not on the stack */
    static struct self_host sh;
    struct bench b;
    memset(&b, 0, sizeof(b));
    int st = bench_opts_parse(argc, argv, &b.o, &cli);
    if (st != BENCH_RUN)
        return st;
    const struct bench_scenario *sc = cli.sc;
    if (sc->flags & SCF_NO_PROXY)
        return run_in_process(&b, sc);

    struct bench_opts *o = &b.o;
    o->target_port = (uint16_t)cli.target_port;
    o->progress = isatty(STDERR_FILENO) && !o->json;
    if (prepare_process(o, sc))
        return 1;
    if (sc->flags & SCF_OWN_SETUP)
        return run_in_process(&b, sc);
    /* Enough echo ports that the proxy's outgoing connections (one source
     * address) do not run out of ephemeral ports. */
    unsigned ports = (sc->flags & SCF_HOLDS) ? MIN(16u, 1 + o->connections / 20000) : 1;
    b.t = o->has_target ? targets_remote(&o->target)
                        : targets_start(o->target_port, ports, o->download_size, o->echo_gro);
    if (!b.t)
        return 1;
    memset(&sh, 0, sizeof(sh));
    sh.extra = cli.proxy_conf;
    /* A connections run measures what holding connections costs a proxy
     * from cold; a second run on the same process would find its pools
     * warm and understate it. So each gets a fresh ferry. */
    bool restart = o->mode == BENCH_SELF && (sc->flags & SCF_COLD);
    char target[512];
    st = route_setup(&b, &sh, restart, target, sizeof(target));
    if (!st)
        st = run_all(&b, &sh, sc, restart, target);
    targets_stop(b.t);
    tls_ctx_free(b.route.tls);
    return st;
}
