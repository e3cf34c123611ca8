/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.c: the main thread of `ferry serve`. It binds every listening
 * socket before any worker starts (so a port in use fails fast), gives each
 * worker its own SO_REUSEPORT socket per address, then handles signals
 * through a signalfd: every thread inherits a mask that blocks them, so no
 * handler ever runs on a data path.
 *
 * SIGHUP: load the configuration again (reload.c); if it is valid, hand
 * it to the workers (new sessions use it, established ones keep theirs),
 * otherwise log every error and keep running as before.
 * SIGINT/SIGTERM: take what waits in the accept queues, stop accepting and
 * let sessions finish for up to shutdown_timeout, then close what is left;
 * a second signal closes at once.
 * SIGUSR1: reopen the log file (logrotate).
 *
 * After binding, privileges are dropped to user/group when configured, and
 * systemd hears READY=1, RELOADING=1 and STOPPING=1 (server/notify.c).
 */
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acct/acct.h"
#include "acl/limits.h"
#include "acl/rules.h"
#include "admin/admin.h"
#include "auth/auth.h"
#include "core/loop.h"
#include "core/sock.h"
#include "dns/resolver.h"
#include "log/log.h"
#include "metrics/metrics.h"
#include "relay/conn.h"
#include "server/notify.h"
#include "server/server_int.h"
#include "tls/ticket.h"
#include "version.h"
#include "worker/worker.h"

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

