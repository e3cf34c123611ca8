/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge.c: the keys of [edge NAME] sections (edge.h, docs/edge.md): parse,
 * check, and at the end add each section's listeners to the config's
 * listen list marked as edge listeners. Errors name FILE:LINE. No DNS:
 * backends are numeric addresses; the one file read is the keyring of
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
    uint32_t n, cap;
    bool port0; /* port 0 allowed (a listener: any free port) */
    char bad[200];
};

static int add_addr(void *arg, char *item)
{
    struct addrs *a = arg;
    if (a->n == a->cap) {
        snprintf(a->bad, sizeof(a->bad), "more than %u addresses", a->cap);
        return -E2BIG;
    }
    if (addr_parse(item, -1, &a->v[a->n]) || (a->v[a->n].port == 0 && !a->port0)) {
        snprintf(a->bad, sizeof(a->bad),
                 "'%.80s' is not a numeric address and port (expected e.g. 10.0.0.5:25565 or "
                 "[::1]:443)",
                 item);
        return -EINVAL;
    }
    addr_unmap(&a->v[a->n]);
    a->n++;
    return 0;
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

/* The words of a route's backend list holding '=': the route's own
 * strategy=, proxy_protocol= and signed=, cut out of s (blanked) so that only the
 * addresses are left. */
static int route_options(char *s, int8_t *strategy, int8_t *pp, int8_t *sig, char *bad,
                         size_t badlen)
{
    for (char *p = s; (p = strchr(p, '=')) != NULL;) {
        char *w = p;
        while (w > s && w[-1] != ' ' && w[-1] != '\t' && w[-1] != ',')
            w--;
        char *end = p + strcspn(p, " \t,");
        char word[64];
        snprintf(word, sizeof(word), "%.*s", (int)(end - w), w);
        char *v = strchr(word, '=') + 1;
        enum edge_strategy st;
        if (!strncmp(word, "strategy=", 9) && parse_strategy(v, &st) == 0) {
            *strategy = (int8_t)st;
        } else if (!strncmp(word, "proxy_protocol=", 15) &&
                   (!strcmp(v, "v2") || !strcmp(v, "off"))) {
            *pp = !strcmp(v, "v2");
        } else if (!strncmp(word, "signed=", 7) && parse_signed(v, sig) == 0) {
        } else {
            snprintf(bad, badlen,
                     "'%s' is not a route option (expected strategy=round-robin|least-connections|"
                     "first-healthy, proxy_protocol=v2|off or signed=off|hop|token)",
                     word);
            return -EINVAL;
        }
        memset(w, ' ', (size_t)(end - w));
        p = end;
    }
    return 0;
}

/* route = HOST -> BACKEND[, BACKEND...] [strategy=S] [proxy_protocol=v2|off]
 *         [signed=off|hop|token] */
static void set_route(struct config_edge *e, char *v, const char *file, int line,
                      struct msglist *errs)
{
    char *arrow = strstr(v, "->");
    if (!arrow) {
        EBAD(errs, file, line, e, "route", "expected HOST -> BACKEND[, BACKEND...]");
        return;
    }
    *arrow = '\0';
    char *host = str_trim(v), canon[HOSTNAME_MAX + 3];
    bool wild = !strncmp(host, "*.", 2);
    size_t n = hostname_canon((const uint8_t *)host + (wild ? 2 : 0), strlen(host) - (wild ? 2 : 0),
                              canon + 2);
    if (!n) {
        EBAD(errs, file, line, e, "route",
             "'%.80s' is not a host name (letters, digits, '-' and dots; '*.' only as a "
             "wildcard's first label)",
             host);
        return;
    }
    const char *name = wild ? memcpy(canon, "*.", 2) : canon + 2;
    for (uint32_t i = 0; i < e->nroutes; i++) {
        if (!strcmp(e->routes[i].host, name)) {
            EBAD(errs, file, line, e, "route", "a second route for %s (first on line %d)", name,
                 e->routes[i].line);
            return;
        }
    }
    struct addr b[EDGE_BACKENDS_MAX];
    struct addrs list = {.v = b, .cap = EDGE_BACKENDS_MAX};
    int8_t strategy = -1, pp = -1, sig = -1;
    if (route_options(arrow + 2, &strategy, &pp, &sig, list.bad, sizeof(list.bad))) {
        EBAD(errs, file, line, e, "route", "%s", list.bad);
        return;
    }
    if (split_list(arrow + 2, add_addr, &list) || list.n == 0) {
        EBAD(errs, file, line, e, "route", "%s", list.n || list.bad[0] ? list.bad : "no backend");
        return;
    }
    if (e->nroutes == EDGE_ROUTES_MAX) {
        EBAD(errs, file, line, e, "route", "more than %d routes", EDGE_ROUTES_MAX);
        return;
    }
    struct edge_route *r = realloc(e->routes, (e->nroutes + 1) * sizeof(*r));
    if (!r) {
        EBAD(errs, file, line, e, "route", "out of memory");
        return;
    }
    e->routes = r;
    r = &r[e->nroutes];
    memset(r, 0, sizeof(*r));
    r->host = strdup(name);
    r->backends = calloc(list.n, sizeof(*r->backends));
    r->live = calloc(1, sizeof(*r->live));
    if (r->live && pthread_mutex_init(&r->live->status_mu, NULL)) {
        free(r->live);
        r->live = NULL;
    }
    if (!r->host || !r->backends || !r->live) {
        free(r->host);
        free(r->backends);
        free(r->live);
        EBAD(errs, file, line, e, "route", "out of memory");
        return;
    }
    for (uint32_t i = 0; i < list.n; i++)
        r->backends[i].addr = b[i];
    r->nbackends = list.n;
    r->wildcard = wild;
    r->strategy = strategy;
    r->proxy_v2 = pp;
    r->signed_mode = sig;
    r->line = line;
    e->nroutes++;
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
    int rc = set_scalar(e, key, str_trim(v), &expect);
    if (rc == -ENOENT)
        EBAD(errs, file, line, e, key,
             "unknown key (known: listen, sniff, route, strategy, unknown, proxy_protocol, "
             "first_byte_timeout, hello_timeout, max_hello, max_halfopen, "
             "per_source_connections, per_source_rate, per_source_burst, signed, signed_keys, "
             "signed_skew, signed_max_ttl, health_check, status_cache, offline_motd, allow, deny, "
             "per_prefix_connections, per_prefix_rate, per_prefix_burst, ban_after, ban_window, "
             "ban_time)");
    else if (rc)
        EBAD(errs, file, line, e, key, "'%.200s' is not valid (expected %s)", v, expect);
}

bool config_edge_is_key(const char *key)
{
    static const char *const only[] = {
        "route",           "sniff",
        "unknown",         "first_byte_timeout",
        "hello_timeout",   "max_hello",
        "max_halfopen",    "per_source_connections",
        "per_source_rate", "per_source_burst",
        "signed_keys",     "signed_skew",
        "signed_max_ttl",  "signed",
        "health_check",    "status_cache",
        "offline_motd",    "per_prefix_connections",
        "per_prefix_rate", "per_prefix_burst",
        "ban_after",       "ban_window",
        "ban_time",
    };
    for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++)
        if (!strcmp(key, only[i]))
            return true;
    return false;
}

