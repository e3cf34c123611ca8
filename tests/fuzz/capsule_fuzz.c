/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capsule_fuzz.c: libFuzzer harness for proto/capsule: QUIC varints,
 * capsules over a byte stream (RFC 9297 section 3.2) and DATAGRAM capsules
 * (RFC 9298 section 5), read and written.
 *
 * The first input byte picks the caller's cap (a small one, so the "too
 * long" path is reached, or a large one); the rest is a stream parsed
 * capsule by capsule as a request stream would be. Each verdict is checked
 * against one worked out here from the varint sizes alone; no parse claims
 * more than it was given; every shorter prefix of a parsed capsule is
 * "need more" (fed in two chunks, a stream reader sees the same capsules);
 * a parsed capsule re-encoded minimally parses to the same type, length and
 * payload; a DATAGRAM capsule's context id and payload split as the bytes
 * say, and one with context 0 written by capsule_write_datagram parses
 * back to the same payload. The whole input is also framed as a UDP
 * payload: the writer's output always parses back, its size is what
 * capsule_datagram_size says, and a buffer one byte short is left
 * untouched. Prefixes are copied to the end of a heap block so ASan sees
 * any read past them. Any violation traps. Linked with only src/proto,
 * util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/capsule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* Prefixes longer than this are not all tried (time), only the last one. */
#define PREFIX_MAX 64

/* The verdict on the stream p[0..len) with cap, from the wire format. */
static ssize_t model(const uint8_t *p, size_t len, size_t cap)
{
    if (len < 1)
        return 0;
    size_t a = (size_t)1 << (p[0] >> 6);
    if (len < a + 1)
        return 0;
    size_t b = (size_t)1 << (p[a] >> 6);
    if (len < a + b)
        return 0;
    uint64_t plen = p[a] & 0x3f;
    for (size_t i = 1; i < b; i++)
        plen = plen << 8 | p[a + i];
    if (plen > cap)
        return CAPSULE_E_TOO_LONG;
    if (len - a - b < plen)
        return 0;
    return (ssize_t)(a + b + plen);
}

/* Parse data[0..k) from the end of a heap block of exactly k bytes. */
static ssize_t parse_tail(const uint8_t *data, size_t k, size_t cap, struct capsule *c)
{
    uint8_t *blk = malloc(k ? k : 1);
    if (!blk)
        return 0; /* no verdict to check; callers skip 0 */
    if (k)
        memcpy(blk, data, k);
    ssize_t rc = capsule_parse(blk, k, cap, c);
    free(blk);
    return rc;
}

/* A parsed capsule, re-encoded minimally, parses to the same values. */
static void check_reencode(const struct capsule *c, ssize_t rc, size_t cap)
{
    size_t tlen = capsule_varint_len(c->type), llen = capsule_varint_len(c->len);
    CHECK(tlen && llen && tlen + llen + c->len <= (size_t)rc);
    uint8_t *out = malloc(tlen + llen + c->len);
    if (!out)
        return;
    CHECK(capsule_varint_put(out, tlen, c->type) == tlen);
    CHECK(capsule_varint_put(out + tlen, llen, c->len) == llen);
    if (c->len)
        memcpy(out + tlen + llen, c->payload, c->len);
    struct capsule c2;
    CHECK(capsule_parse(out, tlen + llen + c->len, cap, &c2) == (ssize_t)(tlen + llen + c->len));
    CHECK(c2.type == c->type && c2.len == c->len);
    CHECK(c->len == 0 || memcmp(c2.payload, c->payload, c->len) == 0);
    free(out);
}

