/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * socks5_auth_test.c: the RFC 1929 username/password sub-negotiation of
 * proto/socks5: the server's parser (socks5_parse_userpass) and status
 * writer, and the client's writer and status parser, held to the contract
 * in socks5.h: > 0 consumed, 0 need more, < 0 SOCKS5_E_*, with a bad VER
 * or a zero length judged as soon as its byte arrives. Every parse runs on
 * an exact-size heap copy so ASan sees a read past the end, and every
 * message is also fed one byte at a time.
 */
#include "harness.h"

#include "proto/socks5.h"

#define USERPASS_MAX (3 + 255 + 255)

/* VER ULEN UNAME PLEN PASSWD into out (at least USERPASS_MAX bytes);
 * returns the length. Lengths are written as given, so callers can lie. */
static size_t make_userpass(uint8_t *out, uint8_t ver, const void *user, size_t ulen,
                            const void *pass, size_t plen)
{
    out[0] = ver;
    out[1] = (uint8_t)ulen;
    memcpy(out + 2, user, ulen);
    out[2 + ulen] = (uint8_t)plen;
    memcpy(out + 3 + ulen, pass, plen);
    return 3 + ulen + plen;
}

static ssize_t parse_exact(const uint8_t *msg, size_t len, struct socks5_userpass *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks5_parse_userpass(copy, len, out);
    free(copy);
    return rc;
}

static ssize_t parse_status_exact(const uint8_t *msg, size_t len, uint8_t *status)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, msg, len);
    ssize_t rc = socks5_parse_auth_status(copy, len, status);
    free(copy);
    return rc;
}

/* The parsed fields equal the given name and password, NUL-terminated. */
static void assert_userpass(const struct socks5_userpass *up, const void *user, size_t ulen,
                            const void *pass, size_t plen)
{
    assert_int_equal(up->ulen, ulen);
    assert_int_equal(up->plen, plen);
    assert_memory_equal(up->user, user, ulen);
    assert_int_equal(up->user[ulen], '\0');
    assert_memory_equal(up->pass, pass, plen);
    assert_int_equal(up->pass[plen], '\0');
}

/* Every proper prefix of msg needs more; the whole of it parses to len. */
static void assert_prefixes_need_more(const uint8_t *msg, size_t len)
{
    struct socks5_userpass up;
    for (size_t n = 0; n < len; n++)
        assert_int_equal(parse_exact(msg, n, &up), 0);
    assert_int_equal(parse_exact(msg, len, &up), (ssize_t)len);
}

/* ---- socks5_parse_userpass ------------------------------------------- */

static void test_userpass_basic(void **state)
{
    (void)state;
    uint8_t msg[USERPASS_MAX];
    size_t len = make_userpass(msg, 1, "alice", 5, "secret", 6);
    assert_int_equal(len, 14);
    struct socks5_userpass up;
    memset(&up, 0xaa, sizeof(up));
    assert_int_equal(parse_exact(msg, len, &up), 14);
    assert_userpass(&up, "alice", 5, "secret", 6);
    assert_string_equal(up.user, "alice");
    assert_string_equal(up.pass, "secret");
}

static void test_userpass_one_byte_fields(void **state)
{
    (void)state;
    uint8_t msg[USERPASS_MAX];
    size_t len = make_userpass(msg, 1, "u", 1, "p", 1);
    assert_int_equal(len, 5);
    struct socks5_userpass up;
    assert_int_equal(parse_exact(msg, len, &up), 5);
    assert_userpass(&up, "u", 1, "p", 1);
    assert_prefixes_need_more(msg, len);
}

static void test_userpass_255_byte_fields(void **state)
{
    (void)state;
    char user[255], pass[255];
    for (int i = 0; i < 255; i++) {
        user[i] = (char)('a' + i % 26);
        pass[i] = (char)('A' + i % 26);
    }
    uint8_t msg[USERPASS_MAX];
    size_t len = make_userpass(msg, 1, user, 255, pass, 255);
    assert_int_equal(len, USERPASS_MAX);
    struct socks5_userpass up;
    assert_int_equal(parse_exact(msg, len, &up), USERPASS_MAX);
    assert_userpass(&up, user, 255, pass, 255);
    assert_prefixes_need_more(msg, len);

    /* Mixed: the longest name with the shortest password, and back. */
    len = make_userpass(msg, 1, user, 255, "x", 1);
    assert_int_equal(parse_exact(msg, len, &up), 259);
    assert_userpass(&up, user, 255, "x", 1);
    len = make_userpass(msg, 1, "y", 1, pass, 255);
    assert_int_equal(parse_exact(msg, len, &up), 259);
    assert_userpass(&up, "y", 1, pass, 255);
}

