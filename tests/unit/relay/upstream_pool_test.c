/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * upstream_pool_test.c: the HTTP proxy's pool of idle upstream connections
 * (relay/upstream_pool), held to its contract with real loopback TCP
 * connections on a real loop: a connection put under a key comes back for
 * that key only, newest first, with its peer address; the pool holds at
 * most max and closes what it does not keep; entries go after the idle
 * time (the owner's, asked at each sweep) or as soon as the upstream stirs;
 * an entry whose peer cannot be read is skipped for the next; freeing the
 * pool closes all. And the rule for what may be pooled at all: never a
 * connection that saw doubtful framing. Every loop run is bounded by a
 * guard timer.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/loop.h"
#include "relay/upstream_pool.h"

#define GUARD_MS 3000

struct fixture {
    struct loop l;
    struct timer guard, stop;
    bool guard_fired;
    uint32_t idle_ms;
    int lfd;            /* the "origin": a loopback listener */
    struct addr origin; /* its address */
};

static struct fixture *fx;

static uint32_t idle_of(void *ctx)
{
    return ((struct fixture *)ctx)->idle_ms;
}

static void guard_cb(struct timer *t)
{
    (void)t;
    fx->guard_fired = true;
    loop_stop(&fx->l);
}

static void stop_cb(struct timer *t)
{
    (void)t;
    loop_stop(&fx->l);
}

static int setup(void **state)
{
    fx = calloc(1, sizeof(*fx));
    assert_non_null(fx);
    assert_int_equal(loop_init(&fx->l), 0);
    timer_init(&fx->guard, guard_cb);
    timer_init(&fx->stop, stop_cb);
    fx->idle_ms = 30000;
    fx->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fx->lfd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fx->lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(fx->lfd, 16), 0);
    socklen_t len = sizeof(sin);
    assert_int_equal(getsockname(fx->lfd, (struct sockaddr *)&sin, &len), 0);
    addr_from_sockaddr(&fx->origin, (struct sockaddr *)&sin);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(fx->lfd);
    loop_flush_tasks(&fx->l);
    loop_fini(&fx->l);
    free(fx);
    fx = NULL;
    return 0;
}

/* A connected loopback pair: *up is the proxy's end (what gets pooled),
 * the return value the origin's end. */
static int connect_pair(int *up)
{
    struct sockaddr_storage ss;
    socklen_t sl = addr_to_sockaddr(&fx->origin, &ss);
    *up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(*up >= 0);
    assert_int_equal(connect(*up, (struct sockaddr *)&ss, sl), 0);
    int o = accept4(fx->lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(o >= 0);
    return o;
}

static bool fd_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0 || errno != EBADF;
}

/* Run the loop for about ms (bounded by the guard). */
static void run_for(uint64_t ms)
{
    loop_timer_arm(&fx->l, &fx->guard, GUARD_MS);
    loop_timer_arm(&fx->l, &fx->stop, ms);
    assert_int_equal(loop_run(&fx->l), 0);
    assert_false(fx->guard_fired);
    loop_timer_stop(&fx->l, &fx->guard);
    loop_timer_stop(&fx->l, &fx->stop);
}

static struct upstream_pool *new_pool(void)
{
    struct upstream_pool *p = upstream_pool_new(&fx->l, idle_of, fx);
    assert_non_null(p);
    assert_int_equal(p->n, 0);
    return p;
}

/* ---- take and put ------------------------------------------------------- */

