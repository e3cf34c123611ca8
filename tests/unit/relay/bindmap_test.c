/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bindmap_test.c: the primary-session table BIND falls back to: a note is
 * found by its client only, for as long as max_age allows; clients of
 * either family are kept apart; a client sharing another's slot replaces
 * it; and writers and readers on several threads, hammering a few shared
 * slots, never let a reader see one note's client with another's
 * destination or time.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "relay/bindmap.h"

static struct addr ip(const char *text)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(text, 0, &a), 0);
    return a;
}

static int reset(void **state)
{
    (void)state;
    bindmap_clear();
    return 0;
}

static void assert_same_ip(const struct addr *got, const char *want)
{
    char buf[ADDR_STRLEN];
    struct addr w = ip(want);
    if (got->family != w.family || memcmp(got->ip, w.ip, w.family == AF_INET ? 4 : 16) != 0)
        fail_msg("got %s, expected %s", addr_format_ip(got, buf, sizeof(buf)), want);
    assert_int_equal(got->port, 0);
}

static void test_record_lookup(void **state)
{
    (void)state;
    struct addr cli = ip("192.0.2.10"), dst = ip("198.51.100.7"), got;
    dst.port = 21; /* not kept */
    cli.port = 40000;
    uint64_t when = 0;
    assert_false(bindmap_lookup(&cli, 1000, 60000, &got, NULL));
    assert_true(bindmap_record(&cli, &dst, 1000));
    assert_true(bindmap_lookup(&cli, 1500, 60000, &got, &when));
    assert_same_ip(&got, "198.51.100.7");
    assert_int_equal(when, 1000);
    /* another port of the same client address is the same client */
    cli.port = 40001;
    assert_true(bindmap_lookup(&cli, 1500, 60000, &got, NULL));
    /* the most recent note wins */
    struct addr dst2 = ip("2001:db8::21");
    assert_true(bindmap_record(&cli, &dst2, 1200));
    assert_true(bindmap_lookup(&cli, 1500, 60000, &got, &when));
    assert_same_ip(&got, "2001:db8::21");
    assert_int_equal(when, 1200);
    /* IPv4-mapped clients and destinations are their IPv4 selves */
    struct addr mapped = ip("::ffff:192.0.2.10");
    assert_true(bindmap_lookup(&mapped, 1500, 60000, &got, NULL));
    assert_false(bindmap_record(&mapped, &(struct addr){0}, 1300));
    struct addr dst3 = ip("::ffff:203.0.113.5");
    assert_true(bindmap_record(&mapped, &dst3, 1300));
    assert_true(bindmap_lookup(&cli, 1500, 60000, &got, NULL));
    assert_same_ip(&got, "203.0.113.5");
    /* unset addresses are neither noted nor found */
    struct addr none = {0};
    assert_false(bindmap_record(&none, &dst, 1000));
    assert_false(bindmap_lookup(&none, 1000, 60000, &got, NULL));
}

static void test_expiry(void **state)
{
    (void)state;
    struct addr cli = ip("192.0.2.20"), dst = ip("198.51.100.20"), got;
    assert_true(bindmap_record(&cli, &dst, 10000));
    assert_true(bindmap_lookup(&cli, 10000, 5000, &got, NULL));
    assert_true(bindmap_lookup(&cli, 15000, 5000, &got, NULL)); /* exactly max_age old */
    assert_false(bindmap_lookup(&cli, 15001, 5000, &got, NULL));
    assert_false(bindmap_lookup(&cli, 99999, 5000, &got, NULL));
    /* a writer whose clock ran ahead of the reader's: age 0, not huge */
    assert_true(bindmap_lookup(&cli, 9990, 5000, &got, NULL));
    /* a fresh note brings it back */
    assert_true(bindmap_record(&cli, &dst, 99000));
    assert_true(bindmap_lookup(&cli, 99999, 5000, &got, NULL));
    /* cleared */
    bindmap_clear();
    assert_false(bindmap_lookup(&cli, 99999, 5000, &got, NULL));
}

