/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log.c: bounded multi-producer queue (Vyukov's array queue: one CAS per
 * record, no lock) feeding one writer thread that batches records into few
 * write() calls. A producer never blocks: a full queue costs one dropped
 * record and one atomic increment. The writer sleeps on an eventfd and is
 * woken only when it said it was going to sleep.
 */
#include "log/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

_Atomic int log_min_level = LOG_INFO;

struct log_rec {
    size_t len;
    char text[];
};

struct log_cell {
    _Atomic size_t seq;
    struct log_rec *rec;
};

static struct {
    struct log_cell cells[LOG_QUEUE_LEN];
    _Alignas(CACHELINE) _Atomic size_t head; /* producers */
    _Alignas(CACHELINE) _Atomic size_t tail; /* the writer */
    _Alignas(CACHELINE) _Atomic bool sleeping;
    _Atomic uint64_t dropped;
    _Atomic uint64_t dropped_total;
    _Atomic bool running;
    _Atomic bool stop;
    int fd;
    int efd;
    _Atomic int next_fd; /* a reopened log file the writer switches to */
    char *path;          /* NULL: stderr */
    pthread_t thread;
} q = {.fd = STDERR_FILENO, .efd = -1, .next_fd = -1};

#define LOG_BATCH_MS 10

static const char *const level_names[] = {"debug", "info", "warn", "error"};

const char *log_level_name(enum log_level lvl)
{
    return (unsigned)lvl < 4 ? level_names[lvl] : "?";
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

void log_set_level(enum log_level lvl)
{
    atomic_store(&log_min_level, (int)lvl);
}

uint64_t log_dropped_total(void)
{
    return atomic_load(&q.dropped_total);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report a failing log sink */
        }
        p += w;
        n -= (size_t)w;
    }
}

static bool enqueue(struct log_rec *r)
{
    size_t pos = atomic_load_explicit(&q.head, memory_order_relaxed);
    for (;;) {
        struct log_cell *c = &q.cells[pos & (LOG_QUEUE_LEN - 1)];
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&q.head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                c->rec = r;
                atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
                return true;
            }
        } else if (dif < 0) {
            return false; /* full */
        } else {
            pos = atomic_load_explicit(&q.head, memory_order_relaxed);
        }
    }
}

static struct log_rec *dequeue(void)
{
    size_t pos = atomic_load_explicit(&q.tail, memory_order_relaxed);
    struct log_cell *c = &q.cells[pos & (LOG_QUEUE_LEN - 1)];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    if ((intptr_t)seq - (intptr_t)(pos + 1) < 0)
        return NULL; /* empty */
    struct log_rec *r = c->rec;
    atomic_store_explicit(&q.tail, pos + 1, memory_order_relaxed);
    atomic_store_explicit(&c->seq, pos + LOG_QUEUE_LEN, memory_order_release);
    return r;
}

/* "2026-11-29T23:00:51.123Z": the date part is cached per thread and
 * rebuilt once a second. */
static size_t format_time(char *out, size_t cap)
{
    static _Thread_local time_t cached_sec = -1;
    static _Thread_local char cached[32];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
        cached_sec = ts.tv_sec;
    }
    int n = snprintf(out, cap, "%s.%03ldZ ", cached, ts.tv_nsec / 1000000);
    return n > 0 ? (size_t)n : 0;
}

static void log_wake_writer(void)
{
    if (atomic_load_explicit(&q.sleeping, memory_order_relaxed) &&
        atomic_exchange(&q.sleeping, false)) {
        uint64_t one = 1;
        ssize_t rc = write(q.efd, &one, sizeof(one));
        (void)rc;
    }
}

void log_vwrite(enum log_level lvl, const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];
    size_t n = format_time(line, sizeof(line));
    int m = snprintf(line + n, sizeof(line) - n, "%-5s ", log_level_name(lvl));
    n += m > 0 ? (size_t)m : 0;
    m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    if (m < 0)
        m = 0;
    n += (size_t)m;
    if (n >= sizeof(line) - 1) {
        n = sizeof(line) - 5;
        memcpy(line + n, "...", 3); /* a truncated record says so */
        n += 3;
    }
    line[n++] = '\n';

    if (!atomic_load_explicit(&q.running, memory_order_acquire)) {
        write_all(q.fd, line, n);
        return;
    }
    struct log_rec *r = malloc(sizeof(*r) + n);
    if (!r || (memcpy(r->text, line, n), r->len = n, !enqueue(r))) {
        free(r);
        atomic_fetch_add_explicit(&q.dropped, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&q.dropped_total, 1, memory_order_relaxed);
        return;
    }
    log_wake_writer();
}

void log_write(enum log_level lvl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(lvl, fmt, ap);
    va_end(ap);
}

void log_print(bool to_stderr, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = sizeof(line) - 1;
    write_all(to_stderr ? STDERR_FILENO : STDOUT_FILENO, line, (size_t)n);
}

/* Drain the queue into batches of up to 64 KiB per write(). Returns the
 * number of records written. */
