/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dest_table_test.c: a UDP association's destination and name tables
 * (udp/dest_table), held to the contract in dest_table.h. Destinations:
 * found by address and port, replies matched by host to the first
 * destination of that host, the limit (array never grown past it), many
 * entries through index growth, and the idle sweep (compaction, the index
 * rebuilt, memory given back when empty). Names: found by name, the limit
 * with eviction of the oldest settled entry (never one being resolved),
 * expiry of settled entries only, and the drop callback for every entry
 * let go. LSan checks that nothing is lost.
 */
#include "harness.h"

#include <arpa/inet.h>

#include "udp/dest_table.h"

static struct addr ip_port(const char *ip, uint16_t port)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(ip, port, &a), 0);
    return a;
}

/* ---- destinations ------------------------------------------------------ */

static void test_dest_insert_lookup(void **state)
{
    (void)state;
    struct udp_dests t;
    udp_dests_init(&t, 0x1234);
    struct addr a = ip_port("192.0.2.1", 53), b = ip_port("192.0.2.1", 54),
                c = ip_port("2001:db8::1", 53);
    assert_null(udp_dests_find(&t, &a)); /* empty: no memory, no index */
    assert_null(udp_dests_find_host(&t, &a));
    assert_null(t.v);

    struct udp_dest *x = udp_dests_add(&t, &a, 100, 16);
    assert_non_null(x);
    assert_true(addr_equal(&x->a, &a));
    assert_int_equal(x->last_ms, 100);
    assert_non_null(udp_dests_add(&t, &b, 101, 16));
    assert_non_null(udp_dests_add(&t, &c, 102, 16));
    assert_int_equal(t.n, 3);

    assert_true(addr_equal(&udp_dests_find(&t, &a)->a, &a));
    assert_true(addr_equal(&udp_dests_find(&t, &b)->a, &b));
    assert_true(addr_equal(&udp_dests_find(&t, &c)->a, &c));
    struct addr other_port = ip_port("192.0.2.1", 55), other_host = ip_port("192.0.2.2", 53);
    assert_null(udp_dests_find(&t, &other_port));
    assert_null(udp_dests_find(&t, &other_host));
    /* The same bytes in another family are another address. */
    struct addr mapped = ip_port("::ffff:192.0.2.1", 53);
    assert_null(udp_dests_find(&t, &mapped));
    udp_dests_fini(&t);
    assert_int_equal(t.n, 0);
    assert_null(t.v);
}

static void test_dest_find_host(void **state)
{
    (void)state;
    struct udp_dests t;
    udp_dests_init(&t, 7);
    struct addr a53 = ip_port("198.51.100.7", 53), a54 = ip_port("198.51.100.7", 54);
    assert_non_null(udp_dests_add(&t, &a53, 1, 16));
    assert_non_null(udp_dests_add(&t, &a54, 2, 16));
    /* Exact address and port first. */
    assert_true(addr_equal(&udp_dests_find_host(&t, &a54)->a, &a54));
    /* A reply from another port of the host: its first destination. */
    struct addr from = ip_port("198.51.100.7", 40000);
    struct udp_dest *d = udp_dests_find_host(&t, &from);
    assert_non_null(d);
    assert_true(addr_equal(&d->a, &a53));
    struct addr stranger = ip_port("198.51.100.8", 53);
    assert_null(udp_dests_find_host(&t, &stranger));
    udp_dests_fini(&t);
}

static void test_dest_limit(void **state)
{
    (void)state;
    struct udp_dests t;
    udp_dests_init(&t, 99);
    for (uint16_t p = 1; p <= 5; p++) {
        struct addr a = ip_port("203.0.113.9", p);
        assert_non_null(udp_dests_add(&t, &a, p, 5));
    }
    assert_int_equal(t.n, 5);
    assert_int_equal(t.cap, 5); /* grown 4 -> 5, never past the limit */
    struct addr sixth = ip_port("203.0.113.9", 6);
    assert_null(udp_dests_add(&t, &sixth, 6, 5));
    assert_int_equal(t.n, 5);
    assert_null(udp_dests_find(&t, &sixth));
    /* Limit 0: nothing at all. */
    struct udp_dests z;
    udp_dests_init(&z, 1);
    assert_null(udp_dests_add(&z, &sixth, 6, 0));
    udp_dests_fini(&z);
    udp_dests_fini(&t);
}

