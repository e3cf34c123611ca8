/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5.c: RFC 1928 messages, parsed and written byte by byte (never through
 * packed structs). Incomplete input returns 0 so a caller can feed bytes as
 * they arrive, one at a time if the client writes them so. This file must
 * stay free of I/O, allocation and logging: it is fuzzed on its own.
 */
#include "proto/socks5.h"

#include <string.h>
#include <sys/socket.h>

ssize_t socks5_parse_greeting(const uint8_t *p, size_t len, struct socks5_greeting *out)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS5_VERSION)
        return SOCKS5_E_VERSION;
    if (len < 2)
        return 0;
    size_t n = p[1];
    if (len < 2 + n)
        return 0;
    memset(out, 0, sizeof(*out));
    out->nmethods = (uint8_t)n;
    for (size_t i = 0; i < n; i++)
        out->offered[p[2 + i] >> 6] |= (uint64_t)1 << (p[2 + i] & 63);
    return (ssize_t)(2 + n);
}

bool socks5_offers(const struct socks5_greeting *g, uint8_t method)
{
    return (g->offered[method >> 6] >> (method & 63)) & 1;
}

/* A domain must be non-empty and printable: control bytes would end up in
 * logs and resolver queries, and no DNS name needs them. */
static bool domain_ok(const uint8_t *name, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (name[i] < 0x21 || name[i] == 0x7f)
            return false;
    }
    return true;
}

/* ATYP ADDR PORT starting at p[3] of a request or reply whose first three
 * bytes were checked by the caller. */
static ssize_t parse_addr(const uint8_t *p, size_t len, struct socks5_addr *out)
{
    if (len < 4)
        return 0;

    size_t addr_len;
    switch (p[3]) {
    case SOCKS5_ATYP_IPV4:
        addr_len = 4;
        break;
    case SOCKS5_ATYP_IPV6:
        addr_len = 16;
        break;
    case SOCKS5_ATYP_DOMAIN:
        if (len < 5)
            return 0;
        if (p[4] == 0)
            return SOCKS5_E_DOMAIN;
        addr_len = 1 + (size_t)p[4];
        break;
    default:
        return SOCKS5_E_ATYP;
    }
    size_t total = 4 + addr_len + 2;
    if (len < total)
        return 0;

    memset(out, 0, sizeof(*out));
    out->atyp = p[3];
    if (p[3] == SOCKS5_ATYP_DOMAIN) {
        if (!domain_ok(p + 5, p[4]))
            return SOCKS5_E_DOMAIN;
        out->domain_len = p[4];
        memcpy(out->u.domain, p + 5, p[4]);
        out->u.domain[p[4]] = '\0';
    } else {
        memcpy(out->u.ip, p + 4, addr_len);
    }
    out->port = (uint16_t)((p[4 + addr_len] << 8) | p[4 + addr_len + 1]);
    return (ssize_t)total;
}

/* VER, then a second byte the caller keeps, then RSV: each byte is judged
 * as soon as it arrives, so a bad message is answered without waiting for
 * bytes that may never come. */
static ssize_t parse_head(const uint8_t *p, size_t len)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS5_VERSION)
        return SOCKS5_E_VERSION;
    if (len < 3)
        return 0;
    if (p[2] != 0)
        return SOCKS5_E_RSV;
    return 3;
}

ssize_t socks5_parse_request(const uint8_t *p, size_t len, struct socks5_request *out)
{
    ssize_t n = parse_head(p, len);
    if (n <= 0)
        return n;
    struct socks5_addr dst;
    n = parse_addr(p, len, &dst);
    if (n <= 0)
        return n;
    out->cmd = p[1];
    out->dst = dst;
    return n;
}

ssize_t socks5_parse_reply(const uint8_t *p, size_t len, struct socks5_reply *out)
{
    ssize_t n = parse_head(p, len);
    if (n <= 0)
        return n;
    struct socks5_addr bnd;
    n = parse_addr(p, len, &bnd);
    if (n <= 0)
        return n;
    out->rep = p[1];
    out->bnd = bnd;
    return n;
}

