/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5.h: the SOCKS Protocol Version 5 wire format (RFC 1928) as pure
 * functions over bytes. No I/O, no allocation, no logging, no globals.
 *
 * Parsers share one return convention:
 *   > 0  the message was complete; that many bytes were consumed
 *   = 0  the message is not complete yet; call again with more bytes
 *   < 0  a SOCKS5_E_* code; socks5_error_reply() maps it to the reply to send
 */
#ifndef FERRY_PROTO_SOCKS5_H
#define FERRY_PROTO_SOCKS5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "util/addr.h"

#define SOCKS5_VERSION 0x05

enum socks5_method {
    SOCKS5_METHOD_NONE = 0x00,
    SOCKS5_METHOD_GSSAPI = 0x01,
    SOCKS5_METHOD_USERPASS = 0x02,
    SOCKS5_METHOD_NO_ACCEPTABLE = 0xff,
};

enum socks5_cmd {
    SOCKS5_CMD_CONNECT = 0x01,
    SOCKS5_CMD_BIND = 0x02,
    SOCKS5_CMD_UDP_ASSOCIATE = 0x03,
};

enum socks5_atyp {
    SOCKS5_ATYP_IPV4 = 0x01,
    SOCKS5_ATYP_DOMAIN = 0x03,
    SOCKS5_ATYP_IPV6 = 0x04,
};

/* REP values of RFC 1928 section 6. */
enum socks5_rep {
    SOCKS5_REP_SUCCEEDED = 0x00,
    SOCKS5_REP_GENERAL_FAILURE = 0x01,
    SOCKS5_REP_NOT_ALLOWED = 0x02,
    SOCKS5_REP_NETWORK_UNREACHABLE = 0x03,
    SOCKS5_REP_HOST_UNREACHABLE = 0x04,
    SOCKS5_REP_CONNECTION_REFUSED = 0x05,
    SOCKS5_REP_TTL_EXPIRED = 0x06,
    SOCKS5_REP_COMMAND_NOT_SUPPORTED = 0x07,
    SOCKS5_REP_ATYP_NOT_SUPPORTED = 0x08,
};

enum socks5_error {
    SOCKS5_E_VERSION = -1,      /* VER is not 5: the peer does not speak SOCKS5; close */
    SOCKS5_E_RSV = -2,          /* reserved byte is not zero */
    SOCKS5_E_ATYP = -3,         /* unknown address type */
    SOCKS5_E_DOMAIN = -4,       /* empty domain name, or one holding NUL/control bytes */
    SOCKS5_E_AUTH_VERSION = -5, /* RFC 1929: sub-negotiation VER is not 1 */
    SOCKS5_E_AUTH_LEN = -6,     /* RFC 1929: ULEN or PLEN is zero */
    SOCKS5_E_UDP_SHORT = -7,    /* UDP datagram shorter than its header */
    SOCKS5_E_UDP_FRAG = -8,     /* UDP FRAG != 0: fragmentation is not supported */
};

/* RFC 1929 username/password sub-negotiation. */
#define SOCKS5_AUTH_VERSION 0x01
#define SOCKS5_AUTH_OK      0x00
#define SOCKS5_AUTH_FAIL    0x01

/* Largest messages on the wire: VER NMETHODS METHODS[255]; and
 * VER CMD RSV ATYP LEN NAME[255] PORT[2]. */
#define SOCKS5_GREETING_MAX 257
#define SOCKS5_REQUEST_MAX  262
#define SOCKS5_REPLY_MAX    22

struct socks5_greeting {
    uint8_t nmethods;
    uint64_t offered[4]; /* bitmap of offered method numbers */
};

/* A destination as the client named it. */
struct socks5_addr {
    uint8_t atyp;
    uint8_t domain_len; /* ATYP_DOMAIN only */
    uint16_t port;      /* host byte order */
    union {
        uint8_t ip[16];   /* IPv4 in the first four bytes */
        char domain[256]; /* NUL-terminated */
    } u;
};

struct socks5_request {
    uint8_t cmd;
    struct socks5_addr dst;
};

ssize_t socks5_parse_greeting(const uint8_t *p, size_t len, struct socks5_greeting *out);
bool socks5_offers(const struct socks5_greeting *g, uint8_t method);

