/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * internal.h: what the files of admin/ share (admin.c: the object, the
 * token and the routes; api.c: the JSON API; page.c: the HTML page;
 * assets.c: the embedded files). Not for use outside admin/.
 */
#ifndef FERRY_ADMIN_INTERNAL_H
#define FERRY_ADMIN_INTERNAL_H

#include <stddef.h>

#include "admin/admin.h"
#include "admin/ring.h"
#include "admin/snap.h"
#include "crypto/fcrypto.h"
#include "log/recent.h"
#include "metrics/render.h"

struct config;

#define ADMIN_WAIT_MS 1000 /* how long a request waits for the workers */

struct admin {
    struct worker *ws;
    unsigned nw;
    struct metrics_source src; /* for counter sums */
    struct metrics_admin hooks;
    struct ring ring;
    uint8_t key[FCRYPTO_KEY_LEN]; /* per process: token comparison and the cookie */
    admin_user_totals_fn user_totals;
    void *user_totals_arg;
};

/* One request as the routes see it. */
struct admin_rq {
    struct admin *a;
    struct metrics *m;
    const struct config *cfg;
    const struct metrics_req *rq;
    struct metrics_reply *rp;
    bool cookie; /* authenticated by the page's cookie (not a bearer token) */
};

/* The live figures of the page's header, summed now. */
struct admin_live {
    struct ring_totals tot;
    uint64_t auth_denied, auth_throttled, auth_busy, auth_cache_hits;
    uint64_t udp_datagrams_in, udp_datagrams_out;
    uint64_t edge_routes; /* routes configured */
    double uptime_s;
};
void admin_live(struct admin *a, const struct config *cfg, struct admin_live *out);

/* Ask the workers for a look at their sessions (SNAP_LOOK): limit rows,
 * user filter ("" none), users summed when with_users, clients when
 * with_clients. NULL: out of memory. *answered: workers that answered. */
struct snap_query *admin_look(struct admin *a, const struct config *cfg, size_t limit,
                              const char *user, bool with_users, bool with_clients,
                              unsigned *answered);
/* The top n clients by bytes of q's answered parts, merged; returns how
 * many went into out. */
size_t admin_top_clients(const struct snap_query *q, struct snap_client *out, size_t n);
/* The rows of q's answered parts, the largest by bytes first, at most
 * limit; *out is malloc'd (free it). Returns the count. */
size_t admin_rows(const struct snap_query *q, size_t limit, struct snap_row **out);

/* A value of a query string ("a=1&b=2"): 0 and the decoded value into
 * out, or -1 when absent or too long. */
int admin_query_param(const char *query, const char *name, char *out, size_t cap);
/* JSON: s as a quoted string. */
void admin_json_str(struct mtext *t, const char *s);
/* One session of a look as the API's JSON object: id, client,
 * user, protocol, state, destination, outbound, bytes, age, idle, worker. */
void admin_session_json(struct mtext *t, const struct snap_row *s);
/* HTML: s escaped for text and attribute values. */
void admin_html(struct mtext *t, const char *s);
/* "12.3 MB" style (1000-based), into buf. */
const char *admin_bytes(double v, char *buf, size_t cap);

/* A JSON error {"error": msg} with status. */
void admin_error(struct admin_rq *r, int status, const char *msg);

/* status.c: what the page shows, gathered once for the JSON and the HTML. */
#define VIEW_TOP  10 /* top clients and users */
#define VIEW_ROWS 50 /* session rows */
struct view_user {
    const char *name; /* in q->ul */
    uint64_t sessions, up, down;
};
struct admin_view {
    struct admin_live live;
    struct snap_query *q;
    unsigned answered;
    uint64_t sessions; /* open sessions the workers that answered have */
    struct snap_client clients[VIEW_TOP];
    size_t nclients;
    struct view_user users[VIEW_TOP];
    size_t nusers;
    struct snap_row *rows;
    size_t nrows;
    struct log_recent errs[LOG_RECENT_N];
    size_t nerrs;
};
/* 0, or -ENOMEM (nothing to fini). */
int admin_view_gather(struct admin_rq *r, struct admin_view *v);
void admin_view_fini(struct admin_view *v);
/* The hits of rule i (acl->n: the default action) summed over workers. */
uint64_t admin_rule_hits(const struct admin_rq *r, uint32_t i);
/* GET /api/status (the page's figures and tables) and /api/history. */
void admin_status_json(struct admin_rq *r);
void admin_history_json(struct admin_rq *r);

/* The per-user accounting's figures of user as JSON (an object, or null
 * while no room registered admin_set_user_totals or it knows nothing). */
void admin_totals_json(struct admin_rq *r, const char *user);

/* api.c: /api/... paths (authenticated already). */
void admin_api(struct admin_rq *r);
/* page.c: /status, and the login page. */
void admin_page(struct admin_rq *r);
void admin_login_page(struct admin_rq *r, int status, const char *msg);

/* assets.c: an embedded file by name ("app.js"), or NULL. */
const unsigned char *admin_asset(const char *name, size_t *len, const char **ctype);

#endif
