# SPDX-License-Identifier: BSD-2-Clause
"""`ferry client URL R:PORT:HOST:PORT/udp` (reverse UDP forwards, issue 18)
against a real `ferry serve` with a tls:// listener and a `cmd reverse`
rule for alice (not carol): the server binds a UDP port (ferry-listen
kind udp), each new source of datagrams becomes one ferry-accept stream
carrying DATAGRAM capsules, and the client sends them to HOST:PORT from a
UDP socket of its own per source. Covers echo with integrity for sizes 0,
1, 1200 and 9012 and 9013 dropped and counted at the server; two sources
getting two associations (two sockets at the target); a reply over
udp.max_datagram dropped and counted at the client; udp.associations
bounding the sources of one port; the idle expiry
per source (udp.idle at the server: the stream ends, the next datagram
opens a new one); a bind refused without a rule; a released UDP port held
for its user apart from the TCP port of that number; and the server killed
and started again (the client registers again, the port comes back)."""

import socket
import time
from pathlib import Path

import pytest

from certlib import OPENSSL, make_cert, pin_of
from clientlib import PASSWORD, Client
from ferrylib import HAVE_IPV6, FerryFactory, passwd_line, run_ferry
from opslib import free_port, metrics_addr, scrape
from udplib import UdpEcho, payload

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

RULES = ("[rules]\nallow user alice cmd reverse to 127.0.0.1 port 1024-65535\n"
         "allow user alice cmd reverse to ::1 port 1024-65535\n"
         "allow user bob cmd reverse to 127.0.0.1 port 1024-65535\n")
IDLE = "[udp]\nidle = 1s\n"
METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


def make_server(factory: FerryFactory, d: Path, port: int = 0, udp: str = ""):
    return factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                   extra=f"[tls]\ncert = {d / 'server.pem'}\nkey = {d / 'server.key'}\n"
                         f"{METRICS}{IDLE}{udp}{RULES}")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("reverse_udp")
    cert, _ = make_cert(d, "server")
    users = ["alice", "bob", "carol"]
    (d / "users.txt").write_text("".join(passwd_line(u, PASSWORD) + "\n" for u in users))
    for u in users:
        (d / f"{u}.auth").write_text(f"{u}:{PASSWORD}\n")
    factory = FerryFactory(d)
    srv = make_server(factory, d)
    yield {"dir": d, "factory": factory, "srv": srv, "pin": pin_of(cert),
           "url": f"https://127.0.0.1:{srv.port}"}
    findings = factory.finalize()
    assert not findings, findings


@pytest.fixture
def client(env):
    started = []

    def start(*remotes, user="alice", url=None, ready=r"the server listens on"):
        args = [url or env["url"], "--pin", env["pin"], "--auth-file",
                str(env["dir"] / f"{user}.auth"), *remotes]
        c = Client(env["dir"], args, name=f"client-{user}")
        started.append(c)
        if ready:
            c.wait_log(ready, timeout=30)
        return c

    yield start
    for c in started:
        c.stop()


@pytest.fixture
def echo():
    e = UdpEcho("127.0.0.1")
    yield e
    e.stop()


def udp_sock() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(10)
    return s


def echo_once(s: socket.socket, port: int, data: bytes, tries: int = 3,
              host: str = "127.0.0.1") -> bytes:
    """Send data to the server's port and return the reply; the first
    datagram of a source may race the listener's registration, so it is
    sent again (bounded) when nothing comes."""
    for i in range(tries):
        s.sendto(data, (host, port))
        try:
            got, src = s.recvfrom(65535)
        except socket.timeout:
            continue
        assert src[:2] == (host, port)
        return got
    raise AssertionError(f"no echo of {len(data)} bytes through {host}:{port}")


