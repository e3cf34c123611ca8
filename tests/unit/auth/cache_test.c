/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cache_test.c: one worker's credential cache, with time passed in. A
 * stored success hits until it expires; a wrong password misses without
 * evicting it; a new version misses and evicts; ttl 0 stores nothing; the
 * table never holds more live entries than its capacity and replaces the
 * entry expiring first; users do not disturb each other.
 */
#include "harness.h"

#include "auth/cache.h"

#define T0     1000000u /* a loop clock well away from 0 */
#define TTL_MS 300000u

static struct auth_cache_probe probe(const struct auth_cache *c, const char *user, const char *pass)
{
    struct auth_cache_probe p;
    memset(&p, 0, sizeof(p));
    auth_cache_probe(c, user, strlen(user), pass, strlen(pass), &p);
    return p;
}

static bool check(struct auth_cache *c, const char *user, const char *pass, uint64_t version,
                  uint64_t now)
{
    struct auth_cache_probe p = probe(c, user, pass);
    return auth_cache_check(c, &p, version, now);
}

static void store(struct auth_cache *c, const char *user, const char *pass, uint64_t version,
                  uint64_t now, uint32_t ttl)
{
    struct auth_cache_probe p = probe(c, user, pass);
    auth_cache_store(c, &p, version, now, ttl);
}

static size_t capacity(const struct auth_cache *c)
{
    return (size_t)c->nsets * AUTH_CACHE_WAYS;
}

/* Entries that could still match at now. */
static size_t live(const struct auth_cache *c, uint64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < capacity(c); i++)
        n += c->e[i].expires_ms > now;
    return n;
}

static void user_name(char *buf, size_t cap, unsigned i)
{
    snprintf(buf, cap, "user%u", i);
}

static struct auth_cache cache; /* the test's; the teardown frees it */

static int teardown(void **state)
{
    (void)state;
    auth_cache_fini(&cache);
    return 0;
}

static void test_miss_then_hit(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    assert_false(check(&cache, "alice", "pw", 7, T0));
    assert_int_equal(cache.misses, 1);
    store(&cache, "alice", "pw", 7, T0, TTL_MS);
    assert_true(check(&cache, "alice", "pw", 7, T0));
    assert_true(check(&cache, "alice", "pw", 7, T0 + 1000));
    assert_int_equal(cache.hits, 2);
    assert_int_equal(cache.misses, 1);
    assert_int_equal(live(&cache, T0), 1);
}

static void test_expiry(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    store(&cache, "alice", "pw", 1, T0, 500);
    assert_true(check(&cache, "alice", "pw", 1, T0 + 499));
    /* Expired at exactly now + ttl, and the entry is dropped. */
    assert_false(check(&cache, "alice", "pw", 1, T0 + 500));
    assert_int_equal(cache.evictions, 1);
    assert_int_equal(live(&cache, 0), 0);
    /* Stored again, it lives again. */
    store(&cache, "alice", "pw", 1, T0 + 600, 500);
    assert_true(check(&cache, "alice", "pw", 1, T0 + 1099));
    assert_false(check(&cache, "alice", "pw", 1, T0 + 5000));
}

static void test_wrong_password_keeps_entry(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    store(&cache, "alice", "right", 3, T0, TTL_MS);
    static const char *const wrong[] = {"wrong", "righ", "rightt", "Right", "", "right\n"};
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++)
        assert_false(check(&cache, "alice", wrong[i], 3, T0 + 1));
    assert_int_equal(cache.evictions, 0);
    assert_true(check(&cache, "alice", "right", 3, T0 + 2));
    /* The name and password are not simply concatenated. */
    store(&cache, "ab", "c", 3, T0, TTL_MS);
    assert_false(check(&cache, "a", "bc", 3, T0));
    assert_false(check(&cache, "abc", "", 3, T0));
    assert_true(check(&cache, "ab", "c", 3, T0));
}

static void test_version_change_misses_and_evicts(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    store(&cache, "alice", "pw", 100, T0, TTL_MS);
    assert_false(check(&cache, "alice", "pw", 101, T0 + 1));
    assert_int_equal(cache.evictions, 1);
    /* Gone: not even the old version matches now. */
    assert_false(check(&cache, "alice", "pw", 100, T0 + 2));
    assert_int_equal(live(&cache, T0), 0);
    /* The new credential is cached on its own terms. */
    store(&cache, "alice", "new", 101, T0 + 3, TTL_MS);
    assert_true(check(&cache, "alice", "new", 101, T0 + 4));
    assert_false(check(&cache, "alice", "pw", 101, T0 + 4));
}

