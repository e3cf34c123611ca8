/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * msglist.h: a growing list of messages (errors or warnings), filled by
 * whoever reads a file an operator wrote (the configuration, the userlist)
 * and printed by whoever asked for the reading. No project knowledge lives
 * here, and nothing is printed or logged: the list only holds the text.
 */
#ifndef FERRY_UTIL_MSGLIST_H
#define FERRY_UTIL_MSGLIST_H

#include <stddef.h>

#include "util/compiler.h"

struct msglist {
    char **msg;
    size_t n;
};

/* Free every message and leave l empty (reusable). */
void msglist_fini(struct msglist *l);
/* Append a message (printf-style). Out of memory drops the message: the
 * caller's verdict (an error return) does not depend on the text. */
void msglist_push(struct msglist *l, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
