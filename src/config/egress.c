/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * egress.c: how an operator says where bytes leave this host: a source
 * address or device, and which address family a name's addresses are
 * tried in (outbound.h).
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>

#include "config/outbound.h"

int config_source_parse(const char *text, struct outbound_source *out)
{
    if (!strncmp(text, "device=", 7)) {
        const char *d = text + 7;
        size_t n = strlen(d);
        if (n == 0 || n >= sizeof(out->device) || n >= IF_NAMESIZE || strpbrk(d, "/ \t:"))
            return -EINVAL;
        memcpy(out->device, d, n + 1);
        return 0;
    }
    struct addr a;
    if (addr_parse_ip(text, 0, &a))
        return -EINVAL;
    out->addr = a;
    return 0;
}

static const char *const pref_names[] = {"any", "ipv4", "ipv6", "ipv4-first", "ipv6-first"};

int outbound_ip_preference_parse(const char *text, uint8_t *out)
{
    for (uint8_t i = 0; i < sizeof(pref_names) / sizeof(pref_names[0]); i++) {
        if (!strcmp(text, pref_names[i])) {
            *out = i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *outbound_ip_preference_name(uint8_t p)
{
    return p < sizeof(pref_names) / sizeof(pref_names[0]) ? pref_names[p] : "?";
}
