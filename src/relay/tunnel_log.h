/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_log.h: the lines that name an HTTP/2 tunnel connection on either
 * end (the server's carrier in h2conn.c, the client's connection to its
 * parent in outbound_h2.c): one when it opens ("tunnel-open") and one
 * when it closes ("tunnel-close"), at info with the access log's MSGID,
 * written when the configuration has the access log on. The id is the one
 * each stream session's access line names as tunnel= (conn.h tun_id), so
 * an operator finds a session's tunnel, and a tunnel's sessions, on each
 * end; the client's local= is the server's peer=.
 */
#ifndef FERRY_RELAY_TUNNEL_LOG_H
#define FERRY_RELAY_TUNNEL_LOG_H

#include <stdint.h>

#include "util/addr.h"

struct config;

struct tunnel_log {
    const char *side;         /* "server" or "client" */
    uint64_t id;              /* the tunnel's id (tunnel=) */
    const struct addr *peer;  /* the connection's far end */
    const struct addr *local; /* our end; NULL leaves it out */
    const char *user;         /* the tunnel's user; NULL: "-" */
    const char *via;          /* the client's outbound name; NULL: none */
    const char *transport;    /* "h2", or "ws" inside a WebSocket */
    const char *end;          /* why it closed; NULL: the open line */
    uint64_t ms;              /* how long it was open (close) */
    uint64_t streams;         /* streams it carried (close) */
    uint64_t up, down;        /* bytes it read from / wrote to its peer (close) */
};

/* Write t's line (open when t->end is NULL, else close) if cfg has the
 * access log on and info is enabled. */
void tunnel_log(const struct config *cfg, const struct tunnel_log *t);

#endif
