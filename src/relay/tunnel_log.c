/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tunnel_log.c: the tunnel-open and tunnel-close lines (tunnel_log.h),
 * one field list (log/fields.h) rendered as text or JSON like the access
 * line.
 */
#include "relay/tunnel_log.h"

#include "config/config.h"
#include "log/fields.h"
#include "log/log.h"

void tunnel_log(const struct config *cfg, const struct tunnel_log *t)
{
    if (!cfg->access_log || !log_enabled(LOG_INFO))
        return;
    char peer[ADDR_STRLEN], local[ADDR_STRLEN];
    addr_format(t->peer, peer, sizeof(peer));
    if (t->local)
        addr_format(t->local, local, sizeof(local));
    struct log_field f[12];
    size_t n = 0;
    f[n++] = (struct log_field)LOG_FU64("tunnel", t->id);
    f[n++] = (struct log_field)LOG_FSTR("side", t->side);
    f[n++] = (struct log_field)LOG_FSTR("peer", peer);
    f[n++] = (struct log_field)LOG_FSTR("local", t->local ? local : NULL);
    f[n++] = (struct log_field)LOG_FSTR("user", t->user ? t->user : "-");
    f[n++] = (struct log_field)LOG_FSTR("via", t->via);
    f[n++] = (struct log_field)LOG_FSTR("transport", t->transport);
    if (t->end) {
        f[n++] = (struct log_field)LOG_FU64("ms", t->ms);
        f[n++] = (struct log_field)LOG_FU64("streams", t->streams);
        f[n++] = (struct log_field)LOG_FU64("up", t->up);
        f[n++] = (struct log_field)LOG_FU64("down", t->down);
        f[n++] = (struct log_field)LOG_FSTR("end", t->end);
    }
    log_fields(LOG_INFO, "access", t->end ? "tunnel-close" : "tunnel-open", f, n);
}
