/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c: the session core: accept, the first byte that picks the
 * protocol, resolving and dialing, the byte relay, lingering close, timers,
 * and the access-log line. The protocols themselves live in socks.c and
 * http.c and come back here through session.h.
 *
 * Rules kept here: conn_set_state() is the only writer of c->state; every
 * path that ends a session goes through conn_close(); after conn_close()
 * nothing touches the session but its release (loop_release: freed after
 * the batch of events, which may still hold one for its sockets).
 */
#include "relay/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "acl/limits.h"
#include "acl/rules.h"
#include "auth/auth.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/pipe.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/proxy.h"
#include "proto/socks5.h"
#include "relay/errmap.h"
#include "relay/session.h"
#include "udp/udp.h"

#define CONN_FREELIST_MAX 4096

/* Addresses to try while connecting, with the rule that allowed each. */
struct conn_addrs {
    uint8_t n;
    struct addr a[DNS_MAX_ADDRS];
    int32_t rule[DNS_MAX_ADDRS]; /* POLICY_RULE_NONE when no rule was asked */
};
#define LINGER_MS      1000
#define LINGER_DISCARD (64 * 1024)

static const char *const state_names[CONN_ST_COUNT] = {
    [CONN_ST_PROXY] = "proxy",
    [CONN_ST_GREETING] = "greeting",
    [CONN_ST_AUTH] = "auth",
    [CONN_ST_AUTH_WAIT] = "auth-wait",
    [CONN_ST_REQUEST] = "request",
    [CONN_ST_RESOLVE] = "resolve",
    [CONN_ST_CONNECT] = "connect",
    [CONN_ST_RELAY] = "relay",
    [CONN_ST_UDP] = "udp",
    [CONN_ST_BIND] = "bind",
    [CONN_ST_HTTP_HEAD] = "http-head",
    [CONN_ST_HTTP_FWD] = "http-fwd",
    [CONN_ST_LINGER] = "linger",
    [CONN_ST_CLOSED] = "closed",
};

const char *conn_state_name(enum conn_state s)
{
    return (unsigned)s < CONN_ST_COUNT ? state_names[s] : "?";
}

const struct config *conn_cfg(const struct conn *c)
{
    return c->wc->cfg;
}

uint32_t conn_iotimeout(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return c->listen_index < cfg->nlisten ? cfg->listen[c->listen_index].iotimeout_ms
                                          : cfg->iotimeout_ms;
}

void conn_set_state(struct conn *c, enum conn_state s)
{
    log_debug("conn %llu: %s -> %s", (unsigned long long)c->id, state_names[c->state],
              state_names[s]);
    c->state = (uint8_t)s;
}

/* ---- closing ---------------------------------------------------------- */

/* The loop's release callback: the batch that closed the session is over. */
static void conn_free(struct release *r)
{
    struct conn *c = container_of(r, struct conn, rel);
    struct worker *w = c->w;
    loop_task_cancel(&c->task); /* a resume queued after the close never runs */
    if (w->nfree_sessions < CONN_FREELIST_MAX) {
        *(void **)c = w->free_sessions;
        w->free_sessions = c;
        w->nfree_sessions++;
    } else {
        free(c);
    }
}

void conn_access_log(struct conn *c, const char *cmd, const char *reply)
{
    if (!conn_cfg(c)->access_log || !log_enabled(LOG_INFO))
        return;
    char client[ADDR_STRLEN], target[ADDR_STRLEN], dst[300];
    addr_format(&c->client, client, sizeof(client));
    addr_format(&c->target, target, sizeof(target));
    if (c->dst_name)
        snprintf(dst, sizeof(dst), "%s:%u", c->dst_name, c->dst_port);
    else if (c->target.family && c->cmd != SOCKS5_CMD_UDP_ASSOCIATE)
        snprintf(dst, sizeof(dst), "%s", target);
    else
        snprintf(dst, sizeof(dst), "-");
    char err[48] = "";
    if (c->err)
        snprintf(err, sizeof(err), " err=%s", errmap_name(c->err));
    log_write(LOG_INFO,
              "access id=%llu client=%s user=%s cmd=%s dst=%s addr=%s up=%llu down=%llu "
              "ms=%llu reply=%s end=%s%s%s%s",
              (unsigned long long)c->id, client, c->user ? c->user : "-", cmd, dst,
              c->target.family ? target : "-", (unsigned long long)c->c2u.bytes,
              (unsigned long long)c->u2c.bytes,
              (unsigned long long)(loop_now(&c->w->loop) - c->t_start), reply,
              c->why ? c->why : "-", err, c->rule ? " rule=" : "", c->rule ? c->rule : "");
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

void conn_close_fd(struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        io->fd = -1; /* events still queued for it in this iteration are ignored */
        close(fd);
    }
}

