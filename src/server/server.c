/*
 * server.c: the main thread of `ferry serve`. It binds every listening
 * socket before any worker starts (so a port in use fails fast, before
 * privileges could be dropped), gives each worker its own SO_REUSEPORT
 * socket per address, then handles signals through a signalfd: workers
 * inherit a mask that blocks them, so no handler ever runs on a data path.
 *
 * SIGINT/SIGTERM: stop accepting and let sessions finish for up to
 * shutdown_timeout, then close what is left; a second signal closes at once.
 */
#include "server/server.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/sock.h"
#include "core/worker.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "relay/conn.h"
#include "version.h"

unsigned long server_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (unsigned long)rl.rlim_cur;
}

/* fds[w * nlisten + i]: worker w's socket for listen address i. Port 0 is
 * resolved by the first bind and reused by the other workers. */
static int bind_all(const struct config *cfg, int *fds, struct addr *bound)
{
    size_t nl = cfg->nlisten;
    for (size_t i = 0; i < nl * cfg->workers; i++)
        fds[i] = -1;
    for (size_t i = 0; i < nl; i++) {
        bound[i] = cfg->listen[i].addr;
        for (unsigned w = 0; w < cfg->workers; w++) {
            int fd = sock_listen(&bound[i], (int)cfg->backlog, true);
            if (fd < 0) {
                char a[ADDR_STRLEN];
                log_error("listen %s (%s): %s", addr_format(&bound[i], a, sizeof(a)),
                          cfg->listen[i].origin, strerror(-fd));
                return fd;
            }
            /* Accepted sockets inherit TCP_NODELAY on Linux: one setsockopt
             * here instead of one per connection. */
            sock_set_nodelay(fd);
            fds[w * nl + i] = fd;
            if (bound[i].port == 0) {
                int rc = sock_local_addr(fd, &bound[i]);
                if (rc)
                    return rc;
            }
        }
    }
    return 0;
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

static void log_summary(const struct worker *ws, unsigned n)
{
    uint64_t acc = 0, up = 0, down = 0, rej = 0, spl = 0;
    for (unsigned i = 0; i < n; i++) {
        acc += stat_get(&ws[i].stats.accepted);
        up += stat_get(&ws[i].stats.bytes_up);
        down += stat_get(&ws[i].stats.bytes_down);
        rej += stat_get(&ws[i].stats.rejected_limit);
        spl += stat_get(&ws[i].stats.splice_bytes);
    }
    log_info("stopped: %llu connections accepted (%llu over max_connections), %llu bytes up, "
             "%llu bytes down (%llu spliced)",
             (unsigned long long)acc, (unsigned long long)rej, (unsigned long long)up,
             (unsigned long long)down, (unsigned long long)spl);
}

static uint32_t sessions_open(struct shared *sh)
{
    return atomic_load(&sh->sessions);
}

/* Wait for signals and worker exits until every worker is gone. */
static void supervise(const struct config *cfg, struct shared *sh, struct worker *ws, int sfd)
{
    unsigned alive = cfg->workers;
    bool draining = false, aborted = false;
    uint64_t deadline = 0;

    while (alive > 0) {
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = sh->exit_efd, .events = POLLIN}};
        int timeout = -1;
        if (draining && !aborted) {
            uint64_t now = clock_ms();
            timeout = now >= deadline ? 0 : (int)MIN(deadline - now, 60000u);
        }
        int n = poll(pfd, 2, timeout);
        if (n < 0 && errno != EINTR) {
            log_error("poll: %s", strerror(errno));
            break;
        }
        if (n > 0 && (pfd[1].revents & POLLIN)) {
            uint64_t v;
            if (read(sh->exit_efd, &v, sizeof(v)) == sizeof(v))
                alive = v >= alive ? 0 : alive - (unsigned)v;
        }
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                int sig = (int)si.ssi_signo;
                if (sig == SIGHUP) {
                    log_warn("SIGHUP: configuration reload is not available in this version; "
                             "the running configuration stays in effect");
                } else if (!draining) {
                    draining = true;
                    deadline = clock_ms() + cfg->shutdown_timeout_ms;
                    log_info("SIG%s: stopping; draining %u sessions for up to %u ms (send it "
                             "again to close them now)",
                             sigabbrev_np(sig), sessions_open(sh), cfg->shutdown_timeout_ms);
                    for (unsigned i = 0; i < cfg->workers; i++)
                        worker_command(&ws[i], WORKER_CMD_DRAIN);
                } else if (!aborted) {
                    aborted = true;
                    log_info("SIG%s again: closing %u sessions now", sigabbrev_np(sig),
                             sessions_open(sh));
                    for (unsigned i = 0; i < cfg->workers; i++)
                        worker_command(&ws[i], WORKER_CMD_ABORT);
                }
            }
        }
        if (draining && !aborted && alive > 0 && clock_ms() >= deadline) {
            aborted = true;
            log_warn("shutdown_timeout (%u ms) reached: closing %u sessions",
                     cfg->shutdown_timeout_ms, sessions_open(sh));
            for (unsigned i = 0; i < cfg->workers; i++)
                worker_command(&ws[i], WORKER_CMD_ABORT);
        }
    }
}

