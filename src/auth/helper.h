/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * helper.h: a pool of long-lived external authentication helpers speaking
 * Squid's basic-auth protocol (proto/squidauth.h), such as Squid's
 * basic_ncsa_auth, basic_ldap_auth or basic_radius_auth. Each child runs
 * the configured command (no shell) with a socket as its stdin and stdout
 * and answers one request at a time, so `children` is also the cap on
 * verifications running against the backend at once.
 *
 * Only verifier threads call helper_pool_check(): it blocks, bounded by
 * the per-request timeout (waiting for a free child included), and never
 * runs on an event loop. A child that dies, hangs past the timeout or
 * says something that is not a reply is killed and reaped, and the
 * request it held fails closed (HELPER_UNAVAILABLE); its slot is
 * restarted on demand after a back-off that doubles from 100 ms to 30 s
 * and resets at the next good answer. Everything is counted for /metrics.
 */
#ifndef FERRY_AUTH_HELPER_H
#define FERRY_AUTH_HELPER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HELPER_CHILDREN_MAX   64
#define HELPER_BACKOFF_MIN_MS 100
#define HELPER_BACKOFF_MAX_MS 30000

/* Verdicts, as the verifier pool counts them. */
enum helper_verdict {
    HELPER_OK = 0,           /* OK */
    HELPER_DENIED = -1,      /* ERR */
    HELPER_UNAVAILABLE = -2, /* no verdict: BH, crash, timeout, garbage, no child */
};

/* Why a child was given up on (ferry_auth_helper_failures_total). */
enum helper_failure {
    HELPER_FAIL_CRASH,    /* it exited or closed its end */
    HELPER_FAIL_TIMEOUT,  /* no reply within the timeout: killed */
    HELPER_FAIL_PROTOCOL, /* a line that is no reply, or too long: killed */
    HELPER_FAIL_SPAWN,    /* it could not be started */
    HELPER_FAIL_COUNT
};

struct helper_child {
    pid_t pid;         /* 0: not running */
    int fd;            /* our end of its stdin/stdout socket; -1 */
    bool busy;         /* a verifier thread holds it */
    bool started;      /* ever started: the next start is a restart */
    uint64_t gen;      /* the command it runs (helper_pool.gen when started) */
    uint64_t retry_ms; /* not restarted before (monotonic ms) */
    uint32_t backoff_ms;
};

/* Process-wide, owned by struct auth; the mutex guards the slots and the
 * command, the counters are read by /metrics without it. */
struct helper_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a child became free */
    bool inited;
    char **argv; /* owned, NULL-terminated; NULL: not configured */
    uint64_t gen;
    unsigned n; /* slots in use */
    uint32_t timeout_ms;
    struct helper_child c[HELPER_CHILDREN_MAX];
    _Atomic uint64_t requests, restarts, unavailable;
    _Atomic uint64_t failures[HELPER_FAIL_COUNT];
    _Atomic uint32_t running;
    _Atomic uint64_t said_ms; /* when "no helper" was last logged */
};

/* Returns 0 or -errno. Nothing runs until helper_pool_configure(). */
int helper_pool_init(struct helper_pool *hp);
/* Run argv (copied; argv[0] an absolute path) in up to `children`
 * processes, timeout_ms per request. Children of an earlier command are
 * replaced as they become free. Returns 0 or -ENOMEM (the previous
 * command stays). */
int helper_pool_configure(struct helper_pool *hp, char *const *argv, unsigned children,
                          uint32_t timeout_ms);
/* The configuration names no helper any more: forget the command and
 * stop the children that are free now (a busy one is stopped when a
 * later command's request finds it, or at helper_pool_fini()). Blocks
 * for up to 200 ms per child (it exits at EOF). */
void helper_pool_clear(struct helper_pool *hp);
/* Close every child's socket (a helper exits at EOF), reap them (killed
 * if they linger), free the command. No check may be running. */
void helper_pool_fini(struct helper_pool *hp);

/* Ask a child about user/pass (raw bytes; escaped here). Blocks at most
 * about the timeout. Returns an enum helper_verdict. */
int helper_pool_check(struct helper_pool *hp, const char *user, size_t ulen, const char *pass,
                      size_t plen);

const char *helper_failure_name(enum helper_failure f);

#endif
