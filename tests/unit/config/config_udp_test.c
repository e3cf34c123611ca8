/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config_udp_test.c: the [udp] section of config_load(). Its limits are
 * lenient on purpose: a zero, negative or malformed value keeps the default
 * and an oversized one clamps to the maximum, each with a warning
 * "FILE:LINE: udp.KEY: ..." in cfg->warnings, while the load still succeeds.
 * advertise and ports are strict: a bad value is an error like any other
 * key's. Messages are compared in full: they are what an operator reads.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>

#include "config/config.h"
#include "fixture.h"
#include "util/compiler.h"

/* Loads with no error and exactly nwarn warnings. */
static void load_warns(struct ctx *x, const char *text, size_t nwarn)
{
    int rc = load_text(x, text, NULL);
    if (rc != 0) {
        dump("error", &x->errs);
        fail_msg("config_load failed (%d) on:\n%s", rc, text);
    }
    assert_int_equal(x->errs.n, 0);
    if (x->c->warnings.n != nwarn) {
        dump("warning", &x->c->warnings);
        fail_msg("%zu warnings, expected %zu, on:\n%s", x->c->warnings.n, nwarn, text);
    }
}

static void load_ok(struct ctx *x, const char *text)
{
    load_warns(x, text, 0);
}

static void load_fails(struct ctx *x, const char *text, size_t nerr)
{
    expect_load_fails(x, text, NULL, nerr);
}

#define expect_warn(x, i, ...) expect_line(&(x)->c->warnings, (i), __VA_ARGS__)
#define expect_err(x, i, ...)  expect_line(&(x)->errs, (i), __VA_ARGS__)

static void expect_udp_defaults(const struct config_udp *u)
{
    assert_int_equal(u->associations, 100);
    assert_int_equal(u->destinations, 100);
    assert_int_equal(u->idle_ms, 60000);
    assert_int_equal(u->max_datagram, 9012);
    assert_int_equal(u->queue, 64);
    assert_int_equal(u->tunnel_queue, 16);
    assert_int_equal(u->tunnel_bytes, 262144);
    assert_int_equal(u->advertise.family, 0);
    assert_int_equal(u->port_lo, 0);
    assert_int_equal(u->port_hi, 0);
    assert_true(u->gso);
    assert_true(u->gro);
}

/* The limit keys: name in the file, what the default reads as in a
 * warning, the "expected" text, and where the value lands. */
struct limit {
    const char *key;
    const char *dflt; /* as printed: "100", "60s" */
    const char *expect;
    const char *max; /* as printed after a clamp */
    size_t off;
    uint32_t dflt_val, max_val;
};

#define UOFF(f) offsetof(struct config, udp.f)

static const struct limit limits[] = {
    {"associations", "100", "1..100000", "100000", UOFF(associations), 100, 100000},
    {"destinations", "100", "1..65536", "65536", UOFF(destinations), 100, 65536},
    {"idle", "60s", "a duration from 500ms to 24h", "86400s", UOFF(idle_ms), 60000, 86400000},
    {"max_datagram", "9012", "11..65507 bytes", "65507", UOFF(max_datagram), 9012, 65507},
    {"queue", "64", "1..4096", "4096", UOFF(queue), 64, 4096},
    {"tunnel_queue", "16", "1..1024", "1024", UOFF(tunnel_queue), 16, 1024},
    {"tunnel_queue_bytes", "262144", "1k..16m bytes", "16777216", UOFF(tunnel_bytes), 262144,
     16777216},
};

static uint32_t field(const struct config *c, const struct limit *l)
{
    uint32_t v;
    memcpy(&v, (const char *)c + l->off, sizeof(v));
    return v;
}

/* ---- defaults and valid values ------------------------------------------ */

static void test_defaults(void **state)
{
    struct ctx *x = *state;
    struct config_cli cli;
    memset(&cli, 0, sizeof(cli));
    assert_int_equal(config_load(&cli, &x->c, &x->errs), 0);
    expect_udp_defaults(&x->c->udp);
    assert_int_equal(x->c->warnings.n, 0);

    load_ok(x, "");
    expect_udp_defaults(&x->c->udp);
    load_ok(x, "[udp]\n");
    expect_udp_defaults(&x->c->udp);
    load_ok(x, "workers = 2\n[udp]\n# nothing\n[auth]\n");
    expect_udp_defaults(&x->c->udp);
}

