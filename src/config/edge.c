/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge.c: the keys of [edge NAME] sections (edge.h, docs/edge.md): parse,
 * check, and at the end add each section's listeners to the config's
 * listen list marked as edge listeners. Errors name FILE:LINE. No DNS: a
 * backend is a numeric address or a name (a template filled by the route's
 * captures) that sessions resolve; the one file read is the keyring of
 * signed host names (edge/signkey.h). This room must not learn about
 * sessions; relay/front_edge.c does the rest.
 */
#include "config/edge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "crypto/fcrypto.h"
#include "proto/hostname.h"
#include "proto/hostpat.h"
#include "util/parse.h"

#define EDGE_BACKENDS_MAX 64
#define EDGE_ROUTES_MAX   4096

/* "FILE:LINE: edge NAME: KEY: ..." */
#define EBAD(errs, file, line, e, key, ...)                                           \
    do {                                                                              \
        char m_[600];                                                                 \
        snprintf(m_, sizeof(m_), __VA_ARGS__);                                        \
        msglist_push(errs, "%s:%d: edge %s: %s: %s", file, line, (e)->name, key, m_); \
    } while (0)

static const char *const reject_names[EDGE_REJ_COUNT] = {
    "halfopen",    "per-source",   "rate",        "first-byte-timeout", "hello-timeout",
    "sniff-error", "unknown-host", "signature",   "client-closed",      "denied",
    "banned",      "per-prefix",   "prefix-rate",
};

const char *edge_reject_name(enum edge_reject r)
{
    return (unsigned)r < EDGE_REJ_COUNT ? reject_names[r] : "?";
}

const char *edge_result_name(enum edge_result r)
{
    return r == EDGE_RES_OK ? "ok" : r == EDGE_RES_UNREACHABLE ? "backend-unreachable" : "?";
}

const char *edge_sniff_name(enum edge_sniff s)
{
    return s == EDGE_SNIFF_MC ? "mc" : s == EDGE_SNIFF_TLS ? "tls" : "auto";
}

const char *edge_status_name(enum edge_status s)
{
    return s == EDGE_STATUS_CACHE     ? "cache"
           : s == EDGE_STATUS_OFFLINE ? "offline"
           : s == EDGE_STATUS_LEGACY  ? "legacy"
           : s == EDGE_STATUS_FETCHED ? "fetched"
                                      : "?";
}

const char *edge_signed_name(enum edge_signed m)
{
    return m == EDGE_SIGNED_HOP ? "hop" : m == EDGE_SIGNED_TOKEN ? "token" : "off";
}

enum edge_signed edge_route_signed(const struct config_edge *e, const struct edge_route *r)
{
    return r->signed_mode >= 0 ? (enum edge_signed)r->signed_mode : e->signed_mode;
}

static int parse_signed(const char *v, int8_t *out)
{
    if (!strcmp(v, "off"))
        *out = EDGE_SIGNED_OFF;
    else if (!strcmp(v, "hop"))
        *out = EDGE_SIGNED_HOP;
    else if (!strcmp(v, "token"))
        *out = EDGE_SIGNED_TOKEN;
    else
        return -EINVAL;
    return 0;
}

void config_edge_section(struct config *c, const char *name, const char *file, int line,
                         struct msglist *errs)
{
    c->cur_edge = -1;
    if (!*name || strlen(name) >= sizeof(c->edges[0].name) || strpbrk(name, " \t\"\\")) {
        msglist_push(errs,
                     "%s:%d: [edge %s]: the name must be 1-63 characters without spaces or "
                     "quotes",
                     file, line, name);
        return;
    }
    for (uint32_t i = 0; i < c->nedges; i++) {
        if (!strcmp(c->edges[i].name, name)) {
            msglist_push(errs, "%s:%d: [edge %s]: a second section of that name (first at %s)",
                         file, line, name, c->edges[i].origin);
            return;
        }
    }
    if (c->nedges == EDGE_MAX) {
        msglist_push(errs, "%s:%d: [edge %s]: more than %d edge sections", file, line, name,
                     EDGE_MAX);
        return;
    }
    struct config_edge *v = realloc(c->edges, (c->nedges + 1) * sizeof(*v));
    struct edge_live *live = calloc(1, sizeof(*live));
    if (!v || !live) {
        free(live);
        if (v)
            c->edges = v;
        msglist_push(errs, "%s:%d: out of memory", file, line);
        return;
    }
    c->edges = v;
    struct config_edge *e = &v[c->nedges];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    snprintf(e->origin, sizeof(e->origin), "%s:%d", file, line);
    e->unknown = -1;
    e->first_byte_ms = 5000;
    e->hello_ms = 10000;
    e->max_hello = 1024;
    e->max_halfopen = 1024;
    e->per_source = 64;
    e->rate = 0;
    e->burst = 0;
    e->signed_skew = 10;
    e->ban_window_ms = 60000;
    e->ban_ms = 600000;
    e->signed_max_ttl = 30 * 86400;
    e->live = live;
    c->cur_edge = (int32_t)c->nedges++;
}

