/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * addr.h: socket addresses as text and back. struct addr is ferry's compact
 * form of an IPv4/IPv6 address and port (20 bytes instead of the 128 of a
 * sockaddr_storage) for sessions, logs and caches; sockaddr conversions sit
 * next to it. Pure functions: no DNS, no I/O.
 */
#ifndef FERRY_UTIL_ADDR_H
#define FERRY_UTIL_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct addr {
    uint8_t family; /* AF_INET, AF_INET6, or 0 when unset */
    uint8_t pad;
    uint16_t port;  /* host byte order */
    uint8_t ip[16]; /* IPv4 in the first four bytes */
};

/* "[ffff:...:ffff]:65535" plus NUL fits. */
#define ADDR_STRLEN 48

void addr_from_sockaddr(struct addr *a, const struct sockaddr *sa);
/* Fills ss; returns the sockaddr length, or 0 when a is unset. */
socklen_t addr_to_sockaddr(const struct addr *a, struct sockaddr_storage *ss);

/* Numeric "1.2.3.4:80", "[::1]:80"; also "1.2.3.4", "::1" and "[::1]" when
 * default_port >= 0. Returns 0 or -EINVAL. */
int addr_parse(const char *text, int default_port, struct addr *out);
/* Parse a numeric IP (no port) of either family. Returns 0 or -EINVAL. */
int addr_parse_ip(const char *text, uint16_t port, struct addr *out);

/* "1.2.3.4:80" or "[::1]:80"; always NUL-terminates; returns buf. */
char *addr_format(const struct addr *a, char *buf, size_t len);
/* The address without port: "1.2.3.4" or "::1". */
char *addr_format_ip(const struct addr *a, char *buf, size_t len);

bool addr_is_loopback(const struct addr *a);
/* ::ffff:a.b.c.d, an IPv4 address in IPv6 form. */
bool addr_is_v4mapped(const struct addr *a);
/* Make an IPv4-mapped address plain IPv4 (as accept() reports them); any
 * other address is left alone. */
void addr_unmap(struct addr *a);
bool addr_is_any(const struct addr *a);
/* The IPv4 address that an IPv6 address of a translation or tunnel prefix
 * stands for: NAT64's well-known prefix 64:ff9b::/96 (RFC 6052: the last
 * 32 bits) and 6to4's 2002::/16 (RFC 3056: bits 16..47). Fills *v4 (the
 * port kept) and returns true, or returns false for any other address
 * (IPv4-mapped addresses are addr_unmap()'s). */
bool addr_embedded_v4(const struct addr *a, struct addr *v4);
/* Multicast (224.0.0.0/4, ff00::/8) or the limited broadcast
 * 255.255.255.255: destinations that are not one host. */
bool addr_is_multicast_or_broadcast(const struct addr *a);
bool addr_equal(const struct addr *a, const struct addr *b);
/* a's network: its first bits4 bits (IPv4) or bits6 bits (IPv6) kept, the
 * rest and the port zero (a key for per-network tables). */
struct addr addr_prefix(const struct addr *a, unsigned bits4, unsigned bits6);

#endif
