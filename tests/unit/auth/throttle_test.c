/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * throttle_test.c: failure counting per client address, with time passed
 * in. Below max_failures nothing is blocked; the failure that reaches it
 * starts a block (throttle_fail returns true for it and for no other);
 * blocks end at blocked_until; windows restart after failure_window;
 * addresses (never ports) are counted apart, IPv4 apart from IPv6; 0
 * disables; a tiny table survives a flood and keeps a block in force over
 * entries that block nobody; throttle_configure changes the limits and
 * keeps what is tracked; attempts in flight count as guesses (identical
 * ones once), however they end. One test hammers one address from four
 * threads.
 */
#include "harness.h"

#include <pthread.h>

#include "auth/throttle.h"
#include "util/addr.h"

#define T0 5000000u

static struct throttle thr; /* the test's; the teardown frees it */

static int teardown(void **state)
{
    (void)state;
    throttle_fini(&thr);
    return 0;
}

static struct addr ip(const char *text, uint16_t port)
{
    struct addr a;
    memset(&a, 0, sizeof(a));
    assert_int_equal(addr_parse_ip(text, port, &a), 0);
    return a;
}

/* IPv4 10.x.y.z numbered i. */
static struct addr ip_n(unsigned i)
{
    struct addr a;
    memset(&a, 0, sizeof(a));
    a.family = AF_INET;
    a.ip[0] = 10;
    a.ip[1] = (uint8_t)(i >> 16);
    a.ip[2] = (uint8_t)(i >> 8);
    a.ip[3] = (uint8_t)i;
    return a;
}

/* Fail n times at now; returns how many of them started a block. */
static unsigned fail_n(const struct addr *a, unsigned n, uint64_t now)
{
    unsigned starts = 0;
    for (unsigned i = 0; i < n; i++)
        starts += throttle_fail(&thr, a, now);
    return starts;
}

static void test_below_limit_not_blocked(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 5, 60000, 30000), 0);
    struct addr a = ip("192.0.2.1", 1234);
    assert_false(throttle_blocked(&thr, &a, T0));
    for (unsigned i = 0; i < 4; i++) {
        assert_false(throttle_fail(&thr, &a, T0 + i));
        assert_false(throttle_blocked(&thr, &a, T0 + i));
    }
    /* The fifth, within the window, starts the block. */
    assert_true(throttle_fail(&thr, &a, T0 + 10));
    assert_true(throttle_blocked(&thr, &a, T0 + 10));
}

static void test_block_starts_once_and_ends(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 3, 10000, 5000), 0);
    struct addr a = ip("192.0.2.7", 40000);
    assert_false(throttle_fail(&thr, &a, T0));
    assert_false(throttle_fail(&thr, &a, T0 + 1));
    assert_true(throttle_fail(&thr, &a, T0 + 2)); /* blocked until T0+5002 */
    /* More failures during the block start nothing and do not extend it. */
    assert_int_equal(fail_n(&a, 50, T0 + 100), 0);
    assert_int_equal(fail_n(&a, 50, T0 + 4999), 0);
    assert_true(throttle_blocked(&thr, &a, T0 + 2));
    assert_true(throttle_blocked(&thr, &a, T0 + 5001));
    assert_false(throttle_blocked(&thr, &a, T0 + 5002));
    assert_false(throttle_blocked(&thr, &a, T0 + 100000));
    /* After the block the count starts afresh: two more are fine, the
     * third blocks again (and is again the one that says so). */
    assert_false(throttle_fail(&thr, &a, T0 + 6000));
    assert_false(throttle_fail(&thr, &a, T0 + 6001));
    assert_false(throttle_blocked(&thr, &a, T0 + 6001));
    assert_true(throttle_fail(&thr, &a, T0 + 6002));
    assert_true(throttle_blocked(&thr, &a, T0 + 6002));
    assert_false(throttle_blocked(&thr, &a, T0 + 11002));
}

