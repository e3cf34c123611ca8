/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1.c: HTTP/1.x heads, body framing and the small grammars a proxy
 * needs (authority, absolute URI, Basic credentials). Strict where
 * leniency lets two parties disagree about where a message ends.
 */
#include "proto/http1.h"
#include "util/parse.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2 tchar */
static bool is_tchar(uint8_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar / SP / HTAB, obs-text allowed */
static bool is_value_char(uint8_t c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

ssize_t http1_head_end(const uint8_t *p, size_t len, size_t max, size_t *scanned)
{
    size_t i = *scanned;
    size_t lim = len < max ? len : max;
    for (; i < lim; i++) {
        uint8_t c = p[i];
        if (c == '\0')
            return HTTP1_E_BAD;
        if (c == '\r') {
            if (i + 1 >= len)
                break; /* judge this CR when its next byte arrives */
            if (p[i + 1] != '\n')
                return HTTP1_E_BAD; /* bare CR */
            continue;
        }
        if (c != '\n')
            continue;
        if (i == 0 || p[i - 1] != '\r')
            return HTTP1_E_BAD; /* bare LF */
        if (i >= 3 && p[i - 2] == '\n' && p[i - 3] == '\r')
            return (ssize_t)(i + 1);
    }
    *scanned = i;
    if (len >= max)
        return HTTP1_E_TOO_LARGE;
    return 0;
}

/* One line [s, e) without its CRLF; returns the start of the next line. */
static const uint8_t *next_line(const uint8_t *s, const uint8_t *end, const uint8_t **eol)
{
    const uint8_t *q = s;
    while (q + 1 < end && !(q[0] == '\r' && q[1] == '\n'))
        q++;
    *eol = q;
    return q + 2 <= end ? q + 2 : end;
}

static bool parse_u64_dec(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 18)
        return false; /* 10^18 bytes is beyond any real body */
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

bool http1_name_is(const struct http1_header *h, const char *name)
{
    size_t n = strlen(name);
    return h->nlen == n && strncasecmp(h->name, name, n) == 0;
}

const struct http1_header *http1_find(const struct http1_msg *m, const char *name)
{
    for (unsigned i = 0; i < m->nh; i++)
        if (http1_name_is(&m->h[i], name))
            return &m->h[i];
    return NULL;
}

/* Does the comma-separated list v hold the token [token, token + tl)? */
static bool has_token(const char *v, size_t len, const char *token, size_t tl)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < len && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e - s == tl && strncasecmp(v + s, token, tl) == 0)
            return true;
    }
    return false;
}

bool http1_has_token(const char *v, size_t len, const char *token)
{
    return has_token(v, len, token, strlen(token));
}

/* Fields that decide where a message ends or where it goes: never
 * hop-by-hop, whatever Connection says (see http1_hop_by_hop). */
static const char *const framing_fields[] = {"content-length", "transfer-encoding", "host"};

