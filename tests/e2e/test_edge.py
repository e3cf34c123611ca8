# SPDX-License-Identifier: BSD-2-Clause
"""Edge mode ([edge NAME] sections, docs/edge.md): routing by the host of a
Minecraft handshake (vanilla and Forge) and by TLS SNI (a python ssl
ClientHello in one write, in two writes, and re-framed into two TLS records
with the SNI in the second); lossless replay to the backend, with a PROXY v2
header naming the real client when configured; wildcard routes; unknown
hosts (closed, or sent to the unknown route); garbage first bytes; the
first-byte and hello deadlines; the half-open cap; the per-source rate;
SIGHUP with an open session; configuration errors with FILE:LINE; metrics;
the strategies and an unreachable backend.

Backends are small recording TCP servers on loopback: each answers its name
and a newline at once, then keeps every byte it receives until the client
shuts its side.
"""

from __future__ import annotations

import re
import signal
import socket
import struct
import time

import pytest

from edgelib import (
    IO,
    Recorder,
    client_hello,
    closed,
    exchange,
    hostport,
    legacy16_ping,
    mc_handshake,
    mc_login,
    route_one,
    two_records,
)
from ferrylib import run_ferry
from opslib import metrics_addr, scrape, validate_exposition, wait_until

METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


@pytest.fixture
def backends():
    made = {n: Recorder(n) for n in ("A", "B", "C", "D")}
    yield made
    for r in made.values():
        r.close()


def edge_conf(backends, extra: str = "", top: str = "") -> str:
    a, b, c = (hostport(backends[n].addr) for n in "ABC")
    return (
        "workers = 2\nconnect_timeout = 3s\nshutdown_timeout = 2s\nhandshake_timeout = 3s\n"
        + top
        + "\n[edge games]\nlisten = 127.0.0.1:0\nsniff = auto\n"
        f"route = a.mc.test -> {a}\n"
        f"route = *.example.com -> {b}\n"
        f"route = tls.test -> {c}\n"
        f"route = deep.b.example.com -> {a}\n" + extra
    )


def start(ferry, conf: str, **kw):
    f = ferry(raw_config=conf, **kw)
    return f, f.addrs[1]  # [0] is the proxy listener of -l, [1] the edge's


# ---- routing -----------------------------------------------------------------


def test_route_by_minecraft_host_and_sni(ferry, backends):
    f, addr = start(ferry, edge_conf(backends, top=METRICS))
    A, B, C = backends["A"], backends["B"], backends["C"]
    # Minecraft: vanilla (with Login Start in the same write), Forge suffix, mixed case
    # and the trailing dot of an SRV target, split in two writes.
    route_one(addr, [mc_handshake("a.mc.test") + mc_login()], A, tail=b"\x01\x02 later bytes")
    route_one(addr, [mc_handshake("a.mc.test\0FML2\0")], A)
    hs = mc_handshake("A.MC.Test.", intent=1)
    route_one(addr, [hs[:7], hs[7:]], A)
    ping = legacy16_ping("a.mc.test")
    route_one(addr, [ping[:2], ping[2:]], A)  # FE 01, then the rest: not a bare 1.4 ping
    # TLS: one write, two writes, two records with the SNI in the second.
    hello = client_hello("tls.test")
    route_one(addr, [hello], C)
    route_one(addr, [hello[:100], hello[100:]], C)
    route_one(addr, [two_records(hello)], C)
    rec2 = two_records(client_hello("tls.test"))
    route_one(addr, [rec2[:30], rec2[30:60], rec2[60:]], C)
    # Wildcards: any name under example.com (not example.com itself); the
    # longest match wins, an exact route beats a wildcard.
    route_one(addr, [client_hello("www.example.com")], B)
    route_one(addr, [mc_handshake("x.y.example.com")], B)
    route_one(addr, [mc_handshake("deep.b.example.com")], A)
    assert closed(addr, [mc_handshake("example.com")])

    f.wait_log(r"cmd=EDGE .*end=.* edge=games route=tls\.test host=tls\.test backend=127\.0\.0\.1:\d+ sniff=tls")
    f.wait_log(r"cmd=EDGE .* route=a\.mc\.test host=a\.mc\.test backend=.* sniff=mc")
    f.wait_log(r"cmd=EDGE .*end=unknown-host edge=games route=- host=example\.com")
    m = scrape(metrics_addr(f))
    assert validate_exposition(m.text) == []
    assert m.get("ferry_edge_sessions_total", edge="games", route="tls.test", result="ok") == 4
    assert m.get("ferry_edge_sessions_total", edge="games", route="*.example.com", result="ok") == 2
    assert m.get("ferry_edge_rejects_total", edge="games", reason="unknown-host") == 1
    # Client-supplied names never become labels.
    labels = {v for smp in m.samples if smp.name.startswith("ferry_edge") for v in smp.labels.values()}
    assert not labels & {"example.com", "www.example.com", "x.y.example.com"}


