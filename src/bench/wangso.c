/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wangso.c: the TCP GSO cutter of `ferry bench wan` (gso=on): which
 * packets read from a TUN device with IFF_VNET_HDR can be cut into
 * segments, each segment's wire length, and the headers of a piece (a run
 * of segments) per Linux's tcp_gso_segment semantics. The contract and
 * the exact rewrites are in wangso.h.
 *
 * Pure: no I/O, no allocation; every read of the packet is bounded by the
 * length the caller gives.
 */
#include <string.h>

#include "bench/wangso.h"

/* virtio_net_hdr (legacy, 10 bytes): the offsets of its fields. */
enum {
    VH_FLAGS = 0,
    VH_GSO_TYPE = 1,
    VH_HDR_LEN = 2,
    VH_GSO_SIZE = 4,
    VH_CSUM_START = 6,
    VH_CSUM_OFFSET = 8,
};
#define VH_F_NEEDS_CSUM 1u
#define VH_GSO_NONE     0u
#define VH_GSO_TCPV4    1u
#define VH_GSO_TCPV6    4u
#define VH_GSO_ECN      0x80u

#define TCP_FIN 0x01u
#define TCP_PSH 0x08u
#define TCP_URG 0x20u
#define TCP_CWR 0x80u

/* The virtio_net_hdr's 16-bit fields are in the host's order. */
static uint16_t vh16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static void vh16_set(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void be16_set(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void be32_set(uint8_t *p, uint32_t v)
{
    be16_set(p, (uint16_t)(v >> 16));
    be16_set(p + 2, (uint16_t)v);
}

uint64_t wan_csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
    size_t i = 0;
    for (; i + 1 < len; i += 2)
        sum += be16(p + i);
    if (i < len)
        sum += (uint64_t)p[i] << 8;
    return sum;
}

uint16_t wan_csum_fold(uint64_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

/* The IP header of ip[iplen]: its length (l3len) when it is IPv4 or IPv6
 * carrying TCP directly, consistent with iplen and not a fragment; 0
 * otherwise. */
static unsigned ip_header(const uint8_t *ip, size_t iplen, bool v6)
{
    if (v6) {
        if (iplen < 40 || ip[0] >> 4 != 6 || ip[6] != 6 || be16(ip + 4) + 40u != iplen)
            return 0;
        return 40;
    }
    if (iplen < 20 || ip[0] >> 4 != 4)
        return 0;
    unsigned l3 = (ip[0] & 0x0fu) * 4u;
    if (l3 < 20 || l3 > iplen || ip[9] != 6 || be16(ip + 2) != iplen)
        return 0;
    if (be16(ip + 6) & 0x3fffu) /* MF or a fragment offset */
        return 0;
    return l3;
}

/* Is pkt[len] a TCP GSO packet with a sane header? Fills g when it is. */
static bool cuttable(const uint8_t *pkt, size_t len, struct wan_gso *g)
{
    unsigned type = pkt[VH_GSO_TYPE] & ~VH_GSO_ECN;
    unsigned mss = vh16(pkt + VH_GSO_SIZE);
    if ((type != VH_GSO_TCPV4 && type != VH_GSO_TCPV6) || mss == 0 ||
        !(pkt[VH_FLAGS] & VH_F_NEEDS_CSUM))
        return false;
    const uint8_t *ip = pkt + WAN_VNET_HDR_LEN;
    size_t iplen = len - WAN_VNET_HDR_LEN;
    bool v6 = type == VH_GSO_TCPV6;
    unsigned l3 = ip_header(ip, iplen, v6);
    if (!l3 || iplen < l3 + 20u)
        return false;
    const uint8_t *th = ip + l3;
    unsigned thlen = (th[12] >> 4) * 4u;
    if (thlen < 20 || l3 + thlen >= iplen || (th[13] & TCP_URG))
        return false;
    if (vh16(pkt + VH_CSUM_START) != l3 || vh16(pkt + VH_CSUM_OFFSET) != 16)
        return false;
    g->v6 = v6;
    g->l3len = l3;
    g->hlen = l3 + thlen;
    g->mss = mss;
    g->paylen = iplen - g->hlen;
    g->nseg = (unsigned)((g->paylen + mss - 1) / mss);
    return true;
}

void wan_gso_parse(const uint8_t *pkt, size_t len, struct wan_gso *g)
{
    memset(g, 0, sizeof(*g));
    g->nseg = 1;
    g->kind = WAN_GSO_WHOLE;
    if (len < WAN_VNET_HDR_LEN)
        return;
    g->iplen = len - WAN_VNET_HDR_LEN;
    if (pkt[VH_GSO_TYPE] == VH_GSO_NONE)
        g->kind = WAN_GSO_PLAIN;
    else if (cuttable(pkt, len, g))
        g->kind = WAN_GSO_CUT;
}

size_t wan_gso_seg_len(const struct wan_gso *g, unsigned k)
{
    if (g->kind != WAN_GSO_CUT)
        return g->iplen;
    size_t done = (size_t)k * g->mss;
    size_t left = g->paylen - done;
    return g->hlen + (left < g->mss ? left : g->mss);
}

/* The folded pseudo-header sum of a TCP segment of tcplen bytes. */
static uint16_t pseudo_sum(const uint8_t *ip, bool v6, size_t tcplen)
{
    uint64_t sum = v6 ? wan_csum_add(0, ip + 8, 32) : wan_csum_add(0, ip + 12, 8);
    return wan_csum_fold(sum + 6 + tcplen);
}

size_t wan_gso_piece(const uint8_t *pkt, const struct wan_gso *g, unsigned first, unsigned n,
                     uint8_t *hdr, size_t *pay_off, size_t *pay_len)
{
    size_t hl = WAN_VNET_HDR_LEN + g->hlen;
    size_t done = (size_t)first * g->mss, left = g->paylen - done;
    size_t plen = (size_t)n * g->mss < left ? (size_t)n * g->mss : left;
    memcpy(hdr, pkt, hl);
    *pay_off = hl + done;
    *pay_len = plen;
    /* the virtio_net_hdr */
    if (n == 1) {
        hdr[VH_GSO_TYPE] = VH_GSO_NONE;
        vh16_set(hdr + VH_GSO_SIZE, 0);
    } else if (first > 0) {
        hdr[VH_GSO_TYPE] &= (uint8_t)~VH_GSO_ECN;
    }
    vh16_set(hdr + VH_HDR_LEN, (uint16_t)g->hlen);
    /* the IP header */
    uint8_t *ip = hdr + WAN_VNET_HDR_LEN;
    size_t iplen = g->hlen + plen;
    if (g->v6) {
        be16_set(ip + 4, (uint16_t)(iplen - 40));
    } else {
        be16_set(ip + 2, (uint16_t)iplen);
        be16_set(ip + 4, (uint16_t)(be16(ip + 4) + first));
        be16_set(ip + 10, 0);
        be16_set(ip + 10, (uint16_t)~wan_csum_fold(wan_csum_add(0, ip, g->l3len)));
    }
    /* the TCP header */
    uint8_t *th = ip + g->l3len;
    be32_set(th + 4, be32(th + 4) + (uint32_t)done);
    if (first > 0)
        th[13] &= (uint8_t)~TCP_CWR;
    if (first + n < g->nseg)
        th[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
    be16_set(th + 16, pseudo_sum(ip, g->v6, iplen - g->l3len));
    return hl;
}
