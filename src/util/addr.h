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
bool addr_equal(const struct addr *a, const struct addr *b);

#endif
