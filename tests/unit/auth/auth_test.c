/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * auth_test.c: auth_begin, the order auth.h promises: a throttled client
 * is refused before any work (even with a cached success); a cached
 * success is accepted at once; anything else is one verification on the
 * pool whose verdict comes back on the worker's loop; failures feed the
 * throttle (one block counted; identical attempts in flight are one
 * guess); a full queue is AUTH_BUSY and no failure; a changed or
 * removed user stops matching the cache; an abandoned attempt never calls
 * back. Users are hashed at the lowest cost; every loop run is bounded.
 */
#include "harness.h"

#include <pthread.h>

#include "auth/auth.h"
#include "core/loop.h"
#include "crypto/fcrypto.h"

#define GUARD_MS  20000
#define MAX_CALLS 32
#define TTL_MS    300000u

struct fixture {
    struct loop l;
    struct timer guard;
    bool guard_fired;
    struct auth a;
    bool started;
    struct auth_worker aw;
    bool worker;
    struct userlist *ul;
    pthread_t main;
    int result[MAX_CALLS];
    unsigned calls[MAX_CALLS];
    unsigned ncalls, want;
    bool wrong_thread;
};

static struct fixture *fx;

static void guard_cb(struct timer *t)
{
    (void)t;
    fx->guard_fired = true;
    loop_stop(&fx->l);
}

static struct userlist *make_list(const char *alice_pass, bool with_bob)
{
    char phc[FCRYPTO_PWHASH_MAX], text[512];
    assert_int_equal(fcrypto_pwhash(phc, alice_pass, strlen(alice_pass), fcrypto_pwhash_ops_min(),
                                    fcrypto_pwhash_mem_min()),
                     0);
    snprintf(text, sizeof(text), "alice:%s\n%s", phc, with_bob ? "bob:plain:secret\n" : "");
    struct msglist errs = {0};
    struct userlist *ul = NULL;
    assert_int_equal(userlist_parse(text, "users", &ul, &errs, NULL), 0);
    msglist_fini(&errs);
    return ul;
}

static int setup(void **state)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    fx->main = pthread_self();
    assert_int_equal(fcrypto_init(), 0);
    assert_int_equal(loop_init(&fx->l), 0);
    timer_init(&fx->guard, guard_cb);
    fx->ul = make_list("right", true);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    /* As the server does it: the pool first, then the workers' ports. */
    if (fx->started)
        auth_stop(&fx->a);
    if (fx->worker)
        auth_worker_fini(&fx->aw);
    loop_flush_tasks(&fx->l);
    loop_fini(&fx->l);
    userlist_unref(fx->ul);
    free(fx);
    fx = NULL;
    return 0;
}

static void start(unsigned threads, unsigned queue, uint32_t max_failures)
{
    assert_int_equal(auth_start(&fx->a, threads, queue, 1024, max_failures, 60000, 60000, 64), 0);
    fx->started = true;
    assert_int_equal(auth_worker_init(&fx->aw, &fx->a, &fx->l, 64), 0);
    fx->worker = true;
}

static void on_auth(void *owner, int result)
{
    if (!pthread_equal(pthread_self(), fx->main))
        fx->wrong_thread = true;
    size_t i = (size_t)(uintptr_t)owner - 1;
    assert_true(i < MAX_CALLS);
    fx->calls[i]++;
    fx->result[i] = result;
    if (++fx->ncalls >= fx->want)
        loop_stop(&fx->l);
}

static void run_until(unsigned n)
{
    fx->want = n;
    if (fx->ncalls >= n)
        return;
    loop_timer_arm(&fx->l, &fx->guard, GUARD_MS);
    fx->l.stopping = false;
    assert_int_equal(loop_run(&fx->l), 0);
    loop_timer_stop(&fx->l, &fx->guard);
    assert_false(fx->guard_fired);
    assert_int_equal(fx->ncalls, n);
    assert_false(fx->wrong_thread);
}

static struct addr client(const char *ip)
{
    struct addr a;
    memset(&a, 0, sizeof(a));
    assert_int_equal(addr_parse_ip(ip, 40000, &a), 0);
    return a;
}