/* "a, b, c" split in place: calls fn on each trimmed item; stops at an error. */
static int split_list(char *s, int (*fn)(void *arg, char *item), void *arg)
{
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int rc = fn(arg, str_trim(t));
        if (rc)
            return rc;
    }
    return 0;
}

struct addrs {
    struct addr *v;
    char **names; /* NULL: numeric addresses only (listen); else a name per address */
    uint32_t n, cap;
    unsigned ncaps; /* names: the route's captures, {1}..{ncaps} */
    bool port0;     /* port 0 allowed (a listener: any free port) */
    char bad[400];
};

/* NAME:PORT, NAME a host name or template (hostpat.h): into a->names[a->n]. */
static int add_name(struct addrs *a, const char *item)
{
    const char *colon = strrchr(item, ':');
    uint64_t port;
    if (!colon || parse_u64(colon + 1, 1, 65535, &port))
        return -EINVAL;
    size_t n = (size_t)(colon - item);
    int rc = n <= HOSTNAME_MAX ? hostpat_template_check(item, n, a->ncaps) : HOSTPAT_E_SYNTAX;
    if (rc == HOSTPAT_E_CAPTURE) {
        snprintf(a->bad, sizeof(a->bad),
                 "'%.80s' uses a capture the route's host does not have (it has %u: one per "
                 "'*' label)",
                 item, a->ncaps);
        return -EINVAL;
    }
    if (rc)
        return -EINVAL;
    memset(&a->v[a->n], 0, sizeof(a->v[a->n]));
    a->v[a->n].port = (uint16_t)port;
    if (!(a->names[a->n] = strndup(item, n))) {
        snprintf(a->bad, sizeof(a->bad), "out of memory");
        return -ENOMEM;
    }
    a->n++;
    return 0;
}

static int add_addr(void *arg, char *item)
{
    struct addrs *a = arg;
    if (a->n == a->cap) {
        snprintf(a->bad, sizeof(a->bad), "more than %u addresses", a->cap);
        return -E2BIG;
    }
    if (addr_parse(item, -1, &a->v[a->n]) == 0 && (a->v[a->n].port != 0 || a->port0)) {
        if (a->names)
            a->names[a->n] = NULL;
        addr_unmap(&a->v[a->n]);
        a->n++;
        return 0;
    }
    if (a->names) {
        int rc = add_name(a, item);
        if (rc == 0 || rc != -EINVAL || a->bad[0])
            return rc;
        snprintf(a->bad, sizeof(a->bad),
                 "'%.80s' is not an address or a name with its port (expected e.g. "
                 "10.0.0.5:25565, [::1]:443 or {1}.backends.internal:25565)",
                 item);
        return -EINVAL;
    }
    snprintf(a->bad, sizeof(a->bad),
             "'%.80s' is not a numeric address and port (expected e.g. 10.0.0.5:25565 or "
             "[::1]:443)",
             item);
    return -EINVAL;
}

static int parse_strategy(const char *v, enum edge_strategy *out)
{
    if (!strcmp(v, "round-robin"))
        *out = EDGE_ROUND_ROBIN;
    else if (!strcmp(v, "least-connections"))
        *out = EDGE_LEAST_CONN;
    else if (!strcmp(v, "first-healthy"))
        *out = EDGE_FIRST_HEALTHY;
    else
        return -EINVAL;
    return 0;
}

