/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound.c: the [outbound NAME] sections of a config file (outbound.h):
 * a parent's url, its credentials and certificate checks, a pool's members
 * and strategy, where a direct dial leaves from. Every key is judged as it
 * is read; outbound_list_finish() judges each section whole and finds the
 * members of pools. Messages name the key; config.c adds FILE:LINE.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/outbound.h"
#include "crypto/fcrypto.h"
#include "util/file.h"
#include "util/parse.h"

#define ERR(...) (snprintf(err, errlen, __VA_ARGS__), -EINVAL)

const char *outbound_kind_name(uint8_t kind)
{
    static const char *const names[] = {"direct", "reject", "socks5", "socks4a",
                                        "http",   "https",  "pool"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

void outbound_fini(struct config_outbound *o)
{
    free(o->user);
    if (o->pass) {
        fcrypto_wipe(o->pass, strlen(o->pass));
        free(o->pass);
    }
    free(o->ca_file);
    free(o->members_text);
    free(o->rev);
    o->rev = NULL;
    o->nrev = 0;
    o->user = o->pass = o->ca_file = o->members_text = NULL;
    outbound_tls_fini(o);
}

/* ---- url ------------------------------------------------------------------ */

/* Percent-decode s[0..n) into a new string (RFC 3986 userinfo). NULL on a
 * bad escape, an embedded NUL, more than 255 bytes (RFC 1929's limit), or
 * no memory (*nomem set). */
static char *pct_decode(const char *s, size_t n, bool *nomem)
{
    char *out = malloc(n + 1);
    if (!out) {
        *nomem = true;
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hex_digit((unsigned char)s[i + 1]) : -1;
            int lo = i + 2 < n ? hex_digit((unsigned char)s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                goto bad;
            ch = hi * 16 + lo;
            i += 2;
        }
        out[k++] = (char)ch;
    }
    out[k] = '\0';
    if (k > 255)
        goto bad;
    return out;
bad:
    fcrypto_wipe(out, n + 1);
    free(out);
    return NULL;
}

/* A host name as DNS allows it (letters, digits, '-', '_', dots between
 * labels of at most 63), or an IPv4 literal. */
static bool host_name_ok(const char *h)
{
    size_t n = strlen(h), label = 0;
    if (n == 0 || n > 253 || h[0] == '.' || h[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)h[i];
        if (ch == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        if (!isalnum(ch) && ch != '-' && ch != '_')
            return false;
        if (++label > 63)
            return false;
    }
    return true;
}

static const struct scheme {
    const char *name;
    uint8_t kind;
    bool remote_dns;
    uint16_t port;
} schemes[] = {
    {"socks5", OUTBOUND_KIND_SOCKS5, false, 1080}, {"socks5h", OUTBOUND_KIND_SOCKS5, true, 1080},
    {"socks4a", OUTBOUND_KIND_SOCKS4, true, 1080}, {"socks4", OUTBOUND_KIND_SOCKS4, true, 1080},
    {"http", OUTBOUND_KIND_HTTP, true, 80},        {"https", OUTBOUND_KIND_HTTPS, true, 443},
};

/* host[:port] or [v6][:port] of an authority into o->host, o->port. */
static int parse_hostport(const char *s, size_t n, uint16_t defport, struct config_outbound *o,
                          char *err, size_t errlen)
{
    char buf[300];
    if (n == 0)
        return ERR("no host (expected e.g. socks5://10.0.0.2:1080)");
    if (n >= sizeof(buf))
        return ERR("host too long");
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *host = buf, *port = NULL;
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');
        if (!close)
            return ERR("'[' without ']' around an IPv6 address");
        *close = '\0';
        host = buf + 1;
        if (close[1] == ':')
            port = close + 2;
        else if (close[1])
            return ERR("'%s' after ']' (expected :PORT)", close + 1);
        struct addr a;
        if (addr_parse_ip(host, 0, &a) || a.family != AF_INET6)
            return ERR("'%s' is not an IPv6 address", host);
    } else {
        char *colon = strchr(buf, ':');
        if (colon) {
            *colon = '\0';
            port = colon + 1;
        }
        if (!host_name_ok(host))
            return ERR("'%s' is not a host name or address (IPv6 goes in brackets)", host);
    }
    uint64_t p = defport;
    if (port && parse_u64(port, 1, 65535, &p))
        return ERR("'%s' is not a port (1-65535)", port);
    if (strlen(host) >= sizeof(o->host))
        return ERR("host too long");
    memcpy(o->host, host, strlen(host) + 1);
    o->port = (uint16_t)p;
    return 0;
}

int outbound_url_parse(const char *url, struct config_outbound *o, char *err, size_t errlen)
{
    if (!strcmp(url, "direct") || !strcmp(url, "reject")) {
        o->kind = url[0] == 'd' ? OUTBOUND_KIND_DIRECT : OUTBOUND_KIND_REJECT;
        return 0;
    }
    const char *sep = strstr(url, "://");
    const struct scheme *sc = NULL;
    for (size_t i = 0; sep && i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if ((size_t)(sep - url) == strlen(schemes[i].name) &&
            !strncasecmp(url, schemes[i].name, strlen(schemes[i].name)))
            sc = &schemes[i];
    if (!sc)
        return ERR("'%s': expected socks5://, socks5h://, socks4a://, http:// or https:// "
                   "(or direct, reject)",
                   url);
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    if (auth[alen] && strcmp(auth + alen, "/") != 0)
        return ERR("'%s': a parent proxy's url has no path, query or fragment", auth + alen);
    const char *at = memrchr(auth, '@', alen);
    const char *hp = at ? at + 1 : auth;
    struct config_outbound t = *o;
    t.kind = sc->kind;
    t.remote_dns = sc->remote_dns;
    t.user = t.pass = NULL;
    int rc = parse_hostport(hp, alen - (size_t)(hp - auth), sc->port, &t, err, errlen);
    if (rc)
        return rc;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        size_t ulen = colon ? (size_t)(colon - auth) : (size_t)(at - auth);
        bool nomem = false;
        t.user = pct_decode(auth, ulen, &nomem);
        if (t.user && colon)
            t.pass = pct_decode(colon + 1, (size_t)(at - colon - 1), &nomem);
        if (nomem || !t.user || (colon && !t.pass) || !t.user[0]) {
            outbound_fini(&t);
            if (nomem)
                return -ENOMEM;
            return ERR("bad user or password in the url (at most 255 bytes each, "
                       "%%XX escapes, not empty)");
        }
        if (t.kind == OUTBOUND_KIND_SOCKS4 && t.pass) {
            outbound_fini(&t);
            return ERR("socks4a has a user id but no password");
        }
    }
    free(o->user);
    free(o->pass);
    *o = t;
    return 0;
}

int outbound_pin_parse(const char *text, uint8_t pin[32])
{
    size_t n;
    uint8_t raw[48];
    if (strncmp(text, "sha256//", 8) != 0 || strlen(text + 8) != 44)
        return -EINVAL;
    if (fcrypto_base64_decode(raw, sizeof(raw), &n, text + 8, 44) || n != 32)
        return -EINVAL;
    memcpy(pin, raw, 32);
    return 0;
}

/* ---- sections -------------------------------------------------------------- */

int outbound_list_init(struct outbound_list *l)
{
    memset(l, 0, sizeof(*l));
    l->cap = 8;
    l->v = calloc(l->cap, sizeof(*l->v));
    if (!l->v)
        return -ENOMEM;
    l->n = 2;
    snprintf(l->v[0].name, sizeof(l->v[0].name), "direct");
    snprintf(l->v[0].origin, sizeof(l->v[0].origin), "built-in");
    l->v[0].kind = OUTBOUND_KIND_DIRECT;
    snprintf(l->v[1].name, sizeof(l->v[1].name), "reject");
    snprintf(l->v[1].origin, sizeof(l->v[1].origin), "built-in");
    l->v[1].kind = OUTBOUND_KIND_REJECT;
    return 0;
}

void outbound_list_fini(struct outbound_list *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        outbound_fini(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

int outbound_find(const struct outbound_list *l, const char *name)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return (int)i;
    return -1;
}

int outbound_section(struct outbound_list *l, const char *name, const char *origin,
                     struct config_outbound **out, char *err, size_t errlen)
{
    size_t n = strlen(name);
    if (n == 0)
        return ERR("[outbound] needs a name: [outbound NAME]");
    if (n >= OUTBOUND_NAME_MAX)
        return ERR("outbound name longer than %d characters", OUTBOUND_NAME_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
            return ERR("outbound name '%s': letters, digits, '-', '_' and '.' only", name);
    int k = outbound_find(l, name);
    if (k >= 0)
        return ERR("[outbound %s] %s (at %s)", name,
                   k < 2 ? "is built in and cannot be redefined" : "is defined twice",
                   l->v[k].origin);
    if (l->n >= OUTBOUND_MAX)
        return ERR("more than %d outbounds", OUTBOUND_MAX - 2);
    if (l->n == l->cap) {
        struct config_outbound *v = realloc(l->v, 2 * l->cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap *= 2;
    }
    struct config_outbound *o = &l->v[l->n++];
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "%s", name);
    snprintf(o->origin, sizeof(o->origin), "%s", origin);
    o->kind = OUTBOUND_KIND_DIRECT; /* until a url or members say otherwise */
    o->backoff_ms = 5000;
    o->tunnel_wait_ms = 10000;
    *out = o;
    return 0;
}

/* A path as written, relative to the config file's directory. */
static char *path_in(const char *dir, const char *v)
{
    char buf[4096];
    if (v[0] != '/' && dir && dir[0])
        snprintf(buf, sizeof(buf), "%s/%s", dir, v);
    else
        snprintf(buf, sizeof(buf), "%s", v);
    return strdup(buf);
}

/* credentials_file: one line "USER:PASSWORD" ('#' lines and blank lines
 * skipped), so a secret need not sit in the config file. */
static int read_credentials(struct config_outbound *o, const char *dir, const char *v, char *err,
                            size_t errlen)
{
    char *path = path_in(dir, v), *text = NULL;
    if (!path)
        return -ENOMEM;
    int rc = file_read_text(path, 4096, &text, NULL);
    if (rc) {
        rc = ERR("cannot read %s: %s", path, rc == -EFBIG ? "larger than 4 KiB" : strerror(-rc));
        free(path);
        return rc;
    }
    rc = ERR("%s holds no line USER:PASSWORD", path);
    for (char *save = NULL, *line = strtok_r(text, "\r\n", &save); line;
         line = strtok_r(NULL, "\r\n", &save)) {
        line = str_trim(line);
        if (!*line || *line == '#')
            continue;
        char *colon = strchr(line, ':');
        if (!colon || colon == line || strlen(line) - 1 > 510 || colon - line > 255 ||
            strlen(colon + 1) > 255) {
            rc = ERR("%s: expected one line USER:PASSWORD (each at most 255 bytes)", path);
            break;
        }
        free(o->user);
        free(o->pass);
        o->user = strndup(line, (size_t)(colon - line));
        o->pass = strdup(colon + 1);
        rc = o->user && o->pass ? 0 : -ENOMEM;
        break;
    }
    fcrypto_wipe(text, strlen(text));
    free(text);
    free(path);
    return rc;
}

static int set_duration_key(uint32_t *dst, const char *v, uint64_t min, uint64_t max,
                            const char *what, char *err, size_t errlen)
{
    uint64_t ms;
    if (parse_duration_ms(v, min, max, &ms))
        return ERR("'%s' is not %s", v, what);
    *dst = (uint32_t)ms;
    return 0;
}

static int set_health_target(struct config_outbound *o, const char *v, char *err, size_t errlen)
{
    struct config_outbound t;
    memset(&t, 0, sizeof(t));
    const char *colon = strrchr(v, ':');
    if (!colon || (v[0] == '[' && colon < strchr(v, ']')))
        return ERR("'%s': expected HOST:PORT (the target each check CONNECTs to)", v);
    int rc = parse_hostport(v, strlen(v), 0, &t, err, errlen);
    if (rc)
        return rc;
    memcpy(o->health_host, t.host, sizeof(o->health_host));
    o->health_port = t.port;
    return 0;
}

static int set_strategy(struct config_outbound *o, const char *v, char *err, size_t errlen)
{
    if (!strcmp(v, "failover"))
        o->strategy = OUTBOUND_FAILOVER;
    else if (!strcmp(v, "round-robin"))
        o->strategy = OUTBOUND_ROUND_ROBIN;
    else if (!strcmp(v, "least-connections"))
        o->strategy = OUTBOUND_LEAST_CONN;
    else
        return ERR("'%s': expected failover, round-robin or least-connections", v);
    return 0;
}

int outbound_set_key(struct config_outbound *o, const char *key, const char *v, const char *dir,
                     int line, char *err, size_t errlen)
{
    if (!strcmp(key, "url"))
        return outbound_url_parse(v, o, err, errlen);
    if (!strcmp(key, "members")) {
        free(o->members_text);
        o->members_line = line;
        return (o->members_text = strdup(v)) ? 0 : -ENOMEM;
    }
    if (!strcmp(key, "strategy"))
        return set_strategy(o, v, err, errlen);
    if (!strcmp(key, "health_check"))
        return set_duration_key(&o->health_ms, v, 100, 3600000, "a duration (100ms to 1h)", err,
                                errlen);
    if (!strcmp(key, "health_target"))
        return set_health_target(o, v, err, errlen);
    if (!strcmp(key, "backoff"))
        return set_duration_key(&o->backoff_ms, v, 100, 3600000, "a duration (100ms to 1h)", err,
                                errlen);
    if (!strcmp(key, "connect_timeout"))
        return set_duration_key(&o->connect_timeout_ms, v, 1, 3600000, "a duration (1ms to 1h)",
                                err, errlen);
    if (!strcmp(key, "mux")) {
        static const char *const names[] = {"auto", "h2", "http1"};
        for (uint8_t i = 0; i < 3; i++)
            if (!strcmp(v, names[i])) {
                o->mux = i;
                return 0;
            }
        return ERR("'%s': expected auto, h2 or http1", v);
    }
    if (!strcmp(key, "websocket")) {
        if (v[0] != '/' || strlen(v) >= sizeof(o->ws_path) || strpbrk(v, " \t#"))
            return ERR("'%s' is not a path (expected e.g. /tunnel)", v);
        snprintf(o->ws_path, sizeof(o->ws_path), "%s", v);
        return 0;
    }
    if (!strcmp(key, "fast_open")) {
        if (parse_bool(v, &o->fast_open))
            return ERR("'%s': expected yes or no", v);
        return 0;
    }
    if (!strcmp(key, "tunnel_wait"))
        return set_duration_key(&o->tunnel_wait_ms, v, 1, 3600000, "a duration (1ms to 1h)", err,
                                errlen);
    if (!strcmp(key, "pin")) {
        if (outbound_pin_parse(v, o->pin))
            return ERR("'%s' is not a pin (expected sha256// and the base64 of 32 bytes, as "
                       "'ferry cert' or curl's --pinnedpubkey write it)",
                       v);
        o->has_pin = true;
        return 0;
    }
    if (!strcmp(key, "ca_file")) {
        free(o->ca_file);
        return (o->ca_file = path_in(dir, v)) ? 0 : -ENOMEM;
    }
    if (!strcmp(key, "credentials_file"))
        return read_credentials(o, dir, v, err, errlen);
    if (!strcmp(key, "source") || !strcmp(key, "device")) {
        char text[80];
        snprintf(text, sizeof(text), "%s%s", key[0] == 'd' ? "device=" : "", v);
        int rc = config_source_parse(text, &o->source);
        if (rc == -ENODEV)
            return ERR("'%s': no such network device on this host", v);
        if (rc)
            return ERR("'%s' is not %s", v,
                       key[0] == 'd' ? "a network device name" : "an IP address");
        return 0;
    }
    if (!strcmp(key, "reverse"))
        return outbound_reverse_add(o, v, err, errlen);
    if (!strcmp(key, "ip_preference")) {
        if (outbound_ip_preference_parse(v, &o->ip_preference))
            return ERR("'%s': expected any, ipv4, ipv6, ipv4-first or ipv6-first", v);
        o->ip_preference_set = true;
        return 0;
    }
    return ERR("unknown key (known: url, members, strategy, health_check, health_target, "
               "backoff, connect_timeout, pin, ca_file, credentials_file, source, device, "
               "ip_preference, mux, tunnel_wait, fast_open, reverse, websocket)");
}

/* ---- the whole list ------------------------------------------------------ */

/* Append member idx of pool p (a pool's own members, depth first).
 * path[] holds the pools being expanded, for cycles. */
static bool add_members(struct outbound_list *l, struct config_outbound *p, uint16_t *out,
                        uint8_t *n, uint32_t idx, uint32_t *path, int depth, const char *file,
                        struct msglist *errs);

static bool expand(struct outbound_list *l, struct config_outbound *p, uint16_t *out, uint8_t *n,
                   uint32_t self, uint32_t *path, int depth, const char *file, struct msglist *errs)
{
    struct config_outbound *o = &l->v[self];
    for (uint8_t i = 0; i < o->nmembers; i++)
        if (!add_members(l, p, out, n, o->members[i], path, depth, file, errs))
            return false;
    return true;
}

static bool add_members(struct outbound_list *l, struct config_outbound *p, uint16_t *out,
                        uint8_t *n, uint32_t idx, uint32_t *path, int depth, const char *file,
                        struct msglist *errs)
{
    struct config_outbound *m = &l->v[idx];
    if (m->kind != OUTBOUND_KIND_POOL) {
        for (uint8_t i = 0; i < *n; i++)
            if (out[i] == idx)
                return true; /* listed twice through nesting: the first place counts */
        if (*n == OUTBOUND_MAX_MEMBERS) {
            msglist_push(errs, "%s:%d: outbound %s: members: more than %d after nested pools", file,
                         p->members_line, p->name, OUTBOUND_MAX_MEMBERS);
            return false;
        }
        out[(*n)++] = (uint16_t)idx;
        return true;
    }
    for (int d = 0; d < depth; d++) {
        if (path[d] != idx)
            continue;
        char chain[1024] = "";
        size_t used = 0;
        for (int k = d; k < depth && used < sizeof(chain); k++)
            used +=
                (size_t)snprintf(chain + used, sizeof(chain) - used, "%s -> ", l->v[path[k]].name);
        msglist_push(errs, "%s:%d: outbound %s: members: a cycle: %s%s", file, p->members_line,
                     p->name, chain, m->name);
        return false;
    }
    if (depth >= 8) {
        msglist_push(errs, "%s:%d: outbound %s: members: pools nested more than 8 deep", file,
                     p->members_line, p->name);
        return false;
    }
    path[depth] = idx;
    return expand(l, p, out, n, idx, path, depth + 1, file, errs);
}

/* members = a, b, c -> indexes (not yet flattened). */
static void find_members(struct outbound_list *l, struct config_outbound *o, const char *file,
                         struct msglist *errs)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", o->members_text);
    for (char *save = NULL, *w = strtok_r(buf, ", \t", &save); w;
         w = strtok_r(NULL, ", \t", &save)) {
        int k = outbound_find(l, w);
        if (k < 0) {
            msglist_push(errs, "%s:%d: outbound %s: members: '%s' is not an outbound", file,
                         o->members_line, o->name, w);
            continue;
        }
        if (k == OUTBOUND_REJECT) {
            msglist_push(errs,
                         "%s:%d: outbound %s: members: 'reject' cannot be a member (a pool whose "
                         "members all fail refuses anyway)",
                         file, o->members_line, o->name);
            continue;
        }
        for (uint8_t i = 0; i < o->nmembers; i++)
            if (o->members[i] == k)
                msglist_push(errs, "%s:%d: outbound %s: members: '%s' is listed twice", file,
                             o->members_line, o->name, w);
        if (o->nmembers == OUTBOUND_MAX_MEMBERS) {
            msglist_push(errs, "%s:%d: outbound %s: members: more than %d", file, o->members_line,
                         o->name, OUTBOUND_MAX_MEMBERS);
            return;
        }
        o->members[o->nmembers++] = (uint16_t)k;
    }
    if (!o->nmembers && !errs->n)
        msglist_push(errs, "%s:%d: outbound %s: members: no member named", file, o->members_line,
                     o->name);
}

/* What a section says must hang together. */
static void check_section(const struct config_outbound *o, struct msglist *errs)
{
    const char *why = NULL;
    bool pool = o->kind == OUTBOUND_KIND_POOL, parent = o->kind >= OUTBOUND_KIND_SOCKS5 && !pool;
    if ((o->has_pin || o->ca_file) && o->kind != OUTBOUND_KIND_HTTPS)
        why = "pin and ca_file are for https:// parents";
    else if (o->mux && o->kind != OUTBOUND_KIND_HTTPS)
        why = "mux is for https:// parents";
    else if (o->ws_path[0] && o->kind != OUTBOUND_KIND_HTTPS)
        why = "websocket is for https:// parents";
    else if (o->fast_open && o->kind != OUTBOUND_KIND_HTTPS)
        why = "fast_open is for https:// parents spoken HTTP/2";
    else if (o->fast_open && o->mux == OUTBOUND_MUX_HTTP1)
        why = "fast_open sends the first bytes on the HTTP/2 stream: not with mux = http1";
    else if (o->ws_path[0] && o->mux == OUTBOUND_MUX_HTTP1)
        why = "websocket carries the HTTP/2 tunnel: not with mux = http1";
    else if (o->has_pin && o->ca_file)
        why = "pin and ca_file: choose one (a pin replaces the CA check)";
    else if (!pool && (o->health_ms || o->health_host[0] || o->strategy))
        why = "strategy, health_check and health_target are for pools (members = ...)";
    else if (pool && o->health_ms && !o->health_host[0])
        why = "health_check needs health_target = HOST:PORT (what each check CONNECTs to "
              "through the member)";
    else if (pool && !o->health_ms && o->health_host[0])
        why = "health_target without health_check = INTERVAL does nothing";
    else if (pool && (o->source.addr.family || o->source.device[0] || o->ip_preference_set))
        why = "source, device and ip_preference belong to the members, not the pool";
    else if (!parent && o->user)
        why = "credentials are for parent proxies (url = socks5://..., http://...)";
    else if (o->kind == OUTBOUND_KIND_REJECT &&
             (o->source.addr.family || o->source.device[0] || o->connect_timeout_ms))
        why = "url = reject takes no other key";
    if (why)
        msglist_push(errs, "%s: outbound %s: %s", o->origin, o->name, why);
}

void outbound_list_finish(struct outbound_list *l, const char *file, struct msglist *errs)
{
    size_t n0 = errs->n;
    for (uint32_t i = 2; i < l->n; i++) {
        struct config_outbound *o = &l->v[i];
        if (o->members_text) {
            if (o->kind != OUTBOUND_KIND_DIRECT || o->user)
                msglist_push(errs,
                             "%s:%d: outbound %s: members: a pool has members or a url, "
                             "not both",
                             file, o->members_line, o->name);
            o->kind = OUTBOUND_KIND_POOL;
        }
    }
    for (uint32_t i = 2; i < l->n; i++)
        if (l->v[i].members_text)
            find_members(l, &l->v[i], file, errs);
    if (errs->n != n0)
        return;
    for (uint32_t i = 2; i < l->n; i++) {
        struct config_outbound *o = &l->v[i];
        if (o->kind != OUTBOUND_KIND_POOL)
            continue;
        uint16_t flat[OUTBOUND_MAX_MEMBERS];
        uint8_t nflat = 0;
        uint32_t path[8] = {i};
        if (expand(l, o, flat, &nflat, i, path, 1, file, errs)) {
            memcpy(o->members, flat, sizeof(flat));
            o->nmembers = nflat;
        }
    }
    for (uint32_t i = 2; i < l->n; i++) {
        struct config_outbound *o = &l->v[i];
        size_t before = errs->n;
        check_section(o, errs);
        if (o->nrev && (o->kind != OUTBOUND_KIND_HTTPS || o->mux == OUTBOUND_MUX_HTTP1))
            msglist_push(errs,
                         "%s: outbound %s: reverse needs an https:// url spoken HTTP/2 (mux = "
                         "auto or h2): the server binds through ferry-listen streams",
                         o->origin, o->name);
        free(o->members_text);
        o->members_text = NULL;
        /* A pool whose members all resolve names themselves does too: a
         * session through it is judged by the name, as through them. */
        if (o->kind == OUTBOUND_KIND_POOL) {
            bool all = o->nmembers > 0;
            for (uint8_t k = 0; k < o->nmembers; k++)
                all = all && l->v[o->members[k]].remote_dns;
            o->remote_dns = all;
        }
        char err[320];
        if (errs->n == before && outbound_tls_load(o, err, sizeof(err)) < 0)
            msglist_push(errs, "%s: %s", o->origin, err);
    }
}
