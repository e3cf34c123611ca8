/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * h2h1_test.c: proto/h2h1: the fields of a plain HTTP/2 request judged
 * (RFC 9113 8.2.2), the request written as HTTP/1.1 (Host from the
 * authority, cookies joined per 8.2.3, the body's framing), and HTTP/1.1
 * responses read back into a status, fields and body bytes: content-length,
 * chunked (with extensions and trailers), close-delimited, HEAD, 1xx
 * dropped, 101 and malformed framing refused; every response is also fed
 * a byte at a time and with a body room of one byte.
 */
#include "harness.h"

#include "proto/h2h1.h"

static int check(const char *n, const char *v)
{
    return h2h1_field_check((const uint8_t *)n, strlen(n), (const uint8_t *)v, strlen(v));
}

static void test_field_check(void **state)
{
    (void)state;
    assert_int_equal(check("accept", "*/*"), H2H1_FIELD_OK);
    assert_int_equal(check("cookie", "a=1"), H2H1_FIELD_OK);
    assert_int_equal(check("proxy-authorization", "Basic x"), H2H1_FIELD_OK);
    assert_int_equal(check("te", "trailers"), H2H1_FIELD_DROP);
    assert_int_equal(check("host", "example"), H2H1_FIELD_DROP);
    const char *bad[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                         "upgrade"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(check(bad[i], "x"), H2H1_FIELD_BAD);
    assert_int_equal(check("te", "gzip"), H2H1_FIELD_BAD);
    assert_int_equal(check("Accept", "x"), H2H1_FIELD_BAD);
    assert_int_equal(check("", "x"), H2H1_FIELD_BAD);
    assert_int_equal(check(":x", "x"), H2H1_FIELD_BAD);
    assert_int_equal(check("a b", "x"), H2H1_FIELD_BAD);
    assert_int_equal(check("x", "a\r\nb: c"), H2H1_FIELD_BAD);
}

struct fl {
    uint8_t b[512];
    size_t len;
};

static void add(struct fl *f, const char *n, const char *v)
{
    assert_int_equal(h2h1_field_add(f->b, &f->len, sizeof(f->b), (const uint8_t *)n, strlen(n),
                                    (const uint8_t *)v, strlen(v)),
                     0);
}

static const char *head(const char *method, const char *auth, const char *path, struct fl *f,
                        bool body, enum h2h1_body *kind)
{
    static char out[1024];
    struct h2h1_req r = {method, auth, path, f->b, f->len, body};
    ssize_t n = h2h1_request_head(&r, (uint8_t *)out, sizeof(out) - 1, kind);
    if (n < 0)
        return NULL;
    out[n] = '\0';
    return out;
}

static void test_request_head(void **state)
{
    (void)state;
    struct fl f = {.len = 0};
    enum h2h1_body k;
    add(&f, "accept", "*/*");
    add(&f, "cookie", "a=1");
    add(&f, "cookie", "b=2");
    add(&f, "content-length", "5");
    assert_string_equal(head("POST", "h.example:8080", "/x?y", &f, true, &k),
                        "POST http://h.example:8080/x?y HTTP/1.1\r\nHost: h.example:8080\r\n"
                        "accept: */*\r\ncookie: a=1; b=2\r\nConnection: close\r\n"
                        "Content-Length: 5\r\n\r\n");
    assert_int_equal(k, H2H1_BODY_LENGTH);
    struct fl g = {.len = 0};
    assert_string_equal(head("PUT", "h", "/", &g, true, &k),
                        "PUT http://h/ HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n");
    assert_int_equal(k, H2H1_BODY_CHUNKED);
    assert_string_equal(head("POST", "h", "/", &g, false, &k),
                        "POST http://h/ HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"
                        "Content-Length: 0\r\n\r\n");
    assert_string_equal(
        head("GET", "[::1]:80", "/", &g, false, &k),
        "GET http://[::1]:80/ HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n");
    assert_int_equal(k, H2H1_BODY_NONE);
    /* refused: authority, path, content-length */
    assert_null(head("GET", "", "/", &g, false, &k));
    assert_null(head("GET", "a/b", "/", &g, false, &k));
    assert_null(head("GET", "u@h", "/", &g, false, &k));
    assert_null(head("GET", "h", "*", &g, false, &k));
    assert_null(head("GET", "h", "/a b", &g, false, &k));
    struct fl h = {.len = 0};
    add(&h, "content-length", "1x");
    assert_null(head("POST", "h", "/", &h, true, &k));
    struct fl d = {.len = 0};
    add(&d, "content-length", "4");
    add(&d, "content-length", "5");
    assert_null(head("POST", "h", "/", &d, true, &k));
    /* too small an output */
    struct h2h1_req r = {"GET", "h", "/", NULL, 0, false};
    uint8_t tiny[10];
    assert_int_equal(h2h1_request_head(&r, tiny, sizeof(tiny), &k), HTTP1_E_TOO_LARGE);
    uint8_t line[24];
    assert_int_equal(h2h1_chunk_line(0x1a2b, line), 6);
    assert_memory_equal(line, "1a2b\r\n", 6);
}

/* What a response translates into. */
struct got {
    int events_head, interim;
    int status;
    char fields[512];
    char body[4096];
    size_t blen;
    bool end, error;
};

static void run(const char *resp, size_t chunk, size_t room, bool head_req, bool eof, struct got *g)
{
    static struct http1_msg m;
    static uint8_t hb[2048];
    struct h1h2_resp r;
    h1h2_resp_init(&r, hb, sizeof(hb), head_req);
    memset(g, 0, sizeof(*g));
    size_t len = strlen(resp), off = 0;
    while (!g->end && !g->error) {
        size_t n = len - off < chunk ? len - off : chunk;
        uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan sees overreads */
        memcpy(copy, resp + off, n);
        size_t used = 0, dlen = 0;
        const uint8_t *data = NULL;
        enum h1h2_event ev = h1h2_resp_step(&r, copy, n, room, &used, &data, &dlen, &m);
        assert_true(used <= n);
        if (ev == H1H2_HEAD) {
            g->events_head++;
            g->status = r.status;
            for (unsigned i = 0; i < r.nf; i++) {
                size_t l = strlen(g->fields);
                snprintf(g->fields + l, sizeof(g->fields) - l, "%.*s=%.*s;", (int)r.f[i].nlen,
                         (const char *)r.f[i].name, (int)r.f[i].vlen, (const char *)r.f[i].value);
            }
            if (h1h2_resp_done(&r))
                g->end = true;
        } else if (ev == H1H2_INTERIM) {
            assert_int_equal(r.status, 100);
            g->interim++;
        } else if (ev == H1H2_DATA) {
            assert_true(dlen <= room && dlen > 0);
            memcpy(g->body + g->blen, data, dlen);
            g->blen += dlen;
        } else if (ev == H1H2_END) {
            g->end = true;
        } else if (ev == H1H2_ERROR) {
            g->error = true;
        }
        free(copy);
        off += used;
        if (ev == H1H2_NEED && used == 0 && off == len) {
            if (eof) {
                enum h1h2_event e = h1h2_resp_eof(&r);
                g->end = e == H1H2_END;
                g->error = e == H1H2_ERROR;
            }
            break;
        }
    }
}

/* The same verdict fed whole, a byte at a time, and with one byte of room. */
static void run_all(const char *resp, bool head_req, bool eof, struct got *g)
{
    struct got a, b;
    run(resp, 1 << 20, 1 << 20, head_req, eof, g);
    run(resp, 1, 1 << 20, head_req, eof, &a);
    run(resp, 1 << 20, 1, head_req, eof, &b);
    assert_int_equal(g->end, a.end);
    assert_int_equal(g->end, b.end);
    assert_int_equal(g->error, a.error);
    assert_int_equal(g->error, b.error);
    assert_int_equal(g->blen, a.blen);
    assert_int_equal(g->blen, b.blen);
    assert_memory_equal(g->body, a.body, g->blen);
    assert_memory_equal(g->body, b.body, g->blen);
    assert_string_equal(g->fields, a.fields);
}

static void test_response_length(void **state)
{
    (void)state;
    struct got g;
    run_all("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\nKeep-Alive: x\r\n"
            "X-A: b\r\n\r\nhelloEXTRA",
            false, false, &g);
    assert_true(g.end);
    assert_int_equal(g.status, 200);
    assert_string_equal(g.fields, "content-length=5;x-a=b;");
    assert_int_equal(g.blen, 5);
    assert_memory_equal(g.body, "hello", 5);
    run_all("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false, true, &g);
    assert_true(g.error); /* cut short */
}

static void test_response_chunked(void **state)
{
    (void)state;
    struct got g;
    run_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x\r\n\r\n"
            "5;a=b\r\nhello\r\n0000a\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n",
            false, false, &g);
    assert_true(g.end);
    assert_string_equal(g.fields, ""); /* Transfer-Encoding and Trailer dropped */
    assert_int_equal(g.blen, 15);
    assert_memory_equal(g.body, "hello0123456789", 15);
    const char *bad[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_all(bad[i], false, false, &g);
        assert_true(g.error);
    }
}

static void test_response_close_head_interim(void **state)
{
    (void)state;
    struct got g;
    run_all("HTTP/1.1 200 OK\r\n\r\nuntil the end", false, true, &g);
    assert_true(g.end);
    assert_int_equal(g.blen, 13);
    run_all("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
            "HTTP/1.1 404 No\r\nContent-Length: 2\r\n\r\nno",
            false, false, &g);
    assert_int_equal(g.events_head, 1);
    assert_int_equal(g.interim, 1); /* the 100, not the 103 */
    assert_int_equal(g.status, 404);
    assert_int_equal(g.blen, 2);
    run_all("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", true, false, &g);
    assert_true(g.end);
    assert_int_equal(g.blen, 0);
    assert_string_equal(g.fields, "content-length=100;");
    run_all("HTTP/1.1 204 No\r\n\r\n", false, false, &g);
    assert_true(g.end);
    run_all("HTTP/1.1 304 No\r\nContent-Length: 9\r\n\r\n", false, false, &g);
    assert_true(g.end);
    assert_int_equal(g.blen, 0);
    run_all("HTTP/1.1 407 No\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n", false,
            false, &g);
    assert_string_equal(g.fields, "proxy-authenticate=Basic;content-length=0;");
    const char *bad[] = {
        "HTTP/1.1 101 Switching\r\nUpgrade: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "SMTP ready\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        run_all(bad[i], false, false, &g);
        assert_true(g.error);
    }
}

static void test_response_head_too_large(void **state)
{
    (void)state;
    static uint8_t hb[64];
    static struct http1_msg m;
    struct h1h2_resp r;
    h1h2_resp_init(&r, hb, sizeof(hb), false);
    char big[200];
    memset(big, 'a', sizeof(big));
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    size_t used, dlen;
    const uint8_t *d;
    enum h1h2_event ev = H1H2_NEED;
    size_t off = 0;
    while (ev == H1H2_NEED && off < sizeof(big)) {
        ev = h1h2_resp_step(&r, (const uint8_t *)big + off, sizeof(big) - off, 100, &used, &d,
                            &dlen, &m);
        off += used;
    }
    assert_int_equal(ev, H1H2_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_check),
        cmocka_unit_test(test_request_head),
        cmocka_unit_test(test_response_length),
        cmocka_unit_test(test_response_chunked),
        cmocka_unit_test(test_response_close_head_interim),
        cmocka_unit_test(test_response_head_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
