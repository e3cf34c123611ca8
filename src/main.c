/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * main.c: argv to subcommand. The only file that decides the process exit
 * status; everything else returns errors to it.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "auth/passwd.h"
#include "bench/bench.h"
#include "client/client.h"
#include "config/config.h"
#include "edge/cli.h"
#include "log/log.h"
#include "server/server.h"
#include "tls/cert.h"
#include "tls/tls.h"
#include "version.h"

static const char usage_main[] =
    "usage: ferry COMMAND [OPTIONS]\n"
    "\n"
    "A SOCKS5, SOCKS4 and HTTP proxy server (Linux).\n"
    "\n"
    "Commands:\n"
    "  serve      run the proxy (default: 127.0.0.1:1080, no config file needed)\n"
    "  passwd     print a userlist line for a user: ferry passwd NAME\n"
    "  client     open local ports through a ferry server (a tunnel):\n"
    "             ferry client https://HOST socks\n"
    "  cert       make a self-signed certificate and key for a TLS listener and\n"
    "             print its pin: ferry cert --out DIR\n"
    "  bench      measure a proxy (ferry itself by default): ferry bench --help\n"
    "  edge       keys and signed host names for edge mode: ferry edge --help\n"
    "  help       show help for a command: ferry help serve\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help\n"
    "  -V, --version  print the version\n";

static const char usage_serve[] =
    "usage: ferry serve [-c FILE] [-l ADDR:PORT]... [-w WORKERS] [--pidfile FILE] [--check]\n"
    "                   [--upgrade]\n"
    "\n"
    "Run the proxy (SOCKS5, SOCKS4 and HTTP on one port) in the foreground.\n"
    "Without -c, built-in defaults apply: listen on 127.0.0.1:1080, one\n"
    "worker per CPU, no authentication.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     read settings from FILE (see ferry.conf.example)\n"
    "  -l, --listen ADDR:PORT\n"
    "                        listen here instead of the config's addresses;\n"
    "                        repeat for several (IPv6 as [::1]:1080; port 0\n"
    "                        picks a free port, shown in the log;\n"
    "                        tls://ADDR:PORT serves over TLS with [tls] cert\n"
    "                        and key)\n"
    "  -w, --workers N       worker threads (auto = one per CPU)\n"
    "      --pidfile FILE    write the process id to FILE once listening; removed\n"
    "                        at exit unless another ferry has taken it over\n"
    "      --upgrade         take over from a running ferry: share its listen\n"
    "                        ports (SO_REUSEPORT) instead of refusing them as\n"
    "                        in use; then send the old one SIGTERM\n"
    "      --check           validate the configuration (and that log_file\n"
    "                        can be opened; nothing is created), print any\n"
    "                        errors as FILE:LINE: KEY: message, exit 0 or 1\n"
    "                        (warnings, such as a bad [udp] limit that falls\n"
    "                        back to its default, are printed but exit 0)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Environment:\n"
    "  FERRY_LOG=debug|info|warn|error   overrides log_level\n"
    "\n"
    "Signals:\n"
    "  SIGHUP            reload the configuration, rules and userlist; new\n"
    "                    sessions use it, established ones carry on; listen\n"
    "                    addresses may be added or removed; an invalid file\n"
    "                    is refused with its errors logged\n"
    "  SIGINT, SIGTERM   stop accepting, let sessions finish for up to\n"
    "                    shutdown_timeout, then exit 0; a second signal\n"
    "                    closes the remaining sessions at once\n"
    "  SIGUSR1           reopen log_file (after logrotate moved it)\n"
    "\n"
    "Under systemd (Type=notify) ferry reports READY=1, RELOADING=1 and\n"
    "STOPPING=1. See ferry(1), ferry.conf(5) and docs/operations.md.\n";

