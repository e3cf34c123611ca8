# SPDX-License-Identifier: BSD-2-Clause
"""The HTTP/2 outbound: ferry A (SOCKS5 listener, [outbound] url = https://
with mux = h2 or auto, the parent's certificate pinned) sends every session
as a CONNECT stream (RFC 9113 section 8.5) on one shared TLS connection per
worker to ferry B, a `ferry serve` with a tls:// listener (the HTTP/2
inbound), which reaches the destination. Covers 10 MiB each way with
integrity, half-close both ways, 200 concurrent sessions sharing one
connection per worker of A (counted from the client ports in B's access
log), mux = auto falling back to HTTP/1.1 CONNECT against stunnel (no h2)
and mux = h2 failing there, Proxy-Authorization per stream (wrong
credentials: SOCKS 0x01) and a rule's deny at B (0x02) while other sessions
work, a parent that is down (0x03 within tunnel_wait), comes up (sessions
work after the back-off), dies with sessions open (they end) and comes
back, GOAWAY at B's SIGHUP (the open session finishes, a new one goes on a
new connection) and A's own reload, and a stalled local reader that does not stop 7 others
from receiving 8 MiB each."""

import hashlib
import re
import signal
import socket
import threading
import time

import pytest

from certlib import OPENSSL, make_cert, pin_of
from ferrylib import (EchoServer, ServerHalfCloseServer, SinkThenReplyServer,
                      expect_failure, handshake, open_client, read_until_close, request,
                      socks_connect)
from daemonlib import STUNNEL, Stunnel
from h2lib import SourceServer, pattern
from opslib import free_port, http_get, metrics_addr, wait_until

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    c, k = make_cert(tmp_path_factory.mktemp("h2out"), "parent")
    return c, k, pin_of(c)


def parent_b(ferry, cert, port: int = 0, extra: str = "", **kw):
    """ferry B: the HTTP/2 parent on a tls:// listener."""
    c, k, _ = cert
    return ferry(listens=(f"tls://127.0.0.1:{port}",), config={"open_proxy": "yes"},
                 extra=f"[tls]\ncert = {c}\nkey = {k}\n{extra}", **kw)


def child_a(ferry, cert, port: int, mux: str = "h2", userinfo: str = "", workers: int = 2,
            keys: str = "", **kw):
    """ferry A: SOCKS5 on loopback, every session through B."""
    return ferry(config={"outbound": "up", "workers": str(workers)},
                 extra=(f"[outbound up]\nurl = https://{userinfo}127.0.0.1:{port}\n"
                        f"pin = {cert[2]}\nmux = {mux}\n{keys}"), **kw)


def echo_once(proxy, echo, payload: bytes = b"ping through h2", timeout: float = 10):
    s, _ = socks_connect(proxy, "127.0.0.1", echo.port, timeout=timeout)
    with s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got, how = read_until_close(s, timeout)
    assert got == payload and how == "eof"


def b_client_ports(b) -> set[str]:
    """The client ports of B's HTTP/2 stream sessions (one per connection)."""
    return {e["client"] for e in b.access_entries() if e.get("proto") == "h2"}


def exchange(proxy, target, size: int, seed: int, timeout: float = 60):
    """size bytes each way through an echo, concurrently; the sha256 both ways."""
    s, _ = socks_connect(proxy, *target, timeout=timeout)
    data = pattern(seed, size)
    errs = []

    def send():
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            errs.append(e)

    t = threading.Thread(target=send)
    t.start()
    got, how = read_until_close(s, timeout, limit=size + 1)
    t.join(timeout)
    s.close()
    assert not errs and how == "eof", (errs, how)
    assert len(got) == size and hashlib.sha256(got).digest() == hashlib.sha256(data).digest()