ssize_t socks5_parse_udp(const uint8_t *p, size_t len, struct socks5_addr *dst)
{
    if (len < 4)
        return SOCKS5_E_UDP_SHORT;
    if (p[0] != 0 || p[1] != 0)
        return SOCKS5_E_RSV;
    if (p[2] != 0)
        return SOCKS5_E_UDP_FRAG;
    /* parse_addr reads ATYP at p[3], as in a request. */
    ssize_t n = parse_addr(p, len, dst);
    return n == 0 ? SOCKS5_E_UDP_SHORT : n;
}

size_t socks5_write_udp_header(uint8_t *out, size_t cap, const struct addr *src)
{
    /* RSV RSV FRAG, then the same ATYP/ADDR/PORT layout as a reply. */
    size_t n = socks5_write_reply(out, cap, 0, src);
    if (n)
        out[0] = 0;
    return n;
}

size_t socks5_write_greeting(uint8_t *out, size_t cap, const uint8_t *methods, size_t n)
{
    if (n == 0 || n > 255 || cap < 2 + n)
        return 0;
    out[0] = SOCKS5_VERSION;
    out[1] = (uint8_t)n;
    memcpy(out + 2, methods, n);
    return 2 + n;
}

ssize_t socks5_parse_method(const uint8_t *p, size_t len, uint8_t *method)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS5_VERSION)
        return SOCKS5_E_VERSION;
    if (len < 2)
        return 0;
    *method = p[1];
    return 2;
}

size_t socks5_write_request(uint8_t *out, size_t cap, uint8_t cmd, const struct socks5_addr *dst)
{
    size_t alen;
    switch (dst->atyp) {
    case SOCKS5_ATYP_IPV4:
        alen = 4;
        break;
    case SOCKS5_ATYP_IPV6:
        alen = 16;
        break;
    case SOCKS5_ATYP_DOMAIN:
        if (dst->domain_len == 0)
            return 0;
        alen = 1 + (size_t)dst->domain_len;
        break;
    default:
        return 0;
    }
    size_t n = 4 + alen + 2;
    if (cap < n)
        return 0;
    out[0] = SOCKS5_VERSION;
    out[1] = cmd;
    out[2] = 0;
    out[3] = dst->atyp;
    if (dst->atyp == SOCKS5_ATYP_DOMAIN) {
        out[4] = dst->domain_len;
        memcpy(out + 5, dst->u.domain, dst->domain_len);
    } else {
        memcpy(out + 4, dst->u.ip, alen);
    }
    out[4 + alen] = (uint8_t)(dst->port >> 8);
    out[5 + alen] = (uint8_t)(dst->port & 0xff);
    return n;
}

void socks5_addr_from_addr(struct socks5_addr *s, const struct addr *a)
{
    memset(s, 0, sizeof(*s));
    s->atyp = a->family == AF_INET6 ? SOCKS5_ATYP_IPV6 : SOCKS5_ATYP_IPV4;
    s->port = a->port;
    memcpy(s->u.ip, a->ip, a->family == AF_INET6 ? 16 : 4);
}

int socks5_addr_from_name(struct socks5_addr *s, const char *name, uint16_t port)
{
    size_t n = strlen(name);
    memset(s, 0, sizeof(*s));
    if (n == 0 || n > 255)
        return -1;
    s->atyp = SOCKS5_ATYP_DOMAIN;
    s->domain_len = (uint8_t)n;
    memcpy(s->u.domain, name, n);
    s->port = port;
    return 0;
}

