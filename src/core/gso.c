/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gso.c: merge runs of equal datagrams into UDP_SEGMENT messages (gso.h).
 */
#include "core/gso.h"

#include <netinet/udp.h>
#include <string.h>

static int same_name(const struct msghdr *x, const struct msghdr *y)
{
    return x->msg_namelen == y->msg_namelen &&
           (x->msg_name == y->msg_name || memcmp(x->msg_name, y->msg_name, x->msg_namelen) == 0);
}

/* How many messages from m[i] on form one run (at least 1). */
static unsigned run_length(const struct mmsghdr *m, unsigned i, unsigned n, size_t max_seg)
{
    const struct msghdr *h = &m[i].msg_hdr;
    if (h->msg_iovlen != 1)
        return 1;
    size_t seg = h->msg_iov[0].iov_len;
    if (seg == 0 || seg > max_seg || seg > UDP_GSO_MAXBYTES)
        return 1;
    size_t total = seg;
    unsigned j = i + 1;
    while (j < n && j - i < UDP_GSO_SEGS) {
        const struct msghdr *x = &m[j].msg_hdr;
        if (x->msg_iovlen != 1 || x->msg_iov != h->msg_iov + (j - i) || !same_name(h, x))
            break;
        size_t len = x->msg_iov[0].iov_len;
        /* A zero-length datagram would vanish inside a merged message. */
        if (len == 0 || len > seg || total + len > UDP_GSO_MAXBYTES)
            break;
        total += len;
        j++;
        if (len < seg) /* only the last may be shorter */
            break;
    }
    return j - i;
}

unsigned udp_gso_coalesce(struct mmsghdr *m, unsigned n, size_t max_seg, struct udp_gso *g)
{
    unsigned out = 0;
    if (n > UDP_GSO_BATCH)
        n = UDP_GSO_BATCH;
    for (unsigned i = 0; i < n;) {
        unsigned k = run_length(m, i, n, max_seg);
        struct msghdr *h = &m[out].msg_hdr;
        if (out != i)
            m[out] = m[i];
        if (k > 1) {
            h->msg_iovlen = k;
            uint16_t seg = (uint16_t)m[out].msg_hdr.msg_iov[0].iov_len;
            memset(&g->ctl[out], 0, sizeof(g->ctl[out]));
            h->msg_control = g->ctl[out].buf;
            h->msg_controllen = sizeof(g->ctl[out].buf);
            struct cmsghdr *c = CMSG_FIRSTHDR(h);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(seg));
            memcpy(CMSG_DATA(c), &seg, sizeof(seg));
        } else {
            h->msg_control = NULL;
            h->msg_controllen = 0;
        }
        g->segs[out] = (uint16_t)k;
        out++;
        i += k;
    }
    return out;
}

size_t udp_gro_size(struct msghdr *h, size_t len)
{
    if (!h->msg_control)
        return len;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
        if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO ||
            c->cmsg_len < CMSG_LEN(sizeof(int)))
            continue;
        int seg;
        memcpy(&seg, CMSG_DATA(c), sizeof(seg));
        return seg > 0 && (size_t)seg < len ? (size_t)seg : len;
    }
    return len;
}
