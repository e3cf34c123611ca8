/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp.c: the UDP ASSOCIATE relay. Two handlers per association, one per
 * direction, each draining its socket in batches of UDP_BATCH datagrams
 * with recvmmsg() and answering with one sendmmsg() per batch and family.
 * Runs of equal datagrams to one address leave as one message with
 * UDP_SEGMENT (gso.h) unless udp.gso is off or the route refused it; with
 * udp.gro on, a run the kernel hands over as one message (UDP_GRO) is
 * split back into its datagrams, each handled as if it came alone.
 * Payloads are never copied: client datagrams are forwarded from the
 * receive buffer past their SOCKS header, and replies are received
 * UDP_HEADROOM bytes into their buffer so the header can be written in
 * front of them (a coalesced run of replies is the exception: its datagrams
 * are copied out, each behind its header). Datagrams to a resolved name
 * take the same batched path;
 * only those that wait for a lookup are copied (and bounded by udp.queue).
 *
 * Sockets are level-triggered: a batch that comes back short means the
 * socket was empty, so the handler returns without the recvmmsg() that
 * would only say EAGAIN; after UDP_ROUNDS full batches, or UDP_YIELD
 * datagrams (a coalesced run counts as what it holds), it yields and epoll
 * reports the socket again, with no task or epoll_ctl needed to resume.
 *
 * Destinations and names are found through small hash tables
 * (dest_table.c; the common association talks to a handful, the limit
 * allows 65,536); idleness is accounted coarsely, by a sweep timer, never
 * per datagram. Bandwidth limits are asked once per batch, never per
 * datagram, and never wait: a datagram over the budget is dropped.
 */
#include "udp/udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/gso.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/socks5.h"
#include "udp/assoc.h"
#include "udp/dest_table.h"
#include "udp/owner.h"
#include "udp/parent.h"
#include "udp/tunnel.h"
#include "util/compiler.h"
#include "util/list.h"

#define UDP_BATCH        32 /* messages per recvmmsg() */
#define UDP_OUT          64 /* datagrams staged per family before a sendmmsg() */
#define UDP_ROUNDS       8  /* batches per wakeup before yielding to other work */
#define UDP_YIELD        (UDP_ROUNDS * UDP_BATCH) /* datagrams per wakeup, runs counted whole */
#define UDP_HEADROOM     24                       /* room for the longest SOCKS UDP header (22) */
#define UDP_BUF          (65536 + UDP_HEADROOM)
#define UDP_SOCKBUF      (1 << 20)
#define UDP_NAME_FAIL_MS 5000 /* a name that did not resolve is not retried sooner */

/* Per-worker scratch space, shared by every association of the worker (one
 * handler runs at a time; DNS answers arrive from a task, never inside a
 * handler). */
struct udp_worker {
    uint8_t *bufs; /* UDP_BATCH * UDP_BUF */
    struct mmsghdr in[UDP_BATCH];
    struct iovec in_iov[UDP_BATCH];
    struct sockaddr_storage in_name[UDP_BATCH];
    struct {
        _Alignas(struct cmsghdr) char buf[UDP_GRO_CTL];
    } in_ctl[UDP_BATCH];
    struct mmsghdr out[2][UDP_OUT]; /* [0] IPv4, [1] IPv6 */
    struct iovec out_iov[2][UDP_OUT];
    struct sockaddr_storage out_name[2][UDP_OUT];
    uint8_t out_hdr[UDP_OUT]; /* SOCKS header bytes in front of each reply in out_iov[0] */
    struct udp_gso gso;
    /* A coalesced run of replies, copied out behind their headers, at
     * most UDP_OUT at a time (allocated on first use). */
    uint8_t *expand;
    uint64_t rng;
};

#define UDP_EXPAND (65536 + UDP_OUT * UDP_HEADROOM)

_Static_assert(UDP_OUT <= UDP_GSO_BATCH, "one staged batch is coalesced at once");
_Static_assert(UDP_OUT <= UDP_GSO_SEGS, "a merged run is split into one batch");

static struct udp_worker *udp_worker_get(struct worker *w)
{
    struct udp_worker *uw = w->udp;
    if (uw)
        return uw;
    uw = calloc(1, sizeof(*uw));
    if (!uw)
        return NULL;
    uw->bufs = malloc((size_t)UDP_BATCH * UDP_BUF);
    if (!uw->bufs) {
        free(uw);
        return NULL;
    }
    uw->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)w->id << 32) ^ (uint64_t)(uintptr_t)uw ^
              (clock_us() << 20);
    w->udp = uw;
    return uw;
}

void udp_worker_fini(struct worker *w)
{
    struct udp_worker *uw = w->udp;
    if (!uw)
        return;
    free(uw->bufs);
    free(uw->expand);
    free(uw);
    w->udp = NULL;
}

static uint64_t rng_next(struct udp_worker *uw)
{
    uw->rng ^= uw->rng << 13;
    uw->rng ^= uw->rng >> 7;
    uw->rng ^= uw->rng << 17;
    return uw->rng;
}

static int fam_index(uint8_t family)
{
    return family == AF_INET6 ? 1 : 0;
}

static bool same_ip(const struct addr *x, const struct addr *y)
{
    return x->family == y->family && memcmp(x->ip, y->ip, x->family == AF_INET6 ? 16 : 4) == 0;
}

