/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1_rewrite_test.c: the heads a proxy sends on (http1_rewrite_request
 * and http1_rewrite_response in proto/http1), held to the contract in
 * http1.h: origin-form target, Host from the authority, hop-by-hop fields
 * (and those named in Connection) dropped, framing fields kept, repeated
 * Content-Length as one, Via appended to, the Connection field a proxy
 * adds, and the cap: exact fit, one byte short, never a byte past it
 * (outputs are exact-size heap blocks, so ASan sees any overrun).
 */
#include "harness.h"

#include "proto/http1.h"

/* A parsed head with the bytes it points into. */
struct parsed {
    uint8_t *buf;
    struct http1_msg m;
};

static struct parsed *parse(const char *text, bool request)
{
    struct parsed *p = calloc(1, sizeof(*p));
    assert_non_null(p);
    size_t n = strlen(text);
    p->buf = malloc(n);
    assert_non_null(p->buf);
    memcpy(p->buf, text, n);
    int rc = request ? http1_parse_request(p->buf, n, 8192, &p->m)
                     : http1_parse_response(p->buf, n, &p->m);
    assert_int_equal(rc, 0);
    return p;
}

static void parsed_free(struct parsed *p)
{
    free(p->buf);
    free(p);
}

/* Rewrite a request whose target is absolute; the result as a string. */
static char *rewrite_req(const char *text, const char *via, bool upgrade)
{
    struct parsed *p = parse(text, true);
    char host[256];
    uint16_t port;
    size_t path_off;
    assert_int_equal(
        http1_parse_absolute(p->m.target, p->m.tlen, host, sizeof(host), &port, &path_off), 0);
    const char *auth = p->m.target + 7;
    size_t alen = path_off - 7;
    size_t cap = strlen(text) + 256;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    ssize_t n = http1_rewrite_request(&p->m, path_off, auth, alen, via, upgrade, out, cap);
    assert_true(n > 0 && (size_t)n < cap);
    /* Exactly n bytes fit; n - 1 do not (and nothing is written past them). */
    uint8_t *exact = malloc((size_t)n);
    assert_non_null(exact);
    assert_int_equal(
        http1_rewrite_request(&p->m, path_off, auth, alen, via, upgrade, exact, (size_t)n), n);
    assert_memory_equal(exact, out, (size_t)n);
    free(exact);
    uint8_t *shy = malloc((size_t)n - 1);
    assert_non_null(shy);
    assert_int_equal(
        http1_rewrite_request(&p->m, path_off, auth, alen, via, upgrade, shy, (size_t)n - 1),
        HTTP1_E_TOO_LARGE);
    free(shy);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    memcpy(s, out, (size_t)n);
    s[n] = '\0';
    free(out);
    parsed_free(p);
    return s;
}

static char *rewrite_resp(const char *text, const char *via, bool switching, bool keepalive)
{
    struct parsed *p = parse(text, false);
    size_t cap = strlen(text) + 256;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    ssize_t n = http1_rewrite_response(&p->m, via, switching, keepalive, out, cap);
    assert_true(n > 0 && (size_t)n < cap);
    uint8_t *shy = malloc((size_t)n - 1);
    assert_non_null(shy);
    assert_int_equal(http1_rewrite_response(&p->m, via, switching, keepalive, shy, (size_t)n - 1),
                     HTTP1_E_TOO_LARGE);
    free(shy);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    memcpy(s, out, (size_t)n);
    s[n] = '\0';
    free(out);
    parsed_free(p);
    return s;
}

static void expect_req(const char *in, const char *via, bool upgrade, const char *want)
{
    char *got = rewrite_req(in, via, upgrade);
    assert_string_equal(got, want);
    free(got);
}

static void expect_resp(const char *in, const char *via, bool switching, bool keepalive,
                        const char *want)
{
    char *got = rewrite_resp(in, via, switching, keepalive);
    assert_string_equal(got, want);
    free(got);
}

/* ---- requests ------------------------------------------------------------ */

static void test_request_origin_form(void **state)
{
    (void)state;
    expect_req("GET http://example.com/a/b?c=d HTTP/1.1\r\nHost: example.com\r\n"
               "Accept: */*\r\n\r\n",
               "ferry", false,
               "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n"
               "Via: 1.1 ferry\r\n\r\n");
    /* No path: "/"; a query alone gets its "/" in front. */
    expect_req("GET http://example.com HTTP/1.1\r\n\r\n", "ferry", false,
               "GET / HTTP/1.1\r\nHost: example.com\r\nVia: 1.1 ferry\r\n\r\n");
    expect_req("GET http://example.com?q HTTP/1.1\r\n\r\n", "", false,
               "GET /?q HTTP/1.1\r\nHost: example.com\r\n\r\n");
}

