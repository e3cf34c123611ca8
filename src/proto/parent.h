/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent.h: the client side of a parent proxy's handshake, as a pure
 * machine: SOCKS5 (RFC 1928, with RFC 1929 username/password), SOCKS4 and
 * its 4a extension, and HTTP/1.1 CONNECT (RFC 9110 section 9.3.6, with
 * Basic Proxy-Authorization, RFC 7617). No I/O, no allocation, no logging:
 * the caller owns a struct parent_hs (fixed size), sends what
 * parent_pending() holds, reports it with parent_sent(), and hands what
 * the parent answers to parent_feed() until parent_state() is DONE or
 * FAILED. A session dialling through a parent, a pool's health check and a
 * UDP association through a SOCKS5 parent all drive the same machine.
 *
 * parent_feed() consumes only bytes of the parent's replies, never one past
 * the end of its last reply: whatever follows belongs to the relayed
 * stream and stays with the caller. HTTPS speaks PARENT_HTTP once TLS is up.
 *
 * Failures are neutral (enum parent_fail; relay/ maps them to its
 * outcomes) with a short reason for the log, e.g. "parent refused the
 * credentials" or "bad reply from parent".
 */
#ifndef FERRY_PROTO_PARENT_H
#define FERRY_PROTO_PARENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/addr.h"

/* The dialect spoken with the parent. */
enum parent_proto {
    PARENT_SOCKS5, /* RFC 1928 (+ RFC 1929 when a user is given) */
    PARENT_SOCKS4, /* SOCKS4, or 4a when a name is given */
    PARENT_HTTP,   /* HTTP/1.1 CONNECT (also over TLS: HTTPS) */
};

/* Commands, numbered as SOCKS5's. SOCKS4 and HTTP carry CONNECT only. */
enum {
    PARENT_CMD_CONNECT = 1,
    PARENT_CMD_UDP_ASSOCIATE = 3, /* SOCKS5 only */
};

enum parent_state {
    PARENT_MORE,   /* in progress: send what is pending, feed what arrives */
    PARENT_DONE,   /* the parent carries the stream (or the association) */
    PARENT_FAILED, /* see parent_hs.fail and parent_hs.reason */
};

/* Why a handshake failed; relay/ maps each to an outcome (errmap.h). */
enum parent_fail {
    PARENT_FAIL_NONE,
    PARENT_FAIL_GENERAL,          /* the parent failed for a reason it did not say */
    PARENT_FAIL_BAD_REPLY,        /* the parent's reply is malformed or over the bound */
    PARENT_FAIL_AUTH,             /* the parent refused our credentials, or needs some */
    PARENT_FAIL_DENIED,           /* the parent's rules refuse the destination */
    PARENT_FAIL_NET_UNREACHABLE,  /* SOCKS5 REP 3 */
    PARENT_FAIL_HOST_UNREACHABLE, /* SOCKS5 REP 4, HTTP 503 */
    PARENT_FAIL_REFUSED,          /* SOCKS5 REP 5, HTTP 502 */
    PARENT_FAIL_TIMEOUT,          /* SOCKS5 REP 6, HTTP 504 */
    PARENT_FAIL_CMD_UNSUPPORTED,  /* SOCKS5 REP 7 */
    PARENT_FAIL_ADDR_UNSUPPORTED, /* SOCKS5 REP 8 */
    PARENT_FAIL_COUNT
};

/* The longest HTTP response head accepted from a parent. */
#define PARENT_HTTP_HEAD_MAX 8192
/* Room for every message ferry sends: an HTTP CONNECT with a 255-byte host
 * twice and Basic credentials of 255 + 255 bytes is about 1.3 KiB. */
#define PARENT_WIRE_MAX      1536

/* One handshake. The caller owns it (no pointers into caller memory are
 * kept after parent_init()); it holds no resources, so it needs no fini. */
