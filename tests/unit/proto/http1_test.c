/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1_test.c: the HTTP/1.x functions of proto/http1, held to the contract
 * in http1.h: the resumable head finder, request and response heads with
 * every smuggling defence, body framing and the chunked scanner, hop-by-hop
 * fields, the authority and absolute-URI grammars, Basic credentials.
 * Inputs are parsed from exact-size heap copies so ASan sees any read past
 * the end, and streamed inputs are also fed a byte at a time, since that is
 * how a slow client delivers them.
 */
#include "harness.h"

#include "crypto/fcrypto.h"
#include "proto/http1.h"

/* ---- helpers ------------------------------------------------------------ */

/* An exact-size heap copy of n bytes (never NULL). */
static uint8_t *dup_exact(const void *s, size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    if (n)
        memcpy(p, s, n);
    return p;
}

/* A head parsed from its own exact-size copy, which stays alive while the
 * test looks at the fields (they point into it). */
struct parsed {
    uint8_t *buf;
    size_t len;
    int rc;
    struct http1_msg m;
};

static struct parsed *parse_req_n(const char *text, size_t len, size_t max_line)
{
    struct parsed *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->buf = dup_exact(text, len);
    p->len = len;
    p->rc = http1_parse_request(p->buf, len, max_line, &p->m);
    return p;
}

static struct parsed *parse_req(const char *text)
{
    return parse_req_n(text, strlen(text), 8192);
}

static struct parsed *parse_resp(const char *text)
{
    struct parsed *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    p->len = strlen(text);
    p->buf = dup_exact(text, p->len);
    p->rc = http1_parse_response(p->buf, p->len, &p->m);
    return p;
}

static void parsed_free(struct parsed *p)
{
    free(p->buf);
    free(p);
}

/* The verdict on a request head, nothing else. */
static int req_rc_n(const char *text, size_t len)
{
    struct parsed *p = parse_req_n(text, len, 8192);
    int rc = p->rc;
    parsed_free(p);
    return rc;
}

static int req_rc(const char *text)
{
    return req_rc_n(text, strlen(text));
}

static int resp_rc(const char *text)
{
    struct parsed *p = parse_resp(text);
    int rc = p->rc;
    parsed_free(p);
    return rc;
}

static void assert_span(const char *s, size_t n, const char *want)
{
    assert_int_equal(n, strlen(want));
    assert_memory_equal(s, want, n);
}

static void assert_header(const struct http1_msg *m, unsigned i, const char *name,
                          const char *value)
{
    assert_true(i < m->nh);
    assert_span(m->h[i].name, m->h[i].nlen, name);
    assert_span(m->h[i].value, m->h[i].vlen, value);
}

/* ---- head finder ---------------------------------------------------------- */

static ssize_t head_end_whole(const void *s, size_t len, size_t max)
{
    uint8_t *p = dup_exact(s, len);
    size_t scanned = 0;
    ssize_t rc = http1_head_end(p, len, max, &scanned);
    free(p);
    return rc;
}

/* Feed s in growing prefixes (steps from rng, or one byte at a time when
 * rng is NULL), each from an exact-size copy, carrying *scanned between
 * calls. Returns the first non-zero verdict, or 0. A fresh scan of each
 * prefix must agree with the resumed one. */
static ssize_t head_end_stream(const uint8_t *s, size_t len, size_t max, struct harness_rng *rng)
{
    size_t scanned = 0, k = 0;
    while (k < len) {
        k += rng ? 1 + harness_rng_below(rng, 7) : 1;
        if (k > len)
            k = len;
        uint8_t *p = dup_exact(s, k);
        ssize_t got = http1_head_end(p, k, max, &scanned);
        size_t fresh_scanned = 0;
        ssize_t fresh = http1_head_end(p, k, max, &fresh_scanned);
        free(p);
        assert_int_equal(got, fresh);
        assert_true(scanned <= k);
        if (got != 0)
            return got;
    }
    return 0;
}

static void check_head(const char *s, size_t len, size_t max, ssize_t want)
{
    assert_int_equal(head_end_whole(s, len, max), want);
    assert_int_equal(head_end_stream((const uint8_t *)s, len, max, NULL), want);
    struct harness_rng rng;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        harness_rng_init(&rng, seed);
        assert_int_equal(head_end_stream((const uint8_t *)s, len, max, &rng), want);
    }
}

#define CHECK_HEAD(lit, max, want) check_head(lit, sizeof(lit) - 1, max, want)

static void test_head_end_complete(void **state)
{
    (void)state;
    static const char req[] = "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n";
    CHECK_HEAD(req, 65536, (ssize_t)(sizeof(req) - 1));
    /* The smallest possible head, and one with no fields. */
    CHECK_HEAD("\r\n\r\n", 100, 4);
    CHECK_HEAD("GET / HTTP/1.0\r\n\r\n", 100, 18);
    /* A body behind the head is not part of it. */
    static const char body[] = "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
    CHECK_HEAD(body, 65536, (ssize_t)(sizeof(body) - 1 - 5));
    /* So is the next pipelined request. */
    static const char two[] = "GET / HTTP/1.1\r\nA: b\r\n\r\nGET / HTTP/1.1\r\n\r\n";
    CHECK_HEAD(two, 65536, 24);
}

static void test_head_end_incomplete(void **state)
{
    (void)state;
    CHECK_HEAD("", 100, 0);
    CHECK_HEAD("GET / HTTP/1.1", 100, 0);
    CHECK_HEAD("GET / HTTP/1.1\r", 100, 0);
    CHECK_HEAD("GET / HTTP/1.1\r\n", 100, 0);
    CHECK_HEAD("GET / HTTP/1.1\r\nA: b\r\n", 100, 0);
    CHECK_HEAD("GET / HTTP/1.1\r\nA: b\r\n\r", 100, 0);
}

static void test_head_end_every_prefix(void **state)
{
    (void)state;
    static const char req[] = "GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n"
                              "User-Agent: t\r\n\r\nBODY";
    size_t head = sizeof(req) - 1 - 4;
    for (size_t k = 0; k <= sizeof(req) - 1; k++)
        assert_int_equal(head_end_whole(req, k, 65536), k < head ? 0 : (ssize_t)head);
}