/* Headers and framing facts, shared by requests and responses. */
static int parse_fields(const uint8_t *s, const uint8_t *end, struct http1_msg *m)
{
    while (s < end) {
        const uint8_t *eol;
        const uint8_t *next = next_line(s, end, &eol);
        if (eol == s)
            break; /* the blank line */
        if (*s == ' ' || *s == '\t')
            return HTTP1_E_BAD; /* obs-fold */
        const uint8_t *c = s;
        while (c < eol && is_tchar(*c))
            c++;
        if (c == s || c == eol || *c != ':')
            return HTTP1_E_BAD; /* empty name, no colon, or space before it */
        if (m->nh == HTTP1_MAX_HEADERS)
            return HTTP1_E_TOO_LARGE;
        const uint8_t *v = c + 1, *ve = eol;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const uint8_t *x = v; x < ve; x++)
            if (!is_value_char(*x))
                return HTTP1_E_BAD;
        struct http1_header *h = &m->h[m->nh++];
        h->name = (const char *)s;
        h->nlen = (uint16_t)(c - s);
        h->value = (const char *)v;
        h->vlen = (uint32_t)(ve - v);

        if (http1_name_is(h, "content-length")) {
            /* "a, b" lists and repeated fields must all agree, and every
             * element of every field is 1*DIGIT (RFC 9110 8.6): an empty
             * field or element is malformed, even after a valid field. */
            size_t i = 0;
            for (;;) {
                size_t st = i;
                while (i < h->vlen && h->value[i] != ',')
                    i++;
                size_t a = st, b = i;
                while (a < b && h->value[a] == ' ')
                    a++;
                while (b > a && h->value[b - 1] == ' ')
                    b--;
                uint64_t n;
                if (!parse_u64_dec(h->value + a, b - a, &n))
                    return HTTP1_E_BAD;
                if (m->has_cl && n != m->content_length)
                    return HTTP1_E_SMUGGLING;
                if (m->has_cl)
                    m->cl_repeated = true; /* identical: merged, but a doubt */
                m->has_cl = true;
                m->content_length = n;
                if (i == h->vlen)
                    break;
                i++; /* past the comma: another element follows */
            }
        } else if (http1_name_is(h, "transfer-encoding")) {
            if (m->has_te)
                return HTTP1_E_CODING; /* stacked codings: not ours to decode */
            m->has_te = true;
            size_t a = 0, b = h->vlen;
            if (b == 7 && strncasecmp(h->value + a, "chunked", 7) == 0)
                m->chunked = true;
            else
                return HTTP1_E_CODING;
        } else if (http1_name_is(h, "connection")) {
            if (http1_has_token(h->value, h->vlen, "close"))
                m->conn_close = true;
            if (http1_has_token(h->value, h->vlen, "keep-alive"))
                m->conn_keepalive = true;
            if (http1_has_token(h->value, h->vlen, "upgrade"))
                m->upgrade = true;
            /* Framing and routing are not the next hop's to drop: a
             * Connection that names them is an attempt at a desync. */
            for (size_t i = 0; i < sizeof(framing_fields) / sizeof(framing_fields[0]); i++)
                if (http1_has_token(h->value, h->vlen, framing_fields[i]))
                    return HTTP1_E_SMUGGLING;
        } else if (http1_name_is(h, "host")) {
            m->nhost++;
        } else if (http1_name_is(h, "proxy-authorization")) {
            m->nproxy_auth++;
        }
        s = next;
    }
    if (m->has_cl && m->has_te)
        return HTTP1_E_SMUGGLING;
    if (m->has_te && m->minor == 0)
        return HTTP1_E_SMUGGLING; /* HTTP/1.0 has no chunked: an old trick */
    return 0;
}

static int parse_version(const uint8_t *s, size_t n, int *minor)
{
    if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || s[6] != '.')
        return HTTP1_E_BAD;
    if (s[5] < '0' || s[5] > '9' || s[7] < '0' || s[7] > '9')
        return HTTP1_E_BAD;
    if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
        return HTTP1_E_VERSION;
    *minor = s[7] - '0';
    return 0;
}

int http1_parse_request(const uint8_t *p, size_t len, size_t max_line, struct http1_msg *m)
{
    memset(m, 0, sizeof(*m));
    const uint8_t *end = p + len, *eol;
    const uint8_t *next = next_line(p, end, &eol);
    if ((size_t)(eol - p) > max_line)
        return HTTP1_E_URI_TOO_LONG;
    const uint8_t *sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || sp1 == p)
        return HTTP1_E_BAD;
    for (const uint8_t *x = p; x < sp1; x++)
        if (!is_tchar(*x))
            return HTTP1_E_BAD;
    const uint8_t *t = sp1 + 1;
    const uint8_t *sp2 = memchr(t, ' ', (size_t)(eol - t));
    if (!sp2 || sp2 == t)
        return HTTP1_E_BAD;
    for (const uint8_t *x = t; x < sp2; x++)
        if (*x <= 0x20 || *x >= 0x7f)
            return HTTP1_E_BAD;
    int rc = parse_version(sp2 + 1, (size_t)(eol - sp2 - 1), &m->minor);
    if (rc)
        return rc;
    m->method = (const char *)p;
    m->mlen = (uint16_t)(sp1 - p);
    m->target = (const char *)t;
    m->tlen = (uint32_t)(sp2 - t);
    m->status = 0;
    rc = parse_fields(next, end, m);
    if (rc)
        return rc;
    /* RFC 9112 3.2: more than one Host is a 400. Two sets of proxy
     * credentials cannot both be the ones that count. */
    if (m->nhost > 1 || m->nproxy_auth > 1)
        return HTTP1_E_BAD;
    if (http1_find(m, "upgrade") == NULL)
        m->upgrade = false;
    return 0;
}

