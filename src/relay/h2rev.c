/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2rev.c: reverse tunnels on HTTP/2 streams (h2rev.h for the protocol).
 * A ferry-listen stream's session owns the listening socket (c->up, state
 * CONN_ST_BIND) and a queue of the ferry-accept stream sessions waiting
 * on it; each connection accepted is handed to the oldest waiting one,
 * which answers 200 and becomes an ordinary relay between the stream and
 * the accepted socket (conn_relay_start), so no round trip is added per
 * reverse connection. Listeners are found by token in a per-worker list:
 * an HTTP/2 connection and all its streams live on one worker.
 *
 * Authorisation is the rules' (acl/): only an allow rule naming cmd
 * reverse lets a bind through; the default action never does, so a
 * server that says nothing about reverse binds allows none.
 *
 * A listener that ends leaves its port held for its user for
 * [http2] reverse_grace (a table shared by all workers, under a lock
 * taken only by binds and ends): the client re-registering after a
 * reconnect gets its port back, and another user's bind of it is refused
 * (403) meanwhile. Other programs on the host are not kept off it.
 *
 * It must not block, nor free a session itself: ends go through
 * conn_close(), and the state is freed by the front's end hook.
 */
#include "relay/h2rev.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl/rules.h"
#include "core/sock.h"
#include "log/log.h"
#include "proto/capsule.h"
#include "proto/h2h1.h"
#include "relay/h2stream.h"
#include "relay/h2udp.h"
#include "relay/session.h"
#include "udp/udp.h"
#include "util/list.h"
#include "util/parse.h"

/* Accept streams one listener keeps waiting at most. */
#define H2REV_WAITING_MAX   64u
/* Connections taken off a listening socket per drive. */
#define H2REV_ACCEPT_BUDGET 32
/* Datagrams taken off a UDP listener's socket per drive. */
#define H2REV_UDP_BUDGET    64

struct h2rev {
    struct conn *c;
    bool listener;
    uint64_t token;       /* listener: its name in ferry-accept paths */
    struct list link;     /* listener: in the worker's list; accept: in its queue */
    struct list waiting;  /* listener: accept streams waiting, oldest first */
    unsigned nwaiting;    /* ... how many */
    struct h2rev *l;      /* accept: the listener it waits on, NULL once handed */
    bool linked;          /* link is in a list */
    bool paused;          /* listener: not polling its socket (nobody waits) */
    struct addr bind;     /* listener: the address asked for */
    bool udp;             /* listener: a UDP socket; accept: a source of one */
    struct list sources;  /* udp listener: the accept streams of its sources */
    unsigned nsources;    /* ... how many (udp.associations at most) */
    struct h2rev *src_of; /* udp accept: the listener whose source it carries */
    struct addr peer;     /* ... that source */
    /* Reverse SOCKS UDP associations (h2rev_assoc): an assoc listener
     * names its control by stream id (sid) and links into its assocs; a
     * handed TCP accept (a control) is in the worker's handed list; both
     * keep their TCP listener's token (ltoken) for its nassocs. */
    bool assoc;
    int32_t sid;
    uint64_t ltoken;
    struct h2rev *ctl;  /* assoc: its control, NULL once that ended */
    struct list assocs; /* control: its associations */
    unsigned nassocs;   /* listener: associations of its connections */
};

/* Ports released, held for their user until a time (clock_ms). */
#define H2REV_HELD_MAX 256
struct h2rev_held {
    struct addr a;
    char user[256]; /* empty: no authenticated user */
    uint64_t until_ms;
    bool udp; /* a UDP port (TCP and UDP ports are apart) */
};
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct h2rev_held held[H2REV_HELD_MAX];
static size_t nheld;

static _Thread_local struct list listeners;
static _Thread_local struct list handed; /* TCP accepts handed a connection */
static _Thread_local bool listeners_ready;
static _Thread_local uint64_t next_token;

static struct list *worker_listeners(void)
{
    if (!listeners_ready) {
        list_init(&listeners);
        list_init(&handed);
        listeners_ready = true;
    }
    return &listeners;
}

bool h2rev_protocol(const char *p)
{
    return !strcmp(p, "ferry-listen") || !strcmp(p, "ferry-accept");
}

