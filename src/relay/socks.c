/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks.c: the SOCKS side of a session: SOCKS5 (RFC 1928) greeting, RFC 1929
 * sub-negotiation and request; SOCKS4 and 4a; and the commands beyond
 * CONNECT: UDP ASSOCIATE (handed to udp/) and BIND. It drives the pure
 * parsers of proto/ with what the client sent and answers in the client's
 * own protocol; dialing and relaying are conn.c's (BIND only asks the
 * worker's resolver itself, and bindmap.c for the primary session). The
 * session core reaches it only through the two rows at the end of this
 * file, front_socks5 and front_socks4 (front.h).
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl/rules.h"
#include "auth/auth.h"
#include "core/buf.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/socks4.h"
#include "proto/socks5.h"
#include "relay/bindmap.h"
#include "relay/errmap.h"
#include "relay/front.h"
#include "relay/outbound.h"
#include "relay/outbound_h2rev_assoc.h"
#include "relay/session.h"
#include "udp/udp.h"

/* ---- answers ---------------------------------------------------------- */

static_assert((int)CONN_CMD_CONNECT == (int)SOCKS5_CMD_CONNECT &&
                  (int)CONN_CMD_BIND == (int)SOCKS5_CMD_BIND &&
                  (int)CONN_CMD_UDP == (int)SOCKS5_CMD_UDP_ASSOCIATE &&
                  SOCKS4_CMD_CONNECT == (int)SOCKS5_CMD_CONNECT &&
                  SOCKS4_CMD_BIND == (int)SOCKS5_CMD_BIND,
              "c->cmd holds SOCKS command numbers");

static void socks_handshake(struct conn *c);

static void socks_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    (void)why;
    uint8_t msg[SOCKS5_REPLY_MAX];
    size_t n;
    if (c->proto == PROTO_SOCKS4)
        n = socks4_write_reply(msg, errmap_socks4(o), NULL);
    else
        n = socks5_write_reply(msg, sizeof(msg), errmap_socks5(o), NULL);
    int rc = conn_send_client(c, msg, n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    conn_linger(c);
}

/* Success with bnd; returns 0 or -1 after closing. */
static int socks_reply_ok(struct conn *c, const struct addr *bnd)
{
    uint8_t msg[SOCKS5_REPLY_MAX];
    size_t n = c->proto == PROTO_SOCKS4
                   ? socks4_write_reply(msg, errmap_socks4(OUT_OK), bnd)
                   : socks5_write_reply(msg, sizeof(msg), errmap_socks5(OUT_OK), bnd);
    c->reply = OUT_OK;
    stat_add(&c->w->stats.socks5_replies[errmap_socks5(OUT_OK)], 1);
    conn_succeeded(c);
    int rc = conn_send_client(c, msg, n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return -1;
    }
    return 0;
}

static void socks_connected(struct conn *c)
{
    /* The reply carries BND, where the destination sees us. */
    if (c->out->bnd(c, &c->bnd) < 0)
        memset(&c->bnd, 0, sizeof(c->bnd));
    /* A possible primary session for a later BIND of this client (noted
     * before the reply, so a BIND sent right after it finds the note). */
    if (conn_cfg(c)->bind && c->cmd == SOCKS5_CMD_CONNECT)
        bindmap_record(&c->client, &c->target, loop_now(&c->w->loop));
    if (socks_reply_ok(c, &c->bnd) == 0)
        conn_relay_start(c);
}

/* ---- UDP ASSOCIATE ----------------------------------------------------- */

/* Each new destination of an association meets the rules, which choose
 * its way out (the allowing rule's via, else the default outbound). A
 * name judged alone that only its address can judge is resolved first;
 * but without rules, a parent that resolves names is told the name, as
 * for CONNECT (conn_dial): the protected ranges are this host's. A rule's
 * hit is counted once per destination: for a name judged alone, only when
 * the name is not resolved here (denied, or to a parent that resolves). */
