/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pam.c: one PAM transaction per verification (pam.h). The conversation
 * answers a hidden prompt with the password and a visible one with the
 * user name (what pam_unix and pam_exec ask), and nothing else; every
 * answer is a fresh copy PAM frees, and our copies are wiped.
 */
#include "auth/pam.h"

#include <security/pam_appl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/log.h"

struct conv_data {
    const char *user;
    const char *pass;
};

static int conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
    const struct conv_data *cd = data;
    if (n <= 0 || n > PAM_MAX_NUM_MSG)
        return PAM_CONV_ERR;
    struct pam_response *r = calloc((size_t)n, sizeof(*r));
    if (!r)
        return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        const char *answer = NULL;
        switch (msg[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
            answer = cd->pass;
            break;
        case PAM_PROMPT_ECHO_ON:
            answer = cd->user;
            break;
        default: /* PAM_ERROR_MSG, PAM_TEXT_INFO: nothing to say */
            continue;
        }
        r[i].resp = strdup(answer);
        if (!r[i].resp) {
            for (int k = 0; k < i; k++) {
                if (r[k].resp)
                    explicit_bzero(r[k].resp, strlen(r[k].resp));
                free(r[k].resp);
            }
            free(r);
            return PAM_BUF_ERR;
        }
    }
    *resp = r;
    return PAM_SUCCESS;
}

bool auth_pam_service_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > AUTH_PAM_SERVICE_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* A byte string PAM can take as a C string: no NUL, no control byte. */
static bool printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* A PAM error that says nothing about the credentials. Not
 * PAM_SYSTEM_ERR: pam_exec reports a program's refusal with it. */
static bool is_system_error(int rc)
{
    return rc == PAM_BUF_ERR || rc == PAM_AUTHINFO_UNAVAIL || rc == PAM_CONV_ERR ||
           rc == PAM_ABORT || rc == PAM_SERVICE_ERR || rc == PAM_MODULE_UNKNOWN ||
           rc == PAM_SYMBOL_ERR;
}

/* Once a second at most: a PAM backend that is down must not flood the log. */
static bool say_now(void)
{
    static _Atomic int64_t last;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec, seen = atomic_load(&last);
    return now != seen && atomic_compare_exchange_strong(&last, &seen, now);
}

int auth_pam_check(const char *service, const char *user, size_t ulen, const char *pass,
                   size_t plen, const char *rhost)
{
    if (ulen == 0 || !printable(user, ulen) || !printable(pass, plen))
        return AUTH_PAM_DENIED;
    char u[256], p[256];
    memcpy(u, user, ulen);
    u[ulen] = '\0';
    memcpy(p, pass, plen);
    p[plen] = '\0';
    struct conv_data cd = {u, p};
    struct pam_conv pc = {conv, &cd};
    pam_handle_t *ph = NULL;
    int rc = pam_start(service, u, &pc, &ph);
    int verdict = AUTH_PAM_UNAVAILABLE;
    if (rc == PAM_SUCCESS) {
        if (rhost)
            pam_set_item(ph, PAM_RHOST, rhost);
        rc = pam_authenticate(ph, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
        if (rc == PAM_SUCCESS)
            rc = pam_acct_mgmt(ph, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
        verdict = rc == PAM_SUCCESS     ? AUTH_PAM_OK
                  : is_system_error(rc) ? AUTH_PAM_UNAVAILABLE
                                        : AUTH_PAM_DENIED;
        if (verdict == AUTH_PAM_UNAVAILABLE && say_now()) /* PAM's words: no secret in them */
            log_warn("auth: PAM service %s gave no verdict: %s", service, pam_strerror(ph, rc));
        pam_end(ph, rc);
    } else if (say_now()) {
        log_warn("auth: PAM service %s cannot start: %s", service, pam_strerror(NULL, rc));
    }
    explicit_bzero(p, sizeof(p));
    return verdict;
}
