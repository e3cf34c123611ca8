# SPDX-License-Identifier: BSD-2-Clause
"""An HTTPS parent: ferry -> stunnel4 (TLS 1.3, a certificate made here with
`openssl req -x509`) -> a second, plain ferry answering HTTP CONNECT ->
the destination. The certificate is pinned (sha256// of its
SubjectPublicKeyInfo) or checked against a CA file. Covers 10 MiB each way
with integrity, half-close in both directions across the chain (close_notify
both ways), a destination that speaks first, an HTTP CONNECT client's
pipelined bytes, plain HTTP requests through the TLS parent, and the
failures: a wrong pin and a wrong CA end the session with SOCKS5 REP 0x01
(general failure) or HTTP 502 and a log line that says why; a parent that
never answers the TLS handshake is a timeout (0x06); a CA file that cannot
be read fails --check."""

import base64
import hashlib
import random
import socket
import subprocess
import time

import pytest

from clientlib import exchange
from daemonlib import STUNNEL, Stunnel
from certlib import OPENSSL, make_cert, pin_of
from ferrylib import (
    ServerHalfCloseServer,
    SinkThenReplyServer,
    expect_failure,
    open_client,
    handshake,
    read_until_close,
    request,
    socks_connect,
)

MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not STUNNEL or not OPENSSL,
                                reason="stunnel4 and openssl are needed (make deps-test)")


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A certificate, a stranger CA, the inner ferry and stunnel in front of
    it (shared by the module: a parent keeps no per-test state)."""
    from ferrylib import FerryFactory

    d = tmp_path_factory.mktemp("tls")
    cert, key = make_cert(d, "server")
    other, _ = make_cert(d, "stranger", cn="stranger")
    factory = FerryFactory(d)
    inner = factory()
    tunnel = Stunnel(d, cert, key, inner.addr)
    yield {"dir": d, "cert": cert, "pin": pin_of(cert), "stranger": other,
           "stunnel": tunnel, "inner": inner}
    tunnel.stop()
    findings = factory.finalize()
    assert not findings, findings


def https_ferry(ferry, chain, host: str = "127.0.0.1", **keys):
    """The ferry under test: every session through the HTTPS parent."""
    lines = "".join(f"{k} = {v}\n" for k, v in keys.items())
    return ferry(config={"outbound": "secure"},
                 extra=f"[outbound secure]\nurl = https://{host}:{chain['stunnel'].port}\n{lines}")


def exchange_10mib(proxy, target, seed: int, size: int, timeout: float):
    """size pseudo-random bytes to an echo through the chain while reading
    them back; the client's EOF only once all came back. (stunnel4 5.68,
    once it has passed our close_notify on as a shutdown, takes the POLLHUP
    of its plain socket for the end of the data and closes with bytes still
    unread there (its debug log: "Read socket closed (HUP)"): an EOF while
    the echo is in flight loses its tail at stunnel. Half-close is tested
    below, with the reply after the EOF.)
    Returns (sha256 sent, sha256 received, bytes received, how it ended)."""
    s, _ = socks_connect(proxy, *target, timeout=timeout)
    with s:
        return exchange(s, size, seed, timeout)


def test_pinned_10mib_each_way(ferry, chain, echo_server):
    f = https_ferry(ferry, chain, pin=chain["pin"])
    size = 10 * MiB
    sent, got, n, how = exchange_10mib(f.addr, echo_server.addr, seed=15, size=size, timeout=120)
    assert n == size and sent == got and how == "eof"
    entry = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entries = [e for e in f.access_entries() if e.get("dst") == f"127.0.0.1:{echo_server.port}"]
        if entries:
            entry = entries[-1]
            break
        time.sleep(0.05)
    assert entry and entry["end"] == "done" and entry["up"] == entry["down"] == str(size), entry
    assert entry.get("via") == "secure", entry


def test_client_half_close_through_tls(ferry, chain, tcp_server):
    """The client's EOF reaches the destination (close_notify, then the
    inner ferry's FIN); the reply comes back whole, then EOF."""
    f = https_ferry(ferry, chain, pin=chain["pin"])
    # A modest reply: stunnel drops what it has not read when the last FIN
    # comes (see exchange_10mib); a reply it keeps up with is safe.
    srv = tcp_server(SinkThenReplyServer, reply_size=512 * 1024)
    s, _ = socks_connect(f.addr, *srv.addr, timeout=30)
    with s:
        SinkThenReplyServer.check_half_close(s, random.Random(3).randbytes(3 * MiB), 512 * 1024)


