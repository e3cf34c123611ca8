/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pump.c: the data path. Moves bytes client -> destination and back with as
 * few syscalls as the kernel allows, and owns no policy: the session in
 * conn.c decides when to start and what an error means.
 *
 * Each direction is a small loop: deliver what is in flight; when nothing
 * is, hand the buffer or pipe back to the worker's pool (an idle session
 * holds neither); propagate EOF as shutdown(SHUT_WR) so half-closed sessions
 * keep working the other way; otherwise read more. Sockets are registered
 * edge-triggered once, so backpressure costs no epoll_ctl: a direction
 * whose destination is full simply stops reading until EPOLLOUT.
 *
 * splice(): in auto mode a direction starts on user-space buffers and moves
 * to a pipe once one read fills a whole buffer (bulk data); small exchanges
 * never pay for a pipe. If no pipe can be had, buffers carry on.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/pipe.h"
#include "relay/conn.h"
#include "relay/outbound.h"
#include "relay/session.h"

/* Bytes one direction may read per wakeup before yielding to other
 * sessions on the same worker. */
#define PUMP_BUDGET  (1u << 20)
#define SPLICE_CHUNK (1u << 20)

struct dir {
    struct half *h;
    int src, dst;
    uint8_t *src_ev, *dst_ev;
    const char *read_err, *write_err; /* close reasons */
};

static int pump_fail(struct conn *c, const char *why, int err)
{
    c->why = why;
    return err;
}

/* Deliver bytes in flight. Returns 1 when nothing is left in flight, 0 when
 * dst is full, or -errno. */
static int pump_flush(struct conn *c, const struct dir *d)
{
    struct half *h = d->h;
    while (h->pipe && h->pipe->len) {
        if (!(*d->dst_ev & SIDE_WR))
            return 0;
        ssize_t n = splice(h->pipe->rfd, NULL, d->dst, NULL, h->pipe->len,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n < 0) {
            if (errno == EAGAIN) {
                *d->dst_ev &= (uint8_t)~SIDE_WR;
                return 0;
            }
            if (errno == EINTR)
                continue;
            return pump_fail(c, d->write_err, -errno);
        }
        h->pipe->len -= (uint32_t)n;
        h->bytes += (uint64_t)n;
        stat_add(&c->w->stats.splice_bytes, (uint64_t)n);
        c->last_active = loop_now(&c->w->loop);
    }
    while (h->buf && buf_len(h->buf)) {
        if (!(*d->dst_ev & SIDE_WR))
            return 0;
        ssize_t n = send(d->dst, buf_head(h->buf), buf_len(h->buf), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN) {
                *d->dst_ev &= (uint8_t)~SIDE_WR;
                return 0;
            }
            if (errno == EINTR)
                continue;
            return pump_fail(c, d->write_err, -errno);
        }
        buf_consume(h->buf, (uint32_t)n);
        h->bytes += (uint64_t)n;
        c->last_active = loop_now(&c->w->loop);
        if (buf_len(h->buf)) {
            /* A short write means the socket buffer is full: EPOLLOUT will
             * tell us when it drains, so skip the EAGAIN round trip. */
            *d->dst_ev &= (uint8_t)~SIDE_WR;
            return 0;
        }
    }
    return 1;
}

/* Read once from src into a pipe. Returns bytes read, 0 at EOF or when src
 * is drained (src_ev says which), or -errno. */
static ssize_t pump_read_splice(struct conn *c, const struct dir *d, struct pipe_pair *pp,
                                uint32_t max)
{
    for (;;) {
        ssize_t n = splice(d->src, NULL, pp->wfd, NULL, max, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            pp->len = (uint32_t)n;
            return n;
        }
        if (n == 0) {
            d->h->flags |= HALF_EOF;
            return 0;
        }
        if (errno == EAGAIN) {
            *d->src_ev &= (uint8_t)~SIDE_RD;
            return 0;
        }
        if (errno != EINTR)
            return pump_fail(c, d->read_err, -errno);
    }
}

static ssize_t pump_read_buf(struct conn *c, const struct dir *d, struct buf *b, bool auto_splice,
                             uint32_t max)
{
    for (;;) {
        uint32_t room = buf_room(b) < max ? buf_room(b) : max;
        ssize_t n = recv(d->src, buf_tail(b), room, 0);
        if (n > 0) {
            b->end += (uint32_t)n;
            /* A short read drained the socket, unless the peer announced EOF:
             * then read on until recv() says 0, or the EOF edge is lost. */
            if ((uint32_t)n < room && !(*d->src_ev & SIDE_RDHUP))
                *d->src_ev &= (uint8_t)~SIDE_RD;
            else if (buf_room(b) == 0 && auto_splice)
                d->h->flags |= HALF_SPLICE; /* a whole buffer in one read: bulk */
            return n;
        }
        if (n == 0) {
            d->h->flags |= HALF_EOF;
            return 0;
        }
        if (errno == EAGAIN) {
            *d->src_ev &= (uint8_t)~SIDE_RD;
            return 0;
        }
        if (errno != EINTR)
            return pump_fail(c, d->read_err, -errno);
    }
}