/* "/ferry/listen/{tcp,udp}/{addr}/{port}": 0 with x's bind and udp set;
 * "/ferry/listen/assoc/{stream id}": 0 with x's assoc and sid set; or -1. */
static int parse_listen(const char *path, struct h2rev *x)
{
    static const char pre[] = "/ferry/listen/";
    if (strncmp(path, pre, sizeof(pre) - 1) != 0)
        return -1;
    const char *h = path + sizeof(pre) - 1;
    uint64_t sid;
    if (!strncmp(h, "assoc/", 6)) {
        if (parse_u64(h + 6, 1, INT32_MAX, &sid))
            return -1;
        x->assoc = x->udp = true;
        x->sid = (int32_t)sid;
        return 0;
    }
    struct addr *a = &x->bind;
    bool *udp = &x->udp;
    if (strncmp(h, "tcp/", 4) != 0 && strncmp(h, "udp/", 4) != 0)
        return -1;
    *udp = h[0] == 'u';
    h += 4;
    const char *slash = strrchr(h, '/');
    if (!slash || slash == h || (size_t)(slash - h) >= 64)
        return -1;
    char host[64];
    size_t n = (size_t)(slash - h);
    if (n > 2 && h[0] == '[' && h[n - 1] == ']') { /* [v6] as in an authority */
        h++;
        n -= 2;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    uint64_t port;
    if (parse_u64(slash + 1, 0, 65535, &port))
        return -1;
    if (addr_parse_ip(host, (uint16_t)port, a) < 0)
        return -1;
    return 0;
}

/* "/ferry/accept/{token}": 0 with *token set, or -1. */
static int parse_accept(const char *path, uint64_t *token)
{
    static const char pre[] = "/ferry/accept/";
    if (strncmp(path, pre, sizeof(pre) - 1) != 0)
        return -1;
    const char *t = path + sizeof(pre) - 1;
    return parse_u64(t, 1, UINT64_MAX, token) ? -1 : 0;
}

int h2rev_check(struct conn *c)
{
    const struct h2stream_req *r = h2stream_req(c);
    struct h2rev *x = calloc(1, sizeof(*x));
    if (!x) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return -1;
    }
    x->c = c;
    x->listener = !strcmp(r->protocol, "ferry-listen");
    list_init(&x->waiting);
    list_init(&x->sources);
    list_init(&x->assocs);
    c->h2r = x;
    int rc = x->listener ? parse_listen(r->path, x) : parse_accept(r->path, &x->token);
    if (r->bad || rc < 0) {
        conn_fail(c, OUT_BAD_REQUEST, "bad-request");
        return -1;
    }
    if (x->listener && !x->assoc) {
        c->target = x->bind;
        c->dst_port = x->bind.port;
    }
    return 0;
}

/* Only an allow rule naming cmd reverse lets a bind through. */
static bool h2rev_allowed(struct conn *c, const struct addr *a)
{
    const struct config *cfg = conn_cfg(c);
    if (!cfg->acl)
        return false;
    struct acl_req q = {&c->client, c->authed ? c->user : NULL, ACL_CMD_REVERSE, NULL, a, a->port};
    struct acl_result res = {ACL_V_DENY, -1, false};
    acl_check(cfg->acl, &q, &res);
    if (res.rule >= 0 && (uint32_t)res.rule < cfg->acl->n)
        c->rule = cfg->acl->rules[res.rule].name;
    return res.verdict == ACL_V_ALLOW && res.rule >= 0 &&
           (cfg->acl->rules[res.rule].cmds & ACL_CMD_REVERSE);
}

/* Would a bind of a and one of b take the same port? */
static bool h2rev_clash(const struct addr *a, const struct addr *b)
{
    return a->family == b->family && a->port == b->port &&
           (addr_equal(a, b) || addr_is_any(a) || addr_is_any(b));
}

/* Is a held for a user other than user ("" none)? Expired entries go, and
 * so does the user's own hold of it (the bind takes it back). */