int http1_parse_response(const uint8_t *p, size_t len, struct http1_msg *m)
{
    memset(m, 0, sizeof(*m));
    const uint8_t *end = p + len, *eol;
    const uint8_t *next = next_line(p, end, &eol);
    size_t n = (size_t)(eol - p);
    if (n < 12 || p[8] != ' ')
        return HTTP1_E_BAD;
    int rc = parse_version(p, 8, &m->minor);
    if (rc)
        return rc;
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return HTTP1_E_BAD;
        st = st * 10 + (p[i] - '0');
    }
    if (st < 100 || (n > 12 && p[12] != ' '))
        return HTTP1_E_BAD;
    for (const uint8_t *x = p + 12; x < eol; x++)
        if (!is_value_char(*x))
            return HTTP1_E_BAD;
    m->status = st;
    m->reason = (const char *)(n > 13 ? p + 13 : p + n);
    m->rlen = n > 13 ? (uint32_t)(n - 13) : 0;
    rc = parse_fields(next, end, m);
    if (rc)
        return rc;
    if (http1_find(m, "upgrade") == NULL)
        m->upgrade = false;
    return 0;
}

bool http1_hop_by_hop(const struct http1_msg *m, const struct http1_header *h)
{
    static const char *const fixed[] = {
        "connection",         "keep-alive", "proxy-connection", "proxy-authorization",
        "proxy-authenticate", "te",         "trailer",          "upgrade",
    };
    for (size_t i = 0; i < sizeof(framing_fields) / sizeof(framing_fields[0]); i++)
        if (http1_name_is(h, framing_fields[i]))
            return false; /* framing is not negotiable */
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (http1_name_is(h, fixed[i]))
            return true;
    /* RFC 9110 7.6.1: and every field named in Connection */
    for (unsigned i = 0; i < m->nh; i++) {
        const struct http1_header *c = &m->h[i];
        /* compared in place: a listed name may be as long as the head */
        if (http1_name_is(c, "connection") && has_token(c->value, c->vlen, h->name, h->nlen))
            return true;
    }
    return false;
}

/* ---- bodies ------------------------------------------------------------ */

enum {
    CH_SIZE,
    CH_EXT,         /* after ';': a chunk-ext-name starts */
    CH_EXT_NAME,    /* in the name: '=', ';', CR or BWS may follow */
    CH_EXT_NAME_WS, /* BWS after the name: '=' or ';' follows */
    CH_EXT_VAL,     /* after '=': a token or a quoted-string starts */
    CH_EXT_TOKEN,   /* in a token value */
    CH_EXT_QUOTED,  /* in a quoted-string */
    CH_EXT_ESCAPE,  /* after a backslash in one */
    CH_EXT_CLOSED,  /* after its closing quote: ';', CR or BWS */
    CH_EXT_VAL_WS,  /* BWS after a value: ';' follows */
    CH_SIZE_LF,
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER_START,
    CH_TRAILER,
    CH_TRAILER_LF,
    CH_END_LF,
};

#define CHUNK_LINE_MAX 4096

void http1_body_request(struct http1_body *b, const struct http1_msg *m)
{
    memset(b, 0, sizeof(*b));
    if (m->chunked) {
        b->kind = HTTP1_BODY_CHUNKED;
        b->state = CH_SIZE;
    } else if (m->has_cl && m->content_length > 0) {
        b->kind = HTTP1_BODY_LENGTH;
        b->remaining = m->content_length;
    } else {
        b->kind = HTTP1_BODY_NONE;
        b->done = true;
    }
}

