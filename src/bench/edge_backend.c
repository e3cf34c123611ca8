/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * edge_backend.c: the backends of `ferry bench edge` (edge.h): two
 * listeners on one thread with a plain epoll loop. A new connection gets
 * its backend's byte at once; whatever it sends is read and dropped; at
 * EOF it is closed abortively (RST), so that the edge, which closes first,
 * leaves no TIME_WAIT on its outgoing ports. The same backends serve the
 * self-hosted ferry and any peer aimed at with --edge-target.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/edge.h"
#include "core/sock.h"

const char *const edge_hosts[EDGE_BACKENDS] = {"a.test", "b.test"};

static const char *const hello_names[] = {
    [EDGE_HELLO_TLS] = "tls",
    [EDGE_HELLO_MC] = "mc",
    [EDGE_HELLO_PQ_SEGMENTS] = "tls-pq-segments",
    [EDGE_HELLO_PQ_RECORDS] = "tls-pq-records",
};

const char *edge_hello_name(unsigned kind)
{
    return kind < sizeof(hello_names) / sizeof(hello_names[0]) ? hello_names[kind] : "?";
}

int edge_hello_parse(const char *s)
{
    for (unsigned i = 0; s && i < sizeof(hello_names) / sizeof(hello_names[0]); i++)
        if (!strcmp(s, hello_names[i]))
            return (int)i;
    return -1;
}

struct edge_backends {
    int ep;
    int lfd[EDGE_BACKENDS];
    struct addr addr[EDGE_BACKENDS];
    _Atomic uint64_t accepted[EDGE_BACKENDS];
    _Atomic bool stop;
    pthread_t th;
    bool running;
    uint8_t *open; /* by descriptor: an accepted connection not yet closed */
    size_t nopen;  /* open[]'s size */
};

/* epoll data: a listener is its index, a connection its descriptor +
 * EDGE_BACKENDS. */
#define CONN_TAG ((uint64_t)EDGE_BACKENDS)

static void conn_close(struct edge_backends *e, int fd)
{
    struct linger lg = {1, 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    epoll_ctl(e->ep, EPOLL_CTL_DEL, fd, NULL);
    if ((size_t)fd < e->nopen)
        e->open[fd] = 0;
    close(fd);
}

static void on_accept(struct edge_backends *e, unsigned i)
{
    for (int k = 0; k < 256; k++) {
        int fd = accept4(e->lfd[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: the next event retries */
        uint8_t b = EDGE_BACKEND_BYTE(i);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
                                 .data.u64 = (uint64_t)fd + CONN_TAG};
        if ((size_t)fd >= e->nopen || send(fd, &b, 1, MSG_NOSIGNAL) != 1 ||
            epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            close(fd);
            continue;
        }
        e->open[fd] = 1;
        atomic_fetch_add_explicit(&e->accepted[i], 1, memory_order_relaxed);
    }
}

static void on_conn(struct edge_backends *e, int fd)
{
    uint8_t buf[4096];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        conn_close(e, fd); /* EOF or an error */
        return;
    }
}

static void *backend_thread(void *arg)
{
    struct edge_backends *e = arg;
    struct epoll_event evs[64];
    while (!atomic_load(&e->stop)) {
        int n = epoll_wait(e->ep, evs, 64, 50);
        for (int k = 0; k < n; k++) {
            uint64_t d = evs[k].data.u64;
            if (d < CONN_TAG)
                on_accept(e, (unsigned)d);
            else
                on_conn(e, (int)(d - CONN_TAG));
        }
    }
    return NULL;
}

/* Listener i on 127.0.0.1:port (0: any). 0 or -errno. */
static int backend_listen(struct edge_backends *e, unsigned i, uint16_t port)
{
    struct addr a;
    addr_parse_ip("127.0.0.1", port, &a);
    int fd = sock_listen(&a, 4096, false);
    if (fd < 0)
        return fd;
    e->lfd[i] = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
    if (sock_local_addr(fd, &e->addr[i]) < 0 || epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    return 0;
}

struct edge_backends *edge_backends_start(uint16_t base)
{
    struct edge_backends *e = calloc(1, sizeof(*e));
    struct rlimit rl;
    if (!e)
        return NULL;
    e->lfd[0] = e->lfd[1] = -1;
    e->nopen =
        getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 22) ? rl.rlim_cur : (1u << 22);
    e->open = calloc(e->nopen, 1);
    e->ep = epoll_create1(EPOLL_CLOEXEC);
    int rc = e->open && e->ep >= 0 ? 0 : -ENOMEM;
    for (unsigned i = 0; !rc && i < EDGE_BACKENDS; i++) {
        rc = backend_listen(e, i, base ? (uint16_t)(base + i) : 0);
        if (rc)
            fprintf(stderr, "ferry bench: edge backend %c on 127.0.0.1:%u: %s\n",
                    EDGE_BACKEND_BYTE(i), base ? base + i : 0, strerror(-rc));
    }
    if (!rc && pthread_create(&e->th, NULL, backend_thread, e) != 0)
        rc = -EAGAIN;
    e->running = rc == 0;
    if (rc) {
        edge_backends_stop(e);
        return NULL;
    }
    return e;
}

const struct addr *edge_backend_addr(const struct edge_backends *e, unsigned i)
{
    return &e->addr[i];
}

uint64_t edge_backend_accepted(const struct edge_backends *e, unsigned i)
{
    return atomic_load_explicit(&e->accepted[i], memory_order_relaxed);
}

void edge_backends_stop(struct edge_backends *e)
{
    if (!e)
        return;
    atomic_store(&e->stop, true);
    if (e->running)
        pthread_join(e->th, NULL);
    for (size_t fd = 0; e->open && fd < e->nopen; fd++)
        if (e->open[fd])
            conn_close(e, (int)fd);
    for (unsigned i = 0; i < EDGE_BACKENDS; i++)
        if (e->lfd[i] >= 0)
            close(e->lfd[i]);
    if (e->ep >= 0)
        close(e->ep);
    free(e->open);
    free(e);
}
