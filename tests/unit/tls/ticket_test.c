/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ticket_test.c: the session-ticket key ring (src/tls/ticket.h): a new
 * ring has one key; a rotation makes a new current key and keeps the old
 * one as the previous (found, flagged for renewal); a second rotation
 * forgets the oldest; names never seen are refused; keys differ; the
 * process's ring is one object and its tick rotates on schedule only.
 */
#include "harness.h"

#include <string.h>

#include "tls/ticket.h"

static void test_rotation_keeps_one_previous_key(void **state)
{
    (void)state;
    struct tls_ticket_ring *r = tls_ticket_ring_new();
    assert_non_null(r);
    struct tls_ticket_key k0, k1, k2, got;
    tls_ticket_ring_current(r, &k0);
    assert_int_equal(tls_ticket_ring_find(r, k0.name, &got), 1);
    assert_memory_equal(&got, &k0, sizeof(got));

    assert_int_equal(tls_ticket_ring_rotate(r), 0);
    tls_ticket_ring_current(r, &k1);
    assert_memory_not_equal(k1.name, k0.name, sizeof(k0.name));
    assert_memory_not_equal(k1.aes, k0.aes, sizeof(k0.aes));
    assert_int_equal(tls_ticket_ring_find(r, k1.name, &got), 1);
    /* The old key still opens its tickets, and asks for a new one. */
    assert_int_equal(tls_ticket_ring_find(r, k0.name, &got), 2);
    assert_memory_equal(&got, &k0, sizeof(got));

    assert_int_equal(tls_ticket_ring_rotate(r), 0);
    tls_ticket_ring_current(r, &k2);
    assert_int_equal(tls_ticket_ring_find(r, k2.name, &got), 1);
    assert_int_equal(tls_ticket_ring_find(r, k1.name, &got), 2);
    /* Two rotations on: refused. */
    assert_int_equal(tls_ticket_ring_find(r, k0.name, &got), 0);

    uint8_t stranger[TLS_TICKET_NAME_LEN] = {0};
    assert_int_equal(tls_ticket_ring_find(r, stranger, &got), 0);
    for (int i = 0; i < 10; i++) /* retired snapshots are freed (ASan) */
        assert_int_equal(tls_ticket_ring_rotate(r), 0);
    tls_ticket_ring_free(r);
    tls_ticket_ring_free(NULL);
}

static void test_process_ring_ticks_on_schedule(void **state)
{
    (void)state;
    struct tls_ticket_ring *r = tls_tickets();
    assert_non_null(r);
    assert_ptr_equal(r, tls_tickets());
    struct tls_ticket_key k0, k;
    tls_ticket_ring_current(r, &k0);
    bool rotated = true;
    /* Tickets off: never due. */
    assert_true(tls_tickets_tick(5000, 0, &rotated) == UINT64_MAX);
    assert_false(rotated);
    /* The first tick starts the clock. */
    assert_int_equal(tls_tickets_tick(10000, 2000, &rotated), 2000);
    assert_false(rotated);
    assert_int_equal(tls_tickets_tick(11500, 2000, &rotated), 500);
    assert_false(rotated);
    tls_ticket_ring_current(r, &k);
    assert_memory_equal(&k, &k0, sizeof(k));
    assert_int_equal(tls_tickets_tick(12000, 2000, &rotated), 2000);
    assert_true(rotated);
    tls_ticket_ring_current(r, &k);
    assert_memory_not_equal(k.name, k0.name, sizeof(k0.name));
    assert_int_equal(tls_ticket_ring_find(r, k0.name, &k), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rotation_keeps_one_previous_key),
        cmocka_unit_test(test_process_ring_ticks_on_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
