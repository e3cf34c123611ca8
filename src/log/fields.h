/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fields.h: one list of named fields, two renderings. A structured record
 * (an access line) is built once as an array of struct log_field; the text
 * rendering ("msg key=value key=value") and the JSON rendering (one object,
 * numbers as numbers, strings escaped per RFC 8259) both walk that array, so
 * the two formats cannot drift apart. Pure: no syscalls, no allocation, no
 * logging.
 */
#ifndef FERRY_LOG_FIELDS_H
#define FERRY_LOG_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_field_type {
    LOG_F_STR,  /* s; NULL leaves the field out of both renderings */
    LOG_F_U64,  /* u */
    LOG_F_PAIR, /* u and u2: text "U/U2", JSON [U, U2] */
};

struct log_field {
    const char *key; /* a fixed name: [a-z_]+, never escaped */
    enum log_field_type type;
    const char *s;
    uint64_t u, u2;
};

#define LOG_FSTR(k, v)                          \
    {                                           \
        .key = (k), .type = LOG_F_STR, .s = (v) \
    }
#define LOG_FU64(k, v)                          \
    {                                           \
        .key = (k), .type = LOG_F_U64, .u = (v) \
    }
#define LOG_FPAIR(k, a, b)                                  \
    {                                                       \
        .key = (k), .type = LOG_F_PAIR, .u = (a), .u2 = (b) \
    }

/* Write s (n bytes) into out as the inside of a JSON string (RFC 8259 7):
 * '"' and '\\' escaped, control bytes and DEL as \n \r \t \b \f or \u00XX,
 * each byte of an invalid UTF-8 sequence (overlong, surrogate, above
 * U+10FFFF, truncated) as \ufffd; valid UTF-8 is copied. Writes whole
 * escapes only and never more than cap - 1 bytes, then a NUL (cap > 0).
 * Returns the bytes written; *consumed (if not NULL) gets how much of s fit. */
size_t log_json_escape(char *out, size_t cap, const char *s, size_t n, size_t *consumed);

/* "msg key=value ..." (fields with a NULL string left out) into out.
 * Returns the length it needed (as snprintf); out is always terminated. */
size_t log_fields_text(char *out, size_t cap, const char *msg, const struct log_field *f, size_t n);

/* The members after "time" and "level": ,"msg":"...",... and the closing
 * '}' into out. Returns the length written; when the fields do not fit, the
 * record is cut at a whole member and ends with ,"truncated":true}, so the
 * line stays valid JSON. cap must be at least 64. */
size_t log_fields_json(char *out, size_t cap, const char *msg, const struct log_field *f, size_t n);

#endif
