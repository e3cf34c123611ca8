/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge.h: `ferry bench edge`, the edge-mode scenario (sc_edge.c), and the
 * backends it routes to (edge_backend.c). Every edge measured, ferry's or a
 * peer's (HAProxy req.ssl_sni, nginx ssl_preread), routes a.test to backend
 * A and b.test to backend B; each backend answers a new connection with
 * one byte naming itself at once, then reads until EOF. A byte naming the
 * other backend is a misrouted connection.
 */
#ifndef FERRY_BENCH_EDGE_H
#define FERRY_BENCH_EDGE_H

#include <stdint.h>

#include "util/addr.h"

#define EDGE_BACKENDS 2

/* What `--hello` sends first on each connection. */
enum edge_hello {
    EDGE_HELLO_TLS,         /* a 517-byte ClientHello, one write */
    EDGE_HELLO_MC,          /* a Minecraft handshake + Login Start, one write */
    EDGE_HELLO_PQ_SEGMENTS, /* a ~1.8 KB ClientHello in one record, two writes */
    EDGE_HELLO_PQ_RECORDS,  /* the same in two TLS records, one write */
};

/* The name of a hello kind as --hello spells it; parse: the kind, or -1. */
const char *edge_hello_name(unsigned kind);
int edge_hello_parse(const char *s);

/* The host names routed to backend i, and the byte backend i answers. */
extern const char *const edge_hosts[EDGE_BACKENDS];
#define EDGE_BACKEND_BYTE(i) ((uint8_t)('A' + (i)))

struct edge_backends;

/* Start the backends on 127.0.0.1 in a thread of their own: on ports base
 * and base + 1, or any free ports when base is 0. NULL after telling why on
 * stderr. */
struct edge_backends *edge_backends_start(uint16_t base);
/* Where backend i listens. */
const struct addr *edge_backend_addr(const struct edge_backends *e, unsigned i);
/* Connections backend i has accepted so far (any thread). */
uint64_t edge_backend_accepted(const struct edge_backends *e, unsigned i);
/* Stop the thread, close every connection and free. NULL is a no-op. */
void edge_backends_stop(struct edge_backends *e);

struct bench;
struct child;
/* Start the self-hosted ferry (b->o.ferry, --proxy-workers, --proxy-set)
 * with an [edge bench] listener on a free 127.0.0.1 port routing a.test to
 * backend A and b.test to B of be; wait until the edge accepts; its
 * address into *edge, its pid into b->pids (b->npids 1). 0, or -errno
 * after telling why on stderr (c stopped). */
int edge_self_start(struct bench *b, struct child *c, const struct edge_backends *be,
                    struct addr *edge);

#endif
