/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostpat_fuzz.c: libFuzzer harness for the route patterns and templates
 * of proto/hostpat.
 *
 * The input is "PATTERN\nHOST\nTEMPLATE" (missing parts empty), each part
 * an exact-size heap copy so ASan sees any read past it. Checked: a
 * pattern that canonicalizes has at most HOSTPAT_CAPS_MAX captures and
 * canonicalizes to itself; a host that matches it fills exactly that many
 * captures, each a non-empty span inside the host; a template that passes
 * hostpat_template_check() expands to a canonical host name of at most
 * HOSTNAME_MAX bytes or to a listed error, never a capture error. Any
 * violation traps. Linked with only src/proto and util.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/hostpat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* The next '\n'-ended part of data as a heap copy (NUL-ended). */
static char *part(const uint8_t **p, const uint8_t *end, size_t *n)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    const uint8_t *stop = nl ? nl : end;
    *n = (size_t)(stop - *p);
    char *out = malloc(*n + 1);
    if (out) {
        memcpy(out, *p, *n);
        out[*n] = '\0';
    }
    *p = nl ? nl + 1 : end;
    return out;
}

static void check(const char *pat_in, size_t pn, const char *host_in, size_t hn, const char *t,
                  size_t tn)
{
    char pat[HOSTNAME_MAX + 1], again[HOSTNAME_MAX + 1], host[HOSTNAME_MAX + 1];
    unsigned ncaps, n2;
    size_t pl = hostpat_canon(pat_in, pn, pat, &ncaps);
    if (!pl)
        return;
    CHECK(ncaps <= HOSTPAT_CAPS_MAX && strlen(pat) == pl);
    CHECK(hostpat_canon(pat, pl, again, &n2) == pl && n2 == ncaps && !strcmp(pat, again));
    size_t hl = hostname_canon((const uint8_t *)host_in, hn, host);
    struct hostpat_caps caps;
    if (!hl || !hostpat_match(pat, host, &caps))
        return;
    CHECK(caps.n == ncaps);
    for (unsigned i = 0; i < caps.n; i++)
        CHECK(caps.c[i].len > 0 && caps.c[i].off + caps.c[i].len <= hl);
    if (hostpat_template_check(t, tn, ncaps) || memchr(t, '\0', tn))
        return;
    char out[HOSTNAME_MAX + 1], canon[HOSTNAME_MAX + 1];
    int rc = hostpat_expand(t, host, &caps, out, sizeof(out));
    CHECK(rc == HOSTPAT_E_TOO_LONG || rc == HOSTPAT_E_NAME || rc > 0);
    if (rc > 0)
        CHECK((size_t)rc <= HOSTNAME_MAX &&
              hostname_canon((const uint8_t *)out, (size_t)rc, canon) == (size_t)rc &&
              !strcmp(out, canon));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    size_t pn, hn, tn;
    char *pat = part(&p, end, &pn), *host = part(&p, end, &hn), *t = part(&p, end, &tn);
    if (pat && host && t)
        check(pat, pn, host, hn, t, tn);
    free(pat);
    free(host);
    free(t);
    return 0;
}
