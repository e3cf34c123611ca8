/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rules_test.c: access rules (acl/rules.h). The parser over every matcher
 * and every error message; CIDR parsing (host bits masked, /0, IPv6) and
 * containment; domain patterns (exact, *.suffix without the bare name,
 * case, trailing dot, "*"); first-match order; each matcher alone; NEED_IP
 * while the first candidate rule looks at an unknown address, and its
 * resolution once the address is known; by_range; rules_default; and the
 * index against a naive in-test scan over thousands of random rules and
 * requests (fixed-seed xorshift), including deeply nested ranges.
 */
#include "harness.h"

#include <errno.h>
#include <strings.h>
#include <sys/socket.h>

#include "acl/rules.h"
#include "util/addr.h"

/* ---- helpers ------------------------------------------------------------- */

/* Every acl a test builds is kept here until it releases it, so that a
 * failed assertion (which leaves the test at once) leaks nothing: the
 * teardown frees what is left. */
#define MAX_LIVE 64
static struct acl *live[MAX_LIVE];
static unsigned nlive;

static struct acl *keep(struct acl *a)
{
    assert_true(nlive < MAX_LIVE);
    live[nlive++] = a;
    return a;
}

static void release(struct acl *a)
{
    for (unsigned i = 0; i < nlive; i++) {
        if (live[i] == a) {
            live[i] = live[--nlive];
            break;
        }
    }
    acl_free(a);
}

static int teardown(void **state)
{
    (void)state;
    while (nlive)
        acl_free(live[--nlive]);
    return 0;
}

static struct addr ip(const char *text)
{
    struct addr a;
    assert_int_equal(addr_parse_ip(text, 0, &a), 0);
    return a;
}

static void parse_ok(const char *line, struct acl_rule *r)
{
    char err[256] = "";
    int rc = acl_rule_parse(line, "t.conf:1", r, err, sizeof(err));
    if (rc != 0)
        fail_msg("rule '%s' refused: %s", line, err);
}

/* The rule must be refused with exactly msg; nothing is left allocated. */
static void parse_err(const char *line, const char *msg)
{
    struct acl_rule r;
    char err[1024] = "";
    int rc = acl_rule_parse(line, "t.conf:7", &r, err, sizeof(err));
    if (rc != -EINVAL)
        fail_msg("rule '%s': rc %d, expected -EINVAL (err '%s')", line, rc, err);
    if (strcmp(err, msg) != 0)
        fail_msg("rule '%s':\n  got      '%s'\n  expected '%s'", line, err, msg);
    /* Refused rules are emptied (and own nothing). */
    assert_null(r.user);
    assert_null(r.from);
    assert_null(r.to);
    assert_null(r.domains);
    assert_null(r.ports);
    assert_int_equal(r.nfrom + r.nto + r.ndomains + r.nports, 0);
}

/* Compile lines (NULL-terminated) into an acl; each rule's name is
 * "t.conf:N" with N its 1-based position. */
static struct acl *build(const char *const *lines, uint8_t def)
{
    uint32_t n = 0;
    while (lines[n])
        n++;
    struct acl_rule *rules = calloc(n ? n : 1, sizeof(*rules));
    assert_non_null(rules);
    for (uint32_t i = 0; i < n; i++) {
        char name[32], err[256] = "";
        snprintf(name, sizeof(name), "t.conf:%u", i + 1);
        if (acl_rule_parse(lines[i], name, &rules[i], err, sizeof(err)) != 0)
            fail_msg("rule '%s' refused: %s", lines[i], err);
    }
    struct acl *a = NULL;
    assert_int_equal(acl_build(&a, rules, n, def), 0);
    assert_non_null(a);
    return keep(a);
}

struct q {
    const char *client; /* default 192.0.2.10 */
    const char *user;
    uint8_t cmd; /* default connect */
    const char *name;
    const char *ip;
    uint16_t port; /* default 443 */
};

static struct acl_result check(const struct acl *a, struct q in)
{
    struct addr client = ip(in.client ? in.client : "192.0.2.10");
    struct addr dst;
    if (in.ip)
        dst = ip(in.ip);
    struct acl_req r = {&client,
                        in.user,
                        in.cmd ? in.cmd : ACL_CMD_CONNECT,
                        in.name,
                        in.ip ? &dst : NULL,
                        in.port ? in.port : 443};
    struct acl_result res;
    memset(&res, 0x5a, sizeof(res)); /* every field must be written */
    acl_check(a, &r, &res);
    return res;
}

static void expect(const struct acl *a, struct q in, enum acl_verdict v, int32_t rule)
{
    struct acl_result res = check(a, in);
    if (res.verdict != v || res.rule != rule)
        fail_msg("request (client %s user %s cmd %u name %s ip %s port %u): verdict %d rule %d, "
                 "expected verdict %d rule %d",
                 in.client ? in.client : "-", in.user ? in.user : "-", in.cmd,
                 in.name ? in.name : "-", in.ip ? in.ip : "-", in.port, (int)res.verdict,
                 (int)res.rule, (int)v, (int)rule);
}

/* ---- the parser ------------------------------------------------------------ */

static void test_parse_full_rule(void **state)
{
    (void)state;
    struct acl_rule r;
    parse_ok("allow from 10.0.0.0/8, ::1 user alice to *.Example.COM, 192.0.2.0/24, "
             "2001:db8::/32, exact.example.org port 443, 8000-8999 cmd connect,HTTP",
             &r);
    assert_int_equal(r.action, ACL_ALLOW);
    assert_string_equal(r.name, "t.conf:1");
    assert_int_equal(r.nfrom, 2);
    assert_int_equal(r.from[0].family, AF_INET);
    assert_int_equal(r.from[0].bits, 8);
    assert_int_equal(r.from[1].family, AF_INET6);
    assert_int_equal(r.from[1].bits, 128);
    assert_false(r.any_user);
    assert_string_equal(r.user, "alice");
    assert_int_equal(r.nto, 2);
    assert_int_equal(r.to[0].bits, 24);
    assert_int_equal(r.to[1].family, AF_INET6);
    assert_int_equal(r.to[1].bits, 32);
    assert_int_equal(r.ndomains, 2);
    assert_string_equal(r.domains[0], "*.example.com"); /* lower case */
    assert_string_equal(r.domains[1], "exact.example.org");
    assert_int_equal(r.nports, 2);
    assert_int_equal(r.ports[0].lo, 443);
    assert_int_equal(r.ports[0].hi, 443);
    assert_int_equal(r.ports[1].lo, 8000);
    assert_int_equal(r.ports[1].hi, 8999);
    assert_int_equal(r.cmds, ACL_CMD_CONNECT | ACL_CMD_HTTP);
    acl_rule_fini(&r);
    assert_null(r.user);
    assert_int_equal(r.nfrom, 0);
}

