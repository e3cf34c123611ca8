/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap_test.c: every errno a connect can fail with lands on the SOCKS5
 * reply an operator would look for (RFC 1928 section 6), DNS failures are
 * host unreachable, and errno names are printable.
 */
#include "harness.h"

#include <errno.h>

#include "dns/resolver.h"
#include "proto/socks5.h"
#include "relay/errmap.h"

static void test_connect_errors(void **state)
{
    (void)state;
    static const struct {
        int err;
        uint8_t rep;
    } cases[] = {
        {-ECONNREFUSED, SOCKS5_REP_CONNECTION_REFUSED},
        {-ENETUNREACH, SOCKS5_REP_NETWORK_UNREACHABLE},
        {-ENETDOWN, SOCKS5_REP_NETWORK_UNREACHABLE},
        {-EHOSTUNREACH, SOCKS5_REP_HOST_UNREACHABLE},
        {-EHOSTDOWN, SOCKS5_REP_HOST_UNREACHABLE},
        {-ETIMEDOUT, SOCKS5_REP_TTL_EXPIRED},
        {-EACCES, SOCKS5_REP_NOT_ALLOWED},
        {-EPERM, SOCKS5_REP_NOT_ALLOWED},
        {-EAFNOSUPPORT, SOCKS5_REP_ATYP_NOT_SUPPORTED},
        {-EADDRNOTAVAIL, SOCKS5_REP_GENERAL_FAILURE},
        {-ENOMEM, SOCKS5_REP_GENERAL_FAILURE},
        {-EMFILE, SOCKS5_REP_GENERAL_FAILURE},
        {0, SOCKS5_REP_GENERAL_FAILURE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t got = errmap_socks5_connect(cases[i].err);
        if (got != cases[i].rep)
            fail_msg("errno %d (%s): reply 0x%02x, expected 0x%02x", -cases[i].err,
                     errmap_name(cases[i].err), got, cases[i].rep);
    }
}

static void test_dns_errors(void **state)
{
    (void)state;
    assert_int_equal(errmap_socks5_dns(DNS_NOTFOUND), SOCKS5_REP_HOST_UNREACHABLE);
    assert_int_equal(errmap_socks5_dns(DNS_TIMEOUT), SOCKS5_REP_HOST_UNREACHABLE);
    assert_int_equal(errmap_socks5_dns(DNS_FAILED), SOCKS5_REP_HOST_UNREACHABLE);
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
        cmocka_unit_test(test_connect_errors),
        cmocka_unit_test(test_dns_errors),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
