/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wslink.c: the WebSocket link (wslink.h). Incoming frames are read in
 * place by proto/ws.c and their payload goes straight to
 * nghttp2_session_mem_recv(); outgoing bytes are framed into one queue
 * (a frame header, then the payload, masked with a fresh random key per
 * frame from a client, RFC 6455 section 5.3) that is written as the
 * socket takes it, so a partial write keeps its start where it was (as
 * tls_write() wants). Control frames go behind what is queued: a PONG
 * only when there is room (section 5.5.3 lets a peer answer the latest
 * PING only), our CLOSE always (room is kept for it). After our CLOSE
 * nothing more is framed. It must not write to a socket itself or call
 * back into the connection that owns it.
 */
#include "relay/wslink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/fcrypto.h"
#include "proto/http1.h"
#include "proto/ws.h"

#define WSL_DATA_MAX  (64u * 1024) /* payload per data frame */
#define WSL_CTL_ROOM  (2u * (WS_HDR_MAX + WS_CTRL_MAX))
#define WSL_CLOSE_MAX (WS_HDR_MAX + 2) /* our CLOSE: a header and a code */
#define WSL_OUT_CAP   (WSL_DATA_MAX + WS_HDR_MAX + WSL_CTL_ROOM)
#define WSL_FRAME_MAX (16ull << 20) /* a longer single frame is refused (1009) */
#define WSL_HEAD_MAX  8192          /* the server's 101 head, at most */

struct wslink {
    bool client;
    bool close_sent, close_rcvd, failed;
    struct ws_rx rx;
    uint8_t *out; /* queued bytes: out[off..len) */
    size_t off, len;
    uint8_t *keep; /* bytes behind the opening handshake, for wslink_start */
    size_t keep_len;
    char accept[32]; /* a client: the Sec-WebSocket-Accept expected */
    char why[80];    /* a client: what was wrong with the answer */
    char *head;      /* a client: the server's answer so far */
    size_t head_len;
    size_t scanned;
};

struct wslink *wslink_new(bool client)
{
    struct wslink *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    ws->out = malloc(WSL_OUT_CAP);
    if (!ws->out) {
        free(ws);
        return NULL;
    }
    ws->client = client;
    ws_rx_init(&ws->rx, !client, WSL_FRAME_MAX);
    return ws;
}

void wslink_free(struct wslink *ws)
{
    if (!ws)
        return;
    free(ws->out);
    free(ws->keep);
    free(ws->head);
    free(ws);
}

/* Room at the end of the queue (moved to the front when all is written). */
static size_t out_room(struct wslink *ws)
{
    if (ws->off == ws->len)
        ws->off = ws->len = 0;
    return WSL_OUT_CAP - ws->len;
}

int wslink_raw(struct wslink *ws, const void *p, size_t n)
{
    if (n > out_room(ws))
        return -ENOMEM;
    memcpy(ws->out + ws->len, p, n);
    ws->len += n;
    return 0;
}

int wslink_keep(struct wslink *ws, const uint8_t *p, size_t n)
{
    if (n == 0)
        return 0;
    uint8_t *k = realloc(ws->keep, ws->keep_len + n);
    if (!k)
        return -ENOMEM;
    memcpy(k + ws->keep_len, p, n);
    ws->keep = k;
    ws->keep_len += n;
    return 0;
}

int wslink_start(struct wslink *ws, nghttp2_session *s)
{
    int rc = WSLINK_OK;
    if (ws->keep_len)
        rc = wslink_recv(ws, s, ws->keep, ws->keep_len);
    free(ws->keep);
    ws->keep = NULL;
    ws->keep_len = 0;
    return rc;
}

/* A control frame behind what is queued; a client's masked. False when
 * there is no room beyond reserve bytes. */
static bool queue_control(struct wslink *ws, uint8_t op, const uint8_t *p, size_t n, size_t reserve)
{
    uint8_t key[4];
    if (ws->client)
        fcrypto_random(key, sizeof(key));
    size_t room = out_room(ws);
    if (room <= reserve)
        return false;
    room -= reserve;
    size_t k = ws_control_frame(ws->out + ws->len, room, op, p, n, ws->client ? key : NULL);
    ws->len += k;
    return k != 0;
}

