/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helper.c: the external helper pool (helper.h). The mutex guards the
 * slots and is held only to pick, start or release a child, never while
 * talking to one; the exchange itself runs on the verifier thread that
 * holds the child, with poll() bounding every wait by the request's
 * deadline. Children are started with posix_spawn() (no shell, default
 * signal dispositions, an empty signal mask) on a socketpair, so a dead
 * child surfaces as EPIPE or EOF on one request, never as a signal.
 */
#include "auth/helper.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log/log.h"
#include "proto/squidauth.h"

extern char **environ;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *helper_failure_name(enum helper_failure f)
{
    switch (f) {
    case HELPER_FAIL_CRASH:
        return "crash";
    case HELPER_FAIL_TIMEOUT:
        return "timeout";
    case HELPER_FAIL_PROTOCOL:
        return "protocol";
    case HELPER_FAIL_SPAWN:
        return "spawn";
    case HELPER_FAIL_COUNT:
        break;
    }
    return "?";
}

int helper_pool_init(struct helper_pool *hp)
{
    memset(hp, 0, sizeof(*hp));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&hp->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc)
        return -rc;
    pthread_mutex_init(&hp->mu, NULL);
    for (unsigned i = 0; i < HELPER_CHILDREN_MAX; i++)
        hp->c[i].fd = -1;
    hp->inited = true;
    return 0;
}

static void argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

int helper_pool_configure(struct helper_pool *hp, char *const *argv, unsigned children,
                          uint32_t timeout_ms)
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **copy = calloc(n + 1, sizeof(*copy));
    if (!copy)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(argv[i]);
        if (!copy[i]) {
            argv_free(copy);
            return -ENOMEM;
        }
    }
    pthread_mutex_lock(&hp->mu);
    bool same = hp->argv != NULL;
    for (size_t i = 0; same && i <= n; i++)
        same =
            (hp->argv[i] && copy[i]) ? strcmp(hp->argv[i], copy[i]) == 0 : hp->argv[i] == copy[i];
    if (!same) {
        argv_free(hp->argv);
        hp->argv = copy;
        copy = NULL;
        hp->gen++;
        for (unsigned i = 0; i < HELPER_CHILDREN_MAX; i++)
            hp->c[i].backoff_ms = 0, hp->c[i].retry_ms = 0; /* a new command starts at once */
    }
    hp->n = children < 1 ? 1 : children > HELPER_CHILDREN_MAX ? HELPER_CHILDREN_MAX : children;
    hp->timeout_ms = timeout_ms;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
    argv_free(copy);
    return 0;
}

/* Start argv in ch (the lock held: the command cannot change under us). */
static int spawn_child(struct helper_pool *hp, struct helper_child *ch)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    /* dup2() clears close-on-exec on the copies: the child keeps only these. */
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, hp->argv[0], &fa, &at, hp->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    if (rc) {
        close(sv[0]);
        return -rc;
    }
    if (ch->started)
        atomic_fetch_add_explicit(&hp->restarts, 1, memory_order_relaxed);
    ch->started = true;
    ch->pid = pid;
    ch->fd = sv[0];
    ch->gen = hp->gen;
    atomic_fetch_add_explicit(&hp->running, 1, memory_order_relaxed);
    return 0;
}

/* How a reaped child ended, for the log. */
static void describe_exit(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, cap, "ended");
}

/* Close our end and reap the child: at once with SIGKILL when kill_now,
 * otherwise it gets up to 200 ms to exit at EOF first. Unlocked: the
 * slot is busy, no one else touches it. Returns its wait status. */
