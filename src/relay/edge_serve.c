/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_serve.c: Minecraft status answered at the edge (docs/edge.md
 * "Health checks and Minecraft status"), so that status floods never reach
 * a backend and a server that is down still shows in the list:
 *
 *   - a modern status request (handshake intent 1) on an edge with
 *     status_cache = yes is answered from the route's cached answer for
 *     the client's protocol version (edge_cache.h) while it is fresh
 *     (status_cache_ttl); a version not cached is fetched once, by the
 *     first session to ask (the probe of edge_check.h, on its own worker),
 *     while the others asking wait for it; with no backend up, or a fetch
 *     that failed, the closest cached answer, else offline_motd, else the
 *     connection closes. With offline_motd alone, it answers while no
 *     backend is up. Otherwise the request goes to a backend.
 *   - a legacy ping (FE, FE 01, 1.6) on an edge with status_cache = yes is
 *     answered with a kick carrying the cached player counts (0 of 0
 *     without) and offline_motd (or "A Minecraft Server").
 *
 * Serving: the Status Request is answered with the JSON, the Ping with
 * its Pong, then the connection ends (the client's next move is to close).
 * The frames are read by proto/mcframe.h; this file only sequences them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/buf.h"
#include "log/log.h"
#include "proto/mcframe.h"
#include "relay/edge_cache.h"
#include "relay/edge_check.h"
#include "relay/edge_sess.h"
#include "relay/session.h"

#define SERVE_FRAME_MAX 64 /* the client's frames here: an empty request, a ping */
#define LEGACY_MOTD     "A Minecraft Server"
#define WAIT_POLL_MS    20   /* a session waiting for another's fetch looks again this often */
#define FETCH_RETRY_MS  5000 /* a version whose fetch failed is not fetched again this long */

static void count(struct conn *c, enum edge_status k)
{
    atomic_fetch_add_explicit(&c->edge->e->live->status[k], 1, memory_order_relaxed);
}

static bool route_any_up(const struct edge_route *r)
{
    for (uint32_t i = 0; i < r->nbackends; i++)
        if (!atomic_load_explicit(&r->backends[i].check_down, memory_order_relaxed))
            return true;
    return false;
}

/* Send p[0..n) to the client (what does not go now waits in the
 * client-bound buffer, made big enough first). */
static int serve_send(struct conn *c, const uint8_t *p, size_t n)
{
    if (!c->u2c.buf && n > 4096) {
        c->u2c.buf = buf_get_cap(&c->w->bufs, (uint32_t)n + 64);
        if (!c->u2c.buf)
            return -1;
    }
    return conn_send_client(c, p, n);
}

/* Bytes left in the client-bound buffer: write what the socket takes.
 * 0, or -errno on a failed send. */
static int serve_flush(struct conn *c)
{
    struct buf *b = c->u2c.buf;
    while (b && buf_len(b)) {
        ssize_t n = conn_cli_send(c, buf_head(b), buf_len(b));
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            c->cli_ev &= (uint8_t)~SIDE_WR;
            return 0;
        }
        if (n <= 0)
            return n < 0 ? -errno : -EPIPE;
        b->start += (uint32_t)n;
    }
    return 0;
}

/* A status fetch a session runs for a version the cache lacks; freed
 * after the loop's batch (its probe may be the batch's). */
struct serve_fetch {
    struct edge_probe probe;
    struct release rel;
    struct conn *c;
    const struct edge_route *r;
};

static void fetch_free(struct release *rel)
{
    free(container_of(rel, struct serve_fetch, rel));
}

/* Answer the client with json (heap, taken): the Status Response when
 * its Status Request is there (now or later), the Pong, the end. */
static void serve_begin(struct conn *c, char *json, size_t n, enum edge_status kind,
                        const char *why)
{
    struct edge_sess *s = c->edge;
    count(c, kind);
    s->json = json;
    s->json_len = n;
    s->done_why = why;
    c->reply = OUT_OK;
    conn_succeeded(c);
    loop_timer_arm_at(&c->w->loop, &c->timer, loop_now(&c->w->loop) + s->e->hello_ms);
    edge_serve_drive(c);
}