/* RFC 1929 fields are opaque octets: NUL, control bytes, ':' and 0xff all
 * come through, and ulen/plen say where they end. */
static void test_userpass_any_octets(void **state)
{
    (void)state;
    const uint8_t user[] = {0x00, ':', 0x01, 0x7f, 0xff, ' '};
    const uint8_t pass[] = {0xff, 0x00, 0x00, '\n', '\r'};
    uint8_t msg[USERPASS_MAX];
    size_t len = make_userpass(msg, 1, user, sizeof(user), pass, sizeof(pass));
    struct socks5_userpass up;
    assert_int_equal(parse_exact(msg, len, &up), (ssize_t)len);
    assert_userpass(&up, user, sizeof(user), pass, sizeof(pass));
    assert_prefixes_need_more(msg, len);
}

/* Every truncation of several messages needs more, never an error and
 * never a read past the end. */
static void test_userpass_every_truncated_prefix(void **state)
{
    (void)state;
    static const size_t lens[][2] = {{1, 1}, {1, 2}, {2, 1}, {5, 6}, {17, 0xff}, {0xff, 3}};
    uint8_t user[255], pass[255];
    memset(user, 'u', sizeof(user));
    memset(pass, 'p', sizeof(pass));
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        uint8_t msg[USERPASS_MAX];
        size_t len = make_userpass(msg, 1, user, lens[i][0], pass, lens[i][1]);
        assert_prefixes_need_more(msg, len);
    }
}

static void test_userpass_bad_version(void **state)
{
    (void)state;
    static const uint8_t versions[] = {0x00, 0x02, 0x05, 0x80, 0xff};
    for (size_t i = 0; i < sizeof(versions); i++) {
        uint8_t msg[USERPASS_MAX];
        size_t len = make_userpass(msg, versions[i], "alice", 5, "pw", 2);
        struct socks5_userpass up;
        /* Judged on byte 0 alone: a client speaking something else is
         * refused at once instead of being waited for. */
        for (size_t n = 1; n <= len; n++)
            assert_int_equal(parse_exact(msg, n, &up), SOCKS5_E_AUTH_VERSION);
        assert_int_equal(parse_exact(msg, 0, &up), 0);
    }
    /* A bad version wins over a zero length behind it. */
    const uint8_t both[] = {0x05, 0x00, 0x00};
    struct socks5_userpass up;
    assert_int_equal(parse_exact(both, sizeof(both), &up), SOCKS5_E_AUTH_VERSION);
}

static void test_userpass_zero_ulen(void **state)
{
    (void)state;
    const uint8_t msg[] = {0x01, 0x00, 0x02, 'p', 'w'};
    struct socks5_userpass up;
    assert_int_equal(parse_exact(msg, 0, &up), 0);
    assert_int_equal(parse_exact(msg, 1, &up), 0);
    /* As soon as ULEN arrives. */
    for (size_t n = 2; n <= sizeof(msg); n++)
        assert_int_equal(parse_exact(msg, n, &up), SOCKS5_E_AUTH_LEN);
    /* Even with both lengths zero, the first one is the verdict. */
    const uint8_t zz[] = {0x01, 0x00, 0x00};
    assert_int_equal(parse_exact(zz, sizeof(zz), &up), SOCKS5_E_AUTH_LEN);
}

static void test_userpass_zero_plen(void **state)
{
    (void)state;
    uint8_t msg[USERPASS_MAX];
    size_t len = make_userpass(msg, 1, "alice", 5, "", 0);
    assert_int_equal(len, 8);
    struct socks5_userpass up;
    /* Up to and excluding PLEN: more is needed. */
    for (size_t n = 0; n < 8; n++)
        assert_int_equal(parse_exact(msg, n, &up), 0);
    /* As soon as PLEN arrives, whatever follows it. */
    assert_int_equal(parse_exact(msg, 8, &up), SOCKS5_E_AUTH_LEN);
    msg[8] = 'x';
    msg[9] = 'y';
    assert_int_equal(parse_exact(msg, 10, &up), SOCKS5_E_AUTH_LEN);

    /* The 255-byte name with an empty password: PLEN is byte 257. */
    uint8_t user[255];
    memset(user, 'n', sizeof(user));
    len = make_userpass(msg, 1, user, 255, "", 0);
    assert_int_equal(len, 258);
    assert_int_equal(parse_exact(msg, 257, &up), 0);
    assert_int_equal(parse_exact(msg, 258, &up), SOCKS5_E_AUTH_LEN);
}

