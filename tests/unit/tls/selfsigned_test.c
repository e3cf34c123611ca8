/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * selfsigned_test.c: the self-signed certificate maker (src/tls/selfsigned.h)
 * checked from the outside with OpenSSL: a certificate is made and written
 * into a temporary directory, then loaded back from the files: the key type
 * and curve, that key and certificate match, the self-signature, the SANs,
 * the validity window, the serial, basicConstraints, the files' modes
 * (exact under a strict umask), and the pin against the SHA-256 of the key's
 * SubjectPublicKeyInfo computed here independently. Then the refusals: an
 * existing file is not replaced without force (and no temporary file is
 * left), force replaces, bad requests and bad names are refused, and
 * tls_pin_of_cert_file() on a missing or non-certificate file.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tls/selfsigned.h"

static char base[HARNESS_PATH_MAX];
static char out[HARNESS_PATH_MAX];

static int setup(void **state)
{
    (void)state;
    harness_mkdtemp(base, sizeof(base));
    harness_path(out, sizeof(out), base, "tls");
    return 0;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[HARNESS_PATH_MAX * 2];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    (void)state;
    remove_dir(out);
    remove_dir(base);
    return 0;
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static X509 *load_cert(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    assert_non_null(x);
    return x;
}

static EVP_PKEY *load_key(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    assert_non_null(k);
    return k;
}

static void make(struct tls_cert *c, unsigned days)
{
    struct tls_cert_conf conf = {
        .names = {"proxy.example.com", "localhost", "127.0.0.1", "::1"},
        .nnames = 4,
        .days = days,
    };
    char err[256] = "";
    assert_int_equal(tls_cert_make(&conf, c, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    assert_non_null(c->cert_pem);
    assert_non_null(c->key_pem);
}

/* "sha256//" + base64(SHA-256(DER SubjectPublicKeyInfo of key)), computed
 * from the private key file rather than from the certificate. */
static void independent_pin(EVP_PKEY *key, char pin[TLS_PIN_TEXT])
{
    unsigned char *der = NULL;
    int len = i2d_PUBKEY(key, &der);
    assert_true(len > 0);
    unsigned char md[32];
    unsigned int mdlen = 0;
    assert_int_equal(EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(), NULL), 1);
    assert_int_equal(mdlen, 32);
    OPENSSL_free(der);
    memcpy(pin, "sha256//", 8);
    assert_int_equal(EVP_EncodeBlock((unsigned char *)pin + 8, md, 32), 44);
}

static void check_sans(X509 *x)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    assert_non_null(gens);
    assert_int_equal(sk_GENERAL_NAME_num(gens), 4);
    const char *dns[] = {"proxy.example.com", "localhost"};
    for (int i = 0; i < 2; i++) {
        GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        assert_int_equal(g->type, GEN_DNS);
        assert_int_equal(ASN1_STRING_length(g->d.dNSName), strlen(dns[i]));
        assert_memory_equal(ASN1_STRING_get0_data(g->d.dNSName), dns[i], strlen(dns[i]));
    }
    static const unsigned char v4[4] = {127, 0, 0, 1};
    static const unsigned char v6[16] = {[15] = 1};
    GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, 2);
    assert_int_equal(g->type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(g->d.iPAddress), 4);
    assert_memory_equal(ASN1_STRING_get0_data(g->d.iPAddress), v4, 4);
    g = sk_GENERAL_NAME_value(gens, 3);
    assert_int_equal(g->type, GEN_IPADD);
    assert_int_equal(ASN1_STRING_length(g->d.iPAddress), 16);
    assert_memory_equal(ASN1_STRING_get0_data(g->d.iPAddress), v6, 16);
    GENERAL_NAMES_free(gens);
    /* And OpenSSL's own host check agrees. */
    assert_int_equal(X509_check_host(x, "proxy.example.com", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "other.example.com", 0, 0, NULL), 0);
    assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
}

