/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent.c: an association's ways through SOCKS5 parents (parent.h). Each
 * struct udp_parent is one association ferry holds with one parent: it
 * resolves the parent's host when it is a name, connects (from the
 * outbound's source), drives the client side of the handshake
 * (proto/parent, UDP ASSOCIATE) over the control connection, then sends
 * datagrams to the relay address the parent answered (BND; 0.0.0.0 or ::
 * means the control connection's peer) from a UDP socket connected to it,
 * so the kernel lets in nothing else.
 *
 * The parent path moves one datagram per syscall (the direct path's
 * batching stays in udp.c); what waits for the parent is copied, within
 * the association's udp.queue. It never ends the client's association
 * itself: a failure closes the parent's sockets, drops what waited, and
 * asks the owner from a task (udp_owner.on_end). Every object here is
 * freed after the batch that closed it (loop_release).
 */
#include "udp/parent.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "acl/rules.h"
#include "config/config.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/parent.h"
#include "proto/socks5.h"
#include "udp/owner.h"
#include "util/compiler.h"

#define UP_WARN_MS   10000 /* at most one "cannot carry UDP" line per this long */
#define UP_HDR_MAX   262   /* RSV FRAG ATYP LEN NAME(255) PORT */
#define UP_RECV_MAX  256   /* datagrams from a parent per wakeup */
#define UP_NAMES_PAD 16    /* names judged beyond udp.destinations (a cache) */

enum up_phase {
    UP_RESOLVE,   /* the parent's host name */
    UP_CONNECT,   /* TCP to the parent */
    UP_HANDSHAKE, /* UDP ASSOCIATE (proto/parent) */
    UP_READY,     /* datagrams go to the parent's relay */
    UP_DEAD,      /* failed or gone: the client's association ends */
};

/* A datagram waiting for its parent's association, header written. */
struct up_pkt {
    struct up_pkt *next;
    uint32_t len;  /* header and payload */
    uint16_t hlen; /* header */
    uint8_t data[];
};

struct udp_parent {
    struct udp_parent *next; /* in the association's list */
    struct udp_assoc *a;
    uint16_t ob;                     /* the outbound asked for (a pool, or the parent) */
    const struct config_outbound *o; /* the SOCKS5 parent */
    uint8_t phase;                   /* enum up_phase */
    struct io ctl;                   /* the control connection */
    struct io udp;                   /* connected to the parent's relay */
    struct dns_answer peers;         /* the parent's addresses, tried in turn */
    uint8_t next_peer;
    struct addr peer; /* the one connecting or connected to */
    struct dns_req *q;
    struct timer timer; /* connect_timeout, until UP_READY */
    struct task end;    /* tells the owner, out of any handler */
    const char *why;    /* for the owner's log */
    struct release rel;
    struct up_pkt *head, *tail;
    uint32_t held;
    struct parent_hs hs;
    bool tunnel; /* a tunnel outbound: datagrams go on flows (tunnel.h) */
};

/* ---- which way ---------------------------------------------------------- */

bool udp_parent_possible(const struct config *cfg)
{
    if (cfg->default_outbound < cfg->noutbounds &&
        cfg->outbounds[cfg->default_outbound].kind != OUTBOUND_KIND_DIRECT)
        return true;
    for (uint32_t i = 0; cfg->acl && i < cfg->acl->n; i++) {
        int32_t v = cfg->acl->rules[i].via_index;
        if (v >= 0 && (uint32_t)v < cfg->noutbounds &&
            cfg->outbounds[v].kind != OUTBOUND_KIND_DIRECT)
            return true;
    }
    return false;
}

bool udp_parent_direct(const struct udp_assoc *a, uint16_t ob)
{
    return ob >= a->conf->noutbounds || a->conf->outbounds[ob].kind == OUTBOUND_KIND_DIRECT;
}

/* One line per UP_WARN_MS for the whole process: a busy client would
 * otherwise write one per datagram. */
static bool warn_now(uint64_t now)
{
    static _Atomic uint64_t next;
    uint64_t n = atomic_load_explicit(&next, memory_order_relaxed);
    return now >= n && atomic_compare_exchange_strong_explicit(
                           &next, &n, now + UP_WARN_MS, memory_order_relaxed, memory_order_relaxed);
}

/* The SOCKS5 parent that carries outbound ob: itself, or a pool's first
 * member that is a SOCKS5 parent and is up (not in back-off). NULL with a
 * reason otherwise. */
static const struct config_outbound *parent_of(const struct udp_assoc *a, uint16_t ob, uint64_t now,
                                               const char **why)
{
    const struct config *cfg = a->conf;
    const struct config_outbound *o = &cfg->outbounds[ob];
    if (o->kind == OUTBOUND_KIND_SOCKS5)
        return o;
    if (o->kind != OUTBOUND_KIND_POOL) {
        *why = "UDP can only go through a SOCKS5 parent";
        return NULL;
    }
    for (uint8_t i = 0; i < o->nmembers; i++) {
        uint16_t m = o->members[i];
        if (m >= cfg->noutbounds || cfg->outbounds[m].kind != OUTBOUND_KIND_SOCKS5)
            continue;
        const struct outbound_health *h = cfg->ob_health ? &cfg->ob_health[m] : NULL;
        if (h && (!atomic_load_explicit(&h->up, memory_order_relaxed) ||
                  atomic_load_explicit(&h->down_until_ms, memory_order_relaxed) > now))
            continue;
        return &cfg->outbounds[m];
    }
    *why = "the pool has no SOCKS5 member up (UDP can only go through a SOCKS5 parent)";
    return NULL;
}

/* ---- the end ------------------------------------------------------------ */

static void close_io(struct loop *l, struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        loop_io_del(l, io);
        close(fd);
    }
}