static int bind_all(const struct config *cfg, int *fds, struct addr *bound, bool upgrade)
{
    size_t nl = cfg->nlisten;
    for (size_t i = 0; i < nl * cfg->workers; i++)
        fds[i] = -1;
    for (size_t i = 0; i < nl; i++) {
        int rc = server_bind_address(cfg, i, cfg->workers, fds, nl, &bound[i], !upgrade, true);
        if (rc)
            return rc;
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

/* The accounting at start: made for the workers, configured, and the
 * usage of the state file loaded. */
static int acct_begin(struct server *s)
{
    s->sh.acct = acct_new(s->nworkers, s->cfg->quota.max_users);
    if (!s->sh.acct) {
        log_error("out of memory for the accounting tables");
        return -1;
    }
    server_acct_apply(s, s->cfg, "");
    struct msglist warns = {0};
    acct_state_load(s->sh.acct, (int64_t)time(NULL), &warns);
    for (size_t i = 0; i < warns.n; i++)
        log_warn("%s", warns.msg[i]);
    msglist_fini(&warns);
    return 0;
}

static void command_all(struct server *s, enum worker_cmd cmd)
{
    for (unsigned i = 0; i < s->nworkers; i++)
        worker_command(&s->ws[i], cmd);
}

/* Rotate the session-ticket keys when due (this thread is the only
 * rotator: tls/ticket.h); the poll timeout until the next rotation, -1 when
 * none is due. No tls:// listener or tickets off: nothing to do. */
static int ticket_tick(const struct server *s)
{
    uint32_t every = s->cfg->tls.ctx ? s->cfg->tls.ticket_rotation_ms : 0;
    bool rotated;
    uint64_t due = tls_tickets_tick(clock_ms(), every, &rotated);
    if (rotated)
        log_debug("tls: session ticket keys rotated");
    return due == UINT64_MAX ? -1 : (int)MIN(due, 60000u);
}

/* Wait for signals and worker exits until every worker is gone. */
static void supervise(struct server *s, int sfd)
{
    unsigned alive = s->nworkers;
    bool draining = false, aborted = false;
    uint64_t deadline = 0;
    uint32_t shutdown_ms = 0;
    uint64_t acct_due = 0; /* quotas' periods and state file: once a second */

    while (alive > 0) {
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN},
                                {.fd = s->sh.exit_efd, .events = POLLIN}};
        int timeout = ticket_tick(s);
        uint64_t t = clock_ms();
        if (t >= acct_due) {
            acct_tick(s->sh.acct, t, (int64_t)time(NULL));
            acct_due = t + 1000;
        }
        timeout = timeout < 0 ? (int)(acct_due - t) : MIN(timeout, (int)(acct_due - t));
        if (draining && !aborted) {
            uint64_t now = clock_ms();
            int left = now >= deadline ? 0 : (int)MIN(deadline - now, 60000u);
            timeout = timeout < 0 ? left : MIN(timeout, left);
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
                    if (!draining) {
                        notify_send("RELOADING=1");
                        server_reload(s);
                        notify_send("READY=1");
                    }
                } else if (sig == SIGUSR1) {
                    int rc = log_reopen();
                    if (rc < 0)
                        log_error("SIGUSR1: cannot reopen %s: %s; still writing to the old file",
                                  s->cfg->log_file, strerror(-rc));
                    else if (rc > 0)
                        log_info("SIGUSR1: logging to %s; nothing to reopen",
                                 s->cfg->log_target == LOG_TARGET_SYSLOG ? "syslog" : "stderr");
                } else if (!draining) {
                    draining = true;
                    shutdown_ms = s->cfg->shutdown_timeout_ms;
                    deadline = clock_ms() + shutdown_ms;
                    log_info("SIG%s: stopping; draining %u sessions for up to %u ms (send it "
                             "again to close them now)",
                             sigabbrev_np(sig), open, shutdown_ms);
                    notify_send("STOPPING=1");
                    metrics_set_draining(s->metrics);
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

static int pid_dirfd = -1; /* the pid file's directory, opened before dropping privileges */

/* Write our pid to path through a temporary file and rename(), so a
 * reader never sees a half-written file. Returns 0 or -errno. */
static int pidfile_write(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    pid_dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    int rc = write(fd, buf, (size_t)n) == n ? 0 : -EIO;
    if (close(fd) < 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path) < 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

/* Remove the pid file only if it still names us: after an upgrade it
 * names the new process, which must keep it. Without the right to remove
 * it (privileges dropped, a directory owned by root), empty it: a pid file
 * that names no process is not mistaken for a running one. */
static void pidfile_remove(const char *path)
{
    /* Through the directory opened at start: after dropping privileges the
     * path's parents may no longer be searchable, the directory still is. */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dfd = pid_dirfd >= 0 ? pid_dirfd : AT_FDCWD;
    const char *name = pid_dirfd >= 0 ? base : path;
    char buf[32] = {0};
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        log_warn("pidfile %s: cannot read it back: %s", path, strerror(errno));
        return;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || strtol(buf, NULL, 10) != (long)getpid() || unlinkat(dfd, name, 0) == 0)
        return;
    int err = errno;
    fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        log_info("pidfile %s: cannot remove it (%s); emptied it instead", path, strerror(err));
    } else {
        log_warn("pidfile %s: cannot remove it: %s", path, strerror(err));
    }
}

/* The uid and gid user/group name (the current ones where unset). */
static int account_ids(const struct config *cfg, uid_t *uid, gid_t *gid)
{
    *uid = getuid();
    *gid = getgid();
    if (cfg->user) {
        struct passwd *pw = getpwnam(cfg->user);
        if (!pw) {
            log_error("user %s: no such user", cfg->user);
            return -1;
        }
        *uid = pw->pw_uid;
        *gid = pw->pw_gid;
    }
    if (cfg->group) {
        struct group *gr = getgrnam(cfg->group);
        if (!gr) {
            log_error("group %s: no such group", cfg->group);
            return -1;
        }
        *gid = gr->gr_gid;
    }
    return 0;
}

/* The pid file outlives the switch to user/group: give it to them so they
 * can empty it at exit, and say now if they will not be able to remove it. */
static void pidfile_handover(const char *path, const struct config *cfg)
{
    uid_t uid;
    gid_t gid;
    if ((!cfg->user && !cfg->group) || geteuid() != 0 || account_ids(cfg, &uid, &gid))
        return;
    if (chown(path, uid, gid) < 0)
        log_warn("pidfile %s: chown: %s", path, strerror(errno));
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (!dir[0])
        snprintf(dir, sizeof(dir), "/");
    struct stat st;
    if (stat(dir, &st) < 0)
        return;
    /* The permission bits that apply to uid:gid (owner, else group, else
     * other). A sticky directory is fine: the file is theirs now. */
    mode_t m = st.st_uid == uid   ? (st.st_mode >> 6)
               : st.st_gid == gid ? (st.st_mode >> 3)
                                  : st.st_mode;
    if (uid == 0 || ((m & 2) && (m & 1)))
        return;
    log_warn("pidfile %s: %s is not writable by uid %u, so the file will be %s at exit (give "
             "the directory to that user, e.g. /run/ferry)",
             path, dir, (unsigned)uid, (m & 1) ? "emptied rather than removed" : "left behind");
}

/* user/group: switch for good after binding. Anything short of a complete
 * switch is fatal: running on as root when told not to is the worst case. */
static int drop_privileges(const struct config *cfg)
{
    if (!cfg->user && !cfg->group)
        return 0;
    uid_t uid;
    gid_t gid;
    if (account_ids(cfg, &uid, &gid))
        return -1;
    if (geteuid() != 0) {
        if (uid == geteuid() && gid == getegid())
            return 0; /* already that user: nothing to drop */
        log_error("user/group: switching to %s:%s needs ferry to start as root",
                  cfg->user ? cfg->user : "-", cfg->group ? cfg->group : "-");
        return -1;
    }
    if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
        log_error("user/group: cannot switch to uid %u gid %u: %s", (unsigned)uid, (unsigned)gid,
                  strerror(errno));
        return -1;
    }
    /* Proof rather than trust: a root that can come back has not left. */
    if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid ||
        (uid != 0 && setuid(0) == 0)) {
        log_error("user/group: the switch to uid %u gid %u did not hold", (unsigned)uid,
                  (unsigned)gid);
        return -1;
    }
    log_info("running as uid %u gid %u (%s)", (unsigned)uid, (unsigned)gid,
             cfg->user ? cfg->user : cfg->group);
    return 0;
}

