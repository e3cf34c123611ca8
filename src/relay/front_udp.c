/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_udp.c: UDP port forwards (front_udp.h). Each forward is one UDP
 * socket on its listen address; a source address seen for the first time
 * (within udp.associations) gets an association: a flow (udp_tunnel.h) to
 * the forward's HOST:PORT, whose replies go back to that source from the
 * forward's socket. Datagrams keep their boundaries (empty ones too); the
 * limits are [udp]'s: udp.max_datagram (the payload) both ways, the queue
 * toward the tunnel (udp.tunnel_queue, udp.tunnel_queue_bytes) per
 * association, udp.idle per source (a sweep, never a timer per datagram).
 * A flow that ends (idle at the server, refused, the tunnel lost) ends its
 * association; the source's next datagram opens a new one.
 *
 * The forwards live on worker 0 (thread-local state: only that thread
 * touches it). A reload closes them all and opens the new configuration's:
 * sources start over.
 */
#include "relay/front_udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "log/log.h"
#include "relay/udp_tunnel.h"
#include "udp/tunnel.h"
#include "util/compiler.h"

#define UF_BUCKETS 256
#define UF_RECV    64 /* datagrams per wakeup */

struct uf_fwd;

/* One source address: its association. */
struct uf_src {
    struct uf_src *next; /* in its bucket */
    struct uf_fwd *fw;
    struct addr peer;
    struct ut_flow *fl;
    struct udp_tq q;
    uint64_t last_ms;
};

struct uf_fwd {
    struct io io;
    struct worker *w;
    const struct config *cfg;
    const struct config_udp_forward *cf;
    struct uf_src *b[UF_BUCKETS];
    uint32_t n;
    struct release rel;
};

struct uf_set {
    struct worker *w;
    struct wcfg *wc; /* held while the forwards use it */
    struct uf_fwd *fw[CONFIG_UDP_FORWARDS_MAX];
    uint32_t n;
    struct timer sweep;
};

static _Thread_local struct uf_set *uf_cur;

static uint32_t peer_hash(const struct addr *a)
{
    uint32_t h = 2166136261u ^ a->port;
    for (size_t i = 0; i < (a->family == AF_INET6 ? 16u : 4u); i++)
        h = (h ^ a->ip[i]) * 16777619u;
    return h % UF_BUCKETS;
}

static bool same_peer(const struct addr *x, const struct addr *y)
{
    return x->family == y->family && x->port == y->port &&
           memcmp(x->ip, y->ip, x->family == AF_INET6 ? 16 : 4) == 0;
}

static void src_free(struct uf_src *s)
{
    struct uf_fwd *fw = s->fw;
    struct uf_src **pp = &fw->b[peer_hash(&s->peer)];
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    fw->n--;
    stat_add(&fw->w->stats.udp_tun_closed, 1);
    ut_flow_close(s->fl);
    free(s);
}

static void src_deliver(void *arg, const uint8_t *data, size_t len)
{
    struct uf_src *s = arg;
    struct uf_fwd *fw = s->fw;
    struct worker_stats *st = &fw->w->stats;
    if (len > fw->cfg->udp.max_datagram) {
        stat_add(&st->udp_drop_size, 1);
        return;
    }
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&s->peer, &ss);
    if (sendto(fw->io.fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&ss, sl) < 0) {
        stat_add(&st->udp_drop_send, 1);
        return;
    }
    s->last_ms = loop_now(&fw->w->loop);
    stat_add(&st->udp_out, 1);
    stat_add(&st->udp_bytes_out, len);
}

static void src_end(void *arg, bool lost, const char *why)
{
    struct uf_src *s = arg;
    char p[ADDR_STRLEN];
    log_write(lost ? LOG_INFO : LOG_DEBUG, "udp forward %s:%u: source %s: %s", s->fw->cf->host,
              s->fw->cf->port, addr_format(&s->peer, p, sizeof(p)), why);
    src_free(s);
}

static const struct ut_user uf_user = {src_deliver, src_end};

/* The association of peer, opened now if it is new (NULL: over the
 * limit, or it could not open; counted). */
static struct uf_src *src_get(struct uf_fwd *fw, const struct addr *peer)
{
    struct worker_stats *st = &fw->w->stats;
    uint32_t h = peer_hash(peer);
    for (struct uf_src *s = fw->b[h]; s; s = s->next)
        if (same_peer(&s->peer, peer))
            return s;
    const struct config *cfg = fw->cfg;
    if (fw->n >= cfg->udp.associations) {
        stat_add(&st->udp_rejected, 1);
        return NULL;
    }
    struct uf_src *s = calloc(1, sizeof(*s));
    if (!s) {
        stat_add(&st->udp_drop_queue, 1);
        return NULL;
    }
    s->fw = fw;
    s->peer = *peer;
    s->q.max_n = cfg->udp.tunnel_queue;
    s->q.max_bytes = cfg->udp.tunnel_bytes;
    s->fl = ut_flow_open(fw->w, cfg, cfg->default_outbound, fw->cf->host, fw->cf->port, &s->q,
                         &uf_user, s);
    if (!s->fl) {
        free(s);
        stat_add(&st->udp_drop_tunnel, 1);
        return NULL;
    }
    s->next = fw->b[h];
    fw->b[h] = s;
    fw->n++;
    stat_add(&st->udp_assocs, 1);
    stat_add(&st->udp_tun_opened, 1);
    return s;
}

