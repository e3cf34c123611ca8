/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker.h: a worker thread: one loop, its own SO_REUSEPORT listeners,
 * buffer and pipe pools, a resolver and a counters shard. Nothing a worker
 * owns is touched by another thread, except the command word and eventfd
 * through which the main thread asks it to drain or stop, and the stack of
 * calls (worker_call_post) through which another thread has it run a
 * function on its own thread.
 *
 * The session layer (relay/) plugs in through struct worker_ops so this
 * room stays free of protocol knowledge. The worker composes the rooms
 * below it (core's loop and pools, a dns resolver, a configuration
 * generation, the log); it must not include what plugs into it (relay/,
 * udp/, auth/'s per-worker state): those it holds only as typed pointers
 * to structures it never looks into.
 */
#ifndef FERRY_WORKER_WORKER_H
#define FERRY_WORKER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/loop.h"
#include "core/pipe.h"
#include "core/stats.h"
#include "dns/resolver.h"
#include "util/addr.h"
#include "util/list.h"

struct worker;
/* The plug-ins' per-worker state, owned by the room named beside each
 * pointer in struct worker; the worker never looks inside. */
struct auth_worker;
struct conn;
struct upstream_pool;
struct udp_worker;
struct ob_checks;
struct edge_checks;
struct h2out_set;

enum worker_cmd {
    WORKER_CMD_DRAIN = 1u << 0,  /* stop accepting; exit once no session is left */
    WORKER_CMD_ABORT = 1u << 1,  /* close every session now and exit */
    WORKER_CMD_CONFIG = 1u << 2, /* a new configuration waits in next */
    WORKER_CMD_CALL = 1u << 3,   /* calls wait in calls (worker_call_post) */
};

/* A function another thread asks a worker to run on its own thread, between
 * events: how the admin API reads and closes sessions without touching
 * them from outside. The caller owns the storage and must keep it alive
 * until fn has run; fn runs exactly once, on the worker's thread, or at
 * worker_fini() (on the main thread, the worker's loop stopped, so fn must
 * then find no session to touch) for a call that came too late. */
struct worker_call {
    struct worker_call *next; /* the worker's pending stack */
    void (*fn)(struct worker *w, struct worker_call *call);
};

/* A configuration as one worker uses it: new sessions take the current
 * one, and a session keeps the one it started with until it ends. The
 * worker holds one reference per generation and counts its sessions
 * without atomics. */
struct wcfg {
    struct list link; /* in worker->cfgs */
    struct config *cfg;
    uint32_t sessions;
};

struct listener {
    struct io io;
    struct worker *w;
    struct addr addr; /* as bound (port resolved) */
    unsigned index;   /* which listen address of the config */
};

/* The listening sockets a worker is to have after a reload that changed
 * listen: entry i serves listen address i of the new configuration. A
 * socket the worker already has is named again by its fd; any other fd is
 * new and becomes the worker's. Built by the main thread, which also
 * allocates the listener array so the worker never fails to apply it. */
struct listen_set {
    size_t n;
    int *fds;
    struct addr *addrs;
    bool *fresh;          /* fds[i] was bound for this set (the worker does not own it yet) */
    struct listener *arr; /* n entries (at least one), for the worker to fill */
    struct release rel;   /* once applied: frees the set and the replaced array late */
};

void listen_set_free(struct listen_set *ls);

/* A reload on its way to a worker: a configuration (one reference) and,
 * when listen changed, the sockets that go with it. */
struct worker_update {
    struct config *cfg;
    struct listen_set *ls;
};

struct worker_ops {
    /* A connection was accepted: take ownership of fd. */
    void (*accept)(struct worker *w, struct listener *ls, int fd, const struct addr *peer);
    /* Close every session (shutdown timeout passed). */
    void (*abort_all)(struct worker *w);
    /* Release what the session layer keeps per worker (freelists). */
    void (*fini)(struct worker *w);
    /* w->cur changed (also called once at init, on the main thread). */
    void (*config_changed)(struct worker *w);
    /* The worker began to drain (SIGTERM): sessions are asked to finish
     * (an HTTP/2 connection sends GOAWAY). NULL: nothing to do. */
    void (*drain)(struct worker *w);
    /* Once a second, from the worker's heartbeat (quotas that end open
     * sessions). NULL: nothing to do. */
    void (*tick)(struct worker *w);
};

/* State shared by all workers, owned by the main thread. */
struct auth;
struct limits;
struct acct;

struct shared {
    struct limits *limits;                          /* per-address and per-user limits */
    struct acct *acct;                              /* acct/: per-user accounting, quotas */
    _Atomic(struct auth *) auth;                    /* the verifier pool, once started */
    _Atomic uint64_t next_id;                       /* session ids, unique across workers */
    _Atomic uint32_t sessions;                      /* open sessions, for max_connections */
    _Atomic uint32_t udp_assocs[CONFIG_MAX_LISTEN]; /* UDP associations per listen address */
    int exit_efd;                                   /* each worker writes 1 when it exits */
};

struct worker {
    unsigned id;
    pthread_t thread;
    struct shared *sh;
    const struct worker_ops *ops;
    struct loop loop;
    struct io ctl; /* eventfd: commands from the main thread */
    _Atomic uint32_t cmd;
    _Atomic(struct worker_update *) next; /* posted by the main thread */
    _Atomic(struct worker_call *) calls;  /* posted by any thread (worker_call_post) */
    struct wcfg *cur;                     /* for new sessions */
    struct list cfgs;                     /* generations still in use */
    struct auth_worker *auth;             /* auth/, or NULL */
    struct udp_worker *udp;               /* udp/, or NULL until needed */
    struct ob_checks *ob_checks;          /* relay/'s pool health checks (worker 0), or NULL */
    struct edge_checks *edge_checks;      /* relay/'s edge backend checks (worker 0), or NULL */
    struct h2out_set *h2out;              /* relay/'s HTTP/2 parent connections, or NULL */
    struct upstream_pool *http;           /* relay/'s HTTP upstream pool, or NULL until needed */
    struct listener *listeners;
    size_t nlisteners;
    bool draining;
    struct timer accept_pause; /* re-enables accepting after EMFILE */
    uint64_t accept_warn_at;   /* loop time before which pauses are not logged */
    uint32_t accept_unlogged;  /* pauses since the last warning, not logged */
    struct timer heartbeat;    /* publishes the loop's lag once a second */
    struct buf_pool bufs;
    struct pipe_pool pipes;
    struct resolver dns;
    uint64_t dns_warned_ms;  /* when a dead DNS server was last reported */
    uint32_t dns_unreported; /* ... and lookups unanswered since */
    struct list sessions;    /* the session layer's objects */
    uint32_t nsessions;
    struct conn *free_sessions; /* session freelist, owned by relay/ */
    uint32_t nfree_sessions;
    struct worker_stats stats;
};

/* Prepare w (on the main thread). fds are listening sockets, one per
 * address, now owned by the worker; the worker takes its own reference on
 * cfg. Returns 0 or -errno. */
int worker_init(struct worker *w, unsigned id, struct shared *sh, const struct worker_ops *ops,
                struct config *cfg, const int *fds, const struct addr *addrs, size_t n);
int worker_start(struct worker *w);
/* Ask the worker to do something (any thread). */
void worker_command(struct worker *w, enum worker_cmd cmd);
/* Have w run call->fn on its thread soon (any thread; lock-free). */
void worker_call_post(struct worker *w, struct worker_call *call);
/* Hand a new configuration to the worker (main thread); takes its own
 * reference on cfg. ls: new listening sockets (taken over), or NULL when
 * listen did not change. Returns 0 or -ENOMEM (nothing posted, ls not
 * taken). */
int worker_post_config(struct worker *w, struct config *cfg, struct listen_set *ls);
void worker_join(struct worker *w);
void worker_fini(struct worker *w);

/* A session starts under the current configuration / has ended. */
struct wcfg *worker_cfg_hold(struct worker *w);
void worker_cfg_release(struct worker *w, struct wcfg *wc);

/* The session layer tells the worker a session ended; a draining worker
 * stops its loop when the last one goes. */
void worker_session_ended(struct worker *w);

#endif
