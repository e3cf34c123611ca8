/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * remote.c: the parser of `ferry client`'s remote words (remote.h). A word
 * is split at the colons that are outside brackets, then read right to
 * left: the last part says what it is (socks, or a destination port).
 * Pure: no syscalls, no allocation, no logging.
 */
#include "client/remote.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/parse.h"

#define REMOTE_MAX_PARTS 4
#define REMOTE_WORD_MAX  600

#define FAIL(...) (snprintf(err, errlen, __VA_ARGS__), -1)

/* Split s at colons outside [...] into parts (each NUL-terminated in
 * buf). Returns the count, or -1 on an unbalanced bracket or too many
 * parts (-2). */
static int split_parts(const char *s, char *buf, size_t cap, char **parts)
{
    size_t n = strlen(s);
    if (n + 1 > cap)
        return -2;
    memcpy(buf, s, n + 1);
    int np = 0, depth = 0;
    parts[np++] = buf;
    for (char *p = buf; *p; p++) {
        if (*p == '[') {
            if (depth++)
                return -1;
        } else if (*p == ']') {
            if (!depth--)
                return -1;
        } else if (*p == ':' && !depth) {
            if (np == REMOTE_MAX_PARTS)
                return -2;
            *p = '\0';
            parts[np++] = p + 1;
        }
    }
    return depth ? -1 : np;
}

/* A port part: 1..65535. */
static int port_of(const char *s, uint16_t *port)
{
    uint64_t v;
    if (parse_u64(s, 1, 65535, &v))
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* A local address part: an IP address ([v6] in brackets) or localhost. */
static int local_of(const char *s, uint16_t port, struct addr *a)
{
    if (strcmp(s, "localhost") == 0)
        s = "127.0.0.1";
    char ip[64];
    size_t n = strlen(s);
    if (*s == '[') {
        if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(ip))
            return -1;
        memcpy(ip, s + 1, n - 2);
        ip[n - 2] = '\0';
        if (!strchr(ip, ':'))
            return -1;
    } else {
        if (strchr(s, ':') || n >= sizeof(ip))
            return -1;
        memcpy(ip, s, n + 1);
    }
    return addr_parse_ip(ip, port, a) ? -1 : 0;
}

/* Strip "R:" and "/tcp" or "/udp" off word into buf. */
static int strip_affixes(const char *s, struct remote *r, char *buf, size_t cap, char *err,
                         size_t errlen)
{
    if (strncmp(s, "R:", 2) == 0) {
        r->reverse = true;
        s += 2;
    }
    size_t n = strlen(s);
    if (n + 1 > cap)
        return FAIL("remote '%.60s...': too long", s);
    memcpy(buf, s, n + 1);
    char *slash = strrchr(buf, '/');
    if (slash) {
        if (strcmp(slash, "/udp") == 0)
            r->udp = true;
        else if (strcmp(slash, "/tcp") != 0)
            return FAIL("remote '%s': unknown suffix '%s' (expected /tcp or /udp)", s, slash);
        *slash = '\0';
    }
    return 0;
}

/* HOST:PORT of a destination, from two parts. */
static int dest_of(const char *word, const char *host, const char *port, struct remote *r,
                   char *err, size_t errlen)
{
    char hp[REMOTE_WORD_MAX];
    snprintf(hp, sizeof(hp), "%s:%s", host, port);
    if (!*host)
        return FAIL("remote '%s': the destination host is missing", word);
    if (!*port)
        return FAIL("remote '%s': the destination port is missing", word);
    int rc = parse_host_port(hp, r->host, sizeof(r->host), &r->port);
    if (rc == -ERANGE || (rc && port_of(port, &r->port)))
        return FAIL("remote '%s': bad destination port '%s' (expected 1-65535)", word, port);
    if (rc)
        return FAIL("remote '%s': bad destination host '%s' (a DNS name, an IPv4 address or an "
                    "IPv6 address in brackets)",
                    word, host);
    return 0;
}

/* The local side, [ADDR:]PORT, from nparts parts (1 or 2). */
static int listen_of(const char *word, char **parts, int nparts, struct remote *r, char *err,
                     size_t errlen)
{
    const char *port = parts[nparts - 1];
    uint16_t p;
    if (!*port)
        return FAIL("remote '%s': the local port is missing", word);
    if (port_of(port, &p))
        return FAIL("remote '%s': bad local port '%s' (expected 1-65535)", word, port);
    const char *a = nparts == 2 ? parts[0] : "127.0.0.1";
    if (local_of(a, p, &r->local))
        return FAIL("remote '%s': bad local address '%s' (an IP address, IPv6 in brackets, or "
                    "localhost)",
                    word, a);
    return 0;
}