static void test_request_host_from_authority(void **state)
{
    (void)state;
    /* Host is the target's authority, port and brackets as written; the
     * client's own Host field is not sent on. */
    expect_req("GET http://[::1]:8080/x HTTP/1.1\r\nHost: elsewhere.test\r\n"
               "X-A: 1\r\n\r\n",
               "", false, "GET /x HTTP/1.1\r\nHost: [::1]:8080\r\nX-A: 1\r\n\r\n");
}

static void test_request_hop_by_hop_dropped(void **state)
{
    (void)state;
    expect_req("POST http://o.test/ HTTP/1.1\r\nConnection: keep-alive, X-Secret\r\n"
               "Keep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n"
               "Proxy-Authorization: Basic dTpw\r\nTE: trailers\r\nTrailer: X-T\r\n"
               "Upgrade: h2c\r\nX-Secret: 1\r\nContent-Length: 3\r\nX-Keep: yes\r\n\r\n",
               "ferry", false,
               "POST / HTTP/1.1\r\nHost: o.test\r\nContent-Length: 3\r\nX-Keep: yes\r\n"
               "Via: 1.1 ferry\r\n\r\n");
}

static void test_request_framing_kept(void **state)
{
    (void)state;
    expect_req("POST http://o.test/u HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "", false,
               "POST /u HTTP/1.1\r\nHost: o.test\r\nTransfer-Encoding: chunked\r\n\r\n");
    /* Identical repeated Content-Length values: one field, in the first
     * one's place. */
    expect_req("PUT http://o.test/ HTTP/1.1\r\nContent-Length: 5\r\nX-A: a\r\n"
               "Content-Length: 5, 5\r\n\r\n",
               "", false, "PUT / HTTP/1.1\r\nHost: o.test\r\nContent-Length: 5\r\nX-A: a\r\n\r\n");
    expect_req("PUT http://o.test/ HTTP/1.1\r\nContent-Length: 1099511627776\r\n"
               "Content-Length: 1099511627776\r\n\r\n",
               "", false,
               "PUT / HTTP/1.1\r\nHost: o.test\r\nContent-Length: 1099511627776\r\n\r\n");
}

static void test_request_via(void **state)
{
    (void)state;
    /* The carried Via (first field, its place) gets ours appended, in the
     * message's version. */
    expect_req("GET http://o.test/ HTTP/1.0\r\nVia: 1.1 a, 1.0 b\r\nX: y\r\n\r\n", "proxy-7", false,
               "GET / HTTP/1.0\r\nHost: o.test\r\nX: y\r\nVia: 1.1 a, 1.0 b, 1.0 proxy-7\r\n\r\n");
    /* No pseudonym: the carried Via goes on unchanged; none: no Via. */
    expect_req("GET http://o.test/ HTTP/1.1\r\nVia: 1.1 a\r\n\r\n", "", false,
               "GET / HTTP/1.1\r\nHost: o.test\r\nVia: 1.1 a\r\n\r\n");
}

static void test_request_connection_added(void **state)
{
    (void)state;
    /* An HTTP/1.0 request that asked for keep-alive says so again. */
    expect_req("GET http://o.test/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "", false,
               "GET / HTTP/1.0\r\nHost: o.test\r\nConnection: keep-alive\r\n\r\n");
    expect_req("GET http://o.test/ HTTP/1.0\r\n\r\n", "", false,
               "GET / HTTP/1.0\r\nHost: o.test\r\n\r\n");
    /* A 1.1 one needs nothing said. */
    expect_req("GET http://o.test/ HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", "", false,
               "GET / HTTP/1.1\r\nHost: o.test\r\n\r\n");
    /* A WebSocket handshake: Upgrade survives, Connection: Upgrade after Via. */
    expect_req("GET http://o.test/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
               "Sec-WebSocket-Key: k\r\n\r\n",
               "ferry", true,
               "GET /ws HTTP/1.1\r\nHost: o.test\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n"
               "Via: 1.1 ferry\r\nConnection: Upgrade\r\n\r\n");
    /* Not asked as a WebSocket: Upgrade goes like any hop-by-hop field. */
    expect_req("GET http://o.test/ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
               "\r\n",
               "", false, "GET /ws HTTP/1.1\r\nHost: o.test\r\n\r\n");
}

