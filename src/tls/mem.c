/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mem.c: OpenSSL's allocations through the per-thread block cache
 * (util/blkcache.h). OpenSSL 3.0 allocates a small WPACKET_SUB (and more)
 * for every TLS record it writes; served from the cache, a busy tunnel's
 * records no longer reach libc malloc.
 */
#include <openssl/crypto.h>

#include "tls/tls.h"
#include "util/blkcache.h"

static void *mem_alloc(size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    return blkcache_alloc(n);
}

static void *mem_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    return blkcache_realloc(p, n);
}

static void mem_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    blkcache_free(p);
}

bool tls_mem_init(void)
{
    return CRYPTO_set_mem_functions(mem_alloc, mem_realloc, mem_free) == 1;
}
