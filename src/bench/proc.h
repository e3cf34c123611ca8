/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc.h: the self-hosted proxy: a ferry child on an ephemeral loopback
 * port, started and stopped by the bench.
 */
#ifndef FERRY_BENCH_PROC_H
#define FERRY_BENCH_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "util/addr.h"

struct child {
    pid_t pid;
    struct addr addr; /* where it listens */
    char dir[64];     /* temporary directory for its config and log */
};

/* Start `ferry serve -c DIR/ferry.conf` with listen = 127.0.0.1:0, workers
 * (0 = its default), extra top-level config lines, and when userlist is
 * given, an [auth] section using it (with auth_extra lines); wait until it
 * listens. */
int child_start(struct child *c, const char *ferry, unsigned workers, const char *extra,
                const char *userlist, const char *auth_extra);
/* SIGTERM, wait (bounded), SIGKILL if needed; remove the directory.
 * Returns the exit status, or -1. */
int child_stop(struct child *c);

/* Run argv[0] (searched in PATH) with argv, stdin and stderr on /dev/null,
 * and keep the first line of its standard output in out (cap bytes,
 * always terminated). Returns its exit status, or -errno if it could not
 * be run. For short commands only: it waits without a time limit. */
int proc_capture(const char *const argv[], char *out, size_t cap);

#endif