static int stop_child(struct helper_child *ch, bool kill_now)
{
    close(ch->fd);
    ch->fd = -1;
    int status = 0;
    if (!kill_now) {
        for (int i = 0; i < 40; i++) {
            if (waitpid(ch->pid, &status, WNOHANG) == ch->pid)
                return status;
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    kill(ch->pid, SIGKILL);
    while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* A child is gone (reaped): its slot waits out a back-off. Lock held. */
static void slot_failed(struct helper_pool *hp, struct helper_child *ch, enum helper_failure why)
{
    if (ch->pid)
        atomic_fetch_sub_explicit(&hp->running, 1, memory_order_relaxed);
    ch->pid = 0;
    ch->fd = -1;
    ch->busy = false;
    ch->backoff_ms = ch->backoff_ms ? ch->backoff_ms * 2 : HELPER_BACKOFF_MIN_MS;
    if (ch->backoff_ms > HELPER_BACKOFF_MAX_MS)
        ch->backoff_ms = HELPER_BACKOFF_MAX_MS;
    ch->retry_ms = now_ms() + ch->backoff_ms;
    atomic_fetch_add_explicit(&hp->failures[why], 1, memory_order_relaxed);
    pthread_cond_broadcast(&hp->cv);
}

/* A child of an earlier command, or beyond the slots in use, is free:
 * stop it (unlocked, it may take a moment) and empty its slot. */
static void retire(struct helper_pool *hp, struct helper_child *ch)
{
    ch->busy = true;
    pthread_mutex_unlock(&hp->mu);
    stop_child(ch, false);
    pthread_mutex_lock(&hp->mu);
    atomic_fetch_sub_explicit(&hp->running, 1, memory_order_relaxed);
    ch->pid = 0;
    ch->busy = false;
    ch->started = false;
    pthread_cond_broadcast(&hp->cv);
}

/* Wait on the free-child condition until deadline; false when it passed. */
static bool wait_until(struct helper_pool *hp, uint64_t deadline)
{
    if (now_ms() >= deadline)
        return false;
    struct timespec ts = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000L};
    return pthread_cond_timedwait(&hp->cv, &hp->mu, &ts) != ETIMEDOUT || now_ms() < deadline;
}

/* Take a running child for one request (lock held): a free one, else
 * start one in a slot whose back-off is over, else wait for one to come
 * free. NULL when none can be had before deadline, or every slot is
 * backing off. */
static struct helper_child *take_child(struct helper_pool *hp, uint64_t deadline)
{
    for (;;) {
        uint64_t now = now_ms();
        struct helper_child *idle = NULL, *startable = NULL, *stale = NULL;
        bool any_busy = false;
        for (unsigned i = 0; i < HELPER_CHILDREN_MAX && !idle; i++) {
            struct helper_child *ch = &hp->c[i];
            if (ch->busy)
                any_busy = any_busy || i < hp->n;
            else if (ch->pid && (i >= hp->n || ch->gen != hp->gen))
                stale = stale ? stale : ch;
            else if (i < hp->n && ch->pid)
                idle = ch;
            else if (i < hp->n && !startable && ch->retry_ms <= now)
                startable = ch;
        }
        if (idle) {
            idle->busy = true;
            return idle;
        }
        if (stale) {
            retire(hp, stale);
            continue;
        }
        if (startable && hp->argv) {
            int rc = spawn_child(hp, startable);
            if (rc == 0) {
                startable->busy = true;
                return startable;
            }
            log_warn("auth helper: cannot start %s: %s; retrying in at least %u ms", hp->argv[0],
                     strerror(-rc),
                     startable->backoff_ms ? startable->backoff_ms * 2 : HELPER_BACKOFF_MIN_MS);
            slot_failed(hp, startable, HELPER_FAIL_SPAWN);
            continue;
        }
        if (!any_busy || !wait_until(hp, deadline))
            return NULL;
    }
}

/* Write the request and read one reply line before deadline. Returns the
 * line's length (without '\n'), or -1 with *why set. */
static ssize_t exchange(struct helper_child *ch, const char *req, size_t n, char *line, size_t cap,
                        uint64_t deadline, enum helper_failure *why)
{
    size_t off = 0, got = 0;
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline) {
            *why = HELPER_FAIL_TIMEOUT;
            return -1;
        }
        struct pollfd pfd = {ch->fd, off < n ? POLLOUT : POLLIN, 0};
        int pr = poll(&pfd, 1, (int)(deadline - now));
        if (pr < 0 && errno != EINTR) {
            *why = HELPER_FAIL_CRASH;
            return -1;
        }
        if (pr <= 0)
            continue;
        if (off < n) {
            ssize_t w = send(ch->fd, req + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                *why = HELPER_FAIL_CRASH;
                return -1;
            }
            off += w > 0 ? (size_t)w : 0;
            continue;
        }
        ssize_t r = recv(ch->fd, line + got, cap - got, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            *why = HELPER_FAIL_CRASH;
            return -1;
        }
        if (r < 0)
            continue;
        got += (size_t)r;
        char *nl = memchr(line, '\n', got);
        if (nl) {
            /* One reply per request: anything after it is out of step. */
            if ((size_t)(nl - line) + 1 != got) {
                *why = HELPER_FAIL_PROTOCOL;
                return -1;
            }
            return nl - line;
        }
        if (got == cap) {
            *why = HELPER_FAIL_PROTOCOL;
            return -1;
        }
    }
}

/* A helper's message, fit for one log line: printable ASCII, at most 200 bytes. */
static void clean_message(const char *m, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && i < 200 && o + 1 < cap; i++)
        out[o++] = (m[i] >= 0x20 && m[i] < 0x7f) ? m[i] : '?';
    out[o] = '\0';
}

/* The child answered: its verdict, the slot back in the pool. */
static int answered(struct helper_pool *hp, struct helper_child *ch, const char *line, size_t len)
{
    struct squidauth_reply r;
    int rc = squidauth_reply_parse(line, len, &r);
    int pid = (int)ch->pid;
    pthread_mutex_lock(&hp->mu);
    ch->busy = false;
    if (rc == 0)
        ch->backoff_ms = 0;
    pthread_cond_broadcast(&hp->cv);
    pthread_mutex_unlock(&hp->mu);
    if (rc == 0 && r.code == SQUIDAUTH_BH) {
        char msg[256];
        clean_message(r.msg ? r.msg : "", r.msglen, msg, sizeof(msg));
        log_warn("auth helper (pid %d): BH (no verdict)%s%s", pid, msg[0] ? ": " : "", msg);
        atomic_fetch_add_explicit(&hp->unavailable, 1, memory_order_relaxed);
        return HELPER_UNAVAILABLE;
    }
    return r.code == SQUIDAUTH_OK ? HELPER_OK : HELPER_DENIED;
}

