/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * stats.h: per-worker counters. Each counter has exactly one writer (its
 * worker thread), so an increment is a relaxed load and store: no lock, no
 * locked instruction. Readers on other threads (the shutdown summary, the
 * metrics endpoint) load relaxed and sum over workers; a sum may be a few
 * increments stale, never torn.
 *
 * Only the counters and their label names live here, low enough for every
 * room that counts (config, auth, the worker, relay, udp) to include; the
 * Prometheus rendering and the HTTP endpoint stay in metrics/, above them.
 */
#ifndef FERRY_CORE_STATS_H
#define FERRY_CORE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "util/compiler.h"

typedef _Atomic uint64_t stat_t;

#define STATS_SOCKS5_REPLIES 9

/* Sessions by protocol: before the first byte a session has none. */
enum stats_proto { SP_NONE, SP_SOCKS5, SP_SOCKS4, SP_HTTP, SP_FORWARD, SP_COUNT };

/* How a session ended, decided once (the first answer that settles it). */
enum stats_outcome {
    OC_UNSET,       /* not decided: the client went away before an answer */
    OC_OK,          /* success reply: relayed, associated, bound or forwarded */
    OC_DENIED,      /* rules or protected ranges */
    OC_AUTH_FAILED, /* bad credentials, throttled, or authentication busy */
    OC_LIMITED,     /* limits.per_ip, limits.rate, limits.per_user, udp.associations */
    OC_UNREACHABLE, /* DNS failure, host or network unreachable */
    OC_REFUSED,     /* the destination refused */
    OC_TIMEOUT,     /* connect timeout */
    OC_UNSUPPORTED, /* command or address type not supported */
    OC_ERROR,       /* any other failure on the way to the destination */
    OC_BAD_REQUEST, /* malformed, unknown protocol, or too slow a handshake */
    OC_QUOTA,       /* a user's [quota]: bytes this period, or sessions at once */
    OC_COUNT
};

/* Why an HTTP/2 connection was told GOAWAY(ENHANCE_YOUR_CALM): the abuse
 * budget it went over ([http2]). */
enum stats_h2_calm {
    H2_CALM_HEADER_LIST, /* max_header_list */
    H2_CALM_RAPID_RESET, /* resets_per_second */
    H2_CALM_PING,        /* pings_per_second */
    H2_CALM_SETTINGS,    /* settings_per_second */
    H2_CALM_EMPTY_DATA,  /* empty_data_per_second */
    H2_CALM_COUNT
};

/* Handshake latency (accept to success reply) in microseconds: bucket
 * upper bounds; the last bucket is +Inf. */
#define STATS_HS_BUCKETS 16
extern const uint32_t stats_hs_bounds_us[STATS_HS_BUCKETS - 1];

/* Authentication outcomes, per worker. */
struct auth_stats {
    stat_t ok, denied, cache_hits, throttled, busy, blocks;
    stat_t shared;            /* attempts that waited for an identical one's verification */
    stat_t cache_shared_hits; /* cache hits found in the table all workers share */
    stat_t unavailable;       /* refused: the helper or PAM gave no verdict (fail closed) */
};

