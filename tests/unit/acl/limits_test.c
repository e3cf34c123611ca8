/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limits_test.c: the shared tables of acl/limits.h, with time passed in.
 * Per address: concurrency up to max (release frees a place), the rate
 * bucket (burst, refill, LIMITS_RATE), the log flag at most once a second
 * per address, other addresses untouched, IPv4 apart from IPv6, both
 * checks off; a table far too small for its addresses keeps the entries
 * with open connections and admits the rest untracked (tracked = false,
 * counted). Per user: sessions up to max (0 unlimited), release, and the
 * shared bandwidth bucket (avail, spend, wait). Threads admitting and
 * releasing one address (and one user) leave nothing behind.
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "acl/limits.h"
#include "util/addr.h"

#define T0  5000000000ull
#define SEC 1000000ull

static struct limits lim; /* the test's; the teardown frees it */

static int teardown(void **state)
{
    (void)state;
    limits_fini(&lim);
    return 0;
}

static struct addr ip(const char *text)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(text, 4321, &a), 0);
    return a;
}

/* IPv4 10.x.y.z numbered i. */
static struct addr ip_n(unsigned i)
{
    struct addr a;
    memset(&a, 0, sizeof(a));
    a.family = AF_INET;
    a.ip[0] = 10;
    a.ip[1] = (uint8_t)(i >> 16);
    a.ip[2] = (uint8_t)(i >> 8);
    a.ip[3] = (uint8_t)i;
    return a;
}

struct adm {
    enum limits_verdict v;
    bool log, tracked;
};

static struct adm admit(const struct addr *a, uint64_t now, uint32_t max, uint32_t rate,
                        uint32_t burst)
{
    struct adm r;
    r.log = r.tracked = true; /* must be written */
    r.v = limits_ip_admit(&lim, a, now, max, rate, burst, &r.log, &r.tracked);
    return r;
}

/* ---- per address --------------------------------------------------------------- */

static void test_concurrency_up_to_max(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("192.0.2.1");
    for (int i = 0; i < 3; i++) {
        struct adm r = admit(&a, T0 + (uint64_t)i, 3, 0, 20);
        assert_int_equal(r.v, LIMITS_OK);
        assert_true(r.tracked);
        assert_false(r.log);
    }
    struct adm r = admit(&a, T0 + 10, 3, 0, 20);
    assert_int_equal(r.v, LIMITS_PER_IP);
    assert_false(r.tracked);
    assert_true(r.log);
    r = admit(&a, T0 + 20, 3, 0, 20);
    assert_int_equal(r.v, LIMITS_PER_IP);
    assert_false(r.log); /* within a second of the last line */
    /* One ends: one more may come, and only one. */
    limits_ip_release(&lim, &a);
    assert_int_equal(admit(&a, T0 + 30, 3, 0, 20).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0 + 40, 3, 0, 20).v, LIMITS_PER_IP);
    /* All end: three again. */
    for (int i = 0; i < 3; i++)
        limits_ip_release(&lim, &a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(admit(&a, T0 + 50, 3, 0, 20).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0 + 60, 3, 0, 20).v, LIMITS_PER_IP);
    /* The port plays no part: another port of the same address is the
     * same client. */
    struct addr a2 = a;
    a2.port = 9;
    assert_int_equal(admit(&a2, T0 + 70, 3, 0, 20).v, LIMITS_PER_IP);
    /* Releasing more than was admitted does not go below zero. */
    for (int i = 0; i < 10; i++)
        limits_ip_release(&lim, &a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(admit(&a, T0 + 80, 3, 0, 20).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0 + 90, 3, 0, 20).v, LIMITS_PER_IP);
}

