/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent_test.c: the ring of recent warnings and errors: only those
 * levels are kept, newest first, the oldest overwritten, long messages
 * cut and terminated.
 */
#include "harness.h"

#include <stdio.h>
#include <string.h>

#include "log/recent.h"

static struct log_recent out[LOG_RECENT_N + 4];

static void test_levels_order_and_wrap(void **state)
{
    (void)state;
    log_recent_note(LOG_INFO, "not kept");
    log_recent_note(LOG_DEBUG, "not kept either");
    assert_int_equal(log_recent_copy(out, LOG_RECENT_N), 0);
    char msg[32];
    for (int i = 0; i < LOG_RECENT_N + 3; i++) {
        snprintf(msg, sizeof(msg), "m%d", i);
        log_recent_note(i % 2 ? LOG_ERROR : LOG_WARN, msg);
    }
    size_t n = log_recent_copy(out, LOG_RECENT_N + 4);
    assert_int_equal(n, LOG_RECENT_N);
    snprintf(msg, sizeof(msg), "m%d", LOG_RECENT_N + 2);
    assert_string_equal(out[0].msg, msg);      /* newest first */
    assert_string_equal(out[n - 1].msg, "m3"); /* m0..m2 were overwritten */
    for (size_t i = 1; i < n; i++)
        assert_int_equal(out[i].seq + 1, out[i - 1].seq);
    assert_int_equal(log_recent_copy(out, 2), 2);
}

static void test_long_message_cut(void **state)
{
    (void)state;
    char big[LOG_RECENT_LEN * 2];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_recent_note(LOG_ERROR, big);
    assert_int_equal(log_recent_copy(out, 1), 1);
    assert_int_equal(strlen(out[0].msg), LOG_RECENT_LEN - 1);
    assert_int_equal(out[0].level, LOG_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_order_and_wrap),
        cmocka_unit_test(test_long_message_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
