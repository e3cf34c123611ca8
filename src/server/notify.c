/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * notify.c: sd_notify over a datagram socket. An address starting with '@'
 * is in the abstract namespace.
 */
#include "server/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int notify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
        return -EINVAL;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@')
        sa.sun_path[0] = '\0';

    char msg[512];
    int n;
    if (strstr(state, "RELOADING=1")) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        n = snprintf(msg, sizeof(msg), "%s\nMONOTONIC_USEC=%llu", state,
                     (unsigned long long)ts.tv_sec * 1000000ull +
                         (unsigned long long)ts.tv_nsec / 1000u);
    } else {
        n = snprintf(msg, sizeof(msg), "%s", state);
    }
    if (n < 0 || (size_t)n >= sizeof(msg))
        return -EINVAL;

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    ssize_t sent = sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
    int rc = sent < 0 ? -errno : 0;
    close(fd);
    return rc;
}
