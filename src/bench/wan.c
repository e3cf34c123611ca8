/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/wan.c: `ferry bench wan`, the emulated wide-area path's command.
 * It makes two network namespaces (ip netns add), opens a TUN device in
 * each (setns, then /dev/net/tun), gives them their addresses and raised
 * TCP buffer maxima, starts the forwarder (wanfwd.c) between them, runs
 * --in-b's command in B and then --in-a's in A (/bin/sh -c), and removes
 * everything when A's command ends, on SIGINT, SIGTERM or SIGHUP. Without
 * commands it holds the path until a signal.
 *
 * A run that crashed leaves its namespaces behind: their names carry the
 * pid (WAN_NS_PREFIX<pid>-a), and names whose pid no longer runs are
 * removed at the next start. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)
 * and /dev/net/tun; without them it says so and exits 77 (a skip).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/wan.h"
#include "util/compiler.h"

/* The exit status of "cannot run here" (not root, no TUN): automake's skip. */
#define WAN_EXIT_SKIP 77
#define NETNS_DIR     "/run/netns"
/* The TCP buffer maxima set in both namespaces: 64 MiB lets one
 * connection keep 5 Gbit/s x 100 ms in flight. */
#define WAN_TCP_MEM   "4096 131072 67108864"

static const char usage[] =
    "usage: ferry bench wan [options] [--in-b CMD] [--in-a CMD]\n"
    "\n"
    "An emulated wide-area path (tc netem without the kernel module): two network\n"
    "namespaces, A (" WAN_ADDR_A ", " WAN_ADDR6_A ") and B (" WAN_ADDR_B ", " WAN_ADDR6_B
    "), each\n"
    "with a TUN device " WAN_IFNAME ", and a forwarder in this process between them that delays,\n"
    "drops and rate-limits packets, both directions alike. TCP buffer maxima are\n"
    "raised in both namespaces (64 MiB) so one connection can fill the path.\n"
    "Needs root and /dev/net/tun (exit 77 without them). Everything is removed when\n"
    "the run ends; namespaces a crashed run left behind are removed at start.\n"
    "\n"
    "The path (each also as NAME=VALUE in --path delay=25ms,loss=1%,rate=1gbit):\n"
    "  --delay T      one-way delay (25ms, 500us; default 0): RTT = 2 x delay\n"
    "  --jitter T     uniform +-T around the delay; packets are never reordered\n"
    "  --loss P%      random loss each way (0.5%; seeded PRNG, --seed N)\n"
    "  --rate R       link rate of IP packets (100mbit, 1gbit; default none)\n"
    "  --queue T      the queue before the link, in time at the rate (default 50ms);\n"
    "                 a packet that finds it full is dropped (counted)\n"
    "  --mtu N        MTU of both TUN devices (default 1500)\n"
    "  --threads 1|2  one forwarding loop for both directions, or one each (default)\n"
    "  --gso on|off   TUN offloads (default on): senders hand over TCP packets of up\n"
    "                 to 64 KiB, cut into their wire segments; each segment is lost,\n"
    "                 rate-limited, queued and counted alone, and the segments that\n"
    "                 pass leave as runs (one write each, spread <= 250 us). off: a\n"
    "                 read and a write per packet (the stack segments)\n"
    "\n"
    "What runs on it (each by /bin/sh -c; FERRY_WAN_A and FERRY_WAN_B hold the two\n"
    "addresses, FERRY_WAN_NS_A and FERRY_WAN_NS_B the namespaces' names):\n"
    "  --in-b CMD     started first, in B (servers: ferry serve, origins)\n"
    "  --in-a CMD     then in A (clients); when it exits the run ends with its\n"
    "                 status, and B's command gets SIGTERM\n"
    "  (neither)      hold the path until SIGINT/SIGTERM; use ip netns exec NAME\n"
    "When ready, one line on stderr names the namespaces; at the end, the counts\n"
    "of each direction (packets in, out, lost, tail-dropped: wire packets, so\n"
    "segments with gso on; and GSO packets read, their segments, pieces written).\n";

/* The run: the path and the commands. */
struct wan_run {
    struct wan_path p;
    pid_t pid[2]; /* A's and B's commands (their process groups), or 0 */
    const char *cmd[2];
};

/* Run argv (ip ...) to its end; stdout to /dev/null, stderr shown.
 * Returns 0 when it exited 0. */
