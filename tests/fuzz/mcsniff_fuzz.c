/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcsniff_fuzz.c: libFuzzer harness for the Minecraft first-message sniffer
 * of proto/mcsniff.
 *
 * The first byte picks the frame cap (its low 3 bits: the default, 256,
 * 1 KiB, 2 KiB, or a request over the 2 KiB maximum) and whether the caller
 * says the client is idle (bit 3); the rest is what the socket delivered.
 * Checked: the verdict is a listed code; a success stays inside the bytes
 * and the cap, its host is 1..254 bytes of canonical LDH, it is the raw
 * host's canonical form, and the raw spans sit inside the message; idle
 * changes only the bare "FE" and "FE 01". Then the input is fed the way a
 * socket delivers it: every prefix is "need more" until the verdict, and the
 * verdict (same result, same fields) from then on; and in two chunks split
 * at a point taken from the data. Prefixes are copied to the end of a heap
 * block so ASan sees any read past them. Any violation traps. Linked with
 * only src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mcsniff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

/* The sniffer never looks past the largest cap. */
#define WINDOW (MC_FRAME_MAX + 1)

static const size_t caps[8] = {0, 256, 1024, 2048, 4096, 64, 300, 2047};

static bool same(const struct mc_hello *a, const struct mc_hello *b)
{
    return memcmp(a, b, sizeof(*a)) == 0; /* the sniffer fills from a zeroed struct */
}

static void check_result(const uint8_t *p, size_t len, size_t cap, int rc, const struct mc_hello *h)
{
    CHECK(rc >= MC_E_LEGACY && rc <= MC_LEGACY);
    CHECK(mc_strerror(rc) != NULL);
    size_t eff = cap == 0 ? MC_FRAME_DEFAULT : (cap > MC_FRAME_MAX ? MC_FRAME_MAX : cap);
    if (rc <= 0)
        return;
    CHECK(h->msg_len >= 1 && h->msg_len <= len);
    if (rc == MC_LEGACY) {
        CHECK(h->kind != MC_MODERN && p[0] == 0xfe);
        CHECK(h->intent == 0 && h->suffixes == 0);
        if (h->kind != MC_LEGACY_16) {
            CHECK(h->host_len == 0 && h->msg_len == len && len <= 2);
            return;
        }
        CHECK(h->msg_len <= eff);
    } else {
        CHECK(h->kind == MC_MODERN);
        CHECK(h->msg_len <= eff);
        CHECK(h->intent >= 1 && h->intent <= 3);
        CHECK(h->addr_off + h->addr_len < h->msg_len);
        CHECK(h->host_raw_len >= 1 && h->host_raw_len <= h->addr_len);
        CHECK(h->host_raw_len <= HOSTNAME_MAX);
        const uint8_t *a = p + h->addr_off;
        CHECK(memchr(a, '\0', h->host_raw_len) == NULL);
        CHECK((h->suffixes == 0) == (h->host_raw_len == h->addr_len));
        char again[HOSTNAME_MAX + 1];
        CHECK(hostname_canon(a, h->host_raw_len, again) == h->host_len);
        CHECK(strcmp(again, h->host) == 0);
    }
    /* The host: 1..254 bytes of lowercase LDH, NUL-terminated. */
    CHECK(h->host_len >= 1 && h->host_len <= HOSTNAME_MAX - 1);
    CHECK(strlen(h->host) == h->host_len);
    for (size_t i = 0; i < h->host_len; i++) {
        char c = h->host[i];
        CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
    }
    char canon[HOSTNAME_MAX + 1];
    CHECK(hostname_canon((const uint8_t *)h->host, h->host_len, canon) == h->host_len);
}

static const uint8_t *tail_copy(uint8_t *win, const uint8_t *data, size_t k)
{
    uint8_t *p = win + WINDOW - k;
    if (k)
        memcpy(p, data, k);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t cap = caps[data[0] & 7];
    bool idle = (data[0] & 8) != 0;
    data++;
    size--;

    uint8_t *win = malloc(WINDOW);
    if (!win)
        return 0;
    size_t lim = size < WINDOW ? size : WINDOW;
    struct mc_hello whole, part, idle_h;
    const uint8_t *p = tail_copy(win, data, lim);
    int want = mc_sniff(p, lim, cap, false, &whole);
    check_result(p, lim, cap, want, &whole);

    /* idle only turns the bare FE and FE 01 into legacy pings. */
    int rc = mc_sniff(p, lim, cap, idle, &idle_h);
    check_result(p, lim, cap, rc, &idle_h);
    bool bare = (lim == 1 && p[0] == 0xfe) || (lim == 2 && p[0] == 0xfe && p[1] == 0x01);
    if (idle && bare)
        CHECK(want == MC_NEED_MORE && rc == MC_LEGACY);
    else
        CHECK(rc == want && (rc <= 0 || same(&idle_h, &whole)));

    /* Every prefix: "need more" until the verdict, the verdict after it. */
    bool decided = false;
    for (size_t k = 0; k <= lim; k++) {
        p = tail_copy(win, data, k);
        int got = mc_sniff(p, k, cap, false, &part);
        check_result(p, k, cap, got, &part);
        if (got == MC_NEED_MORE) {
            CHECK(!decided);
            continue;
        }
        decided = true;
        CHECK(got == want);
        if (got > 0)
            CHECK(same(&part, &whole));
    }
    CHECK(decided || want == MC_NEED_MORE);
    if (want > 0) {
        /* Exactly the message's bytes give the same answer. */
        p = tail_copy(win, data, whole.msg_len);
        CHECK(mc_sniff(p, whole.msg_len, cap, false, &part) == want && same(&part, &whole));
    }
    /* Two reads: the first alone is "need more" or the verdict already. */
    size_t cut = lim ? ((size_t)data[lim - 1] * 31 + lim) % (lim + 1) : 0;
    p = tail_copy(win, data, cut);
    rc = mc_sniff(p, cut, cap, false, &part);
    CHECK(rc == MC_NEED_MORE || rc == want);
    free(win);
    return 0;
}
