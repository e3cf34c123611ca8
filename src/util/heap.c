/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * heap.c: the binary min-heap behind timers. Pure data structure: it never
 * looks at the clock and never calls back.
 */
#include "util/heap.h"

#include <errno.h>
#include <stdlib.h>

void heap_init(struct heap *h)
{
    h->a = NULL;
    h->len = h->cap = 0;
}

void heap_fini(struct heap *h)
{
    for (uint32_t i = 0; i < h->len; i++)
        h->a[i]->idx = HEAP_NONE;
    free(h->a);
    heap_init(h);
}

static void heap_set(struct heap *h, uint32_t i, struct heap_node *n)
{
    h->a[i] = n;
    n->idx = i;
}

static void heap_sift_up(struct heap *h, uint32_t i)
{
    struct heap_node *n = h->a[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (h->a[parent]->key <= n->key)
            break;
        heap_set(h, i, h->a[parent]);
        i = parent;
    }
    heap_set(h, i, n);
}

static void heap_sift_down(struct heap *h, uint32_t i)
{
    struct heap_node *n = h->a[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= h->len)
            break;
        if (child + 1 < h->len && h->a[child + 1]->key < h->a[child]->key)
            child++;
        if (n->key <= h->a[child]->key)
            break;
        heap_set(h, i, h->a[child]);
        i = child;
    }
    heap_set(h, i, n);
}

int heap_push(struct heap *h, struct heap_node *n)
{
    if (h->len == h->cap) {
        uint32_t cap = h->cap ? h->cap * 2 : 64;
        struct heap_node **a = realloc(h->a, (size_t)cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        h->a = a;
        h->cap = cap;
    }
    heap_set(h, h->len++, n);
    heap_sift_up(h, n->idx);
    return 0;
}

void heap_remove(struct heap *h, struct heap_node *n)
{
    uint32_t i = n->idx;
    if (i == HEAP_NONE)
        return;
    n->idx = HEAP_NONE;
    struct heap_node *last = h->a[--h->len];
    if (last == n)
        return;
    heap_set(h, i, last);
    heap_update(h, last);
}

void heap_update(struct heap *h, struct heap_node *n)
{
    uint32_t i = n->idx;
    if (i > 0 && h->a[(i - 1) / 2]->key > n->key)
        heap_sift_up(h, i);
    else
        heap_sift_down(h, i);
}
