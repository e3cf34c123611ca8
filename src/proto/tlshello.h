/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlshello.h: the TLS ClientHello sniffer of edge mode: the first
 * ClientHello's server_name (host_name) and ALPN list, read from the bytes a
 * client sent first, across any number of TCP segments and across several
 * TLS records (a handshake message fragmented over records, as nginx's
 * ssl_preread handles and HAProxy 2.6's req.ssl_sni does not). Pure: no
 * syscalls, no allocation, no logging, util only. It lives in proto/ (the
 * house rule for parsers) while edge mode's I/O lives in relay/front_edge.c; it
 * must never decrypt, answer, or look past the first ClientHello (no
 * HelloRetryRequest, no renegotiation; with ECH it sees the outer, public
 * name, as HAProxy documents for req.ssl_sni).
 *
 * Stateless and resumable: each call gets the whole prefix received so far
 * (the same buffer grown) and rescans it. A rescan walks at most
 * TLS_RECORDS_MAX record headers and parses the ClientHello body once it is
 * complete, so it stays cheap however the bytes trickle in, and the verdict
 * depends only on the bytes, never on how they were split.
 */
#ifndef FERRY_PROTO_TLSHELLO_H
#define FERRY_PROTO_TLSHELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hostname.h"

#define TLS_HELLO_MAX     16384 /* ClientHello bytes, its 4-byte handshake header included */
#define TLS_RECORDS_MAX   64    /* records it may be spread over */
#define TLS_RECORD_MAX    16384 /* a record's payload, 2^14 (RFC 8446 5.1) */
/* The most bytes a caller needs to buffer to get any verdict. */
#define TLS_SNIFF_BUF_MAX (TLS_HELLO_MAX + 5 * TLS_RECORDS_MAX)
#define TLS_ALPN_MAX      255 /* ALPN bytes kept (whole protocols, wire format) */

enum tls_result {
    TLS_NEED_MORE = 0, /* a valid prefix: call again with more bytes */
    TLS_OK = 1,        /* the first ClientHello is complete and parsed */
};

enum tls_error {
    TLS_E_NOT_TLS = -1,   /* not a handshake record (0x16, major 3) nor an SSLv2 CLIENT-HELLO */
    TLS_E_TOO_BIG = -2,   /* ClientHello over TLS_HELLO_MAX or over TLS_RECORDS_MAX records */
    TLS_E_RECORD = -3,    /* a later record not a handshake record, major != 3, or a */
                          /* payload length of 0 or over 2^14 */
    TLS_E_HANDSHAKE = -4, /* first message not a ClientHello, or its fields do not add up */
    TLS_E_EXTENSION = -5, /* extension block or SNI / ALPN extension malformed, ALPN twice */
    TLS_E_DUP_SNI = -6,   /* two server_name extensions, or two host_name entries */
    TLS_E_SNI = -7,       /* host_name empty, over 255 bytes, or not LDH (hostname.h) */
};

/* Filled only when tls_sniff() returns TLS_OK; caller's storage. */
struct tls_hello {
    bool sslv2;                 /* an SSLv2-compatible hello: no extensions, so no SNI */
    uint16_t client_version;    /* the ClientHello's legacy_version (0x0303 for TLS 1.3) */
    unsigned records;           /* TLS records the ClientHello spans (0 for SSLv2) */
    size_t hello_end;           /* offset in buf just past the ClientHello's last byte */
    size_t records_end;         /* offset just past the record holding that byte (may be */
                                /*   > len: the record can go on past the ClientHello) */
    bool ends_mid_record;       /* hello_end < records_end: more bytes follow in its record */
    size_t sni_len;             /* 0: no server_name host_name */
    char sni[HOSTNAME_MAX + 1]; /* canonical: lowercase LDH, no trailing dot, NUL-ended */
    unsigned alpn_count;        /* protocols in the ALPN extension (0: none) */
    bool alpn_truncated;        /* alpn[] holds only the first ones that fit */
    size_t alpn_len;            /* bytes in alpn[] */
    uint8_t alpn[TLS_ALPN_MAX]; /* wire format: len8 name len8 name ... */
};

/*
 * Sniff buf[0..len). Returns TLS_NEED_MORE, TLS_OK or a TLS_E_* code (< 0),
 * an error as soon as the bytes make it certain (a record header or the
 * handshake header at once, the ClientHello's body once it is complete).
 * Record versions: major 3, any minor (clients send 0x0300-0x0303); the
 * ClientHello's legacy_version: major 3. The message must be one
 * ClientHello (type 1) whose fields fill it exactly; extensions are
 * optional (SSL 3.0-era hellos have none). Only server_name (0) and ALPN
 * (16) are read; others are skipped unread. An SSLv2-compatible
 * CLIENT-HELLO (first byte with the high bit set, message type 1, version
 * major 3) is TLS_OK with sslv2 set and no SNI once its declared length is
 * there. Bytes after the ClientHello are not looked at. out is written only
 * on TLS_OK.
 */
int tls_sniff(const uint8_t *buf, size_t len, struct tls_hello *out);

/* Short English text for a TLS_E_* code (or a result) for logs; never NULL. */
const char *tls_strerror(int code);

#endif