static void test_rate_burst_and_refill(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("198.51.100.5");
    /* rate 5/s, burst 5, no concurrency limit: connections closed at once
     * still count against the rate. */
    for (int i = 0; i < 5; i++) {
        struct adm r = admit(&a, T0, 0, 5, 5);
        assert_int_equal(r.v, LIMITS_OK);
        assert_true(r.tracked);
        limits_ip_release(&lim, &a);
    }
    struct adm r = admit(&a, T0, 0, 5, 5);
    assert_int_equal(r.v, LIMITS_RATE);
    assert_false(r.tracked);
    assert_true(r.log);
    for (int i = 0; i < 20; i++) {
        r = admit(&a, T0 + 1000 * (uint64_t)i, 0, 5, 5);
        assert_int_equal(r.v, LIMITS_RATE);
        assert_false(r.log);
    }
    /* One every 200 ms comes back. */
    assert_int_equal(admit(&a, T0 + 199999, 0, 5, 5).v, LIMITS_RATE);
    assert_int_equal(admit(&a, T0 + 200000, 0, 5, 5).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0 + 200000, 0, 5, 5).v, LIMITS_RATE);
    assert_int_equal(admit(&a, T0 + 400000, 0, 5, 5).v, LIMITS_OK);
    /* After a quiet while: a whole burst, no more. */
    unsigned ok = 0;
    for (int i = 0; i < 30; i++)
        ok += admit(&a, T0 + 10 * SEC, 0, 5, 5).v == LIMITS_OK;
    assert_int_equal(ok, 5);
    /* Both limits: per_ip is checked first and takes no token. */
    struct addr b = ip("198.51.100.6");
    assert_int_equal(admit(&b, T0, 1, 5, 2).v, LIMITS_OK);
    assert_int_equal(admit(&b, T0, 1, 5, 2).v, LIMITS_PER_IP);
    assert_int_equal(admit(&b, T0, 1, 5, 2).v, LIMITS_PER_IP);
    limits_ip_release(&lim, &b);
    assert_int_equal(admit(&b, T0, 1, 5, 2).v, LIMITS_OK); /* the second token */
    limits_ip_release(&lim, &b);
    assert_int_equal(admit(&b, T0, 1, 5, 2).v, LIMITS_RATE);
}

static void test_log_once_a_second(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("203.0.113.9");
    assert_int_equal(admit(&a, T0, 0, 1, 1).v, LIMITS_OK);
    unsigned logs = 0;
    /* Refused every 10 ms for 3.5 s (one token a second comes back). */
    uint64_t last_log = 0;
    for (uint64_t t = 10000; t <= 3500000; t += 10000) {
        struct adm r = admit(&a, T0 + t, 0, 1, 1);
        if (r.v == LIMITS_OK)
            continue;
        if (r.log) {
            if (logs)
                assert_true(T0 + t - last_log >= SEC);
            last_log = T0 + t;
            logs++;
        }
    }
    assert_true(logs >= 3 && logs <= 4);
    /* Per address: another address logs its own first refusal at once. */
    struct addr b = ip("203.0.113.10");
    assert_int_equal(admit(&b, T0 + 3500000, 1, 0, 1).v, LIMITS_OK);
    struct adm r = admit(&b, T0 + 3500001, 1, 0, 1);
    assert_int_equal(r.v, LIMITS_PER_IP);
    assert_true(r.log);

    /* Time 0 is a time like any other. */
    limits_fini(&lim);
    assert_int_equal(limits_init(&lim, 1024), 0);
    assert_int_equal(admit(&a, 0, 1, 0, 1).v, LIMITS_OK);
    r = admit(&a, 0, 1, 0, 1);
    assert_true(r.log);
    r = admit(&a, 1, 1, 0, 1);
    assert_false(r.log);
    r = admit(&a, SEC + 1, 1, 0, 1);
    assert_true(r.log);
}

/* Workers pass their own loop clocks (each cached once per loop
 * iteration), so one worker's "now" may be a little behind the time
 * another worker stored for the same address. A refusal seen through the
 * older clock is still within the second of the last log line. */
