/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * userlist_test.c: the userlist as userlist.h promises it: good lists of
 * Argon2id and plain lines (with comments, blank lines and CRLF) parse and
 * every user is found; every malformed line is reported as "FILE:LINE:
 * message", all of them at once (Argon2id parameters beyond ferry's
 * bounds, and a plain password ending in a space or tab, among them); a
 * leading UTF-8 byte order mark is skipped with a warning; names and
 * plain secrets keep RFC 1929's
 * limits; versions change exactly when a credential does; and the last
 * reference frees (ASan checks the freeing). Argon2id hashes are made at
 * the lowest cost libsodium allows, so the file runs in well under a second.
 */
#include "harness.h"

#include <errno.h>

#include "auth/userlist.h"
#include "config/config.h"
#include "crypto/fcrypto.h"

#define FILE_NAME "users.txt"

/* The errors of the test running; the teardown frees them even when an
 * assertion cut the test short. */
static struct msglist errs;

static int teardown(void **state)
{
    (void)state;
    msglist_fini(&errs);
    return 0;
}

/* An Argon2id PHC string for pass at the lowest cost (mem_min unless a
 * bigger memory is asked for). */
static void make_phc(char phc[FCRYPTO_PWHASH_MAX], const char *pass, uint64_t mem)
{
    assert_int_equal(fcrypto_init(), 0);
    assert_int_equal(fcrypto_pwhash(phc, pass, strlen(pass), fcrypto_pwhash_ops_min(),
                                    mem ? mem : fcrypto_pwhash_mem_min()),
                     0);
    assert_true(strncmp(phc, "$argon2id$", 10) == 0);
}

/* "name:PHC" into line. */
static void argon_line(char *line, size_t cap, const char *name, const char *pass)
{
    char phc[FCRYPTO_PWHASH_MAX];
    make_phc(phc, pass, 0);
    int n = snprintf(line, cap, "%s:%s", name, phc);
    assert_true(n > 0 && (size_t)n < cap);
}

/* Parse text that must be good; returns the list. */
static struct userlist *parse_ok(const char *text)
{
    msglist_fini(&errs);
    struct userlist *ul = NULL;
    int rc = userlist_parse(text, FILE_NAME, &ul, &errs, NULL);
    for (size_t i = 0; i < errs.n; i++)
        print_error("unexpected error: %s\n", errs.msg[i]);
    assert_int_equal(rc, 0);
    assert_int_equal(errs.n, 0);
    assert_non_null(ul);
    assert_int_equal(atomic_load(&ul->refs), 1);
    msglist_fini(&errs);
    return ul;
}

/* Parse text that must fail with exactly nwant errors (left in errs); *out
 * stays as it was. */
static void parse_bad(const char *text, size_t nwant)
{
    msglist_fini(&errs);
    struct userlist *sentinel = (struct userlist *)(uintptr_t)0x1;
    struct userlist *ul = sentinel;
    int rc = userlist_parse(text, FILE_NAME, &ul, &errs, NULL);
    if (errs.n != nwant)
        for (size_t i = 0; i < errs.n; i++)
            print_error("error %zu: %s\n", i, errs.msg[i]);
    assert_int_equal(rc, -EINVAL);
    assert_int_equal(errs.n, nwant);
    assert_ptr_equal(ul, sentinel);
}

/* One of errs is exactly want. */
static void assert_error(const char *want)
{
    for (size_t i = 0; i < errs.n; i++)
        if (strcmp(errs.msg[i], want) == 0)
            return;
    for (size_t i = 0; i < errs.n; i++)
        print_error("have: %s\n", errs.msg[i]);
    fail_msg("no error '%s'", want);
}

static const struct user *find(const struct userlist *ul, const char *name)
{
    return userlist_find(ul, name, strlen(name));
}

/* ---- good lists ------------------------------------------------------- */

