/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * remote.h: the remotes of `ferry client`, in chisel's syntax: what each
 * command-line word asks for (a local SOCKS/HTTP port, a port forward, the
 * stdio session, and the reverse and UDP forms that are parsed so the
 * grammar is whole, and refused by the caller for now). Pure: no syscalls,
 * no allocation, no logging; messages go to the caller's buffer.
 */
#ifndef FERRY_CLIENT_REMOTE_H
#define FERRY_CLIENT_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/addr.h"

#define REMOTE_SOCKS_PORT 1080 /* "socks" alone: 127.0.0.1:1080 */

enum remote_kind {
    REMOTE_SOCKS,   /* [ADDR:]PORT:socks or socks: a SOCKS5+SOCKS4+HTTP listener */
    REMOTE_FORWARD, /* [ADDR:]PORT:HOST:PORT: a port forward */
    REMOTE_STDIO,   /* stdio:HOST:PORT: one session on stdin/stdout */
};

struct remote {
    enum remote_kind kind;
    bool reverse;      /* R:...: a port on the server, egress here */
    bool udp;          /* .../udp */
    struct addr local; /* where it listens (SOCKS, FORWARD); the server's side when reverse */
    char host[254];    /* the destination (FORWARD, STDIO); IPv6 without brackets */
    uint16_t port;
};

/* Parse one remote word s into *r: "socks", "[ADDR:]PORT:socks",
 * "[ADDR:]PORT:HOST:PORT", "stdio:HOST:PORT", each optionally prefixed
 * "R:" and suffixed "/tcp" or "/udp". ADDR is an IP address (IPv6 in
 * brackets: [::1]) or "localhost", default 127.0.0.1; HOST is a DNS name
 * or an IP address ([2001:db8::1]); ports are 1..65535. Returns 0, or -1
 * with a one-line reason (naming the word) in err. */
int remote_parse(const char *s, struct remote *r, char *err, size_t errlen);

/* Judge the list as a whole: no two local listeners on one port of one
 * address (or of the wildcard address and another), at most one stdio.
 * Returns 0, or -1 with the reason in err. */
int remote_check_list(const struct remote *v, size_t n, char *err, size_t errlen);

/* The remote as the command line would write it, for messages. */
const char *remote_format(const struct remote *r, char *buf, size_t len);

#endif
