/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlshello_test.c: the ClientHello sniffer of proto/tlshello on byte
 * fixtures: a real OpenSSL ClientHello, the same split at every TCP offset
 * and cut into two TLS records at every offset (so the SNI sits in the
 * second), a post-quantum-sized (~1.8 KB) hello in one and in two records,
 * no SNI, an SSLv2-compatible hello, the caps, and each error code. Every
 * input is fed one byte at a time from exact-size heap copies, so ASan sees
 * any read past len and a verdict must come at the same byte whatever the
 * split.
 */
#include "harness.h"

#include "proto/tlshello.h"

/*
 * Captured from OpenSSL 3.0 (Debian 12) with
 *   openssl s_client -connect 127.0.0.1:PORT -servername x.example -alpn h2,http/1.1
 * against a Python socket that read the first record and closed: one record
 * of 328 bytes, SNI "x.example" (the extension at record offset 144), ALPN
 * h2 and http/1.1, a TLS 1.3 key_share of X25519.
 */
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

#define OPENSSL_SNI_OFF 139 /* the SNI extension's offset in the handshake message */

#define BIG 20000

struct bytes {
    uint8_t b[BIG];
    size_t n;
};

static void put(struct bytes *b, const void *p, size_t n)
{
    assert_true(b->n + n <= BIG);
    memcpy(b->b + b->n, p, n);
    b->n += n;
}

static void put8(struct bytes *b, unsigned v)
{
    uint8_t x = (uint8_t)v;
    put(b, &x, 1);
}

static void put16(struct bytes *b, size_t v)
{
    put8(b, (unsigned)(v >> 8));
    put8(b, (unsigned)v);
}

static void ext_sni(struct bytes *e, const char *host)
{
    size_t n = strlen(host);
    put16(e, 0);
    put16(e, n + 5);
    put16(e, n + 3);
    put8(e, 0);
    put16(e, n);
    put(e, host, n);
}

/* wire: the ALPN list in wire format. */
static void ext_alpn(struct bytes *e, const char *wire, size_t n)
{
    put16(e, 16);
    put16(e, n + 2);
    put16(e, n);
    put(e, wire, n);
}

/* An extension of n zero bytes (a key_share or padding stand-in). */
static void ext_blob(struct bytes *e, unsigned type, size_t n)
{
    put16(e, type);
    put16(e, n);
    for (size_t i = 0; i < n; i++)
        put8(e, 0x42);
}

/* A ClientHello handshake message (type, len24, body) around exts; exts
 * NULL: no extension block at all. */
static void hello(struct bytes *hs, const struct bytes *exts)
{
    struct bytes body = {.n = 0};
    put16(&body, 0x0303);
    for (int i = 0; i < 32; i++)
        put8(&body, 0x11);
    put8(&body, 32);
    for (int i = 0; i < 32; i++)
        put8(&body, 0x22);
    put16(&body, 6);
    put(&body, "\x13\x01\x13\x02\xc0\x2f", 6);
    put8(&body, 1);
    put8(&body, 0);
    if (exts) {
        put16(&body, exts->n);
        put(&body, exts->b, exts->n);
    }
    hs->n = 0;
    put8(hs, 1);
    put8(hs, (unsigned)(body.n >> 16));
    put16(hs, body.n & 0xffff);
    put(hs, body.b, body.n);
}

/* Wrap hs in TLS records cut at cuts[0..k) (increasing offsets in hs). */
static void records(struct bytes *out, const struct bytes *hs, const size_t *cuts, size_t k)
{
    out->n = 0;
    size_t from = 0;
    for (size_t i = 0; i <= k; i++) {
        size_t to = i < k ? cuts[i] : hs->n;
        put8(out, 0x16);
        put16(out, 0x0301);
        put16(out, to - from);
        put(out, hs->b + from, to - from);
        from = to;
    }
}

static void one_record(struct bytes *out, const struct bytes *hs)
{
    records(out, hs, NULL, 0);
}

