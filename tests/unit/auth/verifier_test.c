/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verifier_test.c: the verifier pool. verifier_check, the pure check:
 * Argon2id and plain users pass with their password only, an unknown user
 * never passes, and all of them cost about one Argon2id verification with
 * the parameters of the list's users (the list's dummy hash). The pool: jobs submitted through a
 * loop and an auth_port come back on the loop's thread with the right verdicts, oldest first; a
 * full queue refuses with -EAGAIN; verifier_stop delivers what is still
 * queued as failures; abandoned and undelivered jobs are freed (their
 * userlist references dropped, which ASan and the refcount both check).
 *
 * Users are hashed at libsodium's lowest cost, and so is the list's dummy;
 * every loop run is bounded by a guard.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "auth/userlist.h"
#include "auth/verifier.h"
#include "core/loop.h"
#include "crypto/fcrypto.h"

#define GUARD_MS 20000
#define MAX_JOBS 32

struct record {
    bool done;
    int result;
    unsigned order; /* 1-based position among the verdicts */
};

struct fixture {
    struct loop l;
    struct timer guard;
    bool guard_fired;
    struct auth_port port;
    struct verifier v;
    bool started;
    struct userlist *ul;
    pthread_t main;
    struct record rec[MAX_JOBS];
    unsigned ndone, want;
    bool wrong_thread;
};

static struct fixture *fx;

static void guard_cb(struct timer *t)
{
    (void)t;
    fx->guard_fired = true;
    loop_stop(&fx->l);
}

/* alice: Argon2id "right"; bob: plain "secret". */
static int setup(void **state)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    fx->main = pthread_self();
    assert_int_equal(loop_init(&fx->l), 0);
    timer_init(&fx->guard, guard_cb);
    assert_int_equal(auth_port_init(&fx->port, &fx->l), 0);
    char phc[FCRYPTO_PWHASH_MAX], text[512];
    assert_int_equal(fcrypto_init(), 0);
    assert_int_equal(
        fcrypto_pwhash(phc, "right", 5, fcrypto_pwhash_ops_min(), fcrypto_pwhash_mem_min()), 0);
    snprintf(text, sizeof(text), "alice:%s\nbob:plain:secret\n", phc);
    struct msglist errs = {0};
    assert_int_equal(userlist_parse(text, "users", &fx->ul, &errs, NULL), 0);
    msglist_fini(&errs);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (fx->started)
        verifier_stop(&fx->v);
    auth_port_fini(&fx->port, &fx->l);
    loop_flush_tasks(&fx->l);
    loop_fini(&fx->l);
    userlist_unref(fx->ul);
    free(fx);
    fx = NULL;
    return 0;
}

static void start_pool(unsigned threads, unsigned cap)
{
    assert_int_equal(verifier_start(&fx->v, threads, cap), 0);
    fx->started = true;
}

static void stop_pool(void)
{
    verifier_stop(&fx->v);
    fx->started = false;
}

/* The port's callback: runs on the loop, takes the verdict, frees the job.
 * An abandoned job (owner NULL) still comes here, so its verdict can be
 * counted; it is only freed. */
static void on_done(void *owner, struct auth_job *job)
{
    if (!pthread_equal(pthread_self(), fx->main))
        fx->wrong_thread = true;
    if (!owner) {
        auth_job_free(job);
        return;
    }
    size_t i = (size_t)(uintptr_t)owner - 1;
    assert_true(i < MAX_JOBS);
    assert_false(fx->rec[i].done);
    fx->rec[i].done = true;
    fx->rec[i].result = job->result;
    fx->rec[i].order = ++fx->ndone;
    assert_ptr_equal(job->port, &fx->port);
    auth_job_free(job);
    if (fx->ndone >= fx->want)
        loop_stop(&fx->l);
}

/* A job for record i (owner NULL when i < 0: abandoned from the start). */
static struct auth_job *new_job(int i, const char *user, const char *pass)
{
    struct auth_job *job = calloc(1, sizeof(*job));
    assert_non_null(job);
    job->port = &fx->port;
    job->ul = userlist_ref(fx->ul);
    job->u = userlist_find(fx->ul, user, strlen(user));
    job->owner = i < 0 ? NULL : (void *)(uintptr_t)(i + 1);
    job->done = on_done;
    job->ulen = (uint8_t)strlen(user);
    job->plen = (uint8_t)strlen(pass);
    memcpy(job->user, user, job->ulen);
    memcpy(job->pass, pass, job->plen);
    return job;
}