@pytest.mark.parametrize("workers", [1, 2])
def test_h2_outbound_bulk_half_close_and_sharing(ferry, cert, workers):
    echo = EchoServer()
    hc = ServerHalfCloseServer(first_bytes=4096)
    sink = SinkThenReplyServer(reply_size=64 * 1024)
    try:
        b = parent_b(ferry, cert)
        a = child_a(ferry, cert, b.port, workers=workers,
                    keys="[metrics]\nlisten = 127.0.0.1:0\n")
        exchange(a.addr, echo.addr, 10 * MiB, seed=workers)
        # The destination half-closes first: its greeting arrives and we go on sending.
        s, _ = socks_connect(a.addr, "127.0.0.1", hc.port)
        with s:
            hc.talk_past_its_fin(s)
        assert hc.done.wait(10)
        assert list(hc.results.values())[0][0] == 4096 + 100000
        # The client half-closes first: the destination reads to EOF and answers.
        s, _ = socks_connect(a.addr, "127.0.0.1", sink.port)
        with s:
            s.sendall(b"z" * 300000)
            s.shutdown(socket.SHUT_WR)
            reply, how = read_until_close(s, 20)
        digest = hashlib.sha256(b"z" * 300000).hexdigest()
        assert reply == SinkThenReplyServer.reply_for(300000, digest, 64 * 1024) and how == "eof"
        # 200 concurrent sessions: all open at once, then each echoes.
        socks = []
        try:
            for i in range(200):
                c = open_client(a.addr, 20)
                handshake(c, 20)
                c.sendall(request("127.0.0.1", echo.port))
                socks.append(c)
            for i, c in enumerate(socks):
                head = c.recv(10)
                assert head[:2] == b"\x05\x00", head
                c.sendall(b"session %d" % i)
            for i, c in enumerate(socks):
                want = b"session %d" % i
                got = b""
                while len(got) < len(want):
                    d = c.recv(64)
                    assert d
                    got += d
                assert got == want
        finally:
            for c in socks:
                c.close()
        # B saw every stream from at most one TLS connection per worker of A.
        deadline = time.monotonic() + 10
        while len([e for e in b.access_entries() if e.get("proto") == "h2"]) < 203:
            assert time.monotonic() < deadline, "B did not log every stream"
            time.sleep(0.05)
        assert 1 <= len(b_client_ports(b)) <= workers, b_client_ports(b)
        body = http_get(metrics_addr(a), "/metrics").body.decode()
        conns = int(re.search(r'^ferry_outbound_h2_connections\{outbound="up"\} (\d+)$', body, re.M)[1])
        streams = int(re.search(r'^ferry_outbound_h2_streams_total\{outbound="up"\} (\d+)$', body,
                                re.M)[1])
        assert 1 <= conns <= workers and streams == 203, body
        assert re.search(r"access .* via=up mux=h2", a.log_text())
    finally:
        echo.stop()
        hc.stop()
        sink.stop()


@pytest.mark.skipif(not STUNNEL, reason="stunnel4 is needed (make deps-test)")
def test_h2_outbound_auto_falls_back_to_http1(ferry, cert, tmp_path):
    echo = EchoServer()
    inner = ferry()
    tunnel = Stunnel(tmp_path, cert[0], cert[1], inner.addr)
    try:
        auto = child_a(ferry, cert, tunnel.port, mux="auto")
        echo_once(auto.addr, echo)
        echo_once(auto.addr, echo, b"second, known to be http/1.1")
        auto.wait_log(r"speaks .*HTTP/1\.1 CONNECT per session")
        strict = child_a(ferry, cert, tunnel.port, mux="h2")
        s = open_client(strict.addr)
        with s:
            handshake(s)
            s.sendall(request("127.0.0.1", echo.port))
            expect_failure(s, 0x01, timeout=15)
        strict.wait_log(r"does not speak h2 \(ALPN\) but mux = h2")
        strict.wait_log(r"access .*reply=general-failure .*end=parent-no-h2")
    finally:
        tunnel.stop()
        echo.stop()