static enum stats_proto conn_sp(const struct conn *c)
{
    switch (c->proto) {
    case PROTO_SOCKS5:
        return SP_SOCKS5;
    case PROTO_SOCKS4:
        return SP_SOCKS4;
    case PROTO_HTTP:
        return SP_HTTP;
    default:
        return SP_NONE;
    }
}

void conn_count_bytes(struct conn *c)
{
    /* bytes dips below counted while a queued reply is pre-subtracted
     * (conn_send_client): count only growth, never a wrapped difference. */
    struct worker_stats *st = &c->w->stats;
    if (c->c2u.bytes > c->c2u.counted) {
        stat_add(&st->bytes_up, c->c2u.bytes - c->c2u.counted);
        c->c2u.counted = c->c2u.bytes;
    }
    if (c->u2c.bytes > c->u2c.counted) {
        stat_add(&st->bytes_down, c->u2c.bytes - c->u2c.counted);
        c->u2c.counted = c->u2c.bytes;
    }
}

void conn_set_outcome(struct conn *c, enum stats_outcome o)
{
    if (c->outcome == OC_UNSET)
        c->outcome = (uint8_t)o;
}

void conn_succeeded(struct conn *c)
{
    conn_set_outcome(c, OC_OK);
    uint64_t now = clock_us();
    stats_hs_observe(&c->w->stats, conn_sp(c), now > c->t_start_us ? now - c->t_start_us : 0);
}

void conn_bad_handshake(struct conn *c)
{
    stat_add(&c->w->stats.handshake_errors, 1);
    conn_set_outcome(c, OC_BAD_REQUEST);
}

void conn_close(struct conn *c, const char *why)
{
    if (c->state == CONN_ST_CLOSED)
        return;
    struct worker *w = c->w;
    if (!c->why)
        c->why = why;
    if (c->udp) {
        udp_assoc_close(c->udp, &c->c2u.bytes, &c->u2c.bytes);
        c->udp = NULL;
    }
    conn_count_bytes(c);
    enum stats_proto sp = conn_sp(c);
    stat_add(&w->stats.sessions[sp][c->outcome < OC_COUNT ? c->outcome : OC_ERROR], 1);
    stat_sub(&w->stats.active_proto[sp], 1);
    if (c->proto != PROTO_HTTP)
        conn_access_log(c, socks_cmd_name(c), c->reply == 0xff ? "-" : socks5_rep_str(c->reply));
    http_free(c); /* logs the request in progress, if any */
    conn_set_state(c, CONN_ST_CLOSED);
    resolver_cancel(c->dns);
    c->dns = NULL;
    loop_timer_stop(&w->loop, &c->timer);
    conn_close_fd(&c->cli);
    conn_close_fd(&c->up);
    relay_release(c);
    free(c->ans);
    c->ans = NULL;
    free(c->bind);
    c->bind = NULL;
    free(c->dst_name);
    c->dst_name = NULL;
    auth_abandon(c->auth);
    c->auth = NULL;
    policy_bw_stop(c);
    policy_release_user(c);
    policy_release_client(c);
    free(c->user);
    c->user = NULL;
    worker_cfg_release(w, c->wc);
    list_del(&c->link);
    worker_session_ended(w);
    loop_task_cancel(&c->task);
    loop_release(&w->loop, &c->rel, conn_free); /* after this batch of events */
}

void conn_close_err(struct conn *c, const char *why, int err)
{
    c->err = err;
    conn_close(c, why);
}

/* ---- replies ---------------------------------------------------------- */

