/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * parent.c: the client side of a parent proxy's handshake (parent.h). The
 * messages are written at init into the struct; replies are read one byte
 * at a time, so a reply split anywhere is read the same and no byte past
 * its end is ever taken. A failure reply is judged as soon as the byte
 * that says so arrives (a parent may close right after it). This file
 * must stay free of I/O, allocation and logging: it is fuzzed on its own.
 */
#include "proto/parent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/socks4.h"
#include "proto/socks5.h"

/* Where the machine is: which reply it waits for. */
enum parent_step {
    STEP_S5_METHOD, /* VER METHOD */
    STEP_S5_AUTH,   /* RFC 1929: VER STATUS */
    STEP_S5_REPLY,  /* VER REP RSV ATYP BND.ADDR BND.PORT */
    STEP_S4_REPLY,  /* VN CD DSTPORT DSTIP */
    STEP_HTTP_HEAD, /* status line, fields, blank line */
    STEP_END,
};

/* Message slots in h->wire. */
enum { MSG_FIRST, MSG_AUTH, MSG_REQUEST };

static const char *const fail_names[PARENT_FAIL_COUNT] = {
    [PARENT_FAIL_NONE] = "none",
    [PARENT_FAIL_GENERAL] = "general",
    [PARENT_FAIL_BAD_REPLY] = "bad-reply",
    [PARENT_FAIL_AUTH] = "auth",
    [PARENT_FAIL_DENIED] = "denied",
    [PARENT_FAIL_NET_UNREACHABLE] = "net-unreachable",
    [PARENT_FAIL_HOST_UNREACHABLE] = "host-unreachable",
    [PARENT_FAIL_REFUSED] = "refused",
    [PARENT_FAIL_TIMEOUT] = "timeout",
    [PARENT_FAIL_CMD_UNSUPPORTED] = "cmd-unsupported",
    [PARENT_FAIL_ADDR_UNSUPPORTED] = "addr-unsupported",
};

const char *parent_fail_name(enum parent_fail f)
{
    return (unsigned)f < PARENT_FAIL_COUNT ? fail_names[f] : "?";
}

static void fail(struct parent_hs *h, enum parent_fail f, const char *reason)
{
    h->state = PARENT_FAILED;
    h->step = STEP_END;
    h->fail = (uint8_t)f;
    snprintf(h->reason, sizeof(h->reason), "%s", reason);
}

static void bad_reply(struct parent_hs *h)
{
    fail(h, PARENT_FAIL_BAD_REPLY, "bad reply from parent");
}

static void done(struct parent_hs *h)
{
    h->state = PARENT_DONE;
    h->step = STEP_END;
}

/* Make message slot m the one to send next. */
static void send_msg(struct parent_hs *h, unsigned m)
{
    h->cur_start = m ? h->msg_end[m - 1] : 0;
    h->cur_end = h->msg_end[m];
    h->sent = 0;
    h->in_len = 0;
}

/* Names, users and passwords go on the wire as given: no control bytes,
 * spaces or DEL (they would break an HTTP head or a log line). */
static bool text_ok(const char *s, size_t len, bool allow_space)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f || (ch == ' ' && !allow_space))
            return false;
    }
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* RFC 4648 base64 with padding of in[0..n) into out (4 * ceil(n / 3) + 1
 * bytes of room, checked by the caller). */
static size_t base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

size_t parent_basic_credentials(const char *user, const char *pass, char *out, size_t cap)
{
    uint8_t raw[256 + 1 + 256];
    size_t ul = strlen(user), pl = pass ? strlen(pass) : 0;
    if (ul > 256 || pl > 256)
        return 0;
    memcpy(raw, user, ul);
    raw[ul] = ':';
    if (pl)
        memcpy(raw + ul + 1, pass, pl);
    size_t n = ul + 1 + pl;
    if (cap < 4 * ((n + 2) / 3) + 1)
        return 0;
    return base64_encode(raw, n, out);
}