static void test_parse_minimal_and_spacing(void **state)
{
    (void)state;
    struct acl_rule r;
    parse_ok("deny", &r);
    assert_int_equal(r.action, ACL_DENY);
    assert_int_equal(r.cmds, 0);
    assert_false(r.any_user);
    assert_null(r.user);
    assert_int_equal(r.nfrom + r.nto + r.ndomains + r.nports, 0);
    acl_rule_fini(&r);

    /* "a,b", "a, b", "a ,b", tabs and runs of spaces are all one list. */
    static const char *const forms[] = {
        "allow to a.example,b.example,c.example",   "allow to a.example, b.example, c.example",
        "allow to a.example ,b.example ,c.example", "allow\tto\ta.example,\tb.example   c.example",
        "ALLOW to a.example,,b.example c.example,",
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        parse_ok(forms[i], &r);
        assert_int_equal(r.action, ACL_ALLOW);
        assert_int_equal(r.ndomains, 3);
        assert_string_equal(r.domains[0], "a.example");
        assert_string_equal(r.domains[1], "b.example");
        assert_string_equal(r.domains[2], "c.example");
        acl_rule_fini(&r);
    }

    parse_ok("allow user * cmd connect udp bind http port 1-65535, 65535", &r);
    assert_true(r.any_user);
    assert_null(r.user);
    assert_int_equal(r.cmds, ACL_CMD_CONNECT | ACL_CMD_UDP | ACL_CMD_BIND | ACL_CMD_HTTP);
    assert_int_equal(r.ports[0].lo, 1);
    assert_int_equal(r.ports[0].hi, 65535);
    assert_int_equal(r.ports[1].lo, 65535);
    acl_rule_fini(&r);

    parse_ok("deny to *", &r);
    assert_int_equal(r.ndomains, 1);
    assert_string_equal(r.domains[0], "*");
    acl_rule_fini(&r);

    /* Matchers in any order. */
    parse_ok("allow cmd udp port 53 to 192.0.2.1 user bob from 10.0.0.1", &r);
    assert_int_equal(r.cmds, ACL_CMD_UDP);
    assert_string_equal(r.user, "bob");
    assert_int_equal(r.nto, 1);
    assert_int_equal(r.nfrom, 1);
    acl_rule_fini(&r);

    /* The name is FILE:LINE as given. */
    char err[64];
    assert_int_equal(acl_rule_parse("allow", "rules.txt:1234", &r, err, sizeof(err)), 0);
    assert_string_equal(r.name, "rules.txt:1234");
    acl_rule_fini(&r);
}

static void test_parse_errors_structure(void **state)
{
    (void)state;
    parse_err("", "empty rule");
    parse_err("   ", "empty rule");
    parse_err(", ,", "empty rule");
    parse_err("permit to 10.0.0.0/8", "a rule starts with allow or deny, not 'permit'");
    parse_err("from 10.0.0.0/8", "a rule starts with allow or deny, not 'from'");
    parse_err("allow 10.0.0.1", "'10.0.0.1' where from, user, to, port, cmd or via was expected");
    parse_err("deny TO 10.0.0.1", "'TO' where from, user, to, port, cmd or via was expected");
    /* Keywords given twice. */
    parse_err("allow from 10.0.0.1 from 10.0.0.2",
              "'from' given twice (list the values after one)");
    parse_err("allow user alice user bob", "'user' given twice (list the values after one)");
    parse_err("allow to a.example port 1 to b.example",
              "'to' given twice (list the values after one)");
    parse_err("allow port 80 port 443", "'port' given twice (list the values after one)");
    parse_err("allow cmd udp cmd connect", "'cmd' given twice (list the values after one)");
    /* Missing values: at the end, and before the next keyword. */
    parse_err("allow from", "'from' needs a value");
    parse_err("allow user", "'user' needs a value");
    parse_err("allow to", "'to' needs a value");
    parse_err("allow port", "'port' needs a value");
    parse_err("allow cmd", "'cmd' needs a value");
    parse_err("allow to , port 80", "'to' needs a value");
    parse_err("allow from to 10.0.0.1", "'from' needs a value");
    parse_err("allow to 10.0.0.1 port cmd connect", "'port' needs a value");
    /* Two users. */
    parse_err("allow user alice bob", "one user per rule (write one rule per user)");
    parse_err("allow user alice, *", "one user per rule (write one rule per user)");
    parse_err("allow user * alice", "one user per rule (write one rule per user)");
    parse_err("allow user a:b", "'a:b' is not a user name");
    parse_err("allow user a\x01z", "'a\x01z' is not a user name");
    parse_err("allow user a\x7fz", "'a\x7fz' is not a user name");

    /* Longer than the parser's buffer. */
    static char longline[5000];
    memset(longline, 0, sizeof(longline));
    memcpy(longline, "allow to ", 9);
    memset(longline + 9, 'a', 4200);
    parse_err(longline, "rule longer than 4095 characters");
}

static void test_parse_errors_values(void **state)
{
    (void)state;
    static const char *const bad_from[] = {
        "10.0.0.0/33",  "::/129",
        "10.0.0.0/",    "/8",
        "10.0.0.256",   "example.com",
        "10.0.0.0/8/8", "10.0.0.0/x",
        "10.0.0.0/-1",  "10.0.0.0/99999999999",
        "fe80::1%lo",   "*",
    };
    for (size_t i = 0; i < sizeof(bad_from) / sizeof(bad_from[0]); i++) {
        char line[128], msg[256];
        snprintf(line, sizeof(line), "allow from %s", bad_from[i]);
        snprintf(msg, sizeof(msg), "'%s' is not an address or range (e.g. 10.0.0.0/8, ::1)",
                 bad_from[i]);
        parse_err(line, msg);
    }
    static const char *const bad_to[] = {
        "10.0.0.0/33", "::/129",     "10.0.0.0/", "*example.com", "*.",  "**.example.com",
        "a!b.example", "fe80::1%lo", "x/8",       "*.a/b",        "a@b",
    };
    for (size_t i = 0; i < sizeof(bad_to) / sizeof(bad_to[0]); i++) {
        char line[128], msg[256];
        snprintf(line, sizeof(line), "deny to %s", bad_to[i]);
        snprintf(msg, sizeof(msg),
                 "'%s' is neither an address range nor a domain (e.g. 10.0.0.0/8, example.com, "
                 "*.example.com)",
                 bad_to[i]);
        parse_err(line, msg);
    }
    /* A name longer than 253 characters is not a domain. */
    char longname[300], line[400], msg[600];
    memset(longname, 'a', 254);
    longname[254] = '\0';
    snprintf(line, sizeof(line), "deny to %s", longname);
    snprintf(msg, sizeof(msg),
             "'%s' is neither an address range nor a domain (e.g. 10.0.0.0/8, example.com, "
             "*.example.com)",
             longname);
    parse_err(line, msg);
    longname[253] = '\0';
    struct acl_rule r;
    snprintf(line, sizeof(line), "deny to %s", longname);
    parse_ok(line, &r);
    acl_rule_fini(&r);

    static const char *const bad_port[] = {"0",   "65536", "80-",     "-80", "90-80",      "abc",
                                           "80x", "0-10",  "1-65536", "8+9", "99999999999"};
    for (size_t i = 0; i < sizeof(bad_port) / sizeof(bad_port[0]); i++) {
        char l2[128], m2[256];
        snprintf(l2, sizeof(l2), "allow port %s", bad_port[i]);
        snprintf(m2, sizeof(m2), "'%s' is not a port or range (e.g. 443, 8000-8999)", bad_port[i]);
        parse_err(l2, m2);
    }
    parse_err("allow cmd ftp", "'ftp' is not a command (connect, udp, bind, http, reverse)");
    parse_err("allow cmd connect, associate",
              "'associate' is not a command (connect, udp, bind, http, reverse)");
}

