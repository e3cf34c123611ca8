/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mcsniff.h: the Minecraft Java first-message sniffer of edge mode. Reads
 * the bytes a client sent first and says what it is: a modern handshake
 * (protocol version, intent, host, port), one of the three legacy 0xFE
 * pings, "need more", or a specific error. Pure: no syscalls, no
 * allocation, no logging, util only. It lives in proto/ (the house rule for
 * parsers) while edge mode's I/O lives in relay/front_edge.c; it must never learn
 * about routes, sockets or timers.
 *
 * Wire format (docs/edge.md "Sniffers"): a frame is Length VarInt | Packet
 * ID VarInt | data; the handshake (id 0x00) is protocol VarInt, address
 * String (VarInt byte length + UTF-8), port u16 big-endian, intent VarInt.
 * Legacy pings: FE (<= 1.3), FE 01 (1.4-1.5), FE 01 FA "MC|PingHost" ...
 * (1.6, the only one carrying a host).
 *
 * Stateless and resumable: each call gets the whole prefix received so far
 * (the same buffer grown) and rescans it; the verdict depends only on the
 * bytes, never on how they were split. An error in the frame header
 * (length, cap, packet id) or in the 1.6 ping's fixed fields is returned as
 * soon as those bytes are there; one in the handshake's fields once the
 * frame is complete (it is at most MC_FRAME_MAX bytes).
 */
#ifndef FERRY_PROTO_MCSNIFF_H
#define FERRY_PROTO_MCSNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hostname.h"

#define MC_FRAME_DEFAULT 1024 /* first-message cap when the caller passes 0 */
#define MC_FRAME_MAX     2048 /* the most a caller may ask for */
#define MC_VARINT_MAX    5    /* bytes in a VarInt (an int32) */

enum mc_result {
    MC_NEED_MORE = 0, /* a valid prefix: call again with more bytes */
    MC_OK = 1,        /* a modern handshake: out->kind == MC_MODERN */
    MC_LEGACY = 2,    /* a legacy 0xFE ping: out->kind says which */
};

enum mc_error {
    MC_E_VARINT = -1,    /* a VarInt over 5 bytes or out of the int32 range */
    MC_E_TOO_BIG = -2,   /* the first message is over the frame cap */
    MC_E_FRAME = -3,     /* frame length 0, or the fields do not fill it exactly */
    MC_E_PACKET_ID = -4, /* the first packet id is not the single byte 0x00 */
    MC_E_HOST_LEN = -5,  /* address String empty, negative, or host part over 255 bytes */
    MC_E_UTF8 = -6,      /* the address String is not valid UTF-8 */
    MC_E_HOST = -7,      /* the host part is not an LDH name (hostname.h) */
    MC_E_INTENT = -8,    /* intent (next state) not 1 (status), 2 (login) or 3 (transfer) */
    MC_E_LEGACY = -9,    /* FE 01 followed by neither 00 nor FA, or a malformed 1.6 ping */
};

enum mc_kind {
    MC_MODERN = 0,
    MC_LEGACY_FE = 1,   /* FE alone, then silence: <= 1.3 */
    MC_LEGACY_FE01 = 2, /* FE 01, then silence: 1.4-1.5 */
    MC_LEGACY_16 = 3,   /* FE 01 FA MC|PingHost: 1.6, with a host */
};

/* Suffixes found after the host in the address String (bits of suffixes). */
enum mc_suffix {
    MC_SUF_FML = 1u << 0,    /* \0FML\0   Forge 1.7-1.12 */
    MC_SUF_FML2 = 1u << 1,   /* \0FML2\0  Forge 1.13-1.17 */
    MC_SUF_FML3 = 1u << 2,   /* \0FML3\0  Forge 1.18-1.20.1 */
    MC_SUF_FORGE = 1u << 3,  /* \0FORGE   Forge 1.20.2+ (a field starting FORGE) */
    MC_SUF_BUNGEE = 1u << 4, /* host\0ip\0uuid[\0props] BungeeCord IP forwarding */
    MC_SUF_REALIP = 1u << 5, /* host///ip:port///ts///sig TCPShield RealIP */
    MC_SUF_SHIELD = 1u << 6, /* host\0shield\0mac guard's signed host */
    MC_SUF_OTHER = 1u << 7,  /* a \0 field none of the above explains */
};

/* Filled only when mc_sniff() returns MC_OK or MC_LEGACY; caller's storage. */
struct mc_hello {
    enum mc_kind kind;
    int32_t protocol;    /* VarInt (may be -1 for a version probe); 1.6: the protocol byte */
    int32_t intent;      /* 1, 2 or 3; 0 for legacy pings */
    uint16_t port;       /* as sent (1.6: its int32, which must be 0..65535) */
    unsigned suffixes;   /* MC_SUF_* bits; 0 when the address is the bare host */
    size_t msg_len;      /* bytes of buf the first message takes (frame or ping) */
    size_t addr_off;     /* modern: the address String's bytes in buf (after its */
    size_t addr_len;     /*   length VarInt), to forward unchanged or rewritten; */
                         /*   1.6: the UTF-16BE host's bytes */
    size_t host_raw_len; /* the host part's length at addr_off (before any suffix) */
    size_t host_len;     /* canonical host length; 0 for FE and FE 01 */
    char host[HOSTNAME_MAX + 1]; /* canonical: lowercase LDH, no trailing dot, NUL-ended */
};

/*
 * Sniff buf[0..len). max_frame caps the first message in bytes, its length
 * VarInt included (0: MC_FRAME_DEFAULT; clamped to MC_FRAME_MAX). idle says
 * the client has gone quiet after these bytes (the caller's short timer
 * fired): only then are exactly "FE" and "FE 01" the <= 1.3 and 1.4-1.5
 * legacy pings; without it they are MC_NEED_MORE, since FE 01 00 begins a
 * modern frame of 254 bytes and FE 01 FA a 1.6 ping. idle changes nothing
 * else: any other incomplete prefix stays MC_NEED_MORE (the caller's
 * whole-message deadline ends it).
 *
 * Returns an enum mc_result, or an MC_E_* code (< 0). On MC_OK the host is
 * the part of the address before the first "\0" or "///", which must be
 * 1..255 bytes and LDH; the whole address must be valid UTF-8 and fit the
 * frame. Bytes after the first message are not looked at. out is written
 * only on MC_OK / MC_LEGACY.
 */
int mc_sniff(const uint8_t *buf, size_t len, size_t max_frame, bool idle, struct mc_hello *out);

/* Read a VarInt from p[0..avail): > 0 bytes used, 0 when avail ran out
 * first, MC_E_VARINT when a 5th byte carries bits past the int32 range or
 * asks for a 6th. Non-minimal encodings are read as the server reads them. */
int mc_varint_get(const uint8_t *p, size_t avail, uint32_t *v);

/* Short English text for an MC_E_* code (or a result) for logs; never NULL. */
const char *mc_strerror(int code);

#endif
