/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics/endpoint.c: the Prometheus endpoint: a small HTTP/1.x server on
 * its own thread and loop (GET or HEAD of /metrics and /healthz, one
 * request per connection; any other path goes to the admin hook when one
 * is registered, metrics.h, with a body of at most what the head buffer
 * holds), with a fixed number of connection slots and a
 * timeout for the request head and for the whole exchange. A scrape
 * gathers what the renderer cannot (the main thread's state under the
 * mutex, the log's drop count, the process's CPU, memory and descriptors)
 * and has render.c write the exposition.
 *
 * What it must not do: format metrics itself (render.c does), or touch a
 * worker's state beyond the relaxed reads the renderer makes.
 */
#include "metrics/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "core/loop.h"
#include "core/sock.h"
#include "log/log.h"

/* Scrapers at once. When all are taken, a new connection takes the place
 * of the oldest one that has not sent a whole request yet (idle
 * connections never lock health checks out); only when every one is being
 * answered is it turned away. */
#define CLIENT_MAX          32
#define CLIENT_HEAD_MAX     4096  /* request head */
#define CLIENT_HEAD_TIMEOUT 5000  /* ms from accept to a whole request head */
#define CLIENT_TIMEOUT      10000 /* ms for a whole exchange */

struct mclient {
    struct list link;
    struct metrics *m;
    struct io io;
    struct timer timer;
    struct release rel; /* freed after the batch that closed it */
    char head[CLIENT_HEAD_MAX];
    size_t hlen;
    struct mtext out;
    size_t sent;
    bool closed;
};

struct metrics {
    pthread_t thread;
    struct loop loop;
    struct io lis, ctl;
    struct metrics_source src;
    pthread_mutex_t mu; /* guards cfg and st */
    struct config *cfg;
    struct metrics_state st;
    struct list clients;
    unsigned nclients;
    struct timer tick; /* once a second, for the admin hook's samples */
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process's CPU time, memory and descriptors, from /proc/self; a
 * figure that cannot be read is left out (its have_* false). */
static void sample_process(struct metrics_process *p)
{
    memset(p, 0, sizeof(*p));
    long tick = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* Fields after the command name, which may hold spaces: state is
         * field 3; utime and stime are 14 and 15, vsize 23, rss 24. */
        char *s = strrchr(buf, ')');
        unsigned long long utime = 0, stime = 0, vsize = 0;
        long long rss = 0;
        if (s &&
            sscanf(s + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                   "%*d %*d %*u %llu %lld",
                   &utime, &stime, &vsize, &rss) == 4 &&
            tick > 0) {
            p->have_stat = true;
            p->cpu_s = (double)(utime + stime) / (double)tick;
            p->vsize = vsize;
            p->rss_bytes = (uint64_t)(rss > 0 ? rss : 0) * (uint64_t)(page > 0 ? page : 4096);
        }
    }
    uint64_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            fds += e->d_name[0] != '.';
        closedir(d);
        p->have_fds = true;
        p->fds = fds > 0 ? fds - 1 : 0; /* not the directory's own */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        p->have_max_fds = true;
        p->max_fds = (uint64_t)rl.rlim_cur;
    }
}

static void client_release(struct release *r)
{
    struct mclient *c = container_of(r, struct mclient, rel);
    mtext_fini(&c->out);
    free(c);
}

static void client_close(struct mclient *c)
{
    if (c->closed)
        return;
    c->closed = true;
    struct metrics *m = c->m;
    loop_timer_stop(&m->loop, &c->timer);
    if (c->io.fd >= 0) {
        int fd = c->io.fd;
        loop_io_del(&m->loop, &c->io);
        c->io.fd = -1;
        close(fd);
    }
    list_del(&c->link);
    m->nclients--;
    loop_release(&m->loop, &c->rel, client_release); /* after this batch of events */
}

static void client_respond(struct mclient *c, int status, const char *reason, const char *ctype,
                           const char *extra, const struct mtext *body, bool head_only)
{
    size_t blen = body ? body->len : 0;
    mtext_printf(&c->out,
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                 "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                 status, reason, ctype, blen, extra ? extra : "");
    if (body && !head_only)
        (void)mtext_append(&c->out, body->p, blen);
}

static void client_text(struct mclient *c, int status, const char *reason, const char *text,
                        const char *extra, bool head_only)
{
    struct mtext b = {0};
    mtext_printf(&b, "%s\n", text);
    client_respond(c, status, reason, "text/plain; charset=utf-8", extra, &b, head_only);
    mtext_fini(&b);
}

/* A reason phrase for the statuses the endpoint and the admin hook use. */
static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 303:
        return "See Other";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Content Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Unknown";
    }
}