/* SOCKS5: greeting, [RFC 1929 request], request. */
static int init_socks5(struct parent_hs *h, const char *user, const char *pass, const char *name,
                       const struct addr *ip, uint16_t port)
{
    uint8_t *w = h->wire;
    size_t n = 0;
    w[n++] = SOCKS5_VERSION;
    w[n++] = h->has_auth ? 2 : 1;
    w[n++] = SOCKS5_METHOD_NONE;
    if (h->has_auth)
        w[n++] = SOCKS5_METHOD_USERPASS;
    h->msg_end[MSG_FIRST] = (uint16_t)n;
    if (h->has_auth) {
        size_t ul = strlen(user), pl = pass ? strlen(pass) : 0;
        if (ul == 0 || ul > 255 || pl > 255)
            return -EINVAL;
        w[n++] = SOCKS5_AUTH_VERSION;
        w[n++] = (uint8_t)ul;
        memcpy(w + n, user, ul);
        n += ul;
        w[n++] = (uint8_t)pl;
        if (pl)
            memcpy(w + n, pass, pl);
        n += pl;
    }
    h->msg_end[MSG_AUTH] = (uint16_t)n;
    struct socks5_addr dst;
    if (name) {
        if (socks5_addr_from_name(&dst, name, port) != 0)
            return -EINVAL;
    } else {
        struct addr a = *ip;
        a.port = port;
        socks5_addr_from_addr(&dst, &a);
    }
    size_t r = socks5_write_request(w + n, sizeof(h->wire) - n, h->cmd, &dst);
    if (r == 0)
        return -EINVAL;
    h->msg_end[MSG_REQUEST] = (uint16_t)(n + r);
    h->step = STEP_S5_METHOD;
    /* Without credentials the only method offered is "none", so the
     * request can follow the greeting in the same segment: one round trip
     * and one write fewer per session. A parent that refuses (0xFF)
     * closes, and never reads the request. */
    h->pipelined = !h->has_auth;
    if (h->pipelined)
        h->msg_end[MSG_FIRST] = h->msg_end[MSG_AUTH] = h->msg_end[MSG_REQUEST];
    return 0;
}

/* SOCKS4: VN CD DSTPORT DSTIP USERID NUL [HOST NUL] (4a: DSTIP 0.0.0.1). */
static int init_socks4(struct parent_hs *h, const char *user, const char *name,
                       const struct addr *ip, uint16_t port)
{
    if (!name && ip->family != AF_INET)
        return -EAFNOSUPPORT;
    size_t ul = user ? strlen(user) : 0, nl = name ? strlen(name) : 0;
    if (ul > SOCKS4_FIELD_MAX || nl > SOCKS4_FIELD_MAX)
        return -EINVAL;
    uint8_t *w = h->wire;
    size_t n = 0;
    w[n++] = SOCKS4_VERSION;
    w[n++] = SOCKS4_CMD_CONNECT;
    w[n++] = (uint8_t)(port >> 8);
    w[n++] = (uint8_t)port;
    if (name) {
        static const uint8_t v4a[4] = {0, 0, 0, 1};
        memcpy(w + n, v4a, 4);
    } else {
        memcpy(w + n, ip->ip, 4);
    }
    n += 4;
    if (ul)
        memcpy(w + n, user, ul);
    n += ul;
    w[n++] = 0;
    if (name) {
        memcpy(w + n, name, nl);
        n += nl;
        w[n++] = 0;
    }
    h->msg_end[MSG_FIRST] = h->msg_end[MSG_AUTH] = h->msg_end[MSG_REQUEST] = (uint16_t)n;
    h->step = STEP_S4_REPLY;
    return 0;
}

/* HTTP: CONNECT authority HTTP/1.1, Host, [Proxy-Authorization]. */
static int init_http(struct parent_hs *h, const char *user, const char *pass, const char *name,
                     const struct addr *ip, uint16_t port)
{
    char host[264];
    if (name) {
        /* An IPv6 literal given as a name is bracketed in an authority. */
        bool v6 = strchr(name, ':') != NULL;
        snprintf(host, sizeof(host), "%s%s%s", v6 ? "[" : "", name, v6 ? "]" : "");
    } else {
        char t[ADDR_STRLEN];
        addr_format_ip(ip, t, sizeof(t));
        bool v6 = ip->family == AF_INET6;
        snprintf(host, sizeof(host), "%s%s%s", v6 ? "[" : "", t, v6 ? "]" : "");
    }
    char cred[700] = "";
    if (h->has_auth && parent_basic_credentials(user, pass, cred, sizeof(cred)) == 0)
        return -EINVAL;
    int n =
        snprintf((char *)h->wire, sizeof(h->wire),
                 "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n%s%s%s\r\n", host, port, host, port,
                 h->has_auth ? "Proxy-Authorization: Basic " : "", cred, h->has_auth ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(h->wire))
        return -EINVAL;
    h->msg_end[MSG_FIRST] = h->msg_end[MSG_AUTH] = h->msg_end[MSG_REQUEST] = (uint16_t)n;
    h->step = STEP_HTTP_HEAD;
    return 0;
}

