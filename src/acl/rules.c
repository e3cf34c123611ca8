/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rules.c: parsing, indexing and first-match evaluation of access rules.
 * Pure: no I/O, no logging, no globals; the index is built once and read
 * concurrently by every worker.
 */
#include "acl/rules.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "util/compiler.h"

/* ---- small parsers ------------------------------------------------------ */

int acl_cidr_parse(const char *s, struct acl_cidr *out)
{
    char ip[64];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(ip))
        return -EINVAL;
    memcpy(ip, s, n);
    ip[n] = '\0';
    struct addr a;
    if (addr_parse_ip(ip, 0, &a))
        return -EINVAL;
    unsigned max = a.family == AF_INET6 ? 128 : 32, bits = max;
    if (slash) {
        const char *p = slash + 1;
        if (!*p)
            return -EINVAL;
        bits = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9' || bits > 128)
                return -EINVAL;
            bits = bits * 10 + (unsigned)(*p - '0');
        }
        if (bits > max)
            return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    out->family = a.family;
    out->bits = (uint8_t)bits;
    /* Keep only the network part: 10.1.2.3/8 means 10.0.0.0/8. */
    for (unsigned i = 0; i < max / 8; i++) {
        unsigned keep = bits >= (i + 1) * 8 ? 8 : bits > i * 8 ? bits - i * 8 : 0;
        out->ip[i] = (uint8_t)(a.ip[i] & (uint8_t)(0xff00u >> keep));
    }
    return 0;
}

bool acl_cidr_contains(const struct acl_cidr *c, const struct addr *a)
{
    if (c->family != a->family)
        return false;
    unsigned full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->ip, a->ip, full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff00u >> rest);
    return (a->ip[full] & mask) == c->ip[full];
}

bool acl_domain_match(const char *pattern, const char *name)
{
    if (strcmp(pattern, "*") == 0)
        return true;
    size_t nl = strlen(name);
    if (nl && name[nl - 1] == '.')
        nl--; /* a trailing dot is the same name */
    if (pattern[0] == '*' && pattern[1] == '.') {
        size_t sl = strlen(pattern + 1); /* ".suffix" */
        return nl > sl && strncasecmp(name + nl - sl, pattern + 1, sl) == 0;
    }
    return strlen(pattern) == nl && strncasecmp(pattern, name, nl) == 0;
}

