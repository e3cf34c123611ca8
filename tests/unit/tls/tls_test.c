/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls_test.c: TLS sessions (src/tls/tls.h) between a client and a server
 * object in one process, over a nonblocking socketpair, with throwaway
 * keys and certificates made here with OpenSSL's APIs (a CA, a leaf it
 * signed, a stranger CA, a self-signed leaf). Covers: the handshake, data
 * both ways, close_notify as EOF and half-close, bytes held in OpenSSL
 * (tls_pending), a pin that matches and one that does not (with the
 * sentence), CA verification that passes and that fails (wrong CA, wrong
 * name), ALPN.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls/tls.h"

struct keycert {
    EVP_PKEY *key;
    X509 *cert;
};

static char dir[HARNESS_PATH_MAX];
static struct keycert ca, stranger, leaf, selfsigned;
static char ca_pem[HARNESS_PATH_MAX], stranger_pem[HARNESS_PATH_MAX];
static char leaf_pem[HARNESS_PATH_MAX], leaf_key[HARNESS_PATH_MAX];
static char self_pem[HARNESS_PATH_MAX], self_key[HARNESS_PATH_MAX];

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    assert_non_null(ext);
    assert_int_equal(X509_add_ext(x, ext, -1), 1);
    X509_EXTENSION_free(ext);
}

/* A P-256 key and a certificate for cn, signed by issuer (NULL: itself). */
static void make_keycert(struct keycert *kc, const char *cn, const struct keycert *issuer,
                         bool is_ca)
{
    kc->key = EVP_EC_gen("P-256");
    assert_non_null(kc->key);
    X509 *x = kc->cert = X509_new();
    assert_non_null(x);
    assert_int_equal(X509_set_version(x, 2), 1);
    static long serial = 1;
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    assert_int_equal(X509_set_pubkey(x, kc->key), 1);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509 *icert = issuer ? issuer->cert : x;
    assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(icert)), 1);
    add_ext(x, icert, NID_basic_constraints, is_ca ? "critical,CA:TRUE" : "CA:FALSE");
    add_ext(x, icert, NID_subject_key_identifier, "hash");
    if (is_ca)
        add_ext(x, icert, NID_key_usage, "critical,keyCertSign,cRLSign");
    else
        add_ext(x, icert, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    assert_true(X509_sign(x, issuer ? issuer->key : kc->key, EVP_sha256()) > 0);
}

static void write_cert(const char *path, X509 *x)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_X509(f, x), 1);
    assert_int_equal(fclose(f), 0);
}

static void write_key(const char *path, EVP_PKEY *k)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    assert_int_equal(fclose(f), 0);
}

static void pin_of(X509 *x, uint8_t pin[TLS_PIN_LEN])
{
    unsigned char *der = NULL;
    int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
    assert_true(len > 0);
    unsigned int n = 0;
    assert_int_equal(EVP_Digest(der, (size_t)len, pin, &n, EVP_sha256(), NULL), 1);
    OPENSSL_free(der);
}

static int setup(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = SIG_IGN};
    sigaction(SIGPIPE, &sa, NULL);
    harness_mkdtemp(dir, sizeof(dir));
    make_keycert(&ca, "ferry test CA", NULL, true);
    make_keycert(&stranger, "a stranger CA", NULL, true);
    make_keycert(&leaf, "localhost", &ca, false);
    make_keycert(&selfsigned, "localhost", NULL, false);
    harness_path(ca_pem, sizeof(ca_pem), dir, "ca.pem");
    harness_path(stranger_pem, sizeof(stranger_pem), dir, "stranger.pem");
    harness_path(leaf_pem, sizeof(leaf_pem), dir, "leaf.pem");
    harness_path(leaf_key, sizeof(leaf_key), dir, "leaf.key");
    harness_path(self_pem, sizeof(self_pem), dir, "self.pem");
    harness_path(self_key, sizeof(self_key), dir, "self.key");
    write_cert(ca_pem, ca.cert);
    write_cert(stranger_pem, stranger.cert);
    write_cert(leaf_pem, leaf.cert);
    write_key(leaf_key, leaf.key);
    write_cert(self_pem, selfsigned.cert);
    write_key(self_key, selfsigned.key);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *files[] = {ca_pem, stranger_pem, leaf_pem, leaf_key, self_pem, self_key};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        unlink(files[i]);
    rmdir(dir);
    struct keycert *all[] = {&ca, &stranger, &leaf, &selfsigned};
    for (size_t i = 0; i < 4; i++) {
        X509_free(all[i]->cert);
        EVP_PKEY_free(all[i]->key);
    }
    return 0;
}

