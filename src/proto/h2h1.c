/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2h1.c: plain HTTP/2 requests written as HTTP/1.1, and HTTP/1.1
 * responses read back for HTTP/2 (h2h1.h). Pure: it must not do I/O,
 * allocate, log or keep globals.
 */
#include "proto/h2h1.h"

#include <stdio.h>
#include <string.h>

static bool name_eq(const uint8_t *n, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(n, s, len) == 0;
}

static bool ci_eq(const uint8_t *a, size_t len, const char *s)
{
    if (strlen(s) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = a[i];
        if (c >= 'A' && c <= 'Z')
            c = (uint8_t)(c - 'A' + 'a');
        if (c != (uint8_t)s[i])
            return false;
    }
    return true;
}

int h2h1_field_check(const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen)
{
    static const char *const conn_specific[] = {
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    };
    if (nlen == 0 || name[0] == ':')
        return H2H1_FIELD_BAD;
    for (size_t i = 0; i < nlen; i++) {
        uint8_t c = name[i];
        if ((c >= 'A' && c <= 'Z') || c <= ' ' || c >= 0x7f || c == ':')
            return H2H1_FIELD_BAD;
    }
    for (size_t i = 0; i < vlen; i++)
        if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0')
            return H2H1_FIELD_BAD;
    for (size_t i = 0; i < sizeof(conn_specific) / sizeof(conn_specific[0]); i++)
        if (name_eq(name, nlen, conn_specific[i]))
            return H2H1_FIELD_BAD;
    if (name_eq(name, nlen, "te"))
        return ci_eq(value, vlen, "trailers") ? H2H1_FIELD_DROP : H2H1_FIELD_BAD;
    if (name_eq(name, nlen, "host"))
        return H2H1_FIELD_DROP;
    return H2H1_FIELD_OK;
}

int h2h1_field_add(uint8_t *fl, size_t *len, size_t cap, const uint8_t *name, size_t nlen,
                   const uint8_t *value, size_t vlen)
{
    if (nlen > 0xffff || vlen > 0xffff || cap - *len < 4 + nlen + vlen || *len > cap)
        return -1;
    uint8_t *p = fl + *len;
    p[0] = (uint8_t)(nlen >> 8);
    p[1] = (uint8_t)nlen;
    p[2] = (uint8_t)(vlen >> 8);
    p[3] = (uint8_t)vlen;
    memcpy(p + 4, name, nlen);
    memcpy(p + 4 + nlen, value, vlen);
    *len += 4 + nlen + vlen;
    return 0;
}

/* Walk a field list: the entry at *off, then *off past it. false at the end. */
static bool field_next(const uint8_t *fl, size_t flen, size_t *off, const uint8_t **n, size_t *nlen,
                       const uint8_t **v, size_t *vlen)
{
    if (flen - *off < 4 || *off > flen)
        return false;
    const uint8_t *p = fl + *off;
    *nlen = (size_t)p[0] << 8 | p[1];
    *vlen = (size_t)p[2] << 8 | p[3];
    if (flen - *off - 4 < *nlen + *vlen)
        return false;
    *n = p + 4;
    *v = p + 4 + *nlen;
    *off += 4 + *nlen + *vlen;
    return true;
}

struct out {
    uint8_t *p;
    size_t len, cap;
    bool full;
};

static void put(struct out *o, const void *p, size_t n)
{
    if (o->full || o->cap - o->len < n) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->len, p, n);
    o->len += n;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static bool authority_ok(const char *a)
{
    if (!a[0])
        return false;
    for (const char *p = a; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || strchr("/?#@\\", *p))
            return false;
    return true;
}

static bool path_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    for (; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return false;
    return true;
}