static void test_parse_mixed_list(void **state)
{
    (void)state;
    char a1[300], a2[300], text[2048];
    argon_line(a1, sizeof(a1), "alice", "wonderland");
    argon_line(a2, sizeof(a2), "carol", "pw");
    snprintf(text, sizeof(text),
             "# the users\n"          /* 1 */
             "%s\n"                   /* 2 */
             "\n"                     /* 3 */
             "   \t \n"               /* 4 */
             "  # indented comment\n" /* 5 */
             "bob:plain:hunter2\r\n"  /* 6: CRLF */
             "\r\n"                   /* 7: blank CRLF line */
             "%s\r\n"                 /* 8 */
             "dave:plain:a:b c\n"     /* 9: ':' and ' ' in a secret */
             "j\xc3\xb6rg:plain:x",   /* 10: UTF-8 name, no final newline */
             a1, a2);
    struct userlist *ul = parse_ok(text);
    assert_int_equal(ul->n, 5);

    const struct user *u = find(ul, "alice");
    assert_non_null(u);
    assert_int_equal(u->kind, USER_ARGON2ID);
    assert_int_equal(u->nlen, 5);
    assert_int_equal(u->line, 2);
    assert_string_equal(u->secret, a1 + 6);

    u = find(ul, "bob");
    assert_non_null(u);
    assert_int_equal(u->kind, USER_PLAIN);
    assert_string_equal(u->secret, "hunter2"); /* the CR is not part of it */
    assert_int_equal(u->slen_plain, 7);
    assert_int_equal(u->line, 6);

    u = find(ul, "carol");
    assert_non_null(u);
    assert_int_equal(u->kind, USER_ARGON2ID);
    assert_string_equal(u->secret, a2 + 6); /* nor here */
    assert_int_equal(u->line, 8);

    u = find(ul, "dave");
    assert_non_null(u);
    assert_string_equal(u->secret, "a:b c");
    assert_int_equal(u->slen_plain, 5);

    u = find(ul, "j\xc3\xb6rg");
    assert_non_null(u);
    assert_int_equal(u->nlen, 5);
    assert_string_equal(u->secret, "x");
    assert_int_equal(u->line, 10);
    userlist_unref(ul);
}

/* A hash made with more memory (what --mem 8m gives) is just as good. */
static void test_parse_argon_8m(void **state)
{
    (void)state;
    char phc[FCRYPTO_PWHASH_MAX], text[300];
    make_phc(phc, "pw", 8192 * 1024);
    assert_non_null(strstr(phc, "m=8192,t=1,p=1$"));
    snprintf(text, sizeof(text), "eve:%s\n", phc);
    struct userlist *ul = parse_ok(text);
    assert_int_equal(ul->n, 1);
    assert_non_null(find(ul, "eve"));
    userlist_unref(ul);
}

/* F4: Argon2id parameters beyond ferry's bounds are an error naming
 * FILE:LINE, whatever libsodium would accept: t=4294967295 never finishes
 * and m=4 GiB costs 4 GiB per verification. The bounds themselves are
 * fine, and a list of the costliest users loads at once (the dummy hash is
 * made, not computed: loading costs no Argon2 work at all). */
