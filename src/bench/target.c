/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target.c: the servers the bench aims at, all in one thread: TCP echo
 * ports (one or several; each also a sink, a source and the HTTP server,
 * by the client's first bytes: target_stream.c), a small HTTP/1.1 server
 * (target_http.c) and a UDP echo. They are deliberately plain and cheap, the same for every
 * proxy measured and for --direct, so differences are the proxy's. The
 * bench's own run on 127.0.0.1; `ferry bench sink` runs the same on the
 * address it is given (targets_listen), and --target points the bench at
 * one elsewhere (targets_remote: no servers here).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench/target_int.h"
#include "core/gso.h"
#include "core/sock.h"

#define UDP_MAX 65536

/* ---- accept ---- */

static void on_accept(struct io *io, uint32_t events)
{
    (void)events;
    struct listener_io *ls = container_of(io, struct listener_io, io);
    struct targets *t = ls->t;
    for (int i = 0; i < 64; i++) {
        int fd = sock_accept(io->fd, NULL);
        if (fd < 0)
            return;
        sock_set_nodelay(fd);
        if (ls->http)
            http_adopt(t, fd, NULL, 0);
        else
            stream_accept(t, fd);
    }
}

/* ---- UDP echo ---- */

static void udp_on_io(struct io *io, uint32_t events)
{
    (void)events;
    struct targets *t = container_of(io, struct targets, udp_io);
    struct mmsghdr msgs[UDP_BATCH];
    struct iovec iov[UDP_BATCH];
    struct sockaddr_storage from[UDP_BATCH];
    for (int round = 0; round < 64; round++) {
        for (int i = 0; i < UDP_BATCH; i++) {
            iov[i] = (struct iovec){t->udp_bufs + (size_t)i * UDP_MAX, UDP_MAX};
            msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
                                              .msg_namelen = sizeof(from[i]),
                                              .msg_iov = &iov[i],
                                              .msg_iovlen = 1,
                                              .msg_control = t->udp_ctl[i].buf,
                                              .msg_controllen = sizeof(t->udp_ctl[i].buf)};
        }
        int n = recvmmsg(io->fd, msgs, UDP_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++) {
            iov[i].iov_len = msgs[i].msg_len;
            /* A coalesced run (UDP_GRO) goes back as the same run. */
            struct msghdr *h = &msgs[i].msg_hdr;
            size_t seg = udp_gro_size(h, msgs[i].msg_len);
            if (seg < msgs[i].msg_len) {
                struct cmsghdr *c = CMSG_FIRSTHDR(h);
                uint16_t s16 = (uint16_t)seg;
                c->cmsg_level = SOL_UDP;
                c->cmsg_type = UDP_SEGMENT;
                c->cmsg_len = CMSG_LEN(sizeof(s16));
                memcpy(CMSG_DATA(c), &s16, sizeof(s16));
                h->msg_controllen = CMSG_SPACE(sizeof(s16));
            } else {
                h->msg_control = NULL;
                h->msg_controllen = 0;
            }
        }
        (void)sendmmsg(io->fd, msgs, (unsigned)n, MSG_DONTWAIT);
    }
}

/* ---- lifecycle ---- */

static int listen_on(struct targets *t, struct listener_io *ls, uint16_t port, struct addr *out,
                     bool http)
{
    struct addr a = t->bind;
    a.port = port;
    int fd = sock_listen(&a, 4096, false);
    if (fd < 0)
        return fd;
    sock_local_addr(fd, out);
    ls->t = t;
    ls->http = http;
    io_init(&ls->io, on_accept);
    int rc = loop_io_add(&t->g.loop, &ls->io, fd, EPOLLIN);
    if (rc)
        close(fd);
    return rc;
}

