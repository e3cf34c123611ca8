/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signkey.c: the keyring file, tags and verdicts of signkey.h, and the
 * replay table of hop signatures.
 *
 * The replay table is one array of 64-bit words shared by every worker,
 * each word 40 bits of tag and 24 bits of the time it was seen (seconds
 * modulo 2^24, about 194 days: ages are taken modulo that too). A tag
 * probes 8 words from a slot its own bytes choose (the tag is a keyed hash:
 * an attacker cannot aim at a slot without the key): any live word with
 * the same 40 bits is a replay; otherwise the first empty or stale word is
 * claimed with a compare-and-swap, and a lost race looks again. No locks;
 * two sightings of one tag racing into two different words at the same
 * instant is the one case it misses. 2^18 words (2 MiB) hold about 26,000
 * hop connections a second with a 10 s skew before refusing
 * (SIGNKEY_REPLAY_FULL: failing closed), far beyond what one front sends.
 */
#include "edge/signkey.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crypto/fcrypto.h"
#include "util/file.h"

#define REPLAY_WORDS (1u << 18)
#define REPLAY_PROBE 8
#define KEYRING_MAX  (64 * 1024)

static const char *const result_names[SIGNKEY_RESULT_COUNT] = {
    "ok",       "no-sig",  "bad-format", "unknown-kid", "expired", "not-yet-valid",
    "too-long", "bad-tag", "replayed",   "replay-full",
};

const char *signkey_result_name(enum signkey_result r)
{
    return (unsigned)r < SIGNKEY_RESULT_COUNT ? result_names[r] : "?";
}

/* ---- the keyring file ------------------------------------------------------ */

static int parse_state(const char *s)
{
    if (!strcmp(s, "active"))
        return SIGNKEY_ACTIVE;
    if (!strcmp(s, "verify"))
        return SIGNKEY_VERIFY;
    if (!strcmp(s, "retired"))
        return SIGNKEY_RETIRED;
    return -1;
}

/* One "KID STATE KEY" line into ring; a message into err on failure. */
static int load_line(struct signkey_ring *ring, char *line, char *err, size_t errlen)
{
    char *save = NULL, *kid = strtok_r(line, " \t", &save), *st = strtok_r(NULL, " \t", &save),
         *key = strtok_r(NULL, " \t", &save), *more = strtok_r(NULL, " \t", &save);
    if (!kid || !st || !key || more) {
        snprintf(err, errlen, "expected KID STATE KEY (ferry edge keygen prints one)");
        return -1;
    }
    char *end;
    long id = strtol(kid, &end, 10);
    if (*end || end == kid || id < 0 || id >= SIGNHOST_KIDS) {
        snprintf(err, errlen, "key id '%s' is not 0..%d", kid, SIGNHOST_KIDS - 1);
        return -1;
    }
    int state = parse_state(st);
    if (state < 0) {
        snprintf(err, errlen, "state '%s' is not active, verify or retired", st);
        return -1;
    }
    if (ring->state[id]) {
        snprintf(err, errlen, "key id %ld twice", id);
        return -1;
    }
    size_t n = 0;
    if (fcrypto_base64_decode(ring->key[id], SIGNKEY_LEN, &n, key, strlen(key)) ||
        n != SIGNKEY_LEN) {
        fcrypto_wipe(ring->key[id], SIGNKEY_LEN);
        snprintf(err, errlen, "key %ld is not the base64 of %d bytes", id, SIGNKEY_LEN);
        return -1;
    }
    ring->state[id] = (uint8_t)state;
    if (state != SIGNKEY_RETIRED)
        ring->nverify++;
    return 0;
}

static int load_text(struct signkey_ring *ring, char *text, const char *path, char *err,
                     size_t errlen)
{
    char *save = NULL, msg[160];
    int line = 0;
    for (char *l = text; l; l = save) {
        save = strchr(l, '\n');
        if (save)
            *save++ = '\0';
        line++;
        char *hash = strchr(l, '#');
        if (hash)
            *hash = '\0';
        l += strspn(l, " \t\r");
        size_t n = strlen(l);
        while (n && strchr(" \t\r", l[n - 1]))
            l[--n] = '\0';
        if (!n)
            continue;
        if (load_line(ring, l, msg, sizeof(msg))) {
            snprintf(err, errlen, "%s:%d: %s", path, line, msg);
            return -1;
        }
    }
    if (!ring->nverify) {
        snprintf(err, errlen, "%s: no key that verifies (a line KID active|verify KEY)", path);
        return -1;
    }
    return 0;
}

int signkey_load(const char *path, struct signkey_ring *ring, char *err, size_t errlen)
{
    memset(ring, 0, sizeof(*ring));
    struct stat st;
    if (stat(path, &st)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s: readable by others (mode %04o): chmod 600 it", path,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = file_read_text(path, KEYRING_MAX, &text, &len);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, rc == -EFBIG ? "over 64 KiB" : strerror(-rc));
        return -1;
    }
    rc = load_text(ring, text, path, err, errlen);
    fcrypto_wipe(text, len);
    free(text);
    if (rc) {
        fcrypto_wipe(ring, sizeof(*ring));
        return -1;
    }
    fcrypto_random(ring->dummy, sizeof(ring->dummy));
    return 0;
}

