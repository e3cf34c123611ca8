/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcframe.c: the Minecraft frames of mcframe.h, read and written. Pure:
 * bytes in, bytes out.
 */
#include "proto/mcframe.h"

#include <stdio.h>
#include <string.h>

size_t mc_varint_put(uint8_t *p, uint32_t v)
{
    size_t n = 0;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        p[n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    return n;
}

int mc_frame(const uint8_t *buf, size_t len, size_t max, uint32_t *id, size_t *body_off,
             size_t *body_len, size_t *frame_len)
{
    uint32_t flen;
    int n = mc_varint_get(buf, len, &flen);
    if (n <= 0)
        return n;
    if (flen == 0)
        return MC_E_FRAME;
    if ((size_t)n + flen > max)
        return MC_E_TOO_BIG;
    if (len < (size_t)n + flen)
        return 0;
    uint32_t pid;
    int k = mc_varint_get(buf + n, flen, &pid);
    if (k <= 0)
        return MC_E_FRAME;
    *id = pid;
    *body_off = (size_t)n + (size_t)k;
    *body_len = flen - (size_t)k;
    *frame_len = (size_t)n + flen;
    return 1;
}

/* A frame of id and body[0..n) into out; its length or 0. */
static size_t put_frame(uint8_t *out, size_t cap, uint32_t id, const uint8_t *body, size_t n)
{
    uint8_t idb[MC_VARINT_MAX], lenb[MC_VARINT_MAX];
    size_t il = mc_varint_put(idb, id);
    size_t ll = mc_varint_put(lenb, (uint32_t)(il + n));
    if (n > UINT32_MAX / 2 || ll + il + n > cap)
        return 0;
    memcpy(out, lenb, ll);
    memcpy(out + ll, idb, il);
    if (n)
        memcpy(out + ll + il, body, n);
    return ll + il + n;
}

size_t mc_status_query(uint8_t *out, size_t cap, const char *host, uint16_t port, int32_t protocol)
{
    size_t hl = strlen(host);
    if (hl > 255)
        return 0;
    uint8_t body[2 * MC_VARINT_MAX + 255 + 3];
    size_t n = mc_varint_put(body, (uint32_t)protocol);
    n += mc_varint_put(body + n, (uint32_t)hl);
    memcpy(body + n, host, hl);
    n += hl;
    body[n++] = (uint8_t)(port >> 8);
    body[n++] = (uint8_t)port;
    body[n++] = 1; /* intent: status */
    size_t a = put_frame(out, cap, 0, body, n);
    size_t b = a ? put_frame(out + a, cap - a, 0, NULL, 0) : 0;
    return b ? a + b : 0;
}

int mc_status_json(const uint8_t *body, size_t n, size_t *off, size_t *len)
{
    uint32_t sl;
    int k = mc_varint_get(body, n, &sl);
    if (k <= 0 || sl > MC_STATUS_JSON_MAX || (size_t)k + sl != n)
        return MC_E_FRAME;
    *off = (size_t)k;
    *len = sl;
    return 1;
}

size_t mc_status_reply(uint8_t *out, size_t cap, const char *json, size_t len)
{
    if (len > MC_STATUS_JSON_MAX || cap < 2 * MC_VARINT_MAX + 1)
        return 0;
    uint8_t sl[MC_VARINT_MAX];
    size_t k = mc_varint_put(sl, (uint32_t)len);
    /* frame length, id 0, string length, json: written in place */
    uint8_t lenb[MC_VARINT_MAX];
    size_t ll = mc_varint_put(lenb, (uint32_t)(1 + k + len));
    if (ll + 1 + k + len > cap)
        return 0;
    memcpy(out, lenb, ll);
    out[ll] = 0;
    memcpy(out + ll + 1, sl, k);
    memcpy(out + ll + 1 + k, json, len);
    return ll + 1 + k + len;
}

size_t mc_pong(uint8_t *out, const uint8_t payload[8])
{
    out[0] = 9;
    out[1] = 1;
    memcpy(out + 2, payload, 8);
    return 10;
}

/* ---- the legacy kick reply ----------------------------------------------- */

struct u16out {
    uint8_t *p;
    size_t cap, n; /* bytes */
    bool over;
};

static void put_u16(struct u16out *o, uint32_t u)
{
    if (o->n + 2 > o->cap) {
        o->over = true;
        return;
    }
    o->p[o->n++] = (uint8_t)(u >> 8);
    o->p[o->n++] = (uint8_t)u;
}

static void put_cp(struct u16out *o, uint32_t cp)
{
    if (cp >= 0x10000) {
        cp -= 0x10000;
        put_u16(o, 0xd800 | (cp >> 10));
        put_u16(o, 0xdc00 | (cp & 0x3ff));
    } else {
        put_u16(o, cp);
    }
}

/* One code point of UTF-8 at s[*i] (invalid: U+FFFD, one byte). */
static uint32_t next_cp(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t c = s[(*i)++];
    if (c < 0x80)
        return c;
    size_t k = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c <= 0xdf ? 1 : 0;
    if (!k || *i + k > n || c > 0xf4)
        return 0xfffd;
    uint32_t cp = c & (0x3f >> k);
    for (size_t j = 0; j < k; j++) {
        uint8_t b = s[*i + j];
        if ((b & 0xc0) != 0x80)
            return 0xfffd;
        cp = cp << 6 | (b & 0x3f);
    }
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0xfffd;
    *i += k;
    return cp;
}

/* UTF-8 text as UTF-16; drop: leave out '§' and NUL (the FE form's separators). */
static void put_text(struct u16out *o, const char *t, bool drop)
{
    const uint8_t *s = (const uint8_t *)t;
    size_t n = strlen(t);
    for (size_t i = 0; i < n;) {
        uint32_t cp = next_cp(s, n, &i);
        if (!(drop && (cp == 0xa7 || cp == 0)))
            put_cp(o, cp);
    }
}

size_t mc_legacy_reply(uint8_t *out, size_t cap, enum mc_kind kind, int32_t protocol,
                       const char *version, const char *motd, int64_t online, int64_t max)
{
    if (cap < 3)
        return 0;
    struct u16out o = {.p = out + 3, .cap = cap - 3};
    char num[3][24];
    snprintf(num[0], sizeof(num[0]), "%d", (int)protocol);
    snprintf(num[1], sizeof(num[1]), "%lld", (long long)online);
    snprintf(num[2], sizeof(num[2]), "%lld", (long long)max);
    if (kind == MC_LEGACY_FE) {
        put_text(&o, motd, true);
        put_cp(&o, 0xa7);
        put_text(&o, num[1], false);
        put_cp(&o, 0xa7);
        put_text(&o, num[2], false);
    } else {
        const char *const parts[] = {num[0], version, motd, num[1], num[2]};
        put_cp(&o, 0xa7);
        put_cp(&o, '1');
        for (size_t i = 0; i < 5; i++) {
            put_u16(&o, 0);
            put_text(&o, parts[i], false);
        }
    }
    if (o.over || o.n / 2 > 0xffff)
        return 0;
    out[0] = 0xff;
    out[1] = (uint8_t)((o.n / 2) >> 8);
    out[2] = (uint8_t)(o.n / 2);
    return 3 + o.n;
}

size_t mc_status_offline(char *out, size_t cap, const char *motd)
{
    static const char head[] = "{\"version\":{\"name\":\"offline\",\"protocol\":-1},"
                               "\"players\":{\"max\":0,\"online\":0},\"description\":{\"text\":\"";
    static const char tail[] = "\"}}";
    size_t n = sizeof(head) - 1;
    if (cap < n + sizeof(tail))
        return 0;
    memcpy(out, head, n);
    const uint8_t *s = (const uint8_t *)motd;
    size_t len = strlen(motd);
    for (size_t i = 0; i < len;) {
        uint32_t cp = next_cp(s, len, &i);
        char esc[8];
        int k;
        if (cp == '"' || cp == '\\')
            k = snprintf(esc, sizeof(esc), "\\%c", (char)cp);
        else if (cp < 0x20)
            k = snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
        else if (cp < 0x80)
            k = snprintf(esc, sizeof(esc), "%c", (char)cp);
        else { /* UTF-8 again */
            k = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
            esc[0] = (char)(k == 2 ? 0xc0 | cp >> 6 : k == 3 ? 0xe0 | cp >> 12 : 0xf0 | cp >> 18);
            for (int j = 1; j < k; j++)
                esc[j] = (char)(0x80 | ((cp >> (6 * (k - 1 - j))) & 0x3f));
        }
        if (n + (size_t)k + sizeof(tail) > cap)
            return 0;
        memcpy(out + n, esc, (size_t)k);
        n += (size_t)k;
    }
    memcpy(out + n, tail, sizeof(tail));
    return n + sizeof(tail) - 1;
}

/* ---- reading a status JSON ------------------------------------------------ */

/* The integer after "key": at or after p (whitespace allowed), within end. */
static bool number_after(const char *p, const char *end, int64_t *v)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    if (p >= end || *p != ':')
        return false;
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    bool neg = p < end && *p == '-';
    p += neg;
    if (p >= end || *p < '0' || *p > '9')
        return false;
    int64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9' && x < INT64_MAX / 10 - 9)
        x = x * 10 + (*p++ - '0');
    *v = neg ? -x : x;
    return true;
}