/* A route's own options (the words holding '=' after "->"); -1: the section's. */
struct route_opts {
    int8_t strategy, pp, sig, suffix;
    char *rewrite; /* heap; NULL: none */
};

static int parse_suffix(const char *v, bool *strip)
{
    if (strcmp(v, "keep") && strcmp(v, "strip"))
        return -EINVAL;
    *strip = !strcmp(v, "strip");
    return 0;
}

/* One option word ("key=value") into o; -EINVAL when it is not one. */
static int route_option(const char *word, unsigned ncaps, struct route_opts *o)
{
    const char *v = strchr(word, '=') + 1;
    enum edge_strategy st;
    bool strip;
    if (!strncmp(word, "strategy=", 9) && parse_strategy(v, &st) == 0)
        o->strategy = (int8_t)st;
    else if (!strncmp(word, "proxy_protocol=", 15) && (!strcmp(v, "v2") || !strcmp(v, "off")))
        o->pp = !strcmp(v, "v2");
    else if (!strncmp(word, "signed=", 7) && parse_signed(v, &o->sig) == 0)
        return 0;
    else if (!strncmp(word, "forward_suffix=", 15) && parse_suffix(v, &strip) == 0)
        o->suffix = strip;
    else if (!strncmp(word, "rewrite=", 8) && !o->rewrite &&
             hostpat_template_check(v, strlen(v), ncaps) == 0)
        return (o->rewrite = strdup(v)) ? 0 : -ENOMEM;
    else
        return -EINVAL;
    return 0;
}

/* The words of a route's backend list holding '=': the route's own
 * options, cut out of s (blanked) so that only the backends are left. */
static int route_options(char *s, unsigned ncaps, struct route_opts *o, char *bad, size_t badlen)
{
    for (char *p = s; (p = strchr(p, '=')) != NULL;) {
        char *w = p;
        while (w > s && w[-1] != ' ' && w[-1] != '\t' && w[-1] != ',')
            w--;
        char *end = p + strcspn(p, " \t,");
        char word[HOSTNAME_MAX + 40];
        snprintf(word, sizeof(word), "%.*s", (int)(end - w), w);
        if (route_option(word, ncaps, o)) {
            snprintf(bad, badlen,
                     "'%.*s' is not a route option (expected strategy=round-robin|"
                     "least-connections|first-healthy, proxy_protocol=v2|off, signed=off|hop|"
                     "token, forward_suffix=keep|strip or rewrite=HOST, HOST with {1}..{%u} of "
                     "the route's captures)",
                     60, word, ncaps);
            return -EINVAL;
        }
        memset(w, ' ', (size_t)(end - w));
        p = end;
    }
    return 0;
}

/* A new route r (zeroed) with its backends b[0..n) and names[0..n); false
 * when out of memory (nothing then kept). */
static bool route_store(struct edge_route *r, const char *host, const struct addr *b, char **names,
                        uint32_t n)
{
    r->host = strdup(host);
    r->backends = calloc(n, sizeof(*r->backends));
    r->live = calloc(1, sizeof(*r->live));
    if (r->live && pthread_mutex_init(&r->live->status_mu, NULL)) {
        free(r->live);
        r->live = NULL;
    }
    if (!r->host || !r->backends || !r->live) {
        free(r->host);
        free(r->backends);
        free(r->live);
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        r->backends[i].addr = b[i];
        r->backends[i].name = names[i];
        r->named |= names[i] != NULL;
    }
    r->nbackends = n;
    return true;
}

/* route = HOST -> BACKEND[, BACKEND...] [strategy=S] [proxy_protocol=v2|off]
 *         [signed=off|hop|token] [forward_suffix=keep|strip] [rewrite=HOST]
 * HOST may have '*' labels (captures); a BACKEND is ADDR:PORT or NAME:PORT
 * with NAME a template of the captures. */