static bool domain_ok(const char *d)
{
    if (strcmp(d, "*") == 0)
        return true;
    if (d[0] == '*') {
        if (d[1] != '.' || !d[2])
            return false;
        d += 2;
    }
    size_t n = strlen(d);
    if (n == 0 || n > 253)
        return false;
    for (const char *p = d; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_')
            return false;
    return true;
}

static int port_parse(const char *s, struct acl_ports *out)
{
    unsigned lo = 0, hi;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((lo = lo * 10 + (unsigned)(*p - '0')) > 65535)
            return -EINVAL;
    if (p == s)
        return -EINVAL;
    hi = lo;
    if (*p == '-') {
        const char *q = ++p;
        hi = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if ((hi = hi * 10 + (unsigned)(*p - '0')) > 65535)
                return -EINVAL;
        if (p == q)
            return -EINVAL;
    }
    if (*p || lo == 0 || hi < lo)
        return -EINVAL;
    out->lo = (uint16_t)lo;
    out->hi = (uint16_t)hi;
    return 0;
}

/* ---- rule lines ----------------------------------------------------------- */

void acl_rule_fini(struct acl_rule *r)
{
    free(r->name);
    free(r->user);
    free(r->from);
    free(r->to);
    for (unsigned i = 0; i < r->ndomains; i++)
        free(r->domains[i]);
    free(r->domains);
    free(r->ports);
    free(r->via);
    memset(r, 0, sizeof(*r));
}

#define GROW(arr, n) ((arr) = realloc((arr), ((size_t)(n) + 1) * sizeof(*(arr))))

static bool is_keyword(const char *w)
{
    return !strcmp(w, "from") || !strcmp(w, "user") || !strcmp(w, "to") || !strcmp(w, "port") ||
           !strcmp(w, "cmd") || !strcmp(w, "via");
}

/* One value of a matcher. Returns 0 or -EINVAL with err filled. */
static int add_value(struct acl_rule *r, const char *kw, const char *v, char *err, size_t errlen)
{
    if (!strcmp(kw, "from")) {
        struct acl_cidr c;
        if (acl_cidr_parse(v, &c)) {
            snprintf(err, errlen, "'%s' is not an address or range (e.g. 10.0.0.0/8, ::1)", v);
            return -EINVAL;
        }
        if (!GROW(r->from, r->nfrom))
            return -ENOMEM;
        r->from[r->nfrom++] = c;
    } else if (!strcmp(kw, "to")) {
        struct acl_cidr c;
        if (acl_cidr_parse(v, &c) == 0) {
            if (!GROW(r->to, r->nto))
                return -ENOMEM;
            r->to[r->nto++] = c;
        } else if (domain_ok(v)) {
            if (!GROW(r->domains, r->ndomains))
                return -ENOMEM;
            char *d = strdup(v);
            if (!d)
                return -ENOMEM;
            for (char *p = d; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            r->domains[r->ndomains++] = d;
        } else {
            snprintf(err, errlen,
                     "'%s' is neither an address range nor a domain (e.g. 10.0.0.0/8, "
                     "example.com, *.example.com)",
                     v);
            return -EINVAL;
        }
    } else if (!strcmp(kw, "via")) {
        /* One name; the config checks that it names an outbound. */
        if (r->via) {
            snprintf(err, errlen, "'via' takes one outbound name, not a list");
            return -EINVAL;
        }
        if (r->action != ACL_ALLOW) {
            snprintf(err, errlen, "'via' goes with allow: a denied session leaves nowhere");
            return -EINVAL;
        }
        if (!(r->via = strdup(v)))
            return -ENOMEM;
    } else if (!strcmp(kw, "port")) {
        struct acl_ports p;
        if (port_parse(v, &p)) {
            snprintf(err, errlen, "'%s' is not a port or range (e.g. 443, 8000-8999)", v);
            return -EINVAL;
        }
        if (!GROW(r->ports, r->nports))
            return -ENOMEM;
        r->ports[r->nports++] = p;
    } else if (!strcmp(kw, "cmd")) {
        static const struct {
            const char *n;
            uint8_t bit;
        } cmds[] = {{"connect", ACL_CMD_CONNECT},
                    {"udp", ACL_CMD_UDP},
                    {"bind", ACL_CMD_BIND},
                    {"http", ACL_CMD_HTTP},
                    {"reverse", ACL_CMD_REVERSE}};
        size_t i;
        for (i = 0; i < ARRAY_LEN(cmds); i++)
            if (!strcasecmp(v, cmds[i].n))
                break;
        if (i == ARRAY_LEN(cmds)) {
            snprintf(err, errlen, "'%s' is not a command (connect, udp, bind, http, reverse)", v);
            return -EINVAL;
        }
        r->cmds |= cmds[i].bit;
    } else { /* user */
        if (r->user || r->any_user) {
            snprintf(err, errlen, "one user per rule (write one rule per user)");
            return -EINVAL;
        }
        if (!strcmp(v, "*")) {
            r->any_user = true;
        } else {
            for (const char *p = v; *p; p++) {
                if ((unsigned char)*p <= 0x20 || *p == ':' || *p == 0x7f) {
                    snprintf(err, errlen, "'%s' is not a user name", v);
                    return -EINVAL;
                }
            }
            if (!(r->user = strdup(v)))
                return -ENOMEM;
        }
    }
    return 0;
}

int acl_rule_parse(const char *line, const char *name, struct acl_rule *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->via_index = -1;
    char buf[4096];
    if (strlen(line) >= sizeof(buf)) {
        snprintf(err, errlen, "rule longer than %zu characters", sizeof(buf) - 1);
        return -EINVAL;
    }
    snprintf(buf, sizeof(buf), "%s", line);
    /* Values may be written "a,b", "a, b" or "a ,b": make commas spaces,
     * every word after a keyword up to the next keyword is one value. */
    for (char *p = buf; *p; p++)
        if (*p == ',' || *p == '\t')
            *p = ' ';
    char *save = NULL, *w = strtok_r(buf, " ", &save);
    if (!w) {
        snprintf(err, errlen, "empty rule");
        return -EINVAL;
    }
    if (!strcasecmp(w, "allow")) {
        out->action = ACL_ALLOW;
    } else if (!strcasecmp(w, "deny")) {
        out->action = ACL_DENY;
    } else {
        snprintf(err, errlen, "a rule starts with allow or deny, not '%s'", w);
        return -EINVAL;
    }
    const char *kw = NULL;
    unsigned seen = 0, nvals = 0;
    int rc = 0;
    while (!rc && (w = strtok_r(NULL, " ", &save))) {
        if (is_keyword(w)) {
            if (kw && nvals == 0) {
                snprintf(err, errlen, "'%s' needs a value", kw);
                rc = -EINVAL;
                break;
            }
            unsigned bit = !strcmp(w, "from")   ? 1u
                           : !strcmp(w, "user") ? 2u
                           : !strcmp(w, "to")   ? 4u
                           : !strcmp(w, "port") ? 8u
                           : !strcmp(w, "cmd")  ? 16u
                                                : 32u;
            if (seen & bit) {
                snprintf(err, errlen, "'%s' given twice (list the values after one)", w);
                rc = -EINVAL;
                break;
            }
            seen |= bit;
            kw = w;
            nvals = 0;
            continue;
        }
        if (!kw) {
            snprintf(err, errlen, "'%s' where from, user, to, port, cmd or via was expected", w);
            rc = -EINVAL;
            break;
        }
        rc = add_value(out, kw, w, err, errlen);
        nvals++;
    }
    if (!rc && kw && nvals == 0) {
        snprintf(err, errlen, "'%s' needs a value", kw);
        rc = -EINVAL;
    }
    if (!rc && !(out->name = strdup(name)))
        rc = -ENOMEM;
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc)
        acl_rule_fini(out);
    return rc;
}

/* ---- the index ---------------------------------------------------------------- */

struct acl_trie {
    struct acl_tnode *nodes;
    uint32_t n, cap;
};

struct acl_tnode {
    int32_t child[2];
    uint32_t *rules;
    uint32_t nrules;
};

struct acl_dom {
    char *key; /* "=name", ".suffix", "*", or "@user" (rules with only a user) */
    uint32_t *rules;
    uint32_t nrules;
    struct acl_dom *next; /* chain */
};

static int list_add(uint32_t **list, uint32_t *n, uint32_t v)
{
    if (*n && (*list)[*n - 1] == v)
        return 0; /* a rule listing two values under one key */
    uint32_t *nl = realloc(*list, ((size_t)*n + 1) * sizeof(**list));
    if (!nl)
        return -ENOMEM;
    nl[(*n)++] = v;
    *list = nl;
    return 0;
}

static int32_t trie_node(struct acl_trie *t)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct acl_tnode *nn = realloc(t->nodes, cap * sizeof(*nn));
        if (!nn)
            return -1;
        t->nodes = nn;
        t->cap = cap;
    }
    struct acl_tnode *x = &t->nodes[t->n];
    x->child[0] = x->child[1] = -1;
    x->rules = NULL;
    x->nrules = 0;
    return (int32_t)t->n++;
}

