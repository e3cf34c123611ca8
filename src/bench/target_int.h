/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target_int.h: what target.c (listeners, UDP echo, lifecycle),
 * target_stream.c (the TCP streams: echo, sink, source) and target_http.c
 * (the HTTP server) share. Private to those three files.
 */
#ifndef FERRY_BENCH_TARGET_INT_H
#define FERRY_BENCH_TARGET_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/buf.h"
#include "util/list.h"

#define ECHO_MAX_PORTS 16
#define UDP_BATCH      32

struct listener_io {
    struct io io;
    struct targets *t;
    bool http;
};

/* Owned by the bench (targets_start/listen/remote .. targets_stop); every
 * connection in it lives on its thread g, or (remote) there is none. */
struct targets {
    struct gen g;
    bool remote;        /* --target: no thread, no servers; every address is remote */
    _Atomic int ready;  /* 1 ok, -errno failed */
    struct addr bind;   /* where the echo port listens (its port: 0 any) */
    bool udp_same_port; /* the UDP echo on the echo's port (a sink) */
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
    uint8_t *scratch; /* the sink's reads (ECHO_BUF) */
    struct {
        _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int))];
    } udp_ctl[UDP_BATCH]; /* a coalesced run's size (UDP_GRO), then UDP_SEGMENT */
    struct list echo_conns, http_conns;
};

#define ECHO_BUF (64 * 1024)

/* De-register, then close: a child the bench is starting may hold a copy
 * of the socket until it execs, and epoll keeps reporting a registered
 * socket while any copy is open, with a pointer to what is freed here. */
static inline void target_fd_close(struct targets *t, struct io *io)
{
    int fd = io->fd;
    loop_io_del(&t->g.loop, io);
    close(fd);
}

/* A new TCP stream on an echo port: sniffed, then echo, sink, source or
 * HTTP (target_stream.c). Closes fd on failure. */
void stream_accept(struct targets *t, int fd);
/* Close every stream (targets_stop, after the thread has ended). */
void stream_close_all(struct targets *t);
/* Hand fd, whose first n bytes (at p) were read as an HTTP request's
 * start, to the HTTP server (target_http.c); fd is not registered with the
 * loop. Closes fd on failure. */
void http_adopt(struct targets *t, int fd, const uint8_t *p, size_t n);
/* Close every HTTP connection (targets_stop, after the thread has ended). */
void http_close_all(struct targets *t);

#endif
