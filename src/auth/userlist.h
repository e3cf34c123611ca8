/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * userlist.h: the users who may authenticate, loaded from a file of lines
 *
 *     name:$argon2id$v=19$m=65536,t=2,p=1$SALT$HASH    (made by ferry passwd)
 *     name:plain:secret
 *
 * with '#' comments and blank lines. A userlist is immutable once loaded
 * and shared by reference count between workers and verifier threads; a
 * reload builds a new one.
 */
#ifndef FERRY_AUTH_USERLIST_H
#define FERRY_AUTH_USERLIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/msglist.h"

#define USERLIST_FILE_MAX (16u << 20)

enum user_kind {
    USER_ARGON2ID,
    USER_PLAIN,
};

struct user {
    char *name;
    char *secret; /* PHC string, or the plain password */
    uint8_t nlen, slen_plain;
    uint8_t kind;
    uint64_t version; /* changes when this user's credential changes */
    int line;
};

struct userlist {
    _Atomic uint32_t refs;
    /* What an unknown or plain user pays: an Argon2id PHC string with a
     * random salt and hash (no password matches it) and the parameters
     * most of this list's users have (the defaults when it has none). */
    char dummy[128];
    struct user *users;
    size_t n;
    uint32_t *slots; /* open addressing: index + 1 into users, 0 = empty */
    size_t nslots;   /* a power of two */
};

/* Parse text (from file, for messages). Returns 0 with *out (refs = 1), or
 * -EINVAL with every problem in errs as "FILE:LINE: message". What is
 * accepted but worth saying goes to warns ("FILE:LINE: message"; NULL:
 * nowhere): a UTF-8 byte order mark before the first line, which is
 * skipped. A plain password that ends in a space or tab is an error (an
 * editor's leftover far more often than a password; such a password can
 * still be stored as an Argon2id hash). */
int userlist_parse(const char *text, const char *file, struct userlist **out, struct msglist *errs,
                   struct msglist *warns);
/* Read and parse a file. */
int userlist_load(const char *path, struct userlist **out, struct msglist *errs,
                  struct msglist *warns);

const struct user *userlist_find(const struct userlist *ul, const char *name, size_t len);

struct userlist *userlist_ref(struct userlist *ul);
/* Drop a reference; the last one frees (and wipes the secrets). NULL is a
 * no-op. */
void userlist_unref(struct userlist *ul);

/* Is this a name a userlist line can carry? (1..255 bytes, no ':', no
 * control bytes or spaces.) */
bool userlist_name_ok(const char *name, size_t len);

#endif
