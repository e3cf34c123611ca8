/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * blkcache_test.c: the per-thread block cache behind OpenSSL's and
 * nghttp2's allocators. Size classes and reuse, alignment, frees on
 * another thread, realloc across classes and to and from libc sizes, the
 * bound per class, the counters, and (under ASan) the poisoning of cached
 * blocks.
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/blkcache.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

static int setup(void **state)
{
    (void)state;
    blkcache_thread_drain();
    return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

static void check(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(p[i], (unsigned char)(seed + i * 7));
}

/* Which class a size lands in: the one whose cache grows when it is freed. */
static int class_seen(size_t n)
{
    unsigned before[BLKCACHE_CLASSES];
    blkcache_thread_drain(); /* a fresh block, not the last one freed */
    for (unsigned c = 0; c < BLKCACHE_CLASSES; c++)
        before[c] = blkcache_thread_cached(c);
    void *p = blkcache_alloc(n);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
    memset(p, 0xa5, n);
    blkcache_free(p);
    int seen = -1;
    for (unsigned c = 0; c < BLKCACHE_CLASSES; c++) {
        if (blkcache_thread_cached(c) == before[c] + 1) {
            assert_int_equal(seen, -1);
            seen = (int)c;
        } else {
            assert_true(blkcache_thread_cached(c) == before[c]);
        }
    }
    return seen;
}

static void test_classes(void **state)
{
    (void)state;
    assert_int_equal(class_seen(0), 0);
    assert_int_equal(class_seen(1), 0);
    assert_int_equal(class_seen(32), 0);
    assert_int_equal(class_seen(33), 1);
    assert_int_equal(class_seen(64), 1);
    assert_int_equal(class_seen(65), 2);
    assert_int_equal(class_seen(128), 2);
    assert_int_equal(class_seen(200), 3);
    assert_int_equal(class_seen(256), 3);
    assert_int_equal(class_seen(257), 4);
    assert_int_equal(class_seen(BLKCACHE_MAX), 4);
    assert_int_equal(class_seen(BLKCACHE_MAX + 1), -1); /* libc's */
    assert_int_equal(class_seen(100000), -1);
}

static void test_reuse_is_lifo_and_counted(void **state)
{
    (void)state;
    struct blkcache_stats s0, s1;
    blkcache_stats(&s0);
    void *a = blkcache_alloc(40);
    void *b = blkcache_alloc(50);
    assert_ptr_not_equal(a, b);
    blkcache_free(a);
    blkcache_free(b);
    assert_ptr_equal(blkcache_alloc(60), b);
    assert_ptr_equal(blkcache_alloc(33), a);
    blkcache_free(a);
    blkcache_free(b);
    void *big = blkcache_alloc(4096);
    blkcache_free(big);
    blkcache_stats(&s1);
    assert_true(s1.misses - s0.misses == 2);
    assert_true(s1.hits - s0.hits == 2);
    assert_true(s1.large - s0.large == 1);
}

static void test_calloc_zeroes_a_dirty_block(void **state)
{
    (void)state;
    unsigned char *p = blkcache_alloc(100);
    memset(p, 0xff, 100);
    blkcache_free(p);
    unsigned char *q = blkcache_calloc(10, 10);
    assert_ptr_equal(q, p);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(q[i], 0);
    blkcache_free(q);
    assert_null(blkcache_calloc(SIZE_MAX / 2, 3));
}

static void test_realloc_across_classes_and_libc(void **state)
{
    (void)state;
    assert_null(blkcache_realloc(blkcache_alloc(8), 0)); /* frees */
    unsigned char *p = blkcache_realloc(NULL, 10);
    assert_non_null(p);
    fill(p, 10, 1);
    unsigned char *q = blkcache_realloc(p, 30); /* same class: in place */
    assert_ptr_equal(q, p);
    check(q, 10, 1);
    fill(q, 30, 2);
    p = blkcache_realloc(q, 300); /* grows across classes */
    assert_non_null(p);
    check(p, 30, 2);
    fill(p, 300, 3);
    q = blkcache_realloc(p, 5000); /* to libc */
    assert_non_null(q);
    check(q, 300, 3);
    fill(q, 5000, 4);
    p = blkcache_realloc(q, 70000); /* libc to libc */
    assert_non_null(p);
    check(p, 5000, 4);
    fill(p, 70000, 5);
    q = blkcache_realloc(p, 600); /* shrinks, still libc's */
    assert_non_null(q);
    check(q, 600, 5);
    p = blkcache_realloc(q, 100); /* from libc back to a class */
    assert_non_null(p);
    check(p, 100, 5);
    q = blkcache_realloc(p, 40); /* shrinks across classes */
    assert_non_null(q);
    check(q, 40, 5);
    unsigned before = blkcache_thread_cached(1);
    blkcache_free(q);
    assert_int_equal(blkcache_thread_cached(1), before + 1);
}

static void test_bounded_per_class(void **state)
{
    (void)state;
    enum { N = BLKCACHE_KEEP + 10 };
    static void *p[N];
    struct blkcache_stats s0, s1;
    for (size_t i = 0; i < N; i++)
        p[i] = blkcache_alloc(128);
    blkcache_stats(&s0);
    for (size_t i = 0; i < N; i++)
        blkcache_free(p[i]);
    blkcache_stats(&s1);
    assert_int_equal(blkcache_thread_cached(2), BLKCACHE_KEEP);
    assert_true(s1.overflow - s0.overflow == 10);
    blkcache_thread_drain();
    assert_int_equal(blkcache_thread_cached(2), 0);
}

struct cross {
    void *blocks[8];
    void *again;
    unsigned cached;
};

static void *free_elsewhere(void *arg)
{
    struct cross *x = arg;
    for (size_t i = 0; i < 8; i++)
        blkcache_free(x->blocks[i]);
    x->cached = blkcache_thread_cached(3);
    x->again = blkcache_alloc(250); /* the last block freed here */
    blkcache_free(x->again);
    return NULL; /* the thread's exit gives its cache back to libc */
}

static void *alloc_elsewhere(void *arg)
{
    (void)arg;
    return blkcache_alloc(200);
}

static void test_cross_thread_free(void **state)
{
    (void)state;
    struct cross x;
    for (size_t i = 0; i < 8; i++) {
        x.blocks[i] = blkcache_alloc(200);
        memset(x.blocks[i], (int)i, 200);
    }
    unsigned mine = blkcache_thread_cached(3);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_elsewhere, &x), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(x.cached, 8);
    assert_ptr_equal(x.again, x.blocks[7]);
    assert_int_equal(blkcache_thread_cached(3), mine); /* not ours */
    /* A block of a thread that has gone is freed here as any other. */
    void *p = blkcache_alloc(200);
    void *other = NULL;
    assert_int_equal(pthread_create(&t, NULL, alloc_elsewhere, NULL), 0);
    assert_int_equal(pthread_join(t, &other), 0);
    assert_non_null(other);
    blkcache_free(other);
    blkcache_free(p);
    assert_int_equal(blkcache_thread_cached(3), mine + 2);
}