/* No answer of the version the client asked: the cached answer of the
 * route closest to it (that version's at any age, else the newest of
 * another), else offline_motd, else the connection ends. */
static void serve_fallback(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    char *json = NULL;
    size_t n = e->status_cache ? edge_cache_any(r, s->mh.protocol, &json) : 0;
    if (n) {
        serve_begin(c, json, n, EDGE_STATUS_CACHE, "status:cache");
        return;
    }
    size_t cap = MC_STATUS_JSON_MAX + 1;
    if (e->offline_motd && (json = malloc(cap)) != NULL &&
        (n = mc_status_offline(json, cap, e->offline_motd)) != 0) {
        serve_begin(c, json, n, EDGE_STATUS_OFFLINE, "status:offline");
        return;
    }
    free(json);
    conn_close(c, "status:unavailable");
}

static void fetch_done(struct edge_probe *p, const char *failed, const uint8_t *json, size_t len)
{
    (void)failed;
    struct serve_fetch *f = container_of(p, struct serve_fetch, probe);
    struct conn *c = f->c;
    const struct edge_route *r = f->r;
    c->edge->fetch = NULL;
    edge_cache_store(r, p->proto, json, len, true, clock_ms());
    loop_release(&c->w->loop, &f->rel, fetch_free);
    char *copy = json ? malloc(len + 1) : NULL;
    if (!copy) {
        serve_fallback(c, r);
        return;
    }
    memcpy(copy, json, len);
    copy[len] = '\0';
    serve_begin(c, copy, len, EDGE_STATUS_FETCHED, "status:fetched");
}

/* Fetch the client's version from the route's first backend up (the
 * cache said this session is the one to). */
static void serve_fetch(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    struct serve_fetch *f = calloc(1, sizeof(*f));
    if (!f) {
        edge_cache_store(r, s->mh.protocol, NULL, 0, true, 0);
        serve_fallback(c, r);
        return;
    }
    uint32_t i = 0;
    while (i + 1 < r->nbackends &&
           atomic_load_explicit(&r->backends[i].check_down, memory_order_relaxed))
        i++;
    f->c = c;
    f->r = r;
    edge_probe_init(&f->probe, &c->w->loop);
    f->probe.to = r->backends[i].addr;
    f->probe.status = true;
    f->probe.proto = s->mh.protocol;
    f->probe.host = edge_query_host(r);
    f->probe.done = fetch_done;
    s->fetch = f;
    edge_probe_start(&f->probe, conn_cfg(c)->connect_timeout_ms); /* may end c: nothing after */
}

/* Ask the cache for the client's version: answer, fetch, or wait. */
static void serve_look(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    char *json;
    size_t n = 0;
    uint64_t now = loop_now(&c->w->loop);
    switch (edge_cache_lookup(r, s->mh.protocol, clock_ms(), e->status_ttl_ms, FETCH_RETRY_MS,
                              &json, &n)) {
    case EDGE_LOOK_FRESH:
        serve_begin(c, json, n, EDGE_STATUS_CACHE, "status:cache");
        return;
    case EDGE_LOOK_FETCH:
        serve_fetch(c, r);
        return;
    case EDGE_LOOK_WAIT:
        if (!s->waiting) {
            s->waiting = true;
            s->wait_until = now + conn_cfg(c)->connect_timeout_ms + WAIT_POLL_MS;
        }
        if (now < s->wait_until) {
            loop_timer_arm_at(&c->w->loop, &c->timer, now + WAIT_POLL_MS);
            return;
        }
        break;
    case EDGE_LOOK_NONE:
        break;
    }
    s->waiting = false;
    serve_fallback(c, r);
}

