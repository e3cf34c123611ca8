/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client.h: `ferry client URL REMOTE...`, the tunnel client. It is `ferry
 * serve` with the remotes' listeners and one outbound (the server at
 * URL): the command line becomes configuration text that the one loader
 * reads (before -c FILE, which adds to it), and the normal server runs it.
 */
#ifndef FERRY_CLIENT_CLIENT_H
#define FERRY_CLIENT_CLIENT_H

/* Run `ferry client` (argv[0] is "client"). Returns the exit status: 0,
 * 1 (a runtime error, or the stdio session failed), 2 (a usage error). */
int client_main(int argc, char **argv);

#endif
