/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_pool_test.c: which member a pool dials (outbound_pool_pick(),
 * relay/outbound_pool.c), as a pure function of the pool, its members'
 * health, their sessions and what this dial has tried: failover takes the
 * first member up, round-robin the first up from its turn, least-
 * connections the one up with the fewest sessions; members in their
 * back-off are skipped while another is up and tried in order when none
 * is; a dial never tries a member twice. And the back-off itself
 * (outbound_mark_down/up): it doubles with each failure in a row up to
 * 60 s, and a success clears it.
 */
#include "harness.h"

#include <string.h>

#include "config/config.h"
#include "relay/outbound.h"

#define NOW 100000

/* Outbounds 0 direct, 1 reject, 2..5 members "m0".."m3", 6 the pool. */
struct fixture {
    struct config_outbound obs[7];
    struct outbound_health health[7];
    struct config cfg;
};

static void setup_fx(struct fixture *fx, uint8_t strategy, unsigned nmembers)
{
    memset(fx, 0, sizeof(*fx));
    for (unsigned i = 0; i < 7; i++) {
        snprintf(fx->obs[i].name, sizeof(fx->obs[i].name), "m%d", (int)i - 2);
        fx->obs[i].kind = OUTBOUND_KIND_SOCKS5;
        fx->obs[i].backoff_ms = 5000;
        atomic_init(&fx->health[i].up, 1);
    }
    struct config_outbound *p = &fx->obs[6];
    snprintf(p->name, sizeof(p->name), "pool");
    p->kind = OUTBOUND_KIND_POOL;
    p->strategy = strategy;
    p->nmembers = (uint8_t)nmembers;
    for (unsigned k = 0; k < nmembers; k++)
        p->members[k] = (uint16_t)(2 + k);
    fx->cfg.outbounds = fx->obs;
    fx->cfg.ob_health = fx->health;
    fx->cfg.noutbounds = 7;
}

static void down(struct fixture *fx, unsigned member_pos, uint64_t until)
{
    atomic_store(&fx->health[2 + member_pos].down_until_ms, until);
}

static int pick(struct fixture *fx, const uint64_t *active, uint16_t tried, uint32_t start)
{
    static const uint64_t none[OUTBOUND_MAX_MEMBERS];
    return outbound_pool_pick(&fx->obs[6], fx->health, active ? active : none, tried, NOW, start);
}

static void test_failover(void **state)
{
    (void)state;
    struct fixture fx;
    setup_fx(&fx, OUTBOUND_FAILOVER, 3);
    assert_int_equal(pick(&fx, NULL, 0, 2), 0); /* start means nothing to failover */
    assert_int_equal(pick(&fx, NULL, 1u << 0, 0), 1);
    down(&fx, 0, NOW + 1);
    assert_int_equal(pick(&fx, NULL, 0, 0), 1);
    down(&fx, 0, NOW); /* the back-off ends at NOW: up again */
    assert_int_equal(pick(&fx, NULL, 0, 0), 0);
    assert_int_equal(pick(&fx, NULL, 0x7, 0), -1); /* all tried */
}

static void test_round_robin(void **state)
{
    (void)state;
    struct fixture fx;
    setup_fx(&fx, OUTBOUND_ROUND_ROBIN, 3);
    assert_int_equal(pick(&fx, NULL, 0, 0), 0);
    assert_int_equal(pick(&fx, NULL, 0, 1), 1);
    assert_int_equal(pick(&fx, NULL, 0, 2), 2);
    assert_int_equal(pick(&fx, NULL, 1u << 2, 2), 0); /* wraps around */
    down(&fx, 1, NOW + 5000);
    assert_int_equal(pick(&fx, NULL, 0, 1), 2); /* the next up after a down one */
}

static void test_least_connections(void **state)
{
    (void)state;
    struct fixture fx;
    setup_fx(&fx, OUTBOUND_LEAST_CONN, 3);
    uint64_t active[OUTBOUND_MAX_MEMBERS] = {4, 2, 3};
    assert_int_equal(pick(&fx, active, 0, 0), 1);
    assert_int_equal(pick(&fx, active, 1u << 1, 0), 2);
    down(&fx, 1, NOW + 1); /* the least busy is down: the next least */
    assert_int_equal(pick(&fx, active, 0, 0), 2);
    uint64_t tie[OUTBOUND_MAX_MEMBERS] = {1, 1, 1};
    assert_int_equal(pick(&fx, tie, 0, 0), 0);
    assert_int_equal(pick(&fx, tie, 0, 2), 2); /* ties go to the first from start */
}

static void test_all_down(void **state)
{
    (void)state;
    for (uint8_t s = OUTBOUND_FAILOVER; s <= OUTBOUND_LEAST_CONN; s++) {
        struct fixture fx;
        setup_fx(&fx, s, 3);
        for (unsigned k = 0; k < 3; k++)
            down(&fx, k, NOW + 1000);
        /* No member up: the untried ones, in order, rather than refuse. */
        assert_int_equal(pick(&fx, NULL, 0, 2), 0);
        assert_int_equal(pick(&fx, NULL, 1u << 0, 2), 1);
        assert_int_equal(pick(&fx, NULL, 0x3, 0), 2);
        assert_int_equal(pick(&fx, NULL, 0x7, 0), -1);
        /* One up among the untried wins over an earlier one down. */
        down(&fx, 2, 0);
        assert_int_equal(pick(&fx, NULL, 0, 0), 2);
    }
}

static void test_empty(void **state)
{
    (void)state;
    struct fixture fx;
    setup_fx(&fx, OUTBOUND_FAILOVER, 0);
    assert_int_equal(pick(&fx, NULL, 0, 0), -1);
}

static void test_backoff(void **state)
{
    (void)state;
    struct fixture fx;
    setup_fx(&fx, OUTBOUND_FAILOVER, 2);
    fx.obs[6].backoff_ms = 1000; /* the pool's back-off applies to its members */
    struct outbound_health *h = &fx.health[2];
    static const uint64_t want[] = {1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        outbound_mark_down(&fx.cfg, 2, 6, NOW, "test");
        assert_int_equal(atomic_load(&h->up), 0);
        assert_int_equal(atomic_load(&h->down_until_ms), NOW + want[i]);
    }
    outbound_mark_up(&fx.cfg, 2, 6, 1234, "test");
    assert_int_equal(atomic_load(&h->up), 1);
    assert_int_equal(atomic_load(&h->down_until_ms), 0);
    assert_int_equal(atomic_load(&h->fails_in_row), 0);
    assert_int_equal(atomic_load(&h->latency_us), 1234);
    /* Alone (no pool), an outbound's own back-off. */
    outbound_mark_down(&fx.cfg, 3, -1, NOW, "test");
    assert_int_equal(atomic_load(&fx.health[3].down_until_ms), NOW + 5000);
    /* A back-off longer than 60 s is not cut short. */
    fx.obs[6].backoff_ms = 120000;
    outbound_mark_down(&fx.cfg, 2, 6, NOW, "test");
    outbound_mark_down(&fx.cfg, 2, 6, NOW, "test");
    assert_int_equal(atomic_load(&h->down_until_ms), NOW + 120000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_least_connections),
        cmocka_unit_test(test_all_down),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