static bool h2rev_held_by_other(const struct addr *a, bool udp, const char *user)
{
    bool other = false;
    uint64_t now = clock_ms();
    pthread_mutex_lock(&held_lock);
    for (size_t i = 0; i < nheld;) {
        struct h2rev_held *h = &held[i];
        bool mine = !strcmp(h->user, user);
        if (h->udp != udp && h->until_ms > now) {
            i++;
            continue;
        }
        if (h->until_ms <= now || (mine && a->port && h2rev_clash(&h->a, a))) {
            held[i] = held[--nheld];
            continue;
        }
        other = other || (a->port && h2rev_clash(&h->a, a));
        i++;
    }
    pthread_mutex_unlock(&held_lock);
    return other;
}

/* Listener c (a UDP one: udp) ends: hold its port for its user for the grace period. */
static void h2rev_hold(const struct conn *c, bool udp)
{
    uint32_t grace = conn_cfg(c)->http2.reverse_grace_ms;
    const char *user = c->authed && c->user ? c->user : "";
    if (!grace || strlen(user) >= sizeof(held[0].user))
        return;
    pthread_mutex_lock(&held_lock);
    size_t i = nheld < H2REV_HELD_MAX ? nheld++ : 0; /* full: the first goes */
    held[i].a = c->bnd;
    snprintf(held[i].user, sizeof(held[i].user), "%s", user);
    held[i].until_ms = clock_ms() + grace;
    held[i].udp = udp;
    pthread_mutex_unlock(&held_lock);
}

/* A UDP socket bound at a, or (relay set) as an association's relay port
 * on a's address under relay's udp.ports, *adv then what the SOCKS reply
 * names (udp.advertise): the fd or -errno. */
static int h2rev_udp_socket(struct worker *w, const struct addr *a, const struct config_udp *relay,
                            struct addr *adv)
{
    int fd = socket(a->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(a, &ss);
    if (a->family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    int err = relay                                      ? udp_relay_bind(w, relay, fd, a, adv)
              : bind(fd, (struct sockaddr *)&ss, sl) < 0 ? -errno
                                                         : 0;
    if (err) {
        close(fd);
        return err;
    }
    return fd;
}

/* fd (or -errno) becomes c's bound socket, watched for input: true; else
 * it is closed and c fails with "bind-failed" (false). */
static bool h2rev_take_socket(struct conn *c, int fd)
{
    if (fd >= 0 && sock_local_addr(fd, &c->bnd) == 0 &&
        loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN) == 0)
        return true;
    if (fd >= 0)
        close(fd);
    c->err = fd < 0 ? fd : -EIO;
    conn_fail(c, OUT_FAILED, "bind-failed");
    return false;
}

static void h2rev_listen(struct conn *c, struct h2rev *x)
{
    c->cmd = CONN_CMD_BIND;
    if (!h2rev_allowed(c, &x->bind)) {
        stat_add(&c->w->stats.denied, 1);
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    if (h2rev_held_by_other(&x->bind, x->udp, c->authed && c->user ? c->user : "")) {
        char a[ADDR_STRLEN];
        log_info("conn %llu: reverse bind of %s refused: held for another user after its "
                 "listener ended (http2.reverse_grace)",
                 (unsigned long long)c->id, addr_format(&x->bind, a, sizeof(a)));
        stat_add(&c->w->stats.denied, 1);
        conn_fail(c, OUT_DENIED, "port-held");
        return;
    }
    int fd =
        x->udp ? h2rev_udp_socket(c->w, &x->bind, NULL, NULL) : sock_listen(&x->bind, 128, false);
    if (!h2rev_take_socket(c, fd))
        return;
    x->token = ++next_token;
    list_add_tail(worker_listeners(), &x->link);
    x->linked = true;
    conn_set_state(c, CONN_ST_BIND);
    loop_timer_stop(&c->w->loop, &c->timer);
    conn_succeeded(c);
    c->reply = OUT_OK;
    char tok[24], bound[ADDR_STRLEN];
    snprintf(tok, sizeof(tok), "%" PRIu64, x->token);
    addr_format(&c->bnd, bound, sizeof(bound));
    struct h1h2_field f[2] = {
        {(const uint8_t *)"ferry-listener", (const uint8_t *)tok, 14, strlen(tok)},
        {(const uint8_t *)"ferry-bound", (const uint8_t *)bound, 11, strlen(bound)},
    };
    h2stream_respond_fields(c, 200, f, 2, false);
    log_info("conn %llu: reverse%s listener %s for %s (token %s)", (unsigned long long)c->id,
             x->udp ? " UDP" : "", bound, c->user ? c->user : "-", tok);
}

static struct h2rev *find_listener(const struct conn *c, uint64_t token)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, worker_listeners())
    {
        struct h2rev *l = list_entry(pos, struct h2rev, link);
        if (l->token == token && h2stream_carrier(l->c) == h2stream_carrier(c))
            return l;
    }
    return NULL;
}

