/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * msglist.c: the message list behind configuration errors and warnings.
 */
#include "util/msglist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void msglist_fini(struct msglist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->msg[i]);
    free(l->msg);
    l->msg = NULL;
    l->n = 0;
}

void msglist_push(struct msglist *l, const char *fmt, ...)
{
    char *m = NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&m, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    char **v = realloc(l->msg, (l->n + 1) * sizeof(*v));
    if (!v) {
        free(m);
        return;
    }
    l->msg = v;
    l->msg[l->n++] = m;
}
