/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * acct.c: the slot table of users, the workers' counter rows, admission
 * against quotas, each user's period and over-mark (acct_tick_user), and
 * the readers' sums (acct.h). It must not block a worker: a worker's calls
 * are a table lookup, relaxed counter stores and one atomic add per session
 * start and end. The state file, and the main thread's tick that saves it
 * (acct_tick), are state.c's: that file reads this one's table, never the
 * other way round.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acct/acct_int.h"
#include "auth/userlist.h"
#include "log/log.h"
#include "util/compiler.h"

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a: names come from the operator's userlist only */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static size_t row_size(uint32_t max_users)
{
    size_t n = sizeof(struct acct_row) + ((size_t)max_users + 1) * sizeof(struct acct_ctr);
    return (n + CACHELINE - 1) / CACHELINE * CACHELINE;
}

struct acct *acct_new(unsigned nworkers, uint32_t max_users)
{
    struct acct *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->nworkers = nworkers;
    a->max_users = max_users;
    a->nindex = 16;
    while (a->nindex < 2 * max_users)
        a->nindex *= 2;
    a->users = calloc((size_t)max_users + 1, sizeof(*a->users));
    a->index = calloc(a->nindex, sizeof(*a->index));
    a->rows = calloc(nworkers, sizeof(*a->rows));
    if (!a->users || !a->index || !a->rows || !(a->users[max_users].name = strdup(":other")))
        goto out_free;
    for (unsigned w = 0; w < nworkers; w++) {
        a->rows[w] = aligned_alloc(CACHELINE, row_size(max_users));
        if (!a->rows[w])
            goto out_free;
        memset(a->rows[w], 0, row_size(max_users));
    }
    atomic_init(&a->enabled, true);
    return a;
out_free:
    acct_free(a);
    return NULL;
}

void acct_free(struct acct *a)
{
    if (!a)
        return;
    uint32_t n = atomic_load(&a->nslots);
    for (uint32_t i = 0; a->users && i < n; i++)
        free(a->users[i].name);
    if (a->users)
        free(a->users[a->max_users].name);
    for (unsigned w = 0; a->rows && w < a->nworkers; w++)
        free(a->rows[w]);
    free(a->rows);
    free(a->index);
    free(a->users);
    free(a->state_file);
    free(a);
}

uint32_t acct_find(const struct acct *a, const char *name)
{
    uint32_t mask = a->nindex - 1;
    for (uint32_t i = name_hash(name) & mask, k = 0; k < a->nindex; i = (i + 1) & mask, k++) {
        uint32_t v = atomic_load_explicit(&a->index[i], memory_order_acquire);
        if (!v)
            return UINT32_MAX;
        if (strcmp(a->users[v - 1].name, name) == 0)
            return v - 1;
    }
    return UINT32_MAX;
}

/* A slot for name (main thread): found, or added; UINT32_MAX when full. */
static uint32_t slot_get(struct acct *a, const char *name)
{
    uint32_t s = acct_find(a, name);
    uint32_t n = atomic_load_explicit(&a->nslots, memory_order_relaxed);
    if (s != UINT32_MAX || n >= a->max_users)
        return s;
    char *copy = strdup(name);
    if (!copy)
        return UINT32_MAX;
    a->users[n].name = copy;
    atomic_store_explicit(&a->nslots, n + 1, memory_order_release);
    uint32_t mask = a->nindex - 1, i = name_hash(name) & mask;
    while (atomic_load_explicit(&a->index[i], memory_order_relaxed))
        i = (i + 1) & mask;
    atomic_store_explicit(&a->index[i], n + 1, memory_order_release);
    return n;
}

uint64_t acct_sum_bytes(const struct acct *a, uint32_t slot)
{
    uint64_t sum = 0;
    for (unsigned w = 0; w < a->nworkers; w++)
        sum += stat_get(&a->rows[w]->users[slot].up) + stat_get(&a->rows[w]->users[slot].down);
    return sum;
}

uint64_t acct_used(const struct acct *a, uint32_t slot)
{
    const struct acct_user *u = &a->users[slot];
    uint64_t sum = acct_sum_bytes(a, slot);
    uint64_t off = atomic_load_explicit(&u->offset, memory_order_relaxed);
    return atomic_load_explicit(&u->base, memory_order_relaxed) + (sum > off ? sum - off : 0);
}

/* A new period for slot starting at start: usage starts from zero. Base
 * is cleared before the offset moves, so a reader in between sees less
 * usage, never more (no false refusal). */
static void period_begin(struct acct *a, uint32_t slot, int64_t start)
{
    struct acct_user *u = &a->users[slot];
    atomic_store(&u->base, 0);
    atomic_store(&u->offset, acct_sum_bytes(a, slot));
    atomic_store(&u->period_start, start);
    if (atomic_exchange(&u->over, false))
        atomic_fetch_sub(&a->nover, 1);
}

