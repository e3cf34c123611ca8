/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/options_table.c: `ferry bench`'s option table (options_int.h):
 * for each option, how its argument is read, which field of struct
 * bench_opts it sets, and the range a value must be in; and the functions
 * its rows name, which read one argument each (a value that does not parse
 * at all is a usage error here; one that parses but is out of its range is
 * options.c's to tell, by bench_params_check()).
 *
 * No I/O but the usage errors on stderr.
 */
#include "bench/options_int.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/edge.h"
#include "bench/wan.h"
#include "config/outbound.h"
#include "util/addr.h"
#include "util/compiler.h"
#include "util/parse.h"

/* ---- reading values ------------------------------------------------------ */

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

static int set_count(const struct optdef *d, const char *arg, struct bench_opts *o,
                     struct bench_cli *c)
{
    (void)c;
    unsigned v;
    int rc = parse_count(d->name, arg, d->pmin, d->pmax ? d->pmax : UINT_MAX, &v);
    if (rc)
        return rc;
    void *p = (char *)o + d->off;
    if (d->field == F_INT)
        *(int *)p = (int)v;
    else
        *(unsigned *)p = v;
    return 0;
}

static int set_seconds(const struct optdef *d, const char *arg, struct bench_opts *o,
                       struct bench_cli *c)
{
    (void)c;
    return parse_seconds(d->name, arg, (double *)(void *)((char *)o + d->off));
}

static int set_size(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)c;
    uint64_t n;
    if (parse_size(arg, 0, 1ull << 40, &n))
        return bad_value(d->name, arg);
    *(size_t *)(void *)((char *)o + d->off) = (size_t)n;
    return 0;
}

static int set_flag(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)arg, (void)c;
    *(bool *)(void *)((char *)o + d->off) = d->val != 0;
    return 0;
}

static int set_string(const struct optdef *d, const char *arg, struct bench_opts *o,
                      struct bench_cli *c)
{
    (void)c;
    *(const char **)(void *)((char *)o + d->off) = arg;
    return 0;
}

/* --proxy, --relay: where, and what it is. */
static int set_via(const struct optdef *d, const char *arg, struct bench_opts *o,
                   struct bench_cli *c)
{
    (void)c;
    if (addr_parse(arg, -1, &o->proxy))
        return bad_value(d->name, arg);
    o->mode = (enum bench_mode)d->val;
    return 0;
}

static int set_mode(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)arg, (void)c;
    o->mode = (enum bench_mode)d->val;
    return 0;
}

static int set_proxy_pids(const struct optdef *d, const char *arg, struct bench_opts *o,
                          struct bench_cli *c)
{
    (void)c;
    char list[256], *save = NULL;
    uint64_t n;
    if (snprintf(list, sizeof(list), "%s", arg) >= (int)sizeof(list))
        return bad_value(d->name, arg);
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->nproxy_pids == 8 || parse_u64(tok, 1, 4194304, &n))
            return bad_value(d->name, arg);
        o->proxy_pids[o->nproxy_pids++] = (pid_t)n;
    }
    return 0;
}

/* --proxy-set K=V: a config line for the self-hosted ferry, kept as given
 * for the report too. */
static int set_proxy_set(const struct optdef *d, const char *arg, struct bench_opts *o,
                         struct bench_cli *c)
{
    const char *eq = strchr(arg, '=');
    size_t len = strlen(c->proxy_conf);
    if (!eq || eq == arg || len + strlen(arg) + 4 >= sizeof(c->proxy_conf) ||
        o->nproxy_set == sizeof(o->proxy_set) / sizeof(o->proxy_set[0]))
        return bad_value(d->name, arg);
    snprintf(c->proxy_conf + len, sizeof(c->proxy_conf) - len, "%.*s = %s\n", (int)(eq - arg), arg,
             eq + 1);
    o->proxy_set[o->nproxy_set++] = arg;
    return 0;
}

static int set_target_port(const struct optdef *d, const char *arg, struct bench_opts *o,
                           struct bench_cli *c)
{
    (void)o;
    return parse_count(d->name, arg, 1, 65535, &c->target_port);
}