static void test_every_key_valid(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "workers = 2\n"
               "[udp]\n"
               "associations = 5\n"
               "destinations = 7\n"
               "idle = 30s\n"
               "max_datagram = 600\n"
               "queue = 10\n"
               "advertise = 203.0.113.9\n"
               "ports = 40000-40999\n");
    const struct config_udp *u = &x->c->udp;
    assert_int_equal(u->associations, 5);
    assert_int_equal(u->destinations, 7);
    assert_int_equal(u->idle_ms, 30000);
    assert_int_equal(u->max_datagram, 600);
    assert_int_equal(u->queue, 10);
    assert_int_equal(u->advertise.family, AF_INET);
    const uint8_t ip[4] = {203, 0, 113, 9};
    assert_memory_equal(u->advertise.ip, ip, 4);
    assert_int_equal(u->port_lo, 40000);
    assert_int_equal(u->port_hi, 40999);
    assert_int_equal(x->c->workers, 2);
}

/* The smallest and largest value of each limit are taken silently. */
static void test_limits_at_bounds(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "[udp]\nassociations = 1\ndestinations = 1\nidle = 1s\nmax_datagram = 11\n"
               "queue = 1\n");
    const struct config_udp *u = &x->c->udp;
    assert_int_equal(u->associations, 1);
    assert_int_equal(u->destinations, 1);
    assert_int_equal(u->idle_ms, 1000);
    assert_int_equal(u->max_datagram, 11);
    assert_int_equal(u->queue, 1);

    load_ok(x, "[udp]\nassociations = 100000\ndestinations = 65536\nidle = 24h\n"
               "max_datagram = 65507\nqueue = 4096\n");
    u = &x->c->udp;
    assert_int_equal(u->associations, 100000);
    assert_int_equal(u->destinations, 65536);
    assert_int_equal(u->idle_ms, 86400000);
    assert_int_equal(u->max_datagram, 65507);
    assert_int_equal(u->queue, 4096);
}

/* Durations: a bare number is seconds; ms/s/m/h suffixes. Sizes take the
 * binary suffixes. */
static void test_value_forms(void **state)
{
    struct ctx *x = *state;
    static const struct {
        const char *v;
        uint32_t ms;
    } idle[] = {{"500", 500000},     {"1", 1000},        {"30s", 30000},
                {"1500ms", 1500},    {"2m", 120000},     {"1h", 3600000},
                {"86400", 86400000}, {"\"45s\"", 45000}, {"500ms", 500}};
    for (size_t i = 0; i < sizeof(idle) / sizeof(idle[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[udp]\nidle = %s\n", idle[i].v);
        load_ok(x, text);
        if (x->c->udp.idle_ms != idle[i].ms)
            fail_msg("idle = %s: got %u ms, want %u", idle[i].v, x->c->udp.idle_ms, idle[i].ms);
    }
    load_ok(x, "[udp]\nqueue = 1k\ndestinations = 64KiB\nmax_datagram = 8k\n"
               "associations = 2K  # inline comment\n");
    assert_int_equal(x->c->udp.queue, 1024);
    assert_int_equal(x->c->udp.destinations, 65536);
    assert_int_equal(x->c->udp.max_datagram, 8192);
    assert_int_equal(x->c->udp.associations, 2048);
}

/* ---- lenient limits: fall back or clamp, with a warning ------------------ */

static void test_bad_values_keep_default(void **state)
{
    struct ctx *x = *state;
    static const char *const bad[] = {"0", "-5", "abc", "5x", "1.5", "0x10", "-0", "+3", ""};
    for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
        const struct limit *l = &limits[k];
        for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
            char text[256];
            snprintf(text, sizeof(text), "workers = 1\n[udp]\n%s = %s\n", l->key, bad[b]);
            load_warns(x, text, 1);
            expect_warn(x, 0, "%s:3: udp.%s: '%s' is not valid (expected %s); using the default %s",
                        x->path, l->key, bad[b], l->expect, l->dflt);
            if (field(x->c, l) != l->dflt_val)
                fail_msg("udp.%s = %s: value %u, want the default %u", l->key, bad[b],
                         field(x->c, l), l->dflt_val);
        }
    }
}

/* Below a non-zero minimum is not valid either. */
static void test_below_minimum_keeps_default(void **state)
{
    struct ctx *x = *state;
    load_warns(x, "[udp]\nmax_datagram = 10\n", 1);
    expect_warn(x, 0,
                "%s:2: udp.max_datagram: '10' is not valid (expected 11..65507 bytes); "
                "using the default 9012",
                x->path);
    assert_int_equal(x->c->udp.max_datagram, 9012);
    load_warns(x, "[udp]\nidle = 499ms\n", 1);
    expect_warn(x, 0,
                "%s:2: udp.idle: '499ms' is not valid (expected a duration from 500ms to 24h); "
                "using the default 60s",
                x->path);
    assert_int_equal(x->c->udp.idle_ms, 60000);
}