/* Drop what waits for p, counting each as reason. */
static void drop_held(struct udp_parent *p, stat_t *reason)
{
    while (p->head) {
        struct up_pkt *k = p->head;
        p->head = k->next;
        free(k);
        stat_add(reason, 1);
    }
    p->tail = NULL;
    p->a->queued -= p->held;
    p->held = 0;
}

static void on_end_task(struct task *t)
{
    struct udp_parent *p = container_of(t, struct udp_parent, end);
    struct udp_assoc *a = p->a;
    udp_end(a, p->why); /* may close a, and p with it */
}

/* The parent association failed or went away (what: for the log; why:
 * for the owner's): close it, drop what waited, and end the client's
 * association from a task. */
static void parent_end(struct udp_parent *p, const char *why, const char *what)
{
    struct udp_assoc *a = p->a;
    struct loop *l = &a->w->loop;
    if (p->phase == UP_DEAD)
        return;
    p->phase = UP_DEAD;
    resolver_cancel(p->q);
    p->q = NULL;
    loop_timer_stop(l, &p->timer);
    close_io(l, &p->ctl);
    close_io(l, &p->udp);
    drop_held(p, &a->w->stats.udp_drop_parent);
    char c[ADDR_STRLEN];
    log_warn("udp: association of %s: outbound %s (parent %s port %u): %s; the association ends",
             addr_format_ip(&a->client, c, sizeof(c)), p->o->name, p->o->host, p->o->port, what);
    p->why = why;
    loop_defer(l, &p->end);
}

static void on_release(struct release *r)
{
    free(container_of(r, struct udp_parent, rel));
}

static void parent_free(struct udp_parent *p)
{
    struct loop *l = &p->a->w->loop;
    resolver_cancel(p->q);
    p->q = NULL;
    loop_timer_stop(l, &p->timer);
    loop_task_cancel(&p->end);
    close_io(l, &p->ctl);
    close_io(l, &p->udp);
    drop_held(p, &p->a->w->stats.udp_drop_parent);
    loop_release(l, &p->rel, on_release);
}

/* ---- sending ------------------------------------------------------------ */

/* The header for the parent: name (NULL: d's address) and port. */
static size_t write_header(uint8_t *hdr, const char *name, const struct addr *d, uint16_t port)
{
    if (!name) {
        struct addr x = *d;
        x.port = port;
        return socks5_write_udp_header(hdr, UP_HDR_MAX, &x);
    }
    size_t n = strlen(name);
    hdr[0] = hdr[1] = hdr[2] = 0;
    hdr[3] = SOCKS5_ATYP_DOMAIN;
    hdr[4] = (uint8_t)n;
    memcpy(hdr + 5, name, n);
    hdr[5 + n] = (uint8_t)(port >> 8);
    hdr[6 + n] = (uint8_t)port;
    return 7 + n;
}