/* auth_begin for call slot i; returns its immediate answer. */
static int begin(unsigned i, const char *ip, const char *user, const char *pass, uint32_t ttl,
                 struct auth_job **job)
{
    struct auth_params p = {.ul = fx->ul, .cache_ttl_ms = ttl};
    struct addr c = client(ip);
    struct auth_job *dummy;
    if (!job)
        job = &dummy;
    int r = auth_begin(&fx->aw, &p, &c, user, strlen(user), pass, strlen(pass), on_auth,
                       (void *)(uintptr_t)(i + 1), job);
    if (r == AUTH_PENDING)
        assert_non_null(*job);
    else
        assert_null(*job);
    return r;
}

/* One attempt that must go to the pool; returns its verdict. */
static int verify(unsigned i, const char *ip, const char *user, const char *pass, uint32_t ttl)
{
    assert_int_equal(begin(i, ip, user, pass, ttl, NULL), AUTH_PENDING);
    run_until(fx->ncalls + 1);
    assert_int_equal(fx->calls[i], 1);
    return fx->result[i];
}

static uint32_t refs(void)
{
    return atomic_load(&fx->ul->refs);
}

static void test_verify_then_cache(void **state)
{
    (void)state;
    start(2, 8, 10);
    assert_int_equal(verify(0, "127.0.0.1", "alice", "right", TTL_MS), AUTH_OK);
    /* The second time: accepted at once, no callback. */
    assert_int_equal(begin(1, "127.0.0.1", "alice", "right", TTL_MS, NULL), AUTH_OK);
    assert_int_equal(begin(2, "127.0.0.5", "alice", "right", TTL_MS, NULL), AUTH_OK);
    assert_int_equal(fx->calls[1] + fx->calls[2], 0);
    assert_int_equal(fx->aw.stats->cache_hits, 2);
    assert_int_equal(fx->aw.stats->ok, 3);
    /* A wrong password is not a cache hit: it is verified (and fails), and
     * the good entry stays. */
    assert_int_equal(verify(3, "127.0.0.1", "alice", "wrong", TTL_MS), AUTH_DENIED);
    assert_int_equal(begin(4, "127.0.0.1", "alice", "right", TTL_MS, NULL), AUTH_OK);
    /* Plain users are cached the same way. */
    assert_int_equal(verify(5, "127.0.0.1", "bob", "secret", TTL_MS), AUTH_OK);
    assert_int_equal(begin(6, "127.0.0.1", "bob", "secret", TTL_MS, NULL), AUTH_OK);
    assert_int_equal(refs(), 1);
}

static void test_ttl_zero_always_verifies(void **state)
{
    (void)state;
    start(2, 8, 10);
    assert_int_equal(verify(0, "127.0.0.1", "alice", "right", 0), AUTH_OK);
    assert_int_equal(verify(1, "127.0.0.1", "alice", "right", 0), AUTH_OK);
    assert_int_equal(fx->aw.stats->cache_hits, 0);
}

static void test_unknown_user(void **state)
{
    (void)state;
    start(2, 8, 10);
    assert_int_equal(verify(0, "127.0.0.1", "mallory", "right", TTL_MS), AUTH_DENIED);
    assert_int_equal(verify(1, "127.0.0.1", "mallory", "right", TTL_MS), AUTH_DENIED);
    assert_int_equal(fx->aw.stats->denied, 2);
}

static void test_failures_throttle(void **state)
{
    (void)state;
    start(2, 8, 3);
    /* A success first: the cache holds alice for 127.0.0.2 too. */
    assert_int_equal(verify(0, "127.0.0.2", "alice", "right", TTL_MS), AUTH_OK);
    for (unsigned i = 1; i <= 3; i++)
        assert_int_equal(verify(i, "127.0.0.2", "alice", "bad", TTL_MS), AUTH_DENIED);
    assert_int_equal(fx->aw.stats->blocks, 1);
    /* Blocked: refused before the cache, and without a job. */
    assert_int_equal(begin(4, "127.0.0.2", "alice", "right", TTL_MS, NULL), AUTH_THROTTLED);
    assert_int_equal(begin(5, "127.0.0.2", "mallory", "x", TTL_MS, NULL), AUTH_THROTTLED);
    assert_int_equal(fx->aw.stats->throttled, 2);
    assert_int_equal(fx->aw.stats->blocks, 1);
    /* Another address is not. */
    assert_int_equal(begin(6, "127.0.0.3", "alice", "right", TTL_MS, NULL), AUTH_OK);
    assert_int_equal(verify(7, "127.0.0.3", "bob", "secret", TTL_MS), AUTH_OK);
    assert_int_equal(fx->calls[4] + fx->calls[5] + fx->calls[6], 0);
}

