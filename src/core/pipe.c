/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pipe.c: pipe pool. Creating a pipe costs two fds and a syscall; reusing
 * one costs nothing, so a worker keeps a few warm.
 */
#include "core/pipe.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

void pipe_pool_init(struct pipe_pool *p, uint32_t size, uint32_t max_free)
{
    p->free = NULL;
    p->nfree = 0;
    p->max_free = max_free;
    p->size = size;
    p->in_use = 0;
}

static void pipe_close(struct pipe_pair *pp)
{
    close(pp->rfd);
    close(pp->wfd);
    free(pp);
}

void pipe_pool_fini(struct pipe_pool *p)
{
    while (p->free) {
        struct pipe_pair *pp = p->free;
        p->free = pp->next;
        pipe_close(pp);
    }
    p->nfree = 0;
}

struct pipe_pair *pipe_get(struct pipe_pool *p)
{
    struct pipe_pair *pp = p->free;
    if (pp) {
        p->free = pp->next;
        p->nfree--;
    } else {
        int fds[2];
        pp = malloc(sizeof(*pp));
        if (!pp)
            return NULL;
        if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0) {
            free(pp);
            return NULL;
        }
        pp->rfd = fds[0];
        pp->wfd = fds[1];
        /* A failure here (e.g. over /proc/sys/fs/pipe-max-size) leaves the
         * default size, which works, only with more syscalls. */
        if (p->size)
            (void)fcntl(pp->wfd, F_SETPIPE_SZ, (int)p->size);
    }
    pp->next = NULL;
    pp->len = 0;
    p->in_use++;
    return pp;
}

void pipe_put(struct pipe_pool *p, struct pipe_pair *pp)
{
    if (!pp)
        return;
    p->in_use--;
    if (pp->len != 0 || p->nfree >= p->max_free) {
        pipe_close(pp);
        return;
    }
    pp->next = p->free;
    p->free = pp;
    p->nfree++;
}
