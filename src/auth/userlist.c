/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * userlist.c: parsing and lookup of the userlist. Lookups hash the name
 * with a per-process SipHash key, so a hostile client cannot aim names at
 * one bucket.
 */
#include "auth/userlist.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/fcrypto.h"
#include "util/file.h"

static uint8_t name_key[FCRYPTO_SHORTKEY_LEN];
static uint8_t version_key[FCRYPTO_SHORTKEY_LEN];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void keys_init(void)
{
    fcrypto_init();
    fcrypto_random(name_key, sizeof(name_key));
    fcrypto_random(version_key, sizeof(version_key));
}

bool userlist_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > 255)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch <= 0x20 || ch == 0x7f || ch == ':')
            return false;
    }
    return true;
}

static uint64_t name_hash(const char *name, size_t len)
{
    return fcrypto_hash64(name_key, name, len);
}

const struct user *userlist_find(const struct userlist *ul, const char *name, size_t len)
{
    if (!ul || ul->nslots == 0)
        return NULL;
    size_t mask = ul->nslots - 1;
    for (size_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
        uint32_t s = ul->slots[i];
        if (s == 0)
            return NULL;
        const struct user *u = &ul->users[s - 1];
        if (u->nlen == len && memcmp(u->name, name, len) == 0)
            return u;
    }
}

static void userlist_free(struct userlist *ul)
{
    for (size_t i = 0; i < ul->n; i++) {
        free(ul->users[i].name);
        if (ul->users[i].secret) {
            explicit_bzero(ul->users[i].secret, strlen(ul->users[i].secret));
            free(ul->users[i].secret);
        }
    }
    free(ul->users);
    free(ul->slots);
    free(ul);
}

struct userlist *userlist_ref(struct userlist *ul)
{
    if (ul)
        atomic_fetch_add_explicit(&ul->refs, 1, memory_order_relaxed);
    return ul;
}

void userlist_unref(struct userlist *ul)
{
    if (ul && atomic_fetch_sub_explicit(&ul->refs, 1, memory_order_acq_rel) == 1)
        userlist_free(ul);
}

/* Argon2id parameters ferry will verify with: a verification (and so a
 * client) must never cost more than FCRYPTO_PWHASH_*_MAX, whatever the
 * file says. The lower bounds are libsodium's and Argon2's. */
static bool argon2_params_ok(uint32_t m_kib, uint32_t t, uint32_t p)
{
    return m_kib >= fcrypto_pwhash_mem_min() / 1024 && m_kib <= FCRYPTO_PWHASH_MEM_MAX / 1024 &&
           t >= fcrypto_pwhash_ops_min() && t <= FCRYPTO_PWHASH_OPS_MAX && p >= 1 &&
           p <= FCRYPTO_PWHASH_LANES_MAX && m_kib >= 8ull * p;
}

/* One line; returns 0 and fills u, or -EINVAL after reporting. */
static int parse_line(char *line, const char *file, int lineno, struct user *u,
                      struct msglist *errs)
{
    char *colon = strchr(line, ':');
    if (!colon) {
        msglist_push(errs,
                     "%s:%d: malformed line (expected NAME:$argon2id$... or "
                     "NAME:plain:SECRET)",
                     file, lineno);
        return -EINVAL;
    }
    size_t nlen = (size_t)(colon - line);
    if (!userlist_name_ok(line, nlen)) {
        msglist_push(errs,
                     "%s:%d: invalid user name (1 to 255 bytes, without ':', spaces or "
                     "control characters)",
                     file, lineno);
        return -EINVAL;
    }
    const char *rest = colon + 1;
    memset(u, 0, sizeof(*u));
    u->line = lineno;
    if (strncmp(rest, "plain:", 6) == 0) {
        const char *secret = rest + 6;
        size_t slen = strlen(secret);
        if (slen == 0 || slen > 255) {
            msglist_push(errs, "%s:%d: plain password must be 1 to 255 bytes (RFC 1929)", file,
                         lineno);
            return -EINVAL;
        }
        if (secret[slen - 1] == ' ' || secret[slen - 1] == '\t') {
            msglist_push(errs,
                         "%s:%d: plain password ends with a space or tab (an editor's "
                         "leftover?); remove it, or store such a password as an Argon2id hash "
                         "(ferry passwd NAME)",
                         file, lineno);
            return -EINVAL;
        }
        u->kind = USER_PLAIN;
        u->slen_plain = (uint8_t)slen;
    } else if (strncmp(rest, "$argon2id$", 10) == 0) {
        if (!fcrypto_pwhash_valid(rest)) {
            msglist_push(errs,
                         "%s:%d: not a valid Argon2id hash (make one with: ferry passwd NAME)",
                         file, lineno);
            return -EINVAL;
        }
        uint32_t m = 0, t = 0, par = 0;
        if (fcrypto_pwhash_params(rest, &m, &t, &par) < 0 || !argon2_params_ok(m, t, par)) {
            msglist_push(errs,
                         "%s:%d: Argon2id parameters out of bounds (m=%u,t=%u,p=%u; ferry accepts "
                         "m from 8 to %llu KiB and at least 8 KiB per lane, t from 1 to %u, p "
                         "from 1 to %u)",
                         file, lineno, m, t, par, FCRYPTO_PWHASH_MEM_MAX / 1024,
                         FCRYPTO_PWHASH_OPS_MAX, FCRYPTO_PWHASH_LANES_MAX);
            return -EINVAL;
        }
        u->kind = USER_ARGON2ID;
    } else {
        msglist_push(errs,
                     "%s:%d: unknown credential format (expected $argon2id$... from ferry "
                     "passwd, or plain:SECRET)",
                     file, lineno);
        return -EINVAL;
    }
    u->name = strndup(line, nlen);
    u->secret = strdup(u->kind == USER_PLAIN ? rest + 6 : rest);
    if (!u->name || !u->secret) {
        free(u->name);
        free(u->secret);
        msglist_push(errs, "%s:%d: out of memory", file, lineno);
        return -ENOMEM;
    }
    u->nlen = (uint8_t)nlen;
    /* The version covers kind and secret: a cached success for this user
     * stops matching as soon as either changes. */
    uint8_t kind = u->kind;
    u->version = fcrypto_hash64(version_key, rest, strlen(rest)) ^ kind;
    return 0;
}