/* Mark slot over (or not) by its usage now; logs when it becomes over. */
static void mark_over(struct acct *a, uint32_t slot)
{
    struct acct_user *u = &a->users[slot];
    uint64_t limit = atomic_load(&u->limit);
    bool over = limit && acct_used(a, slot) >= limit;
    if (over == atomic_load(&u->over))
        return;
    atomic_store(&u->over, over);
    if (over) {
        atomic_fetch_add(&a->nover, 1);
        log_info("quota: user %s used %llu of %llu bytes for this period; new sessions are "
                 "refused%s",
                 u->name, (unsigned long long)acct_used(a, slot), (unsigned long long)limit,
                 atomic_load(&a->end_sessions) ? " and open ones end" : "");
    } else {
        atomic_fetch_sub(&a->nover, 1);
    }
}

/* Roll slot's period over when it has ended by now_s. */
static void period_roll(struct acct *a, uint32_t slot, int64_t now_s)
{
    struct acct_user *u = &a->users[slot];
    int64_t start = atomic_load(&u->period_start);
    int64_t len = atomic_load(&u->period_s);
    if (len <= 0 || now_s < start + len)
        return;
    period_begin(a, slot, start + (now_s - start) / len * len);
}

/* Slot's limits from the configuration (lim NULL: none). */
static void apply_limits(struct acct *a, uint32_t slot, const struct quota_limit *lim,
                         int64_t now_s)
{
    struct acct_user *u = &a->users[slot];
    static const struct quota_limit none = {0, 0, 0};
    if (!lim)
        lim = &none;
    uint64_t bytes = lim->bytes;
    if (bytes && !atomic_load(&u->limit))
        period_begin(a, slot, now_s); /* a byte quota that is new starts a period now */
    atomic_store(&u->period_s, bytes ? lim->period_s : 0);
    atomic_store(&u->max_sessions, lim->sessions);
    atomic_store(&u->limit, bytes);
    if (bytes)
        period_roll(a, slot, now_s);
    mark_over(a, slot);
}

/* Slots for the users of cfg's userlist, marked in listed[]. */
static void slots_for_users(struct acct *a, const struct config *cfg, bool *listed,
                            struct msglist *warns)
{
    const struct userlist *ul = cfg->auth.users;
    size_t beyond = 0;
    for (size_t i = 0; ul && i < ul->n; i++) {
        uint32_t s = slot_get(a, ul->users[i].name);
        if (s == UINT32_MAX)
            beyond++;
        else
            listed[s] = true;
    }
    if (beyond && warns && !a->warned_full)
        msglist_push(warns,
                     "%s: quota.max_users: %zu users beyond the first %u are counted together "
                     "as \"other\", without quotas of their own",
                     cfg->quota.origin[0] ? cfg->quota.origin : "quota", beyond, a->max_users);
    a->warned_full = a->warned_full || beyond;
}

void acct_configure(struct acct *a, const struct config *cfg, int64_t now_s, struct msglist *warns)
{
    const struct config_quota *q = &cfg->quota;
    bool *listed = calloc((size_t)a->max_users + 1, sizeof(*listed));
    if (!listed) {
        log_error("quota: out of memory applying the configuration; keeping the previous one");
        return;
    }
    if (q->accounting)
        slots_for_users(a, cfg, listed, warns);
    atomic_store(&a->end_sessions, q->end_sessions);
    uint32_t n = atomic_load(&a->nslots);
    for (uint32_t s = 0; s < n; s++) {
        atomic_store(&a->users[s].listed, listed[s]);
        apply_limits(a, s, listed[s] ? config_quota_for(q, a->users[s].name) : NULL, now_s);
    }
    free(listed);
    atomic_store(&a->enabled, q->accounting);
    free(a->state_file);
    a->state_file = q->state_file ? strdup(q->state_file) : NULL;
    if (q->state_file && !a->state_file)
        log_error("quota: out of memory for state_file; usage is not saved");
    a->state_interval_ms = q->state_interval_ms;
}

void acct_tick_user(struct acct *a, uint32_t slot, int64_t now_s)
{
    period_roll(a, slot, now_s);
    mark_over(a, slot);
}

bool acct_enabled(const struct acct *a)
{
    return a && atomic_load_explicit(&a->enabled, memory_order_relaxed);
}

enum acct_verdict acct_admit(struct acct *a, unsigned wid, const char *user, struct acct_hold *h)
{
    uint32_t s = acct_find(a, user);
    if (s == UINT32_MAX)
        s = a->max_users; /* "other" */
    struct acct_user *u = &a->users[s];
    struct acct_ctr *ctr = &a->rows[wid]->users[s];
    h->ctr = NULL;
    h->slot = 0;
    uint64_t limit = atomic_load_explicit(&u->limit, memory_order_relaxed);
    if (limit &&
        (atomic_load_explicit(&u->over, memory_order_relaxed) || acct_used(a, s) >= limit)) {
        stat_add(&ctr->refused, 1);
        return ACCT_OVER_BYTES;
    }
    uint32_t max = atomic_load_explicit(&u->max_sessions, memory_order_relaxed);
    uint32_t open = atomic_fetch_add_explicit(&u->active, 1, memory_order_relaxed);
    if (max && open >= max) {
        atomic_fetch_sub_explicit(&u->active, 1, memory_order_relaxed);
        stat_add(&ctr->refused, 1);
        return ACCT_OVER_SESSIONS;
    }
    stat_add(&ctr->sessions, 1);
    h->ctr = ctr;
    h->slot = s;
    return ACCT_OK;
}

