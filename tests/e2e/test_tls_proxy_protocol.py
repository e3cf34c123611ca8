# SPDX-License-Identifier: BSD-2-Clause
"""The PROXY protocol on a tls:// listener (`listen = tls://ADDR
proxy_protocol=v1|v2`): the header comes first in plaintext from a trusted
load balancer, then the TLS handshake. Behind a real HAProxy (send-proxy-v2
and send-proxy) curl's HTTPS proxy CONNECT works with integrity and the
access log shows the client's own address; a header sent in one segment
with the ClientHello loses no byte of it; the per-address handshake budget
counts the address in the header; an untrusted peer is refused as on a
plain listener."""

import contextlib
import hashlib
import select
import socket
import ssl
import subprocess
import time

import pytest

from haproxylib import haproxy as run_haproxy
from haproxylib import need_haproxy
from opslib import proxy_v1, proxy_v2
from policylib import closed_without_reply
from test_tls_listen import (  # noqa: F401
    CURL, OPENSSL, certs, client_ctx, held_handshake, socks5_over, wait_access)

MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL,
                                reason="openssl and curl are needed (make deps-test)")

HAPROXY_CFG = """global
    maxconn 200
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe_v2
    bind 127.0.0.1:{fe2}
    default_backend be_v2
backend be_v2
    server ferry 127.0.0.1:{be2} send-proxy-v2
frontend fe_v1
    bind 127.0.0.1:{fe1}
    default_backend be_v1
backend be_v1
    server ferry 127.0.0.1:{be1} send-proxy
"""


def pp_tls_ferry(ferry, certs, trust: str = "127.0.0.1", extra_tls: str = "", **config):
    cert, key = certs["a"]
    return ferry(listens=(), config={"listen": "tls://127.0.0.1:0 proxy_protocol=v2, "
                                               "tls://127.0.0.1:0 proxy_protocol=v1",
                                     "proxy_protocol_from": trust, "open_proxy": "yes",
                                     "access_log": "yes", **config},
                 extra=f"[tls]\ncert = {cert}\nkey = {key}\n{extra_tls}")


@pytest.fixture
def haproxy(tmp_path):
    """start(be2, be1): HAProxy in front of a v2 and a v1 listener; returns
    its frontend ports {"v2": ..., "v1": ...}."""
    need_haproxy()
    with contextlib.ExitStack() as stack:
        def start(be2: int, be1: int):
            render = lambda p: HAPROXY_CFG.format(fe2=p[0], fe1=p[1], be2=be2, be1=be1)  # noqa: E731
            _, (fe2, fe1) = stack.enter_context(run_haproxy(tmp_path, render, fronts=2))
            return {"v2": fe2, "v1": fe1}

        yield start


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_curl_through_haproxy_to_a_tls_listener(ferry, certs, http_server, haproxy, version):
    f = pp_tls_ferry(ferry, certs)
    assert len(f.listeners) == 2, f.listeners
    fronts = haproxy(f.listeners[0].port, f.listeners[1].port)
    cert = certs["a"][0]
    r = subprocess.run([CURL, "-sS", "--max-time", "60", "--interface", "127.0.0.2", "-p",
                        "--proxy", f"https://localhost:{fronts[version]}", "--proxy-cacert", str(cert),
                        "-o", "-", http_server.url("big.bin")], capture_output=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) == 10 * MiB
    assert hashlib.sha256(r.stdout).hexdigest() == http_server.files["big.bin"]
    e = wait_access(f, lambda e: e.get("cmd") == "CONNECT")
    assert e["client"].startswith("127.0.0.2:") and e["end"] == "done", e


