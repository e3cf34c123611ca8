/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rules.h: access rules, compiled once per configuration and then only
 * read (by every worker, without locks).
 *
 * A rule is one line, first match wins:
 *
 *   allow from 10.0.0.0/8 user alice to *.example.com port 443
 *   deny to 169.254.0.0/16, fe80::/10
 *   allow user * cmd connect,http port 80,443,8000-8999
 *
 *   ACTION [from CIDR,...] [user NAME|*] [to CIDR|IP|DOMAIN|*.SUFFIX,...]
 *          [port N|N-M,...] [cmd connect|udp|bind|http,...] [via OUTBOUND]
 *
 * Every matcher given must match (values within one matcher are
 * alternatives). "user *" means any authenticated user. "via" names the
 * outbound an allowed session leaves through (config/outbound.h); the
 * config resolves the name to via_index. A "to" holding
 * address ranges applies to the address a name resolves to as well, so a
 * name cannot smuggle a request into a denied range (DNS rebinding).
 *
 * Lookups use an index: a binary trie over the destination ranges and a
 * hash of domain names and suffixes, so only rules that can match are
 * looked at, in order; thousands of rules cost a trie walk, not a scan.
 */
#ifndef FERRY_ACL_RULES_H
#define FERRY_ACL_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"

enum acl_action { ACL_ALLOW = 1, ACL_DENY = 2 };

enum acl_cmd {
    ACL_CMD_CONNECT = 1u << 0,
    ACL_CMD_UDP = 1u << 1,
    ACL_CMD_BIND = 1u << 2,
    ACL_CMD_HTTP = 1u << 3,
    ACL_CMD_REVERSE = 1u << 4, /* a reverse-tunnel bind (relay/h2rev.c) */
};

struct acl_cidr {
    uint8_t family, bits;
    uint8_t ip[16];
};

struct acl_ports {
    uint16_t lo, hi;
};

struct acl_rule {
    uint8_t action;
    uint8_t cmds; /* 0: any */
    bool any_user;
    char *user; /* exact name, or NULL */
    struct acl_cidr *from;
    struct acl_cidr *to;
    char **domains; /* lower case; "*.suffix", an exact name, or "*" */
    struct acl_ports *ports;
    uint16_t nfrom, nto, ndomains, nports;
    char *name;        /* "FILE:LINE", for logs and metrics */
    char *via;         /* "via NAME" as written, or NULL */
    int32_t via_index; /* index into config.outbounds; -1: the config's default */
};

struct acl_trie;

/* Compiled rules. Immutable once built; shared by reference with the
 * configuration that owns it. */
struct acl {
    struct acl_rule *rules;
    uint32_t n;
    uint8_t default_action;
    /* index */ struct acl_trie *trie4, *trie6;
    struct acl_trie *from4, *from6; /* rules with no "to", by client range */
    uint32_t *nodest;               /* rules with no "to", no "from" and no named user */
    uint32_t nnodest;
    uint32_t *cidr_rules; /* rules with at least one address range */
    uint32_t ncidr_rules;
    struct acl_dom *dom; /* hash of names and suffixes */
    uint32_t ndom;       /* buckets, a power of two */
};

/* A request as the rules see it. */
struct acl_req {
    const struct addr *client;
    const char *user;      /* authenticated name, or NULL */
    uint8_t cmd;           /* ACL_CMD_* */
    const char *name;      /* destination name, or NULL */
    const struct addr *ip; /* destination address, or NULL while unknown */
    uint16_t port;
};

enum acl_verdict {
    ACL_V_ALLOW,
    ACL_V_DENY,
    ACL_V_NEED_IP, /* the first rule that may match looks at the address: resolve first */
};

struct acl_result {
    enum acl_verdict verdict;
    int32_t rule;  /* index of the deciding rule, -1: the default */
    bool by_range; /* allowed by a rule naming an address range that holds ip */
};

/* Parse one rule line (text after any leading spaces). name is
 * "FILE:LINE". Returns 0, or -EINVAL with a message in err. */
int acl_rule_parse(const char *line, const char *name, struct acl_rule *out, char *err,
                   size_t errlen);
void acl_rule_fini(struct acl_rule *r);

/* Build from parsed rules (ownership of the array moves in). */
int acl_build(struct acl **out, struct acl_rule *rules, uint32_t n, uint8_t default_action);
void acl_free(struct acl *a);

void acl_check(const struct acl *a, const struct acl_req *r, struct acl_result *res);

/* acl_open_rule()'s answers besides a rule index. */
#define ACL_OPEN_DEFAULT (-1) /* rules_default = allow lets the rest through */
#define ACL_OPEN_NONE    (-2) /* no client without a user is let anywhere */

/* The open-proxy guard's question: do these rules let a client that has not
 * authenticated, from any address, reach destinations they do not narrow
 * down? a may be NULL (no rules: default_action decides alone). Rules are
 * read in order, as acl_check() would, skipping those naming a user (they
 * never match without authentication):
 *   - an allow rule with no "from", or one holding a /0 range, and no "to",
 *     or one holding "*" or a /0 range, answers its index: its "port" and
 *     "cmd" do not make it closed (any host on port 25 is an open relay);
 *   - a deny rule matching every client, every destination, port and
 *     command (plain "deny", or "deny from 0.0.0.0/0, ::/0 to *") answers
 *     ACL_OPEN_NONE: nothing after it is reached;
 *   - otherwise, at the end: ACL_OPEN_DEFAULT when default_action allows,
 *     ACL_OPEN_NONE when it denies.
 * An allow rule that names destinations ("to example.com", "to
 * 10.1.0.0/16") or client ranges narrower than everything is not an open
 * proxy however wide those are: the guard catches accidents, not intent. */
int32_t acl_open_rule(const struct acl *a, uint8_t default_action);

/* Does the name match the pattern ("*.suffix", exact, "*")? Case-insensitive. */
bool acl_domain_match(const char *pattern, const char *name);
bool acl_cidr_contains(const struct acl_cidr *c, const struct addr *a);
int acl_cidr_parse(const char *s, struct acl_cidr *out);

#endif
