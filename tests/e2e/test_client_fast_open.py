# SPDX-License-Identifier: BSD-2-Clause
"""`ferry client --fast-open` ([outbound] fast_open = yes): a local
connection is answered as soon as its CONNECT stream is sent on a tunnel
connection that is up, and its first bytes follow at once, one round trip
to the server sooner.

The server's connection to the target is held back deterministically: the
target listens with a full accept queue, so the kernel drops the server's
SYN until the test accepts the connection that fills it (the SYN is sent
again after ~1 s). With fast_open the SOCKS5 reply (and the HTTP CONNECT's
200) arrive while that connect is still pending, and the bytes sent right
after it reach the target in order once it accepts; without it, the reply
waits for the connect. A destination the server cannot reach closes the
connection (no SOCKS error code can follow a success reply), and the
client's log says why; the server's log has the refusal. Also: 4 MiB with
integrity, and the config checks (fast_open only on an https:// outbound
spoken HTTP/2)."""

import select
import socket
import time

import pytest

from certlib import OPENSSL, pin_of
from clientlib import Client, exchange, server_files
from ferrylib import (FerryFactory, handshake, open_client, read_reply, read_until_close, recv_exact,
                      request, run_ferry)
from opslib import free_port

MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("fast_open")
    cert, key = server_files(d)
    factory = FerryFactory(d)
    srv = factory(listens=("tls://127.0.0.1:0",), auth={"userlist": "users.txt"},
                  extra=f"[tls]\ncert = {cert}\nkey = {key}\n")
    yield {"dir": d, "srv": srv, "pin": pin_of(cert), "url": f"https://127.0.0.1:{srv.port}",
           "auth": d / "alice.auth"}
    findings = factory.finalize()
    assert not findings, findings


@pytest.fixture
def client(server, echo_server):
    started = []

    def start(port, fast=True):
        args = [server["url"], "--pin", server["pin"], "--auth-file", str(server["auth"]),
                *(["--fast-open"] if fast else []), f"{port}:socks"]
        c = Client(server["dir"], args)
        started.append(c)
        c.wait_log(r"ready:")
        # The tunnel opens with the first session; fast_open needs it up.
        s = socks_open(port, *echo_server.addr)
        with s:
            assert read_reply(s, 15).rep == 0
            s.sendall(b"warm")
            assert recv_exact(s, 4, 15) == b"warm"
        c.wait_log(r"tunnel-open")
        return c

    yield start
    for c in started:
        c.stop()


class HeldTarget:
    """A listener whose accept queue is full: a connect to it stays pending
    (its SYNs dropped) until release() accepts the connection filling it."""

    def __init__(self):
        self.ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(0)
        self.addr = self.ls.getsockname()
        self.fill = []
        # listen(0) queues one connection; a second makes sure it is full.
        for _ in range(2):
            f = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            f.setblocking(False)
            try:
                f.connect(self.addr)
            except BlockingIOError:
                pass
            self.fill.append(f)
        time.sleep(0.1)

    def release(self, timeout=15.0) -> socket.socket:
        """Accept until the server's connection comes (the fillers are
        accepted and closed on the way); returns it."""
        self.ls.settimeout(timeout)
        mine = {f.getsockname() for f in self.fill}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s, peer = self.ls.accept()
            if peer in mine:
                s.close()
                continue
            s.settimeout(timeout)
            return s
        raise AssertionError("the server's connection never came")

    def close(self):
        for f in self.fill:
            f.close()
        self.ls.close()


def socks_open(port, host, dport):
    s = open_client(("127.0.0.1", port), timeout=15)
    handshake(s, 15)
    s.sendall(request(host, dport))
    return s


def readable(s, within):
    return bool(select.select([s], [], [], within)[0])


def test_reply_before_the_target_answers_and_bytes_in_order(server, client):
    port = free_port()
    client(port)
    t = HeldTarget()
    try:
        s = socks_open(port, *t.addr)
        with s:
            # The server's connect to the target cannot complete yet, and
            # the reply is already here.
            r = read_reply(s, 5)
            assert r.rep == 0, r
            s.sendall(b"first bytes, sent before the target accepted;")
            s.sendall(b" and more")
            up = t.release()
            with up:
                want = b"first bytes, sent before the target accepted; and more"
                assert recv_exact(up, len(want), 15) == want
                up.sendall(b"answer")
                assert recv_exact(s, 6, 15) == b"answer"
    finally:
        t.close()


def test_without_fast_open_the_reply_waits_for_the_target(server, client):
    port = free_port()
    client(port, fast=False)
    t = HeldTarget()
    try:
        s = socks_open(port, *t.addr)
        with s:
            # No reply while the server's connect is held back (its SYN is
            # dropped and sent again only after ~1 s).
            assert not readable(s, 0.7)
            up = t.release()
            with up:
                assert read_reply(s, 15).rep == 0
    finally:
        t.close()


def test_http_connect_answered_at_once(server, client):
    port = free_port()
    client(port)
    t = HeldTarget()
    try:
        s = open_client(("127.0.0.1", port), timeout=15)
        with s:
            host, tport = t.addr
            s.sendall(f"CONNECT {host}:{tport} HTTP/1.1\r\nHost: {host}:{tport}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                assert chunk, head
                head += chunk
            assert head.startswith(b"HTTP/1.1 200"), head
            s.sendall(b"ping")
            up = t.release()
            with up:
                assert recv_exact(up, 4, 15) == b"ping"
    finally:
        t.close()


def test_unreachable_target_closes_the_connection(server, client):
    port = free_port()
    c = client(port)
    dead = free_port()  # nothing listens there
    s = socks_open(port, "127.0.0.1", dead)
    with s:
        assert read_reply(s, 5).rep == 0  # answered before the server tried
        rest, how = read_until_close(s, timeout=15)
        assert rest == b""
        assert how in ("eof", "reset")
    c.wait_log(rf"dst=127\.0\.0\.1:{dead} .*end=parent-refused")
    server["srv"].wait_log(rf"cmd=CONNECT dst=127\.0\.0\.1:{dead} .*reply=502 end=connect-failed err=ECONNREFUSED")


def test_integrity_4mib(server, client, echo_server):
    port = free_port()
    client(port)
    s = socks_open(port, *echo_server.addr)
    with s:
        assert read_reply(s, 5).rep == 0
        sent, got, n, how = exchange(s, 4 * MiB, seed=23)
    assert n == 4 * MiB and sent == got and how == "eof"


def test_config_checks(tmp_path):
    for body, want in (
            ("url = socks5://127.0.0.1:1080\nfast_open = yes\n", "fast_open is for https:// parents"),
            ("url = https://127.0.0.1:443\nmux = http1\nfast_open = yes\n", "not with mux = http1"),
            ("url = https://127.0.0.1:443\nfast_open = maybe\n", "'maybe': expected yes or no")):
        conf = tmp_path / "f.conf"
        conf.write_text(f"listen = 127.0.0.1:0\noutbound = p\n[outbound p]\n{body}")
        r = run_ferry(["serve", "--check", "-c", str(conf)])
        assert r.rc != 0 and want in r.err, r.err
        assert "f.conf:" in r.err, r.err