static void check_validity(X509 *x, time_t before, time_t after, int days)
{
    /* notBefore = make time - 1 h; notAfter = make time + days. (X509_cmp_time
     * says -1 for "earlier or equal": widen by a second each way.) */
    time_t lo = before - 3601, hi = after - 3599;
    assert_int_equal(X509_cmp_time(X509_get0_notBefore(x), &lo), 1);
    assert_int_equal(X509_cmp_time(X509_get0_notBefore(x), &hi), -1);
    int d = 0, s = 0;
    assert_int_equal(ASN1_TIME_diff(&d, &s, X509_get0_notBefore(x), X509_get0_notAfter(x)), 1);
    assert_int_equal(d, days);
    assert_int_equal(s, 3600);
    time_t now = time(NULL);
    assert_true(X509_cmp_time(X509_get0_notBefore(x), &now) < 0);
    assert_true(X509_cmp_time(X509_get0_notAfter(x), &now) > 0);
}

static void test_make_write_load(void **state)
{
    (void)state;
    struct tls_cert c;
    time_t before = time(NULL);
    make(&c, 30);
    time_t after = time(NULL);
    mode_t old = umask(0077); /* the cert must be 0644 all the same */
    char err[256] = "";
    int rc = tls_cert_write(&c, out, false, err, sizeof(err));
    umask(old);
    assert_int_equal(rc, 0);
    char cert_path[HARNESS_PATH_MAX * 2], key_path[HARNESS_PATH_MAX * 2];
    snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", out);
    snprintf(key_path, sizeof(key_path), "%s/key.pem", out);
    assert_int_equal(mode_of(out), 0700);
    assert_int_equal(mode_of(cert_path), 0644);
    assert_int_equal(mode_of(key_path), 0600);
    assert_int_equal(count_entries(out), 2);

    X509 *x = load_cert(cert_path);
    EVP_PKEY *key = load_key(key_path);
    assert_int_equal(EVP_PKEY_get_base_id(key), EVP_PKEY_EC);
    char group[64] = "";
    assert_int_equal(EVP_PKEY_get_group_name(key, group, sizeof(group), NULL), 1);
    assert_string_equal(group, "prime256v1");
    assert_int_equal(X509_check_private_key(x, key), 1);
    EVP_PKEY *pub = X509_get0_pubkey(x);
    assert_int_equal(X509_verify(x, pub), 1);
    assert_int_equal(X509_get_version(x), 2);
    assert_int_equal(X509_check_ca(x), 0);
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
    assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
    check_sans(x);
    check_validity(x, before, after, 30);

    BIGNUM *serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    assert_non_null(serial);
    assert_false(BN_is_negative(serial));
    assert_true(BN_num_bits(serial) > 64); /* 128 random bits: fails with p = 2^-64 */
    assert_true(BN_num_bits(serial) <= 128);
    BN_free(serial);

    char pin[TLS_PIN_TEXT], file_pin[TLS_PIN_TEXT];
    independent_pin(key, pin);
    assert_string_equal(c.pin, pin);
    assert_int_equal(tls_pin_of_cert_file(cert_path, file_pin, err, sizeof(err)), 0);
    assert_string_equal(file_pin, pin);
    assert_int_equal(strlen(c.not_after), strlen("2027-12-01 22:13:40 UTC"));

    X509_free(x);
    EVP_PKEY_free(key);
    tls_cert_fini(&c);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    text = calloc(1, 4096);
    assert_non_null(text);
    assert_true(fread(text, 1, 4095, f) > 0);
    fclose(f);
    return text;
}

