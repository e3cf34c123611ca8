/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * assoc.h: the inside of a UDP association, shared by the rooms of udp/
 * only (udp.c: the direct relay; parent.c: the way through a SOCKS5
 * parent). Nothing outside udp/ includes it: the owner sees udp.h.
 *
 * What lives here is what both sides of an association touch: its
 * sockets and client, its limits and counters and the owner's callbacks
 * (called through owner.h, with the bandwidth budget of a batch). Nothing
 * here sends, receives or allocates by itself.
 */
#ifndef FERRY_UDP_ASSOC_H
#define FERRY_UDP_ASSOC_H

#include <stdbool.h>
#include <stdint.h>

#include "acct/acct.h"
#include "core/loop.h"
#include "udp/dest_table.h"
#include "udp/owner.h"
#include "udp/tunnel.h"
#include "udp/udp.h"
#include "util/addr.h"
#include "util/list.h"

/* The association's sockets (udp_assoc.gso_max). */
enum { UDP_SOCK_CLIENT, UDP_SOCK_OUT4, UDP_SOCK_OUT6, UDP_SOCKS };

/* A datagram waiting for its destination name to resolve. */
struct udp_pkt {
    struct udp_pkt *next;
    uint16_t port;
    uint16_t len;
    uint8_t data[];
};

struct udp_parent;

struct udp_assoc {
    struct worker *w;
    const struct config *conf;    /* the control session's; outlives us */
    const struct config_udp *cfg; /* &conf->udp */
    unsigned listen_index;
    struct io cio;        /* client-facing */
    struct io out4, out6; /* outgoing, per family, opened on first use */
    struct addr client;
    bool port_fixed;
    /* Per socket, the largest datagram merged into one UDP_SEGMENT message
     * (UDP_GSO_MAXBYTES until the route refuses; 0: merging is off). */
    uint16_t gso_max[UDP_SOCKS];
    struct udp_dests dests; /* the destinations the client sent to */
    struct udp_names names; /* the names it sent to */
    uint32_t queued;        /* datagrams held (names resolving, parents opening) */
    struct timer sweep;
    struct release rel; /* freed after the batch that closed it */
    uint64_t up, down;
    struct acct_ctr *acct; /* the user's counters on this worker (acct/), or NULL */
    struct udp_owner own;
    uint32_t (*bw_allow)(void *arg, uint32_t want);
    void (*bw_spend)(void *arg, uint32_t n);
    /* parent.c: names sent to parents that resolve them ("PORT NAME"), and
     * the parent associations (NULL, and no name judged before it is
     * resolved, when no rule can send a datagram to a parent). */
    bool parents_possible;
    struct udp_names pnames;
    uint32_t npnames; /* of pnames, those that are destinations (via a parent) */
    struct udp_parent *parents;
    /* tunnel.c: the flows through a tunnel outbound ("PORT HOST"), their
     * queue, and whether udp.max_datagram counts payloads (a tunnel may
     * carry datagrams) and a lost tunnel ended us already. */
    struct udp_names tflows;
    struct udp_tq tq;
    bool tunnel_possible, tun_lost;
    /* udp_assoc_open_piped: the client side is this pipe (no cio socket,
     * not counted in udp.associations, payload-sized limits). */
    bool piped;
    struct udp_pipe pipe;
};

/* n datagrams of bytes payload relayed (up: client -> destinations):
 * the worker's counters, the association's, the user's. */
static inline void udp_count(struct udp_assoc *a, bool up, uint64_t n, uint64_t bytes)
{
    struct worker_stats *st = &a->w->stats;
    stat_add(up ? &st->udp_in : &st->udp_out, n);
    stat_add(up ? &st->udp_bytes_in : &st->udp_bytes_out, bytes);
    if (up)
        a->up += bytes;
    else
        a->down += bytes;
    if (a->acct) {
        stat_add(up ? &a->acct->dgram_up : &a->acct->dgram_down, n);
        stat_add(up ? &a->acct->up : &a->acct->down, bytes);
    }
}

#endif
