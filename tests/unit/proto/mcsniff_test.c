/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcsniff_test.c: the Minecraft first-message sniffer of proto/mcsniff on
 * byte fixtures: vanilla handshakes of several protocol versions, the Forge
 * markers, BungeeCord forwarding, TCPShield RealIP, guard's shield, the
 * legacy FE pings and the FE 01 00 ambiguity, garbage, and every cap
 * exceeded by one. Every fixture is also fed one byte at a time (each call
 * seeing the whole prefix, from an exact-size heap copy so ASan sees any
 * read past len): the verdict must come at the same byte whatever the
 * split, and stay the same when more bytes follow.
 */
#include "harness.h"

#include "proto/mcsniff.h"

#define MSG_MAX 4096

struct msg {
    uint8_t b[MSG_MAX];
    size_t n;
};

static void put_varint(struct msg *m, uint32_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        m->b[m->n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
}

/* A handshake frame: length, id 0, protocol, address, port, intent. */
static void handshake(struct msg *m, int32_t proto, const void *addr, size_t alen, uint16_t port,
                      uint32_t intent)
{
    struct msg body = {.n = 0};
    body.b[body.n++] = 0x00;
    put_varint(&body, (uint32_t)proto);
    put_varint(&body, (uint32_t)alen);
    memcpy(body.b + body.n, addr, alen);
    body.n += alen;
    body.b[body.n++] = (uint8_t)(port >> 8);
    body.b[body.n++] = (uint8_t)port;
    put_varint(&body, intent);
    m->n = 0;
    put_varint(m, (uint32_t)body.n);
    memcpy(m->b + m->n, body.b, body.n);
    m->n += body.n;
}

#define HS(m, proto, lit, port, intent) handshake(m, proto, lit, sizeof(lit) - 1, port, intent)

static int sniff_exact(const uint8_t *p, size_t len, size_t cap, bool idle, struct mc_hello *out)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, p, len);
    int rc = mc_sniff(copy, len, cap, idle, out);
    free(copy);
    return rc;
}

/*
 * Feed p[0..len) one byte at a time; every prefix before the verdict must be
 * MC_NEED_MORE and leave out alone, every prefix from it on the verdict.
 * Returns the verdict and where it came in *at.
 */