/* One datagram (h header bytes, then len payload bytes) to the relay. */
static void send_now(struct udp_parent *p, const uint8_t *hdr, size_t h, const uint8_t *data,
                     size_t len)
{
    struct udp_assoc *a = p->a;
    struct iovec v[2] = {{(void *)(uintptr_t)hdr, h}, {(void *)(uintptr_t)data, len}};
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
    ssize_t n;
    do
        n = sendmsg(p->udp.fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        stat_add(&a->w->stats.udp_drop_send, 1);
        return;
    }
    udp_count(a, true, 1, len);
}

void udp_parent_send(struct udp_parent *p, const char *name, const struct addr *d, uint16_t port,
                     const uint8_t *data, size_t len)
{
    struct udp_assoc *a = p->a;
    if (p->phase == UP_DEAD) {
        stat_add(&a->w->stats.udp_drop_parent, 1);
        return;
    }
    if (p->tunnel) {
        udp_tunnel_send(a, p->ob, name, d, port, data, len);
        return;
    }
    uint8_t hdr[UP_HDR_MAX];
    size_t h = write_header(hdr, name, d, port);
    if (p->phase == UP_READY) {
        send_now(p, hdr, h, data, len);
        return;
    }
    struct up_pkt *k = a->queued < a->cfg->queue ? malloc(sizeof(*k) + h + len) : NULL;
    if (!k) {
        stat_add(&a->w->stats.udp_drop_queue, 1);
        return;
    }
    k->next = NULL;
    k->len = (uint32_t)(h + len);
    k->hlen = (uint16_t)h;
    memcpy(k->data, hdr, h);
    memcpy(k->data + h, data, len);
    if (p->tail)
        p->tail->next = k;
    else
        p->head = k;
    p->tail = k;
    p->held++;
    a->queued++;
}

/* The parent is ready: what waited goes now. */
static void flush_held(struct udp_parent *p)
{
    struct udp_assoc *a = p->a;
    while (p->head) {
        struct up_pkt *k = p->head;
        p->head = k->next;
        send_now(p, k->data, k->hlen, k->data + k->hlen, k->len - k->hlen);
        free(k);
        p->held--;
        a->queued--;
    }
    p->tail = NULL;
}

/* ---- the parent's datagrams ------------------------------------------------ */

/* One datagram of n bytes from the relay: checked, and sent to the client
 * as it is (its header names the source, as the client expects). */
static bool from_parent(struct udp_parent *p, uint8_t *buf, size_t n)
{
    struct udp_assoc *a = p->a;
    struct worker_stats *st = &a->w->stats;
    if (n > a->cfg->max_datagram) {
        stat_add(&st->udp_drop_size, 1);
        return false;
    }
    struct socks5_addr src;
    ssize_t h = socks5_parse_udp(buf, n, &src);
    if (h < 0) {
        stat_add(h == SOCKS5_E_UDP_FRAG ? &st->udp_drop_frag : &st->udp_drop_malformed, 1);
        return false;
    }
    size_t len = n - (size_t)h;
    struct udp_budget bw = udp_budget_start(a, len);
    if (!udp_budget_fits(a, &bw, len))
        return false;
    udp_budget_take(&bw, len);
    udp_budget_end(a, &bw);
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&a->client, &ss);
    if (sendto(a->cio.fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&ss, sl) < 0) {
        stat_add(&st->udp_drop_send, 1);
        return false;
    }
    udp_count(a, false, 1, len);
    return true;
}

static void on_udp(struct io *io, uint32_t events)
{
    (void)events;
    struct udp_parent *p = container_of(io, struct udp_parent, udp);
    static _Thread_local uint8_t buf[65536];
    bool moved = false;
    for (int i = 0; i < UP_RECV_MAX && p->udp.fd >= 0; i++) {
        ssize_t n = recv(p->udp.fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;               /* empty, or an ICMP error of an earlier datagram */
        if (!p->a->port_fixed) { /* cannot be: the client sent first */
            stat_add(&p->a->w->stats.udp_drop_unknown, 1);
            continue;
        }
        if ((size_t)n > sizeof(buf)) {
            stat_add(&p->a->w->stats.udp_drop_size, 1);
            continue;
        }
        moved |= from_parent(p, buf, (size_t)n);
    }
    if (moved)
        udp_activity(p->a);
}

/* ---- the handshake ------------------------------------------------------ */

static void ctl_want(struct udp_parent *p, bool out)
{
    (void)loop_io_mod(&p->a->w->loop, &p->ctl, EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0));
}

