/*
 * config.h: ferry's configuration: built-in defaults, then the INI file,
 * then command-line overrides, validated into one immutable struct config.
 *
 * Every problem is reported as "FILE:LINE: KEY: message" (or "command
 * line: ..."), all of them at once rather than one per attempt; unknown keys
 * and bad values are errors, never silently ignored.
 */
#ifndef FERRY_CONFIG_CONFIG_H
#define FERRY_CONFIG_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log.h"
#include "util/addr.h"

#define CONFIG_MAX_LISTEN  64
#define CONFIG_MAX_WORKERS 256

enum splice_mode {
    SPLICE_AUTO, /* buffers first; splice once a direction moves bulk data */
    SPLICE_ALWAYS,
    SPLICE_NEVER,
};

struct config_listen {
    struct addr addr;
    char origin[160]; /* "ferry.conf:3" or "command line": where it was set */
};

struct userlist;

/* A growing list of messages (errors or warnings). */
struct config_errors {
    char **msg;
    size_t n;
};

/* [auth]: RFC 1929 username/password against a userlist. */
struct config_auth {
    char *userlist;         /* path as written; NULL: authentication is off */
    struct userlist *users; /* loaded with the config */
    uint32_t workers;       /* verifier threads */
    uint32_t queue;         /* verifications waiting, at most */
    uint32_t cachettl_ms;   /* 0: no credential cache */
    uint32_t cache_size;    /* cached successes per worker */
    uint32_t max_failures;  /* 0: no throttling */
    uint32_t failure_window_ms;
    uint32_t block_ms;
};

/* [udp]: UDP ASSOCIATE limits. Bad values fall back to the default and
 * oversized ones clamp, each with a warning (RFC 1928 section 7 relay). */
struct config_udp {
    uint32_t associations;     /* per listen address */
    uint32_t destinations;     /* per association */
    uint32_t idle_ms;          /* a destination unused this long is forgotten */
    uint32_t max_datagram;     /* whole SOCKS UDP datagram, header included */
    uint32_t queue;            /* datagrams held per association while resolving */
    struct addr advertise;     /* family 0: reply with the bound address */
    uint16_t port_lo, port_hi; /* 0: any port */
};

/* Immutable once loaded and shared by reference count: the main thread
 * holds the current one, each worker holds the ones its sessions use. */
struct config {
    _Atomic uint32_t refs;
    char *path; /* NULL when running on built-in defaults */
    struct config_listen listen[CONFIG_MAX_LISTEN];
    size_t nlisten;
    unsigned workers; /* resolved: never 0 */
    uint32_t handshake_timeout_ms;
    uint32_t connect_timeout_ms;
    uint32_t iotimeout_ms; /* 0 = no idle timeout while relaying */
    uint32_t shutdown_timeout_ms;
    uint32_t max_connections; /* resolved: never 0 */
    uint32_t backlog;
    uint32_t buffer_size;
    uint32_t pipe_size;
    enum splice_mode splice;
    enum log_level log_level;
    char *log_file; /* NULL: stderr */
    bool access_log;
    bool open_proxy;
    struct config_auth auth;
    struct config_udp udp;
    /* Problems that did not stop the load ("FILE:LINE: KEY: ..."); the server
     * logs them at start and on reload, --check prints them. */
    struct config_errors warnings;
};

/* What the command line says; NULL/0 fields mean "not given". */
struct config_cli {
    const char *path;
    const char *listen[CONFIG_MAX_LISTEN];
    size_t nlisten;
    const char *workers;
};

void config_errors_fini(struct config_errors *e);
/* Append a message (printf-style). */
void config_error(struct config_errors *e, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Load and validate. On success *out is set and 0 returned; otherwise
 * -EINVAL (or -ENOMEM) with every problem in errs. */
int config_load(const struct config_cli *cli, struct config **out, struct config_errors *errs);
/* Reference counting; config_unref() frees with the last reference.
 * config_free() is config_unref(). NULL is a no-op for both. */
struct config *config_ref(struct config *c);
void config_unref(struct config *c);
void config_free(struct config *c);

static inline bool config_auth_enabled(const struct config *c)
{
    return c->auth.users != NULL;
}

/* Online CPUs, at least 1. */
unsigned config_default_workers(void);
const char *config_splice_name(enum splice_mode m);

#endif