bool edge_serve_status(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    if (!s->have_mh || s->mh.intent != 1 || !e->health_ms ||
        (!e->status_cache && !e->offline_motd) || r->named)
        return false;
    bool up = route_any_up(r);
    if (e->status_cache)
        atomic_store_explicit(&r->live->client_proto, s->mh.protocol, memory_order_relaxed);
    else if (up)
        return false; /* offline_motd alone: only while no backend is up */
    edge_halfopen_done(s);
    s->serving = true;
    s->status_route = r;
    c->c2u.buf->start += (uint32_t)s->mh.msg_len; /* the handshake is answered here */
    loop_timer_arm_at(&c->w->loop, &c->timer, loop_now(&c->w->loop) + e->hello_ms);
    if (e->status_cache && up)
        serve_look(c, r);
    else
        serve_fallback(c, r);
    return true;
}

void edge_serve_end(struct conn *c)
{
    struct edge_sess *s = c->edge;
    struct serve_fetch *f = s->fetch;
    if (!f)
        return;
    s->fetch = NULL;
    edge_probe_cancel(&f->probe);
    edge_cache_store(f->r, f->probe.proto, NULL, 0, true, 0); /* given up, not failed */
    loop_release(&c->w->loop, &f->rel, fetch_free);
}

void edge_serve_legacy(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    int64_t online = 0, max = 0;
    if (r) {
        char *json = NULL;
        size_t n = edge_cache_any(r, 0, &json);
        if (!n || !mc_status_players(json, n, &online, &max))
            online = max = 0;
        free(json);
    }
    uint8_t out[1200];
    size_t n = mc_legacy_reply(out, sizeof(out), s->mh.kind, 127, "ferry",
                               e->offline_motd ? e->offline_motd : LEGACY_MOTD, online, max);
    count(c, EDGE_STATUS_LEGACY);
    edge_halfopen_done(s);
    c->why = "status:legacy";
    c->reply = OUT_OK;
    conn_succeeded(c);
    if (!n || serve_send(c, out, n)) {
        conn_close(c, "status:legacy");
        return;
    }
    conn_linger(c);
}

/* The next frame of the client: 1 handled (go on), 0 wait, -1 ended. */
static int serve_frame(struct conn *c)
{
    struct edge_sess *s = c->edge;
    struct buf *b = c->c2u.buf;
    uint32_t id;
    size_t off, len, flen;
    int rc = mc_frame(buf_head(b), buf_len(b), SERVE_FRAME_MAX, &id, &off, &len, &flen);
    if (rc == 0)
        return 0;
    if (rc < 0 || (id == 0 && (len != 0 || s->answered)) || (id == 1 && len != 8) || id > 1) {
        conn_close(c, "status:bad-frame");
        return -1;
    }
    uint8_t out[16];
    if (id == 0) {
        uint8_t *reply = malloc(s->json_len + 16);
        size_t n = reply ? mc_status_reply(reply, s->json_len + 16, s->json, s->json_len) : 0;
        int sent = n ? serve_send(c, reply, n) : -1;
        free(reply);
        if (sent) {
            conn_close(c, "status:send-failed");
            return -1;
        }
        s->answered = true;
        b->start += (uint32_t)flen;
        return 1;
    }
    size_t n = mc_pong(out, buf_head(b) + off);
    b->start += (uint32_t)flen;
    if (serve_send(c, out, n)) {
        conn_close(c, "status:send-failed");
        return -1;
    }
    c->why = s->done_why;
    conn_linger(c); /* the pong is the last word: flushed, then closed */
    return -1;
}

void edge_serve_drive(struct conn *c)
{
    struct edge_sess *s = c->edge;
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    if (!s->json) { /* the answer is being fetched or waited for: frames wait */
        if (c->c2u.flags & HALF_EOF)
            conn_close(c, "client-closed");
        return;
    }
    rc = serve_flush(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    for (;;) {
        rc = serve_frame(c);
        if (rc < 0)
            return;
        if (rc == 0)
            break;
    }
    if (c->c2u.flags & HALF_EOF) /* the client left (with its answer, or before) */
        conn_close(c, s->answered ? s->done_why : "client-closed");
}

void edge_serve_timeout(struct conn *c)
{
    struct edge_sess *s = c->edge;
    if (s->waiting) {
        serve_look(c, s->status_route);
        return;
    }
    conn_close(c, c->edge->answered ? c->edge->done_why : "hello-timeout");
}
