/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * x509.h: what the tls room's files share about certificates in OpenSSL's
 * own types; not for use outside src/tls/ (tls.h keeps OpenSSL out of
 * everyone else's headers).
 */
#ifndef FERRY_TLS_X509_H
#define FERRY_TLS_X509_H

#include <openssl/x509.h>
#include <stdint.h>

#include "tls/tls.h"

/* SHA-256 of the DER SubjectPublicKeyInfo of x (the pin a client gives).
 * 0 or -EINVAL. */
int tls_cert_pin(X509 *x, uint8_t pin[TLS_PIN_LEN]);

#endif
