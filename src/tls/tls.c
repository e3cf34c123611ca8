/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls.c: TLS 1.3 sessions over nonblocking sockets with OpenSSL 3 (tls.h).
 *
 * OpenSSL reads and writes the socket itself (a socket BIO on the caller's
 * fd); this file turns its SSL_ERROR_* vocabulary into ferry's: -EAGAIN with
 * the readiness wanted, 0 for a clean close_notify, -errno otherwise, and a
 * sentence for the log. Verification is OpenSSL's (chain, host name with
 * X509_VERIFY_PARAM_set1_host / set1_ip_asc), except with a pin: then a
 * certificate verify callback compares the SHA-256 of the leaf's
 * SubjectPublicKeyInfo (the form of curl's --proxy-pinnedpubkey, RFC 7469's
 * pin-sha256) and nothing else. OpenSSL keeps its errors in a per-thread
 * queue: every call clears it first, so an old error never explains a new
 * failure. Nothing here logs, allocates per byte, or knows a proxy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls/ticket.h"
#include "tls/tls.h"
#include "tls/x509.h"

/* Shared by threads and refcounted: each session holds a reference, so a
 * context may be dropped (a reloaded configuration) while sessions made
 * from it run on. */
struct tls_ctx {
    _Atomic uint32_t refs;
    SSL_CTX *ssl;
    bool has_pin;
    uint8_t pin[TLS_PIN_LEN];
    uint8_t alpn[64]; /* server: the accepted names in wire form (RFC 7301 section 3.1) */
    uint8_t alpn_len;
    bool alpn_strict; /* server: a client offering none of them fails (RFC 7301 3.2) */
};

/* One connection. Owned by its caller; the fd is never closed here. */
struct tls {
    SSL *ssl;
    struct tls_ctx *ctx; /* a reference */
    int fd;
    bool sent_close; /* close_notify is out (or queued in OpenSSL) */
    char err[TLS_ERROR_MAX];
};

/* ---- helpers ------------------------------------------------------------ */

/* "a,b" -> RFC 7301 wire form (length-prefixed names). 0, or -EINVAL when a
 * name is empty, longer than 255 bytes or the list does not fit. */
static int tls_alpn_wire(const char *list, uint8_t *out, size_t cap, uint8_t *outlen)
{
    size_t n = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len > 255 || n + 1 + len > cap)
            return -EINVAL;
        out[n++] = (uint8_t)len;
        memcpy(out + n, p, len);
        n += len;
        p += len + (e ? 1 : 0);
    }
    *outlen = (uint8_t)n;
    return 0;
}

/* The last OpenSSL error as text (or fallback), and the queue cleared. */
static void tls_openssl_error(char *out, size_t outlen, const char *what, const char *fallback)
{
    unsigned long e = ERR_peek_last_error(), first = ERR_peek_error();
    char text[160];
    if (e)
        ERR_error_string_n(e, text, sizeof(text));
    /* The first error says what (PEM's "no start line"), the last where
     * ("PEM lib"): name both when they differ. */
    const char *why = first && first != e ? ERR_reason_error_string(first) : NULL;
    snprintf(out, outlen, "%s: %s%s%s%s", what, e ? text : fallback, why ? " (" : "",
             why ? why : "", why ? ")" : "");
    ERR_clear_error();
}

void tls_pin_text(const uint8_t pin[TLS_PIN_LEN], char out[TLS_PIN_TEXT])
{
    memcpy(out, "sha256//", 8);
    EVP_EncodeBlock((unsigned char *)out + 8, pin, TLS_PIN_LEN); /* 44 characters and a NUL */
}

int tls_cert_pin(X509 *x, uint8_t pin[TLS_PIN_LEN])
{
    unsigned char *der = NULL;
    int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    if (len <= 0)
        return -EINVAL;
    unsigned int mdlen = 0;
    int ok = EVP_Digest(der, (size_t)len, pin, &mdlen, EVP_sha256(), NULL);
    OPENSSL_free(der);
    return ok && mdlen == TLS_PIN_LEN ? 0 : -EINVAL;
}