static enum udp_verdict socks_udp_route(void *arg, const char *name, const struct addr *ip,
                                        uint16_t port, uint16_t *ob)
{
    struct conn *c = arg;
    const struct config *cfg = conn_cfg(c);
    int32_t rule;
    enum policy_verdict v = policy_eval(c, 0, name, ip, port, &rule);
    if (v == POLICY_NEED_IP) {
        if (cfg->acl || !cfg->outbounds[cfg->default_outbound].remote_dns)
            return UDP_NEED_IP;
        *ob = cfg->default_outbound;
        return UDP_ALLOW;
    }
    uint16_t via = v == POLICY_ALLOW ? conn_via(c, rule) : cfg->default_outbound;
    const struct config_outbound *o = &cfg->outbounds[via];
    if (ip || v != POLICY_ALLOW || o->remote_dns || o->kind == OUTBOUND_KIND_POOL ||
        o->kind == OUTBOUND_KIND_REJECT)
        policy_note(c, v, rule);
    if (v != POLICY_ALLOW)
        return UDP_DENY;
    *ob = via;
    return UDP_ALLOW;
}

/* The association's parent went away: so does the association. */
static void socks_udp_end(void *arg, const char *why)
{
    conn_close(arg, why);
}

static void socks_udp_activity(void *arg)
{
    struct conn *c = arg;
    c->last_active = loop_now(&c->w->loop);
}

/* limits.bandwidth_*: datagrams are dropped, never delayed. */
static uint32_t socks_udp_bw_allow(void *arg, uint32_t want)
{
    return policy_bw_avail(arg, want);
}

static void socks_udp_bw_spend(void *arg, uint32_t n)
{
    policy_bw_spend(arg, n);
}

/* The association is open and bnd is its relay: the reply, and the
 * control connection holds it from now on. */
static void socks_udp_ready(struct conn *c, const struct addr *bnd)
{
    struct worker *w = c->w;
    policy_bw_start(c);
    if (c->bw)
        udp_assoc_set_bw(c->udp, socks_udp_bw_allow, socks_udp_bw_spend);
    if (c->acct.ctr) {
        udp_assoc_set_acct(c->udp, c->acct.ctr);
        c->acct_udp = true; /* its bytes are the user's as they move, not again at the end */
    }
    c->bnd = *bnd;
    c->target = *bnd;
    if (socks_reply_ok(c, bnd))
        return;
    conn_set_state(c, CONN_ST_UDP);
    c->last_active = loop_now(&w->loop);
    conn_arm_idle(c);
    /* The control connection carries nothing more; bytes already read
     * behind the request are discarded with the rest. */
    buf_put(&w->bufs, c->c2u.buf);
    c->c2u.buf = NULL;
}

/* RFC 1928 section 7. The request's DST.ADDR/DST.PORT are not used: many
 * clients put the destination or zeros there; the association accepts the
 * control connection's client address, from the port of its first
 * datagram. On a reverse socks remote (c->hos) the relay port is the
 * server's and this host the egress (outbound_h2rev_assoc.c): the reply
 * waits for the server's answer. */
static void socks_udp(struct conn *c)
{
    struct worker *w = c->w;
    const struct udp_owner own = {socks_udp_activity, socks_udp_route, socks_udp_end, c};
    if (c->udp) { /* a second request on one control connection */
        conn_fail(c, OUT_BAD_REQUEST, "bad-request");
        return;
    }
    if (c->hos) {
        int rc = outbound_h2rev_assoc_open(c, &own, socks_udp_ready);
        if (rc) {
            c->err = rc == -ENOMEM ? rc : 0;
            conn_fail(c, OUT_FAILED, "udp-socket");
        }
        return;
    }
    struct addr local, bnd;
    if (sock_local_addr(c->cli.fd, &local) < 0) {
        conn_fail(c, OUT_FAILED, "udp-socket");
        return;
    }
    int rc =
        udp_assoc_open(w, conn_cfg(c), c->listen_index, &c->client, &local, &bnd, &own, &c->udp);
    if (rc) {
        c->err = rc == -ENOMEM ? rc : 0;
        conn_fail(c, OUT_FAILED, rc == UDP_OPEN_LIMIT ? "udp-associations-limit" : "udp-socket");
        return;
    }
    socks_udp_ready(c, &bnd);
}

/* The control connection of an association: whatever arrives is read and
 * discarded; its end (EOF or error) ends the association. */
