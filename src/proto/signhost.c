/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signhost.c: the hop and token forms of signhost.h, read and written.
 * Pure: bytes in, fields out; the keyed hash and every judgement on time
 * and keys are edge/signkey.c's.
 */
#include "proto/signhost.h"

#include <stdio.h>
#include <string.h>

static const char hop_mark[] = "\0ferry1\0"; /* 8 bytes */
#define HOP_MARK_LEN 8
static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
static const char msg_version[16] = "ferry-signhost-1";

static int b32_val(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= '2' && c <= '7')
        return c - '2' + 26;
    return -1;
}

static int hex_val(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decimal digits s[0..n) into *v, no sign, no leading zero but "0",
 * at most max. */
static bool parse_dec(const uint8_t *s, size_t n, uint64_t max, uint64_t *v)
{
    if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (max - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

/* Where the last "\0ferry1\0" of a[0..n) starts, or n. */
static size_t find_mark(const uint8_t *a, size_t n)
{
    for (size_t i = n >= HOP_MARK_LEN ? n - HOP_MARK_LEN + 1 : 0; i-- > 0;)
        if (!memcmp(a + i, hop_mark, HOP_MARK_LEN))
            return i;
    return n;
}

int signhost_parse_hop(const uint8_t *a, size_t n, struct signhost *out)
{
    size_t m = find_mark(a, n);
    if (m == n)
        return 0;
    const uint8_t *f = a + m + HOP_MARK_LEN;
    size_t fl = n - m - HOP_MARK_LEN;
    /* KID '.' TS '.' IP:PORT '.' TAG: the tag is after the last dot, the
     * kid and time before the first two (an IPv4 address has dots). */
    if (fl < 2 * SIGNHOST_TAG_LEN + 1 || fl > SIGNHOST_HOP_MAX - HOP_MARK_LEN)
        return -1;
    size_t tag_at = fl - 2 * SIGNHOST_TAG_LEN;
    if (f[tag_at - 1] != '.')
        return -1;
    const uint8_t *d1 = memchr(f, '.', tag_at - 1);
    if (!d1)
        return -1;
    const uint8_t *d2 = memchr(d1 + 1, '.', (size_t)(f + tag_at - 1 - (d1 + 1)));
    if (!d2)
        return -1;
    uint64_t kid, ts;
    if (!parse_dec(f, (size_t)(d1 - f), SIGNHOST_KIDS - 1, &kid) ||
        !parse_dec(d1 + 1, (size_t)(d2 - d1 - 1), UINT64_MAX, &ts))
        return -1;
    char ip[ADDR_STRLEN];
    size_t il = (size_t)(f + tag_at - 1 - (d2 + 1));
    if (il == 0 || il >= sizeof(ip))
        return -1;
    memcpy(ip, d2 + 1, il);
    ip[il] = '\0';
    struct signhost sh = {.form = SIGNHOST_HOP, .kid = (uint8_t)kid, .time = ts, .keep = m};
    if (memchr(ip, '\0', il) || addr_parse(ip, -1, &sh.client) || sh.client.port == 0)
        return -1;
    for (size_t i = 0; i < SIGNHOST_TAG_LEN; i++) {
        int hi = hex_val(f[tag_at + 2 * i]), lo = hex_val(f[tag_at + 2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        sh.tag[i] = (uint8_t)(hi << 4 | lo);
    }
    *out = sh;
    return 1;
}

int signhost_parse_token(const char *h, size_t n, struct signhost *out)
{
    if (n < SIGNHOST_TOKEN_LEN + 2 || h[SIGNHOST_TOKEN_LEN] != '.' || h[9] != '-')
        return 0;
    int v[SIGNHOST_TOKEN_LEN];
    for (size_t i = 0; i < SIGNHOST_TOKEN_LEN; i++)
        if (i != 9 && (v[i] = b32_val(h[i])) < 0)
            return 0;
    struct signhost sh = {
        .form = SIGNHOST_TOKEN, .kid = (uint8_t)v[0], .keep = SIGNHOST_TOKEN_LEN + 1};
    for (size_t i = 1; i <= 8; i++)
        sh.time = sh.time << 5 | (uint64_t)v[i];
    /* 26 characters, 130 bits: the 16 bytes of the tag, then 2 zero bits. */
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t o = 0;
    for (size_t i = 10; i < SIGNHOST_TOKEN_LEN; i++) {
        acc = acc << 5 | (uint32_t)v[i];
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            sh.tag[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (o != SIGNHOST_TAG_LEN || acc != 0)
        return 0;
    *out = sh;
    return 1;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

size_t signhost_message(const struct signhost *sh, const char *host, size_t host_len, uint8_t *out,
                        size_t cap)
{
    if (host_len > 255 || cap < SIGNHOST_MSG_MAX)
        return 0;
    uint8_t *p = out;
    memcpy(p, msg_version, sizeof(msg_version));
    p += sizeof(msg_version);
    *p++ = (uint8_t)sh->form;
    *p++ = sh->kid;
    p = put_u64(p, sh->time);
    *p++ = (uint8_t)host_len;
    memcpy(p, host, host_len);
    p += host_len;
    if (sh->form == SIGNHOST_HOP) {
        struct addr c = sh->client;
        addr_unmap(&c);
        *p++ = c.family == AF_INET6 ? 6 : 4;
        memcpy(p, c.ip, 16);
        p += 16;
        *p++ = (uint8_t)(c.port >> 8);
        *p++ = (uint8_t)c.port;
    }
    return (size_t)(p - out);
}

void signhost_format_token(uint8_t kid, uint64_t expiry, const uint8_t tag[SIGNHOST_TAG_LEN],
                           char *out)
{
    out[0] = b32[kid & 31];
    for (int i = 0; i < 8; i++)
        out[1 + i] = b32[(expiry >> (5 * (7 - i))) & 31];
    out[9] = '-';
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t o = 10;
    for (size_t i = 0; i < SIGNHOST_TAG_LEN; i++) {
        acc = acc << 8 | tag[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            out[o++] = b32[(acc >> bits) & 31];
        }
        acc &= (1u << bits) - 1;
    }
    out[o++] = b32[(acc << (5 - bits)) & 31]; /* the last 3 bits and 2 zero bits */
    out[o] = '\0';
}

size_t signhost_format_hop(const struct signhost *sh, uint8_t *out, size_t cap)
{
    char ip[ADDR_STRLEN], tag[2 * SIGNHOST_TAG_LEN + 1];
    addr_format(&sh->client, ip, sizeof(ip));
    for (size_t i = 0; i < SIGNHOST_TAG_LEN; i++)
        snprintf(tag + 2 * i, 3, "%02x", sh->tag[i]);
    char field[SIGNHOST_HOP_MAX];
    int n = snprintf(field, sizeof(field), "%u.%llu.%s.%s", (unsigned)sh->kid,
                     (unsigned long long)sh->time, ip, tag);
    if (n < 0 || (size_t)n + HOP_MARK_LEN > cap || (size_t)n + HOP_MARK_LEN > SIGNHOST_HOP_MAX)
        return 0;
    memcpy(out, hop_mark, HOP_MARK_LEN);
    memcpy(out + HOP_MARK_LEN, field, (size_t)n);
    return (size_t)n + HOP_MARK_LEN;
}
