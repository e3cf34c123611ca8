/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2udp.c: CONNECT-UDP (RFC 9298) streams of the HTTP/2 proxy (h2udp.h).
 * The request is checked by proto/masque (the default URI template,
 * :scheme https, capsule-protocol), authenticated by front_h2.c as a
 * CONNECT stream is, then judged here as a SOCKS UDP ASSOCIATE
 * destination is (cmd udp, user, client address, the target name and
 * every address it resolves to at this proxy): the first allowed address
 * gets one connected UDP socket (c->up). The stream then carries DATAGRAM
 * capsules (RFC 9297 section 3.5, context id 0) both ways, one capsule
 * per datagram, boundaries kept, empty datagrams included.
 *
 * Limits are [udp]'s: a payload over udp.max_datagram is dropped and
 * counted both ways; the stream counts as one association against
 * udp.associations of its listener; limits.bandwidth_* drop datagrams
 * (never delay them) as in the SOCKS relay; after udp.idle without a datagram
 * either way the stream ends (END_STREAM). Toward the client the queue is
 * the stream's send buffer (h2stream.c): a datagram that does not fit whole
 * is dropped and counted, so a slow client stalls nothing. From the
 * client, capsules are consumed as they arrive (sent, or dropped and
 * counted), so the stream's credit always comes back: a UDP stream never
 * holds the connection's window. Its own window is fixed and small
 * (h2io_udp_window): a flooding stream keeps little in the carrier ahead
 * of the others' datagrams, and the rest waits (or is dropped) at the
 * client. A capsule longer than the datagram cap
 * plus its context id, or a malformed one, aborts the stream
 * (RST_STREAM, RFC 9297 section 3.3), with the reason in the log.
 *
 * It must not block, nor free the session itself: ends go through
 * conn_close(), and the state is freed by the front's end hook.
 */
#include "relay/h2udp.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns/resolver.h"
#include "log/log.h"
#include "proto/capsule.h"
#include "proto/masque.h"
#include "proto/socks5.h"
#include "relay/h2io.h"
#include "relay/h2stream.h"
#include "relay/session.h"

/* Read from the stream per drive before yielding to other sessions. */
#define H2UDP_UP_BUDGET   (256u * 1024)
/* Datagrams read from the target per drive (the socket is level-triggered). */
#define H2UDP_DOWN_BUDGET 64u
/* The largest UDP payload. */
#define H2UDP_PAYLOAD_MAX 65535u
/* A capsule's header: type and length varints. */
#define H2UDP_HDR_MAX     (2 * CAPSULE_VARINT_LEN_MAX)
/* The longest SOCKS UDP header (a 255-byte name), which a reverse SOCKS
 * association's capsules carry in front of the payload. */
#define H2UDP_SOCKS_HDR   262u

struct h2udp {
    struct conn *c;
    struct timer idle; /* udp.idle without a datagram: the stream ends */
    uint64_t last_ms;  /* loop ms of the last datagram either way */
    uint8_t *in;       /* capsule bytes read from the stream, not yet whole */
    size_t in_len, in_cap;
    size_t cap;        /* the longest capsule payload accepted */
    uint64_t consumed; /* capsule bytes taken off the stream, whole */
    uint64_t dg_up, dg_down;
    bool slot; /* counted in the listener's udp.associations */
    struct masque_target t;
    /* A reverse UDP source (h2udp_reverse_start): datagrams go out of its
     * listener's socket rfd to peer, and come in through h2udp_deliver. */
    int rfd;
    struct addr peer;
    /* A reverse SOCKS association (h2udp_assoc_start): its own socket is
     * c->up (rfd), peer the application's IP, its port fixed by the first
     * datagram (port_fixed); payloads carry their SOCKS UDP header. */
    bool assoc, port_fixed;
    struct conn *ctl; /* its control session, kept alive by its datagrams */
};

/* Datagrams from the target land behind room for the capsule's header. */
static _Thread_local uint8_t down_buf[CAPSULE_DATAGRAM_HDR_MAX + H2UDP_PAYLOAD_MAX];

static void h2udp_on_idle(struct timer *t);

