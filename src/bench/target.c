/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target.c: the servers the bench aims at, all in one thread: TCP echo
 * ports (one or several; each also a sink, a source and the HTTP server,
 * by the client's first bytes: target_stream.c), a small HTTP/1.1 server
 * and a UDP echo. They are deliberately plain and cheap, the same for every
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
#include "util/parse.h"

#define HTTP_REQ_MAX 8192
#define HTTP_SMALL   BENCH_HTTP_SMALL
#define UDP_MAX      65536

/* De-register, then close: a child the bench is starting may hold a copy
 * of the socket until it execs, and epoll keeps reporting a registered
 * socket while any copy is open, with a pointer to what is freed here. */
void target_fd_close(struct targets *t, struct io *io)
{
    int fd = io->fd;
    loop_io_del(&t->g.loop, io);
    close(fd);
}

/* ---- HTTP ---- */

struct http_conn {
    struct io io;
    struct list link; /* in targets->http_conns */
    struct targets *t;
    uint8_t ev;
    bool responding;
    uint16_t rlen;
    uint16_t hlen, hoff; /* response head and how much of it is sent */
    uint64_t blen, boff; /* body */
    char head[160];
    char req[HTTP_REQ_MAX];
};

static void http_close(struct http_conn *c)
{
    target_fd_close(c->t, &c->io);
    list_del(&c->link);
    free(c);
}

/* "N " at p (GET /bytes/N): true with N (at most 2^32) in *size. */
static bool bytes_path(const char *p, uint64_t *size)
{
    char num[24];
    size_t len = strcspn(p, " ");
    if (len == 0 || len >= sizeof(num) || p[len] != ' ')
        return false;
    memcpy(num, p, len);
    num[len] = '\0';
    return parse_u64(num, 0, 1ull << 32, size) == 0;
}

static void http_prepare(struct http_conn *c)
{
    int code = 200;
    const char *reason = "OK";
    uint64_t size = 0;
    if (strncmp(c->req, "GET /small ", 11) == 0) {
        c->blen = HTTP_SMALL;
    } else if (strncmp(c->req, "GET /large ", 11) == 0) {
        c->blen = c->t->download_size;
    } else if (strncmp(c->req, "GET /bytes/", 11) == 0 && bytes_path(c->req + 11, &size)) {
        c->blen = size;
    } else {
        code = 404;
        reason = "Not Found";
        c->blen = 0;
    }
    int n = snprintf(c->head, sizeof(c->head),
                     "HTTP/1.1 %d %s\r\nContent-Length: %llu\r\nConnection: close\r\n\r\n", code,
                     reason, (unsigned long long)c->blen);
    c->hlen = (uint16_t)n;
    c->responding = true;
}

static void http_on_io(struct io *io, uint32_t events)
{
    struct http_conn *c = container_of(io, struct http_conn, io);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->ev |= SC_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        c->ev |= SC_WR;
    while (!c->responding) {
        if (!(c->ev & SC_RD))
            return;
        if (c->rlen == sizeof(c->req) - 1) {
            http_close(c);
            return;
        }
        ssize_t n = recv(io->fd, c->req + c->rlen, sizeof(c->req) - 1 - c->rlen, 0);
        if (n > 0) {
            c->rlen = (uint16_t)(c->rlen + n);
            c->req[c->rlen] = '\0';
            if (strstr(c->req, "\r\n\r\n"))
                http_prepare(c);
        } else if (n < 0 && errno == EAGAIN) {
            c->ev &= (uint8_t)~SC_RD;
        } else {
            http_close(c);
            return;
        }
    }
    while (c->ev & SC_WR) {
        struct iovec iov[2];
        int cnt = 0;
        if (c->hoff < c->hlen)
            iov[cnt++] = (struct iovec){c->head + c->hoff, (size_t)(c->hlen - c->hoff)};
        if (c->boff < c->blen) {
            uint64_t left = c->blen - c->boff;
            iov[cnt++] = (struct iovec){(void *)(uintptr_t)pattern_at(c->boff),
                                        left > PATTERN_SLACK ? PATTERN_SLACK : (size_t)left};
        }
        if (cnt == 0) {
            http_close(c);
            return;
        }
        ssize_t n = writev(io->fd, iov, cnt);
        if (n < 0) {
            if (errno == EAGAIN) {
                c->ev &= (uint8_t)~SC_WR;
                return;
            }
            http_close(c);
            return;
        }
        size_t h = MIN((size_t)n, (size_t)(c->hlen - c->hoff));
        c->hoff = (uint16_t)(c->hoff + h);
        c->boff += (uint64_t)n - h;
    }
}

void http_adopt(struct targets *t, int fd, const uint8_t *p, size_t n)
{
    struct http_conn *c = calloc(1, sizeof(*c));
    if (!c || n >= sizeof(c->req)) {
        free(c);
        close(fd);
        return;
    }
    c->t = t;
    io_init(&c->io, http_on_io);
    list_add_tail(&t->http_conns, &c->link);
    if (loop_io_add(&t->g.loop, &c->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
        c->io.fd = fd;
        http_close(c);
        return;
    }
    if (n) {
        /* Bytes a stream read before it knew it was HTTP: go on from them. */
        memcpy(c->req, p, n);
        c->rlen = (uint16_t)n;
        c->req[n] = '\0';
        if (strstr(c->req, "\r\n\r\n"))
            http_prepare(c);
        http_on_io(&c->io, EPOLLIN | EPOLLOUT);
    }
}

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
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->http_conns)
    {
        http_close(container_of(pos, struct http_conn, link));
    }
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
