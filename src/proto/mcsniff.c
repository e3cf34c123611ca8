/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcsniff.c: the Minecraft Java first-message sniffer of mcsniff.h. Each
 * call rescans the prefix from its first byte: the frame header (length,
 * packet id, cap) is checked as soon as its bytes are there, the handshake's
 * fields once the whole frame is there (at most MC_FRAME_MAX bytes, so a
 * rescan is cheap and the verdict cannot depend on the split). Pure: no
 * I/O, no allocation, no logging; this parser sits in proto/, edge mode's
 * I/O in relay/front_edge.c.
 */
#include "proto/mcsniff.h"

#include <string.h>

int mc_varint_get(const uint8_t *p, size_t avail, uint32_t *v)
{
    uint32_t acc = 0;
    for (unsigned i = 0; i < MC_VARINT_MAX; i++) {
        if (i >= avail)
            return 0;
        uint8_t b = p[i];
        if (i == MC_VARINT_MAX - 1 && (b & 0xf0))
            return MC_E_VARINT;
        acc |= (uint32_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = acc;
            return (int)i + 1;
        }
    }
    return MC_E_VARINT; /* not reached: the 5th byte returns above */
}

/* A VarInt inside a complete frame: running out is MC_E_FRAME. */
static int field_varint(const uint8_t *p, size_t avail, uint32_t *v)
{
    int n = mc_varint_get(p, avail, v);
    return n == 0 ? MC_E_FRAME : n;
}

/* RFC 3629 UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint8_t lo = 0x80, hi = 0xbf;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            lo = c == 0xe0 ? 0xa0 : 0x80;
            hi = c == 0xed ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            lo = c == 0xf0 ? 0x90 : 0x80;
            hi = c == 0xf4 ? 0x8f : 0xbf;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t j = 2; j <= k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xbf)
                return false;
        i += k + 1;
    }
    return true;
}

static bool field_is(const uint8_t *f, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n == l && memcmp(f, lit, l) == 0;
}

/* BungeeCord writes the client's address as text: IPv4, or IPv6 (maybe
 * with a %scope). */
static bool field_is_ip(const uint8_t *f, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = f[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (!hex && c != '.' && c != ':' && c != '%')
            return false;
    }
    return true;
}

