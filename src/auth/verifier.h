/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verifier.h: the pool of threads that verify passwords, so Argon2 never
 * runs on an event loop. Workers submit jobs to one bounded queue; results
 * come back to the submitting worker through its port: a lock-free stack
 * and an eventfd on the worker's loop.
 *
 * Every verification costs the same: an unknown user and a plain: entry
 * each pay one Argon2id verification against the userlist's dummy hash
 * (made at load with the parameters most of its users have, or the
 * defaults), and secrets are compared in constant time.
 */
#ifndef FERRY_AUTH_VERIFIER_H
#define FERRY_AUTH_VERIFIER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth/cache.h"
#include "auth/pam.h"
#include "auth/userlist.h"
#include "core/loop.h"
#include "crypto/fcrypto.h"
#include "util/addr.h"

struct auth_port;
struct helper_pool;

/* One verification. Owned by the submitting worker until submitted, by the
 * pool while queued or running, and by the worker again once delivered. */
struct auth_job {
    struct auth_job *next;
    struct auth_port *port;
    struct userlist *ul;  /* reference held while the job lives */
    const struct user *u; /* NULL: no such user */
    void *owner;          /* the session waiting; NULL once it gave up */
    void (*done)(void *owner, struct auth_job *job);
    int result; /* 0 verified, -1 not, -2 the backend gave no verdict */
    /* The verification the pool runs: NULL for the userlist
     * (verifier_check), or an external backend's (a helper, PAM), which
     * returns 0, -1 or -2 as result. */
    int (*check)(const struct auth_job *job);
    struct helper_pool *helpers;            /* the helper backend's pool */
    char service[AUTH_PAM_SERVICE_MAX + 1]; /* the PAM backend's service */
    /* What the auth layer needs once the verdict is back. */
    void (*cb)(void *owner, int result);
    void *aw;
    struct addr client;
    uint64_t version;
    uint32_t cache_ttl_ms;
    struct auth_cache_probe probe;
    uint64_t t_submit_ns;
    /* Concurrent attempts with the same name and password on the same
     * worker wait for this job's verdict instead of a verification each
     * (followers: never queued, linked through next). */
    struct auth_job *followers;
    struct auth_job *inflight_next; /* in the worker's list of jobs on the pool */
    uint8_t ulen, plen;
    char user[256];
    char pass[256];
};

/* Where a worker receives finished jobs. Lives on the worker's loop. */
struct auth_port {
    struct io io; /* eventfd */
    _Atomic(struct auth_job *) done;
};

struct verifier {
    pthread_t *threads;
    unsigned nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct auth_job *head, *tail;
    unsigned len, cap;
    bool stop;
    _Atomic uint64_t verified, rejected; /* rejected: no verdict included */
};

/* Start n threads. Returns 0 or -errno. */
int verifier_start(struct verifier *v, unsigned nthreads, unsigned queue_cap);
/* Stop the threads; queued jobs are delivered as failures. */
void verifier_stop(struct verifier *v);
/* Queue a job. -EAGAIN when the queue is full (the caller fails the client
 * at once rather than waiting). */
int verifier_submit(struct verifier *v, struct auth_job *job);

int auth_port_init(struct auth_port *p, struct loop *l);
void auth_port_fini(struct auth_port *p, struct loop *l);

/* Free a job (drops its userlist reference, wipes the password). */
void auth_job_free(struct auth_job *job);

/* The verification itself, as the pool runs it (exposed for tests). An
 * unknown user (u NULL) and a plain entry pay one verification against the
 * list's dummy hash, which has the parameters of its Argon2id users. */
int verifier_check(const struct userlist *ul, const struct user *u, const char *pass, size_t plen);

#endif
