# SPDX-License-Identifier: BSD-2-Clause
"""Sessions through a parent proxy ([outbound NAME] url = socks5://,
socks5h://, socks4a://, http://), end to end with real parents started
on loopback by the test: a second ferry, Dante (danted), tinyproxy and
Squid. Integrity of 10 MiB each way (sha256) with the client's half-close
carried across the chain, and the parent's failures mapped to the
client's reply through the neutral outcomes: the parent refusing ferry's
credentials (SOCKS 0x01 / HTTP 502, and a log line naming the parent),
the destination refusing the parent (0x05 / 502), a parent nobody
listens on (0x01 / 502), and a parent that accepts and never answers
(0x06 / 504 within connect_timeout).

Parents that are not installed are skipped (they are in the Makefile's
TEST_PKGS). Squid starts once per module. Every wait is bounded.
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import ferrylib
from ferrylib import (
    SinkThenReplyServer,
    ThreadedServer,
    echo_roundtrip,
    expect_failure,
    read_until_close,
    recv_exact,
    socks_connect,
    unused_refused_port,
)

BIG = 10 * 1024 * 1024
IO = 20.0  # seconds for a 10 MiB transfer on a loaded ASan build


# ---- helpers -------------------------------------------------------------------


def front_config(url: str, name: str = "up", **extra) -> dict:
    """A ferry whose sessions all leave through [outbound name] url."""
    cfg = {"outbound": name}
    cfg.update(extra)
    return cfg


def outbound_section(url: str, name: str = "up") -> str:
    return f"[outbound {name}]\nurl = {url}\n"


def start_front(ferry, url: str, name: str = "up", config: dict | None = None):
    cfg = {"outbound": name}
    cfg.update(config or {})
    return ferry(config=cfg, extra=outbound_section(url, name))


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def stop_proc(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def http_connect(proxy, host: str, port: int, timeout: float = 5.0):
    """CONNECT host:port through an HTTP proxy: (sock, status, head)."""
    s = socket.create_connection(proxy, timeout=timeout)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in head and time.monotonic() < deadline:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    assert m, f"no HTTP status line from the proxy: {head[:200]!r}"
    return s, int(m.group(1)), head


def big_exchange(sock: socket.socket, sink: SinkThenReplyServer) -> None:
    """Send BIG bytes, half-close, and read the sink's reply of BIG bytes to
    EOF: both directions' sha256 checked, the half-close carried across."""
    sock.settimeout(IO)
    data = os.urandom(BIG)
    digest = hashlib.sha256(data).hexdigest()
    sender_err = []

    def send():
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError as e:  # reported below
            sender_err.append(e)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    got, how = read_until_close(sock, timeout=IO, limit=BIG + 4096)
    t.join(IO)
    assert not sender_err, f"sending failed: {sender_err[0]}"
    want = SinkThenReplyServer.reply_for(BIG, digest, BIG)
    assert how == "eof", f"the chain ended with {how}, not EOF"
    assert len(got) == len(want), f"got {len(got)} bytes back, expected {len(want)}"
    assert hashlib.sha256(got).digest() == hashlib.sha256(want).digest(), "reply bytes differ"


@pytest.fixture(scope="module")
def sink():
    srv = SinkThenReplyServer("127.0.0.1", reply_size=BIG)
    yield srv
    srv.stop()


class SilentServer(ThreadedServer):
    """Accepts, reads and never answers: a parent that hangs."""

    def handle(self, c, peer):
        c.settimeout(15)
        try:
            while c.recv(4096):
                pass
        except OSError:
            pass


