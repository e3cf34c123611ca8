/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * errmap.h: the one place where a failure (a negative errno, or a DNS
 * status) becomes a protocol reply code.
 */
#ifndef FERRY_RELAY_ERRMAP_H
#define FERRY_RELAY_ERRMAP_H

#include <stdint.h>

/* SOCKS5 REP for a failed outgoing connect (negative errno). */
uint8_t errmap_socks5_connect(int err);
/* SOCKS5 REP for a failed lookup (enum dns_status). */
uint8_t errmap_socks5_dns(int status);
/* "ECONNREFUSED" style name of an errno, or "E?" */
const char *errmap_name(int err);

#endif
