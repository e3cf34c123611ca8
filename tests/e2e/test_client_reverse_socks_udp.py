# SPDX-License-Identifier: BSD-2-Clause
"""SOCKS5 UDP ASSOCIATE on an `R:PORT:socks` remote (issue 18): the
application is on the server's side, so the UDP relay port in the reply
is a UDP socket of `ferry serve` (on the remote's bind address, bound to
the application's IP, as long as the control connection lives); the
datagrams cross the tunnel on one ferry-listen stream (kind assoc, DATAGRAM
capsules) and `ferry client` egresses them from its own sockets under the
remote's egress policy (allow=127.0.0.0/8,::1/128 here: the --print-config
file run by ferry serve). Covers echo with integrity for sizes 0, 1, 1200,
9012 and 9013 (dropped and counted at the server), IPv4 and IPv6
destinations and several per association, a domain destination resolved
at the client; the association ending with its control connection (the
server's UDP port closes); datagrams from another source IP or with
FRAG != 0 dropped and counted at the server; a denied egress and an
oversized reply dropped and counted at the client; udp.associations per R:socks port, udp.ports and
udp.advertise at the server; the association's datagrams keeping its
silent control connection from the server's iotimeout; and a tunnel
restart (the association ends cleanly, a new one works after the
reconnect)."""

import socket
import time
from pathlib import Path

import pytest

from certlib import OPENSSL, pin_of
from clientlib import server_files
from ferrylib import HAVE_IPV6, FerryFactory, run_ferry
from opslib import free_port, metrics_addr, scrape
from udplib import UdpAssoc, UdpEcho, encode_udp, payload

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

RULES = "[rules]\nallow user alice cmd reverse to 127.0.0.1 port 1024-65535\n"
METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"
ALLOW = "allow=127.0.0.0/8,::1/128"


def make_server(factory: FerryFactory, d: Path, cert: Path, key: Path, port: int = 0):
    return factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                   extra=f"[tls]\ncert = {cert}\nkey = {key}\n{METRICS}{RULES}")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("reverse_socks_udp")
    cert, key = server_files(d, ["alice"])
    factory = FerryFactory(d)
    srv = make_server(factory, d, cert, key)
    yield {"dir": d, "factory": factory, "srv": srv, "cert": cert, "key": key,
           "pin": pin_of(cert), "url": f"https://127.0.0.1:{srv.port}"}
    findings = factory.finalize()
    assert not findings, findings


def client_config(env, port: int, url: str | None = None) -> str:
    """ferry client's configuration for R:PORT:socks (--print-config), with
    the remote's allow= list and a metrics listener added."""
    r = run_ferry(["client", url or env["url"], "--pin", env["pin"], "--auth-file",
                   str(env["dir"] / "alice.auth"), f"R:{port}:socks", "--print-config"])
    assert r.rc == 0, r.err
    line = f"reverse = 127.0.0.1:{port} socks"
    assert line + "\n" in r.out, r.out
    return "workers = 2\n" + r.out.replace(line, f"{line} {ALLOW}") + METRICS


@pytest.fixture
def rclient(env, tmp_path):
    """Start a client (as ferry serve running its --print-config) with an
    R:PORT:socks remote; yields a function returning (proc, port)."""
    factory = FerryFactory(tmp_path)

    def start(url: str | None = None):
        port = free_port()
        cl = factory(wait_ready=False, raw_config=client_config(env, port, url), listens=())
        cl.wait_log(r"the server listens on", timeout=30)
        return cl, port

    yield start
    assert not factory.finalize()


@pytest.fixture
def echo():
    e = UdpEcho("127.0.0.1")
    yield e
    e.stop()


def wait_metric(addr, value_at_least: float, name: str, timeout: float = 10, **labels):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if scrape(addr).get(name, **labels) >= value_at_least:
            return
        time.sleep(0.05)
    assert scrape(addr).get(name, **labels) >= value_at_least, (name, labels)


def drops(addr, reason: str) -> float:
    return scrape(addr).get("ferry_udp_dropped_total", reason=reason)