static struct masque_field field(const char *v)
{
    return (struct masque_field){v, strlen(v)};
}

int h2udp_check(struct conn *c)
{
    const struct h2stream_req *r = h2stream_req(c);
    struct masque_request mr = {
        .method = field(r->method),
        .protocol = field(r->protocol),
        .scheme = field(r->scheme),
        .authority = field(r->authority),
        .path = field(r->path),
        .capsule_protocol =
            r->capsule_protocol[0] ? field(r->capsule_protocol) : (struct masque_field){NULL, 0},
    };
    struct h2udp *u = calloc(1, sizeof(*u));
    if (!u) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return -1;
    }
    u->c = c;
    timer_init(&u->idle, h2udp_on_idle);
    c->h2u = u;
    int e = r->bad ? MASQUE_E_SHAPE : masque_check_request(&mr, &u->t);
    if (e) {
        bool proto = masque_error_status(e) == 501;
        conn_fail(c, proto ? OUT_CMD_UNSUPPORTED : OUT_BAD_REQUEST,
                  proto ? "protocol-unsupported" : "bad-request");
        return -1;
    }
    c->cmd = CONN_CMD_UDP; /* the rules' command, and the access log's */
    c->dst_port = u->t.port;
    return 0;
}

/* ---- the relay ---------------------------------------------------------- */

static void h2udp_touch(struct h2udp *u)
{
    struct conn *c = u->c;
    u->last_ms = c->last_active = loop_now(&c->w->loop);
    if (u->ctl) /* an association's datagrams are its control's activity too */
        u->ctl->last_active = u->last_ms;
}

/* The stream cannot go on: a reset (RST_STREAM CONNECT_ERROR, by
 * h2stream_detach since our END_STREAM was not queued), logged. */
static void h2udp_abort(struct conn *c, const char *why)
{
    stat_add(&c->w->stats.h2_udp_aborted, 1);
    log_info("h2: conn %llu: CONNECT-UDP stream aborted: %s", (unsigned long long)c->id, why);
    conn_close(c, why);
}

/* Send a payload to the target (or the reverse source): 0 or -1. */
static int h2udp_out(const struct h2udp *u, const uint8_t *p, size_t n)
{
    if (!u->peer.family)
        return send(u->c->up.fd, p, n, MSG_NOSIGNAL) < 0 ? -1 : 0;
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&u->peer, &ss);
    return sendto(u->rfd, p, n, MSG_NOSIGNAL, (struct sockaddr *)&ss, sl) < 0 ? -1 : 0;
}

/* One whole capsule from the client: 0, or -1 after aborting the stream. */
static int h2udp_capsule(struct conn *c, const struct capsule *cp)
{
    struct h2udp *u = c->h2u;
    struct worker_stats *st = &c->w->stats;
    if (cp->type != CAPSULE_TYPE_DATAGRAM) {
        stat_add(&st->h2_udp_capsules_skipped, 1); /* RFC 9297 section 3.2 */
        return 0;
    }
    struct capsule_datagram d;
    if (capsule_datagram_parse(cp, &d) < 0) {
        h2udp_abort(c, "capsule-malformed");
        return -1;
    }
    if (d.context_id != CAPSULE_CONTEXT_UDP) {
        stat_add(&st->udp_drop_context, 1); /* RFC 9298 section 4 */
        return 0;
    }
    h2udp_touch(u);
    if (d.len > conn_cfg(c)->udp.max_datagram + (u->assoc ? H2UDP_SOCKS_HDR : 0)) {
        stat_add(&st->udp_drop_size, 1);
        return 0;
    }
    if (u->assoc && !u->port_fixed) {
        stat_add(&st->udp_drop_send, 1); /* the application has no port yet */
        return 0;
    }
    if (c->bw && policy_bw_avail(c, (uint32_t)d.len) < d.len) {
        stat_add(&st->udp_drop_bandwidth, 1); /* dropped, never delayed */
        return 0;
    }
    if (h2udp_out(u, d.payload, d.len) < 0) {
        stat_add(&st->udp_drop_send, 1); /* a full buffer, an ICMP error */
        return 0;
    }
    if (c->bw)
        policy_bw_spend(c, (uint32_t)d.len);
    stat_add(&st->udp_in, 1);
    stat_add(&st->udp_bytes_in, d.len);
    u->dg_up++;
    c->c2u.bytes += d.len;
    if (c->acct.ctr)
        stat_add(&c->acct.ctr->dgram_up, 1);
    return 0;
}

