/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * buf.h: fixed-capacity byte buffers and the per-worker freelist they come
 * from. A session borrows a buffer only while bytes are in flight and hands
 * it back as soon as it is empty, so an idle session holds none.
 *
 * Invariant: start <= end <= cap; the bytes [start, end) are unread.
 */
#ifndef FERRY_CORE_BUF_H
#define FERRY_CORE_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    struct buf *next; /* freelist link while pooled */
    uint32_t start, end, cap;
    uint8_t data[];
};

/* Owned by one worker; not thread-safe. */
struct buf_pool {
    struct buf *free;
    uint32_t size;     /* capacity of every buffer in the pool */
    uint32_t nfree;    /* buffers on the freelist */
    uint32_t max_free; /* beyond this many, returned buffers are freed */
    uint32_t in_use;   /* buffers lent out */
};

void buf_pool_init(struct buf_pool *p, uint32_t size, uint32_t max_free);
void buf_pool_fini(struct buf_pool *p);
/* An empty buffer, or NULL when memory is exhausted. */
struct buf *buf_get(struct buf_pool *p);
/* An empty buffer of at least cap bytes: one of the pool's when cap fits
 * in them (p->size), else a buffer of exactly cap bytes of its own, which
 * buf_put() frees rather than keeps (its capacity is not the pool's). Both
 * count as lent out (in_use). NULL when memory is exhausted. */
struct buf *buf_get_cap(struct buf_pool *p, uint32_t cap);
/* Return b (NULL is a no-op). */
void buf_put(struct buf_pool *p, struct buf *b);

static inline uint32_t buf_len(const struct buf *b)
{
    return b->end - b->start;
}

static inline uint32_t buf_room(const struct buf *b)
{
    return b->cap - b->end;
}

static inline uint8_t *buf_head(struct buf *b)
{
    return b->data + b->start;
}

static inline uint8_t *buf_tail(struct buf *b)
{
    return b->data + b->end;
}

/* Consume n bytes from the front; an emptied buffer rewinds to offset 0. */
static inline void buf_consume(struct buf *b, uint32_t n)
{
    b->start += n;
    if (b->start == b->end)
        b->start = b->end = 0;
}

/* Move unread bytes to the front so the room at the tail is maximal. */
void buf_compact(struct buf *b);

#endif
