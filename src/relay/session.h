/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * session.h: what the front rows (front.c, socks.c, http.c) and the
 * outbounds (outbound_direct.c) of relay/ share with the session core
 * (conn.c). Not for use outside relay/.
 *
 * Outcomes are neutral everywhere in relay/ (enum outcome, errmap.h): each
 * front answers with its own form of them through the table of errmap.c
 * (a SOCKS5 REP, a SOCKS4 CD, an HTTP status). conn_connected() and
 * conn_fail() go to the session's front row (c->front, front.h).
 */
#ifndef FERRY_RELAY_SESSION_H
#define FERRY_RELAY_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "relay/conn.h"
#include "relay/errmap.h"

/* Open a session on an accepted connection fd (relay.c): the first front
 * row (front_proxy or front_sniff) in its state, the outbound that will
 * reach its destinations, then the row's start hook run.
 * Returns 0 (the session owns fd, and may already be closed), or -ENOMEM
 * when no session could be had (fd is still the caller's). */
int conn_open(struct worker *w, uint8_t listen_index, int fd, const struct addr *peer, bool tracked,
              const struct front_ops *first, enum conn_state state, const struct outbound_ops *out);
/* Open the session of an HTTP/2 request stream s on the connection
 * carrier (h2conn.c): no client socket, the client side is the stream;
 * front_h2's start hook runs. 0, or -ENOMEM / -EBUSY (max_connections):
 * the caller refuses the stream. */
int conn_open_stream(struct worker *w, struct conn *carrier, struct h2stream *s);
/* Open the session of reverse remote rv's accept stream s, answered for
 * a connection from peer (outbound_h2rev.c), under configuration wc
 * (which holds rv): no client socket, the client side is s; a forward
 * remote dials its target, a socks one reads a handshake. 0, or -ENOMEM
 * / -EBUSY (max_connections): the caller still owns s. */
int conn_open_reverse(struct worker *w, struct wcfg *wc, struct ho_stream *s,
                      const struct config_reverse *rv, const struct addr *peer);
/* Free the worker's recycled sessions (at worker end). */
void conn_freelist_fini(struct worker *w);
/* Hand the session to another front row (the sniff found the protocol):
 * the per-protocol gauges follow. The caller runs f->start. */
void conn_set_front(struct conn *c, const struct front_ops *f);

/* The configuration the session runs under. */
static inline const struct config *conn_cfg(const struct conn *c)
{
    return c->wc->cfg;
}
/* The session's iotimeout in ms (0: none): its listener's, see
 * config_listen.iotimeout_ms. */
uint32_t conn_iotimeout(const struct conn *c);
void conn_set_state(struct conn *c, enum conn_state s);

/* End the session: access log, counters, descriptors, deferred free. */
void conn_close(struct conn *c, const char *why);
void conn_close_err(struct conn *c, const char *why, int err);
void conn_close_fd(struct io *io);
/* The access-log line (conn_close writes it; HTTP writes one per request). */
void conn_access_log(struct conn *c, const char *cmd, const char *reply);

/* Send a short message to the client (a reply); what does not go out at
 * once is kept and flushed later. Returns 0 or -errno. */
int conn_send_client(struct conn *c, const uint8_t *p, size_t len);
/* Keep a short message (at most sizeof(c->held) bytes) to go out in
 * front of the next conn_send_client(): a handshake step answered together
 * with the one a pipelining client already sent. */
void conn_hold_client(struct conn *c, const uint8_t *p, size_t len);
/* After a failure reply: flush it, shut our side, drain, close. */
void conn_linger(struct conn *c);
/* Answer the client with the front's form of the failure o (errmap.h),
 * then linger; the session's outcome, unless settled before. */
void conn_fail(struct conn *c, enum outcome o, const char *why);

/* The session reached its destination (a success reply, a forwarded
 * request): outcome ok unless settled before, handshake latency observed. */
void conn_succeeded(struct conn *c);
/* Settle how the session ends, unless something settled it before. */
void conn_set_outcome(struct conn *c, enum outcome o);
/* A malformed, unknown or too slow handshake (counted, outcome settled). */
void conn_bad_handshake(struct conn *c);

/* The client side, through TLS on a tls:// listener (c->cli_tls) or the
 * plain socket, in the shapes of recv(), send() and shutdown(SHUT_WR):
 * -1 with errno (EAGAIN: wait for readiness). Over TLS a call moves as
 * many records as it can, so a short read or write means what it means
 * on a socket (drained, full); a read or write that waits for the other
 * readiness (TLS) is retried when that comes (c->cli_cross); a read that
 * met the end after some bytes sets SIDE_RDHUP (read on until 0).
 * Shutdown sends close_notify first. */
