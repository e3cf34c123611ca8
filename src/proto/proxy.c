/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proxy.c: PROXY protocol v1 and v2 headers, read and written. This is a
 * security boundary: the header decides which client address the ACLs, the
 * limits and the logs see, so anything not exactly as the spec writes it is
 * refused. The parsers are stateless: each call scans the whole prefix
 * received so far from its first byte, left to right, and stops at the first
 * byte that cannot belong to a valid header; so an error depends only on the
 * bytes before it and the verdict cannot depend on how the bytes arrived.
 * No I/O, no allocation, no logging.
 */
#include "proto/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

const uint8_t proxy_v2_sig[PROXY_V2_SIG_LEN] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                                0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* ---- v1 --------------------------------------------------------------- */

/* Internal "need more" for the v1 steps below, which return 0 when a step is
 * done, V1_MORE when the bytes ran out first, or a PROXY_E_* code. */
#define V1_MORE 1

/* The longest text inet_pton(AF_INET6) takes: INET6_ADDRSTRLEN - 1, as in
 * "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255". */
#define V1_IP6_TEXT_MAX 45

/* A cursor over the line; len is clamped to PROXY_V1_MAX so no step ever
 * looks past the longest line the spec allows. */
struct v1_cur {
    const uint8_t *p;
    size_t len;
    size_t i;
};

/* Match the literal s; a differing byte is error err. */
static int v1_literal(struct v1_cur *c, const char *s, int err)
{
    for (; *s; s++, c->i++) {
        if (c->i >= c->len)
            return V1_MORE;
        if (c->p[c->i] != (uint8_t)*s)
            return err;
    }
    return 0;
}

/* A space, CR or LF ends a field; which one is allowed depends on the field. */
static bool v1_is_delim(uint8_t ch)
{
    return ch == ' ' || ch == '\r' || ch == '\n';
}

/* A field ended at c->i on a separator: it must be sep (a CR where a space
 * is due means a missing field, and the reverse an extra one). Consumed. */
static int v1_sep(struct v1_cur *c, uint8_t sep)
{
    if (c->p[c->i] != sep)
        return PROXY_E_SYNTAX;
    c->i++;
    return 0;
}

/* Dotted quad, spec 2.1: exactly 4 decimal numbers 0-255, single dots, no
 * leading zeros ("010" could be read as octal). Judged byte by byte so a bad
 * address is refused as soon as it is seen. */
static int v1_ipv4(struct v1_cur *c, uint8_t ip[4])
{
    size_t start = c->i;
    unsigned dots = 0, digits = 0, val = 0;
    for (;; c->i++) {
        if (c->i >= c->len)
            return V1_MORE;
        uint8_t ch = c->p[c->i];
        if (v1_is_delim(ch))
            break;
        if (ch == '.') {
            if (digits == 0 || dots == 3)
                return PROXY_E_ADDRESS;
            ip[dots++] = (uint8_t)val;
            digits = 0;
            val = 0;
        } else if (ch >= '0' && ch <= '9') {
            if (digits > 0 && val == 0)
                return PROXY_E_ADDRESS; /* leading zero */
            val = val * 10 + (unsigned)(ch - '0');
            if (val > 255)
                return PROXY_E_ADDRESS;
            digits++;
        } else {
            return PROXY_E_ADDRESS;
        }
    }
    if (c->i == start)
        return PROXY_E_SYNTAX; /* empty field: two spaces, or a space before CR */
    if (dots != 3 || digits == 0)
        return PROXY_E_ADDRESS;
    ip[3] = (uint8_t)val;
    return 0;
}

