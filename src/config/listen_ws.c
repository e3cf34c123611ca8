/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * listen_ws.c: the listen line's WebSocket options (ferry.conf(5)):
 * "websocket=/PATH" makes the listener answer an HTTP/1.1 Upgrade:
 * websocket to that path with the HTTP/2 tunnel inside (relay/front_ws.c),
 * and "decoy=HOST:PORT" sends any other origin-form request there as it
 * came, instead of a 404. It only parses and checks what the words say.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "util/parse.h"

int config_listen_ws(struct config_listen *l, const char *word, char *why, size_t len)
{
    if (strncmp(word, "websocket=", 10) == 0) {
        const char *p = word + 10;
        size_t n = strlen(p);
        if (p[0] != '/' || n >= sizeof(l->ws_path) || strpbrk(p, "?# \t")) {
            snprintf(why, len,
                     "websocket: '%s' is not a path (expected e.g. /tunnel, at most %zu bytes, "
                     "no query)",
                     p, sizeof(l->ws_path) - 1);
            return -EINVAL;
        }
        memcpy(l->ws_path, p, n + 1);
        return 0;
    }
    int rc = parse_host_port(word + 6, l->decoy_host, sizeof(l->decoy_host), &l->decoy_port);
    if (rc) {
        snprintf(why, len, "decoy: '%s' %s", word + 6,
                 rc == -ERANGE ? "has a port outside 1-65535"
                               : "is not HOST:PORT (expected e.g. 127.0.0.1:8080)");
        return -EINVAL;
    }
    return 0;
}

void config_listen_ws_check(const struct config_listen *l, struct msglist *errs)
{
    if (l->decoy_port && !l->ws_path[0])
        msglist_push(errs, "%s: listen: decoy=%s:%u needs websocket=/PATH on the same listener",
                     l->origin, l->decoy_host, l->decoy_port);
    if (l->ws_path[0] && (l->forward_port || l->edge))
        msglist_push(errs,
                     "%s: listen: websocket=%s is for proxy listeners (not forward= or "
                     "[edge])",
                     l->origin, l->ws_path);
    else if (l->ws_path[0] && l->protocols && !(l->protocols & PROTO_HTTP))
        msglist_push(errs,
                     "%s: listen: websocket=%s needs http in protocols= (the Upgrade is "
                     "an HTTP request)",
                     l->origin, l->ws_path);
}
