/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_ws.c: the WebSocket transport's server side, before the tunnel
 * runs (front_ws.h). http.c asks front_ws_route() about every
 * origin-form request on a listener with websocket=/PATH; a valid RFC
 * 6455 Upgrade to the path gets a link (wslink.h) with the 101 and the
 * request's early bytes, and h2conn.c then runs the HTTP/2 server session
 * inside it exactly as on a tls:// listener. Every other request (another
 * path, or the path without an Upgrade) gets a 404, or with decoy=HOST:PORT
 * is relayed byte for byte to that origin, which then answers it and the
 * rest of the connection: to a prober the listener is that web site. The
 * decoy is the operator's own destination, like nginx's proxy_pass: the
 * client's rules and the protected ranges do not judge it (c->own_dest),
 * the default outbound carries it. This row must not parse the bytes it
 * relays.
 */
#include "relay/front_ws.h"

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "core/sock.h"
#include "proto/http1.h"
#include "relay/front.h"
#include "relay/session.h"
#include "relay/wslink.h"
#include "util/addr.h"

/* Does target (tlen bytes, origin-form) name path (its query aside)? */
static bool path_is(const char *target, size_t tlen, const char *path)
{
    size_t n = 0;
    while (n < tlen && target[n] != '?')
        n++;
    return n == strlen(path) && memcmp(target, path, n) == 0;
}

enum front_ws_route front_ws_route(const struct conn *c, const struct http1_msg *m,
                                   char key[WS_KEY_LEN + 1])
{
    const struct config *cfg = conn_cfg(c);
    if (c->listen_index >= cfg->nlisten) /* a reverse session: no listener, no websocket= */
        return FRONT_WS_NONE;
    const struct config_listen *l = &cfg->listen[c->listen_index];
    if (!l->ws_path[0] || m->tlen == 0 || m->target[0] != '/')
        return FRONT_WS_NONE; /* absolute-form and CONNECT: the proxy's */
    bool decoy = l->decoy_port != 0;
    if (!path_is(m->target, m->tlen, l->ws_path))
        return decoy ? FRONT_WS_DECOY : FRONT_WS_NOT_FOUND;
    switch (ws_check_request(m, key)) {
    case 0:
        return FRONT_WS_TUNNEL;
    case WS_E_BAD:
        return FRONT_WS_BAD;
    case WS_E_VERSION:
        return FRONT_WS_VERSION;
    default:
        return decoy ? FRONT_WS_DECOY : FRONT_WS_NOT_FOUND;
    }
}

struct wslink *front_ws_link(const char *key, const uint8_t *early, size_t n)
{
    char accept[32], head[256];
    struct wslink *ws = wslink_new(false);
    size_t hlen = 0;
    if (ws && wslink_accept(key, accept) == 0)
        hlen = ws_write_response(head, sizeof(head), accept);
    if (!ws || !hlen || wslink_raw(ws, head, hlen) || wslink_keep(ws, early, n)) {
        wslink_free(ws);
        return NULL;
    }
    return ws;
}

/* ---- the decoy ---------------------------------------------------------- */

static void decoy_start(struct conn *c)
{
    const struct config_listen *l = &conn_cfg(c)->listen[c->listen_index];
    c->cmd = CONN_CMD_CONNECT;
    c->own_dest = true; /* the operator's web site: no client rule judges it */
    conn_set_state(c, CONN_ST_REQUEST);
    struct addr ip;
    if (addr_parse_ip(l->decoy_host, l->decoy_port, &ip) == 0) {
        conn_dial(c, NULL, &ip, l->decoy_port);
    } else {
        memset(&ip, 0, sizeof(ip));
        conn_dial(c, l->decoy_host, &ip, l->decoy_port);
    }
}

/* Nothing is read before the decoy is reached: the bytes wait. */
static void decoy_drive(struct conn *c, uint32_t up_events)
{
    (void)c;
    (void)up_events;
}

static void decoy_connected(struct conn *c)
{
    c->reply = (uint8_t)OUT_OK;
    conn_succeeded(c);
    conn_relay_start(c);
}

/* The request cannot be answered as the decoy would: a 502 would tell a
 * prober what this is, so the connection is reset (and logged). */
static void decoy_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    c->reply = (uint8_t)o;
    if (c->cli.fd >= 0)
        sock_abort(c->cli.fd);
    conn_close(c, why);
}

static void decoy_timeout(struct conn *c)
{
    conn_close(c, "handshake-timeout");
}

static void decoy_end(struct conn *c)
{
    char reply[8];
    snprintf(reply, sizeof(reply), "%d", errmap_http_status((enum outcome)c->reply));
    conn_access_log(c, "decoy", c->reply == OUT_NONE ? "-" : reply);
}

const struct front_ops front_ws_decoy = {
    .name = "decoy",
    .log_proto = NULL,
    .proto = PROTO_HTTP,
    .sp = SP_HTTP,
    .start = decoy_start,
    .drive = decoy_drive,
    .connected = decoy_connected,
    .fail_reply = decoy_fail_reply,
    .timeout = decoy_timeout,
    .end = decoy_end,
};