static int sniff_exact(const uint8_t *p, size_t len, struct tls_hello *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, p, len);
    int rc = tls_sniff(copy, len, out);
    free(copy);
    return rc;
}

/* Every prefix before the verdict TLS_NEED_MORE (out untouched), every
 * prefix from it on the verdict. The verdict and where it came. */
static int feed(const uint8_t *p, size_t len, size_t *at, struct tls_hello *out)
{
    static struct tls_hello h, poison, first;
    memset(&poison, 0xa5, sizeof(poison));
    int verdict = TLS_NEED_MORE;
    *at = 0;
    for (size_t k = 0; k <= len; k++) {
        memcpy(&h, &poison, sizeof(h));
        int rc = sniff_exact(p, k, &h);
        if (verdict == TLS_NEED_MORE && rc != TLS_NEED_MORE) {
            verdict = rc;
            *at = k;
            first = h;
        }
        assert_int_equal(rc, verdict);
        if (rc <= 0)
            assert_memory_equal(&h, &poison, sizeof(h));
        else
            assert_memory_equal(&h, &first, sizeof(h));
    }
    if (verdict > 0)
        *out = first;
    return verdict;
}

static void expect_err(const struct bytes *in, int code, size_t at_want)
{
    size_t at;
    struct tls_hello h;
    assert_int_equal(feed(in->b, in->n, &at, &h), code);
    if (at_want)
        assert_int_equal(at, at_want);
}

static void check_openssl(const struct tls_hello *h)
{
    assert_false(h->sslv2);
    assert_int_equal(h->client_version, 0x0303);
    assert_string_equal(h->sni, "x.example");
    assert_int_equal(h->sni_len, 9);
    assert_int_equal(h->alpn_count, 2);
    assert_false(h->alpn_truncated);
    assert_int_equal(h->alpn_len, 12);
    assert_memory_equal(h->alpn, "\x02h2\x08http/1.1", 12);
}

/* ---- the real ClientHello ------------------------------------------------ */

static void test_openssl_every_offset(void **state)
{
    (void)state;
    struct tls_hello h;
    size_t at;
    /* One byte at a time is every TCP split: each prefix is one call. */
    assert_int_equal(feed(openssl_hello, sizeof(openssl_hello), &at, &h), TLS_OK);
    assert_int_equal(at, sizeof(openssl_hello));
    check_openssl(&h);
    assert_int_equal(h.records, 1);
    assert_int_equal(h.hello_end, sizeof(openssl_hello));
    assert_int_equal(h.records_end, sizeof(openssl_hello));
    assert_false(h.ends_mid_record);
    /* Bytes after it (a client's early data) change nothing. */
    struct bytes more = {.n = 0};
    put(&more, openssl_hello, sizeof(openssl_hello));
    put(&more, "\x14\x03\x03\x00\x01\x01", 6);
    struct tls_hello again;
    assert_int_equal(sniff_exact(more.b, more.n, &again), TLS_OK);
    assert_memory_equal(&again, &h, sizeof(h));
}

/* A record that goes on past the ClientHello: it ends mid-record, and the
 * caller learns both ends (it replays everything it read anyway). */
static void test_ends_mid_record(void **state)
{
    (void)state;
    struct bytes hs = {.n = 0}, in;
    put(&hs, openssl_hello + 5, sizeof(openssl_hello) - 5);
    size_t hello_len = hs.n;
    put(&hs, "\x10\x00\x00\x00", 4); /* whatever follows in the same record */
    one_record(&in, &hs);
    struct tls_hello h;
    size_t at;
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(at, 5 + hello_len);
    assert_int_equal(h.hello_end, 5 + hello_len);
    assert_int_equal(h.records_end, in.n);
    assert_true(h.ends_mid_record);
    check_openssl(&h);
}

