/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http2.c: the [http2] section, the knobs of the HTTP/2 inbound
 * (relay/h2conn.c): stream limits, header list size, flow-control windows
 * and budgets, and the per-second abuse budgets. Every key is a limit: a
 * malformed or too small value keeps the default and a too large one
 * clamps, each with a warning naming FILE:LINE (as [udp] and [limits]
 * keys do), so a typo never keeps a proxy from starting. It knows nothing
 * of HTTP/2 itself.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "util/msglist.h"
#include "util/parse.h"

#define KIB      1024u
#define MIB      (1024u * 1024u)
#define HTTP2_MS 2 /* a key's value is a duration, held in ms */

static const struct http2_key {
    const char *name;
    size_t off;
    uint32_t def, min, max;
    uint8_t size; /* 1 (true): a size (k, m suffixes) rather than a count; HTTP2_MS: a duration */
} keys[] = {
    {"max_concurrent_streams", offsetof(struct config_http2, max_streams), 1024, 1, 65535, false},
    {"max_header_list", offsetof(struct config_http2, max_header_list), 64 * KIB, 1 * KIB, 1 * MIB,
     true},
    {"window", offsetof(struct config_http2, window), 256 * KIB, 16 * KIB, 16 * MIB, true},
    {"window_max", offsetof(struct config_http2, window_max), 16 * MIB, 16 * KIB, 1024 * MIB, true},
    {"connection_budget", offsetof(struct config_http2, conn_budget), 4 * MIB, 64 * KIB, 1024 * MIB,
     true},
    {"connection_budget_max", offsetof(struct config_http2, conn_budget_max), 64 * MIB, 64 * KIB,
     1024 * MIB, true},
    {"worker_budget", offsetof(struct config_http2, worker_budget), 1024 * MIB, 1 * MIB, 4095 * MIB,
     true},
    {"resets_per_second", offsetof(struct config_http2, reset_rate), 200, 1, 1000000, false},
    {"pings_per_second", offsetof(struct config_http2, ping_rate), 100, 1, 1000000, false},
    {"settings_per_second", offsetof(struct config_http2, settings_rate), 100, 1, 1000000, false},
    {"empty_data_per_second", offsetof(struct config_http2, empty_data_rate), 100, 1, 1000000,
     false},
    {"reverse_grace", offsetof(struct config_http2, reverse_grace_ms), 30000, 0, 3600000, HTTP2_MS},
};

static uint32_t *field(struct config_http2 *h, const struct http2_key *k)
{
    return (uint32_t *)((char *)h + k->off);
}

void config_http2_defaults(struct config_http2 *h)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        *field(h, &keys[i]) = keys[i].def;
}

bool config_http2_key(struct config *c, const char *key, const char *v, const char *file, int line)
{
    const struct http2_key *k = NULL;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !k; i++)
        if (strcmp(keys[i].name, key) == 0)
            k = &keys[i];
    if (!k)
        return false;
    uint32_t *f = field(&c->http2, k);
    uint64_t n;
    int rc = k->size == HTTP2_MS ? parse_duration_ms(v, 0, UINT64_MAX, &n)
             : k->size           ? parse_size(v, 0, UINT64_MAX, &n)
                                 : parse_u64(v, 0, UINT64_MAX, &n);
    if (rc == -ERANGE) {
        rc = 0; /* more than 64 bits hold: far above the maximum */
        n = UINT64_MAX;
    }
    if (rc || n < k->min) {
        msglist_push(&c->warnings,
                     "%s:%d: http2.%s: '%s' is not valid (expected %u..%u%s); using the default %u",
                     file, line, key, v, k->min, k->max,
                     k->size == HTTP2_MS ? " ms"
                     : k->size           ? " bytes"
                                         : "",
                     *f);
        return true;
    }
    if (n > k->max) {
        msglist_push(&c->warnings, "%s:%d: http2.%s: '%s' is above the maximum; using %u", file,
                     line, key, v, k->max);
        n = k->max;
    }
    *f = (uint32_t)n;
    return true;
}

void config_http2_check(struct config *c)
{
    struct config_http2 *h = &c->http2;
    if (h->window_max < h->window)
        h->window_max = h->window;
    if (h->conn_budget_max < h->conn_budget)
        h->conn_budget_max = h->conn_budget;
    /* The connection window is one int32 (RFC 9113 6.9.1). */
    if (h->conn_budget_max > 0x7fffffffu)
        h->conn_budget_max = 0x7fffffffu;
}
