/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * buf_test.c: the buffer freelist (reuse, its bound, accounting) and the
 * start/end arithmetic of one buffer.
 */
#include "harness.h"

#include "core/buf.h"

static void test_get_put_reuse(void **state)
{
    (void)state;
    struct buf_pool p;
    buf_pool_init(&p, 4096, 4);
    struct buf *b = buf_get(&p);
    assert_non_null(b);
    assert_int_equal(b->cap, 4096);
    assert_int_equal(buf_len(b), 0);
    assert_int_equal(buf_room(b), 4096);
    assert_int_equal(p.in_use, 1);
    assert_int_equal(p.nfree, 0);

    /* The whole capacity is usable (ASan would object otherwise). */
    memset(buf_tail(b), 0x3c, buf_room(b));
    b->end = b->cap;
    assert_int_equal(buf_room(b), 0);

    buf_put(&p, b);
    assert_int_equal(p.in_use, 0);
    assert_int_equal(p.nfree, 1);

    /* The warm buffer comes back, and comes back empty. */
    struct buf *again = buf_get(&p);
    assert_ptr_equal(again, b);
    assert_int_equal(buf_len(again), 0);
    assert_int_equal(buf_room(again), 4096);
    assert_null(again->next);
    assert_int_equal(p.nfree, 0);
    assert_int_equal(p.in_use, 1);

    buf_put(&p, again);
    buf_put(&p, NULL); /* no-op */
    assert_int_equal(p.in_use, 0);
    assert_int_equal(p.nfree, 1);
    buf_pool_fini(&p);
    assert_int_equal(p.nfree, 0);
    assert_null(p.free);
}

static void test_freelist_bound(void **state)
{
    (void)state;
    enum { N = 6 };
    struct buf_pool p;
    buf_pool_init(&p, 1024, 2);
    struct buf *b[N];
    for (size_t i = 0; i < N; i++) {
        b[i] = buf_get(&p);
        assert_non_null(b[i]);
        for (size_t j = 0; j < i; j++)
            assert_ptr_not_equal(b[i], b[j]);
    }
    assert_int_equal(p.in_use, N);
    for (size_t i = 0; i < N; i++)
        buf_put(&p, b[i]); /* beyond two, returned buffers are freed (LSan checks) */
    assert_int_equal(p.nfree, 2);
    assert_int_equal(p.in_use, 0);

    /* Two come from the freelist, the third is new. */
    struct buf *x = buf_get(&p), *y = buf_get(&p);
    assert_int_equal(p.nfree, 0);
    assert_true((x == b[0] || x == b[1]) && (y == b[0] || y == b[1]) && x != y);
    struct buf *z = buf_get(&p);
    assert_non_null(z);
    assert_int_equal(z->cap, 1024);
    buf_put(&p, x);
    buf_put(&p, y);
    buf_put(&p, z);
    assert_int_equal(p.nfree, 2);
    buf_pool_fini(&p);
}

static void test_max_free_zero(void **state)
{
    (void)state;
    struct buf_pool p;
    buf_pool_init(&p, 512, 0);
    struct buf *b = buf_get(&p);
    assert_non_null(b);
    buf_put(&p, b);
    assert_int_equal(p.nfree, 0);
    assert_null(p.free);
    assert_int_equal(p.in_use, 0);
    buf_pool_fini(&p);
}

static void test_foreign_size_not_pooled(void **state)
{
    (void)state;
    /* A buffer of another size (e.g. after the configured size changed) is
     * freed rather than kept under the wrong capacity. */
    struct buf_pool small, big;
    buf_pool_init(&small, 1024, 8);
    buf_pool_init(&big, 8192, 8);
    struct buf *s = buf_get(&small), *g = buf_get(&big);
    assert_non_null(s);
    assert_non_null(g);
    buf_put(&big, s);
    buf_put(&small, g);
    assert_int_equal(small.nfree, 0);
    assert_int_equal(big.nfree, 0);
    assert_int_equal(small.in_use, 0);
    assert_int_equal(big.in_use, 0);
    buf_pool_fini(&small);
    buf_pool_fini(&big);
}

