/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * auth.c: throttle, cache and verifier put together in the order that keeps
 * every outcome honest: a throttled client is refused before any work; a
 * cached success (this worker's cache, then the one all workers share) is
 * accepted after one keyed hash; everything else costs exactly one Argon2
 * verification on the pool, whatever the user.
 */
#include "auth/auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"

int auth_start(struct auth *a, unsigned workers, unsigned queue, uint32_t track,
               uint32_t max_failures, uint32_t window_ms, uint32_t block_ms,
               uint32_t shared_entries)
{
    memset(a, 0, sizeof(*a));
    auth_keys_init(&a->keys);
    int rc = auth_shared_init(&a->shared, shared_entries);
    if (rc)
        return rc;
    rc = throttle_init(&a->t, track, max_failures, window_ms, block_ms);
    if (rc) {
        auth_shared_fini(&a->shared);
        return rc;
    }
    rc = helper_pool_init(&a->helpers);
    if (rc) {
        throttle_fini(&a->t);
        auth_shared_fini(&a->shared);
        return rc;
    }
    rc = verifier_start(&a->v, workers, queue);
    if (rc) {
        helper_pool_fini(&a->helpers);
        throttle_fini(&a->t);
        auth_shared_fini(&a->shared);
    }
    return rc;
}

void auth_stop(struct auth *a)
{
    verifier_stop(&a->v);
    helper_pool_fini(&a->helpers);
    throttle_fini(&a->t);
    auth_shared_fini(&a->shared);
    explicit_bzero(&a->keys, sizeof(a->keys));
}

int auth_worker_init(struct auth_worker *aw, struct auth *a, struct loop *l, uint32_t cache_entries)
{
    memset(aw, 0, sizeof(*aw));
    aw->a = a;
    aw->l = l;
    aw->stats = &aw->own;
    int rc = auth_cache_init(&aw->cache, cache_entries, &a->keys);
    if (rc)
        return rc;
    rc = auth_port_init(&aw->port, l);
    if (rc)
        auth_cache_fini(&aw->cache);
    return rc;
}

void auth_worker_fini(struct auth_worker *aw)
{
    auth_port_fini(&aw->port, aw->l);
    auth_cache_fini(&aw->cache);
}

/* What the throttle knows an attempt by: equal for the same name and
 * password (the probe's keyed tag), so identical attempts are one guess. */
static uint64_t guess_key(const struct auth_cache_probe *p)
{
    uint64_t k;
    memcpy(&k, p->tag, sizeof(k));
    return k;
}

/* A verification ended: settle the throttle's books, and log the one
 * failure that starts a block. */
static void note_end(struct auth_worker *aw, const struct auth_job *job, bool failed)
{
    struct throttle *t = &aw->a->t;
    if (throttle_end(t, &job->client, loop_now(aw->l), guess_key(&job->probe), failed)) {
        char ip[ADDR_STRLEN];
        stat_add(&aw->stats->blocks, 1);
        log_warn("auth: %s blocked for %u ms after %u failed attempts within %u ms",
                 addr_format_ip(&job->client, ip, sizeof(ip)), t->block_ms, t->max_failures,
                 t->window_ms);
    }
}

/* One attempt's verdict (a job's result: 0, -1, or -2 for no verdict):
 * the throttle's books, the counters, the cache. No verdict fails closed
 * and counts as a failure for the throttle too: a backend that breaks on
 * some input (a helper that crashes, a PAM module that errs) must not
 * become a way around it. */
static int settle(struct auth_worker *aw, struct auth_job *job, int verdict)
{
    bool verified = verdict == 0;
    int result = verified ? AUTH_OK : AUTH_DENIED;
    note_end(aw, job, !verified);
    if (result == AUTH_OK && throttle_blocked(&aw->a->t, &job->client, loop_now(aw->l))) {
        /* Blocked while this one was being checked (parallel guesses): a
         * right password behind wrong ones must not get through. */
        result = AUTH_THROTTLED;
        stat_add(&aw->stats->throttled, 1);
    } else if (result == AUTH_OK) {
        stat_add(&aw->stats->ok, 1);
        if (job->cache_ttl_ms) {
            auth_cache_store(&aw->cache, &job->probe, job->version, loop_now(aw->l),
                             job->cache_ttl_ms);
            auth_shared_store(&aw->a->shared, &job->probe, job->version, loop_now(aw->l),
                              job->cache_ttl_ms);
        }
    } else if (verdict == -1) {
        stat_add(&aw->stats->denied, 1);
    } else {
        stat_add(&aw->stats->unavailable, 1);
    }
    return result;
}

static void inflight_remove(struct auth_worker *aw, struct auth_job *job)
{
    for (struct auth_job **pp = &aw->inflight; *pp; pp = &(*pp)->inflight_next) {
        if (*pp == job) {
            *pp = job->inflight_next;
            return;
        }
    }
}

/* A verdict from the pool, on the worker's loop; owner is NULL when the
 * session gave up waiting (its failure still counts). Followers get the
 * same verdict, each settled for its own client. */
static void auth_job_done(void *owner, struct auth_job *job)
{
    struct auth_worker *aw = job->aw;
    inflight_remove(aw, job);
    int verdict = job->result < -1 ? -2 : job->result;
    int result = settle(aw, job, verdict);
    void (*cb)(void *, int) = job->cb;
    struct auth_job *f = job->followers;
    job->followers = NULL;
    auth_job_free(job);
    if (owner)
        cb(owner, result);
    while (f) {
        struct auth_job *next = f->next;
        int r = settle(aw, f, verdict);
        void *fo = f->owner;
        void (*fcb)(void *, int) = f->cb;
        auth_job_free(f);
        if (fo)
            fcb(fo, r);
        f = next;
    }
}

/* The helper backend, on a verifier thread. */
static int check_helper(const struct auth_job *job)
{
    return helper_pool_check(job->helpers, job->user, job->ulen, job->pass, job->plen);
}

/* The PAM backend, on a verifier thread. */
static int check_pam(const struct auth_job *job)
{
    char ip[ADDR_STRLEN];
    return auth_pam_check(job->service, job->user, job->ulen, job->pass, job->plen,
                          addr_format_ip(&job->client, ip, sizeof(ip)));
}

/* What runs a job on the pool: the backend of p (u: the userlist's entry,
 * NULL for an unknown user or an external backend), and where its
 * verdict goes. */
static void job_fill(struct auth_job *job, struct auth_worker *aw, const struct auth_params *p,
                     const struct user *u)
{
    job->port = &aw->port;
    job->done = auth_job_done;
    job->aw = aw;
    job->u = u;
    if (p->backend == AUTH_BACKEND_HELPER) {
        job->check = check_helper;
        job->helpers = &aw->a->helpers;
    } else if (p->backend == AUTH_BACKEND_PAM) {
        job->check = check_pam;
        snprintf(job->service, sizeof(job->service), "%s", p->pam_service);
    } else {
        job->ul = userlist_ref(p->ul);
    }
}

/* A job on the pool for exactly these credentials (same name, password and
 * user entry), or NULL. Only cacheable attempts are matched: the probe is a
 * keyed hash of name and password. */
static struct auth_job *inflight_find(struct auth_worker *aw, const struct auth_cache_probe *probe,
                                      uint64_t version)
{
    for (struct auth_job *j = aw->inflight; j; j = j->inflight_next)
        if (j->cache_ttl_ms && j->version == version && auth_cache_probe_equal(&j->probe, probe))
            return j;
    return NULL;
}

int auth_begin(struct auth_worker *aw, const struct auth_params *p, const struct addr *client,
               const char *user, size_t ulen, const char *pass, size_t plen,
               void (*cb)(void *owner, int result), void *owner, struct auth_job **jobp)
{
    *jobp = NULL;
    uint64_t now = loop_now(aw->l);
    if (throttle_blocked(&aw->a->t, client, now)) {
        stat_add(&aw->stats->throttled, 1);
        return AUTH_THROTTLED;
    }
    bool external = p->backend != AUTH_BACKEND_USERLIST;
    const struct user *u = external ? NULL : userlist_find(p->ul, user, ulen);
    uint64_t version = external ? p->generation : u ? u->version : 0;
    /* The probe names the guess for the throttle, and the cache entry. */
    struct auth_cache_probe probe;
    auth_cache_probe(&aw->cache, user, ulen, pass, plen, &probe);
    uint64_t key = guess_key(&probe);
    bool use_cache = p->cache_ttl_ms > 0 && (u || external);
    if (use_cache) {
        if (auth_cache_check(&aw->cache, &probe, version, now)) {
            stat_add(&aw->stats->ok, 1);
            stat_add(&aw->stats->cache_hits, 1);
            return AUTH_OK;
        }
        /* Verified on another worker: remember it here too, until the
         * same expiry. */
        uint64_t until;
        if (auth_shared_check(&aw->a->shared, &probe, version, now, &until)) {
            auth_cache_store(&aw->cache, &probe, version, now, (uint32_t)(until - now));
            stat_add(&aw->stats->ok, 1);
            stat_add(&aw->stats->cache_hits, 1);
            stat_add(&aw->stats->cache_shared_hits, 1);
            return AUTH_OK;
        }
    }
    /* Identical attempts (the same key) in flight are one guess, whether
     * they wait on one verification here or run their own on other
     * workers: a burst of right logins from one address never throttles
     * itself, while distinct guesses in parallel are each counted. */
    if (!throttle_begin(&aw->a->t, client, now, key)) {
        stat_add(&aw->stats->throttled, 1);
        return AUTH_THROTTLED;
    }
    /* The same credentials are being verified right now (clients that all
     * come back at once after a restart or an expiry): wait for that
     * verdict rather than queue another Argon2id for it. */
    struct auth_job *leader = use_cache ? inflight_find(aw, &probe, version) : NULL;
    if (leader) {
        struct auth_job *f = calloc(1, sizeof(*f));
        if (!f) {
            throttle_end(&aw->a->t, client, now, key, false);
            stat_add(&aw->stats->busy, 1);
            return AUTH_BUSY;
        }
        f->owner = owner;
        f->cb = cb;
        f->aw = aw;
        f->client = *client;
        f->version = leader->version;
        f->cache_ttl_ms = leader->cache_ttl_ms;
        f->probe = probe;
        f->next = leader->followers;
        leader->followers = f;
        stat_add(&aw->stats->shared, 1);
        *jobp = f;
        return AUTH_PENDING;
    }
    struct auth_job *job = calloc(1, sizeof(*job));
    if (!job) {
        throttle_end(&aw->a->t, client, now, key, false);
        stat_add(&aw->stats->busy, 1);
        return AUTH_BUSY;
    }
    job_fill(job, aw, p, u);
    job->owner = owner;
    job->cb = cb;
    job->client = *client;
    job->version = version;
    job->cache_ttl_ms = use_cache ? p->cache_ttl_ms : 0;
    job->probe = probe;
    job->ulen = (uint8_t)ulen;
    job->plen = (uint8_t)plen;
    memcpy(job->user, user, ulen);
    memcpy(job->pass, pass, plen);
    if (verifier_submit(&aw->a->v, job) < 0) {
        auth_job_free(job);
        throttle_end(&aw->a->t, client, now, key, false);
        stat_add(&aw->stats->busy, 1);
        return AUTH_BUSY;
    }
    if (use_cache) {
        job->inflight_next = aw->inflight;
        aw->inflight = job;
    }
    *jobp = job;
    return AUTH_PENDING;
}

void auth_abandon(struct auth_job *job)
{
    if (job)
        job->owner = NULL; /* the verdict is still counted, then dropped */
}

const char *auth_result_str(int result)
{
    switch (result) {
    case AUTH_OK:
        return "ok";
    case AUTH_PENDING:
        return "pending";
    case AUTH_DENIED:
        return "denied";
    case AUTH_THROTTLED:
        return "throttled";
    case AUTH_BUSY:
        return "busy";
    default:
        return "?";
    }
}