def test_proxy_v2_to_backend(ferry, backends):
    C = backends["C"]
    f, addr = start(ferry, edge_conf(backends, f"proxy_protocol = v2\nroute = plain.test -> {hostport(C.addr)} proxy_protocol=off\n"))
    A = backends["A"]
    route_one(addr, [mc_handshake("plain.test")], C)  # a route may turn it off
    hs = mc_handshake("a.mc.test") + mc_login()
    line, s = exchange(addr, [hs])
    assert line == b"A\n"
    s.shutdown(socket.SHUT_WR)
    got = A.wait_count(1)
    sig = b"\r\n\r\n\x00\r\nQUIT\n"
    assert got.startswith(sig) and got[12] == 0x21 and got[13] == 0x11  # PROXY, TCP over IPv4
    ln = struct.unpack(">H", got[14:16])[0]
    src, dst = socket.inet_ntoa(got[16:20]), socket.inet_ntoa(got[20:24])
    sport, dport = struct.unpack(">HH", got[24:28])
    assert (src, sport) == s.getsockname()[:2]
    assert (dst, dport) == addr
    assert got[16 + ln :] == hs  # then every byte, unchanged
    s.close()


def test_unknown_goes_to_the_unknown_route(ferry, backends):
    f, addr = start(ferry, edge_conf(backends, "unknown = tls.test\n"))
    route_one(addr, [mc_handshake("nobody.test")], backends["C"])
    route_one(addr, [client_hello("nobody.test")], backends["C"])