/* The socket is fresh or idle, so a short reply nearly always goes out
 * whole; whatever does not is kept in the client-bound buffer and flushed by
 * the relay or the linger state. */
int conn_send_client(struct conn *c, const uint8_t *p, size_t len)
{
    struct half *h = &c->u2c;
    size_t sent = 0;
    if (!h->buf || buf_len(h->buf) == 0) {
        ssize_t n = send(c->cli.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        sent = n > 0 ? (size_t)n : 0;
    }
    if (sent == len)
        return 0;
    if (!h->buf && !(h->buf = buf_get(&c->w->bufs)))
        return -ENOMEM;
    if (buf_room(h->buf) < len - sent)
        buf_compact(h->buf);
    if (buf_room(h->buf) < len - sent)
        return -ENOBUFS;
    memcpy(buf_tail(h->buf), p + sent, len - sent);
    h->buf->end += (uint32_t)(len - sent);
    h->bytes -= len - sent; /* handshake bytes are not payload: cancel the later count */
    c->cli_ev &= (uint8_t)~SIDE_WR;
    return 0;
}

void conn_fail(struct conn *c, uint8_t rep, const char *why)
{
    c->reply = rep;
    c->why = why;
    conn_set_outcome(c, stats_outcome_of_rep(rep));
    stat_add(&c->w->stats.socks5_replies[rep < STATS_SOCKS5_REPLIES ? rep : 1], 1);
    if (c->proto == PROTO_HTTP)
        http_fail_reply(c, rep, why);
    else
        socks_fail_reply(c, rep);
}

/* ---- linger ----------------------------------------------------------- */

static void conn_linger_drive(struct conn *c)
{
    struct half *h = &c->u2c;
    if (h->buf && buf_len(h->buf)) {
        if (!(c->cli_ev & SIDE_WR))
            return;
        ssize_t n = send(c->cli.fd, buf_head(h->buf), buf_len(h->buf), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN) {
                c->cli_ev &= (uint8_t)~SIDE_WR;
                return;
            }
            conn_close_err(c, c->why, -errno);
            return;
        }
        buf_consume(h->buf, (uint32_t)n);
        h->bytes += (uint64_t)n; /* a queued reply: undo its pre-subtraction */
        if (buf_len(h->buf))
            return;
    }
    if (!(h->flags & HALF_SHUT)) {
        shutdown(c->cli.fd, SHUT_WR);
        h->flags |= HALF_SHUT;
    }
    /* Discard what the client still sends, up to a bound, until it closes. */
    char sink[4096];
    while (c->cli_ev & SIDE_RD) {
        ssize_t n = recv(c->cli.fd, sink, sizeof(sink), 0);
        if (n > 0) {
            c->discarded += (uint32_t)n;
            if (c->discarded > LINGER_DISCARD) {
                conn_close(c, c->why);
                return;
            }
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            c->cli_ev &= (uint8_t)~SIDE_RD;
            return;
        }
        conn_close(c, c->why); /* EOF or error: the client has the reply */
        return;
    }
}

void conn_linger(struct conn *c)
{
    struct worker *w = c->w;
    conn_close_fd(&c->up);
    resolver_cancel(c->dns);
    c->dns = NULL;
    /* Keep nothing but an unsent reply. */
    buf_put(&w->bufs, c->c2u.buf);
    c->c2u.buf = NULL;
    pipe_put(&w->pipes, c->c2u.pipe);
    pipe_put(&w->pipes, c->u2c.pipe);
    c->c2u.pipe = c->u2c.pipe = NULL;
    if (c->u2c.buf && buf_len(c->u2c.buf) == 0) {
        buf_put(&w->bufs, c->u2c.buf);
        c->u2c.buf = NULL;
    }
    c->discarded = 0;
    conn_set_state(c, CONN_ST_LINGER);
    uint64_t ms = conn_cfg(c)->handshake_timeout_ms;
    loop_timer_arm(&w->loop, &c->timer, ms < LINGER_MS ? ms : LINGER_MS);
    conn_linger_drive(c);
}

/* ---- relay ------------------------------------------------------------ */

