/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wangso.h: cutting a TCP GSO packet read from a TUN device opened with
 * IFF_VNET_HDR into pieces, for the forwarder of `ferry bench wan` with
 * gso=on. A GSO packet is a virtio_net_hdr (10 bytes, the legacy layout,
 * in the host's byte order as the TUN device uses it without
 * TUNSETVNETLE/BE) and one large IPv4 or IPv6 TCP packet whose payload the
 * stack would have cut into segments of gso_size bytes. The path treats
 * each segment as the packet it would be on the wire; the segments that
 * pass leave as pieces: runs of consecutive segments, each again one GSO
 * packet (or a plain one when it is one segment).
 *
 * The header rewrites follow Linux's inet_gso_segment/tcp_gso_segment
 * (and ipv6_gso_segment): a piece that starts at segment k of a packet of
 * n segments of mss bytes has
 *   - IPv4: total length its own, id = id + k (mod 2^16; the TCP stack
 *     numbers the segments of a GSO packet in a row, DF or not, and the
 *     segmenter gives segment k id + k), the header checksum recomputed;
 *     IPv6: payload length its own;
 *   - TCP: seq + k * mss; CWR only when k = 0; FIN and PSH only when it
 *     ends with segment n - 1; th->check the folded (not complemented)
 *     one's-complement sum of the pseudo-header over the piece's TCP
 *     length: the CHECKSUM_PARTIAL convention (the receiver, or whoever
 *     completes the checksum, adds the sum from csum_start to the end);
 *   - virtio_net_hdr: NEEDS_CSUM, csum_start and csum_offset kept,
 *     hdr_len the IP and TCP headers' length, gso_size mss and gso_type
 *     kept for a piece of two segments or more (the ECN bit only on the
 *     piece with segment 0, which alone keeps CWR), gso_type NONE and
 *     gso_size 0 for a piece of one segment.
 *
 * Pure: no I/O, no allocation; every read is bounded by the length given.
 */
#ifndef FERRY_BENCH_WANGSO_H
#define FERRY_BENCH_WANGSO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The virtio_net_hdr before every packet (TUNSETVNETHDRSZ). */
#define WAN_VNET_HDR_LEN 10u
/* The most a piece's headers take: the virtio_net_hdr, an IPv4 header
 * with options (60) and a TCP header with options (60). */
#define WAN_GSO_HDR_MAX  (WAN_VNET_HDR_LEN + 60u + 60u)

/* What a packet read with its virtio_net_hdr is. */
enum wan_gso_kind {
    WAN_GSO_PLAIN, /* not GSO (gso_type NONE): one packet, written as it came */
    WAN_GSO_CUT,   /* an IPv4/IPv6 TCP GSO packet with a sane header: cut into segments */
    WAN_GSO_WHOLE, /* GSO, but not one this cuts (UDP GSO, gso_size 0, an unknown
                    * gso_type, IPv6 extension headers, URG, no NEEDS_CSUM, a
                    * truncated or inconsistent header): one packet, written whole */
};

/* A parsed packet. For WAN_GSO_CUT all fields hold; otherwise only kind,
 * nseg (1) and iplen. */
struct wan_gso {
    enum wan_gso_kind kind;
    bool v6;
    unsigned nseg;  /* the segments it is on the wire */
    unsigned l3len; /* the IP header's length (csum_start) */
    unsigned hlen;  /* the IP and TCP headers' length */
    unsigned mss;   /* gso_size: each segment's payload but the last one's */
    size_t iplen;   /* the IP packet's length (len - WAN_VNET_HDR_LEN) */
    size_t paylen;  /* the TCP payload's length (>= 1) */
};

/* Parse pkt[len], a virtio_net_hdr and an IP packet, into *g. Never reads
 * past len. A packet shorter than the virtio_net_hdr is WAN_GSO_WHOLE with
 * iplen 0. Pure. */
void wan_gso_parse(const uint8_t *pkt, size_t len, struct wan_gso *g);

/* The wire length (IP packet) of segment k < g->nseg of a WAN_GSO_CUT
 * packet; of a plain or whole packet (k = 0), its iplen. Pure. */
size_t wan_gso_seg_len(const struct wan_gso *g, unsigned k);

/* The piece of segments [first, first + n) of the WAN_GSO_CUT packet pkt
 * that g describes (n >= 1, first + n <= g->nseg): its virtio_net_hdr and
 * IP and TCP headers, rewritten as the file's comment says, into
 * hdr[WAN_GSO_HDR_MAX]; its payload is pkt[*pay_off, *pay_off + *pay_len).
 * Writing the headers and then the payload to a TUN device with
 * IFF_VNET_HDR sends the piece. Returns the headers' length. Pure. */
size_t wan_gso_piece(const uint8_t *pkt, const struct wan_gso *g, unsigned first, unsigned n,
                     uint8_t *hdr, size_t *pay_off, size_t *pay_len);

/* The 16-bit one's-complement sum of p[len] added to sum (not folded
 * yet: fold with wan_csum_fold). Pure. */
uint64_t wan_csum_add(uint64_t sum, const uint8_t *p, size_t len);

/* sum folded to 16 bits (not complemented). Pure. */
uint16_t wan_csum_fold(uint64_t sum);

#endif
