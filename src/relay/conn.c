/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.c: the session core: a session's birth and end, resolving and
 * dialing, the byte relay, lingering close, timers, and the access-log
 * line. It drives the session's front protocol through c->front (front.h)
 * and never names a protocol: the rows live in front.c, socks.c and http.c
 * and come back here through session.h.
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
#include "relay/errmap.h"
#include "relay/front.h"
#include "relay/h2stream.h"
#include "relay/h2udp.h"
#include "relay/outbound.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2rev.h"
#include "relay/session.h"
#include "tls/tls.h"
#include "udp/udp.h"

#define CONN_FREELIST_MAX 4096

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
    [CONN_ST_H2] = "h2",
    [CONN_ST_LINGER] = "linger",
    [CONN_ST_CLOSED] = "closed",
};

const char *conn_state_name(enum conn_state s)
{
    return (unsigned)s < CONN_ST_COUNT ? state_names[s] : "?";
}

uint32_t conn_iotimeout(const struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    return c->listen_index < cfg->nlisten ? cfg->listen[c->listen_index].iotimeout_ms
                                          : cfg->iotimeout_ms;
}

static void conn_access_start(struct conn *c);

void conn_set_state(struct conn *c, enum conn_state s)
{
    log_debug("conn %llu: %s -> %s", (unsigned long long)c->id, state_names[c->state],
              state_names[s]);
    bool starts = (s == CONN_ST_RELAY || s == CONN_ST_UDP) && c->state != s;
    c->state = (uint8_t)s;
    if (starts) /* the reply is sent: the tunnel or association is up */
        conn_access_start(c);
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

#define ACCESS_FIELDS_MAX 28

/* The access line's fields, in the order the text line has always had:
 * one list, rendered as text or JSON by the logger (log/fields.h). start:
 * the access-start line, without what only the end knows. The strings
 * point into the caller's buffers (client, target and peer: ADDR_STRLEN
 * bytes, extra: 2 * ADDR_STRLEN, dst: 300; f: ACCESS_FIELDS_MAX). Returns the field count. */
static size_t access_fields(struct conn *c, const char *cmd, const char *reply, bool start,
                            char *client, char *target, char *dst, char *extra, char *peer,
                            struct log_field *f)
{
    addr_format(&c->client, client, ADDR_STRLEN);
    addr_format(&c->target, target, ADDR_STRLEN);
    if (c->dst_name)
        snprintf(dst, 300, "%s:%u", c->dst_name, c->dst_port);
    else if (c->target.family && c->cmd != CONN_CMD_UDP)
        snprintf(dst, 300, "%s", target);
    else
        snprintf(dst, 300, "-");
    /* The outbound that carried it, once one was chosen (a dial). */
    const char *via = c->dialed ? conn_cfg(c)->outbounds[c->ob].name : NULL;
    size_t n = 0;
    f[n++] = (struct log_field)LOG_FU64("id", c->id);
    f[n++] = (struct log_field)LOG_FSTR("client", client);
    f[n++] = (struct log_field)LOG_FSTR("user", c->user ? c->user : "-");
    f[n++] = (struct log_field)LOG_FSTR("cmd", cmd);
    f[n++] = (struct log_field)LOG_FSTR("dst", dst);
    f[n++] = (struct log_field)LOG_FSTR("addr", c->target.family ? target : "-");
    if (!start) {
        f[n++] = (struct log_field)LOG_FU64("up", c->c2u.bytes);
        f[n++] = (struct log_field)LOG_FU64("down", c->u2c.bytes);
        f[n++] = (struct log_field)LOG_FU64("ms", loop_now(&c->w->loop) - c->t_start);
        f[n++] = (struct log_field)LOG_FSTR("reply", reply);
        f[n++] = (struct log_field)LOG_FSTR("end", c->why ? c->why : "-");
        f[n++] = (struct log_field)LOG_FSTR("err", c->err ? errmap_name(c->err) : NULL);
        if (c->h2u && c->cmd == CONN_CMD_UDP) { /* CONNECT-UDP (h2udp.c): datagrams */
            uint64_t up, down;
            h2udp_counts(c, &up, &down);
            f[n++] = (struct log_field)LOG_FPAIR("dgrams", up, down);
        }
    }
    f[n++] = (struct log_field)LOG_FSTR("rule", c->rule);
    f[n++] = (struct log_field)LOG_FSTR("via", via);
    /* a stream of a shared connection */
    f[n++] = (struct log_field)LOG_FSTR("mux", via && c->out == &outbound_h2 ? "h2" : NULL);
    f[n++] = (struct log_field)LOG_FSTR("proto", c->front->log_proto);
    if (c->front->log_fields)
        n += c->front->log_fields(c, f + n, ACCESS_FIELDS_MAX - n - 3, extra, 2 * ADDR_STRLEN);
    /* Last, so the line reads as before up to here: a stream of an HTTP/2
     * tunnel, on either end (conn.h). */
    if (c->tun_id) {
        f[n++] = (struct log_field)LOG_FU64("tunnel", c->tun_id);
        f[n++] = (struct log_field)LOG_FU64("stream", c->tun_stream);
        f[n++] = (struct log_field)LOG_FSTR("peer", addr_format(&c->tun_peer, peer, ADDR_STRLEN));
    }
    return n;
}

void conn_access_log(struct conn *c, const char *cmd, const char *reply)
{
    if (!conn_cfg(c)->access_log || !log_enabled(LOG_INFO))
        return;
    char client[ADDR_STRLEN], target[ADDR_STRLEN], dst[300], extra[2 * ADDR_STRLEN];
    char peer[ADDR_STRLEN];
    struct log_field f[ACCESS_FIELDS_MAX];
    size_t n = access_fields(c, cmd, reply, false, client, target, dst, extra, peer, f);
    log_fields(LOG_INFO, "access", "access", f, n);
}

/* The command of a session whose relay starts, as its access line will
 * name it: SOCKS in lower case, HTTP's method (CONNECT, or the request
 * that switched protocols). */
static const char *access_start_cmd(const struct conn *c)
{
    bool http = c->proto == PROTO_HTTP;
    switch (c->cmd) {
    case CONN_CMD_CONNECT:
        return http ? "CONNECT" : "connect";
    case CONN_CMD_BIND:
        return http ? "-" : "bind";
    case CONN_CMD_UDP:
        return "udp";
    default:
        return http ? "upgrade" : "-";
    }
}

/* log_session_start: the access-start line of a session whose relay (or
 * UDP association) starts, so long tunnels are visible before they end. */
static void conn_access_start(struct conn *c)
{
    if (!conn_cfg(c)->access_log || !conn_cfg(c)->log_session_start || !log_enabled(LOG_INFO))
        return;
    char client[ADDR_STRLEN], target[ADDR_STRLEN], dst[300], extra[2 * ADDR_STRLEN];
    char peer[ADDR_STRLEN];
    struct log_field f[ACCESS_FIELDS_MAX];
    size_t n =
        access_fields(c, access_start_cmd(c), NULL, true, client, target, dst, extra, peer, f);
    log_fields(LOG_INFO, "access", "access-start", f, n);
}

void conn_close_fd(struct io *io)
{
    if (io->fd >= 0) {
        int fd = io->fd;
        io->fd = -1; /* events still queued for it in this iteration are ignored */
        close(fd);
    }
}

void conn_set_front(struct conn *c, const struct front_ops *f)
{
    if (c->front->sp != f->sp) {
        stat_sub(&c->w->stats.active_proto[c->front->sp], 1);
        stat_add(&c->w->stats.active_proto[f->sp], 1);
    }
    c->front = f;
    c->proto = f->proto;
}

void conn_set_outcome(struct conn *c, enum outcome o)
{
    if (c->outcome == OUT_NONE)
        c->outcome = (uint8_t)o;
}

void conn_succeeded(struct conn *c)
{
    conn_set_outcome(c, OUT_OK);
    uint64_t now = clock_us();
    stats_hs_observe(&c->w->stats, c->front->sp, now > c->t_start_us ? now - c->t_start_us : 0);
}

void conn_bad_handshake(struct conn *c)
{
    stat_add(&c->w->stats.handshake_errors, 1);
    conn_set_outcome(c, OUT_BAD_REQUEST);
}

static void conn_cli_tls_end(struct conn *c);

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
    relay_count_bytes(c);
    enum stats_proto sp = c->front->sp;
    stat_add(&w->stats.sessions[sp][errmap_stats(c->outcome)], 1);
    stat_sub(&w->stats.active_proto[sp], 1);
    c->front->end(c); /* the access-log line(s), the front's own state */
    conn_set_state(c, CONN_ST_CLOSED);
    resolver_cancel(c->dns);
    c->dns = NULL;
    loop_timer_stop(&w->loop, &c->timer);
    conn_cli_tls_end(c);
    outbound_h2rev_detach(c);
    conn_close_fd(&c->cli);
    c->out->close(c);
    outbound_released(c);
    conn_close_fd(&c->up);
    relay_release(c);
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

/* ---- the client side: a socket, or TLS over it -------------------------- */

/* A TLS call on c->cli waits for want: that readiness is gone, and a call
 * of direction own that waits for the other is retried when it comes. */
static void conn_cli_wait(struct conn *c, uint8_t own, uint8_t want)
{
    c->cli_ev &= (uint8_t) ~(own | want);
    if (want != own)
        c->cli_cross |= own;
}

ssize_t conn_cli_recv(struct conn *c, void *p, size_t len)
{
    if (c->h2s)
        return h2stream_recv(c, p, len);
    if (c->hos)
        return outbound_h2rev_recv(c, p, len);
    if (!c->cli_tls)
        return recv(c->cli.fd, p, len, 0);
    size_t got = 0;
    while (got < len) {
        uint8_t want = TLS_WANT_READ;
        ssize_t n = tls_read(c->cli_tls, (uint8_t *)p + got, len - got, &want);
        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n == -EAGAIN) {
            conn_cli_wait(c, SIDE_RD, want);
        } else if (got) {
            c->cli_ev |= SIDE_RDHUP; /* the end (or an error) comes with the next call */
        } else if (n == 0) {
            return 0;
        }
        if (got)
            return (ssize_t)got;
        errno = (int)-n;
        return -1;
    }
    return (ssize_t)got;
}

