/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * front_tls.c: the row a session on a tls:// listener starts with. It
 * runs the server side of the TLS handshake (RFC 8446, tls/) over the
 * client socket within [tls] handshake_timeout, then leaves c->cli_tls in
 * place (every later read and write of the client goes through it:
 * conn_cli_recv() and friends in conn.c) and hands the session to the
 * HTTP/2 connection when ALPN settled on "h2" (h2conn.c), else to the
 * sniff, which picks SOCKS5, SOCKS4 or HTTP/1 by the first decrypted byte
 * as on a plain port. A client whose first byte is not a TLS handshake
 * record (0x16) is closed at once and counted as an unknown protocol. A
 * handshake costs CPU before any authentication, so the handshakes in
 * progress per client address are bounded ([tls] per_ip_handshakes). Behind
 * a load balancer the PROXY header row (front.c) runs first and hands over
 * with the address it gave, the ClientHello untouched in the socket. It
 * reads nothing after the handshake.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#include "config/config.h"
#include "core/sock.h"
#include "crypto/fcrypto.h"
#include "log/log.h"
#include "relay/front.h"
#include "relay/h2conn.h"
#include "relay/session.h"
#include "tls/tls.h"

/* Handshakes in progress per client address, shared by every worker: a
 * fixed table of counters indexed by a keyed hash of the address (SipHash,
 * a key drawn at the first use), so memory is bounded whatever the number
 * of addresses. Addresses that share a slot share its budget; with 4096
 * slots and a secret key nobody can aim at another's slot. */
#define HS_SLOTS 4096
static _Atomic uint32_t hs_count[HS_SLOTS];
static uint8_t hs_key[FCRYPTO_SHORTKEY_LEN];
static pthread_once_t hs_once = PTHREAD_ONCE_INIT;

static void hs_key_init(void)
{
    fcrypto_random(hs_key, sizeof(hs_key));
}

static _Atomic uint32_t *hs_slot(const struct addr *a)
{
    pthread_once(&hs_once, hs_key_init);
    uint8_t k[17];
    k[0] = a->family;
    memcpy(k + 1, a->ip, sizeof(a->ip));
    return &hs_count[fcrypto_hash64(hs_key, k, sizeof(k)) % HS_SLOTS];
}

static void front_tls_release(struct conn *c)
{
    if (c->hs_held) {
        atomic_fetch_sub_explicit(hs_slot(&c->client), 1, memory_order_relaxed);
        c->hs_held = false;
    }
}

static void front_tls_end(struct conn *c)
{
    front_tls_release(c);
    conn_access_log(c, "-", "-");
}

/* The handshake is done: say once whether the kernel carries the records,
 * then the first decrypted byte picks the protocol. */
static void front_tls_done(struct conn *c)
{
    static atomic_bool ktls_said;
    front_tls_release(c);
    c->cli_tls_up = true;
    if (log_enabled(LOG_DEBUG) && !atomic_exchange(&ktls_said, true))
        log_debug("tls: kTLS %s", tls_ktls(c->cli_tls)
                                      ? "carries the records"
                                      : "is not available (the kernel lacks CONFIG_TLS or the "
                                        "cipher); OpenSSL encrypts in user space");
    char alpn[16];
    tls_alpn(c->cli_tls, alpn, sizeof(alpn));
    if (strcmp(alpn, "h2") == 0) { /* HTTP/2 (RFC 9113 3.2): no sniff */
        h2conn_begin(c);
        return;
    }
    loop_timer_arm(&c->w->loop, &c->timer, conn_cfg(c)->handshake_timeout_ms);
    /* Bytes that came with the handshake may wait inside OpenSSL: read. */
    c->cli_ev |= SIDE_RD;
    conn_set_front(c, &front_sniff);
    front_sniff.start(c);
}

/* Not TLS at all (a plaintext client on a TLS port): closed at once. */
static bool front_tls_plaintext(struct conn *c)
{
    uint8_t first;
    ssize_t n = recv(c->cli.fd, &first, 1, MSG_PEEK);
    if (n < 0 && errno == EAGAIN) {
        c->cli_ev &= (uint8_t)~SIDE_RD;
        return false;
    }
    if (n != 1) {
        conn_close(c, "client-closed");
        return true;
    }
    if (first == 0x16) { /* a handshake record (RFC 8446 section 5.1) */
        c->cli_tls_seen = true;
        return false;
    }
    char a[ADDR_STRLEN];
    log_debug("tls: %s sent plaintext (first byte 0x%02x) to a TLS port: closed",
              addr_format(&c->client, a, sizeof(a)), first);
    conn_bad_handshake(c);
    stat_add(&c->w->stats.unknown_protocol, 1);
    sock_abort(c->cli.fd);
    conn_close(c, "tls-plaintext");
    return true;
}

static void front_tls_drive(struct conn *c, uint32_t up_events)
{
    (void)up_events;
    if (!c->cli_tls_seen) {
        if (!(c->cli_ev & SIDE_RD) || front_tls_plaintext(c) || !c->cli_tls_seen)
            return;
    }
    uint8_t want = TLS_WANT_READ;
    int rc = tls_handshake(c->cli_tls, &want);
    if (rc == -EAGAIN) {
        c->cli_ev &= (uint8_t)~want;
        return;
    }
    if (rc < 0) {
        char a[ADDR_STRLEN];
        log_debug("tls: handshake with %s failed: %s", addr_format(&c->client, a, sizeof(a)),
                  tls_error(c->cli_tls));
        conn_bad_handshake(c);
        conn_close_err(c, "tls-handshake", rc);
        return;
    }
    front_tls_done(c);
}

/* At accept: the per-address handshake budget, the TLS state, and the
 * handshake's own deadline. */
static void front_tls_start(struct conn *c)
{
    const struct config *cfg = conn_cfg(c);
    uint32_t max = cfg->tls.per_ip_handshakes;
    _Atomic uint32_t *slot = hs_slot(&c->client);
    if (max && atomic_fetch_add_explicit(slot, 1, memory_order_relaxed) >= max) {
        atomic_fetch_sub_explicit(slot, 1, memory_order_relaxed);
        conn_set_outcome(c, OUT_LIMIT);
        sock_abort(c->cli.fd);
        conn_close(c, "tls-handshake-limit");
        return;
    }
    c->hs_held = max != 0;
    c->cli_tls = cfg->tls.ctx ? tls_server_new(cfg->tls.ctx, c->cli.fd) : NULL;
    if (!c->cli_tls) {
        conn_close_err(c, "no-memory", -ENOMEM);
        return;
    }
    loop_timer_arm(&c->w->loop, &c->timer, cfg->tls.handshake_ms);
    /* Handed over from a PROXY header with the ClientHello already queued:
     * no new edge will report it. */
    if (c->cli_ev & SIDE_RD)
        front_tls_drive(c, 0);
}

static void front_tls_timeout(struct conn *c)
{
    conn_bad_handshake(c);
    conn_close(c, "tls-handshake-timeout");
}

const struct front_ops front_tls = {
    .name = "tls",
    .sp = SP_NONE,
    .start = front_tls_start,
    .drive = front_tls_drive,
    .timeout = front_tls_timeout,
    .end = front_tls_end,
};
