/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_ws.h: the server's door to the WebSocket transport (front_ws.c):
 * on a listener with websocket=/PATH, which origin-form HTTP/1.1 request
 * goes where (the tunnel, the decoy, or an error), the link a valid
 * Upgrade gets, and the decoy's row.
 */
#ifndef FERRY_RELAY_FRONT_WS_H
#define FERRY_RELAY_FRONT_WS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ws.h"

struct conn;
struct http1_msg;
struct wslink;

enum front_ws_route {
    FRONT_WS_NONE,      /* not for us: the HTTP proxy's usual answer */
    FRONT_WS_TUNNEL,    /* a valid Upgrade to the path: 101, then HTTP/2 inside */
    FRONT_WS_DECOY,     /* anything else, with decoy= set: relayed to it as it came */
    FRONT_WS_NOT_FOUND, /* anything else: 404 */
    FRONT_WS_BAD,       /* a malformed Upgrade to the path: 400 */
    FRONT_WS_VERSION,   /* an Upgrade of another version: 426 (RFC 6455 4.4) */
};

/* Where request m (parsed, not authenticated: the tunnel's streams carry
 * their own Proxy-Authorization) on c's listener goes; key gets the
 * Sec-WebSocket-Key of a FRONT_WS_TUNNEL. */
enum front_ws_route front_ws_route(const struct conn *c, const struct http1_msg *m,
                                   char key[WS_KEY_LEN + 1]);
/* The server's link for key: the 101 queued, early (n bytes that came
 * behind the request head) kept for the HTTP/2 session. NULL: no memory. */
struct wslink *front_ws_link(const char *key, const uint8_t *early, size_t n);
/* The decoy's row: dials the listener's decoy= (the configuration's own
 * destination: no rule or protected range judges it; the default outbound)
 * and relays the bytes in c2u.buf (the request as it came) and all after
 * them, both ways. */
extern const struct front_ops front_ws_decoy;

#endif
