/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2_row.c: outbound.h's row outbound_h2, an HTTPS parent spoken
 * HTTP/2: every session dialled through it is a CONNECT stream (RFC 9113
 * section 8.5) on its worker's one connection to the parent. The row
 * queues the session's stream on the outbound's slot, turns the response
 * into the session's outcome, and dials the session again: the HTTP/1.1
 * way when mux = auto found an http/1.1 parent, or anew when a GOAWAY
 * refused its stream.
 *
 * A session arriving while the connection is down waits up to the
 * outbound's tunnel_wait (a pool's member: the pool's connect budget),
 * then fails as tunnel-down (SOCKS 0x03, HTTP 503). Its news comes from
 * its task (conn_resume() calls the event hook in state CONNECT), never
 * from an nghttp2 callback.
 *
 * fast_open = yes: a session whose CONNECT goes out on a connection that
 * is up at once (not a pool's member: a pool could not fail over a session
 * already answered) is answered from its task right after (conn_connected,
 * its bytes following the HEADERS), unless the parent answered first. A
 * refusal after that (a non-2xx status, or the stream closed before any
 * answer) ends the session from the pump: the read fails and the access
 * line says end=parent-refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "log/log.h"
#include "proto/parent.h"
#include "relay/outbound.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2_int.h"
#include "relay/session.h"

static void ob_h2_release(struct conn *c)
{
    struct ho_stream *s = c->ob_priv;
    c->ob_priv = NULL;
    if (s)
        outbound_h2_stream_release(s);
}

static void ob_h2_fail(struct conn *c, enum outcome o, const char *why)
{
    ob_h2_release(c);
    outbound_fail(c, o, why);
}

/* Wait for the slot's connection, or go on it now. */
static void ob_h2_queue(struct conn *c, struct ho_stream *s)
{
    struct ho_slot *sl = s->sl;
    struct loop *l = &c->w->loop;
    const struct config_outbound *o = sl_ob(sl);
    uint64_t now = loop_now(l);
    conn_set_state(c, CONN_ST_CONNECT);
    if (sl->cur && sl->cur->st == HO_UP && !sl->cur->goaway) {
        loop_timer_arm_at(l, &c->timer, c->deadline > now + 1000 ? c->deadline : now + 1000);
        outbound_h2_stream_submit(sl->cur, s);
        if (o->fast_open && c->ob_rule == c->ob && s->hc && !s->gone) {
            s->fast = true;
            outbound_h2_stream_wake(s, SIDE_WR); /* answered from its task */
        }
        return;
    }
    /* A pool's member keeps to the pool's connect budget: the next member
     * may be up. */
    uint64_t until = now + o->tunnel_wait_ms;
    if (c->ob_rule != c->ob && c->deadline < until)
        until = c->deadline;
    loop_timer_arm_at(l, &c->timer, until);
    outbound_h2_slot_wait(sl, s);
}

static void ob_h2_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    free(c->ob_priv);
    c->ob_priv = NULL;
    struct ho_slot *sl = outbound_h2_slot(c->w, c->wc, c->ob);
    if (sl && sl->http1) {
        c->out = &outbound_https; /* auto, and the parent speaks http/1.1 */
        c->out->dial(c, name, ip, port);
        return;
    }
    struct ho_stream *s = sl ? calloc(1, sizeof(*s)) : NULL;
    if (!s) {
        outbound_fail(c, OUT_FAILED, "no-memory");
        return;
    }
    s->sl = sl;
    sl->refs++;
    s->c = c;
    s->port = port;
    s->has_name = name != NULL;
    if (ip)
        s->ip = *ip;
    if (!name) {
        s->ip.port = port;
        addr_unmap(&s->ip);
        c->target = s->ip;
    }
    c->ob_priv = s;
    ob_h2_queue(c, s);
}

/* Let s go and dial its destination again through out: the HTTP/1.1 way
 * (mux = auto found an http/1.1 parent), or a new stream (a GOAWAY refused
 * this one before the parent processed it). */
static void ob_h2_redial(struct conn *c, struct ho_stream *s, const struct outbound_ops *out)
{
    struct addr ip = s->ip;
    uint16_t port = s->port;
    bool named = s->has_name;
    ob_h2_release(c);
    c->out = out;
    out->dial(c, named ? c->dst_name : NULL, &ip, port);
}

