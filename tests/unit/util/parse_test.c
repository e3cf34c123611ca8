/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse_test.c: the words operators write in ferry.conf (numbers,
 * durations, sizes, booleans) and the two string helpers. Each parser must
 * take the whole word or nothing, and leave *out alone when it refuses.
 */
#include "harness.h"

#include <errno.h>

#include "util/parse.h"

#define SENTINEL 0x5eed5eedull

/* ---- parse_u64 -------------------------------------------------------- */

static void test_u64_valid(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    assert_int_equal(parse_u64("0", 0, UINT64_MAX, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("42", 0, UINT64_MAX, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(parse_u64("007", 0, UINT64_MAX, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
}

static void test_u64_digits_only(void **state)
{
    (void)state;
    const char *bad[] = {"",     "-1", "+1",  " 1",  "1 ",
                         "0x10", "1a", "1.0", "1e3", "\xd9\xa1" /* ARABIC-INDIC ONE */,
                         "\t7"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_u64(bad[i], 0, UINT64_MAX, &v), -EINVAL);
        assert_true(v == SENTINEL);
    }
}

static void test_u64_overflow(void **state)
{
    (void)state;
    const char *big[] = {"18446744073709551616", "18446744073709551620", "99999999999999999999",
                         "1000000000000000000000000"};
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_u64(big[i], 0, UINT64_MAX, &v), -ERANGE);
        assert_true(v == SENTINEL);
    }
}

static void test_u64_range(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    assert_int_equal(parse_u64("0", 1, 256, &v), -ERANGE);
    assert_int_equal(parse_u64("257", 1, 256, &v), -ERANGE);
    assert_true(v == SENTINEL);
    assert_int_equal(parse_u64("1", 1, 256, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(parse_u64("256", 1, 256, &v), 0);
    assert_int_equal(v, 256);
    assert_int_equal(parse_u64("5", 5, 5, &v), 0);
    assert_int_equal(v, 5);
}

/* ---- parse_duration_ms ------------------------------------------------ */

static void test_duration_units(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t ms;
    } ok[] = {
        {"250ms", 250},   {"0ms", 0},        {"10s", 10000},    {"0s", 0},     {"5m", 300000},
        {"1m", 60000},    {"1h", 3600000},   {"24h", 86400000}, {"10", 10000}, {"0", 0},
        {"1d", 86400000}, {"7d", 604800000}, {"0d", 0},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_duration_ms(ok[i].s, 0, UINT64_MAX, &v), 0);
        assert_int_equal(v, ok[i].ms);
    }
}

static void test_duration_bad_suffix(void **state)
{
    (void)state;
    const char *bad[] = {"",    "s",   "ms", "10x",   "10 s", "10sec", "10mss", "1.5s",
                         "-1s", "+1s", "1D", "10ms ", " 10s", "1hm",   "1smh"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_duration_ms(bad[i], 0, UINT64_MAX, &v), -EINVAL);
        assert_true(v == SENTINEL);
    }
}

static void test_duration_range(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    /* The range is in milliseconds whatever unit the word used. */
    assert_int_equal(parse_duration_ms("2s", 0, 1000, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("999ms", 1000, 5000, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("0", 1, 5000, &v), -ERANGE);
    assert_true(v == SENTINEL);
    assert_int_equal(parse_duration_ms("1s", 1000, 1000, &v), 0);
    assert_int_equal(v, 1000);
    assert_int_equal(parse_duration_ms("1000ms", 1000, 1000, &v), 0);
    assert_int_equal(v, 1000);
}

static void test_duration_overflow(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    /* floor(UINT64_MAX / 1000) seconds still fits; one more does not. */
    assert_int_equal(parse_duration_ms("18446744073709551s", 0, UINT64_MAX, &v), 0);
    assert_true(v == 18446744073709551000ull);
    assert_int_equal(parse_duration_ms("18446744073709552s", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("18446744073709552", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("5124095576030h", 0, UINT64_MAX, &v), 0);
    assert_true(v == 18446744073708000000ull);
    assert_int_equal(parse_duration_ms("5124095576031h", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("99999999999999999999ms", 0, UINT64_MAX, &v), -ERANGE);
    assert_true(v == 18446744073708000000ull);
}

/* Compound durations: each unit once, largest first, no separators. */
static void test_duration_compound(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t ms;
    } ok[] = {
        {"1h30m", 5400000}, {"2d12h", 216000000},      {"1m30s", 90000},
        {"1s500ms", 1500},  {"1d1h1m1s1ms", 90061001}, {"6d23h59m59s999ms", 604799999},
        {"0h0m", 0},        {"90m", 5400000}, /* a single unit need not be the largest possible */
        {"1h90m", 9000000},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_duration_ms(ok[i].s, 0, UINT64_MAX, &v), 0);
        assert_true(v == ok[i].ms);
    }
    const char *bad[] = {"30m1h",  "1m1m", "1s1m", "1ms1s", "1h30", "1h 30m", "1h,30m",
                         "1h-30m", "h30m", "1h30", "5s10",  "1d1d", "1h30m ", "1hh"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_duration_ms(bad[i], 0, UINT64_MAX, &v), -EINVAL);
        assert_true(v == SENTINEL);
    }
}

/* Every component and the sum are checked against 64 bits; the bound
 * applies to the sum. */
static void test_duration_compound_range(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    /* 7 days exactly is within a 7-day bound; one millisecond more is not. */
    assert_int_equal(parse_duration_ms("7d", 0, 7 * 86400000ull, &v), 0);
    assert_true(v == 7 * 86400000ull);
    v = SENTINEL;
    assert_int_equal(parse_duration_ms("7d1ms", 0, 7 * 86400000ull, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("6d24h", 0, 7 * 86400000ull, &v), 0);
    assert_int_equal(parse_duration_ms("1d1ms", 0, 86400000, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("1s1ms", 1002, 5000, &v), -ERANGE);
    /* floor(UINT64_MAX / 86400000) days fits; one more does not. */
    v = SENTINEL;
    assert_int_equal(parse_duration_ms("213503982334d", 0, UINT64_MAX, &v), 0);
    assert_true(v == 213503982334ull * 86400000ull);
    assert_int_equal(parse_duration_ms("213503982335d", 0, UINT64_MAX, &v), -ERANGE);
    /* Each part fits, the sum does not. */
    assert_int_equal(parse_duration_ms("213503982334d999999999h", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_duration_ms("213503982334d23h59m59s999ms", 0, UINT64_MAX, &v), -ERANGE);
    /* A component with more digits than 64 bits hold. */
    assert_int_equal(parse_duration_ms("1h99999999999999999999s", 0, UINT64_MAX, &v), -ERANGE);
    assert_true(v == 213503982334ull * 86400000ull);
}

/* ---- parse_size ------------------------------------------------------- */

static void test_size_units(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t n;
    } ok[] = {
        {"65536", 65536},   {"512b", 512},       {"64k", 65536},          {"64kb", 65536},
        {"64KiB", 65536},   {"64K", 65536},      {"64KB", 65536},         {"64kIb", 65536},
        {"1m", 1048576},    {"1M", 1048576},     {"1mb", 1048576},        {"1MiB", 1048576},
        {"1g", 1073741824}, {"1GB", 1073741824}, {"2GiB", 2147483648ull}, {"0k", 0},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_size(ok[i].s, 0, UINT64_MAX, &v), 0);
        assert_int_equal(v, ok[i].n);
    }
}

static void test_size_bad(void **state)
{
    (void)state;
    const char *bad[] = {"", "k", "1t", "1tb", "1.5k", "-1k", "1 k", "1k ", "1kbb", "1ki", "0x10"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t v = SENTINEL;
        assert_int_equal(parse_size(bad[i], 0, UINT64_MAX, &v), -EINVAL);
        assert_true(v == SENTINEL);
    }
}

static void test_size_range_and_overflow(void **state)
{
    (void)state;
    uint64_t v = SENTINEL;
    assert_int_equal(parse_size("1023", 1024, 1 << 20, &v), -ERANGE);
    assert_int_equal(parse_size("2m", 1024, 1 << 20, &v), -ERANGE);
    assert_int_equal(parse_size("1025k", 1024, 1 << 20, &v), -ERANGE);
    assert_true(v == SENTINEL);
    assert_int_equal(parse_size("1k", 1024, 1 << 20, &v), 0);
    assert_int_equal(v, 1024);
    assert_int_equal(parse_size("1024k", 1024, 1 << 20, &v), 0);
    assert_int_equal(v, 1 << 20);
    /* 2^34 GiB is 2^64 bytes: one too many. */
    assert_int_equal(parse_size("17179869183g", 0, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX - ((1ull << 30) - 1));
    assert_int_equal(parse_size("17179869184g", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_size("18014398509481984k", 0, UINT64_MAX, &v), -ERANGE);
    assert_int_equal(parse_size("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
}

/* ---- parse_bool ------------------------------------------------------- */

static void test_bool(void **state)
{
    (void)state;
    const char *yes[] = {"yes", "true", "on", "1", "YES", "True", "oN"};
    const char *no[] = {"no", "false", "off", "0", "NO", "False", "OFF"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        bool b = false;
        assert_int_equal(parse_bool(yes[i], &b), 0);
        assert_true(b);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        bool b = true;
        assert_int_equal(parse_bool(no[i], &b), 0);
        assert_false(b);
    }
    const char *bad[] = {"", "y", "n", "2", "yes ", " no", "enable", "01", "t"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bool b = true;
        assert_int_equal(parse_bool(bad[i], &b), -EINVAL);
        assert_true(b);
    }
}

/* ---- strings ---------------------------------------------------------- */

static void test_str_copy(void **state)
{
    (void)state;
    char dst[8];
    assert_int_equal(str_copy(dst, sizeof(dst), "abc"), 0);
    assert_string_equal(dst, "abc");
    assert_int_equal(str_copy(dst, sizeof(dst), "1234567"), 0); /* cap - 1 fits */
    assert_string_equal(dst, "1234567");
    assert_int_equal(str_copy(dst, sizeof(dst), ""), 0);
    assert_string_equal(dst, "");

    memcpy(dst, "keepme!", 8);
    assert_int_equal(str_copy(dst, sizeof(dst), "12345678"), -ENAMETOOLONG);
    assert_string_equal(dst, "keepme!"); /* untouched on failure */
    assert_int_equal(str_copy(dst, 1, "a"), -ENAMETOOLONG);
    assert_int_equal(str_copy(dst, 0, ""), -ENAMETOOLONG);
    assert_string_equal(dst, "keepme!");
    assert_int_equal(str_copy(dst, 1, ""), 0);
    assert_string_equal(dst, "");
}

static void test_str_trim(void **state)
{
    (void)state;
    char a[] = "  a b \t";
    char *t = str_trim(a);
    assert_string_equal(t, "a b");
    assert_ptr_equal(t, a + 2); /* trimmed in place */

    char b[] = "";
    assert_string_equal(str_trim(b), "");
    char c[] = " \t \t ";
    assert_string_equal(str_trim(c), "");
    char d[] = "\t\tx";
    assert_string_equal(str_trim(d), "x");
    char e[] = "x";
    assert_ptr_equal(str_trim(e), e);
    assert_string_equal(e, "x");
    /* Only spaces and tabs: other whitespace is content. */
    char f[] = " x\n";
    assert_string_equal(str_trim(f), "x\n");
    char g[] = "\rx\r";
    assert_string_equal(str_trim(g), "\rx\r");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_valid),
        cmocka_unit_test(test_u64_digits_only),
        cmocka_unit_test(test_u64_overflow),
        cmocka_unit_test(test_u64_range),
        cmocka_unit_test(test_duration_units),
        cmocka_unit_test(test_duration_bad_suffix),
        cmocka_unit_test(test_duration_range),
        cmocka_unit_test(test_duration_overflow),
        cmocka_unit_test(test_duration_compound),
        cmocka_unit_test(test_duration_compound_range),
        cmocka_unit_test(test_size_units),
        cmocka_unit_test(test_size_bad),
        cmocka_unit_test(test_size_range_and_overflow),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_str_copy),
        cmocka_unit_test(test_str_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