static void set_bufs(int fd)
{
    int sz = UDP_SOCKBUF;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static int udp_socket(const struct config_udp *cfg, int family)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    if (family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    /* A kernel without UDP GRO (before 5.0) refuses, and then never
     * coalesces: nothing else depends on the answer. */
    if (cfg->gro)
        (void)setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
    set_bufs(fd);
    return fd;
}

/* Ready uw->in for a recvmmsg() into the scratch buffers, each message
 * offset bytes into its buffer. */
static void in_prepare(struct udp_worker *uw, size_t offset)
{
    for (int i = 0; i < UDP_BATCH; i++) {
        uw->in_iov[i] = (struct iovec){uw->bufs + (size_t)i * UDP_BUF + offset, UDP_BUF - offset};
        uw->in[i].msg_hdr = (struct msghdr){.msg_name = &uw->in_name[i],
                                            .msg_namelen = sizeof(uw->in_name[i]),
                                            .msg_iov = &uw->in_iov[i],
                                            .msg_iovlen = 1,
                                            .msg_control = uw->in_ctl[i].buf,
                                            .msg_controllen = sizeof(uw->in_ctl[i].buf)};
    }
}

/* How many datagrams message i holds: 1, or a coalesced run's count. */
static size_t in_count(struct udp_worker *uw, int i, size_t *seg)
{
    size_t len = uw->in[i].msg_len;
    *seg = udp_gro_size(&uw->in[i].msg_hdr, len);
    return *seg < len ? (len + *seg - 1) / *seg : 1;
}

/* ---- destinations ------------------------------------------------------ */

/* The destination d (what the client named: name, or NULL) as used at
 * now: known, or added when the rules allow it and the table has room.
 * Its via is the parent association datagrams to it go through (NULL:
 * straight from our own sockets). Names sent to parents as names count
 * against udp.destinations too (npnames). */
static struct udp_dest *dest_get(struct udp_assoc *a, const struct addr *d, uint64_t now,
                                 const char *name)
{
    struct udp_dest *x = udp_dests_find(&a->dests, d);
    if (x) {
        x->last_ms = now;
        return x;
    }
    uint16_t ob = a->conf->default_outbound;
    if (udp_route(a, name, d, d->port, &ob) != UDP_ALLOW) {
        stat_add(&a->w->stats.udp_drop_denied, 1);
        return NULL;
    }
    uint32_t limit = a->cfg->destinations - MIN(a->npnames, a->cfg->destinations);
    if (a->dests.n >= limit) {
        stat_add(&a->w->stats.udp_drop_dest_limit, 1);
        return NULL;
    }
    struct udp_parent *via = NULL;
    if (!udp_parent_direct(a, ob) && !(via = udp_parent_get(a, ob)))
        return NULL; /* counted there */
    x = udp_dests_add(&a->dests, d, now, limit);
    if (x)
        x->via = via;
    else
        stat_add(&a->w->stats.udp_drop_dest_limit, 1);
    return x;
}

/* ---- sending ------------------------------------------------------------ */

static struct io *out_io(struct udp_assoc *a, uint8_t family)
{
    return family == AF_INET6 ? &a->out6 : &a->out4;
}

static int out_fd(struct udp_assoc *a, uint8_t family)
{
    struct io *io = out_io(a, family);
    if (io->fd >= 0)
        return io->fd;
    int fd = udp_socket(a->cfg, family);
    if (fd < 0)
        return fd;
    int rc = loop_io_add(&a->w->loop, io, fd, EPOLLIN);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Does this kernel segment UDP (Linux 4.18 and later)? One that does not
 * would ignore the UDP_SEGMENT control message and send a merged run as a
 * single datagram, so merging is off unless the option is known. Asked
 * once per process (again if the probe could not open a socket); workers
 * racing to ask find the same answer. */
static _Atomic int gso_known; /* 0: not asked yet, 1: yes, 2: no */

static bool gso_supported(void)
{
    int k = atomic_load_explicit(&gso_known, memory_order_relaxed);
    if (k)
        return k == 1;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int v;
    socklen_t len = sizeof(v);
    bool ok = getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &len) == 0;
    close(fd);
    if (atomic_exchange(&gso_known, ok ? 1 : 2) == 0 && !ok)
        log_info("udp: this kernel has no UDP segmentation offload; datagrams go one by one");
    return ok;
}

/* What the kernel took of a batch: datagrams, and their payload in bytes.
 * A reply's iovec carries the SOCKS header in front of its payload: with
 * hdr set, hdr[i] is the header length of iov0[i]. Only what was sent is
 * counted as relayed; what was refused is a drop. */
struct udp_sent {
    uint64_t n, bytes;
    const struct iovec *iov0;
    const uint8_t *hdr; /* NULL: the iovecs are all payload */
};

static void sent_add(struct udp_sent *t, const struct msghdr *h)
{
    t->n += h->msg_iovlen;
    for (size_t i = 0; i < h->msg_iovlen; i++) {
        const struct iovec *v = &h->msg_iov[i];
        t->bytes += v->iov_len - (t->hdr ? t->hdr[v - t->iov0] : 0);
    }
}

static bool send_msgs(struct udp_assoc *a, int fd, uint16_t *max_seg, struct mmsghdr *m, unsigned n,
                      const uint16_t *segs, struct udp_sent *sent);

/* Send the datagrams of one merged message one by one. */
static void send_split(struct udp_assoc *a, int fd, const struct msghdr *h, struct udp_sent *sent)
{
    struct mmsghdr one[UDP_GSO_SEGS];
    unsigned n = (unsigned)h->msg_iovlen;
    for (unsigned i = 0; i < n; i++)
        one[i].msg_hdr = (struct msghdr){.msg_name = h->msg_name,
                                         .msg_namelen = h->msg_namelen,
                                         .msg_iov = h->msg_iov + i,
                                         .msg_iovlen = 1};
    (void)send_msgs(a, fd, NULL, one, n, NULL, sent);
}

/* The kernel refused merged message h: learn from why (max_seg), then send
 * its datagrams one by one. EMSGSIZE (segments over the route's MTU)
 * limits later runs to smaller segments; EIO or EINVAL (no checksum
 * offload, a kernel without UDP GSO) ends merging on the socket. */
static void send_refused(struct udp_assoc *a, int fd, uint16_t *max_seg, const struct msghdr *h,
                         int err, struct udp_sent *sent)
{
    size_t seg = h->msg_iov[0].iov_len;
    if (err == EMSGSIZE && seg > 1 && seg - 1 < *max_seg) {
        *max_seg = (uint16_t)(seg - 1);
        log_debug("udp: segments of %zu bytes refused (%s); merging only smaller ones", seg,
                  strerror(err));
    } else if (err == EIO || err == EINVAL) {
        *max_seg = 0;
        log_debug("udp: segmentation offload refused (%s); datagrams go one by one", strerror(err));
    }
    send_split(a, fd, h, sent);
}

/* sendmmsg m[0..n); segs[i] is how many datagrams message i carries (NULL:
 * one each). What the kernel will not take is dropped and counted (UDP:
 * never queue behind a full socket), but a refused merged message, which
 * only exists when max_seg is given, goes again one datagram at a time.
 * What the kernel took is added to sent. false if the socket was full. */
static bool send_msgs(struct udp_assoc *a, int fd, uint16_t *max_seg, struct mmsghdr *m, unsigned n,
                      const uint16_t *segs, struct udp_sent *sent)
{
    unsigned done = 0;
    while (done < n) {
        int rc = sendmmsg(fd, m + done, n - done, MSG_DONTWAIT);
        if (rc >= 0) {
            for (unsigned i = done; i < done + (unsigned)rc; i++)
                sent_add(sent, &m[i].msg_hdr);
            done += (unsigned)rc;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == ENOBUFS || errno == ENOMEM) {
            /* The socket is full: the rest would be refused one syscall
             * at a time. */
            uint64_t lost = 0;
            for (unsigned i = done; i < n; i++)
                lost += segs ? segs[i] : 1;
            stat_add(&a->w->stats.udp_drop_send, lost);
            return false;
        }
        if (segs && segs[done] > 1)
            send_refused(a, fd, max_seg, &m[done].msg_hdr, errno, sent);
        else /* one datagram refused (EMSGSIZE, unreachable, port 0) */
            stat_add(&a->w->stats.udp_drop_send, 1);
        done++;
    }
    return true;
}

/* Send a batch on one of the association's sockets (sock: UDP_SOCK_*).
 * Runs of equal datagrams to one address go out as one message with
 * UDP_SEGMENT, unless merging is off on the socket (gso_max 0). */
static void send_batch(struct udp_assoc *a, int fd, unsigned sock, struct mmsghdr *m, unsigned n,
                       struct udp_sent *sent)
{
    uint16_t *max_seg = &a->gso_max[sock];
    if (*max_seg == 0) {
        (void)send_msgs(a, fd, NULL, m, n, NULL, sent);
        return;
    }
    struct udp_worker *uw = a->w->udp;
    struct udp_gso *g = &uw->gso;
    while (n) {
        unsigned part = MIN(n, (unsigned)UDP_GSO_BATCH);
        if (!send_msgs(a, fd, max_seg, m, udp_gso_coalesce(m, part, *max_seg, g), g->segs, sent)) {
            stat_add(&a->w->stats.udp_drop_send, n - part); /* full: the rest too */
            return;
        }
        m += part;
        n -= part;
    }
}

/* Queue one datagram for destination d into the per-family out batch. */
static void stage(struct udp_worker *uw, unsigned *nout, const struct addr *d, uint8_t *data,
                  size_t len)
{
    int f = fam_index(d->family);
    unsigned k = nout[f]++;
    uw->out_iov[f][k] = (struct iovec){data, len};
    socklen_t sl = addr_to_sockaddr(d, &uw->out_name[f][k]);
    uw->out[f][k].msg_hdr = (struct msghdr){.msg_name = &uw->out_name[f][k],
                                            .msg_namelen = sl,
                                            .msg_iov = &uw->out_iov[f][k],
                                            .msg_iovlen = 1};
}

/* One batch of client datagrams on its way to their destinations. */
struct up_batch {
    unsigned n[2];        /* staged, per family */
    struct udp_sent sent; /* what the kernel took */
    struct udp_budget bw;
};

/* Send what is staged for one family (f: fam_index). */
static void up_flush(struct udp_assoc *a, struct up_batch *b, int f)
{
    if (!b->n[f])
        return;
    struct udp_worker *uw = a->w->udp;
    struct io *io = f ? &a->out6 : &a->out4;
    send_batch(a, io->fd, f ? UDP_SOCK_OUT6 : UDP_SOCK_OUT4, uw->out[f], b->n[f], &b->sent);
    b->n[f] = 0;
}

static void up_send(struct udp_assoc *a, struct up_batch *b)
{
    udp_budget_end(a, &b->bw);
    up_flush(a, b, 0);
    up_flush(a, b, 1);
    if (b->sent.n)
        udp_count(a, true, b->sent.n, b->sent.bytes);
    b->sent.n = b->sent.bytes = 0;
}

/* Admit a client datagram for d (name: what the client named, or NULL)
 * into the batch: the destination must be allowed, its socket open, and
 * its payload within the bandwidth budget. */
static void up_stage(struct udp_assoc *a, struct up_batch *b, const struct addr *d,
                     const char *name, uint8_t *data, size_t len, uint64_t now)
{
    if (!udp_budget_fits(a, &b->bw, len))
        return;
    struct udp_dest *x = dest_get(a, d, now, name);
    if (!x)
        return;
    if (x->via) {
        udp_budget_take(&b->bw, len);
        udp_parent_send(x->via, NULL, d, d->port, data, len);
        return;
    }
    if (out_fd(a, d->family) < 0) {
        stat_add(&a->w->stats.udp_drop_send, 1);
        return;
    }
    udp_budget_take(&b->bw, len);
    int f = fam_index(d->family);
    if (b->n[f] == UDP_OUT) /* a coalesced run filled the batch */
        up_flush(a, b, f);
    stage(a->w->udp, b->n, d, data, len);
}

/* ---- names --------------------------------------------------------------- */

/* What a name entry holds of the association's: its lookup and the
 * datagrams waiting for it (the table frees the entry). */
static void name_drop(struct udp_name *nm)
{
    resolver_cancel(nm->q);
    while (nm->head) {
        struct udp_pkt *p = nm->head;
        nm->head = p->next;
        nm->a->queued--;
        free(p);
    }
}

/* Names are not destinations (the address they resolve to is, and is
 * counted then); their number is bounded all the same, by forgetting the
 * oldest settled name. */
static struct udp_name *name_new(struct udp_assoc *a, const char *name, uint32_t hash)
{
    struct udp_name *nm =
        udp_names_add(&a->names, name, hash, a->cfg->destinations + 16, name_drop);
    if (nm)
        nm->a = a;
    return nm;
}

static void name_settle(struct udp_name *nm, int status, const struct dns_answer *ans, uint64_t now)
{
    nm->status = status == DNS_OK && ans->n ? DNS_OK : (status == DNS_OK ? DNS_NOTFOUND : status);
    if (nm->status == DNS_OK) {
        nm->addr = ans->a[0];
        nm->addr.port = 0;
        nm->expires_ms = now + nm->a->cfg->idle_ms;
    } else {
        nm->expires_ms = now + UDP_NAME_FAIL_MS;
    }
}

/* Send (or drop) what waited for the name, in batches. Runs from the
 * resolver's task, never inside a handler, so the scratch batch is free. */
static void name_flush(struct udp_name *nm, uint64_t now)
{
    struct udp_assoc *a = nm->a;
    while (nm->head) {
        if (nm->status != DNS_OK) {
            struct udp_pkt *p = nm->head;
            nm->head = p->next;
            a->queued--;
            stat_add(&a->w->stats.udp_drop_dns, 1);
            free(p);
            continue;
        }
        uint64_t want = 0;
        unsigned k = 0;
        for (struct udp_pkt *p = nm->head; p && k < UDP_BATCH; p = p->next, k++)
            want += p->len;
        struct up_batch b = {.bw = udp_budget_start(a, want)};
        struct udp_pkt *p = nm->head;
        for (unsigned i = 0; i < k; i++, p = p->next) {
            struct addr d = nm->addr;
            d.port = p->port;
            up_stage(a, &b, &d, nm->name, p->data, p->len, now);
        }
        up_send(a, &b);
        for (unsigned i = 0; i < k; i++) {
            p = nm->head;
            nm->head = p->next;
            a->queued--;
            free(p);
        }
    }
    nm->tail = NULL;
}

static void on_name(void *arg, int status, const struct dns_answer *ans)
{
    struct udp_name *nm = arg;
    struct udp_assoc *a = nm->a;
    uint64_t now = loop_now(&a->w->loop);
    nm->q = NULL;
    name_settle(nm, status, ans, now);
    name_flush(nm, now);
    udp_activity(a);
}

/* Hold a datagram until its name's lookup answers (bounded by udp.queue). */
static void name_hold(struct udp_assoc *a, struct udp_name *nm, uint16_t port, const uint8_t *data,
                      size_t len)
{
    if (a->queued >= a->cfg->queue) {
        stat_add(&a->w->stats.udp_drop_queue, 1);
        return;
    }
    struct udp_pkt *p = malloc(sizeof(*p) + len);
    if (!p) {
        stat_add(&a->w->stats.udp_drop_queue, 1);
        return;
    }
    p->next = NULL;
    p->port = port;
    p->len = (uint16_t)len;
    memcpy(p->data, data, len);
    if (nm->tail)
        nm->tail->next = p;
    else
        nm->head = p;
    nm->tail = p;
    a->queued++;
}

/* A datagram for a name. true with *d set (port included) when the name's
 * address is known, from the association's own table or the resolver's
 * cache: the caller sends it with the rest of its batch. Otherwise the
 * datagram is held while the name resolves, or dropped, and false. */
static bool name_addr(struct udp_assoc *a, const char *name, uint16_t port, const uint8_t *data,
                      size_t len, uint64_t now, struct addr *d)
{
    uint32_t hash = udp_names_hash(&a->names, name);
    struct udp_name *nm = udp_names_find(&a->names, name, hash);
    if (!nm || (nm->status != UDP_NAME_RESOLVING && nm->expires_ms <= now)) {
        /* Unknown or stale: look it up again. */
        int status;
        struct dns_answer ans;
        if (resolver_lookup_now(&a->w->dns, name, 0, &status, &ans)) {
            if (!nm && !(nm = name_new(a, name, hash))) {
                stat_add(&a->w->stats.udp_drop_queue, 1);
                return false;
            }
            name_settle(nm, status, &ans, now);
        } else {
            /* A lookup is only started for a datagram that can wait for it. */
            if (a->queued >= a->cfg->queue || (!nm && !(nm = name_new(a, name, hash)))) {
                stat_add(&a->w->stats.udp_drop_queue, 1);
                return false;
            }
            nm->status = UDP_NAME_RESOLVING;
            nm->q = resolver_query(&a->w->dns, name, 0, on_name, nm);
            if (!nm->q) {
                nm->status = DNS_FAILED;
                nm->expires_ms = now + UDP_NAME_FAIL_MS;
            }
        }
    }
    if (nm->status == UDP_NAME_RESOLVING) {
        name_hold(a, nm, port, data, len);
        return false;
    }
    if (nm->status != DNS_OK) {
        stat_add(&a->w->stats.udp_drop_dns, 1);
        return false;
    }
    *d = nm->addr;
    d->port = port;
    return true;
}

/* ---- client -> destinations ------------------------------------------ */

/* One datagram from the client (alone, or one of a coalesced run), from
 * its own address: check it, and stage its payload for the destination
 * its header names. true if it was well formed. */
static bool up_datagram(struct udp_assoc *a, struct up_batch *b, const struct addr *from,
                        uint8_t *p, size_t len, uint64_t now)
{
    struct worker_stats *st = &a->w->stats;
    /* Through a tunnel the cap is the payload's (tunnel.c checks it), as
     * at the tunnel's far end; the header adds at most 262 bytes. */
    if (len > a->cfg->max_datagram + (a->tunnel_possible || a->piped ? 262u : 0u)) {
        stat_add(&st->udp_drop_size, 1);
        return false;
    }
    struct socks5_addr dst;
    ssize_t h = socks5_parse_udp(p, len, &dst);
    if (h < 0) {
        stat_add(h == SOCKS5_E_UDP_FRAG ? &st->udp_drop_frag : &st->udp_drop_malformed, 1);
        return false;
    }
    if (a->piped && len - (size_t)h > a->cfg->max_datagram) { /* a payload's cap */
        stat_add(&st->udp_drop_size, 1);
        return false;
    }
    if (!a->port_fixed) {
        /* The first well-formed datagram fixes the client's port. */
        a->client.port = from->port;
        a->port_fixed = true;
    }
    struct addr d;
    const char *name = NULL;
    if (!socks5_addr_to_addr(&dst, &d) &&
        addr_parse_ip(dst.u.domain, dst.port, &d) != 0) { /* a literal IP is an address */
        if (a->parents_possible &&
            udp_parent_name(a, &b->bw, dst.u.domain, dst.port, p + h, len - (size_t)h, now))
            return true;
        if (!name_addr(a, dst.u.domain, dst.port, p + h, len - (size_t)h, now, &d))
            return true;
        name = dst.u.domain;
    }
    up_stage(a, b, &d, name, p + h, len - (size_t)h, now);
    return true;
}

static void on_client(struct io *io, uint32_t events)
{
    (void)events;
    struct udp_assoc *a = container_of(io, struct udp_assoc, cio);
    struct udp_worker *uw = a->w->udp;
    struct worker_stats *st = &a->w->stats;
    uint64_t now = loop_now(&a->w->loop);
    bool moved = false;
    size_t handled = 0;

    for (int round = 0; round < UDP_ROUNDS && handled < UDP_YIELD && a->cio.fd >= 0; round++) {
        in_prepare(uw, 0);
        int n = recvmmsg(a->cio.fd, uw->in, UDP_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        struct up_batch b = {.bw = {UINT64_MAX, 0}};
        if (a->bw_allow) {
            uint64_t want = 0;
            for (int i = 0; i < n; i++)
                want += uw->in[i].msg_len; /* headers included: an upper bound */
            b.bw = udp_budget_start(a, want);
        }
        for (int i = 0; i < n; i++) {
            uint8_t *p = uw->bufs + (size_t)i * UDP_BUF;
            size_t len = uw->in[i].msg_len, seg;
            size_t count = in_count(uw, i, &seg);
            handled += count;
            struct addr from;
            addr_from_sockaddr(&from, (struct sockaddr *)&uw->in_name[i]);
            if (!same_ip(&from, &a->client) || (a->port_fixed && from.port != a->client.port)) {
                stat_add(&st->udp_drop_source, count);
                continue;
            }
            if (uw->in[i].msg_hdr.msg_flags & MSG_TRUNC) {
                stat_add(&st->udp_drop_size, count);
                continue;
            }
            size_t off = 0;
            do { /* once for a datagram alone, empty ones included */
                size_t one = MIN(seg, len - off);
                moved |= up_datagram(a, &b, &from, p + off, one, now);
                off += one;
            } while (off < len);
        }
        up_send(a, &b);
        if (n < UDP_BATCH)
            break;
    }
    if (moved)
        udp_activity(a);
}

/* ---- destinations -> client ------------------------------------------ */

/* Replies staged for the client (uw->out[0]), and what they carry. */
struct down_batch {
    unsigned k;
    struct udp_sent sent;
};

static void down_flush(struct udp_assoc *a, struct down_batch *b)
{
    if (!b->k)
        return;
    struct udp_worker *uw = a->w->udp;
    b->sent = (struct udp_sent){0, 0, uw->out_iov[0], uw->out_hdr};
    if (a->piped) {
        for (unsigned i = 0; i < b->k; i++) {
            const struct iovec *v = &uw->out_iov[0][i];
            if (a->pipe.deliver(a->pipe.arg, v->iov_base, v->iov_len))
                sent_add(&b->sent, &uw->out[0][i].msg_hdr); /* a drop is counted there */
        }
    } else {
        send_batch(a, a->cio.fd, UDP_SOCK_CLIENT, uw->out[0], b->k, &b->sent);
    }
    if (b->sent.n)
        udp_count(a, false, b->sent.n, b->sent.bytes);
    b->k = 0;
}

/* Stage a reply of h + len bytes at p (header written) for the client. */
static void down_stage(struct udp_assoc *a, struct down_batch *b, struct sockaddr_storage *cname,
                       socklen_t clen, uint8_t *p, size_t h, size_t len)
{
    struct udp_worker *uw = a->w->udp;
    if (b->k == UDP_OUT)
        down_flush(a, b);
    uw->out_iov[0][b->k] = (struct iovec){p, h + len};
    uw->out_hdr[b->k] = (uint8_t)h;
    uw->out[0][b->k].msg_hdr = (struct msghdr){
        .msg_name = cname, .msg_namelen = clen, .msg_iov = &uw->out_iov[0][b->k], .msg_iovlen = 1};
    b->k++;
}

/* A coalesced run of count replies of seg bytes (the last may be shorter)
 * from one address: each is copied behind its own header, UDP_OUT at a
 * time, and sent. true if any was. */
static bool down_run(struct udp_assoc *a, struct down_batch *b, struct udp_budget *bw,
                     const struct addr *from, const uint8_t *data, size_t len, size_t seg,
                     struct sockaddr_storage *cname, socklen_t clen)
{
    struct udp_worker *uw = a->w->udp;
    struct worker_stats *st = &a->w->stats;
    if (!uw->expand && !(uw->expand = malloc(UDP_EXPAND))) {
        stat_add(&st->udp_drop_send, (len + seg - 1) / seg);
        return false;
    }
    size_t h = socks5_udp_header_len(from);
    uint8_t hdr[UDP_HEADROOM];
    socks5_write_udp_header(hdr, h, from);
    bool moved = false;
    down_flush(a, b); /* the copy area is free while nothing is staged */
    size_t used = 0;
    for (size_t off = 0; off < len; off += seg) {
        size_t n = MIN(seg, len - off);
        if ((a->piped ? 0 : h) + n > a->cfg->max_datagram) {
            stat_add(&st->udp_drop_size, 1);
            continue;
        }
        if (!udp_budget_fits(a, bw, n))
            continue;
        udp_budget_take(bw, n);
        if (b->k == UDP_OUT) {
            down_flush(a, b);
            used = 0;
        }
        uint8_t *p = uw->expand + used;
        memcpy(p, hdr, h);
        memcpy(p + h, data + off, n);
        used += h + n;
        down_stage(a, b, cname, clen, p, h, n);
        moved = true;
    }
    down_flush(a, b);
    return moved;
}

static void from_dests(struct udp_assoc *a, struct io *io)
{
    struct udp_worker *uw = a->w->udp;
    struct worker_stats *st = &a->w->stats;
    uint64_t now = loop_now(&a->w->loop);
    struct sockaddr_storage cname;
    socklen_t clen = addr_to_sockaddr(&a->client, &cname);
    bool moved = false;
    size_t handled = 0;

    for (int round = 0; round < UDP_ROUNDS && handled < UDP_YIELD && io->fd >= 0; round++) {
        in_prepare(uw, UDP_HEADROOM);
        int n = recvmmsg(io->fd, uw->in, UDP_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        struct udp_budget bw = {UINT64_MAX, 0};
        if (a->bw_allow) {
            uint64_t want = 0;
            for (int i = 0; i < n; i++)
                want += uw->in[i].msg_len;
            bw = udp_budget_start(a, want);
        }
        struct down_batch b = {.k = 0};
        for (int i = 0; i < n; i++) {
            uint8_t *payload = uw->bufs + (size_t)i * UDP_BUF + UDP_HEADROOM;
            size_t len = uw->in[i].msg_len, seg;
            size_t count = in_count(uw, i, &seg);
            handled += count;
            struct addr from;
            addr_from_sockaddr(&from, (struct sockaddr *)&uw->in_name[i]);
            struct udp_dest *d = a->port_fixed ? udp_dests_find_host(&a->dests, &from) : NULL;
            if (!d || d->via) { /* sent to through a parent: not from here */
                stat_add(&st->udp_drop_unknown, count);
                continue;
            }
            if (uw->in[i].msg_hdr.msg_flags & MSG_TRUNC) {
                stat_add(&st->udp_drop_size, count);
                continue;
            }
            if (count > 1) {
                if (down_run(a, &b, &bw, &from, payload, len, seg, &cname, clen)) {
                    d->last_ms = now; /* relayed: the destination is in use */
                    moved = true;
                }
                continue;
            }
            size_t h = socks5_udp_header_len(&from);
            if ((a->piped ? 0 : h) + len > a->cfg->max_datagram) {
                stat_add(&st->udp_drop_size, 1);
                continue;
            }
            if (!udp_budget_fits(a, &bw, len))
                continue;
            udp_budget_take(&bw, len);
            d->last_ms = now;
            uint8_t *p = payload - h;
            socks5_write_udp_header(p, h, &from);
            down_stage(a, &b, &cname, clen, p, h, len);
            moved = true;
        }
        udp_budget_end(a, &bw);
        down_flush(a, &b);
        if (n < UDP_BATCH)
            break;
    }
    if (moved)
        udp_activity(a);
}

static void on_out4(struct io *io, uint32_t events)
{
    (void)events;
    from_dests(container_of(io, struct udp_assoc, out4), io);
}

static void on_out6(struct io *io, uint32_t events)
{
    (void)events;
    from_dests(container_of(io, struct udp_assoc, out6), io);
}

/* ---- lifecycle ----------------------------------------------------------- */

/* Forget destinations and names unused for udp.idle: capacity comes back,
 * the outgoing sockets (and so the source ports) stay. */
static void on_sweep(struct timer *t)
{
    struct udp_assoc *a = container_of(t, struct udp_assoc, sweep);
    uint64_t now = loop_now(&a->w->loop);
    udp_dests_sweep(&a->dests, now, a->cfg->idle_ms);
    udp_names_expire(&a->names, now, name_drop);
    udp_parent_sweep(a, now);
    udp_tunnel_sweep(a, now);
    loop_timer_arm(&a->w->loop, &a->sweep, MAX(250u, a->cfg->idle_ms / 4));
}

static void on_release(struct release *r)
{
    free(container_of(r, struct udp_assoc, rel));
}

/* Bind fd on local's address, on any port or on one from cfg's
 * udp.ports (from a random start: rng): 0 with *bound set, or -errno. */
static int bind_relay(const struct config_udp *cfg, uint64_t rng, int fd, const struct addr *local,
                      struct addr *bound)
{
    struct addr b = *local;
    struct sockaddr_storage ss;
    int rc = -EADDRINUSE;
    if (cfg->port_lo) {
        uint32_t span = (uint32_t)(cfg->port_hi - cfg->port_lo) + 1;
        uint32_t start = (uint32_t)(rng % span);
        for (uint32_t i = 0; i < span && rc == -EADDRINUSE; i++) {
            b.port = (uint16_t)(cfg->port_lo + (start + i) % span);
            socklen_t sl = addr_to_sockaddr(&b, &ss);
            rc = bind(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
        }
    } else {
        b.port = 0;
        socklen_t sl = addr_to_sockaddr(&b, &ss);
        rc = bind(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
    }
    return rc ? rc : sock_local_addr(fd, bound);
}

/* The address a reply names for a relay bound at bound (udp.advertise). */
static void advertised(const struct config_udp *cfg, const struct addr *bound, struct addr *bnd)
{
    *bnd = *bound;
    if (cfg->advertise.family) {
        *bnd = cfg->advertise;
        bnd->port = bound->port;
    }
}

int udp_relay_bind(struct worker *w, const struct config_udp *cfg, int fd, const struct addr *local,
                   struct addr *bnd)
{
    uint64_t rng = clock_us() ^ ((uint64_t)w->id << 48) ^ (uint64_t)(uintptr_t)&fd;
    struct addr bound;
    int rc = bind_relay(cfg, rng * 0x9e3779b97f4a7c15ull, fd, local, &bound);
    if (!rc)
        advertised(cfg, &bound, bnd);
    return rc;
}

/* Bind the client-facing socket on the address the client reached us on,
 * on any port or on one from udp.ports. */
static int bind_client_socket(struct udp_assoc *a, const struct addr *local, struct addr *bound)
{
    int fd = udp_socket(a->cfg, local->family);
    if (fd < 0)
        return fd;
    int rc = bind_relay(a->cfg, rng_next(a->w->udp), fd, local, bound);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

/* A new association of w under conf for client (its port comes with
 * its first datagram), not counted, with no socket yet; NULL without
 * memory. */
static struct udp_assoc *assoc_new(struct worker *w, const struct config *conf,
                                   unsigned listen_index, const struct addr *client,
                                   const struct udp_owner *owner)
{
    const struct config_udp *cfg = &conf->udp;
    struct udp_assoc *a = calloc(1, sizeof(*a));
    if (!a || !udp_worker_get(w)) {
        free(a);
        return NULL;
    }
    a->w = w;
    a->conf = conf;
    a->cfg = cfg;
    a->listen_index = listen_index;
    a->client = *client;
    a->client.port = 0;               /* fixed by the first datagram */
    uint64_t seed = rng_next(w->udp); /* keys the hashes: a client cannot aim at one chain */
    udp_dests_init(&a->dests, seed);
    udp_names_init(&a->names, seed);
    for (unsigned i = 0; i < UDP_SOCKS; i++)
        a->gso_max[i] = cfg->gso && gso_supported() ? UDP_GSO_MAXBYTES : 0;
    a->own = *owner;
    a->parents_possible = udp_parent_possible(conf);
    udp_names_init(&a->pnames, seed ^ 0x5bd1e995u);
    udp_names_init(&a->tflows, seed ^ 0x27d4eb2fu);
    a->tunnel_possible = udp_tunnel_possible(conf);
    io_init(&a->cio, on_client);
    io_init(&a->out4, on_out4);
    io_init(&a->out6, on_out6);
    timer_init(&a->sweep, on_sweep);
    return a;
}

int udp_assoc_open(struct worker *w, const struct config *conf, unsigned listen_index,
                   const struct addr *client, const struct addr *local, struct addr *bnd,
                   const struct udp_owner *owner, struct udp_assoc **out)
{
    const struct config_udp *cfg = &conf->udp;
    _Atomic uint32_t *count = &w->sh->udp_assocs[listen_index % CONFIG_MAX_LISTEN];
    if (atomic_fetch_add(count, 1) >= cfg->associations) {
        atomic_fetch_sub(count, 1);
        stat_add(&w->stats.udp_rejected, 1);
        return UDP_OPEN_LIMIT;
    }
    struct udp_assoc *a = assoc_new(w, conf, listen_index, client, owner);
    if (!a) {
        atomic_fetch_sub(count, 1);
        return -ENOMEM;
    }
    struct addr bound;
    int fd = bind_client_socket(a, local, &bound);
    if (fd < 0 || loop_io_add(&w->loop, &a->cio, fd, EPOLLIN) < 0) {
        if (fd >= 0)
            close(fd);
        free(a);
        atomic_fetch_sub(count, 1);
        return UDP_OPEN_SOCKET;
    }
    advertised(cfg, &bound, bnd);
    loop_timer_arm(&w->loop, &a->sweep, MAX(250u, cfg->idle_ms / 4));
    stat_add(&w->stats.udp_assocs, 1);
    *out = a;
    return 0;
}

int udp_assoc_open_piped(struct worker *w, const struct config *conf, const struct addr *client,
                         const struct udp_owner *owner, const struct udp_pipe *pipe,
                         struct udp_assoc **out)
{
    struct udp_assoc *a = assoc_new(w, conf, 0, client, owner);
    if (!a)
        return -ENOMEM;
    a->piped = true;
    a->pipe = *pipe;
    /* This host is the egress: no parent, no tunnel. */
    a->parents_possible = a->tunnel_possible = false;
    loop_timer_arm(&w->loop, &a->sweep, MAX(250u, conf->udp.idle_ms / 4));
    stat_add(&w->stats.udp_assocs, 1);
    *out = a;
    return 0;
}

void udp_assoc_input(struct udp_assoc *a, const uint8_t *p, size_t n)
{
    struct udp_worker *uw = a->w->udp;
    if (n > UDP_BUF) {
        stat_add(&a->w->stats.udp_drop_size, 1);
        return;
    }
    /* Into the scratch space (free outside the handlers): the relay may
     * write in front of or over what it forwards. */
    memcpy(uw->bufs, p, n);
    struct addr from = a->client; /* the pipe's: nothing else can send into it */
    struct up_batch b = {.bw = udp_budget_start(a, n)};
    bool moved = up_datagram(a, &b, &from, uw->bufs, n, loop_now(&a->w->loop));
    up_send(a, &b);
    if (moved)
        udp_activity(a);
}

void udp_assoc_set_bw(struct udp_assoc *a, uint32_t (*allow)(void *arg, uint32_t want),
                      void (*spend)(void *arg, uint32_t n))
{
    a->bw_allow = allow;
    a->bw_spend = spend;
}

static void close_io(struct loop *l, struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        loop_io_del(l, io);
        close(fd);
    }
}

void udp_assoc_set_acct(struct udp_assoc *a, struct acct_ctr *ctr)
{
    a->acct = ctr;
}

void udp_assoc_close(struct udp_assoc *a, uint64_t *bytes_up, uint64_t *bytes_down)
{
    if (!a)
        return;
    struct loop *l = &a->w->loop;
    if (bytes_up)
        *bytes_up = a->up;
    if (bytes_down)
        *bytes_down = a->down;
    loop_timer_stop(l, &a->sweep);
    close_io(l, &a->cio);
    close_io(l, &a->out4);
    close_io(l, &a->out6);
    udp_tunnel_close_all(a);
    udp_parent_close_all(a);
    udp_names_fini(&a->names, name_drop);
    udp_dests_fini(&a->dests);
    if (a->piped)
        a->pipe.close(a->pipe.arg);
    else
        atomic_fetch_sub(&a->w->sh->udp_assocs[a->listen_index % CONFIG_MAX_LISTEN], 1);
    /* This batch of events may still hold one for our sockets (the loop
     * skips it, seeing fd -1): the loop frees after the batch. */
    loop_release(l, &a->rel, on_release);
}
