# SPDX-License-Identifier: BSD-2-Clause
"""Sessions through a parent proxy ([outbound NAME] url = socks5://,
socks5h://, socks4a://, http://), end to end with real parents started
on loopback by the test: a second ferry, Dante (danted), tinyproxy and
Squid. Integrity of 10 MiB each way (sha256), with the client's half-close
carried across the chain where the parent carries one (ferry, Dante; not
tinyproxy and Squid, which close a tunnel on it), and the parent's failures mapped to the
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
import socket
import subprocess
import threading
import time

import pytest

from daemonlib import daemon, free_port, need, shared_dir
from ferrylib import (
    ServerHalfCloseServer,
    SinkThenReplyServer,
    ThreadedServer,
    echo_roundtrip,
    read_until_close,
    recv_exact,
    socks_connect,
    unused_refused_port,
)

BIG = 10 * 1024 * 1024
IO = 20.0  # seconds for a 10 MiB transfer on a loaded ASan build


# ---- helpers -------------------------------------------------------------------


def outbound_section(url: str, name: str = "up") -> str:
    return f"[outbound {name}]\nurl = {url}\n"


def start_front(ferry, url: str, name: str = "up", config: dict | None = None):
    cfg = {"outbound": name}
    cfg.update(config or {})
    return ferry(config=cfg, extra=outbound_section(url, name))











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


def big_echo(sock: socket.socket) -> None:
    """BIG bytes to an echo server and back, sent and read at once (for a
    parent that does not carry a half-close: tinyproxy and Squid close the
    tunnel on the client's EOF)."""
    sock.settimeout(IO)
    data = os.urandom(BIG)
    sender_err = []

    def send():
        try:
            sock.sendall(data)
        except OSError as e:  # reported below
            sender_err.append(e)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    got = recv_exact(sock, BIG, timeout=IO)
    t.join(IO)
    assert not sender_err, f"sending failed: {sender_err[0]}"
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), "echoed bytes differ"


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
    # BND is the parent's: where the destination saw the session come from.
    assert (r.host, r.port) in sink.results, (r.host, r.port, list(sink.results))
    # The front names the outbound; the parent saw the name (socks5h) or
    # the address resolved by the front (socks5).
    line = front.wait_log(r"access .*via=up")
    assert f"dst=localhost:{sink.addr[1]}" in line.group(0)
    seen = parent.wait_log(r"access .*dst=\S+")
    want = "localhost" if scheme == "socks5h" else "127.0.0.1"
    assert f"dst={want}:{sink.addr[1]}" in seen.group(0), seen.group(0)


@pytest.mark.parametrize("scheme", ["socks5h", "http"])
def test_server_half_close_across_chain(ferry, tcp_server, scheme):
    """The destination replies and shuts its side while the client still
    sends: through the front and its parent the client reads the reply and
    EOF, goes on sending, and the destination gets every byte."""
    srv = tcp_server(ServerHalfCloseServer, first_bytes=1024)
    parent = ferry()
    front = start_front(ferry, f"{scheme}://127.0.0.1:{parent.port}")
    s, _ = socks_connect(front.addr, *srv.addr, timeout=10)
    data = os.urandom(1024 + 40 * 50_000)
    with s:
        s.sendall(data[:1024])
        greeting = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                break
            greeting += chunk
        assert greeting == ServerHalfCloseServer.GREETING
        s.sendall(data[1024:])  # after the destination's EOF
        s.shutdown(socket.SHUT_WR)
        rest, how = read_until_close(s, timeout=10)
        assert rest == b"" and how == "eof"
    assert srv.done.wait(10), "the destination never saw the client's EOF"
    (n, digest), = srv.results.values()
    assert n == len(data) and digest == hashlib.sha256(data).hexdigest()