/* A client and a server session over a nonblocking socketpair. */
struct pair {
    int fd[2];
    struct tls_ctx *cctx, *sctx;
    struct tls *cli, *srv;
    int crc, src; /* the handshake results */
};

static void pair_open(struct pair *p, const struct tls_client_conf *cc, const char *host,
                      const char *cert, const char *key)
{
    char err[TLS_ERROR_MAX] = "";
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->fd), 0);
    p->cctx = tls_client_ctx_new(cc, err, sizeof(err));
    if (!p->cctx)
        fail_msg("client context: %s", err);
    struct tls_server_conf sc = {.cert_file = cert, .key_file = key, .alpn = "h2,http/1.1"};
    p->sctx = tls_server_ctx_new(&sc, err, sizeof(err));
    if (!p->sctx)
        fail_msg("server context: %s", err);
    p->cli = tls_client_new(p->cctx, p->fd[0], host);
    p->srv = tls_server_new(p->sctx, p->fd[1]);
    assert_non_null(p->cli);
    assert_non_null(p->srv);
    /* The contexts may go before the sessions made from them. */
    tls_ctx_free(p->cctx);
    tls_ctx_free(p->sctx);
}

/* Step both handshakes in turn until neither waits (bounded). */
static void pair_handshake(struct pair *p)
{
    p->crc = p->src = -EAGAIN;
    for (int i = 0; i < 100 && (p->crc == -EAGAIN || p->src == -EAGAIN); i++) {
        uint8_t want = 0;
        if (p->crc == -EAGAIN) {
            p->crc = tls_handshake(p->cli, &want);
            if (p->crc == -EAGAIN)
                assert_true(want == TLS_WANT_READ || want == TLS_WANT_WRITE);
        }
        if (p->src == -EAGAIN)
            p->src = tls_handshake(p->srv, &want);
        if (p->crc < 0 && p->crc != -EAGAIN)
            break; /* the client gave up: the server would wait forever */
    }
}

static void pair_close(struct pair *p)
{
    tls_free(p->cli);
    tls_free(p->srv);
    close(p->fd[0]);
    close(p->fd[1]);
}

/* Read exactly len bytes from t, stepping nothing else (the peer wrote
 * them already). */