void http1_body_response(struct http1_body *b, const struct http1_msg *m, bool head_request)
{
    memset(b, 0, sizeof(*b));
    if (head_request || m->status < 200 || m->status == 204 || m->status == 304) {
        b->kind = HTTP1_BODY_NONE;
        b->done = true;
    } else if (m->chunked) {
        b->kind = HTTP1_BODY_CHUNKED;
        b->state = CH_SIZE;
    } else if (m->has_cl) {
        b->kind = m->content_length ? HTTP1_BODY_LENGTH : HTTP1_BODY_NONE;
        b->remaining = m->content_length;
        b->done = m->content_length == 0;
    } else {
        b->kind = HTTP1_BODY_CLOSE;
    }
}

/* qdtext and the byte after a backslash (RFC 9110 5.6.4), obs-text included */
static bool is_qdtext(uint8_t c)
{
    return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
           (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

/* One byte of a chunk extension (RFC 9112 7.1.1), by the grammar:
 *   chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
 * (whitespace before the first ';' is refused at the size, as ever). The
 * line ends only outside a quoted-string: a CR inside one is an
 * unterminated string, which a lenient parser might read on past the line
 * (and so past the next chunk's framing). Returns 0 or -1. */
static int chunk_ext_step(struct http1_body *b, uint8_t c)
{
    bool ws = c == ' ' || c == '\t';
    switch (b->state) {
    case CH_EXT: /* after ';' */
        if (is_tchar(c))
            b->state = CH_EXT_NAME;
        else if (!ws)
            return -1;
        return 0;
    case CH_EXT_NAME:
        if (is_tchar(c))
            return 0;
        if (c == '=') {
            b->state = CH_EXT_VAL;
            return 0;
        }
        if (ws) {
            b->state = CH_EXT_NAME_WS;
            return 0;
        }
        break;
    case CH_EXT_NAME_WS:
        if (c == '=') {
            b->state = CH_EXT_VAL;
            return 0;
        }
        if (ws)
            return 0;
        if (c == ';') {
            b->state = CH_EXT;
            return 0;
        }
        return -1;   /* no whitespace before the line's end */
    case CH_EXT_VAL: /* after '=' */
        if (c == '"')
            b->state = CH_EXT_QUOTED;
        else if (is_tchar(c))
            b->state = CH_EXT_TOKEN;
        else if (!ws)
            return -1;
        return 0;
    case CH_EXT_TOKEN:
        if (is_tchar(c))
            return 0;
        break;
    case CH_EXT_QUOTED:
        if (c == '"')
            b->state = CH_EXT_CLOSED;
        else if (c == '\\')
            b->state = CH_EXT_ESCAPE;
        else if (!is_qdtext(c))
            return -1; /* a CR here: the string never ends on this line */
        return 0;
    case CH_EXT_ESCAPE:
        if (!is_qdtext(c) && c != '"' && c != '\\')
            return -1;
        b->state = CH_EXT_QUOTED;
        return 0;
    case CH_EXT_VAL_WS:
        if (ws)
            return 0;
        if (c == ';') {
            b->state = CH_EXT;
            return 0;
        }
        return -1;
    default: /* CH_EXT_CLOSED */
        break;
    }
    /* after a name or a value */
    if (c == ';')
        b->state = CH_EXT;
    else if (c == '\r')
        b->state = CH_SIZE_LF;
    else if (ws)
        b->state = CH_EXT_VAL_WS;
    else
        return -1;
    return 0;
}

/* A hex digit, ';', or CR after a chunk's size digits. */
static int chunk_size_byte(struct http1_body *b, uint8_t c)
{
    int h = hex_digit(c);
    if (h >= 0) {
        if (b->remaining >> 56)
            return HTTP1_E_CHUNK; /* absurd size: overflow guard */
        b->remaining = b->remaining * 16 + (uint64_t)h;
        b->line++;
    } else if (b->line == 0) {
        return HTTP1_E_CHUNK; /* no digits */
    } else if (c == ';') {
        b->state = CH_EXT;
    } else if (c == '\r') {
        b->state = CH_SIZE_LF;
    } else {
        return HTTP1_E_CHUNK; /* including spaces: no "BWS" leniency */
    }
    return 0;
}

/* A byte of a trailer section: its lines, then the final CRLF. */
static int chunk_trailer_byte(struct http1_body *b, uint8_t c)
{
    switch (b->state) {
    case CH_TRAILER_START:
        if (c == '\r') {
            b->state = CH_END_LF;
        } else if (c == ' ' || c == '\t' || c == '\n') {
            return HTTP1_E_CHUNK;
        } else {
            b->state = CH_TRAILER;
            b->line = 1;
        }
        return 0;
    case CH_TRAILER:
        if (c == '\r')
            b->state = CH_TRAILER_LF;
        else if ((c < 0x20 && c != '\t') || c == 0x7f || ++b->line > CHUNK_LINE_MAX)
            return HTTP1_E_CHUNK;
        return 0;
    case CH_TRAILER_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK;
        b->state = CH_TRAILER_START;
        return 0;
    case CH_END_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK;
        b->done = true;
        return 0;
    default:
        return HTTP1_E_CHUNK;
    }
}

/* One byte of chunked framing outside chunk data. Returns 0 or
 * HTTP1_E_CHUNK. */
static int chunk_byte(struct http1_body *b, uint8_t c)
{
    switch (b->state) {
    case CH_SIZE:
        return chunk_size_byte(b, c);
    case CH_EXT:
    case CH_EXT_NAME:
    case CH_EXT_NAME_WS:
    case CH_EXT_VAL:
    case CH_EXT_TOKEN:
    case CH_EXT_QUOTED:
    case CH_EXT_ESCAPE:
    case CH_EXT_CLOSED:
    case CH_EXT_VAL_WS:
        if (++b->line > CHUNK_LINE_MAX || chunk_ext_step(b, c) < 0)
            return HTTP1_E_CHUNK;
        return 0;
    case CH_SIZE_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK;
        b->line = 0;
        b->state = b->remaining ? CH_DATA : CH_TRAILER_START;
        return 0;
    case CH_DATA_CR:
        if (c != '\r')
            return HTTP1_E_CHUNK;
        b->state = CH_DATA_LF;
        return 0;
    case CH_DATA_LF:
        if (c != '\n')
            return HTTP1_E_CHUNK;
        b->state = CH_SIZE;
        b->line = 0;
        return 0;
    default:
        return chunk_trailer_byte(b, c);
    }
}

/* Chunked framing: data runs pass whole, everything else a byte at a
 * time. */
static ssize_t chunked_scan(struct http1_body *b, const uint8_t *p, size_t len)
{
    size_t i = 0;
    while (i < len && !b->done) {
        if (b->state == CH_DATA) {
            size_t n = len - i < b->remaining ? len - i : (size_t)b->remaining;
            b->remaining -= n;
            i += n;
            if (b->remaining == 0)
                b->state = CH_DATA_CR;
            continue;
        }
        if (chunk_byte(b, p[i]) < 0)
            return HTTP1_E_CHUNK;
        i++;
    }
    return (ssize_t)i;
}

ssize_t http1_body_scan(struct http1_body *b, const uint8_t *p, size_t len)
{
    if (b->done)
        return 0;
    switch (b->kind) {
    case HTTP1_BODY_NONE:
        b->done = true;
        return 0;
    case HTTP1_BODY_CLOSE:
        return (ssize_t)len;
    case HTTP1_BODY_LENGTH: {
        size_t n = len < b->remaining ? len : (size_t)b->remaining;
        b->remaining -= n;
        if (b->remaining == 0)
            b->done = true;
        return (ssize_t)n;
    }
    default:
        return chunked_scan(b, p, len);
    }
}

/* ---- targets and credentials ------------------------------------------ */

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
}

int http1_parse_authority(const char *t, size_t len, char *host, size_t hcap, uint16_t *port)
{
    const char *colon;
    size_t hs, hl;
    if (len && t[0] == '[') {
        const char *close = memchr(t, ']', len);
        if (!close || (size_t)(close - t) + 1 >= len || close[1] != ':')
            return HTTP1_E_BAD;
        hs = 1;
        hl = (size_t)(close - t) - 1;
        for (size_t i = 0; i < hl; i++) {
            char c = t[hs + i];
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                  c == ':' || c == '.'))
                return HTTP1_E_BAD;
        }
        colon = close + 1;
    } else {
        colon = NULL;
        for (size_t i = len; i > 0; i--)
            if (t[i - 1] == ':') {
                colon = t + i - 1;
                break;
            }
        if (!colon)
            return HTTP1_E_BAD;
        hs = 0;
        hl = (size_t)(colon - t);
        for (size_t i = 0; i < hl; i++)
            if (!host_char(t[i]))
                return HTTP1_E_BAD;
    }
    if (hl == 0 || hl >= hcap || hl > 255)
        return HTTP1_E_BAD;
    size_t pl = len - (size_t)(colon + 1 - t);
    if (pl == 0 || pl > 5)
        return HTTP1_E_BAD;
    unsigned v = 0;
    for (size_t i = 0; i < pl; i++) {
        char c = colon[1 + i];
        if (c < '0' || c > '9')
            return HTTP1_E_BAD;
        v = v * 10 + (unsigned)(c - '0');
    }
    if (v == 0 || v > 65535)
        return HTTP1_E_BAD;
    memcpy(host, t + hs, hl);
    host[hl] = '\0';
    *port = (uint16_t)v;
    return 0;
}

