/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * squidauth_test.c: Squid's basic-auth helper lines as proto/squidauth
 * writes and reads them: the escaping of every byte value against Squid's
 * rfc1738_escape() rules (as its helpers undo it), the request line and
 * its caps, and replies old and new (OK/ERR/BH, kv-pairs, quoted
 * messages, free text, garbage).
 */
#include "harness.h"

#include "proto/squidauth.h"

static const char *esc(const char *s, char *buf, size_t cap)
{
    ssize_t n = squidauth_escape((const uint8_t *)s, strlen(s), buf, cap);
    assert_true(n >= 0);
    assert_int_equal((size_t)n, strlen(buf));
    return buf;
}

static void test_escape_examples(void **state)
{
    (void)state;
    char b[256];
    assert_string_equal(esc("alice", b, sizeof(b)), "alice");
    assert_string_equal(esc("Al1ce-_.@:/;?=&+$,!*()", b, sizeof(b)), "Al1ce-_.@:/;?=&+$,!*()");
    assert_string_equal(esc("a b%c", b, sizeof(b)), "a%20b%25c");
    assert_string_equal(esc("<>\"#{}|\\^~[]`'", b, sizeof(b)),
                        "%3C%3E%22%23%7B%7D%7C%5C%5E%7E%5B%5D%60%27");
    assert_string_equal(esc("\t\r\n\x7f", b, sizeof(b)), "%09%0D%0A%7F");
    assert_string_equal(esc("\xc3\xa9", b, sizeof(b)), "%C3%A9");
    assert_string_equal(esc("", b, sizeof(b)), "");
}

/* Every byte: escaped exactly when Squid escapes it, and %XX decodes back. */
static void test_escape_every_byte(void **state)
{
    (void)state;
    for (unsigned v = 0; v < 256; v++) {
        uint8_t in = (uint8_t)v;
        char out[8];
        ssize_t n = squidauth_escape(&in, 1, out, sizeof(out));
        bool alnum = (v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') || (v >= '0' && v <= '9');
        bool squid = !alnum && (v <= 0x20 || v >= 0x7f || v == '%' ||
                                (v && strchr("<>\"#{}|\\^~[]`'", (int)v)));
        if (squid) {
            assert_int_equal(n, 3);
            unsigned back = 0;
            assert_int_equal(sscanf(out, "%%%2X", &back), 1);
            assert_int_equal(back, v);
            assert_true(out[1] < 'a' && out[2] < 'a'); /* upper-case hex */
        } else {
            assert_int_equal(n, 1);
            assert_int_equal((uint8_t)out[0], v);
        }
    }
}

static void test_escape_cap(void **state)
{
    (void)state;
    char b[8];
    assert_int_equal(squidauth_escape((const uint8_t *)"abc", 3, b, 3), -1);
    assert_int_equal(squidauth_escape((const uint8_t *)"abc", 3, b, 4), 3);
    assert_int_equal(squidauth_escape((const uint8_t *)"a b", 3, b, 5), -1);
    assert_int_equal(squidauth_escape((const uint8_t *)"a b", 3, b, 6), 5);
    assert_int_equal(squidauth_escape((const uint8_t *)"", 0, b, 0), -1);
}

static void test_request_line(void **state)
{
    (void)state;
    char b[64];
    ssize_t n = squidauth_request((const uint8_t *)"bob smith", 9, (const uint8_t *)"p w%", 4, b,
                                  sizeof(b));
    assert_string_equal(b, "bob%20smith p%20w%25\n");
    assert_int_equal(n, (ssize_t)strlen(b));
    /* An empty password is an empty field: "USER \n". */
    n = squidauth_request((const uint8_t *)"u", 1, (const uint8_t *)"", 0, b, sizeof(b));
    assert_string_equal(b, "u \n");
    /* A NUL byte never ends the line early. */
    n = squidauth_request((const uint8_t *)"u", 1, (const uint8_t *)"a\0b", 3, b, sizeof(b));
    assert_string_equal(b, "u a%00b\n");
    /* Every cap that is too small says so, none overflows. */
    for (size_t cap = 0; cap < 9; cap++)
        assert_int_equal(
            squidauth_request((const uint8_t *)"u", 1, (const uint8_t *)"a\0b", 3, b, cap), -1);
    assert_int_equal(squidauth_request((const uint8_t *)"u", 1, (const uint8_t *)"a\0b", 3, b, 9),
                     8);
    /* The worst case: 255 + 255 bytes, all escaped. */
    uint8_t all[255];
    memset(all, 0xff, sizeof(all));
    char big[3 * 255 * 2 + 3];
    assert_int_equal(squidauth_request(all, 255, all, 255, big, sizeof(big)), 3 * 255 * 2 + 2);
}

static struct squidauth_reply parse_ok(const char *line)
{
    struct squidauth_reply r;
    /* an exact-size copy, so ASan sees any read past the line */
    size_t len = strlen(line);
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, line, len);
    assert_int_equal(squidauth_reply_parse(copy, len, &r), 0);
    if (r.msg) {
        assert_true(r.msg >= copy && r.msg + r.msglen <= copy + len);
        r.msg = line + (r.msg - copy);
    }
    free(copy);
    return r;
}

