/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * squidauth_fuzz.c: libFuzzer harness for proto/squidauth, Squid's
 * basic-auth helper lines. The input, copied to an exact-size heap block
 * (so ASan sees a read past it), is parsed as a reply line: a parse that
 * succeeds points its message inside the line, and the code is the first
 * word. The input is also escaped: the output decodes back to the input,
 * holds no byte a helper would split or choke on (space, control, a bare
 * '%', non-ASCII), and every cap short of the need is refused without
 * writing past it. Split at its first byte's position, it is written as a
 * request line with exactly one space and one final newline. Any
 * violation traps. Linked with only src/proto and util.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/squidauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

static void check_reply(const uint8_t *data, size_t size)
{
    char *line = calloc(1, size ? size : 1);
    if (!line)
        return;
    if (size)
        memcpy(line, data, size);
    struct squidauth_reply r;
    if (squidauth_reply_parse(line, size, &r) == 0) {
        CHECK(size >= 2);
        CHECK(r.msglen == 0 || (r.msg >= line && r.msg + r.msglen <= line + size));
        static const char *const words[] = {"OK", "ERR", "BH"};
        size_t w = strlen(words[r.code]);
        CHECK(size >= w && memcmp(line, words[r.code], w) == 0);
        CHECK(size == w || line[w] == ' ' || line[w] == '\t' || line[w] == '\r');
    }
    free(line);
}

static void check_escape(const uint8_t *data, size_t size)
{
    size_t cap = 3 * size + 1;
    char *out = malloc(cap + 1);
    if (!out)
        return;
    ssize_t n = squidauth_escape(data, size, out, cap);
    CHECK(n >= 0 && (size_t)n < cap && out[n] == '\0');
    size_t j = 0;
    for (size_t i = 0; i < (size_t)n; i++, j++) {
        unsigned char ch = (unsigned char)out[i];
        CHECK(ch > ' ' && ch < 0x7f);
        if (ch == '%') {
            CHECK(i + 2 < (size_t)n + 1 && hexval(out[i + 1]) >= 0 && hexval(out[i + 2]) >= 0);
            CHECK(j < size && data[j] == (uint8_t)(hexval(out[i + 1]) * 16 + hexval(out[i + 2])));
            i += 2;
        } else {
            CHECK(j < size && data[j] == ch);
        }
    }
    CHECK(j == size);
    /* Too small by one: refused, and the byte after the cap untouched. */
    memset(out, 0x5a, cap + 1);
    CHECK(squidauth_escape(data, size, out, (size_t)n) == -1);
    CHECK((unsigned char)out[n] == 0x5a);
    free(out);
}

static void check_request(const uint8_t *data, size_t size)
{
    if (size == 0)
        return;
    size_t ulen = data[0] % size;
    size_t cap = 3 * size + 3;
    char *out = malloc(cap);
    if (!out)
        return;
    ssize_t n = squidauth_request(data, ulen, data + ulen, size - ulen, out, cap);
    CHECK(n > 0 && (size_t)n < cap && out[n - 1] == '\n' && out[n] == '\0');
    CHECK(memchr(out, ' ', (size_t)n) == memrchr(out, ' ', (size_t)n));
    CHECK(memchr(out, '\n', (size_t)n) == out + n - 1);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_reply(data, size);
    check_escape(data, size);
    check_request(data, size);
    return 0;
}