static void test_openssl_two_records_every_cut(void **state)
{
    (void)state;
    struct bytes hs = {.n = 0};
    put(&hs, openssl_hello + 5, sizeof(openssl_hello) - 5);
    struct bytes in;
    for (size_t cut = 1; cut < hs.n; cut++) {
        records(&in, &hs, &cut, 1);
        struct tls_hello h;
        assert_int_equal(sniff_exact(in.b, in.n, &h), TLS_OK);
        check_openssl(&h);
        assert_int_equal(h.records, 2);
        assert_int_equal(h.hello_end, in.n);
        for (size_t k = 0; k < in.n; k++) /* no prefix decides early */
            assert_int_equal(sniff_exact(in.b, k, &h), TLS_NEED_MORE);
    }
    /* The SNI wholly in the second record, fed byte by byte. */
    size_t cut = OPENSSL_SNI_OFF;
    records(&in, &hs, &cut, 1);
    assert_memory_equal(in.b + 5 + cut + 5, "\x00\x00\x00\x0e", 4);
    struct tls_hello h;
    size_t at;
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(at, in.n);
    check_openssl(&h);
    /* Three records, and one record per handshake header byte. */
    size_t cuts3[] = {1, 2, 3, 4, 200};
    records(&in, &hs, cuts3, 5);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(h.records, 6);
    check_openssl(&h);
}

/* ---- built hellos --------------------------------------------------------- */

static void test_post_quantum_size(void **state)
{
    (void)state;
    /* X25519MLKEM768 + X25519 key shares: 1216 + 32 bytes and headers. */
    struct bytes exts = {.n = 0}, hs, in;
    ext_sni(&exts, "pq.example");
    ext_alpn(&exts, "\x02h2\x08http/1.1", 12);
    ext_blob(&exts, 51, 2 + 4 + 1216 + 4 + 32);
    ext_blob(&exts, 21, 400); /* padding, as Chrome sends */
    hello(&hs, &exts);
    assert_true(hs.n > 1700 && hs.n < 1900);
    one_record(&in, &hs);
    struct tls_hello h;
    size_t at;
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(at, in.n);
    assert_string_equal(h.sni, "pq.example");
    assert_int_equal(h.alpn_count, 2);
    /* Two records, the second holding the end (and a 1460-byte segment
     * boundary falls anywhere: feed covers every one). */
    size_t cut = 1400;
    records(&in, &hs, &cut, 1);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(h.records, 2);
    assert_string_equal(h.sni, "pq.example");
    /* SNI after the big key share, in the second record. */
    exts.n = 0;
    ext_blob(&exts, 51, 1260);
    ext_sni(&exts, "late.example");
    hello(&hs, &exts);
    cut = 1000; /* inside the key share: the SNI is wholly in the second record */
    records(&in, &hs, &cut, 1);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_string_equal(h.sni, "late.example");
}

static void test_no_sni_and_no_extensions(void **state)
{
    (void)state;
    struct bytes exts = {.n = 0}, hs, in;
    ext_alpn(&exts, "\x08http/1.1", 9);
    hello(&hs, &exts);
    one_record(&in, &hs);
    struct tls_hello h;
    size_t at;
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(h.sni_len, 0);
    assert_string_equal(h.sni, "");
    assert_int_equal(h.alpn_count, 1);
    hello(&hs, NULL);
    one_record(&in, &hs);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(h.sni_len, 0);
    assert_int_equal(h.alpn_count, 0);
    /* An empty extension block. */
    exts.n = 0;
    hello(&hs, &exts);
    one_record(&in, &hs);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
}

