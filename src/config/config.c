/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.c: INI file (via libinih) and command line into struct config.
 *
 * inih does not report line numbers to its handler in Debian's build, so
 * the file is read here, split into lines, and fed to inih one line per
 * reader call; the reader therefore always knows the line being handled.
 * Every key has one row in the key table: its parser, its range and the
 * words used to explain a bad value.
 */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <ifaddrs.h>
#include <ini.h>
#include <net/if.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/rules.h"
#include "auth/userlist.h"
#include "dns/hosts.h"
#include "dns/resolver.h"
#include "util/compiler.h"
#include "util/file.h"
#include "util/parse.h"

#define CONFIG_FILE_MAX     (1u << 20)
#define CONFIG_LINE_MAX     4000
#define CONFIG_INCLUDE_MAX  8   /* files deep, the main file included */
#define CONFIG_INCLUDE_GLOB 256 /* files one include line may name */

/* State of one load: the config being built and where we are in the file. */
struct loader {
    struct config *c;
    struct msglist *errs;
    const char *file;
    int line;     /* line being handled */
    char *text;   /* the whole file */
    char *next;   /* next unread line in text */
    int seen[96]; /* line a key was first set on (by key index), 0 = unset */

    const char *seen_file[96];       /* ... in this file (c->files owns it) */
    int depth;                       /* files being read: the main one is 1 */
    char *stack[CONFIG_INCLUDE_MAX]; /* their real paths, for cycles */
    bool listen_from_file;
    bool workers_auto;
    bool max_conn_auto;
    bool in_rules; /* inside [rules]: lines are rules, not keys */
    bool in_quota; /* inside [quota]: lines go whole to quota.c */
    struct acl_rule *rules;
    uint32_t nrules, caprules;
    struct outbound_list obs;       /* [outbound NAME] sections */
    struct config_outbound *cur_ob; /* the section being read, NULL outside one */
    char ob_seen[1024];             /* "|key|key|": keys the section has set */
    char *default_ob;               /* "outbound = NAME" */
};

struct key {
    const char *name;
    int (*set)(struct loader *ld, const struct key *k, const char *v);
    size_t off;
    uint64_t min, max;
    const char *expect; /* what a valid value looks like, for messages */
    bool repeatable;
};

/* "file:line: key: message" */
static void PRINTF_LIKE(3, 4) bad(struct loader *ld, const char *key, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    if (key)
        msglist_push(ld->errs, "%s:%d: %s: %s", ld->file, ld->line, key, m);
    else
        msglist_push(ld->errs, "%s:%d: %s", ld->file, ld->line, m);
}

static uint32_t *field_u32(struct loader *ld, const struct key *k)
{
    return (uint32_t *)(void *)((char *)ld->c + k->off);
}

static int set_duration(struct loader *ld, const struct key *k, const char *v)
{
    uint64_t ms;
    int rc = parse_duration_ms(v, k->min, k->max, &ms);
    if (rc) {
        bad(ld, k->name, "'%s' is %s (expected %s)", v,
            rc == -ERANGE ? "out of range" : "not a duration", k->expect);
        return rc;
    }
    *field_u32(ld, k) = (uint32_t)ms;
    return 0;
}

/* [tls] ticket_rotation: 0 turns tickets off; otherwise at least 1s, so
 * that a replaced ticket key outlives every reader (tls/ticket.h). */
static int set_ticket_rotation(struct loader *ld, const struct key *k, const char *v)
{
    int rc = set_duration(ld, k, v);
    uint32_t ms = *field_u32(ld, k);
    if (rc == 0 && ms && ms < 1000) {
        bad(ld, k->name, "'%s' is out of range (expected %s)", v, k->expect);
        return -ERANGE;
    }
    return rc;
}

/* A size within the key's range, or an error naming the key. */
static int key_size(struct loader *ld, const struct key *k, const char *v, uint64_t *n)
{
    int rc = parse_size(v, k->min, k->max, n);
    if (rc)
        bad(ld, k->name, "'%s' is %s (expected %s)", v,
            rc == -ERANGE ? "out of range" : "not a size", k->expect);
    return rc;
}

static int set_size(struct loader *ld, const struct key *k, const char *v)
{
    uint64_t n;
    int rc = key_size(ld, k, v, &n);
    if (rc)
        return rc;
    *field_u32(ld, k) = (uint32_t)n;
    return 0;
}

/* 0 means "the kernel's default"; otherwise a size within range. */
static int set_size_or_zero(struct loader *ld, const struct key *k, const char *v)
{
    if (strcmp(v, "0") == 0) {
        *field_u32(ld, k) = 0;
        return 0;
    }
    return set_size(ld, k, v);
}

static int set_u32_or_auto(struct loader *ld, const struct key *k, const char *v, bool *is_auto)
{
    uint64_t n;
    if (strcmp(v, "auto") == 0) {
        *is_auto = true;
        return 0;
    }
    int rc = parse_u64(v, k->min, k->max, &n);
    if (rc) {
        bad(ld, k->name, "'%s' is %s (expected %s)", v,
            rc == -ERANGE ? "out of range" : "not a whole number", k->expect);
        return rc;
    }
    *is_auto = false;
    *field_u32(ld, k) = (uint32_t)n;
    return 0;
}

static int set_workers(struct loader *ld, const struct key *k, const char *v)
{
    return set_u32_or_auto(ld, k, v, &ld->workers_auto);
}

static int set_max_conn(struct loader *ld, const struct key *k, const char *v)
{
    return set_u32_or_auto(ld, k, v, &ld->max_conn_auto);
}

static int set_u32(struct loader *ld, const struct key *k, const char *v)
{
    uint64_t n;
    int rc = parse_u64(v, k->min, k->max, &n);
    if (rc) {
        bad(ld, k->name, "'%s' is %s (expected %s)", v,
            rc == -ERANGE ? "out of range" : "not a whole number", k->expect);
        return rc;
    }
    *field_u32(ld, k) = (uint32_t)n;
    return 0;
}

/* "FILE:LINE: KEY: message" into the config's warnings. */
static void PRINTF_LIKE(3, 4) warn(struct loader *ld, const char *key, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    msglist_push(&ld->c->warnings, "%s:%d: %s: %s", ld->file, ld->line, key, m);
}

/* A limit: malformed, zero or below the minimum keeps the default; above
 * the maximum clamps. Both with a warning, never an error: a typo in a UDP
 * limit should not keep a proxy from starting. k->min/max bound it; the
 * default is whatever the field holds. Keys whose expect text mentions
 * seconds are durations, stored in milliseconds. */
static int set_limit(struct loader *ld, const struct key *k, const char *v)
{
    uint32_t *f = field_u32(ld, k);
    bool duration = strstr(k->expect, "duration") != NULL;
    uint64_t n;
    int rc = duration ? parse_duration_ms(v, 0, UINT64_MAX, &n) : parse_size(v, 0, UINT64_MAX, &n);
    if (rc == -ERANGE) {
        rc = 0; /* more digits than 64 bits hold: far above the maximum */
        n = UINT64_MAX;
    }
    if (rc || n < k->min) {
        warn(ld, k->name, "'%s' is not valid (expected %s); using the default %u%s", v, k->expect,
             duration ? *f / 1000 : *f, duration ? "s" : "");
        return 0;
    }
    if (n > k->max) {
        warn(ld, k->name, "'%s' is above the maximum; using %llu%s", v,
             (unsigned long long)(duration ? k->max / 1000 : k->max), duration ? "s" : "");
        n = k->max;
    }
    *f = (uint32_t)n;
    return 0;
}

static int set_udp_forward(struct loader *ld, const struct key *k, const char *v)
{
    const char *why = NULL;
    if (config_udp_forward_add(ld->c, v, &why) == 0)
        return 0;
    bad(ld, k->name, "'%s' %s (expected %s)", v, why, k->expect);
    return -EINVAL;
}

static int set_advertise(struct loader *ld, const struct key *k, const char *v)
{
    if (addr_parse_ip(v, 0, &ld->c->udp.advertise) || addr_is_any(&ld->c->udp.advertise)) {
        bad(ld, k->name, "'%s' is not a numeric IP address a client can send to", v);
        memset(&ld->c->udp.advertise, 0, sizeof(ld->c->udp.advertise));
        return -EINVAL;
    }
    return 0;
}

static int set_port_range(struct loader *ld, const struct key *k, const char *v)
{
    char lo[16], hi[16];
    const char *dash = strchr(v, '-');
    uint64_t a, b;
    if (!dash || (size_t)(dash - v) >= sizeof(lo) || strlen(dash + 1) >= sizeof(hi)) {
        bad(ld, k->name, "'%s' is not a port range (expected LOW-HIGH, e.g. 40000-40999)", v);
        return -EINVAL;
    }
    memcpy(lo, v, (size_t)(dash - v));
    lo[dash - v] = '\0';
    snprintf(hi, sizeof(hi), "%s", dash + 1);
    if (parse_u64(lo, 1, 65535, &a) || parse_u64(hi, 1, 65535, &b) || a > b) {
        bad(ld, k->name, "'%s' is not a port range (expected LOW-HIGH within 1..65535)", v);
        return -EINVAL;
    }
    ld->c->udp.port_lo = (uint16_t)a;
    ld->c->udp.port_hi = (uint16_t)b;
    return 0;
}

static int set_size64(struct loader *ld, const struct key *k, const char *v)
{
    uint64_t n;
    int rc = key_size(ld, k, v, &n);
    if (rc)
        return rc;
    *(uint64_t *)(void *)((char *)ld->c + k->off) = n;
    return 0;
}

static int set_rules_default(struct loader *ld, const struct key *k, const char *v)
{
    if (!strcasecmp(v, "allow"))
        ld->c->rules_default = ACL_ALLOW;
    else if (!strcasecmp(v, "deny"))
        ld->c->rules_default = ACL_DENY;
    else {
        bad(ld, k->name, "'%s' is not allow or deny", v);
        return -EINVAL;
    }
    return 0;
}

static int set_bool(struct loader *ld, const struct key *k, const char *v)
{
    bool b;
    if (parse_bool(v, &b)) {
        bad(ld, k->name, "'%s' is not a boolean (expected %s)", v, k->expect);
        return -EINVAL;
    }
    *(bool *)(void *)((char *)ld->c + k->off) = b;
    return 0;
}