static int run_argv(const char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* ip -n NS WORDS... (up to 8 words). */
static int ip_in(const char *ns, const char *w0, const char *w1, const char *w2, const char *w3,
                 const char *w4, const char *w5, const char *w6)
{
    const char *argv[] = {"ip", "-n", ns, w0, w1, w2, w3, w4, w5, w6, NULL};
    return run_argv(argv);
}

static int netns_del(const char *name)
{
    const char *argv[] = {"ip", "netns", "del", name, NULL};
    return run_argv(argv);
}

/* Remove the namespaces under the prefix whose run (pid) is gone. */
static void clean_stale(void)
{
    DIR *d = opendir(NETNS_DIR);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, WAN_NS_PREFIX, strlen(WAN_NS_PREFIX)) != 0)
            continue;
        char *end;
        long pid = strtol(e->d_name + strlen(WAN_NS_PREFIX), &end, 10);
        if (pid <= 0 || *end != '-' || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        fprintf(stderr, "ferry bench wan: removing %s (left by a run that ended)\n", e->d_name);
        (void)netns_del(e->d_name);
    }
    closedir(d);
}

/* Write text into a file under /proc/sys (of this thread's namespace). */
static int sysctl_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int rc = n == (ssize_t)strlen(text) ? 0 : -EIO;
    close(fd);
    return rc;
}

/* With gso: a virtio_net_hdr before every packet (the legacy 10 bytes:
 * num_buffers of the 12-byte one only means something with mergeable
 * receive buffers, which a TUN device does not use) and the offloads that
 * make the stack hand over GSO packets (checksum, TSO for IPv4 and IPv6;
 * not TSO_ECN: a packet with CWR is segmented by the stack). */
static int tun_offload(int fd)
{
    int hdr = 10;
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 ||
        ioctl(fd, TUNSETOFFLOAD, (unsigned long)(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)) < 0)
        return -errno;
    return 0;
}

/* Inside namespace fd ns: the TUN device WAN_IFNAME (non-blocking; with
 * gso, the offloads) and the TCP buffer maxima; back to this process's own
 * namespace after. Returns the TUN descriptor, or -errno. */
static int tun_open_in(int nsfd, int selffd, bool gso)
{
    if (setns(nsfd, CLONE_NEWNET) < 0)
        return -errno;
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    int rc = fd < 0 ? -errno : 0;
    if (!rc) {
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        ifr.ifr_flags = (short)(IFF_TUN | IFF_NO_PI | (gso ? IFF_VNET_HDR : 0));
        memcpy(ifr.ifr_name, WAN_IFNAME, sizeof(WAN_IFNAME));
        if (ioctl(fd, TUNSETIFF, &ifr) < 0)
            rc = -errno;
        else if (gso)
            rc = tun_offload(fd);
    }
    if (!rc && (sysctl_write("/proc/sys/net/ipv4/tcp_rmem", WAN_TCP_MEM) ||
                sysctl_write("/proc/sys/net/ipv4/tcp_wmem", WAN_TCP_MEM)))
        fputs("ferry bench wan: cannot raise tcp_rmem/tcp_wmem in the namespace\n", stderr);
    if (setns(selffd, CLONE_NEWNET) < 0 && !rc)
        rc = -errno;
    if (rc && fd >= 0)
        close(fd);
    return rc ? rc : fd;
}

/* Addresses and links of side k (0 A, 1 B). */
static int side_configure(const struct wan_path *p, unsigned k, unsigned mtu)
{
    const char *ns = p->ns[k];
    char mtus[16], a4[32], a6[48];
    snprintf(mtus, sizeof(mtus), "%u", mtu);
    snprintf(a4, sizeof(a4), "%s/24", k ? WAN_ADDR_B : WAN_ADDR_A);
    snprintf(a6, sizeof(a6), "%s/64", k ? WAN_ADDR6_B : WAN_ADDR6_A);
    int rc = ip_in(ns, "link", "set", "lo", "up", NULL, NULL, NULL);
    if (!rc)
        rc = ip_in(ns, "addr", "add", a4, "dev", WAN_IFNAME, NULL, NULL);
    if (!rc)
        rc = ip_in(ns, "-6", "addr", "add", a6, "dev", WAN_IFNAME, "nodad");
    if (!rc)
        rc = ip_in(ns, "link", "set", WAN_IFNAME, "mtu", mtus, "up", NULL);
    return rc;
}

