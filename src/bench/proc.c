/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc.c: child process management and /proc sampling for the bench, and
 * the short helper commands (git, `ferry --version`) that describe the
 * binary under test. Nothing here decides whether a run passed.
 */
#include "bench/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "tls/selfsigned.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* One process from /proc/PID/stat: its parent, and its CPU seconds, its
 * own threads' (exited ones included) plus those of the children it has
 * reaped. */
static bool stat_read(pid_t pid, pid_t *ppid, double *cpu)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return false;
    int pp;
    unsigned long utime, stime;
    long cutime, cstime;
    /* after ")": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) */
    if (sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld", &pp, &utime,
               &stime, &cutime, &cstime) != 5)
        return false;
    *ppid = pp;
    *cpu = (double)(utime + stime + (unsigned long)cutime + (unsigned long)cstime) /
           (double)sysconf(_SC_CLK_TCK);
    return true;
}

/* Memory a process holds: its proportional share (Pss) where the kernel
 * has it, so forked children sharing pages are not counted twice; its RSS
 * otherwise. In KiB; *src says which (MEM_SRC_*, 0 if neither was read). */
static double mem_read(pid_t pid, unsigned *src)
{
    char path[64], line[256];
    double rss = 0, pss = -1;
    snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "re");
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            unsigned long kb;
            if (sscanf(line, "Pss: %lu kB", &kb) == 1)
                pss = (double)kb;
        }
        fclose(f);
    }
    if (pss >= 0) {
        *src |= MEM_SRC_PSS;
        return pss;
    }
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long kb;
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1) {
            rss = (double)kb;
            *src |= MEM_SRC_RSS;
        }
    }
    fclose(f);
    return rss;
}

struct proc_entry {
    pid_t pid, ppid;
    double cpu;
    bool in_tree;
};

/* The process and every descendant alive now: a proxy that forks per
 * client (Dante) is measured whole. */
bool proc_sample(pid_t pid, struct proc_sample *out)
{
    memset(out, 0, sizeof(*out));
    pid_t ppid;
    double cpu;
    if (pid <= 0 || !stat_read(pid, &ppid, &cpu))
        return false;
    out->cpu_s = cpu;
    out->mem_kib = mem_read(pid, &out->mem_src);

    struct proc_entry *all = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || v <= 0 || v == pid)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct proc_entry *nv = realloc(all, ncap * sizeof(*nv));
            if (!nv)
                break;
            all = nv;
            cap = ncap;
        }
        if (stat_read((pid_t)v, &all[n].ppid, &all[n].cpu)) {
            all[n].pid = (pid_t)v;
            all[n].in_tree = false;
            n++;
        }
    }
    if (d)
        closedir(d);
    /* Add descendants generation by generation. */
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < n; i++) {
            if (all[i].in_tree)
                continue;
            bool child = all[i].ppid == pid;
            for (size_t j = 0; j < n && !child; j++)
                child = all[j].in_tree && all[j].pid == all[i].ppid;
            if (child) {
                all[i].in_tree = grew = true;
                out->cpu_s += all[i].cpu;
                out->mem_kib += mem_read(all[i].pid, &out->mem_src);
            }
        }
    }
    free(all);
    return true;
}

static bool find_listen_line(const char *log, struct addr *out)
{
    FILE *f = fopen(log, "re");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "listening on ");
        if (!p)
            continue;
        p += strlen("listening on ");
        p[strcspn(p, " \r\n")] = '\0';
        found = addr_parse(p, -1, out) == 0;
        break;
    }
    fclose(f);
    return found;
}

/* Children start with posix_spawn, not fork: the bench's threads keep
 * opening and closing sockets meanwhile, and a forked child holds a copy of
 * every one of them until it execs (the shorter that window, the better;
 * the targets also de-register a socket before closing it). A child reads
 * /dev/null and starts with no signal blocked; the caller adds where its
 * output goes. */
static void spawn_init(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at)
{
    sigset_t none;
    sigemptyset(&none);
    posix_spawn_file_actions_init(fa);
    posix_spawn_file_actions_addopen(fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_init(at);
    posix_spawnattr_setsigmask(at, &none);
    posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK);
}

