/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edgehello.h: the canned first messages of `ferry bench edge`: a
 * Minecraft Java handshake (next state login) followed by a Login Start,
 * and a real-looking TLS 1.3 ClientHello with SNI, of a size asked for,
 * in one TLS record or fragmented over two. The bytes are made here, from
 * the wire formats (the Minecraft protocol's handshake, RFC 8446 4.1.2),
 * so that any edge (ferry, HAProxy's req.ssl_sni, nginx's ssl_preread)
 * reads them as a client's. Pure: no I/O, no allocation; the random and
 * key bytes are a fixed pattern (they are never used for a handshake).
 */
#ifndef FERRY_BENCH_EDGEHELLO_H
#define FERRY_BENCH_EDGEHELLO_H

#include <stddef.h>
#include <stdint.h>

/* The sizes `ferry bench edge` sends (wire bytes, record headers
 * included): a classic browser ClientHello padded to 512 bytes of
 * handshake (RFC 7685), and one with an X25519MLKEM768 key share. */
#define EDGEHELLO_TLS_SIZE 517
#define EDGEHELLO_PQ_SIZE  1812
#define EDGEHELLO_MAX      4096

/*
 * A ClientHello for server name sni (1..255 LDH bytes), total bytes long
 * on the wire, its handshake message spread over records (1 or 2) TLS
 * records; with pq a 1,216-byte ML-KEM-768 share joins the X25519 one
 * (the post-quantum size) and the server_name extension comes after it,
 * so that with 2 records the name lies in the second. A padding extension
 * (21) makes up the size. Two records split the handshake message in the
 * middle. Into out (cap bytes). Returns total, or 0 when it cannot be
 * made: total smaller than the hello without padding, over cap or
 * EDGEHELLO_MAX, records not 1 or 2, a bad sni.
 */
size_t edgehello_tls(uint8_t *out, size_t cap, const char *sni, size_t total, unsigned records,
                     int pq);

/*
 * A Minecraft Java handshake (protocol 765, host, port, next state 2:
 * login) and a Login Start (name, a fixed UUID) into out (cap bytes), each
 * a length-prefixed frame. host 1..255 bytes, name 1..16. Returns the
 * length, or 0 when it does not fit or an argument is out of range.
 */
size_t edgehello_mc(uint8_t *out, size_t cap, const char *host, uint16_t port, const char *name);

#endif