static void serve_metrics(struct mclient *c, bool head)
{
    struct metrics *m = c->m;
    struct mtext body = {0};
    pthread_mutex_lock(&m->mu);
    struct config *cfg = config_ref(m->cfg);
    struct metrics_state st = m->st;
    pthread_mutex_unlock(&m->mu);
    st.log_dropped = log_dropped_total();
    sample_process(&st.proc);
    metrics_render(&body, &m->src, cfg, &st);
    config_unref(cfg);
    if (body.oom)
        client_text(c, 500, "Internal Server Error", "out of memory", NULL, head);
    else
        client_respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", NULL, &body, head);
    mtext_fini(&body);
}

/* Hand the request to the admin hook. false: not its path. */
static bool serve_admin(struct mclient *c, struct metrics_req *rq, bool head)
{
    struct metrics *m = c->m;
    const struct metrics_admin *a = m->src.admin;
    if (!a)
        return false;
    pthread_mutex_lock(&m->mu);
    struct config *cfg = config_ref(m->cfg);
    pthread_mutex_unlock(&m->mu);
    struct metrics_reply rp = {.status = 500, .ctype = "text/plain; charset=utf-8"};
    bool mine = a->handle(a->arg, m, cfg, rq, &rp);
    config_unref(cfg);
    if (mine && (rp.body.oom || rp.headers.oom))
        client_text(c, 500, "Internal Server Error", "out of memory", NULL, head);
    else if (mine)
        client_respond(c, rp.status, reason_of(rp.status), rp.ctype, rp.headers.p, &rp.body, head);
    mtext_fini(&rp.body);
    mtext_fini(&rp.headers);
    return mine;
}

/* The request (head, and body when it has one) is complete: decide the
 * response. */
static void client_handle(struct mclient *c, size_t head_len, size_t body_len)
{
    struct metrics *m = c->m;
    char *eol = memchr(c->head, '\n', c->hlen);
    size_t llen = eol ? (size_t)(eol - c->head) : 0;
    if (llen && c->head[llen - 1] == '\r')
        llen--;
    char line[CLIENT_HEAD_MAX];
    memcpy(line, c->head, llen);
    line[llen] = '\0';
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || strchr(sp2 + 1, ' ')) {
        client_text(c, 400, "Bad Request", "bad request", NULL, false);
        return;
    }
    *sp1 = *sp2 = '\0';
    const char *method = line;
    char *target = sp1 + 1;
    bool head = strcmp(method, "HEAD") == 0;
    bool get = head || strcmp(method, "GET") == 0;
    size_t plen = strcspn(target, "?");
    bool builtin = (plen == 8 && strncmp(target, "/metrics", 8) == 0) ||
                   (plen == 8 && strncmp(target, "/healthz", 8) == 0);
    if (!builtin) {
        char *query = target[plen] ? target + plen + 1 : target + plen;
        target[plen] = '\0';
        struct metrics_req rq = {method,  target, query, c->head, head_len, c->head + head_len,
                                 body_len};
        if (serve_admin(c, &rq, head))
            return;
    }
    if (!get) {
        client_text(c, 405, "Method Not Allowed", "only GET and HEAD", "Allow: GET, HEAD\r\n",
                    false);
        return;
    }
    if (plen == 8 && strncmp(target, "/metrics", 8) == 0) {
        serve_metrics(c, head);
        return;
    }
    if (plen == 8 && strncmp(target, "/healthz", 8) == 0) {
        pthread_mutex_lock(&m->mu);
        bool draining = m->st.draining;
        pthread_mutex_unlock(&m->mu);
        if (draining)
            client_text(c, 503, "Service Unavailable", "draining", NULL, head);
        else
            client_text(c, 200, "OK", "ok", NULL, head);
        return;
    }
    client_text(c, 404, "Not Found", "not found (try /metrics or /healthz)", NULL, head);
}

/* Where the head ends (just past its blank line) in c->head, or 0. */
static size_t head_end(const struct mclient *c)
{
    for (size_t i = 0; i < c->hlen; i++) {
        if (i + 4 <= c->hlen && memcmp(c->head + i, "\r\n\r\n", 4) == 0)
            return i + 4;
        if (i + 2 <= c->hlen && memcmp(c->head + i, "\n\n", 2) == 0)
            return i + 2;
    }
    return 0;
}