def test_server_half_close_through_tls(ferry, chain, tcp_server):
    """The destination's EOF (a close_notify from stunnel) reaches the
    client while the client goes on sending, and every byte arrives."""
    f = https_ferry(ferry, chain, pin=chain["pin"])
    srv = tcp_server(ServerHalfCloseServer, first_bytes=1024)
    s, _ = socks_connect(f.addr, *srv.addr, timeout=30)
    rnd = random.Random(9)
    h = hashlib.sha256()
    total = 0
    with s:
        first = rnd.randbytes(1024)
        s.sendall(first)
        h.update(first)
        total += len(first)
        greeting, how = b"", "timeout"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                how = "eof"
                break
            greeting += chunk
        assert how == "eof" and greeting == ServerHalfCloseServer.GREETING
        for _ in range(20):
            block = rnd.randbytes(50_000)
            s.sendall(block)
            h.update(block)
            total += len(block)
        s.shutdown(socket.SHUT_WR)
        rest, how = read_until_close(s, timeout=20)
        assert rest == b"" and how == "eof"
    assert srv.done.wait(20), "the destination never saw the client's EOF"
    with srv.lock:
        results = list(srv.results.values())
    assert (total, h.hexdigest()) in results


def test_wrong_pin_fails_clearly(ferry, chain, echo_server):
    wrong = "sha256//" + base64.b64encode(hashlib.sha256(b"not the key").digest()).decode()
    f = https_ferry(ferry, chain, pin=wrong)
    # SOCKS5: a general failure (0x01): the parent was reached, but it is not
    # the one configured; "refused" would send the operator after a dead host.
    s = open_client(f.addr, timeout=20)
    with s:
        handshake(s)
        s.sendall(request("127.0.0.1", echo_server.port))
        expect_failure(s, 0x01, timeout=20)
    f.wait_log(r"certificate pin mismatch: got " + chain["pin"].replace("+", r"\+")
               + r", expected " + wrong.replace("+", r"\+"), timeout=10)
    # HTTP CONNECT: 502.
    with socket.create_connection(f.addr, timeout=20) as c:
        c.sendall(f"CONNECT 127.0.0.1:{echo_server.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head, _ = read_until_close(c, timeout=20)
    assert head.startswith(b"HTTP/1.1 502 "), head[:80]


def test_ca_file_verifies_and_a_wrong_ca_fails(ferry, chain, echo_server):
    good = https_ferry(ferry, chain, ca_file=chain["cert"])  # self-signed: its own CA
    sent, got, n, _ = exchange_10mib(good.addr, echo_server.addr, seed=4, size=256 * 1024, timeout=30)
    assert n == 256 * 1024 and sent == got
    # the name is checked too: "localhost" is in the certificate
    by_name = https_ferry(ferry, chain, host="localhost", ca_file=chain["cert"])
    sent, got, n, _ = exchange_10mib(by_name.addr, echo_server.addr, seed=5, size=1024, timeout=30)
    assert n == 1024 and sent == got

    bad = https_ferry(ferry, chain, ca_file=chain["stranger"])
    s = open_client(bad.addr, timeout=20)
    with s:
        handshake(s)
        s.sendall(request("127.0.0.1", echo_server.port))
        expect_failure(s, 0x01, timeout=20)
    bad.wait_log(r"certificate verify failed: ", timeout=10)


def test_check_reports_an_unreadable_ca_file(tmp_path):
    """The TLS context is made when the configuration loads: --check names
    the section of a CA file that cannot be read."""
    from ferrylib import run_ferry

    cfg = tmp_path / "ferry.conf"
    cfg.write_text("outbound = secure\n\n[outbound secure]\nurl = https://127.0.0.1:8443\n"
                   f"ca_file = {tmp_path / 'missing.pem'}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0, r.text
    assert f"{cfg}:3: outbound secure: ca_file {tmp_path / 'missing.pem'}: " in r.text, r.text
    good = tmp_path / "good.conf"
    cert, _ = make_cert(tmp_path, "ca")
    good.write_text("outbound = secure\n\n[outbound secure]\nurl = https://localhost:8443\n"
                    f"ca_file = {cert}\n")
    r = run_ferry(["serve", "--check", "-c", str(good)])
    assert r.rc == 0, r.text


def test_plain_http_request_through_https_parent(ferry, chain, http_server):
    """An absolute-form request (curl -x http://ferry) goes through the TLS
    tunnel too, twice on one client connection: never in clear text."""
    f = https_ferry(ferry, chain, pin=chain["pin"])
    r = subprocess.run(["curl", "-fsS", "--max-time", "20", "-x", f"http://127.0.0.1:{f.port}",
                        "--noproxy", "", http_server.url("small.txt"), "-o", "/dev/null",
                        http_server.url("big.bin"), "-o", "-"],
                       capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == http_server.files["big.bin"]
    f.wait_log(r"access .*dst=127\.0\.0\.1:\d+.*via=secure")


def test_destination_speaks_first_through_tls(ferry, chain):
    """What the destination sends at once may arrive in TLS records right
    behind the parent's 200, and sit decrypted in OpenSSL after the
    handshake read its reply: none of it is lost or left waiting."""
    from ferrylib import echo_roundtrip, recv_exact
    from test_outbound_parent import BannerServer

    banner = BannerServer("127.0.0.1")
    try:
        f = https_ferry(ferry, chain, pin=chain["pin"])
        for _ in range(5):
            s, _ = socks_connect(f.addr, "127.0.0.1", banner.addr[1], timeout=20)
            with s:
                assert recv_exact(s, len(BannerServer.BANNER), timeout=10) == BannerServer.BANNER
                echo_roundtrip(s, b"after the banner")
    finally:
        banner.stop()


def test_tls_handshake_never_answered(ferry, echo_server):
    """A parent that accepts TCP and never speaks TLS: a timeout (0x06)
    within connect_timeout, and a warning that says it was the TLS."""
    from test_outbound_parent import SilentServer

    silent = SilentServer("127.0.0.1")
    try:
        f = ferry(config={"outbound": "secure", "connect_timeout": "1s"},
                  extra=f"[outbound secure]\nurl = https://127.0.0.1:{silent.addr[1]}\n"
                        f"pin = sha256//{base64.b64encode(bytes(32)).decode()}\n")
        t0 = time.monotonic()
        s, r = socks_connect(f.addr, "127.0.0.1", echo_server.port, expect=None, timeout=10)
        s.close()
        assert r.rep == 0x06, f"SOCKS reply {r.rep:#x}, expected 0x06"
        assert time.monotonic() - t0 < 8
        f.wait_log(r"outbound secure: parent 127\.0\.0\.1 port \d+: no TLS handshake within")
    finally:
        silent.stop()


def test_http_connect_with_pipelined_bytes_through_tls(ferry, chain, echo_server):
    """An HTTP CONNECT client whose first tunnel bytes ride behind its head:
    they go out through TLS first, then the rest, and the client's EOF comes
    back as EOF."""
    f = https_ferry(ferry, chain, pin=chain["pin"])
    with socket.create_connection(f.addr, timeout=20) as c:
        c.sendall(f"CONNECT 127.0.0.1:{echo_server.port} HTTP/1.1\r\nHost: x\r\n\r\nearly bytes".encode())
        head = b""
        while not head.endswith(b"\r\n\r\n") and len(head) < 4096:
            b = c.recv(1)
            if not b:
                break
            head += b
        assert head == b"HTTP/1.1 200 Connection established\r\n\r\n", head
        payload = random.Random(11).randbytes(256 * 1024)  # fits the chain's socket buffers unread
        c.sendall(payload)
        c.shutdown(socket.SHUT_WR)
        back, how = read_until_close(c, timeout=30)
    assert how == "eof" and back == b"early bytes" + payload


def test_pool_health_check_through_tls(ferry, chain, echo_server):
    """A pool's health check of an HTTPS member verifies it as sessions do
    and CONNECTs through it: a member with the wrong pin is down (the log
    says why), one with the right pin stays up and carries the sessions."""
    from ferrylib import echo_roundtrip

    wrong = "sha256//" + base64.b64encode(hashlib.sha256(b"another key").digest()).decode()
    port = chain["stunnel"].port
    f = ferry(config={"outbound": "p"},
              extra=f"[outbound bad]\nurl = https://127.0.0.1:{port}\npin = {wrong}\n"
                    f"[outbound good]\nurl = https://127.0.0.1:{port}\npin = {chain['pin']}\n"
                    "[outbound p]\nmembers = bad, good\nhealth_check = 300ms\n"
                    f"health_target = 127.0.0.1:{echo_server.port}\n")
    f.wait_log(r"outbound bad \(member of pool p\): down: health check to 127\.0\.0\.1 port \d+: "
               r"certificate pin mismatch: got ", timeout=15)
    for _ in range(3):
        s, _ = socks_connect(f.addr, "127.0.0.1", echo_server.port, timeout=20)
        with s:
            echo_roundtrip(s, b"through the member that is up")
    time.sleep(1.0)  # a few more checks of the good member
    assert "outbound good (member of pool p): down" not in f.log_text()
