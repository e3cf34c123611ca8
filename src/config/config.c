/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.c: the loader: one configuration (a file, the files it includes
 * and the command line) into struct config. It sets the defaults, has the
 * text read (reader.c: lines, sections, include=; keys.c: the key table and
 * its setters; listen.c: listen lines), then does what needs every key at
 * once: the userlist and rules_file, outbounds by name, the command line,
 * the checks of one key against another; and it counts references. It must
 * not parse a single key's value (a setter does) nor read lines itself.
 */
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/rules.h"
#include "auth/userlist.h"
#include "config/loader.h"
#include "dns/hosts.h"
#include "dns/resolver.h"
#include "util/compiler.h"
#include "util/file.h"
#include "util/parse.h"

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
            config_listen_add(c, ld->errs, cli->listen[i], "command line (-l)");
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
    for (size_t i = 0; i < config_nkeys; i++)
        if (strcmp(config_keys[i].name, key) == 0)
            return ld->seen[i];
    return 0;
}

/* The file that set key (the main file or an included one), or the main
 * file's path when none did. */
static const char *key_file(const struct loader *ld, const char *key)
{
    for (size_t i = 0; i < config_nkeys; i++)
        if (strcmp(config_keys[i].name, key) == 0 && ld->seen_file[i])
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
        reader_add_rule(ld, path, line, p);
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
    if (reader_read_file(ld, path) == 0 && reader_parse_text(ld, path, ld->text) < 0)
        msglist_push(ld->errs, "%s: out of memory while parsing", path);
    ld->text = ld->next = NULL; /* reader_parse_text() freed it */
    ld->file = ld->c->files.n > idx ? ld->c->files.msg[idx] : path;
}

/* Configuration text given by the command line (ferry client), read as a
 * file named name would be (an include in it is relative to the current
 * directory). */
static void parse_cli_text(struct loader *ld, const char *name, const char *text)
{
    char *copy = strdup(text);
    if (!copy || reader_parse_text(ld, name, copy) < 0)
        msglist_push(ld->errs, "%s: out of memory", name);
}

/* [auth]: the one password backend and its keys (config/auth.c), the
 * userlist read now; or, with no backend, [auth] keys said to be idle. */
static void finish_auth(struct loader *ld, struct msglist *errs)
{
    struct config *c = ld->c;
    if (!c->auth.userlist && !c->auth.helper && !c->auth.pam_service) {
        for (size_t i = 0; i < config_nkeys; i++) {
            if (ld->seen[i] && strncmp(config_keys[i].name, "auth.", 5) == 0) {
                msglist_push(errs,
                             "%s:%d: %s: [auth] settings without auth.userlist, auth.helper "
                             "or auth.pam_service (add one of them to [auth] to turn "
                             "authentication on)",
                             ld->seen_file[i], ld->seen[i], config_keys[i].name);
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
