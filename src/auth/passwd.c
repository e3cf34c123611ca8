/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * passwd.c: `ferry passwd`: make a userlist line. The password is read
 * without echo from a terminal (twice, to catch typos), or as one line from
 * standard input for scripts; it never appears on the command line.
 */
#include "auth/passwd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "auth/userlist.h"
#include "crypto/fcrypto.h"
#include "util/parse.h"

static const char usage[] =
    "usage: ferry passwd [--plain] [--ops N] [--mem SIZE] NAME\n"
    "\n"
    "Print a userlist line for NAME. The password is read from the terminal\n"
    "without echo (twice), or as one line from standard input.\n"
    "\n"
    "  --plain      store the password as it is (NAME:plain:SECRET) instead of an\n"
    "               Argon2id hash; only for lists that are themselves protected\n"
    "  --ops N      Argon2id passes, 1 to 16 (default 2, libsodium's interactive limit)\n"
    "  --mem SIZE   Argon2id memory, 8k to 1g (default 64m, libsodium's interactive limit)\n"
    "  -h, --help   show this help\n"
    "\n"
    "Example:  ferry passwd alice >> /etc/ferry/users\n";

/* One line from fd into buf (without the newline). Returns its length, or
 * -1 on EOF before any byte, -2 when longer than 255 bytes. */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    bool any = false, toolong = false;
    for (;;) {
        char ch;
        ssize_t r = read(fd, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        any = true;
        if (ch == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = ch;
        else
            toolong = true;
    }
    if (n && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    if (!any)
        return -1;
    return toolong ? -2 : (int)n;
}

static int read_password_tty(char *buf, size_t cap, const char *prompt)
{
    struct termios old, quiet;
    if (tcgetattr(STDIN_FILENO, &old) < 0)
        return -1;
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    quiet.c_lflag |= ECHONL;
    fputs(prompt, stderr);
    fflush(stderr);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    int n = read_line(STDIN_FILENO, buf, cap);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    return n;
}

/* Reads the password to hash: from the terminal twice (they must match),
 * else one line of standard input. Returns its length (1..255, in pass,
 * NUL-terminated), or -1 after saying why on stderr with pass wiped. A
 * plain password may not end in a space or tab, as a userlist would refuse
 * the line. */
static int read_new_password(char *pass, size_t cap, bool plain)
{
    char again[300];
    int n;
    if (isatty(STDIN_FILENO)) {
        n = read_password_tty(pass, cap, "Password: ");
        if (n >= 0) {
            int m = read_password_tty(again, sizeof(again), "Again: ");
            if (m != n || memcmp(pass, again, (size_t)n) != 0) {
                explicit_bzero(pass, cap);
                explicit_bzero(again, sizeof(again));
                fputs("ferry passwd: the passwords do not match\n", stderr);
                return -1;
            }
            explicit_bzero(again, sizeof(again));
        }
    } else {
        n = read_line(STDIN_FILENO, pass, cap);
    }
    if (n == -1 || n == 0) {
        fputs("ferry passwd: no password given (RFC 1929 needs 1 to 255 bytes)\n", stderr);
        return -1;
    }
    if (n == -2 || n > 255) {
        explicit_bzero(pass, cap);
        fputs("ferry passwd: password longer than 255 bytes (RFC 1929's limit)\n", stderr);
        return -1;
    }
    if (plain && (pass[n - 1] == ' ' || pass[n - 1] == '\t')) {
        explicit_bzero(pass, cap);
        fputs("ferry passwd: a plain password cannot end with a space or tab (a userlist refuses "
              "such a line as an editor's leftover); leave out --plain to store it as an "
              "Argon2id hash\n",
              stderr);
        return -1;
    }
    return n;
}

int passwd_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"plain", no_argument, NULL, 'p'},
        {"ops", required_argument, NULL, 'o'},
        {"mem", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool plain = false;
    uint64_t ops = FCRYPTO_PWHASH_OPS_DEFAULT, mem = FCRYPTO_PWHASH_MEM_DEFAULT;
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            plain = true;
            break;
        case 'o':
            if (parse_u64(optarg, fcrypto_pwhash_ops_min(), FCRYPTO_PWHASH_OPS_MAX, &ops)) {
                fprintf(stderr, "ferry passwd: --ops: '%s' is not a number from %llu to %u\n",
                        optarg, (unsigned long long)fcrypto_pwhash_ops_min(),
                        FCRYPTO_PWHASH_OPS_MAX);
                return 2;
            }
            break;
        case 'm':
            if (parse_size(optarg, fcrypto_pwhash_mem_min(), FCRYPTO_PWHASH_MEM_MAX, &mem)) {
                fprintf(stderr, "ferry passwd: --mem: '%s' is not a size from 8k to 1g\n", optarg);
                return 2;
            }
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs("Try 'ferry passwd --help'.\n", stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(usage, stderr);
        return 2;
    }
    const char *name = argv[optind];
    if (!userlist_name_ok(name, strlen(name))) {
        fprintf(stderr,
                "ferry passwd: '%s' is not a valid user name (1 to 255 bytes, without "
                "':', spaces or control characters)\n",
                name);
        return 2;
    }

    char pass[300];
    int n = read_new_password(pass, sizeof(pass), plain);
    if (n < 0)
        return 1;
    int status = 0;
    if (plain) {
        printf("%s:plain:%s\n", name, pass);
    } else {
        char phc[FCRYPTO_PWHASH_MAX];
        if (fcrypto_init() || fcrypto_pwhash(phc, pass, (size_t)n, ops, mem)) {
            fputs("ferry passwd: hashing failed (out of memory for --mem?)\n", stderr);
            status = 1;
        } else {
            printf("%s:%s\n", name, phc);
        }
    }
    explicit_bzero(pass, sizeof(pass));
    return status;
}
