/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cert.c: `ferry cert`: make a self-signed certificate and key for a TLS
 * listener (selfsigned.h does the work), then print the pin a client needs
 * and a curl line that uses it. This file only reads the command line,
 * picks the names to certify and talks to the user; the pin goes alone on
 * the first line of standard output, so scripts can take it with head -n1.
 */
#include "tls/cert.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tls/selfsigned.h"
#include "util/parse.h"

static const char usage[] =
    "usage: ferry cert --out DIR [--name HOST]... [--days N] [--force]\n"
    "\n"
    "Make a self-signed certificate and key for a TLS listener (ECDSA P-256):\n"
    "DIR/cert.pem (mode 0644) and DIR/key.pem (mode 0600, unencrypted). DIR is\n"
    "created (mode 0700) when missing; its parent must exist. Then print the\n"
    "client pin, sha256//BASE64 of the certificate's public key (curl's\n"
    "--proxy-pinnedpubkey), alone on the first line, and a curl line using it.\n"
    "\n"
    "  --out DIR     where to write cert.pem and key.pem\n"
    "  --name HOST   a DNS name or IP address the certificate is for; repeat for\n"
    "                several (at most 6); the first is also the subject's CN.\n"
    "                \"localhost\" brings IP 127.0.0.1 and ::1 with it. Default:\n"
    "                this machine's host name, localhost, 127.0.0.1 and ::1\n"
    "  --days N      valid for N days from now, 1 to 3650 (default 365); the\n"
    "                validity starts an hour ago, for clients whose clock lags\n"
    "  --force       replace existing files (without it, ferry cert refuses\n"
    "                when DIR/cert.pem or DIR/key.pem exists and writes nothing)\n"
    "  -h, --help    show this help\n"
    "\n"
    "Exit status: 0 done, 1 nothing usable written (files exist, DIR not\n"
    "writable), 2 usage error.\n"
    "\n"
    "Example:  ferry cert --out /etc/ferry/tls --name proxy.example.com\n";

#define NAME_ARGS_MAX (TLS_CERT_NAMES_MAX - 2) /* room for localhost's two IPs */

static bool has_name(const struct tls_cert_conf *conf, const char *name)
{
    for (size_t i = 0; i < conf->nnames; i++)
        if (strcasecmp(conf->names[i], name) == 0)
            return true;
    return false;
}

static void add_name(struct tls_cert_conf *conf, const char *name)
{
    if (!has_name(conf, name) && conf->nnames < TLS_CERT_NAMES_MAX)
        conf->names[conf->nnames++] = name;
}

/* The names when --name is not given: the host name (when it is a valid DNS
 * name), localhost and the loopback addresses. hostbuf holds the name. */
static void default_names(struct tls_cert_conf *conf, char *hostbuf, size_t cap)
{
    if (gethostname(hostbuf, cap) == 0) {
        hostbuf[cap - 1] = '\0';
        if (tls_cert_name_ok(hostbuf))
            add_name(conf, hostbuf);
    }
    add_name(conf, "localhost");
}

/* The curl line's proxy host: an IPv6 literal in brackets. */
static void print_usage_line(const char *host, const char *pin)
{
    bool v6 = strchr(host, ':') != NULL;
    printf("curl --proxy https://%s%s%s:443 --proxy-pinnedpubkey %s https://example.com/\n",
           v6 ? "[" : "", host, v6 ? "]" : "", pin);
}

/* Parses the command line into conf, *dir and *force. 0, 1 after --help
 * was printed, or 2 after a usage error was. */
static int parse_args(int argc, char **argv, struct tls_cert_conf *conf, const char **dir,
                      bool *force)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},  {"name", required_argument, NULL, 'n'},
        {"days", required_argument, NULL, 'd'}, {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    uint64_t days = TLS_CERT_DAYS_DEFAULT;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            *dir = optarg;
            break;
        case 'n':
            if (!tls_cert_name_ok(optarg)) {
                fprintf(stderr,
                        "ferry cert: --name: '%s' is neither a DNS name (letters, digits, '-' "
                        "and '.', at most 253 characters; no wildcards) nor an IP address\n",
                        optarg);
                return 2;
            }
            if (conf->nnames == NAME_ARGS_MAX) {
                fprintf(stderr, "ferry cert: at most %d --name options\n", NAME_ARGS_MAX);
                return 2;
            }
            add_name(conf, optarg);
            break;
        case 'd':
            if (parse_u64(optarg, 1, TLS_CERT_DAYS_MAX, &days)) {
                fprintf(stderr, "ferry cert: --days: '%s' is not a number from 1 to %d\n", optarg,
                        TLS_CERT_DAYS_MAX);
                return 2;
            }
            break;
        case 'f':
            *force = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 1;
        default:
            fputs("Try 'ferry cert --help'.\n", stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ferry cert: unexpected argument '%s'\nTry 'ferry cert --help'.\n",
                argv[optind]);
        return 2;
    }
    if (!*dir || !**dir) {
        fputs("ferry cert: --out DIR is required\nTry 'ferry cert --help'.\n", stderr);
        return 2;
    }
    conf->days = (unsigned)days;
    return 0;
}

int cert_main(int argc, char **argv)
{
    struct tls_cert_conf conf = {0};
    const char *dir = NULL;
    bool force = false;
    int rc = parse_args(argc, argv, &conf, &dir, &force);
    if (rc)
        return rc == 1 ? 0 : rc;
    char hostbuf[TLS_CERT_NAME_MAX + 2];
    if (conf.nnames == 0)
        default_names(&conf, hostbuf, sizeof(hostbuf));
    if (has_name(&conf, "localhost")) {
        add_name(&conf, "127.0.0.1");
        add_name(&conf, "::1");
    }

    struct tls_cert c;
    char err[512];
    if (tls_cert_make(&conf, &c, err, sizeof(err)) < 0) {
        fprintf(stderr, "ferry cert: %s\n", err);
        return 1;
    }
    rc = tls_cert_write(&c, dir, force, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "ferry cert: %s\n", err);
        tls_cert_fini(&c);
        return 1;
    }
    fprintf(stderr, "ferry cert: wrote %s/cert.pem and %s/key.pem: ECDSA P-256 for", dir, dir);
    for (size_t i = 0; i < conf.nnames; i++)
        fprintf(stderr, "%s %s", i ? "," : "", conf.names[i]);
    fprintf(stderr, ", valid until %s\n", c.not_after);
    printf("%s\n", c.pin);
    print_usage_line(conf.names[0], c.pin);
    tls_cert_fini(&c);
    return 0;
}