/* What every dialect refuses to send. 0 or -EINVAL. */
static int check_args(enum parent_proto proto, uint8_t cmd, const char *user, const char *pass,
                      const char *name, const struct addr *ip)
{
    if (cmd != PARENT_CMD_CONNECT && !(proto == PARENT_SOCKS5 && cmd == PARENT_CMD_UDP_ASSOCIATE))
        return -EINVAL;
    if (name) {
        size_t nl = strlen(name);
        if (nl == 0 || nl > 255 || !text_ok(name, nl, false))
            return -EINVAL;
    } else if (!ip || (ip->family != AF_INET && ip->family != AF_INET6)) {
        return -EINVAL;
    }
    if (user && !text_ok(user, strlen(user), true))
        return -EINVAL;
    if (pass && !text_ok(pass, strlen(pass), true))
        return -EINVAL;
    return 0;
}

int parent_init(struct parent_hs *h, enum parent_proto proto, uint8_t cmd, const char *user,
                const char *pass, const char *name, const struct addr *ip, uint16_t port)
{
    memset(h, 0, sizeof(*h));
    h->proto = (uint8_t)proto;
    h->cmd = cmd;
    h->state = PARENT_MORE;
    h->has_auth = user != NULL;
    int rc = check_args(proto, cmd, user, pass, name, ip);
    if (rc) {
        h->state = PARENT_FAILED;
        return rc;
    }
    switch (proto) {
    case PARENT_SOCKS5:
        rc = init_socks5(h, user, pass, name, ip, port);
        break;
    case PARENT_SOCKS4:
        rc = init_socks4(h, user, name, ip, port);
        break;
    case PARENT_HTTP:
        rc = init_http(h, user, pass, name, ip, port);
        break;
    default:
        rc = -EINVAL;
        break;
    }
    if (rc) {
        h->state = PARENT_FAILED;
        return rc;
    }
    send_msg(h, MSG_FIRST);
    return 0;
}

size_t parent_pending(const struct parent_hs *h, const uint8_t **p)
{
    size_t left = (size_t)(h->cur_end - h->cur_start) - h->sent;
    if (h->state != PARENT_MORE || left == 0)
        return 0;
    *p = h->wire + h->cur_start + h->sent;
    return left;
}

void parent_sent(struct parent_hs *h, size_t n)
{
    size_t left = (size_t)(h->cur_end - h->cur_start) - h->sent;
    h->sent = (uint16_t)(h->sent + (n < left ? n : left));
}

/* SOCKS5: the method the parent chose (2 bytes in h->in). */
static void s5_method(struct parent_hs *h)
{
    if (h->in[0] != SOCKS5_VERSION) {
        bad_reply(h);
    } else if (h->in[1] == SOCKS5_METHOD_NONE) {
        if (!h->pipelined)
            send_msg(h, MSG_REQUEST);
        else
            h->in_len = 0; /* the request went with the greeting */
        h->step = STEP_S5_REPLY;
    } else if (h->in[1] == SOCKS5_METHOD_USERPASS && h->has_auth) {
        send_msg(h, MSG_AUTH);
        h->step = STEP_S5_AUTH;
    } else if (h->in[1] == SOCKS5_METHOD_NO_ACCEPTABLE) {
        fail(h, PARENT_FAIL_AUTH,
             h->has_auth ? "parent accepts none of our methods"
                         : "parent requires credentials (no acceptable methods)");
    } else {
        bad_reply(h);
    }
}

