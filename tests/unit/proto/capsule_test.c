/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * capsule_test.c: QUIC varints (RFC 9000 section 16), capsules (RFC 9297
 * section 3.2) and DATAGRAM capsules for CONNECT-UDP (RFC 9298 section 5)
 * as proto/capsule reads and writes them. Every parse of a stream runs on
 * an exact-size heap copy so ASan catches a read past the bytes given;
 * every cut of a message is tried at every byte position.
 */
#include "harness.h"

#include "proto/capsule.h"
#include "util/compiler.h"

static ssize_t varint_exact(const uint8_t *msg, size_t len, uint64_t *v)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = capsule_varint_get(copy, len, v);
    free(copy);
    return rc;
}

static ssize_t parse_exact(const uint8_t *msg, size_t len, size_t cap, struct capsule *c,
                           uint8_t **keep)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = capsule_parse(copy, len, cap, c);
    if (keep)
        *keep = copy; /* c->payload points into it */
    else
        free(copy);
    return rc;
}

/* The examples of RFC 9000 appendix A.1, one per size, and a non-minimal one. */
static void test_varint_rfc_examples(void **state)
{
    (void)state;
    static const struct {
        uint8_t b[8];
        size_t n;
        uint64_t v;
    } ex[] = {
        {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 8, 151288809941952652ull},
        {{0x9d, 0x7f, 0x3e, 0x7d}, 4, 494878333},
        {{0x7b, 0xbd}, 2, 15293},
        {{0x25}, 1, 37},
        {{0x40, 0x25}, 2, 37}, /* non-minimal: accepted on input */
    };
    for (size_t i = 0; i < ARRAY_LEN(ex); i++) {
        uint64_t v = 0;
        assert_int_equal(varint_exact(ex[i].b, ex[i].n, &v), (ssize_t)ex[i].n);
        assert_true(v == ex[i].v);
        /* Truncated at every position: need more, v untouched. */
        for (size_t k = 0; k < ex[i].n; k++) {
            uint64_t w = 0x1234;
            assert_int_equal(varint_exact(ex[i].b, k, &w), 0);
            assert_true(w == 0x1234);
        }
    }
}

/* Non-minimal encodings of small values in every size, the 8-byte max. */
static void test_varint_non_minimal_and_max(void **state)
{
    (void)state;
    uint64_t v;
    const uint8_t zero4[] = {0x80, 0, 0, 0};
    assert_int_equal(varint_exact(zero4, 4, &v), 4);
    assert_true(v == 0);
    const uint8_t five8[] = {0xc0, 0, 0, 0, 0, 0, 0, 5};
    assert_int_equal(varint_exact(five8, 8, &v), 8);
    assert_true(v == 5);
    const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(varint_exact(max, 8, &v), 8);
    assert_true(v == CAPSULE_VARINT_MAX);
    /* Bytes behind the varint are not part of it. */
    const uint8_t more[] = {0x01, 0xff, 0xff};
    assert_int_equal(varint_exact(more, 3, &v), 1);
    assert_true(v == 1);
}

/* put: minimal size at each boundary; get reads back the same value. */
static void test_varint_put_boundaries(void **state)
{
    (void)state;
    static const struct {
        uint64_t v;
        size_t n;
    } b[] = {
        {0, 1},          {63, 1},
        {64, 2},         {16383, 2},
        {16384, 4},      {(1ull << 30) - 1, 4},
        {1ull << 30, 8}, {CAPSULE_VARINT_MAX, 8},
    };
    for (size_t i = 0; i < ARRAY_LEN(b); i++) {
        uint8_t out[9];
        memset(out, 0xaa, sizeof(out));
        assert_int_equal(capsule_varint_len(b[i].v), b[i].n);
        assert_int_equal(capsule_varint_put(out, sizeof(out), b[i].v), b[i].n);
        assert_int_equal(out[b[i].n], 0xaa);
        uint64_t v;
        assert_int_equal(varint_exact(out, b[i].n, &v), (ssize_t)b[i].n);
        assert_true(v == b[i].v);
        /* One byte short: nothing written. */
        uint8_t small[8];
        memset(small, 0xaa, sizeof(small));
        assert_int_equal(capsule_varint_put(small, b[i].n - 1, b[i].v), 0);
        for (size_t k = 0; k < sizeof(small); k++)
            assert_int_equal(small[k], 0xaa);
    }
    uint8_t out[8];
    assert_int_equal(capsule_varint_len(CAPSULE_VARINT_MAX + 1), 0);
    assert_int_equal(capsule_varint_put(out, sizeof(out), CAPSULE_VARINT_MAX + 1), 0);
    assert_int_equal(capsule_varint_put(out, sizeof(out), UINT64_MAX), 0);
    const uint8_t want[] = {0xc0, 0, 0, 0, 0x40, 0, 0, 0};
    assert_int_equal(capsule_varint_put(out, sizeof(out), 1ull << 30), 8);
    assert_memory_equal(out, want, 8);
}