static void test_head_end_bare_lf(void **state)
{
    (void)state;
    CHECK_HEAD("GET / HTTP/1.1\nHost: a\r\n\r\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\nHost: a\n\r\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\nHost: a\r\n\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("\n\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\n\n", 100, HTTP1_E_BAD);
    /* Judged as soon as the LF arrives, without waiting for the rest. */
    assert_int_equal(head_end_whole("GET / HTTP/1.1\n", 15, 100), HTTP1_E_BAD);
}

static void test_head_end_bare_cr(void **state)
{
    (void)state;
    CHECK_HEAD("GET / HTTP/1.1\rHost: a\r\n\r\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\r\n\r\n", 100, HTTP1_E_BAD);
    CHECK_HEAD("GET / HTTP/1.1\r\n\r\r\n", 100, HTTP1_E_BAD);
    /* A CR at the end of what has arrived waits for its next byte. */
    assert_int_equal(head_end_whole("GET / HTTP/1.1\r", 15, 100), 0);
    assert_int_equal(head_end_whole("GET / HTTP/1.1\rX", 16, 100), HTTP1_E_BAD);
}

static void test_head_end_nul(void **state)
{
    (void)state;
    static const char nul_line[] = "GET /\0 HTTP/1.1\r\n\r\n";
    CHECK_HEAD(nul_line, 100, HTTP1_E_BAD);
    static const char nul_value[] = "GET / HTTP/1.1\r\nA: \0\r\n\r\n";
    CHECK_HEAD(nul_value, 100, HTTP1_E_BAD);
    CHECK_HEAD("\0", 100, HTTP1_E_BAD);
}

static void test_head_end_too_large(void **state)
{
    (void)state;
    /* 26 bytes */
    static const char req[] = "GET / HTTP/1.1\r\nA: bcd\r\n\r\n";
    const size_t n = sizeof(req) - 1;
    CHECK_HEAD(req, n, (ssize_t)n);     /* exactly max: fine */
    CHECK_HEAD(req, n + 1, (ssize_t)n); /* under max */
    CHECK_HEAD(req, n - 1, HTTP1_E_TOO_LARGE);
    CHECK_HEAD(req, 10, HTTP1_E_TOO_LARGE);
    /* max bytes without an end: too large once they are all there. */
    assert_int_equal(head_end_whole(req, 9, 10), 0);
    assert_int_equal(head_end_whole(req, 10, 10), HTTP1_E_TOO_LARGE);
    assert_int_equal(head_end_whole(req, n, 10), HTTP1_E_TOO_LARGE);
    /* A long field with no end, a byte at a time. */
    char big[300];
    memset(big, 'x', sizeof(big));
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    check_head(big, sizeof(big), 256, HTTP1_E_TOO_LARGE);
    check_head(big, sizeof(big), 301, 0);
}

static void test_head_end_resumes_where_it_stopped(void **state)
{
    (void)state;
    static const char req[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t scanned = 0;
    assert_int_equal(http1_head_end((const uint8_t *)req, 10, 100, &scanned), 0);
    assert_int_equal(scanned, 10);
    /* A CR at the end of the data is left to judge with its LF. */
    assert_int_equal(http1_head_end((const uint8_t *)req, 15, 100, &scanned), 0);
    assert_int_equal(scanned, 14);
    assert_int_equal(http1_head_end((const uint8_t *)req, 27, 100, &scanned), 27);
}

/* ---- request line --------------------------------------------------------- */

static void test_request_methods(void **state)
{
    (void)state;
    static const char *const methods[] = {"GET",     "HEAD",  "POST",     "PUT",    "DELETE",
                                          "OPTIONS", "PATCH", "M-SEARCH", "get",    "X_Y.Z~1",
                                          "TRACE",   "PURGE", "!#$%&'*+", "^_`|~1", "PROPFIND"};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "%s http://a/ HTTP/1.1\r\n\r\n", methods[i]);
        struct parsed *p = parse_req(line);
        assert_int_equal(p->rc, 0);
        assert_span(p->m.method, p->m.mlen, methods[i]);
        assert_span(p->m.target, p->m.tlen, "http://a/");
        assert_int_equal(p->m.minor, 1);
        assert_int_equal(p->m.nh, 0);
        parsed_free(p);
    }
    /* Not a token, or empty. */
    assert_int_equal(req_rc("GE(T / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GE\"T / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("G:ET / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET\t/ HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc(" / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc(" GET / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("G\xc3\xa9T / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
}

static void test_request_targets(void **state)
{
    (void)state;
    static const char *const targets[] = {
        "http://example.com/path?q=1#f", "example.com:443", "[::1]:8080", "/origin/form", "*",
        "http://a/%20~!$&'()*+,;=:@",
    };
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "OPTIONS %s HTTP/1.1\r\nHost: x\r\n\r\n", targets[i]);
        struct parsed *p = parse_req(line);
        assert_int_equal(p->rc, 0);
        assert_span(p->m.target, p->m.tlen, targets[i]);
        parsed_free(p);
    }
    /* Spaces, controls, DEL and non-ASCII are not part of any target. */
    assert_int_equal(req_rc("GET  / HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /a b HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /a\tb HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /a\x01 HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /a\x7f HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /\xc3\xa9 HTTP/1.1\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc_n("GET /\0 HTTP/1.1\r\n\r\n", 19), HTTP1_E_BAD);
    /* No target, no version, or too many parts. */
    assert_int_equal(req_rc("GET\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET /\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / \r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1 \r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1 x\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("\r\n\r\n"), HTTP1_E_BAD);
}

static void test_request_versions(void **state)
{
    (void)state;
    struct parsed *p = parse_req("GET http://a/ HTTP/1.0\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.minor, 0);
    parsed_free(p);
    p = parse_req("GET http://a/ HTTP/1.1\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.minor, 1);
    parsed_free(p);

    /* Well-formed, but a version we do not speak: 505. */
    static const char *const unsupported[] = {"HTTP/1.2", "HTTP/1.9", "HTTP/2.0", "HTTP/0.9",
                                              "HTTP/3.0", "HTTP/9.9", "HTTP/0.0"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "GET / %s\r\n\r\n", unsupported[i]);
        assert_int_equal(req_rc(line), HTTP1_E_VERSION);
    }
    /* Not a version at all: 400. */
    static const char *const malformed[] = {"HTTP/1.",  "HTTP/1",   "HTTP/11",  "HTTP/1.10",
                                            "http/1.1", "Http/1.1", "HTTP/a.1", "HTTP/1.x",
                                            "HTTP 1.1", "HTTP/1,1", "HTTPS/1.1"};
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "GET / %s\r\n\r\n", malformed[i]);
        assert_int_equal(req_rc(line), HTTP1_E_BAD);
    }
    assert_int_equal(http1_error_status(HTTP1_E_VERSION), 505);
}

static void test_request_line_too_long(void **state)
{
    (void)state;
    /* max_line bounds the whole request line, CRLF excluded. */
    char line[400];
    char target[300];
    memset(target, 'a', sizeof(target));
    target[0] = '/';
    for (size_t tl = 230; tl < 250; tl++) {
        snprintf(line, sizeof(line), "GET %.*s HTTP/1.1\r\nHost: a\r\n\r\n", (int)tl, target);
        size_t linelen = 4 + tl + 9;
        struct parsed *p = parse_req_n(line, strlen(line), 256);
        assert_int_equal(p->rc, linelen <= 256 ? 0 : HTTP1_E_URI_TOO_LONG);
        parsed_free(p);
    }
    /* Judged before anything else on the line. */
    snprintf(line, sizeof(line), "GET %.*s HTTP/7.7\r\n\r\n", 280, target);
    struct parsed *p = parse_req_n(line, strlen(line), 256);
    assert_int_equal(p->rc, HTTP1_E_URI_TOO_LONG);
    parsed_free(p);
    assert_int_equal(http1_error_status(HTTP1_E_URI_TOO_LONG), 414);
}

/* A request with n fields "Xi: i". */
static char *many_fields(unsigned n)
{
    size_t cap = 64 + (size_t)n * 32;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t off = (size_t)snprintf(s, cap, "GET http://a/ HTTP/1.1\r\n");
    for (unsigned i = 0; i < n; i++)
        off += (size_t)snprintf(s + off, cap - off, "X%u: %u\r\n", i, i);
    snprintf(s + off, cap - off, "\r\n");
    return s;
}

static void test_request_field_count(void **state)
{
    (void)state;
    char *s = many_fields(HTTP1_MAX_HEADERS);
    struct parsed *p = parse_req(s);
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.nh, HTTP1_MAX_HEADERS);
    assert_header(&p->m, HTTP1_MAX_HEADERS - 1, "X99", "99");
    parsed_free(p);
    free(s);

    s = many_fields(HTTP1_MAX_HEADERS + 1);
    assert_int_equal(req_rc(s), HTTP1_E_TOO_LARGE);
    free(s);
    s = many_fields(500);
    assert_int_equal(req_rc(s), HTTP1_E_TOO_LARGE);
    free(s);
    assert_int_equal(http1_error_status(HTTP1_E_TOO_LARGE), 431);
}

/* ---- fields ------------------------------------------------------------ */

static void test_request_fields(void **state)
{
    (void)state;
    struct parsed *p = parse_req("GET http://a/ HTTP/1.1\r\n"
                                 "Host: example.com\r\n"
                                 "X-Spaces: \t  padded value \t \r\n"
                                 "X-Empty:\r\n"
                                 "X-Empty-Ws:   \r\n"
                                 "x-inner:a \t b\r\n"
                                 "X-Obs-Text: caf\xc3\xa9\r\n"
                                 "!#$%&'*+-.^_`|~09: token\r\n"
                                 "\r\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.nh, 7);
    assert_header(&p->m, 0, "Host", "example.com");
    assert_header(&p->m, 1, "X-Spaces", "padded value");
    assert_header(&p->m, 2, "X-Empty", "");
    assert_header(&p->m, 3, "X-Empty-Ws", "");
    assert_header(&p->m, 4, "x-inner", "a \t b");
    assert_header(&p->m, 5, "X-Obs-Text", "caf\xc3\xa9");
    assert_header(&p->m, 6, "!#$%&'*+-.^_`|~09", "token");
    assert_false(p->m.has_cl || p->m.has_te || p->m.chunked);
    assert_false(p->m.conn_close || p->m.conn_keepalive || p->m.upgrade);

    /* Lookup: first occurrence, any case. */
    const struct http1_header *h = http1_find(&p->m, "HOST");
    assert_ptr_equal(h, &p->m.h[0]);
    assert_ptr_equal(http1_find(&p->m, "x-INNER"), &p->m.h[4]);
    assert_null(http1_find(&p->m, "X-Missing"));
    assert_null(http1_find(&p->m, "Hos"));
    assert_null(http1_find(&p->m, "Hostx"));
    assert_true(http1_name_is(&p->m.h[0], "host"));
    assert_false(http1_name_is(&p->m.h[0], "hos"));
    parsed_free(p);

    p = parse_req("GET http://a/ HTTP/1.1\r\nA: 1\r\na: 2\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_ptr_equal(http1_find(&p->m, "a"), &p->m.h[0]);
    parsed_free(p);
}

static void test_request_bad_fields(void **state)
{
    (void)state;
    /* obs-fold (RFC 9112 5.2): refused, never unfolded. */
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n"), HTTP1_E_BAD);
    /* whitespace between the start line and the first field */
    assert_int_equal(req_rc("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), HTTP1_E_BAD);
    /* whitespace before the colon (RFC 9112 5.1) */
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"), HTTP1_E_BAD);
    /* empty name, no colon, a name that is not a token */
    assert_int_equal(req_rc("GET / HTTP/1.1\r\n: a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nHost\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nHo(st: a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nX@Y: a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nX\xc3\xa9: a\r\n\r\n"), HTTP1_E_BAD);
    /* control bytes in a value (TAB is the one allowed) */
    static const char ctl[] = {0x00, 0x01, 0x08, 0x0a, 0x0b, 0x0c, 0x0d, 0x1b, 0x1f, 0x7f};
    for (size_t i = 0; i < sizeof(ctl); i++) {
        char line[64];
        int n = snprintf(line, sizeof(line), "GET / HTTP/1.1\r\nX: a?b\r\n\r\n");
        line[20] = ctl[i];
        assert_int_equal(req_rc_n(line, (size_t)n), HTTP1_E_BAD);
    }
    assert_int_equal(req_rc("GET / HTTP/1.1\r\nX: a\tb\r\n\r\n"), 0);
}

/* ---- smuggling ------------------------------------------------------------ */

static void test_cl_and_te(void **state)
{
    (void)state;
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                            "Content-Length: 5\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\ncontent-length: 0\r\n"
                            "transfer-encoding: CHUNKED\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(http1_error_status(HTTP1_E_SMUGGLING), 400);
}

static void test_content_length_values(void **state)
{
    (void)state;
    struct {
        const char *fields;
        int rc;
        uint64_t cl;
    } cases[] = {
        {"Content-Length: 0\r\n", 0, 0},
        {"Content-Length: 5\r\n", 0, 5},
        {"content-LENGTH: 42\r\n", 0, 42},
        {"Content-Length:7\r\n", 0, 7},
        {"Content-Length:   7  \r\n", 0, 7},
        {"Content-Length: 007\r\n", 0, 7},
        {"Content-Length: 999999999999999999\r\n", 0, 999999999999999999ull},
        /* identical duplicates agree: accepted */
        {"Content-Length: 5\r\nContent-Length: 5\r\n", 0, 5},
        {"Content-Length: 5, 5\r\n", 0, 5},
        {"Content-Length: 5,5,5\r\n", 0, 5},
        {"Content-Length: 5, 5\r\nContent-Length: 5\r\n", 0, 5},
        {"Content-Length: 5\r\nX: y\r\nContent-Length: 005\r\n", 0, 5},
        /* differing values: ambiguous framing */
        {"Content-Length: 5\r\nContent-Length: 6\r\n", HTTP1_E_SMUGGLING, 0},
        {"Content-Length: 5, 6\r\n", HTTP1_E_SMUGGLING, 0},
        {"Content-Length: 6,5\r\n", HTTP1_E_SMUGGLING, 0},
        {"Content-Length: 5, 5\r\nContent-Length: 6\r\n", HTTP1_E_SMUGGLING, 0},
        {"Content-Length: 0\r\nContent-Length: 10\r\n", HTTP1_E_SMUGGLING, 0},
        /* not a number */
        {"Content-Length: abc\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: -1\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: +5\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 0x10\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 5 5\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 5.0\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 5e2\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 1_000\r\n", HTTP1_E_BAD, 0},
        {"Content-Length:\r\n", HTTP1_E_BAD, 0},
        {"Content-Length:   \r\n", HTTP1_E_BAD, 0},
        {"Content-Length: ,5\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 5,,5\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 5\r\nContent-Length: x\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: \xd9\xa5\r\n", HTTP1_E_BAD, 0}, /* ARABIC-INDIC FIVE */
        /* beyond any real body */
        {"Content-Length: 1000000000000000000\r\n", HTTP1_E_BAD, 0},
        {"Content-Length: 18446744073709551621\r\n", HTTP1_E_BAD, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "POST http://a/ HTTP/1.1\r\n%s\r\n", cases[i].fields);
        struct parsed *p = parse_req(line);
        if (p->rc != cases[i].rc)
            fail_msg("%s: rc %d, expected %d", cases[i].fields, p->rc, cases[i].rc);
        if (p->rc == 0) {
            assert_true(p->m.has_cl);
            assert_false(p->m.has_te);
            assert_int_equal(p->m.content_length, cases[i].cl);
            /* more than one value: flagged, for the proxy to merge them */
            const char *first = strstr(cases[i].fields, ":");
            bool several = strchr(first, ',') || strstr(first, "Content-Length");
            if (p->m.cl_repeated != several)
                fail_msg("%s: cl_repeated %d", cases[i].fields, p->m.cl_repeated);
        }
        parsed_free(p);
    }
}

/* A field that is not a number must be refused even when an earlier
 * Content-Length was valid: the proxy forwards both fields, and a server
 * reading the empty one (as 0, or as the last value) frames the body
 * differently (RFC 9110 8.6: Content-Length = 1*DIGIT; RFC 9112 6.3). */
static void test_content_length_empty_after_valid(void **state)
{
    (void)state;
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
                            "Content-Length:\r\n\r\n"),
                     HTTP1_E_BAD);
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
                            "Content-Length:  \r\n\r\n"),
                     HTTP1_E_BAD);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length:\r\n\r\n"),
                     HTTP1_E_BAD);
}

static void test_transfer_encoding(void **state)
{
    (void)state;
    static const char *const ok[] = {"chunked", "Chunked", "CHUNKED", " chunked ", "\tchunked"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "POST http://a/ HTTP/1.1\r\nTransfer-Encoding:%s\r\n\r\n",
                 ok[i]);
        struct parsed *p = parse_req(line);
        assert_int_equal(p->rc, 0);
        assert_true(p->m.has_te);
        assert_true(p->m.chunked);
        assert_false(p->m.has_cl);
        parsed_free(p);
    }
    /* Anything but exactly "chunked": 501. */
    static const char *const coding[] = {
        "gzip",
        "gzip, chunked",
        "chunked, chunked",
        "identity",
        "chunked;q=1",
        "chunked,",
        ", chunked",
        "xchunked",
        "chunke",
        "chunked gzip",
        "chunked\x01",
        "deflate, chunked",
        "",
        "chunkedx",
        "chunked, identity",
        "\"chunked\"",
    };
    for (size_t i = 0; i < sizeof(coding) / sizeof(coding[0]); i++) {
        char line[128];
        snprintf(line, sizeof(line), "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: %s\r\n\r\n",
                 coding[i]);
        int rc = req_rc(line);
        /* a control byte is a malformed field before it is a coding */
        if (strchr(coding[i], '\x01'))
            assert_int_equal(rc, HTTP1_E_BAD);
        else if (rc != HTTP1_E_CODING)
            fail_msg("Transfer-Encoding: %s -> %d, expected CODING", coding[i], rc);
    }
    /* Two fields, even both chunked: stacked codings. */
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_CODING);
    assert_int_equal(req_rc("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_CODING);
    assert_int_equal(http1_error_status(HTTP1_E_CODING), 501);
}

static void test_te_on_http10(void **state)
{
    (void)state;
    /* HTTP/1.0 has no chunked: a TE there is an old desync trick. */
    assert_int_equal(req_rc("POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(resp_rc("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    /* A plain Content-Length on 1.0 is fine. */
    struct parsed *p = parse_req("POST http://a/ HTTP/1.0\r\nContent-Length: 3\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.content_length, 3);
    parsed_free(p);
}

/* ---- Connection ------------------------------------------------------------ */

static void test_connection_tokens(void **state)
{
    (void)state;
    struct {
        const char *fields;
        bool close, keepalive, upgrade;
    } cases[] = {
        {"Connection: close\r\n", true, false, false},
        {"Connection: Close\r\n", true, false, false},
        {"Connection: keep-alive\r\n", false, true, false},
        {"Connection: Keep-Alive\r\n", false, true, false},
        {"Connection: Upgrade\r\nUpgrade: websocket\r\n", false, false, true},
        {"Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n", false, true, true},
        /* without an Upgrade field, "upgrade" means nothing */
        {"Connection: upgrade\r\n", false, false, false},
        /* an Upgrade field without the token is not an upgrade either */
        {"Upgrade: websocket\r\n", false, false, false},
        {"Connection: foo, close , bar\r\n", true, false, false},
        {"Connection: ,,close,,\r\n", true, false, false},
        {"Connection:\tclose\t\r\n", true, false, false},
        {"Connection: closed\r\n", false, false, false},
        {"Connection: close-ish, keep-alive2\r\n", false, false, false},
        {"Connection: keep-alive\r\nConnection: close\r\n", true, true, false},
        {"X-Connection: close\r\n", false, false, false},
        {"Proxy-Connection: close\r\n", false, false, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "GET http://a/ HTTP/1.1\r\n%s\r\n", cases[i].fields);
        struct parsed *p = parse_req(line);
        assert_int_equal(p->rc, 0);
        if (p->m.conn_close != cases[i].close || p->m.conn_keepalive != cases[i].keepalive ||
            p->m.upgrade != cases[i].upgrade)
            fail_msg("%s: close=%d keepalive=%d upgrade=%d", cases[i].fields, p->m.conn_close,
                     p->m.conn_keepalive, p->m.upgrade);
        parsed_free(p);
    }
}

static void test_has_token(void **state)
{
    (void)state;
    assert_true(http1_has_token("close", 5, "close"));
    assert_true(http1_has_token("a, b ,c", 7, "b"));
    assert_true(http1_has_token("a, b ,c", 7, "C"));
    assert_true(http1_has_token("a,\tb\t", 5, "b"));
    assert_false(http1_has_token("a, bb", 5, "b"));
    assert_false(http1_has_token("", 0, "b"));
    assert_false(http1_has_token(",,, ", 4, "b"));
    /* len bounds the value: a token past it does not count */
    assert_false(http1_has_token("a, close", 3, "close"));
    assert_false(http1_has_token("clos", 4, "close"));
}

/* ---- responses --------------------------------------------------------- */

static void test_response_status_line(void **state)
{
    (void)state;
    struct {
        const char *line;
        int status, minor;
        const char *reason;
    } ok[] = {
        {"HTTP/1.1 200 OK", 200, 1, "OK"},
        {"HTTP/1.0 404 Not Found", 404, 0, "Not Found"},
        {"HTTP/1.1 200", 200, 1, ""},
        {"HTTP/1.1 200 ", 200, 1, ""},
        {"HTTP/1.1 100 Continue", 100, 1, "Continue"},
        {"HTTP/1.1 101 Switching Protocols", 101, 1, "Switching Protocols"},
        {"HTTP/1.1 599 custom\treason caf\xc3\xa9", 599, 1, "custom\treason caf\xc3\xa9"},
        {"HTTP/1.1 999 x", 999, 1, "x"},
        {"HTTP/1.1 204  two spaces", 204, 1, " two spaces"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char head[128];
        snprintf(head, sizeof(head), "%s\r\nServer: t\r\n\r\n", ok[i].line);
        struct parsed *p = parse_resp(head);
        if (p->rc != 0)
            fail_msg("%s: rc %d", ok[i].line, p->rc);
        assert_int_equal(p->m.status, ok[i].status);
        assert_int_equal(p->m.minor, ok[i].minor);
        assert_span(p->m.reason, p->m.rlen, ok[i].reason);
        assert_int_equal(p->m.nh, 1);
        assert_header(&p->m, 0, "Server", "t");
        assert_null(p->m.method);
        parsed_free(p);
    }
    static const char *const bad[] = {
        "HTTP/1.1 99 X",
        "HTTP/1.1 099 X",
        "HTTP/1.1 000",
        "HTTP/1.1 2000 OK",
        "HTTP/1.1 20a OK",
        "HTTP/1.1 20",
        "HTTP/1.1  200 OK",
        "HTTP/1.1\t200 OK",
        "HTTP/1.1 200\tOK",
        "HTTP/1.1 200 O\x01K",
        "HTTP/1.1 200 O\x7fK",
        "http/1.1 200 OK",
        "HTTP/1.1-200 OK",
        "",
        "HTTP/1.1",
        "HTTP/1.1 ",
        "HTTP/11 200 OK",
        "ICY 200 OK",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char head[128];
        snprintf(head, sizeof(head), "%s\r\n\r\n", bad[i]);
        int rc = resp_rc(head);
        if (rc != HTTP1_E_BAD)
            fail_msg("%s: rc %d, expected BAD", bad[i], rc);
    }
    assert_int_equal(resp_rc("HTTP/2.0 200 OK\r\n\r\n"), HTTP1_E_VERSION);
    assert_int_equal(resp_rc("HTTP/1.2 200 OK\r\n\r\n"), HTTP1_E_VERSION);
}

static void test_response_fields_and_smuggling(void **state)
{
    (void)state;
    struct parsed *p = parse_resp("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n"
                                  "Connection: keep-alive\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_true(p->m.has_cl);
    assert_int_equal(p->m.content_length, 12);
    assert_true(p->m.conn_keepalive);
    parsed_free(p);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
                     HTTP1_E_SMUGGLING);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), HTTP1_E_CODING);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\nX : a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(resp_rc("HTTP/1.1 200 OK\r\n: a\r\n\r\n"), HTTP1_E_BAD);
    p = parse_resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_true(p->m.upgrade);
    parsed_free(p);
}

/* ---- body framing ---------------------------------------------------------- */

static void response_body(const char *head, bool head_request, struct http1_body *b)
{
    struct parsed *p = parse_resp(head);
    assert_int_equal(p->rc, 0);
    http1_body_response(b, &p->m, head_request);
    parsed_free(p);
}

static void request_body(const char *head, struct http1_body *b)
{
    struct parsed *p = parse_req(head);
    assert_int_equal(p->rc, 0);
    http1_body_request(b, &p->m);
    parsed_free(p);
}

static void test_request_framing(void **state)
{
    (void)state;
    struct http1_body b;
    request_body("GET http://a/ HTTP/1.1\r\n\r\n", &b);
    assert_int_equal(b.kind, HTTP1_BODY_NONE);
    assert_true(b.done);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"GET", 3), 0);

    request_body("POST http://a/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &b);
    assert_int_equal(b.kind, HTTP1_BODY_NONE);
    assert_true(b.done);

    request_body("POST http://a/ HTTP/1.1\r\nContent-Length: 10\r\n\r\n", &b);
    assert_int_equal(b.kind, HTTP1_BODY_LENGTH);
    assert_false(b.done);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"abcd", 4), 4);
    assert_false(b.done);
    /* The message ends inside what arrives: only its part is counted. */
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"efghijGET /", 11), 6);
    assert_true(b.done);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"GET /", 5), 0);

    request_body("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &b);
    assert_int_equal(b.kind, HTTP1_BODY_CHUNKED);
    assert_false(b.done);
    /* Requests never run to the close. */
    request_body("POST http://a/ HTTP/1.0\r\n\r\n", &b);
    assert_int_equal(b.kind, HTTP1_BODY_NONE);
}