static void submit_ok(int i, const char *user, const char *pass)
{
    assert_int_equal(verifier_submit(&fx->v, new_job(i, user, pass)), 0);
}

/* Run the loop until at least n verdicts in all have arrived (bounded;
 * one wake-up may bring several). */
static void run_until(unsigned n)
{
    fx->want = n;
    if (fx->ndone >= n)
        return;
    loop_timer_arm(&fx->l, &fx->guard, GUARD_MS);
    fx->l.stopping = false;
    assert_int_equal(loop_run(&fx->l), 0);
    loop_timer_stop(&fx->l, &fx->guard);
    assert_false(fx->guard_fired);
    assert_true(fx->ndone >= n);
    assert_false(fx->wrong_thread);
}

static uint32_t refs(void)
{
    return atomic_load(&fx->ul->refs);
}

/* ---- verifier_check ---------------------------------------------------- */

/* Replace a list's dummy with a cheap hash of a known password, so a test
 * can show the dummy's password opens nothing. */
static void known_dummy(struct userlist *ul, const char *dummy_pass)
{
    assert_int_equal(fcrypto_pwhash(ul->dummy, dummy_pass, strlen(dummy_pass),
                                    fcrypto_pwhash_ops_min(), fcrypto_pwhash_mem_min()),
                     0);
}

static int check(const struct userlist *ul, const char *user, const void *pass, size_t plen)
{
    const struct user *u = user ? userlist_find(ul, user, strlen(user)) : NULL;
    if (user)
        assert_non_null(u);
    return verifier_check(ul, u, pass, plen);
}

static void test_check_argon2(void **state)
{
    (void)state;
    struct userlist *v = fx->ul;
    known_dummy(v, "dummy");
    assert_int_equal(check(v, "alice", "right", 5), 0);
    assert_int_equal(check(v, "alice", "wrong", 5), -1);
    assert_int_equal(check(v, "alice", "righ", 4), -1);
    assert_int_equal(check(v, "alice", "rightt", 6), -1);
    assert_int_equal(check(v, "alice", "Right", 5), -1);
    assert_int_equal(check(v, "alice", "right\0", 6), -1);
    assert_int_equal(check(v, "alice", "", 0), -1);
    /* Only the given length counts. */
    assert_int_equal(check(v, "alice", "rightXYZ", 5), 0);
    /* Another user's password is no good either. */
    assert_int_equal(check(v, "alice", "secret", 6), -1);
}

static void test_check_plain(void **state)
{
    (void)state;
    struct userlist *v = fx->ul;
    known_dummy(v, "dummy");
    assert_int_equal(check(v, "bob", "secret", 6), 0);
    assert_int_equal(check(v, "bob", "secre", 5), -1);   /* a prefix */
    assert_int_equal(check(v, "bob", "secrets", 7), -1); /* longer */
    assert_int_equal(check(v, "bob", "s", 1), -1);
    assert_int_equal(check(v, "bob", "Secret", 6), -1);
    assert_int_equal(check(v, "bob", "secret\0", 7), -1);
    assert_int_equal(check(v, "bob", "", 0), -1);
    assert_int_equal(check(v, "bob", "right", 5), -1);
    assert_int_equal(check(v, "bob", "secretXYZ", 6), 0);
    /* The dummy's password is nobody's password. */
    assert_int_equal(check(v, "bob", "dummy", 5), -1);
    /* A 255-byte plain secret, and one byte off at either end. */
    char text[400], secret[256];
    memset(secret, 's', 255);
    secret[255] = '\0';
    snprintf(text, sizeof(text), "carol:plain:%s\n", secret);
    struct msglist errs = {0};
    struct userlist *ul = NULL;
    assert_int_equal(userlist_parse(text, "u", &ul, &errs, NULL), 0);
    const struct user *carol = userlist_find(ul, "carol", 5);
    assert_non_null(carol);
    assert_int_equal(verifier_check(v, carol, secret, 255), 0);
    assert_int_equal(verifier_check(v, carol, secret, 254), -1);
    secret[0] = 't';
    assert_int_equal(verifier_check(v, carol, secret, 255), -1);
    userlist_unref(ul);
}