/* RFC 1929 status (2 bytes). VER is 1; a few servers answer 5: taken. */
static void s5_auth(struct parent_hs *h)
{
    if (h->in[0] != SOCKS5_AUTH_VERSION && h->in[0] != SOCKS5_VERSION)
        bad_reply(h);
    else if (h->in[1] != SOCKS5_AUTH_OK)
        fail(h, PARENT_FAIL_AUTH, "parent refused the credentials");
    else {
        send_msg(h, MSG_REQUEST);
        h->step = STEP_S5_REPLY;
    }
}

static const uint8_t s5_rep_fail[9] = {
    [1] = PARENT_FAIL_GENERAL,         [2] = PARENT_FAIL_DENIED,
    [3] = PARENT_FAIL_NET_UNREACHABLE, [4] = PARENT_FAIL_HOST_UNREACHABLE,
    [5] = PARENT_FAIL_REFUSED,         [6] = PARENT_FAIL_TIMEOUT,
    [7] = PARENT_FAIL_CMD_UNSUPPORTED, [8] = PARENT_FAIL_ADDR_UNSUPPORTED,
};

/* SOCKS5 reply so far in h->in: judge REP as soon as it is in, finish when
 * the whole reply is. */
static void s5_reply(struct parent_hs *h)
{
    if (h->in[0] != SOCKS5_VERSION) {
        bad_reply(h);
        return;
    }
    if (h->in_len == 2 && h->in[1] != SOCKS5_REP_SUCCEEDED) {
        uint8_t rep = h->in[1];
        char why[80];
        snprintf(why, sizeof(why), "parent replied %s (REP %u)", socks5_rep_str(rep), rep);
        fail(h,
             rep < sizeof(s5_rep_fail) ? (enum parent_fail)s5_rep_fail[rep] : PARENT_FAIL_GENERAL,
             why);
        return;
    }
    struct socks5_reply r;
    ssize_t n = socks5_parse_reply(h->in, h->in_len, &r);
    if (n < 0) {
        bad_reply(h);
    } else if (n > 0) {
        h->has_bnd = socks5_addr_to_addr(&r.bnd, &h->bnd);
        done(h);
    }
}

/* SOCKS4 reply so far: VN is 0 (a few servers echo 4: taken); CD 90. */
static void s4_reply(struct parent_hs *h)
{
    if (h->in[0] != 0 && h->in[0] != SOCKS4_VERSION) {
        bad_reply(h);
        return;
    }
    if (h->in_len == 2 && h->in[1] != SOCKS4_GRANTED) {
        uint8_t cd = h->in[1];
        if (cd == 92 || cd == 93)
            fail(h, PARENT_FAIL_AUTH, "parent refused the user id (identd)");
        else if (cd == SOCKS4_REJECTED)
            fail(h, PARENT_FAIL_GENERAL, "parent rejected the request (SOCKS4 91)");
        else
            bad_reply(h);
        return;
    }
    if (h->in_len < SOCKS4_REPLY_LEN)
        return;
    memset(&h->bnd, 0, sizeof(h->bnd));
    h->bnd.family = AF_INET;
    h->bnd.port = (uint16_t)((h->in[2] << 8) | h->in[3]);
    memcpy(h->bnd.ip, h->in + 4, 4);
    h->has_bnd = true;
    done(h);
}

/* The status line "HTTP/1.x NNN[ reason]" held in h->in: the status, or
 * -1 when malformed. */
static int http_status(const struct parent_hs *h)
{
    const uint8_t *p = h->in;
    if (h->in_len < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ')
        return -1;
    int s = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        s = s * 10 + (p[i] - '0');
    }
    if (s < 100 || (h->in_len > 12 && p[12] != ' '))
        return -1;
    return s;
}

enum parent_fail parent_http_status_fail(int s)
{
    switch (s) {
    case 407:
        return PARENT_FAIL_AUTH;
    case 403:
        return PARENT_FAIL_DENIED;
    case 405:
    case 501:
        return PARENT_FAIL_CMD_UNSUPPORTED;
    case 502:
        return PARENT_FAIL_REFUSED;
    case 503:
        return PARENT_FAIL_HOST_UNREACHABLE;
    case 504:
        return PARENT_FAIL_TIMEOUT;
    default:
        return PARENT_FAIL_GENERAL;
    }
}

