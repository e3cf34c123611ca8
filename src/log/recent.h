/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent.h: the last LOG_RECENT_N warning and error messages, kept in
 * memory for the status page (admin/). log.c notes each one as it is
 * written; a reader copies them out. A small mutex guards the ring: it is
 * taken only for warnings and errors, never for the access log or on the
 * data path.
 */
#ifndef FERRY_LOG_RECENT_H
#define FERRY_LOG_RECENT_H

#include <stddef.h>
#include <stdint.h>

#include "log/log.h"

#define LOG_RECENT_N   32
#define LOG_RECENT_LEN 240 /* bytes of a message kept (longer ones are cut) */

struct log_recent {
    int64_t time; /* wall clock, seconds */
    enum log_level level;
    uint64_t seq; /* 1, 2, ... in the order they were noted */
    char msg[LOG_RECENT_LEN];
};

/* Keep msg (a warning or an error) as the newest entry. Any thread. */
void log_recent_note(enum log_level lvl, const char *msg);
/* Copy up to max entries, newest first, into out; returns how many. */
size_t log_recent_copy(struct log_recent *out, size_t max);

#endif
