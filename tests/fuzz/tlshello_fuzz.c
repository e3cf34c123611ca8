/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlshello_fuzz.c: libFuzzer harness for the TLS ClientHello sniffer of
 * proto/tlshello.
 *
 * The input is what the socket delivered. Checked: the verdict is a listed
 * code; a success stays inside the bytes (hello_end <= len <= ...), within
 * the caps (16 KiB, 64 records), its SNI is 0 or 1..254 bytes of canonical
 * LDH, its ALPN bytes are whole wire-format protocols. The handshake
 * message of a success is re-wrapped in one record and in two records cut
 * at a point taken from the data, and must give the same SNI, ALPN and
 * version: the record layer must not matter. Then the input is fed the way
 * a socket delivers it: every prefix (the first 2 KiB of them, then a few
 * cut points) is "need more" until the verdict, and the verdict from then
 * on. Prefixes are copied to the end of a heap block so ASan sees any read
 * past them. Any violation traps. Linked with only src/proto, util/addr and
 * util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/tlshello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define WINDOW     (TLS_SNIFF_BUF_MAX + 1)
#define EVERY_UPTO 2048

static bool same(const struct tls_hello *a, const struct tls_hello *b)
{
    return memcmp(a, b, sizeof(*a)) == 0; /* the sniffer fills from a zeroed struct */
}

static void check_result(size_t len, int rc, const struct tls_hello *h)
{
    CHECK(rc >= TLS_E_SNI && rc <= TLS_OK);
    CHECK(tls_strerror(rc) != NULL);
    if (rc != TLS_OK)
        return;
    CHECK(h->hello_end <= len && h->hello_end <= h->records_end);
    CHECK(h->ends_mid_record == (h->hello_end < h->records_end));
    CHECK(h->records <= TLS_RECORDS_MAX);
    CHECK(h->hello_end <= (h->sslv2 ? TLS_HELLO_MAX : TLS_SNIFF_BUF_MAX));
    CHECK(h->client_version >> 8 == 3);
    if (h->sslv2)
        CHECK(h->records == 0 && h->sni_len == 0 && h->alpn_count == 0);
    CHECK(h->sni_len <= HOSTNAME_MAX - 1 && strlen(h->sni) == h->sni_len);
    for (size_t i = 0; i < h->sni_len; i++) {
        char c = h->sni[i];
        CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
    }
    if (h->sni_len) {
        char canon[HOSTNAME_MAX + 1];
        CHECK(hostname_canon((const uint8_t *)h->sni, h->sni_len, canon) == h->sni_len);
    }
    size_t n = 0, i = 0;
    CHECK(h->alpn_len <= TLS_ALPN_MAX);
    while (i < h->alpn_len) {
        CHECK(h->alpn[i] != 0 && i + 1 + h->alpn[i] <= h->alpn_len);
        i += 1 + (size_t)h->alpn[i];
        n++;
    }
    CHECK(h->alpn_truncated ? n < h->alpn_count : n == h->alpn_count);
}

static const uint8_t *tail_copy(uint8_t *win, const uint8_t *data, size_t k)
{
    uint8_t *p = win + WINDOW - k;
    if (k)
        memcpy(p, data, k);
    return p;
}

/* The handshake message of a success, gathered from its records. */
static size_t gather(const uint8_t *p, const struct tls_hello *h, uint8_t *hs)
{
    size_t off = 0, n = 0;
    while (off < h->hello_end) {
        size_t rlen = (size_t)p[off + 3] << 8 | p[off + 4];
        size_t from = off + 5, to = from + rlen < h->hello_end ? from + rlen : h->hello_end;
        memcpy(hs + n, p + from, to - from);
        n += to - from;
        off = from + rlen;
    }
    return n;
}

/* The message in records cut at cut (0: one record); its verdict. */
static void rewrap(const uint8_t *hs, size_t n, size_t cut, const struct tls_hello *want)
{
    uint8_t *rec = malloc(n + 10);
    if (!rec)
        return;
    size_t m = 0, from = 0;
    size_t cuts[2] = {cut, n};
    for (size_t i = cut ? 0 : 1; i < 2; i++) {
        size_t l = cuts[i] - from;
        rec[m++] = 0x16;
        rec[m++] = 0x03;
        rec[m++] = 0x03;
        rec[m++] = (uint8_t)(l >> 8);
        rec[m++] = (uint8_t)l;
        memcpy(rec + m, hs + from, l);
        m += l;
        from = cuts[i];
    }
    struct tls_hello h;
    CHECK(tls_sniff(rec, m, &h) == TLS_OK);
    CHECK(h.sni_len == want->sni_len && strcmp(h.sni, want->sni) == 0);
    CHECK(h.alpn_len == want->alpn_len && memcmp(h.alpn, want->alpn, h.alpn_len) == 0);
    CHECK(h.alpn_count == want->alpn_count && h.client_version == want->client_version);
    CHECK(h.hello_end == m && h.records == (cut ? 2u : 1u));
    free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    size_t lim = size < WINDOW ? size : WINDOW;
    struct tls_hello whole, part;
    const uint8_t *p = tail_copy(win, data, lim);
    int want = tls_sniff(p, lim, &whole);
    check_result(lim, want, &whole);
    if (want == TLS_OK && !whole.sslv2) {
        uint8_t *hs = malloc(TLS_HELLO_MAX);
        if (hs) {
            size_t n = gather(p, &whole, hs);
            CHECK(n >= 4 && n <= TLS_HELLO_MAX);
            rewrap(hs, n, 0, &whole);
            size_t cut = 1 + (lim ? data[lim - 1] * 7 % (n - 1) : 0);
            rewrap(hs, n, cut, &whole);
            free(hs);
        }
    }

    /* Prefixes: "need more" until the verdict, the verdict after it. */
    bool decided = false;
    size_t every = lim < EVERY_UPTO ? lim : EVERY_UPTO;
    for (size_t k = 0; k <= every; k++) {
        p = tail_copy(win, data, k);
        int got = tls_sniff(p, k, &part);
        check_result(k, got, &part);
        if (got == TLS_NEED_MORE) {
            CHECK(!decided);
            continue;
        }
        decided = true;
        CHECK(got == want && (got != TLS_OK || same(&part, &whole)));
    }
    if (want == TLS_OK) {
        p = tail_copy(win, data, whole.hello_end);
        CHECK(tls_sniff(p, whole.hello_end, &part) == TLS_OK && same(&part, &whole));
        if (whole.hello_end > 0) {
            p = tail_copy(win, data, whole.hello_end - 1);
            CHECK(tls_sniff(p, whole.hello_end - 1, &part) == TLS_NEED_MORE);
        }
    }
    size_t cut = lim ? ((size_t)data[lim - 1] * 131 + lim) % (lim + 1) : 0;
    p = tail_copy(win, data, cut);
    int rc = tls_sniff(p, cut, &part);
    CHECK(rc == TLS_NEED_MORE || rc == want);
    free(win);
    return 0;
}
