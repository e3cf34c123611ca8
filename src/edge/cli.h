/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.h: `ferry edge keygen` and `ferry edge sign`, the operator's side of
 * signed host names (docs/edge.md "Signed host names").
 */
#ifndef FERRY_EDGE_CLI_H
#define FERRY_EDGE_CLI_H

/* argv[0] is "edge". Returns the exit status: 0, 1 (a keyring that cannot
 * sign), 2 (usage). */
int edge_main(int argc, char **argv);

#endif
