/*
 * conn.c: the life of a SOCKS5 session, from accept to the access-log line.
 * It drives the pure parser in proto/socks5.c with the bytes the client
 * sent, resolves and dials the destination, then hands over to pump.c.
 *
 * Rules kept here: conn_set_state() is the only writer of c->state; every
 * path that ends a session goes through conn_close(); after conn_close()
 * nothing touches the session but its deferred free.
 */
#include "relay/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth/auth.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/pipe.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "proto/socks5.h"
#include "relay/errmap.h"
#include "udp/udp.h"

#define CONN_FREELIST_MAX 4096
#define LINGER_MS         1000
#define LINGER_DISCARD    (64 * 1024)

static const char *const state_names[CONN_ST_COUNT] = {
    [CONN_ST_GREETING] = "greeting",   [CONN_ST_AUTH] = "auth",
    [CONN_ST_AUTH_WAIT] = "auth-wait", [CONN_ST_REQUEST] = "request",
    [CONN_ST_RESOLVE] = "resolve",     [CONN_ST_CONNECT] = "connect",
    [CONN_ST_RELAY] = "relay",         [CONN_ST_UDP] = "udp",
    [CONN_ST_LINGER] = "linger",       [CONN_ST_CLOSED] = "closed",
};

const char *conn_state_name(enum conn_state s)
{
    return (unsigned)s < CONN_ST_COUNT ? state_names[s] : "?";
}

static const struct config *conn_cfg(const struct conn *c)
{
    return c->wc->cfg;
}

static void conn_set_state(struct conn *c, enum conn_state s)
{
    log_debug("conn %llu: %s -> %s", (unsigned long long)c->id, state_names[c->state],
              state_names[s]);
    c->state = (uint8_t)s;
}

/* ---- closing ---------------------------------------------------------- */

static void conn_free(struct conn *c)
{
    struct worker *w = c->w;
    if (w->nfree_sessions < CONN_FREELIST_MAX) {
        *(void **)c = w->free_sessions;
        w->free_sessions = c;
        w->nfree_sessions++;
    } else {
        free(c);
    }
}

static void conn_access_log(struct conn *c)
{
    if (!conn_cfg(c)->access_log || !log_enabled(LOG_INFO))
        return;
    char client[ADDR_STRLEN], target[ADDR_STRLEN], dst[300];
    addr_format(&c->client, client, sizeof(client));
    addr_format(&c->target, target, sizeof(target));
    if (c->dst_name)
        snprintf(dst, sizeof(dst), "%s:%u", c->dst_name, c->dst_port);
    else if (c->target.family)
        snprintf(dst, sizeof(dst), "%s", target);
    else
        snprintf(dst, sizeof(dst), "-");
    char err[48] = "";
    if (c->err)
        snprintf(err, sizeof(err), " err=%s", errmap_name(c->err));
    log_write(LOG_INFO,
              "access id=%llu client=%s user=%s cmd=%s dst=%s addr=%s up=%llu down=%llu "
              "ms=%llu reply=%s end=%s%s",
              (unsigned long long)c->id, client, c->user ? c->user : "-",
              c->cmd == SOCKS5_CMD_CONNECT         ? "connect"
              : c->cmd == SOCKS5_CMD_UDP_ASSOCIATE ? "udp"
              : c->cmd                             ? "other"
                                                   : "-",
              dst, c->target.family ? target : "-", (unsigned long long)c->c2u.bytes,
              (unsigned long long)c->u2c.bytes,
              (unsigned long long)(loop_now(&c->w->loop) - c->t_start),
              c->reply == 0xff ? "-" : socks5_rep_str(c->reply), c->why ? c->why : "-", err);
}

static void close_fd(struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        io->fd = -1; /* events still queued for it in this iteration are ignored */
        close(fd);
    }
}

static void conn_close(struct conn *c, const char *why)
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
    stat_add(&w->stats.bytes_up, c->c2u.bytes);
    stat_add(&w->stats.bytes_down, c->u2c.bytes);
    conn_access_log(c);
    conn_set_state(c, CONN_ST_CLOSED);
    resolver_cancel(c->dns);
    c->dns = NULL;
    loop_timer_stop(&w->loop, &c->timer);
    close_fd(&c->cli);
    close_fd(&c->up);
    relay_release(c);
    free(c->ans);
    c->ans = NULL;
    free(c->dst_name);
    c->dst_name = NULL;
    auth_abandon(c->auth);
    c->auth = NULL;
    free(c->user);
    c->user = NULL;
    worker_cfg_release(w, c->wc);
    list_del(&c->link);
    worker_session_ended(w);
    loop_defer(&w->loop, &c->task); /* freed after this iteration's events */
}