/* The parent answered: its relay is BND, or the control connection's
 * peer when BND is 0.0.0.0 or ::. Connect the UDP socket there. */
static void parent_ready(struct udp_parent *p)
{
    struct udp_assoc *a = p->a;
    struct addr relay;
    if (!parent_bnd(&p->hs, &relay)) {
        parent_end(p, "parent-bad-reply", "the parent named its relay by name");
        return;
    }
    if (addr_is_any(&relay)) {
        uint16_t port = relay.port;
        relay = p->peer;
        relay.port = port;
    }
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&relay, &ss);
    if (!sl || connect(p->udp.fd, (struct sockaddr *)&ss, sl) < 0) {
        parent_end(p, "parent-failed", "cannot reach the parent's UDP relay");
        return;
    }
    loop_timer_stop(&a->w->loop, &p->timer);
    p->phase = UP_READY;
    ctl_want(p, false);
    char r[ADDR_STRLEN];
    log_debug("udp: outbound %s: the parent relays at %s", p->o->name,
              addr_format(&relay, r, sizeof(r)));
    flush_held(p);
}

/* Move the handshake's bytes until it waits for the socket, is done, or
 * failed. */
static void hs_pump(struct udp_parent *p)
{
    int fd = p->ctl.fd;
    for (;;) {
        const uint8_t *out;
        size_t n = parent_pending(&p->hs, &out);
        if (n) {
            ssize_t k = send(fd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0 && errno == EAGAIN) {
                ctl_want(p, true);
                return;
            }
            if (k < 0) {
                parent_end(p, "parent-error", "sending to the parent failed");
                return;
            }
            parent_sent(&p->hs, (size_t)k);
            continue;
        }
        uint8_t in[512];
        ssize_t got = recv(fd, in, sizeof(in), MSG_PEEK | MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN) {
            ctl_want(p, false);
            return;
        }
        if (got <= 0) {
            parent_end(p, "parent-closed", "the parent closed the connection during the handshake");
            return;
        }
        size_t used = parent_feed(&p->hs, in, (size_t)got);
        if (used)
            (void)recv(fd, in, used, MSG_DONTWAIT);
        if (parent_state(&p->hs) == PARENT_FAILED) {
            parent_end(p, p->hs.fail == PARENT_FAIL_AUTH ? "parent-auth-failed" : "parent-refused",
                       p->hs.reason[0] ? p->hs.reason : "the parent refused UDP ASSOCIATE");
            return;
        }
        if (parent_state(&p->hs) == PARENT_DONE) {
            parent_ready(p);
            return;
        }
        if (!used)
            return;
    }
}

static void ctl_connect_next(struct udp_parent *p, int err);

/* The UDP socket datagrams go to the parent from: on the control
 * connection's local address, any port (*local: where it is bound). */
static int udp_open(struct udp_parent *p, struct addr *local)
{
    struct sockaddr_storage ss;
    if (sock_local_addr(p->ctl.fd, local) < 0)
        return -1;
    local->port = 0;
    socklen_t sl = addr_to_sockaddr(local, &ss);
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || sock_local_addr(fd, local) < 0 ||
        loop_io_add(&p->a->w->loop, &p->udp, fd, EPOLLIN) < 0) {
        close(fd);
        return -1;
    }
    return 0;
}

/* TCP is up (or failed: the next address is tried): open the UDP socket
 * and ask the parent to relay for it. */
static void hs_start(struct udp_parent *p)
{
    int err = sock_error(p->ctl.fd);
    if (err) {
        ctl_connect_next(p, err);
        return;
    }
    struct addr local;
    if (udp_open(p, &local) < 0) {
        parent_end(p, "udp-socket", "cannot open a UDP socket for the parent");
        return;
    }
    p->phase = UP_HANDSHAKE;
    if (parent_init(&p->hs, PARENT_SOCKS5, PARENT_CMD_UDP_ASSOCIATE, p->o->user, p->o->pass, NULL,
                    &local, local.port)) {
        parent_end(p, "parent-request", "the credentials cannot be sent to this parent");
        return;
    }
    hs_pump(p);
}

