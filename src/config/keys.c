/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keys.c: the key table and its setters. Every key of the top level and of
 * the fixed sections ([auth], [udp], [http], [limits], [metrics], [dns],
 * [tls]) has one row: its name ("section.key"), its setter, the field it
 * sets, its range and the words used to explain a bad value. A setter turns
 * one value into struct config, or says at the line being read what is wrong
 * with it. This room must not know where a line came from (reader.c does:
 * files, includes, sections) nor check one key against another (config.c
 * does, once every file is read).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/loader.h"
#include "dns/hosts.h"
#include "dns/resolver.h"
#include "util/parse.h"

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
    {"listen", config_listen_set, 0, 0, 0, "ADDR:PORT [protocols=...][, ADDR:PORT...]", true},
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
    {"protocols", config_listen_set_protocols, 0, 0, 0,
     "socks5, socks4 and/or http, e.g. socks5,http", false},
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

const struct key *const config_keys = keys;
const size_t config_nkeys = ARRAY_LEN(keys);
