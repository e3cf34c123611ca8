/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge.h: the [edge NAME] sections of edge mode (docs/edge.md). Each names
 * its own listeners, how their first message is sniffed (mc, tls, auto),
 * routes from host names to backends, what happens to an unknown host,
 * PROXY v2 towards backends, the first-message deadlines and caps, and the
 * flood limits. Parsing and validation only (edge.c): no sockets, no DNS;
 * what a session does with an edge is relay/front_edge.c's.
 *
 * A loaded config is immutable; the few things that change while it runs
 * (counters, the round-robin turn, backend load and passive health, the
 * half-open gauge) sit behind pointers in `live` blocks, atomics shared by
 * all workers. Counters start again at a reload, as the outbounds' do.
 */
#ifndef FERRY_CONFIG_EDGE_H
#define FERRY_CONFIG_EDGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl/rules.h"
#include "edge/signkey.h"
#include "util/addr.h"
#include "util/msglist.h"

#define EDGE_MAX 16 /* [edge] sections */

enum edge_sniff { EDGE_SNIFF_AUTO, EDGE_SNIFF_MC, EDGE_SNIFF_TLS };
enum edge_strategy { EDGE_ROUND_ROBIN, EDGE_LEAST_CONN, EDGE_FIRST_HEALTHY };
/* What a route asks of the host name (signed = ...): nothing, a hop
 * signature or a token (proto/signhost.h). */
enum edge_signed { EDGE_SIGNED_OFF, EDGE_SIGNED_HOP, EDGE_SIGNED_TOKEN };

/* How a session through a route ended (ferry_edge_sessions_total result). */
enum edge_result { EDGE_RES_OK, EDGE_RES_UNREACHABLE, EDGE_RES_COUNT };
/* Why a connection was refused before a route (ferry_edge_rejects_total). */
enum edge_reject {
    EDGE_REJ_HALFOPEN,
    EDGE_REJ_PER_SOURCE,
    EDGE_REJ_RATE,
    EDGE_REJ_FIRST_BYTE_TIMEOUT,
    EDGE_REJ_HELLO_TIMEOUT,
    EDGE_REJ_SNIFF_ERROR,
    EDGE_REJ_UNKNOWN_HOST,
    EDGE_REJ_SIGNATURE,
    EDGE_REJ_CLIENT_CLOSED,
    EDGE_REJ_DENIED,     /* allow / deny lists */
    EDGE_REJ_BANNED,     /* a dynamic ban (ban_after) */
    EDGE_REJ_PER_PREFIX, /* per_prefix_connections */
    EDGE_REJ_PREFIX_RATE,
    EDGE_REJ_COUNT
};

/* Minecraft status answered at the edge (ferry_edge_status_total). */
enum edge_status {
    EDGE_STATUS_CACHE,
    EDGE_STATUS_OFFLINE,
    EDGE_STATUS_LEGACY,
    EDGE_STATUS_FETCHED, /* a version not cached, fetched once for it and cached */
    EDGE_STATUS_COUNT
};

struct edge_backend {
    struct addr addr; /* the address; a named backend: its port only */
    char *name;       /* a host name or template ({1}...) resolved at connect time; NULL: addr */
    _Atomic uint8_t check_down;     /* the last health check failed (health_check) */
    _Atomic uint32_t active;        /* sessions carried now (least-connections) */
    _Atomic uint64_t down_until_ms; /* a failed dial: skipped by first-healthy until then */
};

#define EDGE_STATUS_VERSIONS 8 /* status answers cached per route, one per protocol version */

/* One protocol version's cached status of a route (relay/edge_cache.h). */
struct edge_status_entry {
    int32_t proto; /* the protocol version it was asked with */
    bool used;     /* the slot holds a version */
    bool fetching; /* a session is fetching it now */
    char *json;    /* the Status Response JSON (heap); NULL: none yet */
    size_t len;
    uint64_t ms;       /* clock_ms() when fetched */
    uint64_t asked_ms; /* when a client last asked for it (least recently asked goes first) */
    uint64_t fail_ms;  /* when a fetch of it last failed (0: never) */
};

struct edge_route_live {
    _Atomic uint64_t results[EDGE_RES_COUNT];
    _Atomic uint32_t turn;        /* round-robin */
    _Atomic int32_t client_proto; /* the protocol of the last status request (0: none yet) */
    /* The status cache (status_cache = yes): one Status Response JSON per
     * protocol version, filled by worker 0's checks (the version the last
     * client asked with) and by sessions fetching a version not cached.
     * The mutex guards the entries only (not a data path: status pings). */
    pthread_mutex_t status_mu;
    struct edge_status_entry status[EDGE_STATUS_VERSIONS];
};

struct edge_route {
    char *host;         /* canonical pattern (proto/hostpat.h): '*' labels are captures */
    bool wildcard;      /* it has '*' labels ("*.example.com": any name under example.com) */
    uint8_t ncaps;      /* its '*' labels: {1}..{ncaps} in templates */
    bool named;         /* a backend is a name (resolved per session): no checks, no status */
    int8_t suffix;      /* forward_suffix: 1 strip, 0 keep, -1: the section's */
    char *rewrite;      /* rewrite=: the host template for the Minecraft handshake; NULL: none */
    int8_t strategy;    /* enum edge_strategy of its own, -1: the section's */
    int8_t proxy_v2;    /* 1 or 0 of its own, -1: the section's */
    int8_t signed_mode; /* enum edge_signed of its own, -1: the section's */
    int line;           /* where it was set */
    struct edge_backend *backends;
    uint32_t nbackends;
    struct edge_route_live *live;
};

