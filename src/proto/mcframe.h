/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcframe.h: the Minecraft Java frames edge mode reads and writes after
 * the first message (docs/edge.md "Minecraft status at the edge"): any
 * frame's id and body, the status exchange (a query to a backend, its
 * Status Response, the client's Status Request and Ping, the Pong), the
 * legacy ping's kick reply, a handshake with its address replaced, and the
 * player counts of a status JSON. Pure: no I/O, no allocation, no logging;
 * util only (and mcsniff.h's VarInt). The first message itself is
 * mcsniff.h's.
 *
 * Status exchange (protocol >= 1.7): client Handshake (intent 1), then
 * Status Request (id 0, empty); server Status Response (id 0, a String of
 * JSON); client Ping (id 1, 8 bytes); server Pong (id 1, the same 8
 * bytes).
 */
#ifndef FERRY_PROTO_MCFRAME_H
#define FERRY_PROTO_MCFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/mcsniff.h"

#define MC_STATUS_JSON_MAX (32 * 1024) /* the most ferry keeps of a status JSON */

/* One frame at buf[0..len), its length VarInt included, of at most max
 * bytes. Returns 1 with *id, the body (after the id) and the frame's
 * length; 0 when more bytes are needed; MC_E_VARINT, MC_E_FRAME (length 0
 * or an id that does not fit) or MC_E_TOO_BIG. */
int mc_frame(const uint8_t *buf, size_t len, size_t max, uint32_t *id, size_t *body_off,
             size_t *body_len, size_t *frame_len);

/* A VarInt of v into p (5 bytes of room); returns its length. */
size_t mc_varint_put(uint8_t *p, uint32_t v);

/* What ferry sends a backend to ask its status: a Handshake for host:port
 * at protocol, intent 1, then a Status Request. Returns the bytes written,
 * 0 when cap is short or host is over 255 bytes. */
size_t mc_status_query(uint8_t *out, size_t cap, const char *host, uint16_t port, int32_t protocol);

/* The JSON of a Status Response body (the frame's id was 0): 1 with its
 * offset and length in body, or MC_E_FRAME (not one String filling the
 * body, or over MC_STATUS_JSON_MAX). */
int mc_status_json(const uint8_t *body, size_t n, size_t *off, size_t *len);

/* A Status Response frame carrying json[0..len). Returns its length, or 0
 * when cap is short or len is over MC_STATUS_JSON_MAX. */
size_t mc_status_reply(uint8_t *out, size_t cap, const char *json, size_t len);

/* A Pong frame echoing payload (11 bytes into out). */
size_t mc_pong(uint8_t *out, const uint8_t payload[8]);

/* The reply to a legacy ping of kind (MC_LEGACY_FE, _FE01 or _16): 0xFF,
 * a length and UTF-16BE text; for FE01 and 1.6 "§1\0PROTOCOL\0VERSION\0
 * MOTD\0ONLINE\0MAX", for FE "MOTD§ONLINE§MAX". version and motd are UTF-8
 * (invalid bytes become U+FFFD; "§" and NUL in motd are dropped for FE).
 * Returns its length, or 0 when cap is short. */
size_t mc_legacy_reply(uint8_t *out, size_t cap, enum mc_kind kind, int32_t protocol,
                       const char *version, const char *motd, int64_t online, int64_t max);

/* A status JSON for a server that is down: version "offline" with
 * protocol -1 (clients show it as incompatible, not as theirs), 0 of 0
 * players, and motd as the description (JSON-escaped; invalid UTF-8
 * becomes U+FFFD). Returns its length (NUL-terminated), 0 if cap is short. */
size_t mc_status_offline(char *out, size_t cap, const char *motd);

/* "players":{"max":M,"online":N} of a status JSON, by a shallow scan for
 * those keys (no full JSON parse): true with both found. */
bool mc_status_players(const char *json, size_t len, int64_t *online, int64_t *max);

/*
 * The first message of buf (a modern handshake h, as mc_sniff() described
 * it) with its address String replaced by a[0..alen): frame length,
 * packet id, protocol, the new address, then the original port and intent.
 * Writes the new frame to out (cap bytes) and returns its length, or 0
 * when it does not fit, h is not a modern handshake or alen is over
 * MC_FRAME_MAX. Edge mode uses it to take a signature off the host.
 */
size_t mc_rewrite_addr(const uint8_t *buf, const struct mc_hello *h, const uint8_t *a, size_t alen,
                       uint8_t *out, size_t cap);

#endif
