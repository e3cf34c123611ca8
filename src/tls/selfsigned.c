/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * selfsigned.c: a self-signed ECDSA P-256 certificate and its key, made with
 * OpenSSL 3's EVP and X509 APIs (no shelling out to openssl(1)), written
 * into a directory with exact modes, and the pin of a certificate file.
 *
 * Files are put in place whole: each is written under a temporary name in
 * the target directory, synced, then linked (no overwrite) or renamed
 * (--force) over its name, so a reader never sees half a key and a crash
 * leaves either the old file or the new one. The key's text lives in
 * secure-heap BIOs and a buffer wiped before it is freed. Nothing here
 * logs or prints; the caller says what happened.
 */
#include "tls/selfsigned.h"
#include "tls/x509.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define CERT_FILE "cert.pem"
#define KEY_FILE  "key.pem"

/* ---- names ---------------------------------------------------------------- */

static bool is_ip_literal(const char *name, int *family)
{
    unsigned char buf[16];
    if (inet_pton(AF_INET, name, buf) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, name, buf) == 1) {
        *family = AF_INET6;
        return true;
    }
    return false;
}

static bool is_label_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-';
}

bool tls_cert_name_ok(const char *name)
{
    int family;
    if (!name)
        return false;
    if (is_ip_literal(name, &family))
        return true;
    size_t len = strlen(name);
    if (len == 0 || len > TLS_CERT_NAME_MAX)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        char ch = name[i];
        if (ch == '.' || ch == '\0') {
            if (label == 0 || label > 63 || name[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_label_char(ch) || (label == 0 && ch == '-'))
            return false;
        label++;
    }
    return true;
}

/* ---- making ----------------------------------------------------------------- */

/* The last OpenSSL error as a sentence in err (the queue cleared); rc. */
static int cert_fail(char *err, size_t errlen, const char *what, int rc)
{
    unsigned long e = ERR_peek_last_error();
    char text[160] = "unknown error";
    if (e)
        ERR_error_string_n(e, text, sizeof(text));
    snprintf(err, errlen, "%s: %s", what, text);
    ERR_clear_error();
    return rc;
}

/* The pin of x as text. 0 or -EINVAL. */
static int pin_of_x509(X509 *x, char out[TLS_PIN_TEXT])
{
    uint8_t md[TLS_PIN_LEN];
    if (tls_cert_pin(x, md) < 0)
        return -EINVAL;
    tls_pin_text(md, out);
    return 0;
}

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

/* "DNS:a,IP:127.0.0.1,..." for conf's names (already checked: no commas). */
static int san_text(const struct tls_cert_conf *conf, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < conf->nnames; i++) {
        int family;
        bool ip = is_ip_literal(conf->names[i], &family);
        int w =
            snprintf(out + n, cap - n, "%s%s:%s", i ? "," : "", ip ? "IP" : "DNS", conf->names[i]);
        if (w < 0 || (size_t)w >= cap - n)
            return -1;
        n += (size_t)w;
    }
    return 0;
}

/* A random positive 128-bit serial (RFC 5280 section 4.1.2.2: at most 20
 * octets; 16 random ones, plus a leading zero when the top bit is set). */
static int set_serial(X509 *x)
{
    unsigned char r[16];
    if (RAND_bytes(r, sizeof(r)) != 1)
        return -1;
    r[sizeof(r) - 1] |= 1; /* never zero */
    BIGNUM *bn = BN_bin2bn(r, sizeof(r), NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

/* Everything of the certificate but the signature. */
static int fill_cert(X509 *x, EVP_PKEY *key, const struct tls_cert_conf *conf, time_t now)
{
    char san[TLS_CERT_NAMES_MAX * (TLS_CERT_NAME_MAX + 5)];
    if (X509_set_version(x, 2) != 1 || set_serial(x) < 0)
        return -1;
    if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, -3600, &now) ||
        !X509_time_adj_ex(X509_getm_notAfter(x), (int)conf->days, 0, &now))
        return -1;
    if (X509_set_pubkey(x, key) != 1)
        return -1;
    X509_NAME *name = X509_get_subject_name(x);
    const char *cn = strlen(conf->names[0]) <= 64 ? conf->names[0] : "ferry";
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
                                    0) ||
        X509_set_issuer_name(x, name) != 1)
        return -1;
    if (san_text(conf, san, sizeof(san)) < 0)
        return -1;
    if (add_ext(x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(x, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, NID_subject_alt_name, san) < 0)
        return -1;
    return 0;
}

