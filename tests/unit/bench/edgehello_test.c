/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edgehello_test.c: the canned first messages of `ferry bench edge`. The
 * ClientHellos are read back by ferry's own sniffer (proto/tlshello): the
 * name asked for, the size asked for, the records asked for (each a
 * handshake record, the two halves adding up), the server name in the
 * second record of a two-record post-quantum hello; the Minecraft
 * handshake by proto/mcsniff; and the sizes that cannot be made refused.
 */
#include "harness.h"

#include "bench/edgehello.h"
#include "proto/mcsniff.h"
#include "proto/tlshello.h"

static uint8_t buf[EDGEHELLO_MAX];

static void sniff_ok(const uint8_t *b, size_t n, const char *sni, unsigned records)
{
    struct tls_hello h;
    assert_int_equal(tls_sniff(b, n, &h), TLS_OK);
    assert_string_equal(h.sni, sni);
    assert_int_equal(h.records, records);
    assert_int_equal(h.hello_end, n);
    assert_false(h.ends_mid_record);
    assert_int_equal(h.alpn_count, 2);
    /* every proper prefix is a valid beginning */
    for (size_t k = 1; k < n; k += 97)
        assert_int_equal(tls_sniff(b, k, &h), TLS_NEED_MORE);
}

static void test_classic_517(void **state)
{
    (void)state;
    size_t n = edgehello_tls(buf, sizeof(buf), "a.test", EDGEHELLO_TLS_SIZE, 1, 0);
    assert_int_equal(n, 517);
    assert_int_equal(buf[0], 0x16);
    assert_int_equal((buf[3] << 8) | buf[4], 512);
    sniff_ok(buf, n, "a.test", 1);
}

static void test_pq_one_and_two_records(void **state)
{
    (void)state;
    size_t n = edgehello_tls(buf, sizeof(buf), "B.Test", EDGEHELLO_PQ_SIZE, 1, 1);
    assert_int_equal(n, EDGEHELLO_PQ_SIZE);
    sniff_ok(buf, n, "b.test", 1);

    n = edgehello_tls(buf, sizeof(buf), "b.test", EDGEHELLO_PQ_SIZE, 2, 1);
    assert_int_equal(n, EDGEHELLO_PQ_SIZE);
    sniff_ok(buf, n, "b.test", 2);
    size_t r1 = (size_t)(buf[3] << 8 | buf[4]);
    const uint8_t *second = buf + 5 + r1;
    assert_int_equal(second[0], 0x16);
    size_t r2 = (size_t)(second[3] << 8 | second[4]);
    assert_int_equal(5 + r1 + 5 + r2, n);
    assert_true(r1 == r2 || r1 + 1 == r2);
    /* the server name is in the second record only */
    assert_null(memmem(buf, 5 + r1, "b.test", 6));
    assert_non_null(memmem(second, 5 + r2, "b.test", 6));
    /* and the first record alone is not a verdict */
    struct tls_hello h;
    assert_int_equal(tls_sniff(buf, 5 + r1, &h), TLS_NEED_MORE);
}

static void test_sizes(void **state)
{
    (void)state;
    /* any size from the unpadded one on, but the 1..3 bytes a padding
     * extension cannot take */
    size_t min = 0;
    for (size_t t = 200; t < 600 && !min; t++)
        if (edgehello_tls(buf, sizeof(buf), "a.test", t, 1, 0))
            min = t;
    assert_true(min > 200);
    for (size_t t = min; t < min + 40; t++) {
        size_t n = edgehello_tls(buf, sizeof(buf), "a.test", t, 1, 0);
        if (t > min && t < min + 4) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_int_equal(n, t);
        sniff_ok(buf, n, "a.test", 1);
    }
    assert_int_equal(edgehello_tls(buf, sizeof(buf), "a.test", min - 1, 1, 0), 0);
    assert_int_equal(edgehello_tls(buf, 100, "a.test", 517, 1, 0), 0);
    assert_int_equal(edgehello_tls(buf, sizeof(buf), "a.test", 517, 3, 0), 0);
    assert_int_equal(edgehello_tls(buf, sizeof(buf), "", 517, 1, 0), 0);
    assert_int_equal(edgehello_tls(buf, sizeof(buf), "a.test", 1000, 1, 1), 0); /* pq: too small */
}

static void test_mc(void **state)
{
    (void)state;
    size_t n = edgehello_mc(buf, sizeof(buf), "A.test", 25565, "bench");
    assert_true(n > 0);
    struct mc_hello hs;
    assert_int_equal(mc_sniff(buf, n, 0, false, &hs), MC_OK);
    assert_string_equal(hs.host, "a.test");
    assert_int_equal(hs.intent, 2);
    assert_int_equal(hs.port, 25565);
    assert_true(hs.msg_len < n); /* the Login Start follows */
    assert_int_equal(edgehello_mc(buf, 10, "a.test", 1, "bench"), 0);
    assert_int_equal(edgehello_mc(buf, sizeof(buf), "a.test", 1, "seventeen-chars-x"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classic_517),
        cmocka_unit_test(test_pq_one_and_two_records),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_mc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
