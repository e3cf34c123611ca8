/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * limits.h: per-client-address and per-user accounting shared by all
 * workers: concurrent connections per address, new connections per second
 * per address (a token bucket), sessions per user, and a bandwidth bucket
 * per user.
 *
 * Tables are bounded and striped by lock; they are touched when a
 * connection is accepted or ends and when a user's session starts or ends,
 * and the per-user bandwidth bucket once per relayed chunk. An address
 * table that is full of live entries admits without tracking (counted)
 * rather than refusing strangers. Time is passed in (microseconds).
 */
#ifndef FERRY_ACL_LIMITS_H
#define FERRY_ACL_LIMITS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "acl/bucket.h"
#include "crypto/fcrypto.h"
#include "util/addr.h"

#define LIMITS_WAYS    4
#define LIMITS_STRIPES 64

enum limits_verdict {
    LIMITS_OK,
    LIMITS_PER_IP, /* the address has max concurrent connections already */
    LIMITS_RATE,   /* the address opens connections faster than the rate */
};

struct limits_ip {
    uint8_t family;
    uint8_t ip[16];
    uint32_t conns;
    struct bucket rate;
    uint64_t seen_us;
    uint64_t logged_us; /* last "over the rate" log line for this address */
};

struct limits_user {
    struct limits_user *next;
    uint32_t sessions;
    struct bucket bw;
    char name[];
};

struct limits {
    struct limits_ip *ips;
    uint32_t nsets;
    struct limits_user **users;
    uint32_t nusers; /* buckets, a power of two */
    uint8_t key[FCRYPTO_SHORTKEY_LEN];
    uint64_t untracked;
    pthread_mutex_t locks[LIMITS_STRIPES];
    pthread_mutex_t user_locks[LIMITS_STRIPES];
};

int limits_init(struct limits *l, uint32_t ip_entries);
void limits_fini(struct limits *l);

/* A new connection from ip. On LIMITS_OK it counts as open until
 * limits_ip_release(). *log is set when this refusal should be logged (at
 * most once per second per address). max 0 and rate 0 disable each check. */
enum limits_verdict limits_ip_admit(struct limits *l, const struct addr *ip, uint64_t now_us,
                                    uint32_t max, uint32_t rate, uint32_t burst, bool *log,
                                    bool *tracked);
void limits_ip_release(struct limits *l, const struct addr *ip);

/* A session of user starts: NULL when it has max sessions already (0:
 * unlimited); otherwise the entry to pass to limits_user_release() and
 * limits_user_bw(). */
struct limits_user *limits_user_admit(struct limits *l, const char *user, uint32_t max,
                                      uint64_t bw_burst, uint64_t now_us, bool *over);
void limits_user_release(struct limits *l, struct limits_user *u);
/* The user's bandwidth (rate bytes/s): how many bytes may move now (up to
 * want), and when none may, *wait_us until some can. */
uint64_t limits_user_bw_avail(struct limits *l, struct limits_user *u, uint64_t rate,
                              uint64_t burst, uint64_t now_us, uint64_t want, uint64_t *wait_us);
/* n bytes moved. */
void limits_user_bw_spend(struct limits *l, struct limits_user *u, uint64_t rate, uint64_t burst,
                          uint64_t now_us, uint64_t n);

#endif