static int set_http_proxy(const struct optdef *d, const char *arg, struct bench_opts *o,
                          struct bench_cli *c)
{
    (void)c;
    if (strcmp(arg, "connect") == 0)
        o->http_proxy = HTTP_PROXY_CONNECT;
    else if (strcmp(arg, "absolute") == 0)
        o->http_proxy = HTTP_PROXY_ABSOLUTE;
    else
        return bad_value(d->name, arg);
    return 0;
}

static int set_https_proxy(const struct optdef *d, const char *arg, struct bench_opts *o,
                           struct bench_cli *c)
{
    (void)c;
    if (strcmp(arg, "h1") == 0)
        o->https_proxy = HTTPS_PROXY_H1;
    else if (strcmp(arg, "h2") == 0)
        o->https_proxy = HTTPS_PROXY_H2;
    else
        return bad_value(d->name, arg);
    return 0;
}

/* --wan SPEC: the path's parameters (bench/wan.h), read now so a typo is a
 * usage error before anything starts. */
static int set_wan(const struct optdef *d, const char *arg, struct bench_opts *o,
                   struct bench_cli *c)
{
    (void)c;
    const char *bad;
    wan_conf_init(&o->wan_conf);
    int rc = wan_conf_parse(&o->wan_conf, arg, &bad);
    if (rc) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s: bad item '%.40s'%s (see ferry bench wan --help)", d->name,
                 bad, rc == -ERANGE ? " (out of range)" : "");
        return bench_usage_error(msg);
    }
    o->wan = arg;
    return 0;
}

/* --tunnel h2 | wss. */
static int set_tunnel(const struct optdef *d, const char *arg, struct bench_opts *o,
                      struct bench_cli *c)
{
    (void)c;
    if (strcmp(arg, "h2") == 0) {
        o->tunnel = TUNNEL_H2;
        return 0;
    }
    if (strcmp(arg, "wss") == 0) {
        o->tunnel = TUNNEL_WSS;
        return 0;
    }
    return bad_value(d->name, arg);
}

static int set_proxy_tls(const struct optdef *d, const char *arg, struct bench_opts *o,
                         struct bench_cli *c)
{
    (void)c;
    if (strcmp(d->name, "--proxy-cacert") == 0) {
        o->proxy_cacert = arg;
        return 0;
    }
    uint8_t pin[32];
    if (outbound_pin_parse(arg, pin))
        return bad_value(d->name, arg);
    o->proxy_pin = arg;
    return 0;
}

static int set_auth(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)c;
    if (strcmp(arg, "none") && strcmp(arg, "plain") && strcmp(arg, "argon2"))
        return bad_value(d->name, arg);
    o->auth = arg;
    return 0;
}

/* --rate N or N/s: open loop; 0 (the default) is closed loop. */
static int set_rate(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)c;
    char v[64];
    size_t len = strlen(arg);
    if (len >= sizeof(v))
        return bad_value(d->name, arg);
    memcpy(v, arg, len + 1);
    if (len > 2 && !strcmp(v + len - 2, "/s"))
        v[len - 2] = '\0';
    return parse_seconds(d->name, v, &o->rate); /* any finite number; the range decides */
}

static int set_direction(const struct optdef *d, const char *arg, struct bench_opts *o,
                         struct bench_cli *c)
{
    (void)c;
    if (strcmp(arg, "both") == 0)
        o->direction = DIR_BOTH;
    else if (strcmp(arg, "up") == 0)
        o->direction = DIR_UP;
    else if (strcmp(arg, "down") == 0)
        o->direction = DIR_DOWN;
    else
        return bad_value(d->name, arg);
    return 0;
}

/* --target HOST:PORT: a `ferry bench sink` (an IP address: the bench
 * resolves nothing). */
static int set_target(const struct optdef *d, const char *arg, struct bench_opts *o,
                      struct bench_cli *c)
{
    (void)c;
    if (addr_parse(arg, -1, &o->target) || o->target.port == 0)
        return bad_value(d->name, arg);
    o->has_target = true;
    return 0;
}