/* Many destinations, through every growth of the array and the index:
 * each is found, and the index stays at most half full. */
static void test_dest_many(void **state)
{
    (void)state;
    enum { N = 3000 };
    struct udp_dests t;
    udp_dests_init(&t, 0xfeedface);
    for (uint32_t i = 0; i < N; i++) {
        struct addr a = ip_port("10.0.0.0", (uint16_t)(1 + i % 60000));
        a.ip[2] = (uint8_t)(i >> 8);
        a.ip[3] = (uint8_t)i;
        assert_null(udp_dests_find(&t, &a));
        assert_non_null(udp_dests_add(&t, &a, i, 65536));
        assert_true(2 * t.n <= t.mask + 1);
    }
    for (uint32_t i = 0; i < N; i++) {
        struct addr a = ip_port("10.0.0.0", (uint16_t)(1 + i % 60000));
        a.ip[2] = (uint8_t)(i >> 8);
        a.ip[3] = (uint8_t)i;
        struct udp_dest *d = udp_dests_find(&t, &a);
        assert_non_null(d);
        assert_int_equal(d->last_ms, i);
    }
    udp_dests_fini(&t);
}

static void test_dest_sweep(void **state)
{
    (void)state;
    struct udp_dests t;
    udp_dests_init(&t, 5);
    struct addr a = ip_port("192.0.2.10", 1), b = ip_port("192.0.2.11", 1),
                c = ip_port("192.0.2.10", 2);
    assert_non_null(udp_dests_add(&t, &a, 1000, 16));
    assert_non_null(udp_dests_add(&t, &b, 1500, 16));
    assert_non_null(udp_dests_add(&t, &c, 2000, 16));
    udp_dests_find(&t, &b)->last_ms = 3000; /* used again */

    /* idle 2000, at 3001: a (used at 1000) goes, b and c stay. */
    udp_dests_sweep(&t, 3001, 2000);
    assert_int_equal(t.n, 2);
    assert_null(udp_dests_find(&t, &a));
    assert_non_null(udp_dests_find(&t, &b));
    assert_non_null(udp_dests_find(&t, &c));
    /* The host index follows: a reply from host .10 now belongs to c. */
    struct addr from = ip_port("192.0.2.10", 9);
    assert_true(addr_equal(&udp_dests_find_host(&t, &from)->a, &c));

    udp_dests_sweep(&t, 3999, 2000); /* c idle 1999 ms: kept */
    assert_int_equal(t.n, 2);
    udp_dests_sweep(&t, 4000, 2000); /* c idle 2000: gone; b (3000) stays */
    assert_int_equal(t.n, 1);
    assert_null(udp_dests_find(&t, &c));

    /* All idle: the memory goes back, and the table works on. */
    udp_dests_sweep(&t, 10000, 2000);
    assert_int_equal(t.n, 0);
    assert_null(t.v);
    assert_null(t.slots);
    assert_int_equal(t.cap, 0);
    assert_null(udp_dests_find(&t, &b));
    assert_non_null(udp_dests_add(&t, &b, 10000, 16));
    assert_non_null(udp_dests_find(&t, &b));
    udp_dests_fini(&t);
}

/* ---- names --------------------------------------------------------------- */

static unsigned dropped;
static char last_dropped[64];

static void drop(struct udp_name *nm)
{
    dropped++;
    snprintf(last_dropped, sizeof(last_dropped), "%s", nm->name);
}

static struct udp_name *add(struct udp_names *t, const char *name, uint32_t limit)
{
    return udp_names_add(t, name, udp_names_hash(t, name), limit, drop);
}

static struct udp_name *find(const struct udp_names *t, const char *name)
{
    return udp_names_find(t, name, udp_names_hash(t, name));
}

