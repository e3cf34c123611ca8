/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client.c: `ferry client URL REMOTE...` (client.h). The command line
 * becomes configuration text, one listen line per remote and one
 * [outbound tunnel] section for the server at URL, which the normal
 * loader reads before -c FILE (so a file adds [limits], [log] settings,
 * rules...) and the normal server runs: one code path with `ferry serve`.
 * --print-config prints that text so an operator can move to a file.
 *
 * stdio:HOST:PORT (ssh's ProxyCommand) is a forward= listener on a
 * loopback port the kernel picks, which this process connects to itself
 * once the server is up (the ready hook of server_run): the session takes
 * the same path as any other (rules, outbound, limits, access log). Two
 * threads pump stdin to it (EOF: shutdown(SHUT_WR), a half-close towards
 * the target) and it to stdout (EOF: stdout closed, SIGTERM to ourselves,
 * exit 0; a reset, which is how a forward listener says the target could
 * not be reached: a one-line message and exit 1). The price: while it
 * runs, other local users could connect to that port too and reach the
 * same one target, as with any port forward.
 *
 * This room reads the command line and the terminal; it decides nothing
 * about sessions.
 */
#include "client/client.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "client/remote.h"
#include "config/config.h"
#include "crypto/fcrypto.h"
#include "log/log.h"
#include "server/server.h"
#include "util/compiler.h"
#include "util/parse.h"

#define CLIENT_MAX_REMOTES 32
#define CLIENT_SECRET_MAX  256

static const char usage_client[] =
    "usage: ferry client URL REMOTE... [--pin sha256//...] [--cacert FILE]\n"
    "                    [--auth-file FILE] [-c FILE] [-w N] [--fast-open]\n"
    "                    [--log-level LEVEL] [--print-config]\n"
    "\n"
    "Open local ports that lead through a ferry server (or any HTTPS proxy)\n"
    "at URL: ferry serve with these listeners and one outbound.\n"
    "\n"
    "URL:     https://[USER[:PASSWORD]@]HOST[:PORT]   (port 443 by default)\n"
    "         wss://[USER[:PASSWORD]@]HOST[:PORT]/PATH  the same tunnel inside a\n"
    "         WebSocket on PATH, through a TLS-terminating reverse proxy or CDN\n"
    "REMOTE:  socks                      SOCKS5, SOCKS4 and HTTP on 127.0.0.1:1080\n"
    "         [ADDR:]PORT:socks          ... on another port or address\n"
    "         [ADDR:]PORT:HOST:PORT      a port forward (IPv6 in brackets:\n"
    "                                    [::1]:8080:[2001:db8::1]:80)\n"
    "         stdio:HOST:PORT            one connection on stdin/stdout (ssh)\n"
    "         R:[ADDR:]PORT:HOST:PORT    a reverse forward: ADDR:PORT on the\n"
    "                                    server leads to HOST:PORT from here\n"
    "         R:[ADDR:]PORT:socks        SOCKS5, SOCKS4 and HTTP on the server's\n"
    "                                    port, leaving from here (never to\n"
    "                                    loopback, link-local or private\n"
    "                                    addresses unless a config file's\n"
    "                                    reverse line says allow=CIDR,...)\n"
    "         [ADDR:]PORT:HOST:PORT/udp  a UDP port forward (one association per\n"
    "                                    source address; [udp] limits)\n"
    "         R:[ADDR:]PORT:HOST:PORT/udp\n"
    "                                    a reverse UDP forward: datagrams to the\n"
    "                                    server's ADDR:PORT go to HOST:PORT from\n"
    "                                    here (one stream per source address)\n"
    "         ADDR defaults to 127.0.0.1. UDP ASSOCIATE works at socks remotes,\n"
    "         and at R:socks ones (the relay port is the server's, datagrams\n"
    "         leave from here). A reverse bind needs a server rule\n"
    "         (allow user NAME cmd reverse ...).\n"
    "\n";

/* The rest of --help (one string literal would pass C's 4,095 bytes). */
static const char usage_client_options[] =
    "Options:\n"
    "      --pin sha256//BASE64  accept the server's certificate by its public\n"
    "                        key (ferry cert prints it) instead of a CA\n"
    "      --cacert FILE     check the server's certificate against these CAs\n"
    "                        (default: the system's)\n"
    "      --auth-file FILE  USER:PASSWORD for the server, one line; without it\n"
    "                        a URL with a user and no password prompts for the\n"
    "                        password when stdin is a terminal\n"
    "  -c, --config FILE     more settings ([limits], rules, log_file, ...);\n"
    "                        must not set what the client sets (outbound)\n"
    "  -w, --workers N       worker threads (auto = one per CPU)\n"
    "      --fast-open       answer a local connection (SOCKS5, HTTP CONNECT, a\n"
    "                        forward) as soon as its stream is sent, and send its\n"
    "                        first bytes at once: one round trip to the server\n"
    "                        less; a destination the server cannot reach then\n"
    "                        closes the connection instead of a SOCKS/HTTP error\n"
    "      --log-level L     debug, info, warn or error (default info; warn\n"
    "                        with stdio, whose stderr is the user's)\n"
    "      --print-config    print the equivalent ferry.conf and exit\n"
    "  -h, --help            show this help\n"
    "\n"
    "Examples:\n"
    "  ferry client https://alice@proxy.example:443 socks\n"
    "      SOCKS5/HTTP proxy on 127.0.0.1:1080 through the server\n"
    "  ferry client https://proxy.example --pin sha256//... 8080:10.0.0.5:80\n"
    "      127.0.0.1:8080 reaches 10.0.0.5:80 from the server\n"
    "  ssh -o ProxyCommand='ferry client https://proxy.example --auth-file ~/.ferry-auth\n"
    "      stdio:%h:%p' user@internal-host\n"
    "  ferry client https://alice@proxy.example R:2222:127.0.0.1:22\n"
    "      the server's 127.0.0.1:2222 reaches this host's sshd (the server's\n"
    "      rules: allow user alice cmd reverse to 127.0.0.1 port 2222)\n"
    "  ferry client https://proxy.example socks 8080:db:5432 --print-config > ferry.conf\n"
    "  ferry client wss://alice@www.example/tunnel socks\n"
    "      the same through nginx or a CDN (ferry serve: listen = ... websocket=/tunnel)\n"
    "\n"
    "Exit status: 0 (stopped by a signal, or the stdio target closed), 1 (an\n"
    "error, or the stdio session failed), 2 (a usage error). See ferry(1).\n";

struct client_opts {
    const char *url, *pin, *cacert, *auth_file, *config, *log_level, *workers;
    bool print_config, fast_open;
    struct remote remotes[CLIENT_MAX_REMOTES];
    const char *words[CLIENT_MAX_REMOTES];
    size_t n;
};

/* The parts of URL that matter. */
struct client_url {
    char user[CLIENT_SECRET_MAX];
    char pass[CLIENT_SECRET_MAX];
    char hostport[300]; /* "host:port" or "[v6]:port" */
    char ws_path[128];  /* wss://: the WebSocket's path; "": https:// */
    bool has_user, has_pass;
};

/* ---- the URL ------------------------------------------------------------ */

/* Percent-encode s for a URL's userinfo (RFC 3986 3.2.1: unreserved as is). */
static int pct_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        if (o + 4 > cap)
            return -1;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
    return 0;
}