/* A new userlist: a changed password no longer matches the cached one, a
 * removed user no longer matches at all. */
static void test_changed_user_misses_cache(void **state)
{
    (void)state;
    start(2, 8, 10);
    assert_int_equal(verify(0, "127.0.0.1", "alice", "right", TTL_MS), AUTH_OK);
    assert_int_equal(verify(1, "127.0.0.1", "bob", "secret", TTL_MS), AUTH_OK);
    struct userlist *old = fx->ul;
    fx->ul = make_list("changed", false); /* alice's password changed, bob gone */
    assert_int_equal(verify(2, "127.0.0.1", "alice", "right", TTL_MS), AUTH_DENIED);
    assert_int_equal(verify(3, "127.0.0.1", "bob", "secret", TTL_MS), AUTH_DENIED);
    assert_int_equal(verify(4, "127.0.0.1", "alice", "changed", TTL_MS), AUTH_OK);
    assert_int_equal(begin(5, "127.0.0.1", "alice", "changed", TTL_MS, NULL), AUTH_OK);
    userlist_unref(old);
}

/* A success verified on one worker is a cache hit on another (the table
 * all workers share), copied into that worker's own cache; a wrong
 * password there is still verified, and a changed credential misses. */
static void test_other_worker_finds_success(void **state)
{
    (void)state;
    start(2, 8, 10);
    struct auth_worker aw2;
    assert_int_equal(auth_worker_init(&aw2, &fx->a, &fx->l, 64), 0);
    assert_int_equal(verify(0, "127.0.0.1", "alice", "right", TTL_MS), AUTH_OK);
    struct auth_params p = {.ul = fx->ul, .cache_ttl_ms = TTL_MS};
    struct addr c = client("127.0.0.9");
    struct auth_job *job = NULL;
    assert_int_equal(auth_begin(&aw2, &p, &c, "alice", 5, "right", 5, on_auth, (void *)1, &job),
                     AUTH_OK);
    assert_null(job);
    assert_int_equal(aw2.stats->cache_hits, 1);
    assert_int_equal(aw2.stats->cache_shared_hits, 1);
    /* Now in aw2's own cache. */
    assert_int_equal(auth_begin(&aw2, &p, &c, "alice", 5, "right", 5, on_auth, (void *)1, &job),
                     AUTH_OK);
    assert_int_equal(aw2.stats->cache_hits, 2);
    assert_int_equal(aw2.stats->cache_shared_hits, 1);
    assert_int_equal(fx->aw.stats->cache_shared_hits, 0);
    /* A wrong password is no hit anywhere. */
    assert_int_equal(auth_begin(&aw2, &p, &c, "alice", 5, "wrong", 5, on_auth, (void *)3, &job),
                     AUTH_PENDING);
    run_until(fx->ncalls + 1);
    assert_int_equal(fx->result[2], AUTH_DENIED);
    /* bob was never verified: no hit for him on either worker. */
    assert_int_equal(auth_begin(&aw2, &p, &c, "bob", 3, "secret", 6, on_auth, (void *)4, &job),
                     AUTH_PENDING);
    run_until(fx->ncalls + 1);
    assert_int_equal(fx->result[3], AUTH_OK);
    /* alice's credential changes: the shared entry no longer matches. */
    struct userlist *old = fx->ul;
    fx->ul = make_list("changed", false);
    p.ul = fx->ul;
    struct auth_worker aw3;
    assert_int_equal(auth_worker_init(&aw3, &fx->a, &fx->l, 64), 0);
    assert_int_equal(auth_begin(&aw3, &p, &c, "alice", 5, "right", 5, on_auth, (void *)5, &job),
                     AUTH_PENDING);
    run_until(fx->ncalls + 1);
    assert_int_equal(fx->result[4], AUTH_DENIED);
    assert_int_equal(aw3.stats->cache_shared_hits, 0);
    auth_stop(&fx->a);
    fx->started = false;
    auth_worker_fini(&aw2);
    auth_worker_fini(&aw3);
    userlist_unref(old);
}