static void set_route(struct config_edge *e, char *v, const char *file, int line,
                      struct msglist *errs)
{
    char *arrow = strstr(v, "->");
    if (!arrow) {
        EBAD(errs, file, line, e, "route", "expected HOST -> BACKEND[, BACKEND...]");
        return;
    }
    *arrow = '\0';
    char *host = str_trim(v), name[HOSTNAME_MAX + 1];
    unsigned ncaps = 0;
    if (!hostpat_canon(host, strlen(host), name, &ncaps)) {
        EBAD(errs, file, line, e, "route",
             "'%.80s' is not a host name or pattern (letters, digits, '-' and dots; '*' as a "
             "whole label, at most %d, and one label that is not '*')",
             host, HOSTPAT_CAPS_MAX);
        return;
    }
    for (uint32_t i = 0; i < e->nroutes; i++) {
        if (!strcmp(e->routes[i].host, name)) {
            EBAD(errs, file, line, e, "route", "a second route for %s (first on line %d)", name,
                 e->routes[i].line);
            return;
        }
    }
    struct addr b[EDGE_BACKENDS_MAX];
    char *names[EDGE_BACKENDS_MAX];
    struct addrs list = {.v = b, .names = names, .cap = EDGE_BACKENDS_MAX, .ncaps = ncaps};
    struct route_opts o = {-1, -1, -1, -1, NULL};
    struct edge_route *r = NULL;
    if (route_options(arrow + 2, ncaps, &o, list.bad, sizeof(list.bad))) {
        EBAD(errs, file, line, e, "route", "%s", list.bad);
    } else if (split_list(arrow + 2, add_addr, &list) || list.n == 0) {
        EBAD(errs, file, line, e, "route", "%s", list.n || list.bad[0] ? list.bad : "no backend");
    } else if (e->nroutes == EDGE_ROUTES_MAX) {
        EBAD(errs, file, line, e, "route", "more than %d routes", EDGE_ROUTES_MAX);
    } else if (!(r = realloc(e->routes, (e->nroutes + 1) * sizeof(*r)))) {
        EBAD(errs, file, line, e, "route", "out of memory");
    } else {
        e->routes = r;
        r = &r[e->nroutes];
        memset(r, 0, sizeof(*r));
        if (route_store(r, name, b, names, list.n)) {
            r->wildcard = ncaps > 0;
            r->ncaps = (uint8_t)ncaps;
            r->strategy = o.strategy;
            r->proxy_v2 = o.pp;
            r->signed_mode = o.sig;
            r->suffix = o.suffix;
            r->rewrite = o.rewrite;
            r->line = line;
            e->nroutes++;
            return;
        }
        EBAD(errs, file, line, e, "route", "out of memory");
    }
    for (uint32_t i = 0; i < list.n; i++)
        free(names[i]);
    free(o.rewrite);
}

/* allow = / deny = CIDR[, CIDR...]: addresses or ranges, up to 256. */
static void set_cidrs(struct config_edge *e, const char *key, char *v, const char *file, int line,
                      struct msglist *errs)
{
    bool allow = !strcmp(key, "allow");
    struct acl_cidr **list = allow ? &e->allow : &e->deny;
    uint32_t *n = allow ? &e->nallow : &e->ndeny;
    for (char *save = NULL, *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        t = str_trim(t);
        struct acl_cidr c;
        if (acl_cidr_parse(t, &c)) {
            EBAD(errs, file, line, e, key,
                 "'%.80s' is not an address or range (e.g. 203.0.113.0/24, 2001:db8::/32)", t);
            return;
        }
        struct acl_cidr *grown = *n < 256 ? realloc(*list, (*n + 1) * sizeof(c)) : NULL;
        if (!grown) {
            EBAD(errs, file, line, e, key, "%s",
                 *n < 256 ? "out of memory" : "more than 256 ranges");
            return;
        }
        *list = grown;
        (*list)[(*n)++] = c;
    }
    if (!*n)
        EBAD(errs, file, line, e, key, "%s", "no address or range");
}

static int set_ms(uint32_t *out, const char *v, uint64_t min, uint64_t max)
{
    uint64_t ms;
    if (parse_duration_ms(v, min, max, &ms))
        return -EINVAL;
    *out = (uint32_t)ms;
    return 0;
}