/* Take the whole capsules off the front of u->in. 0, or -1 when the
 * stream was aborted. */
static int h2udp_parse(struct conn *c)
{
    struct h2udp *u = c->h2u;
    size_t off = 0;
    while (off < u->in_len) {
        struct capsule cp;
        ssize_t n = capsule_parse(u->in + off, u->in_len - off, u->cap, &cp);
        if (n == 0)
            break;
        if (n < 0) {
            h2udp_abort(c, "capsule-too-long");
            return -1;
        }
        if (h2udp_capsule(c, &cp) < 0)
            return -1;
        off += (size_t)n;
    }
    if (off) {
        memmove(u->in, u->in + off, u->in_len - off);
        u->in_len -= off;
        u->consumed += off;
    }
    return 0;
}

/* Give the client credit for the capsule bytes consumed. h2stream_credit
 * credits c->c2u.bytes, which for a datagram session counts payload for
 * the access log and the counters: it is lent the capsule count. */
static void h2udp_credit(struct conn *c)
{
    uint64_t payload = c->c2u.bytes;
    c->c2u.bytes = c->h2u->consumed;
    h2stream_credit(c);
    c->c2u.bytes = payload;
}

/* Capsules from the client, until the stream has no more or the budget is
 * spent. 0, or -1 when c was closed. */
static int h2udp_up(struct conn *c)
{
    struct h2udp *u = c->h2u;
    size_t budget = H2UDP_UP_BUDGET;
    ssize_t n = -1;
    int err = EAGAIN;
    while (budget) {
        if (u->in_len == u->in_cap) { /* never: a whole capsule fits (u->cap) */
            h2udp_abort(c, "capsule-too-long");
            return -1;
        }
        n = h2stream_recv(c, u->in + u->in_len, u->in_cap - u->in_len);
        if (n < 0)
            err = errno;
        if (n <= 0)
            break;
        u->in_len += (size_t)n;
        budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
        if (h2udp_parse(c) < 0)
            return -1;
    }
    h2udp_credit(c);
    if (budget == 0)
        loop_defer(&c->w->loop, &c->task); /* fairness: go on after the others */
    if (n < 0 && err != EAGAIN) {
        conn_close(c, "client-reset");
        return -1;
    }
    if (n == 0) {
        if (u->in_len) {
            h2udp_abort(c, "capsule-truncated");
            return -1;
        }
        /* END_STREAM from the client: ours follows, the socket closes. */
        h2stream_shutdown(c);
        conn_close(c, "done");
        return -1;
    }
    return 0;
}

void h2udp_deliver(struct conn *c, uint8_t *p, size_t n)
{
    struct h2udp *u = c->h2u;
    struct worker_stats *st = &c->w->stats;
    h2udp_touch(u);
    if (n > conn_cfg(c)->udp.max_datagram + (u->assoc ? H2UDP_SOCKS_HDR : 0)) {
        stat_add(&st->udp_drop_size, 1);
        return;
    }
    uint8_t hdr[CAPSULE_DATAGRAM_HDR_MAX];
    size_t h = capsule_write_datagram_header(hdr, sizeof(hdr), n);
    if (c->bw && policy_bw_avail(c, (uint32_t)n) < (uint32_t)n) {
        stat_add(&st->udp_drop_bandwidth, 1);
        return;
    }
    if (h2stream_room(c) < h + n) {
        stat_add(&st->udp_drop_queue, 1); /* the client reads too slowly */
        return;
    }
    memcpy(p - h, hdr, h);
    if (h2stream_send(c, p - h, h + n) < 0) {
        stat_add(&st->udp_drop_queue, 1);
        return;
    }
    if (c->bw)
        policy_bw_spend(c, (uint32_t)n);
    stat_add(&st->udp_out, 1);
    stat_add(&st->udp_bytes_out, (uint64_t)n);
    u->dg_down++;
    c->u2c.bytes += (uint64_t)n;
    if (c->acct.ctr)
        stat_add(&c->acct.ctr->dgram_down, 1);
}