/* https://[user[:pass]@]host[:port][/]; 0 or -1 with a message printed. */
static int url_parse(const char *url, struct client_url *u)
{
    memset(u, 0, sizeof(*u));
    const char *rest;
    if (strncmp(url, "https://", 8) == 0) {
        rest = url + 8;
    } else if (strncmp(url, "wss://", 6) == 0) {
        rest = url + 6;
    } else {
        log_print(true, "ferry client: '%s' is not an https:// or wss:// URL\n", url);
        return -1;
    }
    size_t n = strcspn(rest, "/?#");
    if (rest != url + 8) { /* wss://: the path is the WebSocket's (RFC 6455 3) */
        if (rest[n] != '/' || strlen(rest + n) >= sizeof(u->ws_path) ||
            strpbrk(rest + n, "?# \t")) {
            log_print(true, "ferry client: %s: wss:// needs a path (wss://HOST[:PORT]/PATH)\n",
                      url);
            return -1;
        }
        snprintf(u->ws_path, sizeof(u->ws_path), "%s", rest + n);
    } else if (rest[n] && strcmp(rest + n, "/") != 0) {
        log_print(true, "ferry client: %s: a path is not supported (https://HOST[:PORT])\n", url);
        return -1;
    }
    const char *at = memchr(rest, '@', n);
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        size_t ulen = colon ? (size_t)(colon - rest) : (size_t)(at - rest);
        size_t plen = colon ? (size_t)(at - colon - 1) : 0;
        if (ulen == 0 || ulen >= sizeof(u->user) || plen >= sizeof(u->pass)) {
            log_print(true, "ferry client: %s: bad user or password in the URL\n", url);
            return -1;
        }
        memcpy(u->user, rest, ulen);
        u->has_user = true;
        if (colon) {
            memcpy(u->pass, colon + 1, plen);
            u->has_pass = true;
        }
        n -= (size_t)(at + 1 - rest);
        rest = at + 1;
    }
    char host[300], hp[310];
    if (n >= sizeof(host) || strpbrk(u->user, " \t") || strpbrk(u->pass, " \t")) {
        log_print(true, "ferry client: %s: bad URL\n", url);
        return -1;
    }
    snprintf(host, sizeof(host), "%.*s", (int)n, rest);
    /* No port: 443 (RFC 9110 4.2.2). */
    const char *close = strrchr(host, ']');
    const char *colon = strrchr(host, ':');
    bool has_port = colon && (!close || colon > close);
    snprintf(hp, sizeof(hp), "%s%s", host, has_port ? "" : ":443");
    char h[256];
    uint16_t port;
    if (parse_host_port(hp, h, sizeof(h), &port)) {
        log_print(true, "ferry client: %s: bad host or port\n", url);
        return -1;
    }
    if (str_copy(u->hostport, sizeof(u->hostport), hp)) {
        log_print(true, "ferry client: %s: bad host or port\n", url);
        return -1;
    }
    return 0;
}

