/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostpat.c: matching host names against patterns with '*' labels, and
 * filling templates with the captures (hostpat.h). Labels are compared
 * from the right, so the one label that may stand for several (a leading
 * '*') takes whatever is left. Pure: no I/O, no allocation, no logging.
 */
#include "proto/hostpat.h"

#include <string.h>

#define LABELS_MAX 128 /* a 255-byte name has at most 128 labels */

struct span {
    uint16_t off, len;
};

/* The labels of canonical name s (no empty label): their count, or 0. */
static unsigned labels(const char *s, struct span *out)
{
    unsigned n = 0;
    size_t start = 0, i = 0;
    for (;; i++) {
        if (s[i] == '.' || s[i] == '\0') {
            if (n == LABELS_MAX)
                return 0;
            out[n].off = (uint16_t)start;
            out[n++].len = (uint16_t)(i - start);
            if (s[i] == '\0')
                return n;
            start = i + 1;
        }
    }
}

static bool is_star(const char *s, struct span l)
{
    return l.len == 1 && s[l.off] == '*';
}

size_t hostpat_canon(const char *s, size_t n, char *out, unsigned *ncaps)
{
    char tmp[HOSTNAME_MAX + 1];
    unsigned stars = 0;
    if (n == 0 || n > HOSTNAME_MAX)
        return 0;
    /* Each '*' label stands in as "x" for the name check, then returns. */
    for (size_t i = 0; i < n; i++) {
        bool star = s[i] == '*';
        if (star && ((i > 0 && s[i - 1] != '.') || (i + 1 < n && s[i + 1] != '.')))
            return 0;
        stars += star;
        tmp[i] = star ? 'x' : s[i];
    }
    size_t len = hostname_canon((const uint8_t *)tmp, n, out);
    if (!len || stars > HOSTPAT_CAPS_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '*')
            out[i] = '*';
    struct span l[LABELS_MAX];
    unsigned nl = labels(out, l);
    if (nl == 0 || stars >= nl)
        return 0; /* at least one literal label */
    *ncaps = stars;
    return len;
}

bool hostpat_match(const char *pat, const char *host, struct hostpat_caps *caps)
{
    struct span p[LABELS_MAX], h[LABELS_MAX];
    unsigned np = labels(pat, p), nh = labels(host, h);
    if (!np || !nh)
        return false;
    bool lead = is_star(pat, p[0]);
    if (nh < np || (nh > np && !lead))
        return false;
    struct hostpat_caps got = {.n = 0};
    unsigned extra = nh - np; /* labels the leading '*' takes beyond one */
    for (unsigned i = 0; i < np; i++) {
        struct span hl = h[i == 0 ? 0 : i + extra];
        if (i == 0 && lead) /* labels 0..extra of host */
            hl.len = (uint16_t)(h[extra].off + h[extra].len - h[0].off);
        if (is_star(pat, p[i])) {
            got.c[got.n].off = hl.off;
            got.c[got.n++].len = hl.len;
        } else if (p[i].len != hl.len || memcmp(pat + p[i].off, host + hl.off, hl.len)) {
            return false;
        }
    }
    if (caps)
        *caps = got;
    return true;
}

unsigned hostpat_literals(const char *pat)
{
    struct span p[LABELS_MAX];
    unsigned np = labels(pat, p), lit = 0;
    for (unsigned i = 0; i < np; i++)
        lit += !is_star(pat, p[i]);
    return lit;
}

const char *hostpat_suffix(const char *pat)
{
    const char *last = NULL;
    for (const char *p = pat; (p = strchr(p, '*')) != NULL; p++)
        last = p;
    return last && last[1] == '.' ? last + 2 : pat;
}

static bool is_ldh_or_dot(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.';
}

int hostpat_template_check(const char *t, size_t n, unsigned ncaps)
{
    if (n == 0)
        return HOSTPAT_E_SYNTAX;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '{') {
            if (i + 2 >= n || t[i + 2] != '}' || t[i + 1] < '1' || t[i + 1] > '9')
                return HOSTPAT_E_SYNTAX;
            if ((unsigned)(t[i + 1] - '0') > ncaps)
                return HOSTPAT_E_CAPTURE;
            i += 2;
        } else if (!is_ldh_or_dot(t[i])) {
            return HOSTPAT_E_SYNTAX;
        }
    }
    return 0;
}

int hostpat_expand(const char *t, const char *host, const struct hostpat_caps *caps, char *out,
                   size_t cap)
{
    char raw[HOSTNAME_MAX + 1];
    size_t n = 0;
    for (size_t i = 0; t[i]; i++) {
        const char *piece = t + i;
        size_t len = 1;
        if (t[i] == '{') {
            if (t[i + 1] < '1' || t[i + 1] > '9' || t[i + 2] != '}')
                return HOSTPAT_E_SYNTAX;
            unsigned k = (unsigned)(t[i + 1] - '1');
            if (!caps || k >= caps->n)
                return HOSTPAT_E_CAPTURE;
            piece = host + caps->c[k].off;
            len = caps->c[k].len;
            i += 2;
        }
        if (len > HOSTNAME_MAX - n)
            return HOSTPAT_E_TOO_LONG;
        memcpy(raw + n, piece, len);
        n += len;
    }
    /* A template names a host: no FQDN dot (hostname_canon would drop it). */
    char full[HOSTNAME_MAX + 1];
    size_t k = n && raw[n - 1] != '.' ? hostname_canon((const uint8_t *)raw, n, full) : 0;
    if (!k)
        return HOSTPAT_E_NAME;
    if (k + 1 > cap)
        return HOSTPAT_E_TOO_LONG;
    memcpy(out, full, k + 1);
    return (int)k;
}
