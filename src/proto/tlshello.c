/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tlshello.c: the ClientHello sniffer of tlshello.h. Two passes over the
 * prefix: a walk over the record headers (at most TLS_RECORDS_MAX of them)
 * that finds where the handshake message ends, then, once it is complete, a
 * cursor that reads the message's bytes in order across the record
 * boundaries, skipping each 5-byte record header. No copy of the message is
 * made: only the host name and the ALPN list are copied out. Pure: no I/O,
 * no allocation, no logging; this parser sits in proto/, edge mode's I/O in
 * relay/front_edge.c.
 */
#include "proto/tlshello.h"

#include <string.h>

#define REC_HDR   5
#define HS_HDR    4
#define HS_CLIENT 0x01
#define EXT_SNI   0x0000
#define EXT_ALPN  0x0010
#define HELLO_MIN 41 /* version 2, random 32, sid 1, suites 2+2, compression 1+1 */

/* ---- the cursor over the handshake bytes ------------------------------- */

struct hcur {
    const uint8_t *b;
    size_t pos;  /* next byte in b */
    size_t end;  /* end of the current record's payload */
    size_t left; /* handshake bytes not yet read */
};

static size_t rec_len(const uint8_t *b, size_t off)
{
    return (size_t)b[off + 3] << 8 | b[off + 4];
}

/* Next handshake byte; false when the message is used up. Record headers
 * on the way were checked by the walk. */
static bool hc_byte(struct hcur *c, uint8_t *v)
{
    if (c->left == 0)
        return false;
    if (c->pos == c->end) {
        c->pos = c->end + REC_HDR;
        c->end = c->pos + rec_len(c->b, c->end);
    }
    *v = c->b[c->pos++];
    c->left--;
    return true;
}

static bool hc_u16(struct hcur *c, size_t *v)
{
    uint8_t a, b;
    if (!hc_byte(c, &a) || !hc_byte(c, &b))
        return false;
    *v = (size_t)a << 8 | b;
    return true;
}

/* Skip n bytes, a record at a time. */
static bool hc_skip(struct hcur *c, size_t n)
{
    if (n > c->left)
        return false;
    while (n > 0) {
        if (c->pos == c->end) {
            c->pos = c->end + REC_HDR;
            c->end = c->pos + rec_len(c->b, c->end);
        }
        size_t step = c->end - c->pos < n ? c->end - c->pos : n;
        c->pos += step;
        c->left -= step;
        n -= step;
    }
    return true;
}

static bool hc_copy(struct hcur *c, uint8_t *dst, size_t n)
{
    if (n > c->left)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!hc_byte(c, &dst[i]))
            return false;
    return true;
}

/* ---- extensions --------------------------------------------------------- */

/* server_name (RFC 6066 3): list len16, then name_type(1) len16 name. */
static int read_sni(struct hcur *c, size_t elen, struct tls_hello *h)
{
    size_t list;
    if (elen < 2 || !hc_u16(c, &list) || list != elen - 2 || list == 0)
        return TLS_E_EXTENSION;
    while (list > 0) {
        uint8_t type;
        size_t n;
        if (list < 3 || !hc_byte(c, &type) || !hc_u16(c, &n) || n > list - 3)
            return TLS_E_EXTENSION;
        list -= 3 + n;
        if (type != 0) {
            hc_skip(c, n);
            continue;
        }
        if (h->sni_len != 0)
            return TLS_E_DUP_SNI;
        uint8_t raw[HOSTNAME_MAX];
        if (n == 0 || n > HOSTNAME_MAX)
            return TLS_E_SNI;
        hc_copy(c, raw, n);
        h->sni_len = hostname_canon(raw, n, h->sni);
        if (h->sni_len == 0)
            return TLS_E_SNI;
    }
    return 0;
}

/* ALPN (RFC 7301 3.1): list len16, then len8 name, each name 1..255. */
static int read_alpn(struct hcur *c, size_t elen, struct tls_hello *h)
{
    size_t list;
    if (elen < 2 || !hc_u16(c, &list) || list != elen - 2 || list < 2)
        return TLS_E_EXTENSION;
    while (list > 0) {
        uint8_t n;
        if (!hc_byte(c, &n) || n == 0 || (size_t)n > list - 1)
            return TLS_E_EXTENSION;
        list -= 1 + (size_t)n;
        h->alpn_count++;
        if (!h->alpn_truncated && h->alpn_len + 1 + n <= TLS_ALPN_MAX) {
            h->alpn[h->alpn_len] = n;
            hc_copy(c, h->alpn + h->alpn_len + 1, n);
            h->alpn_len += 1 + (size_t)n;
        } else {
            h->alpn_truncated = true;
            hc_skip(c, n);
        }
    }
    return 0;
}