static void test_window_resets(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 3, 1000, 5000), 0);
    struct addr a = ip("198.51.100.9", 1);
    assert_false(throttle_fail(&thr, &a, T0));
    assert_false(throttle_fail(&thr, &a, T0 + 999)); /* still in the window: 2 */
    /* The window began at T0: at T0+1000 it is over, and counting restarts. */
    assert_false(throttle_fail(&thr, &a, T0 + 1000)); /* 1 */
    assert_false(throttle_fail(&thr, &a, T0 + 1500)); /* 2 */
    assert_false(throttle_blocked(&thr, &a, T0 + 1500));
    assert_true(throttle_fail(&thr, &a, T0 + 1999)); /* 3 within [T0+1000, T0+2000) */
    assert_true(throttle_blocked(&thr, &a, T0 + 2000));

    /* Slow failures, one per window, never block. */
    struct addr b = ip("198.51.100.10", 1);
    for (unsigned i = 0; i < 20; i++) {
        assert_false(throttle_fail(&thr, &b, T0 + i * 1000));
        assert_false(throttle_blocked(&thr, &b, T0 + i * 1000));
    }
}

static void test_addresses_independent(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 2, 60000, 60000), 0);
    struct addr a = ip("127.0.0.2", 50000), b = ip("127.0.0.3", 50000);
    assert_false(throttle_fail(&thr, &a, T0));
    assert_false(throttle_fail(&thr, &b, T0));
    assert_true(throttle_fail(&thr, &a, T0 + 1));
    assert_true(throttle_blocked(&thr, &a, T0 + 2));
    assert_false(throttle_blocked(&thr, &b, T0 + 2));
    /* The port is not part of the identity: every connection of the
     * blocked address is blocked. */
    struct addr a_other_port = ip("127.0.0.2", 50001);
    assert_true(throttle_blocked(&thr, &a_other_port, T0 + 2));
    assert_false(throttle_fail(&thr, &a_other_port, T0 + 3)); /* no second start */
    /* b's own failure count was untouched by a's. */
    assert_true(throttle_fail(&thr, &b, T0 + 3));
    assert_true(throttle_blocked(&thr, &b, T0 + 3));
    /* Neighbours are strangers. */
    struct addr c = ip("127.0.0.4", 50000);
    assert_false(throttle_blocked(&thr, &c, T0 + 3));
}

static void test_ipv4_and_ipv6_apart(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 2, 60000, 60000), 0);
    struct addr v4 = ip("1.2.3.4", 80);
    /* The same first four bytes, as IPv6; and the IPv4-mapped form. */
    struct addr v6 = ip("102:304::", 80), mapped = ip("::ffff:1.2.3.4", 80);
    struct addr lo6 = ip("::1", 80), lo6_other = ip("::2", 80);
    assert_int_equal(fail_n(&v4, 2, T0), 1);
    assert_true(throttle_blocked(&thr, &v4, T0));
    assert_false(throttle_blocked(&thr, &v6, T0));
    assert_false(throttle_blocked(&thr, &mapped, T0));
    assert_false(throttle_blocked(&thr, &lo6, T0));
    /* IPv6 addresses are compared on all 16 bytes. */
    assert_int_equal(fail_n(&lo6, 2, T0), 1);
    assert_true(throttle_blocked(&thr, &lo6, T0));
    assert_false(throttle_blocked(&thr, &lo6_other, T0));
    assert_false(throttle_blocked(&thr, &v6, T0));
    struct addr far6 = ip("2001:db8::1", 1), far6_low = ip("2001:db8::1:0:0:1", 1);
    assert_int_equal(fail_n(&far6, 2, T0), 1);
    assert_false(throttle_blocked(&thr, &far6_low, T0));
}

static void test_zero_disables(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 0, 1000, 1000), 0);
    struct addr a = ip("203.0.113.5", 9);
    assert_int_equal(fail_n(&a, 10000, T0), 0);
    assert_false(throttle_blocked(&thr, &a, T0));
}

