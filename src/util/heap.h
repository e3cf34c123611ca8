/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * heap.h: binary min-heap of intrusive nodes keyed by a 64-bit value. Each
 * node remembers its slot, so removal of any node is O(log n). Used by the
 * event loop for timers; knows nothing about time.
 */
#ifndef FERRY_UTIL_HEAP_H
#define FERRY_UTIL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_NONE UINT32_MAX

struct heap_node {
    uint64_t key;
    uint32_t idx; /* slot in the heap array, HEAP_NONE when not in a heap */
};

/* The heap owns only its array of pointers; nodes belong to their embedders. */
struct heap {
    struct heap_node **a;
    uint32_t len, cap;
};

void heap_init(struct heap *h);
void heap_fini(struct heap *h);
/* Returns 0, or -ENOMEM when the array cannot grow (the node is not added). */
int heap_push(struct heap *h, struct heap_node *n);
void heap_remove(struct heap *h, struct heap_node *n);
/* Re-establish order after n->key changed. */
void heap_update(struct heap *h, struct heap_node *n);

static inline struct heap_node *heap_top(const struct heap *h)
{
    return h->len ? h->a[0] : NULL;
}

static inline bool heap_node_queued(const struct heap_node *n)
{
    return n->idx != HEAP_NONE;
}

#endif