/* ---- CIDR ------------------------------------------------------------------ */

static void expect_cidr(const char *s, int family, unsigned bits, const char *net)
{
    struct acl_cidr c;
    memset(&c, 0xee, sizeof(c));
    if (acl_cidr_parse(s, &c) != 0)
        fail_msg("'%s' refused", s);
    assert_int_equal(c.family, family);
    assert_int_equal(c.bits, bits);
    struct addr n = ip(net);
    if (memcmp(c.ip, n.ip, family == AF_INET6 ? 16 : 4) != 0)
        fail_msg("'%s': network part is not %s", s, net);
    if (family == AF_INET) {
        static const uint8_t zero[12];
        assert_memory_equal(c.ip + 4, zero, 12);
    }
}

static void test_cidr_parse(void **state)
{
    (void)state;
    expect_cidr("10.1.2.3/8", AF_INET, 8, "10.0.0.0");
    expect_cidr("10.1.2.3", AF_INET, 32, "10.1.2.3");
    expect_cidr("192.168.1.130/25", AF_INET, 25, "192.168.1.128");
    expect_cidr("192.168.1.127/25", AF_INET, 25, "192.168.1.0");
    expect_cidr("172.31.255.255/12", AF_INET, 12, "172.16.0.0");
    expect_cidr("255.255.255.255/0", AF_INET, 0, "0.0.0.0");
    expect_cidr("0.0.0.0/0", AF_INET, 0, "0.0.0.0");
    expect_cidr("10.0.0.1/32", AF_INET, 32, "10.0.0.1");
    expect_cidr("10.0.0.1/008", AF_INET, 8, "10.0.0.0");
    expect_cidr("::1", AF_INET6, 128, "::1");
    expect_cidr("::/0", AF_INET6, 0, "::");
    expect_cidr("ffff:ffff::1/0", AF_INET6, 0, "::");
    expect_cidr("2001:db8:aaaa:bbbb::1/32", AF_INET6, 32, "2001:db8::");
    expect_cidr("fe80::1/10", AF_INET6, 10, "fe80::");
    expect_cidr("febf:ffff::1/10", AF_INET6, 10, "fe80::");
    expect_cidr("2001:db8::ffff/127", AF_INET6, 127, "2001:db8::fffe");
    expect_cidr("2001:db8::ffff/128", AF_INET6, 128, "2001:db8::ffff");

    static const char *const bad[] = {"",
                                      "/",
                                      "/8",
                                      "10.0.0.0/",
                                      "10.0.0.0/33",
                                      "::/129",
                                      "10.0.0.0/-1",
                                      "10.0.0.0/+8",
                                      "10.0.0.0/8 ",
                                      "10.0.0",
                                      "example.com",
                                      "10.0.0.0/8/8",
                                      "[::1]",
                                      "::1/1000",
                                      "1.2.3.4.5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct acl_cidr c;
        if (acl_cidr_parse(bad[i], &c) != -EINVAL)
            fail_msg("'%s' accepted as a range", bad[i]);
    }
}

static bool contains(const char *cidr, const char *addr)
{
    struct acl_cidr c;
    assert_int_equal(acl_cidr_parse(cidr, &c), 0);
    struct addr a = ip(addr);
    return acl_cidr_contains(&c, &a);
}

static void test_cidr_contains(void **state)
{
    (void)state;
    assert_true(contains("10.0.0.0/8", "10.0.0.0"));
    assert_true(contains("10.0.0.0/8", "10.255.255.255"));
    assert_false(contains("10.0.0.0/8", "11.0.0.0"));
    assert_false(contains("10.0.0.0/8", "9.255.255.255"));
    assert_true(contains("10.9.9.9/8", "10.1.1.1")); /* host bits do not matter */
    assert_true(contains("192.168.1.128/25", "192.168.1.255"));
    assert_false(contains("192.168.1.128/25", "192.168.1.127"));
    assert_true(contains("172.16.0.0/12", "172.31.0.1"));
    assert_false(contains("172.16.0.0/12", "172.32.0.1"));
    assert_true(contains("0.0.0.0/0", "1.2.3.4"));
    assert_true(contains("0.0.0.0/0", "255.255.255.255"));
    assert_false(contains("0.0.0.0/0", "::1")); /* families apart */
    assert_false(contains("::/0", "127.0.0.1"));
    assert_true(contains("::/0", "2001:db8::1"));
    assert_true(contains("10.0.0.1", "10.0.0.1"));
    assert_false(contains("10.0.0.1", "10.0.0.2"));
    assert_true(contains("fe80::/10", "febf::1"));
    assert_false(contains("fe80::/10", "fec0::1"));
    assert_true(contains("2001:db8::/32", "2001:db8:ffff::1"));
    assert_false(contains("2001:db8::/32", "2001:db9::1"));
    assert_true(contains("::1", "::1"));
    assert_false(contains("::1", "::2"));
    assert_true(contains("2001:db8::fffe/127", "2001:db8::ffff"));
    /* An IPv6 address whose first four bytes spell 10.x is not in 10/8. */
    assert_false(contains("10.0.0.0/8", "a00:1::"));
}

/* ---- domains --------------------------------------------------------------- */

static void test_domain_match(void **state)
{
    (void)state;
    /* exact */
    assert_true(acl_domain_match("example.com", "example.com"));
    assert_true(acl_domain_match("example.com", "EXAMPLE.Com"));
    assert_true(acl_domain_match("example.com", "example.com."));
    assert_false(acl_domain_match("example.com", "www.example.com"));
    assert_false(acl_domain_match("example.com", "example.co"));
    assert_false(acl_domain_match("example.com", "example.com.au"));
    assert_false(acl_domain_match("example.com", "xexample.com"));
    assert_false(acl_domain_match("example.com", ""));
    /* suffix: names under it, not the name itself */
    assert_true(acl_domain_match("*.example.com", "www.example.com"));
    assert_true(acl_domain_match("*.example.com", "a.b.c.example.com"));
    assert_true(acl_domain_match("*.example.com", "WWW.EXAMPLE.COM"));
    assert_true(acl_domain_match("*.example.com", "www.example.com."));
    assert_false(acl_domain_match("*.example.com", "example.com"));
    assert_false(acl_domain_match("*.example.com", "example.com."));
    assert_false(acl_domain_match("*.example.com", "badexample.com"));
    assert_false(acl_domain_match("*.example.com", ".example.com"));
    assert_false(acl_domain_match("*.example.com", "www.example.com.evil"));
    assert_false(acl_domain_match("*.example.com", "www.example.org"));
    assert_true(acl_domain_match("*.localhost", "a.localhost"));
    assert_false(acl_domain_match("*.localhost", "localhost"));
    /* anything */
    assert_true(acl_domain_match("*", "example.com"));
    assert_true(acl_domain_match("*", "x"));
}