int http1_parse_absolute(const char *t, size_t len, char *host, size_t hcap, uint16_t *port,
                         size_t *path_off)
{
    if (len < 8 || strncasecmp(t, "http://", 7) != 0)
        return HTTP1_E_BAD;
    size_t a = 7, e = a;
    while (e < len && t[e] != '/' && t[e] != '?' && t[e] != '#')
        e++;
    if (e == a || memchr(t + a, '@', e - a))
        return HTTP1_E_BAD; /* no host, or userinfo (deprecated, and a spoofing trick) */
    *path_off = e;
    /* authority: host[:port] */
    char auth[300];
    size_t al = e - a;
    if (al >= sizeof(auth) - 4)
        return HTTP1_E_BAD;
    memcpy(auth, t + a, al);
    auth[al] = '\0';
    bool has_port;
    if (auth[0] == '[') {
        const char *close = strchr(auth, ']');
        if (!close)
            return HTTP1_E_BAD;
        has_port = close[1] == ':';
        if (close[1] && !has_port)
            return HTTP1_E_BAD;
    } else {
        has_port = strchr(auth, ':') != NULL;
    }
    if (!has_port) {
        memcpy(auth + al, ":80", 4);
        al += 3;
    }
    return http1_parse_authority(auth, al, host, hcap, port);
}