/* ---- credentials -------------------------------------------------------- */

/* Ask for the password on the terminal without echo. 0 or -1. */
static int prompt_password(const char *user, const char *hostport, char *out, size_t cap)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct termios old, quiet;
    bool tty = tcgetattr(fd, &old) == 0;
    if (tty) {
        quiet = old;
        quiet.c_lflag &= (tcflag_t)~ECHO;
        tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    dprintf(fd, "Password for %s at %s: ", user, hostport);
    size_t n = 0;
    char ch;
    while (n + 1 < cap && read(fd, &ch, 1) == 1 && ch != '\n' && ch != '\r')
        out[n++] = ch;
    out[n] = '\0';
    if (tty)
        tcsetattr(fd, TCSAFLUSH, &old);
    dprintf(fd, "\n");
    close(fd);
    return 0;
}

/* The user and password to put in the url line; 0 or -1 (printed). */
static int credentials(const struct client_opts *o, struct client_url *u)
{
    if (o->auth_file) {
        if (u->has_pass)
            log_print(true, "ferry client: both a password in the URL and --auth-file; "
                            "using --auth-file\n");
        u->has_user = u->has_pass = false;
        fcrypto_wipe(u->pass, sizeof(u->pass));
        return 0;
    }
    if (u->has_pass) {
        log_print(true, "ferry client: warning: a password in the URL is visible to other "
                        "local users (ps); prefer --auth-file\n");
        return 0;
    }
    if (!u->has_user)
        return 0;
    if (!isatty(0) || prompt_password(u->user, u->hostport, u->pass, sizeof(u->pass))) {
        log_print(true,
                  "ferry client: the URL names user '%s' but no password: give "
                  "--auth-file FILE (USER:PASSWORD), or run on a terminal to be asked\n",
                  u->user);
        return -1;
    }
    /* Typed, so it is plain text: encode it for the url line. */
    char enc[CLIENT_SECRET_MAX * 3];
    if (pct_encode(u->pass, enc, sizeof(enc)) || strlen(enc) >= sizeof(u->pass)) {
        log_print(true, "ferry client: the password is too long\n");
        return -1;
    }
    memcpy(u->pass, enc, strlen(enc) + 1);
    fcrypto_wipe(enc, sizeof(enc));
    u->has_pass = true;
    return 0;
}