/* The control connection: the handshake, then only its end matters
 * (whatever the parent sends on it is read and discarded). */
static void on_ctl(struct io *io, uint32_t events)
{
    (void)events;
    struct udp_parent *p = container_of(io, struct udp_parent, ctl);
    if (p->phase == UP_CONNECT) {
        hs_start(p);
        return;
    }
    if (p->phase == UP_HANDSHAKE) {
        hs_pump(p);
        return;
    }
    char sink[512];
    for (int i = 0; i < 64 && p->ctl.fd >= 0; i++) {
        ssize_t n = recv(p->ctl.fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        parent_end(p, "parent-closed", "the parent closed the association's control connection");
        return;
    }
}

/* ---- reaching the parent ------------------------------------------------ */

/* A TCP socket to to, from the outbound's source, connecting. */
static int ctl_socket(const struct config_outbound *o, const struct addr *to)
{
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(to, &ss);
    if (!sl)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (o->source.device[0] && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->source.device,
                                          (socklen_t)strlen(o->source.device)) < 0)
        rc = -errno;
    if (!rc && o->source.addr.family == to->family) {
        struct sockaddr_storage src;
        struct addr s = o->source.addr;
        s.port = 0;
        socklen_t l = addr_to_sockaddr(&s, &src);
        if (bind(fd, (struct sockaddr *)&src, l) < 0)
            rc = -errno;
    }
    if (!rc && connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS)
        rc = -errno;
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

static void ctl_connect_next(struct udp_parent *p, int err)
{
    struct loop *l = &p->a->w->loop;
    close_io(l, &p->ctl);
    while (p->next_peer < p->peers.n) {
        p->peer = p->peers.a[p->next_peer++];
        p->peer.port = p->o->port;
        int fd = ctl_socket(p->o, &p->peer);
        if (fd >= 0 && (err = loop_io_add(l, &p->ctl, fd, EPOLLOUT | EPOLLRDHUP)) < 0)
            close(fd);
        else if (fd < 0)
            err = fd;
        else {
            p->phase = UP_CONNECT;
            return;
        }
    }
    char what[96];
    snprintf(what, sizeof(what), "cannot connect: %s", strerror(err < 0 ? -err : EHOSTUNREACH));
    parent_end(p, "parent-unreachable", what);
}

static void on_parent_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct udp_parent *p = arg;
    p->q = NULL;
    if (status != DNS_OK || !ans->n) {
        parent_end(p, "parent-unresolved", "the parent's name did not resolve");
        return;
    }
    p->peers = *ans;
    p->next_peer = 0;
    ctl_connect_next(p, -EHOSTUNREACH);
}

static void on_timeout(struct timer *t)
{
    struct udp_parent *p = container_of(t, struct udp_parent, timer);
    parent_end(p, "parent-timeout", "no answer within connect_timeout");
}

/* Start: the parent's address (resolved first if a name), then TCP. */
static void parent_open(struct udp_parent *p)
{
    struct udp_assoc *a = p->a;
    struct worker *w = a->w;
    uint32_t budget =
        p->o->connect_timeout_ms ? p->o->connect_timeout_ms : a->conf->connect_timeout_ms;
    loop_timer_arm(&w->loop, &p->timer, budget ? budget : 10000);
    if (addr_parse_ip(p->o->host, p->o->port, &p->peers.a[0]) == 0) {
        p->peers.n = 1;
        ctl_connect_next(p, -EHOSTUNREACH);
        return;
    }
    int status;
    struct dns_answer ans;
    if (resolver_lookup_now(&w->dns, p->o->host, p->o->port, &status, &ans)) {
        on_parent_dns(p, status, &ans);
        return;
    }
    p->phase = UP_RESOLVE;
    p->q = resolver_query(&w->dns, p->o->host, p->o->port, on_parent_dns, p);
    if (!p->q)
        parent_end(p, "no-memory", "out of memory");
}