static void test_argon2_params_bounded(void **state)
{
    (void)state;
    assert_int_equal(fcrypto_init(), 0);
    const struct {
        uint32_t m, t, p;
        bool ok;
    } cases[] = {
        {1048576, 16, 16, true},    {8, 1, 1, true},        {65536, 2, 1, true},
        {1048577, 1, 1, false},     {4194304, 1, 1, false}, {65536, 17, 1, false},
        {8, 4294967295u, 1, false}, {65536, 1, 17, false},  {4294967295u, 1, 1, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char phc[FCRYPTO_PWHASH_MAX], text[400], want[300];
        assert_int_equal(fcrypto_pwhash_dummy(phc, cases[i].m, cases[i].t, cases[i].p), 0);
        assert_true(fcrypto_pwhash_valid(phc));
        snprintf(text, sizeof(text), "good:plain:pw\neve:%s\n", phc);
        if (cases[i].ok) {
            struct userlist *ul = parse_ok(text);
            uint32_t m, t, p;
            assert_int_equal(fcrypto_pwhash_params(ul->dummy, &m, &t, &p), 0);
            assert_true(m == cases[i].m && t == cases[i].t && p == cases[i].p);
            userlist_unref(ul);
            continue;
        }
        parse_bad(text, 1);
        snprintf(want, sizeof(want),
                 FILE_NAME ":2: Argon2id parameters out of bounds (m=%u,t=%u,p=%u; ferry accepts "
                           "m from 8 to 1048576 KiB and at least 8 KiB per lane, t from 1 to 16, "
                           "p from 1 to 16)",
                 cases[i].m, cases[i].t, cases[i].p);
        assert_string_equal(errs.msg[0], want);
    }
}

/* The PHC parameter reader: exact decimal fields, nothing else. */
static void test_pwhash_params(void **state)
{
    (void)state;
    uint32_t m, t, p;
    assert_int_equal(
        fcrypto_pwhash_params("$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", &m, &t, &p), 0);
    assert_true(m == 65536 && t == 2 && p == 1);
    assert_int_equal(
        fcrypto_pwhash_params("$argon2id$v=19$m=4294967295,t=4294967295,p=1$x$y", &m, &t, &p), 0);
    assert_true(m == 4294967295u && t == 4294967295u);
    const char *bad[] = {
        "$argon2id$v=19$m=4294967296,t=1,p=1$x$y", "$argon2id$v=19$m=1,t=1,p=1",
        "$argon2id$v=19$m=,t=1,p=1$x$y",           "$argon2id$v=19$m=1,p=1,t=1$x$y",
        "$argon2id$v=19$m=-1,t=1,p=1$x$y",         "$argon2id$v=19$t=1,p=1$x$y",
        "$argon2id$v=19$m=1,t=1x,p=1$x$y",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (fcrypto_pwhash_params(bad[i], &m, &t, &p) != -1)
            fail_msg("'%s' read as params", bad[i]);
}

static void test_find_hits_and_misses(void **state)
{
    (void)state;
    struct userlist *ul = parse_ok("alice:plain:a\nalicia:plain:b\nal:plain:c\n");
    assert_non_null(find(ul, "alice"));
    assert_non_null(find(ul, "alicia"));
    assert_non_null(find(ul, "al"));
    assert_string_equal(find(ul, "alicia")->secret, "b");
    assert_null(find(ul, "a"));
    assert_null(find(ul, "ali"));
    assert_null(find(ul, "alic"));
    assert_null(find(ul, "alicex"));
    assert_null(find(ul, "Alice"));
    assert_null(find(ul, "bob"));
    assert_null(userlist_find(ul, "", 0));
    /* The length is what counts, not a NUL. */
    assert_null(userlist_find(ul, "alice\0", 6));
    assert_non_null(userlist_find(ul, "alicex", 5));
    assert_string_equal(userlist_find(ul, "alicex", 5)->name, "alice");
    /* No list, no users. */
    assert_null(userlist_find(NULL, "alice", 5));
    userlist_unref(ul);
}

static void test_empty_lists(void **state)
{
    (void)state;
    static const char *const texts[] = {"", "\n", "\n\n\r\n", "# only a comment\n",
                                        "#a\n  # b\n\t\n"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct userlist *ul = parse_ok(texts[i]);
        assert_int_equal(ul->n, 0);
        assert_null(find(ul, "alice"));
        assert_null(userlist_find(ul, "", 0));
        userlist_unref(ul);
    }
}

/* ---- malformed lines --------------------------------------------------- */

#define MSG_MALFORMED "malformed line (expected NAME:$argon2id$... or NAME:plain:SECRET)"
#define MSG_NAME      "invalid user name (1 to 255 bytes, without ':', spaces or control characters)"
#define MSG_FORMAT \
    "unknown credential format (expected $argon2id$... from ferry passwd, or plain:SECRET)"
#define MSG_PLAIN "plain password must be 1 to 255 bytes (RFC 1929)"
#define MSG_HASH  "not a valid Argon2id hash (make one with: ferry passwd NAME)"
#define MSG_TRAILING                                                                             \
    "plain password ends with a space or tab (an editor's leftover?); remove it, or store such " \
    "a password as an Argon2id hash (ferry passwd NAME)"

/* Each bad line on line 3 (behind a good line and a comment): exactly one
 * error, "users.txt:3: " and the message. */
static void test_malformed_lines(void **state)
{
    (void)state;
    char name256[260], plain256[300], name255_ok[300];
    memset(name256, 'n', 256);
    name256[256] = '\0';
    snprintf(plain256, sizeof(plain256), "bob:plain:%0256d", 7);
    char phc[FCRYPTO_PWHASH_MAX], tampered[FCRYPTO_PWHASH_MAX + 8], cut[FCRYPTO_PWHASH_MAX];
    make_phc(phc, "pw", 0);
    /* A character no base64 alphabet has, in the hash part. */
    snprintf(tampered, sizeof(tampered), "%s", phc);
    tampered[strlen(tampered) - 5] = '*';
    /* Cut right after the salt's '$': no hash at all. */
    snprintf(cut, sizeof(cut), "%s", phc);
    *(strrchr(cut, '$') + 1) = '\0';
    char bad_name_line[300], tampered_line[300], cut_line[300];
    snprintf(bad_name_line, sizeof(bad_name_line), "%s:plain:x", name256);
    snprintf(tampered_line, sizeof(tampered_line), "carol:%s", tampered);
    snprintf(cut_line, sizeof(cut_line), "carol:%s", cut);
    memset(name255_ok, 'n', 255);
    name255_ok[255] = '\0';

    const struct {
        const char *line, *msg;
    } cases[] = {
        {"no colon here", MSG_MALFORMED},
        {"alice", MSG_MALFORMED},
        {":plain:x", MSG_NAME},
        {"a b:plain:x", MSG_NAME},
        {" alice:plain:x", MSG_NAME},
        {"al\tice:plain:x", MSG_NAME},
        {"al\x01ice:plain:x", MSG_NAME},
        {"al\x7fice:plain:x", MSG_NAME},
        {"al\x1bice:plain:x", MSG_NAME},
        {bad_name_line, MSG_NAME},
        {"alice:", MSG_FORMAT},
        {"alice:secret", MSG_FORMAT},
        {"alice:PLAIN:secret", MSG_FORMAT},
        {"alice:plain", MSG_FORMAT},
        {"alice:b:plain:x", MSG_FORMAT}, /* the name ends at the first ':' */
        {"alice:$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", MSG_FORMAT},
        {"alice:$2y$10$abcdefghijklmnopqrstuu", MSG_FORMAT},
        {"alice:plain:", MSG_PLAIN},
        {"alice:plain:\r", MSG_PLAIN},
        {plain256, MSG_PLAIN},
        {"alice:plain:secret ", MSG_TRAILING},
        {"alice:plain:secret\t", MSG_TRAILING},
        {"alice:plain:secret \r", MSG_TRAILING},
        {"alice:plain: ", MSG_TRAILING},
        {"alice:$argon2id$", MSG_HASH},
        {"alice:$argon2id$garbage", MSG_HASH},
        {"alice:$argon2id$v=19$m=abc,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", MSG_HASH},
        {tampered_line, MSG_HASH},
        {cut_line, MSG_HASH},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[1024], want[512];
        snprintf(text, sizeof(text), "good:plain:pw\n# comment\n%s\nalso:plain:ok\n",
                 cases[i].line);
        snprintf(want, sizeof(want), FILE_NAME ":3: %s", cases[i].msg);
        msglist_fini(&errs);
        struct userlist *ul = NULL;
        int rc = userlist_parse(text, FILE_NAME, &ul, &errs, NULL);
        if (rc != -EINVAL || errs.n != 1 || strcmp(errs.msg[0], want) != 0)
            fail_msg("case %zu '%s': rc %d, %zu errors, first '%s'", i, cases[i].line, rc, errs.n,
                     errs.n ? errs.msg[0] : "");
        assert_null(ul);
    }

    /* The limits themselves are fine: a 255-byte name, a 255-byte secret. */
    char text[1024];
    snprintf(text, sizeof(text), "%s:plain:%0255d\n", name255_ok, 7);
    struct userlist *ul = parse_ok(text);
    const struct user *u = find(ul, name255_ok);
    assert_non_null(u);
    assert_int_equal(u->nlen, 255);
    assert_int_equal(u->slen_plain, 255);
    userlist_unref(ul);
}

/* A UTF-8 byte order mark before the first line (what some editors
 * write) is skipped with a warning, so the first user is found by their
 * name; spaces inside or before a plain password are the password's. */
static void test_bom_and_spaces(void **state)
{
    (void)state;
    struct msglist warns = {0};
    msglist_fini(&errs);
    struct userlist *ul = NULL;
    assert_int_equal(userlist_parse("\xEF\xBB\xBF"
                                    "alice:plain:a b\r\nbob:plain: lead\n",
                                    FILE_NAME, &ul, &errs, &warns),
                     0);
    assert_int_equal(errs.n, 0);
    assert_int_equal(warns.n, 1);
    assert_string_equal(warns.msg[0], FILE_NAME ":1: UTF-8 byte order mark ignored");
    const struct user *u = find(ul, "alice");
    assert_non_null(u);
    assert_int_equal(u->line, 1);
    assert_string_equal(u->secret, "a b");
    assert_string_equal(find(ul, "bob")->secret, " lead");
    userlist_unref(ul);
    msglist_fini(&warns);

    /* Without a place for warnings, the mark is still skipped; no mark, no
     * warning. */
    ul = parse_ok("\xEF\xBB\xBF# a comment first\ncarol:plain:c\n");
    assert_non_null(find(ul, "carol"));
    userlist_unref(ul);
    assert_int_equal(userlist_parse("dave:plain:d\n", FILE_NAME, &ul, &errs, &warns), 0);
    assert_int_equal(warns.n, 0);
    userlist_unref(ul);

    /* A mark alone is an empty list. */
    ul = parse_ok("\xEF\xBB\xBF");
    assert_int_equal(ul->n, 0);
    userlist_unref(ul);
}

/* Line numbers count every line: comments, blank and CRLF lines too. */
static void test_line_numbers_count_every_line(void **state)
{
    (void)state;
    parse_bad("# c\r\n\r\n\n  \nok:plain:x\r\nbroken\r\n", 1);
    assert_string_equal(errs.msg[0], FILE_NAME ":6: " MSG_MALFORMED);
    msglist_fini(&errs);
}

/* Every problem is reported, each with its own line, not just the first. */
static void test_all_errors_reported(void **state)
{
    (void)state;
    parse_bad("alice:plain:x\n"
              "broken\n"
              "bob:plain:\n"
              "# fine\n"
              "c d:plain:x\n"
              "carol:plain:y\n"
              "dave:$argon2id$nope\n",
              4);
    assert_string_equal(errs.msg[0], FILE_NAME ":2: " MSG_MALFORMED);
    assert_string_equal(errs.msg[1], FILE_NAME ":3: " MSG_PLAIN);
    assert_string_equal(errs.msg[2], FILE_NAME ":5: " MSG_NAME);
    assert_string_equal(errs.msg[3], FILE_NAME ":7: " MSG_HASH);
    msglist_fini(&errs);
}

/* Errors are appended after what errs already holds (the config's own). */
static void test_errors_append(void **state)
{
    (void)state;
    msglist_push(&errs, "ferry.conf:1: something else");
    struct userlist *ul = NULL;
    assert_int_equal(userlist_parse("x\n", "u", &ul, &errs, NULL), -EINVAL);
    assert_null(ul);
    assert_int_equal(errs.n, 2);
    assert_string_equal(errs.msg[0], "ferry.conf:1: something else");
    assert_string_equal(errs.msg[1], "u:1: " MSG_MALFORMED);
    msglist_fini(&errs);
}

static void test_duplicates(void **state)
{
    (void)state;
    char a[300], text[1024];
    argon_line(a, sizeof(a), "alice", "pw");
    /* Twice, whatever the kinds; three times gives two errors. */
    snprintf(text, sizeof(text),
             "alice:plain:x\n"
             "bob:plain:y\n"
             "%s\n"
             "# bob again\n"
             "bob:plain:y\n"
             "bob:plain:z\n",
             a);
    parse_bad(text, 3);
    assert_error(FILE_NAME ":3: user 'alice' is listed twice (first on line 1)");
    assert_error(FILE_NAME ":5: user 'bob' is listed twice (first on line 2)");
    assert_error(FILE_NAME ":6: user 'bob' is listed twice (first on line 2)");
    msglist_fini(&errs);

    /* Names that differ only in case or length are different users. */
    struct userlist *ul = parse_ok("bob:plain:1\nBob:plain:2\nbobb:plain:3\nbo:plain:4\n");
    assert_int_equal(ul->n, 4);
    assert_string_equal(find(ul, "Bob")->secret, "2");
    assert_string_equal(find(ul, "bo")->secret, "4");
    userlist_unref(ul);
}

/* userlist.h: "-EINVAL with every problem in errs": a duplicate is a
 * problem even when another line is malformed too. */
static void test_duplicates_reported_with_other_errors(void **state)
{
    (void)state;
    parse_bad("alice:plain:x\n"
              "broken\n"
              "alice:plain:y\n",
              2);
    assert_error(FILE_NAME ":2: " MSG_MALFORMED);
    assert_error(FILE_NAME ":3: user 'alice' is listed twice (first on line 1)");
    msglist_fini(&errs);
}

static void test_name_ok(void **state)
{
    (void)state;
    char n255[256], n256[257];
    memset(n255, 'x', sizeof(n255));
    memset(n256, 'x', sizeof(n256));
    assert_true(userlist_name_ok("a", 1));
    assert_true(userlist_name_ok("alice", 5));
    assert_true(userlist_name_ok("alice@example.com", 17));
    assert_true(userlist_name_ok("a-b_c.d+e~!#$%", 14));
    assert_true(userlist_name_ok("j\xc3\xb6rg", 5)); /* UTF-8 */
    assert_true(userlist_name_ok("\x80\xff", 2));
    assert_true(userlist_name_ok(n255, 255));
    assert_false(userlist_name_ok(n256, 256));
    assert_false(userlist_name_ok("", 0));
    assert_false(userlist_name_ok("a:b", 3));
    assert_false(userlist_name_ok(":", 1));
    assert_false(userlist_name_ok("a b", 3));
    assert_false(userlist_name_ok(" a", 2));
    assert_false(userlist_name_ok("a ", 2));
    assert_false(userlist_name_ok("a\0b", 3));
    assert_false(userlist_name_ok("a\x7f", 2));
    for (unsigned ch = 0; ch <= 0x20; ch++) {
        char name[3] = {'a', (char)ch, 'b'};
        assert_false(userlist_name_ok(name, 3));
    }
    /* Only the given length is looked at. */
    assert_true(userlist_name_ok("ab c", 2));
}

/* ---- files --------------------------------------------------------------- */

static void test_load_file(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX], want[HARNESS_PATH_MAX + 128];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "users");

    struct userlist *ul = NULL;
    /* Missing. */
    assert_true(userlist_load(path, &ul, &errs, NULL) < 0);
    assert_null(ul);
    assert_int_equal(errs.n, 1);
    snprintf(want, sizeof(want), "%s: cannot read userlist: No such file or directory", path);
    assert_string_equal(errs.msg[0], want);
    msglist_fini(&errs);

    /* Good. */
    harness_write_file(path, "alice:plain:x\r\nbob:plain:y\r\n");
    assert_int_equal(userlist_load(path, &ul, &errs, NULL), 0);
    assert_int_equal(errs.n, 0);
    assert_int_equal(ul->n, 2);
    assert_string_equal(find(ul, "bob")->secret, "y");
    userlist_unref(ul);
    ul = NULL;

    /* Errors name the file as it was given. */
    harness_write_file(path, "alice:plain:x\nbob\n");
    assert_int_equal(userlist_load(path, &ul, &errs, NULL), -EINVAL);
    assert_null(ul);
    assert_int_equal(errs.n, 1);
    snprintf(want, sizeof(want), "%s:2: " MSG_MALFORMED, path);
    assert_string_equal(errs.msg[0], want);
    msglist_fini(&errs);

    /* A NUL byte. */
    harness_write_bytes(path, "alice:plain:x\n\0bob:plain:y\n", 27);
    assert_true(userlist_load(path, &ul, &errs, NULL) < 0);
    assert_null(ul);
    assert_int_equal(errs.n, 1);
    snprintf(want, sizeof(want), "%s: cannot read userlist: contains a NUL byte", path);
    assert_string_equal(errs.msg[0], want);
    msglist_fini(&errs);

    /* Over the cap. */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fseek(f, (long)USERLIST_FILE_MAX, SEEK_SET), 0);
    assert_int_equal(fputc('\n', f), '\n');
    assert_int_equal(fclose(f), 0);
    assert_true(userlist_load(path, &ul, &errs, NULL) < 0);
    assert_null(ul);
    assert_int_equal(errs.n, 1);
    snprintf(want, sizeof(want), "%s: cannot read userlist: larger than 16 MiB", path);
    assert_string_equal(errs.msg[0], want);
    msglist_fini(&errs);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* ---- scale, versions, references ---------------------------------------- */