/* type 0 (DATAGRAM), length 4, context 0, "abc". */
static const uint8_t dgram[] = {0x00, 0x04, 0x00, 'a', 'b', 'c'};

static void test_parse_datagram(void **state)
{
    (void)state;
    struct capsule c;
    uint8_t *keep;
    assert_int_equal(parse_exact(dgram, sizeof(dgram), 100, &c, &keep), (ssize_t)sizeof(dgram));
    assert_true(c.type == CAPSULE_TYPE_DATAGRAM);
    assert_int_equal(c.len, 4);
    assert_ptr_equal(c.payload, keep + 2);
    struct capsule_datagram d;
    assert_int_equal(capsule_datagram_parse(&c, &d), 0);
    assert_true(d.context_id == CAPSULE_CONTEXT_UDP);
    assert_int_equal(d.len, 3);
    assert_memory_equal(d.payload, "abc", 3);
    free(keep);
}

/* Cut at every byte position: need more, never an error or a read past. */
static void test_parse_truncated_everywhere(void **state)
{
    (void)state;
    /* An 8-byte type, an 8-byte (non-minimal) length 3, then 3 bytes. */
    const uint8_t long_hdr[] = {0xc0, 0, 0, 0, 0, 0, 0x12, 0x34, 0xc0, 0,
                                0,    0, 0, 0, 0, 3, 'x',  'y',  'z'};
    const struct {
        const uint8_t *p;
        size_t n;
    } m[] = {{dgram, sizeof(dgram)}, {long_hdr, sizeof(long_hdr)}};
    for (size_t i = 0; i < ARRAY_LEN(m); i++) {
        struct capsule c;
        for (size_t k = 0; k < m[i].n; k++)
            assert_int_equal(parse_exact(m[i].p, k, 1000, &c, NULL), 0);
        assert_int_equal(parse_exact(m[i].p, m[i].n, 1000, &c, NULL), (ssize_t)m[i].n);
    }
    struct capsule c;
    assert_int_equal(parse_exact(long_hdr, sizeof(long_hdr), 3, &c, NULL),
                     (ssize_t)sizeof(long_hdr));
    assert_true(c.type == 0x1234);
    assert_int_equal(c.len, 3);
}

/* A length over the cap is refused as soon as the length field is whole,
 * before any of the payload has arrived. */