static void test_response_framing(void **state)
{
    (void)state;
    struct http1_body b;
    /* 1xx, 204 and 304 have no body, whatever they say; nor has HEAD's. */
    static const char *const none[] = {
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 103 Early Hints\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        response_body(none[i], false, &b);
        assert_int_equal(b.kind, HTTP1_BODY_NONE);
        assert_true(b.done);
        assert_int_equal(http1_body_scan(&b, (const uint8_t *)"HTTP/1.1", 8), 0);
    }
    static const char *const head_req[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(head_req) / sizeof(head_req[0]); i++) {
        response_body(head_req[i], true, &b);
        assert_int_equal(b.kind, HTTP1_BODY_NONE);
        assert_true(b.done);
    }
    response_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", false, &b);
    assert_int_equal(b.kind, HTTP1_BODY_LENGTH);
    assert_int_equal(b.remaining, 3);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"abcdef", 6), 3);
    assert_true(b.done);

    response_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, &b);
    assert_int_equal(b.kind, HTTP1_BODY_CHUNKED);
    assert_false(b.done);

    /* No length: the body runs to the close, and the scanner takes all. */
    static const char *const close_framed[] = {
        "HTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.0 200 OK\r\n\r\n",
        "HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(close_framed) / sizeof(close_framed[0]); i++) {
        response_body(close_framed[i], false, &b);
        assert_int_equal(b.kind, HTTP1_BODY_CLOSE);
        assert_false(b.done);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(http1_body_scan(&b, (const uint8_t *)"0\r\n\r\nanything", 14), 14);
            assert_false(b.done);
        }
    }
}