static int build_index(struct userlist *ul, const char *file, struct msglist *errs)
{
    size_t nslots = 16;
    while (nslots < ul->n * 2)
        nslots *= 2;
    ul->slots = calloc(nslots, sizeof(*ul->slots));
    if (!ul->slots)
        return -ENOMEM;
    ul->nslots = nslots;
    int rc = 0;
    for (size_t k = 0; k < ul->n; k++) {
        const struct user *u = &ul->users[k];
        const struct user *dup = userlist_find(ul, u->name, u->nlen);
        if (dup) {
            msglist_push(errs, "%s:%d: user '%s' is listed twice (first on line %d)", file, u->line,
                         u->name, dup->line);
            rc = -EINVAL;
            continue;
        }
        size_t mask = nslots - 1, i = name_hash(u->name, u->nlen) & mask;
        while (ul->slots[i])
            i = (i + 1) & mask;
        ul->slots[i] = (uint32_t)k + 1;
    }
    return rc;
}

/* The dummy hash, with the parameters most users of the list have. It is
 * made, not computed: a PHC string with a random salt and hash costs a
 * verification what a real one costs, while loading a list (at start, on
 * --check, on a reload on the signal-handling thread) does no Argon2 work
 * at all, so its time is bounded by the file's size, never by its
 * parameters. */
static int make_dummy(struct userlist *ul)
{
    struct phc_count {
        uint32_t m, t, p, n;
    } seen[16];
    unsigned nseen = 0, best = 0;
    for (size_t i = 0; i < ul->n; i++) {
        uint32_t m, t, p;
        unsigned k;
        if (ul->users[i].kind != USER_ARGON2ID ||
            fcrypto_pwhash_params(ul->users[i].secret, &m, &t, &p) < 0)
            continue;
        for (k = 0; k < nseen && (seen[k].m != m || seen[k].t != t || seen[k].p != p); k++)
            ;
        if (k == nseen) {
            if (nseen == 16)
                continue;
            seen[nseen++] = (struct phc_count){m, t, p, 0};
        }
        seen[k].n++;
        if (seen[k].n > seen[best].n)
            best = k;
    }
    uint32_t m = (uint32_t)(FCRYPTO_PWHASH_MEM_DEFAULT / 1024), t = FCRYPTO_PWHASH_OPS_DEFAULT,
             p = 1;
    if (nseen) {
        m = seen[best].m;
        t = seen[best].t;
        p = seen[best].p;
    }
    _Static_assert(sizeof(((struct userlist *)0)->dummy) >= FCRYPTO_PWHASH_MAX, "dummy size");
    return fcrypto_pwhash_dummy(ul->dummy, m, t, p);
}

int userlist_parse(const char *text, const char *file, struct userlist **out, struct msglist *errs,
                   struct msglist *warns)
{
    pthread_once(&keys_once, keys_init);
    struct userlist *ul = calloc(1, sizeof(*ul));
    if (!ul)
        return -ENOMEM;
    atomic_init(&ul->refs, 1);
    size_t cap = 0, nerr0 = errs->n;
    int lineno = 0, rc = 0;
    const char *p = text;
    /* Some editors start a UTF-8 file with a byte order mark; it would
     * otherwise become part of the first user's name. */
    if (strncmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3;
        if (warns)
            msglist_push(warns, "%s:1: UTF-8 byte order mark ignored", file);
    }
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char *line = strndup(p, len);
        p += len + (nl ? 1 : 0);
        if (!line) {
            rc = -ENOMEM;
            break;
        }
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[--l] = '\0';
        const char *t = line + strspn(line, " \t");
        if (*t == '\0' || *t == '#') {
            free(line);
            continue;
        }
        if (ul->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct user *v = realloc(ul->users, ncap * sizeof(*v));
            if (!v) {
                explicit_bzero(line, l);
                free(line);
                rc = -ENOMEM;
                break;
            }
            ul->users = v;
            cap = ncap;
        }
        if (parse_line(line, file, lineno, &ul->users[ul->n], errs) == 0)
            ul->n++;
        explicit_bzero(line, l);
        free(line);
    }
    /* Duplicates are reported together with every other problem. */
    if (!rc)
        rc = build_index(ul, file, errs);
    if (!rc && errs->n == nerr0 && make_dummy(ul) < 0) {
        msglist_push(errs, "%s: cannot make the dummy hash", file);
        rc = -EINVAL;
    }
    if (rc || errs->n != nerr0) {
        userlist_free(ul);
        return rc ? rc : -EINVAL;
    }
    *out = ul;
    return 0;
}

int userlist_load(const char *path, struct userlist **out, struct msglist *errs,
                  struct msglist *warns)
{
    char *text;
    size_t len;
    int rc = file_read_text(path, USERLIST_FILE_MAX, &text, &len);
    if (rc) {
        msglist_push(errs, "%s: cannot read userlist: %s", path,
                     rc == -EFBIG    ? "larger than 16 MiB"
                     : rc == -EINVAL ? "contains a NUL byte"
                                     : strerror(-rc));
        return rc;
    }
    rc = userlist_parse(text, path, out, errs, warns);
    explicit_bzero(text, len);
    free(text);
    return rc;
}