static void test_parse_over_cap(void **state)
{
    (void)state;
    struct capsule c;
    assert_int_equal(parse_exact(dgram, sizeof(dgram), 3, &c, NULL), CAPSULE_E_TOO_LONG);
    assert_int_equal(parse_exact(dgram, 2, 3, &c, NULL), CAPSULE_E_TOO_LONG);
    assert_int_equal(parse_exact(dgram, 1, 3, &c, NULL), 0); /* length not whole yet */
    assert_int_equal(parse_exact(dgram, sizeof(dgram), 4, &c, NULL), (ssize_t)sizeof(dgram));
    /* The largest length a varint says: under a cap that allows it, the
     * parser just waits for the payload (the cap is the caller's bound). */
    const uint8_t huge[] = {0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(parse_exact(huge, sizeof(huge), SIZE_MAX / 2, &c, NULL), 0);
    assert_int_equal(parse_exact(huge, sizeof(huge), 65535, &c, NULL), CAPSULE_E_TOO_LONG);
    /* An empty capsule fits a cap of 0. */
    const uint8_t empty[] = {0x3f, 0x00};
    assert_int_equal(parse_exact(empty, sizeof(empty), 0, &c, NULL), 2);
    assert_true(c.type == 0x3f);
    assert_int_equal(c.len, 0);
}

/* Several capsules back to back, each parsed from where the last ended;
 * an unknown type between them is skipped by its length. */
static void test_parse_back_to_back(void **state)
{
    (void)state;
    const uint8_t s[] = {
        0x00, 0x02, 0x00, 'A',            /* DATAGRAM "A" */
        0x7f, 0xff, 0x03, 1,    2,   3,   /* unknown type 0x3fff, 3 bytes */
        0x00, 0x01, 0x00,                 /* empty DATAGRAM */
        0x00, 0x40, 0x03, 0x04, 'x', 'y', /* context 4, non-minimal length */
        0x00, 0x04, 0x00, 'e',  'n',      /* cut short: need more */
    };
    uint8_t *copy = malloc(sizeof(s));
    assert_non_null(copy);
    memcpy(copy, s, sizeof(s));
    static const struct {
        uint64_t type;
        size_t len;
    } want[] = {{0, 2}, {0x3fff, 3}, {0, 1}, {0, 3}};
    size_t off = 0;
    struct capsule c;
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        ssize_t n = capsule_parse(copy + off, sizeof(s) - off, 64, &c);
        assert_true(n > 0);
        assert_true(c.type == want[i].type);
        assert_int_equal(c.len, want[i].len);
        struct capsule_datagram d;
        if (c.type == CAPSULE_TYPE_DATAGRAM)
            assert_int_equal(capsule_datagram_parse(&c, &d), 0);
        else
            assert_int_equal(capsule_datagram_parse(&c, &d), CAPSULE_E_TYPE);
        if (i == 2) {
            assert_true(d.context_id == 0);
            assert_int_equal(d.len, 0);
        }
        if (i == 3) {
            assert_true(d.context_id == 4); /* the caller drops it */
            assert_int_equal(d.len, 2);
            assert_memory_equal(d.payload, "xy", 2);
        }
        off += (size_t)n;
    }
    assert_int_equal(capsule_parse(copy + off, sizeof(s) - off, 64, &c), 0);
    free(copy);
}

/* A DATAGRAM capsule must hold a whole context id (RFC 9298 section 5). */
static void test_datagram_context_id(void **state)
{
    (void)state;
    struct capsule c = {.type = CAPSULE_TYPE_DATAGRAM, .payload = (const uint8_t *)"", .len = 0};
    struct capsule_datagram d;
    assert_int_equal(capsule_datagram_parse(&c, &d), CAPSULE_E_DATAGRAM);
    const uint8_t cut[] = {0x40};
    c.payload = cut;
    c.len = 1;
    assert_int_equal(capsule_datagram_parse(&c, &d), CAPSULE_E_DATAGRAM);
    const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'q'};
    c.payload = big;
    c.len = sizeof(big);
    assert_int_equal(capsule_datagram_parse(&c, &d), 0);
    assert_true(d.context_id == CAPSULE_VARINT_MAX);
    assert_int_equal(d.len, 1);
    assert_ptr_equal(d.payload, big + 8);
}

static void check_written(const uint8_t *out, size_t n, const uint8_t *p, size_t len)
{
    struct capsule c;
    struct capsule_datagram d;
    assert_int_equal(parse_exact(out, n, len + 1, &c, NULL), (ssize_t)n);
    assert_int_equal(parse_exact(out, n, len, &c, NULL), CAPSULE_E_TOO_LONG);
    assert_int_equal(capsule_parse(out, n, len + 1, &c), (ssize_t)n);
    assert_int_equal(capsule_datagram_parse(&c, &d), 0);
    assert_true(d.context_id == 0);
    assert_int_equal(d.len, len);
    if (len)
        assert_memory_equal(d.payload, p, len);
}