/* ---- evaluation -------------------------------------------------------------- */

static void test_first_match_order(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny to 10.1.0.0/16",
        "allow to 10.0.0.0/8",
        "deny to 10.1.2.3",       /* never reached for 10/8 */
        "allow to *.example.com", /* 3 */
        "deny to bad.example.com",
        "deny port 22",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    expect(a, (struct q){.ip = "10.1.2.3"}, ACL_V_DENY, 0);
    expect(a, (struct q){.ip = "10.2.0.1"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.ip = "10.2.0.1", .port = 22}, ACL_V_ALLOW, 1);
    /* The names: rules 0-2 have ranges, so an unknown address must come
     * first; with an address outside them, the suffix rule decides. */
    expect(a, (struct q){.name = "bad.example.com"}, ACL_V_NEED_IP, 0);
    expect(a, (struct q){.name = "bad.example.com", .ip = "192.0.2.1"}, ACL_V_ALLOW, 3);
    expect(a, (struct q){.name = "other.org", .ip = "192.0.2.1", .port = 22}, ACL_V_DENY, 5);
    expect(a, (struct q){.name = "other.org", .ip = "192.0.2.1", .port = 23}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "192.0.2.1"}, ACL_V_DENY, -1);
    release(a);

    /* Swap the order of two overlapping rules: the other one decides. */
    static const char *const swapped[] = {"allow to 10.0.0.0/8", "deny to 10.1.0.0/16", NULL};
    a = build(swapped, ACL_DENY);
    expect(a, (struct q){.ip = "10.1.2.3"}, ACL_V_ALLOW, 0);
    release(a);
}

static void test_matcher_from(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny from 192.0.2.0/24, 2001:db8:1::/48",
        "allow from 198.51.100.7",
        "allow from ::1",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    expect(a, (struct q){.client = "192.0.2.200", .ip = "10.0.0.1"}, ACL_V_DENY, 0);
    expect(a, (struct q){.client = "192.0.3.1", .ip = "10.0.0.1"}, ACL_V_DENY, -1);
    expect(a, (struct q){.client = "2001:db8:1:ffff::9", .ip = "10.0.0.1"}, ACL_V_DENY, 0);
    expect(a, (struct q){.client = "2001:db8:2::9", .ip = "10.0.0.1"}, ACL_V_DENY, -1);
    expect(a, (struct q){.client = "198.51.100.7", .name = "x.example"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.client = "198.51.100.8", .name = "x.example"}, ACL_V_DENY, -1);
    expect(a, (struct q){.client = "::1", .ip = "::2"}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.client = "::2", .ip = "::2"}, ACL_V_DENY, -1);
    /* A v6 client whose first bytes spell 198.51.100.7 is not that client. */
    expect(a, (struct q){.client = "c633:6407::", .ip = "10.0.0.1"}, ACL_V_DENY, -1);
    release(a);
}

static void test_matcher_user(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny user mallory",
        "allow user alice port 80",
        "allow user * port 443",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    expect(a, (struct q){.user = "mallory", .ip = "10.0.0.1", .port = 443}, ACL_V_DENY, 0);
    expect(a, (struct q){.user = "alice", .ip = "10.0.0.1", .port = 80}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.user = "alice", .ip = "10.0.0.1", .port = 443}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.user = "alice", .ip = "10.0.0.1", .port = 8080}, ACL_V_DENY, -1);
    expect(a, (struct q){.user = "bob", .ip = "10.0.0.1", .port = 80}, ACL_V_DENY, -1);
    expect(a, (struct q){.user = "bob", .ip = "10.0.0.1", .port = 443}, ACL_V_ALLOW, 2);
    /* Names compare exactly. */
    expect(a, (struct q){.user = "Alice", .ip = "10.0.0.1", .port = 80}, ACL_V_DENY, -1);
    expect(a, (struct q){.user = "alic", .ip = "10.0.0.1", .port = 80}, ACL_V_DENY, -1);
    /* "user *" and "user NAME" need an authenticated user. */
    expect(a, (struct q){.ip = "10.0.0.1", .port = 443}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "10.0.0.1", .port = 80}, ACL_V_DENY, -1);
    release(a);
}

static void test_matcher_to_ranges(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny to 169.254.0.0/16, fe80::/10",
        "allow to 203.0.113.0/24",
        "allow to 2001:db8::/32",
        "allow to 0.0.0.0/0 port 7",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    struct acl_result res;
    res = check(a, (struct q){.ip = "169.254.169.254"});
    assert_int_equal(res.verdict, ACL_V_DENY);
    assert_int_equal(res.rule, 0);
    res = check(a, (struct q){.ip = "fe80::1"});
    assert_int_equal(res.verdict, ACL_V_DENY);
    assert_int_equal(res.rule, 0);
    res = check(a, (struct q){.ip = "203.0.113.77"});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_int_equal(res.rule, 1);
    assert_true(res.by_range);
    res = check(a, (struct q){.ip = "2001:db8:5::1"});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_int_equal(res.rule, 2);
    assert_true(res.by_range);
    expect(a, (struct q){.ip = "2001:db9::1"}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "203.0.114.1"}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "203.0.114.1", .port = 7}, ACL_V_ALLOW, 3);
    expect(a, (struct q){.ip = "2001:db9::1", .port = 7}, ACL_V_DENY, -1); /* /0 is IPv4 */
    release(a);
}

static void test_matcher_to_domains(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny to bad.example.com",
        "allow to *.example.com",
        "allow to Exact.Example.ORG",
        "deny to *.internal",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    expect(a, (struct q){.name = "bad.example.com"}, ACL_V_DENY, 0);
    expect(a, (struct q){.name = "BAD.Example.com."}, ACL_V_DENY, 0);
    expect(a, (struct q){.name = "good.example.com"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "x.bad.example.com"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "deep.a.b.example.com."}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "example.com"}, ACL_V_DENY, -1); /* not the bare name */
    expect(a, (struct q){.name = "example.com."}, ACL_V_DENY, -1);
    expect(a, (struct q){.name = "notexample.com"}, ACL_V_DENY, -1);
    expect(a, (struct q){.name = "exact.example.org"}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.name = "EXACT.EXAMPLE.ORG."}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.name = "www.exact.example.org"}, ACL_V_DENY, -1);
    expect(a, (struct q){.name = "db.internal"}, ACL_V_DENY, 3);
    /* A domain rule never matches a request without a name... */
    expect(a, (struct q){.ip = "192.0.2.1"}, ACL_V_DENY, -1);
    /* ...but the name still matches once its address is known. */
    expect(a, (struct q){.name = "good.example.com", .ip = "192.0.2.1"}, ACL_V_ALLOW, 1);
    release(a);

    static const char *const star[] = {"deny port 25", "allow to *", NULL};
    a = build(star, ACL_DENY);
    expect(a, (struct q){.name = "anything.at.all"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.ip = "192.0.2.1"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.ip = "::1"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "mail.example", .port = 25}, ACL_V_DENY, 0);
    release(a);
}

