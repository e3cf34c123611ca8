/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * heap_test.c: the timer heap. Ordering, removal of any node, re-keying,
 * and a long randomized run checked against a plain array after every step.
 */
#include "harness.h"

#include "util/heap.h"

/* Every slot points back at itself and no child is smaller than its parent. */
static void check_heap(const struct heap *h)
{
    assert_true(h->len <= h->cap);
    for (uint32_t i = 0; i < h->len; i++) {
        assert_int_equal(h->a[i]->idx, i);
        if (i > 0)
            assert_true(h->a[(i - 1) / 2]->key <= h->a[i]->key);
    }
}

static struct heap_node *pop(struct heap *h)
{
    struct heap_node *n = heap_top(h);
    if (n)
        heap_remove(h, n);
    return n;
}

static void node_init(struct heap_node *n, uint64_t key)
{
    n->key = key;
    n->idx = HEAP_NONE;
}

static void test_empty(void **state)
{
    (void)state;
    struct heap h;
    heap_init(&h);
    assert_null(heap_top(&h));
    assert_int_equal(h.len, 0);
    heap_fini(&h);
    assert_null(h.a);
}

static void test_push_pop_order(void **state)
{
    (void)state;
    const uint64_t keys[] = {50, 30, 80, 10, 90, 20, 70, 40, 60, 0, UINT64_MAX, 30};
    enum { N = sizeof(keys) / sizeof(keys[0]) };
    struct heap_node n[N];
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < N; i++) {
        node_init(&n[i], keys[i]);
        assert_false(heap_node_queued(&n[i]));
        assert_int_equal(heap_push(&h, &n[i]), 0);
        assert_true(heap_node_queued(&n[i]));
        check_heap(&h);
    }
    assert_int_equal(h.len, N);
    uint64_t prev = 0;
    for (size_t i = 0; i < N; i++) {
        struct heap_node *top = pop(&h);
        assert_non_null(top);
        assert_false(heap_node_queued(top));
        assert_true(top->key >= prev);
        prev = top->key;
        check_heap(&h);
    }
    assert_true(prev == UINT64_MAX);
    assert_null(heap_top(&h));
    heap_fini(&h);
}

static void test_remove_arbitrary(void **state)
{
    (void)state;
    struct heap_node n[10];
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < 10; i++) {
        node_init(&n[i], (uint64_t)(i * 10));
        assert_int_equal(heap_push(&h, &n[i]), 0);
    }
    heap_remove(&h, &n[5]); /* from the middle */
    check_heap(&h);
    heap_remove(&h, &n[0]); /* the top */
    check_heap(&h);
    heap_remove(&h, &n[9]); /* the largest */
    check_heap(&h);
    assert_false(heap_node_queued(&n[5]));
    assert_false(heap_node_queued(&n[0]));
    assert_false(heap_node_queued(&n[9]));
    /* Removing a node that is not queued is a no-op. */
    heap_remove(&h, &n[5]);
    assert_int_equal(h.len, 7);
    check_heap(&h);

    const uint64_t want[] = {10, 20, 30, 40, 60, 70, 80};
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(pop(&h)->key, want[i]);
    assert_null(heap_top(&h));
    heap_fini(&h);
}

static void test_remove_last_slot_needs_sift_up(void **state)
{
    (void)state;
    /* Removing a node from one subtree moves the last node into its slot,
     * where it may be smaller than the new parent: it must go up. */
    const uint64_t keys[] = {1, 100, 2, 101, 102, 3, 4};
    struct heap_node n[7];
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < 7; i++) {
        node_init(&n[i], keys[i]);
        assert_int_equal(heap_push(&h, &n[i]), 0);
    }
    check_heap(&h);
    heap_remove(&h, &n[3]); /* 101, under 100 */
    check_heap(&h);
    assert_int_equal(pop(&h)->key, 1);
    assert_int_equal(pop(&h)->key, 2);
    assert_int_equal(pop(&h)->key, 3);
    assert_int_equal(pop(&h)->key, 4);
    assert_int_equal(pop(&h)->key, 100);
    assert_int_equal(pop(&h)->key, 102);
    assert_null(pop(&h));
    heap_fini(&h);
}

