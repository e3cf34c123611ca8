/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.h: the asynchronous logger, the only room that writes to stderr or a
 * log file.
 *
 * Any thread formats its record itself (timestamp, level, text) and hands it
 * to one writer thread through a bounded lock-free queue of LOG_QUEUE_LEN
 * records. When the queue is full the record is dropped and counted; the
 * writer reports the count in-band ("log: N records dropped"). Before
 * log_start() and after log_stop(), records are written synchronously.
 */
#ifndef FERRY_LOG_LOG_H
#define FERRY_LOG_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"

#define LOG_QUEUE_LEN 8192
#define LOG_LINE_MAX  1024

enum log_level {
    LOG_DEBUG,
    LOG_INFO,
    LOG_WARN,
    LOG_ERROR,
};

extern _Atomic int log_min_level;

static inline bool log_enabled(enum log_level lvl)
{
    return (int)lvl >= atomic_load_explicit(&log_min_level, memory_order_relaxed);
}

/* "debug", "info", "warn"/"warning", "error". Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_name(enum log_level lvl);
void log_set_level(enum log_level lvl);

/* Direct records to path (appended; created 0640) or stderr when path is
 * NULL or empty, and start the writer thread. Returns 0 or -errno. */
int log_start(const char *path);
/* Open the log file again (after logrotate moved it): records queued
 * before go to the old file, later ones to the new. Returns 0, 1 when
 * logging to stderr (nothing to reopen), or -errno (the old file stays). */
int log_reopen(void);
/* Flush every queued record and stop the writer thread. */
void log_stop(void);
/* Records dropped since start because the queue was full. */
uint64_t log_dropped_total(void);

void log_write(enum log_level lvl, const char *fmt, ...) PRINTF_LIKE(2, 3);
void log_vwrite(enum log_level lvl, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);

#define log_debug(...)                         \
    do {                                       \
        if (log_enabled(LOG_DEBUG))            \
            log_write(LOG_DEBUG, __VA_ARGS__); \
    } while (0)
#define log_info(...)                         \
    do {                                      \
        if (log_enabled(LOG_INFO))            \
            log_write(LOG_INFO, __VA_ARGS__); \
    } while (0)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

/* Plain text to stdout or stderr, unformatted and synchronous: for the
 * command line (usage, --check results), never for records. */
void log_print(bool to_stderr, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