static int set_u32(uint32_t *out, const char *v, uint64_t min, uint64_t max)
{
    uint64_t n;
    if (parse_u64(v, min, max, &n))
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

/* The keys other than route and listen: -ENOENT for an unknown one,
 * -EINVAL (with *expect) for a bad value. */
static int set_scalar(struct config_edge *e, const char *key, const char *v, const char **expect)
{
    if (!strcmp(key, "sniff")) {
        *expect = "mc, tls or auto";
        e->sniff = !strcmp(v, "mc")    ? EDGE_SNIFF_MC
                   : !strcmp(v, "tls") ? EDGE_SNIFF_TLS
                                       : EDGE_SNIFF_AUTO;
        return strcmp(v, "mc") && strcmp(v, "tls") && strcmp(v, "auto") ? -EINVAL : 0;
    }
    if (!strcmp(key, "strategy")) {
        *expect = "round-robin, least-connections or first-healthy";
        return parse_strategy(v, &e->strategy);
    }
    if (!strcmp(key, "proxy_protocol")) {
        *expect = "v2 or off";
        if (strcmp(v, "v2") && strcmp(v, "off"))
            return -EINVAL;
        e->proxy_v2 = !strcmp(v, "v2");
        return 0;
    }
    if (!strcmp(key, "signed")) {
        *expect = "off, hop or token";
        int8_t m;
        if (parse_signed(v, &m))
            return -EINVAL;
        e->signed_mode = (enum edge_signed)m;
        return 0;
    }
    if (!strcmp(key, "signed_skew") || !strcmp(key, "signed_max_ttl")) {
        bool skew = !strcmp(key, "signed_skew");
        *expect = skew ? "a duration (0s to 10m)" : "a duration (1m to 366d)";
        uint64_t ms;
        if (parse_duration_ms(v, skew ? 0 : 60000, skew ? 600000 : 366ull * 86400000, &ms))
            return -EINVAL;
        *(skew ? &e->signed_skew : &e->signed_max_ttl) = (uint32_t)(ms / 1000);
        return 0;
    }
    if (!strcmp(key, "health_check")) {
        *expect = "a duration (0s: off, or 1s to 1h)";
        if (set_ms(&e->health_ms, v, 0, 3600000) || (e->health_ms && e->health_ms < 1000))
            return -EINVAL;
        return 0;
    }
    if (!strcmp(key, "status_cache")) {
        *expect = "yes or no";
        if (strcmp(v, "yes") && strcmp(v, "no"))
            return -EINVAL;
        e->status_cache = !strcmp(v, "yes");
        return 0;
    }
    if (!strcmp(key, "forward_suffix")) {
        *expect = "keep or strip";
        return parse_suffix(v, &e->strip_suffix);
    }
    if (!strcmp(key, "offline_motd")) {
        *expect = "text of 1 to 256 bytes";
        if (!*v || strlen(v) > 256)
            return -EINVAL;
        e->offline_motd = strdup(v);
        return e->offline_motd ? 0 : -ENOMEM;
    }
    if (!strcmp(key, "unknown")) {
        *expect = "close, or the host of one of this section's routes";
        free(e->unknown_name);
        e->unknown_name = strcmp(v, "close") ? strdup(v) : NULL;
        return 0;
    }
    struct {
        const char *key;
        uint32_t *p;
        bool ms;
        uint64_t min, max;
        const char *expect;
    } nums[] = {
        {"first_byte_timeout", &e->first_byte_ms, true, 100, 600000, "a duration (100ms to 10m)"},
        {"hello_timeout", &e->hello_ms, true, 100, 600000, "a duration (100ms to 10m)"},
        {"max_hello", &e->max_hello, false, 64, 2048, "a size in bytes (64 to 2048)"},
        {"max_halfopen", &e->max_halfopen, false, 0, 10000000, "a count (0: no cap)"},
        {"per_source_connections", &e->per_source, false, 0, 1000000, "a count (0: no cap)"},
        {"per_source_rate", &e->rate, false, 0, 1000000, "connections per second (0: off)"},
        {"per_source_burst", &e->burst, false, 0, 1000000, "a count (0: twice the rate)"},
        {"per_prefix_connections", &e->prefix_conns, false, 0, 1000000, "a count (0: no cap)"},
        {"per_prefix_rate", &e->prefix_rate, false, 0, 1000000, "connections per second (0: off)"},
        {"per_prefix_burst", &e->prefix_burst, false, 0, 1000000, "a count (0: twice the rate)"},
        {"ban_after", &e->ban_after, false, 0, 1000000, "a count of failures (0: off)"},
        {"ban_window", &e->ban_window_ms, true, 1000, 86400000, "a duration (1s to 1d)"},
        {"ban_time", &e->ban_ms, true, 1000, 604800000, "a duration (1s to 7d)"},
        {"status_cache_ttl", &e->status_ttl_ms, true, 1000, 3600000, "a duration (1s to 1h)"},
    };
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        if (strcmp(key, nums[i].key))
            continue;
        *expect = nums[i].expect;
        return nums[i].ms ? set_ms(nums[i].p, v, nums[i].min, nums[i].max)
                          : set_u32(nums[i].p, v, nums[i].min, nums[i].max);
    }
    return -ENOENT;
}

