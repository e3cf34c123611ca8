/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * auth.h: username/password authentication as a session sees it, for any
 * protocol (SOCKS5's RFC 1929 today, HTTP Basic later). One call decides:
 * refused at once (throttled client, full queue), accepted at once (a
 * cached success), or pending (an Argon2 verification on the pool, whose
 * verdict comes back later on the worker's loop).
 */
#ifndef FERRY_AUTH_AUTH_H
#define FERRY_AUTH_AUTH_H

#include <stdint.h>

#include "auth/cache.h"
#include "auth/helper.h"
#include "auth/shared.h"
#include "auth/throttle.h"
#include "auth/userlist.h"
#include "auth/verifier.h"
#include "core/loop.h"
#include "core/stats.h"
#include "util/addr.h"

enum auth_result {
    AUTH_PENDING = 1,    /* the callback will give the verdict */
    AUTH_OK = 0,         /* accepted (a cached success) */
    AUTH_DENIED = -1,    /* wrong name or password */
    AUTH_THROTTLED = -2, /* this client failed too often; not verified */
    AUTH_BUSY = -3,      /* the verifier queue is full; not verified */
};

/* Where passwords are checked: exactly one per configuration. */
enum auth_backend {
    AUTH_BACKEND_USERLIST, /* the userlist file, Argon2id on the pool */
    AUTH_BACKEND_HELPER,   /* external helpers (helper.h), Squid's protocol */
    AUTH_BACKEND_PAM,      /* PAM (pam.h) */
};

/* Process-wide: the pool, the throttle, the cache keys and the cache
 * shared by all workers. Owned by the server. */
struct auth {
    struct verifier v;
    struct throttle t;
    struct auth_keys keys;
    struct auth_shared shared;
    struct helper_pool helpers; /* idle until a configuration names a helper */
};

/* Per worker, touched only by its thread. */
struct auth_worker {
    struct auth *a;
    struct loop *l;
    struct auth_cache cache;
    struct auth_port port;
    struct auth_job *inflight; /* jobs on the pool that may take followers */
    struct auth_stats own;     /* used until the owner points stats elsewhere */
    struct auth_stats *stats;  /* counters: the worker's, for the metrics endpoint */
};

/* What a session authenticates against (made from its configuration). */
struct auth_params {
    struct userlist *ul; /* AUTH_BACKEND_USERLIST */
    uint32_t cache_ttl_ms;
    enum auth_backend backend;
    const char *pam_service; /* AUTH_BACKEND_PAM */
    /* External backends' successes are cached under this version: it
     * changes at every reload, so a SIGHUP ends what they had cached. */
    uint64_t generation;
};

/* shared_entries: slots of the cache shared by all workers. The helper
 * pool starts empty: helper_pool_configure(&a->helpers, ...) gives it a
 * command. */
int auth_start(struct auth *a, unsigned workers, unsigned queue, uint32_t track,
               uint32_t max_failures, uint32_t window_ms, uint32_t block_ms,
               uint32_t shared_entries);
/* Stops the verifier threads, then the helpers. */
void auth_stop(struct auth *a);

int auth_worker_init(struct auth_worker *aw, struct auth *a, struct loop *l,
                     uint32_t cache_entries);
void auth_worker_fini(struct auth_worker *aw);

/* Start authenticating. On AUTH_PENDING, *job is the handle to pass to
 * auth_abandon() if the session ends first, and cb(owner, result) runs
 * later on this worker's loop with AUTH_OK or AUTH_DENIED (or
 * AUTH_THROTTLED). An external backend that gives no verdict (a helper
 * that crashed or timed out, a PAM system error) is AUTH_DENIED too: it
 * fails closed: counted as unavailable, and as a failure by the throttle. */
int auth_begin(struct auth_worker *aw, const struct auth_params *p, const struct addr *client,
               const char *user, size_t ulen, const char *pass, size_t plen,
               void (*cb)(void *owner, int result), void *owner, struct auth_job **job);
/* The session is gone: its verdict will be dropped. */
void auth_abandon(struct auth_job *job);

const char *auth_result_str(int result);

#endif
