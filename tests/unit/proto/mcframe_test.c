/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcframe_test.c: the Minecraft frames of proto/mcframe: any frame read
 * whole or asked for more at every prefix, and refused when its length is
 * 0, its id does not fit or it is over the cap; the status query a check
 * sends (read back by mc_sniff); a Status Response written and read back;
 * the pong; the legacy kick replies of both forms in UTF-16BE with a
 * surrogate pair and invalid UTF-8; the offline JSON's escaping; the
 * players scan.
 */
#include "harness.h"

#include "proto/mcframe.h"

static void test_frames(void **state)
{
    (void)state;
    static const uint8_t f[] = {0x03, 0x01, 0xaa, 0xbb, 0xcc};
    uint32_t id;
    size_t off, len, flen;
    for (size_t k = 0; k < 4; k++)
        assert_int_equal(mc_frame(f, k, 64, &id, &off, &len, &flen), 0);
    assert_int_equal(mc_frame(f, sizeof(f), 64, &id, &off, &len, &flen), 1);
    assert_int_equal(id, 1);
    assert_int_equal(off, 2);
    assert_int_equal(len, 2);
    assert_int_equal(flen, 4);
    static const uint8_t zero[] = {0x00};
    assert_int_equal(mc_frame(zero, 1, 64, &id, &off, &len, &flen), MC_E_FRAME);
    static const uint8_t bigid[] = {0x02, 0x80, 0x80};
    assert_int_equal(mc_frame(bigid, 3, 64, &id, &off, &len, &flen), MC_E_FRAME);
    static const uint8_t huge[] = {0xff, 0x01};
    assert_int_equal(mc_frame(huge, 2, 64, &id, &off, &len, &flen), MC_E_TOO_BIG);
    static const uint8_t badvar[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(mc_frame(badvar, 6, 64, &id, &off, &len, &flen), MC_E_VARINT);
}

static void test_status_query(void **state)
{
    (void)state;
    uint8_t q[300];
    size_t n = mc_status_query(q, sizeof(q), "play.test", 25565, 765);
    struct mc_hello h;
    assert_int_equal(mc_sniff(q, n, 0, false, &h), MC_OK);
    assert_int_equal(h.intent, 1);
    assert_int_equal(h.protocol, 765);
    assert_int_equal(h.port, 25565);
    assert_string_equal(h.host, "play.test");
    assert_int_equal(n, h.msg_len + 2);
    assert_memory_equal(q + h.msg_len, "\x01\x00", 2); /* the Status Request */
    assert_int_equal(mc_status_query(q, 10, "play.test", 1, 765), 0);
}

static void test_status_reply_and_json(void **state)
{
    (void)state;
    static const char json[] = "{\"players\":{\"max\":20,\"online\":3}}";
    uint8_t out[200];
    size_t n = mc_status_reply(out, sizeof(out), json, sizeof(json) - 1);
    uint32_t id;
    size_t off, len, flen, joff, jlen;
    assert_int_equal(mc_frame(out, n, sizeof(out), &id, &off, &len, &flen), 1);
    assert_int_equal(id, 0);
    assert_int_equal(flen, n);
    assert_int_equal(mc_status_json(out + off, len, &joff, &jlen), 1);
    assert_int_equal(jlen, sizeof(json) - 1);
    assert_memory_equal(out + off + joff, json, jlen);
    /* A string that does not fill the body, or runs past it. */
    assert_int_equal(mc_status_json(out + off, len - 1, &joff, &jlen), MC_E_FRAME);
    uint8_t extra[100];
    memcpy(extra, out + off, len);
    extra[len] = 'x';
    assert_int_equal(mc_status_json(extra, len + 1, &joff, &jlen), MC_E_FRAME);
    assert_int_equal(mc_status_reply(out, 10, json, sizeof(json) - 1), 0);
    int64_t on, max;
    assert_true(mc_status_players(json, sizeof(json) - 1, &on, &max));
    assert_int_equal(on, 3);
    assert_int_equal(max, 20);
    static const char spaced[] = "{\"max\":1, \"players\" : { \"online\" : 7 , \"max\" : -1 } }";
    assert_true(mc_status_players(spaced, sizeof(spaced) - 1, &on, &max));
    assert_int_equal(on, 7);
    assert_int_equal(max, -1);
    assert_false(mc_status_players("{\"players\":{}}", 14, &on, &max));
    uint8_t pong[10], payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(mc_pong(pong, payload), 10);
    assert_memory_equal(pong, "\x09\x01\x01\x02\x03\x04\x05\x06\x07\x08", 10);
}

static void test_legacy_replies(void **state)
{
    (void)state;
    uint8_t out[400];
    /* FE01 / 1.6: \u00a71 \0 127 \0 v \0 motd \0 3 \0 20; a surrogate pair
     * and an invalid byte in the motd. */
    size_t n =
        mc_legacy_reply(out, sizeof(out), MC_LEGACY_FE01, 127, "v", "a\xf0\x9f\x98\x80\xff", 3, 20);
    static const uint8_t want[] = {0x00, 0xa7, 0, '1', 0, 0,   0, '1', 0,    '2',  0,    '7',
                                   0,    0,    0, 'v', 0, 0,   0, 'a', 0xd8, 0x3d, 0xde, 0x00,
                                   0xff, 0xfd, 0, 0,   0, '3', 0, 0,   0,    '2',  0,    '0'};
    assert_int_equal(n, 3 + sizeof(want));
    assert_int_equal(out[0], 0xff);
    assert_int_equal(out[1] << 8 | out[2], sizeof(want) / 2);
    assert_memory_equal(out + 3, want, sizeof(want));
    /* FE: motd \u00a7 online \u00a7 max, the separators dropped from the motd. */
    n = mc_legacy_reply(out, sizeof(out), MC_LEGACY_FE, 127, "v", "m\xc2\xa7x", 0, 5);
    static const uint8_t fe[] = {0, 'm', 0, 'x', 0, 0xa7, 0, '0', 0, 0xa7, 0, '5'};
    assert_int_equal(n, 3 + sizeof(fe));
    assert_memory_equal(out + 3, fe, sizeof(fe));
    assert_int_equal(mc_legacy_reply(out, 8, MC_LEGACY_FE01, 127, "v", "motd", 0, 0), 0);
}

static void test_offline_json(void **state)
{
    (void)state;
    char out[300];
    size_t n = mc_status_offline(out, sizeof(out), "a \"b\" \\ \x01 \xe2\x80\x94\xff");
    assert_int_equal(n, strlen(out));
    assert_string_equal(out,
                        "{\"version\":{\"name\":\"offline\",\"protocol\":-1},\"players\":{\"max\":"
                        "0,\"online\":0},\"description\":{\"text\":\"a \\\"b\\\" \\\\ "
                        "\\u0001 \xe2\x80\x94\xef\xbf\xbd\"}}");
    assert_int_equal(mc_status_offline(out, 40, "x"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_status_query),
        cmocka_unit_test(test_status_reply_and_json),
        cmocka_unit_test(test_legacy_replies),
        cmocka_unit_test(test_offline_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