/* A datagram of n bytes at p from the application (from) to a reverse
 * SOCKS association: may it cross the tunnel? Counted when not. */
static bool h2udp_assoc_ok(struct h2udp *u, const struct addr *from, const uint8_t *p, size_t n)
{
    struct worker_stats *st = &u->c->w->stats;
    struct addr ip = *from; /* its IP, against the application's (and port, once fixed) */
    if (!u->port_fixed)
        ip.port = u->peer.port;
    if (!addr_equal(&ip, &u->peer)) {
        stat_add(&st->udp_drop_source, 1);
        return false;
    }
    struct socks5_addr dst;
    ssize_t h = socks5_parse_udp(p, n, &dst);
    if (h < 0) {
        stat_add(h == SOCKS5_E_UDP_FRAG ? &st->udp_drop_frag : &st->udp_drop_malformed, 1);
        return false;
    }
    if (n - (size_t)h > conn_cfg(u->c)->udp.max_datagram) {
        stat_add(&st->udp_drop_size, 1);
        return false;
    }
    if (!u->port_fixed) { /* the first well-formed datagram fixes its port */
        u->peer.port = from->port;
        u->port_fixed = true;
    }
    return true;
}

/* Datagrams to a reverse SOCKS association's socket, each one capsule. */
static void h2udp_assoc_down(struct conn *c)
{
    uint8_t *p = down_buf + CAPSULE_DATAGRAM_HDR_MAX;
    for (unsigned i = 0; i < H2UDP_DOWN_BUDGET && c->h2u; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(c->up.fd, p, H2UDP_PAYLOAD_MAX, 0, (struct sockaddr *)&ss, &sl);
        if (n < 0) {
            if (errno == EAGAIN)
                break;
            continue; /* an ICMP error from an earlier send: read on */
        }
        struct addr from;
        addr_from_sockaddr(&from, (struct sockaddr *)&ss);
        addr_unmap(&from);
        if (h2udp_assoc_ok(c->h2u, &from, p, (size_t)n))
            h2udp_deliver(c, p, (size_t)n);
    }
}

/* Datagrams from the target, each one DATAGRAM capsule, or dropped. */
static void h2udp_down(struct conn *c)
{
    if (c->h2u->assoc) {
        h2udp_assoc_down(c);
        return;
    }
    uint8_t *p = down_buf + CAPSULE_DATAGRAM_HDR_MAX;
    for (unsigned i = 0; i < H2UDP_DOWN_BUDGET && !c->h2u->peer.family; i++) {
        ssize_t n = recv(c->up.fd, p, H2UDP_PAYLOAD_MAX, 0);
        if (n < 0) {
            if (errno == EAGAIN)
                break;
            continue; /* an ICMP error from an earlier send: read on */
        }
        h2udp_deliver(c, p, (size_t)n);
    }
}

void h2udp_drive(struct conn *c)
{
    if (c->state != CONN_ST_UDP || !c->h2u)
        return;
    if (h2udp_up(c) < 0)
        return;
    h2udp_down(c);
    relay_count_bytes(c); /* the payload as it moves, as the pump does: quotas see it live */
}

static void h2udp_on_idle(struct timer *t)
{
    struct h2udp *u = container_of(t, struct h2udp, idle);
    struct conn *c = u->c;
    uint32_t idle = conn_cfg(c)->udp.idle_ms;
    uint64_t now = loop_now(&c->w->loop);
    if (now - u->last_ms < idle) {
        loop_timer_arm_at(&c->w->loop, &u->idle, u->last_ms + idle);
        return;
    }
    /* The destination expired, as in a SOCKS association: END_STREAM. */
    h2stream_shutdown(c);
    conn_close(c, "udp-idle");
}

/* ---- opening ------------------------------------------------------------ */

