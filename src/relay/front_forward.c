/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_forward.c: the front row of a forward= listener (a port forward,
 * "listen = 127.0.0.1:8080 forward=10.0.0.5:80"). The client speaks no
 * protocol: at accept the session asks for its listener's fixed
 * destination exactly as a SOCKS CONNECT would (conn_dial: the rules with
 * cmd connect, the rule's via or the default outbound, the connect
 * budget), and once the outbound is connected the bytes flow. What the
 * client sends before that stays in its socket (or in c2u.buf, after a
 * PROXY header) and is relayed first: nothing is lost. A failure has no
 * protocol to be told in, so the client's connection is reset (RST), which
 * a client tells apart from the destination's orderly end; the reason is
 * in the access log (cmd=forward). This row must not parse any bytes.
 */
#include <string.h>

#include "core/buf.h"
#include "core/sock.h"
#include "proto/socks5.h"
#include "relay/front.h"
#include "relay/session.h"
#include "util/addr.h"

static void forward_start(struct conn *c)
{
    const struct config_listen *fl = &conn_cfg(c)->listen[c->listen_index % CONFIG_MAX_LISTEN];
    /* A reverse remote's session (outbound_h2rev.c) names its own target. */
    const char *host = c->rev ? c->rev->host : fl->forward_host;
    uint16_t port = c->rev ? c->rev->port : fl->forward_port;
    c->cmd = CONN_CMD_CONNECT;
    conn_set_state(c, CONN_ST_REQUEST);
    /* Pipelined bytes are kept; an empty buffer is not held while dialing. */
    if (c->c2u.buf && buf_len(c->c2u.buf) == 0) {
        buf_put(&c->w->bufs, c->c2u.buf);
        c->c2u.buf = NULL;
    }
    struct addr ip;
    if (addr_parse_ip(host, port, &ip) == 0) {
        conn_dial(c, NULL, &ip, port);
    } else {
        memset(&ip, 0, sizeof(ip));
        conn_dial(c, host, &ip, port);
    }
}

/* Nothing to read before the destination is reached: the bytes wait. */
static void forward_drive(struct conn *c, uint32_t up_events)
{
    (void)c;
    (void)up_events;
}

static void forward_connected(struct conn *c)
{
    c->reply = (uint8_t)OUT_OK;
    conn_succeeded(c);
    conn_relay_start(c);
}

/* No protocol to answer in: reset the client's connection. */
static void forward_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    c->reply = (uint8_t)o;
    if (c->cli.fd >= 0)
        sock_abort(c->cli.fd);
    conn_close(c, why);
}

static void forward_timeout(struct conn *c)
{
    conn_close(c, "handshake-timeout");
}

static void forward_end(struct conn *c)
{
    conn_access_log(c, c->rev ? "reverse" : "forward",
                    c->reply == OUT_NONE ? "-" : socks5_rep_str(errmap_socks5(c->reply)));
}

const struct front_ops front_forward = {
    .name = "forward",
    .log_proto = NULL,
    .proto = 0,
    .sp = SP_FORWARD,
    .start = forward_start,
    .drive = forward_drive,
    .connected = forward_connected,
    .fail_reply = forward_fail_reply,
    .timeout = forward_timeout,
    .end = forward_end,
};
