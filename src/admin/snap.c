/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * snap.c: the queries of snap.h. The asking side (snap_new, snap_run,
 * snap_put) runs on the metrics thread; the answering side (on_call and
 * what it calls) runs on each worker's thread and reads its sessions
 * through relay's conn_view, or ends them with conn_end.
 */
#include "admin/snap.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "auth/userlist.h"
#include "core/loop.h"
#include "relay/conn.h"

static void snap_free(struct snap_query *q)
{
    for (unsigned i = 0; i < q->nparts; i++) {
        free(q->parts[i].rows);
        free(q->parts[i].users);
    }
    userlist_unref(q->ul);
    if (q->efd >= 0)
        close(q->efd);
    free(q);
}

struct snap_query *snap_new(unsigned nw)
{
    struct snap_query *q = calloc(1, sizeof(*q) + (size_t)nw * sizeof(q->parts[0]));
    if (!q)
        return NULL;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        free(q);
        return NULL;
    }
    q->nparts = nw;
    atomic_init(&q->refs, 1);
    return q;
}

void snap_put(struct snap_query *q)
{
    if (q && atomic_fetch_sub_explicit(&q->refs, 1, memory_order_acq_rel) == 1)
        snap_free(q);
}

/* ---- the worker's side --------------------------------------------------- */

static bool user_is(const struct conn_view *v, const char *user)
{
    return v->authed && v->user && strcmp(v->user, user) == 0;
}

static void row_fill(struct snap_row *r, const struct conn_view *v, unsigned worker, uint64_t now)
{
    memset(r, 0, sizeof(*r));
    r->id = v->id;
    r->client = *v->client;
    snprintf(r->user, sizeof(r->user), "%s", v->user ? v->user : "");
    snprintf(r->proto, sizeof(r->proto), "%s", v->proto);
    snprintf(r->state, sizeof(r->state), "%s", v->state);
    char ip[ADDR_STRLEN];
    if (v->dest_name)
        snprintf(r->dest, sizeof(r->dest), "%s:%u", v->dest_name, v->dest_port);
    else if (v->dest->family)
        snprintf(r->dest, sizeof(r->dest), "%s", addr_format(v->dest, ip, sizeof(ip)));
    snprintf(r->outbound, sizeof(r->outbound), "%s", v->outbound ? v->outbound : "");
    r->up = v->up;
    r->down = v->down;
    r->age_ms = now > v->started_ms ? now - v->started_ms : 0;
    r->idle_ms = now > v->active_ms ? now - v->active_ms : 0;
    r->worker = worker;
}

/* Sum one session into its client's entry (or other). */
static void client_add(struct snap_part *p, const struct conn_view *v)
{
    struct addr a = *v->client;
    a.port = 0;
    struct snap_client *e = NULL;
    for (size_t i = 0; i < p->nclients && !e; i++)
        if (addr_equal(&p->clients[i].addr, &a))
            e = &p->clients[i];
    if (!e && p->nclients < SNAP_CLIENTS_MAX) {
        e = &p->clients[p->nclients++];
        e->addr = a;
    }
    if (!e)
        e = &p->other;
    e->sessions++;
    e->up += v->up;
    e->down += v->down;
}

struct pick {
    uint64_t bytes;
    const struct conn *c;
};