/* Replaces chain validation for a pinned client: the leaf's key is the
 * whole check (a self-signed certificate is fine). */
static int tls_pin_verify(X509_STORE_CTX *xs, void *arg)
{
    (void)arg;
    SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct tls *t = ssl ? SSL_get_app_data(ssl) : NULL;
    X509 *leaf = X509_STORE_CTX_get0_cert(xs);
    uint8_t got[TLS_PIN_LEN];
    if (!t || !leaf || tls_cert_pin(leaf, got) < 0) {
        if (t)
            snprintf(t->err, sizeof(t->err), "certificate pin: no usable server certificate");
        X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    if (CRYPTO_memcmp(got, t->ctx->pin, TLS_PIN_LEN) == 0)
        return 1;
    char g[TLS_PIN_TEXT], x[TLS_PIN_TEXT];
    tls_pin_text(got, g);
    tls_pin_text(t->ctx->pin, x);
    snprintf(t->err, sizeof(t->err), "certificate pin mismatch: got %s, expected %s", g, x);
    X509_STORE_CTX_set_error(xs, X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
}

/* Server: pick the first of our names the client offers; none: go on
 * without ALPN (a client that needs one will say so), or with alpn_strict
 * the fatal no_application_protocol alert of RFC 7301 section 3.2. */
static int tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                           const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    const struct tls_ctx *ctx = arg;
    unsigned char *sel = NULL;
    if (SSL_select_next_proto(&sel, outlen, ctx->alpn, ctx->alpn_len, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return ctx->alpn_strict ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static struct tls_ctx *tls_ctx_alloc(const SSL_METHOD *method, char *err, size_t errlen)
{
    ERR_clear_error();
    struct tls_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&ctx->refs, 1);
    ctx->ssl = SSL_CTX_new(method);
    if (!ctx->ssl) {
        tls_openssl_error(err, errlen, "TLS context", "out of memory");
        free(ctx);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx->ssl, TLS1_3_VERSION);
    /* Partial writes: a record at a time, so a full socket never makes a
     * caller hold its whole buffer; the retry may come from a moved
     * buffer (ferry's buffers compact). Released buffers: an idle session
     * holds no record buffers (about 34 KiB), as the relay holds none. */
    SSL_CTX_set_mode(ctx->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                   SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx->ssl, SSL_OP_NO_RENEGOTIATION);
    /* Read ahead into a 64 KiB buffer: one read() takes what the socket
     * holds, not a record's 5-byte header and then its body (half the
     * read calls, and a quarter of the rest, on a bulk stream). The bytes
     * read ahead count as pending (tls_pending(): SSL_has_pending()), so
     * no caller waits for an epoll edge that has already come. */
    SSL_CTX_set_read_ahead(ctx->ssl, 1);
    SSL_CTX_set_default_read_buffer_len(ctx->ssl, 64 * 1024);
    return ctx;
}

/* ---- contexts ----------------------------------------------------------- */

struct tls_ctx *tls_client_ctx_new(const struct tls_client_conf *conf, char *err, size_t errlen)
{
    struct tls_ctx *ctx = tls_ctx_alloc(TLS_client_method(), err, errlen);
    if (!ctx)
        return NULL;
    uint8_t wire[64], wlen = 0;
    if (conf->alpn && (tls_alpn_wire(conf->alpn, wire, sizeof(wire), &wlen) < 0 ||
                       SSL_CTX_set_alpn_protos(ctx->ssl, wire, wlen) != 0)) {
        snprintf(err, errlen, "bad ALPN list \"%s\"", conf->alpn);
        goto out_free;
    }
    SSL_CTX_set_verify(ctx->ssl, SSL_VERIFY_PEER, NULL);
    if (conf->pin) {
        ctx->has_pin = true;
        memcpy(ctx->pin, conf->pin, TLS_PIN_LEN);
        SSL_CTX_set_cert_verify_callback(ctx->ssl, tls_pin_verify, NULL);
    } else if (conf->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx->ssl, conf->ca_file, NULL) != 1) {
            char what[300];
            snprintf(what, sizeof(what), "ca_file %s", conf->ca_file);
            tls_openssl_error(err, errlen, what, "cannot be read");
            goto out_free;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx->ssl) != 1) {
        tls_openssl_error(err, errlen, "the system's CAs", "cannot be loaded");
        goto out_free;
    }
    return ctx;
out_free:
    tls_ctx_free(ctx);
    return NULL;
}

/* OpenSSL's ticket callback (SSL_CTX_set_tlsext_ticket_key_evp_cb): seal
 * with the ring's current key (enc), open with the key the ticket names: 1
 * (current), 2 (previous: open, and issue a fresh ticket), 0 (unknown: a
 * full handshake), -1 (an error). */
static int tls_ticket_cb(SSL *s, unsigned char *name, unsigned char *iv, EVP_CIPHER_CTX *cctx,
                         EVP_MAC_CTX *hctx, int enc)
{
    (void)s;
    struct tls_ticket_ring *r = tls_tickets();
    struct tls_ticket_key k;
    int rc = 1;
    if (!r)
        return enc ? -1 : 0;
    if (enc) {
        tls_ticket_ring_current(r, &k);
        memcpy(name, k.name, sizeof(k.name));
        if (RAND_bytes(iv, 16) != 1)
            rc = -1;
    } else {
        rc = tls_ticket_ring_find(r, name, &k);
    }
    if (rc > 0) {
        OSSL_PARAM p[] = {
            OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k.hmac, sizeof(k.hmac)),
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)(uintptr_t) "SHA256",
                                             0),
            OSSL_PARAM_construct_end()};
        if (EVP_MAC_CTX_set_params(hctx, p) != 1 ||
            EVP_CipherInit_ex(cctx, EVP_aes_256_cbc(), NULL, k.aes, iv, enc) != 1)
            rc = -1;
    }
    OPENSSL_cleanse(&k, sizeof(k));
    return rc;
}