/* ---- chunked scanner ----------------------------------------------------- */

static void chunked_init(struct http1_body *b)
{
    struct parsed *p = parse_req("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_int_equal(p->rc, 0);
    http1_body_request(b, &p->m);
    parsed_free(p);
    assert_int_equal(b->kind, HTTP1_BODY_CHUNKED);
}

/* Scan s in pieces whose sizes come from rng (one byte each when rng is
 * NULL; all at once when whole), each from an exact-size copy of the rest.
 * Returns the bytes that belong to the body, or the error; *done tells
 * whether the scanner saw the end. Stops at the end or the first error. */
static ssize_t chunked_feed(const uint8_t *s, size_t len, struct harness_rng *rng, bool whole,
                            bool *done)
{
    struct http1_body b;
    chunked_init(&b);
    size_t off = 0;
    *done = false;
    while (off < len && !b.done) {
        size_t n = whole ? len - off : rng ? 1 + harness_rng_below(rng, 9) : 1;
        if (n > len - off)
            n = len - off;
        uint8_t *p = dup_exact(s + off, n);
        ssize_t got = http1_body_scan(&b, p, n);
        free(p);
        if (got < 0)
            return got;
        assert_true((size_t)got <= n);
        /* Fewer bytes than offered only at the end of the message. */
        if ((size_t)got < n)
            assert_true(b.done);
        off += (size_t)got;
    }
    *done = b.done;
    return (ssize_t)off;
}

/* The whole, a-byte-at-a-time and random-piece scans agree. */
static ssize_t chunked_all_ways(const char *s, size_t len, bool *done)
{
    bool d1, d2;
    ssize_t whole = chunked_feed((const uint8_t *)s, len, NULL, true, &d1);
    ssize_t bytewise = chunked_feed((const uint8_t *)s, len, NULL, false, &d2);
    assert_int_equal(whole, bytewise);
    assert_int_equal(d1, d2);
    struct harness_rng rng;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        bool d3;
        harness_rng_init(&rng, seed * 7919);
        assert_int_equal(chunked_feed((const uint8_t *)s, len, &rng, false, &d3), whole);
        assert_int_equal(d3, d1);
    }
    *done = d1;
    return whole;
}