int signkey_active(const struct signkey_ring *ring)
{
    for (int i = SIGNHOST_KIDS - 1; i >= 0; i--)
        if (ring->state[i] == SIGNKEY_ACTIVE)
            return i;
    return -1;
}

/* ---- tags and verdicts ----------------------------------------------------- */

static void tag_of(const uint8_t key[SIGNKEY_LEN], const struct signhost *sh, const char *host,
                   size_t host_len, uint8_t out[SIGNHOST_TAG_LEN])
{
    uint8_t msg[SIGNHOST_MSG_MAX];
    size_t n = signhost_message(sh, host, host_len, msg, sizeof(msg));
    fcrypto_mac128(out, key, msg, n);
}

int signkey_sign(const struct signkey_ring *ring, struct signhost *sh, const char *host,
                 size_t host_len)
{
    if (sh->kid >= SIGNHOST_KIDS || ring->state[sh->kid] != SIGNKEY_ACTIVE || host_len > 255)
        return -1;
    tag_of(ring->key[sh->kid], sh, host, host_len, sh->tag);
    return 0;
}

static _Atomic uint64_t *replay;
static pthread_once_t replay_once = PTHREAD_ONCE_INIT;

static void replay_init(void)
{
    replay = calloc(REPLAY_WORDS, sizeof(*replay));
}

/* Remember tag at now; SIGNKEY_REPLAYED if it is already remembered and
 * younger than window seconds. */
static enum signkey_result replay_check(const uint8_t tag[SIGNHOST_TAG_LEN], uint64_t now,
                                        uint32_t window)
{
    pthread_once(&replay_once, replay_init);
    if (!replay)
        return SIGNKEY_REPLAY_FULL;
    uint64_t key = 0, slot = 0;
    for (int i = 0; i < 5; i++)
        key = key << 8 | tag[i];
    for (int i = 5; i < 9; i++)
        slot = slot << 8 | tag[i];
    uint64_t word = key << 24 | (now & 0xffffff);
    for (int attempt = 0; attempt < 4; attempt++) {
        int64_t free_at = -1;
        uint64_t seen = 0;
        for (uint32_t p = 0; p < REPLAY_PROBE; p++) {
            uint32_t at = (uint32_t)(slot + p) & (REPLAY_WORDS - 1);
            uint64_t w = atomic_load_explicit(&replay[at], memory_order_acquire);
            bool live = w && ((now - (w & 0xffffff)) & 0xffffff) <= window;
            if (live && w >> 24 == key)
                return SIGNKEY_REPLAYED;
            if (!live && free_at < 0) {
                free_at = at;
                seen = w;
            }
        }
        if (free_at < 0)
            return SIGNKEY_REPLAY_FULL;
        if (atomic_compare_exchange_strong_explicit(&replay[free_at], &seen, word,
                                                    memory_order_acq_rel, memory_order_acquire))
            return SIGNKEY_OK;
    }
    return SIGNKEY_REPLAY_FULL;
}

static enum signkey_result time_verdict(const struct signhost *sh, uint64_t now, uint32_t skew,
                                        uint32_t max_ttl)
{
    if (sh->form == SIGNHOST_HOP) {
        if (sh->time + skew < now)
            return SIGNKEY_EXPIRED;
        if (sh->time > now + skew)
            return SIGNKEY_NOT_YET_VALID;
        return SIGNKEY_OK;
    }
    if (sh->time + skew < now)
        return SIGNKEY_EXPIRED;
    if (sh->time > now + (uint64_t)max_ttl + skew)
        return SIGNKEY_TOO_LONG;
    return SIGNKEY_OK;
}

enum signkey_result signkey_verify(const struct signkey_ring *ring, const struct signhost *sh,
                                   const char *host, size_t host_len, uint64_t now, uint32_t skew,
                                   uint32_t max_ttl)
{
    bool known = sh->kid < SIGNHOST_KIDS &&
                 (ring->state[sh->kid] == SIGNKEY_ACTIVE || ring->state[sh->kid] == SIGNKEY_VERIFY);
    uint8_t tag[SIGNHOST_TAG_LEN];
    tag_of(known ? ring->key[sh->kid] : ring->dummy, sh, host, host_len, tag);
    bool match = fcrypto_equal(tag, sh->tag, SIGNHOST_TAG_LEN);
    if (!known)
        return SIGNKEY_UNKNOWN_KID;
    if (!match)
        return SIGNKEY_BAD_TAG;
    enum signkey_result t = time_verdict(sh, now, skew, max_ttl);
    if (t != SIGNKEY_OK)
        return t;
    if (sh->form == SIGNHOST_HOP)
        return replay_check(sh->tag, now, 2 * skew + 1);
    return SIGNKEY_OK;
}
