/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * conn.h: a proxied session and its state machine.
 *
 * On a listener with proxy_protocol, a PROXY header from a trusted load
 * balancer comes first (PROXY) and replaces the client address.
 * The first byte a client sends picks the protocol (0x05 SOCKS5, 0x04
 * SOCKS4, a letter HTTP); then:
 *
 *   SOCKS5: GREETING -> [AUTH -> AUTH_WAIT] -> REQUEST -> ...
 *   SOCKS4: REQUEST -> ...
 *   HTTP:   HTTP_HEAD -> [AUTH_WAIT] -> ...
 *   ... -> [RESOLVE] -> CONNECT -> RELAY          (CONNECT, HTTP CONNECT)
 *                               -> HTTP_FWD -> HTTP_HEAD (absolute-form, keep-alive)
 *       -> UDP                                    (UDP ASSOCIATE)
 *       -> BIND -> RELAY                          (BIND)
 *
 * and from any state LINGER (a failure reply, then a lingering close) or
 * CLOSED. LINGER flushes the reply, shuts our side for writing and reads and
 * discards what the client still sends for a short while, so the reply is
 * not destroyed by a reset. Each state owns one deadline, held in the
 * session's single timer.
 *
 * A session is owned by its worker and touched only by that worker's
 * thread. It is freed late (from a deferred task), never inside one of its
 * own callbacks.
 */
#ifndef FERRY_RELAY_CONN_H
#define FERRY_RELAY_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "acct/acct.h"
#include "core/loop.h"
#include "util/addr.h"
#include "worker/worker.h"

enum conn_state {
    CONN_ST_PROXY,     /* a PROXY protocol header from a trusted load balancer */
    CONN_ST_GREETING,  /* SOCKS5: the method greeting (and the first byte of any protocol) */
    CONN_ST_AUTH,      /* RFC 1929: waiting for username/password */
    CONN_ST_AUTH_WAIT, /* the verifier pool is checking them */
    CONN_ST_REQUEST,   /* SOCKS5 or SOCKS4 request */
    CONN_ST_RESOLVE,
    CONN_ST_CONNECT,
    CONN_ST_RELAY,
    CONN_ST_UDP,       /* UDP ASSOCIATE: the control connection holds the association */
    CONN_ST_BIND,      /* BIND: waiting for the connection back */
    CONN_ST_HTTP_HEAD, /* HTTP: reading a request head */
    CONN_ST_HTTP_FWD,  /* HTTP: a request and its response on their way */
    CONN_ST_H2,        /* an HTTP/2 connection carrying stream sessions (h2conn.c) */
    CONN_ST_LINGER,
    CONN_ST_CLOSED,
    CONN_ST_COUNT
};

/* Readiness of one socket, learnt from edge-triggered epoll and cleared when
 * a call returns EAGAIN (or reads short before any EOF was announced). */
enum {
    SIDE_RD = 1u << 0,
    SIDE_WR = 1u << 1,
    SIDE_RDHUP = 1u << 2, /* the peer shut its sending side: read until 0 */
};

/* One direction of the relay: bytes read from src waiting to go to dst. */
enum {
    HALF_EOF = 1u << 0,       /* src has given EOF */
    HALF_SHUT = 1u << 1,      /* dst has been shut for writing */
    HALF_SPLICE = 1u << 2,    /* move this direction with splice() */
    HALF_SHUT_WAIT = 1u << 3, /* a stream's end (close_notify) waits for c->up */
};

/* What the client asked for (c->cmd), numbered as SOCKS5's commands
 * (RFC 1928 section 4), which every front maps its requests to; 0 while
 * none. */
enum {
    CONN_CMD_CONNECT = 1,
    CONN_CMD_BIND = 2,
    CONN_CMD_UDP = 3,
};

/* c->listen_index of a session no listener accepted (a reverse one). */
#define CONN_LISTEN_NONE 255

struct buf;
struct pipe_pair;
struct dns_answer;
struct conn_addrs;
struct bind_peers;
struct dns_req;
struct auth_job;
struct udp_assoc;
struct http_state;
struct edge_sess;
struct limits_user;
struct conn_bw;
struct front_ops;
struct outbound_ops;
struct tls;
struct h2conn;
struct h2stream;
struct h2udp;
struct h2rev;
struct ho_stream;
struct config_reverse;