static void test_check_unknown_user(void **state)
{
    (void)state;
    struct userlist *v = fx->ul;
    known_dummy(v, "guess");
    assert_int_equal(verifier_check(v, NULL, "right", 5), -1);
    assert_int_equal(verifier_check(v, NULL, "secret", 6), -1);
    assert_int_equal(verifier_check(v, NULL, "", 0), -1);
    /* Even the dummy's own password does not make a user. */
    assert_int_equal(verifier_check(v, NULL, "guess", 5), -1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A list of default-cost users gets a default-cost dummy, and an unknown
 * name or a plain user costs about what such a user costs: a property of
 * medians with a generous margin, not a speed. */
static void test_check_costs_alike(void **state)
{
    (void)state;

    char phc[FCRYPTO_PWHASH_MAX], text[512];
    assert_int_equal(
        fcrypto_pwhash(phc, "right", 5, FCRYPTO_PWHASH_OPS_DEFAULT, FCRYPTO_PWHASH_MEM_DEFAULT), 0);
    snprintf(text, sizeof(text), "dora:%s\nbob:plain:secret\n", phc);
    struct msglist errs = {0};
    struct userlist *ul = NULL;
    assert_int_equal(userlist_parse(text, "u", &ul, &errs, NULL), 0);
    const struct user *dora = userlist_find(ul, "dora", 4), *bob = userlist_find(ul, "bob", 3);
    assert_non_null(strstr(ul->dummy, "$argon2id$v=19$m=65536,t=2,p=1$"));
    assert_true(fcrypto_pwhash_valid(ul->dummy));

    enum { ROUNDS = 5, KINDS = 4 };
    double t[KINDS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < KINDS; k++) {
            const struct user *u = k == 0 ? dora : k == 1 ? NULL : bob;
            const char *pass = k == 3 ? "secret" : "wrong-password";
            double t0 = now_s();
            int rc = verifier_check(ul, u, pass, strlen(pass));
            t[k][r] = now_s() - t0;
            assert_int_equal(rc, k == 3 ? 0 : -1);
        }
    }
    double med[KINDS];
    for (int k = 0; k < KINDS; k++) {
        qsort(t[k], ROUNDS, sizeof(double), cmp_double);
        med[k] = t[k][ROUNDS / 2];
    }
    for (int k = 1; k < KINDS; k++) {
        double ratio = med[k] / med[0];
        if (ratio < 0.5 || ratio > 2.0)
            fail_msg("kind %d: median %.4f s against %.4f s for a default-cost user (ratio "
                     "%.2f)",
                     k, med[k], med[0], ratio);
    }
    userlist_unref(ul);
}

/* ---- the pool ------------------------------------------------------------ */

static void test_pool_verdicts(void **state)
{
    (void)state;
    start_pool(2, 8);
    static const struct {
        const char *user, *pass;
        int want;
    } jobs[] = {
        {"alice", "right", 0}, {"alice", "wrong", -1},  {"bob", "secret", 0},
        {"bob", "secre", -1},  {"nobody", "right", -1}, {"alice", "righ", -1},
    };
    enum { N = sizeof(jobs) / sizeof(jobs[0]) };
    for (int i = 0; i < N; i++)
        submit_ok(i, jobs[i].user, jobs[i].pass);
    assert_int_equal(refs(), 1 + N); /* each job holds the list */
    run_until(N);
    assert_int_equal(fx->ndone, N);
    for (int i = 0; i < N; i++) {
        assert_true(fx->rec[i].done);
        assert_int_equal(fx->rec[i].result, jobs[i].want);
    }
    assert_int_equal(atomic_load(&fx->v.verified), 2);
    assert_int_equal(atomic_load(&fx->v.rejected), N - 2);
    assert_int_equal(refs(), 1); /* every job freed */
}

/* Two threads and room for two: while they are busy with slow jobs (an
 * unknown name costs a default-cost Argon2id), at most 2 running + 2
 * queued are taken and then -EAGAIN; the refused job is still the
 * caller's. Once drained, the queue takes jobs again. */
static void test_queue_full(void **state)
{
    (void)state;
    start_pool(2, 2);
    int accepted = 0, rc = 0;
    for (int i = 0; i < 10; i++) {
        struct auth_job *job = new_job(i, "nobody", "pw");
        rc = verifier_submit(&fx->v, job);
        if (rc) {
            auth_job_free(job);
            break;
        }
        accepted++;
    }
    assert_int_equal(rc, -EAGAIN);
    assert_true(accepted >= 2);
    assert_true(accepted <= 4);
    run_until((unsigned)accepted);
    assert_int_equal(fx->ndone, accepted);
    for (int i = 0; i < accepted; i++)
        assert_int_equal(fx->rec[i].result, -1);
    assert_int_equal(refs(), 1);
    /* Drained: room again. */
    submit_ok(20, "alice", "right");
    run_until((unsigned)accepted + 1);
    assert_int_equal(fx->rec[20].result, 0);
}

/* One thread busy with a slow job; the correct passwords queued behind it
 * are failed, not verified, when the pool stops. Verdicts arrive oldest
 * first. */
static void test_stop_fails_queued(void **state)
{
    (void)state;
    start_pool(1, 8);
    submit_ok(0, "nobody", "pw");
    for (int i = 1; i <= 4; i++)
        submit_ok(i, "alice", "right");
    stop_pool();
    run_until(5);
    assert_int_equal(fx->ndone, 5);
    for (int i = 0; i <= 4; i++) {
        assert_int_equal(fx->rec[i].result, -1);
        assert_int_equal(fx->rec[i].order, (unsigned)i + 1);
    }
    assert_int_equal(atomic_load(&fx->v.verified), 0);
    assert_int_equal(refs(), 1);
}

/* A job whose session gave up (owner NULL) is freed by the port without a
 * callback; the verdicts around it are delivered as usual. */
static void test_abandoned_job(void **state)
{
    (void)state;
    start_pool(1, 8);
    submit_ok(0, "alice", "right");
    assert_int_equal(verifier_submit(&fx->v, new_job(-1, "alice", "right")), 0);
    submit_ok(1, "alice", "wrong");
    run_until(2);
    assert_int_equal(fx->rec[0].result, 0);
    assert_int_equal(fx->rec[1].result, -1);
    assert_int_equal(fx->ndone, 2);
    /* With one thread the abandoned job was delivered before job 1. */
    assert_int_equal(refs(), 1);
}

/* Verdicts that reach the port but never the loop are freed by
 * auth_port_fini (LeakSanitizer and the refcount check it). */
static void test_port_fini_frees_undelivered(void **state)
{
    (void)state;
    start_pool(2, 8);
    for (int i = 0; i < 4; i++)
        submit_ok(i, i % 2 ? "alice" : "bob", "nope");
    stop_pool(); /* everything is on the port now */
    assert_int_equal(refs(), 1 + 4);
    auth_port_fini(&fx->port, &fx->l);
    assert_int_equal(refs(), 1);
    assert_int_equal(fx->ndone, 0);
    /* auth_port_fini twice (the teardown) is harmless. */
}

/* Many jobs through a small queue, resubmitting after -EAGAIN: every one
 * gets its own verdict exactly once. */
static void test_many_jobs_small_queue(void **state)
{
    (void)state;
    start_pool(2, 2);
    enum { N = MAX_JOBS };
    int next = 0;
    while (next < N) {
        struct auth_job *job = new_job(next, "alice", next % 3 ? "right" : "bad");
        int rc = verifier_submit(&fx->v, job);
        if (rc == -EAGAIN) {
            auth_job_free(job);
            run_until(fx->ndone + 1); /* wait for room */
            continue;
        }
        assert_int_equal(rc, 0);
        next++;
    }
    run_until(N);
    assert_int_equal(fx->ndone, N);
    for (int i = 0; i < N; i++) {
        assert_true(fx->rec[i].done);
        assert_int_equal(fx->rec[i].result, i % 3 ? 0 : -1);
    }
    assert_int_equal(refs(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_check_argon2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_unknown_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_costs_alike, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_fails_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port_fini_frees_undelivered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_jobs_small_queue, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