void helper_pool_clear(struct helper_pool *hp)
{
    if (!hp->inited)
        return;
    pthread_mutex_lock(&hp->mu);
    if (hp->argv) {
        argv_free(hp->argv);
        hp->argv = NULL;
        hp->gen++;
    }
    for (unsigned i = 0; i < HELPER_CHILDREN_MAX; i++)
        if (hp->c[i].pid && !hp->c[i].busy)
            retire(hp, &hp->c[i]);
    pthread_mutex_unlock(&hp->mu);
}

int helper_pool_check(struct helper_pool *hp, const char *user, size_t ulen, const char *pass,
                      size_t plen)
{
    char req[2 * 3 * 255 + 3];
    char line[SQUIDAUTH_LINE_MAX];
    ssize_t n = squidauth_request((const uint8_t *)user, ulen, (const uint8_t *)pass, plen, req,
                                  sizeof(req));
    if (n < 0)
        return HELPER_DENIED; /* longer than any SOCKS or Basic credential */
    atomic_fetch_add_explicit(&hp->requests, 1, memory_order_relaxed);
    pthread_mutex_lock(&hp->mu);
    uint64_t deadline = now_ms() + hp->timeout_ms;
    struct helper_child *ch = take_child(hp, deadline);
    pthread_mutex_unlock(&hp->mu);
    if (!ch) {
        explicit_bzero(req, sizeof(req));
        atomic_fetch_add_explicit(&hp->unavailable, 1, memory_order_relaxed);
        /* Once a second at most: a helper that is down must not flood the log. */
        uint64_t now = now_ms(), last = atomic_load_explicit(&hp->said_ms, memory_order_relaxed);
        if (now - last >= 1000 && atomic_compare_exchange_strong(&hp->said_ms, &last, now))
            log_warn("auth helper: no helper free or running within the timeout; attempts fail "
                     "(%llu so far)",
                     (unsigned long long)atomic_load(&hp->unavailable));
        return HELPER_UNAVAILABLE;
    }
    enum helper_failure why = HELPER_FAIL_CRASH;
    ssize_t len = exchange(ch, req, (size_t)n, line, sizeof(line), deadline, &why);
    explicit_bzero(req, sizeof(req));
    if (len >= 0 && squidauth_reply_parse(line, (size_t)len, &(struct squidauth_reply){0}) == 0)
        return answered(hp, ch, line, (size_t)len);
    if (len >= 0)
        why = HELPER_FAIL_PROTOCOL;
    pid_t pid = ch->pid;
    int status = stop_child(ch, why != HELPER_FAIL_CRASH);
    char how[64];
    describe_exit(status, how, sizeof(how));
    pthread_mutex_lock(&hp->mu);
    slot_failed(hp, ch, why);
    uint32_t backoff = ch->backoff_ms;
    pthread_mutex_unlock(&hp->mu);
    atomic_fetch_add_explicit(&hp->unavailable, 1, memory_order_relaxed);
    log_warn("auth helper (pid %d): %s (%s); the attempt fails; restarting in %u ms", (int)pid,
             why == HELPER_FAIL_TIMEOUT    ? "no reply within the timeout, killed"
             : why == HELPER_FAIL_PROTOCOL ? "not a helper reply, killed"
                                           : "closed its end",
             how, backoff);
    return HELPER_UNAVAILABLE;
}

void helper_pool_fini(struct helper_pool *hp)
{
    if (!hp->inited)
        return;
    for (unsigned i = 0; i < HELPER_CHILDREN_MAX; i++) {
        if (hp->c[i].fd >= 0) {
            close(hp->c[i].fd); /* EOF: a helper's cue to exit */
            hp->c[i].fd = -1;
        }
    }
    uint64_t until = now_ms() + 1000;
    for (unsigned i = 0; i < HELPER_CHILDREN_MAX; i++) {
        struct helper_child *ch = &hp->c[i];
        if (!ch->pid)
            continue;
        pid_t r;
        while ((r = waitpid(ch->pid, NULL, WNOHANG)) == 0 && now_ms() < until) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (r == 0) { /* still there after a second: it is not coming */
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, NULL, 0);
        }
        ch->pid = 0;
        atomic_fetch_sub_explicit(&hp->running, 1, memory_order_relaxed);
    }
    argv_free(hp->argv);
    hp->argv = NULL;
    pthread_mutex_destroy(&hp->mu);
    pthread_cond_destroy(&hp->cv);
    hp->inited = false;
}