void conn_arm_idle(struct conn *c)
{
    uint32_t idle = conn_iotimeout(c);
    if (idle)
        loop_timer_arm_at(&c->w->loop, &c->timer, c->last_active + idle);
    else
        loop_timer_stop(&c->w->loop, &c->timer);
}

static void conn_relay_drive(struct conn *c)
{
    int rc = relay_pump(c);
    if (rc) {
        conn_close_err(c, c->why, rc);
        return;
    }
    if (relay_done(c))
        conn_close(c, "done");
}

void conn_resume(struct conn *c)
{
    if (c->state == CONN_ST_RELAY)
        conn_relay_drive(c);
    else if (c->state == CONN_ST_HTTP_FWD)
        http_drive(c, 0);
}

void conn_relay_start(struct conn *c)
{
    policy_bw_start(c);
    conn_set_state(c, CONN_ST_RELAY);
    c->last_active = loop_now(&c->w->loop);
    conn_arm_idle(c);
    conn_relay_drive(c);
}

/* ---- connect ---------------------------------------------------------- */

static void conn_connect_next(struct conn *c, int last_err);

void conn_connected(struct conn *c)
{
    sock_set_nodelay(c->up.fd);
    /* SOCKS replies carry BND (the outgoing socket's own address); an HTTP
     * proxy has no use for it, so it saves the syscall. */
    if (c->proto != PROTO_HTTP && sock_local_addr(c->up.fd, &c->bnd) < 0)
        memset(&c->bnd, 0, sizeof(c->bnd));
    free(c->ans);
    c->ans = NULL;
    if (c->proto == PROTO_HTTP)
        http_connected(c);
    else
        socks_connected(c);
}

/* Try the next address of the answer, giving each remaining address an even
 * share of what is left of the connect timeout. */