int child_conf_format(char *buf, size_t cap, const struct child_conf *cc)
{
    char a[ADDR_STRLEN];
    size_t len = 0;
    int n;
#define PUT(...)                                         \
    do {                                                 \
        n = snprintf(buf + len, cap - len, __VA_ARGS__); \
        if (n < 0 || (size_t)n >= cap - len)             \
            return -1;                                   \
        len += (size_t)n;                                \
    } while (0)
    if (cap == 0)
        return -1;
    buf[0] = '\0';
    PUT("# written by ferry bench\nlisten = %s%s:0%s%s%s\n", cc->tls ? "tls://" : "",
        cc->listen_ip ? cc->listen_ip : "127.0.0.1",
        cc->next && cc->next_pin ? " protocols=socks5+socks4+http" : "",
        cc->ws_path && !cc->next ? " websocket=" : "", cc->ws_path && !cc->next ? cc->ws_path : "");
    if (cc->listen_ip) /* a namespace of the bench's own (--wan): nobody else reaches it */
        PUT("open_proxy = yes\n");
    if (cc->workers)
        PUT("workers = %u\n", cc->workers);
    if (cc->next)
        PUT("outbound = %s\n", CHILD_NEXT_OUTBOUND);
    if (cc->extra && *cc->extra)
        PUT("%s%s", cc->extra, cc->extra[strlen(cc->extra) - 1] == '\n' ? "" : "\n");
    if (cc->next && cc->next_pin)
        PUT("[outbound %s]\nurl = https://%s\npin = %s\nmux = h2\n%s%s%s", CHILD_NEXT_OUTBOUND,
            addr_format(cc->next, a, sizeof(a)), cc->next_pin, cc->ws_path ? "websocket = " : "",
            cc->ws_path ? cc->ws_path : "", cc->ws_path ? "\n" : "");
    else if (cc->next)
        PUT("[outbound %s]\nurl = socks5://%s\n", CHILD_NEXT_OUTBOUND,
            addr_format(cc->next, a, sizeof(a)));
    if (cc->userlist)
        PUT("[auth]\nuserlist = users\n%s%s", cc->auth_extra ? cc->auth_extra : "",
            cc->auth_extra && *cc->auth_extra ? "\n" : "");
    if (cc->listen_ip) /* the targets listen beside it: its own address, protected otherwise */
        PUT("[rules]\nallow to %s/32\n", cc->listen_ip);
    if (cc->tls)
        PUT("[tls]\ncert = %s/cert.pem\nkey = %s/key.pem\n", cc->tls_dir ? cc->tls_dir : ".",
            cc->tls_dir ? cc->tls_dir : ".");
    if (cc->sections && *cc->sections)
        PUT("%s%s", cc->sections, cc->sections[strlen(cc->sections) - 1] == '\n' ? "" : "\n");
#undef PUT
    return (int)len;
}

/* DIR/ferry.conf (and DIR/users) for cc. Returns 0 or -errno. */
/* A throwaway certificate for a TLS child into c->dir; its pin into c->pin.
 * Returns 0 or -errno (told on stderr). */
static int child_make_cert(struct child *c)
{
    struct tls_cert_conf conf = {.names = {"localhost", "127.0.0.1"}, .nnames = 2, .days = 1};
    struct tls_cert cert;
    char err[256];
    memset(&cert, 0, sizeof(cert));
    int rc = tls_cert_make(&conf, &cert, err, sizeof(err));
    if (!rc)
        rc = tls_cert_write(&cert, c->dir, true, err, sizeof(err));
    if (!rc)
        snprintf(c->pin, sizeof(c->pin), "%s", cert.pin);
    else
        fprintf(stderr, "ferry bench: cannot make the proxy's certificate: %s\n", err);
    tls_cert_fini(&cert);
    return rc;
}

static int child_write_conf(struct child *c, const struct child_conf *cc, const char *conf)
{
    static char text[8192]; /* the bench's main thread only */
    struct child_conf tc = *cc;
    tc.tls_dir = c->dir;
    if (cc->tls) {
        int rc = child_make_cert(c);
        if (rc)
            return rc;
    }
    if (child_conf_format(text, sizeof(text), &tc) < 0)
        return -E2BIG;
    if (cc->userlist) {
        char up[128];
        snprintf(up, sizeof(up), "%s/users", c->dir);
        FILE *u = fopen(up, "we");
        if (!u)
            return -errno;
        fprintf(u, "%s\n", cc->userlist);
        fclose(u);
    }
    FILE *f = fopen(conf, "we");
    if (!f)
        return -errno;
    fputs(text, f);
    return fclose(f) ? -EIO : 0;
}

int child_start(struct child *c, const char *ferry, const struct child_conf *cc)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "/tmp/ferry-bench-XXXXXX");
    if (!mkdtemp(c->dir))
        return -errno;
    char conf[128], log[128];
    snprintf(conf, sizeof(conf), "%s/ferry.conf", c->dir);
    snprintf(log, sizeof(log), "%s/ferry.log", c->dir);
    int wrc = child_write_conf(c, cc, conf);
    if (wrc)
        return wrc;

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    spawn_init(&fa, &at);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    const char *const argv[] = {ferry, "serve", "-c", conf, NULL};
    pid_t pid;
    int rc = -posix_spawn(&pid, ferry, &fa, &at, (char *const *)(uintptr_t)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc)
        return rc;
    c->pid = pid;
    for (int i = 0; i < 1000; i++) { /* up to 10 s */
        if (find_listen_line(log, &c->addr))
            return 0;
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            c->pid = 0;
            fprintf(stderr, "ferry bench: %s exited at start; its log:\n", ferry);
            FILE *lf = fopen(log, "re");
            char line[512];
            while (lf && fgets(line, sizeof(line), lf))
                fputs(line, stderr);
            if (lf)
                fclose(lf);
            return -ECHILD;
        }
        sleep_ms(10);
    }
    child_stop(c);
    return -ETIMEDOUT;
}

