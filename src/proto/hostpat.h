/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostpat.h: host-name patterns with captures, and the templates their
 * captures fill, for edge-mode routes (docs/edge.md "Routes"). A pattern
 * is a host name some of whose labels are '*': the first label '*'
 * matches one or more labels ("*.example.com" takes a.example.com and
 * a.b.example.com, not example.com), any other '*' exactly one. Each '*'
 * is a capture, numbered from 1 left to right. A template is a host name
 * with {1}..{9} where captures go ("{1}.backends.internal"). Pure: no I/O,
 * no allocation, no logging; util and hostname.h only. Captured text is
 * part of a host the sniffers already checked (canonical LDH), so an
 * expansion is LDH too; it is checked again (labels, 255 bytes) anyway.
 */
#ifndef FERRY_PROTO_HOSTPAT_H
#define FERRY_PROTO_HOSTPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hostname.h"

#define HOSTPAT_CAPS_MAX 9 /* {1}..{9} */

enum hostpat_error {
    HOSTPAT_E_TOO_LONG = -1, /* the expansion is over HOSTNAME_MAX bytes */
    HOSTPAT_E_NAME = -2,     /* the expansion is not a host name (an empty or long label) */
    HOSTPAT_E_CAPTURE = -3,  /* a {N} the match did not capture */
    HOSTPAT_E_SYNTAX = -4,   /* a template that is not LDH, dots and {1}..{9} */
};

/* Where each capture of a match lies in the host it matched. */
struct hostpat_caps {
    uint8_t n;
    struct {
        uint16_t off, len;
    } c[HOSTPAT_CAPS_MAX];
};

/* The canonical form of pattern s[0..n) into out (HOSTNAME_MAX + 1 bytes):
 * its labels checked as hostname_canon() checks a name, '*' allowed as a
 * whole label; at most HOSTPAT_CAPS_MAX of them and at least one label that
 * is not '*'. Returns its length, 0 when refused. *ncaps: the '*' labels. */
size_t hostpat_canon(const char *s, size_t n, char *out, unsigned *ncaps);

/* Does canonical host match canonical pattern pat? On a match fills caps
 * (offsets into host). A pattern without '*' matches only itself. */
bool hostpat_match(const char *pat, const char *host, struct hostpat_caps *caps);

/* Labels of pat that are not '*' (the more, the more specific). */
unsigned hostpat_literals(const char *pat);

/* The part of pat after its last '*' label ("example.com" of
 * "*.example.com"; pat itself without one). */
const char *hostpat_suffix(const char *pat);

/* Check template t[0..n): letters, digits, '-', '.' and {1}..{9}, each
 * {N} at most ncaps. 0, or HOSTPAT_E_SYNTAX / HOSTPAT_E_CAPTURE. */
int hostpat_template_check(const char *t, size_t n, unsigned ncaps);

/* Expand NUL-ended template t with the captures of host into out (cap
 * bytes, NUL-ended), lower-cased and checked as a host name. Returns the
 * length, or an enum hostpat_error (< 0) with out undefined. */
int hostpat_expand(const char *t, const char *host, const struct hostpat_caps *caps, char *out,
                   size_t cap);

#endif