int h2udp_reverse_start(struct conn *c, int fd, const struct addr *peer)
{
    const struct config *cfg = conn_cfg(c);
    struct h2udp *u = calloc(1, sizeof(*u));
    if (u)
        u->in = malloc(cfg->udp.max_datagram + CAPSULE_VARINT_LEN_MAX + H2UDP_HDR_MAX);
    if (!u || !u->in) {
        free(u);
        return -ENOMEM;
    }
    u->c = c;
    u->rfd = fd;
    u->peer = *peer;
    u->cap = cfg->udp.max_datagram + CAPSULE_VARINT_LEN_MAX;
    u->in_cap = u->cap + H2UDP_HDR_MAX;
    timer_init(&u->idle, h2udp_on_idle);
    c->h2u = u;
    stat_add(&c->w->stats.udp_assocs, 1);
    conn_set_state(c, CONN_ST_UDP);
    h2stream_window_fix(c, h2io_udp_window(cfg->udp.max_datagram));
    h2udp_touch(u);
    loop_timer_arm(&c->w->loop, &u->idle, cfg->udp.idle_ms);
    return 0;
}

int h2udp_assoc_start(struct conn *c, struct conn *ctl)
{
    const struct addr *app = &ctl->target;
    const struct config *cfg = conn_cfg(c);
    size_t cap = cfg->udp.max_datagram + H2UDP_SOCKS_HDR + CAPSULE_VARINT_LEN_MAX;
    struct h2udp *u = calloc(1, sizeof(*u));
    if (u)
        u->in = malloc(cap + H2UDP_HDR_MAX);
    if (!u || !u->in) {
        free(u);
        return -ENOMEM;
    }
    u->c = c;
    u->rfd = c->up.fd;
    u->peer = *app;
    u->peer.port = 0;
    addr_unmap(&u->peer);
    u->assoc = true;
    u->ctl = ctl;
    u->cap = cap;
    u->in_cap = cap + H2UDP_HDR_MAX;
    timer_init(&u->idle, h2udp_on_idle); /* never armed: it lives as long as its control */
    c->h2u = u;
    stat_add(&c->w->stats.udp_assocs, 1);
    conn_set_state(c, CONN_ST_UDP);
    h2stream_window_fix(c, h2io_udp_window(cfg->udp.max_datagram + H2UDP_SOCKS_HDR));
    h2udp_touch(u);
    return 0;
}