static void test_clients_apart(void **state)
{
    (void)state;
    const char *clients[] = {"192.0.2.1",   "192.0.2.2", "10.0.0.1", "2001:db8::1",
                             "2001:db8::2", "::1",       "127.0.0.1"};
    const char *dests[] = {"198.51.100.1",  "198.51.100.2", "198.51.100.3", "2001:db8:1::1",
                           "2001:db8:1::2", "198.51.100.6", "::1"};
    size_t n = sizeof(clients) / sizeof(clients[0]);
    for (size_t i = 0; i < n; i++) {
        struct addr c = ip(clients[i]), d = ip(dests[i]);
        assert_true(bindmap_record(&c, &d, 500 + i));
    }
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        struct addr c = ip(clients[i]), got;
        uint64_t when;
        /* clients that happen to share a slot: only the later one stays */
        bool later_shares = false;
        for (size_t j = i + 1; j < n; j++) {
            struct addr cj = ip(clients[j]);
            if (bindmap_slot(&cj) == bindmap_slot(&c))
                later_shares = true;
        }
        if (later_shares) {
            assert_false(bindmap_lookup(&c, 1000, 60000, &got, NULL));
            continue;
        }
        assert_true(bindmap_lookup(&c, 1000, 60000, &got, &when));
        assert_same_ip(&got, dests[i]);
        assert_int_equal(when, 500 + i);
        found++;
    }
    assert_true(found >= n - 2); /* 7 clients in 4096 slots rarely collide */
    /* an address never noted is not found, even in a used slot */
    struct addr stranger = ip("192.0.2.3"), got;
    assert_false(bindmap_lookup(&stranger, 1000, 60000, &got, NULL));
}

/* Find count IPv4 clients (from 10.x.y.z) that share slot, into out. */
static void clients_in_slot(uint32_t slot, struct addr *out, size_t count, uint32_t start)
{
    size_t n = 0;
    for (uint32_t k = start; n < count; k++) {
        assert_true(k < start + (1u << 24));
        struct addr a = {.family = AF_INET};
        uint32_t v = htonl(0x0a000000u | k);
        memcpy(a.ip, &v, 4);
        if (bindmap_slot(&a) == slot)
            out[n++] = a;
    }
}

static void test_collision_overwrites(void **state)
{
    (void)state;
    struct addr first = ip("192.0.2.30"), pair[2], got;
    clients_in_slot(bindmap_slot(&first), pair, 2, 1);
    struct addr d1 = ip("198.51.100.31"), d2 = ip("198.51.100.32");
    assert_true(bindmap_record(&first, &d1, 100));
    assert_true(bindmap_record(&pair[0], &d2, 200));
    /* the later client replaced the earlier: no answer is better than
     * another client's destination */
    assert_false(bindmap_lookup(&first, 300, 60000, &got, NULL));
    assert_true(bindmap_lookup(&pair[0], 300, 60000, &got, NULL));
    assert_same_ip(&got, "198.51.100.32");
    assert_false(bindmap_lookup(&pair[1], 300, 60000, &got, NULL));
    /* and back */
    assert_true(bindmap_record(&first, &d1, 400));
    assert_true(bindmap_lookup(&first, 500, 60000, &got, NULL));
    assert_same_ip(&got, "198.51.100.31");
    assert_false(bindmap_lookup(&pair[0], 500, 60000, &got, NULL));
}

/* ---- threads ---------------------------------------------------------------- */

#define SHARED_SLOTS     3
#define CLIENTS_PER_SLOT 4
#define NCLIENTS         (2 * SHARED_SLOTS * CLIENTS_PER_SLOT)
#define WRITERS          4
#define READERS          4
#define RUN_MS           400

/* Clients of both families packed into a few slots; each has its own
 * destination (of the other family half of the time) and note time, so a
 * torn read shows as a destination or time that belongs to another. */
struct race {
    struct addr cli[NCLIENTS], dst[NCLIENTS];
    atomic_bool stop;
    atomic_uint_fast64_t records, skipped, hits, misses;
};

static uint64_t when_of(size_t i)
{
    return 1000000u + i * 7919u;
}

