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

#define DNS_MAX_ADDRS  8
#define DNS_CACHE_SIZE 1024 /* slots; a power of two */

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
    uint64_t queries, cache_hits, failures;
};

/* Owned by its worker; every call must come from that worker's thread. */
struct resolver {
    struct loop *l;
    void *channel; /* ares_channel */
    struct timer timer;
    struct dns_sock *socks;
    struct dns_cache_entry **cache;
    uint32_t max_ttl_s;
    struct resolver_stats stats;
};

/* Call once per process before any resolver_init(). */
int resolver_global_init(void);
void resolver_global_fini(void);

int resolver_init(struct resolver *r, struct loop *l);
/* Pending queries end with DNS_FAILED callbacks... unless cancelled. */
void resolver_fini(struct resolver *r);

/* Answer from the cache or the RFC 6761 special names without waiting:
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
