/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent.h: UDP through a SOCKS5 parent, inside udp/ only. When a rule
 * sends a destination of an association via a SOCKS5 parent (or a pool
 * whose first member up is one), ferry opens its own association with
 * that parent (RFC 1928 section 7: a TCP control connection, UDP
 * ASSOCIATE with RFC 1929 credentials when the outbound has some), one
 * per (association, outbound), on the first datagram for it. Datagrams go
 * to the parent's relay with the header rewritten for the parent (a name
 * for socks5h, an address resolved here for socks5); the parent's come
 * back to the client as they are, header included, once checked. While
 * the parent's association opens, datagrams wait within udp.queue.
 *
 * When a parent association fails to open or its control connection
 * ends, the client's association ends too (udp_owner.on_end, called from a
 * task, never from inside a handler of the association). UDP cannot go
 * through HTTP, HTTPS or SOCKS4 parents: such datagrams are dropped and
 * counted (ferry_udp_dropped_total{reason="parent"}) with a rate-limited
 * log line.
 */
#ifndef FERRY_UDP_PARENT_H
#define FERRY_UDP_PARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "udp/assoc.h"

struct config;
struct udp_parent;

/* Can any datagram under cfg go to a parent (the default outbound or a
 * rule's via is not a direct one)? Without, names are resolved before they
 * are judged, as always. */
bool udp_parent_possible(const struct config *cfg);

/* Does outbound ob (an index into a->conf->outbounds) send datagrams
 * straight from our own sockets? */
bool udp_parent_direct(const struct udp_assoc *a, uint16_t ob);

/* The parent association that carries datagrams for outbound ob (not a
 * direct one), opened now if it is not yet. NULL when ob cannot carry UDP
 * (reject, a kind other than SOCKS5, a pool with no SOCKS5 member up) or
 * memory is short: the drop is counted (and logged, rate-limited) here. */
struct udp_parent *udp_parent_get(struct udp_assoc *a, uint16_t ob);

/* Send len bytes of payload at data through p to name (NULL: to d) at
 * port; held while p opens (within udp.queue), dropped once it failed.
 * Counted as relayed when the kernel takes it. */
void udp_parent_send(struct udp_parent *p, const char *name, const struct addr *d, uint16_t port,
                     const uint8_t *data, size_t len);

/* A datagram the client sent to a name, when udp_parent_possible(): judge
 * the name (once per name and port while it is in use) and, when its way
 * is a parent that resolves names, send it there as a name (within the
 * bandwidth budget bw). true when the datagram was dealt with here (sent,
 * held, or dropped and counted); false: the caller resolves the name. */
bool udp_parent_name(struct udp_assoc *a, struct udp_budget *bw, const char *name, uint16_t port,
                     const uint8_t *data, size_t len, uint64_t now);

/* Forget names unused for udp.idle (the association's sweep). */
void udp_parent_sweep(struct udp_assoc *a, uint64_t now);

/* Close every parent association of a and forget its names (a closes). */
void udp_parent_close_all(struct udp_assoc *a);

#endif
