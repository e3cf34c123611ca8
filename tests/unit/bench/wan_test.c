/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wan_test.c: the emulated path of `ferry bench wan` (wanpath.c): its
 * parameters as written on the command line or in a spec, and what it does
 * to each packet: the delay, a loss near the configured rate from a seeded
 * PRNG (the same seed, the same losses), a link at the rate with a queue of
 * bounded time (tail drop), and jitter that never reorders.
 */
#include "harness.h"

#include <errno.h>

#include "bench/wan.h"

#define MS 1000000ull

static void test_conf_words(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    assert_true(c.queue_ns == 50 * MS && c.mtu == 1500 && c.threads == 2 && c.rate_bps == 0);
    assert_true(c.gso);
    const char *bad = "x";
    assert_int_equal(
        wan_conf_parse(&c, "delay=25ms,jitter=500us,loss=0.5%,rate=1gbit,queue=20ms", &bad), 0);
    assert_null(bad);
    assert_true(c.delay_ns == 25 * MS && c.jitter_ns == 500000 && c.queue_ns == 20 * MS);
    assert_true(c.rate_bps == 1000000000ull && c.loss > 0.00499 && c.loss < 0.00501);
    assert_int_equal(wan_conf_set(&c, "delay", "1.5ms"), 0);
    assert_true(c.delay_ns == 1500000);
    assert_int_equal(wan_conf_set(&c, "rate", "100mbit"), 0);
    assert_true(c.rate_bps == 100000000ull);
    assert_int_equal(wan_conf_set(&c, "rate", "none"), 0);
    assert_true(c.rate_bps == 0);
    assert_int_equal(wan_conf_set(&c, "delay", "0"), 0);
    assert_true(c.delay_ns == 0);
    assert_int_equal(wan_conf_set(&c, "threads", "1"), 0);
    assert_int_equal(c.threads, 1);
    char words[160];
    wan_conf_describe(&c, words, sizeof(words));
    assert_null(strstr(words, "GSO"));
    assert_int_equal(wan_conf_parse(&c, "gso=off,delay=2ms", &bad), 0);
    assert_false(c.gso);
    wan_conf_describe(&c, words, sizeof(words));
    assert_non_null(strstr(words, "GSO off"));
    assert_int_equal(wan_conf_set(&c, "gso", "on"), 0);
    assert_true(c.gso);
}

static void test_conf_refuses(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    const char *bad = NULL;
    assert_int_equal(wan_conf_set(&c, "delay", "25"), -EINVAL); /* a unit is needed */
    assert_int_equal(wan_conf_set(&c, "delay", "-1ms"), -EINVAL);
    assert_int_equal(wan_conf_set(&c, "delay", "11s"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "loss", "0.5"), -EINVAL); /* a percentage */
    assert_int_equal(wan_conf_set(&c, "loss", "101%"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "rate", "100mbps"), -EINVAL);
    assert_int_equal(wan_conf_set(&c, "rate", "1bit"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "queue", "0"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "mtu", "100"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "threads", "3"), -ERANGE);
    assert_int_equal(wan_conf_set(&c, "colour", "blue"), -ENOENT);
    assert_int_equal(wan_conf_set(&c, "gso", "yes"), -EINVAL);
    assert_int_equal(wan_conf_set(&c, "gso", ""), -EINVAL);
    const char *spec = "delay=1ms,bogus=2";
    assert_int_equal(wan_conf_parse(&c, spec, &bad), -ENOENT);
    assert_ptr_equal(bad, spec + 10);
    assert_int_equal(wan_conf_parse(&c, "delay=1ms,", &bad), -EINVAL);
    assert_int_equal(wan_conf_parse(&c, "delay", &bad), -EINVAL);
}

static void test_delay_only(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    assert_int_equal(wan_conf_set(&c, "delay", "25ms"), 0);
    struct wan_shaper s;
    wan_shaper_init(&s, &c, 0);
    uint64_t rel = 0;
    for (uint64_t t = 0; t < 100; t++) {
        assert_int_equal(wan_shaper_admit(&s, 1000 + t * 7, 1500, &rel), WAN_PASS);
        assert_true(rel == 1000 + t * 7 + 25 * MS);
    }
    assert_true(s.in == 100 && s.passed == 100 && s.lost == 0);
}

