/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * addr.c: conversions between struct addr, sockaddrs and text. IPv4-mapped
 * IPv6 addresses (::ffff:a.b.c.d) are folded to IPv4 so that a dual-stack
 * listener logs and matches clients the way operators write them.
 */
#include "util/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

void addr_from_sockaddr(struct addr *a, const struct sockaddr *sa)
{
    memset(a, 0, sizeof(*a));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
        a->family = AF_INET;
        a->port = ntohs(sin->sin_port);
        memcpy(a->ip, &sin->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)sa;
        a->port = ntohs(sin6->sin6_port);
        if (memcmp(&sin6->sin6_addr, v4mapped_prefix, 12) == 0) {
            a->family = AF_INET;
            memcpy(a->ip, (const uint8_t *)&sin6->sin6_addr + 12, 4);
        } else {
            a->family = AF_INET6;
            memcpy(a->ip, &sin6->sin6_addr, 16);
        }
    }
}

socklen_t addr_to_sockaddr(const struct addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)(void *)ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(a->port);
        memcpy(&sin->sin_addr, a->ip, 4);
        return sizeof(*sin);
    }
    if (a->family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(void *)ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(a->port);
        memcpy(&sin6->sin6_addr, a->ip, 16);
        return sizeof(*sin6);
    }
    return 0;
}

int addr_parse_ip(const char *text, uint16_t port, struct addr *out)
{
    memset(out, 0, sizeof(*out));
    out->port = port;
    if (inet_pton(AF_INET, text, out->ip) == 1) {
        out->family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, text, out->ip) == 1) {
        out->family = AF_INET6;
        return 0;
    }
    return -EINVAL;
}

static int parse_port(const char *s, uint16_t *out)
{
    unsigned v = 0;
    if (!*s)
        return -EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > 65535)
            return -EINVAL;
    }
    *out = (uint16_t)v;
    return 0;
}

int addr_parse(const char *text, int default_port, struct addr *out)
{
    char host[INET6_ADDRSTRLEN + 1];
    const char *port_text = NULL;
    size_t hlen;

    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close)
            return -EINVAL;
        hlen = (size_t)(close - text - 1);
        if (close[1] == ':')
            port_text = close + 2;
        else if (close[1] != '\0')
            return -EINVAL;
        text++;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon && strchr(text, ':') == colon) {
            hlen = (size_t)(colon - text); /* exactly one colon: host:port */
            port_text = colon + 1;
        } else {
            hlen = strlen(text); /* no colon, or a bare IPv6 address */
        }
    }
    if (hlen == 0 || hlen >= sizeof(host))
        return -EINVAL;
    memcpy(host, text, hlen);
    host[hlen] = '\0';

    uint16_t port;
    if (port_text) {
        if (parse_port(port_text, &port))
            return -EINVAL;
    } else if (default_port >= 0 && default_port <= 65535) {
        port = (uint16_t)default_port;
    } else {
        return -EINVAL;
    }
    return addr_parse_ip(host, port, out);
}

char *addr_format_ip(const struct addr *a, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    if (!inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->ip, buf, (socklen_t)len))
        snprintf(buf, len, "?");
    if (a->family == 0)
        snprintf(buf, len, "-");
    return buf;
}

char *addr_format(const struct addr *a, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];
    addr_format_ip(a, ip, sizeof(ip));
    if (a->family == AF_INET6)
        snprintf(buf, len, "[%s]:%u", ip, a->port);
    else if (a->family == AF_INET)
        snprintf(buf, len, "%s:%u", ip, a->port);
    else
        snprintf(buf, len, "-");
    return buf;
}

bool addr_is_loopback(const struct addr *a)
{
    static const uint8_t v6_loopback[16] = {[15] = 1};
    if (a->family == AF_INET)
        return a->ip[0] == 127;
    if (a->family == AF_INET6)
        return memcmp(a->ip, v6_loopback, 16) == 0;
    return false;
}

bool addr_is_any(const struct addr *a)
{
    static const uint8_t zero[16];
    if (a->family == AF_INET)
        return memcmp(a->ip, zero, 4) == 0;
    if (a->family == AF_INET6)
        return memcmp(a->ip, zero, 16) == 0;
    return false;
}

bool addr_equal(const struct addr *a, const struct addr *b)
{
    if (a->family != b->family || a->port != b->port)
        return false;
    return memcmp(a->ip, b->ip, a->family == AF_INET ? 4 : 16) == 0;
}

bool addr_is_v4mapped(const struct addr *a)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return a->family == AF_INET6 && memcmp(a->ip, prefix, sizeof(prefix)) == 0;
}

void addr_unmap(struct addr *a)
{
    if (!addr_is_v4mapped(a))
        return;
    memmove(a->ip, a->ip + 12, 4);
    memset(a->ip + 4, 0, 12);
    a->family = AF_INET;
}

bool addr_embedded_v4(const struct addr *a, struct addr *v4)
{
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
    const uint8_t *p;
    if (a->family != AF_INET6)
        return false;
    if (memcmp(a->ip, nat64, sizeof(nat64)) == 0)
        p = a->ip + 12;
    else if (a->ip[0] == 0x20 && a->ip[1] == 0x02)
        p = a->ip + 2;
    else
        return false;
    memset(v4, 0, sizeof(*v4));
    v4->family = AF_INET;
    v4->port = a->port;
    memcpy(v4->ip, p, 4);
    return true;
}

bool addr_is_multicast_or_broadcast(const struct addr *a)
{
    if (a->family == AF_INET)
        return (a->ip[0] & 0xf0) == 0xe0 ||
               (a->ip[0] == 255 && a->ip[1] == 255 && a->ip[2] == 255 && a->ip[3] == 255);
    return a->family == AF_INET6 && a->ip[0] == 0xff;
}

struct addr addr_prefix(const struct addr *a, unsigned bits4, unsigned bits6)
{
    struct addr k = *a;
    k.port = 0;
    unsigned bits = k.family == AF_INET6 ? bits6 : bits4, len = k.family == AF_INET6 ? 16 : 4;
    for (unsigned i = 0; i < len; i++) {
        unsigned keep = bits > 8 * i ? bits - 8 * i : 0;
        if (keep < 8)
            k.ip[i] &= (uint8_t)(0xff00u >> keep);
    }
    return k;
}
