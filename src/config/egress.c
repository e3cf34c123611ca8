/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * egress.c: where bytes leave this host, as the configuration says it:
 * ip_preference (which addresses of a name a direct dial tries) and the
 * source of outgoing connections (source = ADDR, device = NAME), for the
 * top level, listen lines and [outbound NAME] sections alike. Parsing only:
 * the relay orders addresses and binds sockets.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/outbound.h"
#include "util/compiler.h"

static const char *const ip_pref_names[] = {
    [IP_PREF_ANY] = "any",
    [IP_PREF_IPV4] = "ipv4",
    [IP_PREF_IPV6] = "ipv6",
    [IP_PREF_IPV4_FIRST] = "ipv4-first",
    [IP_PREF_IPV6_FIRST] = "ipv6-first",
};

int outbound_ip_preference_parse(const char *text, uint8_t *out)
{
    for (size_t i = 0; i < ARRAY_LEN(ip_pref_names); i++) {
        if (strcasecmp(text, ip_pref_names[i]) == 0) {
            *out = (uint8_t)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *outbound_ip_preference_name(uint8_t p)
{
    return p < ARRAY_LEN(ip_pref_names) ? ip_pref_names[p] : "?";
}

int config_source_parse(const char *text, struct outbound_source *out)
{
    struct addr a;
    if (addr_parse_ip(text, 0, &a))
        return -EINVAL;
    addr_unmap(&a);
    out->addr = a;
    return 0;
}

int config_device_parse(const char *text, struct outbound_source *out)
{
    size_t n = strlen(text);
    if (n == 0 || n >= sizeof(out->device) || n >= IF_NAMESIZE || strpbrk(text, "/: \t"))
        return -EINVAL;
    if (if_nametoindex(text) == 0)
        return -ENODEV;
    memcpy(out->device, text, n + 1);
    return 0;
}
