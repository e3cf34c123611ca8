/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wanpath.c: the emulated path's parameters and what it does to one
 * packet: a random loss (a seeded splitmix64, so a run can be repeated),
 * a link that serialises packets at the rate behind a queue of bounded
 * time (tail drop), then the one-way delay with uniform jitter. Packets
 * leave in the order they came: a jittered release earlier than the one
 * before is held to it, so jitter never reorders (TCP over a path that
 * reorders would measure its reordering, not its delay).
 *
 * Pure: no I/O, no clock (the caller passes the time), no allocation.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/wan.h"
#include "util/compiler.h"
#include "util/parse.h"

void wan_conf_init(struct wan_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->queue_ns = 50ull * 1000 * 1000;
    c->seed = 1;
    c->mtu = 1500;
    c->threads = 2;
    c->gso = true;
}

uint64_t wan_prng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A decimal number (digits, an optional fraction) and the rest of s. */
static int number(const char *s, double *v, const char **rest)
{
    if (!(*s >= '0' && *s <= '9'))
        return -EINVAL;
    char *end;
    *v = strtod(s, &end);
    if (end == s || !isfinite(*v))
        return -EINVAL;
    *rest = end;
    return 0;
}

/* "25ms", "500us", "1.5ms", "2s", "0" into ns within [0, max_ns]. */
static int duration_ns(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *out)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    double v;
    const char *u;
    if (number(s, &v, &u))
        return -EINVAL;
    double scale = -1;
    for (size_t i = 0; i < ARRAY_LEN(units); i++)
        if (strcmp(u, units[i].unit) == 0)
            scale = units[i].ns;
    if (scale < 0 && *u == '\0' && v == 0)
        scale = 1; /* a bare 0 needs no unit */
    if (scale < 0)
        return -EINVAL;
    double ns = v * scale;
    if (ns < (double)min_ns || ns > (double)max_ns)
        return -ERANGE;
    *out = (uint64_t)(ns + 0.5);
    return 0;
}

/* "100mbit", "1gbit", "800kbit", "1000bit" (decimal multiples, tc's
 * words), "0" or "none" for no cap. */
static int rate_bps(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double bps;
    } units[] = {{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};
    if (strcmp(s, "none") == 0 || strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    double v;
    const char *u;
    if (number(s, &v, &u))
        return -EINVAL;
    for (size_t i = 0; i < ARRAY_LEN(units); i++) {
        if (strcmp(u, units[i].unit) != 0)
            continue;
        double bps = v * units[i].bps;
        if (bps < 8000 || bps > 100e9) /* 1 kB/s .. 100 Gbit/s */
            return -ERANGE;
        *out = (uint64_t)(bps + 0.5);
        return 0;
    }
    return -EINVAL;
}

int wan_conf_set(struct wan_conf *c, const char *name, const char *value)
{
    const uint64_t max_ns = 10ull * 1000 * 1000 * 1000; /* 10 s */
    uint64_t u;
    int rc;
    if (strcmp(name, "delay") == 0)
        return duration_ns(value, 0, max_ns, &c->delay_ns);
    if (strcmp(name, "jitter") == 0)
        return duration_ns(value, 0, max_ns, &c->jitter_ns);
    if (strcmp(name, "queue") == 0)
        return duration_ns(value, 1000, max_ns, &c->queue_ns);
    if (strcmp(name, "rate") == 0)
        return rate_bps(value, &c->rate_bps);
    if (strcmp(name, "loss") == 0) {
        double v;
        const char *pct;
        if (number(value, &v, &pct) || strcmp(pct, "%") != 0)
            return -EINVAL;
        if (v > 100)
            return -ERANGE;
        c->loss = v / 100;
        c->loss_cut = v >= 100 ? UINT64_MAX : (uint64_t)(c->loss * 18446744073709551616.0);
        return 0;
    }
    if (strcmp(name, "seed") == 0)
        return parse_u64(value, 0, UINT64_MAX, &c->seed);
    if (strcmp(name, "mtu") == 0) {
        if ((rc = parse_u64(value, 576, 9000, &u)) == 0)
            c->mtu = (unsigned)u;
        return rc;
    }
    if (strcmp(name, "threads") == 0) {
        if ((rc = parse_u64(value, 1, 2, &u)) == 0)
            c->threads = (unsigned)u;
        return rc;
    }
    if (strcmp(name, "gso") == 0) {
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return -EINVAL;
        c->gso = strcmp(value, "on") == 0;
        return 0;
    }
    return -ENOENT;
}

int wan_conf_parse(struct wan_conf *c, const char *spec, const char **bad)
{
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64], *eq;
        *bad = p;
        if (len == 0 || len >= sizeof(item))
            return -EINVAL;
        memcpy(item, p, len);
        item[len] = '\0';
        if (!(eq = strchr(item, '=')))
            return -EINVAL;
        *eq = '\0';
        int rc = wan_conf_set(c, item, eq + 1);
        if (rc)
            return rc;
        p += len;
        if (*p == ',' && *++p == '\0')
            return -EINVAL; /* a trailing comma */
    }
    *bad = NULL;
    return 0;
}

void wan_conf_describe(const struct wan_conf *c, char *out, size_t cap)
{
    char rate[64] = "no cap";
    if (c->rate_bps)
        snprintf(rate, sizeof(rate), "%.6g Mbit/s, queue %.6g ms", (double)c->rate_bps / 1e6,
                 (double)c->queue_ns / 1e6);
    snprintf(out, cap, "delay %.6g ms +- %.6g ms each way, loss %.6g %%, rate %s, MTU %u%s",
             (double)c->delay_ns / 1e6, (double)c->jitter_ns / 1e6, c->loss * 100, rate, c->mtu,
             c->gso ? "" : ", GSO off");
}

void wan_shaper_init(struct wan_shaper *s, const struct wan_conf *c, unsigned dir)
{
    memset(s, 0, sizeof(*s));
    s->conf = c;
    s->prng = c->seed ^ (0x5851f42d4c957f2dull * (dir + 1));
}

enum wan_verdict wan_shaper_admit(struct wan_shaper *s, uint64_t now_ns, size_t len,
                                  uint64_t *release_ns)
{
    const struct wan_conf *c = s->conf;
    s->in++;
    s->bytes_in += len;
    if (c->loss_cut && (c->loss_cut == UINT64_MAX || wan_prng_next(&s->prng) < c->loss_cut)) {
        s->lost++;
        return WAN_DROP_LOSS;
    }
    uint64_t depart = now_ns;
    if (c->rate_bps) {
        uint64_t start = MAX(now_ns, s->link_free_ns);
        if (start - now_ns > c->queue_ns) {
            s->tail_dropped++;
            return WAN_DROP_QUEUE;
        }
        /* the time the packet's bits take on the link (len < 2^16: no overflow) */
        uint64_t bits_ns = (uint64_t)len * 8 * 1000000000u;
        depart = s->link_free_ns = start + bits_ns / c->rate_bps;
        s->queued_ns += start - now_ns;
    }
    uint64_t delay = c->delay_ns;
    if (c->jitter_ns) {
        uint64_t span = 2 * c->jitter_ns + 1;
        uint64_t d = c->delay_ns + wan_prng_next(&s->prng) % span;
        delay = d > c->jitter_ns ? d - c->jitter_ns : 0;
    }
    uint64_t release = MAX(depart + delay, s->last_release_ns);
    s->last_release_ns = release;
    s->passed++;
    *release_ns = release;
    return WAN_PASS;
}
