/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * alloccount.c: an LD_PRELOAD allocation counter for the benchmarks
 * (bench/alloc_per_datagram.sh). Every malloc, calloc, realloc,
 * posix_memalign, aligned_alloc and memalign is counted, and every free of
 * a non-NULL pointer, with relaxed atomics, then handed to glibc's own
 * (__libc_*), so nothing else changes. With ALLOC_COUNT_DIR set, the counts
 * live in a file DIR/alloc.PID mapped shared (two 64-bit counters: allocations,
 * frees), readable while the process runs and after it ended; without it,
 * nothing is written. Allocations before the constructor ran are counted
 * in the process only.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t a, size_t n);
extern void __libc_free(void *p);

struct counts {
    _Atomic uint64_t allocs, frees;
};

static struct counts local;
static struct counts *volatile out = &local;

__attribute__((constructor)) static void alloccount_init(void)
{
    const char *dir = getenv("ALLOC_COUNT_DIR");
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/alloc.%ld", dir, (long)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, sizeof(struct counts)) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct counts *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    atomic_store(&m->allocs, atomic_load(&local.allocs));
    atomic_store(&m->frees, atomic_load(&local.frees));
    out = m;
}

static void *counted(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&out->allocs, 1, memory_order_relaxed);
    return p;
}

void *malloc(size_t n)
{
    return counted(__libc_malloc(n));
}

void *calloc(size_t n, size_t m)
{
    return counted(__libc_calloc(n, m));
}

void *realloc(void *p, size_t n)
{
    return counted(__libc_realloc(p, n));
}

void *memalign(size_t a, size_t n)
{
    return counted(__libc_memalign(a, n));
}

void *aligned_alloc(size_t a, size_t n)
{
    return counted(__libc_memalign(a, n));
}

int posix_memalign(void **pp, size_t a, size_t n)
{
    void *p = counted(__libc_memalign(a, n));
    if (!p)
        return 12; /* ENOMEM */
    *pp = p;
    return 0;
}

void free(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&out->frees, 1, memory_order_relaxed);
    __libc_free(p);
}
