/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fields_test.c: the JSON string escaper (RFC 8259 7 with invalid UTF-8
 * replaced) and the two renderings of a field list: whole escapes only,
 * never past the buffer, numbers as numbers, a cut record still valid.
 */
#include "harness.h"

#include "log/fields.h"

static const char *esc(const char *s, size_t n, char *out, size_t cap)
{
    log_json_escape(out, cap, s, n, NULL);
    return out;
}

static void test_escape_specials(void **state)
{
    (void)state;
    char out[128];
    assert_string_equal(esc("a\"b\\c", 5, out, sizeof(out)), "a\\\"b\\\\c");
    assert_string_equal(esc("\n\r\t\b\f", 5, out, sizeof(out)), "\\n\\r\\t\\b\\f");
    assert_string_equal(esc("\x01\x1f\x7f", 3, out, sizeof(out)), "\\u0001\\u001f\\u007f");
    assert_string_equal(esc("nul\0x", 5, out, sizeof(out)), "nul\\u0000x");
    assert_string_equal(esc("plain/ascii", 11, out, sizeof(out)), "plain/ascii");
}

static void test_escape_utf8(void **state)
{
    (void)state;
    char out[128];
    /* valid: 2, 3 and 4 byte sequences are copied */
    assert_string_equal(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, out, sizeof(out)),
                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* invalid: each bad byte becomes U+FFFD */
    assert_string_equal(esc("\xff", 1, out, sizeof(out)), "\\ufffd");
    assert_string_equal(esc("\xc0\xaf", 2, out, sizeof(out)), "\\ufffd\\ufffd"); /* overlong */
    assert_string_equal(esc("\xed\xa0\x80", 3, out, sizeof(out)),
                        "\\ufffd\\ufffd\\ufffd"); /* a surrogate */
    assert_string_equal(esc("\xf4\x90\x80\x80", 4, out, sizeof(out)),
                        "\\ufffd\\ufffd\\ufffd\\ufffd"); /* above U+10FFFF */
    assert_string_equal(esc("a\xe2\x82", 3, out, sizeof(out)), "a\\ufffd\\ufffd"); /* cut */
    assert_string_equal(esc("\xc3(", 2, out, sizeof(out)), "\\ufffd(");
}

static void test_escape_bounded_whole(void **state)
{
    (void)state;
    char out[8];
    size_t used;
    /* "ab" then \u0001 (6) does not fit in 7: stop before it */
    size_t n = log_json_escape(out, sizeof(out), "ab\x01", 3, &used);
    assert_int_equal(n, 2);
    assert_int_equal(used, 2);
    assert_string_equal(out, "ab");
    n = log_json_escape(out, 3, "\xc3\xa9\xc3\xa9", 4, &used);
    assert_int_equal(n, 2);
    assert_int_equal(used, 2);
    n = log_json_escape(out, 1, "x", 1, &used);
    assert_int_equal(n, 0);
    assert_string_equal(out, "");
}

static void test_text_and_json_from_one_list(void **state)
{
    (void)state;
    struct log_field f[] = {
        LOG_FU64("id", 7),         LOG_FSTR("user", "b\"ob"), LOG_FSTR("rule", NULL),
        LOG_FPAIR("dgrams", 3, 4), LOG_FU64("up", 0),
    };
    char out[256];
    log_fields_text(out, sizeof(out), "access", f, 5);
    assert_string_equal(out, "access id=7 user=b\"ob dgrams=3/4 up=0");
    log_fields_json(out, sizeof(out), "access", f, 5);
    assert_string_equal(out, ",\"msg\":\"access\",\"id\":7,\"user\":\"b\\\"ob\",\"dgrams\":[3,4],"
                             "\"up\":0}");
}

static void test_json_cut_stays_valid(void **state)
{
    (void)state;
    char big[300];
    memset(big, 1, sizeof(big) - 1); /* each byte escapes to six */
    big[sizeof(big) - 1] = '\0';
    struct log_field f[] = {LOG_FU64("id", 1), LOG_FSTR("dst", big), LOG_FU64("up", 9)};
    char out[200];
    size_t n = log_fields_json(out, sizeof(out), "access", f, 3);
    assert_true(n < sizeof(out));
    assert_int_equal(strlen(out), n);
    assert_string_equal(out, ",\"msg\":\"access\",\"id\":1,\"truncated\":true}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_specials),
        cmocka_unit_test(test_escape_utf8),
        cmocka_unit_test(test_escape_bounded_whole),
        cmocka_unit_test(test_text_and_json_from_one_list),
        cmocka_unit_test(test_json_cut_stays_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