static bool is_hex(uint8_t ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* IPv6 text: hex digits, colons, and the dots of an embedded IPv4 tail
 * ("::ffff:192.0.2.1", which senders produce with inet_ntop() for mapped
 * addresses). The characters and the length are checked as they come;
 * inet_pton() judges the whole once its separator is there. */
static int v1_ipv6(struct v1_cur *c, uint8_t ip[16])
{
    size_t start = c->i;
    for (;; c->i++) {
        if (c->i >= c->len)
            return V1_MORE;
        uint8_t ch = c->p[c->i];
        if (v1_is_delim(ch))
            break;
        if (!is_hex(ch) && ch != ':' && ch != '.')
            return PROXY_E_ADDRESS;
        if (c->i - start >= V1_IP6_TEXT_MAX)
            return PROXY_E_ADDRESS;
    }
    size_t n = c->i - start;
    if (n == 0)
        return PROXY_E_SYNTAX;
    char text[V1_IP6_TEXT_MAX + 1];
    memcpy(text, c->p + start, n);
    text[n] = '\0';
    if (inet_pton(AF_INET6, text, ip) != 1)
        return PROXY_E_ADDRESS;
    return 0;
}

/* Port, spec 2.1: decimal 0-65535, no sign, no leading zero except "0". */
static int v1_port(struct v1_cur *c, uint16_t *port)
{
    size_t start = c->i;
    unsigned val = 0;
    for (;; c->i++) {
        if (c->i >= c->len)
            return V1_MORE;
        uint8_t ch = c->p[c->i];
        if (v1_is_delim(ch))
            break;
        if (ch < '0' || ch > '9')
            return PROXY_E_ADDRESS;
        if (c->i > start && val == 0)
            return PROXY_E_ADDRESS; /* leading zero */
        val = val * 10 + (unsigned)(ch - '0');
        if (val > 65535)
            return PROXY_E_ADDRESS;
    }
    if (c->i == start)
        return PROXY_E_SYNTAX;
    *port = (uint16_t)val;
    return 0;
}

/* CR then LF; a lone CR or LF does not end the line (spec 2.1). */
static int v1_crlf(struct v1_cur *c)
{
    if (c->i >= c->len)
        return V1_MORE;
    if (c->p[c->i] != '\r')
        return PROXY_E_SYNTAX;
    c->i++;
    if (c->i >= c->len)
        return V1_MORE;
    if (c->p[c->i] != '\n')
        return PROXY_E_SYNTAX;
    c->i++;
    return 0;
}

/* "UNKNOWN" was matched: it is followed by CRLF, or by a space and anything
 * up to the CRLF, which the receiver must ignore (spec 2.1). */
static int v1_unknown_rest(struct v1_cur *c)
{
    if (c->i >= c->len)
        return V1_MORE;
    if (c->p[c->i] == ' ') {
        c->i++;
        while (c->i < c->len && c->p[c->i] != '\r') {
            if (c->p[c->i] == '\n')
                return PROXY_E_SYNTAX;
            c->i++;
        }
    }
    return v1_crlf(c);
}

/* Step macro: a step that is not done ends the scan with its verdict. */
#define V1_STEP(call)         \
    do {                      \
        int step_rc = (call); \
        if (step_rc != 0)     \
            return step_rc;   \
    } while (0)

/* Scan the line; 0 and c->i past the CRLF when complete, else V1_MORE or an
 * error. The address fields go to h, which the caller discards unless the
 * scan completes. */
static int v1_scan(struct v1_cur *c, struct proxy_header *h)
{
    V1_STEP(v1_literal(c, "PROXY", PROXY_E_SIGNATURE));
    V1_STEP(v1_literal(c, " ", PROXY_E_SYNTAX));
    if (c->i >= c->len)
        return V1_MORE;
    if (c->p[c->i] == 'U') {
        V1_STEP(v1_literal(c, "UNKNOWN", PROXY_E_SYNTAX));
        h->local = true;
        return v1_unknown_rest(c);
    }
    V1_STEP(v1_literal(c, "TCP", PROXY_E_SYNTAX));
    if (c->i >= c->len)
        return V1_MORE;
    uint8_t fam = c->p[c->i];
    if (fam != '4' && fam != '6')
        return PROXY_E_SYNTAX;
    c->i++;
    V1_STEP(v1_literal(c, " ", PROXY_E_SYNTAX));

    h->local = false;
    h->src.family = h->dst.family = fam == '4' ? AF_INET : AF_INET6;
    V1_STEP(fam == '4' ? v1_ipv4(c, h->src.ip) : v1_ipv6(c, h->src.ip));
    V1_STEP(v1_sep(c, ' '));
    V1_STEP(fam == '4' ? v1_ipv4(c, h->dst.ip) : v1_ipv6(c, h->dst.ip));
    V1_STEP(v1_sep(c, ' '));
    V1_STEP(v1_port(c, &h->src.port));
    V1_STEP(v1_sep(c, ' '));
    V1_STEP(v1_port(c, &h->dst.port));
    return v1_crlf(c);
}

static ssize_t parse_v1(const uint8_t *p, size_t len, struct proxy_header *out)
{
    struct v1_cur c = {.p = p, .len = len < PROXY_V1_MAX ? len : PROXY_V1_MAX, .i = 0};
    struct proxy_header h;
    memset(&h, 0, sizeof(h));
    int rc = v1_scan(&c, &h);
    if (rc == V1_MORE)
        return len >= PROXY_V1_MAX ? PROXY_E_TOO_LONG : 0;
    if (rc < 0)
        return rc;
    *out = h;
    return (ssize_t)c.i;
}

/* ---- v2 --------------------------------------------------------------- */

/* Spec 2.2: every check is made as soon as its byte is there, in wire order,
 * and the address block is read only once the whole header has arrived. */
static ssize_t parse_v2(const uint8_t *p, size_t len, struct proxy_header *out)
{
    size_t n = len < PROXY_V2_SIG_LEN ? len : PROXY_V2_SIG_LEN;
    if (memcmp(p, proxy_v2_sig, n) != 0)
        return PROXY_E_SIGNATURE;
    if (len < 13)
        return 0;
    if ((p[12] >> 4) != 2)
        return PROXY_E_VERSION;
    bool is_local = p[12] == PROXY_V2_CMD_LOCAL;
    if (!is_local && p[12] != PROXY_V2_CMD_PROXY)
        return PROXY_E_COMMAND;
    if (len < 14)
        return 0;
    uint8_t fam = p[13];
    size_t need = 0; /* address bytes the family requires */
    if (!is_local) {
        /* LOCAL ignores the family; PROXY must name one we relay. */
        switch (fam) {
        case PROXY_V2_FAM_UNSPEC:
            is_local = true;
            break;
        case PROXY_V2_FAM_TCP4:
            need = PROXY_V2_ADDR4_LEN;
            break;
        case PROXY_V2_FAM_TCP6:
            need = PROXY_V2_ADDR6_LEN;
            break;
        default:
            return PROXY_E_FAMILY;
        }
    }
    if (len < PROXY_V2_HDR_LEN)
        return 0;
    size_t alen = ((size_t)p[14] << 8) | p[15];
    size_t total = PROXY_V2_HDR_LEN + alen;
    if (total > PROXY_V2_MAX)
        return PROXY_E_TOO_LONG;
    if (alen < need)
        return PROXY_E_ADDRESS;
    if (len < total)
        return 0;

    memset(out, 0, sizeof(*out));
    out->local = is_local;
    if (!is_local) {
        /* Source address, destination address, source port, destination port. */
        const uint8_t *a = p + PROXY_V2_HDR_LEN;
        size_t ipl = fam == PROXY_V2_FAM_TCP4 ? 4 : 16;
        out->src.family = out->dst.family = fam == PROXY_V2_FAM_TCP4 ? AF_INET : AF_INET6;
        memcpy(out->src.ip, a, ipl);
        memcpy(out->dst.ip, a + ipl, ipl);
        out->src.port = (uint16_t)((a[2 * ipl] << 8) | a[2 * ipl + 1]);
        out->dst.port = (uint16_t)((a[2 * ipl + 2] << 8) | a[2 * ipl + 3]);
    }
    return (ssize_t)total;
}

ssize_t proxy_parse(enum proxy_version v, const uint8_t *p, size_t len, struct proxy_header *out)
{
    if (len == 0)
        return 0;
    if (v == PROXY_V2)
        return parse_v2(p, len, out);
    if (v == PROXY_V1)
        return parse_v1(p, len, out);
    return PROXY_E_SIGNATURE;
}

const char *proxy_strerror(int code)
{
    switch (code) {
    case PROXY_E_SIGNATURE:
        return "no PROXY header signature";
    case PROXY_E_VERSION:
        return "bad PROXY v2 version";
    case PROXY_E_COMMAND:
        return "bad PROXY v2 command";
    case PROXY_E_FAMILY:
        return "unsupported PROXY address family";
    case PROXY_E_ADDRESS:
        return "bad PROXY address";
    case PROXY_E_TOO_LONG:
        return "PROXY header too long";
    case PROXY_E_SYNTAX:
        return "malformed PROXY v1 line";
    default:
        return "unknown PROXY error";
    }
}

/* ---- writers ---------------------------------------------------------- */

static bool same_inet_family(const struct addr *src, const struct addr *dst)
{
    return dst && src->family == dst->family && (src->family == AF_INET || src->family == AF_INET6);
}

size_t proxy_write_v1(char *out, size_t cap, const struct addr *src, const struct addr *dst)
{
    char line[PROXY_V1_MAX + 1];
    int n;
    if (!src) {
        n = snprintf(line, sizeof(line), "PROXY UNKNOWN\r\n");
    } else {
        if (!same_inet_family(src, dst))
            return 0;
        char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
        int af = src->family;
        if (!inet_ntop(af, src->ip, s, sizeof(s)) || !inet_ntop(af, dst->ip, d, sizeof(d)))
            return 0;
        n = snprintf(line, sizeof(line), "PROXY TCP%c %s %s %u %u\r\n", af == AF_INET ? '4' : '6',
                     s, d, (unsigned)src->port, (unsigned)dst->port);
    }
    if (n < 0 || (size_t)n >= sizeof(line) || (size_t)n > cap)
        return 0;
    memcpy(out, line, (size_t)n);
    return (size_t)n;
}

size_t proxy_write_v2(uint8_t *out, size_t cap, const struct addr *src, const struct addr *dst)
{
    size_t ipl = 0;
    if (src) {
        if (!same_inet_family(src, dst))
            return 0;
        ipl = src->family == AF_INET ? 4 : 16;
    }
    size_t alen = src ? 2 * ipl + 4 : 0;
    size_t total = PROXY_V2_HDR_LEN + alen;
    if (cap < total)
        return 0;
    memcpy(out, proxy_v2_sig, PROXY_V2_SIG_LEN);
    out[12] = src ? PROXY_V2_CMD_PROXY : PROXY_V2_CMD_LOCAL;
    out[13] = !src ? PROXY_V2_FAM_UNSPEC : (ipl == 4 ? PROXY_V2_FAM_TCP4 : PROXY_V2_FAM_TCP6);
    out[14] = (uint8_t)(alen >> 8);
    out[15] = (uint8_t)alen;
    if (src) {
        uint8_t *a = out + PROXY_V2_HDR_LEN;
        memcpy(a, src->ip, ipl);
        memcpy(a + ipl, dst->ip, ipl);
        a[2 * ipl] = (uint8_t)(src->port >> 8);
        a[2 * ipl + 1] = (uint8_t)src->port;
        a[2 * ipl + 2] = (uint8_t)(dst->port >> 8);
        a[2 * ipl + 3] = (uint8_t)dst->port;
    }
    return total;
}
