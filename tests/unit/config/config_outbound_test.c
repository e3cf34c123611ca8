/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_outbound_test.c: [outbound NAME] sections, "outbound =" and the
 * rules' "via": urls of every kind, credentials from a file, pools and
 * their members (nested, unknown, cyclic), and the messages that name the
 * line at fault.
 */
#include "harness.h"

#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl/rules.h"
#include "config/config.h"
#include "fixture.h"
#include "util/compiler.h"

static const struct config_outbound *ob(const struct config *c, const char *name)
{
    for (uint32_t i = 0; i < c->noutbounds; i++)
        if (!strcmp(c->outbounds[i].name, name))
            return &c->outbounds[i];
    fail_msg("no outbound %s", name);
    return NULL;
}

static void test_builtins_without_file(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    assert_int_equal(x->c->noutbounds, 2);
    assert_string_equal(x->c->outbounds[OUTBOUND_DIRECT].name, "direct");
    assert_string_equal(x->c->outbounds[OUTBOUND_REJECT].name, "reject");
    assert_int_equal(x->c->default_outbound, OUTBOUND_DIRECT);
    assert_int_equal(atomic_load(&x->c->ob_health[0].up), 1);
}

static void test_urls(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "outbound = h\n"
                   "[outbound a]\nurl = socks5://al%40ice:p%3Aw@10.0.0.2:1081\n"
                   "[outbound b]\nurl = socks5h://proxy.example\n"
                   "[outbound c]\nurl = socks4a://bob@[::1]:9\n"
                   "[outbound d]\nurl = http://proxy.example:3128/\n"
                   "[outbound h]\nurl = HTTPS://[2001:db8::1]\n"
                   "pin = sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
                   NULL);
    const struct config *c = x->c;
    const struct config_outbound *a = ob(c, "a");
    assert_int_equal(a->kind, OUTBOUND_KIND_SOCKS5);
    assert_false(a->remote_dns);
    assert_string_equal(a->host, "10.0.0.2");
    assert_int_equal(a->port, 1081);
    assert_string_equal(a->user, "al@ice");
    assert_string_equal(a->pass, "p:w");
    const struct config_outbound *b = ob(c, "b");
    assert_true(b->remote_dns);
    assert_int_equal(b->port, 1080);
    assert_null(b->user);
    const struct config_outbound *cc = ob(c, "c");
    assert_int_equal(cc->kind, OUTBOUND_KIND_SOCKS4);
    assert_string_equal(cc->host, "::1");
    assert_string_equal(cc->user, "bob");
    assert_null(cc->pass);
    assert_int_equal(ob(c, "d")->kind, OUTBOUND_KIND_HTTP);
    assert_int_equal(ob(c, "d")->port, 3128);
    const struct config_outbound *h = ob(c, "h");
    assert_int_equal(h->kind, OUTBOUND_KIND_HTTPS);
    assert_int_equal(h->port, 443);
    assert_true(h->has_pin);
    assert_int_equal(c->default_outbound, (uint16_t)(h - c->outbounds));
}

static void test_bad_urls(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound a]\nurl = ftp://x\n"
                      "[outbound b]\nurl = socks5://\n"
                      "[outbound c]\nurl = socks5://x:0\n"
                      "[outbound d]\nurl = http://x/path\n"
                      "[outbound e]\nurl = socks4a://u:p@x\n"
                      "[outbound f]\nurl = socks5://%zz@x\n"
                      "[outbound g]\nurl = socks5://[::1\n"
                      "[outbound h]\nurl = socks5://bad host\n",
                      NULL, 8);
    expect_msg(x, 0,
               "%s:2: outbound a.url: 'ftp://x': expected socks5://, socks5h://, socks4a://, "
               "http:// or https:// (or direct, reject)",
               x->path);
    expect_msg(x, 1, "%s:4: outbound b.url: no host (expected e.g. socks5://10.0.0.2:1080)",
               x->path);
    expect_msg(x, 2, "%s:6: outbound c.url: '0' is not a port (1-65535)", x->path);
    expect_msg(x, 3,
               "%s:8: outbound d.url: '/path': a parent proxy's url has no path, query or "
               "fragment",
               x->path);
    expect_msg(x, 4, "%s:10: outbound e.url: socks4a has a user id but no password", x->path);
    expect_msg(x, 5,
               "%s:12: outbound f.url: bad user or password in the url (at most 255 bytes each, "
               "%%XX escapes, not empty)",
               x->path);
    expect_msg(x, 6, "%s:14: outbound g.url: '[' without ']' around an IPv6 address", x->path);
    expect_msg(x, 7,
               "%s:16: outbound h.url: 'bad host' is not a host name or address (IPv6 goes in "
               "brackets)",
               x->path);
}