static void test_cached_blocks_are_poisoned(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    unsigned char *p = blkcache_alloc(24);
    assert_false(__asan_address_is_poisoned(p + 23));
    assert_true(__asan_address_is_poisoned(p + 24)); /* past the size asked */
    blkcache_free(p);
    assert_true(__asan_address_is_poisoned(p));
    unsigned char *q = blkcache_alloc(32);
    assert_ptr_equal(q, p);
    assert_false(__asan_address_is_poisoned(q + 31));
    blkcache_free(q);
#else
    skip();
#endif
}

/* A block freed twice, or a pointer this allocator did not hand out, ends
 * the process (SIGABRT) instead of corrupting a free list. */
static void test_double_free_and_foreign_pointer_abort(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            static alignas(max_align_t) unsigned char foreign[64];
            if (which == 0) {
                void *p = blkcache_alloc(40);
                blkcache_free(p);
                blkcache_free(p); /* cached now: its tag says so */
            } else {
                blkcache_free(foreign + 32);
            }
            _exit(0);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_classes, setup),
        cmocka_unit_test_setup(test_double_free_and_foreign_pointer_abort, setup),
        cmocka_unit_test_setup(test_reuse_is_lifo_and_counted, setup),
        cmocka_unit_test_setup(test_calloc_zeroes_a_dirty_block, setup),
        cmocka_unit_test_setup(test_realloc_across_classes_and_libc, setup),
        cmocka_unit_test_setup(test_bounded_per_class, setup),
        cmocka_unit_test_setup(test_cross_thread_free, setup),
        cmocka_unit_test_setup(test_cached_blocks_are_poisoned, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