static void on_datagrams(struct io *io, uint32_t events)
{
    (void)events;
    struct uf_fwd *fw = container_of(io, struct uf_fwd, io);
    struct worker_stats *st = &fw->w->stats;
    static _Thread_local uint8_t buf[65536];
    for (int i = 0; i < UF_RECV && fw->io.fd >= 0; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(fw->io.fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
                             (struct sockaddr *)&ss, &sl);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        if ((size_t)n > fw->cfg->udp.max_datagram) {
            stat_add(&st->udp_drop_size, 1);
            continue;
        }
        struct addr peer;
        addr_from_sockaddr(&peer, (struct sockaddr *)&ss);
        struct uf_src *s = src_get(fw, &peer);
        if (!s)
            continue;
        s->last_ms = loop_now(&fw->w->loop);
        int why = ut_flow_send(s->fl, buf, (size_t)n);
        if (why) {
            stat_add((stat_t *)((char *)st + why), 1);
            continue;
        }
        stat_add(&st->udp_in, 1);
        stat_add(&st->udp_bytes_in, (uint64_t)n);
    }
}

/* Forget the sources idle for udp.idle. */
static void on_sweep(struct timer *t)
{
    struct uf_set *set = container_of(t, struct uf_set, sweep);
    const struct config *cfg = set->wc->cfg;
    uint64_t now = loop_now(&set->w->loop);
    for (uint32_t i = 0; i < set->n; i++)
        for (uint32_t b = 0; b < UF_BUCKETS; b++)
            for (struct uf_src *s = set->fw[i]->b[b], *next; s; s = next) {
                next = s->next;
                if (now - s->last_ms >= cfg->udp.idle_ms)
                    src_free(s);
            }
    loop_timer_arm(&set->w->loop, &set->sweep, MAX(250u, cfg->udp.idle_ms / 4));
}

static void fw_free(struct release *r)
{
    free(container_of(r, struct uf_fwd, rel));
}

static struct uf_fwd *fw_open(struct uf_set *set, const struct config_udp_forward *cf)
{
    const struct config *cfg = set->wc->cfg;
    char a[ADDR_STRLEN];
    addr_format(&cf->listen, a, sizeof(a));
    if (!ut_carries(cfg, cfg->default_outbound)) {
        log_error("udp forward %s -> %s:%u: the default outbound is no HTTP/2 tunnel (an https "
                  "outbound with mux h2 or auto): not opened",
                  a, cf->host, cf->port);
        return NULL;
    }
    struct uf_fwd *fw = calloc(1, sizeof(*fw));
    int fd = fw ? socket(cf->listen.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) : -1;
    int one = 1;
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&cf->listen, &ss);
    if (fd >= 0 && cf->listen.family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) < 0) {
        log_error("udp forward %s -> %s:%u: cannot bind: %s", a, cf->host, cf->port,
                  strerror(errno));
        if (fd >= 0)
            close(fd);
        free(fw);
        return NULL;
    }
    fw->w = set->w;
    fw->cfg = cfg;
    fw->cf = cf;
    io_init(&fw->io, on_datagrams);
    if (loop_io_add(&set->w->loop, &fw->io, fd, EPOLLIN) < 0) {
        close(fd);
        free(fw);
        return NULL;
    }
    log_info("udp forward %s -> %s:%u through outbound %s", a, cf->host, cf->port,
             cfg->outbounds[cfg->default_outbound].name);
    return fw;
}

void front_udp_stop(struct worker *w)
{
    struct uf_set *set = uf_cur;
    if (!set || set->w != w)
        return;
    loop_timer_stop(&w->loop, &set->sweep);
    for (uint32_t i = 0; i < set->n; i++) {
        struct uf_fwd *fw = set->fw[i];
        for (uint32_t b = 0; b < UF_BUCKETS; b++)
            while (fw->b[b])
                src_free(fw->b[b]);
        int fd = fw->io.fd;
        loop_io_del(&w->loop, &fw->io);
        close(fd);
        loop_release(&w->loop, &fw->rel, fw_free);
    }
    worker_cfg_release(w, set->wc);
    free(set);
    uf_cur = NULL;
}

void front_udp_apply(struct worker *w)
{
    if (w->id != 0)
        return;
    front_udp_stop(w);
    const struct config *cfg = w->cur->cfg;
    if (!cfg->udp.nforwards)
        return;
    struct uf_set *set = calloc(1, sizeof(*set));
    if (!set)
        return;
    set->w = w;
    set->wc = worker_cfg_hold(w);
    timer_init(&set->sweep, on_sweep);
    for (uint32_t i = 0; i < cfg->udp.nforwards; i++) {
        struct uf_fwd *fw = fw_open(set, &cfg->udp.forwards[i]);
        if (fw)
            set->fw[set->n++] = fw;
    }
    uf_cur = set;
    loop_timer_arm(&w->loop, &set->sweep, MAX(250u, cfg->udp.idle_ms / 4));
}
