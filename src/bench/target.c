/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target.c: the servers the bench aims at, all on 127.0.0.1 and all in one
 * thread: TCP echo (one or several ports), a small HTTP/1.1 server and a UDP
 * echo. They are deliberately plain and cheap, the same for every proxy
 * measured and for --direct, so differences are the proxy's.
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

#include "bench/bench.h"
#include "core/buf.h"
#include "core/gso.h"
#include "core/sock.h"
#include "util/list.h"

#define ECHO_MAX_PORTS 16
#define ECHO_BUF       (64 * 1024)
#define HTTP_REQ_MAX   8192
#define HTTP_SMALL     BENCH_HTTP_SMALL
#define UDP_BATCH      32
#define UDP_MAX        65536

struct listener_io {
    struct io io;
    struct targets *t;
    bool http;
};

struct targets {
    struct gen g;
    _Atomic int ready; /* 1 ok, -errno failed */
    const char *ip;    /* where they listen: 127.0.0.1, or B's address of a --wan path */
    uint16_t want_port;
    unsigned nports;
    size_t download_size;
    _Atomic bool abort_on_eof;
    struct listener_io echo_ls[ECHO_MAX_PORTS];
    struct addr echo[ECHO_MAX_PORTS];
    struct listener_io http_ls;
    struct addr http;
    struct io udp_io;
    struct addr udp;
    bool udp_gro;
    struct buf_pool bufs;
    uint8_t *udp_bufs;
    struct {
        _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int))];
    } udp_ctl[UDP_BATCH]; /* a coalesced run's size (UDP_GRO), then UDP_SEGMENT */
    struct list echo_conns, http_conns;
};

/* ---- TCP echo ---- */

struct echo_conn {
    struct io io;
    struct list link; /* in targets->echo_conns */
    struct targets *t;
    struct buf *b;
    uint8_t ev;
    bool eof;
};

/* De-register, then close: a child the bench is starting may hold a copy
 * of the socket until it execs, and epoll keeps reporting a registered
 * socket while any copy is open, with a pointer to what is freed here. */
static void conn_fd_close(struct targets *t, struct io *io)
{
    int fd = io->fd;
    loop_io_del(&t->g.loop, io);
    close(fd);
}

static void echo_close(struct echo_conn *c)
{
    if (atomic_load_explicit(&c->t->abort_on_eof, memory_order_relaxed))
        sock_abort(c->io.fd);
    conn_fd_close(c->t, &c->io);
    list_del(&c->link);
    buf_put(&c->t->bufs, c->b);
    /* Freeing inside its own callback is safe: epoll reports a socket at
     * most once per batch, it no longer watches this one, and nothing else
     * points at an echo connection. */
    free(c);
}

static void echo_on_io(struct io *io, uint32_t events)
{
    struct echo_conn *c = container_of(io, struct echo_conn, io);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->ev |= SC_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        c->ev |= SC_WR;
    for (;;) {
        if (c->b && buf_len(c->b)) {
            if (!(c->ev & SC_WR))
                return;
            ssize_t n = send(io->fd, buf_head(c->b), buf_len(c->b), MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN) {
                    c->ev &= (uint8_t)~SC_WR;
                    return;
                }
                echo_close(c);
                return;
            }
            buf_consume(c->b, (uint32_t)n);
            continue;
        }
        if (c->b) {
            buf_put(&c->t->bufs, c->b);
            c->b = NULL;
        }
        if (c->eof) {
            echo_close(c);
            return;
        }
        if (!(c->ev & SC_RD))
            return;
        c->b = buf_get(&c->t->bufs);
        if (!c->b) {
            echo_close(c);
            return;
        }
        ssize_t n = recv(io->fd, buf_tail(c->b), buf_room(c->b), 0);
        if (n > 0) {
            c->b->end += (uint32_t)n;
        } else if (n == 0) {
            c->eof = true;
        } else if (errno == EAGAIN) {
            c->ev &= (uint8_t)~SC_RD;
        } else {
            echo_close(c);
            return;
        }
    }
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
    conn_fd_close(c->t, &c->io);
    list_del(&c->link);
    free(c);
}

static void http_prepare(struct http_conn *c)
{
    int code = 200;
    const char *reason = "OK";
    if (strncmp(c->req, "GET /small ", 11) == 0) {
        c->blen = HTTP_SMALL;
    } else if (strncmp(c->req, "GET /large ", 11) == 0) {
        c->blen = c->t->download_size;
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
        struct io *cio;
        if (ls->http) {
            struct http_conn *c = calloc(1, sizeof(*c));
            if (!c) {
                close(fd);
                continue;
            }
            c->t = t;
            io_init(&c->io, http_on_io);
            list_add_tail(&t->http_conns, &c->link);
            cio = &c->io;
        } else {
            struct echo_conn *c = calloc(1, sizeof(*c));
            if (!c) {
                close(fd);
                continue;
            }
            c->t = t;
            io_init(&c->io, echo_on_io);
            list_add_tail(&t->echo_conns, &c->link);
            cio = &c->io;
        }
        if (loop_io_add(&t->g.loop, cio, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
            cio->fd = fd;
            if (ls->http)
                http_close(container_of(cio, struct http_conn, io));
            else
                echo_close(container_of(cio, struct echo_conn, io));
        }
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
    struct addr a;
    addr_parse_ip(t->ip, port, &a);
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
    struct addr a;
    struct sockaddr_storage ss;
    addr_parse_ip(t->ip, 0, &a);
    socklen_t len = addr_to_sockaddr(&a, &ss);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
        rc = listen_on(t, &t->echo_ls[i], i == 0 ? t->want_port : 0, &t->echo[i], false);
    if (!rc)
        rc = listen_on(t, &t->http_ls, 0, &t->http, true);
    if (!rc)
        rc = udp_open(t);
    atomic_store(&t->ready, rc ? rc : 1);
}

struct targets *targets_start(const char *ip, uint16_t port, unsigned nports, size_t download_size,
                              bool udp_gro)
{
    struct targets *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pattern_init();
    t->ip = ip;
    t->want_port = port;
    t->nports = nports < 1 ? 1 : MIN(nports, ECHO_MAX_PORTS);
    t->download_size = download_size;
    t->udp_gro = udp_gro;
    list_init(&t->echo_conns);
    list_init(&t->http_conns);
    buf_pool_init(&t->bufs, ECHO_BUF, 1024);
    if (gen_start(&t->g, 0, t, targets_on_start)) {
        free(t);
        return NULL;
    }
    while (atomic_load(&t->ready) == 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&t->ready) < 0) {
        fprintf(stderr, "ferry bench: cannot start targets: %s\n",
                strerror(-atomic_load(&t->ready)));
        targets_stop(t);
        return NULL;
    }
    return t;
}

void targets_stop(struct targets *t)
{
    if (!t)
        return;
    gen_stop_join(&t->g);
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->echo_conns)
    {
        echo_close(container_of(pos, struct echo_conn, link));
    }
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
