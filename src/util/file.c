/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * file.c: whole-file reads for configuration-sized files.
 */
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int file_read_text(const char *path, size_t max, char **out, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    char *text = malloc(max + 1);
    if (!text) {
        fclose(f);
        return -ENOMEM;
    }
    size_t n = fread(text, 1, max + 1, f);
    int err = ferror(f) ? -EIO : 0;
    fclose(f);
    if (!err && n > max)
        err = -EFBIG;
    if (!err) {
        text[n] = '\0';
        if (strlen(text) != n)
            err = -EINVAL;
    }
    if (err) {
        free(text);
        return err;
    }
    *out = text;
    if (len)
        *len = n;
    return 0;
}