/* Tickets from the process's ring, or none at all. No stateful session
 * cache either way: resumption is by ticket only. */
static void tls_server_tickets(struct tls_ctx *ctx, uint32_t every_ms)
{
    SSL_CTX_set_session_cache_mode(ctx->ssl, SSL_SESS_CACHE_OFF);
    if (!every_ms || !tls_tickets()) {
        SSL_CTX_set_options(ctx->ssl, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx->ssl, 0);
        return;
    }
    /* A ticket opens for up to two rotations: say so in its lifetime hint
     * (at most 7 days in TLS 1.3: RFC 8446 section 4.6.1). */
    uint64_t hint_s = 2ull * every_ms / 1000;
    SSL_CTX_set_timeout(ctx->ssl, (long)(hint_s < 604800 ? hint_s : 604800));
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx->ssl, tls_ticket_cb);
}

struct tls_ctx *tls_server_ctx_new(const struct tls_server_conf *conf, char *err, size_t errlen)
{
    struct tls_ctx *ctx = tls_ctx_alloc(TLS_server_method(), err, errlen);
    if (!ctx)
        return NULL;
    if (conf->tls12)
        SSL_CTX_set_min_proto_version(ctx->ssl, TLS1_2_VERSION);
    /* kTLS where the kernel has it; OpenSSL falls back to user space. */
    SSL_CTX_set_options(ctx->ssl, SSL_OP_ENABLE_KTLS);
    tls_server_tickets(ctx, conf->ticket_rotation_ms);
    ctx->alpn_strict = conf->alpn_strict;
    char what[300];
    if (SSL_CTX_use_certificate_chain_file(ctx->ssl, conf->cert_file) != 1) {
        snprintf(what, sizeof(what), "certificate %s", conf->cert_file);
        tls_openssl_error(err, errlen, what, "cannot be read");
        goto out_free;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx->ssl, conf->key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof(what), "key %s", conf->key_file);
        tls_openssl_error(err, errlen, what, "cannot be read");
        goto out_free;
    }
    if (SSL_CTX_check_private_key(ctx->ssl) != 1) {
        snprintf(what, sizeof(what), "key %s", conf->key_file);
        tls_openssl_error(err, errlen, what, "does not match the certificate");
        goto out_free;
    }
    if (conf->alpn) {
        if (tls_alpn_wire(conf->alpn, ctx->alpn, sizeof(ctx->alpn), &ctx->alpn_len) < 0) {
            snprintf(err, errlen, "bad ALPN list \"%s\"", conf->alpn);
            goto out_free;
        }
        SSL_CTX_set_alpn_select_cb(ctx->ssl, tls_alpn_select, ctx);
    }
    return ctx;