static int feed(const uint8_t *p, size_t len, size_t cap, size_t *at, struct mc_hello *out)
{
    struct mc_hello h, poison, first;
    memset(&poison, 0xa5, sizeof(poison));
    int verdict = MC_NEED_MORE;
    *at = 0;
    for (size_t k = 0; k <= len; k++) {
        memcpy(&h, &poison, sizeof(h));
        int rc = sniff_exact(p, k, cap, false, &h);
        if (verdict == MC_NEED_MORE && rc != MC_NEED_MORE) {
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

/* A complete message alone, byte by byte, and followed by a Login Start. */
static void expect_ok(const struct msg *m, size_t cap, struct mc_hello *out)
{
    size_t at;
    assert_int_equal(feed(m->b, m->n, cap, &at, out), MC_OK);
    assert_int_equal(at, m->n);
    assert_int_equal(out->msg_len, m->n);
    struct msg more = *m;
    static const uint8_t login[] = {0x07, 0x00, 0x05, 'N', 'o', 't', 'c', 'h'};
    memcpy(more.b + more.n, login, sizeof(login));
    more.n += sizeof(login);
    struct mc_hello again;
    assert_int_equal(feed(more.b, more.n, cap, &at, &again), MC_OK);
    assert_int_equal(at, m->n);
    assert_memory_equal(&again, out, sizeof(again));
}

static void expect_err(const uint8_t *p, size_t len, size_t cap, int code, size_t at_want)
{
    size_t at;
    struct mc_hello h;
    assert_int_equal(feed(p, len, cap, &at, &h), code);
    if (at_want)
        assert_int_equal(at, at_want);
}

/* ---- modern handshakes --------------------------------------------------- */

static void test_vanilla_fixture(void **state)
{
    (void)state;
    /* EDGE.md 1.2: login, protocol 765 (1.20.4), play.server.com:25565. */
    static const uint8_t fx[] = {0x16, 0x00, 0xfd, 0x05, 0x0f, 0x70, 0x6c, 0x61,
                                 0x79, 0x2e, 0x73, 0x65, 0x72, 0x76, 0x65, 0x72,
                                 0x2e, 0x63, 0x6f, 0x6d, 0x63, 0xdd, 0x02};
    struct msg m = {.n = sizeof(fx)};
    memcpy(m.b, fx, sizeof(fx));
    struct mc_hello h;
    expect_ok(&m, 0, &h);
    assert_int_equal(h.kind, MC_MODERN);
    assert_int_equal(h.protocol, 765);
    assert_int_equal(h.intent, 2);
    assert_int_equal(h.port, 25565);
    assert_string_equal(h.host, "play.server.com");
    assert_int_equal(h.host_len, 15);
    assert_int_equal(h.suffixes, 0);
    assert_int_equal(h.addr_off, 5);
    assert_int_equal(h.addr_len, 15);
    assert_int_equal(h.host_raw_len, 15);
}

static void test_versions_and_intents(void **state)
{
    (void)state;
    static const int32_t protos[] = {4, 47, 340, 578, 763, 765, 767, 768, 769, -1};
    for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
        for (uint32_t intent = 1; intent <= 3; intent++) {
            struct msg m;
            HS(&m, protos[i], "A.Mc.Test", 25565, intent);
            struct mc_hello h;
            expect_ok(&m, 0, &h);
            assert_int_equal(h.protocol, protos[i]);
            assert_int_equal(h.intent, (int32_t)intent);
            assert_string_equal(h.host, "a.mc.test");
        }
    }
    /* -1 is the 5-byte VarInt ff ff ff ff 0f. */
    struct msg m;
    HS(&m, -1, "a.mc.test", 1, 1);
    assert_memory_equal(m.b + 2, "\xff\xff\xff\xff\x0f", 5);
}

static void test_trailing_dot_and_case(void **state)
{
    (void)state;
    struct msg m;
    HS(&m, 765, "Play.Server.COM.", 25565, 2);
    struct mc_hello h;
    expect_ok(&m, 0, &h);
    assert_string_equal(h.host, "play.server.com");
    assert_int_equal(h.host_raw_len, 16);
    /* An IPv4 literal is LDH (players type addresses). */
    HS(&m, 765, "127.0.0.1", 25565, 2);
    expect_ok(&m, 0, &h);
    assert_string_equal(h.host, "127.0.0.1");
}

static void check_suffix(const char *addr, size_t alen, unsigned want, const char *host)
{
    struct msg m;
    handshake(&m, 765, addr, alen, 25565, 2);
    struct mc_hello h;
    expect_ok(&m, 0, &h);
    assert_int_equal(h.suffixes, want);
    assert_string_equal(h.host, host);
    /* The raw host ends at the first suffix; it may hold a trailing dot. */
    assert_true(h.host_raw_len == strlen(host) || h.host_raw_len == strlen(host) + 1);
    assert_true(h.host_raw_len == alen || addr[h.host_raw_len] == '\0' ||
                addr[h.host_raw_len] == '/');
    assert_int_equal(h.addr_len, alen);
    assert_memory_equal(m.b + h.addr_off, addr, alen);
}

#define SUFFIX(lit, want, host) check_suffix(lit, sizeof(lit) - 1, want, host)

static void test_forge(void **state)
{
    (void)state;
    SUFFIX("a.mc.test\0FML\0", MC_SUF_FML, "a.mc.test");
    SUFFIX("a.mc.test\0FML2\0", MC_SUF_FML2, "a.mc.test");
    SUFFIX("a.mc.test\0FML3\0", MC_SUF_FML3, "a.mc.test");
    SUFFIX("a.mc.test\0FORGE", MC_SUF_FORGE, "a.mc.test");
    SUFFIX("a.mc.test.\0FML2\0", MC_SUF_FML2, "a.mc.test");
    /* An unknown marker is stripped for matching too, and said. */
    SUFFIX("a.mc.test\0XYZ\0", MC_SUF_OTHER, "a.mc.test");
    SUFFIX("a.mc.test\0", MC_SUF_OTHER, "a.mc.test"); /* a lone NUL is a suffix too */
}

static void test_bungee(void **state)
{
    (void)state;
    SUFFIX("a.mc.test\0"
           "203.0.113.7\0"
           "0123456789abcdef0123456789ABCDEF",
           MC_SUF_BUNGEE, "a.mc.test");
    SUFFIX("a.mc.test\0"
           "2001:db8::7\0"
           "0123456789abcdef0123456789abcdef\0"
           "[{\"name\":\"bungeeguard-token\",\"value\":\"s3cr3t\"}]",
           MC_SUF_BUNGEE, "a.mc.test");
    /* An address without a uuid after it is no forwarding. */
    SUFFIX("a.mc.test\0"
           "203.0.113.7\0",
           MC_SUF_OTHER, "a.mc.test");
}

static void test_realip_and_shield(void **state)
{
    (void)state;
    SUFFIX("a.mc.test///203.0.113.7:51234///1700000000///c2lnbmF0dXJl", MC_SUF_REALIP, "a.mc.test");
    SUFFIX("a.mc.test///203.0.113.7:51234///1700000000///c2lnbmF0dXJl\0FML2\0",
           MC_SUF_REALIP | MC_SUF_FML2, "a.mc.test");
    SUFFIX("play.server.com\0shield\0abcdef", MC_SUF_SHIELD, "play.server.com");
    /* guard's example is a 37-byte packet (EDGE.md 1.2). */
    struct msg m;
    HS(&m, 765, "play.server.com\0shield\0abcdef", 25565, 2);
    assert_int_equal(m.n, 37);
}

/* A Forge/forwarded host long enough that the frame length is 254, whose
 * VarInt is fe 01: modern, because the packet id 00 follows (EDGE.md 1.4). */
static void test_fe01_00_modern(void **state)
{
    (void)state;
    uint8_t addr[300];
    static const char head[] = "a.mc.test\0"
                               "203.0.113.7\0"
                               "0123456789abcdef0123456789abcdef\0";
    memcpy(addr, head, sizeof(head) - 1);
    /* 254 = id 1 + proto 2 + alen VarInt 2 + alen + port 2 + intent 1 */
    size_t alen = 254 - 8;
    memset(addr + sizeof(head) - 1, 'p', alen - (sizeof(head) - 1));
    struct msg m;
    handshake(&m, 765, addr, alen, 25565, 2);
    assert_int_equal(m.b[0], 0xfe);
    assert_int_equal(m.b[1], 0x01);
    assert_int_equal(m.b[2], 0x00);
    struct mc_hello h;
    expect_ok(&m, 0, &h);
    assert_int_equal(h.msg_len, 256);
    assert_int_equal(h.suffixes, MC_SUF_BUNGEE);
    /* Even when idle, FE 01 00 is no legacy ping. */
    assert_int_equal(sniff_exact(m.b, 3, 0, true, &h), MC_NEED_MORE);
}

/* ---- legacy pings --------------------------------------------------------- */

/* 1.6: FE 01 FA, "MC|PingHost", data length, protocol, host, port. */
static void legacy16(struct msg *m, uint8_t proto, const char *host, uint32_t port)
{
    static const char name[] = "MC|PingHost";
    size_t hl = strlen(host);
    m->n = 0;
    uint8_t *b = m->b;
    b[m->n++] = 0xfe;
    b[m->n++] = 0x01;
    b[m->n++] = 0xfa;
    b[m->n++] = 0x00;
    b[m->n++] = 11;
    for (size_t i = 0; i < 11; i++) {
        b[m->n++] = 0x00;
        b[m->n++] = (uint8_t)name[i];
    }
    size_t dlen = 7 + 2 * hl;
    b[m->n++] = (uint8_t)(dlen >> 8);
    b[m->n++] = (uint8_t)dlen;
    b[m->n++] = proto;
    b[m->n++] = (uint8_t)(hl >> 8);
    b[m->n++] = (uint8_t)hl;
    for (size_t i = 0; i < hl; i++) {
        b[m->n++] = 0x00;
        b[m->n++] = (uint8_t)host[i];
    }
    for (int s = 24; s >= 0; s -= 8)
        b[m->n++] = (uint8_t)(port >> s);
}

static void test_legacy(void **state)
{
    (void)state;
    static const uint8_t fe[] = {0xfe, 0x01};
    struct mc_hello h;
    /* FE then silence: <= 1.3; FE 01 then silence: 1.4-1.5. */
    assert_int_equal(sniff_exact(fe, 1, 0, false, &h), MC_NEED_MORE);
    assert_int_equal(sniff_exact(fe, 1, 0, true, &h), MC_LEGACY);
    assert_int_equal(h.kind, MC_LEGACY_FE);
    assert_int_equal(h.msg_len, 1);
    assert_int_equal(h.host_len, 0);
    assert_int_equal(sniff_exact(fe, 2, 0, false, &h), MC_NEED_MORE);
    assert_int_equal(sniff_exact(fe, 2, 0, true, &h), MC_LEGACY);
    assert_int_equal(h.kind, MC_LEGACY_FE01);
    assert_int_equal(h.msg_len, 2);
    /* idle resolves nothing else. */
    assert_int_equal(sniff_exact(fe, 0, 0, true, &h), MC_NEED_MORE);

    struct msg m;
    legacy16(&m, 78, "A.Mc.Test", 25565);
    size_t at;
    assert_int_equal(feed(m.b, m.n, 0, &at, &h), MC_LEGACY);
    assert_int_equal(at, m.n);
    assert_int_equal(h.kind, MC_LEGACY_16);
    assert_string_equal(h.host, "a.mc.test");
    assert_int_equal(h.protocol, 78);
    assert_int_equal(h.port, 25565);
    assert_int_equal(h.msg_len, m.n);
    /* idle does not cut a 1.6 ping short. */
    assert_int_equal(sniff_exact(m.b, 3, 0, true, &h), MC_NEED_MORE);
    assert_int_equal(sniff_exact(m.b, m.n - 1, 0, true, &h), MC_NEED_MORE);
}

static void test_legacy_errors(void **state)
{
    (void)state;
    static const uint8_t fe01x[] = {0xfe, 0x01, 0x05};
    expect_err(fe01x, sizeof(fe01x), 0, MC_E_LEGACY, 3);
    struct msg m;
    legacy16(&m, 78, "a.mc.test", 25565);
    m.b[8] = 'X'; /* "MC|PingHost" misspelt */
    expect_err(m.b, m.n, 0, MC_E_LEGACY, 9);
    legacy16(&m, 78, "a.mc.test", 25565);
    m.b[28]++; /* data length disagrees with the host length */
    expect_err(m.b, m.n, 0, MC_E_LEGACY, 32);
    legacy16(&m, 78, "a.mc.test", 70000);
    expect_err(m.b, m.n, 0, MC_E_LEGACY, m.n);
    legacy16(&m, 78, "a_mc.test", 25565);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    legacy16(&m, 78, "", 25565);
    expect_err(m.b, m.n, 0, MC_E_HOST_LEN, 32);
    /* A UTF-16 unit past ASCII is no LDH host. */
    legacy16(&m, 78, "a.mc.test", 25565);
    m.b[32] = 0x04;
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
}

/* ---- garbage and caps ------------------------------------------------------- */

static void test_garbage(void **state)
{
    (void)state;
    static const char http[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    expect_err((const uint8_t *)http, sizeof(http) - 1, 0, MC_E_PACKET_ID, 2);
    static const uint8_t tls[] = {0x16, 0x03, 0x01, 0x02, 0x00};
    expect_err(tls, sizeof(tls), 0, MC_E_PACKET_ID, 2);
    static const uint8_t zero[] = {0x00, 0x00};
    expect_err(zero, sizeof(zero), 0, MC_E_FRAME, 1);
    struct msg m;
    HS(&m, 765, "a.mc.test", 25565, 2);
    m.b[m.n - 1] = 0; /* intent 0 */
    expect_err(m.b, m.n, 0, MC_E_INTENT, m.n);
    m.b[m.n - 1] = 4;
    expect_err(m.b, m.n, 0, MC_E_INTENT, m.n);
    /* One byte too many inside the frame. */
    HS(&m, 765, "a.mc.test", 25565, 2);
    m.b[0]++;
    m.b[m.n++] = 0x00;
    expect_err(m.b, m.n, 0, MC_E_FRAME, m.n);
    /* One too few: the intent is missing. */
    HS(&m, 765, "a.mc.test", 25565, 2);
    m.b[0]--;
    expect_err(m.b, m.n - 1, 0, MC_E_FRAME, m.n - 1);
    /* The address runs past the frame. */
    HS(&m, 765, "a.mc.test", 25565, 2);
    m.b[4] = 40;
    expect_err(m.b, m.n, 0, MC_E_FRAME, m.n);

    /* Random bytes: a verdict from the list, the same byte by byte. */
    struct harness_rng rng;
    harness_rng_init(&rng, 20);
    for (int i = 0; i < 300; i++) {
        uint8_t junk[64];
        size_t n = 1 + harness_rng_below(&rng, sizeof(junk));
        for (size_t j = 0; j < n; j++)
            junk[j] = (uint8_t)harness_rng_next(&rng);
        size_t at;
        struct mc_hello h;
        int rc = feed(junk, n, 0, &at, &h);
        assert_true(rc >= MC_E_LEGACY && rc <= MC_LEGACY);
        assert_non_null(mc_strerror(rc));
    }
}

static void test_host_errors(void **state)
{
    (void)state;
    struct msg m;
    HS(&m, 765, "a_b.mc.test", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "a..b", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "-a.test", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "a-.test", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, ".", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "::1", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "caf\xc3\xa9.test", 25565, 2); /* UTF-8, but no LDH: IDNs come as xn-- */
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    HS(&m, 765, "\0FML\0", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST_LEN, m.n);
    HS(&m, 765, "///1.2.3.4:5///6///sig", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST_LEN, m.n);
    handshake(&m, 765, "", 0, 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST_LEN, m.n);
    /* Invalid UTF-8 anywhere in the address, suffix included. */
    HS(&m, 765, "a.mc.test\0\xc0\xaf\0", 25565, 2); /* overlong '/' */
    expect_err(m.b, m.n, 0, MC_E_UTF8, m.n);
    HS(&m, 765, "a.mc.test\0\xed\xa0\x80\0", 25565, 2); /* a surrogate */
    expect_err(m.b, m.n, 0, MC_E_UTF8, m.n);
    HS(&m, 765, "a.mc.test\xff", 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_UTF8, m.n);
    /* UTF-8 is fine in a suffix (BungeeCord's properties are JSON text). */
    SUFFIX("a.mc.test\0"
           "1.2.3.4\0"
           "0123456789abcdef0123456789abcdef\0[\"caf\xc3\xa9\"]",
           MC_SUF_BUNGEE, "a.mc.test");
}

/* An address of n bytes: host h, then a BungeeCord-like filler. */
static void padded(struct msg *m, size_t frame_total)
{
    /* total = len VarInt (2) + id 1 + proto 2 + alen VarInt (2) + alen + port 2 + intent 1 */
    size_t alen = frame_total - 10;
    uint8_t addr[MSG_MAX];
    static const char head[] = "a.mc.test\0FML2\0";
    memcpy(addr, head, sizeof(head) - 1);
    memset(addr + sizeof(head) - 1, 'x', alen - (sizeof(head) - 1));
    handshake(m, 765, addr, alen, 25565, 2);
    assert_int_equal(m->n, frame_total);
}

static void test_caps(void **state)
{
    (void)state;
    struct msg m;
    struct mc_hello h;
    /* Frame cap, default 1 KiB, length VarInt included. */
    padded(&m, 1024);
    expect_ok(&m, 0, &h);
    padded(&m, 1025);
    expect_err(m.b, m.n, 0, MC_E_TOO_BIG, 2);
    /* The caller's knob, up to 2 KiB; more is clamped to 2 KiB. */
    padded(&m, 1025);
    expect_ok(&m, 2048, &h);
    padded(&m, 2048);
    expect_ok(&m, 2048, &h);
    padded(&m, 2049);
    expect_err(m.b, m.n, 2048, MC_E_TOO_BIG, 2);
    expect_err(m.b, m.n, 1u << 20, MC_E_TOO_BIG, 2);
    padded(&m, 300);
    expect_err(m.b, m.n, 299, MC_E_TOO_BIG, 2);
    /* A length VarInt over the cap is refused before its end. */
    static const uint8_t big[] = {0xff, 0xff, 0x7f};
    expect_err(big, sizeof(big), 0, MC_E_TOO_BIG, 2);
    /* VarInt: 5 bytes at most, and within the int32 range. */
    static const uint8_t len6[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    expect_err(len6, sizeof(len6), 0, MC_E_VARINT, 5);
    static const uint8_t proto6[] = {0x09, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x00};
    expect_err(proto6, sizeof(proto6), 0, MC_E_VARINT, sizeof(proto6));
    static const uint8_t range[] = {0x08, 0x00, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x00, 0x00};
    expect_err(range, sizeof(range), 0, MC_E_VARINT, sizeof(range));
    static const uint8_t ok5[] = {0x0b, 0x00, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 'a', 0, 1, 1};
    struct msg five = {.n = sizeof(ok5)};
    memcpy(five.b, ok5, sizeof(ok5));
    expect_ok(&five, 0, &h); /* 5 bytes, non-minimal: read as the server reads it */
    assert_int_equal(h.protocol, 0);

    /* Host: 255 bytes fine, 256 refused; a 63-byte label fine, 64 refused. */
    char host[300];
    memset(host, 'a', sizeof(host));
    for (size_t i = 63; i < sizeof(host); i += 64)
        host[i] = '.';
    handshake(&m, 765, host, 255, 25565, 2);
    expect_ok(&m, 0, &h);
    assert_int_equal(h.host_len, 255);
    host[254] = '.'; /* 255 with a trailing dot: 254 canonical */
    handshake(&m, 765, host, 255, 25565, 2);
    expect_ok(&m, 0, &h);
    assert_int_equal(h.host_len, 254);
    host[254] = 'a';
    handshake(&m, 765, host, 256, 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST_LEN, m.n);
    memset(host, 'a', 64);
    handshake(&m, 765, host, 63, 25565, 2);
    expect_ok(&m, 0, &h);
    handshake(&m, 765, host, 64, 25565, 2);
    expect_err(m.b, m.n, 0, MC_E_HOST, m.n);
    /* A 1.6 ping over the frame cap. */
    legacy16(&m, 78, "a.mc.test", 25565);
    expect_err(m.b, m.n, m.n - 1, MC_E_TOO_BIG, 29);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vanilla_fixture),
        cmocka_unit_test(test_versions_and_intents),
        cmocka_unit_test(test_trailing_dot_and_case),
        cmocka_unit_test(test_forge),
        cmocka_unit_test(test_bungee),
        cmocka_unit_test(test_realip_and_shield),
        cmocka_unit_test(test_fe01_00_modern),
        cmocka_unit_test(test_legacy),
        cmocka_unit_test(test_legacy_errors),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_host_errors),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
