/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_timeouts_test.c: the timeouts that bound a session whose peer
 * stalls. [http] body_timeout is on by default (60 s, nginx's
 * client_body_timeout) and takes values as small as 100 ms; iotimeout,
 * when the file does not set it, is none on loopback listeners and
 * CONFIG_PUBLIC_IOTIMEOUT_MS on listeners other hosts reach (not loopback,
 * or behind a PROXY header); set, it applies to every listener as written,
 * 0 included. Messages are compared in full.
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>

#include "config/config.h"
#include "fixture.h"
#include "util/compiler.h"

static void test_body_timeout_default(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "", NULL);
    assert_int_equal(x->c->http.body_ms, 60000);
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    config_free(x->c);
    x->c = NULL;
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    assert_int_equal(x->c->http.body_ms, 60000);
}

static void test_body_timeout_values(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "[http]\nbody_timeout = 100ms\n", NULL);
    assert_int_equal(x->c->http.body_ms, 100);
    expect_load_ok(x, "[http]\nbody_timeout = 24h\n", NULL);
    assert_int_equal(x->c->http.body_ms, 86400000);
    expect_load_ok(x, "[http]\nbody_timeout = 5\n", NULL);
    assert_int_equal(x->c->http.body_ms, 5000);
    /* the other HTTP timeouts are untouched by it */
    assert_int_equal(x->c->http.response_ms, 60000);
    assert_int_equal(x->c->http.keepalive_ms, 60000);
}

static void test_body_timeout_bad(void **state)
{
    struct ctx *x = *state;
    const char *expect = "(expected a duration from 100ms to 24h)";
    expect_load_fails(x, "[http]\nbody_timeout = 99ms\n", NULL, 1);
    expect_msg(x, 0, "%s:2: http.body_timeout: '99ms' is out of range %s", x->path, expect);
    expect_load_fails(x, "[http]\nbody_timeout = 0\n", NULL, 1);
    expect_msg(x, 0, "%s:2: http.body_timeout: '0' is out of range %s", x->path, expect);
    expect_load_fails(x, "[http]\nbody_timeout = 25h\n", NULL, 1);
    expect_msg(x, 0, "%s:2: http.body_timeout: '25h' is out of range %s", x->path, expect);
    expect_load_fails(x, "[http]\nbody_timeout = soon\n", NULL, 1);
    expect_msg(x, 0, "%s:2: http.body_timeout: 'soon' is not a duration %s", x->path, expect);
}

static void test_iotimeout_default_by_listener(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "open_proxy = yes\n"
                   "listen = 127.0.0.1:1080, [::1]:1080, 0.0.0.0:1081, 192.0.2.1:1080, [::]:1082\n"
                   "listen = 127.0.0.2:1083 proxy_protocol=v1\n"
                   "proxy_protocol_from = 127.0.0.1\n",
                   NULL);
    const struct config *c = x->c;
    assert_int_equal(c->nlisten, 6);
    assert_int_equal(c->iotimeout_ms, 0); /* not set */
    assert_int_equal(c->listen[0].iotimeout_ms, 0);
    assert_int_equal(c->listen[1].iotimeout_ms, 0);
    assert_int_equal(c->listen[2].iotimeout_ms, CONFIG_PUBLIC_IOTIMEOUT_MS);
    assert_int_equal(c->listen[3].iotimeout_ms, CONFIG_PUBLIC_IOTIMEOUT_MS);
    assert_int_equal(c->listen[4].iotimeout_ms, CONFIG_PUBLIC_IOTIMEOUT_MS);
    /* loopback, but the clients are wherever the load balancer's are */
    assert_int_equal(c->listen[5].iotimeout_ms, CONFIG_PUBLIC_IOTIMEOUT_MS);
    assert_int_equal(CONFIG_PUBLIC_IOTIMEOUT_MS, 3600000);
}

static void test_iotimeout_set_applies_everywhere(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x, "open_proxy = yes\nlisten = 127.0.0.1:1080, 0.0.0.0:1081\niotimeout = 0\n",
                   NULL);
    assert_int_equal(x->c->listen[0].iotimeout_ms, 0);
    assert_int_equal(x->c->listen[1].iotimeout_ms, 0); /* 0 said out loud: none */
    expect_load_ok(x, "open_proxy = yes\nlisten = 127.0.0.1:1080, 0.0.0.0:1081\niotimeout = 5m\n",
                   NULL);
    assert_int_equal(x->c->iotimeout_ms, 300000);
    assert_int_equal(x->c->listen[0].iotimeout_ms, 300000);
    assert_int_equal(x->c->listen[1].iotimeout_ms, 300000);
}

static void test_iotimeout_default_with_cli_listen(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.listen[0] = "0.0.0.0:1080";
    cli.listen[1] = "127.0.0.1:1081";
    cli.nlisten = 2;
    expect_load_ok(x, "open_proxy = yes\nlisten = 127.0.0.1:9\n", &cli);
    assert_int_equal(x->c->nlisten, 2);
    assert_int_equal(x->c->listen[0].iotimeout_ms, CONFIG_PUBLIC_IOTIMEOUT_MS);
    assert_int_equal(x->c->listen[1].iotimeout_ms, 0);
    /* the built-in default listener is loopback */
    expect_load_ok(x, "", NULL);
    assert_int_equal(x->c->listen[0].iotimeout_ms, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_body_timeout_default),
        T(test_body_timeout_values),
        T(test_body_timeout_bad),
        T(test_iotimeout_default_by_listener),
        T(test_iotimeout_set_applies_everywhere),
        T(test_iotimeout_default_with_cli_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