static void test_oversized_values_clamp(void **state)
{
    struct ctx *x = *state;
    static const struct {
        const char *key, *v;
    } big[] = {
        {"associations", "100001"},
        {"associations", "4294967296"}, /* 2^32: no wrap to 0 */
        {"associations", "1g"},
        {"destinations", "70000"},
        {"idle", "48h"},
        {"idle", "86401"},
        {"max_datagram", "100000"},
        {"max_datagram", "65508"},
        {"max_datagram", "64k"},
        {"queue", "5000"},
        {"tunnel_queue", "1025"},
        {"tunnel_queue_bytes", "17m"},
    };
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        const struct limit *l = NULL;
        for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++)
            if (strcmp(limits[k].key, big[i].key) == 0)
                l = &limits[k];
        assert_non_null(l);
        char text[256];
        snprintf(text, sizeof(text), "[udp]\n\n%s = %s\n", l->key, big[i].v);
        load_warns(x, text, 1);
        expect_warn(x, 0, "%s:3: udp.%s: '%s' is above the maximum; using %s", x->path, l->key,
                    big[i].v, l->max);
        if (field(x->c, l) != l->max_val)
            fail_msg("udp.%s = %s: value %u, want the maximum %u", l->key, big[i].v, field(x->c, l),
                     l->max_val);
    }
}

/* A number too large for 64 bits (or one whose unit overflows it) is still
 * a number above the maximum: docs/configuration.md and set_limit()'s own
 * contract say it clamps ("zero, negative or malformed" keep the default).
 * Every case is tried before failing, so the report lists them all. */
static void test_huge_values_clamp(void **state)
{
    struct ctx *x = *state;
    static const struct {
        const char *key, *v, *max;
        size_t off;
        uint32_t max_val;
    } huge[] = {
        {"associations", "99999999999999999999999", "100000", UOFF(associations), 100000},
        {"destinations", "18446744073709551616", "65536", UOFF(destinations), 65536},
        {"max_datagram", "100000000000000g", "65507", UOFF(max_datagram), 65507},
        {"idle", "99999999999999999h", "86400s", UOFF(idle_ms), 86400000},
    };
    size_t bad = 0;
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        char text[256], want[512];
        snprintf(text, sizeof(text), "[udp]\n%s = %s\n", huge[i].key, huge[i].v);
        load_warns(x, text, 1);
        snprintf(want, sizeof(want), "%s:2: udp.%s: '%s' is above the maximum; using %s", x->path,
                 huge[i].key, huge[i].v, huge[i].max);
        uint32_t v;
        memcpy(&v, (const char *)x->c + huge[i].off, sizeof(v));
        if (strcmp(x->c->warnings.msg[0], want) != 0 || v != huge[i].max_val) {
            print_message("  udp.%s = %s: value %u (want %u)\n    got:  %s\n    want: %s\n",
                          huge[i].key, huge[i].v, v, huge[i].max_val, x->c->warnings.msg[0], want);
            bad++;
        }
    }
    if (bad)
        fail_msg("%zu oversized value(s) fell back to the default instead of clamping", bad);
}

/* Every problem gets its own warning at its own line, in file order; the
 * good values around them still apply. */
static void test_warnings_accumulate(void **state)
{
    struct ctx *x = *state;
    load_warns(x,
               "# limits\n"
               "[udp]\n"
               "associations = 0\n"
               "destinations = 3\n"
               "idle = soon\n"
               "max_datagram = 100000\n"
               "queue = -5\n",
               4);
    expect_warn(x, 0,
                "%s:3: udp.associations: '0' is not valid (expected 1..100000); "
                "using the default 100",
                x->path);
    expect_warn(x, 1,
                "%s:5: udp.idle: 'soon' is not valid (expected a duration from 500ms to 24h); "
                "using the default 60s",
                x->path);
    expect_warn(x, 2, "%s:6: udp.max_datagram: '100000' is above the maximum; using 65507",
                x->path);
    expect_warn(x, 3, "%s:7: udp.queue: '-5' is not valid (expected 1..4096); using the default 64",
                x->path);
    assert_int_equal(x->c->udp.associations, 100);
    assert_int_equal(x->c->udp.destinations, 3);
    assert_int_equal(x->c->udp.idle_ms, 60000);
    assert_int_equal(x->c->udp.max_datagram, 65507);
    assert_int_equal(x->c->udp.queue, 64);

    /* Warnings belong to the config they came with: a clean load has none. */
    load_ok(x, "[udp]\nqueue = 8\n");
    assert_int_equal(x->c->udp.queue, 8);
}