/* Loss 0 % drops nothing, 100 % everything, 1 % about 1 % (and the same
 * packets again for the same seed). */
static void test_loss(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    struct wan_shaper s, s2;
    uint64_t rel;
    const char *pct[] = {"0%", "100%", "1%"};
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(wan_conf_set(&c, "loss", pct[k]), 0);
        wan_shaper_init(&s, &c, 0);
        wan_shaper_init(&s2, &c, 0);
        for (unsigned i = 0; i < 100000; i++)
            assert_int_equal(wan_shaper_admit(&s, i, 100, &rel),
                             wan_shaper_admit(&s2, i, 100, &rel));
        if (k == 0)
            assert_true(s.lost == 0);
        else if (k == 1)
            assert_true(s.lost == 100000 && s.passed == 0);
        else
            assert_true(s.lost > 900 && s.lost < 1100);
    }
}

/* 1500-byte packets at 12 Mbit/s take 1 ms each on the link; a burst
 * queues behind it, and what would wait more than the queue's 5 ms is
 * dropped. */
static void test_rate_and_queue(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    assert_int_equal(wan_conf_parse(&c, "rate=12mbit,queue=5ms,delay=10ms", &(const char *){0}), 0);
    struct wan_shaper s;
    wan_shaper_init(&s, &c, 0);
    uint64_t rel;
    unsigned passed = 0;
    for (unsigned i = 0; i < 20; i++) {
        enum wan_verdict v = wan_shaper_admit(&s, 0, 1500, &rel);
        if (v == WAN_PASS) {
            passed++;
            assert_true(rel == passed * MS + 10 * MS);
        } else {
            assert_int_equal(v, WAN_DROP_QUEUE);
        }
    }
    assert_int_equal(passed, 6); /* starts at 0..5 ms: waits of 0..5 ms */
    assert_true(s.tail_dropped == 14);
    assert_true(s.queued_ns == 15 * MS); /* waits of 0 + 1 + ... + 5 ms */
    /* once the link has drained, packets pass again at once */
    assert_int_equal(wan_shaper_admit(&s, 100 * MS, 1500, &rel), WAN_PASS);
    assert_true(rel == 111 * MS);
}

/* Jitter spreads release times within +-jitter and never reorders. */
static void test_jitter_in_order(void **state)
{
    (void)state;
    struct wan_conf c;
    wan_conf_init(&c);
    assert_int_equal(wan_conf_parse(&c, "delay=10ms,jitter=2ms", &(const char *){0}), 0);
    struct wan_shaper s;
    wan_shaper_init(&s, &c, 1);
    uint64_t rel, last = 0, lo = UINT64_MAX, hi = 0;
    for (uint64_t i = 0; i < 10000; i++) {
        uint64_t now = i * 100000; /* every 0.1 ms: many would overtake */
        assert_int_equal(wan_shaper_admit(&s, now, 100, &rel), WAN_PASS);
        assert_true(rel >= last && rel >= now + 8 * MS && rel <= now + 12 * MS);
        last = rel;
    }
    for (uint64_t i = 0; i < 10000; i++) {
        uint64_t now = 2000 * MS + i * 5 * MS; /* every 5 ms: none can */
        assert_int_equal(wan_shaper_admit(&s, now, 100, &rel), WAN_PASS);
        lo = rel - now < lo ? rel - now : lo;
        hi = rel - now > hi ? rel - now : hi;
    }
    assert_true(lo >= 8 * MS && lo < 8200000 && hi > 11800000 && hi <= 12 * MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conf_words),     cmocka_unit_test(test_conf_refuses),
        cmocka_unit_test(test_delay_only),     cmocka_unit_test(test_loss),
        cmocka_unit_test(test_rate_and_queue), cmocka_unit_test(test_jitter_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
