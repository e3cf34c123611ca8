# SPDX-License-Identifier: BSD-2-Clause
"""TLS listeners (`listen = tls://...` with [tls] cert and key): ferry as an
HTTPS proxy and SOCKS over TLS on one port. Certificates are made here with
`openssl req -x509` (P-256, SANs localhost and 127.0.0.1). Covers curl's
HTTPS proxy (absolute-form GET and CONNECT, 10 MiB with integrity), SOCKS5
over TLS with 10 MiB each way and a half-close (close_notify both ways),
ALPN (h2 preferred, http/1.1; a client offering neither is refused per RFC 7301),
a wrong CA and a wrong pin failing on the client, plaintext on the TLS port
closed at once, the kTLS line said once at debug level, a silent client closed at handshake_timeout, the per-address
handshake budget, a certificate replaced by SIGHUP (open sessions carry on,
new ones see the new pin; a bad one keeps the old and says why), --check,
and ferry reaching a target through another ferry's TLS listener."""

import hashlib
import random
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from certlib import OPENSSL, make_cert, pin_of_der, pin_of
from ferrylib import encode_addr, read_until_close, run_ferry, socks_connect

MiB = 1024 * 1024
CURL = shutil.which("curl")

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL,
                                reason="openssl and curl are needed (make deps-test)")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tlscerts")
    a, ak = make_cert(d, "a")
    b, bk = make_cert(d, "b")
    stranger, _ = make_cert(d, "stranger", cn="stranger")
    return {"dir": d, "a": (a, ak), "b": (b, bk), "stranger": stranger}


def tls_ferry(ferry, cert, key, extra_tls: str = "", config: dict | None = None, **kw):
    """A ferry with one TLS listener (its addr) and no plain one."""
    return ferry(listens=("tls://127.0.0.1:0",), config={"open_proxy": "yes", **(config or {})},
                 extra=f"[tls]\ncert = {cert}\nkey = {key}\n{extra_tls}", **kw)


def client_ctx(cafile: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cafile)) if cafile else ssl.SSLContext(
        ssl.PROTOCOL_TLS_CLIENT)
    if not cafile:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def tls_connect(addr, cafile: Path | None = None, timeout: float = 20) -> ssl.SSLSocket:
    raw = socket.create_connection(addr, timeout=timeout)
    return client_ctx(cafile).wrap_socket(raw, server_hostname="localhost")


def held_handshake(addr, header: bytes = b"", timeout: float = 20) -> socket.socket:
    """A TLS handshake that ferry has provably counted and that never ends:
    header (a PROXY header, if any) and a ClientHello are sent, and the
    first byte of ferry's answer (its ServerHello record) is awaited. ferry
    takes the handshake's per-address slot before it answers and gives it
    back when the handshake ends; the client's Finished is never sent, so
    the slot stays taken until this socket closes (or handshake_timeout).
    No sleeping, no race with a later connection. Returns the socket."""
    sock = socket.create_connection(addr, timeout=timeout)
    out = ssl.MemoryBIO()
    o = client_ctx().wrap_bio(ssl.MemoryBIO(), out, server_hostname="localhost")
    try:
        o.do_handshake()
    except ssl.SSLWantReadError:
        pass
    try:
        sock.sendall(header + out.read())
        sock.settimeout(timeout)
        first = sock.recv(1)
    except BaseException:
        sock.close()
        raise
    if first != b"\x16":  # a handshake record (RFC 8446 section 5.1)
        sock.close()
        raise AssertionError(f"no ServerHello: {first!r}")
    return sock


def socks5_over(s, host: str, port: int):
    s.sendall(b"\x05\x01\x00" + b"\x05\x01\x00" + encode_addr(host) + port.to_bytes(2, "big"))
    got = b""
    while len(got) < 12:
        d = s.recv(12 - len(got))
        assert d, got
        got += d
    assert got[:2] == b"\x05\x00" and got[2:4] == b"\x05\x00", got