/* The Content-Length of the head (its first hend bytes): 0 when none,
 * -1 when malformed, or a chunked body (not taken). */
static long content_length(const char *h, size_t hend)
{
    long n = 0;
    for (size_t i = 0; i < hend;) {
        const char *eol = memchr(h + i, '\n', hend - i);
        size_t len = eol ? (size_t)(eol - (h + i)) : hend - i;
        if (len > 15 && strncasecmp(h + i, "Content-Length:", 15) == 0) {
            char num[24];
            size_t k = 15;
            while (k < len && h[i + k] == ' ')
                k++;
            size_t nl = 0;
            while (k < len && h[i + k] >= '0' && h[i + k] <= '9' && nl < sizeof(num) - 1)
                num[nl++] = h[i + k++];
            num[nl] = '\0';
            while (k < len && (h[i + k] == ' ' || h[i + k] == '\r'))
                k++;
            if (!nl || k != len || nl > 6)
                return -1;
            n = strtol(num, NULL, 10);
        }
        if (len > 18 && strncasecmp(h + i, "Transfer-Encoding:", 18) == 0)
            return -1;
        i += len + 1;
    }
    return n;
}

static void client_write(struct mclient *c)
{
    while (c->sent < c->out.len) {
        ssize_t n =
            send(c->io.fd, c->out.p + c->sent, c->out.len - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR)
                continue;
            client_close(c);
            return;
        }
        c->sent += (size_t)n;
    }
    client_close(c);
}

static void client_read(struct mclient *c)
{
    for (;;) {
        if (c->hlen == sizeof(c->head)) {
            client_text(c, 431, "Request Header Fields Too Large", "request head too large", NULL,
                        false);
            break;
        }
        ssize_t n = recv(c->io.fd, c->head + c->hlen, sizeof(c->head) - c->hlen, 0);
        if (n == 0) {
            client_close(c); /* gone before a whole request */
            return;
        }
        if (n < 0) {
            if (errno == EAGAIN)
                return;
            if (errno == EINTR)
                continue;
            client_close(c);
            return;
        }
        c->hlen += (size_t)n;
        size_t hend = head_end(c);
        if (!hend)
            continue;
        long clen = content_length(c->head, hend);
        if (clen < 0 || hend + (size_t)clen > sizeof(c->head)) {
            client_text(c, clen < 0 ? 400 : 413, clen < 0 ? "Bad Request" : "Content Too Large",
                        clen < 0 ? "bad request body" : "request too large", NULL, false);
        } else if (c->hlen < hend + (size_t)clen) {
            continue; /* the rest of the body */
        } else {
            client_handle(c, hend, (size_t)clen);
        }
        loop_timer_arm(&c->m->loop, &c->timer, CLIENT_TIMEOUT); /* to send the answer */
        break;
    }
    if (c->out.oom) {
        client_close(c);
        return;
    }
    (void)loop_io_mod(&c->m->loop, &c->io, EPOLLOUT);
    client_write(c);
}

static void on_client(struct io *io, uint32_t events)
{
    struct mclient *c = container_of(io, struct mclient, io);
    if (c->out.len)
        client_write(c);
    else if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        client_read(c);
}

static void on_client_timeout(struct timer *t)
{
    client_close(container_of(t, struct mclient, timer));
}

/* Make room for one more client: close the oldest that has not sent a
 * whole request (clients are listed in accept order). false if every
 * client is being answered. */
static bool make_room(struct metrics *m)
{
    for (struct list *l = m->clients.next; l != &m->clients; l = l->next) {
        struct mclient *c = container_of(l, struct mclient, link);
        if (!c->out.len) {
            client_close(c);
            return true;
        }
    }
    return false;
}

static void on_listen(struct io *io, uint32_t events)
{
    (void)events;
    struct metrics *m = container_of(io, struct metrics, lis);
    for (int i = 0; i < 16; i++) {
        int fd = sock_accept(io->fd, NULL);
        if (fd < 0)
            return;
        bool room = m->nclients < CLIENT_MAX || make_room(m);
        struct mclient *c = room ? calloc(1, sizeof(*c)) : NULL;
        if (!c) {
            close(fd);
            continue;
        }
        c->m = m;
        io_init(&c->io, on_client);
        timer_init(&c->timer, on_client_timeout);
        list_add_tail(&m->clients, &c->link);
        m->nclients++;
        if (loop_io_add(&m->loop, &c->io, fd, EPOLLIN) < 0) {
            close(fd);
            c->io.fd = -1;
            client_close(c);
            continue;
        }
        loop_timer_arm(&m->loop, &c->timer, CLIENT_HEAD_TIMEOUT);
    }
}