# ---- ferry -> ferry --------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_ferry_chain_integrity(ferry, sink, scheme):
    parent = ferry()
    front = start_front(ferry, f"{scheme}://127.0.0.1:{parent.port}")
    s, r = socks_connect(front.addr, "localhost", sink.addr[1])
    with s:
        big_exchange(s, sink)
    # The front names the outbound; the parent saw the name (socks5h) or
    # the address resolved by the front (socks5).
    line = front.wait_log(r"access .*via=up")
    assert f"dst=localhost:{sink.addr[1]}" in line.group(0)
    seen = parent.wait_log(r"access .*dst=\S+")
    want = "localhost" if scheme == "socks5h" else "127.0.0.1"
    assert f"dst={want}:{sink.addr[1]}" in seen.group(0), seen.group(0)


def test_ferry_socks4a_and_http_parent(ferry, echo_server):
    parent = ferry()
    for url in (f"socks4a://127.0.0.1:{parent.port}", f"http://127.0.0.1:{parent.port}"):
        front = start_front(ferry, url)
        s, r = socks_connect(front.addr, "localhost", echo_server.addr[1])
        with s:
            echo_roundtrip(s, b"through " + url.encode())
        s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1])
        with s:
            assert status == 200
            echo_roundtrip(s, b"http client through " + url.encode())
        front.stop()


# ---- the parent's failures ---------------------------------------------------------


def test_parent_refuses_credentials(ferry, tmp_path, echo_server):
    (tmp_path / "users.txt").write_text("alice:plain:good-pw\n")
    parent = ferry(auth={"userlist": str(tmp_path / "users.txt")})
    for url in (f"socks5://alice:bad-pw@127.0.0.1:{parent.port}",
                f"http://alice:bad-pw@127.0.0.1:{parent.port}"):
        front = start_front(ferry, url)
        s, r = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1], expect=None)
        with s:
            assert r.rep == 0x01, f"SOCKS reply {r.rep:#x}, expected 0x01 (general failure)"
        s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1])
        s.close()
        assert status == 502
        m = front.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: parent (refused the credentials|requires)[^\n]*")
        assert "refused the credentials" in m.group(0), m.group(0)
        front.wait_log(r"access .*end=parent-auth-failed")
        front.stop()
    # The right password passes.
    front = start_front(ferry, f"socks5://alice:good-pw@127.0.0.1:{parent.port}")
    s, _ = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1])
    with s:
        echo_roundtrip(s, b"authenticated at the parent")


def test_destination_refused_at_parent(ferry):
    holder, port = unused_refused_port()
    with holder:
        parent = ferry()
        for url in (f"socks5://127.0.0.1:{parent.port}", f"http://127.0.0.1:{parent.port}"):
            front = start_front(ferry, url)
            s, r = socks_connect(front.addr, "127.0.0.1", port, expect=None)
            with s:
                assert r.rep == 0x05, f"SOCKS reply {r.rep:#x}, expected 0x05 (refused)"
            s, status, _ = http_connect(front.addr, "127.0.0.1", port)
            s.close()
            assert status == 502
            front.wait_log(r"access .*end=parent-refused")
            front.stop()


def test_parent_unreachable(ferry, echo_server):
    holder, port = unused_refused_port()
    with holder:
        front = start_front(ferry, f"socks5://127.0.0.1:{port}")
        s, r = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1], expect=None)
        with s:
            assert r.rep == 0x01, f"SOCKS reply {r.rep:#x}, expected 0x01"
        s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1])
        s.close()
        assert status == 502
        m = front.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: cannot connect: ECONNREFUSED")
        front.wait_log(r"access .*end=parent-unreachable")


def test_parent_never_answers(ferry, echo_server):
    silent = SilentServer("127.0.0.1")
    try:
        front = start_front(ferry, f"socks5://127.0.0.1:{silent.addr[1]}",
                            config={"connect_timeout": "1s"})
        t0 = time.monotonic()
        s, r = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1], expect=None, timeout=10)
        with s:
            assert r.rep == 0x06, f"SOCKS reply {r.rep:#x}, expected 0x06 (TTL expired: timeout)"
        assert time.monotonic() - t0 < 8
        s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1], timeout=10)
        s.close()
        assert status == 504
        front.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: no answer within")
    finally:
        silent.stop()
