/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2flow_test.c: the flow-control arithmetic of the HTTP/2 inbound
 * (proto/h2flow.h): RTT smoothing, the window auto-tuning rule and its
 * bounds, the first epoch's start (the first DATA), admission under the connection and worker
 * budgets (growth of the connection budget, the 16 KiB floor), and the per-second event budgets.
 */
#include "harness.h"

#include "proto/h2flow.h"

static void test_rtt_smoothing(void **state)
{
    (void)state;
    struct h2flow_rtt r = {0};
    h2flow_rtt_sample(&r, 0); /* ignored */
    assert_int_equal(r.srtt_us, 0);
    h2flow_rtt_sample(&r, 8000);
    assert_int_equal(r.srtt_us, 8000);
    assert_int_equal(r.rttvar_us, 4000);
    h2flow_rtt_sample(&r, 16000);
    assert_int_equal(r.srtt_us, (7 * 8000 + 16000) / 8);
    assert_int_equal(r.rttvar_us, (3 * 4000 + 8000) / 4);
    /* The larger of the PING estimate and the kernel's wins. */
    assert_int_equal(h2flow_rtt_use(&r, 1), r.srtt_us);
    assert_int_equal(h2flow_rtt_use(&r, 50000), 50000);
}

static void test_tune_doubles_fast_epoch(void **state)
{
    (void)state;
    /* 200 KiB of 256 KiB consumed in 10 ms at 10 ms RTT: the threshold is
     * 4 * 200/256 * 10 ms = 31 ms, so the window doubles. */
    struct h2flow_win w = {.window = 256 * 1024, .consumed = 200 * 1024, .epoch_us = 1000};
    assert_int_equal(h2flow_tune(&w, 11000, 10000, H2FLOW_WIN_MAX), 512 * 1024);
    /* The same epoch lasting 40 ms does not. */
    assert_int_equal(h2flow_tune(&w, 41000, 10000, H2FLOW_WIN_MAX), 256 * 1024);
    /* Just below and at the threshold (31.25 ms). */
    assert_int_equal(h2flow_tune(&w, 1000 + 31249, 10000, H2FLOW_WIN_MAX), 512 * 1024);
    assert_int_equal(h2flow_tune(&w, 1000 + 31250, 10000, H2FLOW_WIN_MAX), 256 * 1024);
}

static void test_tune_needs_half_and_rtt(void **state)
{
    (void)state;
    struct h2flow_win w = {.window = 256 * 1024, .consumed = 128 * 1024, .epoch_us = 0};
    /* Exactly half is not more than half. */
    assert_int_equal(h2flow_tune(&w, 1, 10000, H2FLOW_WIN_MAX), 256 * 1024);
    w.consumed++;
    assert_int_equal(h2flow_tune(&w, 1, 10000, H2FLOW_WIN_MAX), 512 * 1024);
    /* No RTT known: no growth. */
    assert_int_equal(h2flow_tune(&w, 1, 0, H2FLOW_WIN_MAX), 256 * 1024);
    /* Capped at the maximum, and a window at it stays. */
    w.window = 12u * 1024 * 1024;
    w.consumed = w.window;
    assert_int_equal(h2flow_tune(&w, 1, 10000, H2FLOW_WIN_MAX), H2FLOW_WIN_MAX);
    w.window = H2FLOW_WIN_MAX;
    assert_int_equal(h2flow_tune(&w, 1, 10000, H2FLOW_WIN_MAX), H2FLOW_WIN_MAX);
    /* Huge epochs and RTTs never overflow into growth. */
    w.window = 256 * 1024;
    w.consumed = w.window;
    assert_int_equal(h2flow_tune(&w, UINT64_MAX, 10000, H2FLOW_WIN_MAX), 256 * 1024);
    assert_int_equal(h2flow_tune(&w, 1, UINT64_MAX, H2FLOW_WIN_MAX), 256 * 1024);
}

static void test_epoch_begins_with_data(void **state)
{
    (void)state;
    /* A stream opened at 1 s whose first DATA comes 150 ms later (the
     * CONNECT's answer, the origin's set-up, a request: three RTTs at
     * 50 ms); 200 of its 256 KiB drain 60 ms after that. Counted from the
     * opening, the epoch (210 ms) is past the threshold (4 * 200/256 *
     * 50 ms = 156 ms) and the window stays; counted from the first DATA
     * (60 ms) it doubles. */
    struct h2flow_win w = {.window = 256 * 1024, .epoch_us = 1000000};
    w.consumed = 200 * 1024;
    assert_int_equal(h2flow_tune(&w, 1210000, 50000, H2FLOW_WIN_MAX), 256 * 1024);
    h2flow_begin(&w, 1150000);
    assert_true(w.begun);
    assert_int_equal(w.epoch_us, 1150000);
    assert_int_equal(h2flow_tune(&w, 1210000, 50000, H2FLOW_WIN_MAX), 512 * 1024);
    /* Only the first DATA begins it: later epochs are the tuning's. */
    w.epoch_us = 1210000;
    h2flow_begin(&w, 1300000);
    assert_int_equal(w.epoch_us, 1210000);
}

