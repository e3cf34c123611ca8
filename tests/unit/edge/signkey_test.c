/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * signkey_test.c: the keyring and verdicts of edge/signkey: keyring files
 * (good, readable by others, comments only, a bad line, a key id twice),
 * every verdict for tokens and hop signatures (ok, unknown id, retired,
 * verify-only, bad tag, expired, not yet valid, too long, replayed), the
 * replay window passing, and signing refused with a key that only
 * verifies.
 */
#include "harness.h"

#include <sys/stat.h>

#include "crypto/fcrypto.h"
#include "edge/signkey.h"

#define K1 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" /* bytes 0..31 */
#define K2 "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=" /* bytes 100..131 */

static char dir[HARNESS_PATH_MAX];

static const char *keyfile(const char *text, mode_t mode)
{
    static char path[HARNESS_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/keys", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
    return path;
}

static void load_ok(struct signkey_ring *r, const char *text)
{
    char err[600] = "";
    int rc = signkey_load(keyfile(text, 0600), r, err, sizeof(err));
    if (rc)
        fail_msg("%s", err);
}

static void load_err(const char *text, mode_t mode, const char *want)
{
    struct signkey_ring r;
    char err[600] = "";
    assert_int_equal(signkey_load(keyfile(text, mode), &r, err, sizeof(err)), -1);
    if (!strstr(err, want))
        fail_msg("'%s' does not say '%s'", err, want);
}

static void test_keyring_files(void **state)
{
    (void)state;
    struct signkey_ring r;
    load_ok(&r,
            "# keys\n\n 3 active " K1 "  # the current one\n1 verify " K2 "\n7 retired " K1 "\n");
    assert_int_equal(r.state[3], SIGNKEY_ACTIVE);
    assert_int_equal(r.state[1], SIGNKEY_VERIFY);
    assert_int_equal(r.state[7], SIGNKEY_RETIRED);
    assert_int_equal(r.nverify, 2);
    assert_int_equal(r.key[3][31], 31);
    assert_int_equal(signkey_active(&r), 3);
    load_err("1 active " K1 "\n", 0644, "readable by others (mode 0644)");
    load_err("# comments only\n\n", 0600, "no key that verifies");
    load_err("1 retired " K1 "\n", 0600, "no key that verifies");
    load_err("1 active " K1 "\n1 verify " K2 "\n", 0600, "keys:2: key id 1 twice");
    load_err("32 active " K1 "\n", 0600, "keys:1: key id '32' is not 0..31");
    load_err("1 on " K1 "\n", 0600, "state 'on' is not active, verify or retired");
    load_err("1 active c2hvcnQ=\n", 0600, "key 1 is not the base64 of 32 bytes");
    load_err("1 active\n", 0600, "expected KID STATE KEY");
    load_err("1 active " K1 " extra\n", 0600, "expected KID STATE KEY");
}

static struct signhost token(uint8_t kid, uint64_t expiry)
{
    struct signhost sh = {.form = SIGNHOST_TOKEN, .kid = kid, .time = expiry};
    return sh;
}

static void test_token_verdicts(void **state)
{
    (void)state;
    struct signkey_ring r;
    load_ok(&r, "3 active " K1 "\n1 verify " K2 "\n5 retired " K1 "\n");
    const uint64_t now = 1700000000;
    struct signhost sh = token(3, now + 3600);
    assert_int_equal(signkey_sign(&r, &sh, "play.test", 9), 0);
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now, 10, 86400), SIGNKEY_OK);
    /* A token verifies again: reuse until expiry is the point of tokens. */
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now, 10, 86400), SIGNKEY_OK);
    assert_int_equal(signkey_verify(&r, &sh, "play.tesu", 9, now, 10, 86400), SIGNKEY_BAD_TAG);
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now + 3611, 10, 86400),
                     SIGNKEY_EXPIRED);
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now + 3610, 10, 86400), SIGNKEY_OK);
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now, 10, 3000), SIGNKEY_TOO_LONG);
    sh.tag[0] ^= 1;
    assert_int_equal(signkey_verify(&r, &sh, "play.test", 9, now, 10, 86400), SIGNKEY_BAD_TAG);
    /* A verify-only key verifies but does not sign; a retired or absent
     * one does neither. */
    struct signhost v = token(1, now + 60);
    assert_int_equal(signkey_sign(&r, &v, "play.test", 9), -1);
    struct signkey_ring r1;
    load_ok(&r1, "1 active " K2 "\n");
    assert_int_equal(signkey_sign(&r1, &v, "play.test", 9), 0);
    assert_int_equal(signkey_verify(&r, &v, "play.test", 9, now, 10, 86400), SIGNKEY_OK);
    struct signhost ret = token(5, now + 60);
    assert_int_equal(signkey_sign(&r, &ret, "play.test", 9), -1);
    load_ok(&r1, "5 active " K1 "\n");
    assert_int_equal(signkey_sign(&r1, &ret, "play.test", 9), 0);
    assert_int_equal(signkey_verify(&r, &ret, "play.test", 9, now, 10, 86400), SIGNKEY_UNKNOWN_KID);
    ret.kid = 9;
    assert_int_equal(signkey_verify(&r, &ret, "play.test", 9, now, 10, 86400), SIGNKEY_UNKNOWN_KID);
}

