# SPDX-License-Identifier: BSD-2-Clause
"""Process and session lifecycle: signals and draining, shutdown_timeout,
iotimeout, max_connections, the access log."""

import re
import signal
import socket
import time

import pytest

from ferrylib import (
    echo_roundtrip,
    expect_failure,
    greeting,
    open_client,
    read_method,
    read_until_close,
    recv_exact,
    request,
    socks_connect,
    unused_refused_port,
    REP,
)


def connect_refused(addr, timeout=1.0) -> bool:
    """True if a TCP connect to addr is refused; False if it is accepted
    (the connection is closed again at once)."""
    try:
        c = socket.create_connection(addr, timeout=timeout)
    except ConnectionRefusedError:
        return True
    c.close()
    return False


# ---- signals -----------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_with_no_sessions_exits_0_quickly(ferry, echo_server, sig):
    f = ferry(config={"shutdown_timeout": "30s"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"one session, then none")
        s.shutdown(socket.SHUT_WR)
        read_until_close(s)
    t0 = time.monotonic()
    rc = f.stop(sig, timeout=10)
    assert rc == 0, f.log_text()
    assert time.monotonic() - t0 < 3.0, "an idle ferry should exit at once"
    log = f.log_text()
    assert re.search(rf"SIG{sig.name[3:]}: stopping", log), log
    assert "stopped: 1 connections accepted" in log, log


def test_sighup_is_ignored(ferry, echo_server):
    f = ferry()
    f.send_signal(signal.SIGHUP)
    f.wait_log("SIGHUP")
    assert f.alive()
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"after SIGHUP")


def test_sigterm_during_slow_transfer(ferry, echo_server):
    """The transfer running at SIGTERM completes; new connections are refused
    from the signal on; ferry exits 0 once the session is over."""
    f = ferry(config={"shutdown_timeout": "20s"})
    chunks = [bytes([i]) * 4096 for i in range(40)]
    s, _ = socks_connect(f.addr, *echo_server.addr, timeout=10)
    with s:
        client = s.getsockname()
        for i, chunk in enumerate(chunks):
            if i == 10:
                offset = f.log_offset()
                f.send_signal(signal.SIGTERM)
                f.wait_log(r"SIGTERM: stopping; draining 1 sessions", start=offset)
                # the listeners go away: poll (bounded) until connects are refused
                deadline = time.monotonic() + 3
                while not connect_refused(f.addr) and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert connect_refused(f.addr), "ferry still accepts after SIGTERM"
                assert f.alive(), "ferry exited while a session was open"
            s.sendall(chunk)
            assert recv_exact(s, len(chunk), timeout=10) == chunk
            time.sleep(0.03)
        for _ in range(3):
            assert connect_refused(f.addr)
        assert f.alive()
        s.shutdown(socket.SHUT_WR)
        assert read_until_close(s) == (b"", "eof")
    rc = f.wait(10)
    assert rc == 0, f"exit code {rc} after the drained session ended\n{f.log_text()}"
    entry = f.access_for(client)
    total = str(sum(map(len, chunks)))
    assert entry["end"] == "done" and entry["up"] == total and entry["down"] == total, entry


