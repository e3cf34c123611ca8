/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shared_test.c: the cache table all workers share. A stored success is
 * found with its name, version and tag until it expires, and says when
 * that is; a wrong tag, another version or an expired entry is a miss; a
 * name whose slot another took is a miss; a zero TTL stores nothing. And
 * with writers and readers on several threads hammering a few slots, a
 * reader is never told yes for a password that was never stored, nor
 * given an expiry that was never written.
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>

#include "auth/shared.h"

#define T0 1000000u

static struct auth_cache_probe probe_of(uint64_t name_hash, uint8_t fill)
{
    struct auth_cache_probe p;
    p.name_hash = name_hash;
    memset(p.tag, fill, sizeof(p.tag));
    return p;
}

static void test_store_and_find(void **state)
{
    (void)state;
    struct auth_shared sh;
    assert_int_equal(auth_shared_init(&sh, 100), 0);
    assert_int_equal(sh.mask, 127);
    struct auth_cache_probe a = probe_of(7, 0xa1), wrong = probe_of(7, 0xa2);
    uint64_t until = 0;
    assert_false(auth_shared_check(&sh, &a, 1, T0, &until));
    auth_shared_store(&sh, &a, 1, T0, 0); /* TTL 0: nothing */
    assert_false(auth_shared_check(&sh, &a, 1, T0, &until));
    auth_shared_store(&sh, &a, 1, T0, 5000);
    assert_true(auth_shared_check(&sh, &a, 1, T0 + 10, &until));
    assert_int_equal(until, T0 + 5000);
    assert_false(auth_shared_check(&sh, &wrong, 1, T0, &until));
    assert_false(auth_shared_check(&sh, &a, 2, T0, &until));        /* the credential changed */
    assert_false(auth_shared_check(&sh, &a, 1, T0 + 5000, &until)); /* expired */
    /* A wrong password never evicts: the right one still matches. */
    assert_true(auth_shared_check(&sh, &a, 1, T0 + 4999, &until));
    /* Another name in the same slot takes it. */
    struct auth_cache_probe b = probe_of(7 + 128, 0xb1);
    auth_shared_store(&sh, &b, 1, T0, 5000);
    assert_false(auth_shared_check(&sh, &a, 1, T0, &until));
    assert_true(auth_shared_check(&sh, &b, 1, T0, &until));
    assert_int_equal(atomic_load(&sh.hits), 3);
    assert_int_equal(atomic_load(&sh.stores), 2);
    auth_shared_fini(&sh);
    /* A table that failed to start answers no. */
    assert_false(auth_shared_check(&sh, &a, 1, T0, &until));
    auth_shared_store(&sh, &a, 1, T0, 5000);
}

/* ---- threads ---- */

#define NAMES   4 /* few names, one slot each: maximal contention */
#define WRITERS 2
#define READERS 3
#define ROUNDS  200000

struct hammer {
    struct auth_shared sh;
    atomic_bool stop;
    atomic_ulong bad, yes;
    atomic_uint seeds; /* each thread its own fixed seed */
};

/* Name i is stored with tag bytes i + 1 (and, by a second writer, the same
 * bytes), version i + 10, and an expiry whose low byte is i. Nothing ever
 * stores tag 0xee. */
static void *writer(void *arg)
{
    struct hammer *h = arg;
    struct harness_rng r;
    harness_rng_init(&r, 1 + atomic_fetch_add(&h->seeds, 1));
    for (int n = 0; n < ROUNDS; n++) {
        unsigned i = (unsigned)(harness_rng_next(&r) % NAMES);
        struct auth_cache_probe p = probe_of(i, (uint8_t)(i + 1));
        uint32_t ttl = (uint32_t)(256 * (1 + harness_rng_next(&r) % 1000));
        auth_shared_store(&h->sh, &p, i + 10, T0 + i, ttl);
    }
    return NULL;
}

static void *reader(void *arg)
{
    struct hammer *h = arg;
    struct harness_rng r;
    harness_rng_init(&r, 1 + atomic_fetch_add(&h->seeds, 1));
    while (!atomic_load(&h->stop)) {
        unsigned i = (unsigned)(harness_rng_next(&r) % NAMES);
        uint64_t until = 0;
        struct auth_cache_probe right = probe_of(i, (uint8_t)(i + 1));
        struct auth_cache_probe never = probe_of(i, 0xee);
        struct auth_cache_probe other = probe_of(i, (uint8_t)((i + 1) % NAMES + 1));
        if (auth_shared_check(&h->sh, &right, i + 10, T0, &until)) {
            atomic_fetch_add(&h->yes, 1);
            if ((until & 0xff) != (T0 + i) % 256 || until <= T0)
                atomic_fetch_add(&h->bad, 1);
        }
        if (auth_shared_check(&h->sh, &never, i + 10, T0, &until) ||
            auth_shared_check(&h->sh, &other, i + 10, T0, &until))
            atomic_fetch_add(&h->bad, 1);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    static struct hammer h;
    assert_int_equal(auth_shared_init(&h.sh, NAMES), 0);
    pthread_t w[WRITERS], rd[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&rd[i], NULL, reader, &h), 0);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&w[i], NULL, writer, &h), 0);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&h.stop, true);
    for (int i = 0; i < READERS; i++)
        pthread_join(rd[i], NULL);
    assert_int_equal(atomic_load(&h.bad), 0);
    assert_true(atomic_load(&h.yes) > 0);
    assert_true(atomic_load(&h.sh.stores) > 0);
    /* After the writers: every name is found with its own tag. */
    for (unsigned i = 0; i < NAMES; i++) {
        struct auth_cache_probe p = probe_of(i, (uint8_t)(i + 1));
        uint64_t until;
        assert_true(auth_shared_check(&h.sh, &p, i + 10, T0, &until));
    }
    auth_shared_fini(&h.sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_and_find),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
