/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * owner.h: what an association tells and asks its owner (the control
 * session that opened it, relay/socks.c or a tunnel's end), shared by the
 * rooms of udp/ that move datagrams (udp.c directly, parent.c through a
 * SOCKS5 parent, tunnel.c through a tunnel): activity, each new
 * destination's verdict, the end, and the bandwidth budget of a batch.
 *
 * It sits below them all, so each of them calls the owner here rather
 * than through another: udp.c calls down into parent.c and tunnel.c, and
 * neither of those calls back up into udp.c. Nothing here sends, receives
 * or allocates.
 */
#ifndef FERRY_UDP_OWNER_H
#define FERRY_UDP_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"

struct udp_assoc;

/* What the rules say about a destination of an association. */
enum udp_verdict {
    UDP_DENY,    /* dropped, counted as denied */
    UDP_ALLOW,   /* *ob is the way out */
    UDP_NEED_IP, /* only its address can tell: resolve the name first */
};

/* The owner's side of an association (copied at open).
 *
 * on_activity(arg) is called (at most once per batch) when datagrams
 * move, so the owner can track idleness. route(arg, name or NULL, ip or
 * NULL, port, &ob) judges each new destination with the rules: a name
 * alone (ip NULL, only when a rule can send datagrams to a parent), an
 * address, or both (a name resolved here); UDP_ALLOW sets *ob to an index
 * into the config's outbounds (direct, a SOCKS5 parent, ...). on_end(arg,
 * why) says the association cannot go on (its parent went away): the
 * owner closes it (udp_assoc_close), from inside the call or later. */
struct udp_owner {
    void (*on_activity)(void *arg);
    enum udp_verdict (*route)(void *arg, const char *name, const struct addr *ip, uint16_t port,
                              uint16_t *ob);
    void (*on_end)(void *arg, const char *why);
    void *arg;
};

/* What a batch may still move under the bandwidth limits, and what it did. */
struct udp_budget {
    uint64_t left; /* UINT64_MAX: no limit */
    uint64_t spent;
};

/* Tell the owner datagrams moved. */
void udp_activity(struct udp_assoc *a);
/* The owner's verdict on a new destination (name or NULL, ip or NULL, at
 * port); *ob starts as the default outbound and is what UDP_ALLOW sends
 * it through. Without a route callback everything is allowed. */
enum udp_verdict udp_route(struct udp_assoc *a, const char *name, const struct addr *ip,
                           uint16_t port, uint16_t *ob);
/* Tell the owner the association cannot go on (why: for the log); it may
 * close a from inside the call. */
void udp_end(struct udp_assoc *a, const char *why);
/* Ask once per batch for at most want bytes (an upper bound of what the
 * batch carries). */
struct udp_budget udp_budget_start(struct udp_assoc *a, uint64_t want);
/* Does a payload of len bytes fit what is left? Counts the drop if not. */
bool udp_budget_fits(struct udp_assoc *a, const struct udp_budget *b, size_t len);
/* len bytes of the budget are used. */
void udp_budget_take(struct udp_budget *b, size_t len);
/* Tell the owner what the batch spent. */
void udp_budget_end(struct udp_assoc *a, const struct udp_budget *b);

#endif