/* Frame p[0..len) as a DATAGRAM capsule and read it back. */
static void check_writer(const uint8_t *p, size_t len)
{
    size_t need = capsule_datagram_size(len);
    CHECK(need >= len + 3 && need <= len + CAPSULE_DATAGRAM_HDR_MAX);
    uint8_t *out = malloc(need + 1);
    if (!out)
        return;
    /* One byte short: the size, and nothing written. */
    memset(out, 0xa5, need + 1);
    CHECK(capsule_write_datagram(out, need - 1, p, len) == need);
    for (size_t i = 0; i < need + 1; i++)
        CHECK(out[i] == 0xa5);
    CHECK(capsule_write_datagram(out, need, p, len) == need);
    CHECK(out[need] == 0xa5);
    struct capsule c;
    struct capsule_datagram d;
    CHECK(capsule_parse(out, need, len + 1, &c) == (ssize_t)need);
    CHECK(capsule_parse(out, need, len, &c) == CAPSULE_E_TOO_LONG);
    CHECK(c.type == CAPSULE_TYPE_DATAGRAM && c.len == len + 1);
    CHECK(capsule_datagram_parse(&c, &d) == 0);
    CHECK(d.context_id == CAPSULE_CONTEXT_UDP && d.len == len);
    CHECK(len == 0 || memcmp(d.payload, p, len) == 0);
    CHECK(capsule_write_datagram_header(out, need, len) == need - len);
    free(out);
}

static void check_datagram(const struct capsule *c)
{
    struct capsule_datagram d;
    int rc = capsule_datagram_parse(c, &d);
    if (c->type != CAPSULE_TYPE_DATAGRAM) {
        CHECK(rc == CAPSULE_E_TYPE);
        return;
    }
    uint64_t id;
    ssize_t n = capsule_varint_get(c->payload, c->len, &id);
    if (n == 0) {
        CHECK(rc == CAPSULE_E_DATAGRAM);
        return;
    }
    CHECK(rc == 0 && d.context_id == id);
    CHECK(d.payload == c->payload + n && d.len == c->len - (size_t)n);
    if (d.context_id == CAPSULE_CONTEXT_UDP)
        check_writer(d.payload, d.len);
}

/* Walk the stream capsule by capsule. */
static void walk(const uint8_t *s, size_t len, size_t cap)
{
    size_t off = 0;
    for (;;) {
        struct capsule c;
        size_t rest = len - off;
        ssize_t want = model(s + off, rest, cap);
        /* The stream ends where the input block ends: ASan sees past it. */
        ssize_t rc = capsule_parse(s + off, rest, cap, &c);
        CHECK(rc == want);
        CHECK(rc <= (ssize_t)rest);
        if (rc <= 0)
            return;
        CHECK(c.len <= cap);
        /* Every shorter prefix: need more (the length is within cap). */
        size_t lim = (size_t)rc < PREFIX_MAX ? (size_t)rc : PREFIX_MAX;
        struct capsule p;
        for (size_t k = 0; k < lim; k++)
            CHECK(parse_tail(s + off, k, cap, &p) == 0);
        CHECK(parse_tail(s + off, (size_t)rc - 1, cap, &p) == 0);
        check_reencode(&c, rc, cap);
        check_datagram(&c);
        off += (size_t)rc;
    }
}

/* A varint read from the front of the input: its size and value agree
 * with what put writes when the encoding is minimal. */
static void check_varint(const uint8_t *data, size_t size)
{
    uint64_t v;
    ssize_t n = capsule_varint_get(data, size, &v);
    if (n == 0) {
        CHECK(size < ((size_t)1 << (data[0] >> 6)) || size == 0);
        return;
    }
    CHECK(v <= CAPSULE_VARINT_MAX);
    uint8_t out[8];
    size_t m = capsule_varint_put(out, sizeof(out), v);
    CHECK(m == capsule_varint_len(v) && m <= (size_t)n);
    if (m == (size_t)n)
        CHECK(memcmp(out, data, m) == 0);
    uint64_t w;
    CHECK(capsule_varint_get(out, m, &w) == (ssize_t)m && w == v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    check_varint(data, size);
    /* Low bit 0: a small cap (0..127), else a large one. */
    size_t cap = (data[0] & 1) ? 65535 : (size_t)(data[0] >> 1);
    walk(data + 1, size - 1, cap);
    check_writer(data, size);
    return 0;
}