static void expect_msg(const struct squidauth_reply *r, const char *want)
{
    if (!want) {
        assert_int_equal(r->msglen, 0);
        return;
    }
    assert_int_equal(r->msglen, strlen(want));
    assert_memory_equal(r->msg, want, r->msglen);
}

static void test_reply_codes(void **state)
{
    (void)state;
    struct squidauth_reply r = parse_ok("OK");
    assert_int_equal(r.code, SQUIDAUTH_OK);
    expect_msg(&r, NULL);
    r = parse_ok("ERR");
    assert_int_equal(r.code, SQUIDAUTH_ERR);
    r = parse_ok("BH");
    assert_int_equal(r.code, SQUIDAUTH_BH);
    r = parse_ok("OK\r");
    assert_int_equal(r.code, SQUIDAUTH_OK);
    r = parse_ok("ERR  \t");
    assert_int_equal(r.code, SQUIDAUTH_ERR);
    expect_msg(&r, NULL);
}

static void test_reply_messages(void **state)
{
    (void)state;
    struct squidauth_reply r = parse_ok("ERR message=\"Wrong password\"");
    assert_int_equal(r.code, SQUIDAUTH_ERR);
    expect_msg(&r, "Wrong password");
    r = parse_ok("ERR user=bob message=expired ttl=5");
    expect_msg(&r, "expired");
    r = parse_ok("OK user=alice group=\"a b\"");
    assert_int_equal(r.code, SQUIDAUTH_OK);
    expect_msg(&r, NULL);
    r = parse_ok("BH message=\"say \\\"no\\\"\" x=1");
    assert_int_equal(r.code, SQUIDAUTH_BH);
    expect_msg(&r, "say \\\"no\\\"");
    r = parse_ok("ERR message=\"unterminated");
    expect_msg(&r, "unterminated");
    /* older helpers: free text */
    r = parse_ok("ERR No such user");
    expect_msg(&r, "No such user");
    r = parse_ok("BH helper crashed\r");
    expect_msg(&r, "helper crashed");
}

static void test_reply_garbage(void **state)
{
    (void)state;
    struct squidauth_reply r;
    static const char *const bad[] = {"", " OK", "ok", "OKAY", "ERRX", "TT abc", "AF", "O", "\r"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(squidauth_reply_parse(bad[i], strlen(bad[i]), &r), -1);
    /* every prefix of a valid reply: a reply or refused, never a read past it */
    const char *line = "ERR message=\"x y\" a=b";
    for (size_t n = 0; n <= strlen(line); n++) {
        char *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, line, n);
        int rc = squidauth_reply_parse(copy, n, &r);
        assert_int_equal(rc, n >= 3 ? 0 : -1);
        free(copy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_examples), cmocka_unit_test(test_escape_every_byte),
        cmocka_unit_test(test_escape_cap),      cmocka_unit_test(test_request_line),
        cmocka_unit_test(test_reply_codes),     cmocka_unit_test(test_reply_messages),
        cmocka_unit_test(test_reply_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