def test_shutdown_timeout_closes_idle_session(ferry, echo_server):
    f = ferry(config={"shutdown_timeout": "1s"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        echo_roundtrip(s, b"then silence")
        t0 = time.monotonic()
        f.send_signal(signal.SIGTERM)
        rc = f.wait(10)
        elapsed = time.monotonic() - t0
        assert rc == 0, f"exit code {rc}\n{f.log_text()}"
        assert 0.8 <= elapsed <= 5.0, f"exited {elapsed:.2f}s after SIGTERM, shutdown_timeout is 1s"
        rest, how = read_until_close(s, timeout=2)
        assert rest == b"", rest
    assert "shutdown_timeout (1000 ms) reached: closing 1 sessions" in f.log_text()
    assert f.access_for(client)["end"] == "shutdown"


def test_second_signal_closes_sessions_at_once(ferry, echo_server):
    f = ferry(config={"shutdown_timeout": "60s"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"idle")
        f.send_signal(signal.SIGTERM)
        f.wait_log("SIGTERM: stopping")
        assert f.wait(0.5) is None, "exited with a session open and 60s of shutdown_timeout"
        t0 = time.monotonic()
        f.send_signal(signal.SIGINT)
        rc = f.wait(10)
        assert rc == 0, f.log_text()
        assert time.monotonic() - t0 < 3.0
        assert read_until_close(s, timeout=2)[0] == b""
    assert "again: closing 1 sessions now" in f.log_text()


def test_sigterm_closes_sessions_still_in_handshake(ferry):
    # a session still in its handshake when the drain starts ends by its own
    # handshake_timeout; ferry then exits 0
    f = ferry(config={"handshake_timeout": "1s", "shutdown_timeout": "10s"})
    with open_client(f.addr) as s:
        s.sendall(b"\x05")
        time.sleep(0.1)
        t0 = time.monotonic()
        f.send_signal(signal.SIGTERM)
        rc = f.wait(10)
        assert rc == 0, f.log_text()
        assert time.monotonic() - t0 < 5.0
        assert read_until_close(s, timeout=2)[0] == b""


# ---- iotimeout ---------------------------------------------------------------


def test_iotimeout_closes_idle_session_keeps_active_one(ferry, echo_server):
    f = ferry(config={"iotimeout": "1s"})
    idle, _ = socks_connect(f.addr, *echo_server.addr)
    active, _ = socks_connect(f.addr, *echo_server.addr)
    with idle, active:
        idle_client = idle.getsockname()
        active_client = active.getsockname()
        echo_roundtrip(idle, b"i")
        t0 = time.monotonic()
        closed_at = None
        idle.setblocking(False)
        for i in range(16):  # ~3.2 s of traffic on the active session
            echo_roundtrip(active, b"tick %d" % i)
            if closed_at is None:
                try:
                    if idle.recv(1) == b"":
                        closed_at = time.monotonic() - t0
                except BlockingIOError:
                    pass
                except ConnectionResetError:
                    closed_at = time.monotonic() - t0
            time.sleep(0.2)
        assert closed_at is not None, "idle session still open after 3 s with iotimeout = 1s"
        assert 0.8 <= closed_at <= 3.0, f"idle session closed after {closed_at:.2f}s"
        echo_roundtrip(active, b"still here")
    e = f.access_for(idle_client)
    assert e["end"] == "idle-timeout" and e["reply"] == "succeeded", e
    assert e["up"] == "1" and e["down"] == "1", e
    e = f.access_for(active_client)
    assert e["end"] != "idle-timeout", e


def test_iotimeout_zero_means_off(ferry, echo_server):
    f = ferry(config={"iotimeout": "0"})
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"a")
        time.sleep(1.5)
        echo_roundtrip(s, b"b")


def test_iotimeout_default_depends_on_listener(ferry):
    """iotimeout not set: none on a loopback listener, 1 h on one whose
    clients are elsewhere (here: loopback behind a PROXY header), and the
    start-up log says so for that listener only. Set (0 included), it is
    the same everywhere and nothing is said."""
    listen = "127.0.0.1:0, 127.0.0.1:0 proxy_protocol=v1"
    f = ferry(listens=(), config={"listen": listen, "proxy_protocol_from": "127.0.0.1"})
    plain, behind_lb = f.addrs
    lines = re.findall(r"iotimeout: .*", f.log_text())
    assert lines == [f"iotimeout: 3600 s on 127.0.0.1:{behind_lb[1]}, the default where other hosts "
                     "connect (set iotimeout to choose; 0 for none)"], lines
    g = ferry(listens=(), config={"listen": listen, "proxy_protocol_from": "127.0.0.1", "iotimeout": "0"})
    assert len(g.addrs) == 2 and "iotimeout:" not in g.log_text()


# ---- max_connections ---------------------------------------------------------


def test_max_connections(ferry, echo_server):
    f = ferry(config={"max_connections": "2"})
    a, _ = socks_connect(f.addr, *echo_server.addr)
    b, _ = socks_connect(f.addr, *echo_server.addr)
    with a, b:
        echo_roundtrip(a, b"first")
        echo_roundtrip(b, b"second")
        # the third is accepted by the kernel and closed by ferry at once
        with socket.create_connection(f.addr, timeout=5) as c:
            t0 = time.monotonic()
            rest, how = read_until_close(c, timeout=3)
            assert rest == b""
            assert time.monotonic() - t0 < 2.0
        # the first two are unaffected
        echo_roundtrip(a, b"first again")
        echo_roundtrip(b, b"second again")
        # once one ends, there is room again
        a_client = a.getsockname()
        a.shutdown(socket.SHUT_WR)
        assert read_until_close(a) == (b"", "eof")
        f.access_for(a_client)
        for attempt in range(20):
            try:
                d, r = socks_connect(f.addr, *echo_server.addr, timeout=2)
            # Closed at accept, the slot not free yet: a FIN, or a reset
            # when the greeting had already arrived unread.
            except (AssertionError, ConnectionError):
                time.sleep(0.05)
                continue
            with d:
                echo_roundtrip(d, b"fourth")
            break
        else:
            pytest.fail("no new session possible after one of two ended")
    assert f.stop() == 0
    m = re.search(r"stopped: (\d+) connections accepted \((\d+) over max_connections\)", f.log_text())
    assert m and int(m.group(2)) >= 1, f.log_text()


# ---- access log --------------------------------------------------------------

ACCESS_LINE = re.compile(
    r"access id=(?P<id>\d+) client=(?P<client>\S+) user=(?P<user>\S+) cmd=(?P<cmd>\S+) "
    r"dst=(?P<dst>\S+) "
    r"addr=(?P<addr>\S+) up=(?P<up>\d+) down=(?P<down>\d+) ms=(?P<ms>\d+) "
    r"reply=(?P<reply>\S+) end=(?P<end>\S+)(?: err=(?P<err>E[A-Z0-9]+))?"
    r"(?: rule=(?P<rule>\S+))?(?: via=(?P<via>\S+))?$",
    re.M,
)


def test_access_log_lines(ferry, echo_server):
    f = ferry()
    # 1: IPv4 success
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        c1 = s.getsockname()
        echo_roundtrip(s, b"x" * 1000)
        s.sendall(b"y" * 234)
        recv_exact(s, 234)
        s.shutdown(socket.SHUT_WR)
        read_until_close(s)
    # 2: by name
    s, _ = socks_connect(f.addr, b"localhost", echo_server.port)
    with s:
        c2 = s.getsockname()
        echo_roundtrip(s, b"z" * 10)
        s.shutdown(socket.SHUT_WR)
        read_until_close(s)
    # 3: refused
    holder, port = unused_refused_port()
    with holder:
        s = open_client(f.addr)
        with s:
            c3 = s.getsockname()
            s.sendall(greeting())
            assert read_method(s) == 0
            s.sendall(request("127.0.0.1", port))
            expect_failure(s, REP["connection-refused"])
    # 4: no reply at all
    with open_client(f.addr) as s:
        c4 = s.getsockname()
        s.sendall(b"\x06\x01")
        read_until_close(s)

    for c in (c1, c2, c3, c4):
        f.access_for(c)
    lines = {m.group("client"): m.groupdict() for m in ACCESS_LINE.finditer(f.log_text())}
    assert len(lines) == 4, f"access lines not in the documented format:\n{f.log_text()}"
    e1, e2, e3, e4 = (lines[f"127.0.0.1:{c[1]}"] for c in (c1, c2, c3, c4))
    target = f"127.0.0.1:{echo_server.port}"
    assert e1 == {**e1, "cmd": "connect", "dst": target, "addr": target, "up": "1234", "down": "1234",
                  "reply": "succeeded", "end": "done", "err": None}
    assert e2 == {**e2, "cmd": "connect", "dst": f"localhost:{echo_server.port}", "addr": target,
                  "up": "10", "down": "10", "reply": "succeeded", "end": "done", "err": None}
    assert e3 == {**e3, "cmd": "connect", "dst": f"127.0.0.1:{port}", "addr": f"127.0.0.1:{port}",
                  "up": "0", "down": "0", "reply": "connection-refused", "end": "connect-failed",
                  "err": "ECONNREFUSED"}
    assert e4 == {**e4, "dst": "-", "addr": "-", "up": "0", "down": "0", "reply": "-", "end": "unknown-protocol",
                  "via": None}
    # The outbound that carried each session that was dialled.
    assert [e["via"] for e in (e1, e2, e3)] == ["direct"] * 3
    assert all(e["user"] == "-" for e in (e1, e2, e3, e4))  # no authentication configured
    ids = [int(e["id"]) for e in (e1, e2, e3, e4)]
    assert len(set(ids)) == 4 and all(i > 0 for i in ids), ids
    assert all(int(e["ms"]) < 60_000 for e in (e1, e2, e3, e4))
