/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ring_test.c: the status page's history: rates from counters, gauges as
 * they are, a counter that went back counts as 0, feeds too close together
 * are ignored, and the ring keeps the last RING_LEN samples in order.
 */
#include "harness.h"

#include "admin/ring.h"

static struct ring r; /* 900 samples: not on the stack */

static void test_rates_and_gauges(void **state)
{
    (void)state;
    ring_init(&r);
    struct ring_totals t = {.accepted = 10, .bytes_up = 1000, .sessions = 4};
    ring_feed(&r, &t, 1000, 100);
    assert_int_equal(r.n, 0); /* the first feed only sets the base */
    t.accepted = 30;
    t.bytes_up = 3000;
    t.bytes_down = 500;
    t.sessions = 7;
    t.udp_assocs = 2;
    ring_feed(&r, &t, 3000, 102); /* two seconds later */
    assert_int_equal(r.n, 1);
    const struct ring_sample *s = ring_at(&r, 0);
    assert_int_equal(s->t, 102);
    assert_true(s->setups > 9.99 && s->setups < 10.01);
    assert_true(s->up > 999.9 && s->up < 1000.1);
    assert_true(s->down > 249.9 && s->down < 250.1);
    assert_int_equal(s->sessions, 7);
    assert_int_equal(s->udp_assocs, 2);
}

static void test_counter_back_and_close_feeds(void **state)
{
    (void)state;
    ring_init(&r);
    struct ring_totals t = {.edge_routed = 50};
    ring_feed(&r, &t, 0, 1);
    t.edge_routed = 5; /* a reload started the counter again */
    ring_feed(&r, &t, 1000, 2);
    assert_int_equal(r.n, 1);
    assert_true(ring_at(&r, 0)->edge_routed == 0.0);
    ring_feed(&r, &t, 1050, 2); /* 50 ms later: ignored */
    assert_int_equal(r.n, 1);
}

static void test_wraps_keeping_the_last(void **state)
{
    (void)state;
    ring_init(&r);
    struct ring_totals t = {0};
    for (int i = 0; i <= RING_LEN + 100; i++) {
        t.sessions = (uint64_t)i;
        ring_feed(&r, &t, (int64_t)i * 1000, i);
    }
    assert_int_equal(r.n, RING_LEN);
    assert_int_equal(ring_at(&r, 0)->t, 101);
    assert_int_equal(ring_at(&r, RING_LEN - 1)->t, RING_LEN + 100);
    for (size_t i = 1; i < RING_LEN; i++)
        assert_int_equal(ring_at(&r, i)->t, ring_at(&r, i - 1)->t + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rates_and_gauges),
        cmocka_unit_test(test_counter_back_and_close_feeds),
        cmocka_unit_test(test_wraps_keeping_the_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