static void test_credentials_file(void **state)
{
    struct ctx *x = *state;
    char cred[HARNESS_PATH_MAX];
    harness_path(cred, sizeof(cred), x->dir, "cred");
    harness_write_file(cred, "# the parent's account\n\nuser:pa:ss\n");
    expect_load_ok(x, "[outbound a]\nurl = http://p:3128\ncredentials_file = cred\n", NULL);
    assert_string_equal(ob(x->c, "a")->user, "user");
    assert_string_equal(ob(x->c, "a")->pass, "pa:ss");
    harness_write_file(cred, "# nothing\n");
    expect_load_fails(x, "[outbound a]\nurl = http://p:3128\ncredentials_file = cred\n", NULL, 1);
    expect_msg(x, 0, "%s:3: outbound a.credentials_file: %s holds no line USER:PASSWORD", x->path,
               cred);
    unlink(cred);
    expect_load_fails(x, "[outbound a]\nurl = http://p:3128\ncredentials_file = cred\n", NULL, 1);
    expect_msg(x, 0, "%s:3: outbound a.credentials_file: cannot read %s: %s", x->path, cred,
               strerror(ENOENT));
}

static void test_pools(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "[outbound a]\nurl = socks5://127.0.0.1:1\n"
                   "[outbound b]\nurl = http://127.0.0.1:2\n"
                   "[outbound inner]\nmembers = b, direct\n"
                   "[outbound p]\nmembers = a, inner, b\nstrategy = round-robin\n"
                   "health_check = 2s\nhealth_target = 127.0.0.1:80\nbackoff = 500ms\n"
                   "[outbound names]\nmembers = b\n",
                   NULL);
    const struct config *c = x->c;
    const struct config_outbound *p = ob(c, "p");
    assert_int_equal(p->kind, OUTBOUND_KIND_POOL);
    assert_int_equal(p->strategy, OUTBOUND_ROUND_ROBIN);
    assert_int_equal(p->health_ms, 2000);
    assert_string_equal(p->health_host, "127.0.0.1");
    assert_int_equal(p->health_port, 80);
    assert_int_equal(p->backoff_ms, 500);
    /* The inner pool is flattened in order, b counted once. */
    assert_int_equal(p->nmembers, 3);
    assert_string_equal(c->outbounds[p->members[0]].name, "a");
    assert_string_equal(c->outbounds[p->members[1]].name, "b");
    assert_string_equal(c->outbounds[p->members[2]].name, "direct");
    /* A pool resolves names remotely when every member does. */
    assert_false(p->remote_dns);
    assert_true(ob(c, "names")->remote_dns);
}

static void test_pool_errors(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound a]\nmembers = b\n"
                      "[outbound b]\nmembers = a\n",
                      NULL, 2);
    expect_msg(x, 0, "%s:2: outbound a: members: a cycle: a -> b -> a", x->path);
    expect_msg(x, 1, "%s:4: outbound b: members: a cycle: b -> a -> b", x->path);
    expect_load_fails(x, "[outbound p]\nmembers = nope, reject\n", NULL, 2);
    expect_msg(x, 0, "%s:2: outbound p: members: 'nope' is not an outbound", x->path);
    expect_msg(x, 1,
               "%s:2: outbound p: members: 'reject' cannot be a member (a pool whose members "
               "all fail refuses anyway)",
               x->path);
    expect_load_fails(x, "[outbound p]\nmembers = direct\nhealth_check = 1s\n", NULL, 1);
    expect_msg(x, 0,
               "%s:1: outbound p: health_check needs health_target = HOST:PORT (what each check "
               "CONNECTs to through the member)",
               x->path);
    expect_load_fails(x, "[outbound p]\nurl = socks5://x\nstrategy = round-robin\n", NULL, 1);
    expect_msg(x, 0,
               "%s:1: outbound p: strategy, health_check and health_target are for pools "
               "(members = ...)",
               x->path);
}

static void test_names_and_sections(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound direct]\n"
                      "[outbound a b]\n"
                      "[outbound]\n"
                      "[outbound a]\nurl = socks5://x\nurl = socks5://y\nsecret = 1\n"
                      "[outbound a]\n",
                      NULL, 6);
    expect_msg(x, 0, "%s:1: [outbound direct] is built in and cannot be redefined (at built-in)",
               x->path);
    expect_msg(x, 1, "%s:2: outbound name 'a b': letters, digits, '-', '_' and '.' only", x->path);
    expect_msg(x, 2, "%s:3: [outbound] needs a name: [outbound NAME]", x->path);
    expect_msg(x, 3, "%s:6: outbound a.url: set twice in this section", x->path);
    expect_msg(
        x, 4,
        "%s:7: outbound a.secret: unknown key (known: url, members, strategy, "
        "health_check, health_target, backoff, connect_timeout, pin, ca_file, "
        "credentials_file, source, device, ip_preference, mux, tunnel_wait, fast_open, reverse, "
        "websocket)",
        x->path);
    expect_msg(x, 5, "%s:8: [outbound a] is defined twice (at %s:4)", x->path, x->path);
}