/* Both namespaces, their TUN devices and addresses. Returns 0, or 1 (told). */
static int path_make(struct wan_path *p, const struct wan_conf *c)
{
    int rc = 0;
    for (unsigned k = 0; !rc && k < 2; k++) {
        const char *argv[] = {"ip", "netns", "add", p->ns[k], NULL};
        if ((rc = run_argv(argv)) != 0) {
            fprintf(stderr, "ferry bench wan: ip netns add %s failed\n", p->ns[k]);
            break;
        }
        p->made[k] = true;
        char path[96];
        snprintf(path, sizeof(path), NETNS_DIR "/%s", p->ns[k]);
        p->nsfd[k] = open(path, O_RDONLY | O_CLOEXEC);
        rc = p->nsfd[k] < 0 ? -errno : tun_open_in(p->nsfd[k], p->selffd, c->gso);
        if (rc < 0) {
            fprintf(stderr, "ferry bench wan: a TUN device in %s: %s\n", p->ns[k], strerror(-rc));
            break;
        }
        p->tun[k] = rc;
        rc = side_configure(p, k, c->mtu);
        if (rc)
            fprintf(stderr, "ferry bench wan: cannot configure %s\n", p->ns[k]);
    }
    return rc ? 1 : 0;
}

/* The janitor: waits until the pipe's write end is gone (this process
 * ended), then removes the namespaces still there. */
static void janitor_start(struct wan_path *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[1]);
        setpgid(0, 0); /* a ^C to the bench's group does not reach it */
        struct sigaction sa = {.sa_handler = SIG_IGN};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        char byte;
        while (read(fds[0], &byte, 1) < 0 && errno == EINTR)
            ;
        for (unsigned k = 0; k < 2; k++) {
            char path[96];
            snprintf(path, sizeof(path), NETNS_DIR "/%s", p->ns[k]);
            if (access(path, F_OK) == 0)
                (void)netns_del(p->ns[k]);
        }
        _exit(0);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return;
    }
    p->janitor = pid;
    p->janitor_fd = fds[1];
}

int wan_path_up(struct wan_path *p, const struct wan_conf *c)
{
    memset(p, 0, sizeof(*p));
    p->tun[0] = p->tun[1] = p->nsfd[0] = p->nsfd[1] = -1;
    p->selffd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (p->selffd < 0) {
        perror("ferry bench wan: /proc/self/ns/net");
        return 1;
    }
    clean_stale();
    for (unsigned k = 0; k < 2; k++)
        snprintf(p->ns[k], sizeof(p->ns[k]), WAN_NS_PREFIX "%ld-%c", (long)getpid(), "ab"[k]);
    janitor_start(p);
    int st = path_make(p, c);
    if (!st && !(p->fwd = wan_fwd_start(c, p->tun[0], p->tun[1]))) {
        perror("ferry bench wan: the forwarder");
        st = 1;
    }
    if (st)
        wan_path_down(p, true);
    return st;
}

int wan_path_enter(struct wan_path *p, enum wan_side side)
{
    int fd = side == WAN_SIDE_OWN ? p->selffd : p->nsfd[side];
    return setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
}