static void test_many_users(void **state)
{
    (void)state;
    enum { N = 5000 };
    size_t cap = (size_t)N * 40, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len, "user%d:plain:pw%d\n", i, i * 7);
    struct userlist *ul = parse_ok(text);
    assert_int_equal(ul->n, N);
    /* The table is a power of two with room to spare. */
    assert_true(ul->nslots >= 2 * (size_t)N);
    assert_int_equal(ul->nslots & (ul->nslots - 1), 0);
    for (int i = 0; i < N; i++) {
        char name[32], secret[32];
        snprintf(name, sizeof(name), "user%d", i);
        snprintf(secret, sizeof(secret), "pw%d", i * 7);
        const struct user *u = find(ul, name);
        assert_non_null(u);
        assert_string_equal(u->name, name);
        assert_string_equal(u->secret, secret);
        assert_int_equal(u->line, i + 1);
    }
    assert_null(find(ul, "user5000"));
    assert_null(find(ul, "user-1"));
    assert_null(find(ul, "user"));
    assert_null(find(ul, "user00"));
    userlist_unref(ul);
    free(text);
}

static void test_versions(void **state)
{
    (void)state;
    char a1[300], a1_again[300], text1[1024], text2[1024];
    argon_line(a1, sizeof(a1), "alice", "pw");
    /* The same password hashed again has a new salt: a new credential. */
    argon_line(a1_again, sizeof(a1_again), "alice", "pw");
    assert_string_not_equal(a1, a1_again);

    snprintf(text1, sizeof(text1), "%s\nbob:plain:x\ncarol:plain:same\n", a1);
    struct userlist *u1 = parse_ok(text1);
    struct userlist *u1b = parse_ok(text1);
    /* Unchanged lines (even in another parse, or moved) keep their version. */
    snprintf(text2, sizeof(text2), "# moved\ncarol:plain:same\n%s\nbob:plain:y\n", a1_again);
    struct userlist *u2 = parse_ok(text2);

    static const char *const names[] = {"alice", "bob", "carol"};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(find(u1, names[i])->version, find(u1b, names[i])->version);
    assert_int_equal(find(u1, "carol")->version, find(u2, "carol")->version);
    assert_int_not_equal(find(u1, "alice")->version, find(u2, "alice")->version);
    assert_int_not_equal(find(u1, "bob")->version, find(u2, "bob")->version);

    /* A plain secret that looks like the text of a hash is still another
     * credential: the kind is part of the version. */
    char text3[1024];
    snprintf(text3, sizeof(text3), "alice:plain:%s\n", a1 + 6);
    struct userlist *u3 = parse_ok(text3);
    assert_int_not_equal(find(u1, "alice")->version, find(u3, "alice")->version);

    userlist_unref(u1);
    userlist_unref(u1b);
    userlist_unref(u2);
    userlist_unref(u3);
}