static void test_admit_budgets(void **state)
{
    (void)state;
    struct h2flow_budget worker = {
        .granted = 0, .cap = 1024 * 1024 * 1024, .max = 1024 * 1024 * 1024};
    struct h2flow_budget conn = {.granted = 0, .cap = H2FLOW_CONN_INITIAL, .max = H2FLOW_CONN_MAX};
    /* Room: the whole growth. */
    assert_int_equal(h2flow_admit(&conn, &worker, 1000, 5000), 5000);
    /* Shrinking is never asked for through admit. */
    assert_int_equal(h2flow_admit(&conn, &worker, 5000, 100), 5000);
    /* A spent connection budget doubles when the worker has room. */
    conn.granted = H2FLOW_CONN_INITIAL;
    assert_int_equal(h2flow_admit(&conn, &worker, 0, 4096), 4096);
    assert_int_equal(conn.cap, 2ull * H2FLOW_CONN_INITIAL);
    /* ... but never past its maximum. */
    conn.cap = conn.max;
    conn.granted = conn.max - 100;
    assert_int_equal(h2flow_admit(&conn, &worker, 10, 1000), 110);
    assert_int_equal(conn.cap, H2FLOW_CONN_MAX);
    /* The worker budget bounds it too, and the connection does not grow
     * past what the worker holds. */
    struct h2flow_budget small = {.granted = 0, .cap = 3000, .max = 3000};
    struct h2flow_budget c2 = {
        .granted = H2FLOW_CONN_INITIAL, .cap = H2FLOW_CONN_INITIAL, .max = H2FLOW_CONN_MAX};
    assert_int_equal(h2flow_admit(&c2, &small, 0, 100000), 0);
    assert_int_equal(c2.cap, H2FLOW_CONN_INITIAL);
    c2.granted = 0;
    assert_int_equal(h2flow_admit(&c2, &small, 0, 100000), 3000);
}

static void test_admit_stream_floor(void **state)
{
    (void)state;
    struct h2flow_budget worker = {.granted = 0, .cap = 1u << 30, .max = 1u << 30};
    struct h2flow_budget conn = {.granted = 0, .cap = H2FLOW_WIN_MIN, .max = H2FLOW_WIN_MIN};
    assert_true(h2flow_admit_stream(&conn, &worker));
    h2flow_charge(&conn, H2FLOW_WIN_MIN);
    assert_false(h2flow_admit_stream(&conn, &worker));
    h2flow_charge(&conn, -(int64_t)H2FLOW_WIN_MIN);
    assert_int_equal(conn.granted, 0);
    h2flow_charge(&conn, -5); /* never below zero */
    assert_int_equal(conn.granted, 0);
    worker.granted = worker.cap - 1;
    assert_false(h2flow_admit_stream(&conn, &worker));
}

static void test_rate(void **state)
{
    (void)state;
    struct h2flow_rate r = {0};
    for (int i = 0; i < 10; i++)
        assert_false(h2flow_rate_hit(&r, 5000 + (uint64_t)i, 10));
    assert_true(h2flow_rate_hit(&r, 5500, 10));
    /* A new second starts a new count. */
    assert_false(h2flow_rate_hit(&r, 6001, 10));
    assert_int_equal(r.count, 1);
    /* No limit: never over. */
    struct h2flow_rate u = {0};
    for (int i = 0; i < 100000; i++)
        assert_false(h2flow_rate_hit(&u, 1, 0));
    /* A clock that goes back restarts the window rather than wrapping. */
    assert_false(h2flow_rate_hit(&r, 10, 10));
    assert_int_equal(r.count, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rtt_smoothing),
        cmocka_unit_test(test_tune_doubles_fast_epoch),
        cmocka_unit_test(test_tune_needs_half_and_rtt),
        cmocka_unit_test(test_epoch_begins_with_data),
        cmocka_unit_test(test_admit_budgets),
        cmocka_unit_test(test_admit_stream_floor),
        cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
