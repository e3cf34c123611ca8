/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1.h: HTTP/1.x messages (RFC 9112) as pure functions over bytes, for
 * the HTTP proxy. No I/O, no allocation, no logging, no globals.
 *
 * A message head is found first (http1_head_end, resumable so input that
 * arrives a byte at a time is scanned once), then parsed whole; header
 * names and values point into the caller's buffer. Bodies are framed by
 * http1_body_init() and tracked by http1_body_scan(), which reports how many
 * of the bytes passing through belong to the message: the proxy forwards
 * bodies verbatim and never buffers one whole.
 *
 * The parser refuses what request smuggling is made of: both Content-Length
 * and Transfer-Encoding, differing Content-Length values, a Content-Length
 * field or list element that is not 1*DIGIT (empty ones too), a transfer coding
 * other than chunked (last), a Connection field naming Content-Length,
 * Transfer-Encoding or Host, invalid chunk sizes or chunk extensions (an
 * unterminated quoted string included), obs-fold, bare CR or LF, NUL and
 * control bytes, and whitespace before a header's colon; in requests also
 * more than one Host or Proxy-Authorization field. Identical repeated
 * Content-Length values are accepted (RFC 9112 6.3) and flagged
 * (cl_repeated): the proxy forwards one, and keeps no connection that saw
 * them.
 */
#ifndef FERRY_PROTO_HTTP1_H
#define FERRY_PROTO_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP1_MAX_HEADERS 100

/* Errors, each with the status the proxy answers. */
enum http1_error {
    HTTP1_E_BAD = -1,          /* 400: malformed */
    HTTP1_E_URI_TOO_LONG = -2, /* 414 */
    HTTP1_E_TOO_LARGE = -3,    /* 431: head over the limit, or too many fields */
    HTTP1_E_VERSION = -4,      /* 505: not HTTP/1.0 or 1.1 */
    HTTP1_E_SMUGGLING = -5,    /* 400: ambiguous framing (CL and TE, differing CLs...) */
    HTTP1_E_CODING = -6,       /* 501: a transfer coding other than chunked */
    HTTP1_E_CHUNK = -7,        /* 400 (or a broken upstream): bad chunked framing */
};

struct http1_header {
    const char *name, *value;
    uint16_t nlen;
    uint32_t vlen;
};

struct http1_msg {
    /* request */
    const char *method, *target;
    uint16_t mlen;
    uint32_t tlen;
    /* response */
    int status;
    const char *reason;
    uint32_t rlen;
    /* both */
    int minor; /* HTTP/1.minor */
    struct http1_header h[HTTP1_MAX_HEADERS];
    unsigned nh;
    /* framing facts found while parsing */
    bool has_cl, has_te, chunked, conn_close, conn_keepalive, upgrade;
    bool cl_repeated;           /* Content-Length more than once, every value the same */
    uint8_t nhost, nproxy_auth; /* Host and Proxy-Authorization fields */
    uint64_t content_length;
};

/* Where the head ends: resumable. *scanned carries the position the
 * previous call reached (start at 0). Returns the head's length including
 * the blank line, 0 if not complete yet, HTTP1_E_TOO_LARGE when max bytes
 * hold no complete head, or HTTP1_E_BAD for a bare LF line ending. */
ssize_t http1_head_end(const uint8_t *p, size_t len, size_t max, size_t *scanned);

/* Parse a complete head (its length as found above). max_line limits the
 * request line (HTTP1_E_URI_TOO_LONG beyond it). Returns 0 or an error. */
int http1_parse_request(const uint8_t *p, size_t len, size_t max_line, struct http1_msg *m);
int http1_parse_response(const uint8_t *p, size_t len, struct http1_msg *m);

/* The value of a header (first occurrence, case-insensitive name), or NULL. */
const struct http1_header *http1_find(const struct http1_msg *m, const char *name);
bool http1_name_is(const struct http1_header *h, const char *name);
/* Does a comma-separated header value hold token (case-insensitive)? */
bool http1_has_token(const char *v, size_t len, const char *token);
/* Is this header hop-by-hop for a proxy: Connection, Keep-Alive,
 * Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer,
 * Upgrade, or a name listed in the message's Connection header? Never
 * Content-Length, Transfer-Encoding or Host: framing and routing are not
 * the next hop's to drop (and the parsers refuse a Connection that names
 * one, HTTP1_E_SMUGGLING). */
bool http1_hop_by_hop(const struct http1_msg *m, const struct http1_header *h);

/* Body framing and tracking. */
enum http1_body_kind {
    HTTP1_BODY_NONE,    /* no body */
    HTTP1_BODY_LENGTH,  /* Content-Length bytes */
    HTTP1_BODY_CHUNKED, /* chunked, through the last chunk and trailers */
    HTTP1_BODY_CLOSE,   /* until the connection closes (responses only) */
};

struct http1_body {
    uint8_t kind;
    uint8_t state; /* chunked decoder state */
    bool done;
    uint64_t remaining; /* LENGTH: bytes left; CHUNKED: bytes left in this chunk */
    uint32_t line;      /* bytes of the current size/trailer line, to bound it */
};

void http1_body_request(struct http1_body *b, const struct http1_msg *m);
/* A response's framing depends on the request: HEAD and 1xx/204/304 have
 * no body. */