/* RFC 1929: VER ULEN UNAME PLEN PASSWD. Both lengths are 1..255. */
struct socks5_userpass {
    uint8_t ulen, plen;
    char user[256]; /* NUL-terminated; may not hold other NULs, see ulen */
    char pass[256];
};

/* Same return convention; a bad VER or a zero length is judged as soon as
 * its byte arrives. */
ssize_t socks5_parse_userpass(const uint8_t *p, size_t len, struct socks5_userpass *out);
/* VER STATUS. Writes 2 bytes. */
size_t socks5_write_auth_status(uint8_t out[2], uint8_t status);

/* The request of RFC 1928 section 4. Any CMD value parses; the caller
 * decides which commands it supports. */
ssize_t socks5_parse_request(const uint8_t *p, size_t len, struct socks5_request *out);

/* The reply to send for a parse error, or -1 when the connection should be
 * closed without one (the peer is not speaking SOCKS5). */
int socks5_error_reply(ssize_t err);

/* Method-selection message: VER METHOD. Writes 2 bytes. */
size_t socks5_write_method(uint8_t out[2], uint8_t method);

/* Reply of RFC 1928 section 6. bnd may be NULL (0.0.0.0:0). Returns the
 * bytes written (10 or 22), or 0 when cap is too small. */
size_t socks5_write_reply(uint8_t *out, size_t cap, uint8_t rep, const struct addr *bnd);

/* Convert a parsed IPv4/IPv6 destination to struct addr. false for domains. */
bool socks5_addr_to_addr(const struct socks5_addr *s, struct addr *out);

const char *socks5_rep_str(uint8_t rep);

/* ---- client side (used by `ferry bench`) ---- */

/* The reply of section 6 as a client reads it. */
struct socks5_reply {
    uint8_t rep;
    struct socks5_addr bnd;
};

/* VER NMETHODS METHODS. Returns bytes written, or 0 if cap is too small or
 * n is 0 or over 255. */
size_t socks5_write_greeting(uint8_t *out, size_t cap, const uint8_t *methods, size_t n);
/* VER METHOD: 2 bytes consumed, 0 need more, SOCKS5_E_VERSION. */
ssize_t socks5_parse_method(const uint8_t *p, size_t len, uint8_t *method);
/* VER CMD RSV ATYP DST.ADDR DST.PORT. Returns bytes written or 0 when cap is
 * too small or the address is malformed (domain of 0 or over 255 bytes). */
size_t socks5_write_request(uint8_t *out, size_t cap, uint8_t cmd, const struct socks5_addr *dst);
/* VER REP RSV ATYP BND.ADDR BND.PORT, same convention as the request. */
ssize_t socks5_parse_reply(const uint8_t *p, size_t len, struct socks5_reply *out);
/* RFC 1928 section 7: the header of every relayed UDP datagram,
 *   RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA
 * A datagram arrives whole, so nothing is "incomplete": a short one is an
 * error. Returns the header length (the offset of DATA), or SOCKS5_E_UDP_SHORT,
 * SOCKS5_E_RSV, SOCKS5_E_UDP_FRAG, SOCKS5_E_ATYP or SOCKS5_E_DOMAIN. */
ssize_t socks5_parse_udp(const uint8_t *p, size_t len, struct socks5_addr *dst);
/* The header for a datagram from src (IPv4 or IPv6). Returns 10 or 22, or 0
 * when cap is too small. */
size_t socks5_write_udp_header(uint8_t *out, size_t cap, const struct addr *src);
/* Length of that header for src's family. */
static inline size_t socks5_udp_header_len(const struct addr *src)
{
    return src->family == AF_INET6 ? 22 : 10;
}

/* RFC 1929 request from a client; 0 if a length is 0 or over 255 or cap
 * is too small. */
size_t socks5_write_userpass(uint8_t *out, size_t cap, const char *user, size_t ulen,
                             const char *pass, size_t plen);
/* VER STATUS as a client reads it: 2 consumed, 0 need more, or
 * SOCKS5_E_AUTH_VERSION. */
ssize_t socks5_parse_auth_status(const uint8_t *p, size_t len, uint8_t *status);
/* Build a socks5_addr from an IP address, or from a host name. */
void socks5_addr_from_addr(struct socks5_addr *s, const struct addr *a);
int socks5_addr_from_name(struct socks5_addr *s, const char *name, uint16_t port);

#endif