static void test_chunked_valid(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "0\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        "A\r\n0123456789\r\n0\r\n\r\n", "a\r\n0123456789\r\n0\r\n\r\n",
        "1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
        "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n", "0005\r\nhello\r\n000\r\n\r\n",
        "5;name=value\r\nhello\r\n0\r\n\r\n",
        "5;a;b=\"quoted; \\\" string\"\r\nhello\r\n0;last\r\n\r\n",
        "5;\text\t=\tv\r\nhello\r\n0\r\n\r\n",
        /* RFC 9112 7.1.1: BWS around ';' and '=' inside the extensions */
        "5; a = \"q\" ; b\t;c=d\r\nhello\r\n0\r\n\r\n",
        "5;a=\"\"\r\nhello\r\n0\r\n\r\n",                  /* empty quoted-string */
        "5;a=\"\\\\\"\r\nhello\r\n0\r\n\r\n",              /* an escaped backslash */
        "5;a=\"\x80\xff\t \\\x80\"\r\nhello\r\n0\r\n\r\n", /* obs-text, quoted-pair */
        "5;a=\"x;y=z\"\r\nhello\r\n0\r\n\r\n",             /* ';' and '=' quoted */
        "0\r\nX-Trailer: 1\r\n\r\n", "3\r\nabc\r\n0\r\nX-A: 1\r\nX-B: two words\r\nX-C:\t\r\n\r\n",
        "2\r\n\r\n\r\n0\r\n\r\n",      /* data that looks like CRLF */
        "5\r\n0\r\n\r\n\r\n0\r\n\r\n", /* data that looks like the end */
        "1\r\n\xff\r\n0\r\n\r\n",
        "00000000000000000000000000001\r\nx\r\n0\r\n\r\n", /* zeros do not overflow */
    };
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        size_t len = strlen(valid[i]);
        bool done;
        ssize_t got = chunked_all_ways(valid[i], len, &done);
        if (got != (ssize_t)len || !done)
            fail_msg("valid[%zu] %s: got %zd of %zu, done=%d", i, valid[i], got, len, done);
        /* With more bytes behind it: it stops exactly at the end. */
        char *more = malloc(len + 32);
        assert_non_null(more);
        memcpy(more, valid[i], len);
        memcpy(more + len, "GET http://a/ HTTP/1.1\r\n\r\n", 27);
        got = chunked_all_ways(more, len + 26, &done);
        assert_int_equal(got, (ssize_t)len);
        assert_true(done);
        free(more);
        /* Every proper prefix is still in progress and taken whole. */
        for (size_t k = 0; k < len; k++) {
            got = chunked_all_ways(valid[i], k, &done);
            assert_int_equal(got, (ssize_t)k);
            assert_false(done);
        }
    }
}

static void test_chunked_big_chunk(void **state)
{
    (void)state;
    size_t n = 0x1234;
    char *s = malloc(n + 64);
    assert_non_null(s);
    size_t off = (size_t)snprintf(s, 64, "1234\r\n");
    for (size_t i = 0; i < n; i++)
        s[off + i] = (char)('a' + i % 26);
    off += n;
    memcpy(s + off, "\r\n0\r\n\r\n", 7);
    off += 7;
    bool done;
    assert_int_equal(chunked_all_ways(s, off, &done), (ssize_t)off);
    assert_true(done);
    free(s);

    /* The largest size the scanner takes: 15 hex digits. */
    struct http1_body b;
    chunked_init(&b);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"FFFFFFFFFFFFFFF\r\n", 17), 17);
    assert_int_equal(b.remaining, 0xFFFFFFFFFFFFFFFull);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"xyz", 3), 3);
    assert_int_equal(b.remaining, 0xFFFFFFFFFFFFFFFull - 3);
    assert_false(b.done);
}

static void test_chunked_invalid(void **state)
{
    (void)state;
    static const char *const invalid[] = {
        "\r\n",                          /* no digits */
        ";ext\r\n0\r\n\r\n",             /* extension without a size */
        "x\r\n",                         /* not hex */
        "g\r\n",                         /* not hex */
        "-5\r\n",                        /* a sign */
        "+5\r\n",                        /* a sign */
        "0x5\r\nhello\r\n0\r\n\r\n",     /* a prefix */
        " 5\r\nhello\r\n0\r\n\r\n",      /* space before */
        "5 \r\nhello\r\n0\r\n\r\n",      /* space after (no BWS) */
        "5\t\r\nhello\r\n0\r\n\r\n",     /* tab after */
        "5 ;ext\r\nhello\r\n0\r\n\r\n",  /* space before the extension */
        "5\nhello\r\n0\r\n\r\n",         /* bare LF after the size */
        "5\r\rhello\r\n0\r\n\r\n",       /* CR CR */
        "5\rhello\r\n0\r\n\r\n",         /* CR without LF */
        "5\r\nhelloX\r\n0\r\n\r\n",      /* data longer than said */
        "5\r\nhello\n0\r\n\r\n",         /* bare LF after data */
        "5\r\nhello\r0\r\n\r\n",         /* CR without LF after data */
        "5\r\nhello0\r\n\r\n",           /* no CRLF after data */
        "5;a\x01\r\nhello\r\n0\r\n\r\n", /* control byte in an extension */
        "5;a\x7f\r\nhello\r\n0\r\n\r\n", /* DEL in an extension */
        "5;a\nb\r\nhello\r\n0\r\n\r\n",  /* LF in an extension */
        /* the chunk-ext grammar: a name after every ';', a value after '=' */
        "5;\r\nhello\r\n0\r\n\r\n",
        "5;;a\r\nhello\r\n0\r\n\r\n",
        "5;=b\r\nhello\r\n0\r\n\r\n",
        "5;a=\r\nhello\r\n0\r\n\r\n",
        "5;a==b\r\nhello\r\n0\r\n\r\n",
        "5;a=b c\r\nhello\r\n0\r\n\r\n",
        "5;a=b=c\r\nhello\r\n0\r\n\r\n",
        "5;a@b\r\nhello\r\n0\r\n\r\n",
        "5;a \r\nhello\r\n0\r\n\r\n", /* whitespace before the CRLF */
        "5;a=b\t\r\nhello\r\n0\r\n\r\n",
        "5;a=\"x\"y\r\nhello\r\n0\r\n\r\n", /* a token glued to a quoted-string */
        "5;a=x\"y\"\r\nhello\r\n0\r\n\r\n",
        /* an unterminated quoted string: the CRLF would be inside it */
        "5;a=\"x\r\nhello\r\n0\r\n\r\n",
        "5;a=\"\r\nhello\r\n0\r\n\r\n",
        "5;a=\"x\\\r\nhello\r\n0\r\n\r\n",
        "1;a=\"\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n\"\r\nx\r\n0\r\n\r\n",
        "5;a=\"x\x01\"\r\nhello\r\n0\r\n\r\n", /* control byte quoted */
        "5;a=\"x\x7f\"\r\nhello\r\n0\r\n\r\n",
        "5;a=\"x\\\x01\"\r\nhello\r\n0\r\n\r\n",
        "0\r\n\n",               /* bare LF ending */
        "0\r\n\r\r",             /* CR CR ending */
        "0\r\n\rX",              /* CR then junk */
        "0\r\n \r\n\r\n",        /* trailer starting with space */
        "0\r\n\tX: 1\r\n\r\n",   /* trailer starting with tab */
        "0\r\nX: 1\n\r\n",       /* bare LF in trailers */
        "0\r\nX: 1\rY\r\n\r\n",  /* bare CR in trailers */
        "0\r\nX: \x01\r\n\r\n",  /* control byte in a trailer */
        "0\r\nX: \x7f\r\n\r\n",  /* DEL in a trailer */
        "10000000000000000\r\n", /* 2^64: overflow */
        "1000000000000000\r\n",  /* 2^60: beyond the guard */
        "FFFFFFFFFFFFFFFF\r\n",  /* 16 hex digits */
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\r\n",
    };
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        bool done;
        ssize_t got = chunked_all_ways(invalid[i], strlen(invalid[i]), &done);
        if (got != HTTP1_E_CHUNK)
            fail_msg("invalid[%zu] %s: got %zd, expected CHUNK", i, invalid[i], got);
    }
}

static void test_chunked_line_limits(void **state)
{
    (void)state;
    /* Extensions and trailer lines are bounded (4096 bytes). */
    size_t n = 5000;
    char *s = malloc(n + 64);
    assert_non_null(s);
    memcpy(s, "5;", 2);
    memset(s + 2, 'e', n);
    memcpy(s + 2 + n, "\r\nhello\r\n0\r\n\r\n", 15);
    bool done;
    assert_int_equal(chunked_all_ways(s, n + 16, &done), HTTP1_E_CHUNK);

    memcpy(s, "0\r\nX: ", 6);
    memset(s + 6, 't', n);
    memcpy(s + 6 + n, "\r\n\r\n", 4);
    assert_int_equal(chunked_all_ways(s, n + 10, &done), HTTP1_E_CHUNK);

    /* Under the bound both are fine. */
    memcpy(s, "5;", 2);
    memset(s + 2, 'e', 4000);
    memcpy(s + 4002, "\r\nhello\r\n0\r\n\r\n", 15);
    assert_int_equal(chunked_all_ways(s, 4016, &done), 4016);
    assert_true(done);
    memcpy(s, "0\r\nX: ", 6);
    memset(s + 6, 't', 4000);
    memcpy(s + 4006, "\r\n\r\n", 4);
    assert_int_equal(chunked_all_ways(s, 4010, &done), 4010);
    assert_true(done);
    free(s);
}