/* The admin room's per-user totals, from the accounting (metrics thread). */
static bool admin_totals_of(void *arg, const char *user, struct admin_user_totals *out)
{
    const struct acct *a = arg;
    struct acct_user_total t;
    if (!a || !acct_enabled(a) || !acct_user_lookup(a, user, &t))
        return false;
    *out = (struct admin_user_totals){
        .bytes_up = t.up,
        .bytes_down = t.down,
        .sessions = t.sessions,
        .udp_datagrams = t.dgram_up + t.dgram_down,
        .have_quota = t.quota_bytes != 0,
        .quota_bytes = t.quota_bytes,
        .quota_used = t.used,
    };
    return true;
}

static int metrics_begin(struct server *s)
{
    const struct config *cfg = s->cfg;
    if (!cfg->metrics_listen.family)
        return 0;
    struct addr a = cfg->metrics_listen;
    /* SO_REUSEPORT: during an upgrade (only) the new ferry binds it too. */
    if (!s->cli->upgrade && server_check_port_free(&a, "metrics.listen", NULL, true))
        return -EADDRINUSE;
    int fd = sock_listen(&a, 64, true);
    char t[ADDR_STRLEN];
    if (fd < 0) {
        log_error("metrics.listen %s: %s", addr_format(&a, t, sizeof(t)), strerror(-fd));
        return fd;
    }
    if (a.port == 0)
        (void)sock_local_addr(fd, &a);
    /* The admin room's hooks are there whether [metrics] admin is on or
     * not, so that a reload may turn it on or off. */
    s->admin = admin_new(s->ws, s->nworkers, &s->sh);
    if (!s->admin) {
        close(fd);
        log_error("metrics: cannot start: out of memory");
        return -ENOMEM;
    }
    admin_set_user_totals(s->admin, admin_totals_of, s->sh.acct);
    struct metrics_source src = {s->ws, s->nworkers, &s->sh, admin_hooks(s->admin)};
    int rc = metrics_start(&s->metrics, fd, &src, s->cfg);
    if (rc) {
        log_error("metrics: cannot start: %s", strerror(-rc));
        return rc;
    }
    log_info("metrics on http://%s/metrics", addr_format(&a, t, sizeof(t)));
    if (cfg->metrics_admin)
        log_info("admin API on http://%s/api/ and the status page on http://%s/status",
                 addr_format(&a, t, sizeof(t)), t);
    return 0;
}

/* The signals the main thread takes through its signalfd, blocked in
 * the calling thread (and so in every thread it starts later). */
static void block_signals(sigset_t *mask)
{
    sigemptyset(mask);
    sigaddset(mask, SIGINT);
    sigaddset(mask, SIGTERM);
    sigaddset(mask, SIGHUP);
    sigaddset(mask, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, mask, NULL);
}

/* Once every worker runs: what the operator should see at start (listen
 * addresses, auth, rules, where iotimeout's default applies), then the
 * "ready:" line and READY=1 for systemd. */