static int set_log_level(struct loader *ld, const struct key *k, const char *v)
{
    if (log_level_parse(v, &ld->c->log_level)) {
        bad(ld, k->name, "'%s' is not a log level (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

static int set_log_format(struct loader *ld, const struct key *k, const char *v)
{
    if (strcmp(v, "text") && strcmp(v, "json")) {
        bad(ld, k->name, "'%s' is not a log format (expected %s)", v, k->expect);
        return -EINVAL;
    }
    ld->c->log_format = v[0] == 'j' ? LOG_FMT_JSON : LOG_FMT_TEXT;
    return 0;
}

static int set_log_target(struct loader *ld, const struct key *k, const char *v)
{
    static const char *const names[] = {"file", "stderr", "syslog"};
    for (size_t i = 0; i < ARRAY_LEN(names); i++) {
        if (strcmp(v, names[i]) == 0) {
            ld->c->log_target = (enum log_target)(LOG_TARGET_FILE + i);
            return 0;
        }
    }
    bad(ld, k->name, "'%s' is not a log target (expected %s)", v, k->expect);
    return -EINVAL;
}

static int set_syslog_address(struct loader *ld, const struct key *k, const char *v)
{
    struct sockaddr_storage sa;
    socklen_t len;
    if (log_syslog_address(v, &sa, &len) < 0) {
        bad(ld, k->name, "'%s' is not a syslog address (expected %s)", v, k->expect);
        return -EINVAL;
    }
    free(ld->c->syslog_address);
    ld->c->syslog_address = strdup(v);
    return 0;
}

static int set_syslog_facility(struct loader *ld, const struct key *k, const char *v)
{
    if (log_facility_parse(v, &ld->c->syslog_facility)) {
        bad(ld, k->name, "'%s' is not a syslog facility (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

static int set_string(struct loader *ld, const struct key *k, const char *v)
{
    char **field = (char **)(void *)((char *)ld->c + k->off);
    char *s = strdup(v);
    if (!s) {
        bad(ld, k->name, "out of memory");
        return -ENOMEM;
    }
    free(*field);
    *field = *v ? s : (free(s), NULL);
    return 0;
}

static int set_metrics_listen(struct loader *ld, const struct key *k, const char *v)
{
    memset(&ld->c->metrics_listen, 0, sizeof(ld->c->metrics_listen));
    if (!*v)
        return 0;
    if (addr_parse(v, -1, &ld->c->metrics_listen)) {
        memset(&ld->c->metrics_listen, 0, sizeof(ld->c->metrics_listen));
        bad(ld, k->name, "'%s' is not a numeric address and port (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

/* user and group must exist now: a typo should fail --check, not the
 * start of a service. */
static int set_account(struct loader *ld, const struct key *k, const char *v)
{
    bool is_user = strcmp(k->name, "user") == 0;
    if (*v && is_user && !getpwnam(v)) {
        bad(ld, k->name, "no such user '%s'", v);
        return -EINVAL;
    }
    if (*v && !is_user && !getgrnam(v)) {
        bad(ld, k->name, "no such group '%s'", v);
        return -EINVAL;
    }
    return set_string(ld, k, v);
}

static int set_proxy_from(struct loader *ld, const struct key *k, const char *v)
{
    struct config *c = ld->c;
    char word[80];
    free(c->proxy_from);
    c->proxy_from = NULL;
    c->nproxy_from = 0;
    for (const char *p = v + strspn(v, ", \t"); *p; p += strspn(p, ", \t")) {
        size_t n = strcspn(p, ", \t");
        struct acl_cidr cidr;
        snprintf(word, sizeof(word), "%.*s", (int)(n < sizeof(word) ? n : sizeof(word) - 1), p);
        if (n >= sizeof(word) || acl_cidr_parse(word, &cidr)) {
            bad(ld, k->name, "'%.*s' is not an address or range (expected %s)", (int)n, p,
                k->expect);
            return -EINVAL;
        }
        struct acl_cidr *grown = realloc(c->proxy_from, (c->nproxy_from + 1) * sizeof(*grown));
        if (!grown) {
            bad(ld, k->name, "out of memory");
            return -ENOMEM;
        }
        c->proxy_from = grown;
        c->proxy_from[c->nproxy_from++] = cidr;
        p += n;
    }
    return 0;
}

static int set_splice(struct loader *ld, const struct key *k, const char *v)
{
    bool b;
    if (strcmp(v, "auto") == 0) {
        ld->c->splice = SPLICE_AUTO;
    } else if (parse_bool(v, &b) == 0) {
        ld->c->splice = b ? SPLICE_ALWAYS : SPLICE_NEVER;
    } else {
        bad(ld, k->name, "'%s' is not valid (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

/* One listen address; origin says where it came from for later messages. */
static int add_listen(struct config *c, struct msglist *errs, const char *text, const char *origin)
{
    if (c->nlisten == CONFIG_MAX_LISTEN) {
        msglist_push(errs, "%s: listen: more than %d addresses", origin, CONFIG_MAX_LISTEN);
        return -E2BIG;
    }
    struct config_listen *l = &c->listen[c->nlisten];
    l->tls = strncmp(text, "tls://", 6) == 0;
    if (l->tls)
        text += 6;
    if (addr_parse(text, -1, &l->addr)) {
        msglist_push(errs,
                     "%s: listen: '%s' is not a numeric address and port "
                     "(expected e.g. 127.0.0.1:1080 or [::1]:1080)",
                     origin, text);
        return -EINVAL;
    }
    snprintf(l->origin, sizeof(l->origin), "%s", origin);
    c->nlisten++;
    return 0;
}

int config_parse_protocols(const char *s, uint8_t *mask)
{
    static const struct {
        const char *name;
        uint8_t bit;
    } names[] = {{"socks5", PROTO_SOCKS5}, {"socks4", PROTO_SOCKS4}, {"http", PROTO_HTTP}};
    uint8_t m = 0;
    while (*s) {
        size_t n = strcspn(s, ",+ \t");
        if (n) {
            size_t i;
            for (i = 0; i < ARRAY_LEN(names); i++)
                if (strlen(names[i].name) == n && strncasecmp(s, names[i].name, n) == 0)
                    break;
            if (i == ARRAY_LEN(names))
                return -EINVAL;
            m |= names[i].bit;
        }
        s += n;
        s += strspn(s, ",+ \t");
    }
    if (!m)
        return -EINVAL;
    *mask = m;
    return 0;
}

const char *config_protocols_name(uint8_t mask, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s", mask & PROTO_SOCKS5 ? "socks5" : "",
             (mask & PROTO_SOCKS5) && (mask & (PROTO_SOCKS4 | PROTO_HTTP)) ? "+" : "",
             mask & PROTO_SOCKS4 ? "socks4" : "",
             (mask & PROTO_SOCKS4) && (mask & PROTO_HTTP) ? "+" : "",
             mask & PROTO_HTTP ? "http" : "");
    return buf;
}

static int set_protocols(struct loader *ld, const struct key *k, const char *v)
{
    if (config_parse_protocols(v, &ld->c->protocols)) {
        bad(ld, k->name, "'%s' is not a protocol list (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

static int set_via(struct loader *ld, const struct key *k, const char *v)
{
    bool b;
    if (parse_bool(v, &b) == 0) {
        snprintf(ld->c->http.via, sizeof(ld->c->http.via), "%s", b ? "ferry" : "");
        return 0;
    }
    size_t n = strlen(v);
    if (n == 0 || n >= sizeof(ld->c->http.via)) {
        bad(ld, k->name, "'%s' is not valid (expected %s)", v, k->expect);
        return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= 0x20 || c >= 0x7f || c == ',') {
            bad(ld, k->name, "'%s' is not valid (expected %s)", v, k->expect);
            return -EINVAL;
        }
    }
    snprintf(ld->c->http.via, sizeof(ld->c->http.via), "%s", v);
    return 0;
}

/* One option of a listen address ("protocols=http"); 0 or -EINVAL. */
static int set_listen_option(struct loader *ld, struct config_listen *l, const char *word)
{
    uint8_t mask;
    if (strncmp(word, "proxy_protocol=", 15) == 0) {
        const char *pv = word + 15;
        uint8_t ver = strcmp(pv, "v1") == 0 ? 1 : strcmp(pv, "v2") == 0 ? 2 : 0;
        if (!ver) {
            bad(ld, "listen", "'%s' is not a PROXY protocol version (expected v1 or v2)", pv);
            return -EINVAL;
        }
        l->proxy_protocol = ver;
    } else if (strncmp(word, "source=", 7) == 0) {
        if (strchr(word + 7, '=') || config_source_parse(word + 7, &l->source)) {
            bad(ld, "listen", "source: '%s' is not an IP address (expected e.g. 192.0.2.7)",
                word + 7);
            return -EINVAL;
        }
    } else if (strncmp(word, "device=", 7) == 0) {
        int rc = config_source_parse(word, &l->source);
        if (rc) {
            bad(ld, "listen", "device: '%s' %s", word + 7,
                rc == -ENODEV ? "is not a network interface of this host"
                              : "is not an interface name");
            return -EINVAL;
        }
    } else if (strncmp(word, "forward=", 8) == 0) {
        int rc =
            parse_host_port(word + 8, l->forward_host, sizeof(l->forward_host), &l->forward_port);
        if (rc) {
            bad(ld, "listen", "forward: '%s' %s", word + 8,
                rc == -ERANGE ? "has a port outside 1-65535"
                              : "is not HOST:PORT (expected e.g. 10.0.0.5:80, db.internal:5432 "
                                "or [2001:db8::1]:80)");
            return -EINVAL;
        }
    } else if (strncmp(word, "websocket=", 10) == 0 || strncmp(word, "decoy=", 6) == 0) {
        char why[300];
        if (config_listen_ws(l, word, why, sizeof(why))) {
            bad(ld, "listen", "%s", why);
            return -EINVAL;
        }
    } else if (strncmp(word, "protocols=", 10) != 0) {
        bad(ld, "listen",
            "unknown option '%s' (known: protocols=socks5+socks4+http, proxy_protocol=v1|v2, "
            "source=ADDR, device=NAME, forward=HOST:PORT, websocket=/PATH, decoy=HOST:PORT)",
            word);
        return -EINVAL;
    } else if (config_parse_protocols(word + 10, &mask)) {
        bad(ld, "listen", "'%s' is not a protocol list (socks5, socks4, http joined by +)",
            word + 10);
        return -EINVAL;
    } else {
        l->protocols = mask;
    }
    return 0;
}

/* "listen" may be given several times and each value may hold several
 * addresses separated by commas or spaces. A word with '=' is an option of
 * the address before it: "listen = 127.0.0.1:8080 protocols=http". The
 * first listen line in the file replaces the built-in default. */
static int set_listen(struct loader *ld, const struct key *k, const char *v)
{
    (void)k;
    char origin[160], word[128];
    snprintf(origin, sizeof(origin), "%s:%d", ld->file, ld->line);
    if (!ld->listen_from_file) {
        ld->c->nlisten = 0;
        ld->listen_from_file = true;
    }
    if (!strcmp(v, "none"))
        return 0; /* no local listener (a client with only reverse remotes) */
    int rc = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ", \t");
        if (n > 0) {
            if (n >= sizeof(word)) {
                bad(ld, "listen", "address too long");
                return -EINVAL;
            }
            memcpy(word, p, n);
            word[n] = '\0';
            if (strchr(word, '=')) {
                if (ld->c->nlisten == 0) {
                    bad(ld, "listen", "option '%s' before any address", word);
                    rc = -EINVAL;
                } else if (set_listen_option(ld, &ld->c->listen[ld->c->nlisten - 1], word)) {
                    rc = -EINVAL;
                }
            } else if (add_listen(ld->c, ld->errs, word, origin)) {
                rc = -EINVAL;
            }
        }
        p += n;
        p += strspn(p, ", \t");
    }
    if (!rc && ld->c->nlisten == 0) {
        bad(ld, "listen", "no address given");
        rc = -EINVAL;
    }
    return rc;
}

/* [dns] servers: addresses with optional ports (53), separated by commas
 * or spaces, kept as the "ip:port,[ip6]:port" list c-ares takes. */
static int set_dns_servers(struct loader *ld, const struct key *k, const char *v)
{
    char csv[DNS_MAX_SERVERS * (ADDR_STRLEN + 1)] = "", word[128];
    size_t used = 0, n = 0;
    for (const char *p = v + strspn(v, ", \t"); *p; p += strspn(p, ", \t")) {
        size_t len = strcspn(p, ", \t");
        struct addr a;
        snprintf(word, sizeof(word), "%.*s", (int)len, p);
        p += len;
        if (len >= sizeof(word) || addr_parse(word, 53, &a) || a.port == 0) {
            bad(ld, k->name, "'%s' is not a server address (expected %s)", word, k->expect);
            return -EINVAL;
        }
        if (++n > DNS_MAX_SERVERS) {
            bad(ld, k->name, "more than %d servers", DNS_MAX_SERVERS);
            return -EINVAL;
        }
        char f[ADDR_STRLEN];
        used += (size_t)snprintf(csv + used, sizeof(csv) - used, "%s%s", n > 1 ? "," : "",
                                 addr_format(&a, f, sizeof(f)));
    }
    if (n == 0) {
        bad(ld, k->name, "no server given (expected %s)", k->expect);
        return -EINVAL;
    }
    free(ld->c->dns.servers);
    ld->c->dns.servers = strdup(csv);
    return ld->c->dns.servers ? 0 : -ENOMEM;
}

/* [dns] hosts: "none", or a hosts file read now (relative to the config
 * file's directory); a file that cannot be read is an error. */
static int set_dns_hosts(struct loader *ld, const struct key *k, const char *v)
{
    struct config_dns *d = &ld->c->dns;
    d->hosts = strdup(v);
    d->hosts_line = ld->line;
    if (!d->hosts)
        return -ENOMEM;
    if (strcmp(v, "none") == 0)
        return 0;
    if (!*v) {
        bad(ld, k->name, "empty (expected %s)", k->expect);
        return -EINVAL;
    }
    char path[4096];
    const char *slash = strrchr(ld->file, '/');
    if (v[0] != '/' && slash)
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - ld->file), ld->file, v);
    else
        snprintf(path, sizeof(path), "%s", v);
    int rc = dns_hosts_load(path, &d->hosts_table);
    if (rc)
        bad(ld, k->name, "cannot read %s: %s", path,
            rc == -EFBIG ? "larger than 64 MiB" : strerror(-rc));
    return rc;
}

static int set_ip_preference(struct loader *ld, const struct key *k, const char *v)
{
    if (outbound_ip_preference_parse(v, &ld->c->ip_preference)) {
        bad(ld, k->name, "'%s' is not an IP preference (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

#define OFF(f) offsetof(struct config, f)
#define DAY_MS (24ull * 3600 * 1000)

/* outbound = NAME: where sessions go that no rule sends elsewhere; the
 * name is found once every [outbound] section is read. */
static int set_default_outbound(struct loader *ld, const struct key *k, const char *v)
{
    (void)k;
    free(ld->default_ob);
    ld->default_ob = strdup(v);
    return ld->default_ob ? 0 : -ENOMEM;
}

/* [tls] min_version: "1.2" or "1.3". */
static int set_tls_version(struct loader *ld, const struct key *k, const char *v)
{
    if (strcmp(v, "1.2") && strcmp(v, "1.3")) {
        bad(ld, k->name, "'%s' is not a TLS version (expected %s)", v, k->expect);
        return -EINVAL;
    }
    ld->c->tls.min_version = v[2] == '2' ? 12 : 13;
    return 0;
}

/* [tls] cert and key: a path, and the line for later messages. */
static int set_tls_file(struct loader *ld, const struct key *k, const char *v)
{
    int rc = set_string(ld, k, v);
    if (!rc) {
        bool cert = k->off == OFF(tls.cert);
        *(cert ? &ld->c->tls.cert_line : &ld->c->tls.key_line) = ld->line;
        *(cert ? &ld->c->tls.cert_src : &ld->c->tls.key_src) = ld->file;
    }
    return rc;
}

static const struct key keys[] = {
    {"outbound", set_default_outbound, 0, 0, 0, "an outbound's name", false},
    {"listen", set_listen, 0, 0, 0, "ADDR:PORT [protocols=...][, ADDR:PORT...]", true},
    {"workers", set_workers, OFF(workers), 1, CONFIG_MAX_WORKERS, "auto or 1..256", false},
    {"handshake_timeout", set_duration, OFF(handshake_timeout_ms), 1, DAY_MS,
     "a duration such as 10s or 500ms, up to 24h", false},
    {"connect_timeout", set_duration, OFF(connect_timeout_ms), 1, DAY_MS,
     "a duration such as 10s or 500ms, up to 24h", false},
    {"iotimeout", set_duration, OFF(iotimeout_ms), 0, 7 * DAY_MS,
     "a duration such as 5m, up to 7 days; 0 disables", false},
    {"shutdown_timeout", set_duration, OFF(shutdown_timeout_ms), 0, DAY_MS,
     "a duration such as 30s, up to 24h", false},
    {"max_connections", set_max_conn, OFF(max_connections), 1, 10000000, "auto or 1..10000000",
     false},
    {"backlog", set_u32, OFF(backlog), 1, 65535, "1..65535", false},
    {"buffer_size", set_size, OFF(buffer_size), 1024, 1 << 20, "a size from 1k to 1m", false},
    {"pipe_size", set_size_or_zero, OFF(pipe_size), 4096, 1 << 20,
     "0 for the kernel default, or a size from 4k to 1m", false},
    {"splice", set_splice, 0, 0, 0, "auto, yes or no", false},
    {"log_level", set_log_level, 0, 0, 0, "debug, info, warn or error", false},
    {"log_file", set_string, OFF(log_file), 0, 0, "a file path, or empty for stderr", false},
    {"access_log", set_bool, OFF(access_log), 0, 0, "yes or no", false},
    {"log_format", set_log_format, 0, 0, 0, "text or json", false},
    {"log_target", set_log_target, 0, 0, 0, "file, stderr or syslog", false},
    {"syslog_address", set_syslog_address, 0, 0, 0,
     "a unix datagram socket path such as /dev/log, or udp://IP:PORT", false},
    {"syslog_facility", set_syslog_facility, 0, 0, 0, "daemon or local0..local7", false},
    {"log_session_start", set_bool, OFF(log_session_start), 0, 0, "yes or no", false},
    {"open_proxy", set_bool, OFF(open_proxy), 0, 0, "yes or no", false},
    {"protocols", set_protocols, 0, 0, 0, "socks5, socks4 and/or http, e.g. socks5,http", false},
    {"rules_file", set_string, OFF(rules_file), 0, 0, "a file of rules, one per line", false},
    {"rules_default", set_rules_default, 0, 0, 0, "allow or deny", false},
    /* [limits] */
    {"limits.per_ip", set_u32, OFF(limits.per_ip), 0, 1000000, "0..1000000; 0 is unlimited", false},
    {"limits.per_user", set_u32, OFF(limits.per_user), 0, 1000000, "0..1000000; 0 is unlimited",
     false},
    {"limits.rate", set_u32, OFF(limits.rate), 0, 1000000,
     "new connections per second per address, 0..1000000; 0 is off", false},
    {"limits.burst", set_u32, OFF(limits.burst), 1, 1000000, "1..1000000", false},
    {"limits.ip_table", set_u32, OFF(limits.ip_table), 64, 16777216, "64..16777216", false},
    {"limits.bandwidth_user", set_size64, OFF(limits.bw_user), 0, 1ull << 40,
     "bytes per second such as 1m; 0 is unlimited", false},
    {"limits.bandwidth_connection", set_size64, OFF(limits.bw_conn), 0, 1ull << 40,
     "bytes per second such as 1m; 0 is unlimited", false},
    {"bind", set_bool, OFF(bind), 0, 0, "yes or no", false},
    {"user", set_account, OFF(user), 0, 0, "a user name", false},
    {"group", set_account, OFF(group), 0, 0, "a group name", false},
    {"proxy_protocol_from", set_proxy_from, 0, 0, 0,
     "addresses or ranges such as 10.0.0.0/8, 192.0.2.7", false},
    /* [metrics] */
    {"metrics.listen", set_metrics_listen, 0, 0, 0, "ADDR:PORT such as 127.0.0.1:9090, or empty",
     false},
    {"metrics.admin", set_bool, OFF(metrics_admin), 0, 0, "yes or no", false},
    {"metrics.admin_token_file", set_string, OFF(admin_token_file), 0, 0,
     "a file whose first line is the admin token", false},
    {"bind_timeout", set_duration, OFF(bind_timeout_ms), 1000, DAY_MS, "a duration from 1s to 24h",
     false},
    /* [http] */
    {"http.max_header", set_size, OFF(http.max_header), 1024, 1 << 20, "a size from 1k to 1m",
     false},
    {"http.max_line", set_size, OFF(http.max_line), 256, 1 << 20, "a size from 256 to 1m", false},
    {"http.via", set_via, 0, 0, 0, "yes, no, or a pseudonym such as proxy-1", false},
    {"http.keepalive_timeout", set_duration, OFF(http.keepalive_ms), 1000, DAY_MS,
     "a duration from 1s to 24h", false},
    {"http.pool_size", set_u32, OFF(http.pool_size), 0, 100000, "0..100000", false},
    {"http.response_timeout", set_duration, OFF(http.response_ms), 1000, DAY_MS,
     "a duration from 1s to 24h", false},
    {"http.pool_idle", set_duration, OFF(http.pool_idle_ms), 1000, DAY_MS,
     "a duration from 1s to 24h", false},
    {"http.body_timeout", set_duration, OFF(http.body_ms), 100, DAY_MS,
     "a duration from 100ms to 24h", false},
    /* [auth] */
    {"auth.userlist", set_string, OFF(auth.userlist), 0, 0,
     "a file of NAME:$argon2id$... or NAME:plain:SECRET lines", false},
    {"auth.helper", set_string, OFF(auth.helper), 0, 0,
     "a program and its arguments, e.g. /usr/lib/squid/basic_ncsa_auth /etc/squid/passwd", false},
    {"auth.helper_children", set_u32, OFF(auth.helper_children), 1, 64, "1..64", false},
    {"auth.helper_timeout", set_duration, OFF(auth.helper_timeout_ms), 100, 60000,
     "a duration from 100ms to 60s", false},
    {"auth.pam_service", set_string, OFF(auth.pam_service), 0, 0,
     "a PAM service name (a file in /etc/pam.d)", false},
    {"auth.workers", set_u32, OFF(auth.workers), 1, 64, "1..64", false},
    {"auth.queue", set_u32, OFF(auth.queue), 1, 65536, "1..65536", false},
    {"auth.cachettl", set_duration, OFF(auth.cachettl_ms), 0, DAY_MS,
     "seconds (or a duration such as 5m), up to 24h; 0 disables the cache", false},
    {"auth.cache_size", set_u32, OFF(auth.cache_size), 4, 10000000, "4..10000000", false},
    {"auth.max_failures", set_u32, OFF(auth.max_failures), 0, 1000000,
     "0..1000000; 0 disables throttling", false},
    {"auth.failure_window", set_duration, OFF(auth.failure_window_ms), 1000, DAY_MS,
     "a duration from 1s to 24h", false},
    {"auth.block_time", set_duration, OFF(auth.block_ms), 1000, DAY_MS, "a duration from 1s to 24h",
     false},
    /* [udp]: limits fall back or clamp with a warning (set_limit) */
    {"udp.associations", set_limit, OFF(udp.associations), 1, 100000, "1..100000", false},
    {"udp.destinations", set_limit, OFF(udp.destinations), 1, 65536, "1..65536", false},
    {"udp.idle", set_limit, OFF(udp.idle_ms), 500, DAY_MS, "a duration from 500ms to 24h", false},
    {"udp.max_datagram", set_limit, OFF(udp.max_datagram), 11, 65507, "11..65507 bytes", false},
    {"udp.queue", set_limit, OFF(udp.queue), 1, 4096, "1..4096", false},
    {"udp.tunnel_queue", set_limit, OFF(udp.tunnel_queue), 1, 1024, "1..1024", false},
    {"udp.tunnel_queue_bytes", set_limit, OFF(udp.tunnel_bytes), 1024, 16u << 20, "1k..16m bytes",
     false},
    {"udp.advertise", set_advertise, 0, 0, 0, "an IP address", false},
    {"udp.ports", set_port_range, 0, 0, 0, "LOW-HIGH", false},
    {"udp.gso", set_bool, OFF(udp.gso), 0, 0, "yes or no", false},
    {"udp.gro", set_bool, OFF(udp.gro), 0, 0, "yes or no", false},
    {"udp.forward", set_udp_forward, 0, 0, 0, "[ADDR:]PORT HOST:PORT", true},
    /* [dns] */
    {"dns.servers", set_dns_servers, 0, 0, 0,
     "addresses with optional ports, e.g. 1.1.1.1, [2606:4700::1111]:53, 127.0.0.1:5353", false},
    {"dns.cache_size", set_u32, OFF(dns.cache_size), 0, DNS_CACHE_MAX,
     "answers kept per worker, 0..1048576; 0 disables the cache", false},
    {"dns.min_ttl", set_duration, OFF(dns.min_ttl_ms), 0, DAY_MS, "a duration up to 24h", false},
    {"dns.max_ttl", set_duration, OFF(dns.max_ttl_ms), 0, DAY_MS, "a duration up to 24h", false},
    {"dns.timeout", set_duration, OFF(dns.timeout_ms), 100, 60000, "a duration from 100ms to 60s",
     false},
    {"dns.tries", set_u32, OFF(dns.tries), 1, 10, "1..10", false},
    {"dns.hosts", set_dns_hosts, 0, 0, 0, "a hosts file, or none", false},
    /* [tls] */
    {"tls.cert", set_tls_file, OFF(tls.cert), 0, 0, "a PEM file: the certificate and its chain",
     false},
    {"tls.key", set_tls_file, OFF(tls.key), 0, 0, "a PEM file: the certificate's private key",
     false},
    {"tls.min_version", set_tls_version, 0, 0, 0, "1.2 or 1.3", false},
    {"tls.handshake_timeout", set_duration, OFF(tls.handshake_ms), 100, DAY_MS,
     "a duration from 100ms to 24h", false},
    {"tls.per_ip_handshakes", set_u32, OFF(tls.per_ip_handshakes), 0, 65535,
     "0..65535; 0 is unlimited", false},
    {"tls.ticket_rotation", set_ticket_rotation, OFF(tls.ticket_rotation_ms), 0, 7 * DAY_MS,
     "0 (no session tickets) or a duration from 1s to 7d", false},
    {"ip_preference", set_ip_preference, 0, 0, 0, "any, ipv4, ipv6, ipv4-first or ipv6-first",
     false},
};
_Static_assert(ARRAY_LEN(keys) <= 96, "loader.seen is too small");

/* Sections a file may contain; keys in them are named "section.key". */
static const char *const sections[] = {"auth",    "udp", "http", "rules", "limits",
                                       "metrics", "dns", "tls",  "http2", "quota"};

/* Edit distance, for "did you mean" on unknown keys. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
            diag = up;
        }
    }
    return row[lb];
}

/* Strip one pair of surrounding double quotes, if present. */
static const char *unquote(const char *v, char *buf, size_t cap)
{
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"' && n - 2 < cap) {
        memcpy(buf, v + 1, n - 2);
        buf[n - 2] = '\0';
        return buf;
    }
    return v;
}

/* The places where a key named name exists other than qname, the key as
 * written ("per_ip" at the top finds "[limits] per_ip"; "workers" in
 * [limits] finds "'workers' at the top (before any section)"). Returns how
 * many were found; out lists them joined by " or ". */
static size_t misplaced_hint(const char *qname, const char *name, char *out, size_t cap)
{
    size_t n = 0, used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ARRAY_LEN(keys) && used < cap; i++) {
        const char *dot = strchr(keys[i].name, '.');
        const char *base = dot ? dot + 1 : keys[i].name;
        if (strcmp(base, name) != 0 || strcmp(keys[i].name, qname) == 0)
            continue;
        int w;
        if (dot)
            w = snprintf(out + used, cap - used, "%s[%.*s] %s", n ? " or " : "",
                         (int)(dot - keys[i].name), keys[i].name, base);
        else
            w = snprintf(out + used, cap - used, "%s'%s' at the top (before any section)",
                         n ? " or " : "", base);
        if (w < 0)
            break;
        used += (size_t)w;
        n++;
    }
    return n;
}

/* "FILE:LINE" of the line being read, the file's base name as rules have it. */
static void here(const struct loader *ld, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%d", ld->file ? ld->file : "?", ld->line);
}

/* [outbound NAME]: p points after "outbound", end at the ']'. */
static void outbound_header(struct loader *ld, const char *p, const char *end)
{
    char name[160], origin[160], err[300];
    size_t n = (size_t)(end - p);
    snprintf(name, sizeof(name), "%.*s", (int)MIN(n, sizeof(name) - 1), p);
    here(ld, origin, sizeof(origin));
    ld->ob_seen[0] = '\0';
    if (!ld->obs.v && outbound_list_init(&ld->obs) < 0) {
        bad(ld, NULL, "out of memory");
        return;
    }
    int rc = outbound_section(&ld->obs, str_trim(name), origin, &ld->cur_ob, err, sizeof(err));
    if (rc)
        bad(ld, NULL, "%s", rc == -ENOMEM ? "out of memory" : err);
}

/* A key of the [outbound NAME] section being read. */
static void outbound_key(struct loader *ld, const char *section, const char *key, const char *v)
{
    char qname[200], err[600], dir[4096], mark[80];
    snprintf(qname, sizeof(qname), "%s.%s", section, key);
    if (!ld->cur_ob)
        return; /* the header was bad, and said so */
    snprintf(mark, sizeof(mark), "|%s|", key);
    if (strstr(ld->ob_seen, mark) && strcmp(key, "reverse") != 0) { /* reverse adds up */
        bad(ld, qname, "set twice in this section");
        return;
    }
    size_t used = strlen(ld->ob_seen);
    snprintf(ld->ob_seen + used, sizeof(ld->ob_seen) - used, "%s", mark);
    const char *slash = ld->file ? strrchr(ld->file, '/') : NULL;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - ld->file) : 0, ld->file);
    int rc = outbound_set_key(ld->cur_ob, key, v, dir, ld->line, err, sizeof(err));
    if (rc)
        bad(ld, qname, "%s", rc == -ENOMEM ? "out of memory" : err);
}

static int ini_handler_cb(void *user, const char *section, const char *name, const char *value)
{
    struct loader *ld = user;
    char qbuf[CONFIG_LINE_MAX], qname[160];
    if (!strncmp(section, "outbound", 8) && (section[8] == ' ' || section[8] == '\0')) {
        outbound_key(ld, section, name, unquote(value, qbuf, sizeof(qbuf)));
        return 1;
    }
    if (!strncmp(section, "edge ", 5)) {
        config_edge_key(ld->c, name, unquote(value, qbuf, sizeof(qbuf)), ld->file ? ld->file : "?",
                        ld->line, ld->errs);
        return 1;
    }
    if (!section[0] && strncmp(name, "quota.", 6) == 0) {
        /* "quota.accounting = no" at the top, as other sections' keys may
         * be written (ferry bench --proxy-set). */
        snprintf(qbuf, sizeof(qbuf), "%s = %s", name + 6, value);
        config_quota_line(&ld->c->quota, ld->file, ld->line, qbuf, ld->errs);
        return 1;
    }
    if (strcmp(section, "http2") == 0) {
        if (!config_http2_key(ld->c, name, unquote(value, qbuf, sizeof(qbuf)), ld->file, ld->line))
            bad(ld, "http2", "unknown key '%s'", name);
        return 1;
    }
    if (section[0] != '\0') {
        bool known = false;
        for (size_t i = 0; i < ARRAY_LEN(sections); i++)
            known = known || strcmp(section, sections[i]) == 0;
        if (!known)
            return 1; /* the reader reported the unknown section at its header */
        snprintf(qname, sizeof(qname), "%s.%s", section, name);
    } else {
        snprintf(qname, sizeof(qname), "%s", name);
    }
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        const struct key *k = &keys[i];
        if (strcmp(qname, k->name) != 0)
            continue;
        if (ld->seen[i] && !k->repeatable) {
            if (ld->seen_file[i] == ld->file)
                bad(ld, qname, "set twice (first on line %d)", ld->seen[i]);
            else
                bad(ld, qname, "set twice (first at %s:%d)", ld->seen_file[i], ld->seen[i]);
            return 1;
        }
        if (!ld->seen[i]) {
            ld->seen[i] = ld->line;
            ld->seen_file[i] = ld->file;
        }
        k->set(ld, k, unquote(value, qbuf, sizeof(qbuf)));
        return 1;
    }
    char where[400];
    if (!section[0] && config_edge_is_key(name)) {
        bad(ld, qname, "unknown key (it goes in an [edge NAME] section)");
        return 1;
    }
    if (misplaced_hint(qname, name, where, sizeof(where))) {
        bad(ld, qname, "unknown key (did you mean %s?)", where);
        return 1;
    }
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
        size_t d = edit_distance(qname, keys[i].name);
        if (d < best_d) {
            best_d = d;
            best = keys[i].name;
        }
    }
    if (best)
        bad(ld, qname, "unknown key (did you mean '%s'?)", best);
    else
        bad(ld, qname, "unknown key");
    return 1;
}

/* Judge a line's shape before inih sees it, so that syntax errors are
 * reported at their own line and in order with the others. */
/* A rule line: "# comment" ends it; errors name FILE:LINE. */
static void add_rule(struct loader *ld, const char *file, int line, const char *text)
{
    char buf[CONFIG_LINE_MAX + 1], name[4112], err[256];
    snprintf(buf, sizeof(buf), "%s", text);
    char *hash = strchr(buf, '#');
    if (hash)
        *hash = '\0';
    char *t = str_trim(buf);
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\r' || t[n - 1] == '\n' || t[n - 1] == ' '))
        t[--n] = '\0';
    if (!*t || *t == ';')
        return;
    const char *base = strrchr(file, '/');
    snprintf(name, sizeof(name), "%s:%d", base ? base + 1 : file, line);
    if (ld->nrules == ld->caprules) {
        uint32_t cap = ld->caprules ? ld->caprules * 2 : 16;
        struct acl_rule *v = realloc(ld->rules, cap * sizeof(*v));
        if (!v) {
            msglist_push(ld->errs, "%s:%d: out of memory", file, line);
            return;
        }
        ld->rules = v;
        ld->caprules = cap;
    }
    if (acl_rule_parse(t, name, &ld->rules[ld->nrules], err, sizeof(err)) == 0)
        ld->nrules++;
    else
        msglist_push(ld->errs, "%s:%d: rule: %s", file, line, err);
}

/* ---- include ------------------------------------------------------------
 * "include = PATH-OR-GLOB", anywhere in a file (at the top, in a section,
 * in [rules]): relative to the including file's directory; a glob's files
 * are read in sorted order and a glob that matches nothing is fine, a
 * plain path that does not exist is an error. Each included file is read
 * like the main file: it starts outside any section and its sections end
 * with it; after the include line, the including file goes on in the
 * section it was in. CONFIG_INCLUDE_MAX files deep at most; a file that
 * is already being read is a cycle. Keys keep their rules across files
 * (one set twice is an error naming both places). */

static char *ini_reader_cb(char *str, int num, void *stream);
static int ini_handler_cb(void *user, const char *section, const char *name, const char *value);

/* Record path as a file of this config (errors and key origins point into
 * c->files); returns the stored copy, or NULL when out of memory. */
static const char *loader_file(struct loader *ld, const char *path)
{
    msglist_push(&ld->c->files, "%s", path);
    return ld->c->files.n ? ld->c->files.msg[ld->c->files.n - 1] : NULL;
}

/* Read and parse one file: the main one (depth 0) or an included one.
 * Returns 0, or -errno when it could not be read (not said here). */
static int parse_text(struct loader *ld, const char *path, char *text)
{
    static char comment_prefixes[] = ";#";
    const char *file = loader_file(ld, path);
    /* Includes are told apart by their real path (cycles); text from the
     * command line has no file, and its name stands in. */
    char *real = realpath(path, NULL);
    if (!real && errno != ENOMEM)
        real = strdup(path);
    if (!file || !real) {
        free(real);
        free(text);
        return -ENOMEM;
    }
    /* What the including file was doing, restored after. */
    const char *o_file = ld->file;
    int o_line = ld->line;
    char *o_text = ld->text, *o_next = ld->next;
    bool o_rules = ld->in_rules, o_quota = ld->in_quota;
    struct config_outbound *o_ob = ld->cur_ob;
    char o_seen[sizeof(ld->ob_seen)];
    memcpy(o_seen, ld->ob_seen, sizeof(o_seen));

    ld->stack[ld->depth++] = real;
    ld->file = file;
    ld->line = 0;
    ld->text = ld->next = text;
    ld->in_rules = ld->in_quota = false;
    ld->cur_ob = NULL;
    /* Runtime knobs of Debian's libinih: '#' and ';' start comments
     * anywhere, continuation lines are errors, lines up to 4000; with the
     * heap buffer, Debian's build sizes it from ini_initial_alloc. */
    ini_inline_comment_prefixes = comment_prefixes;
    ini_allow_multiline = false;
    ini_use_stack = false;
    ini_max_line = CONFIG_LINE_MAX + 3;
    ini_initial_alloc = CONFIG_LINE_MAX + 3;
    /* Syntax errors were reported line by line by check_line(), so inih's
     * own "first bad line" result adds nothing. */
    if (ini_parse_stream(ini_reader_cb, ld, ini_handler_cb, ld) == -2)
        msglist_push(ld->errs, "%s: out of memory while parsing", path);
    free(ld->text);
    free(ld->stack[--ld->depth]);

    ld->file = o_file;
    ld->line = o_line;
    ld->text = o_text;
    ld->next = o_next;
    ld->in_rules = o_rules;
    ld->in_quota = o_quota;
    ld->cur_ob = o_ob;
    memcpy(ld->ob_seen, o_seen, sizeof(o_seen));
    return 0;
}

/* One file named by an include line at ld->file:ld->line. */
static void include_one(struct loader *ld, const char *path)
{
    char *real = realpath(path, NULL);
    for (int i = 0; real && i < ld->depth; i++) {
        if (strcmp(ld->stack[i], real) == 0) {
            bad(ld, "include", "%s is already being read (an include cycle: %s includes it)", path,
                ld->file);
            free(real);
            return;
        }
    }
    free(real);
    if (ld->depth >= CONFIG_INCLUDE_MAX) {
        bad(ld, "include", "%s: includes nested more than %d files deep", path, CONFIG_INCLUDE_MAX);
        return;
    }
    char *text;
    int rc = file_read_text(path, CONFIG_FILE_MAX, &text, NULL);
    if (rc) {
        bad(ld, "include", "cannot read %s: %s", path,
            rc == -EFBIG    ? "larger than 1 MiB"
            : rc == -EINVAL ? "contains a NUL byte; not a text file"
                            : strerror(-rc));
        return;
    }
    if (parse_text(ld, path, text) < 0)
        bad(ld, "include", "%s: out of memory", path);
}

/* "include = PATTERN" at ld->file:ld->line. */
static void include_line(struct loader *ld, const char *value)
{
    char buf[CONFIG_LINE_MAX + 1], qbuf[CONFIG_LINE_MAX + 1], pat[4096 + CONFIG_LINE_MAX];
    snprintf(buf, sizeof(buf), "%s", value);
    buf[strcspn(buf, "\r\n")] = '\0';
    char *hash = strpbrk(buf, "#;"); /* comments, as inih strips them */
    if (hash && (hash == buf || hash[-1] == ' ' || hash[-1] == '\t'))
        *hash = '\0';
    const char *v = unquote(str_trim(buf), qbuf, sizeof(qbuf));
    if (!*v) {
        bad(ld, "include", "expected a file or a glob such as conf.d/*.conf");
        return;
    }
    const char *slash = strrchr(ld->file, '/');
    if (v[0] != '/' && slash)
        snprintf(pat, sizeof(pat), "%.*s/%s", (int)(slash - ld->file), ld->file, v);
    else
        snprintf(pat, sizeof(pat), "%s", v);
    if (!strpbrk(v, "*?[")) {
        include_one(ld, pat);
        return;
    }
    glob_t g;
    int rc = glob(pat, 0, NULL, &g); /* sorted (C locale: byte order) */
    if (rc == GLOB_NOMATCH)
        return; /* an empty conf.d is fine */
    if (rc) {
        bad(ld, "include", "%s: %s", pat, rc == GLOB_NOSPACE ? "out of memory" : "read error");
        return;
    }
    if (g.gl_pathc > CONFIG_INCLUDE_GLOB)
        bad(ld, "include", "%s matches %zu files (at most %d)", pat, g.gl_pathc,
            CONFIG_INCLUDE_GLOB);
    else
        for (size_t i = 0; i < g.gl_pathc; i++)
            include_one(ld, g.gl_pathv[i]);
    globfree(&g);
}

/* Whether line p is an include line; if so, it is handled here. */
static bool check_include(struct loader *ld, const char *p)
{
    if (strncmp(p, "include", 7) != 0)
        return false;
    const char *q = p + 7 + strspn(p + 7, " \t");
    if (*q != '=' && *q != ':')
        return false;
    include_line(ld, q + 1);
    return true;
}

/* Judge a line before inih sees it. Returns true when the line was a rule
 * (consumed here; inih gets a blank line instead). */
static bool check_line(struct loader *ld, const char *line)
{
    const char *p = line + strspn(line, " \t\r\n");
    if (*p == '\0' || *p == '#' || *p == ';')
        return false;
    if (check_include(ld, p))
        return true;
    if (*p != '[' && ld->in_rules) {
        add_rule(ld, ld->file, ld->line, p);
        return true;
    }
    if (*p != '[' && ld->in_quota) {
        config_quota_line(&ld->c->quota, ld->file, ld->line, p, ld->errs);
        return true;
    }
    if (*p == '[') {
        const char *end0 = strchr(p, ']');
        ld->in_rules = end0 && (size_t)(end0 - p - 1) == 5 && strncmp(p + 1, "rules", 5) == 0;
        ld->in_quota = end0 && (size_t)(end0 - p - 1) == 5 && strncmp(p + 1, "quota", 5) == 0;
        ld->cur_ob = NULL;
        ld->c->cur_edge = -1;
        if (end0 && !strncmp(p + 1, "edge ", 5)) {
            char name[160];
            snprintf(name, sizeof(name), "%.*s", (int)MIN((size_t)(end0 - p - 6), 159), p + 6);
            config_edge_section(ld->c, str_trim(name), ld->file ? ld->file : "?", ld->line,
                                ld->errs);
            return false;
        }
        if (end0 && !strncmp(p + 1, "outbound", 8) && (p[9] == ' ' || p[9] == ']')) {
            outbound_header(ld, p + 9, end0);
            return false;
        }
    }
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end) {
            bad(ld, NULL, "syntax error: section header without ']'");
            return false;
        }
        for (size_t i = 0; i < ARRAY_LEN(sections); i++) {
            if ((size_t)(end - p - 1) == strlen(sections[i]) &&
                strncmp(p + 1, sections[i], strlen(sections[i])) == 0)
                return false;
        }
        bad(ld, NULL,
            "unknown section [%.*s] (known: [auth], [udp], [http], [rules], [limits], [metrics], "
            "[dns], [tls], [http2], [quota], [outbound NAME], [edge NAME]; "
            "other keys go at the top)",
            (int)(end - p - 1), p + 1);
        return false;
    }
    if (!strpbrk(p, "=:"))
        bad(ld, NULL, "syntax error: expected 'key = value', a comment, or a blank line");
    return false;
}

/* inih reader: hand out one line of ld->text per call, tracking its number. */
static char *ini_reader_cb(char *str, int num, void *stream)
{
    struct loader *ld = stream;
    if (!ld->next || !*ld->next)
        return NULL;
    char *nl = strchr(ld->next, '\n');
    size_t n = nl ? (size_t)(nl - ld->next) + 1 : strlen(ld->next);
    ld->line++;
    if (n + 1 > (size_t)num || memchr(ld->next, '\0', n)) {
        bad(ld, NULL, "line longer than %d characters", num - 2);
        str[0] = '\n';
        str[1] = '\0';
    } else {
        memcpy(str, ld->next, n);
        str[n] = '\0';
        if (check_line(ld, str)) {
            str[0] = '\n';
            str[1] = '\0';
        }
    }
    ld->next += n;
    return str;
}

static int read_file(struct loader *ld, const char *path)
{
    int rc = file_read_text(path, CONFIG_FILE_MAX, &ld->text, NULL);
    switch (rc) {
    case 0:
        ld->next = ld->text;
        return 0;
    case -EFBIG:
        msglist_push(ld->errs, "%s: larger than %u bytes", path, CONFIG_FILE_MAX);
        break;
    case -EINVAL:
        msglist_push(ld->errs, "%s: contains a NUL byte; not a text file", path);
        break;
    default:
        msglist_push(ld->errs, "%s: cannot open: %s", path, strerror(-rc));
        break;
    }
    return rc;
}

static void set_defaults(struct config *c)
{
    memset(c, 0, sizeof(*c));
    atomic_init(&c->refs, 1);
    c->cur_edge = -1;
    addr_parse("127.0.0.1:1080", -1, &c->listen[0].addr);
    snprintf(c->listen[0].origin, sizeof(c->listen[0].origin), "built-in default");
    c->nlisten = 1;
    c->handshake_timeout_ms = 10000;
    c->tls.min_version = 13;
    c->tls.handshake_ms = 10000;
    c->tls.per_ip_handshakes = 16;
    c->tls.ticket_rotation_ms = 12u * 3600 * 1000;
    config_http2_defaults(&c->http2);
    config_quota_defaults(&c->quota);
    c->connect_timeout_ms = 10000;
    c->iotimeout_ms = 0;
    c->shutdown_timeout_ms = 30000;
    c->backlog = 4096;
    c->buffer_size = 16384;
    c->pipe_size = 0;
    c->splice = SPLICE_AUTO;
    c->log_level = LOG_INFO;
    c->access_log = true;
    c->syslog_facility = 3; /* daemon */
    c->auth.workers = 4;
    c->auth.helper_children = 4;
    c->auth.helper_timeout_ms = 5000;
    c->auth.queue = 256;
    c->auth.cachettl_ms = 300000;
    c->auth.cache_size = 10000;
    c->auth.max_failures = 10;
    c->auth.failure_window_ms = 60000;
    c->auth.block_ms = 60000;
    c->udp.associations = 100;
    c->udp.destinations = 100;
    c->udp.idle_ms = 60000;
    c->udp.max_datagram = 9012;
    c->udp.gso = true;
    c->udp.gro = true;
    c->udp.queue = 64;
    c->udp.tunnel_queue = 16;
    c->udp.tunnel_bytes = 256u << 10;
    c->protocols = PROTO_ALL;
    c->bind_timeout_ms = 60000;
    c->http.max_header = 65536;
    c->http.max_line = 8192;
    snprintf(c->http.via, sizeof(c->http.via), "ferry");
    c->http.keepalive_ms = 60000;
    c->http.pool_size = 64;
    c->http.pool_idle_ms = 30000;
    c->http.response_ms = 60000;
    c->http.body_ms = 60000; /* nginx's client_body_timeout */
    c->rules_default = ACL_ALLOW;
    c->limits.burst = 20;
    c->limits.ip_table = 65536;
    struct resolver_opts dns;
    resolver_opts_default(&dns);
    c->dns.cache_size = dns.cache_size;
    c->dns.min_ttl_ms = dns.min_ttl_ms;
    c->dns.max_ttl_ms = dns.max_ttl_ms;
    c->dns.timeout_ms = dns.timeout_ms;
    c->dns.tries = dns.tries;
}

/* One row per worker, padded to whole cache lines so workers never share
 * one; the column after the last rule counts the default action. */
static int config_alloc_rule_hits(struct config *c)
{
    size_t per_line = CACHELINE / sizeof(stat_t);
    size_t stride = (c->acl->n + 1 + per_line - 1) / per_line * per_line;
    size_t bytes = stride * c->workers * sizeof(stat_t);
    c->rule_hits = aligned_alloc(CACHELINE, bytes);
    if (!c->rule_hits)
        return -ENOMEM;
    memset(c->rule_hits, 0, bytes);
    c->rule_stride = (uint32_t)stride;
    return 0;
}

/* The outbounds' per-worker counters, rows padded as rule_hits's. */
static int config_alloc_ob_stats(struct config *c)
{
    size_t per_line = CACHELINE / sizeof(stat_t);
    size_t stride = ((size_t)c->noutbounds * OB_STATS + per_line - 1) / per_line * per_line;
    size_t bytes = stride * c->workers * sizeof(stat_t);
    c->ob_stats = aligned_alloc(CACHELINE, bytes);
    if (!c->ob_stats)
        return -ENOMEM;
    memset(c->ob_stats, 0, bytes);
    c->ob_stride = (uint32_t)stride;
    return 0;
}

uint32_t config_rule_count(const struct config *c)
{
    return c->acl ? c->acl->n : 0;
}

unsigned config_default_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > CONFIG_MAX_WORKERS ? CONFIG_MAX_WORKERS : (unsigned)n;
}

const char *config_splice_name(enum splice_mode m)
{
    switch (m) {
    case SPLICE_AUTO:
        return "auto";
    case SPLICE_ALWAYS:
        return "yes";
    case SPLICE_NEVER:
        return "no";
    }
    return "?";
}

/* Sessions use two sockets each; keep some descriptors for listeners, pipes,
 * DNS and logs. */
static uint32_t auto_max_connections(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return 100000;
    uint64_t fds = rl.rlim_cur > 256 ? rl.rlim_cur - 128 : rl.rlim_cur / 2;
    uint64_t n = fds / 2;
    return n < 1 ? 1 : (n > 10000000 ? 10000000 : (uint32_t)n);
}

static void apply_cli(struct config *c, const struct config_cli *cli, struct loader *ld)
{
    if (cli->nlisten) {
        c->nlisten = 0;
        for (size_t i = 0; i < cli->nlisten; i++)
            add_listen(c, ld->errs, cli->listen[i], "command line (-l)");
    }
    if (cli->workers) {
        uint64_t n;
        if (strcmp(cli->workers, "auto") == 0) {
            ld->workers_auto = true;
        } else if (parse_u64(cli->workers, 1, CONFIG_MAX_WORKERS, &n) == 0) {
            c->workers = (unsigned)n;
            ld->workers_auto = false;
        } else {
            msglist_push(ld->errs, "command line (-w): '%s' is not a worker count (expected %s)",
                         cli->workers, "auto or 1..256");
        }
    }
}

/* The line the file set key (its full name, "auth.userlist") at; 0 if
 * it did not. */
static int key_line(const struct loader *ld, const char *key)
{
    for (size_t i = 0; i < ARRAY_LEN(keys); i++)
        if (strcmp(keys[i].name, key) == 0)
            return ld->seen[i];
    return 0;
}

/* The file that set key (the main file or an included one), or the main
 * file's path when none did. */
static const char *key_file(const struct loader *ld, const char *key)
{
    for (size_t i = 0; i < ARRAY_LEN(keys); i++)
        if (strcmp(keys[i].name, key) == 0 && ld->seen_file[i])
            return ld->seen_file[i];
    return ld->file;
}

/* iotimeout for each listener: as set (0 included) when the file sets it;
 * otherwise none on loopback, where a peer that goes away is seen going,
 * and CONFIG_PUBLIC_IOTIMEOUT_MS on a listener other hosts reach (its
 * address is not loopback, or a PROXY header says the client is
 * elsewhere), where a peer can vanish without a FIN and would hold its
 * session forever. */
static void resolve_iotimeout(struct config *c, const struct loader *ld)
{
    bool set = key_line(ld, "iotimeout") != 0;
    for (size_t i = 0; i < c->nlisten; i++) {
        struct config_listen *l = &c->listen[i];
        bool remote = !addr_is_loopback(&l->addr) || l->proxy_protocol;
        l->iotimeout_ms = set ? c->iotimeout_ms : remote ? CONFIG_PUBLIC_IOTIMEOUT_MS : 0;
    }
}

static bool any_public_listener(const struct config *c, const struct config_listen **which)
{
    for (size_t i = 0; i < c->nlisten; i++) {
        if (!c->listen[i].edge && !addr_is_loopback(&c->listen[i].addr)) {
            *which = &c->listen[i];
            return true;
        }
    }
    return false;
}

/* The userlist, named relative to the config file's directory. */
static void load_userlist(struct config *c, const char *cfg_path, int line, struct msglist *errs)
{
    char path[4096];
    const char *ul = c->auth.userlist;
    const char *slash = cfg_path ? strrchr(cfg_path, '/') : NULL;
    if (ul[0] != '/' && slash)
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - cfg_path), cfg_path, ul);
    else
        snprintf(path, sizeof(path), "%s", ul);
    if (access(path, R_OK) < 0) {
        msglist_push(errs, "%s:%d: auth.userlist: cannot read %s: %s", cfg_path, line, path,
                     strerror(errno));
        return;
    }
    if (userlist_load(path, &c->auth.users, errs, &c->warnings) == 0 && c->auth.users->n == 0) {
        msglist_push(errs, "%s:%d: auth.userlist: %s has no users", cfg_path, line, path);
        userlist_unref(c->auth.users);
        c->auth.users = NULL;
    }
}

/* The addresses of this host's interfaces, and their subnets' broadcast
 * addresses: with a listener on a public or wildcard address, they are
 * "our own listening addresses" (protected destinations). */
static void collect_local_addrs(struct config *c)
{
    struct ifaddrs *ifs, *i;
    if (getifaddrs(&ifs) < 0)
        return;
    size_t n = 0;
    for (i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr &&
            (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            n += 2;
    c->local_addrs = calloc(n + c->nlisten, sizeof(*c->local_addrs));
    if (c->local_addrs) {
        for (i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr ||
                (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
                continue;
            addr_from_sockaddr(&c->local_addrs[c->nlocal_addrs++], i->ifa_addr);
            if ((i->ifa_flags & IFF_BROADCAST) && i->ifa_broadaddr &&
                i->ifa_broadaddr->sa_family == AF_INET)
                addr_from_sockaddr(&c->local_addrs[c->nlocal_addrs++], i->ifa_broadaddr);
        }
        for (size_t k = 0; k < c->nlisten; k++)
            c->local_addrs[c->nlocal_addrs++] = c->listen[k].addr;
    }
    freeifaddrs(ifs);
}

/* "FILE:LINE" where key was set, or "FILE" / "built-in defaults". */
static const char *key_origin(const struct loader *ld, const char *key, char *buf, size_t len)
{
    int line = key_line(ld, key);
    if (!ld->file)
        snprintf(buf, len, "built-in defaults");
    else if (line)
        snprintf(buf, len, "%s:%d", key_file(ld, key), line);
    else
        snprintf(buf, len, "%s", ld->file);
    return buf;
}

/* The open-proxy guard: a listener reachable from another host, without
 * authentication, must not let anyone reach anywhere unless the config says
 * so. What counts is what the rules mean (acl_open_rule()), not that some
 * rule lines exist: an empty rules_file, or "deny to 10.0.0.1" under
 * rules_default = allow, is still an open proxy. */
static void check_open_proxy(const struct config *c, const struct loader *ld,
                             const struct config_listen *pub, struct msglist *errs)
{
    if (!pub || c->open_proxy || c->auth.userlist || c->auth.helper || c->auth.pam_service)
        return;
    if (ld->nrules && !c->acl)
        return; /* the rules had errors and were not compiled: those are reported */
    char a[ADDR_STRLEN], where[4200];
    addr_format(&pub->addr, a, sizeof(a));
    if (!c->acl && !c->rules_file) {
        msglist_push(errs,
                     "%s: listen: %s is not a loopback address and no authentication is "
                     "configured, so anyone who can reach it could use this proxy; configure "
                     "[auth] userlist or [rules], or set 'open_proxy = yes' if that is what "
                     "you want",
                     pub->origin, a);
        return;
    }
    int32_t r = acl_open_rule(c->acl, c->rules_default);
    if (r == ACL_OPEN_NONE)
        return;
    if (r >= 0) {
        msglist_push(errs,
                     "%s: listen: %s is not a loopback address and no authentication is "
                     "configured, and the rule at %s lets any client address reach any "
                     "destination, so anyone who can reach it could use this proxy; narrow "
                     "that rule's 'from' or 'to', configure [auth] userlist, or set 'open_proxy "
                     "= yes' if that is what you want",
                     pub->origin, a, c->acl->rules[r].name);
    } else if (!ld->nrules) {
        msglist_push(errs,
                     "%s: listen: %s is not a loopback address and no authentication is "
                     "configured, and rules_file (%s) holds no rule, so rules_default = allow "
                     "lets anyone who can reach it use this proxy; write rules that allow only "
                     "what you mean and set 'rules_default = deny', configure [auth] userlist, "
                     "or set 'open_proxy = yes' if that is what you want",
                     pub->origin, a, key_origin(ld, "rules_file", where, sizeof(where)));
    } else {
        msglist_push(errs,
                     "%s: listen: %s is not a loopback address and no authentication is "
                     "configured, and rules_default = allow lets through whatever no rule "
                     "denies, so anyone who can reach it could use this proxy; set "
                     "'rules_default = deny' (or end the rules with 'deny'), configure [auth] "
                     "userlist, or set 'open_proxy = yes' if that is what you want",
                     pub->origin, a);
    }
}

static void validate(struct config *c, const struct loader *ld, struct msglist *errs)
{
    char where[4200];
    /* A min_ttl above the default max_ttl raises it; above one set, it is
     * an error. */
    if (c->dns.min_ttl_ms > c->dns.max_ttl_ms && !key_line(ld, "dns.max_ttl"))
        c->dns.max_ttl_ms = c->dns.min_ttl_ms;
    if (c->dns.min_ttl_ms > c->dns.max_ttl_ms)
        msglist_push(errs, "%s: dns.min_ttl: longer than dns.max_ttl (%u ms > %u ms)",
                     key_origin(ld, "dns.min_ttl", where, sizeof(where)), c->dns.min_ttl_ms,
                     c->dns.max_ttl_ms);
    const struct config_listen *pub = NULL;
    /* Without authentication or closed rules, any listener reachable from
     * another host makes an open proxy: demand that it be said out loud. */
    c->protect_local = any_public_listener(c, &pub);
    if (c->protect_local)
        collect_local_addrs(c);
    check_open_proxy(c, ld, pub, errs);
    bool any_pp = false;
    for (size_t i = 0; i < c->nlisten; i++) {
        const struct config_listen *l = &c->listen[i];
        if (l->forward_port && (l->tls || l->protocols))
            msglist_push(
                errs, "%s: listen: forward=%s:%u %s (a forward listener speaks no protocol)",
                l->origin, l->forward_host, l->forward_port,
                l->tls ? "cannot be on a tls:// address yet" : "and protocols= exclude each other");
        config_listen_ws_check(l, errs);
        any_pp = any_pp || l->proxy_protocol;
        if (l->proxy_protocol && c->nproxy_from == 0)
            msglist_push(errs,
                         "%s: listen: proxy_protocol=v%u needs proxy_protocol_from = the load "
                         "balancers' addresses (a header from anyone else could fake the client "
                         "address)",
                         l->origin, l->proxy_protocol);
    }
    if (c->nproxy_from && !any_pp)
        msglist_push(&c->warnings,
                     "%s: proxy_protocol_from: no listen address has proxy_protocol=v1 or v2, "
                     "so it has no effect",
                     key_origin(ld, "proxy_protocol_from", where, sizeof(where)));
    if (c->metrics_listen.family) {
        for (size_t i = 0; i < c->nlisten; i++) {
            if (addr_equal(&c->listen[i].addr, &c->metrics_listen) && c->metrics_listen.port) {
                char a[ADDR_STRLEN];
                msglist_push(errs, "%s: metrics.listen: %s is also a proxy listen address (%s)",
                             key_origin(ld, "metrics.listen", where, sizeof(where)),
                             addr_format(&c->metrics_listen, a, sizeof(a)), c->listen[i].origin);
            }
        }
    }
    for (size_t i = 0; i < c->nlisten; i++) {
        for (size_t j = 0; j < i; j++) {
            if (addr_equal(&c->listen[i].addr, &c->listen[j].addr) && c->listen[i].addr.port) {
                char a[ADDR_STRLEN];
                msglist_push(errs, "%s: listen: %s is listed twice (also at %s)",
                             c->listen[i].origin, addr_format(&c->listen[i].addr, a, sizeof(a)),
                             c->listen[j].origin);
            }
        }
    }
}

static bool errs_since(const struct msglist *e, size_t n0)
{
    return e->n != n0;
}

/* A name of an outbound, for a message listing them. */
static void outbound_names(const struct outbound_list *l, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < l->n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", l->v[i].name);
}

/* The outbounds found whole, the default and every rule's "via" named
 * by index; the list moves into the config. */
static void resolve_outbounds(struct loader *ld, struct config *c)
{
    char known[2048], where[4200];
    if (!ld->obs.v && outbound_list_init(&ld->obs) < 0) {
        msglist_push(ld->errs, "out of memory");
        return;
    }
    outbound_list_finish(&ld->obs, ld->file ? ld->file : "?", ld->errs);
    outbound_names(&ld->obs, known, sizeof(known));
    if (ld->default_ob) {
        int k = outbound_find(&ld->obs, ld->default_ob);
        if (k < 0)
            msglist_push(ld->errs, "%s: outbound: '%s' is not an outbound (known: %s)",
                         key_origin(ld, "outbound", where, sizeof(where)), ld->default_ob, known);
        else
            c->default_outbound = (uint16_t)k;
    }
    for (uint32_t i = 0; i < ld->nrules; i++) {
        struct acl_rule *r = &ld->rules[i];
        if (!r->via)
            continue;
        int k = outbound_find(&ld->obs, r->via);
        if (k < 0)
            msglist_push(ld->errs, "%s: rule: via '%s' is not an outbound (known: %s)", r->name,
                         r->via, known);
        r->via_index = k;
    }
    c->ob_health = calloc(ld->obs.n, sizeof(*c->ob_health));
    if (!c->ob_health) {
        msglist_push(ld->errs, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < ld->obs.n; i++)
        atomic_init(&c->ob_health[i].up, 1);
    c->outbounds = ld->obs.v;
    c->noutbounds = ld->obs.n;
    memset(&ld->obs, 0, sizeof(ld->obs));
}

/* rules_file: one rule a line, # comments; relative to the config's
 * directory. */
static void load_rules_file(struct loader *ld, const char *cfg_path)
{
    char path[4096];
    const char *f = ld->c->rules_file;
    const char *slash = cfg_path ? strrchr(cfg_path, '/') : NULL;
    if (f[0] != '/' && slash)
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - cfg_path), cfg_path, f);
    else
        snprintf(path, sizeof(path), "%s", f);
    char *text;
    int rc = file_read_text(path, 64u << 20, &text, NULL);
    if (rc) {
        char where[4200];
        msglist_push(ld->errs, "%s: rules_file: cannot read %s: %s",
                     key_origin(ld, "rules_file", where, sizeof(where)), path,
                     rc == -EFBIG ? "larger than 64 MiB" : strerror(-rc));
        return;
    }
    int line = 0;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        line++;
        add_rule(ld, path, line, p);
        if (!nl)
            break;
        p = nl + 1;
    }
    free(text);
}

/* log_target against the keys that go with it. */
static void check_log_target(struct config *c, const struct loader *ld, struct msglist *errs)
{
    char where[4200];
    if (c->log_target == LOG_TARGET_FILE && !c->log_file)
        msglist_push(errs, "%s: log_target: 'file' needs log_file = PATH",
                     key_origin(ld, "log_target", where, sizeof(where)));
    if (c->log_target != LOG_TARGET_SYSLOG) {
        const char *k = key_line(ld, "syslog_address")    ? "syslog_address"
                        : key_line(ld, "syslog_facility") ? "syslog_facility"
                                                          : NULL;
        if (k)
            msglist_push(&c->warnings, "%s: %s: has no effect without log_target = syslog",
                         key_origin(ld, k, where, sizeof(where)), k);
    }
    if (c->log_target == LOG_TARGET_SYSLOG && c->log_file)
        msglist_push(&c->warnings, "%s: log_file: not written with log_target = syslog",
                     key_origin(ld, "log_file", where, sizeof(where)));
}

/* Reads and parses the configuration file at path (and the files it
 * includes) into ld (errors and warnings go to ld->errs line by line);
 * records the path in the config. */
static void parse_file(struct loader *ld, const char *path)
{
    ld->c->path = strdup(path);
    ld->file = path;
    size_t idx = ld->c->files.n;
    if (read_file(ld, path) == 0 && parse_text(ld, path, ld->text) < 0)
        msglist_push(ld->errs, "%s: out of memory while parsing", path);
    ld->text = ld->next = NULL; /* parse_text() freed it */
    ld->file = ld->c->files.n > idx ? ld->c->files.msg[idx] : path;
}

/* Configuration text given by the command line (ferry client), read as a
 * file named name would be (an include in it is relative to the current
 * directory). */
static void parse_cli_text(struct loader *ld, const char *name, const char *text)
{
    char *copy = strdup(text);
    if (!copy || parse_text(ld, name, copy) < 0)
        msglist_push(ld->errs, "%s: out of memory", name);
}

/* [auth]: the one password backend and its keys (config/auth.c), the
 * userlist read now; or, with no backend, [auth] keys said to be idle. */
static void finish_auth(struct loader *ld, struct msglist *errs)
{
    struct config *c = ld->c;
    if (!c->auth.userlist && !c->auth.helper && !c->auth.pam_service) {
        for (size_t i = 0; i < ARRAY_LEN(keys); i++) {
            if (ld->seen[i] && strncmp(keys[i].name, "auth.", 5) == 0) {
                msglist_push(errs,
                             "%s:%d: %s: [auth] settings without auth.userlist, auth.helper "
                             "or auth.pam_service (add one of them to [auth] to turn "
                             "authentication on)",
                             ld->seen_file[i], ld->seen[i], keys[i].name);
                break;
            }
        }
        return;
    }
    static const char *const bk[5] = {"auth.userlist", "auth.helper", "auth.pam_service",
                                      "auth.helper_children", "auth.helper_timeout"};
    struct config_origin at[5];
    for (int i = 0; i < 5; i++)
        at[i] = (struct config_origin){key_line(ld, bk[i]) ? key_file(ld, bk[i]) : NULL,
                                       key_line(ld, bk[i])};
    config_auth_finish(c, at, errs);
    if (c->auth.userlist && !c->auth.helper && !c->auth.pam_service)
        load_userlist(c, at[0].file, at[0].line, errs);
}

int config_load(const struct config_cli *cli, struct config **out, struct msglist *errs)
{
    struct config *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    set_defaults(c);
    struct loader ld = {.c = c, .errs = errs, .workers_auto = true, .max_conn_auto = true};
    size_t nerr0 = errs->n;

    if (cli->text)
        parse_cli_text(&ld, cli->text_name ? cli->text_name : "command line", cli->text);
    if (cli->path)
        parse_file(&ld, cli->path);
    finish_auth(&ld, errs);
    c->log_file_line = key_line(&ld, "log_file");
    c->log_file_src = key_file(&ld, "log_file");
    check_log_target(c, &ld, errs);
    if (c->rules_file) {
        char where[4200];
        if (ld.nrules)
            msglist_push(errs,
                         "%s: rules_file: the file also has a [rules] section; use one or "
                         "the other",
                         key_origin(&ld, "rules_file", where, sizeof(where)));
        else
            load_rules_file(&ld, key_file(&ld, "rules_file"));
    }
    resolve_outbounds(&ld, c);
    outbound_list_fini(&ld.obs); /* what did not move into c */
    free(ld.default_ob);
    /* rules_default = deny with no rule at all denies everything: compile
     * an empty rule set rather than leave the check out (fail closed). */
    if ((ld.nrules || c->rules_default == ACL_DENY) && !errs_since(errs, nerr0)) {
        if (acl_build(&c->acl, ld.rules, ld.nrules, c->rules_default) < 0)
            msglist_push(errs, "%s: out of memory compiling the rules", cli->path);
        else
            ld.rules = NULL; /* the acl owns them now */
    }
    if (ld.rules) {
        for (uint32_t i = 0; i < ld.nrules; i++)
            acl_rule_fini(&ld.rules[i]);
        free(ld.rules);
    }
    apply_cli(c, cli, &ld);
    if (c->nedges && !ld.listen_from_file && !cli->nlisten)
        c->nlisten = 0; /* edges only: no built-in proxy listener beside them */
    config_edge_finish(c, cli->path, errs);
    if (ld.workers_auto)
        c->workers = config_default_workers();
    if (ld.max_conn_auto)
        c->max_connections = auto_max_connections();
    resolve_iotimeout(c, &ld);
    const char *env = getenv("FERRY_LOG");
    if (env && *env && log_level_parse(env, &c->log_level))
        msglist_push(errs,
                     "environment: FERRY_LOG: '%s' is not a log level (expected debug, info, "
                     "warn or error)",
                     env);
    validate(c, &ld, errs); /* every problem at once, not one per attempt */
    if (errs->n == nerr0)
        config_tls_load(c, errs);
    if (c->metrics_admin) {
        char where[4200];
        const char *key = c->admin_token_file ? "metrics.admin_token_file" : "metrics.admin";
        config_admin_load(c, cli->path, key_origin(&ld, key, where, sizeof(where)), errs);
    }
    config_http2_check(c);
    config_quota_check(c, cli->path, errs);
    if (c->acl && errs->n == nerr0 && config_alloc_rule_hits(c) < 0)
        msglist_push(errs, "%s: out of memory for the rule counters", cli->path);
    if (c->noutbounds && errs->n == nerr0 && config_alloc_ob_stats(c) < 0)
        msglist_push(errs, "%s: out of memory for the outbound counters", cli->path);

    if (errs->n != nerr0) {
        /* Warnings still matter when there are errors: say them too. */
        for (size_t i = 0; i < c->warnings.n; i++)
            msglist_push(errs, "warning: %s", c->warnings.msg[i]);
        config_free(c);
        return -EINVAL;
    }
    *out = c;
    return 0;
}

int config_check_log_file(const struct config *c, struct msglist *errs)
{
    const char *path = c->log_file;
    if (!path || !*path || c->log_target == LOG_TARGET_STDERR || c->log_target == LOG_TARGET_SYSLOG)
        return 0;
    char dir[4096], why[4200];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    struct stat st;
    why[0] = '\0';
    if (stat(dir, &st) < 0)
        snprintf(why, sizeof(why), "the directory %s: %s", dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, sizeof(why), "%s is not a directory", dir);
    if (!why[0]) {
        /* O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of
         * blocking --check; serve opens it without. */
        int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        int e = fd < 0 ? errno : 0;
        if (fd >= 0)
            close(fd);
        if (e == ENOENT && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0)
            snprintf(why, sizeof(why), "cannot create a file in %s: %s", dir, strerror(errno));
        else if (e && e != ENOENT && e != ENXIO)
            snprintf(why, sizeof(why), "cannot open it for appending: %s", strerror(e));
    }
    if (!why[0])
        return 0;
    if (c->log_file_src && c->log_file_line)
        msglist_push(errs, "%s:%d: log_file: %s: %s", c->log_file_src, c->log_file_line, path, why);
    else
        msglist_push(errs, "log_file: %s: %s", path, why);
    return -EINVAL;
}

static void config_destroy(struct config *c)
{
    free(c->rule_hits);
    free(c->user);
    free(c->group);
    free(c->proxy_from);
    free(c->path);
    msglist_fini(&c->files);
    free(c->log_file);
    free(c->syslog_address);
    free(c->auth.userlist);
    userlist_unref(c->auth.users);
    config_auth_free(c);
    msglist_fini(&c->warnings);
    free(c->rules_file);
    free(c->local_addrs);
    acl_free(c->acl);
    free(c->dns.servers);
    free(c->dns.hosts);
    dns_hosts_unref(c->dns.hosts_table);
    config_tls_fini(c);
    config_admin_fini(c);
    config_edge_free(c);
    config_quota_fini(&c->quota);
    for (uint32_t i = 0; i < c->noutbounds; i++)
        outbound_fini(&c->outbounds[i]);
    free(c->outbounds);
    free(c->ob_health);
    free(c->ob_stats);
    free(c);
}

struct config *config_ref(struct config *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void config_unref(struct config *c)
{
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        config_destroy(c);
}

void config_free(struct config *c)
{
    config_unref(c);
}
