/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_cache_test.c: the per-(route, protocol version) status cache of
 * relay/edge_cache: a fresh answer per version, one fetch at a time (the
 * others wait), the TTL, a failed fetch not retried for a while, a fetch
 * given up with no such pause, the least recently asked version making
 * room for a ninth, and the fallback to another version's answer.
 */
#include "harness.h"

#include "config/edge.h"
#include "relay/edge_cache.h"

#define TTL   1000
#define RETRY 5000

static struct edge_route_live live;
static struct edge_route route = {.live = &live};

static int setup(void **state)
{
    (void)state;
    memset(&live, 0, sizeof(live));
    pthread_mutex_init(&live.status_mu, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (unsigned i = 0; i < EDGE_STATUS_VERSIONS; i++)
        free(live.status[i].json);
    pthread_mutex_destroy(&live.status_mu);
    return 0;
}

static enum edge_look look(int32_t proto, uint64_t now, char **json)
{
    size_t len = 0;
    enum edge_look v = edge_cache_lookup(&route, proto, now, TTL, RETRY, json, &len);
    if (v == EDGE_LOOK_FRESH)
        assert_int_equal(len, strlen(*json));
    return v;
}

static void store(int32_t proto, const char *json, bool fetched, uint64_t now)
{
    edge_cache_store(&route, proto, (const uint8_t *)json, json ? strlen(json) : 0, fetched, now);
}

static void fresh_is(int32_t proto, uint64_t now, const char *want)
{
    char *json = NULL;
    assert_int_equal(look(proto, now, &json), EDGE_LOOK_FRESH);
    assert_string_equal(json, want);
    free(json);
}

static void test_one_fetch_per_version(void **state)
{
    (void)state;
    char *json;
    store(765, "{765}", false, 100); /* a check's answer */
    fresh_is(765, 200, "{765}");
    /* 767: the first asker fetches, the next ones wait for it. */
    assert_int_equal(look(767, 200, &json), EDGE_LOOK_FETCH);
    assert_int_equal(look(767, 210, &json), EDGE_LOOK_WAIT);
    assert_int_equal(look(767, 220, &json), EDGE_LOOK_WAIT);
    store(767, "{767}", true, 300);
    fresh_is(767, 310, "{767}");
    fresh_is(765, 310, "{765}"); /* never another version's answer */
    /* Past the TTL: fetched again, once. */
    assert_int_equal(look(767, 300 + TTL + 1, &json), EDGE_LOOK_FETCH);
    assert_int_equal(look(767, 300 + TTL + 2, &json), EDGE_LOOK_WAIT);
    /* The answer any-age for fallbacks: the version's, else the newest. */
    assert_int_equal(edge_cache_any(&route, 767, &json), 5);
    assert_string_equal(json, "{767}");
    free(json);
    assert_int_equal(edge_cache_any(&route, 4, &json), 5);
    assert_string_equal(json, "{767}");
    free(json);
}

static void test_failed_and_given_up(void **state)
{
    (void)state;
    char *json;
    assert_int_equal(look(760, 1000, &json), EDGE_LOOK_FETCH);
    store(760, NULL, true, 1100); /* failed */
    assert_int_equal(look(760, 1200, &json), EDGE_LOOK_NONE);
    assert_int_equal(look(760, 1100 + RETRY, &json), EDGE_LOOK_FETCH);
    store(760, NULL, true, 0); /* its client left: no pause */
    assert_int_equal(look(760, 1100 + RETRY + 1, &json), EDGE_LOOK_FETCH);
    assert_int_equal(edge_cache_any(&route, 760, &json), 0);
    assert_null(json);
}

static void test_eight_versions_least_recently_asked_goes(void **state)
{
    (void)state;
    char *json, text[16];
    for (int32_t v = 1; v <= EDGE_STATUS_VERSIONS; v++) {
        snprintf(text, sizeof(text), "{%d}", v);
        assert_int_equal(look(v, (uint64_t)v, &json), EDGE_LOOK_FETCH);
        store(v, text, true, (uint64_t)v);
    }
    fresh_is(1, 20, "{1}"); /* 1 asked again: 2 is now the least recent */
    assert_int_equal(look(9, 21, &json), EDGE_LOOK_FETCH);
    store(9, "{9}", true, 22);
    fresh_is(1, 23, "{1}");
    fresh_is(9, 23, "{9}");
    assert_int_equal(look(2, 24, &json), EDGE_LOOK_FETCH); /* 2 was dropped */
}

static void test_all_fetching_falls_back(void **state)
{
    (void)state;
    char *json;
    for (int32_t v = 1; v <= EDGE_STATUS_VERSIONS; v++)
        assert_int_equal(look(v, 10, &json), EDGE_LOOK_FETCH);
    assert_int_equal(look(99, 11, &json), EDGE_LOOK_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_fetch_per_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_and_given_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eight_versions_least_recently_asked_goes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_all_fetching_falls_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
