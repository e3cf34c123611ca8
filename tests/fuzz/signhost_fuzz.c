/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signhost_fuzz.c: libFuzzer harness for the signed host name forms of
 * proto/signhost.
 *
 * The input is read both as a Minecraft address (a hop signature at its
 * end) and as a host name (a token as its first label), from exact-size
 * heap copies so ASan sees any read past them. Checked: the verdicts are
 * listed codes; a hop signature parsed is written back by
 * signhost_format_hop() to a field that parses to the same fields (kid,
 * time, client, tag) with its mark where keep says; a token parsed is
 * written back by signhost_format_token() to the same 36 characters; the
 * message of either fits SIGNHOST_MSG_MAX. Any violation traps. Linked
 * with only src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/signhost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static void check_hop(const uint8_t *p, size_t n)
{
    struct signhost sh;
    int rc = signhost_parse_hop(p, n, &sh);
    CHECK(rc >= -1 && rc <= 1);
    if (rc != 1)
        return;
    CHECK(sh.form == SIGNHOST_HOP && sh.kid < SIGNHOST_KIDS && sh.keep < n);
    CHECK(memcmp(p + sh.keep, "\0ferry1\0", 8) == 0);
    uint8_t out[SIGNHOST_HOP_MAX];
    size_t m = signhost_format_hop(&sh, out, sizeof(out));
    CHECK(m > 8);
    struct signhost back;
    CHECK(signhost_parse_hop(out, m, &back) == 1);
    CHECK(back.kid == sh.kid && back.time == sh.time && back.keep == 0);
    CHECK(addr_equal(&back.client, &sh.client));
    CHECK(memcmp(back.tag, sh.tag, SIGNHOST_TAG_LEN) == 0);
    uint8_t msg[SIGNHOST_MSG_MAX];
    CHECK(signhost_message(&sh, (const char *)p, sh.keep > 255 ? 255 : sh.keep, msg, sizeof(msg)) >
          0);
}

static void check_token(const char *h, size_t n)
{
    struct signhost sh;
    int rc = signhost_parse_token(h, n, &sh);
    CHECK(rc == 0 || rc == 1);
    if (!rc)
        return;
    CHECK(sh.form == SIGNHOST_TOKEN && sh.kid < SIGNHOST_KIDS && sh.keep < n);
    CHECK(sh.time < (1ull << 40));
    char label[SIGNHOST_TOKEN_LEN + 1];
    signhost_format_token(sh.kid, sh.time, sh.tag, label);
    CHECK(memcmp(label, h, SIGNHOST_TOKEN_LEN) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    check_hop(copy, size);
    check_token((const char *)copy, size);
    free(copy);
    return 0;
}
