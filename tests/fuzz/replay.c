/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * replay.c: a main() for the fuzz harnesses where libFuzzer is not at hand.
 * Each argument is a file, or a directory whose regular files are replayed
 * in name order; every input goes to LLVMFuzzerTestOneInput() in a heap
 * block of exactly its size, so the sanitizers see any read past the end.
 * Exits 0 after "replay: N inputs", or 1 when an input cannot be read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read the whole of path into a malloc'd block of exactly its size. */
static int read_input(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    if (!data) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? -errno : -EIO;
            free(data);
            close(fd);
            return err;
        }
        got += (size_t)n;
    }
    close(fd);
    *out = data;
    *len = size;
    return 0;
}

static int replay_file(const char *path, size_t *count)
{
    uint8_t *data;
    size_t len;
    int rc = read_input(path, &data, &len);
    if (rc < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(-rc));
        return rc;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    (*count)++;
    return 0;
}

static int replay_dir(const char *dir, size_t *count)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -errno;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        int len = snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (len > 0 && (size_t)len < sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path, count) < 0)
                rc = -1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (replay_dir(argv[i], &count) < 0)
                rc = 1;
        } else if (replay_file(argv[i], &count) < 0) {
            rc = 1;
        }
    }
    printf("replay: %zu inputs\n", count);
    return rc;
}
