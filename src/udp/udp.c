/*
 * udp.c: the UDP ASSOCIATE relay. Two handlers per association, one per
 * direction, each draining its socket in batches of UDP_BATCH datagrams
 * with recvmmsg() and answering with one sendmmsg() per batch. Payloads are
 * never copied: client datagrams are forwarded from the receive buffer past
 * their SOCKS header, and replies are received UDP_HEADROOM bytes into
 * their buffer so the header can be written in front of them.
 *
 * Destinations live in a small array per association (the limit defaults to
 * 100 and a client usually talks to a handful); idleness is accounted
 * coarsely, by a sweep timer, never per datagram.
 */
#include "udp/udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/socks5.h"

#define UDP_BATCH        32
#define UDP_ROUNDS       8  /* batches per wakeup before yielding to other work */
#define UDP_HEADROOM     24 /* room for the longest SOCKS UDP header (22) */
#define UDP_BUF          (65536 + UDP_HEADROOM)
#define UDP_SOCKBUF      (1 << 20)
#define UDP_NAME_FAIL_MS 5000 /* a name that did not resolve is not retried sooner */

/* Per-worker scratch space, shared by every association of the worker (one
 * handler runs at a time). */
struct udp_worker {
    uint8_t *bufs; /* UDP_BATCH * UDP_BUF */
    struct mmsghdr in[UDP_BATCH];
    struct iovec in_iov[UDP_BATCH];
    struct sockaddr_storage in_name[UDP_BATCH];
    struct mmsghdr out[2][UDP_BATCH]; /* [0] IPv4, [1] IPv6 */
    struct iovec out_iov[2][UDP_BATCH];
    struct sockaddr_storage out_name[2][UDP_BATCH];
    uint64_t rng;
};

struct udp_dest {
    struct addr a;
    uint64_t last_ms;
};

/* A datagram waiting for its destination name to resolve. */
struct udp_pkt {
    struct udp_pkt *next;
    uint16_t port;
    uint16_t len;
    uint8_t data[];
};

struct udp_name {
    struct udp_name *next;
    struct udp_assoc *a;
    struct dns_req *q; /* while resolving */
    int status;        /* 1 resolving, DNS_OK, or a failure */
    struct addr addr;  /* port 0 */
    uint64_t expires_ms;
    struct udp_pkt *head, *tail;
    char name[];
};

struct udp_assoc {
    struct worker *w;
    const struct config_udp *cfg; /* the control session's; outlives us */
    unsigned listen_index;
    struct io cio;        /* client-facing */
    struct io out4, out6; /* outgoing, per family, opened on first use */
    struct addr client;
    bool port_fixed;
    struct udp_dest *dests;
    uint32_t ndests, cap;
    struct udp_name *names;
    uint32_t nnames, queued;
    struct timer sweep;
    struct task free_task;
    uint64_t up, down;
    void (*on_activity)(void *arg);
    bool (*allow)(void *arg, const char *name, const struct addr *ip);
    void *arg;
};

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
    uw->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)w->id << 32) ^ (uint64_t)(uintptr_t)uw;
    w->udp = uw;
    return uw;
}

void udp_worker_fini(struct worker *w)
{
    struct udp_worker *uw = w->udp;
    if (!uw)
        return;
    free(uw->bufs);
    free(uw);
    w->udp = NULL;
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

static int udp_socket(int family)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (family == AF_INET6) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    }
    set_bufs(fd);
    return fd;
}

static void activity(struct udp_assoc *a)
{
    if (a->on_activity)
        a->on_activity(a->arg);
}

/* ---- destinations ------------------------------------------------------ */

static struct udp_dest *dest_find(struct udp_assoc *a, const struct addr *d)
{
    for (uint32_t i = 0; i < a->ndests; i++)
        if (addr_equal(&a->dests[i].a, d))
            return &a->dests[i];
    return NULL;
}

/* A reply is accepted from any port of a host the client sent to. */
static struct udp_dest *dest_find_host(struct udp_assoc *a, const struct addr *src)
{
    struct udp_dest *d = dest_find(a, src);
    if (d)
        return d;
    for (uint32_t i = 0; i < a->ndests; i++)
        if (same_ip(&a->dests[i].a, src))
            return &a->dests[i];
    return NULL;
}