static void h2rev_wait(struct conn *c, struct h2rev *x)
{
    c->cmd = CONN_CMD_BIND;
    struct h2rev *l = find_listener(c, x->token);
    if (!l) {
        conn_fail(c, OUT_HOST_UNREACHABLE, "no-listener");
        return;
    }
    if (l->nwaiting >= H2REV_WAITING_MAX) {
        conn_fail(c, OUT_LIMIT, "accept-limit");
        return;
    }
    x->l = l;
    c->target = l->c->bnd;
    list_add_tail(&l->waiting, &x->link);
    x->linked = true;
    l->nwaiting++;
    conn_set_state(c, CONN_ST_BIND);
    loop_timer_stop(&c->w->loop, &c->timer);
    x->udp = l->udp;
    if (l->paused && loop_io_mod(&c->w->loop, &l->c->up, EPOLLIN) == 0) {
        l->paused = false;
        loop_defer(&c->w->loop, &l->c->task); /* connections may be queued already */
    }
}

/* The handed TCP accept of c's HTTP/2 connection on stream sid, opened
 * by c's user (or as c, without one), or NULL. */
static struct h2rev *find_control(const struct conn *c, int32_t sid)
{
    worker_listeners();
    const char *user = c->authed && c->user ? c->user : "";
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &handed)
    {
        struct h2rev *x = list_entry(pos, struct h2rev, link);
        const struct conn *xc = x->c;
        if (h2stream_id(xc) == sid && h2stream_carrier(xc) == h2stream_carrier(c) &&
            !strcmp(xc->authed && xc->user ? xc->user : "", user))
            return x;
    }
    return NULL;
}

/* A SOCKS UDP ASSOCIATE the client's SOCKS front took on the reverse
 * connection of stream x->sid (h2rev.h): a UDP socket on the address the
 * application reached, for the application's IP, living as long as that
 * connection (h2rev_assoc_end), bounded per listener by udp.associations. */
static void h2rev_assoc(struct conn *c, struct h2rev *x)
{
    c->cmd = CONN_CMD_UDP;
    struct h2rev *ctl = find_control(c, x->sid);
    if (!ctl || ctl->c->up.fd < 0) {
        conn_fail(c, OUT_HOST_UNREACHABLE, "no-connection");
        return;
    }
    struct h2rev *l = find_listener(c, ctl->ltoken);
    if (l && l->nassocs >= conn_cfg(c)->udp.associations) {
        stat_add(&c->w->stats.udp_rejected, 1);
        conn_fail(c, OUT_LIMIT, "udp-associations-limit");
        return;
    }
    struct addr local, adv; /* where the application reached us: its relay's address too */
    int fd = sock_local_addr(ctl->c->up.fd, &local) < 0 ? -EIO : 0;
    if (fd == 0) {
        addr_unmap(&local);
        fd = h2rev_udp_socket(c->w, &local, &conn_cfg(c)->udp, &adv);
    }
    if (!h2rev_take_socket(c, fd))
        return;
    c->target = ctl->c->target; /* the application */
    c->dst_port = c->bnd.port;
    if (h2udp_assoc_start(c, ctl->c) < 0) {
        conn_fail(c, OUT_FAILED, "no-memory"); /* the socket closes with c */
        return;
    }
    x->ctl = ctl;
    list_add_tail(&ctl->assocs, &x->link);
    x->linked = true;
    x->ltoken = ctl->ltoken;
    if (l)
        l->nassocs++;
    loop_timer_stop(&c->w->loop, &c->timer);
    conn_succeeded(c);
    c->reply = OUT_OK;
    char bound[ADDR_STRLEN];
    addr_format(&adv, bound, sizeof(bound));
    struct h1h2_field f[2] = {
        {(const uint8_t *)"ferry-bound", (const uint8_t *)bound, 11, strlen(bound)},
        {(const uint8_t *)"capsule-protocol", (const uint8_t *)"?1", 16, 2},
    };
    h2stream_respond_fields(c, 200, f, 2, false);
}

