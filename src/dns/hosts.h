/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hosts.h: a hosts file ("ADDRESS NAME [ALIAS...]" lines, '#' comments, as
 * in hosts(5)) read once into an immutable table that resolvers consult
 * before DNS ([dns] hosts = PATH). The table is shared by reference count
 * between the configuration and every worker's resolver; nothing here
 * resolves, logs or watches the file for changes.
 */
#ifndef FERRY_DNS_HOSTS_H
#define FERRY_DNS_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

struct dns_hosts;
struct dns_answer;

/* Parse hosts-file text into *out (names lower-cased, a trailing dot
 * dropped; lines that are not an address and a name are skipped, as libc
 * does). Returns 0, or -ENOMEM. An empty table is fine. */
int dns_hosts_parse(const char *text, struct dns_hosts **out);
/* Read and parse path (at most 64 MiB). Returns 0, or -errno (-EFBIG when
 * too large) with nothing allocated. */
int dns_hosts_load(const char *path, struct dns_hosts **out);
/* The addresses of key (normalized: lower case, no trailing dot), in file
 * order, at most DNS_MAX_ADDRS, ports 0. False when the file has no line
 * for it. */
bool dns_hosts_lookup(const struct dns_hosts *h, const char *key, struct dns_answer *ans);
/* Entries (address, name pairs) in the table. */
size_t dns_hosts_count(const struct dns_hosts *h);
/* Reference counting across threads; the last unref frees. NULL is a
 * no-op for both. */
struct dns_hosts *dns_hosts_ref(struct dns_hosts *h);
void dns_hosts_unref(struct dns_hosts *h);

#endif