static void announce_ready(const struct server *s, const struct addr *bound)
{
    const struct config *cfg = s->cfg;
    for (size_t i = 0; i < cfg->nlisten; i++) {
        char a[ADDR_STRLEN];
        log_info("listening on %s", addr_format(&bound[i], a, sizeof(a)));
    }
    char backend[4200];
    config_auth_describe(cfg, backend, sizeof(backend));
    if (config_auth_enabled(cfg))
        log_info("authentication: %s, %u verifier threads, cache ttl %u ms", backend,
                 cfg->auth.workers, cfg->auth.cachettl_ms);
    if (cfg->acl)
        log_info("rules: %u, default %s", cfg->acl->n,
                 cfg->rules_default == ACL_DENY ? "deny" : "allow");
    for (size_t i = 0; i < cfg->nlisten; i++) {
        /* iotimeout not set: say where its default is not "none" */
        if (cfg->listen[i].iotimeout_ms == cfg->iotimeout_ms)
            continue;
        char a[ADDR_STRLEN];
        log_info("iotimeout: %u s on %s, the default where other hosts connect (set iotimeout to "
                 "choose; 0 for none)",
                 cfg->listen[i].iotimeout_ms / 1000, addr_format(&bound[i], a, sizeof(a)));
    }
    log_info("ferry %s ready: %u workers, max_connections %u, config %s", FERRY_VERSION,
             s->nworkers, cfg->max_connections, cfg->path ? cfg->path : "(built-in defaults)");
    char st[128];
    snprintf(st, sizeof(st), "READY=1\nMAINPID=%ld\nSTATUS=serving with %u workers", (long)getpid(),
             s->nworkers);
    notify_send(st);
}

/* Initialises every worker (each takes its listening sockets from fds,
 * which are then marked -1 as no longer ours), starts the metrics endpoint
 * and then the worker threads. Returns 0, or -1 after logging why; what
 * was brought up is counted in s->inited and s->started for the caller to
 * take down. */
static int workers_up(struct server *s, int *fds, const struct addr *bound)
{
    const struct config *cfg = s->cfg;
    for (; s->inited < s->nworkers; s->inited++) {
        int rc = worker_init(&s->ws[s->inited], s->inited, &s->sh, &relay_worker_ops, s->cfg,
                             fds + s->inited * cfg->nlisten, bound, cfg->nlisten);
        if (rc) {
            log_error("worker %u: %s", s->inited, strerror(-rc));
            return -1;
        }
        for (size_t i = 0; i < cfg->nlisten; i++)
            fds[s->inited * cfg->nlisten + i] = -1; /* the worker owns them now */
    }
    if (metrics_begin(s))
        return -1;
    for (; s->started < s->nworkers; s->started++) {
        int rc = worker_start(&s->ws[s->started]);
        if (rc) {
            log_error("worker %u: cannot start thread: %s", s->started, strerror(-rc));
            return -1;
        }
    }
    return 0;
}

/* Takes down what workers_up() and the start brought up, in the order
 * their dependencies need: threads joined (aborted first unless this is a
 * clean stop, which also logs the summary), the metrics endpoint, the
 * verifier pool, the workers, the limits tables. */
static void workers_down(struct server *s, bool clean)
{
    for (unsigned i = 0; i < s->started; i++) {
        if (!clean)
            worker_command(&s->ws[i], WORKER_CMD_ABORT);
        worker_join(&s->ws[i]);
    }
    /* The endpoint reads the workers' counters: stop it before they go. */
    metrics_stop(s->metrics);
    s->metrics = NULL;
    admin_free(s->admin);
    s->admin = NULL;
    if (clean)
        log_summary(s);
    if (s->sh.acct) {
        /* Every count is in now: the last save has them all. */
        int rc = acct_state_save(s->sh.acct, (int64_t)time(NULL));
        if (rc)
            log_error("quota: cannot save %s: %s", s->cfg->quota.state_file, strerror(-rc));
    }
    /* The pool delivers what it still holds to the workers' ports, which
     * worker_fini() then frees: stop it first. */
    if (s->auth_started)
        auth_stop(&s->auth);
    for (unsigned i = 0; i < s->inited; i++)
        worker_fini(&s->ws[i]);
    if (s->sh.limits)
        limits_fini(&s->limits);
    acct_free(s->sh.acct);
    s->sh.acct = NULL;
}

