/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * buf.c: the buffer freelist. Buffers are plain malloc blocks; the pool
 * only keeps a bounded number of them warm for reuse.
 */
#include "core/buf.h"

#include <stdlib.h>
#include <string.h>

void buf_pool_init(struct buf_pool *p, uint32_t size, uint32_t max_free)
{
    p->free = NULL;
    p->size = size;
    p->nfree = 0;
    p->max_free = max_free;
    p->in_use = 0;
}

void buf_pool_fini(struct buf_pool *p)
{
    while (p->free) {
        struct buf *b = p->free;
        p->free = b->next;
        free(b);
    }
    p->nfree = 0;
}

struct buf *buf_get(struct buf_pool *p)
{
    struct buf *b = p->free;
    if (b) {
        p->free = b->next;
        p->nfree--;
    } else {
        b = malloc(sizeof(*b) + p->size);
        if (!b)
            return NULL;
        b->cap = p->size;
    }
    b->next = NULL;
    b->start = b->end = 0;
    p->in_use++;
    return b;
}

struct buf *buf_get_cap(struct buf_pool *p, uint32_t cap)
{
    if (cap <= p->size)
        return buf_get(p);
    struct buf *b = malloc(sizeof(*b) + cap);
    if (!b)
        return NULL;
    b->next = NULL;
    b->start = b->end = 0;
    b->cap = cap;
    p->in_use++;
    return b;
}

void buf_put(struct buf_pool *p, struct buf *b)
{
    if (!b)
        return;
    p->in_use--;
    if (p->nfree >= p->max_free || b->cap != p->size) {
        free(b);
        return;
    }
    b->next = p->free;
    p->free = b;
    p->nfree++;
}

void buf_compact(struct buf *b)
{
    if (b->start == 0)
        return;
    uint32_t n = buf_len(b);
    memmove(b->data, b->data + b->start, n);
    b->start = 0;
    b->end = n;
}