static void test_via(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(x,
                   "[outbound corp]\nurl = socks5://127.0.0.1:1\n"
                   "[rules]\nallow to *.corp.example via corp\nallow user alice via reject\n"
                   "allow\n",
                   NULL);
    const struct acl *a = x->c->acl;
    assert_int_equal(a->n, 3);
    assert_int_equal(a->rules[0].via_index, 2);
    assert_int_equal(a->rules[1].via_index, OUTBOUND_REJECT);
    assert_int_equal(a->rules[2].via_index, -1);
    expect_load_fails(x, "outbound = nope\n[rules]\nallow via zzz\ndeny via direct\n", NULL, 3);
    expect_msg(x, 0, "%s:4: rule: 'via' goes with allow: a denied session leaves nowhere", x->path);
    expect_msg(x, 1, "%s:1: outbound: 'nope' is not an outbound (known: direct, reject)", x->path);
    expect_msg(x, 2, "ferry.conf:3: rule: via 'zzz' is not an outbound (known: direct, reject)");
}

static void test_checks_that_hang_together(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound a]\nurl = http://x\npin = "
                      "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
                      "[outbound b]\nurl = https://x\nca_file = /etc/ssl/x.pem\npin = "
                      "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
                      "[outbound c]\nurl = https://x\npin = sha256//short\n",
                      NULL, 3);
    expect_msg(x, 0,
               "%s:10: outbound c.pin: 'sha256//short' is not a pin (expected sha256// and the "
               "base64 of 32 bytes, as 'ferry cert' or curl's --pinnedpubkey write it)",
               x->path);
    expect_msg(x, 1, "%s:1: outbound a: pin and ca_file are for https:// parents", x->path);
    expect_msg(x, 2, "%s:4: outbound b: pin and ca_file: choose one (a pin replaces the CA check)",
               x->path);
}

/* mux and tunnel_wait: defaults, values, and the ones that make no sense. */
static void test_mux(void **state)
{
    struct ctx *x = *state;
    expect_load_ok(
        x,
        "[outbound a]\nurl = https://x\npin = "
        "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
        "[outbound b]\nurl = https://x\nmux = h2\ntunnel_wait = 2s\nfast_open = yes\npin = "
        "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
        "[outbound c]\nurl = https://x\nmux = http1\npin = "
        "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
        NULL);
    const struct config_outbound *a = ob(x->c, "a"), *b = ob(x->c, "b"), *c = ob(x->c, "c");
    assert_int_equal(a->mux, OUTBOUND_MUX_AUTO);
    assert_int_equal(a->tunnel_wait_ms, 10000);
    assert_non_null(a->tls_h2);
    assert_int_equal(b->mux, OUTBOUND_MUX_H2);
    assert_int_equal(b->tunnel_wait_ms, 2000);
    assert_false(a->fast_open); /* off unless asked for */
    assert_true(b->fast_open);
    assert_int_equal(c->mux, OUTBOUND_MUX_HTTP1);
    assert_null(c->tls_h2);
}

static void test_mux_errors(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound a]\nurl = https://x\nmux = h3\n"
                      "[outbound b]\nurl = http://x\nmux = h2\n",
                      NULL, 2);
    expect_msg(x, 0, "%s:3: outbound a.mux: 'h3': expected auto, h2 or http1", x->path);
    expect_msg(x, 1, "%s:4: outbound b: mux is for https:// parents", x->path);
}

/* fast_open: yes or no, on an https:// parent spoken HTTP/2 only. */
static void test_fast_open_errors(void **state)
{
    struct ctx *x = *state;
    expect_load_fails(x,
                      "[outbound a]\nurl = https://x\nfast_open = soon\n"
                      "[outbound b]\nurl = socks5://x\nfast_open = yes\n"
                      "[outbound c]\nurl = https://x\nmux = http1\nfast_open = yes\n",
                      NULL, 3);
    expect_msg(x, 0, "%s:3: outbound a.fast_open: 'soon': expected yes or no", x->path);
    expect_msg(x, 1, "%s:4: outbound b: fast_open is for https:// parents spoken HTTP/2", x->path);
    expect_msg(x, 2,
               "%s:7: outbound c: fast_open sends the first bytes on the HTTP/2 stream: not with "
               "mux = http1",
               x->path);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_builtins_without_file),
        T(test_urls),
        T(test_bad_urls),
        T(test_credentials_file),
        T(test_pools),
        T(test_pool_errors),
        T(test_names_and_sections),
        T(test_via),
        T(test_checks_that_hang_together),
        T(test_mux),
        T(test_mux_errors),
        T(test_fast_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