void http1_body_response(struct http1_body *b, const struct http1_msg *m, bool head_request);
/* Of the len bytes at p, how many belong to the message body (all of them,
 * or fewer when the message ends inside them; then b->done). Returns that
 * count, or HTTP1_E_CHUNK. */
ssize_t http1_body_scan(struct http1_body *b, const uint8_t *p, size_t len);

/* Parse "host:port" or "[v6]:port" (CONNECT's authority form) or an
 * absolute "http://host[:port]/path" target. Fills host (NUL-terminated,
 * brackets removed), port and, for absolute form, the offset of the path
 * in the target (where origin-form starts; a missing path means "/").
 * Returns 0 or HTTP1_E_BAD. */
int http1_parse_authority(const char *t, size_t len, char *host, size_t hcap, uint16_t *port);
int http1_parse_absolute(const char *t, size_t len, char *host, size_t hcap, uint16_t *port,
                         size_t *path_off);

/* Basic credentials from a Proxy-Authorization value, in two pure steps
 * around a base64 decode that is not done here (crypto/ does it with
 * libsodium, and wipes the decoded copy):
 *   http1_basic_token: "Basic" 1*(SP/HTAB) token, where the token is
 *     padded RFC 4648 base64 (length a multiple of 4, '=' only at the end)
 *     of at most HTTP1_BASIC_TOKEN_MAX bytes. Returns 0 with the token's
 *     span in v, or -1.
 *   http1_basic_split: decoded "user:pass" (the first colon splits; user
 *     and password 1..255 bytes each and shorter than ucap / pcap). Returns
 *     0 with user/pass (NUL-terminated) and their lengths, or -1. */
#define HTTP1_BASIC_TOKEN_MAX 684 /* base64 of 255 + 1 + 255 bytes */
#define HTTP1_BASIC_MAX       513 /* what such a token decodes to, at most */
int http1_basic_token(const char *v, size_t len, const char **tok, size_t *tlen);
int http1_basic_split(const uint8_t *dec, size_t n, char *user, size_t ucap, size_t *ulen,
                      char *pass, size_t pcap, size_t *plen);

/* Empty lines (CRLF) before a request line, which RFC 9112 2.2 asks a
 * server to ignore: the number of bytes of complete CRLF pairs at the start
 * of p (a lone CR at the end waits for its LF, and a lone CR before
 * anything else is the head finder's to refuse). More than max of them:
 * HTTP1_E_BAD (the bound keeps a stream of CRLFs from being a free idle
 * connection). */
#define HTTP1_EMPTY_LINES_MAX 4
ssize_t http1_empty_lines(const uint8_t *p, size_t len, unsigned max);

/* The heads a proxy sends on, rewritten from parsed ones: hop-by-hop
 * fields dropped (http1_hop_by_hop; framing fields always kept), repeated
 * identical Content-Length values sent as one field, the message's Via
 * value kept with "1.x via" appended (via "" adds none), other fields in
 * their order, byte for byte. Written into out (at most cap bytes, never
 * NUL-terminated). Return the head's length, CRLF CRLF included, or
 * HTTP1_E_TOO_LARGE when it does not fit (out then holds a partial head).
 *
 * http1_rewrite_request: a request parsed from absolute form, sent in
 *   origin form: the method, the target from path_off on ("/" put in front
 *   of a path that does not start with one), the message's version, then
 *   "Host: authority" in place of any Host field. With upgrade (a
 *   WebSocket handshake), Upgrade survives and "Connection: Upgrade" is
 *   added; else an HTTP/1.0 request that asked for keep-alive says so
 *   again ("Connection: keep-alive"), since the proxy's hop may persist.
 * http1_rewrite_response: a response sent on as HTTP/1.1 with the status
 *   and reason as they came. switching (a 101 to an upgrade that was asked
 *   for) keeps Upgrade and adds "Connection: Upgrade"; otherwise a final
 *   response (not 1xx) adds "Connection: close" unless keepalive. */
ssize_t http1_rewrite_request(const struct http1_msg *m, size_t path_off, const char *authority,
                              size_t alen, const char *via, bool upgrade, uint8_t *out, size_t cap);
ssize_t http1_rewrite_response(const struct http1_msg *m, const char *via, bool switching,
                               bool keepalive, uint8_t *out, size_t cap);

/* http1_proxy_form: a request head written by http1_rewrite_request
 *   (origin form) made into the absolute form a proxy takes (RFC 9112
 *   3.2.2), for a parent proxy: "METHOD http://AUTHORITY/path HTTP/1.x",
 *   then, when pauth is not NULL, "Proxy-Authorization: PAUTH" (the
 *   parent's credentials: hop-by-hop, so never the client's, which the
 *   rewrite dropped), then the rest of the head byte for byte. The
 *   authority is that of the client's target (the Host field's value: a
 *   proxy derives Host from the target) and must hold no byte a target
 *   cannot carry there (space, control, '/', '?', '#', '@'); pauth only
 *   visible ASCII and spaces. Written into out (at most cap bytes).
 *   Returns the head's length, HTTP1_E_TOO_LARGE when it does not fit, or
 *   HTTP1_E_BAD for a head that is not in origin form or a bad authority
 *   or pauth. */
ssize_t http1_proxy_form(const uint8_t *head, size_t len, const char *authority, size_t alen,
                         const char *pauth, size_t plen, uint8_t *out, size_t cap);

/* The status an error maps to. */
int http1_error_status(int err);
const char *http1_reason(int status);

#endif
