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
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log/fields.h"
#include "log/recent.h"

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
    _Atomic int format; /* enum log_format */
    /* The syslog target (sfd >= 0): one datagram per record, never
     * blocking; failures counted and reported once per interval. */
    int sfd;
    int facility;
    struct sockaddr_storage sa;
    socklen_t salen;
    char host[256];
    long pid;
    _Atomic uint64_t sys_failed; /* since the last report */
    int sys_errno;
    struct timespec sys_reported;
} q = {.fd = STDERR_FILENO, .efd = -1, .next_fd = -1, .sfd = -1};

#define LOG_BATCH_MS     10
#define LOG_SYS_REPORT_S 10

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

/* "2026-11-29T23:00:51.123Z" (RFC 3339, UTC, milliseconds): the date
 * part is cached per thread and rebuilt once a second. */
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
    int n = snprintf(out, cap, "%s.%03dZ", cached, (int)(ts.tv_nsec / 1000000) % 1000);
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

void log_set_format(enum log_format f)
{
    atomic_store(&q.format, (int)f);
}

/* RFC 5424 6.2.1: the severity of each level. */
static int level_severity(enum log_level lvl)
{
    switch (lvl) {
    case LOG_DEBUG:
        return 7;
    case LOG_INFO:
        return 6;
    case LOG_WARN:
        return 4;
    case LOG_ERROR:
        return 3;
    }
    return 5;
}

/* One whole record, newline included, into line (cap >= 256): the
 * target's header (file and stderr: "TIME LEVEL " in text; syslog: the RFC
 * 5424 header), then the body in the configured format. Returns its
 * length. */
static size_t format_record(char *line, size_t cap, enum log_level lvl, const char *msgid,
                            const char *msg, const struct log_field *f, size_t nf)
{
    char ts[64];
    size_t n = 0;
    int m;
    format_time(ts, sizeof(ts));
    if (q.sfd >= 0) {
        m = snprintf(line, cap, "<%d>1 %s %s ferry %ld %s - ", q.facility * 8 + level_severity(lvl),
                     ts, q.host, q.pid, msgid ? msgid : "-");
        n = m > 0 ? (size_t)m : 0;
    }
    if (atomic_load_explicit(&q.format, memory_order_relaxed) == LOG_FMT_JSON) {
        m = snprintf(line + n, cap - n, "{\"time\":\"%s\",\"level\":\"%s\"", ts,
                     log_level_name(lvl));
        n += m > 0 ? (size_t)m : 0;
        n += log_fields_json(line + n, cap - n - 1, msg, f, nf);
    } else {
        /* LOG_LINE_MAX bounds a text record, its "TIME LEVEL " included
         * (the syslog header is not). */
        size_t lim = MIN(cap, n + LOG_LINE_MAX);
        if (q.sfd < 0) {
            m = snprintf(line + n, cap - n, "%s %-5s ", ts, log_level_name(lvl));
            n += m > 0 ? (size_t)m : 0;
        }
        n += log_fields_text(line + n, lim - n, msg, f, nf);
        if (n >= lim - 1) {
            n = lim - 5;
            memcpy(line + n, "...", 3); /* a truncated record says so */
            n += 3;
        }
    }
    line[n++] = '\n';
    return n;
}

/* Hand a formatted record to the writer (or write it now, before
 * log_start() and after log_stop()). */
