/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tls.h: TLS 1.3 (RFC 8446) over a nonblocking socket, with OpenSSL 3. The
 * only room that includes OpenSSL's headers.
 *
 * Two objects. A context (struct tls_ctx) is the configuration of one side:
 * a client context per HTTPS outbound (how the server's certificate is
 * checked: a pin, a CA file or the system's CAs, and the ALPN offer), a
 * server context per HTTPS inbound (certificate, key and the ALPN names it
 * accepts). Contexts are immutable once made and may be shared by threads.
 * A session (struct tls) is one connection over a socket the caller owns,
 * touched by one thread.
 *
 * Every session call is nonblocking and is driven by the caller's event
 * loop: it returns -EAGAIN with *want set to TLS_WANT_READ or
 * TLS_WANT_WRITE, the readiness of the socket it waits for. TLS turns the
 * directions around: a read may have to write (a KeyUpdate reply) and a
 * write may have to read. And decrypted bytes may wait inside OpenSSL that
 * the socket will never announce again (tls_pending()): a caller on
 * edge-triggered epoll asks before it stops reading.
 *
 * It knows no proxy protocol, never logs and never touches the fd beyond
 * read, write and shutdown(SHUT_WR): errors are handed back as -errno and a
 * sentence (tls_error()) the caller logs.
 */
#ifndef FERRY_TLS_TLS_H
#define FERRY_TLS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a call that returned -EAGAIN waits for (the same bits as the relay's
 * SIDE_RD and SIDE_WR). */
enum {
    TLS_WANT_READ = 1u << 0,
    TLS_WANT_WRITE = 1u << 1,
};

#define TLS_PIN_LEN   32  /* SHA-256 */
#define TLS_PIN_TEXT  53  /* "sha256//" + 44 characters of base64 + NUL */
#define TLS_ERROR_MAX 256 /* a session's error sentence, NUL included */

struct tls_ctx;
struct tls;

/* How a client checks its server. With pin, the server's certificate is
 * accepted when the SHA-256 of its SubjectPublicKeyInfo equals pin, and the
 * chain is not validated (a self-signed certificate is fine; curl's
 * --proxy-pinnedpubkey). Without one, the chain must lead to a CA of
 * ca_file (PEM; NULL: the system's CAs) and the certificate must name the
 * host given to tls_client_new(). */
struct tls_client_conf {
    const uint8_t *pin; /* TLS_PIN_LEN bytes, or NULL */
    const char *ca_file;
    const char *alpn; /* offered protocol names, comma separated ("http/1.1"); NULL: none */
};

/* A server: certificate chain and key (PEM files), and the ALPN names it
 * accepts in its order of preference (comma separated; NULL: no ALPN; a
 * client offering none of them is still served, without ALPN, unless
 * alpn_strict: then the handshake fails with no_application_protocol, as
 * RFC 7301 section 3.2 says; a client offering no ALPN at all is always
 * served). tls12: accept TLS 1.2 too. kTLS (SSL_OP_ENABLE_KTLS) is asked
 * for; OpenSSL falls back to user space where the kernel lacks it. */
struct tls_server_conf {
    const char *cert_file;
    const char *key_file;
    const char *alpn;
    bool alpn_strict;
    bool tls12;
    /* Session tickets sealed with the process's key ring (ticket.h), valid
     * for two rotations; 0: no tickets (every connection a full handshake). */
    uint32_t ticket_rotation_ms;
};

/* Make a client context (TLS 1.3 only). NULL with a sentence in err (a
 * missing or unreadable ca_file, no memory). */
struct tls_ctx *tls_client_ctx_new(const struct tls_client_conf *conf, char *err, size_t errlen);
/* Make a server context (TLS 1.3, or 1.2 with conf->tls12). NULL with a sentence in err (a
 * certificate or key that cannot be read, or that do not match). */
struct tls_ctx *tls_server_ctx_new(const struct tls_server_conf *conf, char *err, size_t errlen);
/* Drop a context; sessions made from it keep their own reference. NULL is a
 * no-op. */
void tls_ctx_free(struct tls_ctx *ctx);