static void test_put_take_same_key(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int up, o = connect_pair(&up);
    assert_true(upstream_pool_put(p, up, "example.com:80", 4));
    assert_int_equal(p->n, 1);

    struct addr peer;
    assert_int_equal(upstream_pool_take(p, "example.com:81", &peer), -1);
    assert_int_equal(upstream_pool_take(p, "example.com", &peer), -1);
    assert_int_equal(p->n, 1);

    int fd = upstream_pool_take(p, "example.com:80", &peer);
    assert_int_equal(fd, up);
    assert_true(addr_equal(&peer, &fx->origin));
    assert_int_equal(p->n, 0);
    /* Taken means gone, and the socket still works: the caller owns it. */
    assert_int_equal(upstream_pool_take(p, "example.com:80", &peer), -1);
    assert_int_equal(send(fd, "x", 1, MSG_NOSIGNAL), 1);
    char c;
    assert_int_equal(recv(o, &c, 1, 0), 1);
    close(fd);
    close(o);
    upstream_pool_free(p);
}

static void test_take_newest_first(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int a, b, c;
    int oa = connect_pair(&a), ob = connect_pair(&b), oc = connect_pair(&c);
    assert_true(upstream_pool_put(p, a, "h:80", 8));
    assert_true(upstream_pool_put(p, b, "other:80", 8));
    assert_true(upstream_pool_put(p, c, "h:80", 8));
    assert_int_equal(p->n, 3);
    struct addr peer;
    assert_int_equal(upstream_pool_take(p, "h:80", &peer), c);
    assert_int_equal(upstream_pool_take(p, "h:80", &peer), a);
    assert_int_equal(upstream_pool_take(p, "h:80", &peer), -1);
    assert_int_equal(p->n, 1);
    assert_true(upstream_pool_take(NULL, "h:80", &peer) == -1); /* no pool yet */
    close(a);
    close(c);
    upstream_pool_free(p); /* closes b */
    loop_flush_tasks(&fx->l);
    assert_false(fd_open(b));
    close(oa);
    close(ob);
    close(oc);
}

static void test_limit_closes_the_rest(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int a, b;
    int oa = connect_pair(&a), ob = connect_pair(&b);
    assert_true(upstream_pool_put(p, a, "h:80", 1));
    assert_false(upstream_pool_put(p, b, "h:80", 1)); /* full: b is closed */
    assert_int_equal(p->n, 1);
    assert_false(fd_open(b));
    char ch;
    assert_int_equal(recv(ob, &ch, 1, 0), 0); /* the origin sees the close */

    /* max 0: nothing is kept. */
    int z, oz = connect_pair(&z);
    assert_false(upstream_pool_put(p, z, "h:80", 0));
    assert_false(fd_open(z));
    assert_int_equal(p->n, 1);
    upstream_pool_free(p);
    close(oa);
    close(ob);
    close(oz);
}

/* An entry whose peer is unreadable (never connected) is closed and the
 * look goes on to the next one: the newest bad entry does not hide an
 * older good one (nor keep the look going round for ever). */
static void test_take_skips_unreadable_peer(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int good, og = connect_pair(&good);
    int bad = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(bad >= 0);
    assert_true(upstream_pool_put(p, good, "h:80", 8));
    assert_true(upstream_pool_put(p, bad, "h:80", 8));
    struct addr peer;
    assert_int_equal(upstream_pool_take(p, "h:80", &peer), good);
    assert_false(fd_open(bad));
    assert_int_equal(p->n, 0);
    close(good);
    close(og);
    upstream_pool_free(p);
}

/* ---- leaving the pool by itself ----------------------------------------- */

static void test_idle_expiry(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    fx->idle_ms = 1000;
    int a, oa = connect_pair(&a);
    uint64_t t0 = loop_now(&fx->l);
    assert_true(upstream_pool_put(p, a, "h:80", 8));
    assert_true(timer_armed(&p->sweep));

    fx->l.now_ms = t0 + 999;
    upstream_pool_sweep(p);
    assert_int_equal(p->n, 1);
    assert_true(timer_armed(&p->sweep)); /* still one to look at */

    /* The idle time is asked at each sweep: a longer one keeps it. */
    fx->idle_ms = 5000;
    fx->l.now_ms = t0 + 1000;
    upstream_pool_sweep(p);
    assert_int_equal(p->n, 1);

    fx->idle_ms = 1000;
    upstream_pool_sweep(p);
    assert_int_equal(p->n, 0);
    assert_false(fd_open(a));
    char ch;
    assert_int_equal(recv(oa, &ch, 1, 0), 0);
    close(oa);
    upstream_pool_free(p);
}

