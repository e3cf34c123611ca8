/*
 * stats.h: per-worker counters. Each counter has exactly one writer (its
 * worker thread), so an increment is a relaxed load and store: no lock, no
 * locked instruction. Readers on other threads (the shutdown summary, the
 * metrics endpoint) load relaxed and sum over workers; a sum may be a few
 * increments stale, never torn.
 */
#ifndef FERRY_METRICS_STATS_H
#define FERRY_METRICS_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "util/compiler.h"

typedef _Atomic uint64_t stat_t;

#define STATS_SOCKS5_REPLIES 9

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
    stat_t splice_bytes;        /* the share of payload moved by splice() */
    stat_t unknown_protocol;    /* first byte not a protocol the listener speaks */
    stat_t denied;              /* destinations refused by rules or protected ranges */
    stat_t limit_per_ip;        /* closed at accept: limits.per_ip */
    stat_t limit_rate;          /* closed at accept: limits.rate */
    stat_t limit_per_user;      /* refused after authentication: limits.per_user */
    stat_t bw_throttled;        /* times a session waited for bandwidth */
    stat_t udp_drop_denied;     /* datagrams to a destination the rules refuse */
    stat_t http_errors;         /* error responses sent */
    stat_t http_pool_hits;      /* requests sent on a pooled upstream connection */
    stat_t udp_assocs;          /* UDP associations opened */
    stat_t udp_rejected;        /* refused: associations limit reached */
    stat_t udp_in, udp_out;     /* datagrams client -> destination, and back */
    stat_t udp_drop_source;     /* from an address that is not the client */
    stat_t udp_drop_frag;       /* FRAG != 0 */
    stat_t udp_drop_malformed;  /* short header, RSV, ATYP, bad domain */
    stat_t udp_drop_size;       /* over udp.max_datagram, either way */
    stat_t udp_drop_dest_limit; /* a new destination over udp.destinations */
    stat_t udp_drop_unknown;    /* a reply from a host the client never sent to */
    stat_t udp_drop_queue;      /* waiting for DNS and the queue was full */
    stat_t udp_drop_dns;        /* the destination name did not resolve */
    stat_t udp_drop_send;       /* the kernel refused (buffer full, unreachable) */
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

static inline uint64_t stat_get(const stat_t *s)
{
    return atomic_load_explicit(s, memory_order_relaxed);
}

#endif
