/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli.c: `ferry edge keygen` (a keyring line with a fresh random key) and
 * `ferry edge sign` (a token host name, or a hop address for testing a
 * front). Reads the command line and prints; the forms are
 * proto/signhost.h's and the tags edge/signkey.h's.
 */
#include "edge/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crypto/fcrypto.h"
#include "edge/signkey.h"
#include "proto/hostname.h"
#include "util/parse.h"

static const char usage[] =
    "usage: ferry edge keygen [--kid N] [--state active|verify]\n"
    "       ferry edge sign --keys FILE --host DOMAIN [--ttl DURATION] [--kid N]\n"
    "                       [--at UNIXTIME]\n"
    "       ferry edge sign --keys FILE --hop --host HOST --client IP:PORT [--kid N]\n"
    "                       [--at UNIXTIME] [--raw]\n"
    "\n"
    "Signed host names for [edge] routes with signed = token or signed = hop\n"
    "(docs/edge.md).\n"
    "\n"
    "keygen  print a keyring line \"KID STATE KEY\" with a new random 32-byte key;\n"
    "        append it to the file named by signed_keys (mode 0600)\n"
    "  --kid N         the key id, 0 to 31 (default 1)\n"
    "  --state S       active (signs and verifies, the default) or verify\n"
    "\n"
    "sign    print a host name a player can type: TOKEN.DOMAIN, valid for the\n"
    "        routes of DOMAIN's wildcard (route = *.DOMAIN -> ... signed=token)\n"
    "  --keys FILE     the keyring (the signing key must be active)\n"
    "  --host DOMAIN   the domain the token is for (hop: the routed host)\n"
    "  --ttl DURATION  valid this long from --at (default 24h, at most 366d)\n"
    "  --kid N         sign with this key (default: the active key with the\n"
    "                  highest id)\n"
    "  --at UNIXTIME   the time to sign at (default now)\n"
    "  --hop           print the handshake address a front would send for\n"
    "                  --client instead: HOST\\0ferry1\\0KID.TS.IP:PORT.TAG, the\n"
    "                  NULs written as \\0 (--raw: as bytes)\n"
    "\n"
    "Exit status: 0 printed, 1 the keyring cannot sign, 2 usage error.\n"
    "\n"
    "Example:  ferry edge keygen --kid 1 >> /etc/ferry/edge.keys\n"
    "          ferry edge sign --keys /etc/ferry/edge.keys --host play.example.com --ttl 7d\n";

static int keygen(int kid, const char *state)
{
    uint8_t key[SIGNKEY_LEN];
    char b64[64];
    if (fcrypto_init()) {
        fprintf(stderr, "ferry edge keygen: libsodium failed to start\n");
        return 1;
    }
    fcrypto_random(key, sizeof(key));
    fcrypto_base64_encode(b64, sizeof(b64), key, sizeof(key));
    fcrypto_wipe(key, sizeof(key));
    printf("%d %s %s\n", kid, state, b64);
    fcrypto_wipe(b64, sizeof(b64));
    return 0;
}

struct sign_opts {
    const char *keys, *host, *client;
    uint64_t ttl_s, at;
    int kid;
    bool hop, raw;
};

static int print_hop(const struct sign_opts *o, struct signhost *sh, const char *host)
{
    uint8_t suffix[SIGNHOST_HOP_MAX];
    size_t n = signhost_format_hop(sh, suffix, sizeof(suffix));
    fputs(host, stdout);
    for (size_t i = 0; i < n; i++) {
        if (suffix[i] || o->raw)
            putchar(suffix[i]);
        else
            fputs("\\0", stdout);
    }
    putchar('\n');
    return 0;
}