ssize_t conn_cli_send(struct conn *c, const void *p, size_t len)
{
    if (c->h2s)
        return h2stream_send(c, p, len);
    if (c->hos)
        return outbound_h2rev_send(c, p, len);
    if (!c->cli_tls)
        return send(c->cli.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    size_t put = 0;
    while (put < len) {
        uint8_t want = TLS_WANT_WRITE;
        ssize_t n = tls_write(c->cli_tls, (const uint8_t *)p + put, len - put, &want);
        if (n > 0) {
            put += (size_t)n;
            continue;
        }
        if (n == -EAGAIN)
            conn_cli_wait(c, SIDE_WR, want);
        if (put)
            return (ssize_t)put;
        errno = n == 0 ? EPIPE : (int)-n;
        return -1;
    }
    return (ssize_t)put;
}

int conn_cli_shutdown(struct conn *c)
{
    if (c->h2s)
        return h2stream_shutdown(c);
    if (c->hos)
        return outbound_h2rev_shutdown(c);
    if (!c->cli_tls)
        return shutdown(c->cli.fd, SHUT_WR);
    uint8_t want = TLS_WANT_WRITE;
    int rc = tls_shutdown_wr(c->cli_tls, &want);
    if (rc == 0)
        return 0;
    if (rc == -EAGAIN)
        conn_cli_wait(c, SIDE_WR, want);
    errno = -rc;
    return -1;
}

/* The session ends: a client whose TLS handshake is done gets our
 * close_notify when it can go out at once (not after an error), then the
 * TLS state goes. */
static void conn_cli_tls_end(struct conn *c)
{
    if (!c->cli_tls)
        return;
    if (c->cli_tls_up && !c->err) {
        uint8_t want;
        (void)tls_shutdown_wr(c->cli_tls, &want);
    }
    tls_free(c->cli_tls);
    c->cli_tls = NULL;
}

/* ---- replies ---------------------------------------------------------- */

/* The socket is fresh or idle, so a short reply nearly always goes out
 * whole; whatever does not is kept in the client-bound buffer and flushed by
 * the relay or the linger state. */
void conn_hold_client(struct conn *c, const uint8_t *p, size_t len)
{
    memcpy(c->held, p, len);
    c->nheld = (uint8_t)len;
}

int conn_send_client(struct conn *c, const uint8_t *p, size_t len)
{
    struct half *h = &c->u2c;
    size_t sent = 0;
    uint8_t joined[sizeof(c->held) + 300];
    if (c->nheld && c->nheld + len <= sizeof(joined)) {
        memcpy(joined, c->held, c->nheld);
        memcpy(joined + c->nheld, p, len);
        p = joined;
        len += c->nheld;
        c->nheld = 0;
    } else if (c->nheld) {
        uint8_t n = c->nheld;
        c->nheld = 0;
        int rc = conn_send_client(c, c->held, n);
        if (rc)
            return rc;
    }
    if (!h->buf || buf_len(h->buf) == 0) {
        ssize_t n = conn_cli_send(c, p, len);
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

void conn_fail(struct conn *c, enum outcome o, const char *why)
{
    c->reply = (uint8_t)o;
    c->why = why;
    conn_set_outcome(c, o);
    stat_add(&c->w->stats.socks5_replies[errmap_socks5(o)],
             1); /* by the SOCKS5 code it stands for */
    c->front->fail_reply(c, o, why);
}

/* ---- linger ----------------------------------------------------------- */

static void conn_linger_drive(struct conn *c)
{
    struct half *h = &c->u2c;
    if (h->buf && buf_len(h->buf)) {
        if (!(c->cli_ev & SIDE_WR))
            return;
        ssize_t n = conn_cli_send(c, buf_head(h->buf), buf_len(h->buf));
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
        (void)conn_cli_shutdown(c); /* best effort: the reply is out */
        h->flags |= HALF_SHUT;
    }
    /* Discard what the client still sends, up to a bound, until it closes. */
    char sink[4096];
    while (c->cli_ev & SIDE_RD) {
        ssize_t n = conn_cli_recv(c, sink, sizeof(sink));
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

/* States in which events go to the front protocol (front.h). */
static bool conn_front_owns(enum conn_state s)
{
    switch (s) {
    case CONN_ST_PROXY:
    case CONN_ST_GREETING:
    case CONN_ST_AUTH:
    case CONN_ST_REQUEST:
    case CONN_ST_UDP:
    case CONN_ST_BIND:
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
    case CONN_ST_H2:
        return true;
    case CONN_ST_AUTH_WAIT:
    case CONN_ST_RESOLVE:
    case CONN_ST_CONNECT:
    case CONN_ST_RELAY:
    case CONN_ST_LINGER:
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
    return false;
}

/* Go on after a yield or a pause (bandwidth, policy.c): drive the relay or
 * the front again. */
static void conn_resume(struct conn *c)
{
    if (c->state == CONN_ST_RELAY)
        conn_relay_drive(c);
    else if (c->state == CONN_ST_CONNECT && c->up.fd < 0)
        c->out->event(c, 0); /* a stream outbound's news (outbound_h2.c) */
    else if (conn_front_owns(c->state))
        c->front->drive(c, 0);
}

void conn_relay_start(struct conn *c)
{
    policy_bw_start(c);
    conn_set_state(c, CONN_ST_RELAY);
    c->last_active = loop_now(&c->w->loop);
    conn_arm_idle(c);
    conn_relay_drive(c);
}

/* ---- the outbound ------------------------------------------------------- */

uint16_t conn_via(const struct conn *c, int32_t rule)
{
    const struct config *cfg = conn_cfg(c);
    if (c->rev)
        return OUTBOUND_DIRECT; /* a reverse session's egress is this host */
    if (rule >= 0 && cfg->acl && (uint32_t)rule < cfg->acl->n &&
        cfg->acl->rules[rule].via_index >= 0)
        return (uint16_t)cfg->acl->rules[rule].via_index;
    return cfg->default_outbound;
}

void conn_route(struct conn *c, uint16_t ob, const char *name, const struct addr *ip, uint16_t port)
{
    const struct config_outbound *o = &conn_cfg(c)->outbounds[ob];
    c->ob = ob;
    c->ob_t0_us = clock_us();
    c->out = outbound_ops_for(o);
    if (!c->out) {
        c->out = &outbound_direct; /* something to close with */
        log_warn("conn %llu: outbound %s (%s) cannot carry sessions in this build",
                 (unsigned long long)c->id, o->name, outbound_kind_name(o->kind));
        conn_fail(c, OUT_FAILED, "outbound-unavailable");
        return;
    }
    c->out->dial(c, name, ip, port);
}

void conn_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    struct worker *w = c->w;
    const struct config *cfg = conn_cfg(c);
    c->dst_port = port;
    free(c->dst_name);
    c->dst_name = NULL;
    c->ob_tries = 0;
    c->dialed = true;
    struct addr target = *ip;
    target.port = port;
    int32_t rule;
    enum policy_verdict v = policy_eval(c, 0, name, name ? NULL : &target, port, &rule);
    if (v != POLICY_NEED_IP)
        policy_note(c, v, rule);
    if (name && !(c->dst_name = strdup(name))) {
        conn_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    if (v == POLICY_DENY) {
        if (!name)
            c->target = target;
        conn_fail(c, OUT_DENIED, "denied");
        return;
    }
    uint16_t ob = conn_via(c, v == POLICY_ALLOW ? rule : POLICY_RULE_NONE);
    const struct config_outbound *o = &cfg->outbounds[ob];
    uint32_t budget = o->connect_timeout_ms ? o->connect_timeout_ms : cfg->connect_timeout_ms;
    c->deadline = loop_now(&w->loop) + budget;
    loop_timer_arm_at(&w->loop, &c->timer, c->deadline);
    c->ob_rule = ob;
    /* Only the address can tell which rule applies (a range rule comes
     * first, or a public listener's protected ranges): resolve here, and
     * the rule that allows the address picks the way out (outbound_direct
     * hands the address over). Without rules, a parent that resolves names
     * itself is told the name: the protected ranges are this host's, and
     * the parent dials from its own. */
    if (v == POLICY_NEED_IP && (cfg->acl || !o->remote_dns)) {
        c->ob_rule = o->kind == OUTBOUND_KIND_DIRECT ? ob : OUTBOUND_DIRECT;
        conn_route(c, c->ob_rule, name, ip, port);
        return;
    }
    conn_route(c, ob, name, ip, port);
}

void conn_connected(struct conn *c)
{
    outbound_carried(c);
    c->front->connected(c);
}

/* ---- handshake input -------------------------------------------------- */

int conn_read_handshake(struct conn *c)
{
    struct half *h = &c->c2u;
    if (!h->buf && !(h->buf = buf_get(&c->w->bufs)))
        return -ENOMEM;
    while ((c->cli_ev & SIDE_RD) && buf_room(h->buf) > 0 && !(h->flags & HALF_EOF)) {
        uint32_t room = buf_room(h->buf);
        ssize_t n = conn_cli_recv(c, buf_tail(h->buf), room);
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
    case CONN_ST_AUTH_WAIT:
    case CONN_ST_RESOLVE:
        if (cli_events & (EPOLLHUP | EPOLLERR))
            conn_close(c, "client-closed");
        break;
    case CONN_ST_CONNECT:
        if (cli_events & (EPOLLHUP | EPOLLERR))
            conn_close(c, "client-closed");
        else if (up_events)
            c->out->event(c, up_events);
        break;
    case CONN_ST_RELAY:
        conn_relay_drive(c);
        break;
    case CONN_ST_LINGER:
        conn_linger_drive(c);
        break;
    case CONN_ST_PROXY:
    case CONN_ST_GREETING:
    case CONN_ST_AUTH:
    case CONN_ST_REQUEST:
    case CONN_ST_UDP:
    case CONN_ST_BIND:
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
    case CONN_ST_H2:
        c->front->drive(c, up_events);
        break;
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
}

static void conn_on_cli_io(struct io *io, uint32_t events)
{
    struct conn *c = container_of(io, struct conn, cli);
    uint8_t ev = side_events(events);
    /* A TLS call that waited for the other readiness is retried now. */
    uint8_t retry = (uint8_t)(((ev & SIDE_WR) && (c->cli_cross & SIDE_RD) ? SIDE_RD : 0) |
                              ((ev & SIDE_RD) && (c->cli_cross & SIDE_WR) ? SIDE_WR : 0));
    c->cli_cross &= (uint8_t)~retry;
    c->cli_ev |= ev | retry;
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
    case CONN_ST_RESOLVE:
    case CONN_ST_CONNECT:
        c->out->timeout(c);
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
    case CONN_ST_LINGER:
        conn_close(c, c->why);
        break;
    case CONN_ST_PROXY:
    case CONN_ST_GREETING:
    case CONN_ST_AUTH:
    case CONN_ST_AUTH_WAIT:
    case CONN_ST_REQUEST:
    case CONN_ST_BIND:
    case CONN_ST_HTTP_HEAD:
    case CONN_ST_HTTP_FWD:
    case CONN_ST_H2:
        c->front->timeout(c);
        break;
    case CONN_ST_CLOSED:
    case CONN_ST_COUNT:
        break;
    }
}

/* Deferred work: resume a relay or an exchange that yielded. */
static void conn_on_task(struct task *t)
{
    conn_resume(container_of(t, struct conn, task));
}

/* ---- birth -------------------------------------------------------------- */

static struct conn *conn_alloc(struct worker *w);

/* With accounting on, the session counts in its listen address's row (a
 * reverse session, which no listener accepted, in none). */
static void conn_acct_listener(struct conn *c)
{
    struct acct *a = c->w->sh->acct;
    if (!acct_enabled(a) || c->listen_index >= conn_cfg(c)->nlisten)
        return;
    c->acct_l = acct_listener(a, c->w->id, c->listen_index);
    stat_add(&c->acct_l->sessions, 1);
}

/* A session without a client socket (its client side is a stream) under
 * configuration wc (held here), front f in state st; NULL (counted) when
 * max_connections is reached or memory is out. */
static struct conn *conn_new_sockless(struct worker *w, struct wcfg *wc, const struct front_ops *f,
                                      enum conn_state st, int *err)
{
    if (atomic_fetch_add_explicit(&w->sh->sessions, 1, memory_order_relaxed) >=
        wc->cfg->max_connections) {
        atomic_fetch_sub_explicit(&w->sh->sessions, 1, memory_order_relaxed);
        stat_add(&w->stats.rejected_limit, 1);
        *err = -EBUSY;
        return NULL;
    }
    struct conn *c = conn_alloc(w);
    if (!c) {
        atomic_fetch_sub_explicit(&w->sh->sessions, 1, memory_order_relaxed);
        *err = -ENOMEM;
        return NULL;
    }
    w->nsessions++;
    stat_add(&w->stats.active, 1);
    c->w = w;
    c->front = f;
    c->out = &outbound_direct;
    c->proto = f->proto;
    c->id = atomic_fetch_add_explicit(&w->sh->next_id, 1, memory_order_relaxed) + 1;
    wc->sessions++;
    c->wc = wc;
    c->t_start = loop_now(&w->loop);
    c->t_start_us = clock_us();
    stat_add(&w->stats.active_proto[f->sp], 1);
    io_init(&c->cli, conn_on_cli_io);
    c->cli.fd = -1;
    io_init(&c->up, conn_on_up_io);
    timer_init(&c->timer, conn_on_timer);
    task_init(&c->task, conn_on_task);
    list_init(&c->link);
    list_add_tail(&w->sessions, &c->link);
    c->state = (uint8_t)st;
    c->cli_ev = SIDE_WR;
    loop_timer_arm(&w->loop, &c->timer, conn_cfg(c)->handshake_timeout_ms);
    return c;
}

int conn_open_stream(struct worker *w, struct conn *carrier, struct h2stream *s)
{
    int err;
    struct conn *c = conn_new_sockless(w, w->cur, &front_h2, CONN_ST_REQUEST, &err);
    if (!c)
        return err;
    c->client = carrier->client;
    c->listen_index = carrier->listen_index;
    conn_acct_listener(c);
    c->h2s = s;
    h2stream_attach(s, c);
    front_h2.start(c);
    return 0;
}

int conn_open_reverse(struct worker *w, struct wcfg *wc, struct ho_stream *s,
                      const struct config_reverse *rv, const struct addr *peer)
{
    int err;
    const struct front_ops *f = rv->socks ? &front_sniff : &front_forward;
    struct conn *c =
        conn_new_sockless(w, wc, f, rv->socks ? CONN_ST_GREETING : CONN_ST_REQUEST, &err);
    if (!c)
        return err;
    c->client = *peer;
    c->listen_index = CONN_LISTEN_NONE;
    c->hos = s;
    c->rev = rv;
    outbound_h2_stream_adopt(s, c);
    c->cli_ev = SIDE_RD | SIDE_WR; /* bytes may have come with the answer */
    f->start(c);
    return 0;
}

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

int conn_open(struct worker *w, uint8_t listen_index, int fd, const struct addr *peer, bool tracked,
              const struct front_ops *first, enum conn_state state, const struct outbound_ops *out)
{
    struct conn *c = conn_alloc(w);
    if (!c)
        return -ENOMEM;
    c->w = w;
    c->front = first;
    c->out = out;
    c->proto = first->proto;
    c->id = atomic_fetch_add_explicit(&w->sh->next_id, 1, memory_order_relaxed) + 1;
    c->client = *peer;
    c->listen_index = listen_index;
    c->wc = worker_cfg_hold(w);
    c->ip_tracked = tracked;
    c->t_start = loop_now(&w->loop);
    c->t_start_us = clock_us();
    stat_add(&w->stats.active_proto[first->sp], 1);
    io_init(&c->cli, conn_on_cli_io);
    io_init(&c->up, conn_on_up_io);
    timer_init(&c->timer, conn_on_timer);
    task_init(&c->task, conn_on_task);
    list_init(&c->link);
    list_add_tail(&w->sessions, &c->link);
    c->state = (uint8_t)state;
    conn_acct_listener(c);

    /* TCP_NODELAY is inherited from the listening socket (server.c). */
    int rc = loop_io_add(&w->loop, &c->cli, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    if (rc) {
        close(fd);
        conn_close_err(c, "register-failed", rc);
        return 0;
    }
    loop_timer_arm(&w->loop, &c->timer, conn_cfg(c)->handshake_timeout_ms);
    /* No read yet: a client's first bytes usually arrive a moment after
     * accept, so an eager recv() mostly returns EAGAIN (one wasted syscall
     * per session, measured with strace under ferry bench handshakes).
     * Registering edge-triggered reports data already there at once. */
    c->cli_ev = SIDE_WR;
    first->start(c);
    return 0;
}

void conn_freelist_fini(struct worker *w)
{
    while (w->free_sessions) {
        void *c = w->free_sessions;
        w->free_sessions = *(void **)c;
        free(c);
    }
    w->nfree_sessions = 0;
}