static void test_sni_forms(void **state)
{
    (void)state;
    struct bytes exts = {.n = 0}, hs, in;
    struct tls_hello h;
    size_t at;
    ext_sni(&exts, "WWW.Example.COM.");
    hello(&hs, &exts);
    one_record(&in, &hs);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_string_equal(h.sni, "www.example.com");
    /* A name of another name_type is skipped. */
    exts.n = 0;
    put16(&exts, 0);
    put16(&exts, 2 + 4 + 3 + 5);
    put16(&exts, 4 + 3 + 5);
    put(&exts, "\x07\x00\x01z", 4);
    put(&exts, "\x00\x00\x05", 3);
    put(&exts, "a.b.c", 5);
    hello(&hs, &exts);
    one_record(&in, &hs);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_string_equal(h.sni, "a.b.c");
    /* 255 bytes fine, 256 refused. */
    char name[300];
    memset(name, 'a', sizeof(name));
    for (size_t i = 63; i < sizeof(name); i += 64)
        name[i] = '.';
    name[255] = '\0';
    exts.n = 0;
    ext_sni(&exts, name);
    hello(&hs, &exts);
    one_record(&in, &hs);
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(h.sni_len, 255);
    name[255] = 'a';
    name[256] = '\0';
    exts.n = 0;
    ext_sni(&exts, name);
    hello(&hs, &exts);
    one_record(&in, &hs);
    expect_err(&in, TLS_E_SNI, in.n);
}

static void test_alpn_truncated(void **state)
{
    (void)state;
    struct bytes exts = {.n = 0}, hs, in, wire = {.n = 0};
    for (int i = 0; i < 30; i++)
        put(&wire, "\x0ahttp/1.1xx", 11); /* 30 protocols of 10 bytes: 330 bytes */
    ext_alpn(&exts, (const char *)wire.b, wire.n);
    hello(&hs, &exts);
    one_record(&in, &hs);
    struct tls_hello h;
    assert_int_equal(sniff_exact(in.b, in.n, &h), TLS_OK);
    assert_int_equal(h.alpn_count, 30);
    assert_true(h.alpn_truncated);
    assert_int_equal(h.alpn_len, 23 * 11);
}

static void test_sslv2_compat(void **state)
{
    (void)state;
    /* SSLv2-format CLIENT-HELLO offering TLS 1.0: 7 cipher specs, no
     * session id, a 16-byte challenge (RFC 5246 E.2). */
    struct bytes in = {.n = 0};
    put(&in, "\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10", 11);
    for (int i = 0; i < 21 + 16; i++)
        put8(&in, (unsigned)i);
    struct tls_hello h;
    size_t at;
    assert_int_equal(feed(in.b, in.n, &at, &h), TLS_OK);
    assert_int_equal(at, in.n);
    assert_true(h.sslv2);
    assert_int_equal(h.sni_len, 0);
    assert_int_equal(h.client_version, 0x0301);
    assert_int_equal(h.hello_end, in.n);
    /* Pure SSLv2 (version 0x0002) is not TLS. */
    in.b[3] = 0x00;
    expect_err(&in, TLS_E_NOT_TLS, 4);
    in.b[3] = 0x03;
    in.b[2] = 0x04; /* not a CLIENT-HELLO */
    expect_err(&in, TLS_E_NOT_TLS, 3);
    in.b[2] = 0x01;
    in.b[10] = 0x11; /* lengths do not add up */
    expect_err(&in, TLS_E_HANDSHAKE, in.n);
    /* High-bit garbage is "not TLS" at its third byte, whatever the
     * length its first two would give (the fuzzer found a prefix said
     * "too big" and its extension "not TLS"). */
    in.n = 0;
    put(&in, "\xff\xff\xff\xff\x01", 5);
    expect_err(&in, TLS_E_NOT_TLS, 3);
    in.n = 0;
    put(&in, "\xff\xff\x01\x03\x01", 5);
    expect_err(&in, TLS_E_TOO_BIG, 4);
}

/* ---- caps and errors -------------------------------------------------------- */