/* edge --hello KIND. */
static int set_hello(const struct optdef *d, const char *arg, struct bench_opts *o,
                     struct bench_cli *c)
{
    int k = edge_hello_parse(arg);
    if (k < 0)
        return bench_usage_error("--hello must be mc, tls, tls-pq-segments or tls-pq-records");
    (void)d;
    o->edge_hello = (uint8_t)k;
    c->edge_given = true;
    return 0;
}

/* edge --edge-target ADDR:PORT: an edge already running, on loopback (the
 * backends it must route to listen on 127.0.0.1). */
static int set_edge_target(const struct optdef *d, const char *arg, struct bench_opts *o,
                           struct bench_cli *c)
{
    if (addr_parse(arg, -1, &o->edge_target) || o->edge_target.port == 0)
        return bad_value(d->name, arg);
    if (!addr_is_loopback(&o->edge_target))
        return bench_usage_error("--edge-target must be on loopback (the bench's backends listen "
                                 "on 127.0.0.1)");
    o->has_edge_target = true;
    c->edge_given = true;
    return 0;
}

/* edge --proxy-cgroup DIR: a cgroup directory the self-hosted ferry is
 * moved into (its cgroup.procs) once started, e.g. one with a CPU quota. */
static int set_proxy_cgroup(const struct optdef *d, const char *arg, struct bench_opts *o,
                            struct bench_cli *c)
{
    if (!*arg)
        return bad_value(d->name, arg);
    o->proxy_cgroup = arg;
    c->edge_given = true;
    return 0;
}

/* edge --hold N (a count; 0: off). */
static int set_hold(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    c->edge_given = true;
    return set_count(d, arg, o, c);
}

static int set_help(const struct optdef *d, const char *arg, struct bench_opts *o,
                    struct bench_cli *c)
{
    (void)d, (void)arg, (void)o;
    c->help = true;
    return 0;
}

#define ARG                    .has_arg = required_argument
#define FLAG                   .has_arg = no_argument
#define FIELD(type, f)         .field = (type), .off = offsetof(struct bench_opts, f)
#define RANGE(lo_, hi_, unit_) .ok = {.lo = (lo_), .hi = (hi_)}, .unit = (unit_)

/* The options, in the order getopt_long lists them when an abbreviation is
 * ambiguous; bench_params_check() checks the ranges in this order too. */