/* The log's level, format and target from cfg, and its writer thread.
 * Returns 0, or -errno (said on stderr). */
static int start_logging(const struct config *cfg)
{
    log_set_level(cfg->log_level);
    log_set_format(cfg->log_format);
    struct log_sink sink = {.target = cfg->log_target,
                            .path = cfg->log_file,
                            .syslog_address = cfg->syslog_address,
                            .facility = cfg->syslog_facility};
    int rc = log_start_sink(&sink);
    if (rc && cfg->log_target == LOG_TARGET_SYSLOG)
        log_error("log_target = syslog: %s: %s",
                  cfg->syslog_address ? cfg->syslog_address : "/dev/log", strerror(-rc));
    else if (rc)
        log_error("%s:%d: log_file: %s: %s", cfg->log_file_src, cfg->log_file_line, cfg->log_file,
                  strerror(-rc));
    return rc;
}

int server_run(struct config *cfg, const struct config_cli *cli)
{
    struct server s = {.cli = cli, .cfg = cfg, .nworkers = cfg->workers, .nlisten = cfg->nlisten};
    int status = 1;
    size_t nfds = cfg->nlisten * cfg->workers;
    int *fds = calloc(nfds, sizeof(*fds));
    struct addr *bound = calloc(cfg->nlisten, sizeof(*bound));
    s.lfds = calloc(nfds, sizeof(*s.lfds));
    s.ws = calloc(cfg->workers, sizeof(*s.ws));
    s.sh.exit_efd = -1;
    atomic_init(&s.sh.auth, NULL);
    int sfd = -1;
    bool pidfile = false;

    /* Block before any thread starts (the log writer included): threads
     * inherit the mask, so these signals only ever reach the signalfd. */
    sigset_t mask;
    block_signals(&mask);

    int rc = start_logging(cfg);
    if (rc)
        goto out;
    if (!fds || !bound || !s.ws || !s.lfds) {
        log_error("out of memory");
        goto out;
    }
    if (resolver_global_init()) {
        log_error("c-ares initialisation failed");
        goto out;
    }
    if (bind_all(cfg, fds, bound, cli->upgrade))
        goto out_fds;
    memcpy(s.lfds, fds, nfds * sizeof(*fds));
    s.bound = bound;
    if (cli->pidfile) {
        rc = pidfile_write(cli->pidfile);
        if (rc) {
            log_error("pidfile %s: %s", cli->pidfile, strerror(-rc));
            goto out_fds;
        }
        pidfile = true;
        pidfile_handover(cli->pidfile, cfg);
    }
    if (drop_privileges(cfg))
        goto out_fds;
    if (server_auth_ensure(&s, cfg))
        goto out_fds;
    server_auth_apply_helpers(&s, cfg);
    if (limits_init(&s.limits, cfg->limits.ip_table)) {
        log_error("out of memory for the limits tables");
        goto out_fds;
    }
    s.sh.limits = &s.limits;
    if (acct_begin(&s))
        goto out_fds;

    s.sh.exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (s.sh.exit_efd < 0 || sfd < 0) {
        log_error("eventfd/signalfd: %s", strerror(errno));
        goto out_fds;
    }

    if (workers_up(&s, fds, bound))
        goto out_workers;
    announce_ready(&s, bound);
    server_log_tls_pin(cfg, "");
    if (cli->ready)
        cli->ready(cli->ready_arg, bound, cfg->nlisten);

    supervise(&s, sfd);
    status = 0;

out_workers:
    workers_down(&s, status == 0);
out_fds:
    acct_free(s.sh.acct); /* when the workers never came up */
    s.sh.acct = NULL;
    close_all(fds, nfds);
    if (sfd >= 0)
        close(sfd);
    if (s.sh.exit_efd >= 0)
        close(s.sh.exit_efd);
    resolver_global_fini();
    if (pidfile)
        pidfile_remove(cli->pidfile);
    if (pid_dirfd >= 0)
        close(pid_dirfd);
    pid_dirfd = -1;
out:
    log_stop();
    free(fds);
    free(s.bound ? s.bound : bound);
    free(s.lfds);
    free(s.ws);
    config_unref(s.cfg);
    return status;
}