/* The writer: minimal lengths at each boundary, size reported when short. */
static void test_write_datagram(void **state)
{
    (void)state;
    static uint8_t payload[70000], out[70016];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    /* len + 1 is the capsule's length: 1-byte up to 62, 2-byte to 16382. */
    static const struct {
        size_t len, size;
    } w[] = {{0, 3}, {1, 4}, {62, 65}, {63, 67}, {16382, 16386}, {16383, 16389}, {65527, 65533}};
    for (size_t i = 0; i < ARRAY_LEN(w); i++) {
        assert_int_equal(capsule_datagram_size(w[i].len), w[i].size);
        memset(out, 0xaa, sizeof(out));
        assert_int_equal(capsule_write_datagram(out, sizeof(out), payload, w[i].len), w[i].size);
        assert_int_equal(out[w[i].size], 0xaa);
        check_written(out, w[i].size, payload, w[i].len);
        /* One byte short: the size needed, nothing written. */
        memset(out, 0xaa, 16);
        assert_int_equal(capsule_write_datagram(out, w[i].size - 1, payload, w[i].len), w[i].size);
        for (size_t k = 0; k < 16; k++)
            assert_int_equal(out[k], 0xaa);
        assert_int_equal(capsule_write_datagram_header(out, w[i].size - w[i].len - 1, w[i].len), 0);
        assert_int_equal(capsule_write_datagram_header(out, sizeof(out), w[i].len),
                         w[i].size - w[i].len);
    }
    const uint8_t empty[] = {0x00, 0x01, 0x00};
    assert_int_equal(capsule_write_datagram(out, 3, NULL, 0), 3);
    assert_memory_equal(out, empty, 3);
    assert_true(capsule_datagram_size(SIZE_MAX) == SIZE_MAX);
    assert_true(capsule_datagram_size((size_t)CAPSULE_VARINT_MAX) == SIZE_MAX);
    assert_true(capsule_datagram_size((size_t)CAPSULE_VARINT_MAX - 1) ==
                (size_t)CAPSULE_VARINT_MAX - 1 + 10);
    assert_int_equal(capsule_write_datagram_header(out, sizeof(out), SIZE_MAX), 0);
    assert_true(capsule_write_datagram(out, sizeof(out), payload, SIZE_MAX) == SIZE_MAX);
}

/* The payload may already sit in the output buffer (received in place). */
static void test_write_datagram_in_place(void **state)
{
    (void)state;
    uint8_t buf[400];
    for (size_t i = 0; i < 300; i++)
        buf[i] = (uint8_t)i;
    uint8_t copy[300];
    memcpy(copy, buf, sizeof(copy));
    size_t n = capsule_write_datagram(buf, sizeof(buf), buf, 300);
    assert_int_equal(n, 304);
    check_written(buf, n, copy, 300);
    /* Received behind the largest header: the header goes in front. */
    memcpy(buf + CAPSULE_DATAGRAM_HDR_MAX, copy, 100);
    size_t h = capsule_write_datagram_header(buf, sizeof(buf), 100);
    assert_int_equal(h, 4);
    memmove(buf + h, buf + CAPSULE_DATAGRAM_HDR_MAX, 100);
    check_written(buf, h + 100, copy, 100);
}

/* Random streams: parse never claims more than it was given, and whatever
 * parses re-encodes to the same values. */
static void test_random_streams(void **state)
{
    (void)state;
    struct harness_rng r;
    harness_rng_init(&r, 9297);
    for (int iter = 0; iter < 20000; iter++) {
        uint8_t msg[24];
        size_t len = harness_rng_below(&r, sizeof(msg) + 1);
        for (size_t i = 0; i < len; i++)
            msg[i] = (uint8_t)harness_rng_next(&r);
        struct capsule c;
        uint8_t *keep;
        ssize_t n = parse_exact(msg, len, 16, &c, &keep);
        assert_true(n <= (ssize_t)len);
        assert_true(n == 0 || n == CAPSULE_E_TOO_LONG || n > 0);
        if (n > 0) {
            uint8_t out[40];
            size_t a = capsule_varint_put(out, sizeof(out), c.type);
            size_t b = capsule_varint_put(out + a, sizeof(out) - a, c.len);
            assert_true(a && b);
            assert_true(a + b + c.len <= (size_t)n);
            memcpy(out + a + b, c.payload, c.len);
            struct capsule c2;
            assert_int_equal(capsule_parse(out, a + b + c.len, 16, &c2), (ssize_t)(a + b + c.len));
            assert_true(c2.type == c.type && c2.len == c.len);
            assert_memory_equal(c2.payload, c.payload, c.len);
        }
        free(keep);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_rfc_examples),
        cmocka_unit_test(test_varint_non_minimal_and_max),
        cmocka_unit_test(test_varint_put_boundaries),
        cmocka_unit_test(test_parse_datagram),
        cmocka_unit_test(test_parse_truncated_everywhere),
        cmocka_unit_test(test_parse_over_cap),
        cmocka_unit_test(test_parse_back_to_back),
        cmocka_unit_test(test_datagram_context_id),
        cmocka_unit_test(test_write_datagram),
        cmocka_unit_test(test_write_datagram_in_place),
        cmocka_unit_test(test_random_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
