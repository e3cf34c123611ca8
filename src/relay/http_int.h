/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_int.h: what the HTTP proxy's two halves share inside relay/: the
 * front (http.c: request heads, authentication, where a request goes) and
 * the forwarding exchange (http_fwd.c: an absolute-form request and its
 * response, the upstream pool, the exchange's timers). The session's
 * state (struct http_state, c->http) is created and freed by http.c.
 * Not for use outside those two files.
 */
#ifndef FERRY_RELAY_HTTP_INT_H
#define FERRY_RELAY_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "proto/http1.h"
#include "relay/session.h"
#include "relay/upstream_pool.h"

/* A rewritten head is at most the head read (max_header) plus what the
 * rewrite adds: Host with a 255-byte authority and a port, a Via of a
 * 64-byte pseudonym, one Connection field, a leading '/'. */
#define HTTP_OUT_SLACK 512

enum http_kind { HTTP_NONE, HTTP_CONNECT, HTTP_FORWARD };

/* One direction of an exchange: bytes read from the source; a prefix of
 * `pass` of them is body already judged to belong to the message; `out`
 * holds a rewritten head that goes first. */
struct hflow {
    struct buf *in;
    uint32_t pass;
    struct buf *out;
    struct http1_body body;
    bool eof;
};

struct http_state {
    uint8_t kind;
    bool head_req;  /* HEAD: the response has no body */
    bool keepalive; /* the client may send another request after this one */
    bool up_reuse;  /* the upstream connection may serve another request */
    bool resp_head; /* the final response head has been forwarded */
    bool websocket; /* Upgrade: websocket was asked for */
    bool reused;    /* this upstream came from the pool */
    bool retried;
    bool doubt;     /* a message of this exchange had doubtful framing: no pooling */
    bool to_parent; /* the upstream is an HTTP parent taking the request in absolute form */
    uint8_t empty;  /* empty lines skipped before this request line */
    bool closing;   /* failed after a response went out: flush it, then close */
    bool authed;    /* this request's credentials were verified */
    bool owed;      /* the exchange waits for the origin (response_timeout runs) */
    bool body_wait; /* the exchange waits for the client's body (body_timeout runs) */
    bool cli_full;  /* the exchange waits for the client to read */
    bool paused;    /* the exchange waits for the bandwidth limiter */
    size_t scanned; /* http1_head_end() progress on the current head */
    int status;
    char method[24];            /* the request in progress, until its access-log line */
    char key[UPSTREAM_KEY_MAX]; /* "host:port" of the current upstream */
    char authority[300];        /* the request's authority as the client wrote it */
    uint16_t alen;
    struct hflow req, resp;
    char *head_copy; /* the rewritten request head, for a retry on a stale pooled connection */
    uint32_t head_copy_len;
    uint64_t req_bytes, resp_bytes; /* body bytes of this exchange sent on */
    uint64_t up_base, down_base;    /* c2u/u2c bytes when this request began */
    uint64_t origin_since;          /* loop ms: the origin has been silent since, while owed */
    uint64_t client_since;          /* loop ms: the client has been silent since, while body_wait */
};

/* The cap of a buffer for a rewritten head of this session's config. */
static inline uint32_t http_out_cap(const struct conn *c)
{
    return conn_cfg(c)->http.max_header + HTTP_OUT_SLACK;
}

/* A complete error response with a short text body, then a lingering
 * close; or, once the client has (or is owed) bytes of the origin's
 * response, only the close. The session's outcome is o, its log reason why.
 * (http_fwd.c) */
void http_error(struct conn *c, enum outcome o, int status, const char *text, const char *why);

/* The access-log line of the request in progress, once (the method marks
 * a request not logged yet); a no-op without one. (http_fwd.c) */
void http_log(struct conn *c);

/* Dial host:port through the session's outbound (host given as a literal
 * address is dialled as one). (http_fwd.c) */
void http_dial(struct conn *c, const char *host, uint16_t port);

/* An absolute-form request whose head is in req.out goes to host:port: to
 * an idle pooled connection to the same place (or to the HTTP parent the
 * name's rule picks) when there is one, else to a new dial; the session
 * is then answered, dialling, or forwarding (state HTTP_FWD). (http_fwd.c) */
void http_forward_to(struct conn *c, const char *host, uint16_t port);

/* The outbound reached the destination of a forwarded request
 * (front_ops.connected for HTTP_FORWARD): the exchange starts, in absolute
 * form when the outbound is an HTTP parent. (http_fwd.c) */
void http_fwd_connected(struct conn *c);

/* Move both messages of the exchange (state HTTP_FWD) as far as they go;
 * the session may end, yield, or move on to its next request. (http_fwd.c) */
void http_forward(struct conn *c);

/* The session's timer fired in state HTTP_FWD: answer or close the side
 * that stalled, or re-arm for the next deadline. (http_fwd.c) */
void http_fwd_timeout(struct conn *c);

#endif
