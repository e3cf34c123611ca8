/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pipe.h: a per-worker pool of kernel pipes for splice(). A session takes a
 * pipe while spliced bytes are in flight and returns it once the pipe is
 * empty; a pipe still holding bytes is never pooled.
 */
#ifndef FERRY_CORE_PIPE_H
#define FERRY_CORE_PIPE_H

#include <stdint.h>

struct pipe_pair {
    struct pipe_pair *next;
    int rfd, wfd;
    uint32_t len; /* bytes inside the pipe */
};

/* Owned by one worker; not thread-safe. */
struct pipe_pool {
    struct pipe_pair *free;
    uint32_t nfree, max_free;
    uint32_t size; /* requested pipe capacity (F_SETPIPE_SZ), 0 = kernel default */
    uint32_t in_use;
};

void pipe_pool_init(struct pipe_pool *p, uint32_t size, uint32_t max_free);
void pipe_pool_fini(struct pipe_pool *p);
/* An empty pipe, or NULL with errno set (EMFILE...): callers fall back to
 * user-space buffers. */
struct pipe_pair *pipe_get(struct pipe_pool *p);
/* Return a pipe; a non-empty one is closed, not pooled. NULL is a no-op. */
void pipe_put(struct pipe_pool *p, struct pipe_pair *pp);

#endif
