/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * harness.h: what every unit test includes: cmocka (with the headers it
 * expects before it) and a few helpers shared by the tests. Helpers are
 * static inline so a test that does not use one is not warned about it.
 * Nothing here knows about ferry's modules.
 */
#ifndef FERRY_TESTS_UNIT_HARNESS_H
#define FERRY_TESTS_UNIT_HARNESS_H

/* cmocka.h needs these first; its block must stay after them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HARNESS_PATH_MAX 256

/* A fixed-seed xorshift64 generator: tests are deterministic, and the
 * repository bans the C library generator. */
struct harness_rng {
    uint64_t s;
};

static inline void harness_rng_init(struct harness_rng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t harness_rng_next(struct harness_rng *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return x;
}

/* A value in [0, n); n must be > 0. */
static inline uint32_t harness_rng_below(struct harness_rng *r, uint32_t n)
{
    return (uint32_t)(harness_rng_next(r) % n);
}

/* Create a fresh private directory under TMPDIR (or /tmp) into dir[cap]. */
static inline void harness_mkdtemp(char *dir, size_t cap)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    int n = snprintf(dir, cap, "%s/ferry-unit-XXXXXX", base);
    assert_true(n > 0 && (size_t)n < cap);
    assert_non_null(mkdtemp(dir));
}

/* path[cap] = dir/name */
static inline void harness_path(char *path, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(path, cap, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < cap);
}

/* Write len bytes to path, replacing the file. */
static inline void harness_write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static inline void harness_write_file(const char *path, const char *text)
{
    harness_write_bytes(path, text, strlen(text));
}

#endif
