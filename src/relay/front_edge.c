/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_edge.c: the front row of an [edge NAME] listener (docs/edge.md).
 * At accept it asks edge_flood.c for admission (lists, bans, the
 * half-open cap, per-source and per-prefix limits); then it reads the first
 * message within first_byte_timeout and hello_timeout, hands the bytes to
 * the sans-I/O sniffers (proto/mcsniff.h, proto/tlshello.h), picks the
 * route for the host and a backend by the edge's strategy, dials it
 * directly (outbound_direct: no rules; DNS only for a backend given by
 * name, a template the route's captures fill), writes a PROXY v2 header
 * when the edge asks for one, replays every byte read so far (the
 * Minecraft handshake's address rewritten when the route asks: rewrite=,
 * forward_suffix = strip), and relays like any tunnel.
 *
 * It must not parse anything itself (the sniffers do), and it never puts
 * a client-supplied name anywhere but the access log (canonical LDH only,
 * so nothing there needs escaping); metrics carry configured names only.
 * A route that asks for a signed host name (signed = hop | token) has it
 * judged by edge/signkey.h between the route lookup and the dial, and the
 * signature taken off the Minecraft handshake before the backend sees it.
 * A status request may be answered at the edge (edge_serve.c) instead of
 * the dial. Failures are reported to edge_flood.c, which bans repeat
 * offenders when the edge asks it to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "config/config.h"
#include "config/edge.h"
#include "core/buf.h"
#include "core/sock.h"
#include "edge/signkey.h"
#include "log/fields.h"
#include "log/log.h"
#include "proto/hostpat.h"
#include "proto/mcframe.h"
#include "proto/mcsniff.h"
#include "proto/proxy.h"
#include "proto/signhost.h"
#include "proto/tlshello.h"
#include "relay/edge_sess.h"
#include "relay/front.h"
#include "relay/outbound.h"
#include "relay/session.h"

#define EDGE_HEADROOM     64   /* room before the first message for a PROXY v2 header */
#define EDGE_IDLE_MS      300  /* "FE" or "FE 01" then this much silence: a legacy ping */
#define EDGE_BACKEND_DOWN 5000 /* a failed dial: first-healthy skips the backend this long */

/* ---- ending --------------------------------------------------------------- */

static void edge_count_reject(struct conn *c, enum edge_reject r)
{
    atomic_fetch_add_explicit(&c->edge->e->live->rejects[r], 1, memory_order_relaxed);
}

/* Refusals at accept come in floods: no access-log line each (the
 * counters have them), and one warning per second per worker says how
 * many. */
static void edge_flood_log(struct conn *c, const char *why)
{
    static _Thread_local uint64_t last_ms, suppressed;
    uint64_t now = loop_now(&c->w->loop);
    if (last_ms && now - last_ms < 1000) {
        suppressed++;
        return;
    }
    char a[ADDR_STRLEN];
    log_warn("edge %s: connection from %s refused (%s)%s", c->edge->e->name,
             addr_format(&c->client, a, sizeof(a)), why,
             suppressed ? " (and others in the last second)" : "");
    last_ms = now;
    suppressed = 0;
}

/* Refused before a backend: counted, and closed (a reset for the flood
 * reasons, where nothing was read). */
static void edge_reject(struct conn *c, enum edge_reject r, const char *why)
{
    edge_count_reject(c, r);
    conn_bad_handshake(c);
    edge_flood_failed(c, r, why);
    if (edge_flood_refusal(r)) {
        c->edge->flood = true;
        edge_flood_log(c, why);
        sock_abort(c->cli.fd);
    }
    conn_close(c, why);
}

static size_t edge_log_fields(const struct conn *c, struct log_field *f, size_t room, char *buf,
                              size_t len)
{
    const struct edge_sess *s = c->edge;
    if (!s || room < 7)
        return 0;
    snprintf(buf, len, "-");
    if (s->be && s->dst[0])
        snprintf(buf, len, "%s:%u", s->dst, (unsigned)s->be->addr.port);
    else if (s->be)
        addr_format(&s->be->addr, buf, len);
    size_t n = 0;
    f[n++] = (struct log_field)LOG_FSTR("edge", s->e->name);
    f[n++] = (struct log_field)LOG_FSTR("route", s->route >= 0 ? s->e->routes[s->route].host : "-");
    f[n++] = (struct log_field)LOG_FSTR("host", s->host[0] ? s->host : "-");
    f[n++] = (struct log_field)LOG_FSTR("backend", buf);
    f[n++] = (struct log_field)LOG_FSTR(
        "sniff", s->sniffed ? edge_sniff_name((enum edge_sniff)s->sniffed) : "-");
    if (s->signed_result >= 0)
        f[n++] = (struct log_field)LOG_FSTR(
            "signed", signkey_result_name((enum signkey_result)s->signed_result));
    if (s->vouched_set) {
        size_t used = strlen(buf) + 1;
        if (used < len) {
            addr_format(&s->vouched, buf + used, len - used);
            f[n++] = (struct log_field)LOG_FSTR("vouched", buf + used);
        }
    }
    return n;
}

static void edge_end(struct conn *c)
{
    struct edge_sess *s = c->edge;
    if (!s || !s->flood)
        conn_access_log(c, "EDGE", c->reply == OUT_OK ? "ok" : "-");
    if (!s)
        return;
    edge_serve_end(c);
    edge_halfopen_done(s);
    edge_flood_release(c, s);
    if (s->counted_active)
        atomic_fetch_sub_explicit(&s->be->active, 1, memory_order_relaxed);
    free(s->json);
    free(s);
    c->edge = NULL;
}

/* ---- routing and the dial ------------------------------------------------- */

/* A backend the active checks have not marked down. */
static bool edge_checked_up(const struct edge_backend *b)
{
    return !atomic_load_explicit(&b->check_down, memory_order_relaxed);
}

/* The route's backend by the strategy, among those not marked down by a
 * health check (all of them when every one is): first-healthy also skips
 * one whose dial failed in the last EDGE_BACKEND_DOWN ms. */
static struct edge_backend *edge_pick(const struct config_edge *e, const struct edge_route *r,
                                      uint64_t now)
{
    struct edge_backend *b = r->backends;
    uint32_t n = r->nbackends;
    bool any = false;
    for (uint32_t i = 0; i < n && !any; i++)
        any = edge_checked_up(&b[i]);
    enum edge_strategy st = r->strategy >= 0 ? (enum edge_strategy)r->strategy : e->strategy;
    if (st == EDGE_FIRST_HEALTHY) {
        for (uint32_t i = 0; i < n; i++)
            if ((!any || edge_checked_up(&b[i])) &&
                atomic_load_explicit(&b[i].down_until_ms, memory_order_relaxed) <= now)
                return &b[i];
        return &b[0];
    }
    if (st == EDGE_LEAST_CONN) {
        uint32_t best = 0, load = UINT32_MAX;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t a = atomic_load_explicit(&b[i].active, memory_order_relaxed);
            if (a < load && (!any || edge_checked_up(&b[i]))) {
                load = a;
                best = i;
            }
        }
        return &b[best];
    }
    uint32_t t = atomic_fetch_add_explicit(&r->live->turn, 1, memory_order_relaxed);
    for (uint32_t k = 0; any && k < n; k++)
        if (edge_checked_up(&b[(t + k) % n]))
            return &b[(t + k) % n];
    return &b[t % n];
}

