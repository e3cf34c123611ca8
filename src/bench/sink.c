/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench/sink.c: `ferry bench sink`, the bench's targets on their own, for
 * measuring a proxy on another host: run it where the proxy can reach it,
 * then `ferry bench SCENARIO --proxy PROXY --target ADDR:PORT` elsewhere.
 * One TCP port is an echo, a sink, a source and the HTTP server, chosen by
 * each client's first bytes (target_stream.c); the UDP echo is on the same
 * port number. It listens on 127.0.0.1 unless --listen names another
 * address: that is the operator's consent to serve off-host.
 *
 * It prints one line when listening ("ferry bench sink: listening on
 * ADDR:PORT ...", flushed, for scripts) and runs until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

static const char sink_usage[] =
    "usage: ferry bench sink [--listen ADDR:PORT] [--no-echo-gro]\n"
    "\n"
    "Serve what `ferry bench` aims at, for a proxy on another host to reach:\n"
    "one TCP port that is an echo, a sink (up), a source (down) and the HTTP\n"
    "server (GET /small, /bytes/N), chosen by each client's first bytes, and a\n"
    "UDP echo on the same port number. Then, elsewhere:\n"
    "  ferry bench throughput --proxy PROXY:PORT --target ADDR:PORT\n"
    "\n"
    "  --listen ADDR:PORT   where (default 127.0.0.1:0, any free port, printed);\n"
    "                       an address other than loopback serves anyone who can\n"
    "                       reach it: give it only on a network you measure on\n"
    "  --no-echo-gro        the UDP echo reads every datagram alone\n"
    "  -h, --help           show this help\n"
    "\n"
    "Prints \"ferry bench sink: listening on ADDR:PORT\" and runs until SIGINT or\n"
    "SIGTERM. Exit status: 0 stopped by a signal; 1 could not listen; 2 bad usage.\n";

int bench_sink_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"no-echo-gro", no_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct addr at;
    bool gro = true;
    addr_parse_ip("127.0.0.1", 0, &at);
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'l':
            if (addr_parse(optarg, -1, &at)) {
                fprintf(stderr,
                        "ferry bench sink: --listen: invalid value '%s' (an IP address and "
                        "port)\n",
                        optarg);
                return 2;
            }
            break;
        case 'g':
            gro = false;
            break;
        case 'h':
            fputs(sink_usage, stdout);
            return 0;
        default:
            fputs("Try 'ferry bench sink --help'.\n", stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ferry bench sink: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    /* Block the signals before any thread starts, then wait for one. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    struct targets *t = targets_listen(&at, gro);
    if (!t)
        return 1;
    char a[ADDR_STRLEN];
    printf("ferry bench sink: listening on %s (tcp: echo, sink, source, http; udp: echo)\n",
           addr_format(targets_echo(t, 0), a, sizeof(a)));
    fflush(stdout);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    targets_stop(t);
    return 0;
}
