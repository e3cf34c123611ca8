/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gso_test.c: which runs of a batch merge into one UDP_SEGMENT message.
 * Equal datagrams to one address merge (the last of a run may be
 * shorter); an empty datagram, a longer one, another address, iovecs that
 * are not adjacent, the segment and byte limits and a route's segment
 * size limit all end a run; messages
 * keep their order and the merged ones carry the segment size.
 * On receive, udp_gro_size reads a coalesced run's datagram size back and
 * ignores control data that is not a sane UDP_GRO size.
 */
#include "harness.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include "core/gso.h"

#define N 80

struct batch {
    struct mmsghdr m[N];
    struct iovec iov[N];
    struct sockaddr_in name[N];
    uint8_t data[N]; /* iov_base only needs to be distinct */
    struct udp_gso g;
};

/* Message i: to port ports[i], length lens[i]; each its own name storage,
 * iovecs adjacent in one array (as ferry stages them). */
static void build(struct batch *b, unsigned n, const size_t *lens, const uint16_t *ports)
{
    memset(b, 0, sizeof(*b));
    for (unsigned i = 0; i < n; i++) {
        b->name[i].sin_family = AF_INET;
        b->name[i].sin_port = htons(ports ? ports[i] : 9);
        b->name[i].sin_addr.s_addr = htonl(0x7f000001);
        b->iov[i] = (struct iovec){&b->data[i], lens[i]};
        b->m[i].msg_hdr = (struct msghdr){.msg_name = &b->name[i],
                                          .msg_namelen = sizeof(b->name[i]),
                                          .msg_iov = &b->iov[i],
                                          .msg_iovlen = 1};
    }
}

static uint16_t seg_size(const struct msghdr *h)
{
    const struct cmsghdr *c = CMSG_FIRSTHDR(h);
    assert_non_null(c);
    assert_int_equal(c->cmsg_level, SOL_UDP);
    assert_int_equal(c->cmsg_type, UDP_SEGMENT);
    assert_int_equal(c->cmsg_len, CMSG_LEN(sizeof(uint16_t)));
    uint16_t v;
    memcpy(&v, CMSG_DATA(c), sizeof(v));
    return v;
}

/* The merged batch has messages of want[k] datagrams each, in order, and
 * every datagram of the input exactly once. */
static void expect_runs(struct batch *b, unsigned n, const unsigned *want, unsigned nwant)
{
    unsigned got = udp_gso_coalesce(b->m, n, UDP_GSO_MAXBYTES, &b->g);
    assert_int_equal(got, nwant);
    unsigned next = 0;
    for (unsigned k = 0; k < got; k++) {
        const struct msghdr *h = &b->m[k].msg_hdr;
        assert_int_equal(b->g.segs[k], want[k]);
        assert_int_equal(h->msg_iovlen, want[k]);
        assert_ptr_equal(h->msg_iov, &b->iov[next]); /* order kept */
        if (want[k] > 1)
            assert_int_equal(seg_size(h), b->iov[next].iov_len);
        else
            assert_null(h->msg_control);
        next += want[k];
    }
    assert_int_equal(next, n);
}

static void test_equal_run_merges(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[5] = {1000, 1000, 1000, 1000, 1000};
    build(&b, 5, lens, NULL);
    expect_runs(&b, 5, (unsigned[]){5}, 1);
}

static void test_shorter_last_ends_run(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[7] = {1000, 1000, 500, 1000, 1000, 1000, 1};
    build(&b, 7, lens, NULL);
    expect_runs(&b, 7, (unsigned[]){3, 4}, 2);
}

static void test_longer_breaks_run(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[5] = {500, 500, 1000, 1000, 1200};
    build(&b, 5, lens, NULL);
    expect_runs(&b, 5, (unsigned[]){2, 2, 1}, 3);
}

static void test_empty_datagram_never_merges(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[6] = {100, 100, 0, 0, 100, 100};
    build(&b, 6, lens, NULL);
    expect_runs(&b, 6, (unsigned[]){2, 1, 1, 2}, 4);
}

static void test_other_address_breaks_run(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[6] = {100, 100, 100, 100, 100, 100};
    uint16_t ports[6] = {9, 9, 10, 9, 9, 9};
    build(&b, 6, lens, ports);
    expect_runs(&b, 6, (unsigned[]){2, 1, 3}, 3);
    /* Equal bytes in different storage count as the same address; the
     * very same storage too (the reply direction shares one name). */
    build(&b, 4, lens, NULL);
    for (unsigned i = 0; i < 4; i++)
        b.m[i].msg_hdr.msg_name = &b.name[0];
    expect_runs(&b, 4, (unsigned[]){4}, 1);
}