/* A client session on the connected nonblocking socket fd (the caller's:
 * never closed here). host is the server's name or address literal as
 * configured: a name is sent as SNI and, without a pin, the certificate
 * must match it (an address literal: its IP SANs). NULL: no memory. */
struct tls *tls_client_new(struct tls_ctx *ctx, int fd, const char *host);
/* A server session on an accepted nonblocking socket fd. NULL: no memory. */
struct tls *tls_server_new(struct tls_ctx *ctx, int fd);
/* Free a session without a word on the wire (send close_notify first with
 * tls_shutdown_wr() when the peer deserves it). NULL is a no-op. */
void tls_free(struct tls *t);

/* Drive the handshake. 0 once done (the peer verified), -EAGAIN with *want,
 * or an error: -EPROTO (the handshake or the verification failed),
 * -ECONNRESET (the peer closed), another -errno; tls_error() says why. */
int tls_handshake(struct tls *t, uint8_t *want);
/* Read decrypted bytes (handshake done). > 0 bytes, 0 at the peer's
 * close_notify (EOF), -EAGAIN with *want, or an error: -ECONNRESET when the
 * connection ended without close_notify (a truncation), -EPROTO, -errno. */
ssize_t tls_read(struct tls *t, void *p, size_t len, uint8_t *want);
/* The same as tls_read() without taking the bytes: the next read or peek
 * returns them again (a caller that must not read past a reply). */
ssize_t tls_peek(struct tls *t, void *p, size_t len, uint8_t *want);
/* Write bytes (handshake done): > 0 bytes taken (possibly fewer than len:
 * one record at a time), -EAGAIN with *want, or an error. After -EAGAIN the
 * next call must offer at least the bytes offered before (the same start,
 * at least as long): OpenSSL holds the record it began. */
ssize_t tls_write(struct tls *t, const void *p, size_t len, uint8_t *want);
/* End our sending side: close_notify, then shutdown(SHUT_WR) of the socket;
 * reading goes on. 0 once both are out, -EAGAIN with *want, or -errno. */
int tls_shutdown_wr(struct tls *t, uint8_t *want);
/* Decrypted or unprocessed bytes are held in OpenSSL: tls_read() may return
 * data without the socket becoming readable again. */
bool tls_pending(const struct tls *t);

/* The sentence explaining the last error ("certificate pin mismatch: got
 * sha256//..., expected sha256//...", "certificate verify failed: ..."),
 * "" when none. Valid until the session is freed. */
const char *tls_error(const struct tls *t);
/* Keep the session's record buffers between reads and writes, instead of
 * giving them back each time (the contexts' default, for many mostly idle
 * connections): for a long-lived busy one, such as an HTTP/2 connection
 * carrying many streams, where it saves two allocations per record. */
void tls_keep_buffers(struct tls *t);

/* Routes OpenSSL's allocations through the per-thread block cache
 * (util/blkcache.h). Must come before any other OpenSSL call in the process
 * (main() calls it first); false, and OpenSSL keeps libc's malloc, when
 * OpenSSL has already allocated. */
bool tls_mem_init(void);
/* The protocol ALPN settled on ("" when none), after the handshake. */
void tls_alpn(const struct tls *t, char *out, size_t outlen);
/* "sha256//BASE64" of the peer certificate's SubjectPublicKeyInfo, after
 * the handshake; 0, or -ENOENT without a peer certificate. */
int tls_peer_pin(const struct tls *t, char out[TLS_PIN_TEXT]);
/* "sha256//BASE64" of the SubjectPublicKeyInfo of a server context's
 * certificate (what a client pins); 0, or -ENOENT. */
int tls_server_pin(const struct tls_ctx *ctx, char out[TLS_PIN_TEXT]);
/* Whether the kernel carries the session's records (kTLS) for sending and
 * receiving, after the handshake. */
bool tls_ktls(const struct tls *t);

/* "sha256//BASE64" of pin. */
void tls_pin_text(const uint8_t pin[TLS_PIN_LEN], char out[TLS_PIN_TEXT]);

#endif
