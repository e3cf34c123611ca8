/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap_test.c: the one table of outcomes (relay/errmap.c), read as a
 * table: every outcome's SOCKS5 REP (RFC 1928 section 6), SOCKS4 CD, HTTP
 * status and text, and metrics outcome; every errno a connect can fail
 * with lands on the outcome an operator would look for; DNS failures are
 * "does not resolve"; errno names are printable.
 */
#include "harness.h"

#include <errno.h>

#include "dns/resolver.h"
#include "proto/socks4.h"
#include "proto/socks5.h"
#include "relay/errmap.h"

static void test_table(void **state)
{
    (void)state;
    static const struct {
        enum outcome o;
        uint8_t socks5, socks4;
        int http;
        enum stats_outcome stats;
        const char *text;
    } rows[] = {
        {OUT_OK, SOCKS5_REP_SUCCEEDED, SOCKS4_GRANTED, 200, OC_OK, ""},
        {OUT_DENIED, SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 403, OC_DENIED,
         "ferry: the destination is not allowed"},
        {OUT_AUTH_FAILED, SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 407, OC_AUTH_FAILED,
         "ferry: proxy authentication failed"},
        {OUT_LIMIT, SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 429, OC_LIMITED,
         "ferry: too many sessions; try again later"},
        {OUT_NAME_UNRESOLVED, SOCKS5_REP_HOST_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
         "ferry: the destination name does not resolve"},
        {OUT_HOST_UNREACHABLE, SOCKS5_REP_HOST_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
         "ferry: the destination host is unreachable"},
        {OUT_NET_UNREACHABLE, SOCKS5_REP_NETWORK_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
         "ferry: the destination network is unreachable"},
        {OUT_REFUSED, SOCKS5_REP_CONNECTION_REFUSED, SOCKS4_REJECTED, 502, OC_REFUSED,
         "ferry: the destination refused the connection"},
        {OUT_TIMEOUT, SOCKS5_REP_TTL_EXPIRED, SOCKS4_REJECTED, 504, OC_TIMEOUT,
         "ferry: the destination did not answer in time"},
        {OUT_CMD_UNSUPPORTED, SOCKS5_REP_COMMAND_NOT_SUPPORTED, SOCKS4_REJECTED, 501,
         OC_UNSUPPORTED, "ferry: not supported"},
        {OUT_ADDR_UNSUPPORTED, SOCKS5_REP_ATYP_NOT_SUPPORTED, SOCKS4_REJECTED, 502, OC_UNSUPPORTED,
         "ferry: the connection to the destination failed"},
        {OUT_BAD_REQUEST, SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 400, OC_BAD_REQUEST,
         "ferry: malformed request"},
        {OUT_FAILED, SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 502, OC_ERROR,
         "ferry: the connection to the destination failed"},
        {OUT_QUOTA, SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 403, OC_QUOTA,
         "ferry: this user's quota is used up"},
        {OUT_TUNNEL_DOWN, SOCKS5_REP_NETWORK_UNREACHABLE, SOCKS4_REJECTED, 503, OC_UNREACHABLE,
         "ferry: the tunnel to the server is down; try again later"},
    };
    bool covered[OUT_COUNT] = {false};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        enum outcome o = rows[i].o;
        covered[o] = true;
        if (errmap_socks5(o) != rows[i].socks5 || errmap_socks4(o) != rows[i].socks4 ||
            errmap_http_status(o) != rows[i].http || errmap_stats(o) != rows[i].stats)
            fail_msg("outcome %d: socks5 0x%02x socks4 0x%02x http %d stats %d", o,
                     errmap_socks5(o), errmap_socks4(o), errmap_http_status(o), errmap_stats(o));
        assert_string_equal(errmap_http_text(o), rows[i].text);
    }
    /* Only a tunnel that is down says when to try again (Retry-After). */
    for (int o = OUT_NONE; o < OUT_COUNT; o++)
        assert_int_equal(errmap_http_retry_after((enum outcome)o), o == OUT_TUNNEL_DOWN ? 5 : 0);
    /* Every outcome but "not settled" has its row here. */
    for (int o = OUT_OK; o < OUT_COUNT; o++)
        if (!covered[o])
            fail_msg("outcome %d has no row in the test", o);
    /* Not settled: counted as abandoned, answered as a general failure. */
    assert_int_equal(errmap_stats(OUT_NONE), OC_UNSET);
    assert_int_equal(errmap_socks5(OUT_NONE), SOCKS5_REP_GENERAL_FAILURE);
    assert_int_equal(errmap_socks5((enum outcome)200), SOCKS5_REP_GENERAL_FAILURE);
    assert_int_equal(errmap_http_status((enum outcome)200), 502);
}

static void test_connect_errors(void **state)
{
    (void)state;
    static const struct {
        int err;
        enum outcome o;
    } cases[] = {
        {-ECONNREFUSED, OUT_REFUSED},
        {-ENETUNREACH, OUT_NET_UNREACHABLE},
        {-ENETDOWN, OUT_NET_UNREACHABLE},
        {-EHOSTUNREACH, OUT_HOST_UNREACHABLE},
        {-EHOSTDOWN, OUT_HOST_UNREACHABLE},
        {-ETIMEDOUT, OUT_TIMEOUT},
        {-EACCES, OUT_DENIED},
        {-EPERM, OUT_DENIED},
        {-EAFNOSUPPORT, OUT_ADDR_UNSUPPORTED},
        {-EADDRNOTAVAIL, OUT_FAILED},
        {-ENOMEM, OUT_FAILED},
        {-EMFILE, OUT_FAILED},
        {0, OUT_FAILED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum outcome got = errmap_connect(cases[i].err);
        if (got != cases[i].o)
            fail_msg("errno %d (%s): outcome %d, expected %d", -cases[i].err,
                     errmap_name(cases[i].err), got, cases[i].o);
    }
    /* What a SOCKS5 client is told, as before outcomes were neutral. */
    assert_int_equal(errmap_socks5(errmap_connect(-ECONNREFUSED)), SOCKS5_REP_CONNECTION_REFUSED);
    assert_int_equal(errmap_socks5(errmap_connect(-ETIMEDOUT)), SOCKS5_REP_TTL_EXPIRED);
    assert_int_equal(errmap_socks5(errmap_connect(-EACCES)), SOCKS5_REP_NOT_ALLOWED);
    assert_int_equal(errmap_socks5(errmap_connect(-EAFNOSUPPORT)), SOCKS5_REP_ATYP_NOT_SUPPORTED);
}

static void test_dns_errors(void **state)
{
    (void)state;
    assert_int_equal(errmap_dns(DNS_NOTFOUND), OUT_NAME_UNRESOLVED);
    assert_int_equal(errmap_dns(DNS_TIMEOUT), OUT_NAME_UNRESOLVED);
    assert_int_equal(errmap_dns(DNS_FAILED), OUT_NAME_UNRESOLVED);
    /* SOCKS5 has no code of its own for it: host unreachable. */
    assert_int_equal(errmap_socks5(OUT_NAME_UNRESOLVED), SOCKS5_REP_HOST_UNREACHABLE);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(errmap_name(-ECONNRESET), "ECONNRESET");
    assert_string_equal(errmap_name(ETIMEDOUT), "ETIMEDOUT");
    assert_string_equal(errmap_name(0), "E?");
    assert_string_equal(errmap_name(-99999), "E?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_connect_errors),
        cmocka_unit_test(test_dns_errors),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