/* ---- the configuration text --------------------------------------------- */

struct text {
    char *p;
    size_t len, cap;
    bool oom;
};

static void PRINTF_LIKE(2, 3) text_add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0 || t->oom) {
            t->oom = true;
            return;
        }
        if (t->p && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
        char *q = realloc(t->p, cap);
        if (!q) {
            t->oom = true;
            return;
        }
        t->p = q;
        t->cap = cap;
    }
}

/* A path as the loader should read it: absolute (the text has no
 * directory of its own). */
static const char *abs_path(const char *p, char *buf)
{
    if (p[0] == '/' || !realpath(p, buf))
        return p; /* absolute, or missing: the loader says so */
    return buf;
}

/* The R: remotes: a port on the server each, egress here (reverse
 * lines of the outbound, config/reverse.c). */
static void client_reverse_text(const struct client_opts *o, struct text *t)
{
    char hp[300];
    for (size_t i = 0; i < o->n; i++) {
        const struct remote *r = &o->remotes[i];
        if (!r->reverse)
            continue;
        addr_format(&r->local, hp, sizeof(hp));
        if (r->kind == REMOTE_SOCKS)
            text_add(t, "reverse = %s socks\n", hp);
        else
            text_add(t,
                     strchr(r->host, ':') ? "reverse = %s forward=[%s]:%u%s\n"
                                          : "reverse = %s forward=%s:%u%s\n",
                     hp, r->host, r->port, r->udp ? " udp" : "");
    }
}

/* The configuration the command line stands for. show_secret false: the
 * password is left out (--print-config). Returns the text or NULL. */
static char *client_text(const struct client_opts *o, const struct client_url *u, bool show_secret)
{
    struct text t = {0};
    char buf[PATH_MAX], hp[300], dest[300];
    text_add(&t, "# ferry client %s://%s%s%s%s", u->ws_path[0] ? "wss" : "https",
             u->has_user ? u->user : "", u->has_user ? "@" : "", u->hostport, u->ws_path);
    for (size_t i = 0; i < o->n; i++)
        text_add(&t, " %s", o->words[i]);
    text_add(&t, "\n");
    for (size_t i = 0; i < o->n; i++) {
        const struct remote *r = &o->remotes[i];
        if (r->reverse)
            continue; /* in the outbound's section, below */
        if (r->kind == REMOTE_SOCKS) {
            text_add(&t, "listen = %s protocols=socks5+socks4+http\n",
                     addr_format(&r->local, hp, sizeof(hp)));
            continue;
        }
        snprintf(dest, sizeof(dest), strchr(r->host, ':') ? "[%s]:%u" : "%s:%u", r->host, r->port);
        if (r->udp)
            continue; /* [udp] forward, below */
        if (r->kind == REMOTE_STDIO)
            text_add(&t, "listen = 127.0.0.1:0 forward=%s  # stdio\n", dest);
        else
            text_add(&t, "listen = %s forward=%s\n", addr_format(&r->local, hp, sizeof(hp)), dest);
    }
    bool local = false;
    for (size_t i = 0; i < o->n; i++)
        local = local || !o->remotes[i].reverse;
    if (!local)
        text_add(&t, "listen = none\n"); /* only R: remotes: no port here */
    text_add(&t, "outbound = tunnel\n\n[outbound tunnel]\n");
    if (u->has_pass && show_secret)
        text_add(&t, "url = https://%s:%s@%s\n", u->user, u->pass, u->hostport);
    else if (u->has_user)
        text_add(&t, "url = https://%s@%s\n%s", u->user, u->hostport,
                 u->has_pass ? "# the password: credentials_file = FILE holding USER:PASSWORD\n"
                             : "");
    else
        text_add(&t, "url = https://%s\n", u->hostport);
    if (u->ws_path[0])
        text_add(&t, "websocket = %s\n", u->ws_path);
    if (o->fast_open)
        text_add(&t, "fast_open = yes\n");
    if (o->pin)
        text_add(&t, "pin = %s\n", o->pin);
    if (o->cacert)
        text_add(&t, "ca_file = %s\n", abs_path(o->cacert, buf));
    if (o->auth_file)
        text_add(&t, "credentials_file = %s\n", abs_path(o->auth_file, buf));
    client_reverse_text(o, &t);
    for (size_t i = 0, n = 0; i < o->n; i++) {
        const struct remote *r = &o->remotes[i];
        if (!r->udp || r->reverse)
            continue;
        snprintf(dest, sizeof(dest), strchr(r->host, ':') ? "[%s]:%u" : "%s:%u", r->host, r->port);
        text_add(&t, "%sforward = %s %s\n", n++ ? "" : "\n[udp]\n",
                 addr_format(&r->local, hp, sizeof(hp)), dest);
    }
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

/* ---- stdio -------------------------------------------------------------- */

struct stdio_pump {
    size_t index; /* the stdio remote's listen address */
    const char *what;
    int fd;
    pthread_t in, out;
    _Atomic int status; /* exit status once the session ended */
};

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* stdin to the session; EOF: half-close towards the target. */
static void *stdio_in(void *arg)
{
    struct stdio_pump *sp = arg;
    char b[65536];
    for (;;) {
        ssize_t n = read(0, b, sizeof(b));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || write_all(sp->fd, b, (size_t)n))
            break;
    }
    shutdown(sp->fd, SHUT_WR);
    return NULL;
}

