/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http1_rewrite_fuzz.c: libFuzzer harness for the head rewrite of
 * proto/http1 (http1_rewrite_request, http1_rewrite_response) and of the
 * absolute form for a parent proxy (http1_proxy_form).
 *
 * The input's first byte chooses the flags (upgrade or switching,
 * keepalive), the Via pseudonym and the cap; the rest is a message. Each
 * head the parsers accept (a request in absolute form, or a response) is
 * rewritten, and the result is held to the contract:
 *   - it stays inside the cap (outputs are exact-size heap blocks, so ASan
 *     sees a byte past it), fits exactly at its own length and not one byte
 *     shorter, and is the same bytes whatever the cap that holds it;
 *   - it is one head (the head finder ends it exactly) that parses again
 *     (unless the added fields pass the field limit) with the same method,
 *     version, status and framing (Content-Length, chunked), an origin-form
 *     target, exactly one Host (the authority), no hop-by-hop field but the
 *     ones the proxy adds, and a Via that ends in the proxy's own entry;
 *   - a final response the client may not reuse says Connection: close;
 *   - a rewritten request put in proxy form (the keepalive bit: with the
 *     parent's credentials) fits its cap as above and parses again with an
 *     absolute target of the same authority and path, the same Host and
 *     framing, and exactly the parent's Proxy-Authorization (or none).
 * Any violation traps. Linked with only src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static const char *const vias[] = {"", "ferry", "proxy-7",
                                   "a-pseudonym-of-sixty-three-bytes-which-is-the-longest-allowed"};

/* The rewritten head, parsed again, says what the contract says. */
static void check_common(const uint8_t *out, size_t n, const struct http1_msg *orig,
                         const struct http1_msg *re, int rc, const char *via, bool keep_upgrade)
{
    size_t scanned = 0;
    CHECK(n >= 4 && memcmp(out + n - 4, "\r\n\r\n", 4) == 0);
    CHECK(http1_head_end(out, n, n, &scanned) == (ssize_t)n);
    /* The proxy adds at most a Host, a Via and a Connection field. */
    if (rc == HTTP1_E_TOO_LARGE && orig->nh + 3 > HTTP1_MAX_HEADERS)
        return;
    CHECK(rc == 0);
    CHECK(re->minor == (orig->method ? orig->minor : 1));
    CHECK(re->has_cl == orig->has_cl && re->chunked == orig->chunked);
    CHECK(re->has_te == orig->has_te && !re->cl_repeated);
    if (orig->has_cl)
        CHECK(re->content_length == orig->content_length);
    const struct http1_header *last_via = NULL;
    for (unsigned i = 0; i < re->nh; i++) {
        const struct http1_header *f = &re->h[i];
        if (http1_name_is(f, "via")) {
            CHECK(!last_via); /* one Via */
            last_via = f;
        }
        if (http1_name_is(f, "connection") || (keep_upgrade && http1_name_is(f, "upgrade")))
            continue;
        /* A field named like a token of the proxy's own Connection value
         * ("close: x") is named by it now, and only so. */
        if (http1_name_is(f, "close") || http1_name_is(f, "upgrade"))
            continue;
        CHECK(!http1_hop_by_hop(re, f));
    }
    if (via[0]) {
        size_t vl = strlen(via);
        CHECK(last_via && last_via->vlen >= vl + 4);
        CHECK(memcmp(last_via->value + last_via->vlen - vl, via, vl) == 0);
    } else {
        CHECK(!!last_via == !!http1_find(orig, "via"));
    }
}

/* The proxy's Connection: Upgrade is there. */
static bool says_upgrade(const struct http1_msg *re)
{
    const struct http1_header *c = http1_find(re, "connection");
    return c && http1_has_token(c->value, c->vlen, "upgrade");
}

/* Rewrite with cap; check the cap was honoured. */
static ssize_t rewrite(const struct http1_msg *m, bool request, size_t path_off, const char *auth,
                       size_t alen, const char *via, bool flag, bool keepalive, size_t cap,
                       uint8_t **outp)
{
    uint8_t *out = malloc(cap ? cap : 1);
    CHECK(out != NULL);
    ssize_t n = request ? http1_rewrite_request(m, path_off, auth, alen, via, flag, out, cap)
                        : http1_rewrite_response(m, via, flag, keepalive, out, cap);
    CHECK(n == HTTP1_E_TOO_LARGE || (n > 0 && (size_t)n <= cap));
    *outp = out;
    return n;
}

/* The rewritten request (origin form, out/n) in proxy form: the contract
 * of http1_proxy_form. */
static void check_proxy_form(const uint8_t *out, size_t n, const struct http1_msg *orig,
                             const char *auth, size_t alen, bool with_cred, size_t capsel,
                             struct http1_msg *re)
{
    static const char cred[] = "Basic cGFyZW50OnB3";
    const char *pa = with_cred ? cred : NULL;
    size_t plen = with_cred ? sizeof(cred) - 1 : 0;
    size_t big = n + alen + plen + 64;
    uint8_t *pf = malloc(big);
    CHECK(pf != NULL);
    ssize_t k = http1_proxy_form(out, n, auth, alen, pa, plen, pf, big);
    CHECK(k > 0 && (size_t)k <= big);
    size_t m = (size_t)k;
    CHECK(m == n + 7 + alen + (with_cred ? 23 + plen : 0));
    for (size_t cap = m - 1; cap <= m; cap++) {
        uint8_t *again = malloc(cap);
        CHECK(again != NULL);
        ssize_t r = http1_proxy_form(out, n, auth, alen, pa, plen, again, cap);
        CHECK(r == (cap == m ? k : HTTP1_E_TOO_LARGE));
        if (r > 0)
            CHECK(memcmp(again, pf, m) == 0);
        free(again);
    }
    size_t cap = capsel * m / 15;
    uint8_t *again = malloc(cap ? cap : 1);
    CHECK(again != NULL);
    CHECK(http1_proxy_form(out, n, auth, alen, pa, plen, again, cap) ==
          (cap >= m ? k : HTTP1_E_TOO_LARGE));
    free(again);
    size_t scanned = 0;
    CHECK(http1_head_end(pf, m, m, &scanned) == (ssize_t)m);
    int rc = http1_parse_request(pf, m, 1 << 20, re);
    if (rc == HTTP1_E_TOO_LARGE && orig->nh + 4 > HTTP1_MAX_HEADERS) {
        free(pf);
        return;
    }
    CHECK(rc == 0);
    CHECK(re->mlen == orig->mlen && memcmp(re->method, orig->method, orig->mlen) == 0);
    CHECK(re->minor == orig->minor && re->has_cl == orig->has_cl && re->chunked == orig->chunked);
    char host[256];
    uint16_t port;
    size_t path_off;
    CHECK(http1_parse_absolute(re->target, re->tlen, host, sizeof(host), &port, &path_off) == 0);
    CHECK(path_off == 7 + alen && memcmp(re->target + 7, auth, alen) == 0);
    CHECK(re->target[path_off] == '/');
    CHECK(re->nhost == 1 && re->nproxy_auth == (with_cred ? 1 : 0));
    const struct http1_header *h = http1_find(re, "host");
    CHECK(h && h->vlen == alen && memcmp(h->value, auth, alen) == 0);
    if (with_cred) {
        const struct http1_header *p = http1_find(re, "proxy-authorization");
        CHECK(p && p->vlen == plen && memcmp(p->value, cred, plen) == 0);
    }
    free(pf);
}

static void fuzz_one(const uint8_t *head, size_t len, bool request, uint8_t ctl,
                     struct http1_msg *m, struct http1_msg *re)
{
    int rc =
        request ? http1_parse_request(head, len, 1 << 20, m) : http1_parse_response(head, len, m);
    if (rc)
        return;
    char host[256];
    uint16_t port;
    size_t path_off = 0;
    const char *auth = NULL;
    size_t alen = 0;
    if (request) {
        if (http1_parse_absolute(m->target, m->tlen, host, sizeof(host), &port, &path_off))
            return;
        auth = m->target + 7;
        alen = path_off - 7;
    }
    const char *via = vias[ctl & 3];
    bool flag = ctl & 4, keepalive = ctl & 8;
    size_t big = 2 * len + 256;
    uint8_t *out;
    ssize_t n = rewrite(m, request, path_off, auth, alen, via, flag, keepalive, big, &out);
    CHECK(n > 0); /* never larger than this */

    /* The same bytes at exactly its size; nothing one byte shorter; a cap
     * drawn from the input either holds the same bytes or refuses. */
    uint8_t *again;
    CHECK(rewrite(m, request, path_off, auth, alen, via, flag, keepalive, (size_t)n, &again) == n);
    CHECK(memcmp(again, out, (size_t)n) == 0);
    free(again);
    CHECK(rewrite(m, request, path_off, auth, alen, via, flag, keepalive, (size_t)n - 1, &again) ==
          HTTP1_E_TOO_LARGE);
    free(again);
    size_t cap = (size_t)(ctl >> 4) * (size_t)n / 15;
    ssize_t k = rewrite(m, request, path_off, auth, alen, via, flag, keepalive, cap, &again);
    CHECK(k == (cap >= (size_t)n ? n : HTTP1_E_TOO_LARGE));
    if (k > 0)
        CHECK(memcmp(again, out, (size_t)n) == 0);
    free(again);

    int rc2 = request ? http1_parse_request(out, (size_t)n, 1 << 20, re)
                      : http1_parse_response(out, (size_t)n, re);
    check_common(out, (size_t)n, m, re, rc2, via, flag);
    if (rc2 == 0 && request) {
        CHECK(re->mlen == m->mlen && memcmp(re->method, m->method, m->mlen) == 0);
        CHECK(re->tlen >= 1 && re->target[0] == '/');
        CHECK(re->nhost == 1);
        const struct http1_header *h = http1_find(re, "host");
        CHECK(h && h->vlen == alen && memcmp(h->value, auth, alen) == 0);
        if (flag)
            CHECK(says_upgrade(re));
        check_proxy_form(out, (size_t)n, m, auth, alen, keepalive, (size_t)(ctl >> 4), re);
    } else if (rc2 == 0) {
        CHECK(re->status == m->status && memcmp(out, "HTTP/1.1 ", 9) == 0);
        CHECK(re->rlen == m->rlen);
        bool informational = m->status >= 100 && m->status < 200 && m->status != 101;
        if (!flag && !informational && !keepalive)
            CHECK(re->conn_close);
        if (flag)
            CHECK(says_upgrade(re));
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    size_t scanned = 0;
    ssize_t end = http1_head_end(p, len, 1 << 20, &scanned);
    if (end <= 0)
        return 0;
    /* The head alone, in an exact-size block. */
    uint8_t *head = malloc((size_t)end);
    struct http1_msg *m = malloc(sizeof(*m)), *re = malloc(sizeof(*re));
    if (head && m && re) {
        memcpy(head, p, (size_t)end);
        fuzz_one(head, (size_t)end, true, ctl, m, re);
        fuzz_one(head, (size_t)end, false, ctl, m, re);
    }
    free(re);
    free(m);
    free(head);
    return 0;
}