/* The sweep timer does the same on a running loop. */
static void test_sweep_timer_runs(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    fx->idle_ms = 1; /* anything seen by the first sweep is too old */
    int a, oa = connect_pair(&a);
    assert_true(upstream_pool_put(p, a, "h:80", 8));
    run_for(UPSTREAM_POOL_SWEEP_MS + 300);
    assert_int_equal(p->n, 0);
    assert_false(timer_armed(&p->sweep)); /* nothing left: no sweep */
    assert_false(fd_open(a));
    close(oa);
    upstream_pool_free(p);
}

/* An idle upstream that closes, or says anything unasked, is dropped at
 * once (not at the next sweep a second later). */
static void test_stirring_upstream_dropped(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int a, b, c;
    int oa = connect_pair(&a), ob = connect_pair(&b), oc = connect_pair(&c);
    assert_true(upstream_pool_put(p, a, "h:80", 8));
    assert_true(upstream_pool_put(p, b, "h:80", 8));
    assert_true(upstream_pool_put(p, c, "h:80", 8));
    close(oa);                                              /* EOF */
    assert_int_equal(send(ob, "HTTP", 4, MSG_NOSIGNAL), 4); /* unasked-for bytes */
    run_for(200);
    assert_int_equal(p->n, 1);
    assert_false(fd_open(a));
    assert_false(fd_open(b));
    struct addr peer;
    assert_int_equal(upstream_pool_take(p, "h:80", &peer), c);
    close(c);
    close(ob);
    close(oc);
    upstream_pool_free(p);
}

static void test_free_closes_all(void **state)
{
    (void)state;
    struct upstream_pool *p = new_pool();
    int fds[4], peers[4];
    for (int i = 0; i < 4; i++) {
        peers[i] = connect_pair(&fds[i]);
        assert_true(upstream_pool_put(p, fds[i], i % 2 ? "a:1" : "b:2", 8));
    }
    assert_int_equal(p->n, 4);
    upstream_pool_free(p);
    upstream_pool_free(NULL);
    loop_flush_tasks(&fx->l); /* entries are released after the batch (LSan checks) */
    for (int i = 0; i < 4; i++) {
        assert_false(fd_open(fds[i]));
        close(peers[i]);
    }
}

/* ---- what may be pooled -------------------------------------------------- */

static void test_may_pool(void **state)
{
    (void)state;
    const struct upstream_end ok = {.reusable = true, .req_done = true};
    assert_true(upstream_may_pool(&ok));

    struct upstream_end e = ok;
    e.doubt = true; /* e.g. repeated Content-Length: never reused */
    assert_false(upstream_may_pool(&e));
    e = ok;
    e.reusable = false; /* Connection: close, HTTP/1.0, close-delimited, a switch */
    assert_false(upstream_may_pool(&e));
    e = ok;
    e.req_done = false; /* a request body still owed */
    assert_false(upstream_may_pool(&e));
    e = ok;
    e.resp_eof = true;
    assert_false(upstream_may_pool(&e));
    e = ok;
    e.unread = 1; /* the upstream said more than its response */
    assert_false(upstream_may_pool(&e));

    /* Doubt wins over everything else being fine, in every combination. */
    for (unsigned bits = 0; bits < 16; bits++) {
        struct upstream_end d = {.reusable = bits & 1,
                                 .req_done = bits & 2,
                                 .resp_eof = bits & 4,
                                 .unread = bits & 8 ? 5 : 0,
                                 .doubt = true};
        assert_false(upstream_may_pool(&d));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_take_same_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_newest_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_closes_the_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_skips_unreadable_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_timer_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stirring_upstream_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_closes_all, setup, teardown),
        cmocka_unit_test(test_may_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
