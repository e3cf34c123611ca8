/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * squidauth.c: the lines of Squid's basic-auth helper protocol
 * (squidauth.h). The escaping follows Squid's lib/rfc1738.c byte for byte,
 * since the helpers undo it with rfc1738_unescape(); the reply grammar is
 * Squid 3.4's "result [kv-pairs]" with the older free-text form accepted.
 */
#include "proto/squidauth.h"

#include <stdbool.h>
#include <string.h>

/* Bytes Squid escapes besides '%', space and below, 0x7F and non-ASCII. */
static bool is_unsafe(uint8_t b)
{
    return b != 0 && strchr("<>\"#{}|\\^~[]`'", b) != NULL;
}

static bool needs_escape(uint8_t b)
{
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9'))
        return false;
    return b == '%' || b <= ' ' || b >= 0x7F || is_unsafe(b);
}

ssize_t squidauth_escape(const uint8_t *in, size_t len, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = in[i];
        size_t need = needs_escape(b) ? 3 : 1;
        if (o + need + 1 > cap)
            return -1;
        if (need == 3) {
            out[o++] = '%';
            out[o++] = hex[b >> 4];
            out[o++] = hex[b & 15];
        } else {
            out[o++] = (char)b;
        }
    }
    if (o + 1 > cap)
        return -1;
    out[o] = '\0';
    return (ssize_t)o;
}

ssize_t squidauth_request(const uint8_t *user, size_t ulen, const uint8_t *pass, size_t plen,
                          char *out, size_t cap)
{
    ssize_t u = squidauth_escape(user, ulen, out, cap);
    if (u < 0 || (size_t)u + 2 >= cap)
        return -1;
    out[u] = ' ';
    ssize_t p = squidauth_escape(pass, plen, out + u + 1, cap - (size_t)u - 1);
    if (p < 0)
        return -1;
    size_t n = (size_t)u + 1 + (size_t)p;
    if (n + 2 > cap)
        return -1;
    out[n++] = '\n';
    out[n] = '\0';
    return (ssize_t)n;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* A key=value pair starts at p (a key of letters, digits, '_' or '-'). */
static bool is_pair(const char *p, const char *end)
{
    const char *k = p;
    while (p < end && (((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z') || (*p >= '0' && *p <= '9') ||
                       *p == '_' || *p == '-'))
        p++;
    return p > k && p < end && *p == '=';
}

/* The value of message= among the pairs in [p, end), or false. */
static bool find_message(const char *p, const char *end, struct squidauth_reply *out)
{
    while (p < end) {
        while (p < end && is_space(*p))
            p++;
        if (p == end || !is_pair(p, end))
            return false;
        bool is_msg = (size_t)(end - p) >= 8 && memcmp(p, "message=", 8) == 0;
        p = (const char *)memchr(p, '=', (size_t)(end - p)) + 1;
        const char *v = p;
        if (p < end && *p == '"') {
            v = ++p;
            while (p < end && *p != '"')
                p += (*p == '\\' && p + 1 < end) ? 2 : 1;
            if (is_msg) {
                out->msg = v;
                out->msglen = (size_t)((p < end ? p : end) - v);
                return true;
            }
            if (p < end)
                p++;
        } else {
            while (p < end && !is_space(*p))
                p++;
            if (is_msg) {
                out->msg = v;
                out->msglen = (size_t)(p - v);
                return true;
            }
        }
    }
    return false;
}

int squidauth_reply_parse(const char *line, size_t len, struct squidauth_reply *out)
{
    static const struct {
        const char *word;
        enum squidauth_code code;
    } codes[] = {{"OK", SQUIDAUTH_OK}, {"ERR", SQUIDAUTH_ERR}, {"BH", SQUIDAUTH_BH}};
    if (len && line[len - 1] == '\r')
        len--;
    const char *end = line + len;
    memset(out, 0, sizeof(*out));
    size_t w = 0;
    while (w < len && !is_space(line[w]))
        w++;
    bool found = false;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (w == strlen(codes[i].word) && memcmp(line, codes[i].word, w) == 0) {
            out->code = codes[i].code;
            found = true;
        }
    }
    if (!found)
        return -1;
    const char *rest = line + w;
    while (rest < end && is_space(*rest))
        rest++;
    if (rest == end)
        return 0;
    if (is_pair(rest, end)) {
        find_message(rest, end, out);
        return 0;
    }
    out->msg = rest; /* an older helper's free text */
    out->msglen = (size_t)(end - rest);
    return 0;
}