static void test_refcount(void **state)
{
    (void)state;
    struct userlist *ul = parse_ok("alice:plain:x\n");
    assert_ptr_equal(userlist_ref(ul), ul);
    assert_ptr_equal(userlist_ref(ul), ul);
    assert_int_equal(atomic_load(&ul->refs), 3);
    userlist_unref(ul);
    userlist_unref(ul);
    assert_int_equal(atomic_load(&ul->refs), 1);
    /* Still whole with one reference left. */
    assert_string_equal(find(ul, "alice")->secret, "x");
    userlist_unref(ul); /* frees: LeakSanitizer would report it otherwise */
    assert_null(userlist_ref(NULL));
    userlist_unref(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_parse_mixed_list, teardown),
        cmocka_unit_test_teardown(test_parse_argon_8m, teardown),
        cmocka_unit_test_teardown(test_argon2_params_bounded, teardown),
        cmocka_unit_test_teardown(test_pwhash_params, teardown),
        cmocka_unit_test_teardown(test_find_hits_and_misses, teardown),
        cmocka_unit_test_teardown(test_empty_lists, teardown),
        cmocka_unit_test_teardown(test_malformed_lines, teardown),
        cmocka_unit_test_teardown(test_bom_and_spaces, teardown),
        cmocka_unit_test_teardown(test_line_numbers_count_every_line, teardown),
        cmocka_unit_test_teardown(test_all_errors_reported, teardown),
        cmocka_unit_test_teardown(test_errors_append, teardown),
        cmocka_unit_test_teardown(test_duplicates, teardown),
        cmocka_unit_test_teardown(test_duplicates_reported_with_other_errors, teardown),
        cmocka_unit_test_teardown(test_name_ok, teardown),
        cmocka_unit_test_teardown(test_load_file, teardown),
        cmocka_unit_test_teardown(test_many_users, teardown),
        cmocka_unit_test_teardown(test_versions, teardown),
        cmocka_unit_test_teardown(test_refcount, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