int32_t edge_route_find(const struct config_edge *e, const char *host)
{
    int32_t best = -1;
    size_t best_len = 0, hl = strlen(host);
    for (uint32_t i = 0; i < e->nroutes; i++) {
        const struct edge_route *r = &e->routes[i];
        if (!r->wildcard) {
            if (!strcmp(r->host, host))
                return (int32_t)i;
            continue;
        }
        size_t sl = strlen(r->host) - 1; /* ".example.com" */
        if (hl > sl && !strcmp(host + hl - sl, r->host + 1) && sl > best_len) {
            best = (int32_t)i;
            best_len = sl;
        }
    }
    return best;
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
        bool wild = !strncmp(n, "*.", 2);
        size_t cl =
            hostname_canon((const uint8_t *)n + (wild ? 2 : 0), strlen(n) - (wild ? 2 : 0), canon);
        for (uint32_t i = 0; cl && i < e->nroutes; i++)
            if (e->routes[i].wildcard == wild && !strcmp(e->routes[i].host + (wild ? 2 : 0), canon))
                e->unknown = (int32_t)i;
        if (e->unknown < 0)
            msglist_push(errs,
                         "%s: edge %s: unknown: '%s' is not a route's host in this section "
                         "(expected close, or a host from a route line)",
                         e->origin, e->name, n);
    }
    finish_signed(e, file, errs);
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
            free(e->routes[j].backends);
            if (e->routes[j].live) {
                pthread_mutex_destroy(&e->routes[j].live->status_mu);
                free(e->routes[j].live->status);
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
