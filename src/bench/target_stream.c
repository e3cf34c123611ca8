/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * target_stream.c: the TCP streams of the bench's echo ports, local or a
 * `ferry bench sink` on another host. A stream's first bytes choose what it
 * is: SINK_MAGIC_DISCARD + seed, a sink that checks every byte against the
 * pattern, drops it and tells the client the total received (8 bytes,
 * big-endian, after each read); SINK_MAGIC_SOURCE + seed, a source of the
 * pattern; "GET ", the HTTP server (target_http.c); anything else an echo, the
 * first bytes included. A stream waits only while what it has is a proper
 * prefix of one of those, so a client that sends one byte (handshakes) is
 * echoed at once.
 *
 * It serves; it measures nothing (the client counts what arrives, or, for
 * the sink, is told).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/target_int.h"
#include "core/sock.h"

enum stream_mode { ST_SNIFF, ST_ECHO, ST_SINK, ST_SOURCE };

struct echo_conn {
    struct io io;
    struct task more; /* a budget was spent while still ready: come back */
    struct list link; /* in targets->echo_conns */
    struct targets *t;
    struct buf *b;
    uint8_t ev;
    uint8_t mode; /* enum stream_mode */
    bool eof;
    bool closing;       /* sink: the corrupt report is the last thing sent */
    uint64_t seed, off; /* sink, source: the pattern offset reached */
    uint8_t ack[8];     /* sink: the total being sent */
    uint8_t ack_off;    /* of ack sent; 8: none pending */
    bool ack_due;       /* sink: the total changed since ack was filled */
};

static void echo_close(struct echo_conn *c)
{
    loop_task_cancel(&c->more);
    if (atomic_load_explicit(&c->t->abort_on_eof, memory_order_relaxed))
        sock_abort(c->io.fd);
    target_fd_close(c->t, &c->io);
    list_del(&c->link);
    buf_put(&c->t->bufs, c->b);
    /* Freeing inside its own callback is safe: epoll reports a socket at
     * most once per batch, it no longer watches this one, and nothing else
     * points at an echo connection. */
    free(c);
}

/* ---- echo ---- */

