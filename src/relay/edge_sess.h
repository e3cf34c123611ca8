/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_sess.h: what an edge-mode session holds beside its struct conn
 * (c->edge), shared by the two files of edge mode's front: front_edge.c
 * (accept, sniff, signature, route, dial) and edge_serve.c (Minecraft
 * status answered at the edge). Nothing else includes it.
 */
#ifndef FERRY_RELAY_EDGE_SESS_H
#define FERRY_RELAY_EDGE_SESS_H

#include <stdbool.h>
#include <stdint.h>

#include "config/edge.h"
#include "proto/hostpat.h"
#include "proto/mcsniff.h"
#include "util/addr.h"

struct conn;

struct edge_sess {
    const struct config_edge *e;
    int32_t route;                         /* -1 while none */
    struct edge_backend *be;               /* the backend dialled, NULL while none */
    bool halfopen;                         /* counted in e->live->halfopen */
    bool src_tracked;                      /* counted in the per-source table */
    bool prefix_tracked;                   /* counted in the per-prefix table */
    bool got_first;                        /* a byte came: the hello deadline runs */
    bool idle_armed, idle;                 /* the short legacy-ping timer, and it fired */
    bool counted_active;                   /* be->active holds this session */
    bool flood;                            /* refused at accept by a flood limit: no access line */
    uint8_t sniffed;                       /* EDGE_SNIFF_MC or _TLS once known; 0 (auto) before */
    bool have_mh;                          /* mh holds a modern Minecraft handshake */
    bool vouched_set;                      /* a hop signature named the client: vouched */
    int8_t signed_result;                  /* enum signkey_result; -1: not asked */
    bool serving;                          /* edge_serve.c answers the client itself */
    bool answered;                         /* ... and has sent the status */
    bool waiting;                          /* ... for another session's fetch of the version */
    const struct edge_route *status_route; /* ... the route asked */
    struct serve_fetch *fetch; /* ... its own fetch of it (edge_serve.c), NULL when none */
    uint64_t wait_until;       /* loop ms: waiting ends, whatever the other fetch does */
    uint64_t hello_deadline;   /* loop ms */
    const char *done_why;      /* serving: the end reason once answered */
    char *json;                /* serving: the status JSON to send (heap) */
    size_t json_len;
    struct addr vouched;
    struct mc_hello mh;
    struct hostpat_caps caps;    /* what the route's '*' labels captured of host */
    char host[HOSTNAME_MAX + 1]; /* canonical, as the client sent it */
    char dst[HOSTNAME_MAX + 1];  /* a named backend: its name, expanded; "" otherwise */
};

/* edge_flood.c: the defences at accept, cheapest first (lists, bans, the
 * half-open cap, per-source and per-prefix caps and rates). EDGE_REJ_COUNT
 * to admit, else the reason to refuse; s->halfopen is set once counted. */
int edge_flood_admit(struct conn *c, struct edge_sess *s);
/* Take the halfopen count off (the first message is complete). */
void edge_halfopen_done(struct edge_sess *s);
/* Is r a refusal at accept (reset, no access line, flood log)? */
bool edge_flood_refusal(enum edge_reject r);
/* c is refused for r (why: its end reason): a failure that feeds the bans
 * (ban_after) is counted, and the source banned when it is the last one. */
void edge_flood_failed(struct conn *c, enum edge_reject r, const char *why);
/* The session ends: give back what the per-source and per-prefix tables hold. */
void edge_flood_release(struct conn *c, struct edge_sess *s);

/* edge_serve.c: a modern status request (intent 1) for route r, answered
 * at the edge when the edge can (status_cache, offline_motd and the
 * backends' health decide): from the cache for the client's version, a
 * fetch of it, or a fallback. true: it took the session over (and may
 * have ended it already). */
bool edge_serve_status(struct conn *c, const struct edge_route *r);
/* A legacy ping (mh.kind), answered at once (r: its route, or NULL), then
 * closed. */
void edge_serve_legacy(struct conn *c, const struct edge_route *r);
/* Events and the timer of a session being served. */
void edge_serve_drive(struct conn *c);
void edge_serve_timeout(struct conn *c);
/* The session ends: a fetch it runs is given up. */
void edge_serve_end(struct conn *c);

#endif
