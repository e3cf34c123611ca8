/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcframe_fuzz.c: libFuzzer harness for the Minecraft frames of
 * proto/mcframe (what edge mode reads from backends and clients after the
 * handshake, and writes back).
 *
 * The input is read as a frame (a verdict that is a listed code, a body
 * inside the bytes, and the same answer for the exact frame alone), as a
 * Status Response body (a JSON inside it, written back by
 * mc_status_reply() and read again to the same bytes), as a status JSON
 * for the players scan, and as text for the offline JSON and the legacy
 * replies (which must fit their caps or say 0). Heap copies of exact size
 * so ASan sees any read past them. Any violation traps. Linked with only
 * src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mcframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static void check_frame(const uint8_t *p, size_t n)
{
    uint32_t id;
    size_t off, len, flen;
    int rc = mc_frame(p, n, 4096, &id, &off, &len, &flen);
    CHECK(rc == 0 || rc == 1 || rc == MC_E_VARINT || rc == MC_E_FRAME || rc == MC_E_TOO_BIG);
    if (rc != 1)
        return;
    CHECK(flen <= n && flen <= 4096 && off + len == flen && off >= 2);
    uint32_t id2;
    size_t off2, len2, flen2;
    CHECK(mc_frame(p, flen, 4096, &id2, &off2, &len2, &flen2) == 1 && id2 == id && flen2 == flen);
}

static void check_status(const uint8_t *p, size_t n)
{
    size_t off, len;
    if (mc_status_json(p, n, &off, &len) != 1)
        return;
    CHECK(off + len == n && len <= MC_STATUS_JSON_MAX);
    size_t cap = len + 16;
    uint8_t *out = malloc(cap);
    if (!out)
        return;
    size_t m = mc_status_reply(out, cap, (const char *)p + off, len);
    CHECK(m > 0);
    uint32_t id;
    size_t boff, blen, flen, joff, jlen;
    CHECK(mc_frame(out, m, cap, &id, &boff, &blen, &flen) == 1 && id == 0 && flen == m);
    CHECK(mc_status_json(out + boff, blen, &joff, &jlen) == 1 && jlen == len);
    CHECK(memcmp(out + boff + joff, p + off, len) == 0);
    free(out);
}

static void check_text(const uint8_t *p, size_t n)
{
    int64_t on, max;
    (void)mc_status_players((const char *)p, n, &on, &max);
    char *t = malloc(n + 1);
    if (!t)
        return;
    memcpy(t, p, n);
    t[n] = '\0';
    char js[512];
    size_t k = mc_status_offline(js, sizeof(js), t);
    CHECK(k == 0 || (k < sizeof(js) && strlen(js) == k));
    uint8_t out[600];
    for (int kind = MC_LEGACY_FE; kind <= MC_LEGACY_16; kind++) {
        size_t r = mc_legacy_reply(out, sizeof(out), (enum mc_kind)kind, 127, t, t, on, max);
        CHECK(r == 0 ||
              (r <= sizeof(out) && out[0] == 0xff && r == 3 + 2 * (size_t)(out[1] << 8 | out[2])));
    }
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    check_frame(copy, size);
    check_status(copy, size);
    check_text(copy, size);
    free(copy);
    return 0;
}