static void test_userpass_error_codes_distinct(void **state)
{
    (void)state;
    assert_true(SOCKS5_E_AUTH_VERSION < 0);
    assert_true(SOCKS5_E_AUTH_LEN < 0);
    assert_int_not_equal(SOCKS5_E_AUTH_VERSION, SOCKS5_E_AUTH_LEN);
    assert_int_not_equal(SOCKS5_E_AUTH_VERSION, SOCKS5_E_VERSION);
    assert_int_not_equal(SOCKS5_E_AUTH_LEN, SOCKS5_E_VERSION);
}

/* What follows the message (a pipelined request) is left for the caller. */
static void test_userpass_trailing_bytes(void **state)
{
    (void)state;
    uint8_t msg[USERPASS_MAX + 16];
    size_t len = make_userpass(msg, 1, "bob", 3, "hunter2", 7);
    const uint8_t request[] = {5, 1, 0, 1, 127, 0, 0, 1, 0, 80};
    memcpy(msg + len, request, sizeof(request));
    struct socks5_userpass up;
    assert_int_equal(parse_exact(msg, len + sizeof(request), &up), (ssize_t)len);
    assert_userpass(&up, "bob", 3, "hunter2", 7);
    /* One trailing byte, too. */
    assert_int_equal(parse_exact(msg, len + 1, &up), (ssize_t)len);
    assert_userpass(&up, "bob", 3, "hunter2", 7);
}

/* Fed byte by byte (a growing buffer, as a slow client delivers it), the
 * parser needs more until the last byte and then returns what it returns
 * for the whole message: for good messages and bad ones alike. */
static void test_userpass_incremental_matches_whole(void **state)
{
    (void)state;
    struct harness_rng rng;
    harness_rng_init(&rng, 1929);
    for (int iter = 0; iter < 300; iter++) {
        uint8_t user[255], pass[255], msg[USERPASS_MAX];
        size_t ulen = 1 + harness_rng_below(&rng, 255);
        size_t plen = 1 + harness_rng_below(&rng, 255);
        for (size_t i = 0; i < ulen; i++)
            user[i] = (uint8_t)harness_rng_next(&rng);
        for (size_t i = 0; i < plen; i++)
            pass[i] = (uint8_t)harness_rng_next(&rng);
        size_t len = make_userpass(msg, 1, user, ulen, pass, plen);
        /* One in four is spoiled: a bad version or a zero length. */
        size_t bad_at = SIZE_MAX;
        ssize_t want = (ssize_t)len;
        switch (iter % 8) {
        case 1:
            msg[0] = (uint8_t)(2 + harness_rng_below(&rng, 250));
            bad_at = 0;
            want = SOCKS5_E_AUTH_VERSION;
            break;
        case 3:
            msg[1] = 0;
            bad_at = 1;
            want = SOCKS5_E_AUTH_LEN;
            break;
        case 5:
            msg[2 + ulen] = 0;
            bad_at = 2 + ulen;
            want = SOCKS5_E_AUTH_LEN;
            break;
        default:
            break;
        }
        struct socks5_userpass whole, part;
        memset(&whole, 0, sizeof(whole));
        memset(&part, 0, sizeof(part));
        ssize_t rc_whole = parse_exact(msg, len, &whole);
        assert_int_equal(rc_whole, want);
        ssize_t rc = 0;
        size_t n = 0;
        while (n < len) {
            n++;
            rc = parse_exact(msg, n, &part);
            if (rc != 0)
                break;
        }
        assert_int_equal(rc, want);
        if (want > 0) {
            assert_int_equal(n, len);
            assert_userpass(&part, user, ulen, pass, plen);
            assert_userpass(&whole, user, ulen, pass, plen);
            assert_memory_equal(part.user, whole.user, ulen + 1);
            assert_memory_equal(part.pass, whole.pass, plen + 1);
        } else {
            assert_int_equal(n, bad_at + 1); /* judged on the byte itself */
        }
    }
}

