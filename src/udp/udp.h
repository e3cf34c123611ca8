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
 *
 * A destination whose rule names a SOCKS5 parent (via) goes through an
 * association ferry opens with that parent (parent.h), one per parent,
 * opened on the first datagram for it; the association ends when one of
 * them does. What an association tells and asks its owner (struct
 * udp_owner, the verdicts) is in owner.h.
 */
#ifndef FERRY_UDP_UDP_H
#define FERRY_UDP_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "udp/owner.h"
#include "util/addr.h"
#include "worker/worker.h"

struct udp_assoc;
struct config;
struct config_udp;

/* Why an association could not be opened. */
enum udp_open_err {
    UDP_OPEN_LIMIT = -1,  /* udp.associations reached on this listen address */
    UDP_OPEN_SOCKET = -2, /* socket/bind failed (ports range exhausted, fds) */
};

/* Open an association for a client at `client` (IP; port ignored) that
 * reached the proxy on `local` (the control connection's local address),
 * under cfg (its [udp] limits and outbounds; it must outlive the
 * association). Fills *bnd with the address to put in the reply. Returns
 * 0, a udp_open_err, or -ENOMEM. */
int udp_assoc_open(struct worker *w, const struct config *cfg, unsigned listen_index,
                   const struct addr *client, const struct addr *local, struct addr *bnd,
                   const struct udp_owner *owner, struct udp_assoc **out);
/* Bind UDP socket fd as a relay port on local's address (its port
 * ignored), as udp_assoc_open binds its client-facing socket: on a port
 * from udp.ports of cfg when set, and *bnd is what the reply names (the
 * bound address, or udp.advertise with the bound port). 0 or -errno.
 * For a relay port whose datagrams another room reads (relay/h2rev.c). */
int udp_relay_bind(struct worker *w, const struct config_udp *cfg, int fd, const struct addr *local,
                   struct addr *bnd);
/* The client side of a piped association (udp_assoc_open_piped): no
 * socket of its own, its datagrams come from the owner. deliver(arg, p,
 * n) takes one whole SOCKS UDP datagram for the client (header written in
 * front of the payload; p is scratch space, valid only during the call):
 * true when taken (relayed), false when dropped (counted by the pipe);
 * close(arg) says the association is closing (from udp_assoc_close). */
struct udp_pipe {
    bool (*deliver)(void *arg, const uint8_t *p, size_t n);
    void (*close)(void *arg);
    void *arg;
};

/* Open an association whose client side is pipe, not a socket: a reverse
 * SOCKS association (the client's datagrams come through a tunnel,
 * relay/outbound_h2rev_assoc.c). The same destinations, names, limits and
 * counters as udp_assoc_open's, but udp.max_datagram counts payloads (as
 * at a tunnel's ends), every destination leaves from this host's own
 * sockets (route() still judges each), and the association is not counted
 * against udp.associations here (the tunnel's far end counts it). 0 or
 * -ENOMEM. */
int udp_assoc_open_piped(struct worker *w, const struct config *cfg, const struct addr *client,
                         const struct udp_owner *owner, const struct udp_pipe *pipe,
                         struct udp_assoc **out);
/* One SOCKS UDP datagram p[0..n) from a piped association's client: checked
 * (FRAG, size) and relayed as one from the client's socket would be. Not
 * from inside a handler of the association (the owner's own task). */
void udp_assoc_input(struct udp_assoc *a, const uint8_t *p, size_t n);
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
struct acct_ctr;
/* Count the association's datagrams and their payload in ctr too (a
 * user's counters on this worker, acct/; NULL: not). */
void udp_assoc_set_acct(struct udp_assoc *a, struct acct_ctr *ctr);
/* End the association: close its sockets, cancel lookups, free. NULL is a
 * no-op. Byte counts are returned for the access log. */
void udp_assoc_close(struct udp_assoc *a, uint64_t *bytes_up, uint64_t *bytes_down);

/* Release the worker's scratch buffers (at worker teardown). */
void udp_worker_fini(struct worker *w);

#endif
