/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * blkcache.c: the per-thread block cache behind the libraries' allocator
 * hooks (see blkcache.h). A block is [header | payload]: the header names
 * the class (or BC_LARGE) and holds the size asked for, or, while the
 * block sits in a cache, the next cached block. Each thread's cache is a
 * thread-local array of singly linked free lists; the only lock is the one
 * that links a thread's counters into the registry at its first call and
 * unlinks them at its exit (a pthread key destructor, which also gives
 * the cached blocks back to libc).
 */
#include "util/blkcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define BC_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define BC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BC_POISON(p, n)   ((void)(p), (void)(n))
#define BC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define BC_LARGE BLKCACHE_CLASSES
#define BC_TAG   0x6b6c6263u /* "cblk": a pointer this allocator did not give is fatal */
#define BC_IDLE  0x656c6469u /* "idle": a cached block; freeing it again is fatal */

struct bc_hdr {
    alignas(max_align_t) uint32_t cls;
    uint32_t tag;
    union {
        size_t size;         /* in use: the size asked for */
        struct bc_hdr *next; /* cached: the next block of the class */
    } u;
};
_Static_assert(sizeof(struct bc_hdr) % alignof(max_align_t) == 0, "payload stays aligned");

/* One thread's counters: written only by their thread (load + store, no
 * read-modify-write), read by blkcache_stats() from any thread. */
struct bc_count {
    _Atomic uint64_t hits, misses, large, overflow;
};

struct bc_thread {
    struct bc_hdr *head[BLKCACHE_CLASSES];
    unsigned count[BLKCACHE_CLASSES];
    int state; /* 0 before the first call, 1 live, 2 after its exit */
    struct bc_count n;
    struct bc_thread *prev, *next; /* the registry */
};

static _Thread_local struct bc_thread bc_self;
static pthread_once_t bc_once = PTHREAD_ONCE_INIT;
static pthread_key_t bc_key;
static pthread_mutex_t bc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bc_thread *bc_threads;
static struct bc_count bc_gone; /* the exited threads' counters */

static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

static inline size_t class_size(unsigned c)
{
    return (size_t)32 << c;
}

static inline unsigned class_of(size_t n)
{
    if (n <= 32)
        return 0;
    if (n > BLKCACHE_MAX)
        return BC_LARGE;
    /* the smallest c with 32 << c >= n */
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(n - 1))) - 5;
}

static inline struct bc_hdr *hdr_of(void *p)
{
    struct bc_hdr *h = (struct bc_hdr *)p - 1;
    if (h->tag != BC_TAG)
        abort();
    return h;
}

static void fold(struct bc_count *to, struct bc_count *from)
{
    _Atomic uint64_t *t[] = {&to->hits, &to->misses, &to->large, &to->overflow};
    _Atomic uint64_t *f[] = {&from->hits, &from->misses, &from->large, &from->overflow};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        atomic_fetch_add_explicit(t[i], atomic_load_explicit(f[i], memory_order_relaxed),
                                  memory_order_relaxed);
}

static void thread_exit(void *arg)
{
    struct bc_thread *t = arg;
    blkcache_thread_drain();
    t->state = 2;
    pthread_mutex_lock(&bc_lock);
    fold(&bc_gone, &t->n);
    if (t->prev)
        t->prev->next = t->next;
    else
        bc_threads = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&bc_lock);
}

static void make_key(void)
{
    if (pthread_key_create(&bc_key, thread_exit))
        abort();
}

/* The calling thread's cache, or NULL once the thread has exited (its
 * other destructors still free: those blocks go straight to libc). */
static struct bc_thread *self(void)
{
    struct bc_thread *t = &bc_self;
    if (__builtin_expect(t->state == 1, 1))
        return t;
    if (t->state == 2)
        return NULL;
    pthread_once(&bc_once, make_key);
    pthread_setspecific(bc_key, t);
    pthread_mutex_lock(&bc_lock);
    t->next = bc_threads;
    if (bc_threads)
        bc_threads->prev = t;
    bc_threads = t;
    pthread_mutex_unlock(&bc_lock);
    t->state = 1;
    return t;
}

