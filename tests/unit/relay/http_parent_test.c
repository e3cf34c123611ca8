/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_parent_test.c: the pool key of connections to an HTTP parent
 * (relay/http_parent.c): it names the outbound and where its parent is (a
 * reload that points the name elsewhere finds none of the old
 * connections), cannot be mistaken for an origin's "host:port@N" key, and
 * a key that does not fit is refused rather than cut.
 */
#include "harness.h"

#include "relay/http_parent.h"
#include "relay/upstream_pool.h"

static void test_key(void **state)
{
    (void)state;
    struct config_outbound obs[3];
    memset(obs, 0, sizeof(obs));
    snprintf(obs[2].name, sizeof(obs[2].name), "web");
    snprintf(obs[2].host, sizeof(obs[2].host), "proxy.example");
    obs[2].port = 3128;
    obs[2].kind = OUTBOUND_KIND_HTTP;
    struct config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.outbounds = obs;
    cfg.noutbounds = 3;
    char key[UPSTREAM_KEY_MAX];
    assert_int_equal(http_parent_key(&cfg, 2, key, sizeof(key)), 0);
    assert_string_equal(key, "parent:web@proxy.example:3128");
    /* Another parent under the same name: another key. */
    obs[2].port = 8080;
    assert_int_equal(http_parent_key(&cfg, 2, key, sizeof(key)), 0);
    assert_string_equal(key, "parent:web@proxy.example:8080");
    /* Exactly fitting, and one byte short. */
    size_t n = strlen(key) + 1;
    assert_int_equal(http_parent_key(&cfg, 2, key, n), 0);
    assert_int_equal(http_parent_key(&cfg, 2, key, n - 1), -1);
    /* The longest name and host do not fit a pool key: refused. */
    memset(obs[2].host, 'h', sizeof(obs[2].host) - 1);
    obs[2].host[sizeof(obs[2].host) - 1] = '\0';
    memset(obs[2].name, 'n', sizeof(obs[2].name) - 1);
    obs[2].name[sizeof(obs[2].name) - 1] = '\0';
    assert_int_equal(http_parent_key(&cfg, 2, key, sizeof(key)), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
