/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_h2rev.c: the client half of reverse tunnels (outbound_h2rev.h;
 * the wire is h2rev.h's). Worker 0 keeps one struct rv_remote per
 * "reverse =" remote of the current configuration: a ferry-listen
 * stream, waiting for the tunnel connection like any session's stream
 * (so the outbound's reconnect and back-off bring it back), and, once the
 * server answered 200 with the listener's token, RV_ACCEPTS ferry-accept
 * streams on the same connection. An accept stream answered 200 becomes
 * a session (conn_open_reverse) and another one takes its place; the
 * listener stream ending (the server went, drained, or reloaded) opens a
 * new one at once, which waits for the next connection. A refusal (403:
 * no reverse rule; 502: the bind failed) is logged as an error and tried
 * again after a back-off (1 s doubling to 60 s), in case the server's
 * rules change. A udp remote's accept streams become datagram flows
 * (outbound_h2rev_udp.c) instead of sessions.
 *
 * It must not touch a session or free a stream from inside nghttp2's
 * callbacks: a stream's news only defers the remote's task.
 */
#include "relay/outbound_h2rev.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "log/log.h"
#include "relay/outbound_h2.h"
#include "relay/outbound_h2rev_udp.h"
#include "relay/session.h"
#include "util/list.h"

#define RV_ACCEPTS      4     /* accept streams waiting per listener */
#define RV_RETRY_MS     1000  /* after a refusal: the first retry ... */
#define RV_RETRY_CAP_MS 60000 /* ... doubling up to this */

struct rv_remote {
    struct list link; /* in the set's remotes */
    struct worker *w;
    struct wcfg *wc; /* held */
    uint16_t ob;
    const struct config_reverse *cr;
    char name[300]; /* "R:...", for logs */
    struct ho_slot *sl;
    struct rv_obj lst;
    struct rv_obj acc[RV_ACCEPTS];
    char token[RV_FIELD_MAX]; /* ferry-listener */
    char bound[RV_FIELD_MAX]; /* ferry-bound */
    bool up;                  /* the listener was answered 200 */
    uint32_t retry_ms;        /* the next back-off after a refusal; 0: none yet */
    struct timer timer;       /* register again after a refusal */
    struct task task;
    struct list flows; /* a udp remote's flows (outbound_h2rev_udp.c) */
};

struct h2rev_out_set {
    struct worker *w;
    struct list remotes;
    struct task sync; /* match the remotes to w->cur (on the worker's thread) */
};

void outbound_h2rev_header(void *rv, const uint8_t *name, size_t namelen, const uint8_t *value,
                           size_t valuelen)
{
    struct rv_obj *o = rv;
    char *dst = NULL;
    bool lst = o->r && o == &o->r->lst;
    if (namelen == 14 && !memcmp(name, "ferry-listener", 14) && lst)
        dst = o->r->token;
    else if (namelen == 11 && !memcmp(name, "ferry-bound", 11) && (lst || !o->r))
        dst = lst ? o->r->bound : o->peer; /* !o->r: an association's relay */
    else if (namelen == 10 && !memcmp(name, "ferry-peer", 10))
        dst = o->peer;
    if (!dst || valuelen >= RV_FIELD_MAX)
        return;
    memcpy(dst, value, valuelen);
    dst[valuelen] = '\0';
}

static void rv_drop(struct rv_obj *o)
{
    if (o->s)
        outbound_h2_stream_release(o->s);
    o->s = NULL;
    o->peer[0] = '\0';
}

/* Open the listener stream (it waits for the connection when down). */
static void rv_register(struct rv_remote *r)
{
    char path[128], a[ADDR_STRLEN];
    snprintf(path, sizeof(path), "/ferry/listen/%s/%s/%u", r->cr->udp ? "udp" : "tcp",
             addr_format_ip(&r->cr->bind, a, sizeof(a)), (unsigned)r->cr->bind.port);
    r->token[0] = r->bound[0] = '\0';
    r->lst.s = outbound_h2_stream_new(r->sl, &r->task, &r->lst, "ferry-listen", path);
    if (!r->lst.s) {
        loop_timer_arm(&r->w->loop, &r->timer, RV_RETRY_MS);
        return;
    }
    outbound_h2_stream_queue(r->lst.s);
}

static void rv_on_timer(struct timer *t)
{
    struct rv_remote *r = container_of(t, struct rv_remote, timer);
    if (!r->lst.s)
        rv_register(r);
}

/* Keep RV_ACCEPTS accept streams beside the listener. */
static void rv_fill(struct rv_remote *r)
{
    char path[128];
    snprintf(path, sizeof(path), "/ferry/accept/%s", r->token);
    for (int i = 0; i < RV_ACCEPTS; i++) {
        struct rv_obj *o = &r->acc[i];
        if (o->s)
            continue;
        o->s = outbound_h2_stream_new(r->sl, &r->task, o, "ferry-accept", path);
        if (o->s && outbound_h2_stream_beside(o->s, r->lst.s) < 0)
            rv_drop(o); /* the connection takes no more: the listener ends soon */
        if (!o->s)
            return;
    }
}

/* An accept stream was answered: its connection becomes a session. */
static void rv_hand(struct rv_remote *r, struct rv_obj *o)
{
    struct addr peer;
    if (addr_parse(o->peer, -1, &peer))
        memset(&peer, 0, sizeof(peer));
    struct ho_stream *s = o->s;
    o->s = NULL;
    o->peer[0] = '\0';
    int rc = r->cr->udp ? outbound_h2rev_udp_open(r->w, r->wc->cfg, s, r->cr, &peer, &r->flows)
                        : conn_open_reverse(r->w, r->wc, s, r->cr, &peer);
    if (rc) {
        log_warn("reverse %s: cannot take a connection (%s)", r->name,
                 rc == -EBUSY ? "max_connections reached" : "out of memory");
        outbound_h2_stream_release(s);
    }
}

/* The listener stream's news. */
static void rv_listener(struct rv_remote *r)
{
    struct ho_stream *s = r->lst.s;
    int st = outbound_h2_stream_status(s);
    if (st == 200 && !r->up && r->token[0]) {
        r->up = true;
        r->retry_ms = 0;
        log_info("reverse %s: the server listens on %s", r->name, r->bound);
    }
    bool refused = st && st != 200;
    if (!refused && !outbound_h2_stream_ended(s))
        return;
    bool http1 = outbound_h2_stream_http1(s);
    rv_drop(&r->lst);
    for (int i = 0; i < RV_ACCEPTS; i++)
        rv_drop(&r->acc[i]);
    if (r->up && !refused) {
        r->up = false;
        log_info("reverse %s: the server's listener is gone; registering again", r->name);
        rv_register(r); /* waits for the (next) connection */
        return;
    }
    r->up = false;
    if (!st && !http1) {
        rv_register(r); /* the connection failed first: its back-off paces this */
        return;
    }
    r->retry_ms = r->retry_ms ? r->retry_ms * 2 : RV_RETRY_MS;
    if (r->retry_ms > RV_RETRY_CAP_MS)
        r->retry_ms = RV_RETRY_CAP_MS;
    if (http1)
        log_error("reverse %s: the server speaks only HTTP/1.1: reverse remotes need HTTP/2",
                  r->name);
    else
        log_error("reverse %s: the server refused the bind (HTTP %d: %s); trying again in %u s",
                  r->name, st,
                  st == 403   ? "no [rules] allow ... cmd reverse rule lets this user bind it, or "
                                "the port is held for another user"
                  : st == 502 ? "the server could not bind it (in use?)"
                              : "see the server's log",
                  (unsigned)((r->retry_ms + 999) / 1000));
    loop_timer_arm(&r->w->loop, &r->timer, r->retry_ms);
}

static void rv_on_task(struct task *t)
{
    struct rv_remote *r = container_of(t, struct rv_remote, task);
    if (r->lst.s)
        rv_listener(r);
    for (int i = 0; i < RV_ACCEPTS; i++) {
        struct rv_obj *o = &r->acc[i];
        if (!o->s)
            continue;
        int st = outbound_h2_stream_status(o->s);
        if (st == 200)
            rv_hand(r, o);
        else if (st || outbound_h2_stream_ended(o->s))
            rv_drop(o);
    }
    if (r->up && r->lst.s)
        rv_fill(r);
}

static void rv_free(struct rv_remote *r)
{
    outbound_h2rev_udp_close_all(&r->flows);
    rv_drop(&r->lst);
    for (int i = 0; i < RV_ACCEPTS; i++)
        rv_drop(&r->acc[i]);
    loop_timer_stop(&r->w->loop, &r->timer);
    loop_task_cancel(&r->task);
    list_del(&r->link);
    worker_cfg_release(r->w, r->wc);
    free(r);
}

static void rv_add(struct h2rev_out_set *set, uint16_t ob, const struct config_reverse *cr)
{
    struct worker *w = set->w;
    struct rv_remote *r = calloc(1, sizeof(*r));
    struct ho_slot *sl = r ? outbound_h2_slot(w, w->cur, ob) : NULL;
    if (!sl) {
        free(r);
        log_error("reverse: out of memory");
        return;
    }
    r->w = w;
    r->wc = worker_cfg_hold(w);
    r->ob = ob;
    r->cr = cr;
    r->sl = sl;
    list_init(&r->flows);
    r->lst.r = r;
    for (int i = 0; i < RV_ACCEPTS; i++)
        r->acc[i].r = r;
    outbound_reverse_format(cr, r->name, sizeof(r->name));
    timer_init(&r->timer, rv_on_timer);
    task_init(&r->task, rv_on_task);
    list_add_tail(&set->remotes, &r->link);
    rv_register(r);
}

/* The remotes of w->cur, and none of an older configuration. */
static void rv_sync(struct task *t)
{
    struct h2rev_out_set *set = container_of(t, struct h2rev_out_set, sync);
    struct worker *w = set->w;
    bool have = false;
    struct list *pos, *next;
    for (pos = set->remotes.next; pos != &set->remotes; pos = next) {
        next = pos->next;
        struct rv_remote *r = container_of(pos, struct rv_remote, link);
        if (r->wc != w->cur)
            rv_free(r);
        else
            have = true;
    }
    const struct config *cfg = w->cur->cfg;
    for (uint32_t i = 0; !have && i < cfg->noutbounds; i++)
        for (uint8_t k = 0; k < cfg->outbounds[i].nrev; k++)
            rv_add(set, (uint16_t)i, &cfg->outbounds[i].rev[k]);
}

void outbound_h2rev_config_changed(struct worker *w)
{
    /* One tunnel connection registers them: worker 0's. */
    if (w->id != 0)
        return;
    const struct config *cfg = w->cur->cfg;
    bool any = false;
    for (uint32_t i = 0; i < cfg->noutbounds; i++)
        any = any || cfg->outbounds[i].nrev;
    if (!any && !w->h2out)
        return;
    struct h2rev_out_set **pset = outbound_h2_rev_set(w);
    if (!pset || (!*pset && !any))
        return;
    if (!*pset) {
        struct h2rev_out_set *set = calloc(1, sizeof(*set));
        if (!set)
            return;
        set->w = w;
        list_init(&set->remotes);
        task_init(&set->sync, rv_sync);
        *pset = set;
    }
    loop_defer(&w->loop, &(*pset)->sync); /* on the worker's own thread */
}

void outbound_h2rev_fini(struct worker *w)
{
    if (!w->h2out)
        return;
    struct h2rev_out_set **pset = outbound_h2_rev_set(w);
    if (!pset || !*pset)
        return;
    struct h2rev_out_set *set = *pset;
    while (!list_empty(&set->remotes))
        rv_free(container_of(set->remotes.next, struct rv_remote, link));
    loop_task_cancel(&set->sync);
    free(set);
    *pset = NULL;
}

/* ---- a reverse session's client side ------------------------------------ */

static ssize_t rv_result(ssize_t n)
{
    if (n >= 0)
        return n;
    errno = (int)-n;
    return -1;
}

ssize_t outbound_h2rev_recv(struct conn *c, void *p, size_t len)
{
    uint8_t want = 0;
    return rv_result(outbound_h2_stream_read(c->hos, p, len, &want));
}

ssize_t outbound_h2rev_send(struct conn *c, const void *p, size_t len)
{
    uint8_t want = 0;
    return rv_result(outbound_h2_stream_write(c->hos, p, len, &want));
}

int outbound_h2rev_shutdown(struct conn *c)
{
    return (int)rv_result(outbound_h2_stream_shutdown(c->hos));
}

void outbound_h2rev_credit(struct conn *c)
{
    outbound_h2_stream_credit(c->hos, c->c2u.bytes);
}

void outbound_h2rev_detach(struct conn *c)
{
    if (!c->hos)
        return;
    outbound_h2_stream_release(c->hos);
    c->hos = NULL;
}