static void test_log_once_with_clocks_of_several_workers(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("203.0.113.20");
    assert_int_equal(admit(&a, T0, 0, 5, 1).v, LIMITS_OK);
    struct adm r = admit(&a, T0 + 5000, 0, 5, 1); /* worker 1, logs */
    assert_int_equal(r.v, LIMITS_RATE);
    assert_true(r.log);
    r = admit(&a, T0 + 4000, 0, 5, 1); /* worker 0, its clock 1 ms behind */
    assert_int_equal(r.v, LIMITS_RATE);
    if (r.log)
        fail_msg("a refusal 1 ms 'before' the last log line (another worker's clock) was "
                 "logged again: now_us - logged_us wraps around in limits_ip_admit");
    r = admit(&a, T0 + 6000, 0, 5, 1);
    assert_false(r.log);
}

static void test_other_addresses_unaffected(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("192.0.2.1"), b = ip("192.0.2.2");
    assert_int_equal(admit(&a, T0, 2, 3, 3).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0, 2, 3, 3).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0, 2, 3, 3).v, LIMITS_PER_IP);
    for (int i = 0; i < 2; i++) {
        struct adm r = admit(&b, T0, 2, 3, 3);
        assert_int_equal(r.v, LIMITS_OK);
        assert_true(r.tracked);
    }
    limits_ip_release(&lim, &b);
    limits_ip_release(&lim, &b);
    /* a's rate bucket is its own. */
    limits_ip_release(&lim, &a);
    assert_int_equal(admit(&a, T0, 2, 3, 3).v, LIMITS_OK);
    limits_ip_release(&lim, &a);
    assert_int_equal(admit(&a, T0, 2, 3, 3).v, LIMITS_RATE);
    assert_int_equal(admit(&b, T0, 2, 3, 3).v, LIMITS_OK);
    /* Releasing an address never seen changes nothing. */
    struct addr c = ip("192.0.2.3"), d = ip("192.0.2.4");
    assert_int_equal(admit(&d, T0, 2, 0, 3).v, LIMITS_OK);
    assert_int_equal(admit(&d, T0, 2, 0, 3).v, LIMITS_OK);
    limits_ip_release(&lim, &c);
    assert_int_equal(admit(&d, T0, 2, 0, 3).v, LIMITS_PER_IP);
    assert_int_equal(admit(&c, T0, 2, 0, 3).v, LIMITS_OK);
}

static void test_ipv4_and_ipv6_apart(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    /* Same leading bytes, different families; and two IPv6 addresses
     * that differ only in their last byte. */
    struct addr v4 = ip("10.0.0.1"), v6 = ip("a00:1::"), v6b = ip("2001:db8::1"),
                v6c = ip("2001:db8::2");
    assert_int_equal(admit(&v4, T0, 1, 0, 1).v, LIMITS_OK);
    assert_int_equal(admit(&v4, T0, 1, 0, 1).v, LIMITS_PER_IP);
    assert_int_equal(admit(&v6, T0, 1, 0, 1).v, LIMITS_OK);
    assert_int_equal(admit(&v6, T0, 1, 0, 1).v, LIMITS_PER_IP);
    assert_int_equal(admit(&v6b, T0, 1, 0, 1).v, LIMITS_OK);
    assert_int_equal(admit(&v6c, T0, 1, 0, 1).v, LIMITS_OK);
    assert_int_equal(admit(&v6b, T0, 1, 0, 1).v, LIMITS_PER_IP);
    limits_ip_release(&lim, &v6);
    assert_int_equal(admit(&v4, T0, 1, 0, 1).v, LIMITS_PER_IP);
    assert_int_equal(admit(&v6, T0, 1, 0, 1).v, LIMITS_OK);
}

static void test_both_off(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    struct addr a = ip("192.0.2.1");
    for (int i = 0; i < 1000; i++) {
        struct adm r = admit(&a, T0, 0, 0, 20);
        assert_int_equal(r.v, LIMITS_OK);
        assert_false(r.tracked); /* nothing to release */
        assert_false(r.log);
    }
    assert_int_equal(lim.untracked, 0);
}