void config_edge_key(struct config *c, const char *key, const char *value, const char *file,
                     int line, struct msglist *errs)
{
    if (c->cur_edge < 0)
        return; /* the header was bad, and said so */
    struct config_edge *e = &c->edges[c->cur_edge];
    char v[4096], mark[80];
    snprintf(v, sizeof(v), "%s", value);
    if (strcmp(key, "route")) {
        snprintf(mark, sizeof(mark), "|%s|", key);
        if (strstr(e->seen, mark)) {
            EBAD(errs, file, line, e, key, "set twice in this section");
            return;
        }
        size_t used = strlen(e->seen);
        snprintf(e->seen + used, sizeof(e->seen) - used, "%s", mark);
    }
    if (!strcmp(key, "route")) {
        set_route(e, v, file, line, errs);
        return;
    }
    if (!strcmp(key, "allow") || !strcmp(key, "deny")) {
        set_cidrs(e, key, v, file, line, errs);
        return;
    }
    if (!strcmp(key, "signed_keys")) {
        const char *slash = strrchr(file, '/');
        const char *k = str_trim(v);
        char path[4096];
        if (k[0] != '/' && slash)
            snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - file), file, k);
        else
            snprintf(path, sizeof(path), "%s", k);
        e->signed_keys = strdup(path);
        e->signed_keys_line = line;
        return;
    }
    if (!strcmp(key, "listen")) {
        struct addrs list = {.v = e->listen, .cap = 8, .port0 = true};
        if (split_list(v, add_addr, &list) || list.n == 0)
            EBAD(errs, file, line, e, key, "%s", list.n || list.bad[0] ? list.bad : "no address");
        e->nlisten = list.n;
        e->listen_line = line;
        return;
    }
    const char *expect = NULL;
    if (!strcmp(key, "forward_suffix"))
        e->suffix_line = line;
    int rc = set_scalar(e, key, str_trim(v), &expect);
    if (rc == -ENOENT)
        EBAD(errs, file, line, e, key,
             "unknown key (known: listen, sniff, route, strategy, unknown, proxy_protocol, "
             "first_byte_timeout, hello_timeout, max_hello, max_halfopen, "
             "per_source_connections, per_source_rate, per_source_burst, signed, signed_keys, "
             "signed_skew, signed_max_ttl, health_check, status_cache, status_cache_ttl, "
             "offline_motd, forward_suffix, allow, deny, "
             "per_prefix_connections, per_prefix_rate, per_prefix_burst, ban_after, ban_window, "
             "ban_time)");
    else if (rc)
        EBAD(errs, file, line, e, key, "'%.200s' is not valid (expected %s)", v, expect);
}

bool config_edge_is_key(const char *key)
{
    static const char *const only[] = {
        "route",
        "sniff",
        "unknown",
        "first_byte_timeout",
        "hello_timeout",
        "max_hello",
        "max_halfopen",
        "per_source_connections",
        "per_source_rate",
        "per_source_burst",
        "signed_keys",
        "signed_skew",
        "signed_max_ttl",
        "signed",
        "health_check",
        "status_cache",
        "offline_motd",
        "per_prefix_connections",
        "per_prefix_rate",
        "per_prefix_burst",
        "ban_after",
        "ban_window",
        "ban_time",
        "forward_suffix",
        "status_cache_ttl",
    };
    for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++)
        if (!strcmp(key, only[i]))
            return true;
    return false;
}

