/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2h1.h: a plain HTTP/2 request (RFC 9113 section 8.3) written as the
 * HTTP/1.1 request the HTTP proxy takes, and the HTTP/1.1 response the
 * proxy writes back read into what an HTTP/2 response is made of (a
 * :status and fields, body bytes, the end). Pure functions over bytes: no
 * I/O, no allocation, no logging, no globals.
 *
 * The request side checks each field of the HTTP/2 request (section 8.2.2:
 * connection-specific fields are malformed; "te" may only say "trailers")
 * and joins Cookie fields with "; " (section 8.2.3). The response side
 * reads one response head (a 100 Continue is reported as interim, other
 * 1xx ones are dropped: an HTTP/2 client gets the final one), drops the HTTP/1 connection-specific
 * fields and Transfer-Encoding, lowercases names, and de-chunks the body (trailers dropped), counts
 * a Content-Length one, or passes bytes until the end of input for a close-delimited one. It must
 * not: trust its input (the fuzz harness feeds it anything).
 */
#ifndef FERRY_PROTO_H2H1_H
#define FERRY_PROTO_H2H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/http1.h"

/* ---- the request ----------------------------------------------------- */

enum h2h1_check {
    H2H1_FIELD_OK = 0,
    H2H1_FIELD_DROP = 1, /* valid, not sent on (te: trailers) */
    H2H1_FIELD_BAD = -1, /* malformed request (RFC 9113 8.2.2) */
};

/* A regular field of an HTTP/2 request (name lowercase, as nghttp2 checks):
 * H2H1_FIELD_BAD for a connection-specific field (connection, keep-alive,
 * proxy-connection, transfer-encoding, upgrade), a "te" other than
 * "trailers", an uppercase or empty name, a name starting with ':', or a
 * value holding CR, LF or NUL; H2H1_FIELD_DROP for "te: trailers" and
 * "host" (the authority goes in Host); else H2H1_FIELD_OK. */
int h2h1_field_check(const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen);

/* Append a field to a request's field list fl (used bytes *len of cap):
 * each entry is nlen and vlen (2 bytes each, big-endian) then the name
 * then the value. Returns 0, or -1 when it does not fit. */
int h2h1_field_add(uint8_t *fl, size_t *len, size_t cap, const uint8_t *name, size_t nlen,
                   const uint8_t *value, size_t vlen);

/* What h2h1_request_head writes. */
struct h2h1_req {
    const char *method, *authority, *path; /* NUL-terminated */
    const uint8_t *fields;                 /* h2h1_field_add's list */
    size_t flen;
    bool body; /* DATA may follow the HEADERS (no END_STREAM on them) */
};

/* The body of a request written by h2h1_request_head. */
enum h2h1_body { H2H1_BODY_NONE, H2H1_BODY_LENGTH, H2H1_BODY_CHUNKED };

/* "METHOD http://AUTHORITY/PATH HTTP/1.1", "Host: AUTHORITY", the fields
 * (names as they came; Cookie fields joined into one with "; "),
 * "Connection: close", and the framing: the request's Content-Length
 * when it has one (one value, all digits), "Transfer-Encoding: chunked"
 * for a body of unknown length, else none ("Content-Length: 0" for a
 * method other than GET, HEAD, DELETE, OPTIONS, TRACE). *kind says which.
 * The authority must be a host[:port] without '/', '?', '#', '@' or
 * whitespace, the path start with '/'. Returns the head's length (CRLF
 * CRLF included), HTTP1_E_TOO_LARGE when it does not fit in cap, or
 * HTTP1_E_BAD (a bad authority, path or Content-Length). */
ssize_t h2h1_request_head(const struct h2h1_req *r, uint8_t *out, size_t cap, enum h2h1_body *kind);

/* The chunk-size line for n bytes ("%zx\r\n") into out (at least 20
 * bytes). Returns its length. */
size_t h2h1_chunk_line(size_t n, uint8_t *out);

/* ---- the response ---------------------------------------------------- */

/* A response field for HEADERS: the name lowercased in the translator's
 * name buffer, the value in its head buffer. */
struct h1h2_field {
    const uint8_t *name, *value;
    size_t nlen, vlen;
};

#define H1H2_FIELDS_MAX HTTP1_MAX_HEADERS

struct h1h2_resp {
    uint8_t *head; /* the caller's buffer for one head */
    size_t cap, hlen, scanned;
    bool head_request; /* the request was HEAD: no body */
    uint8_t state;
    uint8_t cstate; /* the de-chunker's */
    uint64_t remaining;
    uint32_t line;
    int status;
    struct h1h2_field f[H1H2_FIELDS_MAX];
    unsigned nf;
    uint8_t names[4096]; /* lowercased field names */
};

enum h1h2_event {
    H1H2_NEED,    /* all input consumed: more is needed */
    H1H2_HEAD,    /* a final response head: r->status, r->f[0..nf) */
    H1H2_DATA,    /* *data, *dlen: body bytes */
    H1H2_END,     /* the response is complete (what follows is not its) */
    H1H2_ERROR,   /* malformed */
    H1H2_INTERIM, /* a 100 Continue (r->status): the final head follows */
};

/* Start a translator over head buffer buf (cap: the largest head). */
void h1h2_resp_init(struct h1h2_resp *r, uint8_t *buf, size_t cap, bool head_request);
/* Read from p (len bytes); *used: how many were consumed. At most room
 * body bytes are handed out (a DATA event points into p). One event per
 * call: call again with the rest. A HEAD event has no body to follow when
 * h1h2_resp_done() says so at once. m is scratch for the parser. */
enum h1h2_event h1h2_resp_step(struct h1h2_resp *r, const uint8_t *p, size_t len, size_t room,
                               size_t *used, const uint8_t **data, size_t *dlen,
                               struct http1_msg *m);
/* The input ended (the connection closed): H1H2_END when that ends a
 * close-delimited body (or the response was already complete), else
 * H1H2_ERROR (cut short). */
enum h1h2_event h1h2_resp_eof(struct h1h2_resp *r);
/* Is the response complete? */
bool h1h2_resp_done(const struct h1h2_resp *r);

#endif