static void test_one_failure_blocks(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 1, 1000, 1000), 0);
    struct addr a = ip("203.0.113.6", 9);
    assert_true(throttle_fail(&thr, &a, T0));
    assert_true(throttle_blocked(&thr, &a, T0 + 999));
    assert_false(throttle_blocked(&thr, &a, T0 + 1000));
}

static void test_configure(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 10, 60000, 60000), 0);
    struct addr a = ip("192.0.2.20", 1), b = ip("192.0.2.21", 1);
    assert_int_equal(fail_n(&a, 3, T0), 0);
    assert_false(throttle_blocked(&thr, &a, T0));
    /* Lower limit and shorter block: a's three failures are remembered. */
    throttle_configure(&thr, 4, 60000, 2000);
    assert_int_equal(thr.max_failures, 4);
    assert_true(throttle_fail(&thr, &a, T0 + 1));
    assert_true(throttle_blocked(&thr, &a, T0 + 2000));
    assert_false(throttle_blocked(&thr, &a, T0 + 2001));
    /* 0 turns throttling off at once, blocks in force included. */
    assert_int_equal(fail_n(&b, 4, T0), 1);
    assert_true(throttle_blocked(&thr, &b, T0 + 10));
    throttle_configure(&thr, 0, 60000, 2000);
    assert_false(throttle_blocked(&thr, &b, T0 + 10));
    assert_int_equal(fail_n(&b, 100, T0 + 10), 0);
    /* On again: the tracked block is still there. */
    throttle_configure(&thr, 4, 60000, 2000);
    assert_true(throttle_blocked(&thr, &b, T0 + 10));
    /* A shorter window applies to the next failure. */
    struct addr c = ip("192.0.2.22", 1);
    throttle_configure(&thr, 2, 100, 2000);
    assert_false(throttle_fail(&thr, &c, T0));
    assert_false(throttle_fail(&thr, &c, T0 + 100)); /* new window */
    assert_true(throttle_fail(&thr, &c, T0 + 150));
}

/* A table of one set: a flood of addresses neither crashes it nor grows
 * it, and a block in force outlives entries that block nobody. */
static void test_tiny_table_flood(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 4, 3, 60000, 60000), 0);
    assert_int_equal(thr.nsets, 1);
    struct addr bad = ip("127.0.0.2", 1);
    assert_int_equal(fail_n(&bad, 3, T0), 1);
    for (unsigned i = 0; i < 10000; i++) {
        struct addr a = ip_n(i);
        assert_false(throttle_fail(&thr, &a, T0 + 1 + i / 100)); /* one each: no block */
        assert_true(throttle_blocked(&thr, &bad, T0 + 1 + i / 100));
    }
    /* The newest of the flood is tracked; the oldest were replaced. */
    struct addr newest = ip_n(9999), oldest = ip_n(0);
    assert_int_equal(fail_n(&newest, 2, T0 + 200), 1); /* 1 + 2 = 3 */
    assert_int_equal(fail_n(&oldest, 2, T0 + 200), 0); /* starts again at 1 */

    /* When every way blocks, a newcomer still gets a way (the oldest). */
    throttle_fini(&thr);
    assert_int_equal(throttle_init(&thr, 4, 1, 60000, 60000), 0);
    for (unsigned i = 0; i < 4; i++) {
        struct addr a = ip_n(i);
        assert_true(throttle_fail(&thr, &a, T0 + i));
    }
    struct addr late = ip_n(100);
    assert_true(throttle_fail(&thr, &late, T0 + 10));
    assert_true(throttle_blocked(&thr, &late, T0 + 10));
    for (unsigned i = 1; i < 4; i++) {
        struct addr a = ip_n(i);
        assert_true(throttle_blocked(&thr, &a, T0 + 10));
    }
}

/* A bigger table under a flood: blocked addresses stay blocked
 * while there is room for them. */
