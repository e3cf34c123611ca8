/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp_forward.c: [udp] forward = [ADDR:]PORT HOST:PORT, a UDP port
 * forward (relay/front_udp.c serves it): datagrams to ADDR:PORT (127.0.0.1
 * when ADDR is left out; IPv6 in brackets) go to HOST:PORT through the
 * default outbound, one association per source address. The key repeats,
 * up to CONFIG_UDP_FORWARDS_MAX times.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "util/parse.h"

int config_udp_forward_add(struct config *c, const char *v, const char **why)
{
    struct config_udp *u = &c->udp;
    if (u->nforwards >= CONFIG_UDP_FORWARDS_MAX) {
        *why = "is one forward too many (at most 32)";
        return -1;
    }
    const char *sp = strchr(v, ' ');
    char lis[80];
    if (!sp || (size_t)(sp - v) >= sizeof(lis)) {
        *why = "is not two words";
        return -1;
    }
    snprintf(lis, sizeof(lis), "%.*s", (int)(sp - v), v);
    while (*sp == ' ')
        sp++;
    struct config_udp_forward *f = &u->forwards[u->nforwards];
    memset(f, 0, sizeof(*f));
    char full[96];
    bool port_only = strspn(lis, "0123456789") == strlen(lis);
    snprintf(full, sizeof(full), port_only ? "127.0.0.1:%s" : "%s", lis);
    if (addr_parse(full, -1, &f->listen) || !f->listen.port) {
        *why = "names no listen address and port";
        return -1;
    }
    if (parse_host_port(sp, f->host, sizeof(f->host), &f->port) || !f->port) {
        *why = "names no destination HOST:PORT";
        return -1;
    }
    u->nforwards++;
    return 0;
}
