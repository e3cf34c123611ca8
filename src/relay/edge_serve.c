/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_serve.c: Minecraft status answered at the edge (docs/edge.md
 * "Health checks and Minecraft status"), so that status floods never reach
 * a backend and a server that is down still shows in the list:
 *
 *   - a modern status request (handshake intent 1) on an edge with
 *     status_cache = yes is answered from the route's cache (filled by the
 *     health checks, edge_check.c) while it is fresh (three intervals), or
 *     whatever its age while no backend of the route is up; with no cache
 *     and no backend up, offline_motd answers. Otherwise it goes to a
 *     backend as before.
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
#include "relay/edge_check.h"
#include "relay/edge_sess.h"
#include "relay/session.h"

#define SERVE_FRAME_MAX 64 /* the client's frames here: an empty request, a ping */
#define LEGACY_MOTD     "A Minecraft Server"

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

bool edge_serve_status(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    if (!s->have_mh || s->mh.intent != 1 || !e->health_ms || (!e->status_cache && !e->offline_motd))
        return false;
    atomic_store_explicit(&r->live->client_proto, s->mh.protocol, memory_order_relaxed);
    size_t cap = MC_STATUS_JSON_MAX + 1;
    char *json = malloc(cap);
    if (!json)
        return false;
    uint64_t age = 0;
    size_t n = e->status_cache ? edge_status_copy(r, json, cap, &age) : 0;
    bool up = route_any_up(r);
    enum edge_status kind = EDGE_STATUS_CACHE;
    if (n && (age <= 3ull * e->health_ms || !up)) {
        s->done_why = "status:cache";
    } else if (!up && e->offline_motd && (n = mc_status_offline(json, cap, e->offline_motd))) {
        kind = EDGE_STATUS_OFFLINE;
        s->done_why = "status:offline";
    } else {
        free(json);
        return false;
    }
    count(c, kind);
    edge_halfopen_done(s);
    s->serving = true;
    s->json = json;
    s->json_len = n;
    c->c2u.buf->start += (uint32_t)s->mh.msg_len; /* the handshake is answered here */
    c->reply = OUT_OK;
    conn_succeeded(c);
    uint64_t now = loop_now(&c->w->loop);
    loop_timer_arm_at(&c->w->loop, &c->timer, now + e->hello_ms);
    edge_serve_drive(c);
    return true;
}

void edge_serve_legacy(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    int64_t online = 0, max = 0;
    if (r) {
        char *json = malloc(MC_STATUS_JSON_MAX + 1);
        uint64_t age;
        size_t n = json ? edge_status_copy(r, json, MC_STATUS_JSON_MAX + 1, &age) : 0;
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
    conn_close(c, c->edge->answered ? c->edge->done_why : "hello-timeout");
}
