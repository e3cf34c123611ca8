/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1_fuzz.c: libFuzzer harness for the HTTP/1.x functions of proto/http1.
 *
 * Each input goes through every entry point, and each result is checked
 * against what the bytes say:
 *   - the head finder, on the whole input and resumed over random chunks
 *     (sizes drawn from a generator seeded by the input); both must agree,
 *     and a found head must really end at the first CRLF CRLF with no NUL,
 *     bare CR or bare LF before it;
 *   - the request and response parsers on the head found (and on the raw
 *     input), with every field and framing fact checked against the bytes;
 *   - the chunked scanner over the input whole, a byte at a time and in
 *     random pieces: same verdict, same end, stopping exactly at the end;
 *   - the authority, absolute-URI and Basic grammars (token and split; the
 *     base64 decode is libsodium's, in crypto/), whose successes must be
 *     reconstructible from the input, and the empty lines before a
 *     request line;
 *   - framing fields (Content-Length, Transfer-Encoding, Host) are never
 *     hop-by-hop, and no accepted message names one in Connection.
 * Streamed prefixes are copied to the end of a heap block so ASan sees any
 * read past them. Any violation traps. Linked with only src/proto,
 * util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* A generator for chunk sizes, seeded from the input (no libc rand). */
struct gen {
    uint64_t s;
};

static void gen_init(struct gen *g, const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ull ^ size;
    for (size_t i = 0; i < size && i < 64; i++)
        h = (h ^ data[i]) * 0x100000001b3ull;
    g->s = h ? h : 1;
}

static size_t gen_below(struct gen *g, size_t n)
{
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return (size_t)(g->s % n);
}

static bool is_tchar(uint8_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool within(const void *p, size_t n, const uint8_t *buf, size_t len)
{
    const uint8_t *q = p;
    return q >= buf && q + n <= buf + len;
}

/* ---- head finder ------------------------------------------------------- */

/* What a head of len bytes at p must look like. */
static void check_head_found(const uint8_t *p, size_t len, size_t max, ssize_t end)
{
    CHECK((size_t)end <= len && (size_t)end <= max && end >= 4);
    CHECK(memcmp(p + end - 4, "\r\n\r\n", 4) == 0);
    for (ssize_t i = 0; i < end; i++) {
        CHECK(p[i] != '\0');
        if (p[i] == '\n')
            CHECK(i > 0 && p[i - 1] == '\r');
        if (p[i] == '\r')
            CHECK(i + 1 < end && p[i + 1] == '\n');
        /* the first blank line ends it */
        if (i + 4 < end)
            CHECK(memcmp(p + i, "\r\n\r\n", 4) != 0);
    }
}

/* Nothing in the first len bytes stops the scan. */
static void check_head_clean(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        CHECK(p[i] != '\0');
        if (p[i] == '\n')
            CHECK(i > 0 && p[i - 1] == '\r');
        if (p[i] == '\r' && i + 1 < len)
            CHECK(p[i + 1] == '\n');
        if (i + 4 <= len)
            CHECK(memcmp(p + i, "\r\n\r\n", 4) != 0);
    }
}

static ssize_t fuzz_head(const uint8_t *data, size_t size, size_t max, uint8_t *win, struct gen *g)
{
    size_t scanned = 0;
    ssize_t whole = http1_head_end(data, size, max, &scanned);
    CHECK(whole == 0 || whole > 0 || whole == HTTP1_E_BAD || whole == HTTP1_E_TOO_LARGE);
    if (whole > 0) {
        check_head_found(data, size, max, whole);
    } else if (whole == 0) {
        check_head_clean(data, size);
        CHECK(size < max);
    } else if (whole == HTTP1_E_TOO_LARGE) {
        check_head_clean(data, max);
        CHECK(size >= max);
    }

    /* Resumed over random chunks, each prefix at the end of win. */
    size_t k = 0;
    scanned = 0;
    ssize_t got = 0;
    while (k < size) {
        k += 1 + gen_below(g, 16);
        if (k > size)
            k = size;
        const uint8_t *p = win + size - k;
        memmove(win + size - k, data, k);
        got = http1_head_end(p, k, max, &scanned);
        CHECK(scanned <= k);
        if (got != 0)
            break;
    }
    if (size == 0)
        got = http1_head_end(win, 0, max, &scanned);
    /* Same verdict; a CR in the last byte under the limit is the one
     * case where a stream stops at the limit before judging it. */
    CHECK(got == whole || (whole == HTTP1_E_BAD && got == HTTP1_E_TOO_LARGE));
    if (got == HTTP1_E_TOO_LARGE && whole == HTTP1_E_BAD)
        CHECK(max <= size && data[max - 1] == '\r');
    /* A fresh scan of the last prefix agrees with the resumed one. */
    size_t fresh = 0;
    CHECK(http1_head_end(win + size - k, k, max, &fresh) == got);
    return whole;
}

/* ---- heads -------------------------------------------------------------- */

static bool value_ok(const struct http1_header *h)
{
    for (uint32_t i = 0; i < h->vlen; i++) {
        uint8_t c = (uint8_t)h->value[i];
        if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
            return false;
    }
    if (h->vlen) {
        char a = h->value[0], b = h->value[h->vlen - 1];
        if (a == ' ' || a == '\t' || b == ' ' || b == '\t')
            return false;
    }
    return true;
}

/* Every comma element of a Content-Length value is the number n. */
static bool cl_value_is(const struct http1_header *h, uint64_t n)
{
    size_t i = 0;
    bool any = false;
    while (i < h->vlen) {
        size_t s = i;
        while (i < h->vlen && h->value[i] != ',')
            i++;
        size_t a = s, b = i;
        while (a < b && h->value[a] == ' ')
            a++;
        while (b > a && h->value[b - 1] == ' ')
            b--;
        if (a == b)
            return false;
        uint64_t v = 0;
        for (size_t j = a; j < b; j++) {
            if (h->value[j] < '0' || h->value[j] > '9')
                return false;
            v = v * 10 + (uint64_t)(h->value[j] - '0');
        }
        if (v != n)
            return false;
        any = true;
        i++;
    }
    return any;
}

static void check_fields(const struct http1_msg *m, const uint8_t *p, size_t len)
{
    CHECK(m->nh <= HTTP1_MAX_HEADERS);
    CHECK(m->minor == 0 || m->minor == 1);
    bool any_close = false, any_ka = false, any_upgrade_tok = false, any_upgrade = false;
    unsigned ncl = 0, nte = 0, nhost = 0, npa = 0, ncl_values = 0;
    for (unsigned i = 0; i < m->nh; i++) {
        const struct http1_header *h = &m->h[i];
        CHECK(h->nlen > 0 && within(h->name, h->nlen, p, len));
        CHECK(within(h->value, h->vlen, p, len));
        for (unsigned j = 0; j < h->nlen; j++)
            CHECK(is_tchar((uint8_t)h->name[j]));
        CHECK(h->name[h->nlen] == ':');
        CHECK(value_ok(h));
        /* lookup finds the first field of that name */
        char name[512];
        if (h->nlen < sizeof(name)) {
            memcpy(name, h->name, h->nlen);
            name[h->nlen] = '\0';
            const struct http1_header *f = http1_find(m, name);
            CHECK(f != NULL && f <= h && http1_name_is(f, name));
        }
        (void)http1_hop_by_hop(m, h);
        if (http1_name_is(h, "content-length")) {
            ncl++;
            CHECK(m->has_cl && cl_value_is(h, m->content_length));
            CHECK(!http1_hop_by_hop(m, h)); /* framing is never hop-by-hop */
            ncl_values += 1;
            for (uint32_t k = 0; k < h->vlen; k++)
                ncl_values += h->value[k] == ',';
        } else if (http1_name_is(h, "transfer-encoding")) {
            nte++;
            CHECK(h->vlen == 7 && strncasecmp(h->value, "chunked", 7) == 0);
            CHECK(!http1_hop_by_hop(m, h));
        } else if (http1_name_is(h, "host")) {
            nhost++;
            CHECK(!http1_hop_by_hop(m, h));
        } else if (http1_name_is(h, "proxy-authorization")) {
            npa++;
            CHECK(http1_hop_by_hop(m, h));
        } else if (http1_name_is(h, "connection")) {
            any_close |= http1_has_token(h->value, h->vlen, "close");
            any_ka |= http1_has_token(h->value, h->vlen, "keep-alive");
            any_upgrade_tok |= http1_has_token(h->value, h->vlen, "upgrade");
            /* an accepted message never names framing or routing in it */
            CHECK(!http1_has_token(h->value, h->vlen, "content-length"));
            CHECK(!http1_has_token(h->value, h->vlen, "transfer-encoding"));
            CHECK(!http1_has_token(h->value, h->vlen, "host"));
            CHECK(http1_hop_by_hop(m, h));
        } else if (http1_name_is(h, "upgrade")) {
            any_upgrade = true;
            CHECK(http1_hop_by_hop(m, h));
        } else if (http1_name_is(h, "keep-alive") || http1_name_is(h, "proxy-connection") ||
                   http1_name_is(h, "te")) {
            CHECK(http1_hop_by_hop(m, h));
        }
    }
    CHECK((ncl > 0) == m->has_cl);
    CHECK(m->cl_repeated == (ncl_values > 1));
    CHECK(m->nhost == nhost && m->nproxy_auth == npa);
    if (m->method) /* a request: one Host and one Proxy-Authorization at most */
        CHECK(nhost <= 1 && npa <= 1);
    CHECK(nte <= 1 && (nte == 1) == m->has_te && m->has_te == m->chunked);
    CHECK(!(m->has_cl && m->has_te));
    CHECK(!m->has_te || m->minor == 1);
    CHECK(!m->has_cl || m->content_length < 1000000000000000000ull);
    CHECK(m->conn_close == any_close && m->conn_keepalive == any_ka);
    CHECK(m->upgrade == (any_upgrade_tok && any_upgrade));
}

static bool is_error(int rc)
{
    return rc == HTTP1_E_BAD || rc == HTTP1_E_URI_TOO_LONG || rc == HTTP1_E_TOO_LARGE ||
           rc == HTTP1_E_VERSION || rc == HTTP1_E_SMUGGLING || rc == HTTP1_E_CODING;
}

static void check_status_of(int rc)
{
    int st = http1_error_status(rc);
    CHECK(st == 400 || st == 414 || st == 431 || st == 501 || st == 505);
    CHECK(http1_reason(st) != NULL);
}

static void fuzz_request(const uint8_t *p, size_t len, size_t max_line, struct http1_msg *m)
{
    int rc = http1_parse_request(p, len, max_line, m);
    CHECK(rc == 0 || is_error(rc));
    /* the request line, up to its CRLF (without one, the parser's line
     * stops a byte short of the end: a head always has one) */
    size_t ll = 0;
    while (ll + 1 < len && !(p[ll] == '\r' && p[ll + 1] == '\n'))
        ll++;
    if (rc) {
        check_status_of(rc);
        if (rc == HTTP1_E_URI_TOO_LONG)
            CHECK(ll > max_line);
        return;
    }
    CHECK(ll <= max_line);
    CHECK((const uint8_t *)m->method == p && m->mlen > 0 && p[m->mlen] == ' ');
    for (unsigned i = 0; i < m->mlen; i++)
        CHECK(is_tchar(p[i]));
    CHECK((const uint8_t *)m->target == p + m->mlen + 1 && m->tlen > 0);
    for (uint32_t i = 0; i < m->tlen; i++)
        CHECK(m->target[i] > 0x20 && m->target[i] < 0x7f);
    CHECK(m->mlen + 1 + m->tlen + 9 == ll);
    CHECK(memcmp(m->target + m->tlen, " HTTP/1.", 8) == 0);
    CHECK(m->status == 0);
    check_fields(m, p, len);

    struct http1_body b;
    http1_body_request(&b, m);
    if (m->chunked)
        CHECK(b.kind == HTTP1_BODY_CHUNKED && !b.done);
    else if (m->has_cl && m->content_length)
        CHECK(b.kind == HTTP1_BODY_LENGTH && b.remaining == m->content_length && !b.done);
    else
        CHECK(b.kind == HTTP1_BODY_NONE && b.done);
}

static void fuzz_response(const uint8_t *p, size_t len, bool head_req, struct http1_msg *m)
{
    int rc = http1_parse_response(p, len, m);
    CHECK(rc == 0 || is_error(rc));
    CHECK(rc != HTTP1_E_URI_TOO_LONG);
    if (rc)
        return;
    CHECK(len >= 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ');
    CHECK(m->status >= 100 && m->status <= 999);
    CHECK(m->status == (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
    CHECK(m->method == NULL);
    CHECK(within(m->reason, m->rlen, p, len));
    check_fields(m, p, len);

    struct http1_body b;
    http1_body_response(&b, m, head_req);
    bool bodiless = head_req || m->status < 200 || m->status == 204 || m->status == 304;
    if (bodiless)
        CHECK(b.kind == HTTP1_BODY_NONE && b.done);
    else if (m->chunked)
        CHECK(b.kind == HTTP1_BODY_CHUNKED);
    else if (m->has_cl)
        CHECK(b.kind == (m->content_length ? HTTP1_BODY_LENGTH : HTTP1_BODY_NONE));
    else
        CHECK(b.kind == HTTP1_BODY_CLOSE && !b.done);
}

/* ---- chunked scanner ---------------------------------------------------- */

struct scan_result {
    ssize_t n; /* bytes of the body, or the error */
    bool done;
};

/* Scan data in pieces: step 0 = all at once, 1 = a byte at a time, else
 * random sizes below step. Each piece is copied to the end of win. */
static struct scan_result scan_chunked(const uint8_t *data, size_t size, size_t step, struct gen *g,
                                       uint8_t *win)
{
    struct http1_msg m;
    memset(&m, 0, sizeof(m));
    m.minor = 1;
    m.has_te = m.chunked = true;
    struct http1_body b;
    http1_body_request(&b, &m);
    CHECK(b.kind == HTTP1_BODY_CHUNKED);
    size_t off = 0;
    while (off < size && !b.done) {
        size_t n = step == 0 ? size - off : step == 1 ? 1 : 1 + gen_below(g, step);
        if (n > size - off)
            n = size - off;
        uint8_t *p = win + size - n;
        memmove(p, data + off, n);
        ssize_t got = http1_body_scan(&b, p, n);
        if (got < 0) {
            CHECK(got == HTTP1_E_CHUNK);
            return (struct scan_result){got, false};
        }
        CHECK((size_t)got <= n);
        CHECK((size_t)got == n || b.done);
        off += (size_t)got;
    }
    if (b.done) {
        /* After the end, nothing more belongs to it. */
        CHECK(http1_body_scan(&b, data, size) == 0);
    }
    return (struct scan_result){(ssize_t)off, b.done};
}

static void fuzz_chunked(const uint8_t *data, size_t size, struct gen *g, uint8_t *win)
{
    struct scan_result whole = scan_chunked(data, size, 0, g, win);
    struct scan_result bytes = scan_chunked(data, size, 1, g, win);
    struct scan_result rnd = scan_chunked(data, size, 2 + gen_below(g, 30), g, win);
    CHECK(whole.n == bytes.n && whole.done == bytes.done);
    CHECK(whole.n == rnd.n && whole.done == rnd.done);
    if (whole.n >= 0 && !whole.done)
        CHECK((size_t)whole.n == size);
    if (whole.done) {
        CHECK(whole.n >= 5);
        CHECK(memcmp(data + whole.n - 2, "\r\n", 2) == 0);
        /* The message alone is the same message. */
        struct scan_result again = scan_chunked(data, (size_t)whole.n, 0, g, win);
        CHECK(again.n == whole.n && again.done);
    }
    /* Content-Length framing over the same bytes. */
    struct http1_msg m;
    memset(&m, 0, sizeof(m));
    m.has_cl = true;
    m.content_length = size ? data[0] : 0;
    struct http1_body b;
    http1_body_request(&b, &m);
    size_t off = 0;
    while (off < size && !b.done) {
        size_t n = 1 + gen_below(g, 8);
        if (n > size - off)
            n = size - off;
        ssize_t got = http1_body_scan(&b, data + off, n);
        CHECK(got >= 0 && (size_t)got <= n);
        off += (size_t)got;
    }
    CHECK(off == (size < m.content_length ? size : m.content_length));
}

/* ---- targets and credentials ------------------------------------------- */

static bool digits_are(const uint8_t *s, size_t n, uint16_t port)
{
    if (n == 0 || n > 5)
        return false;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v == port;
}

/* t[0..len) is "host:port" or "[host]:port" for this host and port. */
static bool authority_is(const uint8_t *t, size_t len, const char *host, uint16_t port)
{
    size_t hl = strlen(host);
    if (len && t[0] == '[')
        return len > hl + 3 && memcmp(t + 1, host, hl) == 0 && t[hl + 1] == ']' &&
               t[hl + 2] == ':' && digits_are(t + hl + 3, len - hl - 3, port);
    return len > hl + 1 && memcmp(t, host, hl) == 0 && t[hl] == ':' &&
           digits_are(t + hl + 1, len - hl - 1, port);
}

static void fuzz_grammars(const uint8_t *data, size_t size, struct gen *g)
{
    const char *t = (const char *)data;
    char host[300];
    uint16_t port = 0;
    size_t hcap = 1 + gen_below(g, sizeof(host));
    int rc = http1_parse_authority(t, size, host, hcap, &port);
    CHECK(rc == 0 || rc == HTTP1_E_BAD);
    if (rc == 0) {
        size_t hl = strlen(host);
        CHECK(hl >= 1 && hl <= 255 && hl < hcap && port != 0);
        CHECK(authority_is(data, size, host, port));
    }

    size_t path_off = 0;
    port = 0;
    rc = http1_parse_absolute(t, size, host, sizeof(host), &port, &path_off);
    CHECK(rc == 0 || rc == HTTP1_E_BAD);
    if (rc == 0) {
        CHECK(size >= 8 && strncasecmp(t, "http://", 7) == 0);
        CHECK(path_off > 7 && path_off <= size);
        CHECK(path_off == size || t[path_off] == '/' || t[path_off] == '?' || t[path_off] == '#');
        const uint8_t *a = data + 7;
        size_t al = path_off - 7;
        CHECK(memchr(a, '@', al) == NULL && memchr(a, '/', al) == NULL);
        CHECK(strlen(host) >= 1 && port != 0);
        /* either the authority names the port, or it is 80 */
        if (!authority_is(a, al, host, port)) {
            size_t hl = strlen(host);
            bool bare = al == hl && memcmp(a, host, hl) == 0;
            bool bracketed =
                al == hl + 2 && a[0] == '[' && memcmp(a + 1, host, hl) == 0 && a[hl + 1] == ']';
            CHECK(port == 80 && (bare || bracketed));
        }
    }

    /* Basic: the token (its decode is libsodium's, in crypto/, not linked
     * here), then the split, run on the input as if it were decoded. */
    const char *tok = NULL;
    size_t tlen = 0;
    rc = http1_basic_token(t, size, &tok, &tlen);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(size >= 6 && strncasecmp(t, "basic", 5) == 0 && (t[5] == ' ' || t[5] == '\t'));
        CHECK(tok > t && tok + tlen == t + size && tlen % 4 == 0);
        CHECK(tlen >= 4 && tlen <= HTTP1_BASIC_TOKEN_MAX);
        for (size_t k = 0; k < tlen; k++) {
            char c = tok[k];
            bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '+' || c == '/';
            CHECK(alpha || (c == '=' && k + 2 >= tlen && (k + 1 == tlen || tok[k + 1] == '=')));
        }
    }
    char user[256], pass[256];
    size_t ulen = 0, plen = 0;
    size_t ucap = 1 + gen_below(g, sizeof(user)), pcap = 1 + gen_below(g, sizeof(pass));
    rc = http1_basic_split(data, size, user, ucap, &ulen, pass, pcap, &plen);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(ulen >= 1 && ulen <= 255 && ulen < ucap && user[ulen] == '\0');
        CHECK(plen >= 1 && plen <= 255 && plen < pcap && pass[plen] == '\0');
        CHECK(memchr(user, ':', ulen) == NULL && ulen + 1 + plen == size);
        CHECK(memcmp(user, data, ulen) == 0 && data[ulen] == ':');
        CHECK(memcmp(pass, data + ulen + 1, plen) == 0);
    }

    /* Empty lines before a request line: complete CRLF pairs, bounded. */
    unsigned max = (unsigned)gen_below(g, 6);
    ssize_t el = http1_empty_lines(data, size, max);
    CHECK(el == HTTP1_E_BAD || (el >= 0 && el % 2 == 0 && (size_t)el <= 2 * (size_t)max));
    if (el >= 0) {
        for (ssize_t k = 0; k < el; k += 2)
            CHECK(data[k] == '\r' && data[k + 1] == '\n');
        CHECK(!((size_t)el + 1 < size && data[el] == '\r' && data[el + 1] == '\n') ||
              (size_t)el == 2 * (size_t)max);
    } else {
        CHECK(size >= 2 * (size_t)max + 2);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *win = malloc(size ? size : 1);
    struct http1_msg *m = malloc(sizeof(*m));
    if (!win || !m) {
        free(win);
        free(m);
        return 0;
    }
    struct gen g;
    gen_init(&g, data, size);

    /* Limits from the data, so they move independently of the message:
     * a generous one, and one that may cut the head. */
    size_t small_max = size ? 1 + ((size_t)data[size - 1] * 13 + data[0]) % (size + 8) : 1;
    size_t max_line = size ? 1 + ((size_t)data[0] * 7 + size) % (size + 16) : 1;
    fuzz_head(data, size, small_max, win, &g);
    ssize_t end = fuzz_head(data, size, 1 << 20, win, &g);

    if (end > 0) {
        fuzz_request(data, (size_t)end, max_line, m);
        fuzz_request(data, (size_t)end, 1 << 20, m);
        fuzz_response(data, (size_t)end, size & 1, m);
        /* what follows a head is a body */
        fuzz_chunked(data + end, size - (size_t)end, &g, win);
    }
    /* The parsers must also stay in bounds on what is not a head. */
    fuzz_request(data, size, 1 << 20, m);
    fuzz_response(data, size, false, m);
    fuzz_chunked(data, size, &g, win);
    fuzz_grammars(data, size, &g);

    free(m);
    free(win);
    return 0;
}
