/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.c: which row carries a configured outbound, and what a failed
 * dial does. A minimal stand-in until the session routing lands: every
 * failure ends the session (no pool tries a next member here). It must
 * not learn any front protocol.
 */
#include "relay/outbound.h"

#include "relay/session.h"

const struct outbound_ops *outbound_ops_for(const struct config_outbound *o)
{
    switch ((enum outbound_kind)o->kind) {
    case OUTBOUND_KIND_DIRECT:
        return &outbound_direct;
    case OUTBOUND_KIND_SOCKS5:
    case OUTBOUND_KIND_SOCKS4:
    case OUTBOUND_KIND_HTTP:
        return &outbound_parent;
    case OUTBOUND_KIND_REJECT:
    case OUTBOUND_KIND_HTTPS:
    case OUTBOUND_KIND_POOL:
        break;
    }
    return NULL;
}

void outbound_fail(struct conn *c, enum outcome o, const char *why)
{
    conn_fail(c, o, why);
}
