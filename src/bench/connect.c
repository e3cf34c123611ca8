/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * connect.c: the bench's TCP connect, shared by the SOCKS/HTTPS client
 * connections (client.c), the HTTP/2 client's connection to the proxy
 * (h2client.c) and the edge scenario: nonblocking, TCP_NODELAY, and from a
 * random 127.x.y.z source when asked, so that many connections to one
 * proxy port do not run out of ephemeral ports.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/sock.h"

static _Thread_local uint64_t src_rng;

/* A random source in 127.0.0.0/8 (never .0 or .255 in the last byte), so
 * that many connections to one proxy port do not exhaust the ephemeral
 * ports of a single source address. */
static void random_loopback(struct addr *a)
{
    if (!src_rng) {
        if (getrandom(&src_rng, sizeof(src_rng), 0) != sizeof(src_rng) || !src_rng)
            src_rng = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)a;
    }
    src_rng ^= src_rng << 13;
    src_rng ^= src_rng >> 7;
    src_rng ^= src_rng << 17;
    memset(a, 0, sizeof(*a));
    a->family = AF_INET;
    a->ip[0] = 127;
    a->ip[1] = (uint8_t)(src_rng >> 8);
    a->ip[2] = (uint8_t)(src_rng >> 16);
    a->ip[3] = (uint8_t)(1 + (src_rng >> 24) % 254);
}

int bench_connect(const struct addr *dst, bool spread)
{
    struct sockaddr_storage ss;
    socklen_t len = addr_to_sockaddr(dst, &ss);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    if (spread && dst->family == AF_INET && dst->ip[0] == 127) {
        struct addr src;
        struct sockaddr_storage sss;
        random_loopback(&src);
        socklen_t slen = addr_to_sockaddr(&src, &sss);
        int one = 1;
        /* Pick the port at connect() time, per 4-tuple, not at bind(). */
        (void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&sss, slen) < 0) {
            int rc = -errno;
            close(fd);
            return rc;
        }
    }
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    sock_set_nodelay(fd);
    return fd;
}
