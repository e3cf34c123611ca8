/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parse.c: number, duration, size and boolean words. Written by hand rather
 * than with strtoul so that signs, spaces, hex and silent wrap-around are all
 * rejected the same way.
 */
#include "util/parse.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "util/compiler.h"

/* Parse leading decimal digits; *end points past them. */
static int parse_digits(const char *s, const char **end, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *end = p;
    *out = v;
    return 0;
}

static int check_range(uint64_t v, uint64_t min, uint64_t max, uint64_t *out)
{
    if (v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *end;
    uint64_t v;
    int rc = parse_digits(s, &end, &v);
    if (rc)
        return rc;
    if (*end)
        return -EINVAL;
    return check_range(v, min, max, out);
}

static int scale(uint64_t v, uint64_t mul, uint64_t *out)
{
    if (mul && v > UINT64_MAX / mul)
        return -ERANGE;
    *out = v * mul;
    return 0;
}

int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *out_ms)
{
    /* A compound word names each unit at most once, largest first ("1h30m",
     * not "30m1h" or "1m1m"); rank is that order. "ms" is tried before "m". */
    static const struct {
        const char *suffix;
        size_t len;
        unsigned rank;
        uint64_t ms;
    } units[] = {{"d", 1, 0, 86400000},
                 {"h", 1, 1, 3600000},
                 {"ms", 2, 4, 1},
                 {"m", 1, 2, 60000},
                 {"s", 1, 3, 1000}};
    const char *p = s;
    uint64_t total = 0;
    unsigned next_rank = 0; /* the next unit must rank at least this */
    do {
        const char *end;
        uint64_t v, part;
        int rc = parse_digits(p, &end, &v);
        if (rc)
            return rc;
        if (p == s && *end == '\0') { /* a bare number is seconds */
            if (scale(v, 1000, &total))
                return -ERANGE;
            break;
        }
        size_t i = 0;
        while (i < ARRAY_LEN(units) && strncmp(end, units[i].suffix, units[i].len) != 0)
            i++;
        if (i == ARRAY_LEN(units) || units[i].rank < next_rank)
            return -EINVAL;
        next_rank = units[i].rank + 1;
        if (scale(v, units[i].ms, &part) || part > UINT64_MAX - total)
            return -ERANGE;
        total += part;
        p = end + units[i].len;
    } while (*p);
    return check_range(total, min_ms, max_ms, out_ms);
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"", 0},    {"b", 0},    {"k", 10}, {"kb", 10}, {"kib", 10}, {"m", 20},
                 {"mb", 20}, {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}};
    const char *end;
    uint64_t v, bytes;
    int rc = parse_digits(s, &end, &v);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            rc = scale(v, (uint64_t)1 << units[i].shift, &bytes);
            if (rc)
                return rc;
            return check_range(bytes, min, max, out);
        }
    }
    return -EINVAL;
}

int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

int str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, src, n + 1);
    return 0;
}

char *str_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* A DNS name's characters (letters, digits, '-', '.', '_'), or an IPv4
 * address's (a subset). */
static bool host_chars_ok(const char *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_';
        if (!ok)
            return false;
    }
    return n > 0;
}

/* An IPv6 literal's characters (hex digits, ':' and '.' for an embedded
 * IPv4 address). */
static bool ip6_chars_ok(const char *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                  c == ':' || c == '.';
        if (!ok)
            return false;
    }
    return n >= 2 && memchr(h, ':', n) != NULL;
}

int parse_host_port(const char *s, char *host, size_t cap, uint16_t *port)
{
    const char *h = s, *colon;
    size_t n;
    bool v6 = *s == '[';
    if (v6) {
        const char *close = strchr(s, ']');
        if (!close || memchr(s + 1, '[', (size_t)(close - s - 1)))
            return -EINVAL;
        h = s + 1;
        n = (size_t)(close - h);
        if (close[1] != ':' || !ip6_chars_ok(h, n))
            return -EINVAL;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || strchr(s, ']') || memchr(s, ':', (size_t)(colon - s)))
            return -EINVAL; /* no port, a stray bracket, or IPv6 without [] */
        n = (size_t)(colon - s);
        if (!host_chars_ok(h, n))
            return -EINVAL;
    }
    if (n >= cap || n > 253)
        return -ENAMETOOLONG;
    uint64_t p;
    int rc = parse_u64(colon + 1, 1, 65535, &p);
    if (rc)
        return rc;
    memcpy(host, h, n);
    host[n] = '\0';
    *port = (uint16_t)p;
    return 0;
}

int hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