/* ---- signed host names ---------------------------------------------------- */

/* The handshake in c's buffer with its address String replaced by
 * a[0..alen); the bytes after it move when it grows. s->mh is then the new
 * handshake's (s->host stays the client's). 0, or -1 when it cannot be. */
static int edge_rewrite(struct conn *c, const uint8_t *a, size_t alen)
{
    struct edge_sess *s = c->edge;
    struct buf *b = c->c2u.buf;
    uint8_t out[MC_FRAME_MAX + HOSTNAME_MAX + 16];
    size_t n = mc_rewrite_addr(buf_head(b), &s->mh, a, alen, out, sizeof(out));
    size_t old = s->mh.msg_len;
    if (!n || (n > old && b->end + (n - old) > b->cap))
        return -1;
    if (n <= old) {
        b->start += (uint32_t)(old - n);
    } else {
        uint8_t *rest = b->data + b->start + old;
        memmove(rest + (n - old), rest, b->end - (b->start + old));
        b->end += (uint32_t)(n - old);
    }
    memcpy(b->data + b->start, out, n);
    struct mc_hello mh;
    if (mc_sniff(buf_head(b), buf_len(b), MC_FRAME_MAX, false, &mh) != MC_OK)
        return -1;
    s->mh = mh;
    return 0;
}