ssize_t socks5_parse_userpass(const uint8_t *p, size_t len, struct socks5_userpass *out)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS5_AUTH_VERSION)
        return SOCKS5_E_AUTH_VERSION;
    if (len < 2)
        return 0;
    size_t ulen = p[1];
    if (ulen == 0)
        return SOCKS5_E_AUTH_LEN;
    if (len < 3 + ulen)
        return 0;
    size_t plen = p[2 + ulen];
    if (plen == 0)
        return SOCKS5_E_AUTH_LEN;
    size_t total = 3 + ulen + plen;
    if (len < total)
        return 0;
    out->ulen = (uint8_t)ulen;
    out->plen = (uint8_t)plen;
    memcpy(out->user, p + 2, ulen);
    out->user[ulen] = '\0';
    memcpy(out->pass, p + 3 + ulen, plen);
    out->pass[plen] = '\0';
    return (ssize_t)total;
}

size_t socks5_write_auth_status(uint8_t out[2], uint8_t status)
{
    out[0] = SOCKS5_AUTH_VERSION;
    out[1] = status;
    return 2;
}

size_t socks5_write_userpass(uint8_t *out, size_t cap, const char *user, size_t ulen,
                             const char *pass, size_t plen)
{
    if (ulen == 0 || ulen > 255 || plen == 0 || plen > 255 || cap < 3 + ulen + plen)
        return 0;
    out[0] = SOCKS5_AUTH_VERSION;
    out[1] = (uint8_t)ulen;
    memcpy(out + 2, user, ulen);
    out[2 + ulen] = (uint8_t)plen;
    memcpy(out + 3 + ulen, pass, plen);
    return 3 + ulen + plen;
}

ssize_t socks5_parse_auth_status(const uint8_t *p, size_t len, uint8_t *status)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS5_AUTH_VERSION)
        return SOCKS5_E_AUTH_VERSION;
    if (len < 2)
        return 0;
    *status = p[1];
    return 2;
}

int socks5_error_reply(ssize_t err)
{
    switch (err) {
    case SOCKS5_E_RSV:
    case SOCKS5_E_DOMAIN:
        return SOCKS5_REP_GENERAL_FAILURE;
    case SOCKS5_E_ATYP:
        return SOCKS5_REP_ATYP_NOT_SUPPORTED;
    default:
        return -1;
    }
}

size_t socks5_write_method(uint8_t out[2], uint8_t method)
{
    out[0] = SOCKS5_VERSION;
    out[1] = method;
    return 2;
}

size_t socks5_write_reply(uint8_t *out, size_t cap, uint8_t rep, const struct addr *bnd)
{
    bool v6 = bnd && bnd->family == AF_INET6;
    size_t alen = v6 ? 16 : 4;
    size_t n = 4 + alen + 2;
    if (cap < n)
        return 0;
    out[0] = SOCKS5_VERSION;
    out[1] = rep;
    out[2] = 0;
    out[3] = v6 ? SOCKS5_ATYP_IPV6 : SOCKS5_ATYP_IPV4;
    if (bnd && bnd->family)
        memcpy(out + 4, bnd->ip, alen);
    else
        memset(out + 4, 0, alen);
    uint16_t port = (bnd && bnd->family) ? bnd->port : 0;
    out[4 + alen] = (uint8_t)(port >> 8);
    out[5 + alen] = (uint8_t)(port & 0xff);
    return n;
}

bool socks5_addr_to_addr(const struct socks5_addr *s, struct addr *out)
{
    memset(out, 0, sizeof(*out));
    out->port = s->port;
    if (s->atyp == SOCKS5_ATYP_IPV4) {
        out->family = AF_INET;
        memcpy(out->ip, s->u.ip, 4);
        return true;
    }
    if (s->atyp == SOCKS5_ATYP_IPV6) {
        out->family = AF_INET6;
        memcpy(out->ip, s->u.ip, 16);
        return true;
    }
    return false;
}

const char *socks5_rep_str(uint8_t rep)
{
    static const char *const names[] = {
        "succeeded",           "general-failure",       "not-allowed",
        "network-unreachable", "host-unreachable",      "connection-refused",
        "ttl-expired",         "command-not-supported", "address-type-not-supported",
    };
    return rep < sizeof(names) / sizeof(names[0]) ? names[rep] : "unknown";
}