void wan_path_down(struct wan_path *p, bool quiet)
{
    if (!p->made[0] && p->selffd <= 0)
        return; /* never made */
    wan_fwd_stop(p->fwd, quiet);
    p->fwd = NULL;
    if (p->selffd > 0)
        (void)wan_path_enter(p, WAN_SIDE_OWN);
    for (unsigned k = 0; k < 2; k++) {
        if (p->tun[k] >= 0)
            close(p->tun[k]);
        if (p->nsfd[k] >= 0)
            close(p->nsfd[k]);
        p->tun[k] = p->nsfd[k] = -1;
        if (p->made[k] && netns_del(p->ns[k]))
            fprintf(stderr, "ferry bench wan: cannot remove namespace %s\n", p->ns[k]);
        p->made[k] = false;
    }
    if (p->selffd > 0)
        close(p->selffd);
    p->selffd = 0;
    if (p->janitor_fd > 0) { /* nothing left for it: it ends */
        close(p->janitor_fd);
        while (waitpid(p->janitor, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    p->janitor_fd = 0;
}

/* /bin/sh -c cmd in side k's namespace, in a process group of its own.
 * Returns its pid, or -errno. */
static pid_t cmd_start(struct wan_run *r, unsigned k)
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        setpgid(0, 0);
        if (wan_path_enter(&r->p, k ? WAN_SIDE_B : WAN_SIDE_A)) {
            perror("ferry bench wan: setns");
            _exit(127);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl("/bin/sh", "sh", "-c", r->cmd[k], (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

/* SIGTERM to a command's process group, SIGKILL after 3 s. */
static void cmd_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(-pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            kill(-pid, SIGTERM); /* what it left in its group */
            return;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Wait for the end: A's command exits (its status), or SIGINT/SIGTERM/SIGHUP (128 + it), or,
 * without an A command, B's command exits (its status). */
static int wait_end(struct wan_run *r, const sigset_t *set)
{
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(set, &si);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            fprintf(stderr, "ferry bench wan: signal %d: stopping\n", sig);
            return 128 + sig;
        }
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            for (unsigned k = 0; k < 2; k++) {
                if (pid != r->pid[k])
                    continue;
                kill(-pid, SIGTERM); /* the rest of its group */
                r->pid[k] = 0;
                if (k == 0 || !r->cmd[0])
                    return code;
                fprintf(stderr, "ferry bench wan: B's command exited (%d)\n", code);
            }
        }
    }
}

/* The command line into c and r. Returns -1 to go on, else an exit status. */
static int wan_opts(int argc, char **argv, struct wan_conf *c, struct wan_run *r)
{
    static const struct option opts[] = {
        {"delay", required_argument, NULL, 0},  {"jitter", required_argument, NULL, 0},
        {"loss", required_argument, NULL, 0},   {"rate", required_argument, NULL, 0},
        {"queue", required_argument, NULL, 0},  {"seed", required_argument, NULL, 0},
        {"mtu", required_argument, NULL, 0},    {"threads", required_argument, NULL, 0},
        {"gso", required_argument, NULL, 0},    {"path", required_argument, NULL, 'p'},
        {"in-a", required_argument, NULL, 'a'}, {"in-b", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0}};
    int ch, idx;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
        const char *bad;
        int rc = 0;
        switch (ch) {
        case 0:
            if ((rc = wan_conf_set(c, opts[idx].name, optarg)))
                bad = optarg;
            break;
        case 'p':
            rc = wan_conf_parse(c, optarg, &bad);
            break;
        case 'a':
        case 'b':
            r->cmd[ch == 'a' ? 0 : 1] = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
        if (rc) {
            fprintf(stderr, "ferry bench wan: bad value '%s'%s\n", bad,
                    rc == -ERANGE ? " (out of range)" : "");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ferry bench wan: unexpected '%s' (commands go in --in-a/--in-b)\n",
                argv[optind]);
        return 2;
    }
    return -1;
}

/* Root and /dev/net/tun, or a message and WAN_EXIT_SKIP. */
static int can_run(void)
{
    if (geteuid() != 0) {
        fputs("ferry bench wan: needs root (network namespaces, TUN devices): skipped\n", stderr);
        return WAN_EXIT_SKIP;
    }
    if (access("/dev/net/tun", R_OK | W_OK) < 0) {
        fputs("ferry bench wan: /dev/net/tun is missing: skipped\n", stderr);
        return WAN_EXIT_SKIP;
    }
    return 0;
}

/* The path is up: the commands, then the wait. Returns the exit status. */
static int run_on_path(struct wan_run *r, const struct wan_conf *c, const sigset_t *set)
{
    char words[160];
    wan_conf_describe(c, words, sizeof(words));
    fprintf(stderr, "ferry bench wan: ready: A %s (%s %s) <-> B %s (%s %s): %s\n", r->p.ns[0],
            WAN_ADDR_A, WAN_ADDR6_A, r->p.ns[1], WAN_ADDR_B, WAN_ADDR6_B, words);
    setenv("FERRY_WAN_A", WAN_ADDR_A, 1);
    setenv("FERRY_WAN_B", WAN_ADDR_B, 1);
    setenv("FERRY_WAN_NS_A", r->p.ns[0], 1);
    setenv("FERRY_WAN_NS_B", r->p.ns[1], 1);
    for (unsigned k = 2; k-- > 0;) { /* B first */
        if (!r->cmd[k])
            continue;
        r->pid[k] = cmd_start(r, k);
        if (r->pid[k] < 0) {
            perror("ferry bench wan: fork");
            r->pid[k] = 0;
            return 1;
        }
    }
    return wait_end(r, set);
}

int wan_main(int argc, char **argv)
{
    struct wan_conf c;
    struct wan_run r;
    memset(&r, 0, sizeof(r));
    wan_conf_init(&c);
    int st = wan_opts(argc, argv, &c, &r);
    if (st >= 0)
        return st;
    if ((st = can_run()))
        return st;
    /* Signals are taken by sigwaitinfo() only: blocked from here on (the
     * forwarder's threads inherit the mask; commands get it cleared). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    st = wan_path_up(&r.p, &c);
    if (st)
        return st;
    st = run_on_path(&r, &c, &set);
    cmd_stop(r.pid[0]);
    cmd_stop(r.pid[1]);
    wan_path_down(&r.p, false);
    return st;
}