static int udp_open(struct targets *t)
{
    struct addr a = t->bind;
    struct sockaddr_storage ss;
    a.port = t->udp_same_port ? t->echo[0].port : 0;
    socklen_t len = addr_to_sockaddr(&a, &ss);
    int fd = socket(a.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int sz = 4 << 20;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    int one = 1;
    if (t->udp_gro)
        (void)setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    sock_local_addr(fd, &t->udp);
    t->udp_bufs = malloc((size_t)UDP_BATCH * UDP_MAX);
    if (!t->udp_bufs) {
        close(fd);
        return -ENOMEM;
    }
    io_init(&t->udp_io, udp_on_io);
    return loop_io_add(&t->g.loop, &t->udp_io, fd, EPOLLIN);
}

static void targets_on_start(struct gen *g)
{
    struct targets *t = g->scenario;
    int rc = 0;
    for (unsigned i = 0; i < t->nports && !rc; i++)
        rc = listen_on(t, &t->echo_ls[i], i == 0 ? t->bind.port : 0, &t->echo[i], false);
    /* A sink has one port for everything (HTTP by its first bytes); the
     * bench's own targets keep a port of their own for HTTP. */
    if (!rc && t->udp_same_port)
        t->http = t->echo[0];
    else if (!rc)
        rc = listen_on(t, &t->http_ls, 0, &t->http, true);
    if (!rc)
        rc = udp_open(t);
    atomic_store(&t->ready, rc ? rc : 1);
}

/* Start t's thread and servers as set up; NULL after telling why. */
static struct targets *targets_run(struct targets *t)
{
    pattern_init();
    list_init(&t->echo_conns);
    list_init(&t->http_conns);
    buf_pool_init(&t->bufs, ECHO_BUF, 1024);
    t->scratch = malloc(ECHO_BUF);
    if (!t->scratch || gen_start(&t->g, 0, t, targets_on_start)) {
        buf_pool_fini(&t->bufs);
        free(t->scratch);
        free(t);
        return NULL;
    }
    while (atomic_load(&t->ready) == 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&t->ready) < 0) {
        char a[ADDR_STRLEN];
        fprintf(stderr, "ferry bench: cannot start targets on %s: %s\n",
                addr_format(&t->bind, a, sizeof(a)), strerror(-atomic_load(&t->ready)));
        targets_stop(t);
        return NULL;
    }
    return t;
}

struct targets *targets_start(const char *ip, uint16_t port, unsigned nports, size_t download_size,
                              bool udp_gro)
{
    struct targets *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (addr_parse_ip(ip, port, &t->bind)) {
        free(t);
        return NULL;
    }
    t->nports = nports < 1 ? 1 : MIN(nports, ECHO_MAX_PORTS);
    t->download_size = download_size;
    t->udp_gro = udp_gro;
    return targets_run(t);
}

struct targets *targets_listen(const struct addr *at, bool udp_gro)
{
    struct targets *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->bind = *at;
    t->nports = 1;
    t->udp_same_port = true;
    t->download_size = 1 << 20;
    t->udp_gro = udp_gro;
    return targets_run(t);
}

struct targets *targets_remote(const struct addr *at)
{
    struct targets *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pattern_init();
    t->remote = true;
    t->bind = *at;
    t->nports = 1;
    t->echo[0] = t->http = t->udp = *at;
    return t;
}

void targets_stop(struct targets *t)
{
    if (!t)
        return;
    if (t->remote) {
        free(t);
        return;
    }
    gen_stop_join(&t->g);
    stream_close_all(t);
    http_close_all(t);
    for (unsigned i = 0; i < ECHO_MAX_PORTS; i++)
        if (t->echo_ls[i].t && t->echo_ls[i].io.fd >= 0)
            close(t->echo_ls[i].io.fd);
    if (t->http_ls.t && t->http_ls.io.fd >= 0)
        close(t->http_ls.io.fd);
    if (t->udp_bufs && t->udp_io.fd >= 0)
        close(t->udp_io.fd);
    buf_pool_fini(&t->bufs);
    free(t->udp_bufs);
    free(t->scratch);
    free(t);
}

const struct addr *targets_echo(const struct targets *t, unsigned i)
{
    return &t->echo[i % t->nports];
}

unsigned targets_echo_count(const struct targets *t)
{
    return t->nports;
}

const struct addr *targets_http(const struct targets *t)
{
    return &t->http;
}

const struct addr *targets_udp(const struct targets *t)
{
    return &t->udp;
}

void targets_set_abort_on_eof(struct targets *t, bool on)
{
    atomic_store(&t->abort_on_eof, on);
}