static void socks_udp_drive(struct conn *c)
{
    char sink[512];
    while (c->cli_ev & SIDE_RD) {
        ssize_t n = conn_cli_recv(c, sink, sizeof(sink));
        if (n > 0)
            continue;
        if (n < 0 && errno == EAGAIN) {
            c->cli_ev &= (uint8_t)~SIDE_RD;
            return;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            conn_close(c, "done");
        else
            conn_close_err(c, "client-error", -errno);
        return;
    }
}

/* ---- BIND --------------------------------------------------------------- */

/* RFC 1928 BIND: listen where the expected host can reach us, tell the
 * client where (first reply), accept one connection from that host only
 * (others are refused), tell the client who came (second reply), then
 * relay. The expected host is the address in the request; or, for a name,
 * any address it resolved to that the rules allow; or, for 0.0.0.0 and ::,
 * the destination of the client's primary session (RFC 1928 section 4),
 * which is the most recent CONNECT of the same client address within
 * bind_timeout (bindmap.h). A listener open to anyone is never handed out.
 * The listening address is the one this host would use to reach the
 * expected host, found by connecting a UDP socket (no packet is sent). */

/* The hosts a BIND by name accepts: the name's addresses that the rules
 * allow. Held in c->bind, which conn.c frees with the session. */
struct bind_peers {
    uint8_t n;
    struct addr a[DNS_MAX_ADDRS];
};

static struct bind_peers *bind_peers_of(const struct conn *c)
{
    return c->bind;
}

static bool same_host(const struct addr *a, const struct addr *b)
{
    return a->family == b->family && memcmp(a->ip, b->ip, a->family == AF_INET6 ? 16 : 4) == 0;
}

/* Is from the host this BIND waits for? */
static bool bind_expects(const struct conn *c, const struct addr *from)
{
    struct addr f = *from;
    addr_unmap(&f);
    const struct bind_peers *p = bind_peers_of(c);
    if (!p)
        return same_host(&f, &c->target);
    for (uint8_t i = 0; i < p->n; i++)
        if (same_host(&f, &p->a[i]))
            return true;
    return false;
}

/* The expected host is known and allowed (peer: the address to listen
 * for): listen, answer, and wait for it within bind_timeout. */
static void socks_bind_listen(struct conn *c, const struct addr *peer)
{
    struct worker *w = c->w;
    struct addr local;
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(peer, &ss);
    int probe = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int rc = probe < 0 ? -errno : 0;
    if (!rc && connect(probe, (struct sockaddr *)&ss, sl) < 0)
        rc = -errno;
    if (!rc)
        rc = sock_local_addr(probe, &local);
    if (probe >= 0)
        close(probe);
    if (rc) {
        c->err = rc;
        conn_fail(c, rc == -ENETUNREACH ? OUT_NET_UNREACHABLE : OUT_FAILED, "bind-failed");
        return;
    }
    local.port = 0;
    int fd = sock_listen(&local, 1, false);
    if (fd < 0 || sock_local_addr(fd, &c->bnd) < 0 ||
        loop_io_add(&w->loop, &c->up, fd, EPOLLIN) < 0) {
        if (fd >= 0)
            close(fd);
        c->err = fd < 0 ? fd : -EIO;
        conn_fail(c, OUT_FAILED, "bind-failed");
        return;
    }
    if (socks_reply_ok(c, &c->bnd))
        return;
    c->reply = OUT_NONE; /* the second reply decides the outcome */
    conn_set_state(c, CONN_ST_BIND);
    loop_timer_arm(&w->loop, &c->timer, conn_cfg(c)->bind_timeout_ms);
}

/* The name's addresses are in: keep those the rules allow for BIND (as
 * CONNECT does, a name cannot bring in an address a range rule denies),
 * listen for the first one the reply can carry. */
static void socks_bind_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    c->dns = NULL;
    if (status != DNS_OK || !ans->n) {
        stat_add(&c->w->stats.dns_failures, 1);
        log_debug("conn %llu: BIND: resolve %s: %s", (unsigned long long)c->id, c->dst_name,
                  dns_status_str(status));
        conn_fail(c, errmap_dns(status), "resolve-failed");
        return;
    }
    struct bind_peers *p = malloc(sizeof(*p));
    if (!p) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    p->n = 0;
    int listen_i = -1;
    int32_t first_rule = POLICY_RULE_NONE, listen_rule = POLICY_RULE_NONE;
    for (uint8_t i = 0; i < ans->n && i < DNS_MAX_ADDRS; i++) {
        struct addr a = ans->a[i];
        addr_unmap(&a);
        a.port = c->dst_port;
        int32_t rule;
        enum policy_verdict v = policy_eval(c, ACL_CMD_BIND, c->dst_name, &a, a.port, &rule);
        if (i == 0)
            first_rule = rule;
        if (v != POLICY_ALLOW)
            continue;
        /* A SOCKS4 reply carries an IPv4 address only. */
        if (listen_i < 0 && (c->proto != PROTO_SOCKS4 || a.family == AF_INET)) {
            listen_i = p->n;
            listen_rule = rule;
        }
        p->a[p->n++] = a;
    }
    if (!p->n) {
        free(p);
        policy_note(c, POLICY_DENY, first_rule);
        c->target = ans->a[0];
        addr_unmap(&c->target);
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    c->target = p->a[listen_i < 0 ? 0 : listen_i];
    if (listen_i < 0) {
        free(p);
        conn_fail(c, OUT_ADDR_UNSUPPORTED, "bind-no-ipv4-address");
        return;
    }
    policy_note(c, POLICY_ALLOW, listen_rule); /* one hit per request */
    free(c->bind);
    c->bind = p;
    socks_bind_listen(c, &c->target);
}

/* BIND listens on this host: a rule sending it through a parent proxy
 * (via NAME) cannot be honoured, and says so rather than bind here. */
static bool socks_bind_here(struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    const struct config_outbound *o = &cfg->outbounds[c->ob_rule];
    bool here = o->kind == OUTBOUND_KIND_DIRECT;
    if (o->kind == OUTBOUND_KIND_POOL) { /* a pool of direct members binds here too */
        here = true;
        for (uint8_t i = 0; i < o->nmembers; i++)
            here = here && cfg->outbounds[o->members[i]].kind == OUTBOUND_KIND_DIRECT;
    }
    if (here)
        return true;
    if (o->kind == OUTBOUND_KIND_REJECT) {
        conn_fail(c, OUT_DENIED, "rejected");
        return false;
    }
    log_info("conn %llu: BIND: the rule at %s sends it via %s (%s), and BIND through a parent "
             "proxy is not supported; refused",
             (unsigned long long)c->id, c->rule ? c->rule : "default", o->name,
             outbound_kind_name(o->kind));
    conn_fail(c, OUT_CMD_UNSUPPORTED, "bind-via-parent");
    return false;
}

/* BIND naming a host: resolve it with the worker's resolver, within
 * connect_timeout (the RESOLVE state's deadline, as for CONNECT). */
static void socks_bind_resolve(struct conn *c, const char *name, uint16_t port)
{
    struct worker *w = c->w;
    c->deadline = loop_now(&w->loop) + conn_cfg(c)->connect_timeout_ms;
    loop_timer_arm_at(&w->loop, &c->timer, c->deadline);
    c->dst_port = port;
    free(c->dst_name);
    c->dst_name = strdup(name);
    if (!c->dst_name) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    if (policy_dest(c, ACL_CMD_BIND, name, NULL, port) == POLICY_DENY) {
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    if (!socks_bind_here(c))
        return;
    struct dns_answer ans = {0};
    int status;
    if (resolver_lookup_now(&w->dns, c->dst_name, port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        socks_bind_on_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, port, socks_bind_on_dns, c);
    if (!c->dns) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

/* BIND naming 0.0.0.0 or ::: the host is the destination of the client's
 * primary session. True with *a set to it (port kept); false after
 * refusing the request when there is none. */
static bool socks_bind_primary(struct conn *c, struct addr *a)
{
    struct addr dst;
    const struct config *cfg = conn_cfg(c);
    if (!bindmap_lookup(&c->client, loop_now(&c->w->loop), cfg->bind_timeout_ms, &dst, NULL)) {
        /* Accepting anyone would hand the client a listening socket open
         * to the world. */
        c->target = *a;
        conn_fail(c, OUT_DENIED, "bind-no-primary-session");
        return false;
    }
    dst.port = a->port;
    char any[ADDR_STRLEN], want[ADDR_STRLEN];
    log_info("conn %llu: BIND %s: expecting %s, the destination of the client's primary session",
             (unsigned long long)c->id, addr_format_ip(a, any, sizeof(any)),
             addr_format_ip(&dst, want, sizeof(want)));
    *a = dst;
    return true;
}

/* ip: the request's address, used when name is NULL (a name may also be
 * an IP literal). */
static void socks_bind(struct conn *c, const struct addr *ip, const char *name, uint16_t port)
{
    if (!conn_cfg(c)->bind) {
        conn_fail(c, OUT_CMD_UNSUPPORTED, "command-not-supported");
        return;
    }
    struct addr peer;
    if (name && addr_parse_ip(name, port, &peer) == 0)
        name = NULL; /* clients often send an IP literal as a "domain" */
    else if (!name)
        peer = *ip;
    if (name) {
        socks_bind_resolve(c, name, port);
        return;
    }
    peer.port = port;
    addr_unmap(&peer); /* judged, listened for and compared as the IPv4 it is */
    if (addr_is_any(&peer) && !socks_bind_primary(c, &peer))
        return;
    c->target = peer; /* the only address allowed to connect */
    if (c->proto == PROTO_SOCKS4 && peer.family != AF_INET) {
        /* A SOCKS4a literal, or a primary session to an IPv6 host: the
         * reply could not say where to connect. */
        conn_fail(c, OUT_ADDR_UNSUPPORTED, "bind-no-ipv4-address");
        return;
    }
    if (policy_dest(c, ACL_CMD_BIND, NULL, &peer, port) != POLICY_ALLOW) {
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    if (!socks_bind_here(c))
        return;
    socks_bind_listen(c, &peer);
}

static void socks_bind_event(struct conn *c)
{
    if (c->cli_ev & SIDE_RDHUP) {
        conn_close(c, "client-closed");
        return;
    }
    for (int i = 0; i < 16 && c->up.fd >= 0; i++) {
        struct addr from;
        int fd = sock_accept(c->up.fd, &from);
        if (fd < 0)
            return;
        if (!bind_expects(c, &from)) {
            char a[ADDR_STRLEN], t[ADDR_STRLEN];
            log_info("conn %llu: BIND: refused a connection from %s (waiting for %s)",
                     (unsigned long long)c->id, addr_format(&from, a, sizeof(a)),
                     c->dst_name ? c->dst_name : addr_format_ip(&c->target, t, sizeof(t)));
            sock_abort(fd);
            close(fd);
            continue;
        }
        /* The one we waited for: it replaces the listening socket. */
        int lfd = c->up.fd;
        loop_io_del(&c->w->loop, &c->up);
        close(lfd);
        free(c->bind);
        c->bind = NULL;
        sock_set_nodelay(fd);
        if (loop_io_add(&c->w->loop, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET) < 0) {
            close(fd);
            conn_fail(c, OUT_FAILED, "bind-failed");
            return;
        }
        c->up_ev = SIDE_RD | SIDE_WR;
        c->target = from;
        if (socks_reply_ok(c, &from) == 0)
            conn_relay_start(c);
        return;
    }
}

static void socks_bind_timeout(struct conn *c)
{
    conn_fail(c, OUT_TIMEOUT, "bind-timeout");
}

/* ---- SOCKS5 handshake ---------------------------------------------------- */

/* Steps return 1 when the state advanced and parsing may go on, 0 when
 * more bytes are needed, -1 when the session went elsewhere (closed,
 * lingering, or waiting for a verdict). */

static int hs_greeting(struct conn *c, struct buf *b)
{
    struct socks5_greeting g;
    ssize_t n = socks5_parse_greeting(buf_head(b), buf_len(b), &g);
    if (n == 0)
        return 0;
    if (n < 0) {
        conn_bad_handshake(c);
        conn_close(c, "bad-version");
        return -1;
    }
    buf_consume(b, (uint32_t)n);
    bool auth = config_auth_enabled(conn_cfg(c));
    uint8_t want = auth ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_NONE;
    bool ok = socks5_offers(&g, want);
    uint8_t msg[2];
    socks5_write_method(msg, ok ? want : SOCKS5_METHOD_NO_ACCEPTABLE);
    /* A client that sent its whole request with the greeting (a chained
     * ferry does) gets the method choice with the reply, in one segment. */
    struct socks5_request next;
    if (ok && !auth && socks5_parse_request(buf_head(b), buf_len(b), &next) > 0) {
        conn_hold_client(c, msg, sizeof(msg));
        conn_set_state(c, CONN_ST_REQUEST);
        return 1;
    }
    int rc = conn_send_client(c, msg, sizeof(msg));
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return -1;
    }
    if (!ok) {
        if (auth)
            conn_set_outcome(c, OUT_AUTH_FAILED); /* offered no username/password */
        conn_bad_handshake(c);
        c->why = auth ? "auth-required" : "no-acceptable-method";
        conn_linger(c);
        return -1;
    }
    conn_set_state(c, auth ? CONN_ST_AUTH : CONN_ST_REQUEST);
    return 1;
}

/* The verdict: RFC 1929 status, then the request or a lingering close
 * (why: the reason to log, or NULL to derive it from result).
 *
 * An attempt that was never verified because the pool is saturated (the
 * queue full, or no verdict within handshake_timeout) gets no status at
 * all: RFC 1929 has only "success" and "failure", and a failure status
 * reads as "wrong password" to clients and users. A close without a
 * verdict is a transient error they retry. */
static void socks_auth_verdict(struct conn *c, int result, const char *why)
{
    if (result == AUTH_BUSY) {
        conn_set_outcome(c, OUT_LIMIT);
        c->why = why ? why : "auth-busy";
        conn_linger(c);
        return;
    }
    uint8_t msg[2];
    bool ok = result == AUTH_OK;
    socks5_write_auth_status(msg, ok ? SOCKS5_AUTH_OK : SOCKS5_AUTH_FAIL);
    int rc = conn_send_client(c, msg, sizeof(msg));
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    if (!ok) {
        conn_set_outcome(c, OUT_AUTH_FAILED);
        c->why = why ? why : result == AUTH_THROTTLED ? "auth-throttled" : "auth-failed";
        conn_linger(c);
        return;
    }
    conn_set_state(c, CONN_ST_REQUEST);
}

/* A verified user may still be over limits.per_user. */
static int socks_auth_result(struct conn *c, int result)
{
    if (result != AUTH_OK)
        return result;
    c->authed = true;
    enum outcome o = policy_admit_user(c);
    if (o == OUT_QUOTA) {
        /* RFC 1929 has one failure status, which says "wrong password":
         * the credentials were right, so the request is answered instead,
         * with REP 0x02 (not allowed), as a denied destination is. */
        c->refuse = OUT_QUOTA;
        return AUTH_OK;
    }
    if (o != OUT_NONE) {
        c->authed = false;
        conn_set_outcome(c, o);
        return AUTH_DENIED;
    }
    return AUTH_OK;
}

static void socks_auth_timeout(struct conn *c)
{
    /* A message that never completed is the client's doing: a failure
     * status. A pool that did not answer in time (a long queue) is not a
     * wrong password, so no status (see socks_auth_verdict); the verdict,
     * when it comes, is counted and dropped. */
    bool waiting = c->state == CONN_ST_AUTH_WAIT;
    auth_abandon(c->auth);
    c->auth = NULL;
    socks_auth_verdict(c, waiting ? AUTH_BUSY : AUTH_DENIED, "auth-timeout");
}

static void socks_on_auth(void *owner, int result)
{
    struct conn *c = owner;
    c->auth = NULL;
    int r = socks_auth_result(c, result);
    socks_auth_verdict(c, r, r != result ? "user-limit" : NULL);
    if (c->state == CONN_ST_REQUEST)
        socks_handshake(c); /* the request may be waiting already */
}

static int hs_auth(struct conn *c, struct buf *b)
{
    struct socks5_userpass up;
    ssize_t n = socks5_parse_userpass(buf_head(b), buf_len(b), &up);
    if (n == 0)
        return 0;
    if (n < 0) {
        /* RFC 1929: any status but 0 means failure, and we close. */
        conn_bad_handshake(c);
        socks_auth_verdict(c, AUTH_DENIED, "bad-auth-message");
        return -1;
    }
    explicit_bzero(buf_head(b), (size_t)n); /* the password leaves no copy behind */
    buf_consume(b, (uint32_t)n);
    conn_set_user(c, up.user, up.ulen);
    const struct config *cfg = conn_cfg(c);
    struct auth_params p;
    config_auth_params(cfg, &p);
    int r = AUTH_BUSY;
    if (c->w->auth)
        r = auth_begin(c->w->auth, &p, &c->client, up.user, up.ulen, up.pass, up.plen,
                       socks_on_auth, c, &c->auth);
    explicit_bzero(&up, sizeof(up));
    if (r == AUTH_PENDING) {
        conn_set_state(c, CONN_ST_AUTH_WAIT);
        return -1;
    }
    int r2 = socks_auth_result(c, r);
    socks_auth_verdict(c, r2, r2 != r ? "user-limit" : NULL);
    return c->state == CONN_ST_REQUEST ? 1 : -1;
}

/* Nothing pipelined behind the request: hold no buffer while dialing. */
static void drop_empty_buf(struct conn *c, struct buf *b)
{
    if (buf_len(b) == 0) {
        buf_put(&c->w->bufs, b);
        c->c2u.buf = NULL;
    }
}

static int hs_request5(struct conn *c, struct buf *b)
{
    struct socks5_request req;
    ssize_t n = socks5_parse_request(buf_head(b), buf_len(b), &req);
    if (n == 0)
        return 0;
    if (n < 0) {
        conn_bad_handshake(c);
        if (socks5_error_reply(n) < 0) {
            conn_close(c, "bad-version");
            return -1;
        }
        /* Answered with what socks5_error_reply() names: an address
         * type, or a general failure for a malformed request. */
        conn_fail(c, n == SOCKS5_E_ATYP ? OUT_ADDR_UNSUPPORTED : OUT_BAD_REQUEST,
                  n == SOCKS5_E_ATYP  ? "bad-address-type"
                  : n == SOCKS5_E_RSV ? "bad-reserved-byte"
                                      : "bad-domain");
        return -1;
    }
    buf_consume(b, (uint32_t)n);
    c->cmd = req.cmd;
    if (c->refuse) {
        conn_fail(c, (enum outcome)c->refuse, c->why);
        return -1;
    }
    struct addr ip;
    bool is_ip = socks5_addr_to_addr(&req.dst, &ip);
    switch (req.cmd) {
    case SOCKS5_CMD_UDP_ASSOCIATE:
        socks_udp(c);
        return -1;
    case SOCKS5_CMD_BIND:
        drop_empty_buf(c, b);
        socks_bind(c, &ip, is_ip ? NULL : req.dst.u.domain, req.dst.port);
        return -1;
    case SOCKS5_CMD_CONNECT:
        drop_empty_buf(c, b);
        conn_dial(c, is_ip ? NULL : req.dst.u.domain, &ip, req.dst.port);
        return -1;
    default:
        conn_fail(c, OUT_CMD_UNSUPPORTED, "command-not-supported");
        return -1;
    }
}

/* ---- SOCKS4 ------------------------------------------------------------- */

static int hs_request4(struct conn *c, struct buf *b)
{
    struct socks4_request req;
    ssize_t n = socks4_parse_request(buf_head(b), buf_len(b), &req);
    if (n == 0)
        return 0;
    if (n < 0) {
        conn_bad_handshake(c);
        conn_fail(c, OUT_BAD_REQUEST, n == SOCKS4_E_VERSION ? "bad-version" : "bad-field");
        return -1;
    }
    buf_consume(b, (uint32_t)n);
    c->cmd = req.cmd;
    if (req.userid[0])
        conn_set_user(c, req.userid, strlen(req.userid)); /* SOCKS4's USERID: logged, unchecked */
    if (config_auth_enabled(conn_cfg(c))) {
        /* SOCKS4 cannot carry a password. */
        conn_fail(c, OUT_DENIED, "auth-required");
        return -1;
    }
    struct addr ip = {.family = AF_INET, .port = req.port};
    memcpy(ip.ip, req.ip, 4);
    const char *name = socks4_is_4a(&req) ? req.host : NULL;
    switch (req.cmd) {
    case SOCKS4_CMD_CONNECT:
        drop_empty_buf(c, b);
        conn_dial(c, name, &ip, req.port);
        return -1;
    case SOCKS4_CMD_BIND:
        drop_empty_buf(c, b);
        socks_bind(c, &ip, name, req.port);
        return -1;
    default:
        conn_fail(c, OUT_CMD_UNSUPPORTED, "command-not-supported");
        return -1;
    }
}

static void socks_handshake(struct conn *c)
{
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_bad_handshake(c);
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    if (c->proto == PROTO_SOCKS4 && c->state == CONN_ST_GREETING)
        conn_set_state(c, CONN_ST_REQUEST);
    for (;;) {
        int step = -1;
        switch ((enum conn_state)c->state) {
        case CONN_ST_GREETING:
            step = hs_greeting(c, b);
            break;
        case CONN_ST_AUTH:
            step = hs_auth(c, b);
            break;
        case CONN_ST_REQUEST:
            step = c->proto == PROTO_SOCKS4 ? hs_request4(c, b) : hs_request5(c, b);
            break;
        case CONN_ST_PROXY:
        case CONN_ST_AUTH_WAIT:
        case CONN_ST_RESOLVE:
        case CONN_ST_CONNECT:
        case CONN_ST_RELAY:
        case CONN_ST_UDP:
        case CONN_ST_BIND:
        case CONN_ST_HTTP_HEAD:
        case CONN_ST_HTTP_FWD:
        case CONN_ST_H2:
        case CONN_ST_LINGER:
        case CONN_ST_CLOSED:
        case CONN_ST_COUNT:
            return;
        }
        if (step > 0)
            continue;
        if (step < 0)
            return;
        /* Need more bytes; a client that has closed will send none. */
        if (c->c2u.flags & HALF_EOF) {
            conn_bad_handshake(c);
            if (c->state == CONN_ST_AUTH && buf_len(b)) {
                socks_auth_verdict(c, AUTH_DENIED, "truncated-handshake");
                return;
            }
            conn_close(c, buf_len(b) ? "truncated-handshake" : "client-closed");
        }
        return;
    }
}

/* ---- the front rows ------------------------------------------------------ */

static void socks_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    if (c->state == CONN_ST_UDP)
        socks_udp_drive(c);
    else if (c->state == CONN_ST_BIND)
        socks_bind_event(c);
    else
        socks_handshake(c);
}

static void socks_timeout(struct conn *c)
{
    switch ((enum conn_state)c->state) {
    case CONN_ST_AUTH_WAIT:
        socks_auth_timeout(c);
        break;
    case CONN_ST_AUTH:
        /* A username/password message that never completed (truncated):
         * RFC 1929 failure status, then close. */
        conn_bad_handshake(c);
        socks_auth_timeout(c);
        break;
    case CONN_ST_BIND:
        socks_bind_timeout(c);
        break;
    case CONN_ST_GREETING:
    case CONN_ST_REQUEST:
    case CONN_ST_PROXY:
    case CONN_ST_RESOLVE:
    case CONN_ST_CONNECT:
    case CONN_ST_RELAY:
    case CONN_ST_UDP:
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
    case CONN_ST_H2:
    case CONN_ST_LINGER:
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        conn_bad_handshake(c);
        conn_close(c, "handshake-timeout");
        break;
    }
}

static const char *socks_cmd_name(const struct conn *c)
{
    switch (c->cmd) {
    case 0:
        return "-";
    case SOCKS5_CMD_CONNECT:
        return "connect";
    case SOCKS5_CMD_BIND:
        return "bind";
    case SOCKS5_CMD_UDP_ASSOCIATE:
        return "udp";
    default:
        return "other";
    }
}

/* One access-log line per session. */
static void socks_end(struct conn *c)
{
    conn_access_log(c, socks_cmd_name(c),
                    c->reply == OUT_NONE ? "-" : socks5_rep_str(errmap_socks5(c->reply)));
}

const struct front_ops front_socks5 = {
    .name = "socks5",
    .proto = PROTO_SOCKS5,
    .sp = SP_SOCKS5,
    .start = socks_handshake,
    .drive = socks_drive,
    .connected = socks_connected,
    .fail_reply = socks_fail_reply,
    .timeout = socks_timeout,
    .end = socks_end,
};

const struct front_ops front_socks4 = {
    .name = "socks4",
    .proto = PROTO_SOCKS4,
    .sp = SP_SOCKS4,
    .start = socks_handshake,
    .drive = socks_drive,
    .connected = socks_connected,
    .fail_reply = socks_fail_reply,
    .timeout = socks_timeout,
    .end = socks_end,
};