static size_t writer_drain(char *batch, size_t cap)
{
    size_t used = 0, count = 0;
    struct log_rec *r;
    while ((r = dequeue())) {
        count++;
        if (used + r->len > cap) {
            write_all(q.fd, batch, used);
            used = 0;
        }
        if (r->len > cap) {
            write_all(q.fd, r->text, r->len);
        } else {
            memcpy(batch + used, r->text, r->len);
            used += r->len;
        }
        free(r);
    }
    uint64_t lost = atomic_exchange(&q.dropped, 0);
    if (lost) {
        char line[160];
        size_t n = format_time(line, sizeof(line));
        int m = snprintf(line + n, sizeof(line) - n,
                         "warn  log: %llu records dropped (queue of %d full)\n",
                         (unsigned long long)lost, LOG_QUEUE_LEN);
        if (m > 0) {
            if (used + n + (size_t)m > cap) {
                write_all(q.fd, batch, used); /* make room: the count must not be lost */
                used = 0;
            }
            memcpy(batch + used, line, n + (size_t)m);
            used += n + (size_t)m;
        }
    }
    if (used)
        write_all(q.fd, batch, used);
    return count;
}

static bool dequeue_peek_nonempty(void)
{
    size_t pos = atomic_load_explicit(&q.tail, memory_order_relaxed);
    struct log_cell *c = &q.cells[pos & (LOG_QUEUE_LEN - 1)];
    return atomic_load_explicit(&c->seq, memory_order_acquire) == pos + 1;
}

/* Switch to a reopened file: what was queued before goes to the old one. */
static void writer_switch(char *batch, size_t cap)
{
    int nfd = atomic_exchange(&q.next_fd, -1);
    if (nfd < 0)
        return;
    writer_drain(batch, cap);
    if (q.fd != STDERR_FILENO)
        close(q.fd);
    q.fd = nfd;
    /* Said here, so the line opens the new file whatever the timing. */
    char line[160];
    size_t n = format_time(line, sizeof(line));
    int m = snprintf(line + n, sizeof(line) - n, "info  log: file reopened (SIGUSR1)\n");
    if (m > 0)
        write_all(q.fd, line, n + (size_t)m);
}

static void *writer_main(void *arg)
{
    (void)arg;
    static char batch[65536];
    for (;;) {
        writer_switch(batch, sizeof(batch));
        size_t n = writer_drain(batch, sizeof(batch));
        if (atomic_load(&q.stop))
            break;
        if (n) {
            /* Busy: collect for a while without asking producers to wake
             * us, so a steady stream costs one write() per interval instead
             * of an eventfd write and a wakeup per record. The queue holds
             * LOG_QUEUE_LEN records; that is 800,000 records/s at 10 ms. */
            struct timespec ts = {0, LOG_BATCH_MS * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        atomic_store(&q.sleeping, true);
        /* Re-check after announcing sleep: a producer that enqueued before
         * seeing the flag would not wake us. */
        struct pollfd pfd = {.fd = q.efd, .events = POLLIN};
        if (dequeue_peek_nonempty())
            atomic_store(&q.sleeping, false);
        else
            (void)poll(&pfd, 1, 200);
        uint64_t v;
        ssize_t rc = read(q.efd, &v, sizeof(v));
        (void)rc;
        atomic_store(&q.sleeping, false);
    }
    writer_drain(batch, sizeof(batch));
    return NULL;
}

int log_reopen(void)
{
    if (!q.path)
        return 1;
    int fd = open(q.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    if (!atomic_load_explicit(&q.running, memory_order_acquire)) {
        if (q.fd != STDERR_FILENO)
            close(q.fd);
        q.fd = fd;
        return 0;
    }
    int old = atomic_exchange(&q.next_fd, fd);
    if (old >= 0)
        close(old); /* two reopens before the writer woke */
    uint64_t one = 1;
    ssize_t rc = write(q.efd, &one, sizeof(one));
    (void)rc;
    return 0;
}

int log_start(const char *path)
{
    int fd = STDERR_FILENO;
    if (path && *path) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
        if (fd < 0)
            return -errno;
        free(q.path);
        q.path = strdup(path);
    }
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        int rc = -errno;
        if (fd != STDERR_FILENO)
            close(fd);
        return rc;
    }
    for (size_t i = 0; i < LOG_QUEUE_LEN; i++)
        atomic_store_explicit(&q.cells[i].seq, i, memory_order_relaxed);
    atomic_store(&q.head, 0);
    atomic_store(&q.tail, 0);
    atomic_store(&q.stop, false);
    q.fd = fd;
    q.efd = efd;
    int rc = pthread_create(&q.thread, NULL, writer_main, NULL);
    if (rc) {
        close(efd);
        if (fd != STDERR_FILENO)
            close(fd);
        q.fd = STDERR_FILENO;
        q.efd = -1;
        return -rc;
    }
    atomic_store_explicit(&q.running, true, memory_order_release);
    return 0;
}

void log_stop(void)
{
    if (!atomic_load(&q.running))
        return;
    atomic_store(&q.stop, true);
    atomic_store(&q.sleeping, true);
    log_wake_writer();
    pthread_join(q.thread, NULL);
    /* Producers that raced the stop may have enqueued after the final drain;
     * switch to synchronous mode first, then collect the stragglers. */
    atomic_store_explicit(&q.running, false, memory_order_release);
    struct log_rec *r;
    while ((r = dequeue())) {
        write_all(q.fd, r->text, r->len);
        free(r);
    }
    close(q.efd);
    q.efd = -1;
    int nfd = atomic_exchange(&q.next_fd, -1);
    if (nfd >= 0)
        close(nfd);
    if (q.fd != STDERR_FILENO)
        close(q.fd);
    q.fd = STDERR_FILENO;
    free(q.path);
    q.path = NULL;
}
