/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * egress.c: how an operator says where bytes leave this host: a source
 * address or device (source = / device = in [outbound NAME], source= /
 * device= on a listen line), and which address family a name's addresses
 * are tried in (ip_preference, outbound.h). Parsing only: the relay orders
 * addresses and binds sockets.
 */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <strings.h>

#include "config/outbound.h"
#include "util/compiler.h"

int config_source_parse(const char *text, struct outbound_source *out)
{
    if (!strncmp(text, "device=", 7)) {
        const char *d = text + 7;
        size_t n = strlen(d);
        if (n == 0 || n >= sizeof(out->device) || n >= IF_NAMESIZE || strpbrk(d, "/ \t:"))
            return -EINVAL;
        /* A typo is better caught at load than as a failed connect. */
        if (if_nametoindex(d) == 0)
            return -ENODEV;
        memcpy(out->device, d, n + 1);
        return 0;
    }
    struct addr a;
    if (addr_parse_ip(text, 0, &a))
        return -EINVAL;
    addr_unmap(&a);
    out->addr = a;
    return 0;
}

static const char *const pref_names[] = {
    [IP_PREF_ANY] = "any",
    [IP_PREF_IPV4] = "ipv4",
    [IP_PREF_IPV6] = "ipv6",
    [IP_PREF_IPV4_FIRST] = "ipv4-first",
    [IP_PREF_IPV6_FIRST] = "ipv6-first",
};

int outbound_ip_preference_parse(const char *text, uint8_t *out)
{
    for (uint8_t i = 0; i < ARRAY_LEN(pref_names); i++) {
        if (!strcasecmp(text, pref_names[i])) {
            *out = i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *outbound_ip_preference_name(uint8_t p)
{
    return p < ARRAY_LEN(pref_names) ? pref_names[p] : "?";
}