/* ---- socks5_write_auth_status ------------------------------------------ */

static void test_write_auth_status(void **state)
{
    (void)state;
    uint8_t out[3] = {0xee, 0xee, 0xee};
    assert_int_equal(socks5_write_auth_status(out, SOCKS5_AUTH_OK), 2);
    assert_int_equal(out[0], 0x01);
    assert_int_equal(out[1], 0x00);
    assert_int_equal(out[2], 0xee);
    assert_int_equal(socks5_write_auth_status(out, SOCKS5_AUTH_FAIL), 2);
    assert_int_equal(out[0], 0x01);
    assert_int_equal(out[1], 0x01);
    assert_int_equal(out[2], 0xee);
    /* Any status byte is written as given (RFC 1929: non-zero is failure). */
    assert_int_equal(socks5_write_auth_status(out, 0xff), 2);
    assert_int_equal(out[1], 0xff);
    assert_int_equal(SOCKS5_AUTH_VERSION, 0x01);
}

/* ---- socks5_write_userpass --------------------------------------------- */

static void test_write_userpass_basic(void **state)
{
    (void)state;
    uint8_t out[64];
    memset(out, 0xee, sizeof(out));
    size_t n = socks5_write_userpass(out, sizeof(out), "alice", 5, "secret", 6);
    assert_int_equal(n, 14);
    const uint8_t want[] = {1, 5, 'a', 'l', 'i', 'c', 'e', 6, 's', 'e', 'c', 'r', 'e', 't'};
    assert_memory_equal(out, want, sizeof(want));
    assert_int_equal(out[14], 0xee);
}

static void test_write_userpass_length_limits(void **state)
{
    (void)state;
    char big[256];
    memset(big, 'z', sizeof(big));
    uint8_t out[USERPASS_MAX + 8];
    memset(out, 0xee, sizeof(out));
    /* 0 and 256 are out of RFC 1929's range for either field. */
    assert_int_equal(socks5_write_userpass(out, sizeof(out), "", 0, "pw", 2), 0);
    assert_int_equal(socks5_write_userpass(out, sizeof(out), "u", 1, "", 0), 0);
    assert_int_equal(socks5_write_userpass(out, sizeof(out), big, 256, "pw", 2), 0);
    assert_int_equal(socks5_write_userpass(out, sizeof(out), "u", 1, big, 256), 0);
    assert_int_equal(socks5_write_userpass(out, sizeof(out), big, 1000, big, 1000), 0);
    for (size_t i = 0; i < sizeof(out); i++)
        assert_int_equal(out[i], 0xee); /* a refusal writes nothing */
    /* 1 and 255 are in range. */
    assert_int_equal(socks5_write_userpass(out, sizeof(out), "u", 1, "p", 1), 5);
    assert_int_equal(socks5_write_userpass(out, sizeof(out), big, 255, big, 255), USERPASS_MAX);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 255);
    assert_int_equal(out[257], 255);
    assert_int_equal(out[USERPASS_MAX], 0xee);
}

/* Each cap below the size is refused without a write past it (the buffer
 * is exactly cap bytes on the heap, so ASan would see one); the exact size
 * is enough. */
static void test_write_userpass_small_cap(void **state)
{
    (void)state;
    static const size_t sizes[][2] = {{1, 1}, {5, 6}, {255, 255}};
    char user[255], pass[255];
    memset(user, 'u', sizeof(user));
    memset(pass, 'p', sizeof(pass));
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t ulen = sizes[i][0], plen = sizes[i][1], need = 3 + ulen + plen;
        for (size_t cap = 0; cap <= need; cap++) {
            uint8_t *out = malloc(cap ? cap : 1);
            assert_non_null(out);
            size_t n = socks5_write_userpass(out, cap, user, ulen, pass, plen);
            assert_int_equal(n, cap == need ? need : 0);
            free(out);
        }
    }
}