/* Session c (state x) ends: an association leaves its control and its
 * listener's count; a control closes its associations. */
static void h2rev_assoc_end(struct conn *c, struct h2rev *x)
{
    if (x->assoc && x->ctl) {
        struct h2rev *l = find_listener(c, x->ltoken);
        if (l && l->nassocs)
            l->nassocs--;
    }
    while (!list_empty(&x->assocs)) {
        struct h2rev *a = list_entry(x->assocs.next, struct h2rev, link);
        list_del(&a->link);
        a->linked = false;
        struct h2rev *l = find_listener(a->c, a->ltoken);
        if (l && l->nassocs)
            l->nassocs--;
        a->ctl = NULL;
        conn_close(a->c, "control-closed");
    }
}

void h2rev_go(struct conn *c)
{
    if (c->h2r->assoc)
        h2rev_assoc(c, c->h2r);
    else if (c->h2r->listener)
        h2rev_listen(c, c->h2r);
    else
        h2rev_wait(c, c->h2r);
}

/* Hand accepted socket fd (from peer) to the oldest waiting stream. */
static void h2rev_hand(struct h2rev *l, int fd, const struct addr *peer)
{
    struct h2rev *a = list_entry(l->waiting.next, struct h2rev, link);
    list_del(&a->link);
    l->nwaiting--;
    a->l = NULL;
    a->ltoken = l->token;
    list_add_tail(&handed, &a->link); /* a control its client may name (h2rev_assoc) */
    struct conn *c = a->c;
    sock_set_nodelay(fd);
    if (loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
        sock_abort(fd);
        close(fd);
        conn_fail(c, OUT_FAILED, "accept-failed");
        return;
    }
    c->up_ev = SIDE_RD | SIDE_WR;
    c->target = *peer;
    c->dst_port = peer->port;
    conn_succeeded(c);
    c->reply = OUT_OK;
    char p[ADDR_STRLEN];
    addr_format(peer, p, sizeof(p));
    h2stream_respond(c, 200, false, "ferry-peer", p);
    conn_relay_start(c);
}

static void h2rev_accept(struct conn *c, struct h2rev *l)
{
    for (int i = 0; i < H2REV_ACCEPT_BUDGET && c->up.fd >= 0; i++) {
        if (list_empty(&l->waiting)) {
            /* Nobody waits: leave connections in the kernel's accept
             * queue (its backlog bounds them) until an accept stream
             * comes. */
            if (!l->paused && loop_io_mod(&c->w->loop, &c->up, 0) == 0)
                l->paused = true;
            return;
        }
        struct addr peer;
        int fd = sock_accept(c->up.fd, &peer);
        if (fd < 0)
            return;
        h2rev_hand(l, fd, &peer);
    }
    loop_defer(&c->w->loop, &c->task); /* more may wait: go on after the others */
}

/* A UDP listener's first datagram from peer: the oldest waiting accept
 * stream answers 200 and carries peer's datagrams from now on (h2udp.c).
 * The accept stream or NULL (the datagram is dropped, and counted). */
static struct h2rev *h2rev_udp_hand(struct h2rev *l, const struct addr *peer)
{
    struct conn *lc = l->c;
    if (list_empty(&l->waiting) || l->nsources >= conn_cfg(lc)->udp.associations) {
        stat_add(&lc->w->stats.udp_rejected, 1);
        return NULL;
    }
    struct h2rev *a = list_entry(l->waiting.next, struct h2rev, link);
    struct conn *c = a->c;
    list_del(&a->link);
    l->nwaiting--;
    a->l = NULL;
    if (h2udp_reverse_start(c, lc->up.fd, peer) < 0) {
        a->linked = false;
        conn_fail(c, OUT_FAILED, "no-memory");
        return NULL;
    }
    list_add_tail(&l->sources, &a->link);
    l->nsources++;
    a->src_of = l;
    a->peer = *peer;
    c->target = *peer;
    c->dst_port = peer->port;
    conn_succeeded(c);
    c->reply = OUT_OK;
    char p[ADDR_STRLEN];
    addr_format(peer, p, sizeof(p));
    struct h1h2_field f[2] = {
        {(const uint8_t *)"ferry-peer", (const uint8_t *)p, 10, strlen(p)},
        {(const uint8_t *)"capsule-protocol", (const uint8_t *)"?1", 16, 2},
    };
    h2stream_respond_fields(c, 200, f, 2, false);
    return a;
}