int http1_basic_token(const char *v, size_t len, const char **tok, size_t *tlen)
{
    if (len < 6 || strncasecmp(v, "basic", 5) != 0 || (v[5] != ' ' && v[5] != '\t'))
        return -1;
    size_t i = 6;
    while (i < len && (v[i] == ' ' || v[i] == '\t'))
        i++;
    size_t n = len - i;
    if (n == 0 || n % 4 != 0 || n > HTTP1_BASIC_TOKEN_MAX)
        return -1;
    /* RFC 4648 base64 with its padding: '=' only as the last one or two. */
    size_t pad = 0;
    while (pad < 2 && v[len - 1 - pad] == '=')
        pad++;
    for (size_t k = i; k < len - pad; k++) {
        char c = v[k];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return -1;
    }
    *tok = v + i;
    *tlen = n;
    return 0;
}

int http1_basic_split(const uint8_t *dec, size_t n, char *user, size_t ucap, size_t *ulen,
                      char *pass, size_t pcap, size_t *plen)
{
    const uint8_t *colon = memchr(dec, ':', n);
    if (!colon)
        return -1;
    size_t ul = (size_t)(colon - dec), pl = n - ul - 1;
    if (ul == 0 || ul > 255 || pl == 0 || pl > 255 || ul >= ucap || pl >= pcap)
        return -1;
    memcpy(user, dec, ul);
    user[ul] = '\0';
    memcpy(pass, colon + 1, pl);
    pass[pl] = '\0';
    *ulen = ul;
    *plen = pl;
    return 0;
}

