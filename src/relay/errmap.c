/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap.c: failures to reply codes. RFC 1928 section 6 has few codes; each
 * errno below is placed where an operator reading the reply would look.
 */
#include "relay/errmap.h"

#include <errno.h>
#include <string.h>

#include "dns/resolver.h"
#include "proto/socks5.h"

uint8_t errmap_socks5_connect(int err)
{
    switch (-err) {
    case ECONNREFUSED:
        return SOCKS5_REP_CONNECTION_REFUSED;
    case ENETUNREACH:
    case ENETDOWN:
        return SOCKS5_REP_NETWORK_UNREACHABLE;
    case EHOSTUNREACH:
    case EHOSTDOWN:
        return SOCKS5_REP_HOST_UNREACHABLE;
    case ETIMEDOUT:
        return SOCKS5_REP_TTL_EXPIRED;
    case EACCES:
    case EPERM:
        return SOCKS5_REP_NOT_ALLOWED; /* the host's own firewall said no */
    case EAFNOSUPPORT:
        return SOCKS5_REP_ATYP_NOT_SUPPORTED; /* e.g. IPv6 disabled on this host */
    default:
        return SOCKS5_REP_GENERAL_FAILURE;
    }
}

uint8_t errmap_socks5_dns(int status)
{
    (void)status; /* not found, timeout or server failure: the host cannot be reached */
    return SOCKS5_REP_HOST_UNREACHABLE;
}

const char *errmap_name(int err)
{
    if (err < 0)
        err = -err;
    const char *n = err ? strerrorname_np(err) : NULL;
    return n ? n : "E?";
}
