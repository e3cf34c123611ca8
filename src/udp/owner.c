/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * owner.c: an association's calls to its owner (owner.h), one place for
 * udp.c, parent.c and tunnel.c: activity, verdicts, the end, and the
 * bandwidth budget asked once per batch (never per datagram, and never
 * waiting: a datagram over the budget is dropped and counted).
 */
#include "udp/owner.h"

#include "udp/assoc.h"

void udp_activity(struct udp_assoc *a)
{
    if (a->own.on_activity)
        a->own.on_activity(a->own.arg);
}

enum udp_verdict udp_route(struct udp_assoc *a, const char *name, const struct addr *ip,
                           uint16_t port, uint16_t *ob)
{
    return a->own.route ? a->own.route(a->own.arg, name, ip, port, ob) : UDP_ALLOW;
}

void udp_end(struct udp_assoc *a, const char *why)
{
    if (a->own.on_end)
        a->own.on_end(a->own.arg, why);
}

struct udp_budget udp_budget_start(struct udp_assoc *a, uint64_t want)
{
    struct udp_budget b = {UINT64_MAX, 0};
    if (a->bw_allow)
        b.left =
            want ? a->bw_allow(a->own.arg, want > UINT32_MAX ? UINT32_MAX : (uint32_t)want) : 0;
    return b;
}

bool udp_budget_fits(struct udp_assoc *a, const struct udp_budget *b, size_t len)
{
    if (len <= b->left)
        return true;
    stat_add(&a->w->stats.udp_drop_bandwidth, 1);
    return false;
}

void udp_budget_take(struct udp_budget *b, size_t len)
{
    b->left -= len;
    b->spent += len;
}

void udp_budget_end(struct udp_assoc *a, const struct udp_budget *b)
{
    if (a->bw_spend && b->spent)
        a->bw_spend(a->own.arg, b->spent > UINT32_MAX ? UINT32_MAX : (uint32_t)b->spent);
}