static int read_extensions(struct hcur *c, struct tls_hello *h)
{
    size_t total;
    if (!hc_u16(c, &total) || total != c->left)
        return TLS_E_EXTENSION;
    bool sni = false, alpn = false;
    while (c->left > 0) {
        size_t type, elen;
        if (!hc_u16(c, &type) || !hc_u16(c, &elen) || elen > c->left)
            return TLS_E_EXTENSION;
        size_t after = c->left - elen;
        int rc = 0;
        if (type == EXT_SNI) {
            if (sni)
                return TLS_E_DUP_SNI;
            sni = true;
            rc = read_sni(c, elen, h);
        } else if (type == EXT_ALPN) {
            if (alpn)
                return TLS_E_EXTENSION;
            alpn = true;
            rc = read_alpn(c, elen, h);
        } else {
            hc_skip(c, elen);
        }
        if (rc < 0)
            return rc;
        if (c->left != after)
            return TLS_E_EXTENSION; /* the inner lists did not fill the extension */
    }
    return 0;
}

/* The ClientHello body, after its handshake header. */
static int read_hello(struct hcur *c, struct tls_hello *h)
{
    size_t version, suites;
    uint8_t sid, comp;
    if (!hc_u16(c, &version) || (version >> 8) != 3)
        return TLS_E_HANDSHAKE;
    h->client_version = (uint16_t)version;
    if (!hc_skip(c, 32) || !hc_byte(c, &sid) || sid > 32 || !hc_skip(c, sid))
        return TLS_E_HANDSHAKE;
    if (!hc_u16(c, &suites) || suites < 2 || suites % 2 || !hc_skip(c, suites))
        return TLS_E_HANDSHAKE;
    if (!hc_byte(c, &comp) || comp == 0 || !hc_skip(c, comp))
        return TLS_E_HANDSHAKE;
    if (c->left == 0)
        return 0;
    if (c->left < 2)
        return TLS_E_HANDSHAKE;
    return read_extensions(c, h);
}

/* ---- SSLv2-compatible CLIENT-HELLO ---------------------------------------- */

/* 2-byte header (high bit set, 15-bit length), msg type 1, version(2),
 * cipher_spec_length(2), session_id_length(2), challenge_length(2), then the
 * three fields (draft-hickman-netscape-ssl-00, RFC 5246 E.2). */
static int sniff_sslv2(const uint8_t *b, size_t len, struct tls_hello *out)
{
    /* Type and version first, so garbage with the high bit set is "not
     * TLS"; the length after, once those bytes are there. */
    if (len >= 3 && b[2] != 0x01)
        return TLS_E_NOT_TLS;
    if (len >= 4 && b[3] != 0x03)
        return TLS_E_NOT_TLS;
    if (len < 4)
        return TLS_NEED_MORE;
    size_t mlen = (size_t)(b[0] & 0x7f) << 8 | b[1];
    if (2 + mlen > TLS_HELLO_MAX)
        return TLS_E_TOO_BIG;
    if (mlen < 9)
        return TLS_E_HANDSHAKE;
    if (len < 2 + mlen)
        return TLS_NEED_MORE;
    size_t cs = (size_t)b[5] << 8 | b[6], sid = (size_t)b[7] << 8 | b[8];
    size_t ch = (size_t)b[9] << 8 | b[10];
    if (cs == 0 || cs % 3 || (sid != 0 && sid != 16) || ch < 16 || ch > 32 ||
        9 + cs + sid + ch != mlen)
        return TLS_E_HANDSHAKE;
    memset(out, 0, sizeof(*out));
    out->sslv2 = true;
    out->client_version = (uint16_t)(b[3] << 8 | b[4]);
    out->hello_end = out->records_end = 2 + mlen;
    return TLS_OK;
}

/* ---- the record walk ------------------------------------------------------ */

/* What the walk learnt: where the message ends, or that it is not there yet. */
struct walk {
    size_t hs_need; /* 4 + the handshake length, once known */
    size_t hello_end, records_end;
    unsigned records;
};