/* The address the backend sees in the handshake: the host rewritten
 * (rewrite=, with the route's captures), the suffixes after it (Forge
 * markers, forwarding data) kept or not (forward_suffix). NULL, or the
 * end reason when it cannot be done. */
static const char *edge_forward_addr(struct conn *c, const struct edge_route *r)
{
    struct edge_sess *s = c->edge;
    if (!s->have_mh)
        return NULL; /* TLS (SNI is not rewritten), a legacy ping */
    bool strip = edge_route_strips(s->e, r);
    size_t raw = s->mh.host_raw_len, tail = s->mh.addr_len - raw;
    if (!r->rewrite && (!strip || !tail))
        return NULL;
    uint8_t a[HOSTNAME_MAX + 1 + MC_FRAME_MAX];
    const uint8_t *addr = buf_head(c->c2u.buf) + s->mh.addr_off;
    size_t n = raw;
    if (r->rewrite) {
        int k = hostpat_expand(r->rewrite, s->host, &s->caps, (char *)a, HOSTNAME_MAX + 1);
        if (k < 0)
            return "rewrite-failed";
        n = (size_t)k;
    } else {
        memcpy(a, addr, raw);
    }
    if (!strip && tail <= MC_FRAME_MAX) {
        memcpy(a + n, addr + raw, tail);
        n += tail;
    }
    return edge_rewrite(c, a, n) ? "rewrite-failed" : NULL;
}

/* Judge the signature route r asks for. SIGNKEY_OK: go on (the signature
 * is off the handshake, and a hop signature's client is s->vouched). */
static enum signkey_result edge_check_signed(struct conn *c, enum edge_signed mode)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    const uint8_t *p = buf_head(c->c2u.buf);
    struct signhost sh;
    int pr = 0;
    const char *bind = s->host;
    size_t blen = strlen(s->host);
    if (mode == EDGE_SIGNED_HOP && s->have_mh)
        pr = signhost_parse_hop(p + s->mh.addr_off, s->mh.addr_len, &sh);
    else if (mode == EDGE_SIGNED_TOKEN && (pr = signhost_parse_token(s->host, blen, &sh)) > 0) {
        bind += sh.keep;
        blen -= sh.keep;
    }
    enum signkey_result v = pr == 0 ? SIGNKEY_NO_SIG
                            : pr < 0
                                ? SIGNKEY_BAD_FORMAT
                                : signkey_verify(e->ring, &sh, bind, blen, (uint64_t)time(NULL),
                                                 e->signed_skew, e->signed_max_ttl);
    atomic_fetch_add_explicit(&e->live->signed_results[v], 1, memory_order_relaxed);
    s->signed_result = (int8_t)v;
    if (v != SIGNKEY_OK || !s->have_mh)
        return v;
    int rc = -1;
    if (mode == EDGE_SIGNED_HOP) {
        s->vouched = sh.client;
        s->vouched_set = true;
        rc = edge_rewrite(c, p + s->mh.addr_off, sh.keep);
    } else { /* the domain, then what followed the host (Forge markers...) */
        uint8_t a[MC_FRAME_MAX];
        size_t tail = s->mh.addr_len - s->mh.host_raw_len;
        if (blen + tail <= sizeof(a)) {
            memcpy(a, bind, blen);
            memcpy(a + blen, p + s->mh.addr_off + s->mh.host_raw_len, tail);
            rc = edge_rewrite(c, a, blen + tail);
        }
    }
    return rc ? SIGNKEY_BAD_FORMAT : v; /* cannot happen: the address only shrinks */
}

/* The end reason of a refused signature (static: c->why keeps it). */
static const char *edge_signed_why(enum signkey_result v)
{
    static const char *const why[SIGNKEY_RESULT_COUNT] = {
        "signature:ok",          "signature:no-sig",  "signature:bad-format",
        "signature:unknown-kid", "signature:expired", "signature:not-yet-valid",
        "signature:too-long",    "signature:bad-tag", "signature:replayed",
        "signature:replay-full",
    };
    return (unsigned)v < SIGNKEY_RESULT_COUNT ? why[v] : "signature";
}