/* A big head fits exactly or not at all, at every cap near its size. */
static void test_request_cap_boundaries(void **state)
{
    (void)state;
    char text[2048];
    int n =
        snprintf(text, sizeof(text), "GET http://o.test/ HTTP/1.1\r\nX-Long: %0900d\r\n\r\n", 7);
    assert_true(n > 0 && (size_t)n < sizeof(text));
    struct parsed *p = parse(text, true);
    char host[64];
    uint16_t port;
    size_t off;
    assert_int_equal(http1_parse_absolute(p->m.target, p->m.tlen, host, sizeof(host), &port, &off),
                     0);
    ssize_t full = http1_rewrite_request(&p->m, off, "o.test", 6, "ferry", false, NULL, 0);
    assert_int_equal(full, HTTP1_E_TOO_LARGE); /* cap 0: nothing written */
    uint8_t *big = malloc(4096);
    assert_non_null(big);
    full = http1_rewrite_request(&p->m, off, "o.test", 6, "ferry", false, big, 4096);
    assert_true(full > 900);
    for (size_t cap = (size_t)full - 40; cap <= (size_t)full + 2; cap++) {
        uint8_t *o = malloc(cap);
        assert_non_null(o);
        ssize_t r = http1_rewrite_request(&p->m, off, "o.test", 6, "ferry", false, o, cap);
        if (cap >= (size_t)full) {
            assert_int_equal(r, full);
            assert_memory_equal(o, big, (size_t)full);
        } else {
            assert_int_equal(r, HTTP1_E_TOO_LARGE);
        }
        free(o);
    }
    free(big);
    parsed_free(p);
}

/* ---- responses ----------------------------------------------------------- */

