/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * blkcache.h: a small per-thread cache of fixed-size blocks, for the
 * libraries' allocator hooks (OpenSSL's CRYPTO_set_mem_functions, nghttp2's
 * nghttp2_mem). OpenSSL allocates a few dozen bytes per TLS record and
 * nghttp2 one item per frame; served from a per-thread free list, the
 * steady state of a tunnel reaches libc malloc no more.
 *
 * Every block carries a 16-byte header naming its size class (or "libc"
 * for the large ones) and the size asked for, so blkcache_free() and
 * blkcache_realloc() work on any block whatever thread allocated it. A
 * block freed goes to the freeing thread's cache, up to BLKCACHE_KEEP
 * blocks per class; beyond that, and at thread exit, back to libc. No
 * locks on the hot path. Under AddressSanitizer a cached block is poisoned,
 * so a use after free inside the libraries is still reported.
 */
#ifndef FERRY_UTIL_BLKCACHE_H
#define FERRY_UTIL_BLKCACHE_H

#include <stddef.h>
#include <stdint.h>

/* The size classes: 32, 64, 128, 256 and 512 bytes of payload. */
#define BLKCACHE_CLASSES 5
#define BLKCACHE_MAX     512
/* Blocks kept per class per thread; the next frees go back to libc. */
#define BLKCACHE_KEEP    256

/* Counters over all threads (the exited ones included), monotonic. */
struct blkcache_stats {
    uint64_t hits;     /* small allocations served from a cache */
    uint64_t misses;   /* small allocations that went to libc */
    uint64_t large;    /* allocations over BLKCACHE_MAX (always libc) */
    uint64_t overflow; /* small frees beyond BLKCACHE_KEEP, back to libc */
};

/* malloc(3) with the cache: n bytes aligned as malloc's, or NULL on ENOMEM.
 * n == 0 gives a unique block. */
void *blkcache_alloc(size_t n);
/* calloc(3): n * size zeroed bytes, NULL on overflow or ENOMEM. */
void *blkcache_calloc(size_t n, size_t size);
/* realloc(3) for blocks of this allocator: the first min(old, n) bytes are
 * kept, the block may move across classes and to or from libc. p == NULL is
 * blkcache_alloc(n); n == 0 frees p and returns NULL. On failure p is left
 * as it was and NULL is returned. */
void *blkcache_realloc(void *p, size_t n);
/* free(3) for blocks of this allocator (any thread's); NULL is a no-op. */
void blkcache_free(void *p);
/* Gives the calling thread's cached blocks back to libc (also done at
 * thread exit). */
void blkcache_thread_drain(void);
/* Blocks in the calling thread's cache of class c (for tests). */
unsigned blkcache_thread_cached(unsigned c);
/* Fills *st with the counters summed over all threads. */
void blkcache_stats(struct blkcache_stats *st);

#endif