def handshake_after_header(addr, header: bytes, timeout: float = 20):
    """Send header and the ClientHello in one segment (memory BIOs), finish
    the handshake; returns (socket, SSLObject, pump)."""
    sock = socket.create_connection(addr, timeout=timeout)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = client_ctx().wrap_bio(inc, out, server_hostname="localhost")
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    sock.sendall(header + out.read())
    deadline = time.monotonic() + timeout

    def pump():
        d = out.read()
        if d:
            sock.sendall(d)
        r, _, _ = select.select([sock], [], [], 1.0)
        if r:
            d = sock.recv(65536)
            if d:
                inc.write(d)
            else:
                inc.write_eof()

    while True:
        try:
            o.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump()
        assert time.monotonic() < deadline, "handshake did not finish"
    return sock, o, pump


def tls_read(o, pump, n: int, timeout: float = 20) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while len(got) < n:
        try:
            got += o.read(n - len(got))
        except ssl.SSLWantReadError:
            pump()
        assert time.monotonic() < deadline, got
    return got


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_header_and_client_hello_in_one_segment(ferry, certs, echo_server, version):
    f = pp_tls_ferry(ferry, certs)
    addr = f.listeners[0 if version == "v2" else 1]
    mk = proxy_v2 if version == "v2" else proxy_v1
    sock, o, pump = handshake_after_header(addr.addr,
                                           mk("198.51.100.7", 4321, "127.0.0.1", addr.port))
    with sock:
        eh, ep = echo_server.addr
        o.write(b"\x05\x01\x00\x05\x01\x00\x01" + socket.inet_aton(eh) + ep.to_bytes(2, "big"))
        pump()
        rep = tls_read(o, pump, 12)
        assert rep[:2] == b"\x05\x00" and rep[2:4] == b"\x05\x00", rep
        data = bytes(range(256)) * 64
        o.write(data)
        pump()
        assert tls_read(o, pump, len(data)) == data
    e = wait_access(f, lambda e: e.get("client") == "198.51.100.7:4321")
    assert e["cmd"] == "connect" and int(e["down"]) == len(data), e


def test_handshake_budget_counts_the_header_address(ferry, certs):
    f = pp_tls_ferry(ferry, certs, extra_tls="per_ip_handshakes = 1\nhandshake_timeout = 60s\n")
    addr = f.listeners[0].addr
    # One handshake in progress for 198.51.100.8, counted before anything
    # else is sent: ferry answered its ClientHello (so it took the slot) and
    # waits for a Finished that never comes.
    with held_handshake(addr, proxy_v2("198.51.100.8", 1000, "127.0.0.1", addr[1])):
        # The same address in the header: over its budget, reset at once.
        with socket.create_connection(addr, timeout=10) as s:
            s.sendall(proxy_v2("198.51.100.8", 1001, "127.0.0.1", addr[1]))
            assert closed_without_reply(s, timeout=10)
        # Another address behind the same balancer gets its handshake. The
        # budget is kept in 4096 counters by a keyed hash of the address, so
        # one other address shares 198.51.100.8's counter with a chance of
        # 1/4096: the first of three that is not refused (all three share it
        # with a chance of 1/4096^3; if the budget counted the balancer's
        # own address instead, all three would be refused).
        got = []
        for i, src in enumerate(("198.51.100.9", "198.51.100.10", "198.51.100.11")):
            try:
                sock, _, _ = handshake_after_header(
                    addr, proxy_v2(src, 1002 + i, "127.0.0.1", addr[1]))
            except (OSError, ssl.SSLError) as e:
                got.append(f"{src}: {e!r}")
                continue
            sock.close()
            break
        else:
            raise AssertionError(f"every other address was refused: {got}")
    f.wait_log(r"tls-handshake-limit")


def test_untrusted_peer_refused_before_tls(ferry, certs):
    f = pp_tls_ferry(ferry, certs, trust="127.0.0.3", workers="1")
    addr = f.listeners[0].addr
    s = socket.create_connection(addr, timeout=10, source_address=("127.0.0.5", 0))
    with s:
        port = s.getsockname()[1]
        s.sendall(proxy_v2("198.51.100.1", 1234, "127.0.0.1", addr[1]))
        assert closed_without_reply(s, timeout=5)
    f.wait_log(rf"warn +proxy_protocol: connection from 127\.0\.0\.5:{port} refused: not in proxy_protocol_from")
