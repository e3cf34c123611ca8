/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * masque_fuzz.c: libFuzzer harness for proto/masque: the connect-udp
 * :path of RFC 9298 section 2, its writer, the Capsule-Protocol boolean
 * and the request check.
 *
 * The input is parsed as a :path (an exact-size heap block, no NUL). A
 * path that parses names a host of 1..255 bytes with no NUL, control,
 * space, DEL or '%' byte and a port of 1..65535; written back by
 * masque_format_path it parses to the same host and port, and the writer
 * is a fixed point (writing what it parsed gives the same bytes).
 * masque_check_request with otherwise good pseudo-headers gives exactly
 * the path's verdict. The input is also taken as a host (port from its
 * first bytes): written and parsed back it is the same host unless it holds
 * a byte a host may not. As a Capsule-Protocol value, the input is true
 * only if it starts with "?1" after spaces, and surrounding spaces never
 * change the verdict. Any violation traps. Linked with only src/proto,
 * util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/masque.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static bool host_byte_ok(uint8_t c)
{
    return c > 0x20 && c != 0x7f && c != '%';
}

static void check_path(const char *p, size_t len)
{
    struct masque_target t;
    int rc = masque_parse_path(p, len, &t);
    CHECK(rc <= 0 && rc >= MASQUE_E_PORT);
    struct masque_request r = {
        .method = {"CONNECT", 7},
        .protocol = {"connect-udp", 11},
        .scheme = {"https", 5},
        .authority = {"a", 1},
        .path = {p, len},
    };
    struct masque_target t2;
    CHECK(masque_check_request(&r, &t2) == rc);
    if (rc < 0)
        return;
    CHECK(t.host_len >= 1 && t.host_len <= MASQUE_HOST_MAX && t.host[t.host_len] == '\0');
    CHECK(t.port >= 1);
    for (size_t i = 0; i < t.host_len; i++)
        CHECK(host_byte_ok((uint8_t)t.host[i]));
    CHECK(t2.port == t.port && t2.host_len == t.host_len);
    CHECK(memcmp(t2.host, t.host, t.host_len) == 0);

    char out[MASQUE_PATH_MAX + 1], out2[MASQUE_PATH_MAX + 1];
    size_t n = masque_format_path(out, sizeof(out), t.host, t.host_len, t.port);
    CHECK(n > 0 && n <= MASQUE_PATH_MAX && strlen(out) == n);
    struct masque_target back;
    CHECK(masque_parse_path(out, n, &back) == 0);
    CHECK(back.port == t.port && back.host_len == t.host_len);
    CHECK(memcmp(back.host, t.host, t.host_len) == 0);
    CHECK(masque_format_path(out2, sizeof(out2), back.host, back.host_len, back.port) == n);
    CHECK(memcmp(out, out2, n) == 0);
}

static void check_host(const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    uint16_t port = (uint16_t)(data[0] << 8 | data[1]);
    const char *h = (const char *)data + 2;
    size_t hlen = size - 2;
    char out[MASQUE_PATH_MAX + 1];
    size_t n = masque_format_path(out, sizeof(out), h, hlen, port);
    if (port == 0 || hlen > MASQUE_HOST_MAX) {
        CHECK(n == 0);
        return;
    }
    CHECK(n > 0 && n <= MASQUE_PATH_MAX);
    /* Short of room: the same length, and the caller knows it did not fit. */
    char small[8];
    CHECK(masque_format_path(small, sizeof(small), h, hlen, port) == n);
    bool ok = hlen > 0;
    for (size_t i = 0; i < hlen; i++)
        ok = ok && host_byte_ok((uint8_t)h[i]);
    struct masque_target t;
    int rc = masque_parse_path(out, n, &t);
    if (!ok) {
        CHECK(rc == MASQUE_E_HOST);
        return;
    }
    CHECK(rc == 0 && t.port == port && t.host_len == hlen);
    CHECK(memcmp(t.host, h, hlen) == 0);
}

static void check_capsule_protocol(const uint8_t *data, size_t size)
{
    const char *v = (const char *)data;
    bool b = masque_capsule_protocol_is_true(v, size);
    if (b) {
        size_t i = 0;
        while (i < size && v[i] == ' ')
            i++;
        CHECK(size - i >= 2 && v[i] == '?' && v[i + 1] == '1');
    }
    char *padded = malloc(size + 2);
    if (!padded)
        return;
    padded[0] = ' ';
    if (size)
        memcpy(padded + 1, data, size);
    padded[size + 1] = ' ';
    CHECK(masque_capsule_protocol_is_true(padded, size + 2) == b);
    free(padded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_path((const char *)data, size);
    check_host(data, size);
    check_capsule_protocol(data, size);
    return 0;
}
