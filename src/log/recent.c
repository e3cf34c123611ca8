/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * recent.c: the ring of recent warnings and errors (recent.h). Fixed
 * memory (LOG_RECENT_N entries); the oldest entry is overwritten.
 */
#include "log/recent.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

static struct {
    pthread_mutex_t mu;
    struct log_recent ring[LOG_RECENT_N];
    uint64_t seq; /* entries noted so far */
} rc = {.mu = PTHREAD_MUTEX_INITIALIZER};

void log_recent_note(enum log_level lvl, const char *msg)
{
    if (lvl < LOG_WARN)
        return;
    time_t now = time(NULL);
    pthread_mutex_lock(&rc.mu);
    struct log_recent *e = &rc.ring[rc.seq % LOG_RECENT_N];
    e->seq = ++rc.seq;
    e->time = (int64_t)now;
    e->level = lvl;
    size_t n = strnlen(msg, sizeof(e->msg) - 1);
    memcpy(e->msg, msg, n);
    e->msg[n] = '\0';
    pthread_mutex_unlock(&rc.mu);
}

size_t log_recent_copy(struct log_recent *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&rc.mu);
    for (uint64_t s = rc.seq; s > 0 && n < max && rc.seq - s < LOG_RECENT_N; s--)
        out[n++] = rc.ring[(s - 1) % LOG_RECENT_N];
    pthread_mutex_unlock(&rc.mu);
    return n;
}
