/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ws.c: WebSocket framing and handshake checks (proto/ws.h, RFC 6455).
 * The reader is a byte-at-a-time state machine for the header and a bulk
 * copy for the payload, so it resumes at any cut of the stream; a data
 * payload is unmasked while it is moved to the front of the caller's
 * buffer (the output never overtakes the input). It must not do I/O,
 * allocate or log.
 */
#include "proto/ws.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proto/http1.h"

void ws_rx_init(struct ws_rx *r, bool server, uint64_t max_frame)
{
    memset(r, 0, sizeof(*r));
    r->server = server;
    r->max_frame = max_frame;
}

static bool op_known(uint8_t op)
{
    return op == WS_OP_CONT || op == WS_OP_TEXT || op == WS_OP_BINARY || op == WS_OP_CLOSE ||
           op == WS_OP_PING || op == WS_OP_PONG;
}

/* The first two header bytes are in: check them, and learn the header's
 * full size. 0 or a negated close code. */
static int hdr_first(struct ws_rx *r)
{
    uint8_t b0 = r->hdr[0], b1 = r->hdr[1];
    bool fin = b0 & 0x80;
    r->op = b0 & 0x0f;
    r->masked = b1 & 0x80;
    uint8_t len7 = b1 & 0x7f;
    if (b0 & 0x70 || !op_known(r->op)) /* 5.2: no extension was negotiated */
        return -WS_CLOSE_PROTOCOL;
    if (r->masked != r->server) /* 5.1: clients mask, servers do not */
        return -WS_CLOSE_PROTOCOL;
    if (r->op >= WS_OP_CLOSE) {
        if (!fin || len7 > WS_CTRL_MAX) /* 5.5 */
            return -WS_CLOSE_PROTOCOL;
    } else if (r->op == WS_OP_CONT) {
        if (!r->in_msg) /* 5.4: a continuation of nothing */
            return -WS_CLOSE_PROTOCOL;
        r->in_msg = !fin;
    } else {
        if (r->in_msg) /* 5.4: a new message inside a fragmented one */
            return -WS_CLOSE_PROTOCOL;
        if (r->op == WS_OP_TEXT) /* the tunnel's bytes are binary */
            return -WS_CLOSE_UNSUPPORTED;
        r->in_msg = !fin;
    }
    r->hneed = (uint8_t)(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + (r->masked ? 4 : 0));
    return 0;
}

/* The whole header is in: the payload length (minimal encoding, 5.2) and
 * the mask key. 0 or a negated close code. */
static int hdr_done(struct ws_rx *r)
{
    uint8_t len7 = r->hdr[1] & 0x7f;
    uint64_t len = len7;
    size_t at = 2;
    if (len7 == 126) {
        len = (uint64_t)r->hdr[2] << 8 | r->hdr[3];
        at = 4;
        if (len < 126)
            return -WS_CLOSE_PROTOCOL;
    } else if (len7 == 127) {
        len = 0;
        for (size_t i = 0; i < 8; i++)
            len = len << 8 | r->hdr[2 + i];
        at = 10;
        if (len >> 63 || len <= 0xffff)
            return -WS_CLOSE_PROTOCOL;
    }
    if (len > r->max_frame)
        return -WS_CLOSE_TOO_BIG;
    if (r->masked)
        memcpy(r->mask, r->hdr + at, 4);
    r->mpos = 0;
    r->left = len;
    r->ctl_len = 0;
    r->payload = true;
    return 0;
}

/* Is a close frame's payload acceptable (7.1.5, 7.4)? */
static bool close_ok(const struct ws_rx *r)
{
    if (r->ctl_len == 0)
        return true;
    if (r->ctl_len == 1)
        return false;
    uint16_t code = ws_rx_close_code(r);
    if (code >= 3000 && code <= 4999)
        return true;
    return code >= 1000 && code <= 1011 && code != 1004 && code != 1005 && code != 1006;
}

/* Payload bytes of the current frame: control payloads are kept, data
 * payloads unmasked to p + o. Returns the bytes taken. */
static size_t take_payload(struct ws_rx *r, uint8_t *p, size_t i, size_t len, size_t *o)
{
    size_t n = len - i;
    if (n > r->left)
        n = (size_t)r->left;
    if (r->op >= WS_OP_CLOSE) {
        memcpy(r->ctl + r->ctl_len, p + i, n);
        if (r->masked)
            ws_mask(r->ctl + r->ctl_len, n, r->mask, r->mpos);
        r->ctl_len = (uint8_t)(r->ctl_len + n);
    } else {
        if (*o != i)
            memmove(p + *o, p + i, n);
        if (r->masked)
            ws_mask(p + *o, n, r->mask, r->mpos);
        *o += n;
    }
    r->mpos = (uint8_t)((r->mpos + n) & 3);
    r->left -= n;
    return n;
}