def test_garbage_and_deadlines(ferry, backends):
    conf = edge_conf(backends, "first_byte_timeout = 500ms\nhello_timeout = 1s\n", top=METRICS)
    f, addr = start(ferry, conf)
    assert closed(addr, [b"GET / HTTP/1.1\r\nHost: a.mc.test\r\n\r\n"])
    f.wait_log(r"cmd=EDGE .*end=sniff-error:mc-packet-id")
    assert closed(addr, [b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00"])
    f.wait_log(r"cmd=EDGE .*end=sniff-error:tls-handshake")
    t0 = time.monotonic()
    assert closed(addr, [])  # silent: the first-byte deadline
    f.wait_log(r"cmd=EDGE .*end=first-byte-timeout")
    assert closed(addr, [mc_handshake("a.mc.test")[:5]])  # a byte, then not the rest
    f.wait_log(r"cmd=EDGE .*end=hello-timeout")
    assert time.monotonic() - t0 < 4 * IO
    # A bare legacy ping (FE 01, then silence) has no host: unknown.
    assert closed(addr, [b"\xfe\x01"])
    f.wait_log(r"cmd=EDGE .*end=unknown-host")
    m = scrape(metrics_addr(f))
    for reason in ("sniff-error", "first-byte-timeout", "hello-timeout"):
        assert m.get("ferry_edge_rejects_total", edge="games", reason=reason) >= 1, reason
    assert all(not r.received for r in backends.values())


def test_halfopen_cap(ferry, backends):
    cap, silent = 20, 500
    conf = edge_conf(
        backends,
        f"max_halfopen = {cap}\nper_source_connections = 0\nfirst_byte_timeout = 30s\nhello_timeout = 30s\n",
        top=METRICS,
    )
    f, addr = start(ferry, conf)
    maddr = metrics_addr(f)
    socks = []
    try:
        for _ in range(silent):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            try:
                s.connect(addr)
            except ConnectionResetError:
                pass
        wait_until(
            lambda: scrape(maddr).get("ferry_edge_rejects_total", edge="games", reason="halfopen") >= silent - cap,
            10, "the connections over the cap refused",
        )
        m = scrape(maddr)
        assert m.get("ferry_edge_halfopen", edge="games") == cap
        # While the cap is full, a real client is refused too.
        assert closed(addr, [mc_handshake("a.mc.test")])
    finally:
        for s in socks:
            s.close()
    wait_until(lambda: scrape(maddr).get("ferry_edge_halfopen", edge="games") == 0, 10, "half-open drained")
    route_one(addr, [mc_handshake("a.mc.test")], backends["A"])


def test_per_source_rate(ferry, backends):
    conf = edge_conf(backends, "per_source_rate = 1\nper_source_burst = 3\n", top=METRICS)
    f, addr = start(ferry, conf)
    results = []
    t0 = time.monotonic()
    for _ in range(10):
        line, s = exchange(addr, [mc_handshake("a.mc.test")], source="127.0.0.2")
        results.append(line)
        s.close()
    # The burst, plus one a second while the loop ran (a slow machine refills more).
    allowed = 3 + int(time.monotonic() - t0) + 1
    assert results.count(b"A\n") <= allowed and results.count(b"") >= 10 - allowed, results
    assert results.count(b"") >= 1
    # Another source is served meanwhile.
    line, s = exchange(addr, [mc_handshake("a.mc.test")], source="127.0.0.3")
    assert line == b"A\n"
    s.close()
    assert scrape(metrics_addr(f)).get("ferry_edge_rejects_total", edge="games", reason="rate") == results.count(b"")
    # Refusals at accept get a throttled warning, not an access line each.
    f.wait_log(r"edge games: connection from 127\.0\.0\.2:\d+ refused \(rate\)")
    wait_until(lambda: sum(e.get("client", "").startswith("127.0.0.2:") for e in f.access_entries())
               == results.count(b"A\n"), IO, "an access line for each connection served")


def test_sighup_changes_routes_open_sessions_continue(ferry, backends):
    A, B, D = backends["A"], backends["B"], backends["D"]
    f, addr = start(ferry, edge_conf(backends))
    line, held = exchange(addr, [mc_handshake("a.mc.test")])
    assert line == b"A\n"
    conf = f.config_path.read_text().replace(
        f"route = a.mc.test -> {hostport(A.addr)}", f"route = a.mc.test -> {hostport(D.addr)}"
    )
    off = f.log_offset()
    f.config_path.write_text(conf)
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    route_one(addr, [mc_handshake("a.mc.test")], D)
    held.sendall(b"after the reload")
    held.shutdown(socket.SHUT_WR)
    assert A.wait_count(1) == mc_handshake("a.mc.test") + b"after the reload"
    held.close()
    assert not B.received


@pytest.mark.parametrize(
    "body, want",
    [
        ("[edge g]\nlisten = 127.0.0.1:0\nstrategy = random\nroute = a.b -> 127.0.0.1:1\n",
         r"x\.conf:5: edge g: strategy: 'random' is not valid"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = a.b -> nowhere\n",
         r"x\.conf:5: edge g: route: 'nowhere' is not an address or a name with its port"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = a.b -> 127.0.0.1:1\nroute = A.B. -> 127.0.0.1:2\n",
         r"x\.conf:6: edge g: route: a second route for a\.b \(first on line 5\)"),
        ("route = a.b -> 127.0.0.1:1\n[edge g]\nlisten = 127.0.0.1:0\n",
         r"x\.conf:3: route: unknown key"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = a.b -> 127.0.0.1:1\nunknown = c.d\n",
         r"x\.conf:3: edge g: unknown: 'c\.d' is not a route's host"),
        ("[edge g]\nroute = a_b -> 127.0.0.1:1\n", r"x\.conf:4: edge g: route: 'a_b' is not a host name"),
    ],
)
def test_config_errors(tmp_path, body, want):
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n\n" + body)
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0
    assert re.search(want, r.text), r.text


def test_strategies_and_unreachable_backend(ferry, backends):
    A, B = backends["A"], backends["B"]
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    d = hostport(dead.getsockname())
    a, b = hostport(A.addr), hostport(B.addr)
    conf = edge_conf(
        backends,
        f"route = rr.test -> {a}, {b}\n"
        f"route = lc.test -> {a}, {b} strategy=least-connections\n"
        f"route = fh.test -> {d}, {a} strategy=first-healthy\n"
        f"route = dead.test -> {d}\n",
        top=METRICS,
    )
    f, addr = start(ferry, conf)
    try:
        # round-robin: in turn
        got = []
        for _ in range(4):
            line, s = exchange(addr, [mc_handshake("rr.test")])
            got.append(line)
            s.close()
        assert sorted(got) == [b"A\n", b"A\n", b"B\n", b"B\n"] and got[0] != got[1], got
        # least-connections: one held on a backend, the next goes to the other
        first, held = exchange(addr, [mc_handshake("lc.test")])
        second, s = exchange(addr, [mc_handshake("lc.test")])
        assert {first, second} == {b"A\n", b"B\n"}
        held.close()
        s.close()
        # an unreachable backend: closed, counted; first-healthy then skips it
        assert closed(addr, [mc_handshake("dead.test")])
        f.wait_log(r"cmd=EDGE .*end=backend-unreachable .*route=dead\.test")
        assert closed(addr, [mc_handshake("fh.test")])
        line, s = exchange(addr, [mc_handshake("fh.test")])
        assert line == b"A\n"
        s.close()
        m = scrape(metrics_addr(f))
        assert m.get("ferry_edge_sessions_total", edge="games", route="dead.test", result="backend-unreachable") == 1
        assert m.get("ferry_edge_sessions_total", edge="games", route="fh.test", result="backend-unreachable") == 1
        assert m.get("ferry_edge_sessions_total", edge="games", route="fh.test", result="ok") == 1
    finally:
        dead.close()