/* A record header at off, as far as len has it. */
static int check_record(const uint8_t *b, size_t len, size_t off)
{
    int bad = off == 0 ? TLS_E_NOT_TLS : TLS_E_RECORD;
    if (len > off && b[off] != 0x16)
        return bad;
    if (len > off + 1 && b[off + 1] != 0x03)
        return bad;
    if (len < off + REC_HDR)
        return TLS_NEED_MORE;
    size_t rlen = rec_len(b, off);
    if (rlen == 0 || rlen > TLS_RECORD_MAX)
        return TLS_E_RECORD;
    return 1;
}

/* The handshake header, once its 4 bytes are in hdr. */
static int check_hs_header(const uint8_t *hdr, size_t *need)
{
    if (hdr[0] != HS_CLIENT)
        return TLS_E_HANDSHAKE;
    size_t mlen = (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
    if (HS_HDR + mlen > TLS_HELLO_MAX)
        return TLS_E_TOO_BIG;
    if (mlen < HELLO_MIN)
        return TLS_E_HANDSHAKE;
    *need = HS_HDR + mlen;
    return 0;
}

static int walk_records(const uint8_t *b, size_t len, struct walk *w)
{
    uint8_t hdr[HS_HDR];
    size_t off = 0, have = 0; /* handshake bytes in the records before off */
    memset(w, 0, sizeof(*w));
    for (;;) {
        int rc = check_record(b, len, off);
        if (rc <= 0)
            return rc;
        if (++w->records > TLS_RECORDS_MAX)
            return TLS_E_TOO_BIG;
        size_t rlen = rec_len(b, off), pay = off + REC_HDR;
        size_t avail = len - pay < rlen ? len - pay : rlen;
        for (size_t j = 0; j < avail && have + j < HS_HDR; j++)
            hdr[have + j] = b[pay + j];
        if (have + avail >= 1 && hdr[0] != HS_CLIENT)
            return TLS_E_HANDSHAKE; /* refused on its first byte */
        if (w->hs_need == 0 && have + avail >= HS_HDR) {
            rc = check_hs_header(hdr, &w->hs_need);
            if (rc < 0)
                return rc;
        }
        if (w->hs_need != 0 && have + avail >= w->hs_need) {
            w->hello_end = pay + (w->hs_need - have);
            w->records_end = pay + rlen;
            return TLS_OK;
        }
        if (avail < rlen)
            return TLS_NEED_MORE;
        have += rlen;
        off = pay + rlen;
    }
}

int tls_sniff(const uint8_t *buf, size_t len, struct tls_hello *out)
{
    if (len == 0)
        return TLS_NEED_MORE;
    if (buf[0] != 0x16)
        return (buf[0] & 0x80) ? sniff_sslv2(buf, len, out) : TLS_E_NOT_TLS;
    struct walk w;
    int rc = walk_records(buf, len, &w);
    if (rc != TLS_OK)
        return rc;
    struct tls_hello h;
    memset(&h, 0, sizeof(h));
    struct hcur c = {.b = buf, .pos = REC_HDR, .end = REC_HDR + rec_len(buf, 0), .left = w.hs_need};
    hc_skip(&c, HS_HDR);
    rc = read_hello(&c, &h);
    if (rc < 0)
        return rc;
    h.records = w.records;
    h.hello_end = w.hello_end;
    h.records_end = w.records_end;
    h.ends_mid_record = w.hello_end < w.records_end;
    *out = h;
    return TLS_OK;
}

const char *tls_strerror(int code)
{
    switch (code) {
    case TLS_NEED_MORE:
        return "incomplete TLS ClientHello";
    case TLS_OK:
        return "TLS ClientHello";
    case TLS_E_NOT_TLS:
        return "not a TLS handshake";
    case TLS_E_TOO_BIG:
        return "TLS ClientHello over the cap";
    case TLS_E_RECORD:
        return "bad TLS record";
    case TLS_E_HANDSHAKE:
        return "bad TLS ClientHello";
    case TLS_E_EXTENSION:
        return "bad TLS extension";
    case TLS_E_DUP_SNI:
        return "duplicate TLS server name";
    case TLS_E_SNI:
        return "bad TLS server name";
    default:
        return "unknown TLS sniffer error";
    }
}