static void test_matcher_port_and_cmd(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny port 1-1023, 3306",
        "allow cmd udp port 5353",
        "allow cmd connect,http port 8000-8999",
        "allow cmd bind",
        NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 1}, ACL_V_DENY, 0);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 1023}, ACL_V_DENY, 0);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 3306}, ACL_V_DENY, 0);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 1024}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 5353, .cmd = ACL_CMD_UDP}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 5353}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 8000}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 8999, .cmd = ACL_CMD_HTTP}, ACL_V_ALLOW, 2);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 9000}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 8500, .cmd = ACL_CMD_UDP}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 8500, .cmd = ACL_CMD_BIND}, ACL_V_ALLOW, 3);
    expect(a, (struct q){.ip = "192.0.2.1", .port = 80, .cmd = ACL_CMD_BIND}, ACL_V_DENY, 0);
    release(a);

    /* cmd reverse (a reverse-tunnel bind): to is the bind address. */
    static const char *const rev[] = {
        "allow cmd reverse to 127.0.0.1 port 9000-9099",
        "allow cmd connect",
        NULL,
    };
    a = build(rev, ACL_DENY);
    expect(a, (struct q){.ip = "127.0.0.1", .port = 9050, .cmd = ACL_CMD_REVERSE}, ACL_V_ALLOW, 0);
    expect(a, (struct q){.ip = "127.0.0.1", .port = 9100, .cmd = ACL_CMD_REVERSE}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "127.0.0.2", .port = 9050, .cmd = ACL_CMD_REVERSE}, ACL_V_DENY, -1);
    expect(a, (struct q){.ip = "127.0.0.1", .port = 9050, .cmd = ACL_CMD_CONNECT}, ACL_V_ALLOW, 1);
    release(a);
}

static void test_need_ip(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny port 22 to 10.0.0.0/8", /* a range, but only for port 22 */
        "allow to safe.example",      /* decides before any range */
        "deny to 127.0.0.0/8, ::1",   /* 2 */
        "allow to *.localhost, *.example", NULL,
    };
    struct acl *a = build(lines, ACL_DENY);
    struct acl_result res;
    /* Rule 0 does not match port 443; rule 1 decides on the name. */
    expect(a, (struct q){.name = "safe.example"}, ACL_V_ALLOW, 1);
    /* Port 22: rule 0 may match, and only the address can tell. */
    res = check(a, (struct q){.name = "safe.example", .port = 22});
    assert_int_equal(res.verdict, ACL_V_NEED_IP);
    assert_int_equal(res.rule, 0);
    assert_false(res.by_range);
    expect(a, (struct q){.name = "safe.example", .port = 22, .ip = "10.1.1.1"}, ACL_V_DENY, 0);
    expect(a, (struct q){.name = "safe.example", .port = 22, .ip = "192.0.2.1"}, ACL_V_ALLOW, 1);
    /* A suffix name behind a range rule: resolve first, then the range
     * still applies to what the name resolved to. */
    expect(a, (struct q){.name = "a.localhost"}, ACL_V_NEED_IP, 2);
    expect(a, (struct q){.name = "a.localhost", .ip = "127.0.0.1"}, ACL_V_DENY, 2);
    expect(a, (struct q){.name = "a.localhost", .ip = "::1"}, ACL_V_DENY, 2);
    expect(a, (struct q){.name = "a.localhost", .ip = "192.0.2.9"}, ACL_V_ALLOW, 3);
    expect(a, (struct q){.name = "www.example", .ip = "127.0.0.2"}, ACL_V_DENY, 2);
    /* No name and no address: the first range rule asks for it. */
    expect(a, (struct q){.port = 443}, ACL_V_NEED_IP, 2);
    expect(a, (struct q){.name = "other.org"}, ACL_V_NEED_IP, 2);
    expect(a, (struct q){.name = "other.org", .ip = "192.0.2.1"}, ACL_V_DENY, -1);
    release(a);

    /* Without range rules an unknown address never matters. */
    static const char *const names[] = {"allow to *.example", NULL};
    a = build(names, ACL_DENY);
    expect(a, (struct q){.name = "x.example"}, ACL_V_ALLOW, 0);
    expect(a, (struct q){.name = "x.other"}, ACL_V_DENY, -1);
    release(a);
}

static void test_by_range(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "allow to 127.0.0.0/8 port 1",
        "allow to localhost port 2",
        "allow port 3",
        "deny to 127.0.0.0/8 port 4",
        NULL,
    };
    struct acl *a = build(lines, ACL_ALLOW);
    struct acl_result res;
    res = check(a, (struct q){.ip = "127.0.0.1", .port = 1});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_true(res.by_range);
    res = check(a, (struct q){.name = "localhost", .ip = "127.0.0.1", .port = 1});
    assert_true(res.by_range);
    /* A name rule, a rule without destination, and the default: not by range. */
    res = check(a, (struct q){.name = "localhost", .ip = "127.0.0.1", .port = 2});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_int_equal(res.rule, 1);
    assert_false(res.by_range);
    res = check(a, (struct q){.ip = "127.0.0.1", .port = 3});
    assert_int_equal(res.rule, 2);
    assert_false(res.by_range);
    res = check(a, (struct q){.ip = "127.0.0.1", .port = 9});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_int_equal(res.rule, -1);
    assert_false(res.by_range);
    res = check(a, (struct q){.ip = "10.0.0.1", .port = 1});
    assert_int_equal(res.rule, -1);
    assert_false(res.by_range);
    res = check(a, (struct q){.ip = "127.0.0.1", .port = 4});
    assert_int_equal(res.verdict, ACL_V_DENY);
    assert_int_equal(res.rule, 3);
    release(a);
}

/* rules.h: by_range means "allowed by a rule naming an address range that
 * holds ip". A rule that names both the name and the range holds the
 * address by range too (this is what opens a protected range to it). */
static void test_by_range_rule_with_name_and_range(void **state)
{
    (void)state;
    static const char *const lines[] = {"allow to localhost, 127.0.0.0/8", NULL};
    struct acl *a = build(lines, ACL_DENY);
    struct acl_result res = check(a, (struct q){.name = "localhost", .ip = "127.0.0.1"});
    assert_int_equal(res.verdict, ACL_V_ALLOW);
    assert_int_equal(res.rule, 0);
    res = check(a, (struct q){.ip = "127.0.0.1"});
    assert_true(res.by_range);
    res = check(a, (struct q){.name = "localhost", .ip = "127.0.0.1"});
    if (!res.by_range)
        fail_msg("'allow to localhost, 127.0.0.0/8' holds 127.0.0.1 by range, but by_range is "
                 "false when the request also carries the name 'localhost'");
    release(a);
}