/* A table of one set (4 ways). */
static void test_tiny_table_keeps_busy_entries(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1), 0);
    assert_int_equal(lim.nsets, 1);
    struct addr busy[4];
    for (unsigned i = 0; i < 4; i++) {
        busy[i] = ip_n(i + 1);
        struct adm r = admit(&busy[i], T0 + i, 2, 0, 20);
        assert_int_equal(r.v, LIMITS_OK);
        assert_true(r.tracked);
    }
    /* Full of live entries: strangers come in, untracked and counted. */
    for (unsigned i = 0; i < 100; i++) {
        struct addr s = ip_n(1000 + i);
        struct adm r = admit(&s, T0 + 100, 2, 0, 20);
        assert_int_equal(r.v, LIMITS_OK);
        assert_false(r.tracked);
    }
    assert_int_equal(lim.untracked, 100);
    /* The busy entries were kept: each has one open and takes one more. */
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(admit(&busy[i], T0 + 200, 2, 0, 20).v, LIMITS_OK);
        assert_int_equal(admit(&busy[i], T0 + 200, 2, 0, 20).v, LIMITS_PER_IP);
    }
    /* One entry goes idle: the next stranger takes its place, and the
     * idle address starts from nothing when it comes back. */
    limits_ip_release(&lim, &busy[2]);
    limits_ip_release(&lim, &busy[2]);
    struct addr s = ip_n(5000);
    struct adm r = admit(&s, T0 + 300, 2, 0, 20);
    assert_true(r.tracked);
    assert_int_equal(admit(&s, T0 + 300, 2, 0, 20).v, LIMITS_OK);
    assert_int_equal(admit(&s, T0 + 300, 2, 0, 20).v, LIMITS_PER_IP);
    r = admit(&busy[2], T0 + 400, 2, 0, 20);
    assert_int_equal(r.v, LIMITS_OK);
    assert_false(r.tracked); /* no room for it now */
    for (unsigned i = 0; i < 4; i++)
        if (i != 2)
            assert_int_equal(admit(&busy[i], T0 + 500, 2, 0, 20).v, LIMITS_PER_IP);
}

/* With a rate: an idle entry whose bucket is still refilling is kept over
 * a stranger while a fully refilled one exists, else the oldest idle goes. */
static void test_tiny_table_with_rate(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 4), 0);
    assert_int_equal(lim.nsets, 1);
    struct addr a[4];
    for (unsigned i = 0; i < 4; i++) {
        a[i] = ip_n(i + 1);
        assert_int_equal(admit(&a[i], T0 + i * 1000, 0, 1, 1).v, LIMITS_OK);
        limits_ip_release(&lim, &a[i]);
    }
    /* All four idle with empty buckets: the oldest (a[0]) is replaced. */
    struct addr s = ip_n(100);
    struct adm r = admit(&s, T0 + 10000, 0, 1, 1);
    assert_int_equal(r.v, LIMITS_OK);
    assert_true(r.tracked);
    limits_ip_release(&lim, &s);
    /* a[1..3] still remember their empty buckets. */
    for (unsigned i = 1; i < 4; i++)
        assert_int_equal(admit(&a[i], T0 + 20000, 0, 1, 1).v, LIMITS_RATE);
    /* A second later every bucket is full again: any way may be reused. */
    for (unsigned i = 0; i < 50; i++) {
        struct addr t = ip_n(200 + i);
        r = admit(&t, T0 + 2 * SEC + i, 0, 1, 1);
        assert_int_equal(r.v, LIMITS_OK);
        assert_true(r.tracked);
        limits_ip_release(&lim, &t);
    }
    assert_int_equal(lim.untracked, 0);
}

/* Far more addresses than places: the table never grows, each tracked
 * address holds its connection, the rest are admitted untracked. */