def test_reverse_socks_udp_echo_sizes_families_destinations(env, rclient, echo):
    cl, port = rclient()
    smaddr = metrics_addr(env["srv"])
    e2 = UdpEcho("127.0.0.1")
    e6 = UdpEcho("::1") if HAVE_IPV6 else None
    try:
        with UdpAssoc(("127.0.0.1", port)) as a:
            # The relay is a UDP port of the server, on the remote's address.
            assert a.relay[0] == "127.0.0.1" and a.relay[1] not in (0, port)
            for size in (0, 1, 1200, 9012):
                data = payload(f"s{size}", size)
                m = a.echo(echo.addr, data, timeout=10)
                assert m.payload == data and (m.host, m.port) == echo.addr
            before = drops(smaddr, "size")
            a.send(echo.addr, payload("big", 9013))
            wait_metric(smaddr, before + 1, "ferry_udp_dropped_total", reason="size")
            a.expect_nothing()
            assert not any(len(d) == 9013 for d in echo.payloads())
            # Several destinations on one association, both families.
            dests = [echo.addr, e2.addr] + ([e6.addr] if e6 else [])
            for i in range(3):
                for dst in dests:
                    data = payload(f"d{i}-{dst[1]}", 300 + i)
                    m = a.echo(dst, data, timeout=10)
                    assert (m.host, m.port) == dst and m.payload == data
            # A name, resolved at the client (the egress).
            m = a.echo(("localhost", echo.port), b"by-name", timeout=10)
            assert m.payload == b"by-name" and m.port == echo.port
            # Boundaries kept, several in flight.
            for i in range(8):
                a.send(echo.addr, payload(f"n{i}", i * 100))
            got = sorted(len(a.recv(10).payload) for _ in range(8))
            assert got == [i * 100 for i in range(8)]
        cl.wait_log(r"cmd=udp .*end=", timeout=20)
    finally:
        e2.stop()
        if e6:
            e6.stop()


def test_reverse_socks_udp_dies_with_its_control_connection(env, rclient, echo):
    cl, port = rclient()
    a = UdpAssoc(("127.0.0.1", port))
    try:
        assert a.echo(echo.addr, b"alive", timeout=10).payload == b"alive"
        relay = a.relay
        a.close_control()
        # The server's UDP port closes: it can be bound again.
        deadline = time.monotonic() + 15
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                try:
                    s.bind(relay)
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the relay port stayed open"
            time.sleep(0.05)
        env["srv"].wait_log(r"user=alice cmd=reverse-udp .*end=", timeout=20)
    finally:
        a.close()


def test_reverse_socks_udp_other_source_dropped(env, rclient, echo):
    cl, port = rclient()
    smaddr = metrics_addr(env["srv"])
    with UdpAssoc(("127.0.0.1", port)) as a:
        assert a.echo(echo.addr, b"mine", timeout=10).payload == b"mine"
        before = drops(smaddr, "source")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
            other.bind(("127.0.0.2", 0))
            other.sendto(encode_udp(echo.addr[0], echo.addr[1], b"stranger"), a.relay)
            wait_metric(smaddr, before + 1, "ferry_udp_dropped_total", reason="source")
        a.expect_nothing()
        assert b"stranger" not in echo.payloads()
        # FRAG != 0 is dropped and counted at the server too.
        before = drops(smaddr, "fragment")
        a.send(echo.addr, b"fragment", frag=1)
        wait_metric(smaddr, before + 1, "ferry_udp_dropped_total", reason="fragment")
        a.expect_nothing()
        assert b"fragment" not in echo.payloads()
        assert a.echo(echo.addr, b"still", timeout=10).payload == b"still"


def own_pair(env, tmp_path, top: dict | None = None, udp: str = ""):
    """A server of our own (top-level keys top, [udp] keys udp) and a client
    with an R:socks port on it: (server, client port, factories)."""
    factory = FerryFactory(tmp_path)
    (tmp_path / "users.txt").write_text((env["dir"] / "users.txt").read_text())
    srv = factory(listens=("tls://127.0.0.1:0",), auth={"userlist": "users.txt"}, config=top,
                  extra=f"[tls]\ncert = {env['cert']}\nkey = {env['key']}\n"
                        f"[udp]\n{udp}{RULES}")
    (tmp_path / "c").mkdir()
    cfactory = FerryFactory(tmp_path / "c")
    port = free_port()
    cl = cfactory(wait_ready=False, listens=(),
                  raw_config=client_config(env, port, f"https://127.0.0.1:{srv.port}"))
    cl.wait_log(r"the server listens on", timeout=30)
    return srv, port, (cfactory, factory)