enum acct_verdict acct_recheck(struct acct *a, const struct acct_hold *h)
{
    const struct acct_user *u = &a->users[h->slot];
    uint64_t limit = atomic_load_explicit(&u->limit, memory_order_relaxed);
    if (!limit ||
        (!atomic_load_explicit(&u->over, memory_order_relaxed) && acct_used(a, h->slot) < limit))
        return ACCT_OK;
    stat_add(&h->ctr->refused, 1);
    return ACCT_OVER_BYTES;
}

void acct_release(struct acct *a, struct acct_hold *h)
{
    if (!h->ctr)
        return;
    atomic_fetch_sub_explicit(&a->users[h->slot].active, 1, memory_order_relaxed);
    h->ctr = NULL;
    h->slot = 0;
}

bool acct_hold_is(const struct acct *a, const struct acct_hold *h, const char *user)
{
    uint32_t s = acct_find(a, user);
    return h->ctr && h->slot == (s == UINT32_MAX ? a->max_users : s);
}

bool acct_over(const struct acct *a, uint32_t slot)
{
    return atomic_load_explicit(&a->users[slot].over, memory_order_relaxed);
}

bool acct_must_end(const struct acct *a)
{
    return a && atomic_load_explicit(&a->end_sessions, memory_order_relaxed) &&
           atomic_load_explicit(&a->nover, memory_order_relaxed);
}

struct acct_ctr *acct_listener(struct acct *a, unsigned wid, unsigned li)
{
    return &a->rows[wid]->listen[li < CONFIG_MAX_LISTEN ? li : CONFIG_MAX_LISTEN - 1];
}

/* ---- readers ------------------------------------------------------------ */

static void sum_ctr(const struct acct *a, uint32_t slot, bool listener, struct acct_user_total *t)
{
    for (unsigned w = 0; w < a->nworkers; w++) {
        const struct acct_ctr *c = listener ? &a->rows[w]->listen[slot] : &a->rows[w]->users[slot];
        t->up += stat_get(&c->up);
        t->down += stat_get(&c->down);
        t->sessions += stat_get(&c->sessions);
        t->dgram_up += stat_get(&c->dgram_up);
        t->dgram_down += stat_get(&c->dgram_down);
        t->refused += stat_get(&c->refused);
    }
}

static void user_total(const struct acct *a, uint32_t s, struct acct_user_total *t)
{
    const struct acct_user *u = &a->users[s];
    memset(t, 0, sizeof(*t));
    t->name = u->name;
    t->other = s == a->max_users;
    sum_ctr(a, s, false, t);
    t->active = atomic_load_explicit(&u->active, memory_order_relaxed);
    t->quota_sessions = atomic_load_explicit(&u->max_sessions, memory_order_relaxed);
    t->quota_bytes = atomic_load_explicit(&u->limit, memory_order_relaxed);
    if (t->quota_bytes) {
        t->period_s = atomic_load_explicit(&u->period_s, memory_order_relaxed);
        t->period_start = atomic_load_explicit(&u->period_start, memory_order_relaxed);
        t->used = acct_used(a, s);
        t->over = atomic_load_explicit(&u->over, memory_order_relaxed);
    }
}

size_t acct_snapshot_cap(const struct acct *a)
{
    return (size_t)atomic_load_explicit(&a->nslots, memory_order_acquire) + 1;
}

size_t acct_snapshot(const struct acct *a, struct acct_user_total *out, size_t cap)
{
    uint32_t n = atomic_load_explicit(&a->nslots, memory_order_acquire);
    size_t k = 0;
    for (uint32_t s = 0; s < n && k < cap; s++)
        if (atomic_load_explicit(&a->users[s].listed, memory_order_relaxed))
            user_total(a, s, &out[k++]);
    if (k < cap)
        user_total(a, a->max_users, &out[k++]);
    return k;
}

bool acct_user_lookup(const struct acct *a, const char *name, struct acct_user_total *out)
{
    uint32_t s = acct_find(a, name);
    if (s == UINT32_MAX || !atomic_load_explicit(&a->users[s].listed, memory_order_relaxed))
        return false;
    user_total(a, s, out);
    return true;
}

void acct_listener_sum(const struct acct *a, unsigned li, struct acct_user_total *out)
{
    memset(out, 0, sizeof(*out));
    if (li < CONFIG_MAX_LISTEN)
        sum_ctr(a, li, true, out);
}
