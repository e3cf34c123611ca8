/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pump_stream_test.c: the relay's pump (relay/pump.c) carrying a stream
 * outbound (splice false) under a real worker loop, with a fake stream of
 * the test's own that behaves as TLS may: its write must first read from
 * the socket (a KeyUpdate, say) and waits for SIDE_RD, while the bytes it
 * read on the way stay held in user space (pending). The pump must
 * deliver those bytes to the client at once, although epoll will not
 * announce them again, and carry the ends both ways (the client's EOF
 * through the stream's shutdown_wr, the stream's EOF to the client).
 */
#include "harness.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/config.h"
#include "relay/front.h"
#include "relay/outbound.h"
#include "relay/session.h"
#include "worker/worker.h"

/* The fake stream: every byte from the socket goes through ibuf; a write
 * is possible only once GATE bytes have come in. */
#define GATE 4
static struct {
    uint8_t ibuf[4096];
    size_t ilen;
    size_t rx_total;
    bool eof, shut;
    int up_fd;
    int writes_waited; /* writes that had to wait for SIDE_RD */
    bool early_seen;   /* the client had the held bytes before the rest came */
    bool ended;
} fk;

static struct loop *the_loop;
static struct timer stop_timer, guard_timer, later_timer;
static int peer_cli = -1, peer_up = -1; /* the test's ends */

static void on_stop(struct timer *t)
{
    (void)t;
    loop_stop(the_loop);
}

/* Take what the socket has into ibuf. 0, -EAGAIN (nothing now), or -errno. */
static int fk_slurp(void)
{
    for (;;) {
        if (fk.ilen == sizeof(fk.ibuf))
            return 0;
        ssize_t n = recv(fk.up_fd, fk.ibuf + fk.ilen, sizeof(fk.ibuf) - fk.ilen, 0);
        if (n > 0) {
            fk.ilen += (size_t)n;
            fk.rx_total += (size_t)n;
            continue;
        }
        if (n == 0) {
            fk.eof = true;
            return 0;
        }
        return -errno;
    }
}

static ssize_t fk_read(struct conn *c, void *p, size_t len, uint8_t *want)
{
    (void)c;
    if (!fk.ilen && !fk.eof) {
        int rc = fk_slurp();
        if (rc < 0 && rc != -EAGAIN)
            return rc;
    }
    if (!fk.ilen) {
        if (fk.eof)
            return 0;
        *want = SIDE_RD;
        return -EAGAIN;
    }
    size_t n = len < fk.ilen ? len : fk.ilen;
    if (n > 3)
        n = 3; /* a record at a time: short reads prove nothing */
    memcpy(p, fk.ibuf, n);
    memmove(fk.ibuf, fk.ibuf + n, fk.ilen - n);
    fk.ilen -= n;
    return (ssize_t)n;
}

static ssize_t fk_write(struct conn *c, const void *p, size_t len, uint8_t *want)
{
    (void)c;
    if (fk.rx_total < GATE) {
        int rc = fk_slurp();
        if (rc < 0 && rc != -EAGAIN)
            return rc;
        if (fk.rx_total < GATE) {
            fk.writes_waited++;
            *want = SIDE_RD; /* the socket said EAGAIN: truly waiting */
            return -EAGAIN;
        }
    }
    ssize_t n = send(fk.up_fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
        *want = SIDE_WR;
        return -errno;
    }
    return n;
}

static int fk_shutdown_wr(struct conn *c, uint8_t *want)
{
    (void)c;
    (void)want;
    fk.shut = true;
    return shutdown(fk.up_fd, SHUT_WR) == 0 ? 0 : -errno;
}

static bool fk_pending(const struct conn *c)
{
    (void)c;
    return fk.ilen > 0;
}

