/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap.c: failures to outcomes, outcomes to answers, in one table. RFC
 * 1928 section 6 has few codes and SOCKS4 only "rejected"; each errno below
 * is placed where an operator reading the reply would look. A new front
 * protocol adds a column here, not a translation of another protocol's
 * code. Pure: no I/O, no state.
 */
#include "relay/errmap.h"

#include <errno.h>
#include <string.h>

#include "dns/resolver.h"
#include "proto/socks4.h"
#include "proto/socks5.h"

struct errmap_row {
    uint8_t socks5;   /* REP */
    uint8_t socks4;   /* CD */
    uint16_t http;    /* status */
    uint8_t stats;    /* enum stats_outcome */
    const char *text; /* HTTP error body */
};

#define FAILED_TEXT "ferry: the connection to the destination failed"

static const struct errmap_row rows[OUT_COUNT] = {
    [OUT_NONE] = {SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 502, OC_UNSET, FAILED_TEXT},
    [OUT_OK] = {SOCKS5_REP_SUCCEEDED, SOCKS4_GRANTED, 200, OC_OK, ""},
    [OUT_DENIED] = {SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 403, OC_DENIED,
                    "ferry: the destination is not allowed"},
    [OUT_AUTH_FAILED] = {SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 407, OC_AUTH_FAILED,
                         "ferry: proxy authentication failed"},
    [OUT_LIMIT] = {SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 429, OC_LIMITED,
                   "ferry: too many sessions; try again later"},
    [OUT_NAME_UNRESOLVED] = {SOCKS5_REP_HOST_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
                             "ferry: the destination name does not resolve"},
    [OUT_HOST_UNREACHABLE] = {SOCKS5_REP_HOST_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
                              "ferry: the destination host is unreachable"},
    [OUT_NET_UNREACHABLE] = {SOCKS5_REP_NETWORK_UNREACHABLE, SOCKS4_REJECTED, 502, OC_UNREACHABLE,
                             "ferry: the destination network is unreachable"},
    [OUT_REFUSED] = {SOCKS5_REP_CONNECTION_REFUSED, SOCKS4_REJECTED, 502, OC_REFUSED,
                     "ferry: the destination refused the connection"},
    [OUT_TIMEOUT] = {SOCKS5_REP_TTL_EXPIRED, SOCKS4_REJECTED, 504, OC_TIMEOUT,
                     "ferry: the destination did not answer in time"},
    [OUT_CMD_UNSUPPORTED] = {SOCKS5_REP_COMMAND_NOT_SUPPORTED, SOCKS4_REJECTED, 501, OC_UNSUPPORTED,
                             "ferry: not supported"},
    [OUT_ADDR_UNSUPPORTED] = {SOCKS5_REP_ATYP_NOT_SUPPORTED, SOCKS4_REJECTED, 502, OC_UNSUPPORTED,
                              FAILED_TEXT},
    [OUT_BAD_REQUEST] = {SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 400, OC_BAD_REQUEST,
                         "ferry: malformed request"},
    [OUT_FAILED] = {SOCKS5_REP_GENERAL_FAILURE, SOCKS4_REJECTED, 502, OC_ERROR, FAILED_TEXT},
    /* "Not allowed by ruleset" and 403, not 429: trying again soon does
     * not help, the quota's period must end (or the operator raise it). */
    [OUT_QUOTA] = {SOCKS5_REP_NOT_ALLOWED, SOCKS4_REJECTED, 403, OC_QUOTA,
                   "ferry: this user's quota is used up"},
    /* The destination is not at fault: the tunnel that carries sessions
     * is down (a reconnect is on its way). 503 says so, with a hint when
     * to try again (below); SOCKS5 has only "network unreachable". */
    [OUT_TUNNEL_DOWN] = {SOCKS5_REP_NETWORK_UNREACHABLE, SOCKS4_REJECTED, 503, OC_UNREACHABLE,
                         "ferry: the tunnel to the server is down; try again later"},
};

/* Retry-After seconds of the HTTP error reply; 0: none. */
static const uint8_t retry_after[OUT_COUNT] = {
    [OUT_TUNNEL_DOWN] = 5,
};

static const struct errmap_row *row(enum outcome o)
{
    return (unsigned)o < OUT_COUNT && o != OUT_NONE ? &rows[o] : &rows[OUT_FAILED];
}

enum outcome errmap_connect(int err)
{
    switch (-err) {
    case ECONNREFUSED:
        return OUT_REFUSED;
    case ENETUNREACH:
    case ENETDOWN:
        return OUT_NET_UNREACHABLE;
    case EHOSTUNREACH:
    case EHOSTDOWN:
        return OUT_HOST_UNREACHABLE;
    case ETIMEDOUT:
        return OUT_TIMEOUT;
    case EACCES:
    case EPERM:
        return OUT_DENIED; /* the host's own firewall said no */
    case EAFNOSUPPORT:
        return OUT_ADDR_UNSUPPORTED; /* e.g. IPv6 disabled on this host */
    default:
        return OUT_FAILED;
    }
}

enum outcome errmap_dns(int status)
{
    (void)status; /* not found, timeout or server failure: the name cannot be used */
    return OUT_NAME_UNRESOLVED;
}

uint8_t errmap_socks5(enum outcome o)
{
    return row(o)->socks5;
}

uint8_t errmap_socks4(enum outcome o)
{
    return row(o)->socks4;
}

int errmap_http_status(enum outcome o)
{
    return row(o)->http;
}

const char *errmap_http_text(enum outcome o)
{
    return row(o)->text;
}

unsigned errmap_http_retry_after(enum outcome o)
{
    return (unsigned)o < OUT_COUNT ? retry_after[o] : 0;
}

enum stats_outcome errmap_stats(enum outcome o)
{
    if (o == OUT_NONE)
        return OC_UNSET;
    return (enum stats_outcome)row(o)->stats;
}

const char *errmap_name(int err)
{
    if (err < 0)
        err = -err;
    const char *n = err ? strerrorname_np(err) : NULL;
    return n ? n : "E?";
}