/* A connected UDP socket to a, on c->up. 0 or -errno. */
static int h2udp_socket(struct conn *c, const struct addr *a)
{
    int fd = socket(a->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(a, &ss);
    if (connect(fd, (struct sockaddr *)&ss, sl) < 0 ||
        loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return 0;
}

/* Target a is allowed: take an association slot, open the socket, answer
 * 200 and relay. */
static void h2udp_open(struct conn *c, const struct addr *a)
{
    struct h2udp *u = c->h2u;
    struct worker *w = c->w;
    const struct config *cfg = conn_cfg(c);
    c->target = *a;
    _Atomic uint32_t *count = &w->sh->udp_assocs[c->listen_index % CONFIG_MAX_LISTEN];
    if (atomic_fetch_add(count, 1) >= cfg->udp.associations) {
        atomic_fetch_sub(count, 1);
        stat_add(&w->stats.udp_rejected, 1);
        conn_fail(c, OUT_LIMIT, "udp-associations-limit");
        return;
    }
    u->slot = true;
    u->cap = cfg->udp.max_datagram + CAPSULE_VARINT_LEN_MAX;
    u->in_cap = u->cap + H2UDP_HDR_MAX;
    u->in = malloc(u->in_cap);
    int rc = u->in ? h2udp_socket(c, a) : -ENOMEM;
    if (rc < 0) {
        c->err = rc;
        conn_fail(c, rc == -ENOMEM ? OUT_FAILED : errmap_connect(-rc), "udp-socket");
        return;
    }
    stat_add(&w->stats.udp_assocs, 1);
    stat_add(&w->stats.h2_udp_streams, 1);
    conn_succeeded(c);
    c->reply = OUT_OK;
    /* RFC 9297 section 3.4: the response says capsules follow. */
    h2stream_respond(c, 200, false, "capsule-protocol", "?1");
    conn_set_state(c, CONN_ST_UDP);
    h2stream_window_fix(c, h2io_udp_window(cfg->udp.max_datagram));
    policy_bw_start(c); /* limits.bandwidth_*: datagrams over it are dropped */
    h2udp_touch(u);
    conn_arm_idle(c);
    loop_timer_arm(&w->loop, &u->idle, cfg->udp.idle_ms);
    h2udp_drive(c); /* capsules may have come with the request */
}

/* The target's addresses (a name resolved here, or the literal): every
 * one meets the rules; the first allowed is used (no DNS rebinding into a
 * denied range). */
static void h2udp_judge(struct conn *c, const struct dns_answer *ans)
{
    const struct config *cfg = conn_cfg(c);
    int32_t rule = POLICY_RULE_NONE, first_rule = POLICY_RULE_NONE;
    struct addr pick = {0};
    for (uint8_t i = 0; i < ans->n && !pick.family; i++) {
        struct addr a = ans->a[i];
        addr_unmap(&a);
        a.port = c->dst_port;
        enum policy_verdict v = policy_eval(c, 0, c->dst_name, &a, c->dst_port, &rule);
        if (i == 0)
            first_rule = rule;
        if (v == POLICY_ALLOW)
            pick = a;
    }
    if (!pick.family) {
        policy_note(c, POLICY_DENY, first_rule);
        c->target = ans->a[0];
        addr_unmap(&c->target);
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    policy_note(c, POLICY_ALLOW, rule);
    const struct config_outbound *o = &cfg->outbounds[conn_via(c, rule)];
    if (o->kind == OUTBOUND_KIND_REJECT) {
        conn_fail(c, OUT_DENIED, "rejected");
        return;
    }
    if (o->kind != OUTBOUND_KIND_DIRECT) {
        /* Datagrams through a parent proxy are the SOCKS relay's alone. */
        conn_fail(c, OUT_CMD_UNSUPPORTED, "udp-via-unsupported");
        return;
    }
    h2udp_open(c, &pick);
}

static void h2udp_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    c->dns = NULL;
    if (status != DNS_OK) {
        stat_add(&c->w->stats.dns_failures, 1);
        conn_fail(c, errmap_dns(status), "resolve-failed");
        return;
    }
    h2udp_judge(c, ans);
}

void h2udp_go(struct conn *c)
{
    struct h2udp *u = c->h2u;
    struct worker *w = c->w;
    struct dns_answer ans = {0};
    conn_set_state(c, CONN_ST_REQUEST);
    if (addr_parse_ip(u->t.host, u->t.port, &ans.a[0]) == 0) {
        ans.n = 1;
        h2udp_judge(c, &ans);
        return;
    }
    c->dst_name = strdup(u->t.host);
    if (!c->dst_name) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    /* A name rule may refuse before any lookup. */
    int32_t rule;
    if (policy_eval(c, 0, c->dst_name, NULL, c->dst_port, &rule) == POLICY_DENY) {
        policy_note(c, POLICY_DENY, rule);
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    int status;
    if (resolver_lookup_now(&w->dns, c->dst_name, c->dst_port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        h2udp_on_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, c->dst_port, h2udp_on_dns, c);
    if (!c->dns)
        conn_fail(c, OUT_FAILED, "no-memory");
}

void h2udp_end(struct conn *c)
{
    struct h2udp *u = c->h2u;
    if (!u)
        return;
    if (u->slot)
        atomic_fetch_sub(&c->w->sh->udp_assocs[c->listen_index % CONFIG_MAX_LISTEN], 1);
    loop_timer_stop(&c->w->loop, &u->idle);
    free(u->in);
    free(u);
    c->h2u = NULL;
}

void h2udp_counts(const struct conn *c, uint64_t *up, uint64_t *down)
{
    *up = c->h2u ? c->h2u->dg_up : 0;
    *down = c->h2u ? c->h2u->dg_down : 0;
}
