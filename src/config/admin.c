/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * admin.c: [metrics] admin and admin_token_file, the keys of the admin API
 * and the status page (admin/). The token is read when the configuration
 * loads (a start, --check, a reload), so a reload picks up a new token and
 * a start with admin on and no usable token fails: an admin API without a
 * secret would let anyone on the metrics listener close sessions.
 *
 * The file's first line that is neither blank nor a '#' comment is the
 * token, trimmed of surrounding spaces; it must be 16 to 256 printable
 * bytes with no space. A file others may read is allowed with a warning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "crypto/fcrypto.h"
#include "util/file.h"
#include "util/msglist.h"

#define TOKEN_MIN      16
#define TOKEN_MAX      256
#define TOKEN_FILE_MAX 4096

/* The first token line of text: start and length, or 0 for none. */
static size_t token_line(const char *text, const char **start)
{
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        const char *b = p, *e = p + n;
        while (b < e && (*b == ' ' || *b == '\t' || *b == '\r'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (e > b && *b != '#') {
            *start = b;
            return (size_t)(e - b);
        }
        p = eol ? eol + 1 : p + n;
    }
    return 0;
}

static bool token_ok(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
            return false;
    return true;
}

void config_admin_load(struct config *c, const char *cfg_path, const char *where,
                       struct msglist *errs)
{
    if (!c->metrics_listen.family) {
        msglist_push(errs, "%s: metrics.admin: needs metrics.listen (the API is served there)",
                     where);
        return;
    }
    if (!c->admin_token_file) {
        msglist_push(errs,
                     "%s: metrics.admin: needs metrics.admin_token_file (a file holding the "
                     "token clients send as 'Authorization: Bearer TOKEN')",
                     where);
        return;
    }
    char path[4096];
    const char *f = c->admin_token_file;
    const char *slash = cfg_path ? strrchr(cfg_path, '/') : NULL;
    if (f[0] != '/' && slash)
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - cfg_path), cfg_path, f);
    else
        snprintf(path, sizeof(path), "%s", f);
    char *text = NULL;
    size_t len = 0;
    int rc = file_read_text(path, TOKEN_FILE_MAX, &text, &len);
    if (rc) {
        msglist_push(errs, "%s: metrics.admin_token_file: cannot read %s: %s", where, path,
                     rc == -EFBIG ? "larger than 4 KiB" : strerror(-rc));
        return;
    }
    const char *t = NULL;
    size_t n = token_line(text, &t);
    if (!n)
        msglist_push(errs,
                     "%s: metrics.admin_token_file: %s holds no token (only blank or "
                     "comment lines)",
                     where, path);
    else if (n < TOKEN_MIN || n > TOKEN_MAX || !token_ok(t, n))
        msglist_push(errs,
                     "%s: metrics.admin_token_file: the token in %s must be %d to %d "
                     "printable characters without spaces (try: openssl rand -hex 32)",
                     where, path, TOKEN_MIN, TOKEN_MAX);
    else if (!(c->admin_token = strndup(t, n)))
        msglist_push(errs, "%s: metrics.admin_token_file: out of memory", where);
    fcrypto_wipe(text, len);
    free(text);
    struct stat st;
    if (c->admin_token && stat(path, &st) == 0 && (st.st_mode & 0077))
        msglist_push(&c->warnings,
                     "%s: metrics.admin_token_file: %s may be read by others "
                     "(mode %03o); chmod 600 it",
                     where, path, (unsigned)(st.st_mode & 0777));
}

void config_admin_fini(struct config *c)
{
    if (c->admin_token) {
        fcrypto_wipe(c->admin_token, strlen(c->admin_token));
        free(c->admin_token);
        c->admin_token = NULL;
    }
    free(c->admin_token_file);
    c->admin_token_file = NULL;
}