static void test_caps(void **state)
{
    (void)state;
    static struct bytes exts, hs, in;
    struct tls_hello h;
    size_t base;
    exts.n = 0;
    ext_sni(&exts, "cap.example");
    hello(&hs, &exts);
    base = hs.n;
    /* Exactly TLS_HELLO_MAX bytes: one full 2^14 record. */
    exts.n = 0;
    ext_sni(&exts, "cap.example");
    ext_blob(&exts, 21, TLS_HELLO_MAX - base - 4);
    hello(&hs, &exts);
    assert_int_equal(hs.n, TLS_HELLO_MAX);
    one_record(&in, &hs);
    assert_int_equal(sniff_exact(in.b, in.n, &h), TLS_OK);
    assert_string_equal(h.sni, "cap.example");
    /* One more: refused at the handshake header, before the body. */
    exts.n = 0;
    ext_sni(&exts, "cap.example");
    ext_blob(&exts, 21, TLS_HELLO_MAX - base - 3);
    hello(&hs, &exts);
    size_t cut = 8000;
    records(&in, &hs, &cut, 1);
    expect_err(&in, TLS_E_TOO_BIG, 9);
    /* 64 records fine, 65 refused. */
    hello(&hs, &exts);
    exts.n = 0;
    ext_sni(&exts, "cap.example");
    hello(&hs, &exts);
    size_t cuts[64];
    for (size_t i = 0; i < 64; i++)
        cuts[i] = i + 1;
    records(&in, &hs, cuts, 63);
    assert_int_equal(sniff_exact(in.b, in.n, &h), TLS_OK);
    assert_int_equal(h.records, 64);
    records(&in, &hs, cuts, 64);
    expect_err(&in, TLS_E_TOO_BIG, 64 * 6 + 5);
    /* A record over 2^14. */
    in.n = 0;
    put(&in, "\x16\x03\x01\x40\x01", 5);
    expect_err(&in, TLS_E_RECORD, 5);
}