int child_stop(struct child *c)
{
    int status = -1;
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        for (int i = 0; i < 1000; i++) { /* up to 10 s */
            int st;
            if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
                status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                break;
            }
            if (i == 999) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, &st, 0);
            }
            sleep_ms(10);
        }
        c->pid = 0;
    }
    if (c->dir[0]) {
        char p[160];
        snprintf(p, sizeof(p), "%s/ferry.conf", c->dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/ferry.log", c->dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/users", c->dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/cert.pem", c->dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/key.pem", c->dir);
        unlink(p);
        rmdir(c->dir);
        c->dir[0] = '\0';
    }
    return status;
}

/* The allocations pid has made so far, from the counter
 * bench/micro/alloccount.so (LD_PRELOAD) keeps in $ALLOC_COUNT_DIR/alloc.PID:
 * two 64-bit counters, allocations then frees, in a file the process has
 * mapped shared. False when the variable is unset or pid has no counter. */
static bool alloc_read(pid_t pid, uint64_t *allocs)
{
    const char *dir = getenv("ALLOC_COUNT_DIR");
    if (!dir || !*dir)
        return false;
    char path[4096];
    snprintf(path, sizeof(path), "%s/alloc.%d", dir, (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = pread(fd, allocs, sizeof(*allocs), 0);
    close(fd);
    return n == (ssize_t)sizeof(*allocs);
}

/* bench.h: the kernel's TcpExt ListenOverflows counter. */
bool bench_listen_overflows(uint64_t *out)
{
    FILE *f = fopen("/proc/net/netstat", "re");
    if (!f)
        return false;
    char names[4096], values[4096];
    bool found = false;
    while (!found && fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
        if (strncmp(names, "TcpExt:", 7) != 0 || strncmp(values, "TcpExt:", 7) != 0)
            continue;
        char *sn = NULL, *sv = NULL;
        char *n = strtok_r(names + 7, " \n", &sn);
        char *v = strtok_r(values + 7, " \n", &sv);
        for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv)) {
            if (strcmp(n, "ListenOverflows") == 0) {
                *out = strtoull(v, NULL, 10);
                found = true;
                break;
            }
        }
    }
    fclose(f);
    return found;
}

bool bench_sample(const struct bench *b, struct proc_sample *out)
{
    memset(out, 0, sizeof(*out));
    if (b->npids == 0)
        return false;
    out->have_allocs = true;
    for (unsigned i = 0; i < b->npids; i++)
        if (!alloc_read(b->pids[i], &out->allocs[i]))
            out->have_allocs = false;
    for (unsigned i = 0; i < b->npids; i++) {
        struct proc_sample one;
        if (!proc_sample(b->pids[i], &one)) {
            fprintf(stderr, "ferry bench: process %d is gone: no CPU or memory figures\n",
                    (int)b->pids[i]);
            return false;
        }
        out->cpu_s += one.cpu_s;
        out->mem_kib += one.mem_kib;
        out->mem_src |= one.mem_src;
    }
    return true;
}

int proc_capture(const char *const argv[], char *out, size_t cap)
{
    if (cap == 0)
        return -EINVAL;
    out[0] = '\0';
    /* The environment without GIT_*: git must look at the binary's own
     * tree, never one named by the caller's environment. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    if (!env)
        return -ENOMEM;
    for (size_t i = 0, k = 0; i < n; i++)
        if (strncmp(environ[i], "GIT_", 4) != 0)
            env[k++] = environ[i];
    int p[2], rc;
    if (pipe2(p, O_CLOEXEC) < 0) {
        rc = -errno;
        free(env);
        return rc;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    spawn_init(&fa, &at);
    posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    rc = -posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)(uintptr_t)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(env);
    close(p[1]);
    if (rc) {
        close(p[0]);
        return rc;
    }
    size_t len = 0;
    for (;;) {
        char sink[256];
        bool keep = len + 1 < cap;
        ssize_t got = read(p[0], keep ? out + len : sink, keep ? cap - 1 - len : sizeof(sink));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (keep)
            len += (size_t)got;
    }
    close(p[0]);
    out[len] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -ECHILD;
}
