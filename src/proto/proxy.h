/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxy.h: the HAProxy PROXY protocol, versions 1 (text) and 2 (binary), as
 * pure functions over bytes: no I/O, no allocation. A trusted load balancer
 * prepends one header to a connection to say whose connection it really is;
 * the spec is doc/proxy-protocol.txt in the HAProxy sources ("The PROXY
 * protocol, Versions 1 & 2").
 *
 *   v1: "PROXY TCP4 <src> <dst> <sport> <dport>\r\n"   (also TCP6, UNKNOWN)
 *   v2: SIG(12) VER|CMD FAM|PROTO LEN(2, big-endian) ADDRESSES [TLV...]
 *
 * Same return convention as the other parsers in proto/: >0 bytes consumed,
 * 0 need more, <0 a PROXY_E_* code. The caller is configured for one version
 * and never guesses whether a header is there (spec section 2).
 */
#ifndef FERRY_PROTO_PROXY_H
#define FERRY_PROTO_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/addr.h"

enum proxy_version { PROXY_V1 = 1, PROXY_V2 = 2 };

#define PROXY_V1_MAX 107  /* whole v1 line, CRLF included */
#define PROXY_V2_MAX 1024 /* we refuse v2 headers whose total length (16 + len) exceeds this */

#define PROXY_V2_SIG_LEN         12
#define PROXY_V2_HDR_LEN         16 /* signature, ver/cmd, family, length */
#define PROXY_V2_CMD_LOCAL       0x20
#define PROXY_V2_CMD_PROXY       0x21
#define PROXY_V2_FAM_UNSPEC      0x00
#define PROXY_V2_FAM_TCP4        0x11
#define PROXY_V2_FAM_UDP4        0x12
#define PROXY_V2_FAM_TCP6        0x21
#define PROXY_V2_FAM_UDP6        0x22
#define PROXY_V2_FAM_UNIX_STREAM 0x31
#define PROXY_V2_FAM_UNIX_DGRAM  0x32
#define PROXY_V2_ADDR4_LEN       12 /* 2 * 4 address bytes + 2 * 2 port bytes */
#define PROXY_V2_ADDR6_LEN       36 /* 2 * 16 address bytes + 2 * 2 port bytes */

/* "\r\n\r\n\0\r\nQUIT\n": holds a NUL, so never handle it as a C string. */
extern const uint8_t proxy_v2_sig[PROXY_V2_SIG_LEN];

enum proxy_error {
    PROXY_E_SIGNATURE = -1, /* not a PROXY header of the expected version */
    PROXY_E_VERSION = -2,   /* v2 version nibble is not 2 */
    PROXY_E_COMMAND = -3,   /* v2 command not LOCAL/PROXY */
    PROXY_E_FAMILY = -4,    /* v2 PROXY with a family other than TCP4/TCP6/UNSPEC */
    PROXY_E_ADDRESS = -5,   /* malformed address or port (v1 text, or v2 length too short) */
    PROXY_E_TOO_LONG = -6,  /* v1 line over 107 bytes, or v2 16 + len over PROXY_V2_MAX */
    PROXY_E_SYNTAX = -7,    /* v1 malformed line (spaces, missing fields, CR without LF, ...) */
};

/* Filled by proxy_parse() only when it returns > 0; caller's storage. */
struct proxy_header {
    /* v2 LOCAL or UNSPEC, or v1 "UNKNOWN": keep the connection's own addresses. */
    bool local;
    /* When !local: family AF_INET or AF_INET6, port in host order, as the
     * header states them (an IPv4-mapped IPv6 address stays AF_INET6).
     * Zeroed when local. */
    struct addr src, dst;
};

/*
 * >0: header complete, that many bytes consumed (v2 TLVs skipped, not
 * checked beyond fitting in the length); 0: need more bytes (only while what
 * is there is still a valid prefix, so a caller can wait); <0: a PROXY_E_*
 * code, returned as soon as the bytes received make it certain. Each call
 * gets the whole prefix received so far; the verdict does not depend on how
 * the bytes were split. Bytes after the header are not looked at.
 *
 * v1 is strict: exactly single spaces, TCP4 addresses in dotted quad without
 * leading zeros, TCP6 addresses as inet_pton() reads them, ports 0-65535 in
 * decimal without sign or leading zero, CRLF and nothing else ending the
 * line. "PROXY UNKNOWN" may be followed by anything up to the CRLF.
 * v2 accepts LOCAL with any family (the address block is skipped), and PROXY
 * with TCP over IPv4 or IPv6, or UNSPEC (then local). UDP and UNIX give
 * PROXY_E_FAMILY: ferry relays TCP streams only.
 */
ssize_t proxy_parse(enum proxy_version v, const uint8_t *p, size_t len, struct proxy_header *out);

/* Short English text for logs, e.g. "bad PROXY v1 address"; never NULL. */
const char *proxy_strerror(int code);

/*
 * Writers, used by tests and by `ferry bench` to speak PROXY to a proxy.
 * Both return the bytes written to out[cap], or 0 when cap is too small, an
 * address is unset, or src and dst are of different families. Nothing is
 * written past the header: proxy_write_v1() adds no NUL.
 *
 * proxy_write_v1: "PROXY TCP4|TCP6 ...\r\n" (at most 104 bytes);
 *                 src NULL => "PROXY UNKNOWN\r\n".
 * proxy_write_v2: PROXY command, TCP over IPv4 (28 bytes) or IPv6 (52 bytes);
 *                 src NULL => LOCAL with family UNSPEC (16 bytes).
 */
size_t proxy_write_v1(char *out, size_t cap, const struct addr *src, const struct addr *dst);
size_t proxy_write_v2(uint8_t *out, size_t cap, const struct addr *src, const struct addr *dst);

#endif