static int trie_insert(struct acl_trie *t, const struct acl_cidr *c, uint32_t rule)
{
    if (t->n == 0 && trie_node(t) < 0)
        return -ENOMEM;
    int32_t cur = 0;
    for (unsigned i = 0; i < c->bits; i++) {
        int bit = (c->ip[i / 8] >> (7 - i % 8)) & 1;
        if (t->nodes[cur].child[bit] < 0) {
            int32_t nn = trie_node(t);
            if (nn < 0)
                return -ENOMEM;
            t->nodes[cur].child[bit] = nn;
        }
        cur = t->nodes[cur].child[bit];
    }
    return list_add(&t->nodes[cur].rules, &t->nodes[cur].nrules, rule);
}

static void trie_free(struct acl_trie *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n; i++)
        free(t->nodes[i].rules);
    free(t->nodes);
    free(t);
}

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (uint8_t)tolower((unsigned char)*s);
        h *= 16777619u;
    }
    return h;
}

static struct acl_dom *dom_find(const struct acl *a, const char *key)
{
    if (!a->ndom)
        return NULL;
    for (struct acl_dom *d = a->dom[str_hash(key) & (a->ndom - 1)].next; d; d = d->next)
        if (strcasecmp(d->key, key) == 0)
            return d;
    return NULL;
}