static void test_chunked_error_position(void **state)
{
    (void)state;
    /* Fed a byte at a time, the error is reported at the offending byte. */
    static const char s[] = "5\r\nhelloX\r\n";
    struct http1_body b;
    chunked_init(&b);
    for (size_t i = 0; i < sizeof(s) - 1; i++) {
        ssize_t got = http1_body_scan(&b, (const uint8_t *)s + i, 1);
        if (i < 8) {
            assert_int_equal(got, 1);
        } else {
            assert_int_equal(got, HTTP1_E_CHUNK);
            break;
        }
    }
    /* Nothing to scan is nothing consumed. */
    chunked_init(&b);
    assert_int_equal(http1_body_scan(&b, (const uint8_t *)"", 0), 0);
    assert_false(b.done);
}

/* ---- hop-by-hop ----------------------------------------------------------- */

static void test_hop_by_hop(void **state)
{
    (void)state;
    struct parsed *p = parse_req("GET http://a/ HTTP/1.1\r\n"
                                 "Host: a\r\n"
                                 "connection: X-Foo, x-bar\r\n"
                                 "Keep-Alive: timeout=5\r\n"
                                 "Proxy-Connection: keep-alive\r\n"
                                 "Proxy-Authorization: Basic eDp5\r\n"
                                 "Proxy-Authenticate: Basic\r\n"
                                 "TE: trailers\r\n"
                                 "Trailer: X-T\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                                 "UPGRADE: websocket\r\n"
                                 "X-Foo: 1\r\n"
                                 "X-Bar: 2\r\n"
                                 "X-Foobar: 3\r\n"
                                 "Via: 1.1 other\r\n"
                                 "Content-Type: text/plain\r\n"
                                 "Accept: */*\r\n"
                                 "\r\n");
    assert_int_equal(p->rc, 0);
    static const char *const hop[] = {
        "connection",
        "Keep-Alive",
        "Proxy-Connection",
        "Proxy-Authorization",
        "Proxy-Authenticate",
        "TE",
        "Trailer",
        "UPGRADE",
        "X-Foo",
        "X-Bar",
    };
    /* Framing and routing fields are never hop-by-hop (Transfer-Encoding
     * included: the proxy forwards bodies as they are, chunked or not). */
    static const char *const end[] = {"Host",         "X-Foobar", "Via",
                                      "Content-Type", "Accept",   "Transfer-Encoding"};
    for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++) {
        const struct http1_header *h = http1_find(&p->m, hop[i]);
        assert_non_null(h);
        if (!http1_hop_by_hop(&p->m, h))
            fail_msg("%s should be hop-by-hop", hop[i]);
    }
    for (size_t i = 0; i < sizeof(end) / sizeof(end[0]); i++) {
        const struct http1_header *h = http1_find(&p->m, end[i]);
        assert_non_null(h);
        if (http1_hop_by_hop(&p->m, h))
            fail_msg("%s should be end-to-end", end[i]);
    }
    parsed_free(p);

    /* Several Connection fields all count; without one, only the fixed set. */
    p = parse_req("GET http://a/ HTTP/1.1\r\nConnection: a\r\nX: 1\r\nConnection: b, close\r\n"
                  "A: 1\r\nB: 2\r\nC: 3\r\nClose: 4\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_true(http1_hop_by_hop(&p->m, http1_find(&p->m, "A")));
    assert_true(http1_hop_by_hop(&p->m, http1_find(&p->m, "B")));
    assert_true(http1_hop_by_hop(&p->m, http1_find(&p->m, "Close")));
    assert_false(http1_hop_by_hop(&p->m, http1_find(&p->m, "C")));
    assert_false(http1_hop_by_hop(&p->m, http1_find(&p->m, "X")));
    parsed_free(p);
}

/* RFC 9110 7.6.1: every field the Connection header names is hop-by-hop,
 * whatever the length of its name (the contract in http1.h has no limit). */
static void test_hop_by_hop_long_listed_name(void **state)
{
    (void)state;
    char name[201];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    for (size_t nl = 60; nl <= 200; nl += 4) {
        char head[600];
        snprintf(head, sizeof(head),
                 "GET http://a/ HTTP/1.1\r\nConnection: %.*s\r\n%.*s: v\r\n\r\n", (int)nl, name,
                 (int)nl, name);
        struct parsed *p = parse_req(head);
        int rc = p->rc;
        bool hop = rc == 0 && http1_hop_by_hop(&p->m, &p->m.h[1]);
        parsed_free(p);
        assert_int_equal(rc, 0);
        if (!hop)
            fail_msg("a field whose %zu-byte name is listed in Connection is not hop-by-hop", nl);
    }
}

/* Issue 13 (F1): a Connection field that names Content-Length,
 * Transfer-Encoding or Host would have the next hop drop the framing (or
 * the routing) while the body still follows: refused as smuggling, in
 * requests (400) and responses (502), whatever the case, wherever in the
 * list, in whichever Connection field. */
static void test_connection_names_framing(void **state)
{
    (void)state;
    static const char *const conn[] = {
        "Connection: Content-Length\r\n",
        "Connection: content-length\r\n",
        "Connection: keep-alive, CONTENT-LENGTH\r\n",
        "Connection: close,content-length\r\n",
        "Connection: x\r\nConnection: Content-Length\r\n",
        "Connection: Transfer-Encoding\r\n",
        "Connection: te, transfer-encoding\r\n",
        "Connection: Host\r\n",
        "Connection:\tHOST\t\r\n",
    };
    for (size_t i = 0; i < sizeof(conn) / sizeof(conn[0]); i++) {
        char head[512];
        snprintf(head, sizeof(head),
                 "POST http://a/ HTTP/1.1\r\nHost: a\r\n%sContent-Length: 32\r\n\r\n", conn[i]);
        if (req_rc(head) != HTTP1_E_SMUGGLING)
            fail_msg("request with %s accepted", conn[i]);
        snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n%sContent-Length: 5\r\n\r\n", conn[i]);
        if (resp_rc(head) != HTTP1_E_SMUGGLING)
            fail_msg("response with %s accepted", conn[i]);
    }
    assert_int_equal(http1_error_status(HTTP1_E_SMUGGLING), 400);
    /* Names that only look alike are other fields: hop-by-hop as usual. */
    static const char *const fine[] = {
        "Connection: Content-Length-X\r\nContent-Length-X: 1\r\n",
        "Connection: X-Content-Length\r\n",
        "Connection: Hosts\r\n",
        "Connection: close\r\n",
        "Connection: keep-alive, TE\r\nTE: trailers\r\n",
    };
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        char head[512];
        snprintf(head, sizeof(head), "POST http://a/ HTTP/1.1\r\n%sContent-Length: 3\r\n\r\n",
                 fine[i]);
        if (req_rc(head) != 0)
            fail_msg("request with %s refused", fine[i]);
    }
    /* And the hop-by-hop judgement never drops a framing field, even of a
     * message put together by hand (the contract, not only the parser). */
    struct http1_msg m;
    memset(&m, 0, sizeof(m));
    static const char cv[] = "content-length, transfer-encoding, host, x-a";
    m.h[0] = (struct http1_header){"Connection", cv, 10, sizeof(cv) - 1};
    m.h[1] = (struct http1_header){"Content-Length", "5", 14, 1};
    m.h[2] = (struct http1_header){"Transfer-Encoding", "chunked", 17, 7};
    m.h[3] = (struct http1_header){"Host", "a", 4, 1};
    m.h[4] = (struct http1_header){"X-A", "1", 3, 1};
    m.nh = 5;
    assert_false(http1_hop_by_hop(&m, &m.h[1]));
    assert_false(http1_hop_by_hop(&m, &m.h[2]));
    assert_false(http1_hop_by_hop(&m, &m.h[3]));
    assert_true(http1_hop_by_hop(&m, &m.h[4]));
}

/* One Host (RFC 9112 3.2) and one set of proxy credentials per request. */
static void test_singleton_request_fields(void **state)
{
    (void)state;
    assert_int_equal(req_rc("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET http://a/ HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"), HTTP1_E_BAD);
    assert_int_equal(req_rc("GET http://a/ HTTP/1.1\r\nProxy-Authorization: Basic eDp5\r\n"
                            "Proxy-Authorization: Basic eDp5\r\n\r\n"),
                     HTTP1_E_BAD);
    assert_int_equal(req_rc("GET http://a/ HTTP/1.1\r\nProxy-Authorization: Basic eDp5\r\nX: 1\r\n"
                            "proxy-authorization: Basic eTp6\r\n\r\n"),
                     HTTP1_E_BAD);
    struct parsed *p = parse_req("GET http://a/ HTTP/1.1\r\nHost: a\r\n"
                                 "Proxy-Authorization: Basic eDp5\r\n\r\n");
    assert_int_equal(p->rc, 0);
    assert_int_equal(p->m.nhost, 1);
    assert_int_equal(p->m.nproxy_auth, 1);
    parsed_free(p);
    assert_int_equal(req_rc("GET http://a/ HTTP/1.1\r\n\r\n"),
                     0); /* absolute form: Host optional */
}