static void test_default(void **state)
{
    (void)state;
    static const char *const none[] = {NULL};
    struct acl *a = build(none, ACL_DENY);
    struct acl_result res = check(a, (struct q){.name = "x.example"});
    assert_int_equal(res.verdict, ACL_V_DENY);
    assert_int_equal(res.rule, -1);
    assert_false(res.by_range);
    release(a);
    a = build(none, ACL_ALLOW);
    expect(a, (struct q){.ip = "10.0.0.1"}, ACL_V_ALLOW, -1);
    release(a);

    static const char *const one[] = {"deny to 10.0.0.0/8", NULL};
    a = build(one, ACL_ALLOW);
    expect(a, (struct q){.ip = "11.0.0.1"}, ACL_V_ALLOW, -1);
    expect(a, (struct q){.ip = "10.0.0.1"}, ACL_V_DENY, 0);
    release(a);
    a = build(one, ACL_DENY);
    expect(a, (struct q){.ip = "11.0.0.1"}, ACL_V_DENY, -1);
    release(a);
    acl_free(NULL);
}

/* acl_open_rule() over one rule set (NULL-terminated lines) and default. */
static int32_t open_rule(const char *const *lines, uint8_t def)
{
    struct acl *a = build(lines, def);
    int32_t r = acl_open_rule(a, def);
    release(a);
    return r;
}

#define OPEN(def, ...) open_rule((const char *const[]){__VA_ARGS__, NULL}, (def))

/* The open-proxy guard: what the rules mean for a client without a user,
 * from anywhere, not whether some rule lines exist. */
static void test_open_rule(void **state)
{
    (void)state;
    /* No rules (an empty or comment-only rules_file compiles to none):
     * the default decides. */
    assert_int_equal(acl_open_rule(NULL, ACL_ALLOW), ACL_OPEN_DEFAULT);
    assert_int_equal(acl_open_rule(NULL, ACL_DENY), ACL_OPEN_NONE);
    static const char *const none[] = {NULL};
    assert_int_equal(open_rule(none, ACL_ALLOW), ACL_OPEN_DEFAULT);
    assert_int_equal(open_rule(none, ACL_DENY), ACL_OPEN_NONE);

    /* A single deny rule leaves the rest to rules_default = allow. */
    assert_int_equal(OPEN(ACL_ALLOW, "deny to 10.0.0.1"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_DENY, "deny to 10.0.0.1"), ACL_OPEN_NONE);

    /* Allow rules restricted by client range or destination: closed under
     * deny, open under allow (the fall-through). */
    assert_int_equal(OPEN(ACL_DENY, "allow from 10.0.0.0/8"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_DENY, "allow from 192.0.2.7, 2001:db8::/32 port 443"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_DENY, "allow to example.com, 10.1.0.0/16"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_DENY, "allow from 0.0.0.0/0 to *.example.com"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_ALLOW, "allow from 10.0.0.0/8"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_ALLOW, "allow from 10.0.0.0/8", "deny"), ACL_OPEN_NONE);

    /* Allow rules from everyone to everywhere: open whatever else they say. */
    assert_int_equal(OPEN(ACL_DENY, "allow from 0.0.0.0/0"), 0);
    assert_int_equal(OPEN(ACL_DENY, "allow from 10.0.0.0/8, ::/0"), 0);
    assert_int_equal(OPEN(ACL_DENY, "deny to 10.0.0.0/8", "allow port 25"), 1);
    assert_int_equal(OPEN(ACL_DENY, "allow cmd udp"), 0);
    assert_int_equal(OPEN(ACL_DENY, "allow to *"), 0);
    assert_int_equal(OPEN(ACL_DENY, "allow from 10.0.0.0/8", "allow to 0.0.0.0/0"), 1);
    assert_int_equal(OPEN(ACL_DENY, "allow to example.com, ::/0"), 0);

    /* Rules naming a user never match without authentication. */
    assert_int_equal(OPEN(ACL_DENY, "allow user *"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_DENY, "allow user alice to *"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_ALLOW, "deny user *"), ACL_OPEN_DEFAULT);

    /* A deny that catches everything ends the question; a narrower one
     * does not. */
    assert_int_equal(OPEN(ACL_ALLOW, "deny", "allow"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_ALLOW, "deny to *"), ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_ALLOW, "deny from 0.0.0.0/0, ::/0 to 0.0.0.0/0, ::/0"),
                     ACL_OPEN_NONE);
    assert_int_equal(OPEN(ACL_ALLOW, "deny from 0.0.0.0/0"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_ALLOW, "deny to 0.0.0.0/0"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_ALLOW, "deny port 1-65535"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_ALLOW, "deny cmd connect"), ACL_OPEN_DEFAULT);
    assert_int_equal(OPEN(ACL_DENY, "deny from 10.0.0.0/8", "allow"), 1);
}

/* The same rule reached through several keys (two values of one matcher,
 * a name and a suffix, the trie and the name table) is one rule. */
static void test_rule_through_several_keys(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "deny port 1 to a.example, *.example, 10.0.0.0/8, 10.1.0.0/16, 10.1.2.3, *",
        "allow to a.example, *.example, 10.0.0.0/8, 10.1.0.0/16, 10.1.2.3",
        "deny",
        NULL,
    };
    struct acl *a = build(lines, ACL_ALLOW);
    expect(a, (struct q){.name = "a.example", .ip = "10.1.2.3"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "b.a.example", .ip = "10.1.2.3"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "b.other", .ip = "10.1.2.3"}, ACL_V_ALLOW, 1);
    expect(a, (struct q){.name = "b.other", .ip = "11.1.2.3"}, ACL_V_DENY, 2);
    expect(a, (struct q){.name = "a.example", .ip = "10.1.2.3", .port = 1}, ACL_V_DENY, 0);
    release(a);
}

/* ---- the index against a scan ---------------------------------------------------- */

/* Independent of rules.c: bit by bit. */
static bool naive_contains(const struct acl_cidr *c, const struct addr *a)
{
    if (c->family != a->family)
        return false;
    for (unsigned i = 0; i < c->bits; i++) {
        unsigned x = (c->ip[i / 8] >> (7 - i % 8)) & 1, y = (a->ip[i / 8] >> (7 - i % 8)) & 1;
        if (x != y)
            return false;
    }
    return true;
}

static bool naive_domain(const char *pat, const char *name)
{
    char n[300];
    snprintf(n, sizeof(n), "%s", name);
    size_t l = strlen(n);
    if (l && n[l - 1] == '.')
        n[--l] = '\0';
    if (!strcmp(pat, "*"))
        return true;
    if (pat[0] == '*') {
        const char *suffix = pat + 1; /* ".x.y" */
        size_t sl = strlen(suffix);
        return l > sl && !strcasecmp(n + l - sl, suffix);
    }
    return !strcasecmp(n, pat);
}

/* First match by scanning every rule in order. *by_range_known is false
 * when the deciding rule matched through a name as well (see
 * test_by_range_rule_with_name_and_range for that case). */