int remote_parse(const char *s, struct remote *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    char word[REMOTE_WORD_MAX], buf[REMOTE_WORD_MAX];
    if (!*s)
        return FAIL("remote '': empty");
    if (strip_affixes(s, r, word, sizeof(word), err, errlen))
        return -1;
    char *parts[REMOTE_MAX_PARTS];
    int np = split_parts(word, buf, sizeof(buf), parts);
    if (np == -1)
        return FAIL("remote '%s': unbalanced brackets", s);
    if (np < 0)
        return FAIL("remote '%s': too many parts (expected [ADDR:]PORT:HOST:PORT, "
                    "[ADDR:]PORT:socks or stdio:HOST:PORT)",
                    s);
    if (strcmp(parts[0], "stdio") == 0) {
        r->kind = REMOTE_STDIO;
        if (r->reverse)
            return FAIL("remote '%s': stdio cannot be reversed", s);
        if (r->udp)
            return FAIL("remote '%s': stdio carries no /udp", s);
        if (np != 3)
            return FAIL("remote '%s': expected stdio:HOST:PORT", s);
        return dest_of(s, parts[1], parts[2], r, err, errlen);
    }
    if (strcmp(parts[np - 1], "socks") == 0) {
        r->kind = REMOTE_SOCKS;
        if (r->udp)
            return FAIL("remote '%s': socks takes no /udp (SOCKS5 carries UDP itself)", s);
        if (np == 1) {
            char port[8];
            snprintf(port, sizeof(port), "%d", REMOTE_SOCKS_PORT);
            char *dflt[1] = {port};
            return listen_of(s, dflt, 1, r, err, errlen);
        }
        if (np > 3)
            return FAIL("remote '%s': expected [ADDR:]PORT:socks", s);
        return listen_of(s, parts, np - 1, r, err, errlen);
    }
    r->kind = REMOTE_FORWARD;
    if (np < 3)
        return FAIL("remote '%s': expected [ADDR:]PORT:HOST:PORT, [ADDR:]PORT:socks, socks or "
                    "stdio:HOST:PORT",
                    s);
    if (listen_of(s, parts, np - 2, r, err, errlen))
        return -1;
    return dest_of(s, parts[np - 2], parts[np - 1], r, err, errlen);
}

/* Two listeners that cannot both bind: one port, and one address or
 * either the wildcard of the same family. */
static bool clash(const struct addr *a, const struct addr *b)
{
    if (a->port != b->port)
        return false;
    if (addr_equal(a, b))
        return true;
    return a->family == b->family && (addr_is_any(a) || addr_is_any(b));
}

int remote_check_list(const struct remote *v, size_t n, char *err, size_t errlen)
{
    size_t stdio = 0;
    char x[300], y[300];
    for (size_t i = 0; i < n; i++) {
        if (v[i].kind == REMOTE_STDIO && ++stdio > 1)
            return FAIL("at most one stdio remote (second: '%s')",
                        remote_format(&v[i], x, sizeof(x)));
        if (v[i].kind == REMOTE_STDIO)
            continue;
        for (size_t j = 0; j < i; j++) {
            if (v[j].kind == REMOTE_STDIO || v[j].reverse != v[i].reverse || v[j].udp != v[i].udp)
                continue;
            if (clash(&v[i].local, &v[j].local))
                return FAIL("remotes '%s' and '%s' use the same local port %u",
                            remote_format(&v[j], x, sizeof(x)), remote_format(&v[i], y, sizeof(y)),
                            v[i].local.port);
        }
    }
    return 0;
}

const char *remote_format(const struct remote *r, char *buf, size_t len)
{
    char local[ADDR_STRLEN] = "", dest[300] = "";
    if (r->kind != REMOTE_STDIO)
        addr_format(&r->local, local, sizeof(local));
    if (r->kind != REMOTE_SOCKS)
        snprintf(dest, sizeof(dest), strchr(r->host, ':') ? "[%s]:%u" : "%s:%u", r->host, r->port);
    snprintf(buf, len, "%s%s%s%s%s", r->reverse ? "R:" : "",
             r->kind == REMOTE_STDIO ? "stdio" : local, ":",
             r->kind == REMOTE_SOCKS ? "socks" : dest, r->udp ? "/udp" : "");
    return buf;
}
