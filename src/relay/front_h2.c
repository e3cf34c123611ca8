/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_h2.c: the front row of one HTTP/2 request stream (h2conn.c). A
 * CONNECT (RFC 9113 section 8.5) names host:port in :authority; the
 * stream is then a session like a SOCKS or HTTP/1 CONNECT one: the same
 * Proxy-Authorization: Basic check through the verifier and its cache
 * (407 with Proxy-Authenticate when missing or wrong), the same rules,
 * limits, outbounds and access log (with proto=h2), and the same HTTP
 * status for each outcome as HTTP/1 (errmap.h), sent as the response's
 * :status with END_STREAM. 200 starts the byte relay over the stream.
 * It reads nothing itself: the request's fields were gathered by the
 * connection (struct h2stream_req).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth/auth.h"
#include "config/config.h"
#include "log/log.h"
#include "proto/http1.h"
#include "relay/front.h"
#include "relay/h2rev.h"
#include "relay/h2stream.h"
#include "relay/h2udp.h"
#include "relay/session.h"

static void front_h2_refuse(struct conn *c, enum outcome o, const char *why)
{
    conn_fail(c, o, why); /* fail_reply answers and closes */
}

static void front_h2_on_auth(void *owner, int result);

/* Proxy-Authorization when authentication is on. 0 to go on, -1 when
 * answered or waiting for the verifier (state AUTH_WAIT). */
static int front_h2_auth(struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    if (!config_auth_enabled(cfg) || c->authed)
        return 0;
    const struct h2stream_req *r = h2stream_req(c);
    char user[256], pass[256];
    size_t ulen, plen;
    if (!r->proxy_auth[0] || http_basic_value(r->proxy_auth, strlen(r->proxy_auth), user,
                                              sizeof(user), &ulen, pass, sizeof(pass), &plen) < 0) {
        front_h2_refuse(c, OUT_AUTH_FAILED, "auth-required");
        return -1;
    }
    conn_set_user(c, user, ulen);
    struct auth_params p;
    config_auth_params(cfg, &p);
    int rv = c->w->auth ? auth_begin(c->w->auth, &p, &c->client, user, ulen, pass, plen,
                                     front_h2_on_auth, c, &c->auth)
                        : AUTH_BUSY;
    explicit_bzero(pass, sizeof(pass));
    if (rv == AUTH_PENDING) {
        conn_set_state(c, CONN_ST_AUTH_WAIT);
        return -1;
    }
    if (rv != AUTH_OK) {
        front_h2_refuse(c, rv == AUTH_BUSY ? OUT_LIMIT : OUT_AUTH_FAILED,
                        rv == AUTH_BUSY        ? "auth-busy"
                        : rv == AUTH_THROTTLED ? "auth-throttled"
                                               : "auth-failed");
        return -1;
    }
    c->authed = true;
    return 0;
}

/* The request is judged (and authenticated): the user's slot, then the
 * destination. */
static void front_h2_go(struct conn *c)
{
    const struct h2stream_req *r = h2stream_req(c);
    enum outcome o = c->authed ? policy_admit_user(c) : OUT_NONE;
    if (o != OUT_NONE) {
        front_h2_refuse(c, o, o == OUT_LIMIT ? "user-limit" : c->why);
        return;
    }
    if (c->h2u) {
        h2udp_go(c); /* CONNECT-UDP */
        return;
    }
    if (c->h2r) {
        h2rev_go(c); /* ferry-listen, ferry-accept */
        return;
    }
    char host[256];
    uint16_t port = 0;
    if (http1_parse_authority(r->authority, strlen(r->authority), host, sizeof(host), &port)) {
        front_h2_refuse(c, OUT_BAD_REQUEST, "bad-request");
        return;
    }
    conn_set_state(c, CONN_ST_REQUEST);
    struct addr ip;
    bool is_ip = addr_parse_ip(host, port, &ip) == 0;
    conn_dial(c, is_ip ? NULL : host, &ip, port);
}