struct parent_hs {
    uint8_t proto; /* enum parent_proto */
    uint8_t cmd;
    uint8_t step;   /* where the machine is (parent.c) */
    uint8_t state;  /* enum parent_state */
    uint8_t fail;   /* enum parent_fail, PARENT_FAIL_NONE unless FAILED */
    bool has_auth;  /* credentials were given */
    bool pipelined; /* SOCKS5 without credentials: the request went with the greeting */
    bool has_bnd;   /* bnd is set (a SOCKS reply with an IP BND) */
    /* The messages to send, back to back: [0, msg_end[0]) is the first
     * (SOCKS5 greeting, SOCKS4 request, HTTP request), then the RFC 1929
     * request, then the SOCKS5 request. sent counts what went out. */
    uint16_t msg_end[3];
    uint16_t cur_start, cur_end, sent;
    uint8_t wire[PARENT_WIRE_MAX];
    /* The reply being read. */
    uint16_t in_len;
    uint8_t in[262];
    uint32_t head_len; /* HTTP: bytes of the response head so far */
    uint16_t line_len; /* HTTP: bytes in the current line, CR excluded */
    int status;        /* HTTP status, once the status line is in */
    struct addr bnd;   /* the parent's BND.ADDR/BND.PORT (has_bnd) */
    char reason[80];   /* why it failed, for the log; "" otherwise */
};

/* Start a handshake with a parent speaking proto: ask it to carry cmd
 * (PARENT_CMD_*) to name (a host name, sent as a name: SOCKS5 ATYP 3,
 * SOCKS4a, HTTP authority; NULL: use ip) or ip (IPv4 or IPv6; its port is
 * ignored) at port. user and pass (NULL: none; pass NULL with a user: an
 * empty password; SOCKS4 sends user as its USERID and ignores pass) are
 * copied. Returns 0, or -EINVAL (a name, user or password too long or
 * holding bytes the wire cannot carry, a command the dialect lacks, no
 * destination), or -EAFNOSUPPORT (SOCKS4 to an IPv6 address). */
int parent_init(struct parent_hs *h, enum parent_proto proto, uint8_t cmd, const char *user,
                const char *pass, const char *name, const struct addr *ip, uint16_t port);

/* The bytes to send to the parent now (*p points into h); 0: nothing to
 * send, wait for its reply (or the handshake is over). */
size_t parent_pending(const struct parent_hs *h, const uint8_t **p);

/* n of the pending bytes went out (n <= parent_pending()). */
void parent_sent(struct parent_hs *h, size_t n);

/* Feed bytes received from the parent. Returns how many were consumed:
 * never more than its replies hold, so what follows the last reply is the
 * caller's (the relayed stream); 0 while bytes are still pending to send,
 * or once the handshake is DONE or FAILED. Check parent_state() after. */
size_t parent_feed(struct parent_hs *h, const uint8_t *p, size_t len);

static inline enum parent_state parent_state(const struct parent_hs *h)
{
    return (enum parent_state)h->state;
}

/* The parent's BND address and port (SOCKS replies with an IPv4 or IPv6
 * BND, after DONE): true and *out set, else false. */
/* How many bytes the parent is sure to send next as part of its replies
 * (SOCKS: the lengths are in the protocol), so the caller may read that
 * many and no more without taking a byte of the stream that follows; 0
 * when it cannot tell (an HTTP head: peek instead), when something is
 * pending to send, or when the handshake is over. Never more than what
 * parent_feed() consumes. */
size_t parent_want(const struct parent_hs *h);
bool parent_bnd(const struct parent_hs *h, struct addr *out);

/* "general", "bad-reply", "auth", ... for logs and tests. */
const char *parent_fail_name(enum parent_fail f);

/* The failure an HTTP CONNECT parent's non-2xx status says (RFC 9110
 * section 15): 407 auth, 403 denied, 405/501 command, 502 refused, 503
 * host unreachable, 504 timeout, any other general. */
enum parent_fail parent_http_status_fail(int status);

/* The words for that failure in a log line, into out (NUL-terminated):
 * "parent refused the credentials (HTTP 407)" (or "requires credentials"
 * when none were sent: has_auth false), else "parent answered HTTP N". */
void parent_http_status_why(int status, bool has_auth, char *out, size_t len);

/* Basic credentials (RFC 7617) for a Proxy-Authorization field: base64 of
 * "user:pass" into out, NUL-terminated. Returns the length, or 0 when cap
 * is too small. */
size_t parent_basic_credentials(const char *user, const char *pass, char *out, size_t cap);

#endif