static struct udp_dest *dest_get(struct udp_assoc *a, const struct addr *d, uint64_t now,
                                 const char *name)
{
    struct udp_dest *x = dest_find(a, d);
    if (x) {
        x->last_ms = now;
        return x;
    }
    if (a->allow && !a->allow(a->arg, name, d)) {
        stat_add(&a->w->stats.udp_drop_denied, 1);
        return NULL;
    }
    if (a->ndests >= a->cfg->destinations) {
        stat_add(&a->w->stats.udp_drop_dest_limit, 1);
        return NULL;
    }
    if (a->ndests == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 4;
        if (cap > a->cfg->destinations)
            cap = a->cfg->destinations;
        struct udp_dest *v = realloc(a->dests, cap * sizeof(*v));
        if (!v) {
            stat_add(&a->w->stats.udp_drop_dest_limit, 1);
            return NULL;
        }
        a->dests = v;
        a->cap = cap;
    }
    x = &a->dests[a->ndests++];
    x->a = *d;
    x->last_ms = now;
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
    int fd = udp_socket(family);
    if (fd < 0)
        return fd;
    int rc = loop_io_add(&a->w->loop, io, fd, EPOLLIN);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

/* sendmmsg the whole batch; what the kernel will not take is dropped and
 * counted (UDP: never queue behind a full socket). */
static void send_batch(struct udp_assoc *a, int fd, struct mmsghdr *m, unsigned n)
{
    unsigned done = 0;
    while (done < n) {
        int rc = sendmmsg(fd, m + done, n - done, MSG_DONTWAIT);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            /* one datagram refused (EAGAIN, EMSGSIZE, unreachable): drop it
             * and carry on with the rest */
            stat_add(&a->w->stats.udp_drop_send, 1);
            done++;
            continue;
        }
        done += (unsigned)rc;
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

/* Send one datagram now (used for datagrams released by a DNS answer). */
static void send_one(struct udp_assoc *a, const struct addr *d, const uint8_t *data, size_t len)
{
    int fd = out_fd(a, d->family);
    if (fd < 0) {
        stat_add(&a->w->stats.udp_drop_send, 1);
        return;
    }
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(d, &ss);
    if (sendto(fd, data, len, MSG_DONTWAIT, (struct sockaddr *)&ss, sl) < 0)
        stat_add(&a->w->stats.udp_drop_send, 1);
    else
        a->up += len;
}

/* ---- names --------------------------------------------------------------- */

static void name_flush(struct udp_name *nm, uint64_t now)
{
    struct udp_assoc *a = nm->a;
    while (nm->head) {
        struct udp_pkt *p = nm->head;
        nm->head = p->next;
        a->queued--;
        if (nm->status == DNS_OK) {
            struct addr d = nm->addr;
            d.port = p->port;
            if (dest_get(a, &d, now, nm->name)) {
                stat_add(&a->w->stats.udp_in, 1);
                send_one(a, &d, p->data, p->len);
            }
        } else {
            stat_add(&a->w->stats.udp_drop_dns, 1);
        }
        free(p);
    }
    nm->tail = NULL;
}

static void on_name(void *arg, int status, const struct dns_answer *ans)
{
    struct udp_name *nm = arg;
    struct udp_assoc *a = nm->a;
    uint64_t now = loop_now(&a->w->loop);
    nm->q = NULL;
    nm->status = status == DNS_OK && ans->n ? DNS_OK : (status == DNS_OK ? DNS_NOTFOUND : status);
    if (nm->status == DNS_OK) {
        nm->addr = ans->a[0];
        nm->addr.port = 0;
        nm->expires_ms = now + a->cfg->idle_ms;
    } else {
        nm->expires_ms = now + UDP_NAME_FAIL_MS;
    }
    name_flush(nm, now);
    activity(a);
}

static void name_free(struct udp_name *nm)
{
    resolver_cancel(nm->q);
    while (nm->head) {
        struct udp_pkt *p = nm->head;
        nm->head = p->next;
        nm->a->queued--;
        free(p);
    }
    free(nm);
}

/* Forget the oldest name that is not being resolved; false if all are. */
static bool name_evict(struct udp_assoc *a)
{
    struct udp_name **victim = NULL;
    for (struct udp_name **pp = &a->names; *pp; pp = &(*pp)->next)
        if ((*pp)->status != 1)
            victim = pp; /* names are pushed at the head: the last one is the oldest */
    if (!victim)
        return false;
    struct udp_name *nm = *victim;
    *victim = nm->next;
    a->nnames--;
    name_free(nm);
    return true;
}

/* A datagram for a name: send it if the name is known, else hold it
 * (bounded by udp.queue) until the lookup answers. */
static void to_name(struct udp_assoc *a, const char *name, uint16_t port, const uint8_t *data,
                    size_t len, uint64_t now)
{
    struct udp_name *nm;
    for (nm = a->names; nm; nm = nm->next)
        if (strcmp(nm->name, name) == 0)
            break;
    if (nm && nm->status != 1 && nm->expires_ms <= now) {
        nm->status = 1; /* stale: look it up again */
        nm = NULL;
    }
    if (!nm || nm->status == 1) {
        if (a->queued >= a->cfg->queue) {
            stat_add(&a->w->stats.udp_drop_queue, 1);
            return;
        }
        if (!nm) {
            for (nm = a->names; nm; nm = nm->next)
                if (strcmp(nm->name, name) == 0)
                    break;
        }
        if (!nm) {
            /* Names are not destinations (the address they resolve to is,
             * and is counted then); their list is bounded all the same,
             * by forgetting the oldest settled name. */
            if (a->nnames >= a->cfg->destinations + 16 && !name_evict(a)) {
                stat_add(&a->w->stats.udp_drop_queue, 1);
                return;
            }
            size_t nl = strlen(name);
            nm = calloc(1, sizeof(*nm) + nl + 1);
            if (!nm) {
                stat_add(&a->w->stats.udp_drop_queue, 1);
                return;
            }
            memcpy(nm->name, name, nl + 1);
            nm->a = a;
            nm->status = 1;
            nm->next = a->names;
            a->names = nm;
            a->nnames++;
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
        if (!nm->q && nm->status == 1) {
            int status;
            struct dns_answer ans;
            if (resolver_lookup_now(&a->w->dns, name, 0, &status, &ans)) {
                on_name(nm, status, &ans);
                return;
            }
            nm->q = resolver_query(&a->w->dns, name, 0, on_name, nm);
            if (!nm->q) {
                nm->status = DNS_FAILED;
                nm->expires_ms = now + UDP_NAME_FAIL_MS;
                name_flush(nm, now);
            }
        }
        return;
    }
    if (nm->status != DNS_OK) {
        stat_add(&a->w->stats.udp_drop_dns, 1);
        return;
    }
    struct addr d = nm->addr;
    d.port = port;
    if (dest_get(a, &d, now, name)) {
        stat_add(&a->w->stats.udp_in, 1);
        send_one(a, &d, data, len);
    }
}

/* ---- client -> destinations ------------------------------------------ */

static void on_client(struct io *io, uint32_t events)
{
    (void)events;
    struct udp_assoc *a = container_of(io, struct udp_assoc, cio);
    struct udp_worker *uw = a->w->udp;
    struct worker_stats *st = &a->w->stats;
    uint64_t now = loop_now(&a->w->loop);
    bool moved = false;

    for (int round = 0; round < UDP_ROUNDS && a->cio.fd >= 0; round++) {
        for (int i = 0; i < UDP_BATCH; i++) {
            uw->in_iov[i] = (struct iovec){uw->bufs + (size_t)i * UDP_BUF, UDP_BUF};
            uw->in[i].msg_hdr = (struct msghdr){.msg_name = &uw->in_name[i],
                                                .msg_namelen = sizeof(uw->in_name[i]),
                                                .msg_iov = &uw->in_iov[i],
                                                .msg_iovlen = 1};
        }
        int n = recvmmsg(a->cio.fd, uw->in, UDP_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        unsigned nout[2] = {0, 0};
        for (int i = 0; i < n; i++) {
            uint8_t *p = uw->bufs + (size_t)i * UDP_BUF;
            size_t len = uw->in[i].msg_len;
            struct addr from;
            addr_from_sockaddr(&from, (struct sockaddr *)&uw->in_name[i]);
            if (!same_ip(&from, &a->client) || (a->port_fixed && from.port != a->client.port)) {
                stat_add(&st->udp_drop_source, 1);
                continue;
            }
            if (len > a->cfg->max_datagram || (uw->in[i].msg_hdr.msg_flags & MSG_TRUNC)) {
                stat_add(&st->udp_drop_size, 1);
                continue;
            }
            struct socks5_addr dst;
            ssize_t h = socks5_parse_udp(p, len, &dst);
            if (h < 0) {
                stat_add(h == SOCKS5_E_UDP_FRAG ? &st->udp_drop_frag : &st->udp_drop_malformed, 1);
                continue;
            }
            if (!a->port_fixed) {
                /* The first well-formed datagram fixes the client's port. */
                a->client.port = from.port;
                a->port_fixed = true;
            }
            moved = true;
            struct addr d;
            if (!socks5_addr_to_addr(&dst, &d)) {
                /* A literal IP sent as a name is still an address. */
                if (addr_parse_ip(dst.u.domain, dst.port, &d) != 0) {
                    to_name(a, dst.u.domain, dst.port, p + h, len - (size_t)h, now);
                    continue;
                }
            }
            if (!dest_get(a, &d, now, NULL))
                continue;
            if (out_fd(a, d.family) < 0) {
                stat_add(&st->udp_drop_send, 1);
                continue;
            }
            stat_add(&st->udp_in, 1);
            a->up += len - (size_t)h;
            stage(uw, nout, &d, p + h, len - (size_t)h);
        }
        if (nout[0])
            send_batch(a, a->out4.fd, uw->out[0], nout[0]);
        if (nout[1])
            send_batch(a, a->out6.fd, uw->out[1], nout[1]);
        if (n < UDP_BATCH)
            break;
    }
    if (moved)
        activity(a);
}

/* ---- destinations -> client ------------------------------------------ */

static void from_dests(struct udp_assoc *a, struct io *io)
{
    struct udp_worker *uw = a->w->udp;
    struct worker_stats *st = &a->w->stats;
    uint64_t now = loop_now(&a->w->loop);
    struct sockaddr_storage cname;
    socklen_t clen = addr_to_sockaddr(&a->client, &cname);
    bool moved = false;

    for (int round = 0; round < UDP_ROUNDS && io->fd >= 0; round++) {
        for (int i = 0; i < UDP_BATCH; i++) {
            uw->in_iov[i] = (struct iovec){uw->bufs + (size_t)i * UDP_BUF + UDP_HEADROOM,
                                           UDP_BUF - UDP_HEADROOM};
            uw->in[i].msg_hdr = (struct msghdr){.msg_name = &uw->in_name[i],
                                                .msg_namelen = sizeof(uw->in_name[i]),
                                                .msg_iov = &uw->in_iov[i],
                                                .msg_iovlen = 1};
        }
        int n = recvmmsg(io->fd, uw->in, UDP_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        unsigned k = 0;
        for (int i = 0; i < n; i++) {
            uint8_t *payload = uw->bufs + (size_t)i * UDP_BUF + UDP_HEADROOM;
            size_t len = uw->in[i].msg_len;
            struct addr from;
            addr_from_sockaddr(&from, (struct sockaddr *)&uw->in_name[i]);
            struct udp_dest *d = a->port_fixed ? dest_find_host(a, &from) : NULL;
            if (!d) {
                stat_add(&st->udp_drop_unknown, 1);
                continue;
            }
            size_t h = socks5_udp_header_len(&from);
            if (h + len > a->cfg->max_datagram || (uw->in[i].msg_hdr.msg_flags & MSG_TRUNC)) {
                stat_add(&st->udp_drop_size, 1);
                continue;
            }
            d->last_ms = now;
            uint8_t *p = payload - h;
            socks5_write_udp_header(p, h, &from);
            uw->out_iov[0][k] = (struct iovec){p, h + len};
            uw->out[0][k].msg_hdr = (struct msghdr){.msg_name = &cname,
                                                    .msg_namelen = clen,
                                                    .msg_iov = &uw->out_iov[0][k],
                                                    .msg_iovlen = 1};
            k++;
            a->down += len;
            moved = true;
        }
        if (k) {
            stat_add(&st->udp_out, k);
            send_batch(a, a->cio.fd, uw->out[0], k);
        }
        if (n < UDP_BATCH)
            break;
    }
    if (moved)
        activity(a);
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
    uint32_t keep = 0;
    for (uint32_t i = 0; i < a->ndests; i++)
        if (now - a->dests[i].last_ms < a->cfg->idle_ms)
            a->dests[keep++] = a->dests[i];
    a->ndests = keep;
    struct udp_name **pp = &a->names;
    while (*pp) {
        struct udp_name *nm = *pp;
        if (nm->status != 1 && nm->expires_ms <= now) {
            *pp = nm->next;
            a->nnames--;
            name_free(nm);
        } else {
            pp = &nm->next;
        }
    }
    loop_timer_arm(&a->w->loop, &a->sweep, MAX(250u, a->cfg->idle_ms / 4));
}

static void on_free(struct task *t)
{
    free(container_of(t, struct udp_assoc, free_task));
}

/* Bind the client-facing socket on the address the client reached us on,
 * on any port or on one from udp.ports. */
static int bind_client_socket(struct udp_assoc *a, const struct addr *local, struct addr *bound)
{
    int fd = udp_socket(local->family);
    if (fd < 0)
        return fd;
    struct addr b = *local;
    struct sockaddr_storage ss;
    int rc = -EADDRINUSE;
    if (a->cfg->port_lo) {
        struct udp_worker *uw = a->w->udp;
        uint32_t span = (uint32_t)(a->cfg->port_hi - a->cfg->port_lo) + 1;
        uw->rng ^= uw->rng << 13;
        uw->rng ^= uw->rng >> 7;
        uw->rng ^= uw->rng << 17;
        uint32_t start = (uint32_t)(uw->rng % span);
        for (uint32_t i = 0; i < span && rc == -EADDRINUSE; i++) {
            b.port = (uint16_t)(a->cfg->port_lo + (start + i) % span);
            socklen_t sl = addr_to_sockaddr(&b, &ss);
            rc = bind(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
        }
    } else {
        b.port = 0;
        socklen_t sl = addr_to_sockaddr(&b, &ss);
        rc = bind(fd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
    }
    if (!rc)
        rc = sock_local_addr(fd, bound);
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

int udp_assoc_open(struct worker *w, const struct config_udp *cfg, unsigned listen_index,
                   const struct addr *client, const struct addr *local, struct addr *bnd,
                   void (*on_activity)(void *arg),
                   bool (*allow)(void *arg, const char *name, const struct addr *ip), void *arg,
                   struct udp_assoc **out)
{
    _Atomic uint32_t *count = &w->sh->udp_assocs[listen_index % 64];
    if (atomic_fetch_add(count, 1) >= cfg->associations) {
        atomic_fetch_sub(count, 1);
        stat_add(&w->stats.udp_rejected, 1);
        return UDP_OPEN_LIMIT;
    }
    struct udp_assoc *a = calloc(1, sizeof(*a));
    if (!a || !udp_worker_get(w)) {
        free(a);
        atomic_fetch_sub(count, 1);
        return -ENOMEM;
    }
    a->w = w;
    a->cfg = cfg;
    a->listen_index = listen_index;
    a->client = *client;
    a->client.port = 0; /* fixed by the first datagram */
    a->on_activity = on_activity;
    a->allow = allow;
    a->arg = arg;
    io_init(&a->cio, on_client);
    io_init(&a->out4, on_out4);
    io_init(&a->out6, on_out6);
    timer_init(&a->sweep, on_sweep);
    task_init(&a->free_task, on_free);

    struct addr bound;
    int fd = bind_client_socket(a, local, &bound);
    if (fd < 0 || loop_io_add(&w->loop, &a->cio, fd, EPOLLIN) < 0) {
        if (fd >= 0)
            close(fd);
        free(a);
        atomic_fetch_sub(count, 1);
        return UDP_OPEN_SOCKET;
    }
    *bnd = bound;
    if (cfg->advertise.family) {
        *bnd = cfg->advertise;
        bnd->port = bound.port;
    }
    loop_timer_arm(&w->loop, &a->sweep, MAX(250u, cfg->idle_ms / 4));
    stat_add(&w->stats.udp_assocs, 1);
    *out = a;
    return 0;
}

static void close_io(struct loop *l, struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        loop_io_del(l, io);
        close(fd);
    }
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
    while (a->names) {
        struct udp_name *nm = a->names;
        a->names = nm->next;
        name_free(nm);
    }
    free(a->dests);
    atomic_fetch_sub(&a->w->sh->udp_assocs[a->listen_index % 64], 1);
    /* This iteration's event batch may still hold an event for one of our
     * sockets (the loop skips it, seeing fd -1), so free late. */
    loop_defer(l, &a->free_task);
}
