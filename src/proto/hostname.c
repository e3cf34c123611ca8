/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostname.c: the LDH check and canonical form of hostname.h, in one pass
 * over the bytes. Lives in proto/ with the sniffers that use it: pure code,
 * no I/O, no allocation, no logging.
 */
#include "proto/hostname.h"

static bool is_ldh(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

size_t hostname_canon(const uint8_t *s, size_t n, char *out)
{
    if (n == 0 || n > HOSTNAME_MAX)
        return 0;
    if (s[n - 1] == '.')
        n--; /* one trailing dot: the FQDN form */
    if (n == 0)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
        } else {
            if (!is_ldh(c) || (label == 0 && c == '-') || ++label > 63)
                return 0;
            if (c >= 'A' && c <= 'Z')
                c = (uint8_t)(c - 'A' + 'a');
        }
        out[i] = (char)c;
    }
    if (label == 0 || s[n - 1] == '-')
        return 0;
    out[n] = '\0';
    return n;
}
