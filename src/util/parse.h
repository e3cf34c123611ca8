/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse.h: bounded parsing of the words operators write: whole numbers,
 * durations, sizes and booleans. Every function takes a NUL-terminated word,
 * accepts the whole word or nothing, and returns 0 or a negative errno
 * (-EINVAL malformed, -ERANGE outside [min, max]). Nothing here logs.
 */
#ifndef FERRY_UTIL_PARSE_H
#define FERRY_UTIL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decimal digits only: no sign, no spaces, no hex. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* "250ms", "10s", "5m", "1h", "7d", or a bare number of seconds ("10");
 * compounds name each unit once, largest first, with no spaces: "1h30m",
 * "2d12h", "1m30s", "1s500ms". A sum that does not fit in 64 bits, like
 * any value outside [min_ms, max_ms], is -ERANGE. */
int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out_ms);

/* "65536", "64k", "64KiB", "1m", "1MiB", "1g" (binary multiples). */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* yes/no, true/false, on/off, 1/0 (case-insensitive). */
int parse_bool(const char *s, bool *out);

/* Copy src into dst[cap] with NUL; returns -ENAMETOOLONG when it does not fit. */
int str_copy(char *dst, size_t cap, const char *src);

/* A destination "HOST:PORT" (a DNS name or an IPv4 address), or
 * "[IPV6]:PORT" (RFC 3986's brackets): host gets the name or the address
 * without brackets, *port 1..65535. -EINVAL for a missing part, an
 * unbalanced bracket, an IPv6 address without brackets or a character a
 * host name cannot have; -ERANGE for a port outside 1..65535;
 * -ENAMETOOLONG when the host does not fit in cap (or is over 253). */
int parse_host_port(const char *s, char *host, size_t cap, uint16_t *port);

/* Trim ASCII spaces and tabs in place; returns the start of the trimmed text. */
char *str_trim(char *s);

/* The value of one hexadecimal digit, either case ('0'..'9', 'a'..'f',
 * 'A'..'F'), or -1 for any other byte (as an unsigned char or EOF). */
int hex_digit(int c);

#endif