/* Storing a user again replaces that user's entry: one entry per user. */
static void test_store_again_replaces(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 4, NULL), 0);
    store(&cache, "alice", "old", 1, T0, TTL_MS);
    store(&cache, "alice", "new", 2, T0 + 10, TTL_MS);
    assert_int_equal(live(&cache, T0 + 10), 1);
    assert_true(check(&cache, "alice", "new", 2, T0 + 11));
    assert_false(check(&cache, "alice", "old", 1, T0 + 11));
    /* Storing the same success again only extends it. */
    store(&cache, "bob", "pw", 5, T0, 100);
    store(&cache, "bob", "pw", 5, T0 + 90, 100);
    assert_true(check(&cache, "bob", "pw", 5, T0 + 150));
}

static void test_ttl_zero_stores_nothing(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    store(&cache, "alice", "pw", 1, T0, 0);
    assert_int_equal(live(&cache, 0), 0);
    assert_false(check(&cache, "alice", "pw", 1, T0));
    /* ttl 0 does not touch an entry already there, either. */
    store(&cache, "bob", "pw", 1, T0, TTL_MS);
    store(&cache, "bob", "pw", 1, T0 + 1, 0);
    assert_true(check(&cache, "bob", "pw", 1, T0 + 2));
}

static void test_users_independent(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 64, NULL), 0);
    store(&cache, "alice", "a-pw", 1, T0, TTL_MS);
    assert_false(check(&cache, "bob", "a-pw", 1, T0));
    assert_false(check(&cache, "bob", "b-pw", 1, T0));
    store(&cache, "bob", "b-pw", 2, T0, TTL_MS);
    assert_true(check(&cache, "alice", "a-pw", 1, T0));
    assert_true(check(&cache, "bob", "b-pw", 2, T0));
    /* Each one's password is its own. */
    assert_false(check(&cache, "alice", "b-pw", 1, T0));
    assert_false(check(&cache, "bob", "a-pw", 2, T0));
    /* bob's credential changing evicts bob only. */
    assert_false(check(&cache, "bob", "b-pw", 3, T0));
    assert_true(check(&cache, "alice", "a-pw", 1, T0));
    /* Two caches have their own keys: a probe is only good in its own. */
    struct auth_cache other;
    assert_int_equal(auth_cache_init(&other, 64, NULL), 0);
    struct auth_cache_probe p = probe(&other, "alice", "a-pw");
    assert_false(auth_cache_check(&cache, &p, 1, T0));
    assert_false(auth_cache_check(&other, &p, 1, T0));
    auth_cache_fini(&other);
    /* Caches given the same keys (the workers of one process) agree. */
    struct auth_keys k;
    auth_keys_init(&k);
    struct auth_cache c1, c2;
    assert_int_equal(auth_cache_init(&c1, 64, &k), 0);
    assert_int_equal(auth_cache_init(&c2, 64, &k), 0);
    struct auth_cache_probe p1 = probe(&c1, "alice", "a-pw"), p2 = probe(&c2, "alice", "a-pw");
    assert_true(auth_cache_probe_equal(&p1, &p2));
    p2 = probe(&c2, "alice", "A-pw");
    assert_false(auth_cache_probe_equal(&p1, &p2));
    auth_cache_fini(&c1);
    auth_cache_fini(&c2);
}

/* Capacity is rounded up to whole sets of AUTH_CACHE_WAYS. */
static void test_capacity_rounding(void **state)
{
    (void)state;
    static const uint32_t asked[][2] = {{0, 4}, {1, 4}, {4, 4}, {5, 8}, {9, 12}, {10000, 10000}};
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        assert_int_equal(auth_cache_init(&cache, asked[i][0], NULL), 0);
        assert_int_equal(capacity(&cache), asked[i][1]);
        assert_false(check(&cache, "alice", "pw", 1, T0));
        store(&cache, "alice", "pw", 1, T0, TTL_MS);
        assert_true(check(&cache, "alice", "pw", 1, T0));
        auth_cache_fini(&cache);
    }
}