struct edge_live {
    _Atomic uint32_t halfopen; /* accepted, first message not complete */
    _Atomic uint64_t rejects[EDGE_REJ_COUNT];
    _Atomic uint64_t signed_results[SIGNKEY_RESULT_COUNT]; /* ferry_edge_signed_total */
    _Atomic uint64_t bans;                                 /* ferry_edge_bans_total */
    _Atomic uint64_t status[EDGE_STATUS_COUNT];            /* ferry_edge_status_total */
};

struct config_edge {
    char name[64];
    char origin[160]; /* "ferry.conf:12": the section header */
    enum edge_sniff sniff;
    enum edge_strategy strategy;
    bool proxy_v2;                /* a PROXY v2 header to the backend first */
    bool strip_suffix;            /* forward_suffix = strip: the routes' default */
    int suffix_line;              /* where forward_suffix was set (0: not) */
    int32_t unknown;              /* route index for unknown hosts; -1: close */
    char *unknown_name;           /* as written, resolved at the end of the section */
    uint32_t first_byte_ms;       /* first_byte_timeout */
    uint32_t hello_ms;            /* hello_timeout: the whole first message */
    uint32_t max_hello;           /* the Minecraft first-frame cap, bytes */
    uint32_t max_halfopen;        /* this edge's half-open connections; 0: no cap */
    uint32_t per_source;          /* concurrent connections per source; 0: no cap */
    uint32_t rate, burst;         /* new connections per second per source (/32, /64); 0: off */
    enum edge_signed signed_mode; /* the routes' default */
    char *signed_keys;            /* the keyring file, as written */
    int signed_keys_line;
    struct signkey_ring *ring;          /* loaded at the end of the section; NULL: none */
    uint32_t signed_skew;               /* seconds */
    uint32_t signed_max_ttl;            /* seconds */
    uint32_t prefix_conns;              /* concurrent per /24 or /48; 0: no cap */
    uint32_t prefix_rate, prefix_burst; /* new per second per /24 or /48; 0: off */
    struct acl_cidr *allow, *deny;      /* static lists (allow empty: everyone) */
    uint32_t nallow, ndeny;
    uint32_t ban_after; /* failures that ban a source; 0: off */
    uint32_t ban_window_ms, ban_ms;
    uint32_t health_ms;     /* health_check interval; 0: passive only */
    bool status_cache;      /* answer Minecraft status from the checks' cache */
    uint32_t status_ttl_ms; /* status_cache_ttl: how long a cached answer serves (0: 3 checks) */
    char *offline_motd;     /* status when no backend is up and nothing is cached */
    struct edge_route *routes;
    uint32_t nroutes;
    struct edge_live *live;
    struct addr listen[8]; /* its own listeners, added to config.listen at the end */
    uint32_t nlisten;
    int listen_line;
    char seen[512]; /* "|key|...": keys set, for "set twice" */
};

struct config;

/* A "[edge NAME]" header at file:line: a new section (errors into errs). */
void config_edge_section(struct config *c, const char *name, const char *file, int line,
                         struct msglist *errs);
/* A key of the section being read (the last one opened). */
void config_edge_key(struct config *c, const char *key, const char *value, const char *file,
                     int line, struct msglist *errs);
/* After the file (and the command line): check each section and add its
 * listeners to c->listen (with .edge set). */
void config_edge_finish(struct config *c, const char *file, struct msglist *errs);
/* Free the sections (config_destroy). */
void config_edge_free(struct config *c);

/* key belongs in [edge NAME] only (for "did you mean" at the top level). */
bool config_edge_is_key(const char *key);

struct hostpat_caps;
/* The route for canonical host (an exact route beats a pattern, the
 * pattern with the most literal labels wins, then the one with the most
 * labels, then the first written), or
 * -1; caps (may be NULL) gets the captures of the match. */
int32_t edge_route_find(const struct config_edge *e, const char *host, struct hostpat_caps *caps);
/* Does route r strip the suffixes after the host (forward_suffix)? */
bool edge_route_strips(const struct config_edge *e, const struct edge_route *r);
/* b as written for logs, metrics and the admin API: "ADDR:PORT" or
 * "NAME:PORT" (a template as configured, never an expansion). */
const char *edge_backend_format(const struct edge_backend *b, char *out, size_t len);

/* Names for logs and metrics. */
const char *edge_reject_name(enum edge_reject r);
const char *edge_result_name(enum edge_result r);
const char *edge_sniff_name(enum edge_sniff s);
const char *edge_signed_name(enum edge_signed m);
const char *edge_status_name(enum edge_status s);
/* Route r's signature requirement (its own, else the section's). */
enum edge_signed edge_route_signed(const struct config_edge *e, const struct edge_route *r);

#endif