struct half {
    struct buf *buf;        /* bytes in user space, or NULL */
    struct pipe_pair *pipe; /* bytes in a kernel pipe, or NULL */
    uint64_t bytes;         /* delivered to dst: every byte relayed between client and
                             * destination (HTTP heads as forwarded included; never
                             * ferry's own replies, nor what a lingering close discards) */
    uint64_t counted;       /* ... of which already added to the worker's counters */
    uint8_t flags;
    uint8_t up_wait; /* a stream outbound (outbound.h): the SIDE_* bit of c->up this
                      * direction's read or write of c->up waits for; 0: its own */
};

struct conn {
    struct list link; /* in worker->sessions */
    struct worker *w;
    const struct front_ops *front;  /* the protocol spoken with the client (front.h) */
    const struct outbound_ops *out; /* how the destination is reached (outbound.h) */
    struct wcfg *wc;                /* the configuration this session runs under */
    struct io cli, up;
    uint8_t cli_ev, up_ev; /* SIDE_* */
    uint8_t state;
    uint8_t proto; /* PROTO_* of config.h: front->proto, once the first byte is in */
    uint8_t reply; /* enum outcome the client was answered with, OUT_NONE while none */
    uint8_t next_addr;
    uint8_t cmd;          /* CONN_CMD_*, or another SOCKS command number */
    uint8_t listen_index; /* which listen address accepted it */
    uint8_t outcome;      /* enum outcome, once settled (errmap.h) */
    uint16_t dst_port;
    uint16_t ob;      /* index in cfg->outbounds of the outbound carrying it */
    uint16_t ob_rule; /* ... the one a rule chose (a pool, or the same) */
    uint8_t ob_tries; /* pool members tried for this dial */
    uint8_t nheld;    /* bytes in held */
    uint8_t held[2];  /* a reply that goes out with the next (conn_hold_client) */
    int err;          /* errno behind an error close, for the access log */

    bool ob_name;          /* a pool dials dst_name (else target) to each member */
    uint16_t ob_tried;     /* a pool's members tried for this dial, bits by position */
    uint16_t ob_held;      /* 1 + the outbound counted active for this session; 0: none */
    uint16_t ob_held_pool; /* 1 + the pool it came through; 0: none */
    uint64_t ob_deadline;  /* a pool: the end of the whole connect budget */
    uint64_t ob_t0_us;     /* when the dial through c->ob began (clock_us) */