struct worker_stats {
    stat_t accepted;                             /* connections accepted */
    stat_t rejected_limit;                       /* closed at accept: max_connections reached */
    stat_t accept_errors;                        /* accept() failures other than EAGAIN */
    stat_t active;                               /* sessions open now */
    stat_t closed;                               /* sessions ended */
    stat_t bytes_up;                             /* payload client -> destination */
    stat_t bytes_down;                           /* payload destination -> client */
    stat_t socks5_replies[STATS_SOCKS5_REPLIES]; /* by REP code */
    stat_t handshake_errors;                     /* malformed or abandoned handshakes */
    stat_t dns_queries;
    stat_t dns_cache_hits;
    stat_t dns_failures;
    stat_t dns_unanswered;               /* lookups no DNS server answered (timed out or refused) */
    stat_t splice_bytes;                 /* the share of payload moved by splice() */
    stat_t unknown_protocol;             /* first byte not a protocol the listener speaks */
    stat_t denied;                       /* destinations refused by rules or protected ranges */
    stat_t limit_per_ip;                 /* closed at accept: limits.per_ip */
    stat_t limit_rate;                   /* closed at accept: limits.rate */
    stat_t limit_per_user;               /* refused after authentication: limits.per_user */
    stat_t bw_throttled;                 /* times a session waited for bandwidth */
    stat_t udp_drop_denied;              /* datagrams to a destination the rules refuse */
    stat_t http_errors;                  /* error responses sent */
    stat_t http_pool_hits;               /* requests sent on a pooled upstream connection */
    stat_t udp_assocs;                   /* UDP associations opened */
    stat_t udp_rejected;                 /* refused: associations limit reached */
    stat_t udp_in, udp_out;              /* datagrams client -> destination, and back */
    stat_t udp_drop_source;              /* from an address that is not the client */
    stat_t udp_drop_frag;                /* FRAG != 0 */
    stat_t udp_drop_malformed;           /* short header, RSV, ATYP, bad domain */
    stat_t udp_drop_size;                /* over udp.max_datagram, either way */
    stat_t udp_drop_dest_limit;          /* a new destination over udp.destinations */
    stat_t udp_drop_unknown;             /* a reply from a host the client never sent to */
    stat_t udp_drop_queue;               /* waiting for DNS and the queue was full */
    stat_t udp_drop_dns;                 /* the destination name did not resolve */
    stat_t udp_drop_send;                /* the kernel refused (buffer full, unreachable) */
    stat_t udp_bytes_in, udp_bytes_out;  /* datagram payload (SOCKS header excluded) */
    stat_t udp_drop_bandwidth;           /* over limits.bandwidth_user or _connection */
    stat_t udp_drop_parent;              /* its way out cannot carry UDP, or the parent failed */
    stat_t udp_drop_context;             /* CONNECT-UDP: a DATAGRAM capsule's context id not 0 */
    stat_t udp_drop_tunnel;              /* its tunnel flow could not open, was refused, ended */
    stat_t udp_tun_opened;               /* tunnel flows (CONNECT-UDP streams to the parent) */
    stat_t udp_tun_closed;               /* ... closed */
    stat_t sessions[SP_COUNT][OC_COUNT]; /* ended, by protocol and outcome */
    stat_t active_proto[SP_COUNT];       /* open now, by protocol */
    stat_t hs_buckets[SP_COUNT][STATS_HS_BUCKETS]; /* not cumulative; summed at scrape */
    stat_t hs_sum_us[SP_COUNT];
    stat_t proxy_rejected;          /* PROXY protocol: untrusted peer, bad or missing header */
    stat_t loop_lag_ms;             /* the latest timer ran this late, over the last second */
    stat_t h2_conns;                /* HTTP/2 connections open now */
    stat_t h2_conns_opened;         /* ... and ever opened */
    stat_t h2_streams;              /* HTTP/2 request streams opened */
    stat_t h2_udp_streams;          /* ... of which CONNECT-UDP streams relaying */
    stat_t h2_udp_aborted;          /* ... aborted for a capsule too long or malformed */
    stat_t h2_udp_capsules_skipped; /* capsules of a type connect-udp does not use */
    stat_t h2_goaway_calm[H2_CALM_COUNT]; /* GOAWAY(ENHANCE_YOUR_CALM), by budget */
    stat_t h2_goaway_shutdown;            /* GOAWAY(NO_ERROR): a drain or a reload */
    struct auth_stats auth;
} __attribute__((aligned(CACHELINE)));

static inline void stat_add(stat_t *s, uint64_t n)
{
    atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void stat_sub(stat_t *s, uint64_t n)
{
    atomic_store_explicit(s, atomic_load_explicit(s, memory_order_relaxed) - n,
                          memory_order_relaxed);
}

/* Record one handshake of us microseconds. */
void stats_hs_observe(struct worker_stats *st, enum stats_proto p, uint64_t us);
const char *stats_proto_name(enum stats_proto p);
const char *stats_outcome_name(enum stats_outcome o);

static inline uint64_t stat_get(const stat_t *s)
{
    return atomic_load_explicit(s, memory_order_relaxed);
}

#endif
