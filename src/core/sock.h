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
/* accept4() with SOCK_NONBLOCK | SOCK_CLOEXEC; fills peer when non-NULL. */
int sock_accept(int lfd, struct addr *peer);
/* Start a nonblocking connect; the fd is returned while the connect is
 * still in progress (wait for EPOLLOUT, then sock_error()). */
int sock_connect(const struct addr *a);
/* The pending error of a socket (SO_ERROR) as -errno, or 0. */
int sock_error(int fd);
int sock_local_addr(int fd, struct addr *out);
int sock_peer_addr(int fd, struct addr *out);
/* TCP_NODELAY: a relay writes what it read; Nagle would only add delay. */
void sock_set_nodelay(int fd);
/* Close with RST instead of FIN (SO_LINGER 0). */
void sock_abort(int fd);

#endif