static void test_overwrite_and_force(void **state)
{
    (void)state;
    struct tls_cert a, b;
    make(&a, 1);
    make(&b, 3650);
    assert_string_not_equal(a.pin, b.pin);
    char err[256] = "";
    assert_int_equal(tls_cert_write(&a, out, false, err, sizeof(err)), 0);
    char cert_path[HARNESS_PATH_MAX * 2], key_path[HARNESS_PATH_MAX * 2];
    snprintf(cert_path, sizeof(cert_path), "%s/cert.pem", out);
    snprintf(key_path, sizeof(key_path), "%s/key.pem", out);

    assert_int_equal(tls_cert_write(&b, out, false, err, sizeof(err)), -EEXIST);
    assert_non_null(strstr(err, "key.pem exists"));
    assert_non_null(strstr(err, "--force"));
    char *text = slurp(key_path);
    assert_string_equal(text, a.key_pem);
    free(text);
    assert_int_equal(count_entries(out), 2); /* no temporary file left */

    /* Only the certificate there: still refused, and no key written. */
    assert_int_equal(unlink(key_path), 0);
    assert_int_equal(tls_cert_write(&b, out, false, err, sizeof(err)), -EEXIST);
    assert_non_null(strstr(err, "cert.pem exists"));
    assert_int_equal(access(key_path, F_OK), -1);
    assert_int_equal(count_entries(out), 1);

    assert_int_equal(tls_cert_write(&b, out, true, err, sizeof(err)), 0);
    text = slurp(cert_path);
    assert_string_equal(text, b.cert_pem);
    free(text);
    text = slurp(key_path);
    assert_string_equal(text, b.key_pem);
    free(text);
    assert_int_equal(mode_of(cert_path), 0644);
    assert_int_equal(mode_of(key_path), 0600);
    assert_int_equal(count_entries(out), 2);
    char pin[TLS_PIN_TEXT];
    assert_int_equal(tls_pin_of_cert_file(cert_path, pin, err, sizeof(err)), 0);
    assert_string_equal(pin, b.pin);
    tls_cert_fini(&a);
    tls_cert_fini(&b);
}

static void test_bad_places(void **state)
{
    (void)state;
    struct tls_cert c;
    make(&c, 365);
    char err[256] = "", dir[HARNESS_PATH_MAX * 2];
    snprintf(dir, sizeof(dir), "%s/missing/tls", base); /* parents are not made */
    assert_int_equal(tls_cert_write(&c, dir, false, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "cannot create directory"));
    /* A file where the directory should be. */
    char file[HARNESS_PATH_MAX * 2];
    snprintf(file, sizeof(file), "%s/plain", base);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    assert_int_equal(tls_cert_write(&c, file, false, err, sizeof(err)), -ENOTDIR);
    char pin[TLS_PIN_TEXT];
    assert_int_equal(tls_pin_of_cert_file(file, pin, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no readable PEM certificate"));
    assert_int_equal(tls_pin_of_cert_file(dir, pin, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "cannot open"));
    unlink(file);
    tls_cert_fini(&c);
}

static void test_bad_requests(void **state)
{
    (void)state;
    struct tls_cert c;
    char err[256];
    struct tls_cert_conf conf = {.names = {"localhost"}, .nnames = 1, .days = 0};
    assert_int_equal(tls_cert_make(&conf, &c, err, sizeof(err)), -EINVAL);
    assert_null(c.key_pem);
    conf.days = TLS_CERT_DAYS_MAX + 1;
    assert_int_equal(tls_cert_make(&conf, &c, err, sizeof(err)), -EINVAL);
    conf.days = TLS_CERT_DAYS_MAX;
    conf.nnames = 0;
    assert_int_equal(tls_cert_make(&conf, &c, err, sizeof(err)), -EINVAL);
    conf.nnames = 1;
    conf.names[0] = "bad,name";
    assert_int_equal(tls_cert_make(&conf, &c, err, sizeof(err)), -EINVAL);
}

static void test_names(void **state)
{
    (void)state;
    const char *good[] = {"localhost", "a",   "proxy.example.com", "x-1.example",
                          "127.0.0.1", "::1", "2001:db8::5",       "A.B.C"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(tls_cert_name_ok(good[i]));
    char long_label[70], long_name[300];
    memset(long_label, 'a', 64);
    long_label[64] = '\0';
    memset(long_name, 'a', sizeof(long_name));
    for (size_t i = 10; i < 254; i += 11)
        long_name[i] = '.';
    long_name[252] = 'a'; /* the 253-character form must not end with a dot */
    long_name[254] = '\0';
    const char *bad[] = {"",     ".",   "a..b",     "-a.b",  "a-.b",  "a.b.",     "*.example.com",
                         "a b",  "a_b", "bad,name", "[::1]", "ä.com", long_label, long_name,
                         "1:2:3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(tls_cert_name_ok(bad[i]));
    long_name[253] = '\0'; /* 253 is the longest allowed */
    assert_true(tls_cert_name_ok(long_name));
    assert_false(tls_cert_name_ok(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_make_write_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_and_force, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_places, setup, teardown),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