/* The bytes of a memory BIO, copied into a new NUL-terminated buffer. */
static char *bio_text(BIO *b, size_t *len)
{
    char *p = NULL;
    long n = BIO_get_mem_data(b, &p);
    if (n <= 0 || !p)
        return NULL;
    char *out = malloc((size_t)n + 1);
    if (!out)
        return NULL;
    memcpy(out, p, (size_t)n);
    out[n] = '\0';
    *len = (size_t)n;
    return out;
}

/* PEM of x and key into c. 0 or -ENOMEM. */
static int export_pem(X509 *x, EVP_PKEY *key, struct tls_cert *c)
{
    BIO *cb = BIO_new(BIO_s_mem());
    BIO *kb = BIO_new(BIO_s_secmem());
    int rc = -ENOMEM;
    if (!cb || !kb || PEM_write_bio_X509(cb, x) != 1 ||
        PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1)
        goto out_free_bios;
    c->cert_pem = bio_text(cb, &c->cert_len);
    c->key_pem = bio_text(kb, &c->key_len);
    if (c->cert_pem && c->key_pem)
        rc = 0;
out_free_bios:
    BIO_free(cb);
    BIO_free(kb);
    return rc;
}

static bool conf_ok(const struct tls_cert_conf *conf)
{
    if (conf->nnames == 0 || conf->nnames > TLS_CERT_NAMES_MAX || conf->days < 1 ||
        conf->days > TLS_CERT_DAYS_MAX)
        return false;
    for (size_t i = 0; i < conf->nnames; i++)
        if (!tls_cert_name_ok(conf->names[i]))
            return false;
    return true;
}

int tls_cert_make(const struct tls_cert_conf *conf, struct tls_cert *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!conf_ok(conf)) {
        snprintf(err, errlen, "invalid certificate request (names or days)");
        return -EINVAL;
    }
    ERR_clear_error();
    time_t now = time(NULL);
    int rc = -EIO;
    X509 *x = NULL;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!key) {
        rc = cert_fail(err, errlen, "cannot make an ECDSA P-256 key", -EIO);
        goto out_free;
    }
    x = X509_new();
    if (!x || fill_cert(x, key, conf, now) < 0) {
        rc = cert_fail(err, errlen, "cannot fill in the certificate", -EIO);
        goto out_free;
    }
    if (X509_sign(x, key, EVP_sha256()) <= 0) {
        rc = cert_fail(err, errlen, "cannot sign the certificate", -EIO);
        goto out_free;
    }
    if (pin_of_x509(x, out->pin) < 0) {
        rc = cert_fail(err, errlen, "cannot compute the pin", -EIO);
        goto out_free;
    }
    rc = export_pem(x, key, out);
    if (rc < 0) {
        cert_fail(err, errlen, "cannot write the certificate as PEM", rc);
        goto out_free;
    }
    time_t until = now + (time_t)conf->days * 86400;
    struct tm tm;
    if (!gmtime_r(&until, &tm) ||
        !strftime(out->not_after, sizeof(out->not_after), "%Y-%m-%d %H:%M:%S UTC", &tm))
        out->not_after[0] = '\0';
out_free:
    if (rc < 0)
        tls_cert_fini(out);
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

void tls_cert_fini(struct tls_cert *c)
{
    if (c->key_pem)
        explicit_bzero(c->key_pem, c->key_len);
    free(c->key_pem);
    free(c->cert_pem);
    c->key_pem = c->cert_pem = NULL;
    c->key_len = c->cert_len = 0;
}