/* Dial s->be: its address, or its name (a template of the route's
 * captures) resolved by the direct outbound. */
static void edge_dial_backend(struct conn *c, const struct edge_route *r, uint64_t now)
{
    struct edge_sess *s = c->edge;
    const struct config *cfg = conn_cfg(c);
    struct edge_backend *be = s->be;
    if (be->name && (hostpat_expand(be->name, s->host, &s->caps, s->dst, sizeof(s->dst)) < 0 ||
                     !(c->dst_name = strdup(s->dst)))) {
        /* over 255 bytes or a label over 63: no such backend (counted as
         * unreachable, like a name that does not resolve) */
        s->dst[0] = '\0';
        atomic_fetch_add_explicit(&r->live->results[EDGE_RES_UNREACHABLE], 1, memory_order_relaxed);
        if (!c->dst_name)
            edge_flood_failed(c, EDGE_REJ_UNKNOWN_HOST, "backend-name-invalid");
        conn_close(c, c->dst_name ? "no-memory" : "backend-name-invalid");
        return;
    }
    atomic_fetch_add_explicit(&be->active, 1, memory_order_relaxed);
    s->counted_active = true;
    c->cmd = CONN_CMD_CONNECT;
    c->dialed = true;
    c->target = be->addr;
    c->dst_port = be->addr.port;
    c->ob_rule = OUTBOUND_DIRECT;
    c->own_dest = true; /* the operator's backend: no client rule judges it */
    c->deadline = now + cfg->connect_timeout_ms;
    loop_timer_arm_at(&c->w->loop, &c->timer, c->deadline);
    conn_route(c, OUTBOUND_DIRECT, be->name ? s->dst : NULL, &be->addr, be->addr.port);
}

static void edge_dial(struct conn *c, const char *host)
{
    struct edge_sess *s = c->edge;
    const struct config_edge *e = s->e;
    int32_t r = host[0] ? edge_route_find(e, host, &s->caps) : -1;
    if (r < 0) {
        r = e->unknown;
        s->caps.n = 0;
    }
    if (r < 0) {
        edge_reject(c, EDGE_REJ_UNKNOWN_HOST, "unknown-host");
        return;
    }
    s->route = r;
    const struct edge_route *rt = &e->routes[r];
    enum edge_signed mode = edge_route_signed(e, rt);
    if (mode != EDGE_SIGNED_OFF) {
        enum signkey_result v = edge_check_signed(c, mode);
        if (v != SIGNKEY_OK) {
            s->route = -1;
            edge_reject(c, EDGE_REJ_SIGNATURE, edge_signed_why(v));
            return;
        }
    }
    if (edge_serve_status(c, rt))
        return;
    const char *bad = edge_forward_addr(c, rt);
    if (bad) {
        conn_close(c, bad);
        return;
    }
    edge_halfopen_done(s);
    uint64_t now = loop_now(&c->w->loop);
    s->be = edge_pick(e, rt, now);
    edge_dial_backend(c, rt, now);
}

/* An IPv4 address as ::ffff:a.b.c.d; others unchanged. */
static void edge_map6(struct addr *a)
{
    if (a->family != AF_INET)
        return;
    uint8_t v4[4];
    memcpy(v4, a->ip, 4);
    memset(a->ip, 0, 10);
    a->ip[10] = a->ip[11] = 0xff;
    memcpy(a->ip + 12, v4, 4);
    a->family = AF_INET6;
}

/* The backend answered: the PROXY v2 header (naming the client and the
 * address it reached), then every byte read so far, then the relay. */
static void edge_connected(struct conn *c)
{
    struct edge_sess *s = c->edge;
    struct buf *b = c->c2u.buf;
    const struct edge_route *r = &s->e->routes[s->route];
    if (r->proxy_v2 > 0 || (r->proxy_v2 < 0 && s->e->proxy_v2)) {
        uint8_t hdr[EDGE_HEADROOM];
        struct addr dst;
        if (sock_local_addr(c->cli.fd, &dst))
            dst = c->client;
        addr_unmap(&dst);
        /* a hop signature's client is the one the front saw; of another
         * family than dst, both go as IPv6 (IPv4-mapped) */
        struct addr src = s->vouched_set ? s->vouched : c->client;
        if (src.family != dst.family) {
            edge_map6(&src);
            edge_map6(&dst);
        }
        size_t n = proxy_write_v2(hdr, sizeof(hdr), &src, &dst);
        if (n && n <= b->start) {
            b->start -= (uint32_t)n;
            memcpy(b->data + b->start, hdr, n);
        }
    }
    atomic_fetch_add_explicit(&s->e->routes[s->route].live->results[EDGE_RES_OK], 1,
                              memory_order_relaxed);
    c->reply = OUT_OK;
    conn_succeeded(c);
    conn_relay_start(c);
}