static int dom_add(struct acl *a, const char *key, uint32_t rule)
{
    struct acl_dom *d = dom_find(a, key);
    if (!d) {
        d = calloc(1, sizeof(*d));
        if (!d || !(d->key = strdup(key))) {
            free(d);
            return -ENOMEM;
        }
        struct acl_dom *head = &a->dom[str_hash(key) & (a->ndom - 1)];
        d->next = head->next;
        head->next = d;
    }
    return list_add(&d->rules, &d->nrules, rule);
}

void acl_free(struct acl *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n; i++)
        acl_rule_fini(&a->rules[i]);
    free(a->rules);
    trie_free(a->trie4);
    trie_free(a->trie6);
    trie_free(a->from4);
    trie_free(a->from6);
    free(a->nodest);
    free(a->cidr_rules);
    for (uint32_t i = 0; i < a->ndom; i++) {
        struct acl_dom *d = a->dom[i].next;
        while (d) {
            struct acl_dom *next = d->next;
            free(d->key);
            free(d->rules);
            free(d);
            d = next;
        }
    }
    free(a->dom);
    free(a);
}

int acl_build(struct acl **out, struct acl_rule *rules, uint32_t n, uint8_t default_action)
{
    struct acl *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->rules = rules;
    a->n = n;
    a->default_action = default_action;
    a->trie4 = calloc(1, sizeof(*a->trie4));
    a->trie6 = calloc(1, sizeof(*a->trie6));
    a->from4 = calloc(1, sizeof(*a->from4));
    a->from6 = calloc(1, sizeof(*a->from6));
    uint32_t nd = 16;
    for (uint32_t i = 0; i < n; i++)
        nd += rules[i].ndomains + 1;
    a->ndom = 16;
    while (a->ndom < nd)
        a->ndom *= 2;
    a->dom = calloc(a->ndom, sizeof(*a->dom));
    int rc = (!a->trie4 || !a->trie6 || !a->from4 || !a->from6 || !a->dom) ? -ENOMEM : 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        const struct acl_rule *r = &rules[i];
        /* Neither destination nor client range: by the user it names, so
         * thousands of "allow user uN ..." rules are not all scanned. */
        if (!r->nto && !r->ndomains && !r->nfrom) {
            if (r->user) {
                char key[260];
                snprintf(key, sizeof(key), "@%s", r->user);
                rc = dom_add(a, key, i);
            } else {
                rc = list_add(&a->nodest, &a->nnodest, i);
            }
        }
        /* No destination but client ranges: found through the client. */
        for (unsigned k = 0; !r->nto && !r->ndomains && k < r->nfrom && !rc; k++)
            rc = trie_insert(r->from[k].family == AF_INET6 ? a->from6 : a->from4, &r->from[k], i);
        if (!rc && r->nto)
            rc = list_add(&a->cidr_rules, &a->ncidr_rules, i);
        for (unsigned k = 0; k < r->nto && !rc; k++)
            rc = trie_insert(r->to[k].family == AF_INET6 ? a->trie6 : a->trie4, &r->to[k], i);
        for (unsigned k = 0; k < r->ndomains && !rc; k++) {
            const char *d = r->domains[k];
            char key[260];
            if (!strcmp(d, "*"))
                snprintf(key, sizeof(key), "*");
            else if (d[0] == '*')
                snprintf(key, sizeof(key), "%s", d + 1); /* ".suffix" */
            else
                snprintf(key, sizeof(key), "=%s", d);
            rc = dom_add(a, key, i);
        }
    }
    if (rc) {
        a->rules = NULL; /* the caller still owns them on failure */
        a->n = 0;
        acl_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- evaluation ------------------------------------------------------------------ */

struct span {
    const uint32_t *p;
    uint32_t n;
};

/* Every list that can hold a candidate: rules without destination (1), the
 * client's trie path (up to 129 nodes), the user's rules (1), "*" (1), the name and each of its
 * suffixes (the lookup key holds at most 258 bytes of a name, so at most 129
 * dots: 130), the destination's trie path (129). Dropping one would skip
 * rules, so there is room for all. */
#define MAX_SPANS (1 + 129 + 1 + 1 + 130 + 129)

static void span_add(struct span *s, unsigned *ns, const uint32_t *p, uint32_t n)
{
    if (n && *ns < MAX_SPANS)
        s[(*ns)++] = (struct span){p, n};
    else if (n)
        *ns = MAX_SPANS + 1; /* cannot happen (see MAX_SPANS); acl_check fails closed */
}

/* The rule lists of every trie node on the way to ip's leaf. */
static void trie_spans(const struct acl_trie *t, const struct addr *ip, struct span *spans,
                       unsigned *ns)
{
    unsigned bits = ip->family == AF_INET6 ? 128 : 32;
    int32_t cur = t->n ? 0 : -1;
    for (unsigned i = 0; cur >= 0; i++) {
        span_add(spans, ns, t->nodes[cur].rules, t->nodes[cur].nrules);
        if (i == bits)
            break;
        cur = t->nodes[cur].child[(ip->ip[i / 8] >> (7 - i % 8)) & 1];
    }
}

static bool match_common(const struct acl_rule *r, const struct acl_req *q)
{
    if (r->cmds && !(r->cmds & q->cmd))
        return false;
    if (r->any_user && !q->user)
        return false;
    if (r->user && (!q->user || strcmp(r->user, q->user) != 0))
        return false;
    if (r->nports) {
        bool ok = false;
        for (unsigned i = 0; i < r->nports && !ok; i++)
            ok = q->port >= r->ports[i].lo && q->port <= r->ports[i].hi;
        if (!ok)
            return false;
    }
    if (r->nfrom) {
        bool ok = false;
        for (unsigned i = 0; i < r->nfrom && !ok; i++)
            ok = acl_cidr_contains(&r->from[i], q->client);
        if (!ok)
            return false;
    }
    return true;
}

void acl_check(const struct acl *a, const struct acl_req *q, struct acl_result *res)
{
    res->rule = -1;
    res->by_range = false;
    res->verdict = a->default_action == ACL_DENY ? ACL_V_DENY : ACL_V_ALLOW;
    if (!a->n)
        return;

    /* Candidates: rules without destination, rules whose domains match the
     * name, and rules whose ranges hold the address (all range rules while
     * the address is unknown). Each list is in rule order. */
    struct span spans[MAX_SPANS];
    unsigned ns = 0;
    span_add(spans, &ns, a->nodest, a->nnodest);
    trie_spans(q->client->family == AF_INET6 ? a->from6 : a->from4, q->client, spans, &ns);
    if (q->user) {
        char ukey[260];
        snprintf(ukey, sizeof(ukey), "@%s", q->user);
        struct acl_dom *u = dom_find(a, ukey);
        if (u)
            span_add(spans, &ns, u->rules, u->nrules);
    }
    struct acl_dom *d = dom_find(a, "*");
    if (d)
        span_add(spans, &ns, d->rules, d->nrules);
    if (q->name) {
        char key[260];
        snprintf(key, sizeof(key), "=%s", q->name);
        size_t kl = strlen(key);
        if (kl > 1 && key[kl - 1] == '.')
            key[--kl] = '\0';
        if ((d = dom_find(a, key)))
            span_add(spans, &ns, d->rules, d->nrules);
        for (const char *p = key + 1; (p = strchr(p, '.')); p++) {
            if ((d = dom_find(a, p)))
                span_add(spans, &ns, d->rules, d->nrules);
        }
    }
    if (q->ip) {
        trie_spans(q->ip->family == AF_INET6 ? a->trie6 : a->trie4, q->ip, spans, &ns);
    } else {
        span_add(spans, &ns, a->cidr_rules, a->ncidr_rules);
    }

    if (ns > MAX_SPANS) {
        res->verdict = ACL_V_DENY; /* never decide on a partial view */
        return;
    }
    uint32_t last = UINT32_MAX;
    for (;;) {
        /* the smallest rule index among the span heads */
        unsigned best = ns;
        for (unsigned i = 0; i < ns; i++) {
            while (spans[i].n && spans[i].p[0] == last) {
                spans[i].p++; /* the same rule reached through two keys */
                spans[i].n--;
            }
            if (spans[i].n && (best == ns || spans[i].p[0] < spans[best].p[0]))
                best = i;
        }
        if (best == ns)
            return;
        uint32_t idx = spans[best].p[0];
        spans[best].p++;
        spans[best].n--;
        last = idx;
        const struct acl_rule *r = &a->rules[idx];
        if (!match_common(r, q))
            continue;
        bool dest = !r->nto && !r->ndomains, by_range = false, unknown = false;
        for (unsigned k = 0; k < r->ndomains && !dest; k++)
            dest = !strcmp(r->domains[k], "*") ||
                   (q->name && acl_domain_match(r->domains[k], q->name));
        /* by_range: the rule names a range holding the address, whether or
         * not its name matched first (it then opens protected ranges). */
        for (unsigned k = 0; k < r->nto && q->ip && !by_range; k++)
            by_range = acl_cidr_contains(&r->to[k], q->ip);
        dest = dest || by_range;
        if (!dest && r->nto && !q->ip)
            unknown = true;
        if (dest) {
            res->rule = (int32_t)idx;
            res->verdict = r->action == ACL_DENY ? ACL_V_DENY : ACL_V_ALLOW;
            res->by_range = by_range;
            return;
        }
        if (unknown) {
            res->rule = (int32_t)idx;
            res->verdict = ACL_V_NEED_IP;
            return;
        }
    }
}

/* ---- the open-proxy guard -------------------------------------------------------- */

/* Does the list hold a /0 of family (0: of either family)? */
static bool has_slash0(const struct acl_cidr *c, unsigned n, int family)
{
    for (unsigned i = 0; i < n; i++)
        if (c[i].bits == 0 && (!family || c[i].family == family))
            return true;
    return false;
}

static bool has_star(const struct acl_rule *r)
{
    for (unsigned i = 0; i < r->ndomains; i++)
        if (!strcmp(r->domains[i], "*"))
            return true;
    return false;
}

int32_t acl_open_rule(const struct acl *a, uint8_t default_action)
{
    for (uint32_t i = 0; a && i < a->n; i++) {
        const struct acl_rule *r = &a->rules[i];
        if (r->user || r->any_user)
            continue; /* matches authenticated clients only */
        bool no_to = !r->nto && !r->ndomains;
        if (r->action == ACL_ALLOW) {
            bool anyone = !r->nfrom || has_slash0(r->from, r->nfrom, 0);
            bool anywhere = no_to || has_star(r) || has_slash0(r->to, r->nto, 0);
            if (anyone && anywhere)
                return (int32_t)i;
        } else {
            bool everyone = !r->nfrom || (has_slash0(r->from, r->nfrom, AF_INET) &&
                                          has_slash0(r->from, r->nfrom, AF_INET6));
            bool everything =
                no_to || has_star(r) ||
                (has_slash0(r->to, r->nto, AF_INET) && has_slash0(r->to, r->nto, AF_INET6));
            if (everyone && everything && !r->nports && !r->cmds)
                return ACL_OPEN_NONE;
        }
    }
    return default_action == ACL_DENY ? ACL_OPEN_NONE : ACL_OPEN_DEFAULT;
}
