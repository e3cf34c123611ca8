/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * squidauth.h: Squid's basic-authentication helper protocol, the lines a
 * helper such as basic_ncsa_auth or basic_ldap_auth reads and writes: a
 * request "USER PASSWORD\n" with both fields escaped as Squid's
 * rfc1738_escape() does, and a reply "OK", "ERR" or "BH", optionally
 * followed by key=value pairs (message="..." is the one ferry reads) or,
 * from older helpers, free text. No channel-ID: each helper process
 * answers one request at a time (Squid's concurrency=0).
 *
 * Pure: no I/O, no allocation, no logging; util only. Running the helper
 * processes is auth/helper.c's job.
 */
#ifndef FERRY_PROTO_SQUIDAUTH_H
#define FERRY_PROTO_SQUIDAUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest reply line read from a helper (Squid's HELPER_INPUT_BUFFER). */
#define SQUIDAUTH_LINE_MAX 8192

/*
 * Escape in[0..len) as Squid's rfc1738_escape() (RFC1738_ESCAPE_UNSAFE |
 * RFC1738_ESCAPE_CTRLS): letters and digits stay; '%', space, the bytes
 * < > " # { } | \ ^ ~ [ ] ` ' and every control (0x00-0x1F, 0x7F) or
 * non-ASCII byte (0x80-0xFF) become %XX with upper-case hex; anything else
 * stays. Writes a NUL-terminated string to out (cap bytes) and returns its
 * length, or -1 when cap is too small (3 * len + 1 always suffices).
 */
ssize_t squidauth_escape(const uint8_t *in, size_t len, char *out, size_t cap);

/* One request line, "USER PASS\n", both escaped (NUL-terminated). Returns
 * its length, or -1 when cap is too small. */
ssize_t squidauth_request(const uint8_t *user, size_t ulen, const uint8_t *pass, size_t plen,
                          char *out, size_t cap);

enum squidauth_code {
    SQUIDAUTH_OK,  /* the credentials are good */
    SQUIDAUTH_ERR, /* they are not */
    SQUIDAUTH_BH,  /* "broken helper": it could not decide */
};

struct squidauth_reply {
    enum squidauth_code code;
    const char *msg; /* points into the line: message="..." (quotes off), or the free text */
    size_t msglen;   /* 0: none */
};

/*
 * Parse one reply line, line[0..len) without its '\n' (a trailing '\r' is
 * ignored). The code is the first word, exactly "OK", "ERR" or "BH",
 * followed by the end or whitespace. The message is the value of a
 * message= pair (a quoted value ends at the next unescaped '"'), or, when
 * the rest is not key=value pairs, the rest as written. Returns 0, or -1
 * when the line is not a reply (another first word, or empty).
 */
int squidauth_reply_parse(const char *line, size_t len, struct squidauth_reply *out);

#endif