static void naive_check(const struct acl *a, const struct acl_req *q, struct acl_result *res,
                        bool *by_range_known)
{
    res->verdict = a->default_action == ACL_DENY ? ACL_V_DENY : ACL_V_ALLOW;
    res->rule = -1;
    res->by_range = false;
    *by_range_known = true;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct acl_rule *r = &a->rules[i];
        if (r->cmds && !(r->cmds & q->cmd))
            continue;
        if (r->any_user && !q->user)
            continue;
        if (r->user && (!q->user || strcmp(r->user, q->user)))
            continue;
        bool ok = !r->nports;
        for (unsigned k = 0; k < r->nports; k++)
            ok |= q->port >= r->ports[k].lo && q->port <= r->ports[k].hi;
        if (!ok)
            continue;
        ok = !r->nfrom;
        for (unsigned k = 0; k < r->nfrom; k++)
            ok |= naive_contains(&r->from[k], q->client);
        if (!ok)
            continue;
        bool by_name = false, by_range = false;
        for (unsigned k = 0; k < r->ndomains; k++)
            by_name |=
                !strcmp(r->domains[k], "*") || (q->name && naive_domain(r->domains[k], q->name));
        if (q->ip)
            for (unsigned k = 0; k < r->nto; k++)
                by_range |= naive_contains(&r->to[k], q->ip);
        if ((!r->nto && !r->ndomains) || by_name || by_range) {
            res->verdict = r->action == ACL_DENY ? ACL_V_DENY : ACL_V_ALLOW;
            res->rule = (int32_t)i;
            res->by_range = by_range;
            *by_range_known = !by_name;
            return;
        }
        if (r->nto && !q->ip) {
            res->verdict = ACL_V_NEED_IP;
            res->rule = (int32_t)i;
            return;
        }
    }
}

static const char *const rnd_users[] = {"alice", "bob", "carol"};
static const char *const rnd_names[] = {
    "example.com",   "a.example.com", "b.a.example.com", "x.y.example.com",      "example.org",
    "a.example.org", "localhost",     "a.localhost",     "deep.b.a.example.com", "other.net",
};

static void rnd_v4(struct harness_rng *g, char *out, size_t cap, uint8_t first)
{
    snprintf(out, cap, "%u.%u.%u.%u", first, harness_rng_below(g, 3),
             harness_rng_below(g, 2) * 128 + harness_rng_below(g, 3), harness_rng_below(g, 4));
}

static void rnd_v6(struct harness_rng *g, char *out, size_t cap, unsigned first)
{
    snprintf(out, cap, "2001:db8:%x:%x::%x", first, harness_rng_below(g, 3),
             harness_rng_below(g, 4));
}

static void rnd_cidr(struct harness_rng *g, char *out, size_t cap, bool dest)
{
    char a[64];
    static const unsigned bits4[] = {0, 8, 14, 16, 17, 24, 30, 32};
    static const unsigned bits6[] = {0, 32, 47, 48, 64, 126, 128};
    if (harness_rng_below(g, 3)) {
        rnd_v4(g, a, sizeof(a), dest ? 10 : 192);
        snprintf(out, cap, "%s/%u", a, bits4[harness_rng_below(g, 8)]);
    } else {
        rnd_v6(g, a, sizeof(a), dest ? 1 : 2);
        snprintf(out, cap, "%s/%u", a, bits6[harness_rng_below(g, 7)]);
    }
}

static void rnd_rule(struct harness_rng *g, char *line, size_t cap)
{
    size_t n = (size_t)snprintf(line, cap, "%s", harness_rng_below(g, 2) ? "allow" : "deny");
#define ADD(...) (n += (size_t)snprintf(line + n, cap - n, __VA_ARGS__))
    if (harness_rng_below(g, 4) == 0) {
        ADD(" from");
        for (unsigned k = 0, m = 1 + harness_rng_below(g, 2); k < m; k++) {
            char c[80];
            rnd_cidr(g, c, sizeof(c), false);
            ADD("%s %s", k ? "," : "", c);
        }
    }
    unsigned u = harness_rng_below(g, 8);
    if (u == 0)
        ADD(" user *");
    else if (u == 1)
        ADD(" user %s", rnd_users[harness_rng_below(g, 3)]);
    if (harness_rng_below(g, 5)) {
        ADD(" to");
        for (unsigned k = 0, m = 1 + harness_rng_below(g, 3); k < m; k++) {
            unsigned kind = harness_rng_below(g, 20);
            if (kind < 10) {
                char c[80];
                rnd_cidr(g, c, sizeof(c), true);
                ADD(" %s", c);
            } else if (kind < 14) {
                ADD(" %s", rnd_names[harness_rng_below(g, 10)]);
            } else if (kind < 19) {
                const char *nm = rnd_names[harness_rng_below(g, 10)];
                const char *dot = strchr(nm, '.');
                ADD(" *.%s", dot && harness_rng_below(g, 2) ? dot + 1 : nm);
            } else {
                ADD(" *");
            }
        }
    }
    if (harness_rng_below(g, 3) == 0) {
        ADD(" port");
        for (unsigned k = 0, m = 1 + harness_rng_below(g, 2); k < m; k++) {
            unsigned lo = 1 + harness_rng_below(g, 12);
            ADD(" %u-%u", lo, lo + harness_rng_below(g, 4));
        }
    }
    if (harness_rng_below(g, 4) == 0) {
        static const char *const cmds[] = {"connect", "udp", "bind", "http"};
        ADD(" cmd %s,%s", cmds[harness_rng_below(g, 4)], cmds[harness_rng_below(g, 4)]);
    }
#undef ADD
    assert_true(n < cap);
}

static void rnd_name(struct harness_rng *g, char *out, size_t cap)
{
    const char *nm = rnd_names[harness_rng_below(g, 10)];
    size_t n = (size_t)snprintf(out, cap, "%s%s", harness_rng_below(g, 5) ? "" : "zz.", nm);
    if (harness_rng_below(g, 4) == 0)
        for (size_t i = 0; i < n; i++)
            out[i] = (char)(out[i] >= 'a' && out[i] <= 'z' ? out[i] - 32 : out[i]);
    if (harness_rng_below(g, 4) == 0 && n + 1 < cap) {
        out[n] = '.';
        out[n + 1] = '\0';
    }
}

/* Compare index and scan on nreq random requests against nrules random
 * rules; returns the verdict counts seen (so a test can insist that every
 * kind came up). */