static int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"listen", required_argument, NULL, 'l'},
        {"workers", required_argument, NULL, 'w'}, {"check", no_argument, NULL, 'C'},
        {"pidfile", required_argument, NULL, 'P'}, {"upgrade", no_argument, NULL, 'U'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    struct config_cli cli = {0};
    bool check = false;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:l:w:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            cli.path = optarg;
            break;
        case 'l':
            if (cli.nlisten == CONFIG_MAX_LISTEN) {
                log_print(true, "ferry serve: at most %d -l options\n", CONFIG_MAX_LISTEN);
                return 2;
            }
            cli.listen[cli.nlisten++] = optarg;
            break;
        case 'w':
            cli.workers = optarg;
            break;
        case 'C':
            check = true;
            break;
        case 'P':
            cli.pidfile = optarg;
            break;
        case 'U':
            cli.upgrade = true;
            break;
        case 'h':
            log_print(false, "%s", usage_serve);
            return 0;
        default:
            log_print(true, "Try 'ferry serve --help'.\n");
            return 2;
        }
    }
    if (optind < argc) {
        log_print(true, "ferry serve: unexpected argument '%s'\nTry 'ferry serve --help'.\n",
                  argv[optind]);
        return 2;
    }

    server_raise_nofile();
    struct config *cfg = NULL;
    struct msglist errs = {0};
    int rc = config_load(&cli, &cfg, &errs);
    if (rc) {
        for (size_t i = 0; i < errs.n; i++)
            log_print(true, "%s\n", errs.msg[i]);
        if (errs.n == 0)
            log_print(true, "ferry: cannot load configuration: %s\n", strerror(-rc));
        msglist_fini(&errs);
        return 1;
    }
    /* Only a start opens log_file, so only a start (or its --check)
     * judges it; a reload keeps the file it has. */
    rc = config_check_log_file(cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        log_print(true, "%s\n", errs.msg[i]);
    msglist_fini(&errs);
    for (size_t i = 0; i < cfg->warnings.n; i++)
        log_print(true, "warning: %s\n", cfg->warnings.msg[i]);
    if (rc) {
        config_free(cfg);
        return 1;
    }
    if (check) {
        /* Warnings (the [udp] limits, which fall back or clamp) do not fail
         * the check, but the verdict says they were printed. */
        if (cfg->warnings.n)
            log_print(false, "%s: configuration OK with %zu warning%s\n",
                      cli.path ? cli.path : "built-in defaults", cfg->warnings.n,
                      cfg->warnings.n == 1 ? "" : "s");
        else
            log_print(false, "%s: configuration OK\n", cli.path ? cli.path : "built-in defaults");
        config_free(cfg);
        return 0;
    }
    return server_run(cfg, &cli);
}

int main(int argc, char **argv)
{
    /* Before anything can touch OpenSSL: its small per-record blocks come
     * from the per-thread cache. */
    (void)tls_mem_init();

    /* A peer that vanishes must surface as EPIPE on one session, not kill
     * the process. */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    if (argc < 2) {
        log_print(true, "%s", usage_main);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        log_print(false, "%s", usage_main);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        log_print(false, "ferry %s\n", FERRY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3) {
            log_print(false, "%s", usage_main);
            return 0;
        }
        if (strcmp(argv[2], "serve") == 0) {
            log_print(false, "%s", usage_serve);
            return 0;
        }
        if (strcmp(argv[2], "passwd") == 0) {
            static char help[] = "--help";
            char *args[] = {argv[2], help, NULL};
            return passwd_main(2, args);
        }
        if (strcmp(argv[2], "client") == 0) {
            static char help[] = "--help";
            char *args[] = {argv[2], help, NULL};
            return client_main(2, args);
        }
        if (strcmp(argv[2], "cert") == 0) {
            static char help[] = "--help";
            char *args[] = {argv[2], help, NULL};
            return cert_main(2, args);
        }
        if (strcmp(argv[2], "edge") == 0) {
            static char help[] = "--help";
            char *args[] = {argv[2], help, NULL};
            return edge_main(2, args);
        }
        if (strcmp(argv[2], "bench") == 0) {
            static char help[] = "--help";
            char *args[] = {argv[2], help, NULL};
            return bench_main(2, args);
        }
        log_print(true, "ferry help: no command '%s'\n", argv[2]);
        return 2;
    }
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return bench_main(argc - 1, argv + 1);
    if (strcmp(cmd, "passwd") == 0)
        return passwd_main(argc - 1, argv + 1);
    if (strcmp(cmd, "client") == 0)
        return client_main(argc - 1, argv + 1);
    if (strcmp(cmd, "cert") == 0)
        return cert_main(argc - 1, argv + 1);
    if (strcmp(cmd, "edge") == 0)
        return edge_main(argc - 1, argv + 1);
    log_print(true, "ferry: unknown command '%s'\n\n%s", cmd, usage_main);
    return 2;
}
