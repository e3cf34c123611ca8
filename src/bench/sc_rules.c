/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sc_rules.c: the cost of one access-rule lookup, with --rules synthetic
 * rules (a realistic mix: blocked address ranges, blocked and allowed
 * domains and suffixes, per-user and per-port rules), measured on the
 * compiled index and, for comparison, by evaluating every rule in order.
 * No proxy and no network: this is the decision alone. An index that
 * decides otherwise than the scan is wrong, and fails the run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/rules.h"
#include "bench/bench.h"

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int make_rules(uint32_t n, struct acl_rule **out)
{
    struct acl_rule *r = calloc(n ? n : 1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    uint64_t s = 0x1234567887654321ull;
    char line[200], name[32], err[200];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = rng_next(&s);
        switch (x % 10) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4:
        case 5: /* a blocked range, as from a blocklist */
            snprintf(line, sizeof(line), "deny to %u.%u.%u.0/%u", (unsigned)(x >> 8) % 223 + 1,
                     (unsigned)(x >> 16) & 255, (unsigned)(x >> 24) & 255,
                     16 + (unsigned)(x >> 32) % 9);
            break;
        case 6:
        case 7: /* a blocked domain */
            snprintf(line, sizeof(line), "deny to *.d%llu.example", (unsigned long long)(x >> 20));
            break;
        case 8: /* a user's allowance */
            snprintf(line, sizeof(line), "allow user u%u to 10.%u.0.0/16 port 443",
                     (unsigned)(x >> 8) % 1000, (unsigned)(x >> 16) & 255);
            break;
        default: /* a port rule for a network */
            snprintf(line, sizeof(line), "deny from 192.168.%u.0/24 port %u-%u",
                     (unsigned)(x >> 8) & 255, (unsigned)(x >> 16) % 1000 + 1,
                     (unsigned)(x >> 16) % 1000 + 100);
            break;
        }
        snprintf(name, sizeof(name), "bench:%u", i + 1);
        if (acl_rule_parse(line, name, &r[i], err, sizeof(err))) {
            fprintf(stderr, "ferry bench: rule %s: %s\n", line, err);
            for (uint32_t k = 0; k < i; k++)
                acl_rule_fini(&r[k]);
            free(r);
            return -EINVAL;
        }
    }
    *out = r;
    return 0;
}

/* The same decision, rule by rule, with no index. */
static int32_t linear(const struct acl *a, const struct acl_req *q)
{
    for (uint32_t i = 0; i < a->n; i++) {
        const struct acl_rule *r = &a->rules[i];
        if (r->cmds && !(r->cmds & q->cmd))
            continue;
        if ((r->any_user || r->user) && (!q->user || (r->user && strcmp(r->user, q->user))))
            continue;
        bool ok = !r->nports;
        for (unsigned k = 0; k < r->nports && !ok; k++)
            ok = q->port >= r->ports[k].lo && q->port <= r->ports[k].hi;
        if (!ok)
            continue;
        ok = !r->nfrom;
        for (unsigned k = 0; k < r->nfrom && !ok; k++)
            ok = acl_cidr_contains(&r->from[k], q->client);
        if (!ok)
            continue;
        ok = !r->nto && !r->ndomains;
        for (unsigned k = 0; k < r->nto && !ok && q->ip; k++)
            ok = acl_cidr_contains(&r->to[k], q->ip);
        for (unsigned k = 0; k < r->ndomains && !ok && q->name; k++)
            ok = acl_domain_match(r->domains[k], q->name);
        if (ok)
            return (int32_t)i;
    }
    return -1;
}

struct probe {
    struct addr client, ip;
    char name[64];
    uint16_t port;
};

int scenario_rules(struct bench *b, struct result *res)
{
    uint32_t n = b->o.nrules;
    struct acl_rule *rules;
    struct acl *a;
    int rc = make_rules(n, &rules);
    if (rc)
        return rc;
    if ((rc = acl_build(&a, rules, n, ACL_ALLOW))) {
        for (uint32_t k = 0; k < n; k++)
            acl_rule_fini(&rules[k]);
        free(rules);
        return rc;
    }
    enum { NPROBES = 4096 };
    struct probe *pr = calloc(NPROBES, sizeof(*pr));
    if (!pr) {
        acl_free(a);
        return -ENOMEM;
    }
    uint64_t s = 42;
    for (int i = 0; i < NPROBES; i++) {
        uint64_t x = rng_next(&s);
        pr[i].client = (struct addr){.family = AF_INET, .ip = {192, 168, (uint8_t)(x >> 8), 7}};
        pr[i].ip = (struct addr){.family = AF_INET,
                                 .ip = {(uint8_t)((x >> 16) % 223 + 1), (uint8_t)(x >> 24),
                                        (uint8_t)(x >> 32), (uint8_t)(x >> 40)}};
        snprintf(pr[i].name, sizeof(pr[i].name), "www.d%llu.example",
                 (unsigned long long)(x >> 44) % (n ? n * 4 : 1));
        pr[i].port = (uint16_t)(x % 2 ? 443 : (x >> 48) % 2000 + 1);
    }

    double secs = b->o.duration_s > 0 ? b->o.duration_s : 1;
    uint64_t denied = 0, agree = 0, checked = 0;
    int first_bad = -1;
    int32_t bad_index = 0, bad_scan = 0;
    /* First, outside any timing: the index must decide as the scan does. */
    for (int i = 0; i < 512; i++) {
        const struct probe *p = &pr[i];
        struct acl_req q = {&p->client,      (i & 7) ? NULL : "u7",
                            ACL_CMD_CONNECT, (i & 1) ? p->name : NULL,
                            &p->ip,          p->port};
        struct acl_result r;
        acl_check(a, &q, &r);
        checked++;
        int32_t scan = linear(a, &q);
        agree += r.rule == scan;
        if (r.rule != scan && first_bad < 0) {
            first_bad = i;
            bad_index = r.rule;
            bad_scan = scan;
        }
    }
    if (first_bad >= 0)
        bench_fail(b,
                   "rules: the index decided otherwise than the scan on %llu of %llu lookups "
                   "(first: probe %d, index rule %d, scan rule %d; -1 is none)",
                   (unsigned long long)(checked - agree), (unsigned long long)checked, first_bad,
                   (int)bad_index, (int)bad_scan);
    for (int pass = 0; pass < 2; pass++) {
        uint64_t t0 = now_ns(), count = 0, deadline = t0 + (uint64_t)(secs * 1e9);
        while (now_ns() < deadline) {
            for (int i = 0; i < NPROBES; i++) {
                const struct probe *p = &pr[i];
                struct acl_req q = {&p->client,      (i & 7) ? NULL : "u7",
                                    ACL_CMD_CONNECT, (i & 1) ? p->name : NULL,
                                    &p->ip,          p->port};
                if (pass == 0) {
                    struct acl_result r;
                    acl_check(a, &q, &r);
                    denied += r.verdict == ACL_V_DENY;
                } else {
                    denied += linear(a, &q) >= 0;
                }
            }
            count += NPROBES;
        }
        double ns = (double)(now_ns() - t0) / (double)count;
        result_add(res, pass == 0 ? "indexed_lookup" : "linear_lookup", "ns", ns);
    }
    result_add(res, "rules", "", n);
    result_add(res, "index_agrees", "%", checked ? 100.0 * (double)agree / (double)checked : 0);
    if (agree != checked)
        result_note(res, "the index and the scan disagreed on %llu of %llu lookups",
                    (unsigned long long)(checked - agree), (unsigned long long)checked);
    (void)denied;
    free(pr);
    acl_free(a);
    return 0;
}