ssize_t http1_empty_lines(const uint8_t *p, size_t len, unsigned max)
{
    size_t n = 0;
    while (n + 1 < len && p[n] == '\r' && p[n + 1] == '\n') {
        if (n / 2 == max)
            return HTTP1_E_BAD;
        n += 2;
    }
    return (ssize_t)n;
}

int http1_error_status(int err)
{
    switch (err) {
    case HTTP1_E_URI_TOO_LONG:
        return 414;
    case HTTP1_E_TOO_LARGE:
        return 431;
    case HTTP1_E_VERSION:
        return 505;
    case HTTP1_E_CODING:
        return 501;
    default:
        return 400;
    }
}

const char *http1_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 407:
        return "Proxy Authentication Required";
    case 408:
        return "Request Timeout";
    case 414:
        return "URI Too Long";
    case 426:
        return "Upgrade Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* ---- head rewrite ------------------------------------------------------- */

/* A head being written into the caller's buffer; ok turns false for good
 * at the first piece that does not fit, and nothing is written past cap. */
struct out {
    uint8_t *p;
    size_t len, cap;
    bool ok;
};

static void out_add(struct out *o, const void *s, size_t n)
{
    if (!o->ok || o->cap - o->len < n) {
        o->ok = false;
        return;
    }
    if (n)
        memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void out_str(struct out *o, const char *s)
{
    out_add(o, s, strlen(s));
}

static void out_u64(struct out *o, uint64_t v)
{
    char d[20];
    size_t n = 0;
    do {
        d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out_add(o, d + sizeof(d) - n, n);
}

/* " HTTP/1.x" for the message's minor version. */
static void out_version(struct out *o, const struct http1_msg *m)
{
    char v[] = "HTTP/1.0";
    v[7] = (char)('0' + (m->minor == 1));
    out_str(o, v);
}

/* Copy the fields that are not hop-by-hop; keep the framing ones, since
 * bodies go through unchanged (http1_hop_by_hop never drops those, and the
 * parser refuses a Connection that names one). Repeated identical
 * Content-Length values go on as one field (RFC 9112 6.3), so the next hop
 * cannot read them another way. With keep_upgrade, Upgrade survives (a
 * WebSocket handshake). Via is left to out_via. */
static void out_fields(struct out *o, const struct http1_msg *m, bool keep_upgrade, bool skip_host)
{
    bool cl_done = false;
    for (unsigned i = 0; i < m->nh; i++) {
        const struct http1_header *f = &m->h[i];
        if (skip_host && http1_name_is(f, "host"))
            continue;
        if (http1_name_is(f, "via"))
            continue; /* rewritten with ours appended */
        if (http1_hop_by_hop(m, f) && !(keep_upgrade && http1_name_is(f, "upgrade")))
            continue;
        if (m->cl_repeated && http1_name_is(f, "content-length")) {
            if (!cl_done) {
                out_str(o, "Content-Length: ");
                out_u64(o, m->content_length);
                out_str(o, "\r\n");
            }
            cl_done = true;
            continue;
        }
        out_add(o, f->name, f->nlen);
        out_str(o, ": ");
        out_add(o, f->value, f->vlen);
        out_str(o, "\r\n");
    }
}

/* The Via field: the value the message carried (its first Via), then ours
 * as "1.x pseudonym"; only the carried one when via is empty. */
static void out_via(struct out *o, const struct http1_msg *m, const char *via)
{
    const struct http1_header *old = http1_find(m, "via");
    if (!old && !via[0])
        return;
    out_str(o, "Via: ");
    if (old)
        out_add(o, old->value, old->vlen);
    if (via[0]) {
        out_str(o, old ? ", 1." : "1.");
        out_u64(o, m->minor == 1);
        out_str(o, " ");
        out_str(o, via);
    }
    out_str(o, "\r\n");
}

static ssize_t out_done(const struct out *o)
{
    return o->ok ? (ssize_t)o->len : HTTP1_E_TOO_LARGE;
}

ssize_t http1_rewrite_request(const struct http1_msg *m, size_t path_off, const char *authority,
                              size_t alen, const char *via, bool upgrade, uint8_t *out, size_t cap)
{
    struct out o = {out, 0, cap, true};
    const char *path = m->target + path_off;
    size_t plen = m->tlen - path_off;
    out_add(&o, m->method, m->mlen);
    out_str(&o, " ");
    if (plen == 0 || path[0] != '/')
        out_str(&o, "/");
    out_add(&o, path, plen);
    out_str(&o, " ");
    out_version(&o, m);
    out_str(&o, "\r\nHost: ");
    out_add(&o, authority, alen);
    out_str(&o, "\r\n");
    out_fields(&o, m, upgrade, true);
    out_via(&o, m, via);
    if (upgrade)
        out_str(&o, "Connection: Upgrade\r\n");
    else if (m->minor == 0 && m->conn_keepalive)
        out_str(&o, "Connection: keep-alive\r\n"); /* the proxy's hop may persist */
    out_str(&o, "\r\n");
    return out_done(&o);
}

/* May b appear in the authority of an absolute-form target as the proxy
 * writes it (RFC 3986 3.2; no userinfo: http1_parse_absolute refuses it)? */
static bool authority_byte(uint8_t b)
{
    return b > 0x20 && b < 0x7f && b != '/' && b != '?' && b != '#' && b != '@';
}

ssize_t http1_proxy_form(const uint8_t *head, size_t len, const char *authority, size_t alen,
                         const char *pauth, size_t plen, uint8_t *out, size_t cap)
{
    const uint8_t *sp = memchr(head, ' ', len);
    const uint8_t *eol = memchr(head, '\n', len);
    if (!sp || !eol || sp >= eol || sp == head || (size_t)(sp - head) + 1 >= len || sp[1] != '/' ||
        alen == 0)
        return HTTP1_E_BAD;
    for (size_t i = 0; i < alen; i++)
        if (!authority_byte((uint8_t)authority[i]))
            return HTTP1_E_BAD;
    for (size_t i = 0; pauth && i < plen; i++)
        if ((uint8_t)pauth[i] < 0x20 || (uint8_t)pauth[i] > 0x7e)
            return HTTP1_E_BAD;
    struct out o = {out, 0, cap, true};
    size_t line = (size_t)(eol - head) + 1;
    out_add(&o, head, (size_t)(sp - head) + 1);
    out_str(&o, "http://");
    out_add(&o, authority, alen);
    out_add(&o, sp + 1, line - (size_t)(sp - head) - 1);
    if (pauth) {
        out_str(&o, "Proxy-Authorization: ");
        out_add(&o, pauth, plen);
        out_str(&o, "\r\n");
    }
    out_add(&o, head + line, len - line);
    return out_done(&o);
}

ssize_t http1_rewrite_response(const struct http1_msg *m, const char *via, bool switching,
                               bool keepalive, uint8_t *out, size_t cap)
{
    struct out o = {out, 0, cap, true};
    bool informational = m->status >= 100 && m->status < 200 && m->status != 101;
    char code[] = "HTTP/1.1 000 ";
    code[9] = (char)('0' + m->status / 100 % 10);
    code[10] = (char)('0' + m->status / 10 % 10);
    code[11] = (char)('0' + m->status % 10);
    out_str(&o, code);
    out_add(&o, m->reason, m->rlen);
    out_str(&o, "\r\n");
    out_fields(&o, m, switching, false);
    out_via(&o, m, via);
    if (switching)
        out_str(&o, "Connection: Upgrade\r\n");
    else if (!informational && !keepalive)
        out_str(&o, "Connection: close\r\n");
    out_str(&o, "\r\n");
    return out_done(&o);
}