static void race_init(struct race *r)
{
    memset(r, 0, sizeof(*r));
    size_t n = 0;
    for (uint32_t s = 0; s < SHARED_SLOTS; s++) {
        struct addr v4[CLIENTS_PER_SLOT];
        struct addr seed = ip(s == 0 ? "192.0.2.40" : s == 1 ? "192.0.2.41" : "192.0.2.42");
        uint32_t slot = bindmap_slot(&seed);
        clients_in_slot(slot, v4, CLIENTS_PER_SLOT, 1 + s * 0x100000u);
        for (size_t k = 0; k < CLIENTS_PER_SLOT; k++)
            r->cli[n++] = v4[k];
        /* IPv6 clients of the same slot: 2001:db8::<k> */
        size_t found = 0;
        for (uint32_t k = 1; found < CLIENTS_PER_SLOT; k++) {
            assert_true(k < (1u << 24));
            struct addr a = {.family = AF_INET6};
            a.ip[0] = 0x20, a.ip[1] = 0x01, a.ip[2] = 0x0d, a.ip[3] = 0xb8;
            a.ip[13] = (uint8_t)(k >> 16), a.ip[14] = (uint8_t)(k >> 8), a.ip[15] = (uint8_t)k;
            if (bindmap_slot(&a) == slot) {
                r->cli[n++] = a;
                found++;
            }
        }
    }
    assert_int_equal(n, NCLIENTS);
    for (size_t i = 0; i < NCLIENTS; i++) {
        struct addr *d = &r->dst[i];
        memset(d, 0, sizeof(*d));
        if (i % 2) {
            d->family = AF_INET6;
            memset(d->ip, (int)(0x11 * (i % 15 + 1)), 16);
            d->ip[0] = 0x20, d->ip[1] = 0x01, d->ip[15] = (uint8_t)i;
        } else {
            d->family = AF_INET;
            d->ip[0] = 198, d->ip[1] = 51, d->ip[2] = 100, d->ip[3] = (uint8_t)i;
        }
    }
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct race_arg {
    struct race *r;
    uint64_t seed;
    int torn; /* readers: reads that mixed two notes */
};

static void *race_writer(void *p)
{
    struct race_arg *a = p;
    struct harness_rng rng;
    harness_rng_init(&rng, a->seed);
    while (!atomic_load(&a->r->stop)) {
        size_t i = harness_rng_below(&rng, NCLIENTS);
        if (bindmap_record(&a->r->cli[i], &a->r->dst[i], when_of(i)))
            atomic_fetch_add(&a->r->records, 1);
        else
            atomic_fetch_add(&a->r->skipped, 1);
    }
    return NULL;
}

static void *race_reader(void *p)
{
    struct race_arg *a = p;
    struct harness_rng rng;
    harness_rng_init(&rng, a->seed);
    while (!atomic_load(&a->r->stop)) {
        size_t i = harness_rng_below(&rng, NCLIENTS);
        struct addr got;
        uint64_t when = 0;
        if (!bindmap_lookup(&a->r->cli[i], UINT64_MAX, UINT64_MAX, &got, &when)) {
            atomic_fetch_add(&a->r->misses, 1);
            continue;
        }
        atomic_fetch_add(&a->r->hits, 1);
        const struct addr *want = &a->r->dst[i];
        if (got.family != want->family || memcmp(got.ip, want->ip, 16) != 0 || when != when_of(i))
            a->torn++;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    static struct race r;
    race_init(&r);
    struct race_arg wa[WRITERS], ra[READERS];
    pthread_t wt[WRITERS], rt[READERS];
    for (int i = 0; i < WRITERS; i++) {
        wa[i] = (struct race_arg){&r, 0x1234u + (uint64_t)i, 0};
        assert_int_equal(pthread_create(&wt[i], NULL, race_writer, &wa[i]), 0);
    }
    for (int i = 0; i < READERS; i++) {
        ra[i] = (struct race_arg){&r, 0x9876u + (uint64_t)i, 0};
        assert_int_equal(pthread_create(&rt[i], NULL, race_reader, &ra[i]), 0);
    }
    uint64_t end = mono_ms() + RUN_MS;
    while (mono_ms() < end)
        usleep(10000);
    atomic_store(&r.stop, true);
    int torn = 0;
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_join(wt[i], NULL), 0);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(pthread_join(rt[i], NULL), 0);
        torn += ra[i].torn;
    }
    print_message(
        "bindmap race: %llu notes, %llu skipped, %llu hits, %llu misses\n",
        (unsigned long long)atomic_load(&r.records), (unsigned long long)atomic_load(&r.skipped),
        (unsigned long long)atomic_load(&r.hits), (unsigned long long)atomic_load(&r.misses));
    assert_int_equal(torn, 0);
    assert_true(atomic_load(&r.records) > 0);
    assert_true(atomic_load(&r.hits) > 0);
    /* quiet again: every slot answers for its last writer */
    for (size_t i = 0; i < NCLIENTS; i++) {
        struct addr got;
        if (bindmap_lookup(&r.cli[i], UINT64_MAX, UINT64_MAX, &got, NULL))
            assert_memory_equal(got.ip, r.dst[i].ip, 16);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_record_lookup, reset),
        cmocka_unit_test_setup(test_expiry, reset),
        cmocka_unit_test_setup(test_clients_apart, reset),
        cmocka_unit_test_setup(test_collision_overwrites, reset),
        cmocka_unit_test_setup(test_threads, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