/* A warning never hides an error, nor turns into one. */
/* With an error the load fails, and the warnings come along after the
 * errors (so --check shows everything wrong with the file at once). */
static void test_warning_with_error(void **state)
{
    struct ctx *x = *state;
    load_fails(x, "[udp]\nqueue = 0\nadvertise = nowhere\n", 2);
    expect_err(x, 0,
               "%s:3: udp.advertise: 'nowhere' is not a numeric IP address a client can send to",
               x->path);
    expect_err(
        x, 1, "warning: %s:2: udp.queue: '0' is not valid (expected 1..4096); using the default 64",
        x->path);
}

/* A limit set twice is an error like any other key. */
static void test_limit_set_twice(void **state)
{
    struct ctx *x = *state;
    load_fails(x, "[udp]\nqueue = 1\nqueue = 2\n", 1);
    expect_err(x, 0, "%s:3: udp.queue: set twice (first on line 2)", x->path);
}

/* ---- advertise and ports: strict ----------------------------------------- */

static void test_advertise(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "[udp]\nadvertise = 198.51.100.20\n");
    assert_int_equal(x->c->udp.advertise.family, AF_INET);
    const uint8_t ip4[4] = {198, 51, 100, 20};
    assert_memory_equal(x->c->udp.advertise.ip, ip4, 4);

    load_ok(x, "[udp]\nadvertise = 2001:db8::7\n");
    assert_int_equal(x->c->udp.advertise.family, AF_INET6);
    uint8_t ip6[16];
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::7", ip6), 1);
    assert_memory_equal(x->c->udp.advertise.ip, ip6, 16);

    static const char *const bad[] = {"example.com", "1.2.3.4:80", "300.1.1.1", "1.2.3", "[::1]",
                                      "::1::2",      "localhost",  "0.0.0.0",   "::"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[udp]\nadvertise = %s\n", bad[i]);
        load_fails(x, text, 1);
        expect_err(x, 0,
                   "%s:2: udp.advertise: '%s' is not a numeric IP address a client can send to",
                   x->path, bad[i]);
    }
}

static void test_ports(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "[udp]\nports = 40000-40999\n");
    assert_int_equal(x->c->udp.port_lo, 40000);
    assert_int_equal(x->c->udp.port_hi, 40999);
    load_ok(x, "[udp]\nports = 5-5\n");
    assert_int_equal(x->c->udp.port_lo, 5);
    assert_int_equal(x->c->udp.port_hi, 5);
    load_ok(x, "[udp]\nports = 1-65535\n");
    assert_int_equal(x->c->udp.port_lo, 1);
    assert_int_equal(x->c->udp.port_hi, 65535);

    /* No dash at all. */
    static const char *const shape[] = {"x", "40000", "12345678901234567890-1"};
    for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[udp]\nports = %s\n", shape[i]);
        load_fails(x, text, 1);
        expect_err(x, 0,
                   "%s:2: udp.ports: '%s' is not a port range (expected LOW-HIGH, e.g. "
                   "40000-40999)",
                   x->path, shape[i]);
    }
    /* A dash, but not a range within 1..65535. */
    static const char *const range[] = {"5-4", "0-10", "10-65536", "-5",
                                        "5-",  "a-b",  "1-2-3",    "-1-5"};
    for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[udp]\nports = %s\n", range[i]);
        load_fails(x, text, 1);
        expect_err(x, 0,
                   "%s:2: udp.ports: '%s' is not a port range (expected LOW-HIGH within "
                   "1..65535)",
                   x->path, range[i]);
    }
}

