/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ws.h: the WebSocket protocol (RFC 6455) as ferry's tunnel carries an
 * HTTP/2 session in it: the opening handshake's checks and texts (section
 * 4) and the base framing (section 5), read in place and written. Pure
 * functions over bytes: no I/O, no allocation, no logging, no globals. The
 * Sec-WebSocket-Accept value (SHA-1 and base64) is computed by the caller
 * (crypto/fcrypto.h); this room only checks and places it.
 *
 * The frame reader enforces the rules of section 5: a server accepts only
 * masked frames and a client only unmasked ones (5.1), no RSV bit without
 * an extension (5.2), no unknown opcode, control frames of at most 125
 * bytes and never fragmented (5.5), continuation frames only inside a
 * fragmented message and no new message inside one (5.4), the minimal
 * length encoding and no length with the top bit set (5.2), and a close
 * frame's code (7.4). Text messages are refused (1003): the tunnel's
 * bytes are binary. Messages are a byte stream here: a data frame's
 * payload is handed on as it arrives, so a message's size costs nothing;
 * a single frame longer than the reader's max_frame is refused (1009).
 */
#ifndef FERRY_PROTO_WS_H
#define FERRY_PROTO_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct http1_msg;

#define WS_HDR_MAX    14 /* 2 + 8 (64-bit length) + 4 (mask key) */
#define WS_CTRL_MAX   125
#define WS_KEY_LEN    24 /* base64 of 16 bytes (section 4.1) */
#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 (section 4.2.2) */
/* Section 1.3: appended to the key before the SHA-1. */
#define WS_GUID       "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

enum ws_opcode {
    WS_OP_CONT = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xa,
};

/* Close codes (section 7.4.1); the reader returns their negation. */
enum ws_close {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_GOING_AWAY = 1001,
    WS_CLOSE_PROTOCOL = 1002,
    WS_CLOSE_UNSUPPORTED = 1003,
    WS_CLOSE_NO_STATUS = 1005, /* never on the wire: a close frame without a code */
    WS_CLOSE_TOO_BIG = 1009,
    WS_CLOSE_INTERNAL = 1011,
};

/* The opening handshake's verdicts. */
enum ws_hs_error {
    WS_E_NOT_UPGRADE = -1, /* not a WebSocket upgrade at all */
    WS_E_BAD = -2,         /* an upgrade, but malformed (400) */
    WS_E_VERSION = -3,     /* not version 13 (426 with Sec-WebSocket-Version: 13) */
    WS_E_STATUS = -4,      /* a response other than 101 */
    WS_E_ACCEPT = -5,      /* a 101 whose fields or Sec-WebSocket-Accept do not match */
};

/* A frame reader's state: caller storage, zeroed by ws_rx_init(). */
struct ws_rx {
    bool server;         /* frames must be masked (we are the server) */
    bool payload;        /* inside a frame's payload */
    bool in_msg;         /* a fragmented data message waits for its continuation */
    bool masked;         /* the current frame is */
    uint8_t op;          /* the current frame's opcode */
    uint8_t hlen, hneed; /* header bytes gathered / its full size (0: not known yet) */
    uint8_t hdr[WS_HDR_MAX];
    uint8_t mask[4];
    uint8_t mpos;       /* the mask's position for the next payload byte */
    uint64_t left;      /* payload bytes of the current frame still to come */
    uint64_t max_frame; /* a longer frame is refused with 1009 */
    int err;            /* a negated close code once the stream is broken (sticky) */
    uint8_t ctl_len;    /* a control frame's payload so far */
    uint8_t ctl[WS_CTRL_MAX];
};

/* Start a reader: server true for frames a client sent (masked). */
void ws_rx_init(struct ws_rx *r, bool server, uint64_t max_frame);

/* Read the frames in p[0..len) (more of the stream later: resumable at any
 * byte). Data frames' payloads are unmasked and moved to the front of p:
 * p[0..*data) afterwards. Stops behind a complete control frame and says
 * so in *ctl (its opcode; 0: none), its payload in r->ctl[0..r->ctl_len).
 * Returns the bytes consumed (> 0 when len > 0; the caller calls again
 * with the rest), or the negated close code the peer must be sent
 * (-WS_CLOSE_PROTOCOL, -WS_CLOSE_UNSUPPORTED, -WS_CLOSE_TOO_BIG). Data
 * that came before an error in the same bytes is returned first, and the
 * error with the next call (and every later one), so the bytes a reader
 * hands on do not depend on how the stream was cut. */
ssize_t ws_rx_read(struct ws_rx *r, uint8_t *p, size_t len, size_t *data, int *ctl);
/* A close frame's code (valid after ws_rx_read() reported WS_OP_CLOSE):
 * WS_CLOSE_NO_STATUS when it had none. */
uint16_t ws_rx_close_code(const struct ws_rx *r);

/* A final frame's header for len payload bytes with opcode op, masked
 * with mask[4] (a client's frame) or not (mask NULL). Returns its size
 * (2 to WS_HDR_MAX). */
size_t ws_frame_header(uint8_t out[WS_HDR_MAX], uint8_t op, uint64_t len, const uint8_t *mask);
/* XOR p[0..n) with the mask key, starting at key position pos (0..3). */
void ws_mask(uint8_t *p, size_t n, const uint8_t mask[4], size_t pos);
/* A whole control frame (close: payload is the code and reason) into out:
 * its size, or 0 if it does not fit in cap or n > WS_CTRL_MAX. */
size_t ws_control_frame(uint8_t *out, size_t cap, uint8_t op, const uint8_t *payload, size_t n,
                        const uint8_t *mask);

/* Is the request m a version-13 WebSocket opening handshake (section
 * 4.2.1: GET, HTTP/1.1, Upgrade: websocket, Connection: upgrade, a
 * Sec-WebSocket-Key of 16 bytes in base64)? 0 with the key copied into
 * key (NUL-terminated), or a WS_E_* code. */
int ws_check_request(const struct http1_msg *m, char key[WS_KEY_LEN + 1]);
/* Is the response m the server's 101 for our key (section 4.1: Upgrade,
 * Connection and Sec-WebSocket-Accept equal to accept)? 0 or a WS_E_*. */
int ws_check_response(const struct http1_msg *m, const char *accept);
/* The client's request for path at host (the Host field's value, with a
 * port when not the default) with key, into out: its length, or 0 when it
 * does not fit or a value holds a control character. */
size_t ws_write_request(char *out, size_t cap, const char *host, const char *path, const char *key);
/* The server's 101 with accept: its length, or 0 when it does not fit. */
size_t ws_write_response(char *out, size_t cap, const char *accept);

#endif
