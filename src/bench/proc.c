/*
 * proc.c: child process management and /proc sampling for the bench.
 */
#include "bench/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* CPU time of every thread, in nanoseconds, from schedstat (much finer than
 * the clock ticks of /proc/PID/stat). */
static bool cpu_schedstat(pid_t pid, double *out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    double total = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[320];
        snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
        FILE *f = fopen(p, "re");
        if (!f)
            continue;
        unsigned long long ns;
        if (fscanf(f, "%llu", &ns) == 1) {
            total += (double)ns / 1e9;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    *out = total;
    return any;
}

static bool cpu_stat(pid_t pid, double *out)
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
    unsigned long utime, stime;
    /* fields after ")": state(3) ... utime(14) stime(15) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return false;
    *out = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    return true;
}

bool proc_sample(pid_t pid, struct proc_sample *out)
{
    memset(out, 0, sizeof(*out));
    if (pid <= 0)
        return false;
    if (!cpu_schedstat(pid, &out->cpu_s) && !cpu_stat(pid, &out->cpu_s))
        return false;
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        unsigned long kb;
        if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
            out->rss_kib = (double)kb;
    }
    fclose(f);
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

int child_start(struct child *c, const char *ferry, unsigned workers, const char *extra,
                const char *userlist, const char *auth_extra)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "/tmp/ferry-bench-XXXXXX");
    if (!mkdtemp(c->dir))
        return -errno;
    char conf[128], log[128];
    snprintf(conf, sizeof(conf), "%s/ferry.conf", c->dir);
    snprintf(log, sizeof(log), "%s/ferry.log", c->dir);
    FILE *f = fopen(conf, "we");
    if (!f)
        return -errno;
    fprintf(f, "# written by ferry bench\nlisten = 127.0.0.1:0\n");
    if (workers)
        fprintf(f, "workers = %u\n", workers);
    if (extra && *extra)
        fprintf(f, "%s\n", extra);
    if (userlist) {
        char up[128];
        snprintf(up, sizeof(up), "%s/users", c->dir);
        FILE *u = fopen(up, "we");
        if (!u) {
            fclose(f);
            return -errno;
        }
        fprintf(u, "%s\n", userlist);
        fclose(u);
        fprintf(f, "[auth]\nuserlist = users\n%s\n", auth_extra ? auth_extra : "");
    }
    fclose(f);

    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || devnull < 0)
            _exit(127);
        dup2(devnull, STDIN_FILENO);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl(ferry, ferry, "serve", "-c", conf, (char *)NULL);
        _exit(127);
    }
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
        rmdir(c->dir);
        c->dir[0] = '\0';
    }
    return status;
}

bool bench_sample(const struct bench *b, struct proc_sample *out)
{
    memset(out, 0, sizeof(*out));
    if (b->npids == 0)
        return false;
    for (unsigned i = 0; i < b->npids; i++) {
        struct proc_sample one;
        if (!proc_sample(b->pids[i], &one))
            return false;
        out->cpu_s += one.cpu_s;
        out->rss_kib += one.rss_kib;
    }
    return true;
}