/* An abandoned attempt never calls back; its job is freed when the verdict
 * comes in. */
static void test_abandon(void **state)
{
    (void)state;
    start(1, 8, 10);
    struct auth_job *job = NULL;
    assert_int_equal(begin(0, "127.0.0.1", "alice", "right", TTL_MS, &job), AUTH_PENDING);
    auth_abandon(job);
    auth_abandon(NULL);
    /* A later attempt on the same one-thread pool is delivered after it. */
    assert_int_equal(verify(1, "127.0.0.1", "alice", "bad", TTL_MS), AUTH_DENIED);
    assert_int_equal(fx->calls[0], 0);
    assert_int_equal(refs(), 1);
}

/* One thread, a queue of one: slow attempts (unknown names cost a
 * default-cost Argon2id) soon find it full, and are refused at once. */
static void test_busy(void **state)
{
    (void)state;
    start(1, 1, 0);
    unsigned pending = 0, busy = 0;
    for (unsigned i = 0; i < 8; i++) {
        int r = begin(i, "127.0.0.1", "mallory", "x", TTL_MS, NULL);
        if (r == AUTH_PENDING)
            pending++;
        else if (r == AUTH_BUSY)
            busy++;
        else
            fail_msg("attempt %u: %s", i, auth_result_str(r));
    }
    assert_true(pending >= 1 && pending <= 2);
    assert_int_equal(pending + busy, 8);
    assert_int_equal(fx->aw.stats->busy, busy);
    run_until(pending);
    assert_int_equal(refs(), 1);
}

/* Identical attempts while one is on the pool share its verification:
 * one Argon2id, every caller gets the verdict, each settled for its own
 * client; different passwords, and uncached attempts, are not shared. */
static void test_identical_attempts_share(void **state)
{
    (void)state;
    start(1, 1, 0); /* a queue of one: a second queued job would be refused */
    assert_int_equal(begin(0, "127.0.0.1", "alice", "right", TTL_MS, NULL), AUTH_PENDING);
    assert_int_equal(begin(1, "127.0.0.2", "alice", "right", TTL_MS, NULL), AUTH_PENDING);
    struct auth_job *abandoned = NULL;
    assert_int_equal(begin(2, "127.0.0.3", "alice", "right", TTL_MS, &abandoned), AUTH_PENDING);
    auth_abandon(abandoned);
    assert_int_equal(fx->aw.stats->shared, 2);
    run_until(2);
    assert_int_equal(fx->calls[0], 1);
    assert_int_equal(fx->calls[1], 1);
    assert_int_equal(fx->calls[2], 0); /* gave up: counted, not called */
    assert_int_equal(fx->result[0], AUTH_OK);
    assert_int_equal(fx->result[1], AUTH_OK);
    assert_int_equal(fx->aw.stats->ok, 3);
    assert_int_equal(fx->aw.stats->busy, 0);
    /* The verdict is cached now. */
    assert_int_equal(begin(3, "127.0.0.4", "alice", "right", TTL_MS, NULL), AUTH_OK);

    /* Wrong passwords share too (the same verdict); a different password
     * does not join, so the one-place queue refuses it. */
    assert_int_equal(begin(4, "127.0.0.1", "alice", "wrong", TTL_MS, NULL), AUTH_PENDING);
    assert_int_equal(begin(5, "127.0.0.1", "alice", "wrong", TTL_MS, NULL), AUTH_PENDING);
    int r = begin(6, "127.0.0.1", "alice", "other", TTL_MS, NULL);
    assert_true(r == AUTH_BUSY || r == AUTH_PENDING);
    unsigned want = 4 + (r == AUTH_PENDING);
    run_until(want);
    assert_int_equal(fx->result[4], AUTH_DENIED);
    assert_int_equal(fx->result[5], AUTH_DENIED);
    assert_int_equal(fx->aw.stats->shared, 3);
    assert_int_equal(refs(), 1);
}

/* F5: identical attempts from one address are one guess for the throttle,
 * whether they share a verification (cache on) or not (cache off): with
 * max_failures = 2, 16 of them at once are all verified, while a second
 * distinct guess fits and a third is refused. */
