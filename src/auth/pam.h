/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pam.h: password verification through PAM (Linux-PAM), as Dante's
 * `socksmethod: pam.username` does: one PAM transaction per verification,
 * pam_authenticate() then pam_acct_mgmt(), with a conversation function
 * that answers the password prompt. PAM blocks (files, LDAP, RADIUS
 * behind it), so only verifier threads call it, never an event loop.
 *
 * Secrets never reach a log: the modules' conversation messages are not
 * logged (only pam_strerror() of a failure to decide), and the password
 * is handed to PAM only through the conversation.
 */
#ifndef FERRY_AUTH_PAM_H
#define FERRY_AUTH_PAM_H

#include <stdbool.h>
#include <stddef.h>

/* A PAM service name is at most this long (a file name in /etc/pam.d). */
#define AUTH_PAM_SERVICE_MAX 63

/* Verdicts, as helper.h's: 0 verified, -1 refused, -2 PAM could not decide
 * (the service cannot start, a module is missing or cannot reach its
 * backend: logged). */
enum { AUTH_PAM_OK = 0, AUTH_PAM_DENIED = -1, AUTH_PAM_UNAVAILABLE = -2 };

/* Authenticate user/pass (raw bytes: a NUL or control byte in either is
 * refused without asking PAM) with service; rhost (the client's address,
 * may be NULL) becomes PAM_RHOST for the modules' own logs. */
int auth_pam_check(const char *service, const char *user, size_t ulen, const char *pass,
                   size_t plen, const char *rhost);

/* Is name usable as a PAM service: 1..AUTH_PAM_SERVICE_MAX bytes of
 * letters, digits, '.', '_' and '-', not starting with '.'? */
bool auth_pam_service_ok(const char *name);

#endif
