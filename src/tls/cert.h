/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cert.h: `ferry cert`, the self-signed certificate maker for TLS inbounds.
 */
#ifndef FERRY_TLS_CERT_H
#define FERRY_TLS_CERT_H

/* The `ferry cert` command: argv[0] is "cert". Returns the exit status: 0
 * done, 1 the files could not be made or written (or exist), 2 a usage
 * error. */
int cert_main(int argc, char **argv);

#endif
