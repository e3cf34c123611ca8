/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap.h: how a session ends, said once. The relay carries a neutral
 * `enum outcome` (refused, unreachable, timeout, denied...); this is the
 * one place that turns a failure (a negative errno, a DNS status) into an
 * outcome, and an outcome into each protocol's answer: a SOCKS5 REP code
 * (RFC 1928 section 6), a SOCKS4 CD code, an HTTP status with a short
 * text, and the metrics outcome of the session counters.
 */
#ifndef FERRY_RELAY_ERRMAP_H
#define FERRY_RELAY_ERRMAP_H

#include <stdint.h>

#include "core/stats.h"

enum outcome {
    OUT_NONE,             /* not settled (yet): the client left before an answer */
    OUT_OK,               /* reached: relayed, associated, bound or forwarded */
    OUT_DENIED,           /* rules, protected ranges, or this host's firewall (EACCES) */
    OUT_AUTH_FAILED,      /* bad, missing or throttled credentials */
    OUT_LIMIT,            /* limits.per_ip, limits.rate, limits.per_user, a busy verifier */
    OUT_NAME_UNRESOLVED,  /* the destination name does not resolve (DNS) */
    OUT_HOST_UNREACHABLE, /* EHOSTUNREACH, EHOSTDOWN */
    OUT_NET_UNREACHABLE,  /* ENETUNREACH, ENETDOWN */
    OUT_REFUSED,          /* the destination refused (ECONNREFUSED) */
    OUT_TIMEOUT,          /* no answer within connect_timeout (or bind_timeout) */
    OUT_CMD_UNSUPPORTED,  /* a command this proxy does not carry (or has off) */
    OUT_ADDR_UNSUPPORTED, /* an address type that cannot be used (EAFNOSUPPORT, SOCKS4 and IPv6) */
    OUT_BAD_REQUEST,      /* malformed, unknown protocol, or too slow a handshake */
    OUT_FAILED,           /* any other failure on the way (general failure) */
    OUT_QUOTA,            /* the user reached a [quota] (bytes this period, sessions at once) */
    OUT_TUNNEL_DOWN,      /* the outbound's tunnel connection stayed down for tunnel_wait */
    OUT_COUNT
};

/* The outcome of a failed outgoing connect (negative errno). */
enum outcome errmap_connect(int err);
/* The outcome of a failed lookup (enum dns_status). */
enum outcome errmap_dns(int status);

/* The answers to o (OUT_NONE, and values out of range, answer as
 * OUT_FAILED does: a general failure). */
uint8_t errmap_socks5(enum outcome o);        /* SOCKS5 REP */
uint8_t errmap_socks4(enum outcome o);        /* SOCKS4 CD */
int errmap_http_status(enum outcome o);       /* HTTP status code */
const char *errmap_http_text(enum outcome o); /* the body of ferry's HTTP error reply */
/* Seconds for the Retry-After field (RFC 9110 10.2.3) of the HTTP error
 * reply to o; 0: the reply has none. */
unsigned errmap_http_retry_after(enum outcome o);
/* The metrics outcome a session that ended with o is counted under
 * (OUT_NONE: OC_UNSET, "abandoned"). */
enum stats_outcome errmap_stats(enum outcome o);

/* "ECONNREFUSED" style name of an errno, or "E?" */
const char *errmap_name(int err);

#endif