/* The session to stdout; its end ends the process. */
static void *stdio_out(void *arg)
{
    struct stdio_pump *sp = arg;
    char b[65536];
    int status = 0;
    for (;;) {
        ssize_t n = read(sp->fd, b, sizeof(b));
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            break;
        if (n < 0) {
            /* A forward listener resets the connection when the target
             * cannot be reached; the access log (info) says why. */
            log_print(true,
                      "ferry client: %s: %s (the tunnel or the target failed; "
                      "--log-level info says why)\n",
                      sp->what, strerror(errno));
            status = 1;
            break;
        }
        if (write_all(1, b, (size_t)n)) {
            status = errno == EPIPE ? 0 : 1;
            break;
        }
    }
    close(1);
    shutdown(sp->fd, SHUT_RDWR);
    atomic_store(&sp->status, status);
    kill(getpid(), SIGTERM); /* the server drains and server_run returns */
    return NULL;
}

/* server_run's ready hook: connect to the stdio listener, start pumping. */
static void stdio_ready(void *arg, const struct addr *bound, size_t n)
{
    struct stdio_pump *sp = arg;
    struct sockaddr_storage ss;
    socklen_t len = n > sp->index ? addr_to_sockaddr(&bound[sp->index], &ss) : 0;
    sp->fd = len ? socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    if (sp->fd < 0 || connect(sp->fd, (struct sockaddr *)&ss, len) < 0 ||
        pthread_create(&sp->out, NULL, stdio_out, sp)) {
        log_print(true, "ferry client: stdio: cannot start: %s\n", strerror(errno));
        atomic_store(&sp->status, 1);
        kill(getpid(), SIGTERM);
        return;
    }
    pthread_detach(sp->out);
    if (pthread_create(&sp->in, NULL, stdio_in, sp) == 0)
        pthread_detach(sp->in);
}

/* ---- the command line --------------------------------------------------- */