ssize_t ws_rx_read(struct ws_rx *r, uint8_t *p, size_t len, size_t *data, int *ctl)
{
    size_t i = 0, o = 0;
    *ctl = 0;
    *data = 0;
    if (r->err)
        return r->err;
    while (i < len) {
        if (!r->payload) {
            r->hdr[r->hlen++] = p[i++];
            int rc = 0;
            if (r->hlen == 2)
                rc = hdr_first(r);
            if (rc == 0 && r->hlen >= 2 && r->hlen == r->hneed)
                rc = hdr_done(r);
            if (rc) {
                /* Data before the error is handed on first; the error
                 * comes with the next call (sticky). */
                r->err = rc;
                if (o == 0)
                    return rc;
                break;
            }
            if (!r->payload || r->left)
                continue;
        } else {
            i += take_payload(r, p, i, len, &o);
            if (r->left)
                continue;
        }
        /* The frame is complete. */
        r->payload = false;
        r->hlen = r->hneed = 0;
        if (r->op >= WS_OP_CLOSE) {
            if (r->op == WS_OP_CLOSE && !close_ok(r)) {
                r->err = -WS_CLOSE_PROTOCOL;
                if (o == 0)
                    return r->err;
                break;
            }
            *ctl = r->op;
            break;
        }
    }
    *data = o;
    return (ssize_t)i;
}

uint16_t ws_rx_close_code(const struct ws_rx *r)
{
    if (r->ctl_len < 2)
        return WS_CLOSE_NO_STATUS;
    return (uint16_t)(r->ctl[0] << 8 | r->ctl[1]);
}

size_t ws_frame_header(uint8_t out[WS_HDR_MAX], uint8_t op, uint64_t len, const uint8_t *mask)
{
    size_t n = 2;
    out[0] = (uint8_t)(0x80 | (op & 0x0f));
    uint8_t mbit = mask ? 0x80 : 0;
    if (len < 126) {
        out[1] = (uint8_t)(mbit | len);
    } else if (len <= 0xffff) {
        out[1] = mbit | 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        n = 4;
    } else {
        out[1] = mbit | 127;
        for (size_t i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    if (mask) {
        memcpy(out + n, mask, 4);
        n += 4;
    }
    return n;
}

void ws_mask(uint8_t *p, size_t n, const uint8_t mask[4], size_t pos)
{
    for (size_t i = 0; i < n; i++)
        p[i] ^= mask[(pos + i) & 3];
}

size_t ws_control_frame(uint8_t *out, size_t cap, uint8_t op, const uint8_t *payload, size_t n,
                        const uint8_t *mask)
{
    uint8_t hdr[WS_HDR_MAX];
    if (n > WS_CTRL_MAX)
        return 0;
    size_t h = ws_frame_header(hdr, op, n, mask);
    if (h + n > cap)
        return 0;
    memcpy(out, hdr, h);
    if (n)
        memcpy(out + h, payload, n);
    if (mask)
        ws_mask(out + h, n, mask, 0);
    return h + n;
}

/* Is v (vlen bytes) the base64 of 16 bytes (22 characters, "==")? */
static bool key_ok(const char *v, size_t vlen)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (vlen != WS_KEY_LEN || v[22] != '=' || v[23] != '=')
        return false;
    for (size_t i = 0; i < 22; i++)
        if (!memchr(b64, v[i], 64))
            return false;
    /* The last character carries 2 bits: its 4 low bits are zero. */
    return ((const char *)memchr(b64, v[21], 64) - b64) % 16 == 0;
}

static bool field_is(const struct http1_msg *m, const char *name, const char *token)
{
    const struct http1_header *h = http1_find(m, name);
    return h && http1_has_token(h->value, h->vlen, token);
}

int ws_check_request(const struct http1_msg *m, char key[WS_KEY_LEN + 1])
{
    if (!field_is(m, "upgrade", "websocket"))
        return WS_E_NOT_UPGRADE;
    if (m->mlen != 3 || memcmp(m->method, "GET", 3) != 0 || m->minor < 1 ||
        !field_is(m, "connection", "upgrade") || m->has_cl || m->has_te)
        return WS_E_BAD;
    const struct http1_header *k = http1_find(m, "sec-websocket-key");
    if (!k || !key_ok(k->value, k->vlen))
        return WS_E_BAD;
    const struct http1_header *v = http1_find(m, "sec-websocket-version");
    if (!v || v->vlen != 2 || memcmp(v->value, "13", 2) != 0)
        return WS_E_VERSION;
    memcpy(key, k->value, WS_KEY_LEN);
    key[WS_KEY_LEN] = '\0';
    return 0;
}

int ws_check_response(const struct http1_msg *m, const char *accept)
{
    if (m->status != 101)
        return WS_E_STATUS;
    const struct http1_header *a = http1_find(m, "sec-websocket-accept");
    if (!field_is(m, "upgrade", "websocket") || !field_is(m, "connection", "upgrade") || !a ||
        a->vlen != strlen(accept) || memcmp(a->value, accept, a->vlen) != 0)
        return WS_E_ACCEPT;
    /* No extension or subprotocol was offered: none may be chosen (4.1). */
    if (http1_find(m, "sec-websocket-extensions") || http1_find(m, "sec-websocket-protocol"))
        return WS_E_ACCEPT;
    return 0;
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || *s == 0x7f)
            return false;
    return true;
}

size_t ws_write_request(char *out, size_t cap, const char *host, const char *path, const char *key)
{
    if (!printable(host) || !printable(path) || !printable(key) || path[0] != '/')
        return 0;
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     path, host, key);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t ws_write_response(char *out, size_t cap, const char *accept)
{
    int n = snprintf(out, cap,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
                     accept);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