static void edge_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    (void)o;
    struct edge_sess *s = c->edge;
    if (s && s->route >= 0) {
        atomic_fetch_add_explicit(&s->e->routes[s->route].live->results[EDGE_RES_UNREACHABLE], 1,
                                  memory_order_relaxed);
        /* a name that did not resolve says nothing of the template's
         * other names: only an address is skipped for a while */
        if (s->be && !s->be->name)
            atomic_store_explicit(&s->be->down_until_ms, loop_now(&c->w->loop) + EDGE_BACKEND_DOWN,
                                  memory_order_relaxed);
    }
    /* One end reason for every way a dial fails (err= keeps the errno,
     * a timeout or a refusal), and resolve-failed / resolve-timeout for a
     * backend name that did not resolve. */
    c->why = why && !strncmp(why, "resolve-", 8) ? why : "backend-unreachable";
    /* A captured name that does not exist is an unknown host in disguise
     * (a client probing names costs a DNS query each): it feeds the bans. */
    if (s && s->be && s->be->name && why && !strcmp(why, "resolve-failed"))
        edge_flood_failed(c, EDGE_REJ_UNKNOWN_HOST, why);
    conn_close(c, c->why);
}

/* ---- the first message ---------------------------------------------------- */

/* The end reason of a sniffer's error code (static: c->why keeps it). */
static const char *edge_sniff_why(uint8_t sniffed, int rc)
{
    static const char *const mc[] = {
        "sniff-error:mc-varint",    "sniff-error:mc-too-big",  "sniff-error:mc-frame",
        "sniff-error:mc-packet-id", "sniff-error:mc-host-len", "sniff-error:mc-utf8",
        "sniff-error:mc-host",      "sniff-error:mc-intent",   "sniff-error:mc-legacy",
    };
    static const char *const tls[] = {
        "sniff-error:tls-not-tls",   "sniff-error:tls-too-big",   "sniff-error:tls-record",
        "sniff-error:tls-handshake", "sniff-error:tls-extension", "sniff-error:tls-dup-sni",
        "sniff-error:tls-sni",
    };
    size_t i = (size_t)(-rc - 1);
    if (sniffed == EDGE_SNIFF_TLS)
        return i < sizeof(tls) / sizeof(tls[0]) ? tls[i] : "sniff-error";
    return i < sizeof(mc) / sizeof(mc[0]) ? mc[i] : "sniff-error";
}

/* The sniffer's verdict on what is there: 1 routed (or closed), 0 more
 * needed. */
static int edge_sniff(struct conn *c)
{
    struct edge_sess *s = c->edge;
    struct buf *b = c->c2u.buf;
    const uint8_t *p = buf_head(b);
    size_t len = buf_len(b);
    /* auto: a TLS record header is 16 03; a Minecraft frame of 22 bytes
     * also starts with 16, but its packet id 00 follows. */
    if (!s->sniffed && s->e->sniff == EDGE_SNIFF_AUTO && p[0] == 0x16 && len < 2)
        return 0;
    if (!s->sniffed)
        s->sniffed = s->e->sniff != EDGE_SNIFF_AUTO ? (uint8_t)s->e->sniff
                     : p[0] == 0x16 && p[1] == 0x03 ? EDGE_SNIFF_TLS
                                                    : EDGE_SNIFF_MC;
    int rc;
    if (s->sniffed == EDGE_SNIFF_TLS) {
        struct tls_hello th;
        rc = tls_sniff(p, len, &th);
        if (rc == TLS_OK)
            memcpy(s->host, th.sni, th.sni_len + 1);
    } else {
        struct mc_hello mh;
        rc = mc_sniff(p, len, s->e->max_hello, s->idle, &mh);
        if (rc == MC_OK || rc == MC_LEGACY)
            memcpy(s->host, mh.host, mh.host_len + 1);
        if (rc == MC_OK || rc == MC_LEGACY)
            s->mh = mh;
        s->have_mh = rc == MC_OK;
        if (rc == MC_NEED_MORE && !s->idle_armed && p[0] == 0xFE &&
            (len == 1 || (len == 2 && p[1] == 0x01))) {
            /* A bare legacy ping needs silence to be told from a frame. */
            s->idle_armed = true;
            uint64_t t = loop_now(&c->w->loop) + EDGE_IDLE_MS;
            loop_timer_arm_at(&c->w->loop, &c->timer,
                              t < s->hello_deadline ? t : s->hello_deadline);
        }
    }
    if (rc < 0) {
        edge_reject(c, EDGE_REJ_SNIFF_ERROR, edge_sniff_why(s->sniffed, rc));
        return 1;
    }
    if (rc == 0)
        return 0;
    if (rc == MC_LEGACY && s->sniffed == EDGE_SNIFF_MC && s->e->status_cache) {
        int32_t r = s->host[0] ? edge_route_find(s->e, s->host, NULL) : -1;
        edge_serve_legacy(c, r >= 0 ? &s->e->routes[r] : NULL);
        return 1;
    }
    edge_dial(c, s->host);
    return 1;
}

