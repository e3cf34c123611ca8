/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * acct_int.h: what acct.c and state.c share inside acct/: the slot table
 * and the per-worker rows. Not for use outside acct/.
 */
#ifndef FERRY_ACCT_ACCT_INT_H
#define FERRY_ACCT_ACCT_INT_H

#include "acct/acct.h"

/* A user's slot: the name is written once before the slot is published
 * (a->nslots, release); every other field is an atomic any thread reads. */
struct acct_user {
    char *name;
    _Atomic bool listed;           /* in the current userlist */
    _Atomic bool over;             /* reached the byte quota this period */
    _Atomic uint32_t active;       /* sessions open now, all workers */
    _Atomic uint32_t max_sessions; /* 0: no limit */
    _Atomic uint32_t period_s;
    _Atomic uint64_t limit;       /* bytes per period; 0: none */
    _Atomic int64_t period_start; /* Unix time */
    _Atomic uint64_t base;        /* used this period before these counters (state file) */
    _Atomic uint64_t offset;      /* the counters' sum when the period began here */
};

/* A worker's counters: written by that worker only, read by anyone. */
struct acct_row {
    struct acct_ctr listen[CONFIG_MAX_LISTEN];
    struct acct_ctr users[]; /* max_users + 1: the last is "other" */
};

struct acct {
    unsigned nworkers;
    uint32_t max_users;        /* slot max_users is "other" */
    _Atomic uint32_t nslots;   /* named slots, published with release */
    struct acct_user *users;   /* max_users + 1 */
    _Atomic uint32_t *index;   /* open addressing by name: slot + 1, 0 = empty */
    uint32_t nindex;           /* a power of two, at least 2 * max_users */
    struct acct_row **rows;    /* one per worker, cache-line aligned */
    _Atomic bool enabled;      /* quota.accounting */
    _Atomic bool end_sessions; /* quota.end_sessions */
    _Atomic uint32_t nover;    /* users over their byte quota now */
    /* The main thread's alone. */
    char *state_file;
    uint32_t state_interval_ms;
    uint64_t next_save_ms;
    bool warned_full;
};

/* The sum of slot's byte counters over the workers. */
uint64_t acct_sum_bytes(const struct acct *a, uint32_t slot);
/* The slot of a listed or once-listed name, or UINT32_MAX. */
uint32_t acct_find(const struct acct *a, const char *name);
/* Roll slot's period over if it ended by now_s, and mark it over or not. */
void acct_tick_user(struct acct *a, uint32_t slot, int64_t now_s);
/* Bytes used in the running period. */
uint64_t acct_used(const struct acct *a, uint32_t slot);

#endif
