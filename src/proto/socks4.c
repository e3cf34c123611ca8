/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks4.c: SOCKS4/4a requests and replies. The two NUL-terminated fields
 * are bounded so a client that never sends its NUL is judged after 256
 * bytes, not buffered forever.
 */
#include "proto/socks4.h"

#include <string.h>
#include <sys/socket.h>

/* Find the NUL ending a field that starts at p[off]; returns its index,
 * 0 if not there yet, or SOCKS4_E_FIELD when the field is too long. */
static ssize_t field_end(const uint8_t *p, size_t len, size_t off)
{
    size_t lim = off + SOCKS4_FIELD_MAX + 1;
    for (size_t i = off; i < len && i < lim; i++)
        if (p[i] == '\0')
            return (ssize_t)i;
    if (len >= lim)
        return SOCKS4_E_FIELD;
    return 0;
}

ssize_t socks4_parse_request(const uint8_t *p, size_t len, struct socks4_request *out)
{
    if (len < 1)
        return 0;
    if (p[0] != SOCKS4_VERSION)
        return SOCKS4_E_VERSION;
    if (len < 8)
        return 0;
    ssize_t u = field_end(p, len, 8);
    if (u <= 0)
        return u;
    memset(out, 0, sizeof(*out));
    out->cmd = p[1];
    out->port = (uint16_t)((p[2] << 8) | p[3]);
    memcpy(out->ip, p + 4, 4);
    memcpy(out->userid, p + 8, (size_t)u - 8);
    size_t total = (size_t)u + 1;
    if (socks4_is_4a(out)) {
        ssize_t h = field_end(p, len, total);
        if (h <= 0)
            return h;
        size_t hl = (size_t)h - total;
        if (hl == 0)
            return SOCKS4_E_FIELD;
        for (size_t i = 0; i < hl; i++)
            if (p[total + i] <= 0x20 || p[total + i] == 0x7f)
                return SOCKS4_E_FIELD;
        memcpy(out->host, p + total, hl);
        total = (size_t)h + 1;
    }
    return (ssize_t)total;
}

size_t socks4_write_reply(uint8_t out[SOCKS4_REPLY_LEN], uint8_t rep, const struct addr *bnd)
{
    memset(out, 0, SOCKS4_REPLY_LEN);
    out[1] = rep;
    if (bnd && bnd->family == AF_INET) {
        out[2] = (uint8_t)(bnd->port >> 8);
        out[3] = (uint8_t)bnd->port;
        memcpy(out + 4, bnd->ip, 4);
    }
    return SOCKS4_REPLY_LEN;
}
