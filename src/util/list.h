/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * list.h: intrusive circular doubly linked list (the Linux kernel shape).
 * A struct list is embedded in the owner; the list never allocates and never
 * owns what it links. An unlinked node points at itself, so list_del() on a
 * node twice is harmless.
 */
#ifndef FERRY_UTIL_LIST_H
#define FERRY_UTIL_LIST_H

#include <stdbool.h>

#include "util/compiler.h"

struct list {
    struct list *prev, *next;
};

static inline void list_init(struct list *l)
{
    l->prev = l->next = l;
}

static inline bool list_empty(const struct list *l)
{
    return l->next == l;
}

static inline void list_add_tail(struct list *head, struct list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static inline void list_del(struct list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)

/* Iterate safely against deletion of the current node. */
#define list_for_each_safe(pos, tmp, head)                           \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