static int pick_cmp(const void *a, const void *b)
{
    const struct pick *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* SNAP_LOOK: sum users and clients, and keep the limit sessions that
 * moved the most bytes as rows. */
static void worker_look(struct worker *w, struct snap_part *p)
{
    struct snap_query *q = p->q;
    if (q->ul)
        p->users = calloc(q->ul->n ? q->ul->n * 3 : 1, sizeof(uint64_t));
    struct pick *picks = q->limit ? malloc((w->nsessions + 1) * sizeof(*picks)) : NULL;
    size_t npicks = 0;
    for (struct list *l = w->sessions.next; l != &w->sessions; l = l->next) {
        const struct conn *c = container_of(l, struct conn, link);
        struct conn_view v;
        conn_view(c, &v);
        if (q->user[0] && !user_is(&v, q->user))
            continue;
        p->sessions++;
        if (p->users && v.authed && v.user) {
            const struct user *u = userlist_find(q->ul, v.user, strlen(v.user));
            if (u) {
                uint64_t *s = &p->users[(size_t)(u - q->ul->users) * 3];
                s[0]++;
                s[1] += v.up;
                s[2] += v.down;
            }
        }
        if (q->want_clients)
            client_add(p, &v);
        if (picks && npicks <= w->nsessions)
            picks[npicks++] = (struct pick){v.up + v.down, c};
    }
    if (!picks)
        return;
    qsort(picks, npicks, sizeof(*picks), pick_cmp);
    size_t n = npicks < q->limit ? npicks : q->limit;
    p->rows = n ? malloc(n * sizeof(*p->rows)) : NULL;
    for (size_t i = 0; p->rows && i < n; i++) {
        struct conn_view v;
        conn_view(picks[i].c, &v);
        row_fill(&p->rows[i], &v, w->id, loop_now(&w->loop));
    }
    p->nrows = p->rows ? n : 0;
    free(picks);
}

/* SNAP_CLOSE and SNAP_KICK: the sessions to end are listed first, then
 * ended: ending one may end others (an HTTP/2 connection its streams),
 * and sessions are freed only after this batch of events, so the list
 * stays valid while it is walked. */
static void worker_end(struct worker *w, struct snap_part *p)
{
    struct snap_query *q = p->q;
    struct conn **v = malloc((w->nsessions + 1) * sizeof(*v));
    size_t n = 0;
    for (struct list *l = w->sessions.next; v && l != &w->sessions && n <= w->nsessions;
         l = l->next) {
        struct conn *c = container_of(l, struct conn, link);
        struct conn_view cv;
        conn_view(c, &cv);
        if (q->op == SNAP_CLOSE ? cv.id == q->id : user_is(&cv, q->user))
            v[n++] = c;
    }
    for (size_t i = 0; i < n; i++) {
        if (conn_is_open(v[i])) {
            conn_end(v[i], q->op == SNAP_CLOSE ? "admin-close" : "admin-kick");
            p->closed++;
        }
    }
    free(v);
}

static void on_call(struct worker *w, struct worker_call *call)
{
    struct snap_part *p = container_of(call, struct snap_part, call);
    struct snap_query *q = p->q;
    if (q->op == SNAP_LOOK)
        worker_look(w, p);
    else
        worker_end(w, p);
    atomic_store_explicit(&p->done, true, memory_order_release);
    atomic_fetch_sub_explicit(&q->left, 1, memory_order_acq_rel);
    uint64_t one = 1;
    ssize_t n = write(q->efd, &one, sizeof(one));
    (void)n;
    snap_put(q);
}

/* ---- the asker's side ---------------------------------------------------- */

unsigned snap_run(struct snap_query *q, struct worker *ws, unsigned nw, int timeout_ms)
{
    if (nw > q->nparts)
        nw = q->nparts;
    atomic_store(&q->left, nw);
    for (unsigned i = 0; i < nw; i++) {
        struct snap_part *p = &q->parts[i];
        p->q = q;
        p->call.fn = on_call;
        atomic_fetch_add_explicit(&q->refs, 1, memory_order_relaxed);
        worker_call_post(&ws[i], &p->call);
    }
    uint64_t end = clock_ms() + (uint64_t)timeout_ms;
    while (atomic_load_explicit(&q->left, memory_order_acquire) > 0) {
        uint64_t now = clock_ms();
        if (now >= end)
            break;
        struct pollfd pfd = {.fd = q->efd, .events = POLLIN};
        if (poll(&pfd, 1, (int)(end - now)) > 0) {
            uint64_t v;
            ssize_t n = read(q->efd, &v, sizeof(v));
            (void)n;
        }
    }
    unsigned done = 0;
    for (unsigned i = 0; i < nw; i++)
        done += atomic_load_explicit(&q->parts[i].done, memory_order_acquire);
    return done;
}