/* forward = [ADDR:]PORT HOST:PORT repeats; ADDR defaults to 127.0.0.1. */
static void test_forwards(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "[udp]\nforward = 5353 1.1.1.1:53\nforward = [::1]:5354 dns.example:53\n"
               "forward = 0.0.0.0:7000 [2001:db8::1]:7\n");
    const struct config_udp *u = &x->c->udp;
    assert_int_equal(u->nforwards, 3);
    char b[ADDR_STRLEN];
    assert_string_equal(addr_format(&u->forwards[0].listen, b, sizeof(b)), "127.0.0.1:5353");
    assert_string_equal(u->forwards[0].host, "1.1.1.1");
    assert_int_equal(u->forwards[0].port, 53);
    assert_string_equal(addr_format(&u->forwards[1].listen, b, sizeof(b)), "[::1]:5354");
    assert_string_equal(u->forwards[1].host, "dns.example");
    assert_string_equal(addr_format(&u->forwards[2].listen, b, sizeof(b)), "0.0.0.0:7000");
    assert_string_equal(u->forwards[2].host, "2001:db8::1");
    assert_int_equal(u->forwards[2].port, 7);

    static const struct {
        const char *v, *why;
    } bad[] = {
        {"5353", "is not two words"},
        {"x:5353 h:53", "names no listen address and port"},
        {"0 h:53", "names no listen address and port"},
        {"5353 h", "names no destination HOST:PORT"},
        {"5353 h:0", "names no destination HOST:PORT"},
        {"5353 2001:db8::1:53", "names no destination HOST:PORT"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[udp]\nforward = %s\n", bad[i].v);
        load_fails(x, text, 1);
        expect_err(x, 0, "%s:2: udp.forward: '%s' %s (expected [ADDR:]PORT HOST:PORT)", x->path,
                   bad[i].v, bad[i].why);
    }
    char text[2048] = "[udp]\n";
    for (int i = 0; i < CONFIG_UDP_FORWARDS_MAX + 1; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "forward = %d h:53\n", 6000 + i);
    load_fails(x, text, 1);
    expect_err(x, 0,
               "%s:%d: udp.forward: '%d h:53' is one forward too many (at most 32) "
               "(expected [ADDR:]PORT HOST:PORT)",
               x->path, CONFIG_UDP_FORWARDS_MAX + 2, 6000 + CONFIG_UDP_FORWARDS_MAX);
}

/* ---- keys ---------------------------------------------------------------- */

static void test_unknown_key_in_udp(void **state)
{
    struct ctx *x = *state;
    load_fails(x, "[udp]\ndestination = 5\n", 1);
    expect_err(x, 0, "%s:2: udp.destination: unknown key (did you mean 'udp.destinations'?)",
               x->path);
    load_fails(x, "[udp]\n\nidel = 5s\n", 1);
    expect_err(x, 0, "%s:3: udp.idel: unknown key (did you mean 'udp.idle'?)", x->path);
    load_fails(x, "[udp]\nmax_datagrams = 600\n", 1);
    expect_err(x, 0, "%s:2: udp.max_datagrams: unknown key (did you mean 'udp.max_datagram'?)",
               x->path);
    load_fails(x, "[udp]\nfrobnicate = 1\n", 1);
    expect_err(x, 0, "%s:2: udp.frobnicate: unknown key", x->path);
    /* An [auth] key in [udp] is not found there, but the hint says where. */
    load_fails(x, "[udp]\nuserlist = users\n", 1);
    expect_err(x, 0, "%s:2: udp.userlist: unknown key (did you mean [auth] userlist?)", x->path);
}

/* Segmentation offload both ways: yes or no, anything else an error (a
 * switch has no safe default to fall back to, unlike a limit). */
static void test_offload_switches(void **state)
{
    struct ctx *x = *state;
    load_ok(x, "[udp]\ngso = no\ngro = no\n");
    assert_false(x->c->udp.gso);
    assert_false(x->c->udp.gro);
    load_ok(x, "[udp]\ngso = yes\ngro = no\n");
    assert_true(x->c->udp.gso);
    assert_false(x->c->udp.gro);
    load_ok(x, "[udp]\ngro = yes\n");
    assert_true(x->c->udp.gro);
    load_fails(x, "[udp]\n\ngro = maybe\n", 1);
    expect_err(x, 0, "%s:3: udp.gro: 'maybe' is not a boolean (expected yes or no)", x->path);
    load_fails(x, "[udp]\ngso = 2\n", 1);
    expect_err(x, 0, "%s:2: udp.gso: '2' is not a boolean (expected yes or no)", x->path);
}

/* The [udp] keys live in their section only. */
static void test_udp_key_outside_section(void **state)
{
    struct ctx *x = *state;
    load_fails(x, "max_datagram = 600\n", 1);
    expect_err(x, 0, "%s:1: max_datagram: unknown key (did you mean [udp] max_datagram?)", x->path);
    load_fails(x, "[auth]\nqueue = 5\n[udp]\n", 1);
    /* auth.queue exists but [auth] without a userlist is an error. */
    assert_non_null(strstr(x->errs.msg[0], "auth.queue"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_defaults),
        T(test_every_key_valid),
        T(test_limits_at_bounds),
        T(test_value_forms),
        T(test_bad_values_keep_default),
        T(test_below_minimum_keeps_default),
        T(test_oversized_values_clamp),
        T(test_huge_values_clamp),
        T(test_warnings_accumulate),
        T(test_warning_with_error),
        T(test_limit_set_twice),
        T(test_advertise),
        T(test_ports),
        T(test_forwards),
        T(test_unknown_key_in_udp),
        T(test_offload_switches),
        T(test_udp_key_outside_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
