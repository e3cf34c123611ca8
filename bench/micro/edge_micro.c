/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_micro.c: micro-benchmark of edge mode's per-connection checks
 * beyond the sniffers (sniff_micro.c): signed host names (src/edge/signkey.c,
 * keyed BLAKE2b-128 over proto/signhost.c's message) and the per-source
 * check at accept (acl/limits.c: a striped table of counts and token
 * buckets keyed by address, as edge_flood.c uses it). Nanoseconds per
 * operation against EDGE.md's reference figures: 820 ns to sign and 840 ns
 * to verify (HMAC), 220 ns per bucket check. Built and run by
 * `make micro-bench`, never by `make test`: speed is measured, not
 * asserted. Each figure is the median of 7 runs of about 50 ms each.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "acl/limits.h"
#include "crypto/fcrypto.h"
#include "edge/signkey.h"
#include "proto/signhost.h"

static volatile size_t sink;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct signkey_ring ring;
static struct limits lim;
static struct addr sources[1024];
static const char host[] = "play.server.com";
static char token_host[SIGNHOST_TOKEN_LEN + 1 + sizeof(host)];
static struct signhost hop;
static uint64_t t_now = 1767225600; /* unix seconds of the signatures */

static void op_sign(size_t i)
{
    hop.time = t_now + i; /* a new message each time */
    sink += (size_t)signkey_sign(&ring, &hop, host, sizeof(host) - 1) + hop.tag[0];
}

/* Parse the token label and verify it: what a token route does per connection. */
static void op_verify(size_t i)
{
    struct signhost sh;
    (void)i;
    if (signhost_parse_token(token_host, strlen(token_host), &sh) != 1)
        return;
    sink += (size_t)signkey_verify(&ring, &sh, token_host + sh.keep, strlen(token_host + sh.keep),
                                   t_now, 10, 30 * 86400);
}

/* The same with an unknown key id: the same work (a dummy key), a refusal. */
static void op_verify_unknown(size_t i)
{
    struct signhost sh;
    (void)i;
    if (signhost_parse_token(token_host, strlen(token_host), &sh) != 1)
        return;
    sh.kid = 7;
    sink += (size_t)signkey_verify(&ring, &sh, token_host + sh.keep, strlen(token_host + sh.keep),
                                   t_now, 10, 30 * 86400);
}

/* One source's check at accept and its release at close, over 1024
 * sources (a cap and a rate, as per_source_connections and
 * per_source_rate set them). */
static void op_bucket(size_t i)
{
    bool log, tracked;
    const struct addr *a = &sources[i & 1023];
    uint64_t us = (uint64_t)i; /* a microsecond apart: the buckets refill */
    enum limits_verdict v = limits_ip_admit(&lim, a, us, 64, 1000000, 2000000, &log, &tracked);
    if (v == LIMITS_OK && tracked)
        limits_ip_release(&lim, a);
    sink += (size_t)v;
}

static double run_ns(void (*op)(size_t))
{
    size_t iters = 1000;
    for (;;) {
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < iters; i++)
            op(i);
        uint64_t dt = now_ns() - t0;
        if (dt > 50000000u)
            return (double)dt / (double)iters;
        iters *= dt < 5000000u ? 10 : 2;
    }
}

static double median7(void (*op)(size_t))
{
    double v[7];
    for (int i = 0; i < 7; i++) {
        v[i] = run_ns(op);
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    return v[3];
}

/* A keyring of one active key (id 1), a hop signature to sign, a token
 * for host to verify, the sources and the table. 0, or -1 (told). */
static int setup(void)
{
    if (fcrypto_init() || limits_init(&lim, 65536)) {
        fputs("edge_micro: cannot initialise libsodium or the limits table\n", stderr);
        return -1;
    }
    ring.state[1] = SIGNKEY_ACTIVE;
    ring.nverify = 1;
    for (int i = 0; i < SIGNKEY_LEN; i++) {
        ring.key[1][i] = (uint8_t)(i * 7 + 3);
        ring.dummy[i] = (uint8_t)(i * 11 + 5);
    }
    hop.form = SIGNHOST_HOP;
    hop.kid = 1;
    addr_parse_ip("198.51.100.7", 40000, &hop.client);
    struct signhost tok = {.form = SIGNHOST_TOKEN, .kid = 1, .time = t_now + 86400};
    if (signkey_sign(&ring, &tok, host, sizeof(host) - 1)) {
        fputs("edge_micro: the key does not sign\n", stderr);
        return -1;
    }
    char label[SIGNHOST_TOKEN_LEN + 1];
    signhost_format_token(tok.kid, tok.time, tok.tag, label);
    snprintf(token_host, sizeof(token_host), "%s.%s", label, host);
    struct signhost sh;
    if (signhost_parse_token(token_host, strlen(token_host), &sh) != 1 ||
        signkey_verify(&ring, &sh, host, sizeof(host) - 1, t_now, 10, 30 * 86400) != SIGNKEY_OK) {
        fputs("edge_micro: the token does not verify\n", stderr);
        return -1;
    }
    for (int i = 0; i < 1024; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "203.0.%d.%d", i >> 8, i & 255);
        addr_parse_ip(ip, 0, &sources[i]);
    }
    return 0;
}

int main(void)
{
    static const struct {
        const char *name;
        void (*op)(size_t);
        double ref;
    } ops[] = {
        {"sign hop (BLAKE2b-128)", op_sign, 820},
        {"parse + verify token", op_verify, 840},
        {"parse + verify token, unknown key id", op_verify_unknown, 840},
        {"per-source check at accept + release", op_bucket, 220},
    };
    if (setup())
        return 1;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        printf("%-42s %8.1f ns/op  (EDGE.md reference: %.0f ns)\n", ops[i].name, median7(ops[i].op),
               ops[i].ref);
    limits_fini(&lim);
    return 0;
}