def test_ferry_socks4a_and_http_parent(ferry, echo_server):
    parent = ferry()
    # The parent's host may be a name (resolved with the worker's resolver).
    for url in (f"socks4a://localhost:{parent.port}", f"http://127.0.0.1:{parent.port}"):
        front = start_front(ferry, url)
        s, r = socks_connect(front.addr, "localhost", echo_server.addr[1])
        with s:
            echo_roundtrip(s, b"through " + url.encode())
        s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1])
        with s:
            assert status == 200
            echo_roundtrip(s, b"http client through " + url.encode())
        front.stop()


class BannerServer(ThreadedServer):
    """Speaks first (as SMTP or SSH servers do), then echoes."""

    BANNER = b"220 banner from the destination\r\n"

    def handle(self, c, peer):
        c.sendall(self.BANNER)
        while True:
            data = c.recv(65536)
            if not data:
                break
            c.sendall(data)


def test_destination_speaks_first(ferry):
    """What the destination sends at once may reach the front in the same
    segment as the parent's reply: none of it is lost."""
    banner = BannerServer("127.0.0.1")
    try:
        parent = ferry()
        for url in (f"socks5://127.0.0.1:{parent.port}", f"http://127.0.0.1:{parent.port}",
                    f"socks4a://127.0.0.1:{parent.port}"):
            front = start_front(ferry, url)
            for _ in range(5):
                s, _ = socks_connect(front.addr, "127.0.0.1", banner.addr[1])
                with s:
                    assert recv_exact(s, len(BannerServer.BANNER)) == BannerServer.BANNER, url
                    echo_roundtrip(s, b"after the banner")
            front.stop()
    finally:
        banner.stop()


def test_plain_http_request_through_parent(ferry, http_server):
    """An absolute-form request (curl -x http://ferry) reaches the origin
    through the parent, twice on one client connection."""
    parent = ferry()
    for url in (f"socks5h://127.0.0.1:{parent.port}", f"http://127.0.0.1:{parent.port}"):
        front = start_front(ferry, url)
        proxy = f"http://127.0.0.1:{front.port}"
        r = subprocess.run(["curl", "-fsS", "--max-time", "20", "-x", proxy, "--noproxy", "",
                            http_server.url("small.txt"), "-o", "/dev/null",
                            http_server.url("big.bin"), "-o", "-"],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(r.stdout).hexdigest() == http_server.files["big.bin"]
        front.wait_log(r"access .*dst=127\.0\.0\.1:\d+.*via=up")
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
        front.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: cannot connect: ECONNREFUSED")
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


class TimeoutReplyServer(ThreadedServer):
    """A SOCKS5 parent that answers every request with REP 6 (TTL
    expired: the destination timed out)."""

    def handle(self, c, peer):
        c.settimeout(10)
        try:
            c.recv(3)  # greeting (the request may come with it, or after)
            c.sendall(b"\x05\x00")
            c.recv(512)
            c.sendall(b"\x05\x06\x00\x01\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass


def test_parent_says_the_destination_timed_out(ferry, echo_server):
    """The parent's own answer (REP 6) is 0x06 / end=parent-dest-timeout,
    not the parent's silence: a pool does not mark such a member down."""
    srv = TimeoutReplyServer("127.0.0.1")
    try:
        front = ferry(extra=f"[outbound up]\nurl = socks5://127.0.0.1:{srv.addr[1]}\n"
                            "[outbound p]\nmembers = up\n",
                      config={"outbound": "p"})
        s, r = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1], expect=None)
        with s:
            assert r.rep == 0x06, f"SOCKS reply {r.rep:#x}, expected 0x06"
        front.wait_log(r"access .*end=parent-dest-timeout")
        assert "down:" not in front.log_text()
    finally:
        srv.stop()


# ---- third-party parents -----------------------------------------------------------








@pytest.fixture(scope="module")
def dante():
    binary = need("danted")
    d = shared_dir("ferry-dante-")
    port = free_port()
    user = "user.privileged: root\nuser.unprivileged: nobody\n" if os.geteuid() == 0 else ""
    conf = d / "danted.conf"
    conf.write_text(
        f"logoutput: {d}/danted.log\n"
        f"internal: 127.0.0.1 port = {port}\n"
        "external: 127.0.0.1\n"
        "clientmethod: none\n"
        "socksmethod: none\n"
        f"{user}"
        "client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }\n"
        "socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect }\n"
    )
    with daemon([binary, "-f", str(conf), "-p", str(d / "danted.pid"), "-N", "1"], d, port, "danted"):
        yield port