int32_t edge_route_find(const struct config_edge *e, const char *host, struct hostpat_caps *caps)
{
    int32_t best = -1;
    unsigned best_score = 0;
    struct hostpat_caps got;
    for (uint32_t i = 0; i < e->nroutes; i++) {
        const struct edge_route *r = &e->routes[i];
        if (!r->wildcard) {
            if (!strcmp(r->host, host)) {
                if (caps)
                    caps->n = 0;
                return (int32_t)i;
            }
            continue;
        }
        /* the most literal labels, then the most labels (*.*.a beats *.a) */
        unsigned score = hostpat_literals(r->host) * 256 + 1;
        for (const char *d = r->host; (d = strchr(d, '.')) != NULL; d++)
            score++;
        if (score > best_score && hostpat_match(r->host, host, &got)) {
            best = (int32_t)i;
            best_score = score;
            if (caps)
                *caps = got;
        }
    }
    return best;
}

bool edge_route_strips(const struct config_edge *e, const struct edge_route *r)
{
    return r->suffix >= 0 ? r->suffix == 1 : e->strip_suffix;
}

const char *edge_backend_format(const struct edge_backend *b, char *out, size_t len)
{
    if (!b->name)
        return addr_format(&b->addr, out, len);
    snprintf(out, len, "%s:%u", b->name, (unsigned)b->addr.port);
    return out;
}

/* Does r fill something from its captures? */
static bool edge_route_templated(const struct edge_route *r)
{
    for (uint32_t i = 0; i < r->nbackends; i++)
        if (r->backends[i].name && strchr(r->backends[i].name, '{'))
            return true;
    return r->rewrite && strchr(r->rewrite, '{');
}

/* What only a Minecraft handshake can carry (rewrite=, forward_suffix)
 * is refused on a TLS edge, naming the line: SNI cannot be rewritten
 * without terminating TLS. */
static void finish_mc_only(struct config_edge *e, const char *file, struct msglist *errs)
{
    if (e->sniff != EDGE_SNIFF_TLS)
        return;
    if (e->suffix_line)
        EBAD(errs, file, e->suffix_line, e, "forward_suffix",
             "needs a Minecraft handshake (sniff = mc or auto): a TLS ClientHello has no suffix");
    for (uint32_t i = 0; i < e->nroutes; i++) {
        const struct edge_route *r = &e->routes[i];
        if (r->rewrite)
            EBAD(errs, file, r->line, e, "route",
                 "rewrite= needs a Minecraft handshake (sniff = mc or auto): the SNI of a TLS "
                 "ClientHello cannot be rewritten without terminating TLS");
        if (r->suffix >= 0)
            EBAD(errs, file, r->line, e, "route",
                 "forward_suffix= needs a Minecraft handshake (sniff = mc or auto)");
    }
}

/* Signed routes: a keyring, read now (a reload reads it again), and hop
 * only where a Minecraft handshake can carry it. */
static void finish_signed(struct config_edge *e, const char *file, struct msglist *errs)
{
    bool any = false;
    for (uint32_t i = 0; i < e->nroutes; i++) {
        enum edge_signed m = edge_route_signed(e, &e->routes[i]);
        any |= m != EDGE_SIGNED_OFF;
        if (m == EDGE_SIGNED_HOP && e->sniff == EDGE_SNIFF_TLS)
            EBAD(errs, file, e->routes[i].line, e, "route",
                 "signed=hop needs a Minecraft handshake (sniff = mc or auto): TLS SNI cannot "
                 "carry it; use signed=token");
    }
    if (!any && !e->signed_keys)
        return;
    if (!e->signed_keys) {
        msglist_push(errs, "%s: edge %s: signed routes need signed_keys = FILE", e->origin,
                     e->name);
        return;
    }
    char err[600];
    e->ring = malloc(sizeof(*e->ring));
    if (!e->ring || signkey_load(e->signed_keys, e->ring, err, sizeof(err))) {
        EBAD(errs, file, e->signed_keys_line, e, "signed_keys", "%s",
             e->ring ? err : "out of memory");
        free(e->ring);
        e->ring = NULL;
    }
}