/* Options and words into o; 0, or the exit status to return (help: -1). */
static int parse_args(int argc, char **argv, struct client_opts *o)
{
    static const struct option opts[] = {
        {"pin", required_argument, NULL, 'p'},
        {"cacert", required_argument, NULL, 'a'},
        {"auth-file", required_argument, NULL, 'f'},
        {"config", required_argument, NULL, 'c'},
        {"workers", required_argument, NULL, 'w'},
        {"log-level", required_argument, NULL, 'L'},
        {"print-config", no_argument, NULL, 'P'},
        {"fast-open", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "c:w:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            o->pin = optarg;
            break;
        case 'a':
            o->cacert = optarg;
            break;
        case 'f':
            o->auth_file = optarg;
            break;
        case 'c':
            o->config = optarg;
            break;
        case 'w':
            o->workers = optarg;
            break;
        case 'L':
            o->log_level = optarg;
            break;
        case 'P':
            o->print_config = true;
            break;
        case 'F':
            o->fast_open = true;
            break;
        case 'h':
            log_print(false, "%s%s", usage_client, usage_client_options);
            return -1;
        default:
            log_print(true, "Try 'ferry client --help'.\n");
            return 2;
        }
    }
    if (optind >= argc) {
        log_print(true, "ferry client: no server URL\nTry 'ferry client --help'.\n");
        return 2;
    }
    o->url = argv[optind++];
    for (; optind < argc; optind++) {
        if (o->n == CLIENT_MAX_REMOTES) {
            log_print(true, "ferry client: at most %d remotes\n", CLIENT_MAX_REMOTES);
            return 2;
        }
        o->words[o->n++] = argv[optind];
    }
    enum log_level lvl;
    if (o->log_level && log_level_parse(o->log_level, &lvl)) {
        log_print(true,
                  "ferry client: --log-level: '%s' is not a log level (debug, info, warn "
                  "or error)\n",
                  o->log_level);
        return 2;
    }
    if (o->n == 0) {
        log_print(true, "ferry client: no remote given (e.g. socks, 8080:10.0.0.5:80 or "
                        "stdio:HOST:PORT)\nTry 'ferry client --help'.\n");
        return 2;
    }
    return 0;
}

/* Parse and judge the remotes; the index of stdio (or -1) in *stdio.
 * 0 or 2 (printed). */
static int parse_remotes(struct client_opts *o, long *stdio)
{
    char err[700];
    *stdio = -1;
    for (size_t i = 0; i < o->n; i++) {
        struct remote *r = &o->remotes[i];
        if (remote_parse(o->words[i], r, err, sizeof(err))) {
            log_print(true, "ferry client: %s\n", err);
            return 2;
        }
        if (r->kind == REMOTE_STDIO)
            *stdio = (long)i;
    }
    if (remote_check_list(o->remotes, o->n, err, sizeof(err))) {
        log_print(true, "ferry client: %s\n", err);
        return 2;
    }
    return 0;
}

/* Load the text (and -c FILE) and run the server, as `ferry serve` does. */
static int client_run(struct config_cli *cli)
{
    server_raise_nofile();
    struct config *cfg = NULL;
    struct msglist errs = {0};
    int rc = config_load(cli, &cfg, &errs);
    if (!rc)
        rc = config_check_log_file(cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        log_print(true, "%s\n", errs.msg[i]);
    msglist_fini(&errs);
    if (rc) {
        config_free(cfg);
        return 1;
    }
    for (size_t i = 0; i < cfg->warnings.n; i++)
        log_print(true, "warning: %s\n", cfg->warnings.msg[i]);
    return server_run(cfg, cli) ? 1 : 0;
}

int client_main(int argc, char **argv)
{
    struct client_opts o = {0};
    struct client_url u;
    long stdio;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (url_parse(o.url, &u))
        return 2;
    if ((rc = parse_remotes(&o, &stdio)))
        return rc;
    if (o.print_config) {
        char *t = client_text(&o, &u, false);
        if (t)
            log_print(false, "%s", t);
        free(t);
        return t ? 0 : 1;
    }
    if (credentials(&o, &u))
        return 1;
    if (o.log_level)
        setenv("FERRY_LOG", o.log_level, 1);
    else if (stdio >= 0)
        setenv("FERRY_LOG", "warn", 0); /* stderr is the user's: warnings only */
    char *text = client_text(&o, &u, true);
    fcrypto_wipe(u.pass, sizeof(u.pass));
    if (!text) {
        log_print(true, "ferry client: out of memory\n");
        return 1;
    }
    struct stdio_pump sp = {.index = (size_t)stdio, .what = stdio >= 0 ? o.words[stdio] : NULL};
    atomic_init(&sp.status, 0);
    /* One session: one worker is plenty, and starts faster. */
    struct config_cli cli = {.path = o.config,
                             .workers = o.workers    ? o.workers
                                        : stdio >= 0 ? "1"
                                                     : NULL,
                             .text = text,
                             .text_name = "ferry client"};
    if (stdio >= 0) {
        cli.ready = stdio_ready;
        cli.ready_arg = &sp;
    }
    rc = client_run(&cli);
    fcrypto_wipe(text, strlen(text));
    free(text);
    return rc ? rc : atomic_load(&sp.status);
}