static void test_non_adjacent_iovecs_do_not_merge(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[4] = {100, 100, 100, 100};
    build(&b, 4, lens, NULL);
    b.m[2].msg_hdr.msg_iov = &b.iov[3]; /* not m[1]'s plus one */
    b.m[3].msg_hdr.msg_iov = &b.iov[2];
    unsigned got = udp_gso_coalesce(b.m, 4, UDP_GSO_MAXBYTES, &b.g);
    assert_int_equal(got, 3);
    assert_int_equal(b.g.segs[0], 2);
    assert_int_equal(b.g.segs[1], 1);
    assert_int_equal(b.g.segs[2], 1);
    assert_ptr_equal(b.m[1].msg_hdr.msg_iov, &b.iov[3]);
    assert_ptr_equal(b.m[2].msg_hdr.msg_iov, &b.iov[2]);
}

static void test_several_iovecs_left_alone(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[3] = {100, 100, 100};
    build(&b, 3, lens, NULL);
    b.m[0].msg_hdr.msg_iovlen = 2; /* one datagram of two pieces */
    unsigned got = udp_gso_coalesce(b.m, 3, UDP_GSO_MAXBYTES, &b.g);
    assert_int_equal(got, 2);
    assert_int_equal(b.g.segs[0], 1);
    assert_int_equal(b.m[0].msg_hdr.msg_iovlen, 2);
}

static void test_byte_limit(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[10];
    for (unsigned i = 0; i < 10; i++)
        lens[i] = 9012; /* 7 fit in UDP_GSO_MAXBYTES, not 8 */
    build(&b, 10, lens, NULL);
    expect_runs(&b, 10, (unsigned[]){7, 3}, 2);
    /* A datagram at the byte limit cannot merge with anything. */
    size_t big[3] = {UDP_GSO_MAXBYTES, UDP_GSO_MAXBYTES, 1};
    build(&b, 3, big, NULL);
    expect_runs(&b, 3, (unsigned[]){1, 1, 1}, 3);
}

static void test_segment_and_batch_limits(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[N];
    for (unsigned i = 0; i < N; i++)
        lens[i] = 10;
    build(&b, N, lens, NULL);
    /* Only the first UDP_GSO_BATCH are looked at, left untouched beyond. */
    unsigned got = udp_gso_coalesce(b.m, N, UDP_GSO_MAXBYTES, &b.g);
    assert_int_equal(got, 1);
    assert_int_equal(b.g.segs[0], UDP_GSO_BATCH);
    assert_ptr_equal(b.m[UDP_GSO_BATCH].msg_hdr.msg_iov, &b.iov[UDP_GSO_BATCH]);
    assert_int_equal(b.m[UDP_GSO_BATCH].msg_hdr.msg_iovlen, 1);
    assert_true(UDP_GSO_BATCH <= UDP_GSO_SEGS);
}

/* After a route refused segments of some size, only smaller ones merge;
 * 0 turns merging off. */
static void test_segment_size_limit(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[6] = {8000, 8000, 8000, 1000, 1000, 1000};
    build(&b, 6, lens, NULL);
    unsigned got = udp_gso_coalesce(b.m, 6, 7999, &b.g);
    assert_int_equal(got, 4);
    assert_int_equal(b.g.segs[0], 1);
    assert_int_equal(b.g.segs[1], 1);
    assert_int_equal(b.g.segs[2], 1);
    assert_int_equal(b.g.segs[3], 3);
    assert_int_equal(seg_size(&b.m[3].msg_hdr), 1000);
    build(&b, 6, lens, NULL);
    assert_int_equal(udp_gso_coalesce(b.m, 6, 8000, &b.g), 2);
    build(&b, 6, lens, NULL);
    assert_int_equal(udp_gso_coalesce(b.m, 6, 0, &b.g), 6);
    for (unsigned k = 0; k < 6; k++)
        assert_null(b.m[k].msg_hdr.msg_control);
}

static void test_single_and_empty_batches(void **state)
{
    (void)state;
    struct batch b;
    size_t lens[1] = {1200};
    build(&b, 1, lens, NULL);
    expect_runs(&b, 1, (unsigned[]){1}, 1);
    assert_int_equal(udp_gso_coalesce(b.m, 0, UDP_GSO_MAXBYTES, &b.g), 0);
}

/* Random batches: whatever merges, the datagrams come out once each, in
 * order, and every merged run obeys the rules. */