ssize_t conn_cli_recv(struct conn *c, void *p, size_t len);
ssize_t conn_cli_send(struct conn *c, const void *p, size_t len);
int conn_cli_shutdown(struct conn *c);

/* Read what the client sent into c2u.buf (handshakes). 0 or -errno. */
int conn_read_handshake(struct conn *c);
/* Reach name (NULL: ip) at port: the rules judge the destination (a
 * denied one fails here), the allowing rule's "via" (else the config's
 * default outbound) picks the outbound, the connect budget starts, and
 * the outbound's row (c->out, outbound.h) dials. Ends in conn_connected()
 * or conn_fail(). */
void conn_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port);
/* Dial through outbound ob (an index of cfg->outbounds) within the budget
 * already running: sets c->ob and c->out. For outbounds handing a session
 * on (a pool to its member, direct to the outbound the rule for a resolved
 * address names). */
void conn_route(struct conn *c, uint16_t ob, const char *name, const struct addr *ip,
                uint16_t port);
/* The outbound a rule (an index, or POLICY_RULE_*) sends an allowed
 * session through: its "via", else the config's default. */
uint16_t conn_via(const struct conn *c, int32_t rule);
/* The outbound is connected (c->up): the front answers. */
void conn_connected(struct conn *c);
/* Switch to the byte relay (CONNECT tunnels, BIND, WebSocket). */
void conn_relay_start(struct conn *c);
void conn_arm_idle(struct conn *c);

/* http.c: the user and password of a Proxy-Authorization value (Basic,
 * RFC 7617), the decoded copy wiped. 0 or -1. */
int http_basic_value(const char *v, size_t vlen, char *user, size_t ucap, size_t *ulen, char *pass,
                     size_t pcap, size_t *plen);
/* http.c: the worker's idle upstream connections (at worker end). */
void http_pool_fini(struct worker *w);

/* Shared by SOCKS5 and HTTP: the verdict of an authentication. */
void conn_set_user(struct conn *c, const char *name, size_t len);

/* policy.c: rules and limits applied to a session. */
enum policy_verdict { POLICY_ALLOW, POLICY_DENY, POLICY_NEED_IP };
/* May this destination be reached (cmd 0: the session's own)? Sets
 * c->rule and counts the rule's hit. POLICY_NEED_IP: only the address can
 * tell; resolve first. */
enum policy_verdict policy_dest(struct conn *c, uint8_t cmd, const char *name,
                                const struct addr *ip, uint16_t port);
/* The same in two steps, for a name with several addresses: judge each
 * without side effects (rule: an index of cfg->acl, or POLICY_RULE_*), then
 * note the one that is acted on. */
enum { POLICY_RULE_NONE = -1, POLICY_RULE_DEFAULT = -2, POLICY_RULE_PROTECTED = -3 };
enum policy_verdict policy_eval(struct conn *c, uint8_t cmd, const char *name,
                                const struct addr *ip, uint16_t port, int32_t *rule);
void policy_note(struct conn *c, enum policy_verdict v, int32_t rule);
/* "FILE:LINE", "default", "protected", or NULL for POLICY_RULE_NONE. */
const char *policy_rule_name(const struct conn *c, int32_t rule);
bool policy_protected(const struct config *cfg, const struct addr *a);
/* At accept: false to close the connection at once. */
bool policy_admit_client(struct worker *w, const struct addr *peer, bool *tracked);
void policy_release_client(struct conn *c);
/* After authentication (c->user set): OUT_NONE when the user may open
 * this session, OUT_LIMIT over limits.per_user, OUT_QUOTA over a [quota]
 * (c->why says which). Admitted, the session holds the user's slots until
 * policy_release_user(); refused, it holds none. */
enum outcome policy_admit_user(struct conn *c);
void policy_release_user(struct conn *c);
/* Bandwidth: how many of want bytes may be read now (0: a timer will
 * resume the session), and bytes that were. */
void policy_bw_start(struct conn *c);
void policy_bw_stop(struct conn *c);
uint32_t policy_bw_allow(struct conn *c, uint32_t want);
/* The same without waiting, for datagrams: never arms the resume timer,
 * never counts bw_throttled; what does not fit is the caller's to drop. */
uint32_t policy_bw_avail(struct conn *c, uint32_t want);
void policy_bw_spend(struct conn *c, uint32_t n);

#endif
