/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * listen.c: listen lines. "listen = ADDR:PORT [option...][, ADDR:PORT...]"
 * and ferry -l become struct config_listen rows, each with its options
 * (protocols=, tls, ws, source=, ...); "protocols = ..." and the protocol
 * lists they share are read and named here too. Parsing only: this room
 * must not open sockets (server/ binds them) nor check one listener against
 * another (config.c does, after every file is read).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/loader.h"
#include "util/parse.h"

/* One listen address; origin says where it came from for later messages. */
int config_listen_add(struct config *c, struct msglist *errs, const char *text, const char *origin)
{
    if (c->nlisten == CONFIG_MAX_LISTEN) {
        msglist_push(errs, "%s: listen: more than %d addresses", origin, CONFIG_MAX_LISTEN);
        return -E2BIG;
    }
    struct config_listen *l = &c->listen[c->nlisten];
    l->tls = strncmp(text, "tls://", 6) == 0;
    if (l->tls)
        text += 6;
    if (addr_parse(text, -1, &l->addr)) {
        msglist_push(errs,
                     "%s: listen: '%s' is not a numeric address and port "
                     "(expected e.g. 127.0.0.1:1080 or [::1]:1080)",
                     origin, text);
        return -EINVAL;
    }
    snprintf(l->origin, sizeof(l->origin), "%s", origin);
    c->nlisten++;
    return 0;
}

int config_parse_protocols(const char *s, uint8_t *mask)
{
    static const struct {
        const char *name;
        uint8_t bit;
    } names[] = {{"socks5", PROTO_SOCKS5}, {"socks4", PROTO_SOCKS4}, {"http", PROTO_HTTP}};
    uint8_t m = 0;
    while (*s) {
        size_t n = strcspn(s, ",+ \t");
        if (n) {
            size_t i;
            for (i = 0; i < ARRAY_LEN(names); i++)
                if (strlen(names[i].name) == n && strncasecmp(s, names[i].name, n) == 0)
                    break;
            if (i == ARRAY_LEN(names))
                return -EINVAL;
            m |= names[i].bit;
        }
        s += n;
        s += strspn(s, ",+ \t");
    }
    if (!m)
        return -EINVAL;
    *mask = m;
    return 0;
}

const char *config_protocols_name(uint8_t mask, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s", mask & PROTO_SOCKS5 ? "socks5" : "",
             (mask & PROTO_SOCKS5) && (mask & (PROTO_SOCKS4 | PROTO_HTTP)) ? "+" : "",
             mask & PROTO_SOCKS4 ? "socks4" : "",
             (mask & PROTO_SOCKS4) && (mask & PROTO_HTTP) ? "+" : "",
             mask & PROTO_HTTP ? "http" : "");
    return buf;
}

int config_listen_set_protocols(struct loader *ld, const struct key *k, const char *v)
{
    if (config_parse_protocols(v, &ld->c->protocols)) {
        bad(ld, k->name, "'%s' is not a protocol list (expected %s)", v, k->expect);
        return -EINVAL;
    }
    return 0;
}

/* One option of a listen address ("protocols=http"); 0 or -EINVAL. */
static int set_listen_option(struct loader *ld, struct config_listen *l, const char *word)
{
    uint8_t mask;
    if (strncmp(word, "proxy_protocol=", 15) == 0) {
        const char *pv = word + 15;
        uint8_t ver = strcmp(pv, "v1") == 0 ? 1 : strcmp(pv, "v2") == 0 ? 2 : 0;
        if (!ver) {
            bad(ld, "listen", "'%s' is not a PROXY protocol version (expected v1 or v2)", pv);
            return -EINVAL;
        }
        l->proxy_protocol = ver;
    } else if (strncmp(word, "source=", 7) == 0) {
        if (strchr(word + 7, '=') || config_source_parse(word + 7, &l->source)) {
            bad(ld, "listen", "source: '%s' is not an IP address (expected e.g. 192.0.2.7)",
                word + 7);
            return -EINVAL;
        }
    } else if (strncmp(word, "device=", 7) == 0) {
        int rc = config_source_parse(word, &l->source);
        if (rc) {
            bad(ld, "listen", "device: '%s' %s", word + 7,
                rc == -ENODEV ? "is not a network interface of this host"
                              : "is not an interface name");
            return -EINVAL;
        }
    } else if (strncmp(word, "forward=", 8) == 0) {
        int rc =
            parse_host_port(word + 8, l->forward_host, sizeof(l->forward_host), &l->forward_port);
        if (rc) {
            bad(ld, "listen", "forward: '%s' %s", word + 8,
                rc == -ERANGE ? "has a port outside 1-65535"
                              : "is not HOST:PORT (expected e.g. 10.0.0.5:80, db.internal:5432 "
                                "or [2001:db8::1]:80)");
            return -EINVAL;
        }
    } else if (strncmp(word, "websocket=", 10) == 0 || strncmp(word, "decoy=", 6) == 0) {
        char why[300];
        if (config_listen_ws(l, word, why, sizeof(why))) {
            bad(ld, "listen", "%s", why);
            return -EINVAL;
        }
    } else if (strncmp(word, "protocols=", 10) != 0) {
        bad(ld, "listen",
            "unknown option '%s' (known: protocols=socks5+socks4+http, proxy_protocol=v1|v2, "
            "source=ADDR, device=NAME, forward=HOST:PORT, websocket=/PATH, decoy=HOST:PORT)",
            word);
        return -EINVAL;
    } else if (config_parse_protocols(word + 10, &mask)) {
        bad(ld, "listen", "'%s' is not a protocol list (socks5, socks4, http joined by +)",
            word + 10);
        return -EINVAL;
    } else {
        l->protocols = mask;
    }
    return 0;
}

/* "listen" may be given several times and each value may hold several
 * addresses separated by commas or spaces. A word with '=' is an option of
 * the address before it: "listen = 127.0.0.1:8080 protocols=http". The
 * first listen line in the file replaces the built-in default. */
int config_listen_set(struct loader *ld, const struct key *k, const char *v)
{
    (void)k;
    char origin[160], word[128];
    snprintf(origin, sizeof(origin), "%s:%d", ld->file, ld->line);
    if (!ld->listen_from_file) {
        ld->c->nlisten = 0;
        ld->listen_from_file = true;
    }
    if (!strcmp(v, "none"))
        return 0; /* no local listener (a client with only reverse remotes) */
    int rc = 0;
    const char *p = v;
    while (*p) {
        size_t n = strcspn(p, ", \t");
        if (n > 0) {
            if (n >= sizeof(word)) {
                bad(ld, "listen", "address too long");
                return -EINVAL;
            }
            memcpy(word, p, n);
            word[n] = '\0';
            if (strchr(word, '=')) {
                if (ld->c->nlisten == 0) {
                    bad(ld, "listen", "option '%s' before any address", word);
                    rc = -EINVAL;
                } else if (set_listen_option(ld, &ld->c->listen[ld->c->nlisten - 1], word)) {
                    rc = -EINVAL;
                }
            } else if (config_listen_add(ld->c, ld->errs, word, origin)) {
                rc = -EINVAL;
            }
        }
        p += n;
        p += strspn(p, ", \t");
    }
    if (!rc && ld->c->nlisten == 0) {
        bad(ld, "listen", "no address given");
        rc = -EINVAL;
    }
    return rc;
}