const struct optdef bench_optdefs[] = {
    {.name = "--proxy", ARG, .set = set_via, .val = BENCH_PROXY},
    {.name = "--proxy-pid", ARG, .set = set_proxy_pids},
    {.name = "--relay", ARG, .set = set_via, .val = BENCH_RELAY},
    {.name = "--direct", FLAG, .set = set_mode, .val = BENCH_DIRECT},
    {.name = "--runs",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, runs),
     RANGE(1, BENCH_MAX_RUNS, "")},
    {.name = "--duration",
     ARG,
     .set = set_seconds,
     FIELD(F_DOUBLE, duration_s),
     RANGE(0.1, 3600, "seconds")},
    {.name = "--warmup",
     ARG,
     .set = set_seconds,
     FIELD(F_DOUBLE, warmup_s),
     RANGE(0, 600, "seconds")},
    {.name = "--connections",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, connections),
     .sv = SV_CONNECTIONS,
     RANGE(1, 250000, "")},
    {.name = "--concurrency",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, concurrency),
     .sv = SV_CONCURRENCY,
     RANGE(1, 10000, "")},
    {.name = "--payload",
     ARG,
     .set = set_size,
     FIELD(F_SIZE, payload),
     .sv = SV_PAYLOAD,
     RANGE(1, PATTERN_SLACK, "bytes")},
    {.name = "--requests",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, requests),
     RANGE(1, 10000000, "")},
    {.name = "--warm-requests",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, warm_requests),
     RANGE(0, 10000000, "")},
    {.name = "--downloads",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, downloads),
     RANGE(1, 1000, "")},
    /* Each download phase must end within the 120 s a phase is given. */
    {.name = "--download-size",
     ARG,
     .set = set_size,
     FIELD(F_SIZE, download_size),
     RANGE(1, 4ull << 30, "bytes")},
    /* 0.02 s: the generator's tick. */
    {.name = "--ping",
     ARG,
     .set = set_seconds,
     FIELD(F_DOUBLE, ping_s),
     RANGE(0.02, 3600, "seconds"),
     .rg = RG_ZERO_OFF},
    {.name = "--threads", ARG, .set = set_count, FIELD(F_UNSIGNED, threads), RANGE(1, 64, "")},
    {.name = "--ferry", ARG, .set = set_string, FIELD(F_STR, ferry)},
    /* Each hop is a process the bench starts, samples and stops. 0 (a
     * struct filled by hand) is the default, one ferry. */
    {.name = "--chain",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, chain),
     .pmin = 1,
     .pmax = BENCH_MAX_CHAIN,
     RANGE(1, BENCH_MAX_CHAIN, "ferries"),
     .rg = RG_ZERO_DEFAULT},
    {.name = "--proxy-workers",
     ARG,
     .set = set_count,
     FIELD(F_UNSIGNED, proxy_workers),
     .pmin = 1,
     .pmax = 256,
     RANGE(1, 256, ""),
     .rg = RG_ZERO_DEFAULT},
    {.name = "--proxy-set", ARG, .set = set_proxy_set},
    {.name = "--target-port", ARG, .set = set_target_port},
    {.name = "--no-spread", FLAG, .set = set_flag, FIELD(F_BOOL, spread_src), .val = false},
    {.name = "--json", FLAG, .set = set_flag, FIELD(F_BOOL, json), .val = true},
    {.name = "--blast", FLAG, .set = set_flag, FIELD(F_BOOL, blast), .val = true},
    {.name = "--no-echo-gro", FLAG, .set = set_flag, FIELD(F_BOOL, echo_gro), .val = false},
    {.name = "--http-proxy", ARG, .set = set_http_proxy},
    {.name = "--https-proxy", ARG, .set = set_https_proxy},
    {.name = "--tunnel", ARG, .set = set_tunnel},
    {.name = "--wan", ARG, .set = set_wan},
    {.name = "--stalled", ARG, .set = set_count, FIELD(F_UNSIGNED, stalled), RANGE(0, 10000, "")},
    {.name = "--proxy-cacert", ARG, .set = set_proxy_tls},
    {.name = "--proxy-pin", ARG, .set = set_proxy_tls},
    {.name = "--rules", ARG, .set = set_count, FIELD(F_UNSIGNED, nrules), RANGE(0, 1000000, "")},
    {.name = "--auth", ARG, .set = set_auth},
    {.name = "--auth-cachettl",
     ARG,
     .set = set_count,
     FIELD(F_INT, auth_cachettl_s),
     .pmin = 0,
     .pmax = 86400,
     RANGE(0, 86400, "seconds"),
     .rg = RG_NEG_DEFAULT},
    /* 1/s: anything slower is not a load; 10^7/s is beyond what one
     * machine's loop can schedule. */
    {.name = "--rate",
     ARG,
     .set = set_rate,
     FIELD(F_DOUBLE, rate),
     RANGE(1, 10000000, "per second"),
     .rg = RG_ZERO_OFF},
    {.name = "--direction", ARG, .set = set_direction},
    {.name = "--target", ARG, .set = set_target},
    {.name = "--hello", ARG, .set = set_hello},
    {.name = "--edge-target", ARG, .set = set_edge_target},
    {.name = "--hold", ARG, .set = set_hold, FIELD(F_UNSIGNED, hold), RANGE(0, 250000, "")},
    {.name = "--proxy-cgroup", ARG, .set = set_proxy_cgroup},
    {.name = "--allow-failures", FLAG, .set = set_flag, FIELD(F_BOOL, allow_failures), .val = true},
    {.name = "--help", FLAG, .set = set_help},
};
