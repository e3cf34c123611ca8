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
/* Keyed BLAKE2b-128 of msg (signed host names: a 16-byte tag). */
#define FCRYPTO_MAC128_LEN 16
void fcrypto_mac128(uint8_t out[FCRYPTO_MAC128_LEN], const uint8_t key[FCRYPTO_KEY_LEN],
                    const void *msg, size_t len);
/* SipHash-2-4: a keyed 64-bit hash for hash tables an attacker can feed. */
uint64_t fcrypto_hash64(const uint8_t key[FCRYPTO_SHORTKEY_LEN], const void *data, size_t len);
/* Constant-time equality of two equal-length buffers. */
bool fcrypto_equal(const void *a, const void *b, size_t len);

/* Padded RFC 4648 base64 (the original alphabet) of len bytes into out,
 * all of it or nothing: 0 with *outlen, or -1 (a byte outside the
 * alphabet, bad padding, or more than cap bytes), and then out is wiped,
 * since what was decoded may be part of a secret. */
int fcrypto_base64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *b64, size_t len);
/* Padded RFC 4648 base64 of len bytes into out (NUL-terminated): the
 * text's length, or 0 when cap is too small. */
size_t fcrypto_base64_encode(char *out, size_t cap, const void *in, size_t len);
/* SHA-1 (OpenSSL's), for protocols that name it where no secret rides on
 * it: RFC 6455's Sec-WebSocket-Accept. Returns 0, or -1 (OpenSSL failed). */
#define FCRYPTO_SHA1_LEN 20
int fcrypto_sha1(uint8_t out[FCRYPTO_SHA1_LEN], const void *a, size_t alen, const void *b,
                 size_t blen);
/* Overwrite len bytes in a way the compiler may not drop (secrets). */
void fcrypto_wipe(void *p, size_t len);

/* Argon2id, in PHC string form ("$argon2id$v=19$m=...,t=...,p=1$salt$hash"). */
#define FCRYPTO_PWHASH_OPS_DEFAULT 2u                    /* libsodium's interactive */
#define FCRYPTO_PWHASH_MEM_DEFAULT (64ull * 1024 * 1024) /* libsodium's interactive */
/* The most ferry accepts, in a userlist or from `ferry passwd`: a cost
 * beyond these is a mistake (t=4294967295 never finishes, m=4 GiB is 4 GiB
 * per verification per thread), not a policy. The least are libsodium's
 * (and Argon2's: m at least 8 KiB per lane). */
#define FCRYPTO_PWHASH_OPS_MAX     16u          /* passes (t) */
#define FCRYPTO_PWHASH_MEM_MAX     (1ull << 30) /* bytes: 1 GiB (m=1048576) */
#define FCRYPTO_PWHASH_LANES_MAX   16u          /* lanes (p) */
/* Hash a password. Returns 0, or -1 (out of memory, or limits refused). */
int fcrypto_pwhash(char out[FCRYPTO_PWHASH_MAX], const char *pass, size_t len, uint64_t ops,
                   uint64_t mem);
/* 0 when pass matches the PHC string, -1 otherwise (including malformed). */
int fcrypto_pwhash_verify(const char *phc, const char *pass, size_t len);
/* Is this a well-formed Argon2id PHC string libsodium can verify? */
bool fcrypto_pwhash_valid(const char *phc);
uint64_t fcrypto_pwhash_ops_min(void);
uint64_t fcrypto_pwhash_mem_min(void);
/* The parameters of an Argon2id PHC string: memory m (KiB), passes t and
 * lanes p, read without computing anything. Returns 0, or -1 when the
 * string does not carry "$m=M,t=T,p=P$" as decimal numbers below 2^32. */
int fcrypto_pwhash_params(const char *phc, uint32_t *m_kib, uint32_t *t, uint32_t *p);
/* A PHC string with these parameters, a random salt and a random "hash",
 * made without computing Argon2id (so at once, whatever the cost):
 * verifying any password against it costs what verifying against a real
 * hash with these parameters costs, and fails (but with probability
 * 2^-256). Returns 0, or -1 when the string would not fit. */
int fcrypto_pwhash_dummy(char out[FCRYPTO_PWHASH_MAX], uint32_t m_kib, uint32_t t, uint32_t p);

#endif