static void test_flood_into_small_table(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    const unsigned n = 20000, places = lim.nsets * LIMITS_WAYS;
    assert_int_equal(places, 64);
    static bool tracked[20000];
    unsigned ntracked = 0;
    for (unsigned i = 0; i < n; i++) {
        struct addr a = ip_n(i);
        struct adm r = admit(&a, T0 + i, 1, 10, 10);
        assert_int_equal(r.v, LIMITS_OK);
        tracked[i] = r.tracked;
        ntracked += r.tracked;
    }
    assert_true(ntracked <= places);
    assert_true(ntracked >= places / 2); /* most ways found an owner */
    assert_int_equal(lim.untracked, n - ntracked);
    for (unsigned i = 0; i < n; i++) {
        struct addr a = ip_n(i);
        if (tracked[i]) {
            assert_int_equal(admit(&a, T0 + n, 1, 10, 10).v, LIMITS_PER_IP);
            limits_ip_release(&lim, &a);
        }
    }
    /* All released: the tracked addresses may connect again. */
    for (unsigned i = 0; i < n; i++) {
        if (tracked[i]) {
            struct addr a = ip_n(i);
            struct adm r = admit(&a, T0 + n + 1, 1, 10, 10);
            assert_int_equal(r.v, LIMITS_OK);
            assert_true(r.tracked);
            limits_ip_release(&lim, &a);
        }
    }
}

/* ---- per user ---------------------------------------------------------------------- */

static void test_user_sessions(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    bool over = true;
    struct limits_user *a1 = limits_user_admit(&lim, "alice", 2, 65536, T0, &over);
    assert_non_null(a1);
    assert_false(over);
    struct limits_user *a2 = limits_user_admit(&lim, "alice", 2, 65536, T0, &over);
    assert_non_null(a2);
    assert_false(over);
    assert_ptr_equal(a1, a2); /* one entry per user */
    assert_int_equal(a1->sessions, 2);
    assert_null(limits_user_admit(&lim, "alice", 2, 65536, T0, &over));
    assert_true(over);
    /* Another user, and names that only look alike, are apart. */
    struct limits_user *b = limits_user_admit(&lim, "bob", 2, 65536, T0, &over);
    assert_non_null(b);
    assert_false(over);
    struct limits_user *al = limits_user_admit(&lim, "Alice", 2, 65536, T0, &over);
    assert_non_null(al);
    struct limits_user *al2 = limits_user_admit(&lim, "alic", 2, 65536, T0, &over);
    assert_non_null(al2);
    /* One ends: one more may start. */
    limits_user_release(&lim, a1);
    struct limits_user *a3 = limits_user_admit(&lim, "alice", 2, 65536, T0, &over);
    assert_non_null(a3);
    assert_null(limits_user_admit(&lim, "alice", 2, 65536, T0, &over));
    assert_true(over);
    limits_user_release(&lim, a2);
    limits_user_release(&lim, a3);
    limits_user_release(&lim, b);
    limits_user_release(&lim, al);
    limits_user_release(&lim, al2);
    limits_user_release(&lim, NULL); /* untracked: a no-op */
    /* Everything released: the entries are gone (LeakSanitizer would
     * see one left behind at fini) and alice starts from zero. */
    for (uint32_t i = 0; i < lim.nusers; i++)
        assert_null(lim.users[i]);
    struct limits_user *u[2];
    u[0] = limits_user_admit(&lim, "alice", 2, 65536, T0, &over);
    u[1] = limits_user_admit(&lim, "alice", 2, 65536, T0, &over);
    assert_non_null(u[0]);
    assert_non_null(u[1]);
    limits_user_release(&lim, u[0]);
    limits_user_release(&lim, u[1]);
}