static void read_all(struct tls *t, uint8_t *out, size_t len)
{
    size_t got = 0;
    for (int i = 0; got < len && i < 10000; i++) {
        uint8_t want = 0;
        ssize_t n = tls_read(t, out + got, len - got, &want);
        if (n == -EAGAIN)
            continue;
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_int_equal(got, len);
}

static void test_pin_match_data_and_close(void **state)
{
    (void)state;
    uint8_t pin[TLS_PIN_LEN];
    pin_of(selfsigned.cert, pin);
    struct tls_client_conf cc = {.pin = pin, .alpn = "http/1.1"};
    struct pair p;
    pair_open(&p, &cc, "proxy.example", self_pem, self_key); /* a pin ignores the name */
    pair_handshake(&p);
    assert_int_equal(p.crc, 0);
    assert_int_equal(p.src, 0);
    assert_string_equal(tls_error(p.cli), "");
    char alpn[32];
    tls_alpn(p.cli, alpn, sizeof(alpn));
    assert_string_equal(alpn, "http/1.1");
    char text[TLS_PIN_TEXT], want_text[TLS_PIN_TEXT];
    assert_int_equal(tls_peer_pin(p.cli, text), 0);
    tls_pin_text(pin, want_text);
    assert_string_equal(text, want_text);

    /* Client -> server, 3 records; the server reads in small pieces, so
     * OpenSSL holds the rest: tls_pending says so. */
    static uint8_t big[40000], back[40000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 7 + 3);
    size_t off = 0;
    uint8_t want = 0;
    while (off < sizeof(big)) {
        ssize_t n = tls_write(p.cli, big + off, sizeof(big) - off, &want);
        assert_true(n > 0);
        off += (size_t)n;
    }
    /* A peek leaves the bytes for the next read. */
    ssize_t n = tls_peek(p.srv, back, 10, &want);
    assert_int_equal(n, 10);
    assert_memory_equal(back, big, 10);
    n = tls_read(p.srv, back, 10, &want);
    assert_int_equal(n, 10);
    assert_memory_equal(back, big, 10);
    assert_true(tls_pending(p.srv));
    read_all(p.srv, back + 10, sizeof(back) - 10);
    assert_memory_equal(big, back, sizeof(big));
    assert_false(tls_pending(p.srv));
    assert_int_equal(tls_read(p.srv, back, sizeof(back), &want), -EAGAIN);
    assert_int_equal(want, TLS_WANT_READ);

    /* Half-close: the client's close_notify is the server's EOF, and the
     * server can still answer. */
    assert_int_equal(tls_shutdown_wr(p.cli, &want), 0);
    assert_int_equal(tls_read(p.srv, back, sizeof(back), &want), 0);
    assert_int_equal(tls_write(p.srv, "late", 4, &want), 4);
    read_all(p.cli, back, 4);
    assert_memory_equal(back, "late", 4);
    assert_int_equal(tls_shutdown_wr(p.srv, &want), 0);
    assert_int_equal(tls_read(p.cli, back, sizeof(back), &want), 0);
    pair_close(&p);
}

static void test_pin_mismatch(void **state)
{
    (void)state;
    uint8_t pin[TLS_PIN_LEN];
    pin_of(leaf.cert, pin); /* another key than the server's */
    struct tls_client_conf cc = {.pin = pin};
    struct pair p;
    pair_open(&p, &cc, "localhost", self_pem, self_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, -EPROTO);
    uint8_t got[TLS_PIN_LEN];
    pin_of(selfsigned.cert, got);
    char g[TLS_PIN_TEXT], x[TLS_PIN_TEXT], expect[TLS_ERROR_MAX];
    tls_pin_text(got, g);
    tls_pin_text(pin, x);
    snprintf(expect, sizeof(expect), "certificate pin mismatch: got %s, expected %s", g, x);
    assert_string_equal(tls_error(p.cli), expect);
    assert_true(p.src < 0 && p.src != -EAGAIN); /* the client's alert ended it */
    pair_close(&p);
}

static void test_ca_verify(void **state)
{
    (void)state;
    struct tls_client_conf cc = {.ca_file = ca_pem};
    struct pair p;
    pair_open(&p, &cc, "localhost", leaf_pem, leaf_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, 0);
    assert_int_equal(p.src, 0);
    pair_close(&p);

    pair_open(&p, &cc, "127.0.0.1", leaf_pem, leaf_key); /* an IP SAN */
    pair_handshake(&p);
    assert_int_equal(p.crc, 0);
    pair_close(&p);
}

static void test_ca_verify_fails(void **state)
{
    (void)state;
    struct tls_client_conf wrong = {.ca_file = stranger_pem};
    struct pair p;
    pair_open(&p, &wrong, "localhost", leaf_pem, leaf_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, -EPROTO);
    assert_string_equal(tls_error(p.cli),
                        "certificate verify failed: unable to get local issuer certificate");
    pair_close(&p);

    struct tls_client_conf right = {.ca_file = ca_pem};
    pair_open(&p, &right, "other.example", leaf_pem, leaf_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, -EPROTO);
    assert_string_equal(tls_error(p.cli), "certificate verify failed: hostname mismatch");
    pair_close(&p);

    /* A self-signed certificate without a pin is not trusted. */
    pair_open(&p, &right, "localhost", self_pem, self_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, -EPROTO);
    assert_non_null(strstr(tls_error(p.cli), "certificate verify failed: "));
    pair_close(&p);
}

static void test_truncation_and_bad_files(void **state)
{
    (void)state;
    uint8_t pin[TLS_PIN_LEN];
    pin_of(selfsigned.cert, pin);
    struct tls_client_conf cc = {.pin = pin};
    struct pair p;
    pair_open(&p, &cc, NULL, self_pem, self_key);
    pair_handshake(&p);
    assert_int_equal(p.crc, 0);
    /* The server's socket closes without close_notify: not an EOF. */
    tls_free(p.srv);
    p.srv = NULL;
    close(p.fd[1]);
    p.fd[1] = -1;
    uint8_t buf[16], want = 0;
    assert_int_equal(tls_read(p.cli, buf, sizeof(buf), &want), -ECONNRESET);
    assert_string_equal(tls_error(p.cli), "TLS read: connection closed without close_notify");
    pair_close(&p);

    char err[TLS_ERROR_MAX] = "";
    struct tls_client_conf missing = {.ca_file = "/nonexistent/ca.pem"};
    assert_null(tls_client_ctx_new(&missing, err, sizeof(err)));
    assert_non_null(strstr(err, "ca_file /nonexistent/ca.pem: "));
    struct tls_server_conf mismatched = {.cert_file = leaf_pem, .key_file = self_key};
    assert_null(tls_server_ctx_new(&mismatched, err, sizeof(err)));
    assert_non_null(strstr(err, "key "));
    assert_non_null(strstr(err, "mismatch"));
    struct tls_client_conf sys = {.alpn = "http/1.1"};
    struct tls_ctx *ctx = tls_client_ctx_new(&sys, err, sizeof(err));
    assert_non_null(ctx);
    tls_ctx_free(ctx);
}

/* A server that accepts only http/1.1 with alpn_strict: a client offering
 * only h2 fails with no_application_protocol (RFC 7301 section 3.2); one
 * offering no ALPN is served. tls_server_pin() is the pin clients see. */
static void test_server_alpn_strict_and_pin(void **state)
{
    (void)state;
    char err[TLS_ERROR_MAX] = "";
    struct tls_server_conf sc = {
        .cert_file = self_pem, .key_file = self_key, .alpn = "http/1.1", .alpn_strict = true};
    struct tls_ctx *sctx = tls_server_ctx_new(&sc, err, sizeof(err));
    if (!sctx)
        fail_msg("server context: %s", err);
    uint8_t pin[TLS_PIN_LEN];
    pin_of(selfsigned.cert, pin);
    char have[TLS_PIN_TEXT], want_text[TLS_PIN_TEXT];
    tls_pin_text(pin, want_text);
    assert_int_equal(tls_server_pin(sctx, have), 0);
    assert_string_equal(have, want_text);
    for (int i = 0; i < 2; i++) {
        struct tls_client_conf cc = {.pin = pin, .alpn = i == 0 ? "h2" : NULL};
        struct tls_ctx *cctx = tls_client_ctx_new(&cc, err, sizeof(err));
        assert_non_null(cctx);
        struct pair p = {0};
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p.fd), 0);
        p.cli = tls_client_new(cctx, p.fd[0], "localhost");
        p.srv = tls_server_new(sctx, p.fd[1]);
        tls_ctx_free(cctx);
        pair_handshake(&p);
        if (i == 0) {
            assert_int_equal(p.src, -EPROTO);
            assert_non_null(strstr(tls_error(p.srv), "no application protocol"));
        } else {
            assert_int_equal(p.crc, 0);
            assert_int_equal(p.src, 0);
            assert_false(tls_ktls(p.srv)); /* a socketpair is not TCP */
        }
        pair_close(&p);
    }
    tls_ctx_free(sctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pin_match_data_and_close),
        cmocka_unit_test(test_pin_mismatch),
        cmocka_unit_test(test_ca_verify),
        cmocka_unit_test(test_ca_verify_fails),
        cmocka_unit_test(test_truncation_and_bad_files),
        cmocka_unit_test(test_server_alpn_strict_and_pin),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
