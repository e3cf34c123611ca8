/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * outbound_direct_test.c: the direct outbound (relay/outbound_direct.c)
 * under a real worker loop, behind a front row of the test's own: it
 * connects to a loopback listener and reports where the destination sees
 * it (BND), and a port nobody listens on is "connection refused". The
 * test front is also the proof that a front is a row and nothing more.
 */
#include "harness.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "core/sock.h"
#include "proto/socks5.h"
#include "relay/front.h"
#include "relay/outbound.h"
#include "relay/session.h"
#include "worker/worker.h"

struct seen {
    int connected, failed;
    uint8_t rep;
    enum outcome o;
    int err;
    int bnd_rc;
    struct addr bnd, target;
};

static struct seen seen;
static struct addr dest;
static struct timer stop_timer, guard_timer;

/* The loop a session runs on, from the session (for the stop timers). */
static struct loop *loop_of(struct conn *c)
{
    return &c->w->loop;
}

static struct loop *the_loop;

static void on_stop(struct timer *t)
{
    (void)t;
    loop_stop(the_loop);
}

static void t_start(struct conn *c)
{
    conn_dial(c, NULL, &dest, dest.port);
}

static void t_drive(struct conn *c, uint32_t up_events)
{
    (void)c;
    (void)up_events;
}

/* Stop once this batch (and the session's late free) is over. */
static void t_done(struct conn *c, const char *why)
{
    struct loop *l = loop_of(c);
    conn_close(c, why);
    loop_timer_arm(l, &stop_timer, 0);
}

static void t_connected(struct conn *c)
{
    seen.connected++;
    seen.bnd_rc = c->out->bnd(c, &seen.bnd);
    seen.target = c->target;
    t_done(c, "done");
}

static void t_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    seen.failed++;
    seen.rep = errmap_socks5(o);
    seen.o = o;
    seen.err = c->err;
    seen.target = c->target;
    t_done(c, why);
}

static void t_timeout(struct conn *c)
{
    t_done(c, "timeout");
}

static void t_end(struct conn *c)
{
    (void)c;
}

static const struct front_ops t_front = {
    .name = "test",
    .sp = SP_NONE,
    .start = t_start,
    .drive = t_drive,
    .connected = t_connected,
    .fail_reply = t_fail_reply,
    .timeout = t_timeout,
    .end = t_end,
};

struct ctx {
    char dir[HARNESS_PATH_MAX];
    char path[HARNESS_PATH_MAX];
    struct config *cfg;
    struct shared sh;
    struct worker w;
};

static int setup(void **state)
{
    struct ctx *x = calloc(1, sizeof(*x));
    assert_non_null(x);
    harness_mkdtemp(x->dir, sizeof(x->dir));
    harness_path(x->path, sizeof(x->path), x->dir, "ferry.conf");
    /* A loopback listener: loopback destinations are not protected. */
    harness_write_file(x->path, "listen = 127.0.0.1:1080\nconnect_timeout = 5s\n");
    struct config_cli cli = {.path = x->path};
    struct msglist errs = {0};
    int rc = config_load(&cli, &x->cfg, &errs);
    for (size_t i = 0; i < errs.n; i++)
        print_message("config: %s\n", errs.msg[i]);
    msglist_fini(&errs);
    assert_int_equal(rc, 0);
    assert_int_equal(worker_init(&x->w, 0, &x->sh, &relay_worker_ops, x->cfg, NULL, NULL, 0), 0);
    the_loop = &x->w.loop;
    timer_init(&stop_timer, on_stop);
    timer_init(&guard_timer, on_stop);
    memset(&seen, 0, sizeof(seen));
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *x = *state;
    worker_fini(&x->w);
    config_unref(x->cfg);
    unlink(x->path);
    assert_int_equal(rmdir(x->dir), 0);
    free(x);
    return 0;
}

/* Open a session of the test front (its start dials dest) and run the
 * worker's loop until it ends, 10 s at most. */
static void run_session(struct ctx *x)
{
    int sp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
    struct addr peer = {0};
    assert_int_equal(addr_parse_ip("127.0.0.1", 40000, &peer), 0);
    atomic_store(&x->sh.sessions, 1);
    x->w.nsessions = 1; /* as the worker counts an accepted connection */
    assert_int_equal(
        conn_open(&x->w, 0, sp[0], &peer, false, &t_front, CONN_ST_GREETING, &outbound_direct), 0);
    loop_timer_arm(&x->w.loop, &guard_timer, 10000);
    assert_int_equal(loop_run(&x->w.loop), 0);
    loop_timer_stop(&x->w.loop, &guard_timer);
    loop_timer_stop(&x->w.loop, &stop_timer);
    close(sp[1]);
    assert_int_equal(x->w.nsessions, 0);
}

static void test_connects_and_reports_bnd(void **state)
{
    struct ctx *x = *state;
    struct addr lo;
    assert_int_equal(addr_parse_ip("127.0.0.1", 0, &lo), 0);
    int lfd = sock_listen(&lo, 8, false);
    assert_true(lfd >= 0);
    assert_int_equal(sock_local_addr(lfd, &dest), 0);

    run_session(x);
    assert_int_equal(seen.connected, 1);
    assert_int_equal(seen.failed, 0);
    assert_int_equal(seen.bnd_rc, 0);
    assert_true(addr_equal(&seen.target, &dest));
    /* BND is the address the destination sees the connection come from. */
    struct addr from;
    int fd = sock_accept(lfd, &from);
    assert_true(fd >= 0);
    assert_true(addr_equal(&from, &seen.bnd));
    close(fd);
    close(lfd);
}

static void test_refused(void **state)
{
    struct ctx *x = *state;
    /* A port that was just free: bound, never listened on, closed. */
    struct addr lo;
    assert_int_equal(addr_parse_ip("127.0.0.1", 0, &lo), 0);
    int fd = sock_listen(&lo, 1, false);
    assert_true(fd >= 0);
    assert_int_equal(sock_local_addr(fd, &dest), 0);
    close(fd);

    run_session(x);
    assert_int_equal(seen.connected, 0);
    assert_int_equal(seen.failed, 1);
    assert_int_equal(seen.o, OUT_REFUSED);
    assert_int_equal(seen.rep, SOCKS5_REP_CONNECTION_REFUSED);
    assert_int_equal(seen.err, -ECONNREFUSED);
    assert_true(addr_equal(&seen.target, &dest));
}

static void test_is_a_socket(void **state)
{
    (void)state;
    /* The relay may splice a direct connection. */
    assert_true(outbound_direct.splice);
    assert_string_equal(outbound_direct.name, "direct");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_connects_and_reports_bnd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test(test_is_a_socket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
