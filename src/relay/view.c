/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * view.c: the face a session shows the admin API (conn.h's conn_view and
 * conn_end), so that admin/ reads and ends sessions without knowing the
 * relay's internals (front rows, outbounds, the close path).
 */
#include "config/outbound.h"
#include "relay/front.h"
#include "relay/session.h"

void conn_view(const struct conn *c, struct conn_view *v)
{
    const struct config *cfg = conn_cfg(c);
    v->id = c->id;
    v->client = &c->client;
    v->user = c->user;
    v->authed = c->authed;
    v->proto = c->front ? c->front->name : "?";
    v->state = conn_state_name((enum conn_state)c->state);
    v->dest_name = c->dst_name;
    v->dest = &c->target;
    v->dest_port = c->dst_port;
    v->outbound = c->dialed && c->ob < cfg->noutbounds ? cfg->outbounds[c->ob].name : NULL;
    v->up = c->c2u.bytes;
    v->down = c->u2c.bytes;
    v->started_ms = c->t_start;
    v->active_ms = c->last_active > c->t_start ? c->last_active : c->t_start;
}

bool conn_is_open(const struct conn *c)
{
    return c->state != CONN_ST_CLOSED;
}

void conn_end(struct conn *c, const char *why)
{
    if (conn_is_open(c))
        conn_close(c, why);
}
