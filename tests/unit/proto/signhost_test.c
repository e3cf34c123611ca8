/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signhost_test.c: the wire forms of signed host names (proto/signhost):
 * a hop field and a token label written and read back; every malformed
 * variant refused (bad kid, time, address, tag, separators, lengths, a
 * non-base32 character, the token's last two bits set); the last of two
 * "\0ferry1\0" marks used; the message encoding's lengths and fields; and
 * mc_rewrite_addr() re-framing a handshake with a shorter address.
 */
#include "harness.h"

#include "proto/mcframe.h"
#include "proto/mcsniff.h"
#include "proto/signhost.h"

static int parse_hop_str(const char *s, size_t n, struct signhost *out)
{
    uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees any over-read */
    assert_non_null(copy);
    memcpy(copy, s, n);
    int rc = signhost_parse_hop(copy, n, out);
    free(copy);
    return rc;
}

#define HOP(lit, out) parse_hop_str(lit, sizeof(lit) - 1, out)

static void test_hop_round_trip(void **state)
{
    (void)state;
    struct signhost sh = {.form = SIGNHOST_HOP, .kid = 7, .time = 1700000000};
    assert_int_equal(addr_parse("[2001:db8::1]:443", -1, &sh.client), 0);
    for (int i = 0; i < SIGNHOST_TAG_LEN; i++)
        sh.tag[i] = (uint8_t)(i * 17);
    uint8_t buf[200];
    memcpy(buf, "a.test", 6);
    size_t n = signhost_format_hop(&sh, buf + 6, sizeof(buf) - 6);
    assert_true(n > 8);
    assert_memory_equal(buf + 6,
                        "\0ferry1\0"
                        "7.1700000000.[2001:db8::1]:443.0011",
                        8 + 35);
    struct signhost back;
    assert_int_equal(parse_hop_str((const char *)buf, 6 + n, &back), 1);
    assert_int_equal(back.kid, 7);
    assert_int_equal(back.time, 1700000000);
    assert_int_equal(back.keep, 6);
    assert_true(addr_equal(&back.client, &sh.client));
    assert_memory_equal(back.tag, sh.tag, SIGNHOST_TAG_LEN);
    /* IPv4 (dots inside the field) and a Forge marker before the mark. */
    struct signhost v4;
    assert_int_equal(HOP("h.test\0FML2\0\0ferry1\0"
                         "31.0.10.0.0.1:1.00112233445566778899aabbccddeeff",
                         &v4),
                     1);
    assert_int_equal(v4.kid, 31);
    assert_int_equal(v4.time, 0);
    assert_int_equal(v4.keep, 12);
    assert_int_equal(v4.client.family, AF_INET);
    assert_int_equal(v4.client.port, 1);
    assert_int_equal(v4.tag[15], 0xff);
    /* Two marks: the last one is the signature. */
    assert_int_equal(HOP("h\0ferry1\0junk\0ferry1\0"
                         "1.5.1.2.3.4:5.00112233445566778899aabbccddeeff",
                         &v4),
                     1);
    assert_int_equal(v4.keep, 13);
}

static void test_hop_refused(void **state)
{
    (void)state;
    struct signhost sh;
    static const char *const bad[] = {
        "32.5.1.2.3.4:5.00112233445566778899aabbccddeeff", /* kid over 31 */
        "01.5.1.2.3.4:5.00112233445566778899aabbccddeeff", /* leading zero */
        ".5.1.2.3.4:5.00112233445566778899aabbccddeeff",   /* no kid */
        "1.x.1.2.3.4:5.00112233445566778899aabbccddeeff",  /* time not decimal */
        "1.99999999999999999999.1.2.3.4:5.00112233445566778899aabbccddeeff",
        "1.5.1.2.3.4.00112233445566778899aabbccddeeff",   /* no port */
        "1.5.1.2.3.4:0.00112233445566778899aabbccddeeff", /* port 0 */
        "1.5.host:5.00112233445566778899aabbccddeeff",    /* not an IP */
        "1.5.1.2.3.4:5.00112233445566778899AABBCCDDEEFF", /* upper-case hex */
        "1.5.1.2.3.4:5.0011223344556677889aabbccddeeff",  /* 31 digits */
        "1.5.1.2.3.4:5-00112233445566778899aabbccddeeff", /* no dot before the tag */
        "1.5.1.2.3.4:5.00112233445566778899aabbccddeefg",
        "00112233445566778899aabbccddeeff",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char a[200];
        int n = snprintf(a, sizeof(a), "h.test%c%s%c%s", 0, "ferry1", 0, bad[i]);
        assert_int_equal(parse_hop_str(a, (size_t)n, &sh), -1);
    }
    /* No mark at all, or a mark of another version: not a hop signature. */
    assert_int_equal(HOP("h.test", &sh), 0);
    assert_int_equal(HOP("h.test\0ferry2\0"
                         "1.5.1.2.3.4:5.00112233445566778899aabbccddeeff",
                         &sh),
                     0);
    assert_int_equal(parse_hop_str("", 0, &sh), 0);
    /* A field too long to be one. */
    char big[200];
    memset(big, '1', sizeof(big));
    memcpy(big, "h\0ferry1\0", 9);
    assert_int_equal(parse_hop_str(big, sizeof(big), &sh), -1);
}

static void test_token_round_trip(void **state)
{
    (void)state;
    uint8_t tag[SIGNHOST_TAG_LEN];
    for (int i = 0; i < SIGNHOST_TAG_LEN; i++)
        tag[i] = (uint8_t)(0xf0 ^ i * 29);
    char label[SIGNHOST_TOKEN_LEN + 1], host[100];
    const uint64_t expiries[] = {0, 1, 1700000000, (1ull << 40) - 1};
    for (size_t e = 0; e < 4; e++) {
        for (uint8_t kid = 0; kid < SIGNHOST_KIDS; kid += 7) {
            signhost_format_token(kid, expiries[e], tag, label);
            assert_int_equal(strlen(label), SIGNHOST_TOKEN_LEN);
            assert_int_equal(label[9], '-');
            snprintf(host, sizeof(host), "%s.play.test", label);
            struct signhost sh;
            assert_int_equal(signhost_parse_token(host, strlen(host), &sh), 1);
            assert_int_equal(sh.form, SIGNHOST_TOKEN);
            assert_int_equal(sh.kid, kid);
            assert_int_equal(sh.time, expiries[e]);
            assert_int_equal(sh.keep, SIGNHOST_TOKEN_LEN + 1);
            assert_string_equal(host + sh.keep, "play.test");
            assert_memory_equal(sh.tag, tag, SIGNHOST_TAG_LEN);
        }
    }
}

static void test_token_refused(void **state)
{
    (void)state;
    uint8_t tag[SIGNHOST_TAG_LEN] = {1, 2, 3};
    char label[SIGNHOST_TOKEN_LEN + 1], host[100];
    signhost_format_token(3, 1700000000, tag, label);
    struct signhost sh;
    /* No domain after it. */
    assert_int_equal(signhost_parse_token(label, SIGNHOST_TOKEN_LEN, &sh), 0);
    snprintf(host, sizeof(host), "%s.", label);
    assert_int_equal(signhost_parse_token(host, strlen(host), &sh), 0);
    /* Each position replaced by a character outside base32 (and '-' moved). */
    for (size_t i = 0; i < SIGNHOST_TOKEN_LEN; i++) {
        snprintf(host, sizeof(host), "%s.p.test", label);
        host[i] = i == 9 ? 'a' : (i % 2 ? '1' : '8');
        assert_int_equal(signhost_parse_token(host, strlen(host), &sh), 0);
    }
    /* The last character's two padding bits set. */
    snprintf(host, sizeof(host), "%s.p.test", label);
    char last = host[SIGNHOST_TOKEN_LEN - 1];
    host[SIGNHOST_TOKEN_LEN - 1] = last == 'a' ? 'b' : (char)(last | 1);
    assert_int_equal(signhost_parse_token(host, strlen(host), &sh), 0);
    /* A label of another length. */
    assert_int_equal(signhost_parse_token("www.play.test", 13, &sh), 0);
    snprintf(host, sizeof(host), "a%s.p.test", label);
    assert_int_equal(signhost_parse_token(host, strlen(host), &sh), 0);
}

static void test_message(void **state)
{
    (void)state;
    struct signhost sh = {.form = SIGNHOST_HOP, .kid = 2, .time = 0x0102030405060708ull};
    assert_int_equal(addr_parse("1.2.3.4:258", -1, &sh.client), 0);
    uint8_t m[SIGNHOST_MSG_MAX];
    size_t n = signhost_message(&sh, "ab", 2, m, sizeof(m));
    static const uint8_t want[] = {'f', 'e', 'r', 'r', 'y', '-', 's', 'i', 'g', 'n', 'h', 'o',
                                   's', 't', '-', '1', 1,   2,   1,   2,   3,   4,   5,   6,
                                   7,   8,   2,   'a', 'b', 4,   1,   2,   3,   4,   0,   0,
                                   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   1,   2};
    assert_int_equal(n, sizeof(want));
    assert_memory_equal(m, want, sizeof(want));
    /* A token binds no client; a host over 255 bytes or a short buffer: 0. */
    sh.form = SIGNHOST_TOKEN;
    assert_int_equal(signhost_message(&sh, "ab", 2, m, sizeof(m)), 16 + 1 + 1 + 8 + 1 + 2);
    char big[256];
    memset(big, 'a', sizeof(big));
    assert_int_equal(signhost_message(&sh, big, 256, m, sizeof(m)), 0);
    assert_int_equal(signhost_message(&sh, "ab", 2, m, 10), 0);
}

static void test_rewrite(void **state)
{
    (void)state;
    /* len 0x16 | id 0 | proto 765 (fd 05) | addr "x.test\0FML\0..." | port | intent 2 */
    static const char addr[] = "abc.play.test\0FML2\0";
    uint8_t frame[64];
    size_t n = 0, body = 1 + 2 + 1 + (sizeof(addr) - 1) + 2 + 1;
    frame[n++] = (uint8_t)body;
    frame[n++] = 0;
    frame[n++] = 0xfd;
    frame[n++] = 0x05;
    frame[n++] = (uint8_t)(sizeof(addr) - 1);
    memcpy(frame + n, addr, sizeof(addr) - 1);
    n += sizeof(addr) - 1;
    frame[n++] = 0x63;
    frame[n++] = 0xdd;
    frame[n++] = 2;
    struct mc_hello h;
    assert_int_equal(mc_sniff(frame, n, 0, false, &h), MC_OK);
    uint8_t out[64];
    size_t m =
        mc_rewrite_addr(frame, &h, (const uint8_t *)"play.test\0FML2\0", 15, out, sizeof(out));
    assert_int_equal(m, n - 4);
    struct mc_hello h2;
    assert_int_equal(mc_sniff(out, m, 0, false, &h2), MC_OK);
    assert_string_equal(h2.host, "play.test");
    assert_int_equal(h2.port, 25565);
    assert_int_equal(h2.intent, 2);
    assert_int_equal(h2.protocol, 765);
    assert_int_equal(h2.msg_len, m);
    assert_int_equal(mc_rewrite_addr(frame, &h, (const uint8_t *)"p", 1, out, 5), 0); /* no room */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hop_round_trip),   cmocka_unit_test(test_hop_refused),
        cmocka_unit_test(test_token_round_trip), cmocka_unit_test(test_token_refused),
        cmocka_unit_test(test_message),          cmocka_unit_test(test_rewrite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