def test_reverse_socks_udp_association_limit_ports_advertise(env, tmp_path, echo):
    """udp.associations of the server bounds an R:socks port's
    associations: the next ASSOCIATE is refused (0x01) while the first
    keeps working, and one closing makes room. The relay port comes from
    the server's udp.ports and the reply names udp.advertise, as in the
    direct relay."""
    lo = min(free_port(), 65500)
    srv, port, factories = own_pair(
        env, tmp_path,
        udp=f"associations = 1\nports = {lo}-{lo + 20}\nadvertise = 127.0.0.3\n")
    try:
        with UdpAssoc(("127.0.0.1", port), relay_host="127.0.0.1") as a:
            assert a.reply.host == "127.0.0.3" and lo <= a.reply.port <= lo + 20, a.reply
            assert a.echo(echo.addr, b"one", timeout=10).payload == b"one"
            UdpAssoc(("127.0.0.1", port), expect=1).close()
            srv.wait_log(r"cmd=reverse-udp .*reply=429", timeout=10)
            assert a.echo(echo.addr, b"still", timeout=10).payload == b"still"
        deadline = time.monotonic() + 15
        while True:  # the first one's end makes room (bounded)
            b = UdpAssoc(("127.0.0.1", port), expect=None, relay_host="127.0.0.1")
            if b.reply.rep == 0:
                break
            b.close()
            assert time.monotonic() < deadline, "no room after the first association ended"
            time.sleep(0.1)
        with b:
            assert b.echo(echo.addr, b"two", timeout=10).payload == b"two"
    finally:
        for f in factories:
            assert not f.finalize()


def test_reverse_socks_udp_datagrams_keep_the_control_alive(env, tmp_path, echo):
    """The server's iotimeout (1 s) on the silent TCP control connection:
    datagrams of its association count as its activity, as in the direct
    relay; once they stop, the idle control ends, and the association
    with it."""
    srv, port, factories = own_pair(env, tmp_path, top={"iotimeout": "1s"})
    try:
        with UdpAssoc(("127.0.0.1", port)) as a:
            t0 = time.monotonic()
            for i in range(15):  # 3 s of datagrams, the TCP side silent
                assert a.echo(echo.addr, b"k%d" % i, timeout=10).payload == b"k%d" % i
                time.sleep(max(0.0, t0 + 0.2 * (i + 1) - time.monotonic()))
            assert time.monotonic() - t0 >= 2.5
            a.ctl.settimeout(20)
            assert a.ctl.recv(16) == b""  # quiet now: the idle timeout ends it
        srv.wait_log(r"cmd=reverse-udp .*end=control-closed", timeout=10)
    finally:
        for f in factories:
            assert not f.finalize()


def test_reverse_socks_udp_denied_egress_counted(env, rclient, echo):
    cl, port = rclient()
    cmaddr = metrics_addr(cl)
    with UdpAssoc(("127.0.0.1", port)) as a:
        before = drops(cmaddr, "denied")
        # Link-local: denied unless allow= covers it (it never leaves).
        a.send(("169.254.0.1", 9), b"denied")
        wait_metric(cmaddr, before + 1, "ferry_udp_dropped_total", reason="denied")
        assert a.echo(echo.addr, b"allowed", timeout=10).payload == b"allowed"
        # A reply over udp.max_datagram is dropped and counted here.
        big = UdpEcho("127.0.0.1", extra=1)
        try:
            before = drops(cmaddr, "size")
            a.send(big.addr, payload("r9012", 9012))
            wait_metric(cmaddr, before + 1, "ferry_udp_dropped_total", reason="size")
            assert 9012 in [len(d) for d in big.payloads()]  # it reached the target
            a.expect_nothing()
        finally:
            big.stop()


def test_reverse_socks_udp_tunnel_restart(env, tmp_path, echo):
    """The server goes: the association ends (its control connection
    closes); after the client registered again, a new one works."""
    d = env["dir"]
    factory = FerryFactory(tmp_path)
    sport = free_port()
    (tmp_path / "users.txt").write_text((d / "users.txt").read_text())
    srv = make_server(factory, tmp_path, env["cert"], env["key"], port=sport)
    (tmp_path / "c").mkdir()
    cfactory = FerryFactory(tmp_path / "c")
    try:
        port = free_port()
        cl = cfactory(wait_ready=False, listens=(),
                      raw_config=client_config(env, port, f"https://127.0.0.1:{sport}"))
        cl.wait_log(r"the server listens on", timeout=30)
        a = UdpAssoc(("127.0.0.1", port))
        with a:
            assert a.echo(echo.addr, b"before", timeout=10).payload == b"before"
            mark = len(cl.log_text())
            srv.kill()
            srv.expect_exit = None  # killed on purpose
            a.ctl.settimeout(20)
            assert a.ctl.recv(16) == b""  # the control connection ends
        srv = make_server(factory, tmp_path, env["cert"], env["key"], port=sport)
        cl.wait_log(r"the server listens on", timeout=60, start=mark)
        with UdpAssoc(("127.0.0.1", port)) as b:
            assert b.echo(echo.addr, b"after", timeout=10).payload == b"after"
    finally:
        assert not cfactory.finalize()
        assert not factory.finalize()