static void conn_close_err(struct conn *c, const char *why, int err)
{
    c->err = err;
    conn_close(c, why);
}

/* ---- writing replies -------------------------------------------------- */

/* Send a short handshake message. The socket is fresh, so it nearly always
 * goes out whole; whatever does not is kept in the client-bound buffer and
 * flushed by the relay or the linger state. Returns 0 or -errno. */
static int conn_send_client(struct conn *c, const uint8_t *p, size_t len)
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
        return -ENOBUFS;
    memcpy(buf_tail(h->buf), p + sent, len - sent);
    h->buf->end += (uint32_t)(len - sent);
    h->bytes -= len - sent; /* handshake bytes are not payload: cancel the later count */
    c->cli_ev &= (uint8_t)~SIDE_WR;
    return 0;
}

static void conn_linger(struct conn *c);

/* Answer with a failure, then linger and close. */
static void conn_fail(struct conn *c, uint8_t rep, const char *why)
{
    uint8_t msg[SOCKS5_REPLY_MAX];
    size_t n = socks5_write_reply(msg, sizeof(msg), rep, NULL);
    c->reply = rep;
    c->why = why;
    stat_add(&c->w->stats.socks5_replies[rep < STATS_SOCKS5_REPLIES ? rep : 1], 1);
    int rc = conn_send_client(c, msg, n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    conn_linger(c);
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
            c->c2u.bytes += (uint64_t)n;
            if (c->c2u.bytes > LINGER_DISCARD) {
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

static void conn_linger(struct conn *c)
{
    struct worker *w = c->w;
    close_fd(&c->up);
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
    c->c2u.bytes = 0; /* from here on, counts discarded bytes */
    conn_set_state(c, CONN_ST_LINGER);
    uint64_t ms = conn_cfg(c)->handshake_timeout_ms;
    loop_timer_arm(&w->loop, &c->timer, ms < LINGER_MS ? ms : LINGER_MS);
    conn_linger_drive(c);
}

/* ---- relay ------------------------------------------------------------ */

static void conn_arm_idle(struct conn *c)
{
    uint32_t idle = conn_cfg(c)->iotimeout_ms;
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

/* ---- connect ---------------------------------------------------------- */

static void conn_on_up_io(struct io *io, uint32_t events);
static void conn_connect_next(struct conn *c, int last_err);

static void conn_connected(struct conn *c)
{
    struct worker *w = c->w;
    sock_set_nodelay(c->up.fd);
    if (sock_local_addr(c->up.fd, &c->bnd) < 0)
        memset(&c->bnd, 0, sizeof(c->bnd));
    free(c->ans);
    c->ans = NULL;

    uint8_t msg[SOCKS5_REPLY_MAX];
    size_t n = socks5_write_reply(msg, sizeof(msg), SOCKS5_REP_SUCCEEDED, &c->bnd);
    c->reply = SOCKS5_REP_SUCCEEDED;
    stat_add(&w->stats.socks5_replies[0], 1);
    int rc = conn_send_client(c, msg, n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    conn_set_state(c, CONN_ST_RELAY);
    c->last_active = loop_now(&w->loop);
    conn_arm_idle(c);
    conn_relay_drive(c);
}

/* Try the next address of the answer, giving each remaining address an even
 * share of what is left of the connect timeout. */
static void conn_connect_next(struct conn *c, int last_err)
{
    struct worker *w = c->w;
    close_fd(&c->up);
    uint64_t now = loop_now(&w->loop);
    while (c->ans && c->next_addr < c->ans->n && now < c->deadline) {
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
    c->ans = malloc(sizeof(*c->ans));
    if (!c->ans) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    *c->ans = *ans;
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

/* CONNECT: resolve when needed, then dial. */
static void conn_dial(struct conn *c, const struct socks5_request *req)
{
    struct worker *w = c->w;
    struct dns_answer ans = {0};
    c->deadline = loop_now(&w->loop) + conn_cfg(c)->connect_timeout_ms;
    loop_timer_arm_at(&w->loop, &c->timer, c->deadline);
    c->dst_port = req->dst.port;

    if (socks5_addr_to_addr(&req->dst, &ans.a[0])) {
        ans.n = 1;
        conn_begin_connect(c, &ans);
        return;
    }
    c->dst_name = strdup(req->dst.u.domain);
    if (!c->dst_name) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    /* Clients often send an IP literal as a "domain". */
    if (addr_parse_ip(c->dst_name, req->dst.port, &ans.a[0]) == 0) {
        ans.n = 1;
        conn_begin_connect(c, &ans);
        return;
    }
    int status;
    if (resolver_lookup_now(&w->dns, c->dst_name, req->dst.port, &status, &ans)) {
        stat_add(&w->stats.dns_cache_hits, 1);
        conn_on_dns(c, status, &ans);
        return;
    }
    stat_add(&w->stats.dns_queries, 1);
    c->dns = resolver_query(&w->dns, c->dst_name, req->dst.port, conn_on_dns, c);
    if (!c->dns) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "no-memory");
        return;
    }
    conn_set_state(c, CONN_ST_RESOLVE);
}

/* ---- handshake -------------------------------------------------------- */

/* Read what the client sent into c2u.buf. Returns 0 or -errno. */
static int conn_read_handshake(struct conn *c)
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

/* ---- UDP ASSOCIATE ----------------------------------------------------- */

static void conn_udp_activity(void *arg)
{
    struct conn *c = arg;
    c->last_active = loop_now(&c->w->loop);
}

/* RFC 1928 section 7. The request's DST.ADDR/DST.PORT are not used: many
 * clients put the destination or zeros there; the association accepts the
 * control connection's client address, from the port of its first
 * datagram. */
static void conn_udp(struct conn *c)
{
    struct worker *w = c->w;
    struct addr local, bnd;
    if (sock_local_addr(c->cli.fd, &local) < 0) {
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE, "udp-socket");
        return;
    }
    int rc = udp_assoc_open(w, &conn_cfg(c)->udp, c->listen_index, &c->client, &local, &bnd,
                            conn_udp_activity, c, &c->udp);
    if (rc) {
        c->err = rc == -ENOMEM ? rc : 0;
        conn_fail(c, SOCKS5_REP_GENERAL_FAILURE,
                  rc == UDP_OPEN_LIMIT ? "udp-associations-limit" : "udp-socket");
        return;
    }
    uint8_t msg[SOCKS5_REPLY_MAX];
    size_t n = socks5_write_reply(msg, sizeof(msg), SOCKS5_REP_SUCCEEDED, &bnd);
    c->reply = SOCKS5_REP_SUCCEEDED;
    c->bnd = bnd;
    c->target = bnd;
    stat_add(&w->stats.socks5_replies[0], 1);
    rc = conn_send_client(c, msg, n);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    conn_set_state(c, CONN_ST_UDP);
    c->last_active = loop_now(&w->loop);
    conn_arm_idle(c);
    /* The control connection carries nothing more; bytes already read
     * behind the request are discarded with the rest. */
    buf_put(&w->bufs, c->c2u.buf);
    c->c2u.buf = NULL;
}

/* The control connection of an association: whatever arrives is read and
 * discarded; its end (EOF or error) ends the association. */
static void conn_udp_drive(struct conn *c)
{
    char sink[512];
    while (c->cli_ev & SIDE_RD) {
        ssize_t n = recv(c->cli.fd, sink, sizeof(sink), 0);
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

/* Handshake steps return 1 when the state advanced and parsing may go on,
 * 0 when more bytes are needed, -1 when the session went elsewhere
 * (closed, lingering, or waiting for a verdict). */

static int hs_greeting(struct conn *c, struct buf *b)
{
    struct socks5_greeting g;
    ssize_t n = socks5_parse_greeting(buf_head(b), buf_len(b), &g);
    if (n == 0)
        return 0;
    if (n < 0) {
        stat_add(&c->w->stats.handshake_errors, 1);
        conn_close(c, "bad-version");
        return -1;
    }
    buf_consume(b, (uint32_t)n);
    bool auth = config_auth_enabled(conn_cfg(c));
    uint8_t want = auth ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_NONE;
    bool ok = socks5_offers(&g, want);
    uint8_t msg[2];
    socks5_write_method(msg, ok ? want : SOCKS5_METHOD_NO_ACCEPTABLE);
    int rc = conn_send_client(c, msg, sizeof(msg));
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return -1;
    }
    if (!ok) {
        stat_add(&c->w->stats.handshake_errors, 1);
        c->why = auth ? "auth-required" : "no-acceptable-method";
        conn_linger(c);
        return -1;
    }
    conn_set_state(c, auth ? CONN_ST_AUTH : CONN_ST_REQUEST);
    return 1;
}

/* The verdict: RFC 1929 status, then the request or a lingering close
 * (why: the reason to log, or NULL to derive it from result). */
static void conn_auth_verdict(struct conn *c, int result, const char *why)
{
    uint8_t msg[2];
    bool ok = result == AUTH_OK;
    socks5_write_auth_status(msg, ok ? SOCKS5_AUTH_OK : SOCKS5_AUTH_FAIL);
    int rc = conn_send_client(c, msg, sizeof(msg));
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    if (!ok) {
        c->why = why                        ? why
                 : result == AUTH_THROTTLED ? "auth-throttled"
                 : result == AUTH_BUSY      ? "auth-busy"
                                            : "auth-failed";
        conn_linger(c);
        return;
    }
    conn_set_state(c, CONN_ST_REQUEST);
}

static void conn_auth_done(struct conn *c, int result)
{
    conn_auth_verdict(c, result, NULL);
}

static void conn_handshake(struct conn *c);

static void conn_on_auth(void *owner, int result)
{
    struct conn *c = owner;
    c->auth = NULL;
    conn_auth_done(c, result);
    if (c->state == CONN_ST_REQUEST)
        conn_handshake(c); /* the request may be waiting already */
}

/* Keep a printable copy of the claimed name for the access log. */
static void conn_set_user(struct conn *c, const char *name, size_t len)
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

static int hs_auth(struct conn *c, struct buf *b)
{
    struct socks5_userpass up;
    ssize_t n = socks5_parse_userpass(buf_head(b), buf_len(b), &up);
    if (n == 0)
        return 0;
    if (n < 0) {
        /* RFC 1929: any status but 0 means failure, and we close. */
        stat_add(&c->w->stats.handshake_errors, 1);
        conn_auth_verdict(c, AUTH_DENIED, "bad-auth-message");
        return -1;
    }
    explicit_bzero(buf_head(b), (size_t)n); /* the password leaves no copy behind */
    buf_consume(b, (uint32_t)n);
    conn_set_user(c, up.user, up.ulen);
    const struct config *cfg = conn_cfg(c);
    struct auth_params p = {cfg->auth.users, cfg->auth.cachettl_ms};
    int r = AUTH_BUSY;
    if (c->w->auth)
        r = auth_begin(c->w->auth, &p, &c->client, up.user, up.ulen, up.pass, up.plen, conn_on_auth,
                       c, &c->auth);
    explicit_bzero(&up, sizeof(up));
    if (r == AUTH_PENDING) {
        conn_set_state(c, CONN_ST_AUTH_WAIT);
        return -1;
    }
    conn_auth_done(c, r);
    return c->state == CONN_ST_REQUEST ? 1 : -1;
}

static int hs_request(struct conn *c, struct buf *b)
{
    struct socks5_request req;
    ssize_t n = socks5_parse_request(buf_head(b), buf_len(b), &req);
    if (n == 0)
        return 0;
    if (n < 0) {
        stat_add(&c->w->stats.handshake_errors, 1);
        int rep = socks5_error_reply(n);
        if (rep < 0) {
            conn_close(c, "bad-version");
            return -1;
        }
        conn_fail(c, (uint8_t)rep,
                  n == SOCKS5_E_ATYP  ? "bad-address-type"
                  : n == SOCKS5_E_RSV ? "bad-reserved-byte"
                                      : "bad-domain");
        return -1;
    }
    buf_consume(b, (uint32_t)n);
    c->cmd = req.cmd;
    if (buf_len(b) == 0) {
        buf_put(&c->w->bufs, b); /* nothing pipelined: hold no buffer */
        c->c2u.buf = NULL;
    }
    if (req.cmd == SOCKS5_CMD_UDP_ASSOCIATE) {
        conn_udp(c);
        return -1;
    }
    if (req.cmd != SOCKS5_CMD_CONNECT) {
        conn_fail(c, SOCKS5_REP_COMMAND_NOT_SUPPORTED, "command-not-supported");
        return -1;
    }
    conn_dial(c, &req);
    return -1;
}

static void conn_handshake(struct conn *c)
{
    int rc = conn_read_handshake(c);
    if (rc) {
        stat_add(&c->w->stats.handshake_errors, 1);
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
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
            step = hs_request(c, b);
            break;
        case CONN_ST_AUTH_WAIT:
        case CONN_ST_RESOLVE:
        case CONN_ST_CONNECT:
        case CONN_ST_RELAY:
        case CONN_ST_UDP:
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
            stat_add(&c->w->stats.handshake_errors, 1);
            if (c->state == CONN_ST_AUTH && buf_len(b)) {
                conn_auth_verdict(c, AUTH_DENIED, "truncated-handshake");
                return;
            }
            conn_close(c, buf_len(b) ? "truncated-handshake" : "client-closed");
        }
        return;
    }
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
    case CONN_ST_GREETING:
    case CONN_ST_AUTH:
    case CONN_ST_REQUEST:
        conn_handshake(c);
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
        conn_udp_drive(c);
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
        /* The pool did not answer in time (a long queue): say no rather
         * than close in silence. The verdict, when it comes, is dropped. */
        auth_abandon(c->auth);
        c->auth = NULL;
        conn_auth_verdict(c, AUTH_BUSY, "auth-timeout");
        break;
    case CONN_ST_GREETING:
    case CONN_ST_AUTH:
    case CONN_ST_REQUEST:
        stat_add(&c->w->stats.handshake_errors, 1);
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
        uint32_t idle = conn_cfg(c)->iotimeout_ms;
        if (idle && loop_now(&c->w->loop) - c->last_active >= idle)
            conn_close(c, "idle-timeout");
        else
            conn_arm_idle(c); /* activity since arming: coarse idle accounting */
        break;
    }
    case CONN_ST_LINGER:
        conn_close(c, c->why);
        break;
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
}

/* Deferred work: free a closed session, or resume a relay that yielded. */
static void conn_on_task(struct task *t)
{
    struct conn *c = container_of(t, struct conn, task);
    if (c->state == CONN_ST_CLOSED)
        conn_free(c);
    else if (c->state == CONN_ST_RELAY)
        conn_relay_drive(c);
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
    struct conn *c = conn_alloc(w);
    if (!c) {
        close(fd);
        worker_session_ended(w);
        return;
    }
    c->w = w;
    c->id = atomic_fetch_add_explicit(&w->sh->next_id, 1, memory_order_relaxed) + 1;
    c->client = *peer;
    c->reply = 0xff;
    c->listen_index = (uint8_t)ls->index;
    c->wc = worker_cfg_hold(w);
    c->t_start = loop_now(&w->loop);
    io_init(&c->cli, conn_on_cli_io);
    io_init(&c->up, conn_on_up_io);
    timer_init(&c->timer, conn_on_timer);
    task_init(&c->task, conn_on_task);
    list_init(&c->link);
    list_add_tail(&w->sessions, &c->link);
    c->state = CONN_ST_GREETING;

    /* TCP_NODELAY is inherited from the listening socket (server.c). */
    int rc = loop_io_add(&w->loop, &c->cli, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        conn_close_err(c, "register-failed", rc);
        return;
    }
    loop_timer_arm(&w->loop, &c->timer, conn_cfg(c)->handshake_timeout_ms);
    /* Clients usually send the greeting right behind the handshake: try to
     * read it now rather than after another trip through epoll. */
    c->cli_ev = SIDE_RD | SIDE_WR;
    conn_handshake(c);
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
    w->auth = aw;
}

const struct worker_ops relay_worker_ops = {
    .accept = relay_accept,
    .abort_all = relay_abort_all,
    .fini = relay_worker_fini,
    .config_changed = relay_config_changed,
};