out_free:
    tls_ctx_free(ctx);
    return NULL;
}

void tls_ctx_free(struct tls_ctx *ctx)
{
    if (!ctx || atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) != 1)
        return;
    SSL_CTX_free(ctx->ssl);
    free(ctx);
}

/* ---- sessions ----------------------------------------------------------- */

static struct tls *tls_session_new(struct tls_ctx *ctx, int fd)
{
    ERR_clear_error();
    struct tls *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->ssl = SSL_new(ctx->ssl);
    if (!t->ssl || SSL_set_fd(t->ssl, fd) != 1) {
        tls_free(t);
        ERR_clear_error();
        return NULL;
    }
    t->fd = fd;
    t->ctx = ctx;
    atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
    SSL_set_app_data(t->ssl, t);
    return t;
}

struct tls *tls_client_new(struct tls_ctx *ctx, int fd, const char *host)
{
    struct tls *t = tls_session_new(ctx, fd);
    if (!t)
        return NULL;
    SSL_set_connect_state(t->ssl);
    if (!host || !*host)
        return t;
    /* An address literal is checked against the IP SANs and is never sent
     * as SNI (RFC 6066 section 3: "Literal IPv4 and IPv6 addresses are not
     * permitted"). */
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    int ok = 1;
    if (!literal) {
        /* OpenSSL's macro takes a char *: give it a copy. */
        char name[256];
        int n = snprintf(name, sizeof(name), "%s", host);
        ok = n > 0 && (size_t)n < sizeof(name) && SSL_set_tlsext_host_name(t->ssl, name);
    }
    if (ok && !ctx->has_pin) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
        if (literal) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(vp, host);
        } else {
            X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = X509_VERIFY_PARAM_set1_host(vp, host, 0);
        }
    }
    if (ok != 1) {
        tls_free(t);
        ERR_clear_error();
        return NULL;
    }
    return t;
}

struct tls *tls_server_new(struct tls_ctx *ctx, int fd)
{
    struct tls *t = tls_session_new(ctx, fd);
    if (t)
        SSL_set_accept_state(t->ssl);
    return t;
}

void tls_free(struct tls *t)
{
    if (!t)
        return;
    SSL_free(t->ssl);
    tls_ctx_free(t->ctx);
    free(t);
}

/* Turn the result r of an SSL call into -EAGAIN (with *want), 0 (a clean
 * close_notify) or an error with t->err set. what names the call for the
 * sentence. */
static int tls_fail(struct tls *t, int r, uint8_t *want, const char *what)
{
    int saved = errno;
    int e = SSL_get_error(t->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        *want = TLS_WANT_READ;
        ERR_clear_error();
        return -EAGAIN;
    case SSL_ERROR_WANT_WRITE:
        *want = TLS_WANT_WRITE;
        ERR_clear_error();
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved == 0 || saved == EPIPE || saved == ECONNRESET) {
            snprintf(t->err, sizeof(t->err), "%s: connection closed by the peer", what);
            return saved == EPIPE ? -EPIPE : -ECONNRESET;
        }
        snprintf(t->err, sizeof(t->err), "%s: %s", what, strerror(saved));
        return -saved;
    default:
        break;
    }
    unsigned long q = ERR_peek_last_error();
    if (ERR_GET_LIB(q) == ERR_LIB_SSL && ERR_GET_REASON(q) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        snprintf(t->err, sizeof(t->err), "%s: connection closed without close_notify", what);
        ERR_clear_error();
        return -ECONNRESET;
    }
    if (t->err[0]) { /* the pin check said it already */
        ERR_clear_error();
        return -EPROTO;
    }
    long v = SSL_get_verify_result(t->ssl);
    if (v != X509_V_OK) {
        snprintf(t->err, sizeof(t->err), "certificate verify failed: %s",
                 X509_verify_cert_error_string(v));
        ERR_clear_error();
        return -EPROTO;
    }
    tls_openssl_error(t->err, sizeof(t->err), what, "protocol error");
    return -EPROTO;
}

