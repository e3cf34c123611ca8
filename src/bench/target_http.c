/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target_http.c: the bench targets' small HTTP/1.1 server: GET /small,
 * GET /large (the download size) and GET /bytes/N, each answered with the
 * pattern and then a close; anything else a 404. Its connections come from
 * the HTTP port (target.c) or from an echo port's stream whose first bytes
 * were a request (target_stream.c). Plain and cheap on purpose, like every
 * target.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench/target_int.h"
#include "util/parse.h"

#define HTTP_REQ_MAX 8192
#define HTTP_SMALL   BENCH_HTTP_SMALL

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

void http_close_all(struct targets *t)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->http_conns)
    {
        http_close(container_of(pos, struct http_conn, link));
    }
}
