/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sniff_micro.c: micro-benchmark of the edge-mode sniffers (proto/mcsniff,
 * proto/tlshello): nanoseconds per parse of a vanilla and a Forge Minecraft
 * handshake, guard's signed host, a 1.6 legacy ping, a 333-byte OpenSSL
 * ClientHello, and a ~1.8 KB post-quantum-sized ClientHello in two records
 * (also fed as two segments, i.e. two calls). Reference figures (EDGE.md):
 * 160 ns vanilla, 180 ns Forge handshake parse. Built and run by
 * `make micro-bench`, never by `make test`: speed is measured, not
 * asserted. Each figure is the median of 7 runs of about 50 ms each.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/mcsniff.h"
#include "proto/tlshello.h"

/* openssl s_client -servername x.example -alpn h2,http/1.1 (OpenSSL 3.0),
 * the fixture of tests/unit/proto/tlshello_test.c. */
static const uint8_t openssl_hello[] = {
    0x16, 0x03, 0x01, 0x01, 0x48, 0x01, 0x00, 0x01, 0x44, 0x03, 0x03, 0xd2, 0xba, 0x0f, 0x2e, 0x63,
    0xbe, 0x84, 0x57, 0x4f, 0x36, 0x4c, 0x57, 0x92, 0x23, 0xdf, 0xce, 0x74, 0xed, 0xa8, 0xf3, 0xc9,
    0xce, 0x38, 0x56, 0xbd, 0x4a, 0xbb, 0xee, 0xcd, 0x43, 0xcb, 0x64, 0x20, 0xdb, 0x86, 0x00, 0xa4,
    0x63, 0x0c, 0xd1, 0xba, 0x82, 0xff, 0x4f, 0x9a, 0x9d, 0xd9, 0xbf, 0x9b, 0xb0, 0xc9, 0xe0, 0xf1,
    0x6f, 0xb0, 0x8d, 0xdd, 0x21, 0xd7, 0xdb, 0x8f, 0xae, 0xad, 0x35, 0x1c, 0x00, 0x3e, 0x13, 0x02,
    0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
    0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27,
    0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d,
    0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xbd,
    0x00, 0x00, 0x00, 0x0e, 0x00, 0x0c, 0x00, 0x00, 0x09, 0x78, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70,
    0x6c, 0x65, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14,
    0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02,
    0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x0c, 0x02, 0x68,
    0x32, 0x08, 0x68, 0x74, 0x74, 0x70, 0x2f, 0x31, 0x2e, 0x31, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17,
    0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07,
    0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01,
    0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02,
    0x00, 0x2b, 0x00, 0x09, 0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d, 0x00,
    0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x42, 0xd1, 0xb6,
    0x76, 0x63, 0x6b, 0xae, 0xb8, 0x8c, 0x51, 0xe7, 0x58, 0xc0, 0x9b, 0xce, 0x49, 0xb3, 0xe1, 0x2f,
    0x9d, 0x12, 0x86, 0x6d, 0x05, 0x16, 0x10, 0x89, 0x8b, 0xdd, 0x36, 0x13, 0x3c,
};

static volatile size_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum kind { MC, TLS, TLS_SPLIT };

struct fixture {
    const char *name;
    enum kind kind;
    uint8_t b[2048];
    size_t n;
    size_t split; /* TLS_SPLIT: the first call sees b[0..split) */
};

static void one(const struct fixture *f)
{
    if (f->kind == MC) {
        struct mc_hello h;
        int rc = mc_sniff(f->b, f->n, 0, false, &h);
        sink += (size_t)rc + h.host_len;
    } else {
        struct tls_hello h;
        if (f->kind == TLS_SPLIT)
            sink += (size_t)tls_sniff(f->b, f->split, &h);
        int rc = tls_sniff(f->b, f->n, &h);
        sink += (size_t)rc + h.sni_len;
    }
}

static double run_ns(const struct fixture *f)
{
    /* Calibrate to about 50 ms a run. */
    size_t iters = 1000;
    for (;;) {
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < iters; i++)
            one(f);
        uint64_t dt = now_ns() - t0;
        if (dt > 50000000u)
            return (double)dt / (double)iters;
        iters *= dt < 5000000u ? 10 : 2;
    }
}