def test_h2_outbound_auth_and_deny_per_stream(ferry, cert):
    echo = EchoServer()
    other = EchoServer()
    try:
        (ferry.workdir / "users.txt").write_text("alice:plain:wonderland\n")
        b = parent_b(ferry, cert, auth={"userlist": str(ferry.workdir / "users.txt")},
                     extra=f"\n[rules]\ndeny to 127.0.0.1 port {other.port}\nallow to 127.0.0.0/8\n")
        good = child_a(ferry, cert, b.port, userinfo="alice:wonderland@", workers=1)
        bad = child_a(ferry, cert, b.port, userinfo="alice:nope@", workers=1)
        keep, _ = socks_connect(good.addr, "127.0.0.1", echo.port)
        with keep:
            keep.sendall(b"before")
            assert keep.recv(64) == b"before"
            s = open_client(bad.addr)
            with s:
                handshake(s)
                s.sendall(request("127.0.0.1", echo.port))
                expect_failure(s, 0x01)
            s = open_client(good.addr)
            with s:
                handshake(s)
                s.sendall(request("127.0.0.1", other.port))
                expect_failure(s, 0x02)
            keep.sendall(b"after")
            assert keep.recv(64) == b"after"
        bad.wait_log(r"access .*parent-auth-failed")
        good.wait_log(r"access .*parent-denied")
        b.wait_log(r"access .*user=alice cmd=CONNECT .*reply=403")
    finally:
        echo.stop()
        other.stop()


def test_h2_outbound_parent_down_up_killed_back(ferry, cert):
    echo = EchoServer()
    port = free_port()
    try:
        a = child_a(ferry, cert, port, workers=1,
                    keys="tunnel_wait = 1s\n[metrics]\nlisten = 127.0.0.1:0\n")
        # A SOCKS5 and an HTTP CONNECT client while it is down: both wait
        # tunnel_wait, then tunnel-down (0x03; HTTP 503 with Retry-After).
        t0 = time.monotonic()
        s = open_client(a.addr)
        h = socket.create_connection(a.addr, timeout=10)
        with s, h:
            handshake(s)
            s.sendall(request("127.0.0.1", echo.port))
            h.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n" % echo.port)
            expect_failure(s, 0x03, timeout=10)
            head, _ = read_until_close(h, timeout=10)
            assert head.startswith(b"HTTP/1.1 503 "), head
            assert b"\r\nRetry-After: 5\r\n" in head, head
        assert time.monotonic() - t0 < 8
        a.wait_log(r"access .*end=tunnel-down via=up")
        b = parent_b(ferry, cert, port=port)

        def works() -> bool:
            try:
                echo_once(a.addr, echo, timeout=10)
                return True
            except (AssertionError, OSError):
                return False

        deadline = time.monotonic() + 20
        while not works():
            assert time.monotonic() < deadline, "no session through the parent once it is up"
            time.sleep(0.2)
        # Kill B with a session open: it ends (no hang).
        s, _ = socks_connect(a.addr, "127.0.0.1", echo.port)
        with s:
            s.sendall(b"open")
            assert s.recv(64) == b"open"
            b.kill()
            s.settimeout(15)
            try:
                rest = s.recv(64)
            except ConnectionResetError:
                rest = b""
            assert rest == b""
        b.expect_exit = None
        b2 = parent_b(ferry, cert, port=port)
        deadline = time.monotonic() + 20
        while not works():
            assert time.monotonic() < deadline, "no session after the parent came back"
            time.sleep(0.2)
        # B2 writes a stream's access line when the stream ends there, which
        # may come after A's client has seen the end.
        wait_until(lambda: b_client_ports(b2), 5, "an access line of a stream at B2")
        body = http_get(metrics_addr(a), "/metrics").body.decode()
        assert re.search(r'^ferry_outbound_h2_reconnects_total\{outbound="up"\} [1-9]', body, re.M), body
        a.wait_log(r"parent 127\.0\.0\.1 port \d+: (the parent closed the connection|ECONNRESET)")
    finally:
        echo.stop()