static void test_user_unlimited(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    static struct limits_user *u[500];
    bool over;
    for (int i = 0; i < 500; i++) {
        u[i] = limits_user_admit(&lim, "carol", 0, 65536, T0, &over);
        assert_non_null(u[i]);
        assert_false(over);
    }
    assert_int_equal(u[0]->sessions, 500);
    for (int i = 0; i < 500; i++)
        limits_user_release(&lim, u[i]);
    /* Many users at once, in few hash buckets' worth of chains. */
    static struct limits_user *m[3000];
    for (int i = 0; i < 3000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "user%d", i);
        m[i] = limits_user_admit(&lim, name, 1, 65536, T0, &over);
        assert_non_null(m[i]);
        assert_string_equal(m[i]->name, name);
    }
    for (int i = 0; i < 3000; i += 7) {
        char name[32];
        snprintf(name, sizeof(name), "user%d", i);
        assert_null(limits_user_admit(&lim, name, 1, 65536, T0, &over));
        assert_true(over);
    }
    for (int i = 0; i < 3000; i++)
        limits_user_release(&lim, m[i]);
    for (uint32_t i = 0; i < lim.nusers; i++)
        assert_null(lim.users[i]);
}

static void test_user_bandwidth(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    const uint64_t rate = 100000, burst = 65536;
    bool over;
    struct limits_user *u1 = limits_user_admit(&lim, "dave", 0, burst, T0, &over);
    struct limits_user *u2 = limits_user_admit(&lim, "dave", 0, burst, T0, &over);
    assert_non_null(u1);
    assert_ptr_equal(u1, u2);
    uint64_t wait = 12345;
    /* A new user holds a burst; avail is capped by want. */
    assert_int_equal(limits_user_bw_avail(&lim, u1, rate, burst, T0, 1000, &wait), 1000);
    assert_int_equal(wait, 12345); /* untouched while bytes may move */
    assert_int_equal(limits_user_bw_avail(&lim, u1, rate, burst, T0, 1 << 20, &wait), burst);
    /* Both sessions draw on one bucket. */
    limits_user_bw_spend(&lim, u1, rate, burst, T0, 40000);
    assert_int_equal(limits_user_bw_avail(&lim, u2, rate, burst, T0, 1 << 20, &wait),
                     burst - 40000);
    limits_user_bw_spend(&lim, u2, rate, burst, T0, 40000); /* more than is left */
    assert_int_equal(limits_user_bw_avail(&lim, u1, rate, burst, T0, 16384, &wait), 0);
    /* 16384 bytes at 100000/s: 163.84 ms, rounded up. */
    assert_int_equal(wait, 163840);
    /* Asking for more than the burst waits for the burst, not forever. */
    assert_int_equal(limits_user_bw_avail(&lim, u1, rate, burst, T0, 1 << 30, &wait), 0);
    assert_int_equal(wait, 655360);
    /* 0.5 s later: 50000 bytes. */
    assert_int_equal(limits_user_bw_avail(&lim, u2, rate, burst, T0 + SEC / 2, 1 << 20, &wait),
                     50000);
    /* Over a long run the bytes moved follow the rate. */
    uint64_t moved = 0, t = T0 + SEC / 2;
    limits_user_bw_spend(&lim, u1, rate, burst, t, 50000);
    for (int i = 0; i < 10000; i++) {
        t += 1000; /* every ms, as fast as the bucket allows */
        uint64_t n = limits_user_bw_avail(&lim, i % 2 ? u1 : u2, rate, burst, t, 4096, &wait);
        limits_user_bw_spend(&lim, i % 2 ? u1 : u2, rate, burst, t, n);
        moved += n;
    }
    /* 10 s at 100000/s */
    assert_true(moved >= 990000 && moved <= 1000000);
    limits_user_release(&lim, u1);
    limits_user_release(&lim, u2);
}