static void test_update(void **state)
{
    (void)state;
    struct heap_node n[5];
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < 5; i++) {
        node_init(&n[i], (uint64_t)(i + 1) * 10); /* 10 20 30 40 50 */
        assert_int_equal(heap_push(&h, &n[i]), 0);
    }
    n[4].key = 5; /* decrease: 50 -> 5 becomes the top */
    heap_update(&h, &n[4]);
    check_heap(&h);
    assert_ptr_equal(heap_top(&h), &n[4]);
    n[4].key = 35; /* increase it again, between 30 and 40 */
    heap_update(&h, &n[4]);
    check_heap(&h);
    n[0].key = 100; /* the top goes to the bottom */
    heap_update(&h, &n[0]);
    check_heap(&h);
    assert_ptr_equal(heap_top(&h), &n[1]);
    heap_update(&h, &n[2]); /* unchanged key: still valid */
    check_heap(&h);

    const struct heap_node *want[] = {&n[1], &n[2], &n[4], &n[3], &n[0]};
    for (size_t i = 0; i < 5; i++)
        assert_ptr_equal(pop(&h), want[i]);
    heap_fini(&h);
}

static void test_grow_and_fini(void **state)
{
    (void)state;
    enum { N = 1000 }; /* several doublings past the first 64 slots */
    struct heap_node *n = calloc(N, sizeof(*n));
    assert_non_null(n);
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < N; i++) {
        node_init(&n[i], (uint64_t)((i * 7919) % N)); /* a permutation of 0..N-1 */
        assert_int_equal(heap_push(&h, &n[i]), 0);
    }
    check_heap(&h);
    assert_true(h.cap >= N);
    for (uint64_t k = 0; k < N / 2; k++)
        assert_int_equal(pop(&h)->key, k);
    /* fini forgets the rest, and marks them as no longer queued. */
    heap_fini(&h);
    assert_int_equal(h.len, 0);
    assert_null(h.a);
    for (size_t i = 0; i < N; i++)
        assert_false(heap_node_queued(&n[i]));
    free(n);
}

/* Random pushes, removals, re-keys and pops against a reference that just
 * remembers which nodes are queued and scans for the minimum. */
static void test_randomized_against_reference(void **state)
{
    (void)state;
    enum { N = 128, STEPS = 20000 };
    struct heap_node n[N];
    bool queued[N];
    struct harness_rng rng;
    harness_rng_init(&rng, 0x1234abcd5678ef01ull);
    struct heap h;
    heap_init(&h);
    for (size_t i = 0; i < N; i++) {
        node_init(&n[i], 0);
        queued[i] = false;
    }
    uint32_t count = 0;
    for (int step = 0; step < STEPS; step++) {
        uint32_t i = harness_rng_below(&rng, N);
        /* Small key space so that equal keys are common. */
        uint64_t key = harness_rng_below(&rng, 64);
        switch (harness_rng_below(&rng, 4)) {
        case 0:
            if (!queued[i]) {
                n[i].key = key;
                assert_int_equal(heap_push(&h, &n[i]), 0);
                queued[i] = true;
                count++;
            }
            break;
        case 1:
            heap_remove(&h, &n[i]);
            if (queued[i])
                count--;
            queued[i] = false;
            break;
        case 2:
            if (queued[i]) {
                n[i].key = key;
                heap_update(&h, &n[i]);
            }
            break;
        case 3: {
            struct heap_node *top = pop(&h);
            if (!top) {
                assert_int_equal(count, 0);
                break;
            }
            size_t j = (size_t)(top - n);
            assert_true(j < N && queued[j]);
            queued[j] = false;
            count--;
            break;
        }
        }
        /* Cross-check after every step. */
        assert_int_equal(h.len, count);
        uint64_t min = UINT64_MAX;
        for (size_t j = 0; j < N; j++) {
            assert_int_equal(heap_node_queued(&n[j]), queued[j]);
            if (queued[j] && n[j].key < min)
                min = n[j].key;
        }
        if (count)
            assert_int_equal(heap_top(&h)->key, min);
        else
            assert_null(heap_top(&h));
        check_heap(&h);
    }
    /* Drain: keys come out sorted. */
    uint64_t prev = 0;
    while (count--) {
        struct heap_node *top = pop(&h);
        assert_true(top->key >= prev);
        prev = top->key;
    }
    assert_null(heap_top(&h));
    heap_fini(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_push_pop_order),
        cmocka_unit_test(test_remove_arbitrary),
        cmocka_unit_test(test_remove_last_slot_needs_sift_up),
        cmocka_unit_test(test_update),
        cmocka_unit_test(test_grow_and_fini),
        cmocka_unit_test(test_randomized_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