def test_h2_outbound_goaway_make_before_break(ferry, cert):
    echo = EchoServer()
    try:
        b = parent_b(ferry, cert)
        a = child_a(ferry, cert, b.port, workers=1)
        s, _ = socks_connect(a.addr, "127.0.0.1", echo.port)
        with s:
            s.sendall(b"one")
            assert s.recv(64) == b"one"
            off = b.log_offset()
            b.send_signal(signal.SIGHUP)
            b.wait_log(r"reload|configuration", start=off, timeout=10)
            time.sleep(0.3)
            echo_once(a.addr, echo, b"on a new connection")
            s.sendall(b"still here")
            assert s.recv(64) == b"still here"
            s.shutdown(socket.SHUT_WR)
            rest, how = read_until_close(s, 10)
            assert rest == b"" and how == "eof"
        deadline = time.monotonic() + 10
        while len(b_client_ports(b)) < 2:
            assert time.monotonic() < deadline, b_client_ports(b)
            time.sleep(0.05)
        # A reloads with a session open: it finishes on the old
        # configuration's connection, new ones go on a new one.
        s, _ = socks_connect(a.addr, "127.0.0.1", echo.port)
        with s:
            off = a.log_offset()
            a.send_signal(signal.SIGHUP)
            a.wait_log(r"reload: configuration applied", start=off, timeout=10)
            # A's new generation gets a connection of its own (the workers
            # take the new configuration a moment after the log line).
            deadline = time.monotonic() + 10
            while len(b_client_ports(b)) < 3:
                assert time.monotonic() < deadline, b_client_ports(b)
                echo_once(a.addr, echo, b"after A's reload")
                time.sleep(0.05)
            s.sendall(b"old generation")
            assert s.recv(64) == b"old generation"
        assert "the parent closed the connection" not in a.log_text()  # GOAWAY is no failure
    finally:
        echo.stop()


def test_h2_outbound_stalled_reader_does_not_stop_others(ferry, cert):
    src = SourceServer()
    try:
        b = parent_b(ferry, cert)
        a = child_a(ferry, cert, b.port, workers=1)
        size = 8 * MiB
        stalled, _ = socks_connect(a.addr, "127.0.0.1", src.port)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.sendall(b"%d\n" % (64 * MiB))
        results, errs = {}, []

        def fetch(i):
            try:
                s, _ = socks_connect(a.addr, "127.0.0.1", src.port, timeout=60)
                with s:
                    s.sendall(b"%d\n" % (size + i))
                    got, how = read_until_close(s, 60, limit=size + 64)
                results[i] = (hashlib.sha256(got).digest(), how)
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        threads = [threading.Thread(target=fetch, args=(i,)) for i in range(7)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        stalled.close()
        assert not errs, errs
        for i in range(7):
            assert results[i] == (hashlib.sha256(pattern(size + i, size + i)).digest(), "eof")
    finally:
        src.stop()


def test_h2_outbound_rtt_probes_stay_under_the_parents_ping_budget(ferry, cert):
    """A's RTT probes (a PING at the end of a window epoch) go at most every
    2 s: a bulk stream on loopback ends an epoch every few milliseconds,
    and a probe for each tripped B's PING budget, which answered GOAWAY
    (ENHANCE_YOUR_CALM) and cut the stream. B's budget here is 3 PINGs a
    second; 64 MiB each way through one stream must pass, and B must count
    no ping flood."""
    echo = EchoServer()
    try:
        b = parent_b(ferry, cert, extra="[http2]\npings_per_second = 3\n"
                                        "[metrics]\nlisten = 127.0.0.1:0\n")
        a = child_a(ferry, cert, b.port, workers=1)
        exchange(a.addr, echo.addr, 64 * MiB, seed=64, timeout=120)
        body = http_get(metrics_addr(b), "/metrics").body.decode()
        m = re.search(r'^ferry_h2_goaway_total\{reason="ping_flood"\} (\d+)$', body, re.M)
        assert m is None or m[1] == "0", body
        assert "ENHANCE_YOUR_CALM" not in b.log_text()
    finally:
        echo.stop()