/* Datagrams on a UDP listener: each to its source's stream. */
static void h2rev_udp_read(struct conn *c, struct h2rev *l)
{
    static _Thread_local uint8_t buf[CAPSULE_DATAGRAM_HDR_MAX + 65535];
    uint8_t *p = buf + CAPSULE_DATAGRAM_HDR_MAX;
    for (int i = 0; i < H2REV_UDP_BUDGET; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(c->up.fd, p, 65535, 0, (struct sockaddr *)&ss, &sl);
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            continue; /* an ICMP error from an earlier send: read on */
        }
        struct addr peer;
        addr_from_sockaddr(&peer, (struct sockaddr *)&ss);
        addr_unmap(&peer);
        struct h2rev *a = NULL;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &l->sources)
        {
            struct h2rev *s = list_entry(pos, struct h2rev, link);
            if (addr_equal(&s->peer, &peer) && s->peer.port == peer.port) {
                a = s;
                break;
            }
        }
        if (!a)
            a = h2rev_udp_hand(l, &peer);
        if (a && a->c->h2u)
            h2udp_deliver(a->c, p, (size_t)n);
    }
    loop_defer(&c->w->loop, &c->task); /* more may wait: go on after the others */
}

void h2rev_drive(struct conn *c)
{
    /* Nothing is expected on a listening or waiting stream: its end (or a
     * byte) ends the session. */
    uint8_t b[256];
    ssize_t n = h2stream_recv(c, b, sizeof(b));
    if (n >= 0 || errno != EAGAIN) {
        if (n == 0)
            h2stream_shutdown(c); /* END_STREAM answers END_STREAM */
        conn_close(c, n == 0 ? "client-closed" : n > 0 ? "bad-request" : "client-reset");
        return;
    }
    if (c->h2r->listener && c->h2r->udp)
        h2rev_udp_read(c, c->h2r);
    else if (c->h2r->listener)
        h2rev_accept(c, c->h2r);
}

void h2rev_close_all(void)
{
    struct list *l = worker_listeners();
    while (!list_empty(l)) {
        struct h2rev *x = list_entry(l->next, struct h2rev, link);
        list_del(&x->link);
        x->linked = false;
        conn_close(x->c, "listener-closed"); /* its end hook frees x */
    }
}

const char *h2rev_log_cmd(const struct conn *c)
{
    if (c->h2r->assoc)
        return "reverse-udp";
    if (c->h2r->listener)
        return "reverse-listen";
    return c->reply == OUT_OK ? "reverse" : "reverse-accept";
}

void h2rev_end(struct conn *c)
{
    struct h2rev *x = c->h2r;
    if (!x)
        return;
    c->h2r = NULL;
    if (x->linked)
        list_del(&x->link);
    if (x->l)
        x->l->nwaiting--;
    if (x->src_of)
        x->src_of->nsources--;
    h2rev_assoc_end(c, x);
    if (x->listener && x->token)
        h2rev_hold(c, x->udp);
    if (x->listener) {
        while (!list_empty(&x->waiting)) {
            struct h2rev *a = list_entry(x->waiting.next, struct h2rev, link);
            list_del(&a->link);
            a->linked = false;
            a->l = NULL;
            conn_close(a->c, "listener-closed");
        }
        while (!list_empty(&x->sources)) { /* they send from its socket */
            struct h2rev *a = list_entry(x->sources.next, struct h2rev, link);
            list_del(&a->link);
            a->linked = false;
            a->src_of = NULL;
            conn_close(a->c, "listener-closed");
        }
    }
    free(x);
}