static void compare_random(uint64_t seed, uint32_t nrules, uint32_t nreq, unsigned seen[3])
{
    struct harness_rng g;
    harness_rng_init(&g, seed);
    struct acl_rule *rules = calloc(nrules, sizeof(*rules));
    assert_non_null(rules);
    for (uint32_t i = 0; i < nrules; i++) {
        char line[512], name[32], err[256];
        rnd_rule(&g, line, sizeof(line));
        snprintf(name, sizeof(name), "r:%u", i);
        if (acl_rule_parse(line, name, &rules[i], err, sizeof(err)) != 0)
            fail_msg("random rule '%s' refused: %s", line, err);
    }
    struct acl *a = NULL;
    uint8_t def = harness_rng_below(&g, 2) ? ACL_ALLOW : ACL_DENY;
    assert_int_equal(acl_build(&a, rules, nrules, def), 0);
    keep(a);
    for (uint32_t i = 0; i < nreq; i++) {
        char client_s[64], ip_s[64], name[300];
        struct addr client, dst;
        if (harness_rng_below(&g, 3))
            rnd_v4(&g, client_s, sizeof(client_s), 192);
        else
            rnd_v6(&g, client_s, sizeof(client_s), 2);
        client = ip(client_s);
        unsigned kind = harness_rng_below(&g, 4); /* ip only, name only, both, neither */
        bool has_ip = kind == 0 || kind == 2, has_name = kind == 1 || kind == 2;
        if (has_ip) {
            if (harness_rng_below(&g, 3))
                rnd_v4(&g, ip_s, sizeof(ip_s), 10);
            else
                rnd_v6(&g, ip_s, sizeof(ip_s), 1);
            dst = ip(ip_s);
        }
        if (has_name)
            rnd_name(&g, name, sizeof(name));
        unsigned u = harness_rng_below(&g, 5);
        struct acl_req q = {
            &client,
            u < 3    ? rnd_users[u]
            : u == 3 ? "dave"
                     : NULL,
            (uint8_t)(1u << harness_rng_below(&g, 4)),
            has_name ? name : NULL,
            has_ip ? &dst : NULL,
            (uint16_t)(1 + harness_rng_below(&g, 18)),
        };
        struct acl_result got, want;
        bool br_known;
        acl_check(a, &q, &got);
        naive_check(a, &q, &want, &br_known);
        if (got.verdict != want.verdict || got.rule != want.rule ||
            (br_known && got.by_range != want.by_range)) {
            fail_msg("seed %llu request %u (client %s user %s cmd %u name %s ip %s port %u): "
                     "index says verdict %d rule %d by_range %d, scan says %d rule %d "
                     "by_range %d%s",
                     (unsigned long long)seed, i, client_s, q.user ? q.user : "-", q.cmd,
                     has_name ? name : "-", has_ip ? ip_s : "-", q.port, (int)got.verdict,
                     (int)got.rule, got.by_range, (int)want.verdict, (int)want.rule, want.by_range,
                     want.rule >= 0 ? "" : " (default)");
        }
        seen[want.verdict]++;
    }
    release(a);
}

static void test_index_matches_scan(void **state)
{
    (void)state;
    unsigned seen[3] = {0, 0, 0};
    /* Few rules (most requests fall through to the default), a middling
     * set, and thousands (almost every request meets a rule early). */
    compare_random(1, 8, 20000, seen);
    compare_random(2, 60, 20000, seen);
    compare_random(3, 400, 20000, seen);
    compare_random(4, 3000, 5000, seen);
    for (uint64_t s = 10; s < 40; s++)
        compare_random(s, 1 + (uint32_t)(s * 7 % 50), 2000, seen);
    /* Every verdict came up often: the comparison was not vacuous. */
    assert_true(seen[ACL_V_ALLOW] > 1000);
    assert_true(seen[ACL_V_DENY] > 1000);
    assert_true(seen[ACL_V_NEED_IP] > 1000);
}

/* Rules nested deeply along one path: a from-range rule at every prefix
 * length of an IPv6 client, and destination ranges at every prefix length
 * of the destination. No candidate may be lost however many trie nodes
 * lie on the way. */
static void test_index_deep_nesting(void **state)
{
    (void)state;
    const uint32_t n = 129 + 129 + 1;
    struct acl_rule *rules = calloc(n, sizeof(*rules));
    assert_non_null(rules);
    uint32_t k = 0;
    char line[128], name[32], err[256];
    for (unsigned b = 0; b <= 128; b++, k++) {
        /* Client ranges, none of which can match a CONNECT. */
        snprintf(line, sizeof(line), "allow from 2001:db8:2::1/%u cmd bind", b);
        snprintf(name, sizeof(name), "n:%u", k);
        assert_int_equal(acl_rule_parse(line, name, &rules[k], err, sizeof(err)), 0);
    }
    for (unsigned b = 0; b <= 127; b++, k++) {
        snprintf(line, sizeof(line), "allow to 2001:db8:1::1/%u cmd udp", b);
        snprintf(name, sizeof(name), "n:%u", k);
        assert_int_equal(acl_rule_parse(line, name, &rules[k], err, sizeof(err)), 0);
    }
    const uint32_t deny_at = k;
    assert_int_equal(
        acl_rule_parse("deny to 2001:db8:1::1/128", "n:deny", &rules[k++], err, sizeof(err)), 0);
    snprintf(line, sizeof(line), "deny to 10.0.0.1");
    assert_int_equal(acl_rule_parse(line, "n:last", &rules[k++], err, sizeof(err)), 0);
    assert_int_equal(k, n);
    struct acl *a = NULL;
    assert_int_equal(acl_build(&a, rules, n, ACL_ALLOW), 0);
    keep(a);

    struct addr client = ip("2001:db8:2::1"), dst = ip("2001:db8:1::1");
    struct acl_req q = {&client, NULL, ACL_CMD_CONNECT, NULL, &dst, 443};
    struct acl_result res, want;
    bool known;
    acl_check(a, &q, &res);
    naive_check(a, &q, &want, &known);
    assert_int_equal(want.verdict, ACL_V_DENY);
    assert_int_equal(want.rule, (int32_t)deny_at);
    if (res.verdict != want.verdict || res.rule != want.rule)
        fail_msg("deeply nested ranges: index says verdict %d rule %d, a scan says deny by "
                 "rule %u ('deny to 2001:db8:1::1/128'): candidates were lost",
                 (int)res.verdict, (int)res.rule, deny_at);
    release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_parse_full_rule, teardown),
        cmocka_unit_test_teardown(test_parse_minimal_and_spacing, teardown),
        cmocka_unit_test_teardown(test_parse_errors_structure, teardown),
        cmocka_unit_test_teardown(test_parse_errors_values, teardown),
        cmocka_unit_test_teardown(test_cidr_parse, teardown),
        cmocka_unit_test_teardown(test_cidr_contains, teardown),
        cmocka_unit_test_teardown(test_domain_match, teardown),
        cmocka_unit_test_teardown(test_first_match_order, teardown),
        cmocka_unit_test_teardown(test_matcher_from, teardown),
        cmocka_unit_test_teardown(test_matcher_user, teardown),
        cmocka_unit_test_teardown(test_matcher_to_ranges, teardown),
        cmocka_unit_test_teardown(test_matcher_to_domains, teardown),
        cmocka_unit_test_teardown(test_matcher_port_and_cmd, teardown),
        cmocka_unit_test_teardown(test_need_ip, teardown),
        cmocka_unit_test_teardown(test_by_range, teardown),
        cmocka_unit_test_teardown(test_by_range_rule_with_name_and_range, teardown),
        cmocka_unit_test_teardown(test_default, teardown),
        cmocka_unit_test_teardown(test_open_rule, teardown),
        cmocka_unit_test_teardown(test_rule_through_several_keys, teardown),
        cmocka_unit_test_teardown(test_index_matches_scan, teardown),
        cmocka_unit_test_teardown(test_index_deep_nesting, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
