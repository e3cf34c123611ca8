/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dest_table.h: the two lookup tables of a UDP association: the
 * destinations the client sent to (by address and port, and by host, for
 * replies from another port), and the names it sent to (what each resolved
 * to, or that it is being resolved).
 *
 * This room is data structures only: it allocates and hashes, and never
 * sends, receives, resolves, counts or logs. Hashes are keyed by a seed
 * the owner draws, so a client cannot aim its destinations at one chain.
 * Idleness is the owner's clock passed in (a sweep), never per datagram.
 * What a name entry holds beyond its key (a lookup in flight, datagrams
 * waiting for it) is the owner's, and given back through a drop callback
 * whenever the table lets an entry go.
 */
#ifndef FERRY_UDP_DEST_TABLE_H
#define FERRY_UDP_DEST_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/addr.h"
#include "util/list.h"

#define UDP_DEST_MIN 4 /* first allocation of the destination array */

struct udp_parent;

struct udp_dest {
    struct addr a;
    uint64_t last_ms;       /* the owner's clock when it was last used */
    struct udp_parent *via; /* the owner's: NULL when added */
};

/* Destinations: a dense array (the sweep compacts it) and an index of
 * 2 * (mask + 1) slots, open addressing with linear probing, at most half
 * full. Slots hold an array index plus one (0: empty); the first half is
 * keyed by address and port, the second by address alone and points at
 * the first destination of each host. The index is rebuilt when the array
 * grows or the sweep removes destinations, never updated by deletion. */
struct udp_dests {
    struct udp_dest *v;
    uint32_t n, cap;
    uint32_t *slots;
    uint32_t mask;
    uint64_t seed;
};

/* An empty table (no memory held) keyed by seed. */
void udp_dests_init(struct udp_dests *t, uint64_t seed);
/* Free what the table holds; it is empty again. */
void udp_dests_fini(struct udp_dests *t);
/* The destination with this address and port, or NULL. */
struct udp_dest *udp_dests_find(const struct udp_dests *t, const struct addr *d);
/* The destination a reply from src belongs to: the one with src's address
 * and port, else the first one added with src's address (any port), or
 * NULL. */
struct udp_dest *udp_dests_find_host(const struct udp_dests *t, const struct addr *src);
/* Add d (not in the table: udp_dests_find said so), used at now. NULL when
 * the table holds limit destinations already, or memory is exhausted (the
 * table is unchanged then). The pointer is valid until the next add or
 * sweep. */
struct udp_dest *udp_dests_add(struct udp_dests *t, const struct addr *d, uint64_t now,
                               uint32_t limit);
/* Keep the destinations used within idle_ms before now; an emptied table
 * gives its memory back. */
void udp_dests_sweep(struct udp_dests *t, uint64_t now, uint32_t idle_ms);

/* A name the client sent to. */
#define UDP_NAME_RESOLVING 1 /* status while its lookup runs */

struct udp_assoc;
struct udp_pkt;
struct dns_req;

struct udp_name {
    struct list link;       /* in the table's list, oldest first */
    struct udp_name *hnext; /* chain of its hash bucket */
    uint32_t hash;
    int status;          /* UDP_NAME_RESOLVING, DNS_OK, or a failure */
    uint64_t expires_ms; /* settled: forgotten (or looked up again) from then on */
    /* The owner's: */
    struct udp_assoc *a;
    struct dns_req *q; /* while resolving */
    struct addr addr;  /* port 0 */
    struct udp_pkt *head, *tail;
    struct udp_parent *via; /* parent.c's names: the parent it goes through */
    struct udp_flow *flow;  /* tunnel.c's flows */
    char name[];
};

/* Names: in order of creation (eviction takes the oldest) and in mask + 1
 * hash buckets (grown to at least one per name). */
struct udp_names {
    struct list list;
    struct udp_name **buckets;
    uint32_t mask, n;
    uint64_t seed;
};

/* Called with an entry the table is about to free (already unlinked):
 * the owner gives back what the entry holds of its own. */
typedef void (*udp_name_drop_fn)(struct udp_name *nm);

/* An empty table (no memory held) keyed by seed. */
void udp_names_init(struct udp_names *t, uint64_t seed);
/* Drop and free every entry, then the buckets; the table is empty again. */
void udp_names_fini(struct udp_names *t, udp_name_drop_fn drop);
/* The keyed hash of a NUL-terminated name, for find and add. */
uint32_t udp_names_hash(const struct udp_names *t, const char *name);
/* The entry for name (hash from udp_names_hash), or NULL. */
struct udp_name *udp_names_find(const struct udp_names *t, const char *name, uint32_t hash);
/* A new entry for name (not in the table), status UDP_NAME_RESOLVING and
 * the owner's fields zero. With limit entries already, the oldest settled
 * one is dropped and freed first. NULL when every entry is resolving, or
 * memory is exhausted (the table is unchanged then, but for an eviction). */
struct udp_name *udp_names_add(struct udp_names *t, const char *name, uint32_t hash, uint32_t limit,
                               udp_name_drop_fn drop);
/* Drop and free the settled entries whose expires_ms is at or before now. */
void udp_names_expire(struct udp_names *t, uint64_t now, udp_name_drop_fn drop);

#endif
