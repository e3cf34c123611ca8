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
#include "relay/h2stream.h"
#include "relay/outbound.h"
#include "relay/outbound_h2rev.h"
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
    enum splice_mode mode = c->wc->cfg->splice;
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

/* ---- a stream outbound (splice false: TLS) -------------------------------
 *
 * The same loop over buffers, with c->up read, written and half-closed
 * through the outbound's calls (outbound.h). A call on c->up may wait for
 * the other readiness than its own (TLS: a read that must write), so each
 * direction remembers in up_wait which bit of c->up_ev its next call on
 * c->up waits for, and clears only that bit when told to wait. Bytes the
 * stream holds decrypted (pending) count as readable: epoll will not say
 * so again. Short reads and writes prove nothing here (a TLS call moves
 * one record): only -EAGAIN clears a bit. */

struct sdir {
    struct half *h;
    ssize_t (*rd)(struct conn *c, void *p, size_t len, uint8_t *want);
    ssize_t (*wr)(struct conn *c, const void *p, size_t len, uint8_t *want);
    int (*shut)(struct conn *c, uint8_t *want);
    bool (*pending)(const struct conn *c);
    uint8_t *src_ev, *dst_ev;
    uint8_t rd_bit, wr_bit; /* the readiness the next read / write waits for */
    bool src_up;            /* src is c->up (else dst is) */
    const char *read_err, *write_err;
};

static ssize_t pump_sock_result(ssize_t n, uint8_t bit, uint8_t *want)
{
    if (n >= 0)
        return n;
    if (errno == EAGAIN)
        *want = bit;
    return -errno;
}

/* The client side goes through conn_cli_recv() and friends (a socket, or
 * TLS on a tls:// listener), which keep c->cli_ev right themselves: a TLS
 * call that waits for the other readiness is retried when it comes
 * (c->cli_cross), so here it waits for its own. */
static ssize_t pump_cli_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    return pump_sock_result(conn_cli_recv(c, p, len), SIDE_RD, want);
}

static ssize_t pump_cli_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    return pump_sock_result(conn_cli_send(c, p, len), SIDE_WR, want);
}

static int pump_cli_shut(struct conn *c, uint8_t *want)
{
    /* The last direction to end needs no shutdown() (see pump_dir); TLS
     * gets its close_notify when the session closes. */
    if (((c->c2u.flags & HALF_SHUT) && !c->h2s && !c->hos) || conn_cli_shutdown(c) == 0 ||
        errno == ENOTCONN)
        return 0;
    if (errno == EAGAIN)
        *want = SIDE_WR;
    return -errno;
}

static ssize_t pump_up_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    return pump_sock_result(recv(c->up.fd, p, len, 0), SIDE_RD, want);
}

static ssize_t pump_up_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    return pump_sock_result(send(c->up.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT), SIDE_WR, want);
}

static int pump_up_shut(struct conn *c, uint8_t *want)
{
    (void)want;
    return shutdown(c->up.fd, SHUT_WR) == 0 || errno == ENOTCONN ? 0 : -errno;
}

/* A call said -EAGAIN waiting for bit of ev: remember it for the next. */
static void pump_stream_wait(uint8_t *ev, uint8_t *bit, uint8_t want)
{
    *ev &= (uint8_t)~want;
    *bit = want;
}

/* Deliver the buffer. 1 when empty, 0 when dst must wait, or -errno. */
static int pump_stream_flush(struct conn *c, struct sdir *d)
{
    struct half *h = d->h;
    while (h->buf && buf_len(h->buf)) {
        if (!(*d->dst_ev & d->wr_bit))
            return 0;
        uint8_t want = SIDE_WR;
        ssize_t n = d->wr(c, buf_head(h->buf), buf_len(h->buf), &want);
        if (n == -EAGAIN) {
            pump_stream_wait(d->dst_ev, &d->wr_bit, want);
            return 0;
        }
        if (n == -EINTR)
            continue;
        if (n < 0)
            return pump_fail(c, d->write_err, (int)n);
        d->wr_bit = SIDE_WR;
        buf_consume(h->buf, (uint32_t)n);
        h->bytes += (uint64_t)n;
        c->last_active = loop_now(&c->w->loop);
    }
    return 1;
}

/* src's end has been read: pass it on (once, possibly after waiting). */
static int pump_stream_eof(struct conn *c, struct sdir *d)
{
    struct half *h = d->h;
    if (h->flags & HALF_SHUT)
        return 0;
    if ((h->flags & HALF_SHUT_WAIT) && !(*d->dst_ev & d->wr_bit))
        return 0; /* an end that waits (a close_notify into a full socket) */
    uint8_t want = SIDE_WR;
    int rc = d->shut(c, &want);
    const struct half *other = h == &c->c2u ? &c->u2c : &c->c2u;
    /* When the other way is over too, the session closes next: an end
     * that cannot go out now is not waited for. */
    if (rc == -EAGAIN && !(other->flags & HALF_SHUT)) {
        h->flags |= HALF_SHUT_WAIT;
        pump_stream_wait(d->dst_ev, &d->wr_bit, want);
        return 0;
    }
    if (rc < 0 && rc != -EAGAIN)
        return pump_fail(c, d->write_err, rc);
    h->flags |= HALF_SHUT;
    return 0;
}