/* ---- threads -------------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS  20000
#define MAXC    3

static atomic_int holders;
static atomic_int max_holders;
static atomic_int oks;

static void *ip_worker(void *arg)
{
    const struct addr *a = arg;
    for (int i = 0; i < ROUNDS; i++) {
        bool log, tracked;
        enum limits_verdict v =
            limits_ip_admit(&lim, a, T0 + (uint64_t)i, MAXC, 0, 1, &log, &tracked);
        if (v != LIMITS_OK)
            continue;
        int h = atomic_fetch_add(&holders, 1) + 1;
        int m = atomic_load(&max_holders);
        while (h > m && !atomic_compare_exchange_weak(&max_holders, &m, h))
            ;
        atomic_fetch_add(&oks, 1);
        atomic_fetch_sub(&holders, 1);
        limits_ip_release(&lim, a);
    }
    return NULL;
}

static void test_threads_one_address(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 1024), 0);
    struct addr a = ip("192.0.2.77");
    atomic_store(&holders, 0);
    atomic_store(&max_holders, 0);
    atomic_store(&oks, 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, ip_worker, &a), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    /* Never more than max at once; everyone got through sometimes. */
    assert_true(atomic_load(&max_holders) <= MAXC);
    assert_true(atomic_load(&oks) > ROUNDS);
    /* Ends at zero: exactly max may be admitted now. */
    for (int i = 0; i < MAXC; i++)
        assert_int_equal(admit(&a, T0 + ROUNDS, MAXC, 0, 1).v, LIMITS_OK);
    assert_int_equal(admit(&a, T0 + ROUNDS, MAXC, 0, 1).v, LIMITS_PER_IP);
}

static void *user_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        bool over;
        struct limits_user *u = limits_user_admit(&lim, "erin", MAXC, 65536, T0, &over);
        if (!u)
            continue;
        uint64_t wait;
        uint64_t n = limits_user_bw_avail(&lim, u, 1000000, 65536, T0 + (uint64_t)i, 100, &wait);
        limits_user_bw_spend(&lim, u, 1000000, 65536, T0 + (uint64_t)i, n);
        limits_user_release(&lim, u);
    }
    return NULL;
}

static void test_threads_one_user(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 64), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, user_worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (uint32_t i = 0; i < lim.nusers; i++)
        assert_null(lim.users[i]);
}

static void test_init_fini(void **state)
{
    (void)state;
    assert_int_equal(limits_init(&lim, 0), 0);
    assert_int_equal(lim.nsets, 1);
    limits_fini(&lim);
    limits_fini(&lim); /* twice is harmless */
    assert_int_equal(limits_init(&lim, 65536), 0);
    assert_int_equal(lim.nsets, 65536 / LIMITS_WAYS);
    /* fini frees users still holding sessions */
    bool over;
    assert_non_null(limits_user_admit(&lim, "frank", 0, 65536, T0, &over));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_concurrency_up_to_max, teardown),
        cmocka_unit_test_teardown(test_rate_burst_and_refill, teardown),
        cmocka_unit_test_teardown(test_log_once_a_second, teardown),
        cmocka_unit_test_teardown(test_log_once_with_clocks_of_several_workers, teardown),
        cmocka_unit_test_teardown(test_other_addresses_unaffected, teardown),
        cmocka_unit_test_teardown(test_ipv4_and_ipv6_apart, teardown),
        cmocka_unit_test_teardown(test_both_off, teardown),
        cmocka_unit_test_teardown(test_tiny_table_keeps_busy_entries, teardown),
        cmocka_unit_test_teardown(test_tiny_table_with_rate, teardown),
        cmocka_unit_test_teardown(test_flood_into_small_table, teardown),
        cmocka_unit_test_teardown(test_user_sessions, teardown),
        cmocka_unit_test_teardown(test_user_unlimited, teardown),
        cmocka_unit_test_teardown(test_user_bandwidth, teardown),
        cmocka_unit_test_teardown(test_threads_one_address, teardown),
        cmocka_unit_test_teardown(test_threads_one_user, teardown),
        cmocka_unit_test_teardown(test_init_fini, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
