/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wanfwd.c: the forwarder of `ferry bench wan`. Each direction reads
 * packets from one TUN descriptor into a byte ring, asks its shaper
 * (wanpath.c) whether and when each segment leaves, and writes what
 * passed to the other TUN descriptor at its release time.
 *
 * With gso=on (the default) both TUN devices are opened with IFF_VNET_HDR
 * and TCP segmentation offload, so a sender's TCP hands over GSO packets
 * of up to 64 KiB: each is cut into its wire segments (wangso.c), each
 * segment goes through the shaper as the packet it would be on the wire,
 * and the segments that pass leave as pieces: runs of consecutive passed
 * segments whose release times lie within WAN_PIECE_SPREAD_NS of the
 * run's first, each one write (one GSO packet again, or a plain packet),
 * released at its last segment's release time. With gso=off every packet
 * is one segment and one piece, as before offloads.
 *
 * Storage: a byte ring per direction (packets contiguous; a read that
 * would not fit before the end goes to the start) and a FIFO of pieces
 * (release time, where its packet is, which segments). Release times
 * never go down (the shaper keeps packets in order), so the FIFO's head
 * is always the next piece due and a packet's bytes are freed when its
 * last piece is written: no heap is needed. A loop waits in ppoll() for a
 * packet to read or the head's release time (1 us timer slack).
 *
 * Two threads (one per direction, the default) or one loop for both
 * (threads=1). A packet that finds the ring (or the FIFO) full is dropped
 * and its segments counted. Nothing here knows namespaces.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench/wan.h"
#include "bench/wangso.h"
#include "util/compiler.h"

/* A direction's byte ring: 1 Gbit/s for 25 ms plus a 50 ms queue is 9.4 MB
 * in flight; 64 MiB holds 1 Gbit/s for half a second of delay and queue
 * (whole GSO packets are kept while any of their segments waits).
 * Untouched pages cost no memory. */
#define WAN_RING_BYTES      (64u << 20)
/* Pieces queued per direction: far more than 64 MiB of full packets. */
#define WAN_PIECES          (1u << 18)
/* The most one read brings with gso=on: the virtio_net_hdr and a 64 KiB
 * GSO packet (the TUN device's gso_max_size), with room to spare. */
#define WAN_PKT_MAX_GSO     (WAN_VNET_HDR_LEN + 65536u + 256u)
/* Packets read in a row before the due ones are written. */
#define WAN_READ_BATCH      64
/* A piece's segments leave together: no more than this between the
 * release times of its first and last (at 1 Gbit/s about 21 segments of
 * 1500 bytes; at 100 Mbit/s two). */
#define WAN_PIECE_SPREAD_NS 250000u

/* Segments [first, first + nseg) of the packet at off (len bytes) in the
 * byte ring. */
struct wan_piece {
    uint64_t release_ns;
    uint32_t off, len;
    uint32_t first, nseg;
    bool cut; /* a GSO packet's piece: headers rewritten (else the packet as read) */
};

/* One direction. Owned by struct wan_fwd. */
struct wan_dir {
    int in_fd, out_fd;
    const char *name; /* "A->B" */
    bool gso;
    struct wan_shaper sh;
    struct wan_piece *piece;
    uint32_t ph, pt; /* free-running; pt - ph pieces queued */
    uint8_t *buf;    /* WAN_RING_BYTES */
    size_t rd, wr;   /* the oldest queued packet; where the next read goes */
    size_t pkt_max;  /* the most one read may bring */
    uint64_t out;    /* segments written */
    uint64_t gso_pkts, gso_segs, pieces, uncut;
};

/* A loop's share of the directions. */
struct wan_loop {
    struct wan_dir *dir[2];
    unsigned ndir;
    int stop_fd;
};

