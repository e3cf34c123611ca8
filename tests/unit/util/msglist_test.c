/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * msglist_test.c: the message list that configuration and userlist
 * readers fill. Messages keep their order and their formatting; fini
 * frees them and leaves a list that can be filled again.
 */
#include "harness.h"

#include "util/msglist.h"

static void test_push_keeps_order_and_formatting(void **state)
{
    (void)state;
    struct msglist l = {0};
    msglist_push(&l, "%s:%d: %s", "ferry.conf", 3, "listen: bad");
    msglist_push(&l, "plain");
    assert_int_equal(l.n, 2);
    assert_string_equal(l.msg[0], "ferry.conf:3: listen: bad");
    assert_string_equal(l.msg[1], "plain");
    msglist_fini(&l);
    assert_int_equal(l.n, 0);
    assert_null(l.msg);
}

static void test_fini_leaves_a_reusable_list(void **state)
{
    (void)state;
    struct msglist l = {0};
    msglist_fini(&l); /* an empty list too */
    for (int i = 0; i < 100; i++)
        msglist_push(&l, "message %d", i);
    assert_int_equal(l.n, 100);
    assert_string_equal(l.msg[99], "message 99");
    msglist_fini(&l);
    msglist_push(&l, "again");
    assert_int_equal(l.n, 1);
    assert_string_equal(l.msg[0], "again");
    msglist_fini(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_keeps_order_and_formatting),
        cmocka_unit_test(test_fini_leaves_a_reusable_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
