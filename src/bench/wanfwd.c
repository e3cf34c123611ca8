/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wanfwd.c: the forwarder of `ferry bench wan`. Each direction reads
 * IP packets from one TUN descriptor into a ring of slots, asks its shaper
 * (wanpath.c) whether and when each leaves, and writes them to the other
 * TUN descriptor at their release time. Release times never go down (the
 * shaper keeps packets in order), so the ring is a FIFO and its head is
 * always the next packet due: no heap is needed. A loop waits in ppoll()
 * for a packet to read or the head's release time (1 us timer slack).
 *
 * Two threads (one per direction, the default) or one loop for both
 * (threads=1). The ring is bounded (WAN_RING slots); a packet that finds
 * it full is dropped and counted. Nothing here knows namespaces.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench/wan.h"
#include "util/compiler.h"

/* Slots of a direction's ring: 1 Gbit/s for 25 ms plus a 50 ms queue is
 * 6,250 packets of 1,500 bytes; 2^15 leaves room. Untouched slots cost
 * no memory. */
#define WAN_RING       32768u
/* Packets read in a row before the due ones are written. */
#define WAN_READ_BATCH 64

struct wan_slot {
    uint64_t release_ns;
    uint32_t len;
};

/* One direction. Owned by struct wan_fwd. */
struct wan_dir {
    int in_fd, out_fd;
    const char *name; /* "A->B" */
    struct wan_shaper sh;
    struct wan_slot *slot;
    uint8_t *buf; /* WAN_RING * slot_size bytes */
    size_t slot_size;
    uint32_t head, tail; /* free-running; tail - head packets queued */
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

/* Write every packet due by now; the head's release time, or UINT64_MAX
 * when the ring is empty. */
static uint64_t dir_release(struct wan_dir *d, uint64_t now)
{
    while (d->head != d->tail) {
        uint32_t i = d->head % WAN_RING;
        if (d->slot[i].release_ns > now)
            return d->slot[i].release_ns;
        /* a TUN write does not block; a refusal (no buffer) is the loss of
         * that packet, as on a real link */
        if (write(d->out_fd, d->buf + (size_t)i * d->slot_size, d->slot[i].len) < 0)
            d->sh.write_failed++;
        uint64_t late = now - d->slot[i].release_ns;
        d->sh.late_ns += late;
        d->sh.late_max_ns = MAX(d->sh.late_max_ns, late);
        d->head++;
    }
    return UINT64_MAX;
}

/* Read what is there (up to a batch) and queue what the shaper passes.
 * Returns 0, or -errno of a read that failed for good. */
static int dir_read(struct wan_dir *d)
{
    for (unsigned k = 0; k < WAN_READ_BATCH; k++) {
        bool full = d->tail - d->head >= WAN_RING;
        static _Thread_local uint8_t scratch[65536];
        uint32_t i = d->tail % WAN_RING;
        uint8_t *p = full ? scratch : d->buf + (size_t)i * d->slot_size;
        ssize_t n = read(d->in_fd, p, full ? sizeof(scratch) : d->slot_size);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
            return 0;
        if (full) {
            d->sh.in++;
            d->sh.full_dropped++;
            continue;
        }
        uint64_t release;
        if (wan_shaper_admit(&d->sh, now_ns(), (size_t)n, &release) != WAN_PASS)
            continue;
        d->slot[i].release_ns = release;
        d->slot[i].len = (uint32_t)n;
        d->tail++;
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
    wan_shaper_init(&d->sh, c, k);
    d->slot_size = (c->mtu + 63u) & ~63u;
    d->slot = calloc(WAN_RING, sizeof(*d->slot));
    d->buf = malloc((size_t)WAN_RING * d->slot_size);
    return d->slot && d->buf ? 0 : -ENOMEM;
}

static void fwd_free(struct wan_fwd *f)
{
    for (unsigned k = 0; k < 2; k++) {
        free(f->dir[k].slot);
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

void wan_fwd_stop(struct wan_fwd *f, bool quiet)
{
    if (!f)
        return;
    uint64_t one = 1;
    if (f->stop_fd >= 0 && write(f->stop_fd, &one, sizeof(one)) < 0)
        perror("ferry bench wan: stop");
    for (unsigned t = 0; t < f->nthreads; t++)
        pthread_join(f->thread[t], NULL);
    for (unsigned k = 0; !quiet && k < 2; k++) {
        const struct wan_shaper *s = &f->dir[k].sh;
        fprintf(
            stderr,
            "ferry bench wan: %s: %llu packets (%llu bytes) in, %llu out, %llu lost "
            "(random), %llu tail-dropped (queue), %llu dropped (ring full), %llu refused "
            "by the TUN device\n",
            f->dir[k].name, (unsigned long long)s->in, (unsigned long long)s->bytes_in,
            (unsigned long long)(s->passed - (f->dir[k].tail - f->dir[k].head) - s->write_failed),
            (unsigned long long)s->lost, (unsigned long long)s->tail_dropped,
            (unsigned long long)s->full_dropped, (unsigned long long)s->write_failed);
        uint64_t n = s->passed ? s->passed : 1;
        fprintf(stderr,
                "ferry bench wan: %s: waited for the link %.3f ms on average; written %.3f ms "
                "after the release time on average (%.3f ms at most: the forwarder's own "
                "delay)\n",
                f->dir[k].name, (double)s->queued_ns / 1e6 / (double)n,
                (double)s->late_ns / 1e6 / (double)n, (double)s->late_max_ns / 1e6);
    }
    fwd_free(f);
}