static bool field_is_uuid(const uint8_t *f, size_t n)
{
    if (n != 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = f[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
    }
    return true;
}

/* The \0-separated fields after the host field a[0..n) (n > hr). */
static unsigned classify_fields(const uint8_t *a, size_t n, size_t start)
{
    unsigned bits = 0;
    size_t k = 0; /* field number after the host field */
    bool bungee = false, skip_mac = false;
    size_t i = start;
    while (i < n) {
        const uint8_t *nul = memchr(a + i, '\0', n - i);
        size_t e = nul ? (size_t)(nul - a) : n;
        const uint8_t *f = a + i;
        size_t fl = e - i;
        k++;
        if (skip_mac) {
            skip_mac = false;
        } else if (field_is(f, fl, "FML")) {
            bits |= MC_SUF_FML;
        } else if (field_is(f, fl, "FML2")) {
            bits |= MC_SUF_FML2;
        } else if (field_is(f, fl, "FML3")) {
            bits |= MC_SUF_FML3;
        } else if (fl >= 5 && memcmp(f, "FORGE", 5) == 0) {
            bits |= MC_SUF_FORGE;
        } else if (field_is(f, fl, "shield")) {
            bits |= MC_SUF_SHIELD;
            skip_mac = true;
        } else if (k == 1 && field_is_ip(f, fl) && nul && e + 1 + 32 <= n &&
                   field_is_uuid(a + e + 1, 32) && (e + 33 == n || a[e + 33] == '\0')) {
            bits |= MC_SUF_BUNGEE;
            bungee = true;
        } else if (fl > 0 && !bungee) {
            bits |= MC_SUF_OTHER; /* after BungeeCord's fields: its uuid and properties */
        }
        i = e + 1;
    }
    return bits;
}

/* Split the address a[0..n) into host and suffixes, and check the host. */
static int read_address(const uint8_t *a, size_t n, struct mc_hello *h)
{
    if (!utf8_valid(a, n))
        return MC_E_UTF8;
    size_t hr = 0;
    while (hr < n && a[hr] != '\0' && !(n - hr >= 3 && memcmp(a + hr, "///", 3) == 0))
        hr++;
    if (hr == 0 || hr > HOSTNAME_MAX)
        return MC_E_HOST_LEN;
    h->host_len = hostname_canon(a, hr, h->host);
    if (h->host_len == 0)
        return MC_E_HOST;
    h->host_raw_len = hr;
    h->suffixes = 0;
    if (hr == n)
        return 0;
    size_t start = hr + 1;
    if (a[hr] != '\0') {
        h->suffixes |= MC_SUF_REALIP;
        const uint8_t *nul = memchr(a + hr, '\0', n - hr);
        if (!nul)
            return 0;
        start = (size_t)(nul - a) + 1;
    }
    h->suffixes |= classify_fields(a, n, start);
    if (h->suffixes == 0)
        h->suffixes = MC_SUF_OTHER; /* only empty fields ("host\0"): still a suffix */
    return 0;
}

/* The handshake's fields in the complete frame p[0..end), p at the byte
 * after the packet id. */
static int read_handshake(const uint8_t *buf, size_t pos, size_t end, struct mc_hello *h)
{
    uint32_t proto, alen, intent;
    int n = field_varint(buf + pos, end - pos, &proto);
    if (n < 0)
        return n;
    pos += (size_t)n;
    n = field_varint(buf + pos, end - pos, &alen);
    if (n < 0)
        return n;
    pos += (size_t)n;
    if (alen == 0 || alen > 0x7fffffffu)
        return MC_E_HOST_LEN;
    if (alen > end - pos)
        return MC_E_FRAME;
    h->addr_off = pos;
    h->addr_len = alen;
    int rc = read_address(buf + pos, alen, h);
    if (rc < 0)
        return rc;
    pos += alen;
    if (end - pos < 2)
        return MC_E_FRAME;
    h->port = (uint16_t)(buf[pos] << 8 | buf[pos + 1]);
    pos += 2;
    n = field_varint(buf + pos, end - pos, &intent);
    if (n < 0)
        return n;
    pos += (size_t)n;
    if (intent < 1 || intent > 3)
        return MC_E_INTENT;
    if (pos != end)
        return MC_E_FRAME;
    h->protocol = (int32_t)proto;
    h->intent = (int32_t)intent;
    return 0;
}

static int sniff_modern(const uint8_t *buf, size_t len, size_t cap, struct mc_hello *out)
{
    uint32_t flen = 0;
    size_t vl = 0;
    /* The length VarInt byte by byte, so an over-cap value is refused
     * before its last byte arrives: later bytes only add to it. */
    for (;;) {
        if (vl >= len)
            return MC_NEED_MORE;
        if (vl == MC_VARINT_MAX - 1 && (buf[vl] & 0xf0))
            return MC_E_VARINT;
        flen |= (uint32_t)(buf[vl] & 0x7f) << (7 * vl);
        if (flen > cap)
            return MC_E_TOO_BIG;
        if (!(buf[vl++] & 0x80))
            break;
    }
    if (flen == 0)
        return MC_E_FRAME;
    size_t total = vl + flen;
    if (total > cap)
        return MC_E_TOO_BIG;
    if (len > vl && buf[vl] != 0x00)
        return MC_E_PACKET_ID;
    if (len < total)
        return MC_NEED_MORE;
    struct mc_hello h;
    memset(&h, 0, sizeof(h));
    int rc = read_handshake(buf, vl + 1, total, &h);
    if (rc < 0)
        return rc;
    h.kind = MC_MODERN;
    h.msg_len = total;
    *out = h;
    return MC_OK;
}

/* 1.6: FE 01 FA, u16 11, "MC|PingHost" in UTF-16BE, u16 data length, u8
 * protocol, u16 host length (code units), UTF-16BE host, i32 port. */
#define L16_NAME_OFF 5
#define L16_DLEN_OFF 27
#define L16_HOST_OFF 32

static const uint8_t ping_host_name[] = {0x00, 'M', 0x00, 'C', 0x00, '|', 0x00, 'P',
                                         0x00, 'i', 0x00, 'n', 0x00, 'g', 0x00, 'H',
                                         0x00, 'o', 0x00, 's', 0x00, 't'};

/* The 1.6 ping's host and port, from the complete message. */
static int read_legacy16(const uint8_t *buf, size_t hlen, struct mc_hello *h)
{
    uint8_t ascii[HOSTNAME_MAX];
    for (size_t i = 0; i < hlen; i++) {
        const uint8_t *u = buf + L16_HOST_OFF + 2 * i;
        if (u[0] != 0 || u[1] >= 0x80)
            return MC_E_HOST;
        ascii[i] = u[1];
    }
    h->host_len = hostname_canon(ascii, hlen, h->host);
    if (h->host_len == 0)
        return MC_E_HOST;
    const uint8_t *pp = buf + L16_HOST_OFF + 2 * hlen;
    uint32_t port = (uint32_t)pp[0] << 24 | (uint32_t)pp[1] << 16 | (uint32_t)pp[2] << 8 | pp[3];
    if (port > 0xffff)
        return MC_E_LEGACY;
    h->port = (uint16_t)port;
    h->protocol = buf[29];
    h->addr_off = L16_HOST_OFF;
    h->addr_len = 2 * hlen;
    h->host_raw_len = 2 * hlen;
    return 0;
}

static int sniff_legacy16(const uint8_t *buf, size_t len, size_t cap, struct mc_hello *out)
{
    if (len >= 4 && buf[3] != 0x00)
        return MC_E_LEGACY;
    if (len >= 5 && buf[4] != 11)
        return MC_E_LEGACY;
    for (size_t i = L16_NAME_OFF; i < len && i < L16_DLEN_OFF; i++)
        if (buf[i] != ping_host_name[i - L16_NAME_OFF])
            return MC_E_LEGACY;
    if (len < L16_DLEN_OFF + 2)
        return MC_NEED_MORE;
    size_t dlen = (size_t)buf[L16_DLEN_OFF] << 8 | buf[L16_DLEN_OFF + 1];
    size_t total = L16_DLEN_OFF + 2 + dlen;
    if (total > cap)
        return MC_E_TOO_BIG;
    if (len < L16_HOST_OFF)
        return MC_NEED_MORE;
    size_t hlen = (size_t)buf[30] << 8 | buf[31];
    if (hlen == 0 || hlen > HOSTNAME_MAX)
        return MC_E_HOST_LEN;
    if (dlen != 7 + 2 * hlen)
        return MC_E_LEGACY;
    if (len < total)
        return MC_NEED_MORE;
    struct mc_hello h;
    memset(&h, 0, sizeof(h));
    int rc = read_legacy16(buf, hlen, &h);
    if (rc < 0)
        return rc;
    h.kind = MC_LEGACY_16;
    h.msg_len = total;
    *out = h;
    return MC_LEGACY;
}

static int legacy_bare(enum mc_kind kind, size_t n, struct mc_hello *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    out->msg_len = n;
    return MC_LEGACY;
}

int mc_sniff(const uint8_t *buf, size_t len, size_t max_frame, bool idle, struct mc_hello *out)
{
    size_t cap = max_frame == 0 ? MC_FRAME_DEFAULT : max_frame;
    if (cap > MC_FRAME_MAX)
        cap = MC_FRAME_MAX;
    if (len == 0)
        return MC_NEED_MORE;
    if (buf[0] == 0xfe) {
        if (len == 1)
            return idle ? legacy_bare(MC_LEGACY_FE, 1, out) : MC_NEED_MORE;
        if (buf[1] == 0x01) {
            if (len == 2)
                return idle ? legacy_bare(MC_LEGACY_FE01, 2, out) : MC_NEED_MORE;
            if (buf[2] == 0xfa)
                return sniff_legacy16(buf, len, cap, out);
            if (buf[2] != 0x00)
                return MC_E_LEGACY;
        }
    }
    return sniff_modern(buf, len, cap, out);
}

const char *mc_strerror(int code)
{
    switch (code) {
    case MC_NEED_MORE:
        return "incomplete Minecraft first message";
    case MC_OK:
        return "Minecraft handshake";
    case MC_LEGACY:
        return "Minecraft legacy ping";
    case MC_E_VARINT:
        return "bad Minecraft VarInt";
    case MC_E_TOO_BIG:
        return "Minecraft first message over the cap";
    case MC_E_FRAME:
        return "bad Minecraft frame length";
    case MC_E_PACKET_ID:
        return "Minecraft first packet is not a handshake";
    case MC_E_HOST_LEN:
        return "bad Minecraft host length";
    case MC_E_UTF8:
        return "Minecraft address is not UTF-8";
    case MC_E_HOST:
        return "Minecraft host is not an LDH name";
    case MC_E_INTENT:
        return "bad Minecraft intent";
    case MC_E_LEGACY:
        return "bad Minecraft legacy ping";
    default:
        return "unknown Minecraft sniffer error";
    }
}