static bool find_key(const char *s, size_t len, const char *key, int64_t *v)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl <= len; i++)
        if (!memcmp(s + i, key, kl) && number_after(s + i + kl, s + len, v))
            return true;
    return false;
}

bool mc_status_players(const char *json, size_t len, int64_t *online, int64_t *max)
{
    const char *pl = NULL;
    for (size_t i = 0; i + 9 <= len && !pl; i++)
        if (!memcmp(json + i, "\"players\"", 9))
            pl = json + i + 9;
    if (!pl)
        return false;
    size_t rest = len - (size_t)(pl - json);
    return find_key(pl, rest, "\"online\"", online) && find_key(pl, rest, "\"max\"", max);
}

size_t mc_rewrite_addr(const uint8_t *buf, const struct mc_hello *h, const uint8_t *a, size_t alen,
                       uint8_t *out, size_t cap)
{
    if (h->kind != MC_MODERN || alen > MC_FRAME_MAX || h->addr_off + h->addr_len > h->msg_len)
        return 0;
    size_t tail = h->msg_len - h->addr_off - h->addr_len; /* port and intent */
    uint8_t head[1 + 2 * MC_VARINT_MAX];
    size_t hn = 0;
    head[hn++] = 0x00;
    hn += mc_varint_put(head + hn, (uint32_t)h->protocol);
    hn += mc_varint_put(head + hn, (uint32_t)alen);
    size_t body = hn + alen + tail;
    uint8_t len[MC_VARINT_MAX];
    size_t ln = mc_varint_put(len, (uint32_t)body);
    if (ln + body > cap)
        return 0;
    memcpy(out, len, ln);
    memcpy(out + ln, head, hn);
    memcpy(out + ln + hn, a, alen);
    memcpy(out + ln + hn + alen, buf + h->addr_off + h->addr_len, tail);
    return ln + body;
}
