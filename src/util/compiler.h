/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * compiler.h: small portable helpers every room may use. No project
 * knowledge lives here: attribute spellings, array length, container_of and
 * the cache-line size used to keep per-thread counters apart.
 */
#ifndef FERRY_UTIL_COMPILER_H
#define FERRY_UTIL_COMPILER_H

#include <stddef.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#define NORETURN               __attribute__((noreturn))
#define UNUSED                 __attribute__((unused))
#define WARN_UNUSED            __attribute__((warn_unused_result))

#define CACHELINE 64

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
