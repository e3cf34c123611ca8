/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * notify.h: the systemd notification protocol (sd_notify(3)) without
 * libsystemd: one datagram to $NOTIFY_SOCKET per state change. Without
 * that variable every call is a no-op, so ferry behaves the same under any
 * supervisor.
 */
#ifndef FERRY_SERVER_NOTIFY_H
#define FERRY_SERVER_NOTIFY_H

/* Send "READY=1", "RELOADING=1", "STOPPING=1", "STATUS=..." (several
 * lines may go in one message). RELOADING=1 gets the MONOTONIC_USEC= that
 * systemd asks for. Returns 0, 1 when not under systemd, or -errno. */
int notify_send(const char *state);

#endif
