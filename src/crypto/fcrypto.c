/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fcrypto.c: libsodium behind ferry's own names (and OpenSSL's SHA-1, which
 * RFC 6455's handshake names and libsodium lacks).
 */
#include "crypto/fcrypto.h"

#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

int fcrypto_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

void fcrypto_random(void *buf, size_t len)
{
    randombytes_buf(buf, len);
}

void fcrypto_tag2(uint8_t out[FCRYPTO_TAG_LEN], const uint8_t key[FCRYPTO_KEY_LEN], const void *a,
                  size_t alen, const void *b, size_t blen)
{
    crypto_generichash_state st;
    uint8_t lens[16];
    for (int i = 0; i < 8; i++) {
        lens[i] = (uint8_t)((uint64_t)alen >> (8 * i));
        lens[8 + i] = (uint8_t)((uint64_t)blen >> (8 * i));
    }
    crypto_generichash_init(&st, key, FCRYPTO_KEY_LEN, FCRYPTO_TAG_LEN);
    crypto_generichash_update(&st, lens, sizeof(lens));
    crypto_generichash_update(&st, a, alen);
    crypto_generichash_update(&st, b, blen);
    crypto_generichash_final(&st, out, FCRYPTO_TAG_LEN);
    sodium_memzero(&st, sizeof(st));
}

void fcrypto_mac128(uint8_t out[FCRYPTO_MAC128_LEN], const uint8_t key[FCRYPTO_KEY_LEN],
                    const void *msg, size_t len)
{
    crypto_generichash(out, FCRYPTO_MAC128_LEN, msg, len, key, FCRYPTO_KEY_LEN);
}

uint64_t fcrypto_hash64(const uint8_t key[FCRYPTO_SHORTKEY_LEN], const void *data, size_t len)
{
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, data, len, key);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)h[i] << (8 * i);
    return v;
}

bool fcrypto_equal(const void *a, const void *b, size_t len)
{
    return sodium_memcmp(a, b, len) == 0;
}

int fcrypto_base64_decode(uint8_t *out, size_t cap, size_t *outlen, const char *b64, size_t len)
{
    size_t n = 0;
    if (sodium_base642bin(out, cap, b64, len, NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) !=
        0) {
        sodium_memzero(out, cap); /* a failure may leave part of a secret */
        return -1;
    }
    *outlen = n;
    return 0;
}

size_t fcrypto_base64_encode(char *out, size_t cap, const void *in, size_t len)
{
    size_t need = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    if (cap < need)
        return 0;
    sodium_bin2base64(out, cap, in, len, sodium_base64_VARIANT_ORIGINAL);
    return need - 1;
}

int fcrypto_sha1(uint8_t out[FCRYPTO_SHA1_LEN], const void *a, size_t alen, const void *b,
                 size_t blen)
{
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = x && EVP_DigestInit_ex(x, EVP_sha1(), NULL) && EVP_DigestUpdate(x, a, alen) &&
             EVP_DigestUpdate(x, b, blen) && EVP_DigestFinal_ex(x, out, &n) &&
             n == FCRYPTO_SHA1_LEN;
    EVP_MD_CTX_free(x);
    return ok ? 0 : -1;
}

void fcrypto_wipe(void *p, size_t len)
{
    sodium_memzero(p, len);
}

int fcrypto_pwhash(char out[FCRYPTO_PWHASH_MAX], const char *pass, size_t len, uint64_t ops,
                   uint64_t mem)
{
    _Static_assert(FCRYPTO_PWHASH_MAX >= crypto_pwhash_STRBYTES, "PHC buffer too small");
    return crypto_pwhash_str_alg(out, pass, len, ops, (size_t)mem, crypto_pwhash_ALG_ARGON2ID13)
               ? -1
               : 0;
}

int fcrypto_pwhash_verify(const char *phc, const char *pass, size_t len)
{
    return crypto_pwhash_str_verify(phc, pass, len) == 0 ? 0 : -1;
}

bool fcrypto_pwhash_valid(const char *phc)
{
    if (strncmp(phc, "$argon2id$", 10) != 0 || strlen(phc) >= crypto_pwhash_STRBYTES)
        return false;
    /* -1 means "not a string this algorithm can verify"; 0 and 1 are fine. */
    return crypto_pwhash_str_needs_rehash(phc, crypto_pwhash_OPSLIMIT_MIN,
                                          crypto_pwhash_MEMLIMIT_MIN) != -1;
}

uint64_t fcrypto_pwhash_ops_min(void)
{
    return crypto_pwhash_OPSLIMIT_MIN;
}

uint64_t fcrypto_pwhash_mem_min(void)
{
    return crypto_pwhash_MEMLIMIT_MIN;
}

/* A decimal number below 2^32 at *s, followed by `end`; advances *s past
 * both. */
static bool phc_u32(const char **s, char end, uint32_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > UINT32_MAX)
            return false;
    }
    if (*p != end)
        return false;
    *out = (uint32_t)v;
    *s = p + 1;
    return true;
}

int fcrypto_pwhash_params(const char *phc, uint32_t *m_kib, uint32_t *t, uint32_t *p)
{
    const char *s = strstr(phc, "$m=");
    if (!s)
        return -1;
    s += 3;
    if (!phc_u32(&s, ',', m_kib) || strncmp(s, "t=", 2) != 0)
        return -1;
    s += 2;
    if (!phc_u32(&s, ',', t) || strncmp(s, "p=", 2) != 0)
        return -1;
    s += 2;
    return phc_u32(&s, '$', p) ? 0 : -1;
}

int fcrypto_pwhash_dummy(char out[FCRYPTO_PWHASH_MAX], uint32_t m_kib, uint32_t t, uint32_t p)
{
    uint8_t salt[crypto_pwhash_SALTBYTES], hash[32];
    char salt64[sodium_base64_ENCODED_LEN(sizeof(salt), sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
    char hash64[sodium_base64_ENCODED_LEN(sizeof(hash), sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
    randombytes_buf(salt, sizeof(salt));
    randombytes_buf(hash, sizeof(hash));
    sodium_bin2base64(salt64, sizeof(salt64), salt, sizeof(salt),
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    sodium_bin2base64(hash64, sizeof(hash64), hash, sizeof(hash),
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    int n = snprintf(out, FCRYPTO_PWHASH_MAX, "$argon2id$v=19$m=%u,t=%u,p=%u$%s$%s", m_kib, t, p,
                     salt64, hash64);
    sodium_memzero(hash, sizeof(hash));
    return n > 0 && n < FCRYPTO_PWHASH_MAX ? 0 : -1;
}