static int pump_dir(struct conn *c, const struct dir *d)
{
    struct worker *w = c->w;
    struct half *h = d->h;
    /* splice() needs sockets on both sides; an outbound that is a stream
     * of something else goes through buffers. */
    enum splice_mode mode = c->out->splice ? c->wc->cfg->splice : SPLICE_NEVER;
    uint32_t budget = PUMP_BUDGET;

    for (;;) {
        int rc = pump_flush(c, d);
        if (rc <= 0)
            return rc;
        /* Nothing in flight: hold no memory while waiting. */
        if (h->buf) {
            buf_put(&w->bufs, h->buf);
            h->buf = NULL;
        }
        if (h->pipe) {
            pipe_put(&w->pipes, h->pipe);
            h->pipe = NULL;
        }
        if (h->flags & HALF_EOF) {
            if (!(h->flags & HALF_SHUT)) {
                h->flags |= HALF_SHUT;
                /* The last direction to end needs no shutdown(): the
                 * session closes both sockets next, and close() sends
                 * the FIN after what is queued (nothing is left unread). */
                if (!relay_done(c) && shutdown(d->dst, SHUT_WR) < 0 && errno != ENOTCONN)
                    return pump_fail(c, d->write_err, -errno);
            }
            return 0;
        }
        if (!(*d->src_ev & SIDE_RD))
            return 0;
        if (budget == 0) {
            loop_defer(&w->loop, &c->task); /* fairness: resume after others */
            return 0;
        }

        /* Bandwidth limits: read only what may move now; with nothing
         * allowed, a timer resumes the session (no busy loop). */
        uint32_t allow = policy_bw_allow(c, SPLICE_CHUNK);
        if (!allow)
            return 0;

        ssize_t n;
        if (mode == SPLICE_ALWAYS || (h->flags & HALF_SPLICE)) {
            h->pipe = pipe_get(&w->pipes);
            if (!h->pipe) {
                h->flags &= (uint8_t)~HALF_SPLICE; /* no pipe to be had: buffers will do */
                mode = SPLICE_NEVER;
                continue;
            }
            n = pump_read_splice(c, d, h->pipe, allow);
        } else {
            h->buf = buf_get(&w->bufs);
            if (!h->buf)
                return pump_fail(c, "no-memory", -ENOMEM);
            n = pump_read_buf(c, d, h->buf, mode == SPLICE_AUTO, allow);
        }
        if (n < 0)
            return (int)n;
        if (n > 0) {
            c->last_active = loop_now(&w->loop);
            policy_bw_spend(c, (uint32_t)n);
            budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
        }
    }
}

int relay_pump(struct conn *c)
{
    const struct dir up = {&c->c2u,   c->cli.fd,      c->up.fd,        &c->cli_ev,
                           &c->up_ev, "client-error", "upstream-error"};
    const struct dir down = {&c->u2c,    c->up.fd,         c->cli.fd,     &c->up_ev,
                             &c->cli_ev, "upstream-error", "client-error"};
    int rc = pump_dir(c, &up);
    if (rc == 0)
        rc = pump_dir(c, &down);
    relay_count_bytes(c);
    return rc;
}

void relay_count_bytes(struct conn *c)
{
    /* bytes dips below counted while a queued reply is pre-subtracted
     * (conn_send_client): count only growth, never a wrapped difference. */
    struct worker_stats *st = &c->w->stats;
    if (c->c2u.bytes > c->c2u.counted) {
        stat_add(&st->bytes_up, c->c2u.bytes - c->c2u.counted);
        c->c2u.counted = c->c2u.bytes;
    }
    if (c->u2c.bytes > c->u2c.counted) {
        stat_add(&st->bytes_down, c->u2c.bytes - c->u2c.counted);
        c->u2c.counted = c->u2c.bytes;
    }
}

bool relay_done(const struct conn *c)
{
    return (c->c2u.flags & HALF_SHUT) && (c->u2c.flags & HALF_SHUT);
}

void relay_release(struct conn *c)
{
    struct worker *w = c->w;
    buf_put(&w->bufs, c->c2u.buf);
    buf_put(&w->bufs, c->u2c.buf);
    pipe_put(&w->pipes, c->c2u.pipe);
    pipe_put(&w->pipes, c->u2c.pipe);
    c->c2u.buf = c->u2c.buf = NULL;
    c->c2u.pipe = c->u2c.pipe = NULL;
}
