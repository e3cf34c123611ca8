/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wangso_test.c: the TCP GSO cutter of `ferry bench wan` (wangso.c). Real
 * IPv4 (with IP and TCP options) and IPv6 TCP GSO packets, as a TUN
 * device with IFF_VNET_HDR hands them over (NEEDS_CSUM, the pseudo-header
 * sum in th->check), are cut into every possible run of segments; each
 * piece is checked field by field against what Linux's segmenter would
 * make, its checksum completed the way the receiver does and verified,
 * and its payload compared. Packets it must not cut (not GSO, UDP GSO,
 * gso_size 0, no NEEDS_CSUM, URG, fragments, inconsistent lengths, every
 * truncation) are classified without reading past their end.
 */
#include "harness.h"

#include "bench/wangso.h"

/* A GSO packet under construction: virtio_net_hdr + IP + TCP + payload. */
struct pkt {
    uint8_t b[WAN_VNET_HDR_LEN + 60 + 60 + 8000];
    size_t len;
    unsigned l3, thlen, paylen, mss;
    bool v6;
};

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint16_t host16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The pseudo-header sum (folded, not complemented) of a TCP segment. */
static uint16_t pseudo(const uint8_t *ip, bool v6, size_t tcplen)
{
    uint64_t s = v6 ? wan_csum_add(0, ip + 8, 32) : wan_csum_add(0, ip + 12, 8);
    return wan_csum_fold(s + 6 + tcplen);
}

/* A packet as the sender's TCP hands it to the TUN device: flags on
 * th[13], ip options (IPv4: 4 bytes of NOPs + EOL), TCP timestamps. */