static void submit(const char *line, size_t n)
{
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

void log_vwrite(enum log_level lvl, const char *fmt, va_list ap)
{
    char msg[LOG_LINE_MAX], line[LOG_RECORD_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log_recent_note(lvl, msg);
    submit(line, format_record(line, sizeof(line), lvl, NULL, msg, NULL, 0));
}

void log_fields(enum log_level lvl, const char *msgid, const char *msg, const struct log_field *f,
                size_t n)
{
    char line[LOG_RECORD_MAX];
    log_recent_note(lvl, msg);
    submit(line, format_record(line, sizeof(line), lvl, msgid, msg, f, n));
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

/* One record to the syslog target: a datagram that never waits. */
static void sys_send(const char *text, size_t len)
{
    if (len && text[len - 1] == '\n')
        len--; /* RFC 5424 over datagrams: the datagram is the message */
    ssize_t w =
        sendto(q.sfd, text, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&q.sa, q.salen);
    if (w < 0) {
        q.sys_errno = errno;
        atomic_fetch_add_explicit(&q.sys_failed, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&q.dropped_total, 1, memory_order_relaxed);
    }
}

/* Syslog records that could not be sent: said at most once per
 * LOG_SYS_REPORT_S (the first failure at once), to the syslog target and
 * to stderr, since the target may be what is failing. */
static void sys_report_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t lost = atomic_exchange(&q.sys_failed, 0);
    if (!lost)
        return;
    q.sys_reported = now;
    char msg[200], line[600];
    snprintf(msg, sizeof(msg), "log: %llu records not delivered to syslog (%s)",
             (unsigned long long)lost, strerror(q.sys_errno));
    size_t n = format_record(line, sizeof(line), LOG_WARN, NULL, msg, NULL, 0);
    sys_send(line, n);
    write_all(STDERR_FILENO, line, n);
}

static void sys_report(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (q.sys_reported.tv_sec && now.tv_sec - q.sys_reported.tv_sec < LOG_SYS_REPORT_S)
        return;
    sys_report_now();
}

/* Drain the queue into batches of up to 64 KiB per write() (or one
 * datagram per record to syslog). Returns the number of records written. */
static size_t writer_drain(char *batch, size_t cap)
{
    size_t used = 0, count = 0;
    struct log_rec *r;
    while ((r = dequeue())) {
        count++;
        if (q.sfd >= 0) {
            sys_send(r->text, r->len);
            free(r);
            continue;
        }
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
        char msg[160], line[600];
        snprintf(msg, sizeof(msg), "log: %llu records dropped (queue of %d full)",
                 (unsigned long long)lost, LOG_QUEUE_LEN);
        size_t n = format_record(line, sizeof(line), LOG_WARN, NULL, msg, NULL, 0);
        if (q.sfd >= 0) {
            sys_send(line, n);
        } else {
            if (used + n > cap) {
                write_all(q.fd, batch, used); /* make room: the count must not be lost */
                used = 0;
            }
            memcpy(batch + used, line, n);
            used += n;
        }
    }
    if (used)
        write_all(q.fd, batch, used);
    if (q.sfd >= 0)
        sys_report();
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
    char line[600];
    size_t n =
        format_record(line, sizeof(line), LOG_INFO, NULL, "log: file reopened (SIGUSR1)", NULL, 0);
    write_all(q.fd, line, n);
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
    if (!q.path || q.sfd >= 0)
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

int log_facility_parse(const char *s, int *out)
{
    if (strcasecmp(s, "daemon") == 0) {
        *out = 3;
        return 0;
    }
    if (strncasecmp(s, "local", 5) == 0 && s[5] >= '0' && s[5] <= '7' && s[6] == '\0') {
        *out = 16 + (s[5] - '0');
        return 0;
    }
    return -EINVAL;
}

int log_syslog_address(const char *s, struct sockaddr_storage *sa, socklen_t *len)
{
    memset(sa, 0, sizeof(*sa));
    if (!s || !*s)
        s = "/dev/log";
    if (strncmp(s, "unix:", 5) == 0)
        s += 5;
    if (s[0] == '/') {
        struct sockaddr_un *un = (struct sockaddr_un *)sa;
        size_t n = strlen(s);
        if (n >= sizeof(un->sun_path))
            return -EINVAL;
        un->sun_family = AF_UNIX;
        memcpy(un->sun_path, s, n + 1);
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        return 0;
    }
    if (strncmp(s, "udp://", 6) != 0)
        return -EINVAL;
    char host[128];
    const char *p = s + 6, *port;
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end || end[1] != ':' || (size_t)(end - p - 1) >= sizeof(host))
            return -EINVAL;
        snprintf(host, sizeof(host), "%.*s", (int)(end - p - 1), p + 1);
        port = end + 2;
    } else {
        const char *colon = strrchr(p, ':');
        if (!colon || (size_t)(colon - p) >= sizeof(host))
            return -EINVAL;
        snprintf(host, sizeof(host), "%.*s", (int)(colon - p), p);
        port = colon + 1;
    }
    char *end;
    unsigned long pn = strtoul(port, &end, 10);
    if (*port < '0' || *port > '9' || *end || pn == 0 || pn > 65535)
        return -EINVAL;
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *ai;
    if (!*port || getaddrinfo(host, port, &hints, &ai) != 0)
        return -EINVAL;
    memcpy(sa, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return ((struct sockaddr_in *)(void *)sa)->sin_port ? 0 : -EINVAL;
}

/* The syslog target's socket and header fields. Returns 0 or -errno. */
static int sys_open(const struct log_sink *sk)
{
    if (log_syslog_address(sk->syslog_address, &q.sa, &q.salen) < 0)
        return -EINVAL;
    int fd = socket(q.sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    q.facility = sk->facility ? sk->facility : 3;
    if (gethostname(q.host, sizeof(q.host) - 1) < 0 || !q.host[0])
        snprintf(q.host, sizeof(q.host), "-");
    for (char *h = q.host; *h; h++) /* RFC 5424 6.2.4: PRINTUSASCII only */
        if (*h <= ' ' || *h > '~')
            *h = '_';
    q.pid = (long)getpid();
    q.sys_reported.tv_sec = 0;
    q.sfd = fd;
    return 0;
}

int log_start(const char *path)
{
    struct log_sink sk = {.target = LOG_TARGET_AUTO, .path = path};
    return log_start_sink(&sk);
}

int log_start_sink(const struct log_sink *sk)
{
    int fd = STDERR_FILENO;
    const char *path =
        sk->target == LOG_TARGET_AUTO || sk->target == LOG_TARGET_FILE ? sk->path : NULL;
    if (sk->target == LOG_TARGET_FILE && !(path && *path))
        return -EINVAL;
    if (path && *path) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
        if (fd < 0)
            return -errno;
        free(q.path);
        q.path = strdup(path);
    }
    if (sk->target == LOG_TARGET_SYSLOG) {
        int rc = sys_open(sk);
        if (rc)
            return rc;
    }
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        int rc = -errno;
        if (fd != STDERR_FILENO)
            close(fd);
        if (q.sfd >= 0)
            close(q.sfd);
        q.sfd = -1;
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
    if (q.sfd >= 0) {
        sys_report_now();
        close(q.sfd);
        q.sfd = -1;
    }
}
