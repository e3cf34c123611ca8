/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capsule.c: QUIC varints (RFC 9000 section 16), capsules over an HTTP
 * request stream (RFC 9297 section 3.2) and the DATAGRAM capsule carrying
 * UDP payloads for CONNECT-UDP (RFC 9298 section 5). This room only reads
 * and writes bytes the caller owns: it never allocates, sleeps, logs or
 * keeps state, and it never reads past the length it is given.
 */
#include "proto/capsule.h"

#include <stdint.h>
#include <string.h>

ssize_t capsule_varint_get(const uint8_t *p, size_t len, uint64_t *v)
{
    if (len == 0)
        return 0;
    /* The two high bits of the first byte give the size: 1 << bits. */
    size_t n = (size_t)1 << (p[0] >> 6);
    if (len < n)
        return 0;
    uint64_t x = p[0] & 0x3f;
    for (size_t i = 1; i < n; i++)
        x = (x << 8) | p[i];
    *v = x;
    return (ssize_t)n;
}

size_t capsule_varint_len(uint64_t v)
{
    if (v <= 0x3f)
        return 1;
    if (v <= 0x3fff)
        return 2;
    if (v <= 0x3fffffff)
        return 4;
    if (v <= CAPSULE_VARINT_MAX)
        return 8;
    return 0;
}

size_t capsule_varint_put(uint8_t *out, size_t cap, uint64_t v)
{
    size_t n = capsule_varint_len(v);
    if (n == 0 || cap < n)
        return 0;
    for (size_t i = n; i-- > 0;) {
        out[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
    /* The size prefix: 00, 01, 10, 11 for 1, 2, 4, 8 bytes. */
    static const uint8_t prefix[9] = {[1] = 0x00, [2] = 0x40, [4] = 0x80, [8] = 0xc0};
    out[0] |= prefix[n];
    return n;
}

ssize_t capsule_parse(const uint8_t *p, size_t len, size_t cap, struct capsule *out)
{
    uint64_t type, plen;
    ssize_t a = capsule_varint_get(p, len, &type);
    if (a == 0)
        return 0;
    ssize_t b = capsule_varint_get(p + a, len - (size_t)a, &plen);
    if (b == 0)
        return 0;
    /* Judged before the payload arrives, so a peer cannot make us wait for
     * (and buffer) more than cap. */
    if (plen > cap)
        return CAPSULE_E_TOO_LONG;
    size_t hdr = (size_t)a + (size_t)b;
    if (len - hdr < plen)
        return 0;
    out->type = type;
    out->payload = p + hdr;
    out->len = (size_t)plen;
    return (ssize_t)(hdr + (size_t)plen);
}

int capsule_datagram_parse(const struct capsule *c, struct capsule_datagram *out)
{
    if (c->type != CAPSULE_TYPE_DATAGRAM)
        return CAPSULE_E_TYPE;
    uint64_t id;
    /* The capsule is whole: a context id cut short can never complete. */
    ssize_t n = capsule_varint_get(c->payload, c->len, &id);
    if (n == 0)
        return CAPSULE_E_DATAGRAM;
    out->context_id = id;
    out->payload = c->payload + n;
    out->len = c->len - (size_t)n;
    return 0;
}

size_t capsule_datagram_size(size_t len)
{
    /* The capsule's length covers the context id (1 byte for id 0). */
    if ((uint64_t)len >= CAPSULE_VARINT_MAX)
        return SIZE_MAX;
    size_t hdr = 1 + capsule_varint_len((uint64_t)len + 1) + 1;
    if (len > SIZE_MAX - hdr)
        return SIZE_MAX;
    return hdr + len;
}

size_t capsule_write_datagram_header(uint8_t *out, size_t cap, size_t len)
{
    if ((uint64_t)len >= CAPSULE_VARINT_MAX)
        return 0;
    size_t n = 1 + capsule_varint_len((uint64_t)len + 1) + 1;
    if (cap < n)
        return 0;
    out[0] = CAPSULE_TYPE_DATAGRAM;
    size_t m = capsule_varint_put(out + 1, cap - 1, (uint64_t)len + 1);
    out[1 + m] = CAPSULE_CONTEXT_UDP;
    return n;
}

size_t capsule_write_datagram(uint8_t *out, size_t cap, const uint8_t *p, size_t len)
{
    size_t need = capsule_datagram_size(len);
    if (need > cap)
        return need;
    /* Move the payload first: it may sit where the header goes. */
    size_t hdr = need - len;
    if (len)
        memmove(out + hdr, p, len);
    capsule_write_datagram_header(out, cap, len);
    return need;
}