static void build(struct pkt *p, bool v6, unsigned paylen, unsigned mss, uint8_t flags)
{
    memset(p, 0, sizeof(*p));
    p->v6 = v6;
    p->l3 = v6 ? 40 : 24;
    p->thlen = 32;
    p->paylen = paylen;
    p->mss = mss;
    uint8_t *vh = p->b, *ip = p->b + WAN_VNET_HDR_LEN, *th = ip + p->l3;
    size_t iplen = p->l3 + p->thlen + paylen;
    uint16_t v;
    vh[0] = 1;          /* NEEDS_CSUM */
    vh[1] = v6 ? 4 : 1; /* TCPV6 / TCPV4 */
    v = (uint16_t)(p->l3 + p->thlen);
    memcpy(vh + 2, &v, 2);
    v = (uint16_t)mss;
    memcpy(vh + 4, &v, 2);
    v = (uint16_t)p->l3;
    memcpy(vh + 6, &v, 2);
    v = 16;
    memcpy(vh + 8, &v, 2);
    if (v6) {
        ip[0] = 0x60;
        put16(ip + 4, (uint16_t)(iplen - 40));
        ip[6] = 6;
        ip[7] = 64;
        for (unsigned i = 0; i < 16; i++) {
            ip[8 + i] = (uint8_t)(0xfd + i * 7);
            ip[24 + i] = (uint8_t)(0x77 + i * 13);
        }
    } else {
        ip[0] = 0x46; /* IHL 6: 4 bytes of options */
        put16(ip + 2, (uint16_t)iplen);
        put16(ip + 4, 0xfffe); /* wraps */
        put16(ip + 6, 0x4000); /* DF */
        ip[8] = 64;
        ip[9] = 6;
        memcpy(ip + 12, (uint8_t[]){10, 77, 0, 1, 10, 77, 0, 2}, 8);
        memcpy(ip + 20, (uint8_t[]){1, 1, 1, 0}, 4);
        put16(ip + 10, (uint16_t)~wan_csum_fold(wan_csum_add(0, ip, p->l3)));
    }
    put16(th, 40000);
    put16(th + 2, 443);
    memcpy(th + 4, (uint8_t[]){0xff, 0xff, 0xf0, 0x00}, 4); /* seq wraps */
    memcpy(th + 8, (uint8_t[]){0, 0, 0x12, 0x34}, 4);
    th[12] = (uint8_t)((p->thlen / 4) << 4);
    th[13] = flags;
    put16(th + 14, 5000);
    memcpy(th + 20, (uint8_t[]){1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, 12);
    for (unsigned i = 0; i < paylen; i++)
        th[p->thlen + i] = (uint8_t)(i * 31 + (i >> 8));
    put16(th + 16, pseudo(ip, v6, iplen - p->l3));
    p->len = WAN_VNET_HDR_LEN + iplen;
}

/* The piece [first, first + n) of p: its bytes rebuilt and every field
 * checked. */
static void check_piece(const struct pkt *p, const struct wan_gso *g, unsigned first, unsigned n)
{
    uint8_t hdr[WAN_GSO_HDR_MAX], seg[WAN_GSO_HDR_MAX + 8000];
    size_t off, len;
    size_t hl = wan_gso_piece(p->b, g, first, n, hdr, &off, &len);
    assert_int_equal(hl, WAN_VNET_HDR_LEN + p->l3 + p->thlen);
    size_t start = (size_t)first * p->mss;
    size_t want = p->paylen - start < (size_t)n * p->mss ? p->paylen - start : (size_t)n * p->mss;
    assert_int_equal(off, hl + start);
    assert_int_equal(len, want);
    memcpy(seg, hdr, hl);
    memcpy(seg + hl, p->b + off, len);
    const uint8_t *vh = seg, *ip = seg + WAN_VNET_HDR_LEN, *oip = p->b + WAN_VNET_HDR_LEN;
    uint8_t *th = seg + WAN_VNET_HDR_LEN + p->l3;
    const uint8_t *oth = oip + p->l3;
    size_t iplen = p->l3 + p->thlen + len;
    bool last = first + n == g->nseg;
    /* virtio_net_hdr */
    assert_int_equal(vh[0], 1);
    assert_int_equal(vh[1], n == 1 ? 0 : (p->v6 ? 4 : 1));
    assert_int_equal(host16(vh + 2), p->l3 + p->thlen);
    assert_int_equal(host16(vh + 4), n == 1 ? 0 : p->mss);
    assert_int_equal(host16(vh + 6), p->l3);
    assert_int_equal(host16(vh + 8), 16);
    /* IP */
    if (p->v6) {
        assert_int_equal(get16(ip + 4), iplen - 40);
        assert_memory_equal(ip + 6, oip + 6, 34);
    } else {
        assert_int_equal(get16(ip + 2), iplen);
        assert_int_equal(get16(ip + 4), (uint16_t)(0xfffe + first));
        assert_int_equal(wan_csum_fold(wan_csum_add(0, ip, p->l3)), 0xffff);
        assert_memory_equal(ip + 6, oip + 6, 4);
        assert_memory_equal(ip + 12, oip + 12, 12);
    }
    /* TCP */
    assert_int_equal(get32(th + 4), (uint32_t)(0xfffff000u + start));
    uint8_t flags = oth[13];
    if (first > 0)
        flags &= (uint8_t)~0x80;
    if (!last)
        flags &= (uint8_t)~0x09;
    assert_int_equal(th[13], flags);
    assert_memory_equal(th + 8, oth + 8, 4);
    assert_memory_equal(th + 14, oth + 14, 2);
    assert_memory_equal(th + 18, oth + 18, p->thlen - 18);
    size_t tcplen = iplen - p->l3;
    assert_int_equal(get16(th + 16), pseudo(ip, p->v6, tcplen));
    /* the receiver completes CHECKSUM_PARTIAL: the sum from csum_start,
     * complemented, at csum_start + csum_offset; then it verifies */
    put16(th + 16, (uint16_t)~wan_csum_fold(wan_csum_add(0, th, tcplen)));
    uint64_t full = wan_csum_add(0, th, tcplen);
    full += p->v6 ? wan_csum_add(0, ip + 8, 32) : wan_csum_add(0, ip + 12, 8);
    assert_int_equal(wan_csum_fold(full + 6 + tcplen), 0xffff);
    assert_memory_equal(th + p->thlen, oth + p->thlen + start, len);
}

/* Every run of segments of a packet, for IPv4 and IPv6, a short last
 * segment and an exact multiple. */
static void test_cut_every_run(void **state)
{
    (void)state;
    static const struct {
        bool v6;
        unsigned paylen, mss;
    } cases[] = {{false, 3500, 1000}, {true, 3500, 1000}, {false, 4000, 1000},
                 {true, 7240, 1448},  {false, 1, 1448},   {true, 1448, 1448}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        static struct pkt p;
        build(&p, cases[c].v6, cases[c].paylen, cases[c].mss, 0x80 | 0x10 | 0x08 | 0x01);
        struct wan_gso g;
        wan_gso_parse(p.b, p.len, &g);
        assert_int_equal(g.kind, WAN_GSO_CUT);
        assert_int_equal(g.nseg, (cases[c].paylen + cases[c].mss - 1) / cases[c].mss);
        assert_int_equal(g.hlen, p.l3 + p.thlen);
        size_t sum = 0;
        for (unsigned k = 0; k < g.nseg; k++)
            sum += wan_gso_seg_len(&g, k) - g.hlen;
        assert_int_equal(sum, cases[c].paylen);
        for (unsigned first = 0; first < g.nseg; first++)
            for (unsigned n = 1; first + n <= g.nseg; n++)
                check_piece(&p, &g, first, n);
    }
}

/* The ECN bit of gso_type stays only with the piece holding segment 0. */
static void test_ecn_only_first(void **state)
{
    (void)state;
    static struct pkt p;
    build(&p, false, 3000, 1000, 0x80 | 0x10);
    p.b[1] |= 0x80;
    struct wan_gso g;
    wan_gso_parse(p.b, p.len, &g);
    assert_int_equal(g.kind, WAN_GSO_CUT);
    uint8_t hdr[WAN_GSO_HDR_MAX];
    size_t off, len;
    wan_gso_piece(p.b, &g, 0, 2, hdr, &off, &len);
    assert_int_equal(hdr[1], 0x81);
    wan_gso_piece(p.b, &g, 1, 2, hdr, &off, &len);
    assert_int_equal(hdr[1], 0x01);
}

/* Exactly len bytes on the heap, so ASan sees a read past them. */
static struct wan_gso parse_exact(const uint8_t *b, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, b, len);
    struct wan_gso g;
    wan_gso_parse(copy, len, &g);
    free(copy);
    return g;
}