def wait_access(f, pred, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in f.access_entries():
            if pred(e):
                return e
        time.sleep(0.05)
    raise AssertionError(f"no such access entry: {f.access_entries()}")


def test_check_reports_tls_problems(tmp_path, certs):
    cert, key = certs["a"]
    cases = [
        ("listen = tls://127.0.0.1:1\n", "listen: a tls:// address needs [tls] cert and key"),
        (f"listen = tls://127.0.0.1:1\n[tls]\ncert = {cert}\nkey = {cert}\n", ":5: tls.key: key "),
        (f"listen = tls://127.0.0.1:1\n[tls]\ncert = {tmp_path}/none.pem\nkey = {key}\n",
         ":4: tls.cert: certificate "),
        (f"listen = tls://127.0.0.1:1\n[tls]\ncert = {certs['b'][0]}\nkey = {key}\n",
         "key values mismatch"),
        (f"[tls]\nmin_version = 1.1\n", "tls.min_version: '1.1' is not a TLS version"),
    ]
    for i, (text, want) in enumerate(cases):
        conf = tmp_path / f"c{i}.conf"
        conf.write_text("open_proxy = yes\n" + text)
        r = run_ferry(["serve", "--check", "-c", str(conf)])
        assert r.rc != 0 and want in r.text, (text, r.text)
    conf = tmp_path / "ok.conf"
    conf.write_text(f"open_proxy = yes\nlisten = tls://127.0.0.1:1\n[tls]\ncert = {cert}\n"
                    f"key = {key}\nmin_version = 1.2\nhandshake_timeout = 5s\nper_ip_handshakes = 0\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 0, r.text


def curl_fetch(proxy_port: int, url: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([CURL, "-sS", "--max-time", "60", "--proxy", f"https://localhost:{proxy_port}",
                           *args, "-o", "-", url], capture_output=True, timeout=90)


def test_curl_https_proxy_get_and_connect(ferry, certs, http_server):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    m = f.wait_log(r"tls: serving \S+, pin (sha256//\S+)")
    assert m.group(1) == pin_of(cert)
    want = http_server.files["big.bin"]
    url = http_server.url("big.bin")
    get = curl_fetch(f.port, url, "--proxy-cacert", str(cert))
    assert get.returncode == 0, get.stderr
    # Keep-alive: two requests on one TLS connection to the proxy.
    two = curl_fetch(f.port, http_server.url("small.txt"), "--proxy-cacert", str(cert),
                     http_server.url("small.txt"))
    assert two.returncode == 0 and two.stdout == (http_server.directory / "small.txt").read_bytes() * 2
    assert b"Re-using existing connection" in subprocess.run(
        [CURL, "-sv", "--proxy", f"https://localhost:{f.port}", "--proxy-cacert", str(cert),
         "-o", "/dev/null", "-o", "/dev/null", http_server.url("small.txt"),
         http_server.url("small.txt")], capture_output=True, timeout=60).stderr
    conn = curl_fetch(f.port, url, "-p", "--proxy-cacert", str(cert),
                      "--proxy-pinnedpubkey", pin_of(cert))
    assert conn.returncode == 0, conn.stderr
    assert len(get.stdout) == len(conn.stdout) == 10 * MiB
    assert hashlib.sha256(get.stdout).digest() == hashlib.sha256(conn.stdout).digest()
    assert hashlib.sha256(get.stdout).hexdigest() == want
    e = wait_access(f, lambda e: e.get("cmd") == "CONNECT")
    assert e["end"] == "done" and int(e["down"]) > 10 * MiB, e


def test_wrong_ca_fails_on_the_client(ferry, certs, http_server):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    r = curl_fetch(f.port, http_server.url("small.txt"), "--proxy-cacert", str(certs["stranger"]))
    assert r.returncode == 60 and b"certificate" in r.stderr, r.stderr


def test_alpn_prefers_h2(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, config={"log_level": "debug"})
    ctx = client_ctx(cert)
    ctx.set_alpn_protocols(["http/1.1", "h2"])  # the server's preference decides
    with ctx.wrap_socket(socket.create_connection(f.addr, timeout=10), server_hostname="localhost") as s:
        assert s.selected_alpn_protocol() == "h2"
        assert s.version() == "TLSv1.3"
    # kTLS is asked for; without it (no CONFIG_TLS) the log says so once.
    f.wait_log(r"tls: kTLS (carries the records|is not available)")
    ctx = client_ctx(cert)
    ctx.set_alpn_protocols(["http/1.1"])
    with ctx.wrap_socket(socket.create_connection(f.addr, timeout=10), server_hostname="localhost") as s:
        assert s.selected_alpn_protocol() == "http/1.1"
    ctx = client_ctx(cert)
    ctx.set_alpn_protocols(["spdy/3"])
    with pytest.raises(ssl.SSLError, match="(?i)no.application.protocol"):
        ctx.wrap_socket(socket.create_connection(f.addr, timeout=10), server_hostname="localhost")


def tls_over_bios(sock: socket.socket, timeout: float):
    """A TLS client on memory BIOs over a nonblocking socket, so that it
    can send close_notify and read on (ssl.SSLSocket cannot half-close).
    Returns the SSLObject, pump(want_read) -> TLS bytes still queued, the
    deadline and the start of a SOCKS5 CONNECT request."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = client_ctx().wrap_bio(inc, out, server_hostname="localhost")
    sock.setblocking(False)
    pending = bytearray()
    deadline = time.monotonic() + timeout

    def pump(want_read: bool):
        nonlocal pending
        pending += out.read()
        r, w, _ = select.select([sock] if want_read else [], [sock] if pending else [], [], 1.0)
        if w:
            n = sock.send(pending)
            del pending[:n]
        if r:
            d = sock.recv(262144)
            if d:
                inc.write(d)
            else:
                inc.write_eof()
        return len(pending)

    while True:
        try:
            o.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump(True)
        assert time.monotonic() < deadline
    req = b"\x05\x01\x00\x05\x01\x00" + encode_addr("127.0.0.1")
    return o, pump, deadline, req


def test_socks5_over_tls_10mib_each_way_and_half_close(ferry, certs, echo_server):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    size, sock = 10 * MiB, socket.create_connection(f.addr, timeout=10)
    o, pump, deadline, req = tls_over_bios(sock, 120)
    o.write(req + echo_server.port.to_bytes(2, "big"))
    reply = b""
    while len(reply) < 12:
        try:
            reply += o.read(12 - len(reply))
        except ssl.SSLWantReadError:
            pump(True)
        assert time.monotonic() < deadline
    assert reply[:4] == b"\x05\x00\x05\x00", reply
    rnd, sent_h, got_h, left, got = random.Random(7), hashlib.sha256(), hashlib.sha256(), size, 0
    queued = 0
    while got < size:
        if left and queued < 512 * 1024:
            block = rnd.randbytes(min(65536, left))
            sent_h.update(block)
            o.write(block)
            left -= len(block)
        while True:
            try:
                d = o.read(262144)
            except ssl.SSLWantReadError:
                break
            got += len(d)
            got_h.update(d)
        queued = pump(True)
        assert time.monotonic() < deadline, (got, left)
    # Half-close: our close_notify; the echo sees EOF, closes, and ferry's
    # close_notify ends the stream cleanly.
    try:
        o.unwrap()
    except ssl.SSLWantReadError:
        pass
    end = None
    while end is None:
        pump(True)
        try:
            d = o.read(65536)
            if d:
                end = "extra"
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError) as e:
            end = type(e).__name__
        assert time.monotonic() < deadline
    sock.close()
    assert sent_h.digest() == got_h.digest() and got == size
    assert end == "SSLZeroReturnError", end
    e = wait_access(f, lambda e: e.get("dst") == f"127.0.0.1:{echo_server.port}")
    assert e["end"] == "done" and e["up"] == e["down"] == str(size), e


def test_plaintext_on_tls_port_closed_at_once(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, config={"log_level": "debug"})
    with socket.create_connection(f.addr, timeout=10) as s:
        s.sendall(b"\x05\x01\x00")
        t0 = time.monotonic()
        data, how = read_until_close(s, timeout=10)
        assert data == b"" and time.monotonic() - t0 < 5, (data, how)
    e = wait_access(f, lambda e: e.get("end") == "tls-plaintext")
    assert e["cmd"] == "-", e
    f.wait_log(r"sent plaintext \(first byte 0x05\) to a TLS port")


KTLS = r"tls: kTLS (carries the records|is not available \(the kernel lacks CONFIG_TLS)"


def test_ktls_said_once_at_debug_level(ferry, certs, echo_server):
    """kTLS is asked for; whether the kernel carries the records (or lacks
    CONFIG_TLS, as this one may) is said once per process at debug level,
    not once per connection, and not at all at info level."""
    cert, key = certs["a"]
    for level, want in (("debug", 1), ("info", 0)):
        f = tls_ferry(ferry, cert, key, config={"log_level": level, "access_log": "yes"})
        ports = []
        for _ in range(2):
            with tls_connect(f.addr, cert) as s:
                socks5_over(s, "127.0.0.1", echo_server.port)
                s.sendall(b"ping")
                assert s.recv(4) == b"ping"
                ports.append(s.getsockname()[1])
        # A session's kTLS line, if any, is queued before its access line.
        for p in ports:
            wait_access(f, lambda e, p=p: e.get("client") == f"127.0.0.1:{p}")
        lines = [m.group(0) for m in re.finditer(r"^.*" + KTLS + r".*$", f.log_text(), re.M)]
        assert len(lines) == want, (level, lines)
        if want:
            assert " debug " in lines[0], lines


def test_silent_client_closed_at_handshake_timeout(ferry, certs):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, extra_tls="handshake_timeout = 1s\n")
    with socket.create_connection(f.addr, timeout=10) as s:
        t0 = time.monotonic()
        data, how = read_until_close(s, timeout=15)
        took = time.monotonic() - t0
    assert data == b"" and 0.8 <= took < 12, (how, took)
    wait_access(f, lambda e: e.get("end") == "tls-handshake-timeout")


def test_per_ip_handshakes(ferry, certs, echo_server):
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, extra_tls="per_ip_handshakes = 2\nhandshake_timeout = 60s\n")
    held = []
    try:
        for _ in range(2):  # both counted: ferry answered their ClientHellos
            held.append(held_handshake(f.addr))
        # Over the limit: reset at accept, which can reach connect() itself.
        try:
            with socket.create_connection(f.addr, timeout=10) as s:
                data, how = read_until_close(s, timeout=10)
                assert data == b""
        except ConnectionResetError:
            pass
        wait_access(f, lambda e: e.get("end") == "tls-handshake-limit")
    finally:
        for s in held:
            s.close()
    # Handshakes that ended give their slot back.
    deadline = time.monotonic() + 10
    while True:
        try:
            with tls_connect(f.addr, cert) as s:
                socks5_over(s, "127.0.0.1", echo_server.port)
                s.sendall(b"ping")
                assert s.recv(4) == b"ping"
            break
        except (ssl.SSLError, OSError, AssertionError):
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_sighup_replaces_the_certificate(ferry, certs, echo_server, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    cert.write_bytes(certs["a"][0].read_bytes())
    key.write_bytes(certs["a"][1].read_bytes())
    f = tls_ferry(ferry, cert, key)
    old = tls_connect(f.addr)
    socks5_over(old, "127.0.0.1", echo_server.port)
    assert pin_of_der(old.getpeercert(binary_form=True)) == pin_of(certs["a"][0])
    cert.write_bytes(certs["b"][0].read_bytes())
    key.write_bytes(certs["b"][1].read_bytes())
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: tls: serving \S+, pin " + pin_of(certs["b"][0]).replace("+", r"\+"),
               timeout=10, start=off)
    old.sendall(b"still here")
    assert old.recv(10) == b"still here"
    with tls_connect(f.addr) as s:
        assert pin_of_der(s.getpeercert(binary_form=True)) == pin_of(certs["b"][0])
    # A certificate that does not load keeps the one in use, and says why.
    cert.write_text("not a certificate\n")
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"tls\.cert: certificate .*live\.pem", timeout=10, start=off)
    f.wait_log(r"still running the previous", timeout=10, start=off)
    with tls_connect(f.addr) as s:
        assert pin_of_der(s.getpeercert(binary_form=True)) == pin_of(certs["b"][0])
    old.sendall(b"and now")
    assert old.recv(7) == b"and now"
    old.close()


def test_ferry_to_ferry_over_tls(ferry, certs, echo_server):
    cert, key = certs["a"]
    server = tls_ferry(ferry, cert, key)
    for pin, ok in ((pin_of(cert), True), (pin_of(certs["b"][0]), False)):
        front = ferry(config={"open_proxy": "yes", "outbound": "up"},
                      extra=f"[outbound up]\nurl = https://localhost:{server.port}\npin = {pin}\n")
        if ok:
            s, _ = socks_connect(front.addr, "127.0.0.1", echo_server.port)
            with s:
                payload = random.Random(3).randbytes(MiB)
                s.sendall(payload)
                got = b""
                while len(got) < len(payload):
                    d = s.recv(65536)
                    assert d
                    got += d
                assert got == payload
                s.shutdown(socket.SHUT_WR)
                rest, how = read_until_close(s, timeout=20)
                assert rest == b"" and how == "eof"
            e = wait_access(server, lambda e: e.get("dst") == f"127.0.0.1:{echo_server.port}")
            assert e["cmd"] == "CONNECT" and e["end"] == "done", e
        else:
            s, rep = socks_connect(front.addr, "127.0.0.1", echo_server.port, expect=None)
            s.close()
            assert rep.rep == 0x01, rep
            front.wait_log(r"certificate pin mismatch")


def test_udp_associate_over_a_tls_control_connection(ferry, certs):
    """The control connection is TLS; the datagrams stay plain UDP."""
    from udplib import UdpEcho, encode_udp, parse_udp
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    echo = UdpEcho("127.0.0.1")
    try:
        with tls_connect(f.addr, cert) as ctl:
            ctl.sendall(b"\x05\x01\x00\x05\x03\x00" + encode_addr("0.0.0.0") + b"\0\0")
            got = b""
            while len(got) < 12:
                d = ctl.recv(12 - len(got))
                assert d, got
                got += d
            assert got[:4] == b"\x05\x00\x05\x00" and got[5] == 1, got
            relay = (socket.inet_ntoa(got[6:10]), int.from_bytes(got[10:12], "big"))
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", 0))
                u.settimeout(5)
                u.sendto(encode_udp("127.0.0.1", echo.port, b"over tls"), relay)
                msg = parse_udp(u.recv(2048))
                assert msg.payload == b"over tls" and msg.port == echo.port
            ctl.unwrap()  # close_notify ends the association cleanly
        e = wait_access(f, lambda e: e.get("cmd") == "udp")
        assert e["end"] == "done" and e["reply"] == "succeeded", e
    finally:
        echo.stop()


def test_bind_over_tls(ferry, certs):
    """SOCKS5 BIND over TLS: both replies and the relay go through TLS."""
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key, config={"bind": "yes", "bind_timeout": "10s"})
    with tls_connect(f.addr, cert) as s:
        s.sendall(b"\x05\x01\x00\x05\x02\x00" + encode_addr("127.0.0.1") + (2121).to_bytes(2, "big"))
        got = b""
        while len(got) < 12:
            d = s.recv(12 - len(got))
            assert d, got
            got += d
        assert got[:4] == b"\x05\x00\x05\x00" and got[5] == 1, got
        bound = (socket.inet_ntoa(got[6:10]), int.from_bytes(got[10:12], "big"))
        with socket.create_connection(bound, timeout=10) as peer:
            second = b""
            while len(second) < 10:
                d = s.recv(10 - len(second))
                assert d, second
                second += d
            assert second[1] == 0, second
            peer.sendall(b"from the peer")
            assert s.recv(13) == b"from the peer"
            s.sendall(b"to the peer")
            assert peer.recv(11) == b"to the peer"
    e = wait_access(f, lambda e: e.get("cmd") == "bind")
    assert e["reply"] == "succeeded", e


def test_destination_half_closes_first_over_tls(ferry, certs, tcp_server):
    """The destination ends its side first: the client gets close_notify
    and may still send; the rest reaches the destination."""
    from ferrylib import ServerHalfCloseServer
    cert, key = certs["a"]
    f = tls_ferry(ferry, cert, key)
    srv = tcp_server(ServerHalfCloseServer, first_bytes=1024)
    sock = socket.create_connection(f.addr, timeout=10)
    o, pump, deadline, req = tls_over_bios(sock, 60)
    o.write(req + srv.port.to_bytes(2, "big") + b"a" * 1024)
    got, closed = b"", False
    while not closed:
        pump(True)
        try:
            while not closed:
                d = o.read(65536)
                got += d
                closed = d == b""  # close_notify, with ours not sent yet
        except ssl.SSLWantReadError:
            pass
        assert time.monotonic() < deadline, got
    assert got == b"\x05\x00\x05\x00" + got[4:12] + ServerHalfCloseServer.GREETING
    tail = b"b" * 300000
    o.write(tail)
    try:
        o.unwrap()
    except ssl.SSLWantReadError:
        pass
    while pump(False):
        assert time.monotonic() < deadline
    assert srv.done.wait(20)
    sock.close()
    n, digest = next(iter(srv.results.values()))
    assert n == 1024 + len(tail) and digest == hashlib.sha256(b"a" * 1024 + tail).hexdigest()
    e = wait_access(f, lambda e: e.get("dst") == f"127.0.0.1:{srv.port}")
    assert e["end"] == "done", e