    struct timer timer;
    struct task task;   /* continue pumping after yielding */
    struct release rel; /* the late free after conn_close() */
    struct half c2u, u2c;
    struct addr client, target, bnd;
    char *dst_name;          /* the name the client asked for; NULL for IP requests */
    struct conn_addrs *ans;  /* addresses to try, while connecting */
    void *ob_priv;           /* the outbound's own state while dialling (a parent's handshake) */
    struct tls *tls;         /* an HTTPS parent's TLS session over c->up (outbound_https.c) */
    struct tls *cli_tls;     /* a tls:// listener: TLS over c->cli (front_tls.c); the core
                              * reads and writes the client through it (conn_cli_recv) */
    uint8_t cli_cross;       /* SIDE_RD: a TLS read on c->cli waits for writability;
                              * SIDE_WR: a write waits for readability (conn_on_cli_io) */
    bool cli_tls_up;         /* its handshake is done: close_notify is due at the end */
    bool cli_tls_seen;       /* its first byte was a TLS handshake record */
    bool hs_held;            /* counted in the per-address TLS handshake slots */
    struct h2conn *h2;       /* the carrier of an HTTP/2 connection (h2conn.c) */
    struct h2stream *h2s;    /* a session on an HTTP/2 stream: its client side (no cli fd) */
    struct h2udp *h2u;       /* ... a CONNECT-UDP one: its datagram relay (h2udp.c) */
    struct h2rev *h2r;       /* ... a reverse-tunnel one (h2rev.c) */
    struct ho_stream *hos;   /* a reverse session: its client side (outbound_h2rev.c) */
    struct bind_peers *bind; /* BIND by name: the hosts that may connect back */
    struct dns_req *dns;     /* pending lookup */
    struct auth_job *auth;   /* pending verification */
    char *user;              /* authenticated (or claimed) user name, for logs */
    struct udp_assoc *udp;   /* UDP ASSOCIATE */
    struct http_state *http; /* HTTP sessions only */
    struct edge_sess *edge;  /* an [edge] listener's session (front_edge.c) */
    struct limits_user *lu;  /* the user's session slot, with limits on */
    struct acct_hold acct;   /* the user's accounting slot and counters (acct/), or none */
    struct acct_ctr *acct_l; /* its listen address's counters, with accounting on */
    bool acct_udp;           /* a UDP association counts its datagrams' bytes itself */
    uint8_t refuse;          /* enum outcome: SOCKS5 authenticated but over a quota; the
                              * request is answered with it */
    struct conn_bw *bw;      /* bandwidth limiter, with limits on */
    const char *rule;        /* the rule that decided, for the access log */
    bool authed;             /* user was verified (not SOCKS4's USERID) */
    bool ip_tracked;         /* counted in the per-address table */
    bool dialed;             /* conn_dial() chose an outbound (c->ob), for the access log */
    bool own_dest;           /* the configuration names the destination (decoy=): no rule or
                                protected range judges it (policy.c) */
    bool proxy_form;         /* a plain HTTP request: an HTTP parent takes it as a proxy
                              * (outbound_proxy_form), dialled without CONNECT */
    uint64_t id;
    uint64_t t_start;     /* loop ms at accept (or at the start of an HTTP request) */
    uint64_t t_start_us;  /* the same in microseconds, for the handshake histogram */
    uint64_t deadline;    /* end of the connect budget (of this attempt, in a pool) */
    uint64_t last_active; /* loop ms of the last byte moved */
    uint32_t discarded;   /* bytes read and dropped while lingering */
    const char *why;      /* why it ended, for the access log */

    /* A reverse session's remote (outbound_h2rev.c): it leaves from this
     * host, to what the remote allows; NULL for others. */
    const struct config_reverse *rev;

    /* The HTTP/2 tunnel connection that carries the session, for the
     * access log (tun_id 0: none): its id (the carrier session's on the
     * server, outbound_h2.c's own on the client), the stream's id on it,
     * and the connection's far end. */
    uint64_t tun_id;
    uint32_t tun_stream;
    struct addr tun_peer;
};

/* relay.c: how the worker hands accepted connections to the relay. */
extern const struct worker_ops relay_worker_ops;

const char *conn_state_name(enum conn_state s);

/* pump.c: move bytes both ways until blocked. Returns 0, or a negative
 * errno after which the session must close (c->why is set). */
int relay_pump(struct conn *c);
/* The relay is finished in both directions. */
bool relay_done(const struct conn *c);
/* Give back buffers and pipes. */
void relay_release(struct conn *c);
/* Add the payload moved since the last call to the worker's counters
 * (and, with accounting, the user's and the listen address's). */
void relay_count_bytes(struct conn *c);

/* view.c: what the admin API (admin/) shows of a session, read on the
 * session's worker thread; strings point into the session or its
 * configuration and are valid until the worker's next event. */
struct conn_view {
    uint64_t id;
    const struct addr *client;
    const char *user; /* NULL: none */
    bool authed;      /* user was verified against the userlist */
    const char *proto, *state;
    const char *dest_name;   /* NULL: see dest */
    const struct addr *dest; /* family 0: no destination yet */
    uint16_t dest_port;
    const char *outbound;           /* NULL: none chosen yet */
    uint64_t up, down;              /* payload relayed each way so far */
    uint64_t started_ms, active_ms; /* loop ms at start, of the last byte moved */
};
void conn_view(const struct conn *c, struct conn_view *v);
/* Whether conn_end() may still be called on c (it has not ended). */
bool conn_is_open(const struct conn *c);
/* End the session now, as a shutdown would (the admin API's close and
 * kick): its client sees the connection close; why goes to the access
 * log. Call on c's worker thread, between events. */
void conn_end(struct conn *c, const char *why);

#endif