static void test_errors(void **state)
{
    (void)state;
    static struct bytes exts, hs, in;
    static const char get[] = "GET / HTTP/1.1\r\n";
    in.n = 0;
    put(&in, get, sizeof(get) - 1);
    expect_err(&in, TLS_E_NOT_TLS, 1);
    in.n = 0;
    put(&in, "\x16\x02\x00\x00\x10", 5); /* major 2 */
    expect_err(&in, TLS_E_NOT_TLS, 2);
    in.n = 0;
    put(&in, "\x16\x03\x01\x00\x00", 5); /* empty record */
    expect_err(&in, TLS_E_RECORD, 5);

    /* A second record that is not a handshake record. */
    hs.n = 0;
    put(&hs, openssl_hello + 5, sizeof(openssl_hello) - 5);
    size_t cut = 100;
    records(&in, &hs, &cut, 1);
    in.b[5 + 100] = 0x17;
    expect_err(&in, TLS_E_RECORD, 106);
    in.b[5 + 100] = 0x16;
    in.b[5 + 101] = 0x04;
    expect_err(&in, TLS_E_RECORD, 107);

    /* Not a ClientHello; too short to be one; fields that overrun it. */
    in.n = 0;
    put(&in, openssl_hello, sizeof(openssl_hello));
    in.b[5] = 0x02;
    expect_err(&in, TLS_E_HANDSHAKE, 6);
    in.n = 0;
    put(&in, "\x16\x03\x01\x00\x20\x01\x00\x00\x1c", 9);
    expect_err(&in, TLS_E_HANDSHAKE, 9);
    in.n = 0;
    put(&in, openssl_hello, sizeof(openssl_hello));
    in.b[5 + 4 + 2 + 32] = 33; /* session id over 32 */
    expect_err(&in, TLS_E_HANDSHAKE, in.n);
    in.n = 0;
    put(&in, openssl_hello, sizeof(openssl_hello));
    in.b[5 + 4] = 0x02; /* legacy_version major 2 */
    expect_err(&in, TLS_E_HANDSHAKE, in.n);

    /* Extension block length off by one. */
    in.n = 0;
    put(&in, openssl_hello, sizeof(openssl_hello));
    in.b[143]--;
    expect_err(&in, TLS_E_EXTENSION, in.n);

    /* Duplicate SNI: two extensions, or two host_name entries. */
    exts.n = 0;
    ext_sni(&exts, "a.example");
    ext_sni(&exts, "b.example");
    hello(&hs, &exts);
    one_record(&in, &hs);
    expect_err(&in, TLS_E_DUP_SNI, in.n);
    exts.n = 0;
    put16(&exts, 0);
    put16(&exts, 2 + 2 * (3 + 3));
    put16(&exts, 2 * (3 + 3));
    put(&exts,
        "\x00\x00\x03"
        "a.b"
        "\x00\x00\x03"
        "c.d",
        12);
    hello(&hs, &exts);
    one_record(&in, &hs);
    expect_err(&in, TLS_E_DUP_SNI, in.n);

    /* Bad host names. */
    static const char *const bad[] = {"a_b.example", "a..b", "-a.example",         ".",
                                      "x.example..", "a b",  "caf\xc3\xa9.example"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        exts.n = 0;
        ext_sni(&exts, bad[i]);
        hello(&hs, &exts);
        one_record(&in, &hs);
        expect_err(&in, TLS_E_SNI, in.n);
    }
    exts.n = 0;
    ext_sni(&exts, "");
    hello(&hs, &exts);
    one_record(&in, &hs);
    expect_err(&in, TLS_E_SNI, in.n);

    /* Malformed SNI and ALPN extensions. */
    static const char *const bad_ext[] = {
        "\x00\x00\x00\x00",                     /* empty server_name */
        "\x00\x00\x00\x02\x00\x00",             /* empty list */
        "\x00\x00\x00\x05\x00\x04\x00\x00\x03", /* name runs past the list */
        "\x00\x10\x00\x02\x00\x00",             /* empty ALPN list */
        "\x00\x10\x00\x04\x00\x02\x00\x01",     /* empty protocol name */
        "\x00\x10\x00\x04\x00\x02\x02h",        /* name past the list */
        "\x00\x10\x00\x03\x00\x01\x01",         /* ... and no room for it */
        "\x00\x10\x00\x05\x00\x02\x01h\x00",    /* list shorter than the extension */
        "\x00\x2b\x00\x09\x08",                 /* extension past the block */
    };
    static const size_t bad_len[] = {4, 6, 9, 6, 8, 8, 7, 9, 5};
    for (size_t i = 0; i < sizeof(bad_ext) / sizeof(bad_ext[0]); i++) {
        exts.n = 0;
        put(&exts, bad_ext[i], bad_len[i]);
        hello(&hs, &exts);
        one_record(&in, &hs);
        expect_err(&in, TLS_E_EXTENSION, in.n);
    }
    exts.n = 0;
    ext_alpn(&exts, "\x02h2", 3);
    ext_alpn(&exts, "\x02h2", 3);
    hello(&hs, &exts);
    one_record(&in, &hs);
    expect_err(&in, TLS_E_EXTENSION, in.n);

    /* Random bytes behind a handshake record header: a listed verdict. */
    struct harness_rng rng;
    harness_rng_init(&rng, 16);
    for (int i = 0; i < 200; i++) {
        in.n = 0;
        put(&in, "\x16\x03\x01\x00\x80\x01\x00\x00\x7c", 9);
        for (int j = 0; j < 0x7c; j++)
            put8(&in, (unsigned)harness_rng_next(&rng));
        struct tls_hello h;
        int rc = sniff_exact(in.b, in.n, &h);
        assert_true(rc >= TLS_E_SNI && rc <= TLS_OK);
        assert_non_null(tls_strerror(rc));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openssl_every_offset),
        cmocka_unit_test(test_ends_mid_record),
        cmocka_unit_test(test_openssl_two_records_every_cut),
        cmocka_unit_test(test_post_quantum_size),
        cmocka_unit_test(test_no_sni_and_no_extensions),
        cmocka_unit_test(test_sni_forms),
        cmocka_unit_test(test_alpn_truncated),
        cmocka_unit_test(test_sslv2_compat),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
