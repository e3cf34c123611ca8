/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostname.h: the host-name rule shared by the edge-mode sniffers (mcsniff,
 * tlshello): is a byte string an LDH host name, and what is its canonical
 * form for matching routes. Pure: no I/O, no allocation, no logging; util
 * only. It must not grow into a resolver or an IDN converter: a name that is
 * not already ASCII LDH (an IDN must arrive as xn-- punycode) is refused.
 */
#ifndef FERRY_PROTO_HOSTNAME_H
#define FERRY_PROTO_HOSTNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest raw name accepted (trailing dot included), as the wire formats cap it. */
#define HOSTNAME_MAX 255

/*
 * Accepts s[0..n) when it is 1..HOSTNAME_MAX bytes of dot-separated labels,
 * each label 1..63 bytes of ASCII letters, digits and '-', not starting or
 * ending with '-', optionally followed by one trailing dot ("a.example." is
 * the FQDN form an SRV lookup gives). Nothing else: no '_', no '*', no
 * empty label, no IP-literal brackets or ':'. On success writes the
 * canonical form to out (lowercased, the trailing dot dropped,
 * NUL-terminated; out must hold HOSTNAME_MAX + 1 bytes) and returns its
 * length (1..254); returns 0 when the name is refused (out then undefined).
 */
size_t hostname_canon(const uint8_t *s, size_t n, char *out);

#endif
