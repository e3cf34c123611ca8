/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reverse.c: the reverse remotes of an HTTP/2 outbound ("reverse = ..."
 * in [outbound NAME], what `ferry client R:...` writes): a port the
 * server opens for us, whose connections come back through the tunnel
 * and leave from this host. Parsing, and the egress check of a socks
 * remote (which private ranges its clients may reach here); no I/O. The
 * streams are relay/outbound_h2rev.c's.
 *
 *   reverse = 127.0.0.1:2222 forward=127.0.0.1:22     # R:2222:127.0.0.1:22
 *   reverse = 0.0.0.0:1080 socks allow=10.1.0.0/16    # R:0.0.0.0:1080:socks
 *   reverse = 127.0.0.1:5353 forward=127.0.0.1:53 udp # R:5353:127.0.0.1:53/udp
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "acl/rules.h"
#include "config/outbound.h"
#include "util/parse.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -EINVAL)

/* "CIDR,CIDR,..." into r->allow. 0 or -EINVAL (err set). */
static int parse_allow(struct config_reverse *r, const char *v, char *err, size_t errlen)
{
    char word[64];
    while (*v) {
        size_t n = strcspn(v, ",");
        if (n == 0 || n >= sizeof(word))
            return ERR("allow: '%s' is not a list of CIDR ranges", v);
        memcpy(word, v, n);
        word[n] = '\0';
        if (r->nallow == REVERSE_ALLOW_MAX)
            return ERR("allow: more than %d ranges", REVERSE_ALLOW_MAX);
        if (acl_cidr_parse(word, &r->allow[r->nallow]))
            return ERR("allow: '%s' is not an address or CIDR range (e.g. 10.0.0.0/8)", word);
        r->nallow++;
        v += n + (v[n] == ',');
    }
    return 0;
}

/* One word after the bind address. 0 or -EINVAL. */
static int parse_option(struct config_reverse *r, const char *w, char *err, size_t errlen)
{
    if (!strcmp(w, "socks")) {
        r->socks = true;
        return 0;
    }
    if (!strcmp(w, "udp")) {
        r->udp = true;
        return 0;
    }
    if (!strncmp(w, "forward=", 8)) {
        int rc = parse_host_port(w + 8, r->host, sizeof(r->host), &r->port);
        return rc ? ERR("forward: '%s' is not HOST:PORT", w + 8) : 0;
    }
    if (!strncmp(w, "allow=", 6))
        return parse_allow(r, w + 6, err, errlen);
    return ERR("unknown option '%s' (known: forward=HOST:PORT, socks, udp, allow=CIDR,...)", w);
}

int outbound_reverse_add(struct config_outbound *o, const char *v, char *err, size_t errlen)
{
    if (o->nrev == OUTBOUND_REVERSE_MAX)
        return ERR("more than %d reverse remotes", OUTBOUND_REVERSE_MAX);
    struct config_reverse r;
    memset(&r, 0, sizeof(r));
    char word[300];
    const char *p = v;
    bool first = true;
    while (*p) {
        size_t n = strcspn(p, " \t");
        if (n >= sizeof(word))
            return ERR("'%s': a word is too long", v);
        if (n) {
            memcpy(word, p, n);
            word[n] = '\0';
            if (first && addr_parse(word, -1, &r.bind))
                return ERR("'%s' is not ADDR:PORT (the address the server binds, e.g. "
                           "127.0.0.1:2222 or [::1]:2222)",
                           word);
            if (!first && parse_option(&r, word, err, errlen))
                return -EINVAL;
            first = false;
        }
        p += n + (p[n] != '\0');
    }
    if (first || r.socks == (r.port != 0))
        return ERR("'%s': expected ADDR:PORT forward=HOST:PORT, or ADDR:PORT socks", v);
    if (r.udp && r.socks)
        return ERR("'%s': udp applies to a forward only (UDP ASSOCIATE on a reverse socks "
                   "port is not supported)",
                   v);
    if (r.nallow && !r.socks)
        return ERR("'%s': allow= applies to a socks remote only (a forward reaches its one "
                   "target)",
                   v);
    struct config_reverse *g = realloc(o->rev, (o->nrev + 1u) * sizeof(*g));
    if (!g)
        return -ENOMEM;
    o->rev = g;
    o->rev[o->nrev++] = r;
    return 0;
}

/* Loopback, link-local, private (RFC 1918, RFC 4193), shared (RFC 6598),
 * unspecified, multicast or broadcast: places on the client's side that a
 * peer of the server must not reach by default. */
static bool is_inside(const struct addr *a)
{
    const uint8_t *ip = a->ip;
    if (addr_is_loopback(a) || addr_is_any(a) || addr_is_multicast_or_broadcast(a))
        return true;
    if (a->family == AF_INET)
        return ip[0] == 10 || ip[0] == 0 || (ip[0] == 169 && ip[1] == 254) ||
               (ip[0] == 172 && (ip[1] & 0xf0) == 16) || (ip[0] == 192 && ip[1] == 168) ||
               (ip[0] == 100 && (ip[1] & 0xc0) == 64);
    return (ip[0] & 0xfe) == 0xfc || (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80);
}

bool outbound_reverse_egress_ok(const struct config_reverse *r, const struct addr *a)
{
    for (uint8_t i = 0; i < r->nallow; i++)
        if (acl_cidr_contains(&r->allow[i], a))
            return true;
    return !is_inside(a);
}

const char *outbound_reverse_format(const struct config_reverse *r, char *buf, size_t len)
{
    char b[ADDR_STRLEN];
    addr_format(&r->bind, b, sizeof(b));
    if (r->socks)
        snprintf(buf, len, "R:%s:socks", b);
    else
        snprintf(buf, len, strchr(r->host, ':') ? "R:%s:[%s]:%u%s" : "R:%s:%s:%u%s", b, r->host,
                 (unsigned)r->port, r->udp ? "/udp" : "");
    return buf;
}
