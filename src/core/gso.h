/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gso.h: UDP segmentation offload for a batch about to go out. Runs of
 * consecutive datagrams to one address with the same length (the run's last
 * may be shorter) are merged into one message carrying a UDP_SEGMENT
 * control message: the kernel builds and routes one large packet and cuts
 * it into the original datagrams as late as it can (on loopback, at the
 * receiving socket), instead of walking its whole send path per datagram.
 * The datagrams that arrive are exactly those that were staged.
 *
 * Pure: rewrites an array of mmsghdr in memory, no I/O, so it is unit
 * tested alone, as is reading the size back on receive (udp_gro_size).
 * The caller keeps the merged messages' datagram counts to
 * account drops and to send a refused run one datagram at a time (a route
 * or device that cannot segment answers EIO or EINVAL).
 *
 * It lives in core/ so that the UDP relay (udp/) and the load generator
 * (bench/) share it without one reaching into the other; it knows the
 * kernel's UDP options and nothing of SOCKS or of associations.
 */
#ifndef FERRY_CORE_GSO_H
#define FERRY_CORE_GSO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define UDP_GSO_BATCH    64    /* the most messages one call rewrites */
#define UDP_GSO_SEGS     64    /* the most datagrams in one message (kernel's oldest limit) */
#define UDP_GSO_MAXBYTES 65507 /* the most payload in one (what one IPv4 datagram carries) */

struct udp_gso {
    struct {
        _Alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(uint16_t))];
    } ctl[UDP_GSO_BATCH];
    uint16_t segs[UDP_GSO_BATCH]; /* datagrams in each message after the call */
};

/* m[0..n): messages of one iovec each; only the first UDP_GSO_BATCH are
 * looked at (the caller sends longer batches in parts). A run merges
 * when its messages have equal msg_name bytes, their iovecs follow one
 * another in one array (m[i+1]'s msg_iov is m[i]'s plus one), and their
 * lengths are equal, non-zero and at most max_seg (a route's limit, once
 * it refused larger segments), but for a shorter non-zero last one.
 * Rewrites m in place, in order; returns the number of messages and sets
 * g->segs[k] for each. Messages left alone get no control data. */
unsigned udp_gso_coalesce(struct mmsghdr *m, unsigned n, size_t max_seg, struct udp_gso *g);

/* The receive side (UDP_GRO): a socket with the option set may be handed a
 * run of equal datagrams from one sender as one message, with a control
 * message giving the datagram size; every gro_size bytes of the message
 * start a datagram, the last may be shorter. Room for that control
 * message: */
#define UDP_GRO_CTL CMSG_SPACE(sizeof(int))

/* The datagram size of a received message h of len bytes: the UDP_GRO
 * control message's, or len when there is none (one datagram) or it makes
 * no sense (zero, or not below len). */
size_t udp_gro_size(struct msghdr *h, size_t len);

#endif