static void test_response_basic(void **state)
{
    (void)state;
    /* Sent on as HTTP/1.1, status and reason as they came. */
    expect_resp("HTTP/1.0 200 OK\r\nContent-Length: 2\r\nServer: s\r\n\r\n", "ferry", false, true,
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: s\r\nVia: 1.0 ferry\r\n\r\n");
    expect_resp("HTTP/1.1 204 \r\n\r\n", "", false, true, "HTTP/1.1 204 \r\n\r\n");
    expect_resp("HTTP/1.1 599 Odd Reason Here\r\n\r\n", "", false, true,
                "HTTP/1.1 599 Odd Reason Here\r\n\r\n");
}

static void test_response_connection(void **state)
{
    (void)state;
    /* A final response the client may not reuse says Connection: close. */
    expect_resp("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", "", false,
                false, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    /* 1xx: never. */
    expect_resp("HTTP/1.1 100 Continue\r\n\r\n", "", false, false, "HTTP/1.1 100 Continue\r\n\r\n");
    expect_resp("HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n", "ferry", false, false,
                "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\nVia: 1.1 ferry\r\n\r\n");
    /* A switch that was asked for: Upgrade kept, Connection: Upgrade. */
    expect_resp("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                "Upgrade: websocket\r\nSec-WebSocket-Accept: a\r\n\r\n",
                "ferry", true, false,
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                "Sec-WebSocket-Accept: a\r\nVia: 1.1 ferry\r\nConnection: Upgrade\r\n\r\n");
}

static void test_response_fields(void **state)
{
    (void)state;
    expect_resp("HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: t=1\r\n"
                "Proxy-Authenticate: Basic\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
                "Via: 1.1 up\r\nSet-Cookie: a=b\r\n\r\n",
                "ferry", false, true,
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nSet-Cookie: a=b\r\n"
                "Via: 1.1 up, 1.1 ferry\r\n\r\n");
}

/* ---- to a parent proxy: absolute form ------------------------------------ */

/* The request rewritten (origin form), then put in the form a parent
 * proxy takes, with pauth (NULL: none); the result as a string. The cap:
 * exact fit, one byte short. */
static char *proxy_form(const char *text, const char *pauth)
{
    char *origin = rewrite_req(text, "ferry", false);
    struct parsed *p = parse(text, true);
    char host[256];
    uint16_t port;
    size_t path_off;
    assert_int_equal(
        http1_parse_absolute(p->m.target, p->m.tlen, host, sizeof(host), &port, &path_off), 0);
    const char *auth = p->m.target + 7;
    size_t alen = path_off - 7, olen = strlen(origin), plen = pauth ? strlen(pauth) : 0;
    size_t cap = olen + alen + plen + 64;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    ssize_t n = http1_proxy_form((const uint8_t *)origin, olen, auth, alen, pauth, plen, out, cap);
    assert_true(n > 0 && (size_t)n < cap);
    uint8_t *exact = malloc((size_t)n), *shy = malloc((size_t)n - 1);
    assert_non_null(exact);
    assert_non_null(shy);
    assert_int_equal(
        http1_proxy_form((const uint8_t *)origin, olen, auth, alen, pauth, plen, exact, (size_t)n),
        n);
    assert_memory_equal(exact, out, (size_t)n);
    assert_int_equal(http1_proxy_form((const uint8_t *)origin, olen, auth, alen, pauth, plen, shy,
                                      (size_t)n - 1),
                     HTTP1_E_TOO_LARGE);
    free(exact);
    free(shy);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    memcpy(s, out, (size_t)n);
    s[n] = '\0';
    free(out);
    free(origin);
    parsed_free(p);
    return s;
}

static void expect_proxy(const char *in, const char *pauth, const char *want)
{
    char *got = proxy_form(in, pauth);
    assert_string_equal(got, want);
    free(got);
}

static void test_proxy_form_absolute(void **state)
{
    (void)state;
    /* The target goes back to absolute form with the client's authority;
     * Host stays the authority; the rest as the rewrite made it. */
    expect_proxy("GET http://example.com:8080/a?b HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", NULL,
                 "GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com:8080\r\n"
                 "Accept: */*\r\nVia: 1.1 ferry\r\n\r\n");
    expect_proxy("HEAD http://[::1] HTTP/1.0\r\n\r\n", NULL,
                 "HEAD http://[::1]/ HTTP/1.0\r\nHost: [::1]\r\nVia: 1.0 ferry\r\n\r\n");
    expect_proxy("GET http://example.com?q HTTP/1.1\r\n\r\n", NULL,
                 "GET http://example.com/?q HTTP/1.1\r\nHost: example.com\r\n"
                 "Via: 1.1 ferry\r\n\r\n");
}

static void test_proxy_form_credentials(void **state)
{
    (void)state;
    /* The parent's credentials are added; the client's own
     * Proxy-Authorization (for ferry) never goes on, with or without. */
    expect_proxy("POST http://h/p HTTP/1.1\r\nProxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\n"
                 "Content-Length: 2\r\n\r\n",
                 "Basic cGFyZW50OnB3",
                 "POST http://h/p HTTP/1.1\r\nProxy-Authorization: Basic cGFyZW50OnB3\r\n"
                 "Host: h\r\nContent-Length: 2\r\nVia: 1.1 ferry\r\n\r\n");
    expect_proxy("GET http://h/ HTTP/1.1\r\nProxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\n"
                 "Proxy-Connection: keep-alive\r\n\r\n",
                 NULL, "GET http://h/ HTTP/1.1\r\nHost: h\r\nVia: 1.1 ferry\r\n\r\n");
}

static void test_proxy_form_refusals(void **state)
{
    (void)state;
    static const char origin[] = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    const uint8_t *o = (const uint8_t *)origin;
    size_t olen = sizeof(origin) - 1;
    uint8_t out[256];
    /* Not origin form, or no request line. */
    static const char abs[] = "GET http://h/ HTTP/1.1\r\n\r\n";
    assert_int_equal(
        http1_proxy_form((const uint8_t *)abs, sizeof(abs) - 1, "h", 1, NULL, 0, out, sizeof(out)),
        HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form((const uint8_t *)"GET", 3, "h", 1, NULL, 0, out, sizeof(out)),
                     HTTP1_E_BAD);
    /* An authority a target cannot carry: empty, userinfo, a path, space,
     * a line break. */
    assert_int_equal(http1_proxy_form(o, olen, "", 0, NULL, 0, out, sizeof(out)), HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form(o, olen, "u@h", 3, NULL, 0, out, sizeof(out)), HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form(o, olen, "h/x", 3, NULL, 0, out, sizeof(out)), HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form(o, olen, "h x", 3, NULL, 0, out, sizeof(out)), HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form(o, olen, "h\r\nX", 4, NULL, 0, out, sizeof(out)),
                     HTTP1_E_BAD);
    /* Credentials that would end the field early. */
    assert_int_equal(http1_proxy_form(o, olen, "h", 1, "Basic a\r\nX: y", 13, out, sizeof(out)),
                     HTTP1_E_BAD);
    assert_int_equal(http1_proxy_form(o, olen, "h", 1, "Basic a\0", 8, out, sizeof(out)),
                     HTTP1_E_BAD);
    /* The good one fits. */
    assert_true(http1_proxy_form(o, olen, "h", 1, "Basic YTpi", 10, out, sizeof(out)) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_origin_form),
        cmocka_unit_test(test_request_host_from_authority),
        cmocka_unit_test(test_request_hop_by_hop_dropped),
        cmocka_unit_test(test_request_framing_kept),
        cmocka_unit_test(test_request_via),
        cmocka_unit_test(test_request_connection_added),
        cmocka_unit_test(test_request_cap_boundaries),
        cmocka_unit_test(test_response_basic),
        cmocka_unit_test(test_response_connection),
        cmocka_unit_test(test_response_fields),
        cmocka_unit_test(test_proxy_form_absolute),
        cmocka_unit_test(test_proxy_form_credentials),
        cmocka_unit_test(test_proxy_form_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
