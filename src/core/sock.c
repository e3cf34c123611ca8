/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sock.c: thin wrappers over the socket API with ferry's return convention.
 */
#include "core/sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

static int set_int_opt(int fd, int level, int name, int value)
{
    if (setsockopt(fd, level, name, &value, sizeof(value)) < 0)
        return -errno;
    return 0;
}

int sock_listen(const struct addr *a, int backlog, bool reuseport)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(a, &ss);
    if (!len)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int rc = set_int_opt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    if (!rc && reuseport)
        rc = set_int_opt(fd, SOL_SOCKET, SO_REUSEPORT, 1);
    if (!rc && ss.ss_family == AF_INET6)
        rc = set_int_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    if (!rc && bind(fd, (struct sockaddr *)&ss, len) < 0)
        rc = -errno;
    if (!rc && listen(fd, backlog) < 0)
        rc = -errno;
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

int sock_accept(int lfd, struct addr *peer)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (peer)
        addr_from_sockaddr(peer, (struct sockaddr *)&ss);
    return fd;
}

int sock_connect(const struct addr *a)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(a, &ss);
    if (!len)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int sock_error(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return -errno;
    return -err;
}

int sock_local_addr(int fd, struct addr *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    addr_from_sockaddr(out, (struct sockaddr *)&ss);
    return 0;
}

int sock_peer_addr(int fd, struct addr *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    addr_from_sockaddr(out, (struct sockaddr *)&ss);
    return 0;
}

void sock_set_nodelay(int fd)
{
    (void)set_int_opt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
}

void sock_abort(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}
