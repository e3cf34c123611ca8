/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.h: named outbounds, the ways out a rule may choose ("allow ...
 * via NAME"). Each is one [outbound NAME] section of the config file:
 *
 *   [outbound corp]
 *   url = socks5://user:pass@10.0.0.2:1080   # socks5h://: the parent resolves names
 *   [outbound web]
 *   url = http://proxy.example:3128          # HTTP CONNECT (absolute-form for plain HTTP)
 *   [outbound secure]
 *   url = https://proxy.example:443          # HTTP/1.1 CONNECT over TLS 1.3
 *   pin = sha256//BASE64                     # or ca_file = PATH (default: the system CAs)
 *   [outbound pool]
 *   members = corp, web                      # failover in order
 *   strategy = failover | round-robin | least-connections
 *   health_check = 10s                       # a real CONNECT through each member
 *   health_target = 127.0.0.1:80
 *   [outbound egress2]                       # no url: direct, from another address
 *   source = 192.0.2.7                       # or device = eth1 (SO_BINDTODEVICE)
 *   ip_preference = ipv6-first
 *
 * and the built-ins "direct" (index OUTBOUND_DIRECT) and "reject"
 * (OUTBOUND_REJECT), always present. Parsing is here (no DNS; the only
 * I/O is reading a credentials_file); what a session does with an outbound
 * is relay/'s.
 */
#ifndef FERRY_CONFIG_OUTBOUND_H
#define FERRY_CONFIG_OUTBOUND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/rules.h"
#include "util/addr.h"
#include "util/msglist.h"

struct tls_ctx;

enum outbound_kind {
    OUTBOUND_KIND_DIRECT, /* dial the destination from this host */
    OUTBOUND_KIND_REJECT, /* refuse (a rule's "via reject") */
    OUTBOUND_KIND_SOCKS5, /* RFC 1928 CONNECT (RFC 1929 with a user) */
    OUTBOUND_KIND_SOCKS4, /* SOCKS4a: the parent resolves names */
    OUTBOUND_KIND_HTTP,   /* HTTP/1.1 CONNECT, RFC 9110 section 9.3.6 */
    OUTBOUND_KIND_HTTPS,  /* the same over TLS 1.3 */
    OUTBOUND_KIND_POOL,   /* members, tried by strategy */
};

enum outbound_strategy {
    OUTBOUND_FAILOVER,    /* the first member that is up */
    OUTBOUND_ROUND_ROBIN, /* members that are up, in turn */
    OUTBOUND_LEAST_CONN,  /* the member that is up with the fewest sessions */
};

/* An HTTPS parent: one HTTP/1.1 CONNECT per session, or every session of
 * a worker a CONNECT stream (RFC 9113 section 8.5) on one shared HTTP/2
 * connection; auto: the parent's ALPN answer decides. */
enum outbound_mux {
    OUTBOUND_MUX_AUTO,
    OUTBOUND_MUX_H2,
    OUTBOUND_MUX_HTTP1,
};

/* Which addresses of a name a direct dial tries first. */
enum ip_preference {
    IP_PREF_ANY,        /* the resolver's order */
    IP_PREF_IPV4,       /* IPv4 only */
    IP_PREF_IPV6,       /* IPv6 only */
    IP_PREF_IPV4_FIRST, /* IPv4, then IPv6 */
    IP_PREF_IPV6_FIRST, /* IPv6, then IPv4 */
};

#define OUTBOUND_DIRECT      0 /* index of the built-in "direct" */
#define OUTBOUND_REJECT      1 /* index of the built-in "reject" */
#define OUTBOUND_MAX         256
#define OUTBOUND_MAX_MEMBERS 16
#define OUTBOUND_NAME_MAX    64
#define OUTBOUND_REVERSE_MAX 32
#define REVERSE_ALLOW_MAX    16

/* A reverse remote of an HTTP/2 outbound (reverse.c): a port the server
 * binds for us (ferry-listen, relay/h2rev.h), whose connections come back
 * through the tunnel and leave from this host. */
struct config_reverse {
    struct addr bind; /* the address and port on the server (port 0: its pick) */
    bool socks;       /* SOCKS5, SOCKS4 and HTTP served here; else a forward */
    bool udp;         /* forward: UDP datagrams, one stream per source */
    char host[254];   /* forward: the one target (IPv6 without brackets) */
    uint16_t port;
    uint8_t nallow;                           /* socks: ranges let through that ... */
    struct acl_cidr allow[REVERSE_ALLOW_MAX]; /* ... outbound_reverse_egress_ok denies */
};

/* Where bytes leave this host: an address to bind before connecting
 * (family 0: the kernel's choice; port 0) and/or a device for
 * SO_BINDTODEVICE (empty: none). */
struct outbound_source {
    struct addr addr;
    char device[16];
};

/* Health of one outbound, shared by every worker (atomics, no locks): the
 * only part of an outbound that changes after loading. */
struct outbound_health {
    _Atomic uint64_t down_until_ms; /* monotonic ms; skipped by pools until then */
    _Atomic uint32_t up;            /* 1 while healthy (the last check or connect passed) */
    _Atomic uint32_t fails_in_row;  /* consecutive failures, for the back-off */
    _Atomic uint64_t failures;      /* health checks that failed (failed dials: ob_stats) */
    _Atomic uint64_t latency_us;    /* of the last successful connect or check */
    _Atomic uint32_t turn;          /* a round-robin pool's next member */
};

/* The per-worker counters of each outbound (config.ob_stats): dials that
 * reached the destination through it, sessions it carries now (a gauge:
 * least-connections sums it over workers), dials through it that failed. */
/* An HTTP/2 parent: its connections up now (a gauge), the CONNECT streams
 * opened on them, connections opened again after one was lost, and
 * connections that came up at all. */
enum {
    OB_STAT_SESSIONS,
    OB_STAT_ACTIVE,
    OB_STAT_FAILURES,
    OB_STAT_H2_CONNS,
    OB_STAT_H2_STREAMS,
    OB_STAT_H2_RECONNECTS,
    OB_STAT_H2_OPENED,
    OB_STAT_BYTES_UP,   /* payload client -> destination through it (with accounting on) */
    OB_STAT_BYTES_DOWN, /* ... and back */
    OB_STATS
};

struct config_outbound {
    char name[OUTBOUND_NAME_MAX];
    char origin[160]; /* "FILE:LINE" of the section header, "built-in" */
    uint8_t kind;     /* enum outbound_kind */
    bool remote_dns;  /* names go to the parent as names (socks5h, socks4a, http, https) */
    /* A parent proxy (SOCKS5, SOCKS4, HTTP, HTTPS): host as written (a name
     * or an address literal, without brackets) and port. */
    char host[256];
    uint16_t port;
    char *user, *pass; /* from the url or credentials_file; NULL: none */
    /* HTTPS: the server certificate is checked against pin (the SHA-256 of
     * its SubjectPublicKeyInfo) when has_pin, else against ca_file (NULL:
     * the system's CAs) and host. */
    bool has_pin;
    uint8_t pin[32];
    char *ca_file;
    struct tls_ctx *tls; /* HTTPS: the client context made from them at load (tls/tls.h) */
    /* HTTPS: how sessions share the parent (enum outbound_mux), the TLS
     * context of the shared HTTP/2 connection (ALPN h2[,http/1.1]), and
     * how long a session waits for that connection while it is down. */
    uint8_t mux;
    struct tls_ctx *tls_h2;
    /* websocket = /PATH: that HTTP/2 connection runs inside a WebSocket
     * (RFC 6455) opened on this path (relay/wslink.h), ALPN http/1.1, for
     * a TLS-terminating reverse proxy or CDN in front; "": plain h2. */
    char ws_path[128];
    uint32_t tunnel_wait_ms;
    /* fast_open = yes (HTTP/2 only): a session is connected for its client
     * as soon as its CONNECT stream is sent on a connection that is up, and
     * its first bytes follow at once; a refusal then closes it instead of
     * answering (relay/outbound_h2_row.c). */
    bool fast_open;
    /* A pool: members by index into config.outbounds, in order. */
    uint16_t members[OUTBOUND_MAX_MEMBERS];
    uint8_t nmembers;
    uint8_t strategy;      /* enum outbound_strategy */
    uint32_t health_ms;    /* 0: no health checks */
    char health_host[256]; /* the check's CONNECT target; empty: the parent itself */
    uint16_t health_port;
    uint32_t backoff_ms;         /* a failed member is skipped at least this long */
    uint32_t connect_timeout_ms; /* 0: the config's connect_timeout */
    struct outbound_source source;
    uint8_t ip_preference; /* enum ip_preference; for direct dials */
    bool ip_preference_set;
    /* HTTPS over HTTP/2: "reverse =" remotes, in order (reverse.c). */
    struct config_reverse *rev;
    uint8_t nrev;
    /* While loading: "members =" as written and its line. */
    char *members_text;
    int members_line;
};

/* The [outbound NAME] sections of one file, while it loads. */
struct outbound_list {
    struct config_outbound *v; /* [0] direct, [1] reject, then the file's */
    uint32_t n, cap;
};

/* Start a list with the built-ins. 0 or -ENOMEM. */
int outbound_list_init(struct outbound_list *l);
void outbound_list_fini(struct outbound_list *l);
/* Index of the outbound called name, or -1. */
int outbound_find(const struct outbound_list *l, const char *name);
/* A section header [outbound NAME] at origin ("FILE:LINE"): a new entry,
 * returned in *out. -EINVAL with a message in err (a bad or taken name). */
int outbound_section(struct outbound_list *l, const char *name, const char *origin,
                     struct config_outbound **out, char *err, size_t errlen);
/* One "key = value" of a section. dir is the config file's directory
 * (relative paths start there), line the key's line. 0, or -EINVAL with
 * a message in err ("unknown key" included), or -ENOMEM. */
int outbound_set_key(struct config_outbound *o, const char *key, const char *value, const char *dir,
                     int line, char *err, size_t errlen);
/* After the file: every section complete and coherent, pools' members
 * found (a pool within a pool is flattened in order; a cycle is an
 * error). Problems go to errs as "FILE:LINE: outbound NAME: ...". */
void outbound_list_finish(struct outbound_list *l, const char *file, struct msglist *errs);

/* Parse a parent's url into o (kind, remote_dns, host, port, user, pass):
 *   socks5://[USER[:PASS]@]HOST[:PORT]   port 1080; names resolved here
 *   socks5h://...                        the same; the parent resolves names
 *   socks4a://[USER@]HOST[:PORT]         port 1080 (socks4:// is accepted)
 *   http://[USER[:PASS]@]HOST[:PORT]     port 80 (3128 is common: say it)
 *   https://[USER[:PASS]@]HOST[:PORT]    port 443
 *   direct, reject
 * HOST is a name, an IPv4 address or a bracketed IPv6 address; USER and
 * PASS are percent-decoded. Returns 0, or -EINVAL with a message in err
 * (nothing allocated then); -ENOMEM. */
int outbound_url_parse(const char *url, struct config_outbound *o, char *err, size_t errlen);

/* "sha256//BASE64" (44 characters of base64 of 32 bytes) -> pin. 0 or
 * -EINVAL. */
int outbound_pin_parse(const char *text, uint8_t pin[32]);

/* "ipv4", "ipv6", "ipv4-first", "ipv6-first", "any" -> enum ip_preference;
 * 0 or -EINVAL. */
int outbound_ip_preference_parse(const char *text, uint8_t *out);
const char *outbound_ip_preference_name(uint8_t p);

/* egress.c: "ADDR" (an IP address to bind before connecting) or
 * "device=NAME" (SO_BINDTODEVICE; CAP_NET_RAW before Linux 5.7) into out,
 * which keeps what it held of the other. 0, -EINVAL (not an address, not
 * an interface name), or -ENODEV (no such interface on this host now). */
int config_source_parse(const char *text, struct outbound_source *out);

/* "socks5", "http", ... for logs. */
const char *outbound_kind_name(uint8_t kind);

/* HTTPS (other kinds: nothing to do): make o->tls from pin or ca_file (or
 * the system's CAs), TLS 1.3 only, ALPN http/1.1 (outbound_tls.c). 0, or
 * -EINVAL with a sentence in err (a ca_file that cannot be read). */
int outbound_tls_load(struct config_outbound *o, char *err, size_t errlen);
/* Drop o->tls (sessions made from it keep their reference). */
void outbound_tls_fini(struct config_outbound *o);

/* reverse.c: one "reverse = ADDR:PORT forward=HOST:PORT" or "reverse =
 * ADDR:PORT socks [allow=CIDR,...]" value appended to o->rev. 0, -EINVAL
 * with a message in err, or -ENOMEM. */
int outbound_reverse_add(struct config_outbound *o, const char *v, char *err, size_t errlen);
/* May a socks remote's client reach address a here? Not loopback,
 * link-local, private (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7),
 * unspecified, multicast or broadcast, unless an allow= range holds it. */
bool outbound_reverse_egress_ok(const struct config_reverse *r, const struct addr *a);
/* "R:ADDR:PORT:HOST:PORT[/udp]" or "R:ADDR:PORT:socks", for messages. */
const char *outbound_reverse_format(const struct config_reverse *r, char *buf, size_t len);

/* Give back what o holds (user, pass, ca_file). */
void outbound_fini(struct config_outbound *o);

#endif