static void test_identical_attempts_one_guess(void **state)
{
    (void)state;
    start(2, 64, 2);
    unsigned n = 0;
    for (; n < 8; n++)
        assert_int_equal(begin(n, "127.0.0.9", "alice", "right", TTL_MS, NULL), AUTH_PENDING);
    for (; n < 16; n++)
        assert_int_equal(begin(n, "127.0.0.9", "alice", "right", 0, NULL), AUTH_PENDING);
    assert_int_equal(begin(n++, "127.0.0.9", "alice", "guess", 0, NULL), AUTH_PENDING);
    assert_int_equal(begin(n, "127.0.0.9", "alice", "other", 0, NULL), AUTH_THROTTLED);
    assert_int_equal(fx->aw.stats->throttled, 1);
    run_until(n);
    for (unsigned i = 0; i < 16; i++)
        assert_int_equal(fx->result[i], AUTH_OK);
    assert_int_equal(fx->result[16], AUTH_DENIED);
    assert_int_equal(fx->aw.stats->blocks, 0);
    assert_int_equal(fx->calls[17], 0);
}

/* Attempts shed because the queue is full (AUTH_BUSY) were never verified:
 * they are not failures. Eight identical slow attempts on a one-thread,
 * one-place pool with max_failures = 3: most are shed, the one or two
 * verified fail, and the address is not blocked. */
static void test_shed_is_no_failure(void **state)
{
    (void)state;
    start(1, 1, 3);
    unsigned pending = 0, busy = 0;
    for (unsigned i = 0; i < 8; i++) {
        int r = begin(i, "127.0.0.8", "mallory", "x", TTL_MS, NULL);
        if (r == AUTH_PENDING)
            pending++;
        else if (r == AUTH_BUSY)
            busy++;
        else
            fail_msg("attempt %u: %s", i, auth_result_str(r));
    }
    assert_true(pending >= 1 && pending <= 2);
    assert_int_equal(pending + busy, 8);
    run_until(pending);
    assert_int_equal(fx->aw.stats->busy, busy);
    assert_int_equal(fx->aw.stats->denied, pending);
    assert_int_equal(fx->aw.stats->blocks, 0);
    struct addr c = client("127.0.0.8");
    assert_false(throttle_blocked(&fx->a.t, &c, loop_now(&fx->l)));
}

/* Without the cache nothing is shared: every attempt costs a verification. */
static void test_no_sharing_without_cache(void **state)
{
    (void)state;
    start(1, 8, 0);
    assert_int_equal(begin(0, "127.0.0.1", "alice", "right", 0, NULL), AUTH_PENDING);
    assert_int_equal(begin(1, "127.0.0.1", "alice", "right", 0, NULL), AUTH_PENDING);
    run_until(2);
    assert_int_equal(fx->aw.stats->shared, 0);
    assert_int_equal(fx->result[0], AUTH_OK);
    assert_int_equal(fx->result[1], AUTH_OK);
}

/* The pool stops with shared attempts still waiting: nothing leaks. */
static void test_stop_with_followers(void **state)
{
    (void)state;
    start(1, 4, 0);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(begin(i, "127.0.0.1", "alice", "right", TTL_MS, NULL), AUTH_PENDING);
    assert_int_equal(fx->aw.stats->shared, 3);
    /* teardown stops the pool and finishes the port without running the
     * loop: LeakSanitizer checks the followers are freed with their job. */
}

static void test_result_str(void **state)
{
    (void)state;
    assert_string_equal(auth_result_str(AUTH_OK), "ok");
    assert_string_equal(auth_result_str(AUTH_PENDING), "pending");
    assert_string_equal(auth_result_str(AUTH_DENIED), "denied");
    assert_string_equal(auth_result_str(AUTH_THROTTLED), "throttled");
    assert_string_equal(auth_result_str(AUTH_BUSY), "busy");
    assert_string_equal(auth_result_str(42), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_verify_then_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ttl_zero_always_verifies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_throttle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_user_misses_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_worker_finds_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identical_attempts_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identical_attempts_one_guess, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shed_is_no_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_sharing_without_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_with_followers, setup, teardown),
        cmocka_unit_test(test_result_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
