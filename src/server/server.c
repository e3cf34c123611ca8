/*
 * server.c: the main thread of `ferry serve`. It binds every listening
 * socket before any worker starts (so a port in use fails fast), gives each
 * worker its own SO_REUSEPORT socket per address, then handles signals
 * through a signalfd: every thread inherits a mask that blocks them, so no
 * handler ever runs on a data path.
 *
 * SIGHUP: load the configuration again; if it is valid, hand it to the
 * workers (new sessions use it, established ones keep theirs), otherwise
 * log every error and keep running as before.
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

#include "acl/limits.h"
#include "acl/rules.h"
#include "auth/auth.h"
#include "core/loop.h"
#include "core/sock.h"
#include "core/worker.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "relay/conn.h"
#include "version.h"

/* Everything the main thread keeps. */
struct server {
    const struct config_cli *cli;
    struct config *cfg; /* current; one reference */
    struct shared sh;
    struct worker *ws;
    unsigned nworkers;
    struct auth auth;
    bool auth_started;
    struct limits limits;
};

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

static void log_summary(const struct server *s)
{
    uint64_t acc = 0, up = 0, down = 0, rej = 0, spl = 0;
    for (unsigned i = 0; i < s->nworkers; i++) {
        const struct worker_stats *st = &s->ws[i].stats;
        acc += stat_get(&st->accepted);
        up += stat_get(&st->bytes_up);
        down += stat_get(&st->bytes_down);
        rej += stat_get(&st->rejected_limit);
        spl += stat_get(&st->splice_bytes);
    }
    log_info("stopped: %llu connections accepted (%llu over max_connections), %llu bytes up, "
             "%llu bytes down (%llu spliced)",
             (unsigned long long)acc, (unsigned long long)rej, (unsigned long long)up,
             (unsigned long long)down, (unsigned long long)spl);
}

static int auth_ensure(struct server *s, const struct config *cfg)
{
    if (s->auth_started || !config_auth_enabled(cfg))
        return 0;
    const struct config_auth *a = &cfg->auth;
    int rc = auth_start(&s->auth, a->workers, a->queue, 65536, a->max_failures,
                        a->failure_window_ms, a->block_ms);
    if (rc) {
        log_error("authentication: cannot start the verifier pool: %s", strerror(-rc));
        return rc;
    }
    s->auth_started = true;
    atomic_store(&s->sh.auth, &s->auth);
    return 0;
}

static bool listen_equal(const struct config *a, const struct config *b)
{
    if (a->nlisten != b->nlisten)
        return false;
    for (size_t i = 0; i < a->nlisten; i++)
        if (!addr_equal(&a->listen[i].addr, &b->listen[i].addr))
            return false;
    return true;
}

static bool str_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Settings that are fixed for the life of the process in this version. */
static void warn_restart_needed(const struct config *old, const struct config *nc)
{
    if (!listen_equal(old, nc))
        log_warn("reload: listen changed; the new addresses apply after a restart");
    if (old->workers != nc->workers)
        log_warn("reload: workers changed; applies after a restart");
    if (!str_equal(old->log_file, nc->log_file))
        log_warn("reload: log_file changed; applies after a restart");
    if (old->backlog != nc->backlog)
        log_warn("reload: backlog changed; applies after a restart");
    if (old->limits.ip_table != nc->limits.ip_table)
        log_warn("reload: limits.ip_table changed; applies after a restart");
    if (config_auth_enabled(old) &&
        (old->auth.workers != nc->auth.workers || old->auth.queue != nc->auth.queue ||
         old->auth.cache_size != nc->auth.cache_size))
        log_warn("reload: auth.workers, auth.queue or auth.cache_size changed; they apply after "
                 "a restart");
}

static void reload(struct server *s)
{
    struct config *nc = NULL;
    struct config_errors errs = {0};
    log_info("SIGHUP: reloading %s", s->cli->path ? s->cli->path : "(built-in defaults)");
    if (config_load(s->cli, &nc, &errs)) {
        for (size_t i = 0; i < errs.n; i++)
            log_error("reload: %s", errs.msg[i]);
        log_error("reload: the new configuration has %zu error%s; still running the previous "
                  "one",
                  errs.n, errs.n == 1 ? "" : "s");
        config_errors_fini(&errs);
        return;
    }
    config_errors_fini(&errs);
    for (size_t i = 0; i < nc->warnings.n; i++)
        log_warn("reload: %s", nc->warnings.msg[i]);
    warn_restart_needed(s->cfg, nc);
    if (auth_ensure(s, nc)) {
        config_unref(nc);
        log_error("reload: still running the previous configuration");
        return;
    }
    if (s->auth_started)
        throttle_configure(&s->auth.t, nc->auth.max_failures, nc->auth.failure_window_ms,
                           nc->auth.block_ms);
    log_set_level(nc->log_level);
    for (unsigned i = 0; i < s->nworkers; i++)
        worker_post_config(&s->ws[i], nc);
    config_unref(s->cfg);
    s->cfg = nc;
    if (config_auth_enabled(nc))
        log_info("reload: configuration applied to new sessions (%zu users)", nc->auth.users->n);
    else
        log_info("reload: configuration applied to new sessions (no authentication)");
}

static void command_all(struct server *s, enum worker_cmd cmd)
{
    for (unsigned i = 0; i < s->nworkers; i++)
        worker_command(&s->ws[i], cmd);
}