static bool digits_ok(const uint8_t *v, size_t n)
{
    if (n == 0 || n > 19)
        return false;
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

/* The Cookie fields joined (RFC 9113 8.2.3), if any. */
static void put_cookies(struct out *o, const struct h2h1_req *r)
{
    size_t off = 0, nlen, vlen;
    const uint8_t *n, *v;
    bool first = true;
    while (field_next(r->fields, r->flen, &off, &n, &nlen, &v, &vlen)) {
        if (!name_eq(n, nlen, "cookie"))
            continue;
        puts_(o, first ? "cookie: " : "; ");
        put(o, v, vlen);
        first = false;
    }
    if (!first)
        puts_(o, "\r\n");
}

ssize_t h2h1_request_head(const struct h2h1_req *r, uint8_t *out, size_t cap, enum h2h1_body *kind)
{
    static const char *const no_body[] = {"GET", "HEAD", "DELETE", "OPTIONS", "TRACE"};
    if (!authority_ok(r->authority) || !path_ok(r->path) || !r->method[0])
        return HTTP1_E_BAD;
    struct out o = {out, 0, cap, false};
    puts_(&o, r->method);
    puts_(&o, " http://");
    puts_(&o, r->authority);
    puts_(&o, r->path);
    puts_(&o, " HTTP/1.1\r\nHost: ");
    puts_(&o, r->authority);
    puts_(&o, "\r\n");
    size_t off = 0, nlen, vlen;
    const uint8_t *n, *v, *cl = NULL;
    size_t cllen = 0;
    while (field_next(r->fields, r->flen, &off, &n, &nlen, &v, &vlen)) {
        if (name_eq(n, nlen, "cookie"))
            continue;
        if (name_eq(n, nlen, "content-length")) {
            if (!digits_ok(v, vlen) || (cl && (cllen != vlen || memcmp(cl, v, vlen))))
                return HTTP1_E_BAD;
            cl = v;
            cllen = vlen;
            continue;
        }
        put(&o, n, nlen);
        puts_(&o, ": ");
        put(&o, v, vlen);
        puts_(&o, "\r\n");
    }
    put_cookies(&o, r);
    puts_(&o, "Connection: close\r\n");
    *kind = H2H1_BODY_NONE;
    if (cl) {
        puts_(&o, "Content-Length: ");
        put(&o, cl, cllen);
        puts_(&o, "\r\n");
        *kind = H2H1_BODY_LENGTH;
    } else if (r->body) {
        puts_(&o, "Transfer-Encoding: chunked\r\n");
        *kind = H2H1_BODY_CHUNKED;
    } else {
        bool bodyless = false;
        for (size_t i = 0; i < sizeof(no_body) / sizeof(no_body[0]); i++)
            bodyless |= strcmp(r->method, no_body[i]) == 0;
        if (!bodyless)
            puts_(&o, "Content-Length: 0\r\n");
    }
    puts_(&o, "\r\n");
    if (o.full)
        return HTTP1_E_TOO_LARGE;
    return (ssize_t)o.len;
}

size_t h2h1_chunk_line(size_t n, uint8_t *out)
{
    char tmp[24];
    int k = snprintf(tmp, sizeof(tmp), "%zx\r\n", n);
    memcpy(out, tmp, (size_t)k);
    return (size_t)k;
}

/* ---- the response ------------------------------------------------------ */

enum { RS_HEAD, RS_LENGTH, RS_CHUNKED, RS_CLOSE, RS_DONE, RS_BAD };
enum {
    CS_SIZE,
    CS_EXT,
    CS_SIZE_LF,
    CS_DATA,
    CS_DATA_CR,
    CS_DATA_LF,
    CS_TRAILER,
    CS_TLINE,
    CS_LAST_LF
};

#define LINE_MAX_ 8192

void h1h2_resp_init(struct h1h2_resp *r, uint8_t *buf, size_t cap, bool head_request)
{
    memset(r, 0, sizeof(*r));
    r->head = buf;
    r->cap = cap;
    r->head_request = head_request;
    r->state = RS_HEAD;
}

bool h1h2_resp_done(const struct h1h2_resp *r)
{
    return r->state == RS_DONE;
}

/* The response's fields for HEADERS: HTTP/1 connection-specific ones and
 * Transfer-Encoding dropped (ferry's own Proxy-Authenticate kept: the
 * proxy already dropped any the origin sent), names lowercased. */
static int resp_fields(struct h1h2_resp *r, const struct http1_msg *m)
{
    size_t used = 0;
    r->nf = 0;
    for (unsigned i = 0; i < m->nh; i++) {
        const struct http1_header *h = &m->h[i];
        if (http1_name_is(h, "transfer-encoding") ||
            (http1_hop_by_hop(m, h) && !http1_name_is(h, "proxy-authenticate")))
            continue;
        if (sizeof(r->names) - used < h->nlen || r->nf == H1H2_FIELDS_MAX)
            return -1;
        uint8_t *n = r->names + used;
        for (size_t k = 0; k < h->nlen; k++) {
            uint8_t c = (uint8_t)h->name[k];
            n[k] = c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
        }
        used += h->nlen;
        r->f[r->nf++] = (struct h1h2_field){n, (const uint8_t *)h->value, h->nlen, h->vlen};
    }
    return 0;
}

/* A head is complete in r->head[0..end): judge it. */
static enum h1h2_event resp_head(struct h1h2_resp *r, size_t end, struct http1_msg *m)
{
    if (http1_parse_response(r->head, end, m) || m->status == 101 || m->status < 100) {
        r->state = RS_BAD;
        return H1H2_ERROR;
    }
    if (m->status < 200) { /* interim: 100 passed on, the others dropped */
        r->hlen = r->scanned = 0;
        r->status = m->status;
        return m->status == 100 ? H1H2_INTERIM : H1H2_NEED;
    }
    if (resp_fields(r, m) < 0) {
        r->state = RS_BAD;
        return H1H2_ERROR;
    }
    r->status = m->status;
    struct http1_body b;
    http1_body_response(&b, m, r->head_request);
    r->remaining = b.remaining;
    r->state = b.kind == HTTP1_BODY_NONE      ? RS_DONE
               : b.kind == HTTP1_BODY_LENGTH  ? (b.remaining ? RS_LENGTH : RS_DONE)
               : b.kind == HTTP1_BODY_CHUNKED ? RS_CHUNKED
                                              : RS_CLOSE;
    r->cstate = CS_SIZE;
    r->line = 0;
    return H1H2_HEAD;
}

static enum h1h2_event step_head(struct h1h2_resp *r, const uint8_t *p, size_t len, size_t *used,
                                 struct http1_msg *m)
{
    size_t room = r->cap - r->hlen;
    size_t n = len < room ? len : room;
    memcpy(r->head + r->hlen, p, n);
    size_t before = r->hlen;
    r->hlen += n;
    ssize_t end = http1_head_end(r->head, r->hlen, r->cap, &r->scanned);
    if (end < 0 || (end == 0 && r->hlen == r->cap)) {
        r->state = RS_BAD;
        return H1H2_ERROR;
    }
    if (end == 0) {
        *used = n;
        return H1H2_NEED;
    }
    *used = (size_t)end - before;
    return resp_head(r, (size_t)end, m);
}

/* One byte of chunk framing (not data): false when malformed. */
static bool chunk_byte(struct h1h2_resp *r, uint8_t c)
{
    if (++r->line > LINE_MAX_)
        return false;
    switch (r->cstate) {
    case CS_SIZE: {
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d >= 0) {
            if (r->remaining >> 59)
                return false;
            r->remaining = r->remaining * 16 + (uint64_t)d;
            return true;
        }
        if (r->line == 1)
            return false; /* no digit */
        if (c == ';' || c == ' ' || c == '\t') {
            r->cstate = CS_EXT;
            return true;
        }
        if (c != '\r')
            return false;
        r->cstate = CS_SIZE_LF;
        return true;
    }
    case CS_EXT:
        if (c == '\r')
            r->cstate = CS_SIZE_LF;
        return c != '\n';
    case CS_SIZE_LF:
        if (c != '\n')
            return false;
        r->line = 0;
        r->cstate = r->remaining ? CS_DATA : CS_TRAILER;
        return true;
    case CS_DATA_CR:
        r->cstate = CS_DATA_LF;
        return c == '\r';
    case CS_DATA_LF:
        r->line = 0;
        r->remaining = 0;
        r->cstate = CS_SIZE;
        return c == '\n';
    case CS_TRAILER:
        if (c == '\r') {
            r->cstate = CS_LAST_LF;
            return true;
        }
        r->cstate = CS_TLINE;
        return c != '\n';
    case CS_TLINE:
        if (c == '\n') {
            r->cstate = CS_TRAILER;
            r->line = 0;
        }
        return true;
    case CS_LAST_LF:
        if (c != '\n')
            return false;
        r->state = RS_DONE;
        return true;
    default:
        return false;
    }
}

