/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fields.c: the two renderings of a field list (fields.h) and the JSON
 * string escaper. Client-supplied bytes (destination names, user names)
 * reach these functions unchecked, so the escaper trusts nothing: it emits
 * only whole escapes, never a raw control byte, and replaces every byte of
 * an invalid UTF-8 sequence with U+FFFD. Pure: no syscalls, no allocation.
 */
#include "log/fields.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid
 * (RFC 3629 4: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

size_t log_json_escape(char *out, size_t cap, const char *s, size_t n, size_t *consumed)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;
    if (cap == 0) {
        if (consumed)
            *consumed = 0;
        return 0;
    }
    while (i < n) {
        char esc[8];
        const char *w = esc;
        size_t wl, step = 1;
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            wl = 2;
        } else if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
            esc[0] = '\\';
            esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : 'f';
            wl = 2;
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            wl = 6;
        } else if (c < 0x80) {
            w = (const char *)p + i;
            wl = 1;
        } else if ((step = utf8_len(p + i, n - i)) != 0) {
            w = (const char *)p + i;
            wl = step;
        } else {
            w = "\\ufffd";
            wl = 6;
            step = 1;
        }
        if (o + wl > cap - 1)
            break;
        memcpy(out + o, w, wl);
        o += wl;
        i += step;
    }
    out[o] = '\0';
    if (consumed)
        *consumed = i;
    return o;
}

size_t log_fields_text(char *out, size_t cap, const char *msg, const struct log_field *f, size_t n)
{
    size_t used = 0;
    int w = snprintf(out, cap, "%s", msg);
    used += w > 0 ? (size_t)w : 0;
    for (size_t i = 0; i < n; i++) {
        char *dst = used < cap ? out + used : NULL;
        size_t room = used < cap ? cap - used : 0;
        switch (f[i].type) {
        case LOG_F_STR:
            if (!f[i].s)
                continue;
            w = snprintf(dst, room, " %s=%s", f[i].key, f[i].s);
            break;
        case LOG_F_U64:
            w = snprintf(dst, room, " %s=%" PRIu64, f[i].key, f[i].u);
            break;
        case LOG_F_PAIR:
            w = snprintf(dst, room, " %s=%" PRIu64 "/%" PRIu64, f[i].key, f[i].u, f[i].u2);
            break;
        }
        used += w > 0 ? (size_t)w : 0;
    }
    return used;
}

/* One member ,"key":value into out[o..lim); returns the new end, or 0 when
 * it does not fit (out past o is then garbage, the caller rolls back). */
static size_t json_member(char *out, size_t o, size_t lim, const struct log_field *f)
{
    int w = snprintf(out + o, lim - o, ",\"%s\":", f->key);
    if (w < 0 || (size_t)w >= lim - o)
        return 0;
    o += (size_t)w;
    switch (f->type) {
    case LOG_F_STR: {
        size_t len = strlen(f->s), used;
        if (lim - o < 3)
            return 0;
        out[o++] = '"';
        o += log_json_escape(out + o, lim - o - 1, f->s, len, &used);
        if (used < len)
            return 0;
        out[o++] = '"';
        return o;
    }
    case LOG_F_U64:
        w = snprintf(out + o, lim - o, "%" PRIu64, f->u);
        break;
    case LOG_F_PAIR:
        w = snprintf(out + o, lim - o, "[%" PRIu64 ",%" PRIu64 "]", f->u, f->u2);
        break;
    }
    if (w < 0 || (size_t)w >= lim - o)
        return 0;
    return o + (size_t)w;
}

size_t log_fields_json(char *out, size_t cap, const char *msg, const struct log_field *f, size_t n)
{
    static const char cut[] = ",\"truncated\":true}";
    size_t lim = cap - sizeof(cut); /* room kept for the cut mark and the NUL */
    size_t o = 0, len = strlen(msg), used;
    memcpy(out, ",\"msg\":\"", 8);
    o = 8;
    o += log_json_escape(out + o, lim - o, msg, len, &used);
    out[o++] = '"';
    bool whole = used == len;
    for (size_t i = 0; whole && i < n; i++) {
        if (f[i].type == LOG_F_STR && !f[i].s)
            continue;
        size_t e = json_member(out, o, lim, &f[i]);
        if (!e)
            whole = false;
        else
            o = e;
    }
    if (!whole) {
        memcpy(out + o, cut, sizeof(cut));
        return o + sizeof(cut) - 1;
    }
    out[o++] = '}';
    out[o] = '\0';
    return o;
}
