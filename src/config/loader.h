/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * loader.h: the parts of one configuration load that the files of
 * src/config/ share: the loader's state, the key table's row, and the calls
 * between the reader (reader.c), the key table (keys.c), listen lines
 * (listen.c) and the loader (config.c). Private to src/config/: other rooms
 * include config/config.h and see none of this.
 */
#ifndef FERRY_CONFIG_LOADER_H
#define FERRY_CONFIG_LOADER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "acl/rules.h"
#include "config/config.h"
#include "util/compiler.h"

#define CONFIG_FILE_MAX     (1u << 20)
#define CONFIG_LINE_MAX     4000
#define CONFIG_INCLUDE_MAX  8   /* files deep, the main file included */
#define CONFIG_INCLUDE_GLOB 256 /* files one include line may name */

/* State of one load: the config being built and where we are in the file. */
struct loader {
    struct config *c;
    struct msglist *errs;
    const char *file;
    int line;     /* line being handled */
    char *text;   /* the whole file */
    char *next;   /* next unread line in text */
    int seen[96]; /* line a key was first set on (by key index), 0 = unset */

    const char *seen_file[96];       /* ... in this file (c->files owns it) */
    int depth;                       /* files being read: the main one is 1 */
    char *stack[CONFIG_INCLUDE_MAX]; /* their real paths, for cycles */
    bool listen_from_file;
    bool workers_auto;
    bool max_conn_auto;
    bool in_rules; /* inside [rules]: lines are rules, not keys */
    bool in_quota; /* inside [quota]: lines go whole to quota.c */
    struct acl_rule *rules;
    uint32_t nrules, caprules;
    struct outbound_list obs;       /* [outbound NAME] sections */
    struct config_outbound *cur_ob; /* the section being read, NULL outside one */
    char ob_seen[1024];             /* "|key|key|": keys the section has set */
    char *default_ob;               /* "outbound = NAME" */
};

struct key {
    const char *name;
    int (*set)(struct loader *ld, const struct key *k, const char *v);
    size_t off;
    uint64_t min, max;
    const char *expect; /* what a valid value looks like, for messages */
    bool repeatable;
};

/* The key table (keys.c): one row a top-level or [section] key, named
 * "section.key"; loader.seen and loader.seen_file are indexed by row. */
extern const struct key *const config_keys;
extern const size_t config_nkeys;

/* "FILE:LINE: KEY: message" (or "FILE:LINE: message" when key is NULL) into
 * ld->errs, at the line being read. Here whole, so that every file of the
 * loader says it the same way without calling into one of them. */
static inline void PRINTF_LIKE(3, 4) bad(struct loader *ld, const char *key, const char *fmt, ...)
{
    char m[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    if (key)
        msglist_push(ld->errs, "%s:%d: %s: %s", ld->file, ld->line, key, m);
    else
        msglist_push(ld->errs, "%s:%d: %s", ld->file, ld->line, m);
}

/* Read path (at most CONFIG_FILE_MAX bytes of text) into ld->text; 0, or
 * -errno after saying why in ld->errs. */
int reader_read_file(struct loader *ld, const char *path);
/* Read and parse one file: the main one or an included one; text is
 * freed. Returns 0, or -ENOMEM (not said here). */
int reader_parse_text(struct loader *ld, const char *path, char *text);
/* A rule line of FILE:LINE ("# comment" ends it) onto ld->rules; a bad
 * rule is an error naming FILE:LINE. */
void reader_add_rule(struct loader *ld, const char *file, int line, const char *text);

/* Key setters of listen.c, rows of the key table: "listen" (repeatable,
 * several addresses a line) and "protocols". 0 or -EINVAL after bad(). */
int config_listen_set(struct loader *ld, const struct key *k, const char *v);
int config_listen_set_protocols(struct loader *ld, const struct key *k, const char *v);
/* One listen address (ferry -l or a listen line); origin says where it
 * came from for later messages. 0, -E2BIG or -EINVAL after saying why. */
int config_listen_add(struct config *c, struct msglist *errs, const char *text, const char *origin);

#endif
