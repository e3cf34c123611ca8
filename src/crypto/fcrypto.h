/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fcrypto.h: every cryptographic operation ferry performs, and the only room
 * that includes <sodium.h>. Callers see plain byte arrays; the choice of
 * primitive (Argon2id, keyed BLAKE2b, SipHash) is made here once.
 */
#ifndef FERRY_FCRYPTO_FCRYPTO_H
#define FERRY_FCRYPTO_FCRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FCRYPTO_TAG_LEN      32 /* keyed BLAKE2b-256 */
#define FCRYPTO_KEY_LEN      32
#define FCRYPTO_SHORTKEY_LEN 16  /* SipHash-2-4 */
#define FCRYPTO_PWHASH_MAX   128 /* longest PHC string, NUL included */

/* Initialise libsodium; safe to call more than once. Returns 0 or -1. */
int fcrypto_init(void);
void fcrypto_random(void *buf, size_t len);

/* Keyed BLAKE2b-256 over the concatenation of two byte strings with an
 * unambiguous separator (their lengths). */
void fcrypto_tag2(uint8_t out[FCRYPTO_TAG_LEN], const uint8_t key[FCRYPTO_KEY_LEN], const void *a,
                  size_t alen, const void *b, size_t blen);
/* SipHash-2-4: a keyed 64-bit hash for hash tables an attacker can feed. */
uint64_t fcrypto_hash64(const uint8_t key[FCRYPTO_SHORTKEY_LEN], const void *data, size_t len);
/* Constant-time equality of two equal-length buffers. */
bool fcrypto_equal(const void *a, const void *b, size_t len);

/* Padded RFC 4648 base64 (the original alphabet) of len bytes into out,
 * all of it or nothing: 0 with *outlen, or -1 (a byte outside the
 * alphabet, bad padding, or more than cap bytes), and then out is wiped,
 * since what was decoded may be part of a secret. */
int fcrypto_base64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *b64, size_t len);
/* Overwrite len bytes in a way the compiler may not drop (secrets). */
void fcrypto_wipe(void *p, size_t len);

/* Argon2id, in PHC string form ("$argon2id$v=19$m=...,t=...,p=1$salt$hash"). */
#define FCRYPTO_PWHASH_OPS_DEFAULT 2u                    /* libsodium's interactive */
#define FCRYPTO_PWHASH_MEM_DEFAULT (64ull * 1024 * 1024) /* libsodium's interactive */
/* Hash a password. Returns 0, or -1 (out of memory, or limits refused). */
int fcrypto_pwhash(char out[FCRYPTO_PWHASH_MAX], const char *pass, size_t len, uint64_t ops,
                   uint64_t mem);
/* 0 when pass matches the PHC string, -1 otherwise (including malformed). */
int fcrypto_pwhash_verify(const char *phc, const char *pass, size_t len);
/* Is this a well-formed Argon2id PHC string libsodium can verify? */
bool fcrypto_pwhash_valid(const char *phc);
uint64_t fcrypto_pwhash_ops_min(void);
uint64_t fcrypto_pwhash_mem_min(void);

#endif
