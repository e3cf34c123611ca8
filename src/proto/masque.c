/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * masque.c: the connect-udp request target of RFC 9298 section 2 (the
 * default URI template, percent-encoded as RFC 6570 section 3.2.2 simple
 * string expansion does), the checks an HTTP/2 server makes on an extended
 * CONNECT for connect-udp (RFC 9298 section 3.4, RFC 8441 section 4), and
 * the Capsule-Protocol field (RFC 9297 section 3.4, an RFC 8941 boolean).
 * This room only reads and writes bytes the caller owns: no allocation,
 * logging or state; it never reads past the lengths it is given, and it
 * decides nothing about where a target may go (that is the rules' job).
 */
#include "proto/masque.h"
#include "util/parse.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char hexdig[] = "0123456789ABCDEF";

/* RFC 3986 section 2.3: the bytes RFC 6570 simple expansion leaves as they are. */
static bool is_unreserved(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* Percent-decode the segment s[0..len) into out[0..cap). Returns the
 * decoded length, MASQUE_E_ENCODING for a bad escape or a raw byte no
 * :path may hold (controls, space, DEL, non-ASCII), or MASQUE_E_HOST when it
 * does not fit (only hosts are long enough). */
static int decode_segment(const char *s, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '%') {
            if (len - i < 3)
                return MASQUE_E_ENCODING;
            int hi = hex_digit((unsigned char)s[i + 1]), lo = hex_digit((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return MASQUE_E_ENCODING;
            c = (uint8_t)(hi << 4 | lo);
            i += 2;
        } else if (c <= 0x20 || c >= 0x7f) {
            return MASQUE_E_ENCODING;
        }
        if (n == cap)
            return MASQUE_E_HOST;
        out[n++] = (char)c;
    }
    return (int)n;
}

static int parse_host(const char *s, size_t len, struct masque_target *out)
{
    int n = decode_segment(s, len, out->host, MASQUE_HOST_MAX);
    if (n < 0)
        return n;
    if (n == 0)
        return MASQUE_E_HOST;
    /* Same rule as a SOCKS5 domain: no NUL, control, space or DEL byte
     * may reach the resolver or the logs. And no '%': RFC 9298 section 2
     * does not support IPv6 zone identifiers ("fe80::1%eth0"), which some
     * resolvers would honour, and no DNS name holds one. */
    for (int i = 0; i < n; i++) {
        uint8_t c = (uint8_t)out->host[i];
        if (c <= 0x20 || c == 0x7f || c == '%')
            return MASQUE_E_HOST;
    }
    out->host[n] = '\0';
    out->host_len = (size_t)n;
    return 0;
}

static int parse_port(const char *s, size_t len, uint16_t *port)
{
    char digits[8];
    int n = decode_segment(s, len, digits, sizeof(digits));
    if (n == MASQUE_E_HOST || n == 0)
        return MASQUE_E_PORT; /* too long for 1..65535, or empty */
    if (n < 0)
        return n;
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        if (digits[i] < '0' || digits[i] > '9')
            return MASQUE_E_PORT;
        v = v * 10 + (uint32_t)(digits[i] - '0');
    }
    if (v == 0 || v > 65535)
        return MASQUE_E_PORT;
    *port = (uint16_t)v;
    return 0;
}

int masque_parse_path(const char *path, size_t len, struct masque_target *out)
{
    const size_t plen = sizeof(MASQUE_PATH_PREFIX) - 1;
    if (len < plen || memcmp(path, MASQUE_PATH_PREFIX, plen) != 0)
        return MASQUE_E_PREFIX;
    const char *s = path + plen;
    size_t rest = len - plen;
    /* A query or fragment is not part of the template. */
    if (memchr(s, '?', rest) || memchr(s, '#', rest))
        return MASQUE_E_SHAPE;
    /* Exactly {host}/{port}/ : two slashes, the second one last. */
    const char *s1 = memchr(s, '/', rest);
    if (!s1)
        return MASQUE_E_SHAPE;
    size_t hlen = (size_t)(s1 - s);
    const char *p = s1 + 1;
    size_t prest = rest - hlen - 1;
    const char *s2 = memchr(p, '/', prest);
    if (!s2 || (size_t)(s2 - p) != prest - 1)
        return MASQUE_E_SHAPE;
    int rc = parse_host(s, hlen, out);
    if (rc < 0)
        return rc;
    return parse_port(p, prest - 1, &out->port);
}

size_t masque_format_path(char *out, size_t cap, const char *host, size_t host_len, uint16_t port)
{
    if (host_len > MASQUE_HOST_MAX || port == 0)
        return 0;
    char num[6];
    size_t nlen = 0;
    for (uint32_t v = port; v; v /= 10)
        num[nlen++] = (char)('0' + v % 10);
    size_t need = sizeof(MASQUE_PATH_PREFIX) - 1 + nlen + 2;
    for (size_t i = 0; i < host_len; i++)
        need += is_unreserved((uint8_t)host[i]) ? 1 : 3;
    if (need >= cap)
        return need;
    size_t n = sizeof(MASQUE_PATH_PREFIX) - 1;
    memcpy(out, MASQUE_PATH_PREFIX, n);
    for (size_t i = 0; i < host_len; i++) {
        uint8_t c = (uint8_t)host[i];
        if (is_unreserved(c)) {
            out[n++] = (char)c;
        } else {
            out[n++] = '%';
            out[n++] = hexdig[c >> 4];
            out[n++] = hexdig[c & 0xf];
        }
    }
    out[n++] = '/';
    while (nlen)
        out[n++] = num[--nlen];
    out[n++] = '/';
    out[n] = '\0';
    return n;
}

/* ---- RFC 8941 structured-field boolean with parameters ------------------ */

static bool is_lcalpha(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return is_lcalpha(c) || (c >= 'A' && c <= 'Z');
}

/* RFC 9110 section 5.6.2 tchar, plus ":" and "/" as RFC 8941 tokens allow. */
static bool is_token_char(char c)
{
    return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-.^_`|~:/", c));
}

static bool is_base64_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=';
}

/* Skip one bare item at v[*i..len) (RFC 8941 section 4.2.3.1); false when
 * there is none. */
static bool skip_bare_item(const char *v, size_t len, size_t *i)
{
    size_t k = *i;
    if (k == len)
        return false;
    char c = v[k];
    if (c == '-' || is_digit(c)) { /* integer or decimal */
        k += c == '-';
        size_t d = 0, dot = 0;
        while (k < len && (is_digit(v[k]) || (v[k] == '.' && !dot))) {
            dot += v[k] == '.';
            d++;
            k++;
        }
        if (d == dot || d > 16 || (k > 0 && v[k - 1] == '.'))
            return false;
    } else if (c == '"') { /* string */
        for (k++;; k++) {
            if (k == len || (uint8_t)v[k] < 0x20 || (uint8_t)v[k] > 0x7e)
                return false;
            if (v[k] == '"')
                break;
            if (v[k] == '\\' && (++k == len || (v[k] != '"' && v[k] != '\\')))
                return false;
        }
        k++;
    } else if (c == ':') { /* byte sequence */
        for (k++; k < len && is_base64_char(v[k]); k++)
            ;
        if (k == len || v[k] != ':')
            return false;
        k++;
    } else if (c == '?') { /* boolean */
        if (k + 1 == len || (v[k + 1] != '0' && v[k + 1] != '1'))
            return false;
        k += 2;
    } else if (is_alpha(c) || c == '*') { /* token */
        for (k++; k < len && is_token_char(v[k]); k++)
            ;
    } else {
        return false;
    }
    *i = k;
    return true;
}

/* Skip parameters (RFC 8941 section 4.2.3.2) from v[*i..len); false when
 * one is malformed. */
static bool skip_params(const char *v, size_t len, size_t *i)
{
    size_t k = *i;
    while (k < len && v[k] == ';') {
        k++;
        while (k < len && v[k] == ' ')
            k++;
        if (k == len || !(is_lcalpha(v[k]) || v[k] == '*'))
            return false;
        while (k < len && (is_lcalpha(v[k]) || is_digit(v[k]) || (v[k] && strchr("_-.*", v[k]))))
            k++;
        if (k < len && v[k] == '=') {
            k++;
            if (!skip_bare_item(v, len, &k))
                return false;
        }
    }
    *i = k;
    return true;
}

/* 1 for ?1, 0 for ?0, -1 when v is no sf-boolean (or not an item at all). */
static int sf_boolean(const char *v, size_t len)
{
    size_t i = 0;
    while (i < len && v[i] == ' ')
        i++;
    while (len > i && v[len - 1] == ' ')
        len--;
    if (len - i < 2 || v[i] != '?' || (v[i + 1] != '0' && v[i + 1] != '1'))
        return -1;
    int b = v[i + 1] == '1';
    i += 2;
    if (!skip_params(v, len, &i) || i != len)
        return -1;
    return b;
}

bool masque_capsule_protocol_is_true(const char *v, size_t len)
{
    return sf_boolean(v, len) == 1;
}

/* ---- request checks ---------------------------------------------------- */

static bool field_is(const struct masque_field *f, const char *want)
{
    size_t n = strlen(want);
    return f->p && f->len == n && memcmp(f->p, want, n) == 0;
}

int masque_check_request(const struct masque_request *r, struct masque_target *out)
{
    if (!field_is(&r->method, "CONNECT"))
        return MASQUE_E_METHOD;
    if (!field_is(&r->protocol, "connect-udp"))
        return MASQUE_E_PROTOCOL;
    if (!field_is(&r->scheme, "https"))
        return MASQUE_E_SCHEME;
    if (!r->authority.p || r->authority.len == 0)
        return MASQUE_E_AUTHORITY;
    if (!r->path.p)
        return MASQUE_E_PREFIX;
    int rc = masque_parse_path(r->path.p, r->path.len, out);
    if (rc < 0)
        return rc;
    if (r->capsule_protocol.p && sf_boolean(r->capsule_protocol.p, r->capsule_protocol.len) == 0)
        return MASQUE_E_CAPSULE;
    return 0;
}

int masque_error_status(int err)
{
    return err == MASQUE_E_PROTOCOL ? 501 : 400;
}