/* One set: four users fit; a fifth replaces the one expiring first. */
static void test_replacement_order(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 4, NULL), 0);
    assert_int_equal(cache.nsets, 1);
    /* Expiries: u0 at T0+400, u1 at T0+100, u2 at T0+300, u3 at T0+200. */
    static const uint32_t ttl[] = {400, 100, 300, 200};
    char name[16];
    for (unsigned i = 0; i < 4; i++) {
        user_name(name, sizeof(name), i);
        store(&cache, name, "pw", 1, T0, ttl[i]);
    }
    for (unsigned i = 0; i < 4; i++) {
        user_name(name, sizeof(name), i);
        assert_true(check(&cache, name, "pw", 1, T0 + 1));
    }
    assert_int_equal(cache.evictions, 0);
    store(&cache, "u4", "pw", 1, T0 + 2, 1000);
    assert_int_equal(cache.evictions, 1);
    assert_true(check(&cache, "u4", "pw", 1, T0 + 3));
    assert_false(check(&cache, "user1", "pw", 1, T0 + 3)); /* expiring first: gone */
    assert_true(check(&cache, "user0", "pw", 1, T0 + 3));
    assert_true(check(&cache, "user2", "pw", 1, T0 + 3));
    assert_true(check(&cache, "user3", "pw", 1, T0 + 3));
    /* An expired way is taken before any live one is evicted. */
    store(&cache, "u5", "pw", 1, T0 + 250, 1000); /* user3 (T0+200) has expired */
    assert_int_equal(cache.evictions, 1);
    assert_true(check(&cache, "u5", "pw", 1, T0 + 251));
    assert_true(check(&cache, "user0", "pw", 1, T0 + 251));
    assert_true(check(&cache, "user2", "pw", 1, T0 + 251));
    assert_true(check(&cache, "u4", "pw", 1, T0 + 251));
}

/* Many users through a small cache: never more live entries than the
 * capacity, the newest always there, the oldest long gone. */
static void test_size_bound(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 8, NULL), 0);
    assert_int_equal(capacity(&cache), 8);
    char name[16];
    for (unsigned i = 0; i < 2000; i++) {
        uint64_t now = T0 + i;
        user_name(name, sizeof(name), i);
        store(&cache, name, "pw", 1, now, TTL_MS);
        assert_true(live(&cache, now) <= 8);
        assert_true(check(&cache, name, "pw", 1, now));
    }
    assert_int_equal(live(&cache, T0 + 2000), 8);
    assert_true(cache.evictions >= 2000 - 8);
    unsigned still = 0;
    for (unsigned i = 0; i < 2000; i++) {
        user_name(name, sizeof(name), i);
        still += check(&cache, name, "pw", 1, T0 + 2000);
    }
    assert_int_equal(still, 8);
    for (unsigned i = 0; i < 100; i++) {
        user_name(name, sizeof(name), i);
        assert_false(check(&cache, name, "pw", 1, T0 + 2000));
    }
}

/* A finished cache answers no and stores nothing; finishing twice is
 * harmless. */
static void test_fini(void **state)
{
    (void)state;
    assert_int_equal(auth_cache_init(&cache, 16, NULL), 0);
    store(&cache, "alice", "pw", 1, T0, TTL_MS);
    struct auth_cache_probe p = probe(&cache, "alice", "pw");
    auth_cache_fini(&cache);
    assert_null(cache.e);
    assert_false(auth_cache_check(&cache, &p, 1, T0));
    auth_cache_store(&cache, &p, 1, T0, TTL_MS);
    auth_cache_fini(&cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_miss_then_hit, teardown),
        cmocka_unit_test_teardown(test_expiry, teardown),
        cmocka_unit_test_teardown(test_wrong_password_keeps_entry, teardown),
        cmocka_unit_test_teardown(test_version_change_misses_and_evicts, teardown),
        cmocka_unit_test_teardown(test_store_again_replaces, teardown),
        cmocka_unit_test_teardown(test_ttl_zero_stores_nothing, teardown),
        cmocka_unit_test_teardown(test_users_independent, teardown),
        cmocka_unit_test_teardown(test_capacity_rounding, teardown),
        cmocka_unit_test_teardown(test_replacement_order, teardown),
        cmocka_unit_test_teardown(test_size_bound, teardown),
        cmocka_unit_test_teardown(test_fini, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
