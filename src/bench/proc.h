/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc.h: the self-hosted proxy: a ferry child on an ephemeral loopback
 * port, started and stopped by the bench, and the configuration it is
 * given. A chain (--chain N) is N such children, each but the last sending
 * every session on to the next one as its SOCKS5 parent.
 */
#ifndef FERRY_BENCH_PROC_H
#define FERRY_BENCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tls/tls.h"
#include "util/addr.h"

struct child {
    pid_t pid;
    struct addr addr;       /* where it listens */
    char dir[64];           /* temporary directory for its config and log */
    char pin[TLS_PIN_TEXT]; /* with cc->tls: the pin of the certificate it serves */
};

/* What a self-hosted ferry's configuration says beyond listen =
 * 127.0.0.1:0. */
struct child_conf {
    unsigned workers;        /* 0: its default */
    const char *extra;       /* top-level lines ("K = V\n" each; --proxy-set), or NULL */
    const struct addr *next; /* the next ferry of a chain, or NULL: the way out is direct */
    const char *next_pin;    /* with next: it is a tunnel's server, reached over HTTP/2 + TLS
                                (https://, mux = h2) and verified by this pin (sha256//...) */
    const char *userlist;    /* the users file's line, or NULL: no [auth] section */
    const char *auth_extra;  /* more [auth] lines (with userlist), or NULL */
    bool tls;                /* a TLS listener with a throwaway certificate (--https-proxy) */
    const char *ws_path;     /* --tunnel wss: the WebSocket's path on the server's listener
                                (websocket=PATH) and the client's outbound; NULL: none */
    const char *tls_dir;     /* child_conf_format: where cert.pem and key.pem are (with tls) */
    const char *sections;    /* more sections, after all others (e.g. an [edge]), or NULL */
};

/* The name of the outbound a ferry of a chain sends its sessions through. */
#define CHILD_NEXT_OUTBOUND "next"

/* The text of ferry.conf for cc into buf (cap bytes, always terminated):
 * listen = 127.0.0.1:0, the workers, the extra lines; with a next hop,
 * `outbound = next` and an [outbound next] section whose url is
 * socks5://ADDR of the next ferry (an IP address: no name is resolved
 * along the chain); with a userlist, an [auth] section naming the file
 * "users" beside the config. Top-level keys come before every section.
 * With tls, the listener is tls://127.0.0.1:0 and a [tls] section names
 * cc->tls_dir's cert.pem and key.pem; cc->sections come last. With next_pin (a --tunnel's client,
 * as `ferry client https://ADDR --pin PIN 127.0.0.1:0:socks` would write
 * it), the listener takes socks5+socks4+http and the next hop's url is
 * https://ADDR with `pin = next_pin` and `mux = h2`. With ws_path, the
 * client's outbound has `websocket = PATH` and a server's listener
 * websocket=PATH (--tunnel wss).
 * Returns the length, or -1 when it does not fit. Pure: no I/O. */
int child_conf_format(char *buf, size_t cap, const struct child_conf *cc);

/* Start `ferry serve -c DIR/ferry.conf` with the configuration cc says
 * (child_conf_format; the users file holds cc->userlist; with cc->tls a
 * self-signed certificate for localhost and 127.0.0.1 is made in-process
 * into DIR/cert.pem and DIR/key.pem and its pin kept in c->pin, and the
 * listener is tls://127.0.0.1:0); wait until it listens. Returns 0, or -errno (the log of a ferry
 * that exited at start is copied to stderr). On failure c->dir may still need child_stop(). */
int child_start(struct child *c, const char *ferry, const struct child_conf *cc);
/* SIGTERM, wait (bounded), SIGKILL if needed; remove the directory.
 * Returns the exit status, or -1. */
int child_stop(struct child *c);

/* Run argv[0] (searched in PATH) with argv, stdin and stderr on /dev/null,
 * and keep the first line of its standard output in out (cap bytes,
 * always terminated). Returns its exit status, or -errno if it could not
 * be run. For short commands only: it waits without a time limit. */
int proc_capture(const char *const argv[], char *out, size_t cap);

#endif