/* Read once into the buffer. Bytes, 0 (EOF or wait), or -errno. */
static ssize_t pump_stream_read(struct conn *c, struct sdir *d, uint32_t max)
{
    struct buf *b = d->h->buf;
    for (;;) {
        uint32_t room = buf_room(b) < max ? buf_room(b) : max;
        uint8_t want = SIDE_RD;
        ssize_t n = d->rd(c, buf_tail(b), room, &want);
        if (n > 0) {
            b->end += (uint32_t)n;
            d->rd_bit = SIDE_RD;
            return n;
        }
        if (n == 0) {
            d->h->flags |= HALF_EOF;
            return 0;
        }
        if (n == -EAGAIN) {
            pump_stream_wait(d->src_ev, &d->rd_bit, want);
            return 0;
        }
        if (n != -EINTR)
            return pump_fail(c, d->read_err, (int)n);
    }
}

static bool pump_stream_readable(const struct conn *c, const struct sdir *d)
{
    return (*d->src_ev & d->rd_bit) || (d->src_up && d->pending && d->pending(c));
}

static int pump_stream_dir(struct conn *c, struct sdir *d)
{
    struct worker *w = c->w;
    struct half *h = d->h;
    uint32_t budget = PUMP_BUDGET;
    for (;;) {
        int rc = pump_stream_flush(c, d);
        if (rc <= 0)
            return rc;
        if (h->buf) { /* nothing in flight: hold no memory while waiting */
            buf_put(&w->bufs, h->buf);
            h->buf = NULL;
        }
        if (h->flags & HALF_EOF)
            return pump_stream_eof(c, d);
        if (!pump_stream_readable(c, d))
            return 0;
        if (budget == 0) {
            loop_defer(&w->loop, &c->task); /* fairness: resume after others */
            return 0;
        }
        uint32_t allow = policy_bw_allow(c, SPLICE_CHUNK);
        if (!allow)
            return 0;
        h->buf = buf_get(&w->bufs);
        if (!h->buf)
            return pump_fail(c, "no-memory", -ENOMEM);
        ssize_t n = pump_stream_read(c, d, allow);
        if (n < 0)
            return (int)n;
        if (n > 0) {
            c->last_active = loop_now(&w->loop);
            policy_bw_spend(c, (uint32_t)n);
            budget = (uint32_t)n >= budget ? 0 : budget - (uint32_t)n;
        }
    }
}

static int pump_stream(struct conn *c)
{
    const struct outbound_ops *o = c->out;
    /* up_wait holds what the direction's call on c->up waits for. */
    struct sdir up = {.h = &c->c2u,
                      .rd = pump_cli_read,
                      .wr = o->write ? o->write : pump_up_write,
                      .shut = o->shutdown_wr ? o->shutdown_wr : pump_up_shut,
                      .src_ev = &c->cli_ev,
                      .dst_ev = &c->up_ev,
                      .rd_bit = SIDE_RD,
                      .wr_bit = c->c2u.up_wait ? c->c2u.up_wait : SIDE_WR,
                      .read_err = "client-error",
                      .write_err = "upstream-error"};
    struct sdir down = {.h = &c->u2c,
                        .rd = o->read ? o->read : pump_up_read,
                        .wr = pump_cli_write,
                        .shut = pump_cli_shut,
                        .pending = o->pending,
                        .src_ev = &c->up_ev,
                        .dst_ev = &c->cli_ev,
                        .rd_bit = c->u2c.up_wait ? c->u2c.up_wait : SIDE_RD,
                        .wr_bit = SIDE_WR,
                        .src_up = true,
                        .read_err = "upstream-error",
                        .write_err = "client-error"};
    int rc = pump_stream_dir(c, &up);
    c->c2u.up_wait = up.wr_bit;
    if (rc == 0) {
        rc = pump_stream_dir(c, &down);
        c->u2c.up_wait = down.rd_bit;
    }
    if (c->h2s)
        h2stream_credit(c); /* stream credit for what reached the destination */
    if (c->hos)
        outbound_h2rev_credit(c); /* ... a reverse session's, through the tunnel */
    if (o->credit)
        o->credit(c); /* ... and for what reached the client (outbound_h2.c) */
    const char *why = rc < 0 && o->why ? o->why(c) : NULL;
    if (why)
        c->why = why; /* the outbound knows better (a refused fast open) */
    relay_count_bytes(c);
    return rc;
}

int relay_pump(struct conn *c)
{
    /* splice() needs sockets on both sides; an outbound that is a stream
     * of something else (TLS), or a client over TLS, goes through buffers
     * and the stream calls. */
    if (!c->out->splice || c->cli_tls || c->h2s || c->hos)
        return pump_stream(c);
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
    uint64_t up = 0, down = 0;
    if (c->c2u.bytes > c->c2u.counted) {
        up = c->c2u.bytes - c->c2u.counted;
        stat_add(&st->bytes_up, up);
        c->c2u.counted = c->c2u.bytes;
    }
    if (c->u2c.bytes > c->u2c.counted) {
        down = c->u2c.bytes - c->u2c.counted;
        stat_add(&st->bytes_down, down);
        c->u2c.counted = c->u2c.bytes;
    }
    /* The same add, once more, where accounting is on: no work of its own
     * per read. A UDP association counted its bytes as they moved. */
    if (c->acct_l && (up || down)) {
        acct_count(c->acct_l, up, down);
        const struct config *cfg = conn_cfg(c);
        if (c->dialed && cfg->ob_stats && c->ob < cfg->noutbounds && c->w->id < cfg->workers) {
            stat_t *o =
                &cfg->ob_stats[(size_t)c->w->id * cfg->ob_stride + (size_t)c->ob * OB_STATS];
            stat_add(&o[OB_STAT_BYTES_UP], up);
            stat_add(&o[OB_STAT_BYTES_DOWN], down);
        }
    }
    if (c->acct.ctr && !c->acct_udp)
        acct_count(c->acct.ctr, up, down);
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
