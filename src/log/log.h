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
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "log/fields.h"
#include "util/compiler.h"

#define LOG_QUEUE_LEN  8192
#define LOG_LINE_MAX   1024 /* a text record, header included */
/* A whole record: a JSON line of escaped client-supplied names, the
 * syslog header. */
#define LOG_RECORD_MAX 4608

enum log_format {
    LOG_FMT_TEXT, /* "TIME LEVEL msg key=value ..." */
    LOG_FMT_JSON, /* {"time":...,"level":...,"msg":...,key:value...} */
};

enum log_target {
    LOG_TARGET_AUTO,   /* the file when a path is given, else stderr */
    LOG_TARGET_FILE,   /* the path (required) */
    LOG_TARGET_STDERR, /* stderr, whatever the path */
    LOG_TARGET_SYSLOG, /* RFC 5424 datagrams to syslog_address */
};

/* Where log_start_sink() sends records. */
struct log_sink {
    enum log_target target;
    const char *path;           /* the file target */
    const char *syslog_address; /* NULL or "": /dev/log; "/path", "unix:/path", "udp://IP:PORT" */
    int facility;               /* syslog facility number (3 daemon, 16..23 local0..7); 0: daemon */
};

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

/* The format of records formatted from now on (any thread, any time). */
void log_set_format(enum log_format f);
/* "daemon" or "local0".."local7" -> the facility number; 0 or -EINVAL. */
int log_facility_parse(const char *s, int *out);
/* A syslog address as log_sink.syslog_address takes it (NULL: /dev/log)
 * -> a socket address; 0 or -EINVAL. Numeric addresses only. */
int log_syslog_address(const char *s, struct sockaddr_storage *sa, socklen_t *len);
/* Start the writer thread with records going to sk's target. The syslog
 * target sends one datagram per record with MSG_DONTWAIT from the writer
 * thread; a datagram the target does not take is counted as dropped and
 * reported (to syslog and stderr) at most once per 10 s. A syslog socket
 * that does not exist yet is not an error: records are counted until it
 * does. Returns 0 or -errno (-EINVAL: a bad address, a file target
 * without a path). */
int log_start_sink(const struct log_sink *sk);
/* Direct records to path (appended; created 0640) or stderr when path is
 * NULL or empty, and start the writer thread. Returns 0 or -errno. */
int log_start(const char *path);
/* Open the log file again (after logrotate moved it): records queued
 * before go to the old file, later ones to the new. Returns 0, 1 when
 * logging to stderr or syslog (nothing to reopen), or -errno (the old file
 * stays). */
int log_reopen(void);
/* Flush every queued record and stop the writer thread. */
void log_stop(void);
/* Records dropped since start because the queue was full or the syslog
 * target did not take them. */
uint64_t log_dropped_total(void);

void log_write(enum log_level lvl, const char *fmt, ...) PRINTF_LIKE(2, 3);
void log_vwrite(enum log_level lvl, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);
/* A structured record: msg and the fields f[0..n), rendered as text
 * ("msg key=value ...") or JSON (members) per the format; msgid is the
 * RFC 5424 MSGID on the syslog target ("access"), NULL for "-". */
void log_fields(enum log_level lvl, const char *msgid, const char *msg, const struct log_field *f,
                size_t n);

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