static void edge_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    struct edge_sess *s = c->edge;
    if (s->serving) {
        edge_serve_drive(c);
        return;
    }
    int rc = conn_read_handshake(c);
    if (rc) {
        conn_close_err(c, "client-error", rc);
        return;
    }
    struct buf *b = c->c2u.buf;
    if (buf_len(b) && !s->got_first) {
        s->got_first = true;
        loop_timer_arm_at(&c->w->loop, &c->timer, s->hello_deadline);
    }
    if (buf_len(b) && edge_sniff(c))
        return;
    if (c->c2u.flags & HALF_EOF)
        edge_reject(c, EDGE_REJ_CLIENT_CLOSED, "client-closed");
    else if (buf_room(b) == 0)
        edge_reject(c, EDGE_REJ_SNIFF_ERROR, "sniff-error:too-big");
}

static void edge_timeout(struct conn *c)
{
    struct edge_sess *s = c->edge;
    if (s->serving) {
        edge_serve_timeout(c);
        return;
    }
    if (s->idle_armed && !s->idle && loop_now(&c->w->loop) < s->hello_deadline) {
        s->idle = true;
        loop_timer_arm_at(&c->w->loop, &c->timer, s->hello_deadline);
        edge_sniff(c);
        return;
    }
    if (!s->got_first)
        edge_reject(c, EDGE_REJ_FIRST_BYTE_TIMEOUT, "first-byte-timeout");
    else
        edge_reject(c, EDGE_REJ_HELLO_TIMEOUT, "hello-timeout");
}

/* At accept: the limits, then wait for the first byte. */
static void edge_start(struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    const struct config_edge *e = &cfg->edges[cfg->listen[c->listen_index].edge - 1];
    struct edge_sess *s = calloc(1, sizeof(*s));
    if (!s) {
        conn_close(c, "no-memory");
        return;
    }
    s->e = e;
    s->route = -1;
    s->signed_result = -1;
    c->edge = s;
    int r = edge_flood_admit(c, s);
    if (r != EDGE_REJ_COUNT) {
        edge_reject(c, (enum edge_reject)r, edge_reject_name((enum edge_reject)r));
        return;
    }
    struct buf *b = buf_get_cap(&c->w->bufs, TLS_SNIFF_BUF_MAX + EDGE_HEADROOM);
    if (!b) {
        conn_close(c, "no-memory");
        return;
    }
    b->start = b->end = EDGE_HEADROOM;
    c->c2u.buf = b;
    s->hello_deadline = c->t_start + e->hello_ms;
    loop_timer_arm_at(&c->w->loop, &c->timer, c->t_start + e->first_byte_ms);
    if (c->cli_ev & SIDE_RD)
        edge_drive(c, 0);
}

const struct front_ops front_edge = {
    .name = "edge",
    .log_proto = NULL,
    .sp = SP_NONE,
    .start = edge_start,
    .drive = edge_drive,
    .connected = edge_connected,
    .fail_reply = edge_fail_reply,
    .timeout = edge_timeout,
    .end = edge_end,
    .log_fields = edge_log_fields,
};
