/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capsule.h: the Capsule Protocol of RFC 9297 and the DATAGRAM capsule as
 * CONNECT-UDP (RFC 9298) uses it, with QUIC variable-length integers
 * (RFC 9000 section 16). Pure functions over bytes: no I/O, no allocation,
 * no logging, no globals.
 *
 * Parsers share the return convention of proto/:
 *   > 0  a whole item was there; that many bytes were consumed
 *   = 0  not complete yet; call again with more bytes
 *   < 0  a CAPSULE_E_* code: the stream is malformed (RFC 9297 section 3.3:
 *        abort the request stream)
 */
#ifndef FERRY_PROTO_CAPSULE_H
#define FERRY_PROTO_CAPSULE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest value a varint carries: 2^62 - 1. */
#define CAPSULE_VARINT_MAX       ((uint64_t)0x3fffffffffffffffull)
/* The longest varint on the wire. */
#define CAPSULE_VARINT_LEN_MAX   8
/* RFC 9297 section 3.5: the DATAGRAM capsule. */
#define CAPSULE_TYPE_DATAGRAM    0x00
/* RFC 9298 section 4: context id 0 carries a UDP payload. */
#define CAPSULE_CONTEXT_UDP      0
/* The longest header of a DATAGRAM capsule: type (1), length (8), context 0 (1). */
#define CAPSULE_DATAGRAM_HDR_MAX 10

enum capsule_error {
    CAPSULE_E_TOO_LONG = -1, /* a capsule's length is over the caller's cap */
    CAPSULE_E_DATAGRAM = -2, /* a DATAGRAM capsule without a whole context id */
    CAPSULE_E_TYPE = -3,     /* capsule_datagram_parse() given another type */
};

/* One capsule. payload points into the parsed bytes (just behind the
 * header, even when len is 0) and is valid as long as they are. */
struct capsule {
    uint64_t type;
    const uint8_t *payload;
    size_t len;
};

/* A DATAGRAM capsule's contents (RFC 9298 section 5). payload points into
 * the capsule's payload. */
struct capsule_datagram {
    uint64_t context_id;
    const uint8_t *payload;
    size_t len;
};

/* Read one varint from p[0..len): its size (1, 2, 4 or 8) with *v set, or
 * 0 when len is shorter than the size the first byte announces (*v is then
 * untouched). Every encoding is accepted, minimal or not (RFC 9000 section
 * 16 and RFC 9297 section 3.2 allow both), so there is no error. */
ssize_t capsule_varint_get(const uint8_t *p, size_t len, uint64_t *v);

/* The size of v's minimal encoding (1, 2, 4 or 8), or 0 when v is over
 * CAPSULE_VARINT_MAX. */
size_t capsule_varint_len(uint64_t v);

/* Write v minimally into out[0..cap): the bytes written, or 0 when v is over
 * CAPSULE_VARINT_MAX or cap is too small (nothing is written then). */
size_t capsule_varint_put(uint8_t *out, size_t cap, uint64_t v);

/* Parse one capsule (type varint, length varint, payload) from the front of
 * a byte stream p[0..len). Returns the bytes it takes with *out set, 0 when
 * more bytes are needed, or CAPSULE_E_TOO_LONG as soon as the length field
 * is whole and says more than cap: so a peer can never make the caller
 * buffer more than the header plus cap bytes. A capsule of any type parses;
 * the caller skips types it does not know (RFC 9297 section 3.2). The cap
 * holds for unknown types too: one longer than cap is refused, not skipped
 * piecemeal (no capsule connect-udp defines comes near a datagram's cap). */
ssize_t capsule_parse(const uint8_t *p, size_t len, size_t cap, struct capsule *out);

/* Split a parsed DATAGRAM capsule into context id and payload (RFC 9298
 * section 5). Returns 0, CAPSULE_E_DATAGRAM when the payload does not hold
 * a whole context id (malformed), or CAPSULE_E_TYPE when c is not a DATAGRAM
 * capsule. Context id CAPSULE_CONTEXT_UDP carries a UDP payload (possibly
 * empty); the caller drops any other id silently (RFC 9298 section 4). */
int capsule_datagram_parse(const struct capsule *c, struct capsule_datagram *out);

/* The size of the DATAGRAM capsule carrying a UDP payload of len bytes with
 * context id 0, or SIZE_MAX when no varint can say its length. */
size_t capsule_datagram_size(size_t len);

/* Write the header of that capsule (type, length, context id 0) into
 * out[0..cap), for a payload the caller puts right behind it. Returns the
 * header's size (3 to CAPSULE_DATAGRAM_HDR_MAX), or 0 when cap is too small
 * or len too large (nothing is written then). */
size_t capsule_write_datagram_header(uint8_t *out, size_t cap, size_t len);

/* Frame the UDP payload p[0..len) as a DATAGRAM capsule with context id 0
 * into out[0..cap). Returns the capsule's size, as snprintf does: when that
 * is over cap nothing was written, and the caller needs that much room
 * (SIZE_MAX: never). p may overlap out. */
size_t capsule_write_datagram(uint8_t *out, size_t cap, const uint8_t *p, size_t len);

#endif