@pytest.fixture(scope="module")
def tinyproxy():
    binary = need("tinyproxy")
    d = shared_dir("ferry-tinyproxy-")
    port = free_port()
    conf = d / "tinyproxy.conf"
    # No ConnectPort line: CONNECT to any port (the test's loopback servers).
    conf.write_text(
        f"Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 64\nAllow 127.0.0.1\n"
        f'LogLevel Info\nLogFile "{d}/tinyproxy.log"\nPidFile "{d}/tinyproxy.pid"\n'
    )
    with daemon([binary, "-d", "-c", str(conf)], d, port, "tinyproxy"):
        yield port


@pytest.fixture(scope="module")
def squid():
    binary = need("squid")
    d = shared_dir("ferry-squid-")
    port = free_port()
    conf = d / "squid.conf"
    # No cache_dir, no "deny CONNECT !SSL_ports": CONNECT to any port.
    conf.write_text(
        f"http_port 127.0.0.1:{port}\n"
        "acl localnet src 127.0.0.0/8\n"
        "http_access allow localnet\n"
        "http_access deny all\n"
        "cache deny all\n"
        "cache_mem 8 MB\n"
        f"access_log stdio:{d}/access.log\n"
        f"cache_log {d}/cache.log\n"
        f"pid_filename {d}/squid.pid\n"
        f"coredump_dir {d}\n"
        "shutdown_lifetime 1 seconds\n"
        "connect_timeout 5 seconds\n"
    )
    with daemon([binary, "-N", "-f", str(conf)], d, port, "squid", timeout=30):
        yield port


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_dante_parent(ferry, sink, dante, scheme):
    front = start_front(ferry, f"{scheme}://127.0.0.1:{dante}")
    s, r = socks_connect(front.addr, "localhost", sink.addr[1])
    with s:
        assert r.rep == 0
        big_exchange(s, sink)
    assert (r.host, r.port) in sink.results, (r.host, r.port, list(sink.results))
    holder, port = unused_refused_port()
    with holder:
        s, r = socks_connect(front.addr, "127.0.0.1", port, expect=None)
        with s:
            assert r.rep == 0x05, f"SOCKS reply {r.rep:#x}, expected 0x05 (refused)"
    front.wait_log(r"access .*end=parent-refused.*via=up")


@pytest.mark.parametrize("which", ["tinyproxy", "squid"])
def test_http_parent(ferry, echo_server, request, which):
    port = request.getfixturevalue(which)
    front = start_front(ferry, f"http://127.0.0.1:{port}")
    # A SOCKS client and an HTTP CONNECT client, both through the parent.
    # Neither carries a client's half-close (both close the tunnel on it):
    # integrity both ways at once instead.
    s, r = socks_connect(front.addr, "127.0.0.1", echo_server.addr[1])
    with s:
        big_echo(s)
    s, status, _ = http_connect(front.addr, "127.0.0.1", echo_server.addr[1])
    with s:
        assert status == 200
        echo_roundtrip(s, b"CONNECT through " + which.encode())
    # The destination refuses the parent: a failure, never a tunnel. HTTP
    # parents say less than SOCKS ones do.
    holder, refused = unused_refused_port()
    with holder:
        s, status, head = http_connect(front.addr, "127.0.0.1", refused, timeout=10)
        s.close()
        assert status == 502, head
        s, r = socks_connect(front.addr, "127.0.0.1", refused, expect=None, timeout=10)
        with s:
            # tinyproxy answers 500 (a general failure: 0x01); Squid 503
            # (taken as unreachable: 0x04).
            want = {"tinyproxy": 0x01, "squid": 0x04}[which]
            assert r.rep == want, f"SOCKS reply {r.rep:#x}, expected {want:#x}"
    front.wait_log(r"access .*end=parent-\S+.*via=up")
