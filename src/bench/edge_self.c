/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_self.c: the ferry `ferry bench edge` measures when no --edge-target
 * is given: a child `ferry serve` (proc.c) whose configuration adds an
 * [edge bench] section in front of the bench's backends (edge_backend.c):
 * sniff auto, the two routed hosts and a few more routes, no flood limits
 * (the load comes from many sources at once) and no access log, as the
 * peers' configurations in bench/peers/ have none.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/edge.h"
#include "bench/proc.h"
#include "core/sock.h"

/* Any free TCP port on 127.0.0.1 (the edge's, in its configuration), or 0. */
static uint16_t free_port(void)
{
    struct addr a, got;
    addr_parse_ip("127.0.0.1", 0, &a);
    int fd = sock_listen(&a, 1, false);
    if (fd < 0)
        return 0;
    int rc = sock_local_addr(fd, &got);
    close(fd);
    return rc < 0 ? 0 : got.port;
}

/* The self-hosted ferry's [edge bench] section in front of be. */
static void edge_section(char *out, size_t cap, uint16_t port, const struct edge_backends *be)
{
    char a[ADDR_STRLEN], bb[ADDR_STRLEN];
    addr_format(edge_backend_addr(be, 0), a, sizeof(a));
    addr_format(edge_backend_addr(be, 1), bb, sizeof(bb));
    snprintf(out, cap,
             "[edge bench]\n"
             "listen = 127.0.0.1:%u\n"
             "sniff = auto\n"
             "route = a.test -> %s\n"
             "route = b.test -> %s\n"
             "route = *.a.test -> %s\n"
             "route = *.b.test -> %s\n"
             "route = c.test -> %s, %s\n"
             "unknown = close\n"
             "max_halfopen = 0\n"
             "per_source_connections = 0\n",
             port, a, bb, a, bb, a, bb);
}

/* The --proxy-set lines and no access log (the peers log none). */
static void edge_top(const struct bench_opts *o, char *out, size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, "access_log = no\n");
    for (unsigned i = 0; i < o->nproxy_set && len < cap; i++) {
        const char *eq = strchr(o->proxy_set[i], '=');
        if (eq)
            len += (size_t)snprintf(out + len, cap - len, "%.*s = %s\n",
                                    (int)(eq - o->proxy_set[i]), o->proxy_set[i], eq + 1);
    }
}

/* Wait (bounded: about 2 s) until the edge at a accepts a connection. */
static bool edge_ready(const struct addr *a)
{
    for (int i = 0; i < 100; i++) {
        int fd = sock_connect(a);
        if (fd >= 0) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            bool up = poll(&p, 1, 100) == 1 && sock_error(fd) == 0;
            close(fd);
            if (up)
                return true;
        }
        (void)poll(NULL, 0, 20);
    }
    return false;
}

/* Writes PID into DIR/cgroup.procs: the process and all its threads join
 * the cgroup (v1 or v2). 0 or -errno. */
static int cgroup_join(const char *dir, pid_t pid)
{
    char path[512], line[32];
    if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int n = snprintf(line, sizeof(line), "%ld\n", (long)pid);
    int rc = write(fd, line, (size_t)n) == n ? 0 : -errno;
    close(fd);
    return rc;
}

int edge_self_start(struct bench *b, struct child *c, const struct edge_backends *be,
                    struct addr *edge)
{
    const struct bench_opts *o = &b->o;
    static char sections[1024], top[2048];
    uint16_t port = free_port();
    if (!port)
        return -EADDRNOTAVAIL;
    edge_section(sections, sizeof(sections), port, be);
    edge_top(o, top, sizeof(top));
    struct child_conf cc = {.workers = o->proxy_workers, .extra = top, .sections = sections};
    int rc = child_start(c, o->ferry, &cc);
    if (rc) {
        fprintf(stderr, "ferry bench: cannot start %s with an edge: %s\n", o->ferry, strerror(-rc));
        child_stop(c);
        return rc;
    }
    if (o->proxy_cgroup && (rc = cgroup_join(o->proxy_cgroup, c->pid)) != 0) {
        fprintf(stderr, "ferry bench: cannot move the self-hosted ferry into %s: %s\n",
                o->proxy_cgroup, strerror(-rc));
        child_stop(c);
        return rc;
    }
    addr_parse_ip("127.0.0.1", port, edge);
    if (!edge_ready(edge)) {
        fprintf(stderr,
                "ferry bench: the self-hosted ferry's edge on 127.0.0.1:%u does not "
                "accept connections\n",
                port);
        child_stop(c);
        return -ETIMEDOUT;
    }
    b->pids[0] = c->pid;
    b->npids = 1;
    return 0;
}
