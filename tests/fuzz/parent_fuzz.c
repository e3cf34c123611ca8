/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent_fuzz.c: libFuzzer harness for the client side of a parent proxy's
 * handshake (proto/parent).
 *
 * The first byte of an input picks the dialect (SOCKS5, SOCKS4, HTTP),
 * the command, whether credentials are sent and whether the destination
 * is a name or an address; the rest is what the parent answers. The
 * machine is driven three ways: the answer fed whole, one byte at a time,
 * and in two chunks cut at a point taken from the data, each time sending
 * whatever is pending before feeding. All three must end in the same
 * state, failure and BND, having consumed the same number of bytes, never
 * more than given, and nothing once the handshake is over. Any violation
 * traps. Linked with only src/proto, util/addr and util/parse.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/parent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

struct run {
    enum parent_state st;
    uint8_t fail;
    size_t used;
    bool has_bnd;
    struct addr bnd;
};

static bool start(struct parent_hs *h, uint8_t sel)
{
    enum parent_proto proto = (enum parent_proto)((sel & 3) % 3);
    uint8_t cmd =
        (proto == PARENT_SOCKS5 && (sel & 0x40)) ? PARENT_CMD_UDP_ASSOCIATE : PARENT_CMD_CONNECT;
    bool creds = sel & 0x08;
    struct addr ip;
    memset(&ip, 0, sizeof(ip));
    if (sel & 0x20) {
        ip.family = AF_INET6;
        ip.ip[15] = 1;
    } else {
        ip.family = AF_INET;
        ip.ip[0] = 127;
        ip.ip[3] = 1;
    }
    const char *name = (sel & 0x10) ? "example.org" : NULL;
    int rc =
        parent_init(h, proto, cmd, creds ? "user" : NULL, creds ? "pass" : NULL, name, &ip, 443);
    return rc == 0;
}

/* Send everything pending, then feed p[0..len): the bytes consumed. */
static size_t step(struct parent_hs *h, const uint8_t *p, size_t len)
{
    size_t used = 0;
    for (;;) {
        const uint8_t *out;
        size_t n = parent_pending(h, &out);
        if (n) {
            CHECK(out >= h->wire && out + n <= h->wire + sizeof(h->wire));
            CHECK(parent_feed(h, p + used, len - used) == 0 || used == len);
            parent_sent(h, n);
        }
        if (used == len || parent_state(h) != PARENT_MORE)
            break;
        size_t k = parent_feed(h, p + used, len - used);
        CHECK(k <= len - used);
        used += k;
        if (k == 0)
            break;
    }
    return used;
}

static void finish(struct parent_hs *h, size_t used, struct run *r)
{
    r->st = parent_state(h);
    r->fail = h->fail;
    r->used = used;
    r->has_bnd = parent_bnd(h, &r->bnd);
    CHECK((r->st == PARENT_FAILED) == (r->fail != PARENT_FAIL_NONE));
    CHECK(r->st != PARENT_FAILED || h->reason[0] != '\0');
    if (r->st != PARENT_MORE) {
        uint8_t x = 0;
        CHECK(parent_feed(h, &x, 1) == 0);
        const uint8_t *out;
        CHECK(parent_pending(h, &out) == 0);
    }
}

static bool same(const struct run *a, const struct run *b)
{
    return a->st == b->st && a->fail == b->fail && a->used == b->used && a->has_bnd == b->has_bnd &&
           (!a->has_bnd || addr_equal(&a->bnd, &b->bnd));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    struct parent_hs h;
    struct run whole, bytes, two;

    if (!start(&h, sel))
        return 0;
    finish(&h, step(&h, p, len), &whole);
    CHECK(whole.used <= len);

    CHECK(start(&h, sel));
    size_t used = 0;
    while (used < len) {
        size_t k = step(&h, p + used, 1);
        used += k;
        if (k == 0)
            break;
    }
    step(&h, p + used, 0);
    finish(&h, used, &bytes);
    CHECK(same(&whole, &bytes));

    size_t cut = len ? ((size_t)data[size - 1] * 31 + data[0]) % (len + 1) : 0;
    CHECK(start(&h, sel));
    used = step(&h, p, cut);
    if (used == cut)
        used += step(&h, p + cut, len - cut);
    finish(&h, used, &two);
    CHECK(same(&whole, &two));
    return 0;
}
