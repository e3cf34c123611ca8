/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * snap.h: asking the workers about their sessions. Sessions live on worker
 * threads and are touched by no other: the metrics thread posts one
 * worker_call per worker (worker.h's lock-free mailbox and eventfd), each
 * worker answers on its own thread between events (a snapshot of its
 * sessions, or closing some), and the asker waits on the query's own
 * eventfd for at most a deadline. A query is reference counted (the asker
 * and each worker), so a worker that answers late, or only at shutdown,
 * writes into memory that still exists; its late answer is ignored.
 *
 * What it must not do: touch a session from the asking thread, or hold a
 * lock a worker takes.
 */
#ifndef FERRY_ADMIN_SNAP_H
#define FERRY_ADMIN_SNAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"
#include "worker/worker.h"

struct userlist;

#define SNAP_ROWS_MAX    1000 /* session rows one query returns, at most */
#define SNAP_CLIENTS_MAX 128  /* distinct client addresses a worker sums; the rest: other */

/* One session as a worker saw it. */
struct snap_row {
    uint64_t id;
    struct addr client;
    char user[64];
    char proto[16];
    char state[16];
    char dest[272]; /* "name:port" or "ip:port"; empty: none yet */
    char outbound[32];
    uint64_t up, down, age_ms, idle_ms;
    unsigned worker;
};

/* Live bytes of the sessions of one client address. */
struct snap_client {
    struct addr addr; /* port 0 */
    uint64_t sessions, up, down;
};

enum snap_op {
    SNAP_LOOK,  /* read: rows, users and clients as asked */
    SNAP_CLOSE, /* end the session whose id is id */
    SNAP_KICK,  /* end every session user authenticated */
};

/* One worker's answer. */
struct snap_part {
    struct worker_call call;
    struct snap_query *q;
    _Atomic bool done; /* set (release) once the worker wrote this part */
    struct snap_row *rows;
    size_t nrows;
    uint64_t sessions; /* sessions the worker has (those matching the filter) */
    uint64_t closed;
    uint64_t *users; /* 3 per userlist user: sessions, up, down; NULL: not asked */
    struct snap_client clients[SNAP_CLIENTS_MAX];
    size_t nclients;
    struct snap_client other; /* clients beyond SNAP_CLIENTS_MAX */
};

struct snap_query {
    _Atomic unsigned refs;
    _Atomic unsigned left; /* workers that have not answered */
    int efd;               /* written by each worker when it answered */
    enum snap_op op;
    uint64_t id;         /* SNAP_CLOSE */
    char user[256];      /* SNAP_KICK, or a SNAP_LOOK filter ("" none) */
    size_t limit;        /* SNAP_LOOK: rows, the largest by bytes (0: none) */
    bool want_clients;   /* SNAP_LOOK: fill clients */
    struct userlist *ul; /* SNAP_LOOK: fill users for these (NULL: not asked) */
    unsigned nparts;
    struct snap_part parts[];
};

/* A query for nw workers (its fields are the caller's to set before
 * snap_run). NULL when out of memory or descriptors. */
struct snap_query *snap_new(unsigned nw);
/* Post q to each of the nw workers ws and wait at most timeout_ms for
 * their answers. Returns how many answered (parts with done set). */
unsigned snap_run(struct snap_query *q, struct worker *ws, unsigned nw, int timeout_ms);
/* Drop the asker's reference (the last one frees). NULL is a no-op. */
void snap_put(struct snap_query *q);

#endif
