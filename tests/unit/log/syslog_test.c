/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * syslog_test.c: the syslog target's settings: facilities by name, and
 * addresses (a unix datagram path, unix:PATH, udp://IP:PORT), refusing
 * anything else.
 */
#include "harness.h"

#include <errno.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "log/log.h"

static void test_facility(void **state)
{
    (void)state;
    int f;
    assert_int_equal(log_facility_parse("daemon", &f), 0);
    assert_int_equal(f, 3);
    assert_int_equal(log_facility_parse("local0", &f), 0);
    assert_int_equal(f, 16);
    assert_int_equal(log_facility_parse("LOCAL7", &f), 0);
    assert_int_equal(f, 23);
    assert_int_equal(log_facility_parse("local8", &f), -EINVAL);
    assert_int_equal(log_facility_parse("local", &f), -EINVAL);
    assert_int_equal(log_facility_parse("kern", &f), -EINVAL);
    assert_int_equal(log_facility_parse("local10", &f), -EINVAL);
}

static void test_address(void **state)
{
    (void)state;
    struct sockaddr_storage sa;
    socklen_t len;
    assert_int_equal(log_syslog_address(NULL, &sa, &len), 0);
    assert_int_equal(sa.ss_family, AF_UNIX);
    assert_string_equal(((struct sockaddr_un *)&sa)->sun_path, "/dev/log");
    assert_int_equal(log_syslog_address("unix:/run/x.sock", &sa, &len), 0);
    assert_string_equal(((struct sockaddr_un *)&sa)->sun_path, "/run/x.sock");
    assert_int_equal(log_syslog_address("udp://127.0.0.1:514", &sa, &len), 0);
    assert_int_equal(sa.ss_family, AF_INET);
    assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 514);
    assert_int_equal(log_syslog_address("udp://[::1]:5514", &sa, &len), 0);
    assert_int_equal(sa.ss_family, AF_INET6);
    assert_int_equal(ntohs(((struct sockaddr_in6 *)&sa)->sin6_port), 5514);
    const char *bad[] = {"tcp://127.0.0.1:514",   "udp://127.0.0.1", "udp://127.0.0.1:0",
                         "udp://log.example:514", "udp://[::1:514",  "relative.sock",
                         "udp://127.0.0.1:99999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(log_syslog_address(bad[i], &sa, &len), -EINVAL);
    char longpath[200];
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(log_syslog_address(longpath, &sa, &len), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_facility),
        cmocka_unit_test(test_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
