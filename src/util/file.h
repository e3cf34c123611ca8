/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * file.h: read a whole small text file, with a size cap.
 */
#ifndef FERRY_UTIL_FILE_H
#define FERRY_UTIL_FILE_H

#include <stddef.h>

/* Read path into a NUL-terminated heap buffer (*out, free() it). Returns 0,
 * -errno from open/read, -EFBIG when larger than max, or -EINVAL when the
 * file holds a NUL byte (not text). */
int file_read_text(const char *path, size_t max, char **out, size_t *len);

#endif