/* The client's writer and the server's parser agree on every length. */
static void test_write_then_parse_roundtrip(void **state)
{
    (void)state;
    struct harness_rng rng;
    harness_rng_init(&rng, 0x1929);
    for (int iter = 0; iter < 500; iter++) {
        char user[255], pass[255];
        size_t ulen = 1 + harness_rng_below(&rng, 255);
        size_t plen = 1 + harness_rng_below(&rng, 255);
        if (iter == 0)
            ulen = plen = 1;
        if (iter == 1)
            ulen = plen = 255;
        for (size_t i = 0; i < ulen; i++)
            user[i] = (char)harness_rng_next(&rng);
        for (size_t i = 0; i < plen; i++)
            pass[i] = (char)harness_rng_next(&rng);
        uint8_t out[USERPASS_MAX];
        size_t n = socks5_write_userpass(out, sizeof(out), user, ulen, pass, plen);
        assert_int_equal(n, 3 + ulen + plen);
        struct socks5_userpass up;
        assert_int_equal(parse_exact(out, n, &up), (ssize_t)n);
        assert_userpass(&up, user, ulen, pass, plen);
    }
}

/* ---- socks5_parse_auth_status ------------------------------------------ */

static void test_parse_auth_status(void **state)
{
    (void)state;
    uint8_t status = 0xee;
    const uint8_t ok[] = {1, 0};
    assert_int_equal(parse_status_exact(ok, 0, &status), 0);
    assert_int_equal(parse_status_exact(ok, 1, &status), 0);
    assert_int_equal(status, 0xee); /* untouched until complete */
    assert_int_equal(parse_status_exact(ok, 2, &status), 2);
    assert_int_equal(status, SOCKS5_AUTH_OK);

    const uint8_t fail[] = {1, 1};
    assert_int_equal(parse_status_exact(fail, 2, &status), 2);
    assert_int_equal(status, SOCKS5_AUTH_FAIL);

    const uint8_t other[] = {1, 0x7f};
    assert_int_equal(parse_status_exact(other, 2, &status), 2);
    assert_int_equal(status, 0x7f);

    /* Trailing bytes (the server's reply may follow) are not consumed. */
    const uint8_t trailing[] = {1, 0, 5, 0, 0, 1};
    assert_int_equal(parse_status_exact(trailing, sizeof(trailing), &status), 2);
    assert_int_equal(status, 0);
}

static void test_parse_auth_status_bad_version(void **state)
{
    (void)state;
    static const uint8_t versions[] = {0x00, 0x02, 0x05, 0xff};
    for (size_t i = 0; i < sizeof(versions); i++) {
        const uint8_t msg[] = {versions[i], 0};
        uint8_t status = 0xee;
        /* A server answering with a method-selection message (05 xx) is
         * caught on its first byte. */
        assert_int_equal(parse_status_exact(msg, 1, &status), SOCKS5_E_AUTH_VERSION);
        assert_int_equal(parse_status_exact(msg, 2, &status), SOCKS5_E_AUTH_VERSION);
        assert_int_equal(status, 0xee);
    }
}

/* The writer's status is what the parser reads back. */
static void test_auth_status_roundtrip(void **state)
{
    (void)state;
    for (unsigned s = 0; s < 256; s++) {
        uint8_t out[2], got = 0;
        assert_int_equal(socks5_write_auth_status(out, (uint8_t)s), 2);
        assert_int_equal(parse_status_exact(out, 2, &got), 2);
        assert_int_equal(got, s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_userpass_basic),
        cmocka_unit_test(test_userpass_one_byte_fields),
        cmocka_unit_test(test_userpass_255_byte_fields),
        cmocka_unit_test(test_userpass_any_octets),
        cmocka_unit_test(test_userpass_every_truncated_prefix),
        cmocka_unit_test(test_userpass_bad_version),
        cmocka_unit_test(test_userpass_zero_ulen),
        cmocka_unit_test(test_userpass_zero_plen),
        cmocka_unit_test(test_userpass_error_codes_distinct),
        cmocka_unit_test(test_userpass_trailing_bytes),
        cmocka_unit_test(test_userpass_incremental_matches_whole),
        cmocka_unit_test(test_write_auth_status),
        cmocka_unit_test(test_write_userpass_basic),
        cmocka_unit_test(test_write_userpass_length_limits),
        cmocka_unit_test(test_write_userpass_small_cap),
        cmocka_unit_test(test_write_then_parse_roundtrip),
        cmocka_unit_test(test_parse_auth_status),
        cmocka_unit_test(test_parse_auth_status_bad_version),
        cmocka_unit_test(test_auth_status_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