static double median7(const struct fixture *f)
{
    double v[7];
    for (int i = 0; i < 7; i++) {
        v[i] = run_ns(f);
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    return v[3];
}

static void put_varint(struct fixture *f, uint32_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        f->b[f->n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
}

static void handshake(struct fixture *f, const char *addr, size_t alen)
{
    uint8_t body[512];
    struct fixture tmp = {.n = 0};
    tmp.b[tmp.n++] = 0;
    put_varint(&tmp, 765);
    put_varint(&tmp, (uint32_t)alen);
    memcpy(tmp.b + tmp.n, addr, alen);
    tmp.n += alen;
    tmp.b[tmp.n++] = 0x63;
    tmp.b[tmp.n++] = 0xdd;
    tmp.b[tmp.n++] = 2;
    memcpy(body, tmp.b, tmp.n);
    f->n = 0;
    put_varint(f, (uint32_t)tmp.n);
    memcpy(f->b + f->n, body, tmp.n);
    f->n += tmp.n;
}

static void legacy16(struct fixture *f)
{
    static const char host[] = "play.server.com";
    static const char name[] = "MC|PingHost";
    size_t hl = sizeof(host) - 1, dlen = 7 + 2 * hl;
    uint8_t *b = f->b;
    f->n = 0;
    b[f->n++] = 0xfe;
    b[f->n++] = 0x01;
    b[f->n++] = 0xfa;
    b[f->n++] = 0;
    b[f->n++] = 11;
    for (size_t i = 0; i < 11; i++) {
        b[f->n++] = 0;
        b[f->n++] = (uint8_t)name[i];
    }
    b[f->n++] = (uint8_t)(dlen >> 8);
    b[f->n++] = (uint8_t)dlen;
    b[f->n++] = 78;
    b[f->n++] = 0;
    b[f->n++] = (uint8_t)hl;
    for (size_t i = 0; i < hl; i++) {
        b[f->n++] = 0;
        b[f->n++] = (uint8_t)host[i];
    }
    static const uint8_t port[] = {0, 0, 0x63, 0xdd};
    memcpy(b + f->n, port, 4);
    f->n += 4;
}

/* ~1.8 KB: SNI, ALPN, a 1256-byte key share, 400 bytes of padding; two
 * records cut 1400 bytes into the handshake message. */
static void pq_hello(struct fixture *f)
{
    uint8_t hs[2048];
    size_t n = 0, e;
    hs[n++] = 1;
    n += 3;
    hs[n++] = 3;
    hs[n++] = 3;
    memset(hs + n, 0x11, 32);
    n += 32;
    hs[n++] = 32;
    memset(hs + n, 0x22, 32);
    n += 32;
    memcpy(hs + n, "\x00\x06\x13\x01\x13\x02\xc0\x2f\x01\x00", 10);
    n += 10;
    e = n;
    n += 2;
    memcpy(hs + n, "\x00\x00\x00\x0f\x00\x0d\x00\x00\x0apq.example", 19);
    n += 19;
    memcpy(hs + n, "\x00\x10\x00\x0e\x00\x0c\x02h2\x08http/1.1", 18);
    n += 18;
    memcpy(hs + n, "\x00\x33\x04\xe8", 4);
    memset(hs + n + 4, 0x42, 1256);
    n += 4 + 1256;
    memcpy(hs + n, "\x00\x15\x01\x90", 4);
    memset(hs + n + 4, 0, 400);
    n += 4 + 400;
    hs[e] = (uint8_t)((n - e - 2) >> 8);
    hs[e + 1] = (uint8_t)(n - e - 2);
    hs[1] = 0;
    hs[2] = (uint8_t)((n - 4) >> 8);
    hs[3] = (uint8_t)(n - 4);
    size_t cut = 1400;
    f->n = 0;
    memcpy(f->b, "\x16\x03\x01", 3);
    f->b[3] = (uint8_t)(cut >> 8);
    f->b[4] = (uint8_t)cut;
    memcpy(f->b + 5, hs, cut);
    f->n = 5 + cut;
    memcpy(f->b + f->n, "\x16\x03\x01", 3);
    f->b[f->n + 3] = (uint8_t)((n - cut) >> 8);
    f->b[f->n + 4] = (uint8_t)(n - cut);
    memcpy(f->b + f->n + 5, hs + cut, n - cut);
    f->n += 5 + n - cut;
    f->split = 1460; /* one Ethernet-sized segment, then the rest */
}

int main(void)
{
    static struct fixture fx[8];
    static const char forge[] = "play.server.com\0FML3\0";
    static const char shield[] = "play.server.com\0shield\0abcdef";
    size_t k = 0;
    fx[k].name = "mc vanilla (23 B, protocol 765)";
    handshake(&fx[k++], "play.server.com", 15);
    fx[k].name = "mc forge (\\0FML3\\0)";
    handshake(&fx[k++], forge, sizeof(forge) - 1);
    fx[k].name = "mc signed host (\\0shield\\0, parse only)";
    handshake(&fx[k++], shield, sizeof(shield) - 1);
    fx[k].name = "mc legacy 1.6 ping";
    legacy16(&fx[k++]);
    fx[k].name = "tls openssl hello (333 B, 1 record)";
    fx[k].kind = TLS;
    memcpy(fx[k].b, openssl_hello, sizeof(openssl_hello));
    fx[k++].n = sizeof(openssl_hello);
    fx[k].name = "tls pq-sized hello (2 records)";
    fx[k].kind = TLS;
    pq_hello(&fx[k++]);
    fx[k] = fx[k - 1];
    fx[k++].name = "tls pq-sized hello (2 records, 2 calls)";
    fx[k - 1].kind = TLS_SPLIT;
    for (size_t i = 0; i < k; i++) {
        struct mc_hello mh;
        struct tls_hello th;
        int rc = fx[i].kind == MC ? mc_sniff(fx[i].b, fx[i].n, 0, false, &mh)
                                  : tls_sniff(fx[i].b, fx[i].n, &th);
        if (rc <= 0) {
            fprintf(stderr, "sniff_micro: %s: fixture does not parse (%d)\n", fx[i].name, rc);
            return 1;
        }
        printf("%-42s %5zu B  %8.1f ns/parse\n", fx[i].name, fx[i].n, median7(&fx[i]));
    }
    return 0;
}