static void front_h2_on_auth(void *owner, int result)
{
    struct conn *c = owner;
    c->auth = NULL;
    if (result != AUTH_OK) {
        front_h2_refuse(c, result == AUTH_BUSY ? OUT_LIMIT : OUT_AUTH_FAILED,
                        result == AUTH_BUSY ? "auth-busy" : "auth-failed");
        return;
    }
    c->authed = true;
    front_h2_go(c);
}

static void front_h2_start(struct conn *c)
{
    const struct h2stream_req *r = h2stream_req(c);
    c->cmd = CONN_CMD_CONNECT;
    if (strcmp(r->method, "CONNECT") != 0) {
        h2http_start(c); /* a plain request (front_h2_http.c) */
        return;
    }
    if (r->bad || !r->authority[0]) {
        front_h2_refuse(c, OUT_BAD_REQUEST, "bad-request");
        return;
    }
    /* Extended CONNECT (RFC 8441): ferry-listen and ferry-accept are
     * h2rev.c's, CONNECT-UDP (RFC 9298) h2udp.c's; another :protocol is
     * a 501 (h2udp_check). */
    if (r->protocol[0] && h2rev_protocol(r->protocol)) {
        if (h2rev_check(c) < 0)
            return;
    } else if (r->protocol[0] && h2udp_check(c) < 0) {
        return;
    }
    if (front_h2_auth(c) == 0)
        front_h2_go(c);
}

static void front_h2_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    if (c->h2u)
        h2udp_drive(c);
    else if (c->h2r && c->state == CONN_ST_BIND)
        h2rev_drive(c);
}

static void front_h2_connected(struct conn *c)
{
    conn_succeeded(c);
    c->reply = OUT_OK;
    h2stream_respond(c, 200, false, NULL, NULL);
    conn_relay_start(c);
}

static void front_h2_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    int status = errmap_http_status(o);
    stat_add(&c->w->stats.http_errors, 1);
    char after[12];
    snprintf(after, sizeof(after), "%u", errmap_http_retry_after(o));
    if (status == 407)
        h2stream_respond(c, status, true, "proxy-authenticate", "Basic realm=\"ferry\"");
    else if (errmap_http_retry_after(o))
        h2stream_respond(c, status, true, "retry-after", after);
    else
        h2stream_respond(c, status, true, NULL, NULL);
    conn_close(c, why);
}

static void front_h2_timeout(struct conn *c)
{
    if (c->dns) { /* a CONNECT-UDP target's name */
        front_h2_refuse(c, OUT_TIMEOUT, "resolve-timeout");
        return;
    }
    /* Else only the verifier can keep a stream waiting here. */
    auth_abandon(c->auth);
    c->auth = NULL;
    front_h2_refuse(c, OUT_LIMIT, "auth-timeout");
}

static void front_h2_end(struct conn *c)
{
    char reply[8];
    snprintf(reply, sizeof(reply), "%d",
             c->reply == OUT_NONE ? 0 : errmap_http_status((enum outcome)c->reply));
    const char *m = h2stream_req(c)->method;
    conn_access_log(c,
                    c->h2r                   ? h2rev_log_cmd(c)
                    : c->cmd == CONN_CMD_UDP ? "udp"
                    : m[0]                   ? m
                                             : "CONNECT",
                    c->reply == OUT_NONE ? "-" : reply);
    h2udp_end(c);
    h2rev_end(c);
    h2stream_detach(c);
}

const struct front_ops front_h2 = {
    .name = "h2-stream",
    .log_proto = "h2",
    .proto = PROTO_HTTP,
    .sp = SP_HTTP,
    .start = front_h2_start,
    .drive = front_h2_drive,
    .connected = front_h2_connected,
    .fail_reply = front_h2_fail_reply,
    .timeout = front_h2_timeout,
    .end = front_h2_end,
};
