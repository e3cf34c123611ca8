/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sock.h: nonblocking socket calls. Every function returns a file
 * descriptor or 0 on success and -errno on failure, and logs nothing: the
 * caller knows what the socket was for and reports it once.
 */
#ifndef FERRY_CORE_SOCK_H
#define FERRY_CORE_SOCK_H

#include <stdbool.h>

#include "util/addr.h"

/* Bind and listen. IPv6 sockets are IPV6_V6ONLY so "[::]:1080" and
 * "0.0.0.0:1080" can be listed side by side. */
int sock_listen(const struct addr *a, int backlog, bool reuseport);
/* Whether listening on a with SO_REUSEPORT would share the port with a
 * socket this process does not own (SO_REUSEPORT lets any process of the
 * same user join). A probe binds a without SO_REUSEPORT (with SO_REUSEADDR,
 * so connections in TIME_WAIT do not count) and closes it; when the port is
 * taken, the listening sockets on it in /proc/net/tcp and tcp6 are compared
 * with this process's descriptors (a reload may re-add a port its workers
 * are still closing). Returns 1 when another process holds the port (or
 * /proc cannot tell), 0 when it is free or held only by this process, and
 * -errno when the probe failed otherwise (the real bind will say why).
 * Port 0 is always 0. A port taken between this check and the bind is not
 * seen: the check catches a second instance, it is no lock. */
int sock_port_held_elsewhere(const struct addr *a);
/* accept4() with SOCK_NONBLOCK | SOCK_CLOEXEC; fills peer when non-NULL. */
int sock_accept(int lfd, struct addr *peer);
/* Start a nonblocking connect; the fd is returned while the connect is
 * still in progress (wait for EPOLLOUT, then sock_error()). */
int sock_connect(const struct addr *a);
/* The same from a source: SO_BINDTODEVICE to device when it is non-NULL
 * and not empty (CAP_NET_RAW before Linux 5.7), then bind to src (port 0, with
 * IP_BIND_ADDRESS_NO_PORT) when it is non-NULL with a family. A src of
 * another family than a is -EAFNOSUPPORT. On failure *failed (when
 * non-NULL) names the call that failed: "socket", "SO_BINDTODEVICE",
 * "bind" or "connect". */
int sock_connect_from(const struct addr *a, const struct addr *src, const char *device,
                      const char **failed);
/* The pending error of a socket (SO_ERROR) as -errno, or 0. */
int sock_error(int fd);
int sock_local_addr(int fd, struct addr *out);
int sock_peer_addr(int fd, struct addr *out);
/* TCP_NODELAY: a relay writes what it read; Nagle would only add delay. */
void sock_set_nodelay(int fd);
/* Close with RST instead of FIN (SO_LINGER 0). */
void sock_abort(int fd);

#endif
