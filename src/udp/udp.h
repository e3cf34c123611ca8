/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp.h: UDP ASSOCIATE (RFC 1928 section 7): one association per control
 * connection. It owns a client-facing UDP socket and at most one outgoing
 * socket per address family, shared by all its destinations so their source
 * ports stay stable. Datagrams move in batches (recvmmsg/sendmmsg) through
 * per-worker scratch buffers: no allocation, lock, timer or syscall of its
 * own per datagram (only one held while its name resolves is copied).
 *
 * Rules: only the client's address may send (its port is fixed by its first
 * datagram); FRAG != 0 is dropped; at most udp.destinations destinations,
 * each forgotten after udp.idle without traffic; replies are accepted from
 * any port of a host the client has sent to (TFTP-style) and wrapped with
 * the header of the address they came from; datagrams over
 * udp.max_datagram (header included) are dropped both ways.
 */
#ifndef FERRY_UDP_UDP_H
#define FERRY_UDP_UDP_H

#include <stdint.h>

#include "core/loop.h"
#include "util/addr.h"
#include "worker/worker.h"

struct udp_assoc;
struct config_udp;

/* Why an association could not be opened. */
enum udp_open_err {
    UDP_OPEN_LIMIT = -1,  /* udp.associations reached on this listen address */
    UDP_OPEN_SOCKET = -2, /* socket/bind failed (ports range exhausted, fds) */
};

/* Open an association for a client at `client` (IP; port ignored) that
 * reached the proxy on `local` (the control connection's local address).
 * Fills *bnd with the address to put in the reply. Returns 0, a
 * udp_open_err, or -ENOMEM. on_activity(arg) is called (at most once per
 * batch) when datagrams move, so the owner can track idleness; allow(arg,
 * name or NULL, address) judges each new destination (rules). */
int udp_assoc_open(struct worker *w, const struct config_udp *cfg, unsigned listen_index,
                   const struct addr *client, const struct addr *local, struct addr *bnd,
                   void (*on_activity)(void *arg),
                   bool (*allow)(void *arg, const char *name, const struct addr *ip), void *arg,
                   struct udp_assoc **out);
/* Police the association's datagrams against bandwidth limits (both
 * directions draw from one budget). Once per batch, allow(arg, want) says
 * how many of at most want payload bytes may move now; a datagram whose
 * payload does not fit in what is left is dropped and counted
 * (udp_drop_bandwidth), never queued or delayed. After the batch,
 * spend(arg, n) is told the payload bytes that moved. allow must answer at
 * once, without blocking or arming anything. Without this, datagrams are
 * not limited. */
void udp_assoc_set_bw(struct udp_assoc *a, uint32_t (*allow)(void *arg, uint32_t want),
                      void (*spend)(void *arg, uint32_t n));
/* End the association: close its sockets, cancel lookups, free. NULL is a
 * no-op. Byte counts are returned for the access log. */
void udp_assoc_close(struct udp_assoc *a, uint64_t *bytes_up, uint64_t *bytes_down);

/* Release the worker's scratch buffers (at worker teardown). */
void udp_worker_fini(struct worker *w);

#endif