static void conn_connect_next(struct conn *c, int last_err)
{
    struct worker *w = c->w;
    conn_close_fd(&c->up);
    uint64_t now = loop_now(&w->loop);
    while (c->ans && c->next_addr < c->ans->n && now < c->deadline) {
        const char *rule = policy_rule_name(c, c->ans->rule[c->next_addr]);
        if (rule)
            c->rule = rule;
        const struct addr *a = &c->ans->a[c->next_addr++];
        c->target = *a;
        int fd = sock_connect(a);
        if (fd < 0) {
            last_err = fd;
            continue;
        }
        int rc = loop_io_add(&w->loop, &c->up, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
        if (rc) {
            close(fd);
            last_err = rc;
            continue;
        }
        c->up_ev = 0;
        conn_set_state(c, CONN_ST_CONNECT);
        uint64_t left = (uint64_t)(c->ans->n - c->next_addr) + 1;
        loop_timer_arm_at(&w->loop, &c->timer, now + (c->deadline - now) / left);
        return;
    }
    if (now >= c->deadline)
        last_err = -ETIMEDOUT;
    c->err = last_err;
    conn_fail(c, errmap_socks5_connect(last_err),
              last_err == -ETIMEDOUT ? "connect-timeout" : "connect-failed");
}

static void conn_check_connect(struct conn *c, uint32_t events)
{
    /* EPOLLOUT alone means the connect succeeded; only an error or hangup
     * needs SO_ERROR to say why. */
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return;
    int err = (events & (EPOLLERR | EPOLLHUP)) ? sock_error(c->up.fd) : 0;
    if (err == 0 && !(events & (EPOLLERR | EPOLLHUP))) {
        conn_connected(c);
        return;
    }
    if (err == 0)
        err = -ECONNREFUSED; /* hung up without an error: treat as refused */
    conn_connect_next(c, err);
}

static void conn_begin_connect(struct conn *c, const struct dns_answer *ans)
{
    struct conn_addrs *t = c->ans = malloc(sizeof(*c->ans));
    if (!t) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    /* Rules on address ranges apply to what a name resolved to (no DNS
     * rebinding into a denied range): keep the addresses allowed, each with
     * the rule that allowed it, for the log of the one connected to. */
    t->n = 0;
    int32_t first_rule = POLICY_RULE_NONE;
    for (uint8_t i = 0; i < ans->n; i++) {
        struct addr a = ans->a[i];
        addr_unmap(&a);
        int32_t rule = POLICY_RULE_NONE;
        enum policy_verdict v = POLICY_ALLOW;
        if (c->dst_name)
            v = policy_eval(c, 0, c->dst_name, &a, c->dst_port, &rule);
        if (i == 0)
            first_rule = rule;
        if (v == POLICY_ALLOW) {
            t->a[t->n] = a;
            t->rule[t->n++] = rule;
        }
    }
    if (!t->n) {
        policy_note(c, POLICY_DENY, first_rule);
        c->target = ans->a[0];
        addr_unmap(&c->target);
        conn_fail(c, SOCKS5_REP_NOT_ALLOWED, "denied");
        return;
    }
    if (c->dst_name)
        policy_note(c, POLICY_ALLOW, t->rule[0]); /* one hit per request */
    c->next_addr = 0;
    conn_connect_next(c, -EHOSTUNREACH);
}

static void conn_on_dns(void *arg, int status, const struct dns_answer *ans)
{
    struct conn *c = arg;
    c->dns = NULL;
    if (status != DNS_OK) {
        stat_add(&c->w->stats.dns_failures, 1);
        log_debug("conn %llu: resolve %s: %s", (unsigned long long)c->id, c->dst_name,
                  dns_status_str(status));
        conn_fail(c, errmap_socks5_dns(status), "resolve-failed");
        return;
    }
    conn_begin_connect(c, ans);
}

void conn_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    struct worker *w = c->w;
    struct dns_answer ans = {0};
    c->deadline = loop_now(&w->loop) + conn_cfg(c)->connect_timeout_ms;
    loop_timer_arm_at(&w->loop, &c->timer, c->deadline);
    c->dst_port = port;
    free(c->dst_name);
    c->dst_name = NULL;

    struct addr target = *ip;
    target.port = port;
    enum policy_verdict v = policy_dest(c, 0, name, name ? NULL : &target, port);
    if (v == POLICY_DENY) {
        if (name)
            c->dst_name = strdup(name);
        else
            c->target = target;
        conn_fail(c, SOCKS5_REP_NOT_ALLOWED, "denied");
        return;
    }
    if (!name) {
        ans.a[0] = *ip;
        ans.a[0].port = port;
        ans.n = 1;
        conn_begin_connect(c, &ans);
        return;
    }
    c->dst_name = strdup(name);
    if (!c->dst_name) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    /* Clients often send an IP literal as a "domain". */
    if (addr_parse_ip(c->dst_name, port, &ans.a[0]) == 0) {
        ans.n = 1;
        conn_begin_connect(c, &ans);
        return;
    }
    int status;
    if (resolver_lookup_now(&w->dns, c->dst_name, port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        conn_on_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, port, conn_on_dns, c);
    if (!c->dns) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

/* ---- handshake input -------------------------------------------------- */

int conn_read_handshake(struct conn *c)
{
    struct half *h = &c->c2u;
    if (!h->buf && !(h->buf = buf_get(&c->w->bufs)))
        return -ENOMEM;
    while ((c->cli_ev & SIDE_RD) && buf_room(h->buf) > 0 && !(h->flags & HALF_EOF)) {
        uint32_t room = buf_room(h->buf);
        ssize_t n = recv(c->cli.fd, buf_tail(h->buf), room, 0);
        if (n > 0) {
            h->buf->end += (uint32_t)n;
            /* A short read emptied the socket (see pump.c for the RDHUP rule). */
            if ((uint32_t)n < room && !(c->cli_ev & SIDE_RDHUP))
                c->cli_ev &= (uint8_t)~SIDE_RD;
        } else if (n == 0) {
            h->flags |= HALF_EOF;
        } else if (errno == EAGAIN) {
            c->cli_ev &= (uint8_t)~SIDE_RD;
        } else if (errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

void conn_set_user(struct conn *c, const char *name, size_t len)
{
    free(c->user);
    c->user = malloc(len + 1);
    if (!c->user)
        return;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        c->user[i] = ch <= 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    c->user[len] = '\0';
}

/* The first byte picks the protocol, among those the listener speaks. */
static void conn_first_byte(struct conn *c)
{
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    if (buf_len(b) == 0) {
        if (c->c2u.flags & HALF_EOF)
            conn_close(c, "client-closed");
        return;
    }
    const struct config *cfg = conn_cfg(c);
    uint8_t allowed = cfg->listen[c->listen_index].protocols;
    if (!allowed)
        allowed = cfg->protocols;
    uint8_t first = *buf_head(b);
    /* HTTP: a method's first letter, or the CR of an empty line before the
     * request line (RFC 9112 2.2; http.c skips a few). */
    bool http = (first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z') || first == '\r';
    uint8_t proto = first == 0x05   ? PROTO_SOCKS5
                    : first == 0x04 ? PROTO_SOCKS4
                    : http          ? PROTO_HTTP
                                    : 0;
    if (!proto || !(allowed & proto)) {
        conn_bad_handshake(c);
        stat_add(&c->w->stats.unknown_protocol, 1);
        conn_close(c, proto ? "protocol-not-enabled" : "unknown-protocol");
        return;
    }
    c->proto = proto;
    stat_sub(&c->w->stats.active_proto[SP_NONE], 1);
    stat_add(&c->w->stats.active_proto[conn_sp(c)], 1);
    if (proto == PROTO_HTTP)
        http_start(c);
    else
        socks_handshake(c);
}

/* ---- PROXY protocol ------------------------------------------------------ */

static bool proxy_trusted(const struct config *cfg, const struct addr *peer)
{
    for (size_t i = 0; i < cfg->nproxy_from; i++)
        if (acl_cidr_contains(&cfg->proxy_from[i], peer))
            return true;
    return false;
}

/* Refusals come in floods (a scanner, a misrouted health check): one log
 * line per second per worker says how many. */
static void proxy_refused(struct conn *c, const char *why)
{
    static _Thread_local uint64_t last_ms, suppressed;
    uint64_t now = loop_now(&c->w->loop);
    stat_add(&c->w->stats.proxy_rejected, 1);
    if (last_ms && now - last_ms < 1000) {
        suppressed++;
    } else {
        char a[ADDR_STRLEN];
        log_warn("proxy_protocol: connection from %s refused: %s%s",
                 addr_format(&c->client, a, sizeof(a)), why,
                 suppressed ? " (and others in the last second)" : "");
        last_ms = now;
        suppressed = 0;
    }
    conn_bad_handshake(c);
    conn_close(c, "proxy-protocol");
}

static void conn_proxy_header(struct conn *c)
{
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    const struct config *cfg = conn_cfg(c);
    uint8_t ver = cfg->listen[c->listen_index].proxy_protocol;
    struct proxy_header h;
    ssize_t n = proxy_parse(ver == 2 ? PROXY_V2 : PROXY_V1, buf_head(b), buf_len(b), &h);
    if (n == 0) {
        if (c->c2u.flags & HALF_EOF)
            proxy_refused(c, "closed before a whole PROXY header");
        else if (buf_room(b) == 0)
            proxy_refused(c, "PROXY header larger than the buffer");
        return;
    }
    if (n < 0) {
        proxy_refused(c, proxy_strerror((int)n));
        return;
    }
    buf_consume(b, (uint32_t)n);
    if (!h.local) {
        addr_unmap(&h.src); /* as accept() reports them, for rules and limits */
        c->client = h.src;
    }
    bool tracked;
    if (!policy_admit_client(c->w, &c->client, &tracked)) {
        conn_set_outcome(c, OC_LIMITED);
        sock_abort(c->cli.fd);
        conn_close(c, "limit");
        return;
    }
    c->ip_tracked = tracked;
    conn_set_state(c, CONN_ST_GREETING);
    if (buf_len(b) || (c->cli_ev & SIDE_RD) || (c->c2u.flags & HALF_EOF))
        conn_first_byte(c);
}

/* ---- events ----------------------------------------------------------- */

static uint8_t side_events(uint32_t events)
{
    uint8_t ev = 0;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        ev |= SIDE_RD;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
        ev |= SIDE_WR;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        ev |= SIDE_RDHUP;
    return ev;
}

static void conn_drive(struct conn *c, uint32_t cli_events, uint32_t up_events)
{
    switch ((enum conn_state)c->state) {
    case CONN_ST_PROXY:
        conn_proxy_header(c);
        break;
    case CONN_ST_GREETING:
        if (!c->proto) {
            conn_first_byte(c);
            break;
        }
        socks_handshake(c);
        break;
    case CONN_ST_AUTH:
    case CONN_ST_REQUEST:
        socks_handshake(c);
        break;
    case CONN_ST_AUTH_WAIT:
    case CONN_ST_RESOLVE:
        if (cli_events & (EPOLLHUP | EPOLLERR))
            conn_close(c, "client-closed");
        break;
    case CONN_ST_CONNECT:
        if (cli_events & (EPOLLHUP | EPOLLERR))
            conn_close(c, "client-closed");
        else if (up_events)
            conn_check_connect(c, up_events);
        break;
    case CONN_ST_RELAY:
        conn_relay_drive(c);
        break;
    case CONN_ST_UDP:
        socks_udp_drive(c);
        break;
    case CONN_ST_BIND:
        socks_bind_event(c, up_events);
        break;
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
        http_drive(c, up_events);
        break;
    case CONN_ST_LINGER:
        conn_linger_drive(c);
        break;
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
}

static void conn_on_cli_io(struct io *io, uint32_t events)
{
    struct conn *c = container_of(io, struct conn, cli);
    c->cli_ev |= side_events(events);
    conn_drive(c, events, 0);
}

static void conn_on_up_io(struct io *io, uint32_t events)
{
    struct conn *c = container_of(io, struct conn, up);
    c->up_ev |= side_events(events);
    conn_drive(c, 0, events);
}

static void conn_on_timer(struct timer *t)
{
    struct conn *c = container_of(t, struct conn, timer);
    switch ((enum conn_state)c->state) {
    case CONN_ST_AUTH_WAIT:
        if (c->proto == PROTO_HTTP) {
            http_timeout(c);
            break;
        }
        socks_auth_timeout(c);
        break;
    case CONN_ST_PROXY:
        proxy_refused(c, "no PROXY header within handshake_timeout");
        break;
    case CONN_ST_AUTH:
        /* A username/password message that never completed (truncated):
         * RFC 1929 failure status, then close. */
        conn_bad_handshake(c);
        socks_auth_timeout(c);
        break;
    case CONN_ST_GREETING:
    case CONN_ST_REQUEST:
        conn_bad_handshake(c);
        conn_close(c, "handshake-timeout");
        break;
    case CONN_ST_RESOLVE:
        conn_fail(c, SOCKS5_REP_TTL_EXPIRED, "connect-timeout");
        break;
    case CONN_ST_CONNECT:
        conn_connect_next(c, -ETIMEDOUT);
        break;
    case CONN_ST_RELAY:
    case CONN_ST_UDP: {
        uint32_t idle = conn_iotimeout(c);
        if (idle && loop_now(&c->w->loop) - c->last_active >= idle)
            conn_close(c, "idle-timeout");
        else
            conn_arm_idle(c); /* activity since arming: coarse idle accounting */
        break;
    }
    case CONN_ST_BIND:
        socks_bind_timeout(c);
        break;
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
        http_timeout(c);
        break;
    case CONN_ST_LINGER:
        conn_close(c, c->why);
        break;
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
}

/* Deferred work: resume a relay that yielded. */
static void conn_on_task(struct task *t)
{
    struct conn *c = container_of(t, struct conn, task);
    if (c->state == CONN_ST_RELAY)
        conn_relay_drive(c);
    else if (c->state == CONN_ST_HTTP_FWD || c->state == CONN_ST_HTTP_HEAD)
        http_drive(c, 0);
}

/* ---- worker hooks ----------------------------------------------------- */

static struct conn *conn_alloc(struct worker *w)
{
    struct conn *c = w->free_sessions;
    if (c) {
        w->free_sessions = *(void **)c;
        w->nfree_sessions--;
    } else {
        c = malloc(sizeof(*c));
        if (!c)
            return NULL;
    }
    memset(c, 0, sizeof(*c));
    return c;
}

static void relay_accept(struct worker *w, struct listener *ls, int fd, const struct addr *peer)
{
    bool tracked = false;
    /* Behind a load balancer the limits apply to the address in the PROXY
     * header, not to the balancer: admission waits for it. */
    const struct config *cfg = w->cur->cfg;
    uint8_t pp = ls->index < cfg->nlisten ? cfg->listen[ls->index].proxy_protocol : 0;
    if (!pp && !policy_admit_client(w, peer, &tracked)) {
        /* Over the address's limits: closed before reading a byte. */
        sock_abort(fd);
        close(fd);
        stat_add(&w->stats.sessions[SP_NONE][OC_LIMITED], 1);
        worker_session_ended(w);
        return;
    }
    struct conn *c = conn_alloc(w);
    if (!c) {
        close(fd);
        if (tracked)
            limits_ip_release(w->sh->limits, peer);
        stat_add(&w->stats.sessions[SP_NONE][OC_ERROR], 1);
        worker_session_ended(w);
        return;
    }
    c->w = w;
    c->id = atomic_fetch_add_explicit(&w->sh->next_id, 1, memory_order_relaxed) + 1;
    c->client = *peer;
    c->reply = 0xff;
    c->listen_index = (uint8_t)ls->index;
    c->wc = worker_cfg_hold(w);
    c->ip_tracked = tracked;
    c->t_start = loop_now(&w->loop);
    c->t_start_us = clock_us();
    stat_add(&w->stats.active_proto[SP_NONE], 1);
    io_init(&c->cli, conn_on_cli_io);
    io_init(&c->up, conn_on_up_io);
    timer_init(&c->timer, conn_on_timer);
    task_init(&c->task, conn_on_task);
    list_init(&c->link);
    list_add_tail(&w->sessions, &c->link);
    c->state = pp ? CONN_ST_PROXY : CONN_ST_GREETING;

    /* TCP_NODELAY is inherited from the listening socket (server.c). */
    int rc = loop_io_add(&w->loop, &c->cli, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        conn_close_err(c, "register-failed", rc);
        return;
    }
    if (pp && !proxy_trusted(cfg, peer)) {
        proxy_refused(c, "not in proxy_protocol_from");
        return;
    }
    loop_timer_arm(&w->loop, &c->timer, conn_cfg(c)->handshake_timeout_ms);
    /* No read yet: a client's first bytes usually arrive a moment after
     * accept, so an eager recv() mostly returns EAGAIN (one wasted syscall
     * per session, measured with strace under ferry bench handshakes).
     * Registering edge-triggered reports data already there at once. */
    c->cli_ev = SIDE_WR;
}

static void relay_abort_all(struct worker *w)
{
    struct list *pos, *tmp;
    list_for_each_safe(pos, tmp, &w->sessions)
    {
        struct conn *c = container_of(pos, struct conn, link);
        conn_close(c, "shutdown");
    }
}

static void relay_worker_fini(struct worker *w)
{
    udp_worker_fini(w);
    http_pool_fini(w);
    if (w->auth) {
        auth_worker_fini(w->auth);
        free(w->auth);
        w->auth = NULL;
    }
    while (w->free_sessions) {
        void *c = w->free_sessions;
        w->free_sessions = *(void **)c;
        free(c);
    }
    w->nfree_sessions = 0;
}

/* Authentication turned on (at start or by a reload): give this worker
 * its credential cache and result port, once the pool exists. */
static void relay_config_changed(struct worker *w)
{
    const struct config *cfg = w->cur->cfg;
    struct auth *a = atomic_load(&w->sh->auth);
    if (w->auth || !a || !config_auth_enabled(cfg))
        return;
    struct auth_worker *aw = malloc(sizeof(*aw));
    if (!aw || auth_worker_init(aw, a, &w->loop, cfg->auth.cache_size) < 0) {
        free(aw);
        log_error("worker %u: cannot set up authentication (out of memory); clients that "
                  "must authenticate will be refused",
                  w->id);
        return;
    }
    aw->stats = &w->stats.auth;
    w->auth = aw;
}

const struct worker_ops relay_worker_ops = {
    .accept = relay_accept,
    .abort_all = relay_abort_all,
    .fini = relay_worker_fini,
    .config_changed = relay_config_changed,
};