/* What it does not cut: passed whole (or plain), never read past its end. */
static void test_refuses(void **state)
{
    (void)state;
    static struct pkt p;
    struct wan_gso g;
    for (int v6 = 0; v6 < 2; v6++) {
        build(&p, v6, 3000, 1000, 0x10);
        for (size_t len = 0; len < p.len; len++) {
            g = parse_exact(p.b, len);
            assert_int_equal(g.kind, WAN_GSO_WHOLE); /* truncated: lengths disagree */
            assert_int_equal(g.nseg, 1);
        }
        assert_int_equal(parse_exact(p.b, p.len).kind, WAN_GSO_CUT);
        struct {
            size_t at;
            uint8_t val;
        } bad[] = {
            {1, 0},                                /* gso NONE: plain */
            {1, 3},                                /* UDP (UFO) */
            {1, 5},                                /* UDP_L4 */
            {1, 9},                                /* unknown */
            {1, v6 ? 1 : 4},                       /* the other family */
            {0, 0},                                /* no NEEDS_CSUM */
            {4, 0},                                /* gso_size 0 (low byte, LE host) */
            {6, 0},                                /* csum_start elsewhere */
            {10 + (v6 ? 6 : 9), 17},               /* not TCP */
            {10 + (v6 ? 4 : 2), 0},                /* IP length high byte */
            {10 + p.l3 + 13, 0x30},                /* URG */
            {10 + p.l3 + 12, 0x40},                /* doff 4 */
            {10 + p.l3 + 12, 0xf0},                /* doff 15: a 60-byte header, still cut */
            {10, v6 ? 0x40 : 0x44},                /* IPv4 IHL 4, IPv6 marked 4 */
            {10 + (v6 ? 0 : 6), v6 ? 0x60 : 0x20}, /* IPv4 MF (IPv6: unchanged, skipped) */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            build(&p, v6, 3000, 1000, 0x10);
            uint8_t old = p.b[bad[i].at];
            p.b[bad[i].at] = bad[i].val;
            if (old == bad[i].val)
                continue;
            if (bad[i].at == 4)
                p.b[5] = 0;
            g = parse_exact(p.b, p.len);
            if (bad[i].at == 10 + p.l3 + 12 && bad[i].val == 0xf0) {
                assert_int_equal(g.kind, WAN_GSO_CUT); /* 60-byte header, still a payload */
                continue;
            }
            if (v6 && bad[i].at == 10 && bad[i].val == 0x60)
                continue;
            assert_int_equal(g.kind,
                             bad[i].at == 1 && bad[i].val == 0 ? WAN_GSO_PLAIN : WAN_GSO_WHOLE);
            assert_int_equal(g.nseg, 1);
            assert_int_equal(wan_gso_seg_len(&g, 0), p.len - WAN_VNET_HDR_LEN);
        }
    }
    /* headers only, no payload: nothing to cut */
    build(&p, false, 0, 1000, 0x10);
    assert_int_equal(parse_exact(p.b, p.len).kind, WAN_GSO_WHOLE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_every_run),
        cmocka_unit_test(test_ecn_only_first),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