/* The payload shaped for n bytes: addressable up to n, poisoned after. */
static inline void *shape(struct bc_hdr *h, size_t n)
{
    h->u.size = n;
    if (h->cls < BC_LARGE) {
        BC_UNPOISON(h + 1, n);
        BC_POISON((char *)(h + 1) + n, class_size(h->cls) - n);
    }
    return h + 1;
}

void *blkcache_alloc(size_t n)
{
    unsigned c = class_of(n);
    struct bc_thread *t = self();
    struct bc_hdr *h;
    if (c < BC_LARGE && t && t->head[c]) {
        h = t->head[c];
        t->head[c] = h->u.next;
        t->count[c]--;
        h->tag = BC_TAG;
        bump(&t->n.hits);
        return shape(h, n);
    }
    if (c == BC_LARGE && n > SIZE_MAX - sizeof(*h)) {
        errno = ENOMEM;
        return NULL;
    }
    h = malloc(sizeof(*h) + (c < BC_LARGE ? class_size(c) : n));
    if (!h)
        return NULL;
    if (t)
        bump(c < BC_LARGE ? &t->n.misses : &t->n.large);
    h->cls = c;
    h->tag = BC_TAG;
    return shape(h, n);
}

void *blkcache_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = blkcache_alloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void blkcache_free(void *p)
{
    if (!p)
        return;
    struct bc_hdr *h = hdr_of(p);
    unsigned c = h->cls;
    struct bc_thread *t = self();
    if (c < BC_LARGE && t) {
        if (t->count[c] < BLKCACHE_KEEP) {
            BC_POISON(h + 1, class_size(c));
            h->tag = BC_IDLE;
            h->u.next = t->head[c];
            t->head[c] = h;
            t->count[c]++;
            return;
        }
        bump(&t->n.overflow);
    }
    h->tag = 0;
    free(h);
}

void *blkcache_realloc(void *p, size_t n)
{
    if (!p)
        return blkcache_alloc(n);
    if (n == 0) {
        blkcache_free(p);
        return NULL;
    }
    struct bc_hdr *h = hdr_of(p);
    unsigned c = class_of(n);
    if (c == h->cls && c < BC_LARGE)
        return shape(h, n);
    if (c == BC_LARGE && h->cls == BC_LARGE) {
        if (n > SIZE_MAX - sizeof(*h)) {
            errno = ENOMEM;
            return NULL;
        }
        struct bc_hdr *g = realloc(h, sizeof(*h) + n);
        if (!g)
            return NULL;
        g->u.size = n;
        return g + 1;
    }
    size_t keep = h->u.size < n ? h->u.size : n;
    void *q = blkcache_alloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, keep);
    blkcache_free(p);
    return q;
}

void blkcache_thread_drain(void)
{
    struct bc_thread *t = &bc_self;
    for (unsigned c = 0; c < BLKCACHE_CLASSES; c++) {
        while (t->head[c]) {
            struct bc_hdr *h = t->head[c];
            t->head[c] = h->u.next;
            h->tag = 0;
            BC_UNPOISON(h + 1, class_size(c));
            free(h);
        }
        t->count[c] = 0;
    }
}

unsigned blkcache_thread_cached(unsigned c)
{
    return c < BLKCACHE_CLASSES ? bc_self.count[c] : 0;
}

void blkcache_stats(struct blkcache_stats *st)
{
    struct bc_count sum = {0};
    pthread_mutex_lock(&bc_lock);
    fold(&sum, &bc_gone);
    for (struct bc_thread *t = bc_threads; t; t = t->next)
        fold(&sum, &t->n);
    pthread_mutex_unlock(&bc_lock);
    st->hits = atomic_load(&sum.hits);
    st->misses = atomic_load(&sum.misses);
    st->large = atomic_load(&sum.large);
    st->overflow = atomic_load(&sum.overflow);
}
