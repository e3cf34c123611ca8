/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * auth.c: the backends of the [auth] section beside the userlist: an
 * external helper (auth.helper, auth.helper_children, auth.helper_timeout)
 * and PAM (auth.pam_service). A configuration has exactly one backend;
 * this file checks that, splits and checks the helper's command, and
 * checks the PAM service. Validation only: it starts no process and
 * opens no PAM transaction (`ferry serve --check` runs it too); the
 * server's auth pool does that (auth/helper.c, auth/pam.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/pam.h"
#include "auth/userlist.h"
#include "config/config.h"
#include "util/msglist.h"

#define HELPER_ARGS_MAX 32

enum { AT_USERLIST, AT_HELPER, AT_PAM, AT_CHILDREN, AT_TIMEOUT };

static const char *const at_key[] = {"userlist", "helper", "pam_service", "helper_children",
                                     "helper_timeout"};

/* The program named relative to the directory of the file that named it. */
static void resolve(const char *prog, const char *file, char *out, size_t cap)
{
    const char *slash = file ? strrchr(file, '/') : NULL;
    if (prog[0] != '/' && slash)
        snprintf(out, cap, "%.*s/%s", (int)(slash - file), file, prog);
    else if (prog[0] != '/')
        snprintf(out, cap, "./%s", prog);
    else
        snprintf(out, cap, "%s", prog);
}

/* Split the helper's command on blanks (no shell, no quoting) into
 * c->auth.helper_argv, its program made absolute and checked. */
static void split_helper(struct config *c, const struct config_origin *at, struct msglist *errs)
{
    char *copy = strdup(c->auth.helper);
    char **argv = calloc(HELPER_ARGS_MAX + 1, sizeof(*argv));
    size_t n = 0;
    if (!copy || !argv)
        goto out_oom;
    for (char *p = copy; *p;) {
        p += strspn(p, " \t");
        if (!*p)
            break;
        char *tok = p;
        p += strcspn(p, " \t");
        if (*p)
            *p++ = '\0';
        if (n == HELPER_ARGS_MAX) {
            msglist_push(errs, "%s:%d: auth.helper: more than %d arguments", at->file, at->line,
                         HELPER_ARGS_MAX);
            goto out_free;
        }
        char path[4096];
        if (n == 0)
            resolve(tok, at->file, path, sizeof(path));
        argv[n] = strdup(n == 0 ? path : tok);
        if (!argv[n++])
            goto out_oom;
    }
    if (n == 0) {
        msglist_push(errs, "%s:%d: auth.helper: no program given", at->file, at->line);
        goto out_free;
    }
    struct stat st;
    if (stat(argv[0], &st) < 0) {
        msglist_push(errs, "%s:%d: auth.helper: %s: %s", at->file, at->line, argv[0],
                     strerror(errno));
        goto out_free;
    }
    if (!S_ISREG(st.st_mode) || access(argv[0], X_OK) < 0) {
        msglist_push(errs, "%s:%d: auth.helper: %s is not an executable file", at->file, at->line,
                     argv[0]);
        goto out_free;
    }
    c->auth.helper_argv = argv;
    free(copy);
    return;
out_oom:
    msglist_push(errs, "%s:%d: auth.helper: out of memory", at->file, at->line);
out_free:
    for (size_t i = 0; argv && i < n; i++)
        free(argv[i]);
    free(argv);
    free(copy);
}

/* The service's file, where Linux-PAM looks for it. Without one PAM
 * quietly uses its "other" service, which is not what anyone meant. */
static void check_pam(const struct config *c, const struct config_origin *at, struct msglist *errs)
{
    const char *svc = c->auth.pam_service;
    if (!auth_pam_service_ok(svc)) {
        msglist_push(errs,
                     "%s:%d: auth.pam_service: '%s' is not a service name (1..%d letters, "
                     "digits, '.', '_' or '-')",
                     at->file, at->line, svc, AUTH_PAM_SERVICE_MAX);
        return;
    }
    static const char *const dirs[] = {"/etc/pam.d", "/usr/lib/pam.d"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", dirs[i], svc);
        if (access(path, R_OK) == 0)
            return;
    }
    msglist_push(errs,
                 "%s:%d: auth.pam_service: no /etc/pam.d/%s (PAM would fall back to its "
                 "'other' service)",
                 at->file, at->line, svc);
}

void config_auth_finish(struct config *c, const struct config_origin at[5], struct msglist *errs)
{
    static _Atomic uint64_t generation;
    c->auth.generation = atomic_fetch_add(&generation, 1) + 1;
    const char *const val[] = {c->auth.userlist, c->auth.helper, c->auth.pam_service};
    int first = -1;
    for (int i = AT_USERLIST; i <= AT_PAM; i++) {
        if (!at[i].file || !val[i])
            continue;
        if (first < 0) {
            first = i;
            continue;
        }
        msglist_push(errs,
                     "%s:%d: auth.%s: [auth] already has %s (%s:%d); one backend per server: "
                     "userlist, helper or pam_service",
                     at[i].file, at[i].line, at_key[i], at_key[first], at[first].file,
                     at[first].line);
        return;
    }
    for (int i = AT_CHILDREN; i <= AT_TIMEOUT; i++)
        if (at[i].file && first != AT_HELPER)
            msglist_push(errs, "%s:%d: auth.%s: only for auth.helper", at[i].file, at[i].line,
                         at_key[i]);
    if (first == AT_HELPER)
        split_helper(c, &at[AT_HELPER], errs);
    else if (first == AT_PAM)
        check_pam(c, &at[AT_PAM], errs);
}

void config_auth_free(struct config *c)
{
    for (size_t i = 0; c->auth.helper_argv && c->auth.helper_argv[i]; i++)
        free(c->auth.helper_argv[i]);
    free(c->auth.helper_argv);
    c->auth.helper_argv = NULL;
    free(c->auth.helper);
    free(c->auth.pam_service);
}

void config_auth_params(const struct config *c, struct auth_params *out)
{
    memset(out, 0, sizeof(*out));
    out->ul = c->auth.users;
    out->cache_ttl_ms = c->auth.cachettl_ms;
    out->backend = c->auth.helper_argv   ? AUTH_BACKEND_HELPER
                   : c->auth.pam_service ? AUTH_BACKEND_PAM
                                         : AUTH_BACKEND_USERLIST;
    out->pam_service = c->auth.pam_service;
    out->generation = c->auth.generation;
}

void config_auth_describe(const struct config *c, char *out, size_t cap)
{
    if (c->auth.helper_argv)
        snprintf(out, cap, "helper %s (%u children, timeout %u ms)", c->auth.helper_argv[0],
                 c->auth.helper_children, c->auth.helper_timeout_ms);
    else if (c->auth.pam_service)
        snprintf(out, cap, "PAM service %s", c->auth.pam_service);
    else if (c->auth.users)
        snprintf(out, cap, "%zu users", c->auth.users->n);
    else
        snprintf(out, cap, "none");
}
