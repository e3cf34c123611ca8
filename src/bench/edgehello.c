/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edgehello.c: the first messages `ferry bench edge` sends (edgehello.h).
 * A ClientHello is written as a browser writes one (TLS 1.3 with 1.2
 * offered, ECDHE suites, the usual extensions, a key share per group
 * offered first), then padded (RFC 7685) to the size asked for and cut
 * into records. Everything is written through one bounded cursor: a write
 * past the end marks it spoiled and the result is 0.
 */
#include "bench/edgehello.h"

#include <stdbool.h>
#include <string.h>

#include "proto/hostname.h"

/* A bounded writer. */
struct cur {
    uint8_t *p;
    size_t n, cap;
    bool bad;
};

static void put(struct cur *c, const void *b, size_t n)
{
    if (n == 0)
        return;
    if (c->bad || n > c->cap - c->n) {
        c->bad = true;
        return;
    }
    memcpy(c->p + c->n, b, n);
    c->n += n;
}

static void put8(struct cur *c, unsigned v)
{
    uint8_t b = (uint8_t)v;
    put(c, &b, 1);
}

static void put16(struct cur *c, unsigned v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    put(c, b, 2);
}

/* n bytes of a fixed pattern (random, session id, key shares). */
static void put_fill(struct cur *c, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n && !c->bad; i++)
        put8(c, (uint8_t)(seed + i * 37u));
}

/* Start a 16-bit length-prefixed block; its offset, for end16(). */
static size_t begin16(struct cur *c)
{
    size_t at = c->n;
    put16(c, 0);
    return at;
}

static void end16(struct cur *c, size_t at)
{
    if (c->bad)
        return;
    size_t len = c->n - at - 2;
    if (len > 0xffff) {
        c->bad = true;
        return;
    }
    c->p[at] = (uint8_t)(len >> 8);
    c->p[at + 1] = (uint8_t)len;
}

/* One extension of type t with data d[0..n). */
static void ext(struct cur *c, unsigned t, const void *d, size_t n)
{
    put16(c, t);
    put16(c, (unsigned)n);
    put(c, d, n);
}

static void ext_key_share(struct cur *c, int pq)
{
    put16(c, 51);
    size_t e = begin16(c), list = begin16(c);
    if (pq) {
        put16(c, 0x11ec); /* X25519MLKEM768: 1184-byte ML-KEM key + 32 */
        put16(c, 1216);
        put_fill(c, 1216, 0x5c);
    }
    put16(c, 0x001d); /* x25519 */
    put16(c, 32);
    put_fill(c, 32, 0xa7);
    end16(c, list);
    end16(c, e);
}

static void ext_server_name(struct cur *c, const char *sni, size_t len)
{
    put16(c, 0);
    size_t e = begin16(c), list = begin16(c);
    put8(c, 0); /* host_name */
    put16(c, (unsigned)len);
    put(c, sni, len);
    end16(c, list);
    end16(c, e);
}

