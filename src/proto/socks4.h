/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks4.h: SOCKS4 and its 4a extension (domain names) as pure functions
 * over bytes. Same return convention as socks5.h: >0 consumed, 0 need
 * more, <0 a SOCKS4_E_* code.
 *
 *   VER(4) CMD DSTPORT(2) DSTIP(4) USERID... NUL [HOSTNAME... NUL]
 *
 * 4a: a DSTIP of 0.0.0.x with x != 0 means a host name follows the USERID.
 */
#ifndef FERRY_PROTO_SOCKS4_H
#define FERRY_PROTO_SOCKS4_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/addr.h"

#define SOCKS4_VERSION     0x04
#define SOCKS4_CMD_CONNECT 0x01
#define SOCKS4_CMD_BIND    0x02
#define SOCKS4_GRANTED     0x5a
#define SOCKS4_REJECTED    0x5b
#define SOCKS4_FIELD_MAX   255 /* USERID and HOSTNAME, NUL excluded */
#define SOCKS4_REPLY_LEN   8

enum socks4_error {
    SOCKS4_E_VERSION = -1, /* VER is not 4 */
    SOCKS4_E_FIELD = -2,   /* USERID or HOSTNAME longer than 255 bytes, or a bad HOSTNAME */
};

struct socks4_request {
    uint8_t cmd;
    uint16_t port;
    uint8_t ip[4];
    char userid[SOCKS4_FIELD_MAX + 1];
    char host[SOCKS4_FIELD_MAX + 1]; /* 4a only; empty otherwise */
};

ssize_t socks4_parse_request(const uint8_t *p, size_t len, struct socks4_request *out);
/* 00 REP PORT IP; bnd may be NULL (zeros). Writes 8 bytes. */
size_t socks4_write_reply(uint8_t out[SOCKS4_REPLY_LEN], uint8_t rep, const struct addr *bnd);
/* Is this a 4a request (a name to resolve)? */
static inline int socks4_is_4a(const struct socks4_request *r)
{
    return r->ip[0] == 0 && r->ip[1] == 0 && r->ip[2] == 0 && r->ip[3] != 0;
}

#endif