int server_run(struct config *cfg)
{
    int status = 1;
    size_t nfds = cfg->nlisten * cfg->workers;
    int *fds = calloc(nfds, sizeof(*fds));
    struct addr *bound = calloc(cfg->nlisten, sizeof(*bound));
    struct worker *ws = calloc(cfg->workers, sizeof(*ws));
    struct shared sh = {.cfg = cfg, .exit_efd = -1};
    unsigned started = 0, inited = 0;
    int sfd = -1;

    /* Block before any thread starts (the log writer included): threads
     * inherit the mask, so these signals only ever reach the signalfd. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);

    log_set_level(cfg->log_level);
    int rc = log_start(cfg->log_file);
    if (rc) {
        log_error("log_file %s: %s", cfg->log_file, strerror(-rc));
        goto out;
    }
    if (!fds || !bound || !ws) {
        log_error("out of memory");
        goto out;
    }
    if (resolver_global_init()) {
        log_error("c-ares initialisation failed");
        goto out;
    }
    if (bind_all(cfg, fds, bound))
        goto out_fds;

    sh.exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sh.exit_efd < 0 || sfd < 0) {
        log_error("eventfd/signalfd: %s", strerror(errno));
        goto out_fds;
    }

    for (; inited < cfg->workers; inited++) {
        rc = worker_init(&ws[inited], inited, &sh, &relay_worker_ops, fds + inited * cfg->nlisten,
                         bound, cfg->nlisten);
        if (rc) {
            log_error("worker %u: %s", inited, strerror(-rc));
            goto out_workers;
        }
        for (size_t i = 0; i < cfg->nlisten; i++)
            fds[inited * cfg->nlisten + i] = -1; /* the worker owns them now */
    }
    for (; started < cfg->workers; started++) {
        rc = worker_start(&ws[started]);
        if (rc) {
            log_error("worker %u: cannot start thread: %s", started, strerror(-rc));
            goto out_workers;
        }
    }
    for (size_t i = 0; i < cfg->nlisten; i++) {
        char a[ADDR_STRLEN];
        log_info("listening on %s", addr_format(&bound[i], a, sizeof(a)));
    }
    log_info("ferry %s ready: %u workers, max_connections %u, config %s", FERRY_VERSION,
             cfg->workers, cfg->max_connections, cfg->path ? cfg->path : "(built-in defaults)");

    supervise(cfg, &sh, ws, sfd);
    status = 0;

out_workers:
    for (unsigned i = 0; i < started; i++) {
        if (status)
            worker_command(&ws[i], WORKER_CMD_ABORT);
        worker_join(&ws[i]);
    }
    if (status == 0)
        log_summary(ws, cfg->workers);
    for (unsigned i = 0; i < inited; i++)
        worker_fini(&ws[i]);
out_fds:
    close_all(fds, nfds);
    if (sfd >= 0)
        close(sfd);
    if (sh.exit_efd >= 0)
        close(sh.exit_efd);
    resolver_global_fini();
out:
    log_stop();
    free(fds);
    free(bound);
    free(ws);
    config_free(cfg);
    return status;
}