/* The extensions but padding; the server name after the key share. */
static void extensions(struct cur *c, const char *sni, size_t len, int pq)
{
    static const uint8_t groups_pq[] = {0, 8, 0x11, 0xec, 0, 0x1d, 0, 0x17, 0, 0x18};
    static const uint8_t groups[] = {0, 6, 0, 0x1d, 0, 0x17, 0, 0x18};
    static const uint8_t alpn[] = {0, 12, 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    static const uint8_t sigalgs[] = {0, 16, 4, 3, 8, 4, 4, 1, 5, 3, 8, 5, 5, 1, 8, 6, 6, 1};
    static const uint8_t versions[] = {4, 3, 4, 3, 3};
    static const uint8_t status[] = {1, 0, 0, 0, 0};
    ext(c, 23, NULL, 0);     /* extended_master_secret */
    ext(c, 0xff01, "\0", 1); /* renegotiation_info */
    if (pq)
        ext(c, 10, groups_pq, sizeof(groups_pq)); /* supported_groups */
    else
        ext(c, 10, groups, sizeof(groups));
    ext(c, 11, "\1\0", 2);                /* ec_point_formats: uncompressed */
    ext(c, 35, NULL, 0);                  /* session_ticket */
    ext(c, 16, alpn, sizeof(alpn));       /* ALPN h2, http/1.1 */
    ext(c, 5, status, sizeof(status));    /* status_request (OCSP) */
    ext(c, 13, sigalgs, sizeof(sigalgs)); /* signature_algorithms */
    ext(c, 18, NULL, 0);                  /* signed_certificate_timestamp */
    ext_key_share(c, pq);
    ext_server_name(c, sni, len);
    ext(c, 45, "\1\1", 2);                  /* psk_key_exchange_modes: psk_dhe_ke */
    ext(c, 43, versions, sizeof(versions)); /* supported_versions: 1.3, 1.2 */
    ext(c, 27, "\2\0\2", 3);                /* compress_certificate: brotli */
}

/* The handshake message (type, 24-bit length, body) with pad bytes of
 * padding extension (none when pad < 0). Its length, or 0. */
static size_t handshake(uint8_t *out, size_t cap, const char *sni, size_t len, int pq, long pad)
{
    static const uint16_t suites[] = {0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f,
                                      0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
                                      0xc014, 0x009c, 0x009d, 0x002f, 0x0035};
    struct cur c = {out, 0, cap, false};
    put8(&c, 1); /* ClientHello */
    put8(&c, 0);
    size_t hl = begin16(&c); /* the length's low 16 bits (< 64 KiB) */
    put16(&c, 0x0303);
    put_fill(&c, 32, 0x11); /* random */
    put8(&c, 32);
    put_fill(&c, 32, 0x33); /* legacy_session_id (middlebox compatibility) */
    put16(&c, sizeof(suites));
    for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
        put16(&c, suites[i]);
    put8(&c, 1); /* compression: null */
    put8(&c, 0);
    size_t el = begin16(&c);
    extensions(&c, sni, len, pq);
    if (pad >= 0) {
        put16(&c, 21);
        put16(&c, (unsigned)pad);
        for (long i = 0; i < pad; i++)
            put8(&c, 0);
    }
    end16(&c, el);
    end16(&c, hl);
    return c.bad ? 0 : c.n;
}

static void record_header(uint8_t *p, size_t len)
{
    p[0] = 0x16; /* handshake */
    p[1] = 3;
    p[2] = 1; /* record version 0x0301, as clients send */
    p[3] = (uint8_t)(len >> 8);
    p[4] = (uint8_t)len;
}

size_t edgehello_tls(uint8_t *out, size_t cap, const char *sni, size_t total, unsigned records,
                     int pq)
{
    size_t len = sni ? strnlen(sni, HOSTNAME_MAX + 1) : 0;
    if (len == 0 || len > HOSTNAME_MAX || (records != 1 && records != 2) || total > cap ||
        total > EDGEHELLO_MAX || total < 5 * records)
        return 0;
    size_t want = total - 5 * records; /* the handshake message */
    size_t base = handshake(out, cap, sni, len, pq, -1);
    if (base == 0 || (want != base && want < base + 4))
        return 0;
    if (handshake(out + 5, cap - 5, sni, len, pq, want == base ? -1 : (long)(want - base - 4)) !=
        want)
        return 0;
    if (records == 1) {
        record_header(out, want);
        return total;
    }
    size_t first = want / 2;
    memmove(out + 5 + first + 5, out + 5 + first, want - first);
    record_header(out, first);
    record_header(out + 5 + first, want - first);
    return total;
}

static void put_varint(struct cur *c, uint32_t v)
{
    while (v >= 0x80) {
        put8(c, (v & 0x7f) | 0x80);
        v >>= 7;
    }
    put8(c, v);
}

/* A frame: its body in a scratch buffer, then length and body. */
static void frame(struct cur *c, const uint8_t *body, size_t n)
{
    put_varint(c, (uint32_t)n);
    put(c, body, n);
}

size_t edgehello_mc(uint8_t *out, size_t cap, const char *host, uint16_t port, const char *name)
{
    size_t hl = host ? strnlen(host, 256) : 0, nl = name ? strnlen(name, 17) : 0;
    if (hl == 0 || hl > 255 || nl == 0 || nl > 16)
        return 0;
    uint8_t body[300];
    struct cur b = {body, 0, sizeof(body), false};
    put8(&b, 0);         /* packet id: handshake */
    put_varint(&b, 765); /* protocol version (1.20.4) */
    put_varint(&b, (uint32_t)hl);
    put(&b, host, hl);
    put16(&b, port);
    put8(&b, 2); /* next state: login */
    struct cur c = {out, 0, cap, false};
    frame(&c, body, b.n);
    b.n = 0;
    put8(&b, 0); /* packet id: Login Start */
    put_varint(&b, (uint32_t)nl);
    put(&b, name, nl);
    put_fill(&b, 16, 0x42); /* the player's UUID */
    frame(&c, body, b.n);
    return c.bad || b.bad ? 0 : c.n;
}