static void test_random_batches(void **state)
{
    (void)state;
    struct harness_rng r;
    harness_rng_init(&r, 42);
    static const size_t pick[] = {0, 1, 100, 100, 100, 1200, 1200, 8000, 9012, 40000};
    for (int round = 0; round < 2000; round++) {
        struct batch b;
        size_t lens[UDP_GSO_BATCH];
        uint16_t ports[UDP_GSO_BATCH];
        unsigned n = (unsigned)(harness_rng_next(&r) % (UDP_GSO_BATCH + 1));
        for (unsigned i = 0; i < n; i++) {
            lens[i] = pick[harness_rng_next(&r) % (sizeof(pick) / sizeof(pick[0]))];
            ports[i] = (uint16_t)(9 + harness_rng_next(&r) % 2);
        }
        build(&b, n, lens, ports);
        size_t max_seg = (round % 3 == 0) ? 1200 : UDP_GSO_MAXBYTES;
        unsigned got = udp_gso_coalesce(b.m, n, max_seg, &b.g), next = 0;
        for (unsigned k = 0; k < got; k++) {
            const struct msghdr *h = &b.m[k].msg_hdr;
            unsigned s = b.g.segs[k];
            assert_ptr_equal(h->msg_iov, &b.iov[next]);
            assert_int_equal(h->msg_iovlen, s);
            size_t total = 0;
            for (unsigned j = 0; j < s; j++) {
                size_t len = b.iov[next + j].iov_len;
                total += len;
                if (s > 1) {
                    assert_true(len > 0);
                    assert_true(len <= lens[next]);
                    if (j + 1 < s)
                        assert_int_equal(len, lens[next]);
                    assert_int_equal(ports[next + j], ports[next]);
                }
            }
            if (s > 1) {
                assert_true(total <= UDP_GSO_MAXBYTES);
                assert_true(lens[next] <= max_seg);
                assert_int_equal(seg_size(h), lens[next]);
            }
            next += s;
        }
        assert_int_equal(next, n);
    }
}

/* A received message whose control area holds the given messages, each
 * (level, type, int value); ctl is the caller's aligned storage. */
struct rx {
    struct msghdr h;
    _Alignas(struct cmsghdr) char ctl[3 * CMSG_SPACE(sizeof(int))];
};

static struct msghdr *rx_build(struct rx *r, unsigned n, const int (*c)[3])
{
    memset(r, 0, sizeof(*r));
    r->h.msg_control = n ? r->ctl : NULL;
    r->h.msg_controllen = n * CMSG_SPACE(sizeof(int));
    struct cmsghdr *cm = n ? CMSG_FIRSTHDR(&r->h) : NULL;
    for (unsigned i = 0; i < n; i++, cm = CMSG_NXTHDR(&r->h, cm)) {
        assert_non_null(cm);
        cm->cmsg_level = c[i][0];
        cm->cmsg_type = c[i][1];
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &c[i][2], sizeof(int));
    }
    return &r->h;
}

static void test_gro_size(void **state)
{
    (void)state;
    struct rx r;
    /* No control data: one datagram, whatever its length (empty too). */
    assert_int_equal(udp_gro_size(rx_build(&r, 0, NULL), 1200), 1200);
    assert_int_equal(udp_gro_size(rx_build(&r, 0, NULL), 0), 0);
    /* A run: 10 datagrams of 512 bytes, or 9 and a shorter last one. */
    const int gro512[][3] = {{SOL_UDP, UDP_GRO, 512}};
    assert_int_equal(udp_gro_size(rx_build(&r, 1, gro512), 5120), 512);
    assert_int_equal(udp_gro_size(rx_build(&r, 1, gro512), 4700), 512);
    /* Found behind another control message. */
    const int after[][3] = {{SOL_IP, IP_TOS, 0}, {SOL_UDP, UDP_GRO, 100}};
    assert_int_equal(udp_gro_size(rx_build(&r, 2, after), 1000), 100);
    /* A size that is not below the length means one datagram. */
    assert_int_equal(udp_gro_size(rx_build(&r, 1, gro512), 512), 512);
    assert_int_equal(udp_gro_size(rx_build(&r, 1, gro512), 300), 300);
    /* Nonsense sizes and other options are ignored. */
    const int zero[][3] = {{SOL_UDP, UDP_GRO, 0}};
    const int neg[][3] = {{SOL_UDP, UDP_GRO, -5}};
    const int seg[][3] = {{SOL_UDP, UDP_SEGMENT, 100}};
    const int ip[][3] = {{SOL_IP, UDP_GRO, 100}};
    assert_int_equal(udp_gro_size(rx_build(&r, 1, zero), 1000), 1000);
    assert_int_equal(udp_gro_size(rx_build(&r, 1, neg), 1000), 1000);
    assert_int_equal(udp_gro_size(rx_build(&r, 1, seg), 1000), 1000);
    assert_int_equal(udp_gro_size(rx_build(&r, 1, ip), 1000), 1000);
    /* A truncated control message (shorter than an int) is not read. */
    rx_build(&r, 1, gro512);
    CMSG_FIRSTHDR(&r.h)->cmsg_len = CMSG_LEN(1);
    assert_int_equal(udp_gro_size(&r.h, 5120), 5120);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_run_merges),
        cmocka_unit_test(test_shorter_last_ends_run),
        cmocka_unit_test(test_longer_breaks_run),
        cmocka_unit_test(test_empty_datagram_never_merges),
        cmocka_unit_test(test_other_address_breaks_run),
        cmocka_unit_test(test_non_adjacent_iovecs_do_not_merge),
        cmocka_unit_test(test_several_iovecs_left_alone),
        cmocka_unit_test(test_byte_limit),
        cmocka_unit_test(test_segment_and_batch_limits),
        cmocka_unit_test(test_segment_size_limit),
        cmocka_unit_test(test_single_and_empty_batches),
        cmocka_unit_test(test_random_batches),
        cmocka_unit_test(test_gro_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
