/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sock.c: thin wrappers over the socket API with ferry's return convention,
 * and the check that a port is not held by another process (a probe bind,
 * then /proc/net/tcp{,6} against /proc/self/fd).
 */
#include "core/sock.h"

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Bind (not listen) without SO_REUSEPORT, then close. */
static int probe_bind(const struct addr *a)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(a, &ss);
    if (!len)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int rc = set_int_opt(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    if (!rc && ss.ss_family == AF_INET6)
        rc = set_int_opt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
    if (!rc && bind(fd, (struct sockaddr *)&ss, len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

#define MAX_PORT_LISTENERS 256

/* Add the inodes of the sockets listening on port (TCP_LISTEN, 0A) in a
 * /proc/net/tcp-format file to ino[]. Returns false if it cannot be read. */
static bool proc_listeners(const char *path, uint16_t port, unsigned long *ino, size_t *n)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT; /* no IPv6 in this kernel: nothing listens there */
    char line[512];
    bool ok = fgets(line, sizeof(line), f) != NULL; /* the header */
    while (ok && fgets(line, sizeof(line), f)) {
        unsigned lport, st;
        unsigned long inode;
        /* sl: local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line,
                   " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu",
                   &lport, &st, &inode) != 3)
            continue;
        if (lport == port && st == 0x0A && *n < MAX_PORT_LISTENERS)
            ino[(*n)++] = inode;
    }
    fclose(f);
    return ok;
}

/* Clear ino[] entries that are sockets this process holds. */
static bool strike_own(unsigned long *ino, size_t n)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return false;
    struct dirent *de;
    while ((de = readdir(d))) {
        char path[300], target[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        unsigned long inode;
        if (sscanf(target, "socket:[%lu]", &inode) != 1)
            continue;
        for (size_t i = 0; i < n; i++)
            if (ino[i] == inode)
                ino[i] = 0;
    }
    closedir(d);
    return true;
}

int sock_port_held_elsewhere(const struct addr *a)
{
    if (a->port == 0)
        return 0;
    int rc = probe_bind(a);
    if (rc != -EADDRINUSE)
        return rc;
    /* Taken: by this process alone (sockets a reload is closing), or not?
     * Both families: a dual-stack [::] socket holds the IPv4 port too. A
     * listener of ours that a worker closes between reading the tables
     * and reading our descriptors would look foreign: only one still
     * listed by a second reading counts. */
    unsigned long ino[MAX_PORT_LISTENERS], again[MAX_PORT_LISTENERS];
    size_t n = 0, m = 0;
    if (!proc_listeners("/proc/net/tcp", a->port, ino, &n) ||
        !proc_listeners("/proc/net/tcp6", a->port, ino, &n) || !strike_own(ino, n) ||
        !proc_listeners("/proc/net/tcp", a->port, again, &m) ||
        !proc_listeners("/proc/net/tcp6", a->port, again, &m))
        return 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; ino[i] && j < m; j++)
            if (ino[i] == again[j])
                return 1;
    return 0;
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
    return sock_connect_from(a, NULL, NULL, NULL);
}

/* SO_BINDTODEVICE and/or bind(src, port 0) on fd; 0 or -errno with *step
 * naming the call that failed. */
static int bind_source(int fd, const struct addr *src, const char *device, const char **step)
{
    if (device && *device &&
        setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device, (socklen_t)strlen(device)) < 0) {
        *step = "SO_BINDTODEVICE";
        return -errno;
    }
    if (!src || !src->family)
        return 0;
    struct addr s = *src;
    s.port = 0;
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(&s, &ss);
    /* The port is picked at connect(), by the 4-tuple, not at bind() from
     * the ephemeral range alone: many sessions may share one source. */
    (void)set_int_opt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1);
    if (!len || bind(fd, (struct sockaddr *)&ss, len) < 0) {
        *step = "bind";
        return len ? -errno : -EAFNOSUPPORT;
    }
    return 0;
}

int sock_connect_from(const struct addr *a, const struct addr *src, const char *device,
                      const char **failed)
{
    const char *step_buf = NULL, **step = failed ? failed : &step_buf;
    *step = "socket";
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(a, &ss);
    if (!len)
        return -EAFNOSUPPORT;
    if (src && src->family && src->family != a->family)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int rc = bind_source(fd, src, device, step);
    if (rc) {
        close(fd);
        return rc;
    }
    *step = "connect";
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
        rc = -errno;
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