static void test_large_table_keeps_blocks(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 4096, 2, 60000, 60000), 0);
    struct addr bad[16];
    for (unsigned i = 0; i < 16; i++) {
        bad[i] = ip_n(1000000 + i);
        assert_int_equal(fail_n(&bad[i], 2, T0), 1);
    }
    /* 50000 other addresses, one failure each: none of them blocks. */
    for (unsigned i = 0; i < 50000; i++) {
        struct addr a = ip_n(i);
        assert_false(throttle_fail(&thr, &a, T0 + 1));
    }
    for (unsigned i = 0; i < 16; i++)
        assert_true(throttle_blocked(&thr, &bad[i], T0 + 2));
}

struct hammer {
    struct addr a;
    unsigned starts;
};

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    for (unsigned i = 0; i < 2000; i++)
        h->starts += throttle_fail(&thr, &h->a, T0);
    return NULL;
}

/* Four threads fail the same address 8000 times in all: exactly one of
 * those failures started the block. */
static void test_threads_one_start(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 5000, 60000, 60000), 0);
    struct hammer h[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        h[i].a = ip("127.0.0.9", (uint16_t)(1000 + i));
        h[i].starts = 0;
        assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
    }
    unsigned starts = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        starts += h[i].starts;
    }
    assert_int_equal(starts, 1);
    assert_true(throttle_blocked(&thr, &h[0].a, T0));
}

/* Attempts in flight are guesses: the same key any number of times is
 * one guess and is never refused for parallelism, a new key beyond
 * max_failures is; a blocked address is refused whatever the key. */
static void test_identical_attempts_one_guess(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 2, 60000, 30000), 0);
    struct addr a = ip("192.0.2.50", 1);
    for (unsigned i = 0; i < 64; i++)
        assert_true(throttle_begin(&thr, &a, T0, 0xabc));
    assert_true(throttle_begin(&thr, &a, T0, 0xdef));  /* a second guess */
    assert_false(throttle_begin(&thr, &a, T0, 0x123)); /* a third: over the limit */
    assert_true(throttle_begin(&thr, &a, T0, 0xabc));  /* still the first one */
    /* All the right ones end well; the second guess fails once. */
    for (unsigned i = 0; i < 65; i++)
        assert_false(throttle_end(&thr, &a, T0 + 1, 0xabc, false));
    assert_false(throttle_end(&thr, &a, T0 + 1, 0xdef, true));
    assert_false(throttle_blocked(&thr, &a, T0 + 1));
    /* Nothing in flight now: two new guesses fit again, a third does not. */
    assert_true(throttle_begin(&thr, &a, T0 + 2, 1));
    assert_true(throttle_begin(&thr, &a, T0 + 2, 2));
    assert_false(throttle_begin(&thr, &a, T0 + 2, 3));
    /* Failures count per attempt, identical or not: the second blocks. */
    assert_false(throttle_end(&thr, &a, T0 + 3, 1, false));
    assert_true(throttle_end(&thr, &a, T0 + 3, 2, true));
    assert_false(throttle_begin(&thr, &a, T0 + 4, 0xabc));
}

/* More distinct guesses than key slots: the overflow is counted one by
 * one, and whatever order attempts end in, the books come back to zero
 * (max_failures new guesses fit again, one more does not). */