static int sign(const struct sign_opts *o)
{
    char host[HOSTNAME_MAX + 1], err[600];
    size_t hl = hostname_canon((const uint8_t *)o->host, strlen(o->host), host);
    if (!hl) {
        fprintf(stderr, "ferry edge sign: --host '%s' is not a host name\n", o->host);
        return 2;
    }
    if (!o->hop && hl + SIGNHOST_TOKEN_LEN + 1 > 253) {
        fprintf(stderr, "ferry edge sign: --host '%s' leaves no room for a token label\n", host);
        return 2;
    }
    struct signkey_ring *ring = malloc(sizeof(*ring));
    if (!ring || fcrypto_init() || signkey_load(o->keys, ring, err, sizeof(err))) {
        fprintf(stderr, "ferry edge sign: %s\n", ring ? err : "out of memory");
        free(ring);
        return 1;
    }
    int kid = o->kid >= 0 ? o->kid : signkey_active(ring);
    struct signhost sh = {.form = o->hop ? SIGNHOST_HOP : SIGNHOST_TOKEN,
                          .kid = (uint8_t)(kid < 0 ? 0 : kid),
                          .time = o->hop ? o->at : o->at + o->ttl_s};
    int rc = 0;
    if (o->hop && addr_parse(o->client, -1, &sh.client)) {
        fprintf(stderr, "ferry edge sign: --client '%s' is not IP:PORT\n", o->client);
        rc = 2;
    } else if (kid < 0 || signkey_sign(ring, &sh, host, hl)) {
        fprintf(stderr, "ferry edge sign: %s has no active key%s%s\n", o->keys,
                o->kid >= 0 ? " with id " : "", o->kid >= 0 ? "given by --kid" : "");
        rc = 1;
    } else if (o->hop) {
        rc = print_hop(o, &sh, host);
    } else {
        char token[SIGNHOST_TOKEN_LEN + 1];
        signhost_format_token(sh.kid, sh.time, sh.tag, token);
        printf("%s.%s\n", token, host);
    }
    fcrypto_wipe(ring, sizeof(*ring));
    free(ring);
    return rc;
}

/* A usage error: what and the argument it is about, then the usage. */
static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "ferry edge: %s%s%s\n\n%s", what, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

int edge_main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"kid", required_argument, NULL, 'k'},
        {"state", required_argument, NULL, 's'},
        {"keys", required_argument, NULL, 'K'},
        {"host", required_argument, NULL, 'H'},
        {"ttl", required_argument, NULL, 't'},
        {"at", required_argument, NULL, 'a'},
        {"client", required_argument, NULL, 'c'},
        {"hop", no_argument, NULL, 'p'},
        {"raw", no_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "keygen") && strcmp(sub, "sign"))
        return bad("no such command (expected keygen or sign)", sub);
    struct sign_opts o = {.kid = -1, .ttl_s = 86400, .at = (uint64_t)time(NULL)};
    const char *state = "active";
    uint64_t v;
    optind = 1;
    for (int ch; (ch = getopt_long(argc - 1, argv + 1, "h", longs, NULL)) != -1;) {
        switch (ch) {
        case 'k':
            if (parse_u64(optarg, 0, SIGNHOST_KIDS - 1, &v))
                return bad("--kid is not 0..31", optarg);
            o.kid = (int)v;
            break;
        case 's':
            if (strcmp(optarg, "active") && strcmp(optarg, "verify"))
                return bad("--state is not active or verify", optarg);
            state = optarg;
            break;
        case 'K':
            o.keys = optarg;
            break;
        case 'H':
            o.host = optarg;
            break;
        case 'c':
            o.client = optarg;
            break;
        case 'p':
            o.hop = true;
            break;
        case 'r':
            o.raw = true;
            break;
        case 't':
            if (parse_duration_ms(optarg, 1000, 366ull * 86400000, &v))
                return bad("--ttl is not a duration of 1s to 366d", optarg);
            o.ttl_s = v / 1000;
            break;
        case 'a':
            if (parse_u64(optarg, 0, (1ull << 40) - 1, &v))
                return bad("--at is not a unix time", optarg);
            o.at = v;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            return bad("bad option", NULL);
        }
    }
    if (optind + 1 < argc)
        return bad("unexpected argument", argv[optind + 1]);
    if (!strcmp(sub, "keygen"))
        return keygen(o.kid < 0 ? 1 : o.kid, state);
    if (!o.keys || !o.host)
        return bad("sign needs --keys FILE and --host HOST", NULL);
    if (o.hop && !o.client)
        return bad("sign --hop needs --client IP:PORT", NULL);
    if (!o.hop && o.at + o.ttl_s >= 1ull << 40)
        return bad("--at plus --ttl is past the year 36812", NULL);
    return sign(&o);
}