static void test_consume_rewinds(void **state)
{
    (void)state;
    struct buf_pool p;
    buf_pool_init(&p, 64, 1);
    struct buf *b = buf_get(&p);
    assert_non_null(b);
    memcpy(buf_tail(b), "0123456789", 10);
    b->end += 10;
    assert_int_equal(buf_len(b), 10);
    assert_int_equal(buf_room(b), 54);

    buf_consume(b, 4);
    assert_int_equal(b->start, 4);
    assert_int_equal(buf_len(b), 6);
    assert_memory_equal(buf_head(b), "456789", 6);
    assert_int_equal(buf_room(b), 54); /* consuming alone frees no tail room */

    buf_consume(b, 0);
    assert_int_equal(b->start, 4);

    buf_consume(b, 6); /* emptied: back to offset 0 */
    assert_int_equal(b->start, 0);
    assert_int_equal(b->end, 0);
    assert_int_equal(buf_room(b), 64);
    assert_ptr_equal(buf_head(b), b->data);
    buf_put(&p, b);
    buf_pool_fini(&p);
}

static void test_compact(void **state)
{
    (void)state;
    struct buf_pool p;
    buf_pool_init(&p, 32, 1);
    struct buf *b = buf_get(&p);
    assert_non_null(b);
    for (uint32_t i = 0; i < 32; i++)
        b->data[i] = (uint8_t)i;
    b->end = 32;
    buf_consume(b, 20);
    assert_int_equal(buf_room(b), 0);

    buf_compact(b);
    assert_int_equal(b->start, 0);
    assert_int_equal(b->end, 12);
    assert_int_equal(buf_len(b), 12);
    assert_int_equal(buf_room(b), 20);
    for (uint32_t i = 0; i < 12; i++)
        assert_int_equal(buf_head(b)[i], 20 + i);

    /* Already at the front: nothing moves. */
    b->data[0] = 0xaa;
    buf_compact(b);
    assert_int_equal(b->data[0], 0xaa);
    assert_int_equal(b->end, 12);

    /* Overlapping move: 30 bytes starting at offset 1. */
    for (uint32_t i = 0; i < 32; i++)
        b->data[i] = (uint8_t)(100 + i);
    b->start = 1;
    b->end = 31;
    buf_compact(b);
    assert_int_equal(b->end, 30);
    for (uint32_t i = 0; i < 30; i++)
        assert_int_equal(b->data[i], 101 + i);
    buf_put(&p, b);
    buf_pool_fini(&p);
}

static void test_get_cap(void **state)
{
    (void)state;
    struct buf_pool p;
    buf_pool_init(&p, 64, 4);
    /* Up to the pool's size: a pool buffer, warm one first. */
    struct buf *warm = buf_get(&p);
    assert_non_null(warm);
    buf_put(&p, warm);
    struct buf *a = buf_get_cap(&p, 10);
    assert_ptr_equal(a, warm);
    assert_int_equal(a->cap, 64);
    struct buf *b = buf_get_cap(&p, 64);
    assert_non_null(b);
    assert_int_equal(b->cap, 64);
    assert_int_equal(p.in_use, 2);

    /* Beyond it: a buffer of exactly cap bytes, all of them usable, lent
     * out like the others but freed on return (LSan checks). */
    struct buf *big = buf_get_cap(&p, 1000);
    assert_non_null(big);
    assert_int_equal(big->cap, 1000);
    assert_int_equal(buf_len(big), 0);
    assert_int_equal(buf_room(big), 1000);
    assert_null(big->next);
    memset(buf_tail(big), 0x5a, buf_room(big));
    big->end = big->cap;
    assert_int_equal(p.in_use, 3);
    buf_put(&p, big);
    assert_int_equal(p.in_use, 2);
    assert_int_equal(p.nfree, 0); /* not kept under the pool's size */

    buf_put(&p, a);
    buf_put(&p, b);
    assert_int_equal(p.in_use, 0);
    assert_int_equal(p.nfree, 2);
    buf_pool_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_put_reuse),   cmocka_unit_test(test_freelist_bound),
        cmocka_unit_test(test_max_free_zero),   cmocka_unit_test(test_foreign_size_not_pooled),
        cmocka_unit_test(test_consume_rewinds), cmocka_unit_test(test_compact),
        cmocka_unit_test(test_get_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