static void echo_run(struct echo_conn *c)
{
    for (;;) {
        if (c->b && buf_len(c->b)) {
            if (!(c->ev & SC_WR))
                return;
            ssize_t n = send(c->io.fd, buf_head(c->b), buf_len(c->b), MSG_NOSIGNAL);
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
        ssize_t n = recv(c->io.fd, buf_tail(c->b), buf_room(c->b), 0);
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

/* ---- sink ---- */

/* Send what is pending of the total (or the corrupt report). 0, or -1
 * when the stream was closed. */
static int sink_flush(struct echo_conn *c)
{
    for (;;) {
        if (c->ack_off == sizeof(c->ack)) {
            if (!c->ack_due)
                return c->closing ? (echo_close(c), -1) : 0;
            uint64_t be = htobe64(c->off);
            memcpy(c->ack, &be, sizeof(be));
            c->ack_off = 0;
            c->ack_due = false;
        }
        if (!(c->ev & SC_WR))
            return 0;
        ssize_t n = send(c->io.fd, c->ack + c->ack_off, sizeof(c->ack) - c->ack_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            c->ev &= (uint8_t)~SC_WR;
            return 0;
        }
        if (n <= 0) {
            echo_close(c);
            return -1;
        }
        c->ack_off = (uint8_t)(c->ack_off + n);
    }
}

/* Check n received bytes at p against the pattern; a wrong one turns the
 * next report into SINK_CORRUPT | its offset, and the stream ends. */
static void sink_take(struct echo_conn *c, const uint8_t *p, size_t n)
{
    size_t diff = bench_first_diff(p, pattern_at(c->seed + c->off), n);
    c->off += diff;
    if (diff < n) {
        c->off |= SINK_CORRUPT;
        c->closing = true;
    }
    c->ack_due = true;
}

static void sink_run(struct echo_conn *c)
{
    /* A report after every read, and a bounded number of reads: a client
     * that sends faster than this thread reads must still hear. */
    for (int i = 0; i < 64 && (c->ev & SC_RD) && !c->closing; i++) {
        ssize_t n = recv(c->io.fd, c->t->scratch, ECHO_BUF, 0);
        if (n > 0) {
            sink_take(c, c->t->scratch, (size_t)n);
        } else if (n < 0 && errno == EAGAIN) {
            c->ev &= (uint8_t)~SC_RD;
        } else {
            echo_close(c); /* the client is done (or gone) */
            return;
        }
        if (sink_flush(c) < 0)
            return;
    }
    if (sink_flush(c) < 0)
        return;
    if (c->ev & SC_RD) /* budget spent: edge-triggered, so come back */
        loop_defer(&c->t->g.loop, &c->more);
}

/* ---- source ---- */

static void source_run(struct echo_conn *c)
{
    while (c->ev & SC_RD) { /* nothing is expected: only the end */
        ssize_t n = recv(c->io.fd, c->t->scratch, ECHO_BUF, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
            echo_close(c);
            return;
        }
        if (n < 0)
            c->ev &= (uint8_t)~SC_RD;
    }
    for (int i = 0; i < 64 && (c->ev & SC_WR); i++) {
        ssize_t n = send(c->io.fd, pattern_at(c->seed + c->off), ECHO_BUF, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            c->ev &= (uint8_t)~SC_WR;
            return;
        }
        if (n <= 0) {
            echo_close(c);
            return;
        }
        c->off += (uint64_t)n;
    }
    /* Budget spent, still writable: edge-triggered, so come back. */
    if (c->ev & SC_WR)
        loop_defer(&c->t->g.loop, &c->more);
}

/* ---- choosing ---- */

/* What the first n bytes at p make the stream: a mode, or ST_SNIFF while
 * they are a proper prefix of a magic (or of "GET "); -1: HTTP. */
static int sniff(const uint8_t *p, size_t n, uint64_t *seed)
{
    static const char *const magic[] = {SINK_MAGIC_DISCARD, SINK_MAGIC_SOURCE};
    if (n >= 4 && !memcmp(p, "GET ", 4))
        return -1;
    if (n < 4 && !memcmp(p, "GET ", n))
        return ST_SNIFF;
    for (int i = 0; i < 2; i++) {
        size_t m = n < SINK_MAGIC_LEN ? n : SINK_MAGIC_LEN;
        if (memcmp(p, magic[i], m))
            continue;
        if (n < SINK_HELLO_LEN)
            return ST_SNIFF;
        uint64_t be;
        memcpy(&be, p + SINK_MAGIC_LEN, 8);
        *seed = be64toh(be);
        return i == 0 ? ST_SINK : ST_SOURCE;
    }
    return ST_ECHO;
}

/* Read the first bytes and decide (the bytes stay in c->b for the echo).
 * 0, or -1 when c is gone (closed, or handed to the HTTP server). */
static int sniff_run(struct echo_conn *c)
{
    if (!c->b && !(c->b = buf_get(&c->t->bufs))) {
        echo_close(c);
        return -1;
    }
    while (c->mode == ST_SNIFF) {
        if (!(c->ev & SC_RD))
            return 0;
        ssize_t n = recv(c->io.fd, buf_tail(c->b), buf_room(c->b), 0);
        if (n == 0) {
            c->eof = true;
            c->mode = ST_ECHO; /* a few bytes and the end: echo them */
            break;
        }
        if (n < 0) {
            if (errno != EAGAIN) {
                echo_close(c);
                return -1;
            }
            c->ev &= (uint8_t)~SC_RD;
            return 0;
        }
        c->b->end += (uint32_t)n;
        int m = sniff(buf_head(c->b), buf_len(c->b), &c->seed);
        if (m < 0) {
            int fd = c->io.fd;
            struct buf *b = c->b;
            loop_io_del(&c->t->g.loop, &c->io);
            list_del(&c->link);
            http_adopt(c->t, fd, buf_head(b), buf_len(b));
            buf_put(&c->t->bufs, b);
            free(c);
            return -1;
        }
        c->mode = (uint8_t)m;
    }
    if (c->mode == ST_SINK) {
        size_t extra = buf_len(c->b) - SINK_HELLO_LEN;
        if (extra)
            sink_take(c, buf_head(c->b) + SINK_HELLO_LEN, extra);
    }
    if (c->mode != ST_ECHO) {
        buf_put(&c->t->bufs, c->b);
        c->b = NULL;
    }
    return 0;
}

static void stream_on_io(struct io *io, uint32_t events)
{
    struct echo_conn *c = container_of(io, struct echo_conn, io);
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->ev |= SC_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        c->ev |= SC_WR;
    if (c->mode == ST_SNIFF && sniff_run(c) < 0)
        return;
    switch ((enum stream_mode)c->mode) {
    case ST_SNIFF:
        return;
    case ST_ECHO:
        echo_run(c);
        return;
    case ST_SINK:
        sink_run(c);
        return;
    case ST_SOURCE:
        source_run(c);
        return;
    }
}

static void stream_on_more(struct task *k)
{
    struct echo_conn *c = container_of(k, struct echo_conn, more);
    stream_on_io(&c->io, 0);
}

void stream_accept(struct targets *t, int fd)
{
    struct echo_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->t = t;
    c->ack_off = sizeof(c->ack);
    io_init(&c->io, stream_on_io);
    task_init(&c->more, stream_on_more);
    list_add_tail(&t->echo_conns, &c->link);
    if (loop_io_add(&t->g.loop, &c->io, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
        c->io.fd = fd;
        echo_close(c);
    }
}

void stream_close_all(struct targets *t)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &t->echo_conns)
    {
        echo_close(container_of(pos, struct echo_conn, link));
    }
}