static void test_more_guesses_than_slots(void **state)
{
    (void)state;
    const uint32_t max = THROTTLE_KEYS + 4;
    assert_int_equal(throttle_init(&thr, 1024, max, 60000, 30000), 0);
    struct addr a = ip("192.0.2.51", 1);
    /* max distinct guesses; then repeats of every one of them. */
    for (uint64_t k = 1; k <= max; k++)
        assert_true(throttle_begin(&thr, &a, T0, k));
    assert_false(throttle_begin(&thr, &a, T0, 1000));
    uint64_t again[2 * (THROTTLE_KEYS + 4)];
    unsigned n = 0;
    for (uint64_t k = 1; k <= max; k++) {
        if (throttle_begin(&thr, &a, T0, k)) /* slotted keys join; the rest are full */
            again[n++] = k;
    }
    assert_int_equal(n, THROTTLE_KEYS);
    /* End the first slotted key's attempts, then a new key takes its slot
     * and an overflowed key begins again (now slotted). */
    assert_false(throttle_end(&thr, &a, T0 + 1, 1, false));
    assert_false(throttle_end(&thr, &a, T0 + 1, 1, false));
    assert_true(throttle_begin(&thr, &a, T0 + 1, max)); /* overflowed before; now slotted */
    again[n++] = max;
    /* End everything in a scrambled order. */
    for (uint64_t k = max; k >= 2; k--)
        assert_false(throttle_end(&thr, &a, T0 + 2, k, false));
    for (unsigned i = 0; i < n; i++)
        if (again[i] != 1)
            assert_false(throttle_end(&thr, &a, T0 + 2, again[i], false));
    for (uint64_t k = 100; k < 100 + max; k++)
        assert_true(throttle_begin(&thr, &a, T0 + 3, k));
    assert_false(throttle_begin(&thr, &a, T0 + 3, 99));
}

/* Throttling turned off by a reload while guesses are in flight: their
 * ends still give the slots back, so once it is on again the address has
 * its full count of guesses. */
static void test_off_and_on_with_guesses_in_flight(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 1024, 2, 60000, 30000), 0);
    struct addr a = ip("192.0.2.52", 1);
    assert_true(throttle_begin(&thr, &a, T0, 1));
    assert_true(throttle_begin(&thr, &a, T0, 2));
    throttle_configure(&thr, 0, 60000, 30000);
    assert_false(throttle_end(&thr, &a, T0, 1, true)); /* off: no failure counted */
    assert_false(throttle_end(&thr, &a, T0, 2, true));
    throttle_configure(&thr, 2, 60000, 30000);
    assert_false(throttle_blocked(&thr, &a, T0));
    assert_true(throttle_begin(&thr, &a, T0, 3));
    assert_true(throttle_begin(&thr, &a, T0, 4));
    assert_false(throttle_begin(&thr, &a, T0, 5));
}

static void test_init_fini_edges(void **state)
{
    (void)state;
    assert_int_equal(throttle_init(&thr, 0, 3, 1000, 1000), 0);
    assert_int_equal(thr.nsets, 1);
    struct addr a = ip("192.0.2.1", 1);
    assert_int_equal(fail_n(&a, 3, T0), 1);
    throttle_fini(&thr);
    /* Finished: nothing is blocked and nothing is counted. */
    assert_false(throttle_blocked(&thr, &a, T0));
    assert_false(throttle_fail(&thr, &a, T0));
    throttle_fini(&thr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_below_limit_not_blocked, teardown),
        cmocka_unit_test_teardown(test_block_starts_once_and_ends, teardown),
        cmocka_unit_test_teardown(test_window_resets, teardown),
        cmocka_unit_test_teardown(test_addresses_independent, teardown),
        cmocka_unit_test_teardown(test_ipv4_and_ipv6_apart, teardown),
        cmocka_unit_test_teardown(test_zero_disables, teardown),
        cmocka_unit_test_teardown(test_one_failure_blocks, teardown),
        cmocka_unit_test_teardown(test_configure, teardown),
        cmocka_unit_test_teardown(test_tiny_table_flood, teardown),
        cmocka_unit_test_teardown(test_large_table_keeps_blocks, teardown),
        cmocka_unit_test_teardown(test_threads_one_start, teardown),
        cmocka_unit_test_teardown(test_identical_attempts_one_guess, teardown),
        cmocka_unit_test_teardown(test_more_guesses_than_slots, teardown),
        cmocka_unit_test_teardown(test_off_and_on_with_guesses_in_flight, teardown),
        cmocka_unit_test_teardown(test_init_fini_edges, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
