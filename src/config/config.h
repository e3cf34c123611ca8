/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config.h: ferry's configuration: built-in defaults, then the INI file,
 * then command-line overrides, validated into one immutable struct config.
 *
 * Every problem is reported as "FILE:LINE: KEY: message" (or "command
 * line: ..."), all of them at once rather than one per attempt; unknown keys
 * and bad values are errors, never silently ignored.
 */
#ifndef FERRY_CONFIG_CONFIG_H
#define FERRY_CONFIG_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/edge.h"
#include "config/outbound.h"
#include "config/quota.h"
#include "core/stats.h"
#include "log/log.h"
#include "util/addr.h"
#include "util/msglist.h"

#define CONFIG_MAX_LISTEN  64
#define CONFIG_MAX_WORKERS 256

enum splice_mode {
    SPLICE_AUTO, /* buffers first; splice once a direction moves bulk data */
    SPLICE_ALWAYS,
    SPLICE_NEVER,
};

/* Protocols a listener speaks; the first byte of a connection picks one. */
enum {
    PROTO_SOCKS5 = 1u << 0,
    PROTO_SOCKS4 = 1u << 1,
    PROTO_HTTP = 1u << 2,
    PROTO_ALL = PROTO_SOCKS5 | PROTO_SOCKS4 | PROTO_HTTP,
};

struct config_listen {
    struct addr addr;
    uint8_t protocols;      /* PROTO_*; 0 = the config's protocols */
    uint8_t proxy_protocol; /* 0, or 1/2: a PROXY v1/v2 header comes first */
    bool tls;               /* "tls://ADDR:PORT": a TLS handshake comes first ([tls]) */
    /* forward=HOST:PORT: a fixed-target listener (a port forward): no
     * protocol, every session goes to this destination; port 0: none. */
    uint16_t forward_port;
    char forward_host[254]; /* a DNS name or an IP address (IPv6 without brackets) */
    /* websocket=/PATH: an Upgrade to this path carries the HTTP/2 tunnel
     * (relay/front_ws.c); "": none. decoy=HOST:PORT: other origin-form
     * requests go there; port 0: they get a 404. */
    char ws_path[128];
    uint16_t decoy_port;
    char decoy_host[254];
    uint8_t edge;     /* 1 + the index in config.edges of an [edge] listener; 0: proxy */
    char origin[160]; /* "ferry.conf:3" or "command line": where it was set */
    /* Resolved: iotimeout as set, or when it is not set, its default for
     * this listener (0 on loopback, CONFIG_PUBLIC_IOTIMEOUT_MS on one that
     * other hosts reach: not loopback, or behind a PROXY header). */
    uint32_t iotimeout_ms;
    /* Where sessions accepted here leave from, for direct dials (source =
     * ADDR or device = NAME in the listen line); unset: the kernel's choice. */
    struct outbound_source source;
};

struct tls_ctx;

/* [tls]: the server side of tls:// listeners. ctx is made at load when a
 * tls:// listener exists (listen_tls.c), so --check and a reload report a
 * certificate that does not load; sessions hold their own reference. */
struct config_tls {
    char *cert, *key;            /* PEM files: the chain, and its key */
    int cert_line, key_line;     /* where they were set, for messages; 0: not set */
    uint32_t min_version;        /* 12 or 13 (TLS 1.2 or 1.3) */
    uint32_t handshake_ms;       /* a TLS handshake must end within it */
    uint32_t per_ip_handshakes;  /* concurrent handshakes per client address; 0: unlimited */
    uint32_t ticket_rotation_ms; /* session-ticket key lifetime; 0: no tickets */

    const char *cert_src, *key_src; /* the files (config.files) of cert_line, key_line */
    struct tls_ctx *ctx;
    char pin[64]; /* "sha256//BASE64" of the certificate's SubjectPublicKeyInfo */
};

/* [http2]: the HTTP/2 inbound (relay/h2conn.c; keys in http2.c). Sizes
 * in bytes, rates per second. */
struct config_http2 {
    uint32_t max_streams;     /* SETTINGS_MAX_CONCURRENT_STREAMS */
    uint32_t max_header_list; /* SETTINGS_MAX_HEADER_LIST_SIZE; over it: GOAWAY */
    uint32_t window;          /* a stream's first receive window */
    uint32_t window_max;      /* ... auto-tuned up to */
    uint32_t conn_budget;     /* granted stream windows per connection, at first */
    uint32_t conn_budget_max; /* ... growing to */
    uint32_t worker_budget;   /* granted stream windows per worker */
    uint32_t reset_rate;      /* streams reset before a response, per second */
    uint32_t ping_rate, settings_rate, empty_data_rate;
    uint32_t reverse_grace_ms; /* a released reverse port stays its user's this long */
};

/* iotimeout's default on a listener that other hosts reach: a vanished
 * peer (no FIN, no RST) holds two descriptors at most this long. */
#define CONFIG_PUBLIC_IOTIMEOUT_MS (3600u * 1000)

/* [http]: the HTTP proxy. */
struct config_http {
    uint32_t max_header;   /* request or response head, bytes */
    uint32_t max_line;     /* request line, bytes */
    char via[64];          /* pseudonym in the Via header; empty: no Via */
    uint32_t keepalive_ms; /* idle time allowed between a client's requests */
    uint32_t pool_size;    /* idle upstream connections kept per worker (0: none) */
    uint32_t pool_idle_ms; /* how long one may stay idle */
    uint32_t response_ms;  /* the origin may stay silent this long while a response is owed */
    uint32_t body_ms;      /* the client may stay silent this long while it owes a request body */
};

struct userlist;

/* [auth]: username/password (RFC 1929, HTTP Basic) against one backend:
 * a userlist, external helpers (Squid's protocol) or PAM. */
struct config_auth {
    char *userlist;         /* path as written; NULL: no userlist */
    struct userlist *users; /* loaded with the config */
    char *helper;           /* the helper's command line as written; NULL: none */
    char **helper_argv;     /* split on blanks, argv[0] made absolute; NULL-terminated */
    uint32_t helper_children;
    uint32_t helper_timeout_ms;
    char *pam_service;     /* NULL: no PAM */
    uint64_t generation;   /* differs at every load: what external verdicts are cached under */
    uint32_t workers;      /* verifier threads */
    uint32_t queue;        /* verifications waiting, at most */
    uint32_t cachettl_ms;  /* 0: no credential cache */
    uint32_t cache_size;   /* cached successes per worker */
    uint32_t max_failures; /* 0: no throttling */
    uint32_t failure_window_ms;
    uint32_t block_ms;
};

/* [udp] forward = [ADDR:]PORT HOST:PORT: a UDP port forward
 * (relay/front_udp.c, udp_forward.c parses it). */
#define CONFIG_UDP_FORWARDS_MAX 32
struct config_udp_forward {
    struct addr listen;
    uint16_t port;
    char host[254]; /* a DNS name or an IP address (IPv6 without brackets) */
};

/* [udp]: UDP ASSOCIATE limits. Bad values fall back to the default and
 * oversized ones clamp, each with a warning (RFC 1928 section 7 relay). */
struct config_udp {
    uint32_t associations;     /* per listen address */
    uint32_t destinations;     /* per association */
    uint32_t idle_ms;          /* a destination unused this long is forgotten */
    uint32_t max_datagram;     /* whole SOCKS UDP datagram, header included */
    uint32_t queue;            /* datagrams held per association while resolving */
    uint32_t tunnel_queue;     /* datagrams an association holds toward a tunnel */
    uint32_t tunnel_bytes;     /* ... and their bytes (udp.tunnel_queue_bytes) */
    struct addr advertise;     /* family 0: reply with the bound address */
    uint16_t port_lo, port_hi; /* 0: any port */
    bool gso;                  /* send runs of equal datagrams with UDP_SEGMENT */
    bool gro;                  /* receive runs of equal datagrams at once (UDP_GRO) */
    uint32_t nforwards;        /* forward = ...: forwards[0..nforwards) */
    struct config_udp_forward forwards[CONFIG_UDP_FORWARDS_MAX];
};

/* Parse one "[ADDR:]PORT HOST:PORT" into c's [udp] forwards (ADDR defaults
 * to 127.0.0.1). 0, or -1 with why (for the loader's message) set. */
int config_udp_forward_add(struct config *c, const char *v, const char **why);

/* [limits]: per-address, per-user and bandwidth limits. 0 = unlimited. */
struct config_limits {
    uint32_t per_ip;   /* concurrent connections per client address */
    uint32_t per_user; /* concurrent sessions per authenticated user */
    uint32_t rate;     /* new connections per second per client address */
    uint32_t burst;    /* ... allowed in a burst */
    uint32_t ip_table; /* client addresses tracked */
    uint64_t bw_user;  /* bytes per second, both directions, per user */
    uint64_t bw_conn;  /* bytes per second, both directions, per connection */
};

struct dns_hosts;

/* [dns]: the resolver each worker uses for direct dials (dns/resolver.h). */
struct config_dns {
    char *servers;       /* "ip:port,[ip6]:port" for c-ares; NULL: resolv.conf's */
    uint32_t cache_size; /* answers kept per worker; 0: no cache */
    uint32_t min_ttl_ms; /* an answer (negative ones too) is kept at least... */
    uint32_t max_ttl_ms; /* ... and at most this long */
    uint32_t timeout_ms; /* per try and server */
    uint32_t tries;      /* tries per server */
    char *hosts;         /* hosts = as written; NULL: the system's hosts file as c-ares reads it */
    int hosts_line;      /* its line in the file */
    struct dns_hosts *hosts_table; /* hosts = PATH, loaded; NULL otherwise */
};

struct acl;
struct acl_cidr;

/* Immutable once loaded and shared by reference count: the main thread
 * holds the current one, each worker holds the ones its sessions use. */
struct config {
    _Atomic uint32_t refs;
    char *path; /* NULL when running on built-in defaults */
    struct config_listen listen[CONFIG_MAX_LISTEN];
    size_t nlisten;
    unsigned workers; /* resolved: never 0 */
    uint32_t handshake_timeout_ms;
    uint32_t connect_timeout_ms;
    uint32_t iotimeout_ms; /* as set; 0 = none. Sessions use listen[].iotimeout_ms */
    uint32_t shutdown_timeout_ms;
    uint32_t max_connections; /* resolved: never 0 */
    uint32_t backlog;
    uint32_t buffer_size;
    uint32_t pipe_size;
    enum splice_mode splice;
    enum log_level log_level;
    char *log_file;           /* NULL: stderr */
    int log_file_line;        /* line of log_file_src that set it; 0: not from the file */
    const char *log_file_src; /* the file (in files) that set it */
    enum log_format log_format;
    enum log_target log_target; /* AUTO: the file when log_file is set, else stderr */
    char *syslog_address;       /* NULL: /dev/log */
    int syslog_facility;        /* 3 (daemon) or 16..23 (local0..7) */
    bool log_session_start;     /* access-start lines when a relay starts */
    bool access_log;
    bool open_proxy;
    struct config_auth auth;
    struct config_udp udp;
    struct config_http http;
    struct config_limits limits;
    struct config_dns dns;
    struct config_tls tls;
    struct config_http2 http2;
    struct config_quota quota; /* [quota] (quota.h) */
    /* [edge NAME] sections (edge.h); their listeners are in listen[] with .edge set. */
    struct config_edge *edges;
    uint32_t nedges;
    int32_t cur_edge; /* while loading: the section being read, -1 outside one */
    /* Outbounds: [0] "direct", [1] "reject", then the file's [outbound NAME]
     * sections in order (outbound.h); health[i] is outbounds[i]'s. */
    struct config_outbound *outbounds;
    struct outbound_health *ob_health;
    uint32_t noutbounds;
    /* Per outbound, per worker: worker w counts outbound i in
     * ob_stats[w * ob_stride + i * OB_STATS + OB_STAT_*] (its own cache
     * lines), like rule_hits; counts start again at a reload. */
    stat_t *ob_stats;
    uint32_t ob_stride;
    uint16_t default_outbound; /* "outbound = NAME": sessions no rule sends elsewhere */
    uint8_t ip_preference;     /* enum ip_preference of direct dials */
    struct acl *acl;           /* compiled rules, NULL when there are none */
    char *rules_file;
    /* Rule hits: worker w counts in rule_hits[w * rule_stride + rule] (its
     * own cache lines); column acl->n counts the default action. Counters
     * are the only thing in a config that changes after loading. */
    stat_t *rule_hits;
    uint32_t rule_stride;
    uint8_t rules_default; /* ACL_ALLOW or ACL_DENY when no rule matches */
    /* A listener is reachable from other hosts: loopback, link-local and
     * our own addresses are denied unless a rule allows them by range. */
    bool protect_local;
    struct addr *local_addrs; /* this host's addresses (with protect_local) */
    size_t nlocal_addrs;
    uint8_t protocols; /* PROTO_* for listeners without their own */
    bool bind;         /* allow the BIND command (SOCKS5 0x02, SOCKS4 2) */
    uint32_t bind_timeout_ms;
    struct addr metrics_listen; /* family 0: no metrics endpoint */
    /* [metrics] admin: the admin API and /status (admin/), off by default;
     * admin_token is the first line of admin_token_file (admin.c), wiped
     * when the configuration is freed. */
    bool metrics_admin;
    char *admin_token_file;
    char *admin_token;
    char *user, *group; /* drop privileges to these after binding; NULL: stay */
    /* Peers whose PROXY protocol header is believed (listeners with
     * proxy_protocol accept connections from nobody else). */
    struct acl_cidr *proxy_from;
    size_t nproxy_from;
    /* Problems that did not stop the load ("FILE:LINE: KEY: ..."); the server
     * logs them at start and on reload, --check prints them. */
    struct msglist warnings;
    struct msglist files; /* the config file, then every file it included, in reading order */
};

/* What the command line says; NULL/0 fields mean "not given". */
struct config_cli {
    const char *path;
    const char *listen[CONFIG_MAX_LISTEN];
    size_t nlisten;
    const char *workers;
    const char *pidfile; /* serve --pidfile */
    bool upgrade;        /* serve --upgrade: share listen ports with a running ferry */
    /* Configuration text read before path (ferry client's listeners and
     * outbound), named text_name in messages; NULL: none. */
    const char *text;
    const char *text_name;
    /* Called on the main thread once every listener is bound and the
     * workers run, with the bound addresses (port 0 resolved), in the
     * order of the configuration's listen addresses; NULL: none. */
    void (*ready)(void *arg, const struct addr *bound, size_t n);
    void *ready_arg;
};

/* Load and validate. On success *out is set and 0 returned; otherwise
 * -EINVAL (or -ENOMEM) with every problem in errs. */
int config_load(const struct config_cli *cli, struct config **out, struct msglist *errs);
/* Whether log_file can be appended to by this process: its directory
 * exists and the file opens for appending, or, when it does not exist yet,
 * the directory lets us create it. Nothing is created. Problems go to errs
 * as "FILE:LINE: log_file: ..."; returns 0 or -EINVAL. Separate from
 * config_load() because only a start (and --check) opens the file: a
 * reload keeps the open one and may run with fewer privileges. */
int config_check_log_file(const struct config *c, struct msglist *errs);
/* Reference counting; config_unref() frees with the last reference.
 * config_free() is config_unref(). NULL is a no-op for both. */
struct config *config_ref(struct config *c);
void config_unref(struct config *c);
void config_free(struct config *c);

static inline bool config_auth_enabled(const struct config *c)
{
    return c->auth.users != NULL || c->auth.helper_argv != NULL || c->auth.pam_service != NULL;
}

/* auth.c: [auth]'s backends. Where a key was set (file NULL: it was not). */
struct config_origin {
    const char *file;
    int line;
};
struct auth_params;
/* After the file: exactly one backend among userlist, helper and
 * pam_service (the userlist is loaded by the caller), the helper's command
 * split and its program executable, the PAM service's file present, the
 * helper_ keys only with a helper. at[] is where userlist, helper,
 * pam_service, helper_children and helper_timeout were set. Problems go
 * to errs as "FILE:LINE: KEY: ...". */
void config_auth_finish(struct config *c, const struct config_origin at[5], struct msglist *errs);
/* Free what config_auth_finish() made (config_free). */
void config_auth_free(struct config *c);
/* What a session of c authenticates against. */
void config_auth_params(const struct config *c, struct auth_params *out);
/* The backend's name and what it is, for the start and reload lines:
 * "125 users", "helper /usr/lib/squid/basic_ncsa_auth (4 children)", "PAM
 * service ferry". */
void config_auth_describe(const struct config *c, char *out, size_t cap);

/* http2.c: [http2] defaults; one key (false: not an [http2] key; a bad
 * value keeps the default, a huge one clamps, each with a warning naming
 * file:line); after the file, windows and budgets made consistent. */
void config_http2_defaults(struct config_http2 *h);
bool config_http2_key(struct config *c, const char *key, const char *v, const char *file, int line);
void config_http2_check(struct config *c);

/* admin.c: with metrics.admin = yes, read the token from
 * admin_token_file (named relative to the directory of cfg_path) into
 * c->admin_token; every problem (no metrics.listen, no file, an empty or
 * comment-only one, a token too short or too long) goes to errs as
 * "WHERE: KEY: ...". where: the origin of metrics.admin ("FILE:LINE"). */
void config_admin_load(struct config *c, const char *cfg_path, const char *where,
                       struct msglist *errs);
/* Wipe and free the token (config_free). */
void config_admin_fini(struct config *c);
/* listen_ws.c: a listen line's websocket=/PATH or decoy=HOST:PORT word
 * into l: 0, or -EINVAL with why. After the file: does each listener's
 * pair hang together (problems to errs)? */
int config_listen_ws(struct config_listen *l, const char *word, char *why, size_t len);
void config_listen_ws_check(const struct config_listen *l, struct msglist *errs);

/* listen_tls.c: when a listener is tls://, check [tls] and make its server
 * context (c->tls.ctx, c->tls.pin); problems go to errs as "FILE:LINE:
 * KEY: ..." naming the line at fault. Nothing happens without a tls://
 * listener. */
void config_tls_load(struct config *c, struct msglist *errs);
/* Drop the server context (config_free). */
void config_tls_fini(struct config *c);

/* "socks5,http" (',' '+' or spaces between) -> PROTO_* mask; -EINVAL. */
int config_parse_protocols(const char *s, uint8_t *mask);
/* "socks5+socks4+http" for logs. */
const char *config_protocols_name(uint8_t mask, char *buf, size_t len);

/* Number of access rules (0 without). */
uint32_t config_rule_count(const struct config *c);

/* Online CPUs, at least 1. */
unsigned config_default_workers(void);
const char *config_splice_name(enum splice_mode m);

#endif
