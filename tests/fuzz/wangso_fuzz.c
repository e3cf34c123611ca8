/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wangso_fuzz.c: libFuzzer harness for the TCP GSO cutter of `ferry bench
 * wan` (bench/wangso.c).
 *
 * The input is a packet as a TUN device with IFF_VNET_HDR hands it over
 * (a virtio_net_hdr, then an IP packet). Checked: a packet not cut counts
 * as one segment of its IP length; a cut one has segments whose payloads
 * add up to its payload, and its pieces (the whole, the first 64 alone,
 * and the rest after each) have headers that fit WAN_GSO_HDR_MAX, a
 * payload inside the input, an IP length that is theirs and (IPv4) a
 * valid header checksum. Any violation traps. Linked with only the cutter.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/wangso.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static void check_piece(const uint8_t *data, size_t size, const struct wan_gso *g, unsigned first,
                        unsigned n)
{
    uint8_t hdr[WAN_GSO_HDR_MAX];
    size_t off, len;
    size_t hl = wan_gso_piece(data, g, first, n, hdr, &off, &len);
    CHECK(hl == WAN_VNET_HDR_LEN + g->hlen && hl <= WAN_GSO_HDR_MAX);
    CHECK(len >= 1 && off + len <= size);
    const uint8_t *ip = hdr + WAN_VNET_HDR_LEN;
    size_t iplen = g->hlen + len;
    if (g->v6) {
        CHECK((size_t)(ip[4] << 8 | ip[5]) + 40 == iplen);
    } else {
        CHECK((size_t)(ip[2] << 8 | ip[3]) == iplen);
        CHECK(wan_csum_fold(wan_csum_add(0, ip, g->l3len)) == 0xffff);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wan_gso g;
    wan_gso_parse(data, size, &g);
    if (g.kind != WAN_GSO_CUT) {
        CHECK(g.nseg == 1 && wan_gso_seg_len(&g, 0) == g.iplen);
        CHECK(size < WAN_VNET_HDR_LEN ? g.iplen == 0 : g.iplen == size - WAN_VNET_HDR_LEN);
        return 0;
    }
    CHECK(g.nseg >= 1 && g.mss >= 1 && g.hlen < g.iplen && g.paylen == g.iplen - g.hlen);
    size_t sum = 0;
    for (unsigned k = 0; k < g.nseg; k++) {
        size_t l = wan_gso_seg_len(&g, k);
        CHECK(l > g.hlen && l <= g.hlen + g.mss);
        sum += l - g.hlen;
    }
    CHECK(sum == g.paylen);
    check_piece(data, size, &g, 0, g.nseg);
    for (unsigned k = 0; k < g.nseg && k < 64; k++) {
        check_piece(data, size, &g, k, 1);
        check_piece(data, size, &g, k, g.nseg - k);
    }
    return 0;
}