int tls_handshake(struct tls *t, uint8_t *want)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1)
        return 0;
    r = tls_fail(t, r, want, "TLS handshake");
    if (r == 0) { /* close_notify before the handshake ended */
        snprintf(t->err, sizeof(t->err), "TLS handshake: the peer closed the connection");
        return -ECONNRESET;
    }
    return r;
}

ssize_t tls_read(struct tls *t, void *p, size_t len, uint8_t *want)
{
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    int r = SSL_read_ex(t->ssl, p, len, &n);
    if (r == 1)
        return (ssize_t)n;
    return tls_fail(t, r, want, "TLS read");
}

ssize_t tls_peek(struct tls *t, void *p, size_t len, uint8_t *want)
{
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    int r = SSL_peek_ex(t->ssl, p, len, &n);
    if (r == 1)
        return (ssize_t)n;
    return tls_fail(t, r, want, "TLS read");
}

ssize_t tls_write(struct tls *t, const void *p, size_t len, uint8_t *want)
{
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    int r = SSL_write_ex(t->ssl, p, len, &n);
    if (r == 1)
        return (ssize_t)n;
    r = tls_fail(t, r, want, "TLS write");
    return r == 0 ? -EPIPE : r; /* the peer's close_notify does not end our side */
}

int tls_shutdown_wr(struct tls *t, uint8_t *want)
{
    if (!t->sent_close) {
        ERR_clear_error();
        errno = 0;
        /* 0: our close_notify is out, theirs not yet seen; 1: both. */
        int r = SSL_shutdown(t->ssl);
        if (r < 0) {
            r = tls_fail(t, r, want, "TLS shutdown");
            return r == 0 ? -EPIPE : r;
        }
        t->sent_close = true;
    }
    if (shutdown(t->fd, SHUT_WR) < 0 && errno != ENOTCONN)
        return -errno;
    return 0;
}

bool tls_pending(const struct tls *t)
{
    return SSL_has_pending(t->ssl) != 0;
}

const char *tls_error(const struct tls *t)
{
    return t->err;
}

void tls_keep_buffers(struct tls *t)
{
    SSL_clear_mode(t->ssl, SSL_MODE_RELEASE_BUFFERS);
}

void tls_alpn(const struct tls *t, char *out, size_t outlen)
{
    const unsigned char *p = NULL;
    unsigned int len = 0;
    SSL_get0_alpn_selected(t->ssl, &p, &len);
    if (outlen == 0)
        return;
    if (len >= outlen)
        len = (unsigned int)outlen - 1;
    if (len)
        memcpy(out, p, len);
    out[len] = '\0';
}

int tls_server_pin(const struct tls_ctx *ctx, char out[TLS_PIN_TEXT])
{
    X509 *x = SSL_CTX_get0_certificate(ctx->ssl);
    uint8_t pin[TLS_PIN_LEN];
    if (!x || tls_cert_pin(x, pin) < 0)
        return -ENOENT;
    tls_pin_text(pin, out);
    return 0;
}

bool tls_ktls(const struct tls *t)
{
#ifdef OPENSSL_NO_KTLS
    (void)t;
    return false;
#else
    return BIO_get_ktls_send(SSL_get_wbio(t->ssl)) && BIO_get_ktls_recv(SSL_get_rbio(t->ssl));
#endif
}

int tls_peer_pin(const struct tls *t, char out[TLS_PIN_TEXT])
{
    X509 *x = SSL_get0_peer_certificate(t->ssl);
    uint8_t pin[TLS_PIN_LEN];
    if (!x || tls_cert_pin(x, pin) < 0)
        return -ENOENT;
    tls_pin_text(pin, out);
    return 0;
}