static enum h1h2_event step_chunked(struct h1h2_resp *r, const uint8_t *p, size_t len, size_t room,
                                    size_t *used, const uint8_t **data, size_t *dlen)
{
    size_t i = 0;
    while (i < len && r->state == RS_CHUNKED) {
        if (r->cstate == CS_DATA) {
            size_t n = len - i;
            if (n > r->remaining)
                n = (size_t)r->remaining;
            if (n > room)
                n = room;
            if (n == 0)
                break; /* no room */
            r->remaining -= n;
            if (r->remaining == 0)
                r->cstate = CS_DATA_CR;
            *data = p + i;
            *dlen = n;
            *used = i + n;
            return H1H2_DATA;
        }
        if (!chunk_byte(r, p[i])) {
            r->state = RS_BAD;
            return H1H2_ERROR;
        }
        i++;
    }
    *used = i;
    return r->state == RS_DONE ? H1H2_END : H1H2_NEED;
}

enum h1h2_event h1h2_resp_step(struct h1h2_resp *r, const uint8_t *p, size_t len, size_t room,
                               size_t *used, const uint8_t **data, size_t *dlen,
                               struct http1_msg *m)
{
    *used = 0;
    *dlen = 0;
    switch (r->state) {
    case RS_HEAD:
        if (len == 0)
            return H1H2_NEED;
        return step_head(r, p, len, used, m);
    case RS_LENGTH:
    case RS_CLOSE: {
        size_t n = len < room ? len : room;
        if (r->state == RS_LENGTH && n > r->remaining)
            n = (size_t)r->remaining;
        if (n == 0)
            return H1H2_NEED;
        if (r->state == RS_LENGTH && (r->remaining -= n) == 0)
            r->state = RS_DONE;
        *data = p;
        *dlen = n;
        *used = n;
        return H1H2_DATA;
    }
    case RS_CHUNKED:
        return step_chunked(r, p, len, room, used, data, dlen);
    case RS_DONE:
        return H1H2_END;
    default:
        return H1H2_ERROR;
    }
}

enum h1h2_event h1h2_resp_eof(struct h1h2_resp *r)
{
    if (r->state == RS_CLOSE || r->state == RS_DONE) {
        r->state = RS_DONE;
        return H1H2_END;
    }
    r->state = RS_BAD;
    return H1H2_ERROR;
}