/* RFC 9112 2.2: empty lines before a request line are skipped, a few. */
static void test_empty_lines(void **state)
{
    (void)state;
    struct {
        const char *s;
        unsigned max;
        ssize_t want;
    } cases[] = {
        {"GET", 4, 0},
        {"", 4, 0},
        {"\r", 4, 0}, /* the LF has not come yet */
        {"\r\n", 4, 2},
        {"\r\nGET", 4, 2},
        {"\r\n\r", 4, 2},
        {"\r\n\r\n\r\n\r\nGET", 4, 8},
        {"\r\n\r\n\r\n\r\n", 4, 8},
        {"\r\n\r\n\r\n\r\n\r\n", 4, HTTP1_E_BAD},
        {"\r\n\r\n\r\n\r\n\r", 4, 8}, /* the fifth is not complete yet */
        {"\r\nGET", 0, HTTP1_E_BAD},
        {"\r\n\r\nGET", 1, HTTP1_E_BAD},
        {"\n\r\n", 4, 0}, /* a bare LF is the head finder's to refuse */
        {"\r\r\n", 4, 0},
        {"\r\n\nGET", 4, 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = strlen(cases[i].s);
        uint8_t *p = dup_exact(cases[i].s, n);
        ssize_t got = http1_empty_lines(p, n, cases[i].max);
        free(p);
        if (got != cases[i].want)
            fail_msg("case %zu: %zd, expected %zd", i, got, cases[i].want);
    }
    assert_int_equal(HTTP1_EMPTY_LINES_MAX, 4);
}

/* ---- authority and absolute form -------------------------------------- */

static int authority(const char *t, char *host, size_t hcap, uint16_t *port)
{
    size_t n = strlen(t);
    char *copy = (char *)dup_exact(t, n);
    int rc = http1_parse_authority(copy, n, host, hcap, port);
    free(copy);
    return rc;
}

static void test_authority(void **state)
{
    (void)state;
    struct {
        const char *t, *host;
        uint16_t port;
    } ok[] = {
        {"example.com:443", "example.com", 443},
        {"EXAMPLE.com:80", "EXAMPLE.com", 80},
        {"1.2.3.4:8080", "1.2.3.4", 8080},
        {"a:1", "a", 1},
        {"a:65535", "a", 65535},
        {"a:0080", "a", 80},
        {"my_host-1.lan:22", "my_host-1.lan", 22},
        {"[::1]:8080", "::1", 8080},
        {"[2001:db8::1]:443", "2001:db8::1", 443},
        {"[::ffff:1.2.3.4]:80", "::ffff:1.2.3.4", 80},
        {"[FE80::A]:1", "FE80::A", 1},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char host[256];
        uint16_t port = 0;
        if (authority(ok[i].t, host, sizeof(host), &port) != 0)
            fail_msg("%s refused", ok[i].t);
        assert_string_equal(host, ok[i].host);
        assert_int_equal(port, ok[i].port);
    }
    static const char *const bad[] = {
        "",
        "host",
        "host:",
        ":80",
        "host:0",
        "host:65536",
        "host:99999",
        "host:123456",
        "host:abc",
        "host:8o",
        "host:+80",
        "host:-1",
        "host: 80",
        "host :80",
        "ho st:80",
        "user@host:80",
        "user:pw@host:80",
        "host/path:80",
        "host%20:80",
        "::1:80",
        "[::1]",
        "[::1]:",
        "[::1]80",
        "[::1]x:80",
        "[]:80",
        "[g::1]:80",
        "[::1%eth0]:80",
        "[::1:80",
        "::1]:80",
        "http://host:80",
        "h\xc3\xa9st:80",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char host[256];
        uint16_t port;
        if (authority(bad[i], host, sizeof(host), &port) != HTTP1_E_BAD)
            fail_msg("authority %s accepted", bad[i]);
    }
    /* Host lengths: 255 fits, 256 does not; nor does one over hcap. */
    char t[300], host[300];
    uint16_t port;
    memset(t, 'h', 255);
    memcpy(t + 255, ":1", 3);
    assert_int_equal(authority(t, host, sizeof(host), &port), 0);
    assert_int_equal(strlen(host), 255);
    memset(t, 'h', 256);
    memcpy(t + 256, ":1", 3);
    assert_int_equal(authority(t, host, sizeof(host), &port), HTTP1_E_BAD);
    assert_int_equal(authority("abcd:1", host, 4, &port), HTTP1_E_BAD);
    assert_int_equal(authority("abcd:1", host, 5, &port), 0);
    assert_string_equal(host, "abcd");
}

static int absolute(const char *t, char *host, size_t hcap, uint16_t *port, size_t *path_off)
{
    size_t n = strlen(t);
    char *copy = (char *)dup_exact(t, n);
    int rc = http1_parse_absolute(copy, n, host, hcap, port, path_off);
    free(copy);
    return rc;
}

static void test_absolute(void **state)
{
    (void)state;
    struct {
        const char *t, *host;
        uint16_t port;
        size_t path_off;
    } ok[] = {
        {"http://example.com/path", "example.com", 80, 18},
        {"http://example.com", "example.com", 80, 18},
        {"http://example.com:8080/x?y", "example.com", 8080, 23},
        {"http://example.com?q=1", "example.com", 80, 18},
        {"http://example.com#f", "example.com", 80, 18},
        {"HTTP://Example.COM/", "Example.COM", 80, 18},
        {"hTtP://a/", "a", 80, 8},
        {"http://1.2.3.4:1/", "1.2.3.4", 1, 16},
        {"http://[::1]:8080/", "::1", 8080, 17},
        {"http://[::1]/", "::1", 80, 12},
        {"http://[::1]", "::1", 80, 12},
        {"http://a:65535", "a", 65535, 14},
        {"http://evil/@host", "evil", 80, 11}, /* '@' in the path is not userinfo */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char host[256];
        uint16_t port = 0;
        size_t off = 999;
        if (absolute(ok[i].t, host, sizeof(host), &port, &off) != 0)
            fail_msg("%s refused", ok[i].t);
        assert_string_equal(host, ok[i].host);
        assert_int_equal(port, ok[i].port);
        assert_int_equal(off, ok[i].path_off);
    }
    static const char *const bad[] = {
        "https://example.com/", /* use CONNECT */
        "HTTPS://example.com/",
        "ftp://example.com/",
        "ws://example.com/",
        "http:/example.com/",
        "http:example.com",
        "//example.com/",
        "/path",
        "*",
        "example.com:80",
        "http://",
        "http:///path",
        "http://?q",
        "http://user@host/", /* userinfo */
        "http://user:pw@host/",
        "http://@host/",
        "http://host@/",
        "http://host:/",
        "http://host:0/",
        "http://host:65536/",
        "http://host:x/",
        "http://ho st/",
        "http://[::1/",
        "http://[::1]x/",
        "http://[::1]:/",
        "http://::1/",
        "http://host:80:80/",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char host[256];
        uint16_t port;
        size_t off;
        if (absolute(bad[i], host, sizeof(host), &port, &off) != HTTP1_E_BAD)
            fail_msg("absolute %s accepted", bad[i]);
    }
    /* A very long authority is refused, not overflowed. */
    char t[700], host[256];
    uint16_t port;
    size_t off;
    memcpy(t, "http://", 7);
    memset(t + 7, 'a', 600);
    memcpy(t + 607, "/x", 3);
    assert_int_equal(absolute(t, host, sizeof(host), &port, &off), HTTP1_E_BAD);
}

/* ---- Basic credentials --------------------------------------------------- */

/* The way the proxy reads Basic credentials: the token (proto), the
 * base64 decode (crypto, libsodium), the split (proto). */
static int basic_caps(const char *v, size_t n, char *user, size_t ucap, size_t *ulen, char *pass,
                      size_t pcap, size_t *plen)
{
    char *copy = (char *)dup_exact(v, n);
    const char *tok;
    size_t tlen;
    int rc = http1_basic_token(copy, n, &tok, &tlen);
    if (rc == 0) {
        assert_true(tok > copy && tok + tlen == copy + n);
        assert_true(tlen % 4 == 0 && tlen <= HTTP1_BASIC_TOKEN_MAX);
        uint8_t dec[HTTP1_BASIC_MAX];
        size_t dn = 0;
        rc = fcrypto_base64_decode(dec, sizeof(dec), &dn, tok, tlen);
        if (rc == 0)
            rc = http1_basic_split(dec, dn, user, ucap, ulen, pass, pcap, plen);
    }
    free(copy);
    return rc;
}

static int basic(const char *v, char *user, size_t *ulen, char *pass, size_t *plen)
{
    return basic_caps(v, strlen(v), user, 256, ulen, pass, 256, plen);
}

static void test_basic_valid(void **state)
{
    (void)state;
    struct {
        const char *v, *user, *pass;
    } ok[] = {
        {"Basic dXNlcjpwYXNz", "user", "pass"}, /* user:pass */
        {"basic dXNlcjpwYXNz", "user", "pass"},
        {"BASIC dXNlcjpwYXNz", "user", "pass"},
        {"bAsIc dXNlcjpwYXNz", "user", "pass"},
        {"Basic\tdXNlcjpwYXNz", "user", "pass"},
        {"Basic    dXNlcjpwYXNz", "user", "pass"},
        {"Basic YTpi", "a", "b"},                                /* a:b */
        {"Basic YTpiYw==", "a", "bc"},                           /* a:bc */
        {"Basic YTpiY2Q=", "a", "bcd"},                          /* a:bcd */
        {"Basic dXNlcjpwYTpzcw==", "user", "pa:ss"},             /* user:pa:ss */
        {"Basic YWxpY2U6w6nDqQ==", "alice", "\xc3\xa9\xc3\xa9"}, /* alice:éé */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char user[256], pass[256];
        size_t ulen = 0, plen = 0;
        if (basic(ok[i].v, user, &ulen, pass, &plen) != 0)
            fail_msg("%s refused", ok[i].v);
        assert_string_equal(user, ok[i].user);
        assert_string_equal(pass, ok[i].pass);
        assert_int_equal(ulen, strlen(ok[i].user));
        assert_int_equal(plen, strlen(ok[i].pass));
    }
}

static void test_basic_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "Basic",
        "Basic ",
        "Basic  ",
        "Basicx dXNlcjpwYXNz",
        "Basi dXNlcjpwYXNz",
        "BasicdXNlcjpwYXNz",
        "Bearer dXNlcjpwYXNz",
        "Digest username=\"u\"",
        "dXNlcjpwYXNz",
        "Basic !!!!",
        "Basic dXNl*jpwYXNz",
        "Basic dXNlcjpwYXNz=x",    /* data after padding */
        "Basic YTpi===",           /* too much padding */
        "Basic dXNlcnBhc3M=",      /* "userpass": no colon */
        "Basic OnBhc3M=",          /* ":pass": empty user */
        "Basic dXNlcjo=",          /* "user:": empty password */
        "Basic Og==",              /* ":" */
        "Basic dXNlcjpwYXNz dXNl", /* two tokens */
        "Basic dXNlc-pwYXNz",      /* base64url */
        "Basic YTpiYw",            /* padding left out (RFC 4648 base64 has it) */
        "Basic YTpiY2Q",
        "Basic YT=iYw==", /* padding inside */
        "Basic ====",
        "Basic YTpi\t", /* a tab inside the token */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char user[256], pass[256];
        size_t ulen, plen;
        if (basic(bad[i], user, &ulen, pass, &plen) != -1)
            fail_msg("Basic credentials %s accepted", bad[i]);
    }
}

