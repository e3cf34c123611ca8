/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resolver.h: asynchronous name resolution for one worker: a c-ares channel
 * driven by the worker's own loop, plus a small TTL cache. A resolver that
 * hangs never blocks the loop; every query ends in its callback exactly once
 * (unless cancelled), never from inside resolver_query() itself.
 *
 * Names RFC 6761 reserves are answered here without asking DNS: "localhost"
 * (and "*.localhost") is the loopback addresses, "*.invalid" does not exist.
 */
#ifndef FERRY_DNS_RESOLVER_H
#define FERRY_DNS_RESOLVER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/loop.h"
#include "util/addr.h"

#define DNS_MAX_ADDRS      8
#define DNS_CACHE_SIZE     1024    /* default slots per resolver */
#define DNS_CACHE_MAX      1048576 /* slots, at most */
#define DNS_MAX_SERVERS    16
#define DNS_NEGATIVE_TTL_S 5 /* a name that does not exist, before min/max_ttl */

struct dns_answer {
    uint8_t n;
    struct addr a[DNS_MAX_ADDRS]; /* ports are set to the query's port */
};

enum dns_status {
    DNS_OK = 0,
    DNS_NOTFOUND = -1, /* NXDOMAIN or no address of any family */
    DNS_TIMEOUT = -2,
    DNS_FAILED = -3, /* server failure, refused, malformed name, no servers */
};

typedef void (*dns_cb)(void *arg, int status, const struct dns_answer *ans);

struct dns_req;
struct dns_cache_entry;
struct dns_sock;

struct resolver_stats {
    uint64_t queries, cache_hits, failures, unanswered;
};

struct dns_hosts;

/* Called when a query ended because no server answered (every try timed
 * out, or every server refused or was unreachable): the name and the
 * status (DNS_TIMEOUT or DNS_FAILED). Runs on the resolver's loop, also for
 * queries that were cancelled meanwhile; it must not call the resolver. */
typedef void (*dns_unanswered_cb)(void *arg, const char *name, int status);

/* How a resolver works; resolver_opts_default() fills the defaults. */
struct resolver_opts {
    const char *servers;     /* c-ares CSV "ip:port,[ip6]:port"; NULL: resolv.conf's */
    uint32_t cache_size;     /* answers kept (rounded up to a power of two); 0: no cache */
    uint32_t min_ttl_ms;     /* an answer is cached at least this long... */
    uint32_t max_ttl_ms;     /* ... and at most this long (negative answers too) */
    uint32_t timeout_ms;     /* per try and server */
    uint32_t tries;          /* tries per server */
    bool hosts_system;       /* let c-ares consult the system's hosts file (its "lookups") */
    struct dns_hosts *hosts; /* consulted before DNS; NULL: none (the resolver takes a ref) */
    dns_unanswered_cb unanswered;
    void *unanswered_arg;
};

/* Owned by its worker; every call must come from that worker's thread. */
struct resolver {
    struct loop *l;
    void *channel; /* ares_channel */
    struct timer timer;
    struct dns_sock *socks;
    struct dns_cache_entry **cache;
    uint32_t cache_mask; /* slots - 1 */
    uint32_t min_ttl_ms, max_ttl_ms;
    struct dns_hosts *hosts;
    char *servers; /* o->servers as given; NULL: resolv.conf's */
    dns_unanswered_cb unanswered;
    void *unanswered_arg;
    struct resolver_stats stats;
};

/* Call once per process before any resolver_init(). */
int resolver_global_init(void);
void resolver_global_fini(void);

/* The defaults: resolv.conf's servers, DNS_CACHE_SIZE answers kept between
 * 0 and 300 s, 2 s per try, 2 tries, the system's hosts file. */
void resolver_opts_default(struct resolver_opts *o);
/* Set up r on loop l with o (NULL: the defaults). Returns 0, -ENOMEM, or
 * -EINVAL when c-ares refuses o->servers. */
int resolver_init(struct resolver *r, struct loop *l, const struct resolver_opts *o);
/* Apply what a reload may change: the hosts table, min_ttl and max_ttl
 * (answers cached already keep their expiry), and cache_size (a new size
 * empties the cache). servers, timeout, tries and hosts_system stay as
 * resolver_init() set them. Returns 0, or -ENOMEM with the cache as it
 * was (the rest applied). */
int resolver_update(struct resolver *r, const struct resolver_opts *o);
/* Pending queries end with DNS_FAILED callbacks... unless cancelled. */
void resolver_fini(struct resolver *r);

/* Answer from the RFC 6761 special names, the hosts table or the cache
 * without waiting:
 * true with status and ans filled, or false when a query is needed. */
bool resolver_lookup_now(struct resolver *r, const char *name, uint16_t port, int *status,
                         struct dns_answer *ans);
/* Start a query; cb runs later on this loop. Returns a handle for
 * resolver_cancel(), or NULL if out of memory. */
struct dns_req *resolver_query(struct resolver *r, const char *name, uint16_t port, dns_cb cb,
                               void *arg);
/* The callback will not run; the request's memory is reclaimed later. */
void resolver_cancel(struct dns_req *q);

const char *dns_status_str(int status);

#endif