static void test_hop_verdicts_and_replay(void **state)
{
    (void)state;
    struct signkey_ring r;
    load_ok(&r, "2 active " K1 "\n");
    const uint64_t now = 1800000000;
    struct signhost sh = {.form = SIGNHOST_HOP, .kid = 2, .time = now};
    assert_int_equal(addr_parse("203.0.113.9:4000", -1, &sh.client), 0);
    assert_int_equal(signkey_sign(&r, &sh, "hop.test", 8), 0);
    assert_int_equal(signkey_verify(&r, &sh, "hop.test", 8, now + 3, 5, 0), SIGNKEY_OK);
    assert_int_equal(signkey_verify(&r, &sh, "hop.test", 8, now + 4, 5, 0), SIGNKEY_REPLAYED);
    /* Outside the time window it is stale before it is a replay; the
     * window outlives the skew on both sides, so no replay slips through. */
    assert_int_equal(signkey_verify(&r, &sh, "hop.test", 8, now + 6, 5, 0), SIGNKEY_EXPIRED);
    assert_int_equal(signkey_verify(&r, &sh, "hop.test", 8, now - 6, 5, 0), SIGNKEY_NOT_YET_VALID);
    /* Another client, same everything else: a different tag. */
    struct signhost other = sh;
    other.client.port = 4001;
    assert_int_equal(signkey_verify(&r, &other, "hop.test", 8, now, 5, 0), SIGNKEY_BAD_TAG);
    /* Many distinct signatures are all remembered. */
    for (uint64_t t = 0; t < 2000; t++) {
        struct signhost x = sh;
        x.time = now + t / 100;
        x.client.port = (uint16_t)(1000 + t);
        assert_int_equal(signkey_sign(&r, &x, "hop.test", 8), 0);
        assert_int_equal(signkey_verify(&r, &x, "hop.test", 8, x.time, 5, 0), SIGNKEY_OK);
        assert_int_equal(signkey_verify(&r, &x, "hop.test", 8, x.time, 5, 0), SIGNKEY_REPLAYED);
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(signkey_result_name(SIGNKEY_OK), "ok");
    assert_string_equal(signkey_result_name(SIGNKEY_REPLAY_FULL), "replay-full");
    assert_string_equal(signkey_result_name(SIGNKEY_RESULT_COUNT), "?");
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(fcrypto_init(), 0);
    snprintf(dir, sizeof(dir), "/tmp/ferry-signkey-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char path[HARNESS_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/keys", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyring_files),
        cmocka_unit_test(test_token_verdicts),
        cmocka_unit_test(test_hop_verdicts_and_replay),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