/* ---- writing ---------------------------------------------------------------- */

/* One staged file: written and synced under tmp, not yet under its name. */
struct staged {
    const char *name;
    char tmp[64];
    bool made;
};

/* Write len bytes of p into a new file tmp in dirfd with exactly mode. */
static int stage_file(int dirfd, struct staged *s, const char *p, size_t len, mode_t mode)
{
    snprintf(s->tmp, sizeof(s->tmp), ".%s.%ld.tmp", s->name, (long)getpid());
    unlinkat(dirfd, s->tmp, 0); /* a crashed run's leftover: no live process has our pid */
    int fd = openat(dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    s->made = true;
    int rc = 0;
    if (fchmod(fd, mode) < 0)
        rc = -errno;
    while (rc == 0 && len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = -errno;
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    return rc;
}

/* Put a staged file under its name: rename (force) or link (no overwrite). */
static int commit_file(int dirfd, struct staged *s, bool force)
{
    if (force) {
        if (renameat(dirfd, s->tmp, dirfd, s->name) < 0)
            return -errno;
        s->made = false;
        return 0;
    }
    if (linkat(dirfd, s->tmp, dirfd, s->name, 0) < 0)
        return -errno;
    unlinkat(dirfd, s->tmp, 0);
    s->made = false;
    return 0;
}

/* Opens dir (made 0700 when missing) as a directory fd, or -errno. */
static int open_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(e));
        return -e;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open directory %s: %s", dir, strerror(e));
        return -e;
    }
    return fd;
}

static int exists_error(const char *dir, const char *name, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s/%s exists; not replacing it without --force", dir, name);
    return -EEXIST;
}

int tls_cert_write(const struct tls_cert *c, const char *dir, bool force, char *err, size_t errlen)
{
    int dirfd = open_dir(dir, err, errlen);
    if (dirfd < 0)
        return dirfd;
    struct staged key = {.name = KEY_FILE}, cert = {.name = CERT_FILE};
    struct stat st;
    int rc = 0;
    if (!force && fstatat(dirfd, KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
        rc = exists_error(dir, KEY_FILE, err, errlen);
    else if (!force && fstatat(dirfd, CERT_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
        rc = exists_error(dir, CERT_FILE, err, errlen);
    if (rc < 0)
        goto out_close_dir;
    struct staged *failed = &key;
    rc = stage_file(dirfd, &key, c->key_pem, c->key_len, 0600);
    if (rc == 0) {
        failed = &cert;
        rc = stage_file(dirfd, &cert, c->cert_pem, c->cert_len, 0644);
    }
    if (rc < 0) {
        snprintf(err, errlen, "cannot write %s/%s: %s", dir, failed->name, strerror(-rc));
        goto out_unlink_staged;
    }
    failed = &key;
    rc = commit_file(dirfd, &key, force);
    if (rc == 0) {
        failed = &cert;
        rc = commit_file(dirfd, &cert, force);
        if (rc < 0 && !force)
            unlinkat(dirfd, KEY_FILE, 0); /* ours, just linked: no half pair */
    }
    if (rc == -EEXIST)
        exists_error(dir, failed->name, err, errlen);
    else if (rc < 0)
        snprintf(err, errlen, "cannot put %s/%s in place: %s", dir, failed->name, strerror(-rc));
out_unlink_staged:
    if (key.made)
        unlinkat(dirfd, key.tmp, 0);
    if (cert.made)
        unlinkat(dirfd, cert.tmp, 0);
out_close_dir:
    close(dirfd);
    return rc;
}

/* ---- pins ------------------------------------------------------------------- */

int tls_pin_of_cert_file(const char *path, char out[TLS_PIN_TEXT], char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return -e;
    }
    ERR_clear_error();
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    int rc = x ? pin_of_x509(x, out) : -EINVAL;
    X509_free(x);
    ERR_clear_error();
    if (rc < 0)
        snprintf(err, errlen, "%s: no readable PEM certificate", path);
    return rc;
}