struct udp_parent *udp_parent_get(struct udp_assoc *a, uint16_t ob)
{
    struct worker_stats *st = &a->w->stats;
    for (struct udp_parent *p = a->parents; p; p = p->next)
        if (p->ob == ob)
            return p;
    if (a->conf->outbounds[ob].kind == OUTBOUND_KIND_REJECT) {
        stat_add(&st->udp_drop_denied, 1);
        return NULL;
    }
    uint64_t now = loop_now(&a->w->loop);
    const char *why = NULL;
    bool tunnel = udp_tunnel_carries(a->conf, ob);
    const struct config_outbound *o =
        tunnel ? &a->conf->outbounds[ob] : parent_of(a, ob, now, &why);
    if (!o) {
        stat_add(&st->udp_drop_parent, 1);
        if (warn_now(now))
            log_warn("udp: a datagram's way out is outbound %s (%s): %s; dropped "
                     "(ferry_udp_dropped_total{reason=\"parent\"})",
                     a->conf->outbounds[ob].name, outbound_kind_name(a->conf->outbounds[ob].kind),
                     why);
        return NULL;
    }
    struct udp_parent *p = calloc(1, sizeof(*p));
    if (!p) {
        stat_add(&st->udp_drop_parent, 1);
        return NULL;
    }
    p->a = a;
    p->ob = ob;
    p->o = o;
    io_init(&p->ctl, on_ctl);
    io_init(&p->udp, on_udp);
    timer_init(&p->timer, on_timeout);
    task_init(&p->end, on_end_task);
    p->next = a->parents;
    a->parents = p;
    p->tunnel = tunnel;
    if (tunnel)
        p->phase = UP_READY; /* its flows open on their own */
    else
        parent_open(p);
    return p;
}

/* ---- names -------------------------------------------------------------- */

/* A name entry leaves the table: one destination less if it was one. */
static void pname_drop(struct udp_name *nm)
{
    if (nm->via)
        nm->a->npnames--;
}

/* Judge name at port (no entry for it yet): NULL with *handled false when
 * it goes the address way (resolved here), a parent that resolves names,
 * or NULL with *handled true when the datagram is dropped (counted). */
static struct udp_parent *pname_judge(struct udp_assoc *a, const char *name, uint16_t port,
                                      bool *handled)
{
    uint16_t ob = a->conf->default_outbound;
    enum udp_verdict v = udp_route(a, name, NULL, port, &ob);
    *handled = true;
    if (v == UDP_DENY) {
        stat_add(&a->w->stats.udp_drop_denied, 1);
        return NULL;
    }
    if (v == UDP_NEED_IP || udp_parent_direct(a, ob)) {
        *handled = false;
        return NULL;
    }
    struct udp_parent *p = udp_parent_get(a, ob);
    if (p && !p->tunnel && !p->o->remote_dns) {
        *handled = false; /* socks5: resolved here, the address judged and sent */
        return NULL;
    }
    return p;
}

bool udp_parent_name(struct udp_assoc *a, struct udp_budget *bw, const char *name, uint16_t port,
                     const uint8_t *data, size_t len, uint64_t now)
{
    char key[8 + 256];
    snprintf(key, sizeof(key), "%u %s", port, name);
    uint32_t hash = udp_names_hash(&a->pnames, key);
    struct udp_name *nm = udp_names_find(&a->pnames, key, hash);
    if (!nm) {
        bool handled;
        struct udp_parent *p = pname_judge(a, name, port, &handled);
        if (handled && !p)
            return true;
        if (p && a->dests.n + a->npnames >= a->cfg->destinations) {
            stat_add(&a->w->stats.udp_drop_dest_limit, 1);
            return true;
        }
        nm = udp_names_add(&a->pnames, key, hash, 2 * a->cfg->destinations + UP_NAMES_PAD,
                           pname_drop);
        if (!nm) {
            stat_add(&a->w->stats.udp_drop_queue, 1);
            return true;
        }
        nm->a = a;
        nm->status = DNS_OK;
        nm->via = p;
        if (p)
            a->npnames++;
    }
    nm->expires_ms = now + a->cfg->idle_ms;
    if (!nm->via)
        return false;
    if (udp_budget_fits(a, bw, len)) {
        udp_budget_take(bw, len);
        udp_parent_send(nm->via, name, NULL, port, data, len);
    }
    return true;
}

void udp_parent_sweep(struct udp_assoc *a, uint64_t now)
{
    udp_names_expire(&a->pnames, now, pname_drop);
}

void udp_parent_close_all(struct udp_assoc *a)
{
    udp_names_fini(&a->pnames, pname_drop);
    while (a->parents) {
        struct udp_parent *p = a->parents;
        a->parents = p->next;
        parent_free(p);
    }
}
