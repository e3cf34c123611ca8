/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signhost.h: the two wire forms of edge mode's signed host names
 * (docs/edge.md "Signed host names"), parsed and built as bytes. Pure: no
 * I/O, no allocation, no logging, no keys and no clock; util only. Which
 * key, which time window and whether a tag is right are edge/signkey.h's
 * questions; this room only says what a string claims.
 *
 *   hop   (a front vouching for the client it saw; Minecraft only, since
 *         a vanilla client cannot type a NUL):
 *         the handshake address ends "\0ferry1\0KID.TS.IP:PORT.TAG"
 *         KID 0..31 in decimal, TS the issue time in unix seconds,
 *         IP:PORT the client ("1.2.3.4:5", "[::1]:5"), TAG 32 lowercase
 *         hex digits (16 bytes).
 *   token (an invitation a player types; Minecraft and TLS SNI): the first
 *         label of the host, 36 characters of RFC 4648 base32 in lower case
 *         (a-z, 2-7): K EEEEEEEE - TTTTTTTTTTTTTTTTTTTTTTTTTT, one character
 *         of key id, 8 of expiry (40 bits, unix seconds), '-', 26 of tag
 *         (16 bytes, the last 2 bits zero). The rest of the host is the
 *         domain the token was made for.
 *
 * The tag is a keyed hash of signhost_message(): length-prefixed fields
 * under a version string, never a concatenation whose separators could
 * occur inside a field.
 */
#ifndef FERRY_PROTO_SIGNHOST_H
#define FERRY_PROTO_SIGNHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"

#define SIGNHOST_TAG_LEN   16
#define SIGNHOST_KIDS      32 /* key ids 0..31: one base32 character */
#define SIGNHOST_TOKEN_LEN 36 /* the token label */
#define SIGNHOST_HOP_MAX   96 /* "\0ferry1\0" + the longest signature field */
#define SIGNHOST_MSG_MAX   (16 + 1 + 1 + 8 + 1 + 255 + 1 + 16 + 2)

enum signhost_form { SIGNHOST_HOP = 1, SIGNHOST_TOKEN = 2 };

struct signhost {
    enum signhost_form form;
    uint8_t kid;
    uint64_t time;      /* hop: issued at; token: expires at (unix seconds) */
    struct addr client; /* hop: the client vouched for; token: unset */
    uint8_t tag[SIGNHOST_TAG_LEN];
    size_t keep; /* hop: bytes of the address before "\0ferry1\0";
                    token: offset of the domain in the host */
};

/*
 * A hop signature at the end of a Minecraft handshake address a[0..n).
 * Returns 1 with *out filled when the address carries "\0ferry1\0" and a
 * well-formed field after its last occurrence, 0 when it carries none, -1
 * when it carries one that is malformed.
 */
int signhost_parse_hop(const uint8_t *a, size_t n, struct signhost *out);

/*
 * A token as the first label of the canonical (lower-case) host h[0..n).
 * Returns 1 with *out filled (out->keep: where the domain starts), 0 when
 * the first label is not token-shaped or no domain follows it.
 */
int signhost_parse_token(const char *h, size_t n, struct signhost *out);

/*
 * The bytes the tag is computed over, for sh's form, kid and time, the
 * canonical host it is bound to (hop: the routed host; token: the domain)
 * and, for hop, sh->client. Writes at most cap bytes and returns the
 * length, or 0 when cap is too small or host_len is over 255.
 */
size_t signhost_message(const struct signhost *sh, const char *host, size_t host_len, uint8_t *out,
                        size_t cap);

/* The token label for kid, expiry and tag: SIGNHOST_TOKEN_LEN characters
 * and a NUL into out (SIGNHOST_TOKEN_LEN + 1 bytes). */
void signhost_format_token(uint8_t kid, uint64_t expiry, const uint8_t tag[SIGNHOST_TAG_LEN],
                           char *out);

/* The hop suffix "\0ferry1\0KID.TS.IP:PORT.TAG" for sh into out (cap
 * bytes); returns its length (NULs included), or 0 if it does not fit. */
size_t signhost_format_hop(const struct signhost *sh, uint8_t *out, size_t cap);

#endif
