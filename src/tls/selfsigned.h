/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * selfsigned.h: a self-signed server certificate for a TLS inbound (what
 * `ferry cert` writes), and the pin of a certificate file (what a client
 * gives curl's --proxy-pinnedpubkey, and what a TLS listener logs at start).
 *
 * This room makes keys and certificates with OpenSSL 3 and writes them into
 * a directory; it never logs, never prints and never exits: errors come back
 * as -errno and a sentence. It includes nothing above util/.
 */
#ifndef FERRY_TLS_SELFSIGNED_H
#define FERRY_TLS_SELFSIGNED_H

#include <stdbool.h>
#include <stddef.h>

#include "tls/tls.h"

#define TLS_CERT_DAYS_DEFAULT 365
#define TLS_CERT_DAYS_MAX     3650
#define TLS_CERT_NAMES_MAX    8   /* subjectAltName entries */
#define TLS_CERT_NAME_MAX     253 /* a DNS name's longest text form */

/* What to certify. names are DNS names or IP address literals (IPv4, or
 * IPv6 without brackets), each valid by tls_cert_name_ok(); names[0] is
 * also the subject's CN (when it fits CN's 64 characters). */
struct tls_cert_conf {
    const char *names[TLS_CERT_NAMES_MAX];
    size_t nnames; /* 1..TLS_CERT_NAMES_MAX */
    unsigned days; /* 1..TLS_CERT_DAYS_MAX */
};

/* A made certificate: PEM text in heap buffers owned by the struct, freed
 * (the key wiped first) by tls_cert_fini(). */
struct tls_cert {
    char *cert_pem;
    size_t cert_len;
    char *key_pem; /* PKCS#8, unencrypted */
    size_t key_len;
    char pin[TLS_PIN_TEXT]; /* "sha256//BASE64" of the SubjectPublicKeyInfo */
    char not_after[32];     /* "2027-12-01 22:13:40 UTC" */
};

/* Whether name may go into a certificate: an IPv4 or IPv6 address literal
 * (no brackets), or a DNS name of letters, digits and hyphens in dot
 * separated labels of 1 to 63 characters, 1 to 253 in all, no label
 * starting or ending with a hyphen (RFC 1123 section 2.1; no wildcards). */
bool tls_cert_name_ok(const char *name);

/* Make an ECDSA P-256 key and a self-signed X.509 v3 certificate for it:
 * a random 128-bit serial, valid from one hour before now (a client whose
 * clock lags a little still accepts it) until conf->days days after now,
 * signed with ecdsa-with-SHA256, with basicConstraints CA:FALSE (critical),
 * keyUsage digitalSignature (critical), extendedKeyUsage serverAuth, a
 * subjectKeyIdentifier and subjectAltName with each name as DNS: or IP:.
 * 0 with *out filled, or -EINVAL (a bad conf) / -ENOMEM / -EIO (OpenSSL
 * failed) with a sentence in err. */
int tls_cert_make(const struct tls_cert_conf *conf, struct tls_cert *out, char *err, size_t errlen);
/* Free what tls_cert_make() put in c, wiping the key. c may be zeroed. */
void tls_cert_fini(struct tls_cert *c);

/* Write c as dir/cert.pem (mode 0644) and dir/key.pem (mode 0600), the
 * modes exact whatever the umask. dir is created (mode 0700; not its
 * parents) when missing. Each file is written under a temporary name in
 * dir, synced, then put in place: with force by rename(2) (an existing file
 * or symlink is replaced, never followed); without it by link(2), which
 * refuses an existing name, and nothing is written when either name
 * exists. 0, or -EEXIST / another -errno with a sentence naming the path
 * in err; on failure no temporary file is left behind. */
int tls_cert_write(const struct tls_cert *c, const char *dir, bool force, char *err, size_t errlen);

/* The pin ("sha256//BASE64" of the DER SubjectPublicKeyInfo, curl's
 * --pinnedpubkey form) of the first certificate in the PEM file path (a
 * chain file's leaf). 0, or -errno from opening it, or -EINVAL when it
 * holds no readable certificate; a sentence naming path in err either
 * way. Blocking file I/O: call it at start or reload, not from a loop. */
int tls_pin_of_cert_file(const char *path, char out[TLS_PIN_TEXT], char *err, size_t errlen);

#endif