void wslink_close(struct wslink *ws, uint16_t code)
{
    if (ws->close_sent)
        return;
    uint8_t p[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    /* The room kept behind data frames always holds it. */
    queue_control(ws, WS_OP_CLOSE, p, code == WS_CLOSE_NO_STATUS ? 0 : 2, 0);
    ws->close_sent = true;
}

/* A control frame has arrived. A WSLINK_*. */
static int on_control(struct wslink *ws, int op)
{
    if (op == WS_OP_PING) {
        if (!ws->close_sent) /* PONGs never take the room of our CLOSE */
            queue_control(ws, WS_OP_PONG, ws->rx.ctl, ws->rx.ctl_len, WSL_CLOSE_MAX);
        return WSLINK_OK;
    }
    if (op == WS_OP_CLOSE) {
        ws->close_rcvd = true;
        uint16_t code = ws_rx_close_code(&ws->rx);
        /* Section 5.5.1: echo the code. */
        wslink_close(ws, code == WS_CLOSE_NO_STATUS ? WS_CLOSE_NORMAL : code);
        return WSLINK_CLOSED;
    }
    return WSLINK_OK; /* a PONG: our h2 PINGs measure the RTT, not these */
}

int wslink_recv(struct wslink *ws, nghttp2_session *s, uint8_t *buf, size_t n)
{
    if (ws->failed)
        return WSLINK_BAD;
    if (ws->close_rcvd)
        return WSLINK_CLOSED;
    size_t off = 0;
    while (off < n) {
        size_t data;
        int op;
        ssize_t k = ws_rx_read(&ws->rx, buf + off, n - off, &data, &op);
        if (k < 0)
            break;
        if (data && nghttp2_session_mem_recv(s, buf + off, data) < 0) {
            ws->failed = true;
            return WSLINK_H2;
        }
        off += (size_t)k;
        int rc = op ? on_control(ws, op) : WSLINK_OK;
        if (rc != WSLINK_OK)
            return rc;
    }
    if (ws->rx.err) { /* maybe found behind the data of the last read */
        ws->failed = true;
        wslink_close(ws, (uint16_t)-ws->rx.err);
        return WSLINK_BAD;
    }
    return WSLINK_OK;
}

/* Write what is queued. 0 when all of it is out, -EAGAIN, or -errno. */
static ssize_t out_push(struct wslink *ws, wslink_write_fn wr, void *ctx)
{
    while (ws->off < ws->len) {
        ssize_t k = wr(ctx, ws->out + ws->off, ws->len - ws->off);
        if (k < 0)
            return k;
        if (k == 0)
            return -EPIPE;
        ws->off += (size_t)k;
    }
    ws->off = ws->len = 0;
    return 0;
}

ssize_t wslink_send(struct wslink *ws, const uint8_t *p, size_t n, wslink_write_fn wr, void *ctx)
{
    ssize_t rc = out_push(ws, wr, ctx);
    if (rc < 0 && rc != -EAGAIN)
        return rc;
    if (n == 0)
        return rc;
    if (ws->close_sent)
        return (ssize_t)n; /* nothing may follow a CLOSE (section 5.5.1) */
    if (rc == -EAGAIN)
        return -EAGAIN;
    /* The queue is empty: one frame at its start. */
    size_t take = n < WSL_DATA_MAX ? n : WSL_DATA_MAX;
    uint8_t key[4];
    if (ws->client)
        fcrypto_random(key, sizeof(key));
    size_t h = ws_frame_header(ws->out, WS_OP_BINARY, take, ws->client ? key : NULL);
    memcpy(ws->out + h, p, take);
    if (ws->client)
        ws_mask(ws->out + h, take, key, 0);
    ws->len = h + take;
    rc = out_push(ws, wr, ctx);
    if (rc < 0 && rc != -EAGAIN)
        return rc;
    return (ssize_t)take;
}

bool wslink_pending(const struct wslink *ws)
{
    return ws->off < ws->len;
}

/* ---- the client's opening handshake ------------------------------------ */

int wslink_accept(const char *key, char out[32])
{
    uint8_t sha[FCRYPTO_SHA1_LEN];
    if (fcrypto_sha1(sha, key, strlen(key), WS_GUID, sizeof(WS_GUID) - 1))
        return -1;
    return fcrypto_base64_encode(out, 32, sha, sizeof(sha)) == WS_ACCEPT_LEN ? 0 : -1;
}

int wslink_client_begin(struct wslink *ws, const char *host, const char *path)
{
    uint8_t nonce[16];
    char key[32], req[1024];
    fcrypto_random(nonce, sizeof(nonce));
    if (fcrypto_base64_encode(key, sizeof(key), nonce, sizeof(nonce)) != WS_KEY_LEN ||
        wslink_accept(key, ws->accept))
        return -ENOMEM;
    size_t n = ws_write_request(req, sizeof(req), host, path, key);
    if (!n)
        return -EINVAL;
    ws->head = malloc(WSL_HEAD_MAX);
    if (!ws->head)
        return -ENOMEM;
    return wslink_raw(ws, req, n);
}

/* The head is complete (hlen bytes): is it our 101? */
static int client_head(struct wslink *ws, size_t hlen, const char **why)
{
    struct http1_msg *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    int status = 0, rc = WS_E_ACCEPT;
    if (http1_parse_response((const uint8_t *)ws->head, hlen, m) == 0) {
        status = m->status;
        rc = ws_check_response(m, ws->accept);
    }
    free(m);
    if (rc) {
        if (rc == WS_E_STATUS && status == 404)
            snprintf(ws->why, sizeof(ws->why), "the WebSocket path was not found (404)");
        else if (rc == WS_E_STATUS)
            snprintf(ws->why, sizeof(ws->why), "the server answered %d, not 101", status);
        else
            snprintf(ws->why, sizeof(ws->why), "not a valid WebSocket 101 response");
        *why = ws->why;
        return -EPROTO;
    }
    rc = wslink_keep(ws, (const uint8_t *)ws->head + hlen, ws->head_len - hlen);
    free(ws->head);
    ws->head = NULL;
    return rc ? rc : 1;
}

int wslink_client_read(struct wslink *ws, wslink_read_fn rd, void *ctx, const char **why)
{
    for (;;) {
        if (ws->head_len == WSL_HEAD_MAX) {
            *why = "the WebSocket response head is too large";
            return -EPROTO;
        }
        ssize_t n = rd(ctx, (uint8_t *)ws->head + ws->head_len, WSL_HEAD_MAX - ws->head_len);
        if (n == -EAGAIN)
            return 0;
        if (n <= 0) {
            *why = "the connection ended during the WebSocket handshake";
            return n == 0 ? -ECONNRESET : (int)n;
        }
        ws->head_len += (size_t)n;
        ssize_t end =
            http1_head_end((const uint8_t *)ws->head, ws->head_len, WSL_HEAD_MAX, &ws->scanned);
        if (end < 0) {
            *why = "not a valid WebSocket 101 response";
            return -EPROTO;
        }
        if (end > 0)
            return client_head(ws, (size_t)end, why);
    }
}
