/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * server.h: `ferry serve`: bind, start the workers, wait for signals, drain.
 */
#ifndef FERRY_SERVER_SERVER_H
#define FERRY_SERVER_SERVER_H

#include "config/config.h"

/* Run until SIGINT/SIGTERM has drained the sessions. Returns the process
 * exit status (0 after a clean shutdown). Takes over the reference to cfg;
 * cli is kept to load the configuration again on SIGHUP. */
int server_run(struct config *cfg, const struct config_cli *cli);

/* Raise the soft open-files limit to the hard limit; returns the new soft
 * limit. */
unsigned long server_raise_nofile(void);

#endif