struct wan_fwd {
    struct wan_dir dir[2];
    int stop_fd; /* an eventfd: readable once stopping */
    pthread_t thread[2];
    struct wan_loop loop[2];
    unsigned nthreads;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where the next read goes (pkt_max contiguous bytes), or NULL when the
 * ring is full. Queued bytes are [rd, wr), or [rd, end) then [0, wr)
 * once the writer went back to the start (wr < rd). */
static uint8_t *ring_space(struct wan_dir *d)
{
    if (d->pt - d->ph >= WAN_PIECES)
        return NULL;
    if (d->pt == d->ph)
        d->rd = d->wr = 0;
    if (d->wr >= d->rd) {
        if (WAN_RING_BYTES - d->wr >= d->pkt_max)
            return d->buf + d->wr;
        if (d->rd <= d->pkt_max)
            return NULL;
        d->wr = 0;
    }
    return d->rd - d->wr > d->pkt_max ? d->buf + d->wr : NULL;
}

/* After the head piece is gone: the oldest queued byte. */
static void ring_pop(struct wan_dir *d)
{
    d->ph++;
    d->rd = d->ph != d->pt ? d->piece[d->ph % WAN_PIECES].off : d->wr;
}

/* The packet p[n] read into the ring at now: each segment through the
 * shaper, the runs that pass queued as pieces (see the file's comment). */
static void dir_queue(struct wan_dir *d, const uint8_t *p, size_t n, uint64_t now)
{
    struct wan_gso g = {.kind = WAN_GSO_PLAIN, .nseg = 1, .iplen = n};
    if (d->gso)
        wan_gso_parse(p, n, &g);
    d->gso_pkts += g.kind == WAN_GSO_CUT;
    d->gso_segs += g.kind == WAN_GSO_CUT ? g.nseg : 0;
    d->uncut += g.kind == WAN_GSO_WHOLE;
    if (WAN_PIECES - (d->pt - d->ph) < g.nseg) {
        d->sh.in += g.nseg;
        d->sh.full_dropped += g.nseg;
        return;
    }
    struct wan_piece *cur = NULL;
    uint64_t first_ns = 0;
    uint32_t pt0 = d->pt;
    for (unsigned k = 0; k < g.nseg; k++) {
        uint64_t rel;
        if (wan_shaper_admit(&d->sh, now, wan_gso_seg_len(&g, k), &rel) != WAN_PASS) {
            cur = NULL; /* a hole: the next passed segment starts a piece */
            continue;
        }
        if (cur && rel - first_ns <= WAN_PIECE_SPREAD_NS) {
            cur->nseg++;
            cur->release_ns = rel;
            continue;
        }
        cur = &d->piece[d->pt++ % WAN_PIECES];
        *cur = (struct wan_piece){.release_ns = rel,
                                  .off = (uint32_t)(p - d->buf),
                                  .len = (uint32_t)n,
                                  .first = k,
                                  .nseg = 1,
                                  .cut = g.kind == WAN_GSO_CUT};
        first_ns = rel;
    }
    if (d->pt != pt0) /* else nothing of it stays: its bytes are free again */
        d->wr = (size_t)(p - d->buf) + ((n + 63u) & ~(size_t)63u);
}

/* Write one piece; -1 when the TUN device refused it. */
static ssize_t piece_write(struct wan_dir *d, const struct wan_piece *pc)
{
    const uint8_t *pkt = d->buf + pc->off;
    if (!pc->cut)
        return write(d->out_fd, pkt, pc->len);
    struct wan_gso g;
    uint8_t hdr[WAN_GSO_HDR_MAX];
    size_t off, len;
    wan_gso_parse(pkt, pc->len, &g);
    size_t hl = wan_gso_piece(pkt, &g, pc->first, pc->nseg, hdr, &off, &len);
    struct iovec iov[2] = {{hdr, hl}, {(void *)(uintptr_t)(pkt + off), len}};
    ssize_t w = writev(d->out_fd, iov, 2);
    d->pieces += w >= 0;
    return w;
}

/* Write every piece due by now; the head's release time, or UINT64_MAX
 * when nothing is queued. */
static uint64_t dir_release(struct wan_dir *d, uint64_t now)
{
    while (d->ph != d->pt) {
        const struct wan_piece *pc = &d->piece[d->ph % WAN_PIECES];
        if (pc->release_ns > now)
            return pc->release_ns;
        /* a TUN write does not block; a refusal (no buffer) is the loss of
         * those segments, as on a real link */
        if (piece_write(d, pc) < 0)
            d->sh.write_failed += pc->nseg;
        else
            d->out += pc->nseg;
        uint64_t late = now - pc->release_ns;
        d->sh.late_ns += late * pc->nseg;
        d->sh.late_max_ns = MAX(d->sh.late_max_ns, late);
        ring_pop(d);
    }
    return UINT64_MAX;
}

/* Read what is there (up to a batch) and queue what the shaper passes.
 * Returns 0, or -errno of a read that failed for good. */
static int dir_read(struct wan_dir *d)
{
    static _Thread_local uint8_t scratch[WAN_PKT_MAX_GSO];
    for (unsigned k = 0; k < WAN_READ_BATCH; k++) {
        uint8_t *p = ring_space(d);
        bool full = !p;
        ssize_t n = read(d->in_fd, full ? scratch : p, full ? sizeof(scratch) : d->pkt_max);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
            return 0;
        if (full) {
            struct wan_gso g = {.nseg = 1};
            if (d->gso)
                wan_gso_parse(scratch, (size_t)n, &g);
            d->sh.in += g.nseg;
            d->sh.full_dropped += g.nseg;
            continue;
        }
        uint64_t now = now_ns();
        dir_queue(d, p, (size_t)n, now);
        /* a batch of 64 KiB packets is milliseconds of reads: what fell
         * due meanwhile leaves now, not after the batch */
        (void)dir_release(d, now);
    }
    return 0;
}

/* A loop over its directions until the stop event. */
static void *loop_run(void *arg)
{
    struct wan_loop *l = arg;
    struct pollfd pfd[3];
    (void)prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
    for (unsigned i = 0; i < l->ndir; i++)
        pfd[i] = (struct pollfd){.fd = l->dir[i]->in_fd, .events = POLLIN};
    pfd[l->ndir] = (struct pollfd){.fd = l->stop_fd, .events = POLLIN};
    for (;;) {
        uint64_t now = now_ns(), next = UINT64_MAX;
        for (unsigned i = 0; i < l->ndir; i++)
            next = MIN(next, dir_release(l->dir[i], now));
        struct timespec ts, *tmo = NULL;
        if (next != UINT64_MAX) {
            uint64_t wait = next - now;
            ts.tv_sec = (time_t)(wait / 1000000000u);
            ts.tv_nsec = (long)(wait % 1000000000u);
            tmo = &ts;
        }
        int n = ppoll(pfd, l->ndir + 1, tmo, NULL);
        if (n < 0 && errno != EINTR) {
            perror("ferry bench wan: ppoll");
            break;
        }
        if (n <= 0)
            continue;
        if (pfd[l->ndir].revents)
            break;
        for (unsigned i = 0; i < l->ndir; i++) {
            if (!pfd[i].revents)
                continue;
            int rc = dir_read(l->dir[i]);
            if (rc) {
                fprintf(stderr, "ferry bench wan: %s: read: %s\n", l->dir[i]->name, strerror(-rc));
                return NULL;
            }
        }
    }
    return NULL;
}

static int dir_init(struct wan_dir *d, const struct wan_conf *c, unsigned k, int in, int out)
{
    d->in_fd = in;
    d->out_fd = out;
    d->name = k == 0 ? "A->B" : "B->A";
    d->gso = c->gso;
    wan_shaper_init(&d->sh, c, k);
    d->pkt_max = c->gso ? WAN_PKT_MAX_GSO : (c->mtu + 63u) & ~63u;
    d->piece = calloc(WAN_PIECES, sizeof(*d->piece));
    d->buf = malloc(WAN_RING_BYTES);
    return d->piece && d->buf ? 0 : -ENOMEM;
}

static void fwd_free(struct wan_fwd *f)
{
    for (unsigned k = 0; k < 2; k++) {
        free(f->dir[k].piece);
        free(f->dir[k].buf);
    }
    if (f->stop_fd >= 0)
        close(f->stop_fd);
    free(f);
}

struct wan_fwd *wan_fwd_start(const struct wan_conf *c, int fd_a, int fd_b)
{
    struct wan_fwd *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int rc = f->stop_fd < 0 ? -errno : 0;
    if (!rc)
        rc = dir_init(&f->dir[0], c, 0, fd_a, fd_b);
    if (!rc)
        rc = dir_init(&f->dir[1], c, 1, fd_b, fd_a);
    unsigned nloops = c->threads == 1 ? 1 : 2;
    for (unsigned t = 0; !rc && t < nloops; t++) {
        struct wan_loop *l = &f->loop[t];
        l->stop_fd = f->stop_fd;
        for (unsigned k = t; k < 2; k += nloops)
            l->dir[l->ndir++] = &f->dir[k];
        rc = -pthread_create(&f->thread[t], NULL, loop_run, l);
        if (!rc)
            f->nthreads++;
    }
    if (rc) {
        wan_fwd_stop(f, true);
        errno = -rc;
        return NULL;
    }
    return f;
}

/* A direction's counts on stderr. */
static void dir_report(const struct wan_dir *d)
{
    const struct wan_shaper *s = &d->sh;
    fprintf(stderr,
            "ferry bench wan: %s: %llu packets (%llu bytes) in, %llu out, %llu lost "
            "(random), %llu tail-dropped (queue), %llu dropped (ring full), %llu refused "
            "by the TUN device\n",
            d->name, (unsigned long long)s->in, (unsigned long long)s->bytes_in,
            (unsigned long long)d->out, (unsigned long long)s->lost,
            (unsigned long long)s->tail_dropped, (unsigned long long)s->full_dropped,
            (unsigned long long)s->write_failed);
    uint64_t n = s->passed ? s->passed : 1;
    fprintf(stderr,
            "ferry bench wan: %s: waited for the link %.3f ms on average; written %.3f ms "
            "after the release time on average (%.3f ms at most: the forwarder's own "
            "delay)\n",
            d->name, (double)s->queued_ns / 1e6 / (double)n, (double)s->late_ns / 1e6 / (double)n,
            (double)s->late_max_ns / 1e6);
    if (d->gso)
        fprintf(stderr,
                "ferry bench wan: %s: gso: %llu GSO packets read (%llu segments), %llu "
                "pieces written, %llu GSO packets not cut (written whole)\n",
                d->name, (unsigned long long)d->gso_pkts, (unsigned long long)d->gso_segs,
                (unsigned long long)d->pieces, (unsigned long long)d->uncut);
}

void wan_fwd_stop(struct wan_fwd *f, bool quiet)
{
    if (!f)
        return;
    uint64_t one = 1;
    if (f->stop_fd >= 0 && write(f->stop_fd, &one, sizeof(one)) < 0)
        perror("ferry bench wan: stop");
    for (unsigned t = 0; t < f->nthreads; t++)
        pthread_join(f->thread[t], NULL);
    for (unsigned k = 0; !quiet && k < 2; k++)
        dir_report(&f->dir[k]);
    fwd_free(f);
}