/* base64 of src[0..n) into out (NUL-terminated). */
static void b64(const uint8_t *src, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)src[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)src[i + 1] << 8;
        if (i + 2 < n)
            v |= src[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

static void test_basic_lengths(void **state)
{
    (void)state;
    /* 255-byte user and password fit; 256 does not; nor beyond the caps. */
    uint8_t raw[600];
    char v[900], user[300], pass[300];
    size_t ulen, plen;
    for (size_t ul = 254; ul <= 256; ul++) {
        memset(raw, 'u', ul);
        raw[ul] = ':';
        memset(raw + ul + 1, 'p', 10);
        memcpy(v, "Basic ", 6);
        b64(raw, ul + 11, v + 6);
        int rc = basic_caps(v, strlen(v), user, sizeof(user), &ulen, pass, sizeof(pass), &plen);
        assert_int_equal(rc, ul <= 255 ? 0 : -1);
        if (rc == 0)
            assert_int_equal(ulen, ul);
    }
    for (size_t pl = 254; pl <= 256; pl++) {
        raw[0] = 'u';
        raw[1] = ':';
        memset(raw + 2, 'p', pl);
        memcpy(v, "Basic ", 6);
        b64(raw, pl + 2, v + 6);
        int rc = basic_caps(v, strlen(v), user, sizeof(user), &ulen, pass, sizeof(pass), &plen);
        assert_int_equal(rc, pl <= 255 ? 0 : -1);
        if (rc == 0)
            assert_int_equal(plen, pl);
    }
    /* Caps: a user of 4 needs 5 bytes. */
    b64((const uint8_t *)"abcd:efgh", 9, v + 6);
    assert_int_equal(basic_caps(v, strlen(v), user, 4, &ulen, pass, 100, &plen), -1);
    assert_int_equal(basic_caps(v, strlen(v), user, 5, &ulen, pass, 4, &plen), -1);
    assert_int_equal(basic_caps(v, strlen(v), user, 5, &ulen, pass, 5, &plen), 0);
    assert_string_equal(user, "abcd");
    assert_string_equal(pass, "efgh");
    /* Far more base64 than any credentials: refused, not overflowed. */
    memcpy(v, "Basic ", 6);
    memset(v + 6, 'A', 880);
    v[886] = '\0';
    assert_int_equal(basic_caps(v, strlen(v), user, sizeof(user), &ulen, pass, sizeof(pass), &plen),
                     -1);
}

/* The decode runs in crypto/ (libsodium): a failure leaves nothing of what
 * it had decoded so far in the caller's buffer. */
static void test_basic_decode_wipes(void **state)
{
    (void)state;
    assert_int_equal(fcrypto_init(), 0);
    uint8_t out[64];
    size_t n = 0;
    memset(out, 0xa5, sizeof(out));
    static const char good[] = "dXNlcjpwYXNz";
    assert_int_equal(fcrypto_base64_decode(out, sizeof(out), &n, good, sizeof(good) - 1), 0);
    assert_int_equal(n, 9);
    assert_memory_equal(out, "user:pass", 9);
    static const char *const bad[] = {"dXNlcjpwYXNz!!!!", "dXNlcjpwYXNzYQ", "dXNlcjpwYXNz=AAA"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(out, 0xa5, sizeof(out));
        assert_int_equal(fcrypto_base64_decode(out, sizeof(out), &n, bad[i], strlen(bad[i])), -1);
        for (size_t k = 0; k < sizeof(out); k++)
            if (out[k])
                fail_msg("%s: byte %zu left as %#x after a failed decode", bad[i], k, out[k]);
    }
    /* more than fits: refused, and wiped too */
    memset(out, 0xa5, 8);
    assert_int_equal(fcrypto_base64_decode(out, 8, &n, good, sizeof(good) - 1), -1);
    for (size_t k = 0; k < 8; k++)
        assert_int_equal(out[k], 0);
}

/* ---- status mapping ------------------------------------------------------- */

static void test_error_status_and_reasons(void **state)
{
    (void)state;
    assert_int_equal(http1_error_status(HTTP1_E_BAD), 400);
    assert_int_equal(http1_error_status(HTTP1_E_URI_TOO_LONG), 414);
    assert_int_equal(http1_error_status(HTTP1_E_TOO_LARGE), 431);
    assert_int_equal(http1_error_status(HTTP1_E_VERSION), 505);
    assert_int_equal(http1_error_status(HTTP1_E_SMUGGLING), 400);
    assert_int_equal(http1_error_status(HTTP1_E_CODING), 501);
    assert_int_equal(http1_error_status(HTTP1_E_CHUNK), 400);
    static const int statuses[] = {200, 400, 403, 405, 407, 408, 414, 431, 501, 502, 503, 504, 505};
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        const char *r = http1_reason(statuses[i]);
        assert_non_null(r);
        assert_true(strlen(r) > 0);
        assert_string_not_equal(r, "Error");
    }
    assert_string_equal(http1_reason(407), "Proxy Authentication Required");
    assert_string_equal(http1_reason(431), "Request Header Fields Too Large");
    assert_string_equal(http1_reason(299), "Error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_end_complete),
        cmocka_unit_test(test_head_end_incomplete),
        cmocka_unit_test(test_head_end_every_prefix),
        cmocka_unit_test(test_head_end_bare_lf),
        cmocka_unit_test(test_head_end_bare_cr),
        cmocka_unit_test(test_head_end_nul),
        cmocka_unit_test(test_head_end_too_large),
        cmocka_unit_test(test_head_end_resumes_where_it_stopped),
        cmocka_unit_test(test_request_methods),
        cmocka_unit_test(test_request_targets),
        cmocka_unit_test(test_request_versions),
        cmocka_unit_test(test_request_line_too_long),
        cmocka_unit_test(test_request_field_count),
        cmocka_unit_test(test_request_fields),
        cmocka_unit_test(test_request_bad_fields),
        cmocka_unit_test(test_cl_and_te),
        cmocka_unit_test(test_content_length_values),
        cmocka_unit_test(test_content_length_empty_after_valid),
        cmocka_unit_test(test_transfer_encoding),
        cmocka_unit_test(test_te_on_http10),
        cmocka_unit_test(test_connection_tokens),
        cmocka_unit_test(test_has_token),
        cmocka_unit_test(test_response_status_line),
        cmocka_unit_test(test_response_fields_and_smuggling),
        cmocka_unit_test(test_request_framing),
        cmocka_unit_test(test_response_framing),
        cmocka_unit_test(test_chunked_valid),
        cmocka_unit_test(test_chunked_big_chunk),
        cmocka_unit_test(test_chunked_invalid),
        cmocka_unit_test(test_chunked_line_limits),
        cmocka_unit_test(test_chunked_error_position),
        cmocka_unit_test(test_hop_by_hop),
        cmocka_unit_test(test_hop_by_hop_long_listed_name),
        cmocka_unit_test(test_connection_names_framing),
        cmocka_unit_test(test_singleton_request_fields),
        cmocka_unit_test(test_empty_lines),
        cmocka_unit_test(test_authority),
        cmocka_unit_test(test_absolute),
        cmocka_unit_test(test_basic_valid),
        cmocka_unit_test(test_basic_invalid),
        cmocka_unit_test(test_basic_lengths),
        cmocka_unit_test(test_basic_decode_wipes),
        cmocka_unit_test(test_error_status_and_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