/* Wait for signals and worker exits until every worker is gone. */
static void supervise(struct server *s, int sfd)
{
    unsigned alive = s->nworkers;
    bool draining = false, aborted = false;
    uint64_t deadline = 0;
    uint32_t shutdown_ms = 0;

    while (alive > 0) {
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = s->sh.exit_efd, .events = POLLIN}};
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
            if (read(s->sh.exit_efd, &v, sizeof(v)) == sizeof(v))
                alive = v >= alive ? 0 : alive - (unsigned)v;
        }
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                int sig = (int)si.ssi_signo;
                uint32_t open = atomic_load(&s->sh.sessions);
                if (sig == SIGHUP) {
                    if (!draining)
                        reload(s);
                } else if (!draining) {
                    draining = true;
                    shutdown_ms = s->cfg->shutdown_timeout_ms;
                    deadline = clock_ms() + shutdown_ms;
                    log_info("SIG%s: stopping; draining %u sessions for up to %u ms (send it "
                             "again to close them now)",
                             sigabbrev_np(sig), open, shutdown_ms);
                    command_all(s, WORKER_CMD_DRAIN);
                } else if (!aborted) {
                    aborted = true;
                    log_info("SIG%s again: closing %u sessions now", sigabbrev_np(sig), open);
                    command_all(s, WORKER_CMD_ABORT);
                }
            }
        }
        if (draining && !aborted && alive > 0 && clock_ms() >= deadline) {
            aborted = true;
            log_warn("shutdown_timeout (%u ms) reached: closing %u sessions", shutdown_ms,
                     atomic_load(&s->sh.sessions));
            command_all(s, WORKER_CMD_ABORT);
        }
    }
}

int server_run(struct config *cfg, const struct config_cli *cli)
{
    struct server s = {.cli = cli, .cfg = cfg, .nworkers = cfg->workers};
    int status = 1;
    size_t nfds = cfg->nlisten * cfg->workers;
    int *fds = calloc(nfds, sizeof(*fds));
    struct addr *bound = calloc(cfg->nlisten, sizeof(*bound));
    s.ws = calloc(cfg->workers, sizeof(*s.ws));
    s.sh.exit_efd = -1;
    atomic_init(&s.sh.auth, NULL);
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
    if (!fds || !bound || !s.ws) {
        log_error("out of memory");
        goto out;
    }
    if (resolver_global_init()) {
        log_error("c-ares initialisation failed");
        goto out;
    }
    if (bind_all(cfg, fds, bound))
        goto out_fds;
    if (auth_ensure(&s, cfg))
        goto out_fds;
    if (limits_init(&s.limits, cfg->limits.ip_table)) {
        log_error("out of memory for the limits tables");
        goto out_fds;
    }
    s.sh.limits = &s.limits;

    s.sh.exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s.sh.exit_efd < 0 || sfd < 0) {
        log_error("eventfd/signalfd: %s", strerror(errno));
        goto out_fds;
    }

    for (; inited < s.nworkers; inited++) {
        rc = worker_init(&s.ws[inited], inited, &s.sh, &relay_worker_ops, cfg,
                         fds + inited * cfg->nlisten, bound, cfg->nlisten);
        if (rc) {
            log_error("worker %u: %s", inited, strerror(-rc));
            goto out_workers;
        }
        for (size_t i = 0; i < cfg->nlisten; i++)
            fds[inited * cfg->nlisten + i] = -1; /* the worker owns them now */
    }
    for (; started < s.nworkers; started++) {
        rc = worker_start(&s.ws[started]);
        if (rc) {
            log_error("worker %u: cannot start thread: %s", started, strerror(-rc));
            goto out_workers;
        }
    }
    for (size_t i = 0; i < cfg->nlisten; i++) {
        char a[ADDR_STRLEN];
        log_info("listening on %s", addr_format(&bound[i], a, sizeof(a)));
    }
    if (config_auth_enabled(cfg))
        log_info("authentication: %zu users, %u verifier threads, cache ttl %u ms",
                 cfg->auth.users->n, cfg->auth.workers, cfg->auth.cachettl_ms);
    if (cfg->acl)
        log_info("rules: %u, default %s", cfg->acl->n,
                 cfg->rules_default == ACL_DENY ? "deny" : "allow");
    log_info("ferry %s ready: %u workers, max_connections %u, config %s", FERRY_VERSION, s.nworkers,
             cfg->max_connections, cfg->path ? cfg->path : "(built-in defaults)");

    supervise(&s, sfd);
    status = 0;

out_workers:
    for (unsigned i = 0; i < started; i++) {
        if (status)
            worker_command(&s.ws[i], WORKER_CMD_ABORT);
        worker_join(&s.ws[i]);
    }
    if (status == 0)
        log_summary(&s);
    /* The pool delivers what it still holds to the workers' ports, which
     * worker_fini() then frees: stop it first. */
    if (s.auth_started)
        auth_stop(&s.auth);
    for (unsigned i = 0; i < inited; i++)
        worker_fini(&s.ws[i]);
    if (s.sh.limits)
        limits_fini(&s.limits);
out_fds:
    close_all(fds, nfds);
    if (sfd >= 0)
        close(sfd);
    if (s.sh.exit_efd >= 0)
        close(s.sh.exit_efd);
    resolver_global_fini();
out:
    log_stop();
    free(fds);
    free(bound);
    free(s.ws);
    config_unref(s.cfg);
    return status;
}