static void on_ctl(struct io *io, uint32_t events)
{
    (void)events;
    struct metrics *m = container_of(io, struct metrics, ctl);
    uint64_t v;
    ssize_t n = read(io->fd, &v, sizeof(v));
    (void)n;
    loop_stop(&m->loop);
}

static void on_tick(struct timer *t)
{
    struct metrics *m = container_of(t, struct metrics, tick);
    pthread_mutex_lock(&m->mu);
    struct config *cfg = config_ref(m->cfg);
    pthread_mutex_unlock(&m->mu);
    m->src.admin->tick(m->src.admin->arg, cfg);
    config_unref(cfg);
    loop_timer_arm(&m->loop, &m->tick, 1000);
}

static void *metrics_main(void *arg)
{
    struct metrics *m = arg;
    int rc = loop_run(&m->loop);
    if (rc)
        log_error("metrics: event loop failed: %s", strerror(-rc));
    return NULL;
}

int metrics_start(struct metrics **out, int listen_fd, const struct metrics_source *src,
                  struct config *cfg)
{
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m) {
        close(listen_fd);
        return -ENOMEM;
    }
    m->src = *src;
    list_init(&m->clients);
    pthread_mutex_init(&m->mu, NULL);
    m->cfg = config_ref(cfg);
    m->st.start_time = m->st.last_reload = wall_now();
    io_init(&m->lis, on_listen);
    io_init(&m->ctl, on_ctl);
    int rc = loop_init(&m->loop);
    if (rc)
        goto fail;
    rc = loop_io_add(&m->loop, &m->lis, listen_fd, EPOLLIN);
    if (rc)
        goto fail_loop;
    listen_fd = -1;
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) {
        rc = -errno;
        goto fail_loop;
    }
    rc = loop_io_add(&m->loop, &m->ctl, efd, EPOLLIN);
    if (rc) {
        close(efd);
        goto fail_loop;
    }
    timer_init(&m->tick, on_tick);
    if (m->src.admin && m->src.admin->tick)
        loop_timer_arm(&m->loop, &m->tick, 1000);
    rc = -pthread_create(&m->thread, NULL, metrics_main, m);
    if (rc)
        goto fail_loop;
    *out = m;
    return 0;

fail_loop:
    if (m->ctl.fd >= 0)
        close(m->ctl.fd);
    if (m->lis.fd >= 0)
        close(m->lis.fd);
    loop_fini(&m->loop);
fail:
    if (listen_fd >= 0)
        close(listen_fd);
    config_unref(m->cfg);
    pthread_mutex_destroy(&m->mu);
    free(m);
    return rc;
}

void metrics_reloaded(struct metrics *m, struct config *cfg)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (cfg) {
        struct config *old = m->cfg;
        m->cfg = config_ref(cfg);
        m->st.reloads_ok++;
        m->st.last_reload = wall_now();
        pthread_mutex_unlock(&m->mu);
        config_unref(old);
        return;
    }
    m->st.reloads_failed++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_state_get(struct metrics *m, struct metrics_state *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    pthread_mutex_unlock(&m->mu);
}

void metrics_set_draining(struct metrics *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->st.draining = true;
    pthread_mutex_unlock(&m->mu);
}

void metrics_stop(struct metrics *m)
{
    if (!m)
        return;
    uint64_t one = 1;
    ssize_t n = write(m->ctl.fd, &one, sizeof(one));
    (void)n;
    pthread_join(m->thread, NULL);
    loop_timer_stop(&m->loop, &m->tick);
    while (!list_empty(&m->clients))
        client_close(container_of(m->clients.next, struct mclient, link));
    loop_flush_tasks(&m->loop);
    int lfd = m->lis.fd, cfd = m->ctl.fd;
    loop_io_del(&m->loop, &m->lis);
    loop_io_del(&m->loop, &m->ctl);
    close(lfd);
    close(cfd);
    loop_fini(&m->loop);
    config_unref(m->cfg);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