static void ob_h2_event(struct conn *c, uint32_t events)
{
    (void)events;
    struct ho_stream *s = c->ob_priv;
    if (!s || s->waiting)
        return;
    if (s->http1 || s->retry) {
        ob_h2_redial(c, s, s->http1 ? &outbound_https : &outbound_h2);
        return;
    }
    if ((s->status >= 200 && s->status <= 299) || (s->fast && !s->status && !s->gone)) {
        s->answered = !s->status; /* before the parent: fast_open */
        c->up_ev |= SIDE_WR;      /* the stream takes bytes from now on */
        conn_connected(c);
        return;
    }
    if (s->status) {
        enum outcome o;
        const char *why;
        outbound_parent_outcome((uint8_t)parent_http_status_fail(s->status), &o, &why);
        if (log_enabled(s->status == 407 ? LOG_WARN : LOG_DEBUG)) {
            const struct config_outbound *ob = sl_ob(s->sl);
            char words[80];
            parent_http_status_why(s->status, ob->user != NULL, words, sizeof(words));
            log_write(s->status == 407 ? LOG_WARN : LOG_DEBUG,
                      "conn %llu: outbound %s: parent %s port %u: %s", (unsigned long long)c->id,
                      ob->name, ob->host, ob->port, words);
        }
        ob_h2_fail(c, o, why);
        return;
    }
    if (!s->hc && s->id == 0 && s->fail_why)
        ob_h2_fail(c, (enum outcome)s->fail_o, s->fail_why); /* the log said why (warn) */
    else if (s->gone || (!s->hc && s->id == 0))
        /* The connection went (or never came) before an answer. */
        ob_h2_fail(c, s->id ? OUT_FAILED : OUT_TUNNEL_DOWN, s->id ? "parent-reset" : "tunnel-down");
}

static void ob_h2_timeout(struct conn *c)
{
    struct ho_stream *s = c->ob_priv;
    if (s && s->waiting)
        ob_h2_fail(c, OUT_TUNNEL_DOWN, "tunnel-down");
    else
        ob_h2_fail(c, OUT_TIMEOUT, "parent-timeout");
}

static int ob_h2_bnd(const struct conn *c, struct addr *out)
{
    (void)c;
    memset(out, 0, sizeof(*out));
    out->family = AF_INET;
    return 0;
}

static void ob_h2_close(struct conn *c)
{
    ob_h2_release(c);
}

/* A session answered before the parent (fast_open) that the parent then
 * refused (a non-2xx status, or a stream closed with none): true, logged
 * once. */
static bool ob_h2_refused(const struct conn *c)
{
    struct ho_stream *s = c->ob_priv;
    if (!s || !s->answered || (s->status >= 200 && s->status <= 299) || (!s->status && !s->gone))
        return false;
    if (!s->said && log_enabled(LOG_DEBUG)) {
        const struct config_outbound *ob = sl_ob(s->sl);
        char words[80] = "the stream closed before an answer";
        if (s->status)
            parent_http_status_why(s->status, ob->user != NULL, words, sizeof(words));
        log_write(LOG_DEBUG, "conn %llu: outbound %s: parent %s port %u, after a fast open: %s",
                  (unsigned long long)c->id, ob->name, ob->host, ob->port, words);
    }
    s->said = true;
    return true;
}

static ssize_t ob_h2_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    const struct ho_stream *s = c->ob_priv;
    if (s && s->answered && !s->status && !s->gone) {
        *want = SIDE_RD; /* nothing comes before the parent's answer */
        return -EAGAIN;
    }
    if (ob_h2_refused(c))
        return -ECONNREFUSED; /* not its error body: the session ends */
    return outbound_h2_stream_read(c->ob_priv, p, len, want);
}

static ssize_t ob_h2_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    return outbound_h2_stream_write(c->ob_priv, p, len, want);
}

static int ob_h2_shutdown_wr(struct conn *c, uint8_t *want)
{
    (void)want;
    return outbound_h2_stream_shutdown(c->ob_priv);
}

static bool ob_h2_pending(const struct conn *c)
{
    const struct ho_stream *s = c->ob_priv;
    return s && (s->rx_len > s->rx_off || s->rx_eof || s->gone);
}

static void ob_h2_credit(struct conn *c)
{
    outbound_h2_stream_credit(c->ob_priv, c->u2c.bytes);
}

static const char *ob_h2_why(const struct conn *c)
{
    return ob_h2_refused(c) ? "parent-refused" : NULL;
}

const struct outbound_ops outbound_h2 = {
    .name = "https-h2",
    .splice = false,
    .dial = ob_h2_dial,
    .event = ob_h2_event,
    .timeout = ob_h2_timeout,
    .bnd = ob_h2_bnd,
    .close = ob_h2_close,
    .read = ob_h2_read,
    .write = ob_h2_write,
    .shutdown_wr = ob_h2_shutdown_wr,
    .pending = ob_h2_pending,
    .credit = ob_h2_credit,
    .why = ob_h2_why,
};