static void finish_one(struct config *c, struct config_edge *e, uint32_t idx, const char *file,
                       struct msglist *errs)
{
    if (!e->nlisten)
        msglist_push(errs, "%s: edge %s: no listen address (listen = ADDR:PORT[, ...])", e->origin,
                     e->name);
    if (!e->nroutes && !e->unknown_name)
        msglist_push(errs, "%s: edge %s: no route (route = HOST -> BACKEND[, ...])", e->origin,
                     e->name);
    if (e->unknown_name) {
        char canon[HOSTNAME_MAX + 1];
        const char *n = e->unknown_name;
        unsigned ncaps;
        size_t cl = hostpat_canon(n, strlen(n), canon, &ncaps);
        for (uint32_t i = 0; cl && i < e->nroutes; i++)
            if (!strcmp(e->routes[i].host, canon))
                e->unknown = (int32_t)i;
        if (e->unknown < 0)
            msglist_push(errs,
                         "%s: edge %s: unknown: '%s' is not a route's host in this section "
                         "(expected close, or a host from a route line)",
                         e->origin, e->name, n);
    }
    if (e->unknown >= 0 && edge_route_templated(&e->routes[e->unknown]))
        msglist_push(errs,
                     "%s: edge %s: unknown: route %s fills a backend or rewrite= from captures, "
                     "which an unknown host does not have",
                     e->origin, e->name, e->routes[e->unknown].host);
    finish_signed(e, file, errs);
    finish_mc_only(e, file, errs);
    if (!e->status_ttl_ms)
        e->status_ttl_ms = 3 * e->health_ms;
    if ((e->status_cache || e->offline_motd) && e->sniff == EDGE_SNIFF_TLS)
        msglist_push(errs,
                     "%s: edge %s: status_cache and offline_motd answer Minecraft status: "
                     "not with sniff = tls",
                     e->origin, e->name);
    else if ((e->status_cache || e->offline_motd) && !e->health_ms)
        msglist_push(errs,
                     "%s: edge %s: status_cache and offline_motd need health_check = INTERVAL "
                     "(the checks fill the cache and say when no backend is up)",
                     e->origin, e->name);
    if (e->first_byte_ms > e->hello_ms)
        e->first_byte_ms = e->hello_ms;
    if (e->rate && !e->burst)
        e->burst = e->rate * 2;
    if (e->prefix_rate && !e->prefix_burst)
        e->prefix_burst = e->prefix_rate * 2;
    for (uint32_t i = 0; i < e->nlisten; i++) {
        char origin[200];
        snprintf(origin, sizeof(origin), "%s:%d", file, e->listen_line);
        if (c->nlisten == CONFIG_MAX_LISTEN) {
            msglist_push(errs, "%s: edge %s: listen: more than %d listen addresses in all", origin,
                         e->name, CONFIG_MAX_LISTEN);
            return;
        }
        struct config_listen *l = &c->listen[c->nlisten++];
        memset(l, 0, sizeof(*l));
        l->addr = e->listen[i];
        l->edge = (uint8_t)(idx + 1);
        memcpy(l->origin, origin, sizeof(l->origin) - 1);
        l->origin[sizeof(l->origin) - 1] = '\0';
    }
}

void config_edge_finish(struct config *c, const char *file, struct msglist *errs)
{
    const char *base = file ? file : "?";
    for (uint32_t i = 0; i < c->nedges; i++)
        finish_one(c, &c->edges[i], i, base, errs);
}

void config_edge_free(struct config *c)
{
    for (uint32_t i = 0; i < c->nedges; i++) {
        struct config_edge *e = &c->edges[i];
        for (uint32_t j = 0; j < e->nroutes; j++) {
            free(e->routes[j].host);
            free(e->routes[j].rewrite);
            for (uint32_t k = 0; k < e->routes[j].nbackends; k++)
                free(e->routes[j].backends[k].name);
            free(e->routes[j].backends);
            if (e->routes[j].live) {
                pthread_mutex_destroy(&e->routes[j].live->status_mu);
                for (unsigned k = 0; k < EDGE_STATUS_VERSIONS; k++)
                    free(e->routes[j].live->status[k].json);
            }
            free(e->routes[j].live);
        }
        free(e->routes);
        free(e->live);
        free(e->unknown_name);
        free(e->signed_keys);
        free(e->offline_motd);
        free(e->allow);
        free(e->deny);
        if (e->ring)
            fcrypto_wipe(e->ring, sizeof(*e->ring));
        free(e->ring);
    }
    free(c->edges);
    c->edges = NULL;
    c->nedges = 0;
}