def test_reverse_udp_echo_sizes_and_oversized_dropped(env, client, echo):
    port = free_port()
    client(f"R:{port}:127.0.0.1:{echo.port}/udp")
    env["srv"].wait_log(rf"reverse UDP listener 127\.0\.0\.1:{port} for alice")
    maddr = metrics_addr(env["srv"])
    with udp_sock() as s:
        for size in (0, 1, 1200, 9012):
            data = payload(f"r{size}", size)
            assert echo_once(s, port, data) == data
        before = scrape(maddr).get("ferry_udp_dropped_total", reason="size")
        s.sendto(payload("big", 9013), ("127.0.0.1", port))
        deadline = time.monotonic() + 10
        while (scrape(maddr).get("ferry_udp_dropped_total", reason="size") < before + 1
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert scrape(maddr).get("ferry_udp_dropped_total", reason="size") == before + 1
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recvfrom(65535)
        s.settimeout(10)
        # Boundaries kept after the drop, several in flight.
        for i in range(8):
            s.sendto(payload(f"n{i}", i * 100), ("127.0.0.1", port))
        assert sorted(len(s.recvfrom(65535)[0]) for _ in range(8)) == [i * 100 for i in range(8)]
    assert not any(len(d) == 9013 for _, d in echo.seen)


@pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback")
def test_reverse_udp_ipv6(env, client):
    e = UdpEcho("::1")
    port = free_port("::1")
    try:
        client(f"R:[::1]:{port}:[::1]:{e.port}/udp")
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
            s.bind(("::1", 0))
            s.settimeout(10)
            for size in (0, 1200):
                data = payload(f"v6-{size}", size)
                assert echo_once(s, port, data, host="::1") == data
    finally:
        e.stop()


def test_reverse_udp_oversized_reply_dropped_at_the_client(env, tmp_path):
    """The target answers 9013 bytes to 9012: the client drops it and
    counts it; a smaller reply still comes back."""
    e = UdpEcho("127.0.0.1", extra=1)
    port = free_port()
    conf = tmp_path / "client.conf"
    conf.write_text(METRICS)
    c = Client(env["dir"], [env["url"], "--pin", env["pin"], "--auth-file",
                            str(env["dir"] / "alice.auth"), "-c", str(conf),
                            f"R:{port}:127.0.0.1:{e.port}/udp"], name="client-big")
    try:
        c.wait_log(r"the server listens on", timeout=30)
        m = c.wait_log(r"metrics on http://([0-9.]+):(\d+)/metrics")
        maddr = (m.group(1), int(m.group(2)))
        with udp_sock() as s:
            assert echo_once(s, port, b"x" * 100) == b"x" * 100 + b"E"
            before = scrape(maddr).get("ferry_udp_dropped_total", reason="size")
            s.sendto(payload("big", 9012), ("127.0.0.1", port))
            deadline = time.monotonic() + 10
            while (scrape(maddr).get("ferry_udp_dropped_total", reason="size") < before + 1
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            assert scrape(maddr).get("ferry_udp_dropped_total", reason="size") == before + 1
            assert 9012 in [len(d) for d in e.payloads()]  # it reached the target
    finally:
        c.stop()
        e.stop()


def test_reverse_udp_two_sources_two_associations(env, client, echo):
    port = free_port()
    client(f"R:{port}:127.0.0.1:{echo.port}/udp")
    a, b = udp_sock(), udp_sock()
    with a, b:
        for i in range(3):
            assert echo_once(a, port, b"a%d" % i) == b"a%d" % i
            assert echo_once(b, port, b"b%d" % i) == b"b%d" % i
        # One socket at the target per source: their datagrams never mix.
        by_src: dict = {}
        for src, d in echo.seen:
            by_src.setdefault(src, set()).add(d[:1])
        assert sorted(by_src.values(), key=sorted) == [{b"a"}, {b"b"}]
    env["srv"].wait_log(r"user=alice cmd=reverse .*end=udp-idle", timeout=20)


def test_reverse_udp_idle_expiry_per_source(env, client, echo):
    port = free_port()
    client(f"R:{port}:127.0.0.1:{echo.port}/udp")
    with udp_sock() as s:
        assert echo_once(s, port, b"first") == b"first"
        first = {src for src, _ in echo.seen}
        assert len(first) == 1
        # udp.idle = 1s at the server: the source's stream ends ...
        env["srv"].wait_log(rf"cmd=reverse dst=127\.0\.0\.1:{s.getsockname()[1]} .*end=udp-idle",
                            timeout=20)
        # ... and its next datagram opens a new one (a new socket here).
        assert echo_once(s, port, b"second") == b"second"
        assert len({src for src, _ in echo.seen}) == 2


def test_reverse_udp_sources_limited_by_udp_associations(env, echo, tmp_path):
    """udp.associations = 2 at the server: a third source is dropped and
    counted while two are carried; once they expire it gets through."""
    tport, port = free_port(), free_port()
    factory = FerryFactory(tmp_path)
    try:
        make_cert(tmp_path, "server")
        (tmp_path / "users.txt").write_text((env["dir"] / "users.txt").read_text())
        srv = make_server(factory, tmp_path, port=tport, udp="associations = 2\n")
        maddr = metrics_addr(srv)
        c = Client(env["dir"], [f"https://127.0.0.1:{tport}", "--pin", pin_of(tmp_path / "server.pem"),
                                "--auth-file", str(env["dir"] / "alice.auth"),
                                f"R:{port}:127.0.0.1:{echo.port}/udp"], name="client-limit")
        socks_ = [udp_sock() for _ in range(3)]
        try:
            c.wait_log(r"the server listens on", timeout=30)
            for i, s in enumerate(socks_[:2]):
                assert echo_once(s, port, b"s%d" % i) == b"s%d" % i
            before = scrape(maddr).get("ferry_udp_associations_rejected_total")
            third = socks_[2]
            third.settimeout(0.3)
            third.sendto(b"third", ("127.0.0.1", port))
            with pytest.raises(socket.timeout):
                third.recvfrom(65535)
            assert scrape(maddr).get("ferry_udp_associations_rejected_total") >= before + 1
            # The first two expire (udp.idle = 1s): the third gets through.
            srv.wait_log(r"cmd=reverse .*end=udp-idle", timeout=20)
            third.settimeout(10)
            deadline = time.monotonic() + 20
            got = None
            while got is None and time.monotonic() < deadline:
                third.sendto(b"third", ("127.0.0.1", port))
                try:
                    got = third.recvfrom(65535)[0]
                except socket.timeout:
                    pass
            assert got == b"third"
        finally:
            for s in socks_:
                s.close()
            c.stop()
    finally:
        problems = factory.finalize()
        assert not problems, problems


def test_reverse_udp_refused_without_rule(env, client):
    port = free_port()
    c = client(f"R:{port}:127.0.0.1:9/udp", user="carol", ready=r"refused the bind")
    assert "HTTP 403" in c.text() and "cmd reverse" in c.text(), c.text()
    env["srv"].wait_log(r"user=carol cmd=reverse-listen .*reply=403")


def test_reverse_udp_port_held_apart_from_tcp(env, client, echo):
    """A released UDP port stays alice's (http2.reverse_grace): bob's UDP
    bind of it is refused, his TCP bind of the same number is not."""
    port = free_port()
    a = client(f"R:{port}:127.0.0.1:{echo.port}/udp")
    with udp_sock() as s:
        assert echo_once(s, port, b"held") == b"held"
    mark = len(env["srv"].log_text())
    a.stop()
    env["srv"].wait_log(r"user=alice cmd=reverse-listen ", timeout=20, start=mark)
    b = client(f"R:{port}:127.0.0.1:{echo.port}/udp", user="bob", ready=r"refused the bind")
    assert "HTTP 403" in b.text(), b.text()
    env["srv"].wait_log(rf"reverse bind of 127\.0\.0\.1:{port} refused: held for another user")
    b.stop()
    client(f"R:{port}:127.0.0.1:9", user="bob")  # TCP: listens


def test_reverse_udp_port_back_after_server_restart(env, client, echo, tmp_path):
    tport, port = free_port(), free_port()
    factory = FerryFactory(tmp_path)
    try:
        make_cert(tmp_path, "server")
        (tmp_path / "users.txt").write_text((env["dir"] / "users.txt").read_text())
        srv = make_server(factory, tmp_path, port=tport)
        pin = pin_of(tmp_path / "server.pem")
        c = Client(env["dir"], [f"https://127.0.0.1:{tport}", "--pin", pin, "--auth-file",
                                str(env["dir"] / "alice.auth"),
                                f"R:{port}:127.0.0.1:{echo.port}/udp"], name="client-restart")
        try:
            c.wait_log(r"the server listens on", timeout=30)
            with udp_sock() as s:
                assert echo_once(s, port, b"before") == b"before"
            mark = len(c.text())
            srv.kill()
            srv2 = make_server(factory, tmp_path, port=tport)
            deadline = time.monotonic() + 40
            while "the server listens on" not in c.text()[mark:] and time.monotonic() < deadline:
                time.sleep(0.1)
            assert "the server listens on" in c.text()[mark:], c.text()[-3000:]
            with udp_sock() as s:
                assert echo_once(s, port, payload("after", 1200)) == payload("after", 1200)
            srv2.wait_log(rf"reverse UDP listener 127\.0\.0\.1:{port} for alice")
        finally:
            c.stop()
    finally:
        srv.expect_exit = None  # killed on purpose
        problems = factory.finalize()
        assert not problems, problems


def test_reverse_udp_print_config_and_config_errors(env, tmp_path):
    r = run_ferry(["client", env["url"], "--pin", env["pin"], "R:5353:127.0.0.1:53/udp",
                   "--print-config"])
    assert r.rc == 0, r.err
    assert "reverse = 127.0.0.1:5353 forward=127.0.0.1:53 udp\n" in r.out, r.out
    assert "[udp]" not in r.out, r.out  # not a local [udp] forward
    conf = tmp_path / "c.conf"
    conf.write_text("listen = none\n[outbound t]\nurl = https://127.0.0.1:1\n"
                    "reverse = 127.0.0.1:2222 socks udp\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1 and "udp applies to a forward only" in r.err, r.err