static void fk_dial(struct conn *c, const char *name, const struct addr *ip, uint16_t port)
{
    (void)name;
    (void)ip;
    (void)port;
    int rc = loop_io_add(&c->w->loop, &c->up, fk.up_fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    assert_int_equal(rc, 0);
    c->up_ev = 0;
    conn_set_state(c, CONN_ST_CONNECT);
    conn_connected(c);
}

static void fk_event(struct conn *c, uint32_t events)
{
    (void)c;
    (void)events;
}

static int fk_bnd(const struct conn *c, struct addr *out)
{
    (void)c;
    (void)out;
    return -ENOTCONN;
}

static void fk_close(struct conn *c)
{
    (void)c;
}

static const struct outbound_ops fk_ops = {
    .name = "fake-stream",
    .splice = false,
    .dial = fk_dial,
    .event = fk_event,
    .timeout = fk_close,
    .bnd = fk_bnd,
    .close = fk_close,
    .read = fk_read,
    .write = fk_write,
    .shutdown_wr = fk_shutdown_wr,
    .pending = fk_pending,
};

/* ---- a front that relays at once ------------------------------------------ */

static void t_start(struct conn *c)
{
    struct addr a = {0};
    c->out->dial(c, NULL, &a, 0);
}

static void t_drive(struct conn *c, uint32_t up_events)
{
    (void)c;
    (void)up_events;
}

static void t_connected(struct conn *c)
{
    conn_relay_start(c);
}

static void t_fail_reply(struct conn *c, enum outcome o, const char *why)
{
    (void)o;
    conn_close(c, why);
}

static void t_timeout(struct conn *c)
{
    conn_close(c, "timeout");
}

static void t_end(struct conn *c)
{
    (void)c;
    fk.ended = true;
    loop_timer_arm(the_loop, &stop_timer, 0);
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

/* 200 ms in: the held bytes must be at the client already; then the
 * upstream sends the rest (which opens the write) and ends. */
static void on_later(struct timer *t)
{
    (void)t;
    char got[8] = {0};
    ssize_t n = recv(peer_cli, got, sizeof(got), MSG_DONTWAIT);
    fk.early_seen = n == 2 && memcmp(got, "ab", 2) == 0;
    assert_int_equal(send(peer_up, "cdef", 4, MSG_NOSIGNAL), 4);
    shutdown(peer_up, SHUT_WR);
}

static void test_held_bytes_and_ends(void **state)
{
    (void)state;
    char dir[HARNESS_PATH_MAX], path[HARNESS_PATH_MAX];
    harness_mkdtemp(dir, sizeof(dir));
    harness_path(path, sizeof(path), dir, "ferry.conf");
    harness_write_file(path, "listen = 127.0.0.1:1080\n");
    struct config_cli cli = {.path = path};
    struct msglist errs = {0};
    struct config *cfg = NULL;
    assert_int_equal(config_load(&cli, &cfg, &errs), 0);
    msglist_fini(&errs);
    static struct shared sh;
    static struct worker w;
    assert_int_equal(worker_init(&w, 0, &sh, &relay_worker_ops, cfg, NULL, NULL, 0), 0);
    the_loop = &w.loop;
    timer_init(&stop_timer, on_stop);
    timer_init(&guard_timer, on_stop);
    timer_init(&later_timer, on_later);
    memset(&fk, 0, sizeof(fk));

    int cp[2], up[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, cp), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, up), 0);
    peer_cli = cp[1];
    peer_up = up[1];
    fk.up_fd = up[0];
    /* The client has sent its request and its EOF; the upstream only two
     * bytes so far. */
    assert_int_equal(send(peer_cli, "x", 1, MSG_NOSIGNAL), 1);
    shutdown(peer_cli, SHUT_WR);
    assert_int_equal(send(peer_up, "ab", 2, MSG_NOSIGNAL), 2);

    struct addr peer = {0};
    assert_int_equal(addr_parse_ip("127.0.0.1", 40000, &peer), 0);
    atomic_store(&sh.sessions, 1);
    w.nsessions = 1;
    assert_int_equal(conn_open(&w, 0, cp[0], &peer, false, &t_front, CONN_ST_GREETING, &fk_ops), 0);
    loop_timer_arm(&w.loop, &later_timer, 200);
    loop_timer_arm(&w.loop, &guard_timer, 5000);
    assert_int_equal(loop_run(&w.loop), 0);
    loop_timer_stop(&w.loop, &guard_timer);
    loop_timer_stop(&w.loop, &later_timer);
    loop_timer_stop(&w.loop, &stop_timer);

    assert_true(fk.writes_waited >= 1); /* the write did wait for SIDE_RD */
    assert_true(fk.early_seen);         /* held bytes went out without a new edge */
    assert_true(fk.ended);              /* both ends carried: the relay finished */
    assert_true(fk.shut);               /* the client's EOF went through shutdown_wr */
    char got[16] = {0};
    assert_int_equal(recv(peer_cli, got, sizeof(got), MSG_DONTWAIT), 4);
    assert_memory_equal(got, "cdef", 4);
    assert_int_equal(recv(peer_cli, got, sizeof(got), MSG_DONTWAIT), 0); /* EOF */
    assert_int_equal(recv(peer_up, got, sizeof(got), MSG_DONTWAIT), 1);
    assert_int_equal(got[0], 'x');
    assert_int_equal(recv(peer_up, got, sizeof(got), MSG_DONTWAIT), 0); /* EOF */

    close(peer_cli);
    close(peer_up);
    worker_fini(&w);
    config_unref(cfg);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_bytes_and_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