/* An HTTP status that is not 1xx or 2xx: the failure it says. */
void parent_http_status_why(int status, bool has_auth, char *out, size_t len)
{
    if (parent_http_status_fail(status) == PARENT_FAIL_AUTH)
        snprintf(out, len, "parent %s (HTTP 407)",
                 has_auth ? "refused the credentials" : "requires credentials");
    else
        snprintf(out, len, "parent answered HTTP %d", status);
}

static void http_fail(struct parent_hs *h, int s)
{
    char why[80];
    parent_http_status_why(s, h->has_auth, why, sizeof(why));
    fail(h, parent_http_status_fail(s), why);
}

/* One byte of an HTTP response head. Lines end in CRLF (a bare LF is
 * taken); a non-2xx status fails at the end of its line, a 2xx finishes
 * at the blank line, and a 1xx head is skipped whole. */
static void http_byte(struct parent_hs *h, uint8_t ch)
{
    if (++h->head_len > PARENT_HTTP_HEAD_MAX) {
        fail(h, PARENT_FAIL_BAD_REPLY, "bad reply from parent (head over 8 KiB)");
        return;
    }
    if (ch == '\r')
        return;
    if (ch != '\n') {
        if (h->status == 0 && h->in_len < sizeof(h->in))
            h->in[h->in_len++] = ch;
        h->line_len++;
        return;
    }
    if (h->status == 0) { /* the end of the status line */
        int s = http_status(h);
        if (s < 0)
            bad_reply(h);
        else if (s >= 300)
            http_fail(h, s);
        else
            h->status = s;
    } else if (h->line_len == 0) { /* the blank line */
        if (h->status >= 200) {
            done(h);
            return;
        }
        h->status = 0; /* an interim 1xx: the real answer follows */
        h->in_len = 0;
    }
    h->line_len = 0;
}

/* One byte of a SOCKS reply (SOCKS5 method, auth status or reply; SOCKS4
 * reply): into h->in, then judged. */
static void socks_byte(struct parent_hs *h, uint8_t ch)
{
    if (h->in_len >= sizeof(h->in)) {
        bad_reply(h);
        return;
    }
    h->in[h->in_len++] = ch;
    switch (h->step) {
    case STEP_S5_METHOD:
        if (h->in_len == 2)
            s5_method(h);
        break;
    case STEP_S5_AUTH:
        if (h->in_len == 2)
            s5_auth(h);
        break;
    case STEP_S5_REPLY:
        s5_reply(h);
        break;
    case STEP_S4_REPLY:
        s4_reply(h);
        break;
    default:
        bad_reply(h);
        break;
    }
}

size_t parent_feed(struct parent_hs *h, const uint8_t *p, size_t len)
{
    size_t used = 0;
    const uint8_t *unused;
    while (used < len && h->state == PARENT_MORE && parent_pending(h, &unused) == 0) {
        uint8_t ch = p[used++];
        if (h->step == STEP_HTTP_HEAD)
            http_byte(h, ch);
        else
            socks_byte(h, ch);
    }
    return used;
}

/* The shortest SOCKS5 reply: VER REP RSV ATYP=3 LEN=0 PORT. */
#define S5_REPLY_MIN 7

size_t parent_want(const struct parent_hs *h)
{
    const uint8_t *unused;
    if (h->state != PARENT_MORE || parent_pending(h, &unused))
        return 0;
    size_t in = h->in_len;
    switch (h->step) {
    case STEP_S5_METHOD: /* a pipelined request's reply follows the method */
        return 2 - in + (h->pipelined ? S5_REPLY_MIN : 0);
    case STEP_S5_AUTH:
        return 2 - in;
    case STEP_S5_REPLY:
        if (in < 4)
            return S5_REPLY_MIN - in;
        switch (h->in[3]) {
        case SOCKS5_ATYP_IPV4:
            return 10 - in;
        case SOCKS5_ATYP_IPV6:
            return 22 - in;
        default: /* a name: its length byte, then the name and the port */
            return in < 5 ? 1 : (size_t)(7 + h->in[4]) - in;
        }
    case STEP_S4_REPLY:
        return SOCKS4_REPLY_LEN - in;
    default: /* an HTTP head ends where it ends: the caller peeks */
        return 0;
    }
}

bool parent_bnd(const struct parent_hs *h, struct addr *out)
{
    if (h->state != PARENT_DONE || !h->has_bnd)
        return false;
    *out = h->bnd;
    return true;
}
