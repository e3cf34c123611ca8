/*
 * server.h: `ferry serve`: bind, start the workers, wait for signals, drain.
 */
#ifndef FERRY_SERVER_SERVER_H
#define FERRY_SERVER_SERVER_H

#include "config/config.h"

/* Run until SIGINT/SIGTERM has drained the sessions. Returns the process
 * exit status (0 after a clean shutdown). Takes ownership of cfg. */
int server_run(struct config *cfg);

/* Raise the soft open-files limit to the hard limit; returns the new soft
 * limit. */
unsigned long server_raise_nofile(void);

#endif
