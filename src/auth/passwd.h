/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * passwd.h: `ferry passwd`, the userlist line maker.
 */
#ifndef FERRY_AUTH_PASSWD_H
#define FERRY_AUTH_PASSWD_H

int passwd_main(int argc, char **argv);

#endif