static void test_names_insert_lookup(void **state)
{
    (void)state;
    dropped = 0;
    struct udp_names t;
    udp_names_init(&t, 42);
    assert_null(find(&t, "example.com"));
    struct udp_name *nm = add(&t, "example.com", 8);
    assert_non_null(nm);
    assert_string_equal(nm->name, "example.com");
    assert_int_equal(nm->status, UDP_NAME_RESOLVING);
    assert_null(nm->a);
    assert_null(nm->q);
    assert_null(nm->head);
    assert_ptr_equal(find(&t, "example.com"), nm);
    assert_null(find(&t, "example.org"));
    assert_null(find(&t, "EXAMPLE.COM")); /* exact bytes */
    assert_null(find(&t, "example.co"));
    /* Keyed: another seed hashes the same name otherwise (almost surely). */
    struct udp_names u;
    udp_names_init(&u, 43);
    assert_int_not_equal(udp_names_hash(&t, "example.com"), udp_names_hash(&u, "example.com"));
    udp_names_fini(&u, drop);

    /* Many names, through bucket growth: all found. */
    char name[32];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof(name), "host-%d.test", i);
        assert_non_null(add(&t, name, 1000));
        assert_true(t.n <= t.mask + 1); /* at least one bucket per name */
    }
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof(name), "host-%d.test", i);
        assert_non_null(find(&t, name));
    }
    assert_int_equal(t.n, 501);
    udp_names_fini(&t, drop);
    assert_int_equal(dropped, 501);
    assert_int_equal(t.n, 0);
    assert_null(t.buckets);
}

static void test_names_limit_evicts_oldest_settled(void **state)
{
    (void)state;
    dropped = 0;
    struct udp_names t;
    udp_names_init(&t, 9);
    struct udp_name *a = add(&t, "a.test", 3), *b = add(&t, "b.test", 3);
    struct udp_name *c = add(&t, "c.test", 3);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    /* All three resolving: a fourth has no room, and nothing is lost. */
    assert_null(add(&t, "d.test", 3));
    assert_int_equal(dropped, 0);
    assert_int_equal(t.n, 3);

    /* b and c settle: the oldest settled one (b) makes room. */
    b->status = 0;
    c->status = -2;
    assert_non_null(add(&t, "d.test", 3));
    assert_int_equal(dropped, 1);
    assert_string_equal(last_dropped, "b.test");
    assert_null(find(&t, "b.test"));
    assert_non_null(find(&t, "a.test"));
    assert_non_null(find(&t, "c.test"));
    assert_non_null(find(&t, "d.test"));
    assert_int_equal(t.n, 3);
    udp_names_fini(&t, drop);
    assert_int_equal(dropped, 4);
}

static void test_names_expire(void **state)
{
    (void)state;
    dropped = 0;
    struct udp_names t;
    udp_names_init(&t, 3);
    struct udp_name *ok = add(&t, "ok.test", 8), *bad = add(&t, "bad.test", 8);
    struct udp_name *busy = add(&t, "busy.test", 8);
    ok->status = 0;
    ok->expires_ms = 5000;
    bad->status = -1;
    bad->expires_ms = 2000;
    busy->expires_ms = 0; /* resolving: its expiry means nothing yet */

    udp_names_expire(&t, 1999, drop);
    assert_int_equal(t.n, 3);
    udp_names_expire(&t, 2000, drop);
    assert_int_equal(t.n, 2);
    assert_null(find(&t, "bad.test"));
    assert_string_equal(last_dropped, "bad.test");
    udp_names_expire(&t, 100000, drop);
    assert_int_equal(t.n, 1);
    assert_ptr_equal(find(&t, "busy.test"), busy);
    assert_int_equal(dropped, 2);
    /* The name may come again, as a new entry. */
    assert_non_null(add(&t, "ok.test", 8));
    udp_names_fini(&t, drop);
    assert_int_equal(dropped, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dest_insert_lookup),
        cmocka_unit_test(test_dest_find_host),
        cmocka_unit_test(test_dest_limit),
        cmocka_unit_test(test_dest_many),
        cmocka_unit_test(test_dest_sweep),
        cmocka_unit_test(test_names_insert_lookup),
        cmocka_unit_test(test_names_limit_evicts_oldest_settled),
        cmocka_unit_test(test_names_expire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
