# SPDX-License-Identifier: BSD-2-Clause
"""Edge routes with captures (docs/edge.md "Routes"): a pattern's '*'
labels fill a backend name that ferry resolves at connect time (a fake DNS
server here, names to 127.0.0.2 and 127.0.0.3 on one port) or an address
template; a name that does not resolve and an expansion over 255 bytes are
closed; metrics carry the configured pattern only. rewrite= puts another
host in the Minecraft handshake the backend sees, keeping the Forge or
forwarding suffix after it, and forward_suffix = strip takes the suffix
off; both are refused on a TLS edge, naming the line.
"""

from __future__ import annotations

import re
import signal
import socket
import struct

import pytest

from dnslib import FakeDns
from edgelib import IO, Recorder, client_hello, closed, exchange, hostport, mc_handshake, mc_login, route_one
from ferrylib import run_ferry
from opslib import metrics_addr, scrape


def two_backends():
    """Recorders on 127.0.0.2 and 127.0.0.3, one port for both."""
    for _ in range(20):
        a = Recorder("A", host="127.0.0.2")
        try:
            return a, Recorder("B", host="127.0.0.3", port=a.addr[1])
        except OSError:
            a.close()
    pytest.skip("no port free on both 127.0.0.2 and 127.0.0.3")


@pytest.fixture
def pair():
    a, b = two_backends()
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def dns():
    d = FakeDns(records={"alpha.backends.test": ["127.0.0.2"], "beta.backends.test": ["127.0.0.3"]})
    yield d
    d.stop()


def test_captures_choose_the_backend(ferry, pair, dns):
    A, B = pair
    port = A.addr[1]
    conf = (
        "workers = 1\nconnect_timeout = 3s\n[metrics]\nlisten = 127.0.0.1:0\n"
        f"[dns]\nservers = {dns.server}\nhosts = none\ntimeout = 1s\ntries = 1\n"
        "[edge games]\nlisten = 127.0.0.1:0\nsniff = auto\n"
        f"route = *.mc.test -> {{1}}.backends.test:{port}\n"
        f"route = *.ip.test -> 127.0.0.{{1}}:{port}\n"
        f"route = *.*.two.test -> {{2}}.backends.test:{port}\n"
        f"route = *.long.test -> {{1}}.{{1}}.{{1}}.{{1}}.backends.test:{port}\n"
    )
    f = ferry(raw_config=conf)
    addr = f.addrs[1]
    route_one(addr, [mc_handshake("alpha.mc.test") + mc_login()], A)
    route_one(addr, [mc_handshake("Beta.MC.test.")], B)
    route_one(addr, [client_hello("beta.mc.test")], B)  # SNI: the same captures
    route_one(addr, [mc_handshake("2.ip.test")], A)
    route_one(addr, [mc_handshake("3.ip.test")], B)
    route_one(addr, [mc_handshake("lobby.alpha.two.test")], A)
    f.wait_log(r"cmd=EDGE .* route=\*\.mc\.test host=beta\.mc\.test backend=beta\.backends\.test:\d+ sniff=tls")
    # A capture whose name does not resolve, and one too long to be a name.
    assert closed(addr, [mc_handshake("gamma.mc.test")])
    f.wait_log(r"cmd=EDGE .*end=resolve-failed .*route=\*\.mc\.test host=gamma\.mc\.test")
    assert closed(addr, [mc_handshake("a" * 60 + ".long.test")])
    f.wait_log(r"cmd=EDGE .*end=backend-name-invalid .*route=\*\.long\.test")
    assert dns.count("A", "gamma.backends.test") >= 1
    # Labels are the configured patterns, never what the client sent.
    m = scrape(metrics_addr(f))
    assert m.get("ferry_edge_sessions_total", edge="games", route="*.mc.test", result="ok") == 3
    assert m.get("ferry_edge_sessions_total", edge="games", route="*.mc.test",
                 result="backend-unreachable") == 1
    labels = {v for smp in m.samples if smp.name.startswith("ferry_edge") for v in smp.labels.values()}
    assert not {v for v in labels if "alpha" in v or "beta" in v or "gamma" in v}


def test_names_that_do_not_resolve_feed_the_bans(ferry, pair, dns):
    A, _ = pair
    conf = (
        "workers = 1\nconnect_timeout = 3s\n"
        f"[dns]\nservers = {dns.server}\nhosts = none\ntimeout = 1s\ntries = 1\n"
        "[edge games]\nlisten = 127.0.0.1:0\nsniff = mc\nban_after = 2\nban_time = 60s\n"
        f"route = *.mc.test -> {{1}}.backends.test:{A.addr[1]}\n"
    )
    f = ferry(raw_config=conf)
    addr = f.addrs[1]
    route_one(addr, [mc_handshake("alpha.mc.test")], A)
    assert closed(addr, [mc_handshake("probe1.mc.test")])
    assert closed(addr, [mc_handshake("probe2.mc.test")])
    f.wait_log(r"edge games: 127\.0\.0\.1 banned for 60 s after 2 failures .*resolve-failed")
    assert closed(addr, [mc_handshake("alpha.mc.test")])  # banned now, even for a good name


def read_varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            return v, i


def handshake_fields(b: bytes) -> tuple[bytes, int, int, int, bytes]:
    """(address, protocol, port, intent, what follows) of a handshake."""
    n, i = read_varint(b, 0)
    end = i + n
    assert b[i] == 0
    proto, i = read_varint(b, i + 1)
    alen, i = read_varint(b, i)
    a = b[i:i + alen]
    port = struct.unpack(">H", b[i + alen:i + alen + 2])[0]
    intent, j = read_varint(b, i + alen + 2)
    assert j == end
    return a, proto, port, intent, b[end:]


def seen(addr, backend: Recorder, host: str, tail: bytes = b"") -> tuple:
    n = len(backend.received) + 1
    line, s = exchange(addr, [mc_handshake(host, port=25570) + tail])
    assert line == backend.name.encode() + b"\n"
    s.shutdown(socket.SHUT_WR)
    got = backend.wait_count(n)
    s.close()
    return handshake_fields(got)


def test_rewrite_and_forward_suffix(ferry):
    A, B = Recorder("A"), Recorder("B")
    try:
        a, b = hostport(A.addr), hostport(B.addr)
        conf = (
            "workers = 1\n[edge games]\nlisten = 127.0.0.1:0\nsniff = mc\n"
            f"route = *.mc.test -> {a} rewrite={{1}}.internal.example\n"
            f"route = short.test -> {a} rewrite=s.test\n"
            f"route = strip.test -> {b} forward_suffix=strip\n"
            f"route = keep.test -> {b}\n"
        )
        f = ferry(raw_config=conf)
        addr = f.addrs[1]
        login = mc_login("Steve")
        # The host rewritten (longer), the Forge marker kept, Login Start unchanged.
        got = seen(addr, A, "Alpha.MC.test\0FML2\0", login)
        assert got == (b"alpha.internal.example\0FML2\0", 765, 25570, 2, login)
        # Shorter, with BungeeCord forwarding data kept.
        fwd = "\0" + "127.0.0.9" + "\0" + "0" * 32
        assert seen(addr, A, "short.test" + fwd)[0] == b"s.test" + fwd.encode()
        # forward_suffix: a route strips (the host as sent), another keeps.
        assert seen(addr, B, "Strip.test\0FML3\0", login) == (b"Strip.test", 765, 25570, 2, login)
        assert seen(addr, B, "keep.test\0FORGE")[0] == b"keep.test\0FORGE"
        # A TLS-less Minecraft edge: the section's default, and a route's own.
        f.config_path.write_text(conf.replace("[edge games]\n", "[edge games]\nforward_suffix = strip\n")
                                 .replace(f"route = keep.test -> {b}", f"route = keep.test -> {b} forward_suffix=keep"))
        off = f.log_offset()
        f.send_signal(signal.SIGHUP)
        f.wait_log(r"reload: configuration applied", start=off)
        assert seen(addr, B, "keep.test\0FML2\0")[0] == b"keep.test\0FML2\0"
        assert seen(addr, A, "x.mc.test\0FML2\0")[0] == b"x.internal.example"
    finally:
        A.close()
        B.close()


@pytest.mark.parametrize(
    "body, want",
    [
        ("[edge g]\nlisten = 127.0.0.1:0\nsniff = tls\nroute = a.b -> 127.0.0.1:1 rewrite=c.d\n",
         r"x\.conf:6: edge g: route: rewrite= needs a Minecraft handshake .* cannot be rewritten without terminating TLS"),
        ("[edge g]\nlisten = 127.0.0.1:0\nsniff = tls\nforward_suffix = strip\nroute = a.b -> 127.0.0.1:1\n",
         r"x\.conf:6: edge g: forward_suffix: needs a Minecraft handshake"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = *.b -> {2}.c:1\n",
         r"x\.conf:5: edge g: route: '\{2\}\.c:1' uses a capture the route's host does not have \(it has 1"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = *.b -> 127.0.0.1:1 rewrite={2}.c\n",
         r"x\.conf:5: edge g: route: 'rewrite=\{2\}\.c' is not a route option"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = a*.b -> 127.0.0.1:1\n",
         r"x\.conf:5: edge g: route: 'a\*\.b' is not a host name or pattern"),
        ("[edge g]\nlisten = 127.0.0.1:0\nforward_suffix = maybe\nroute = a.b -> 127.0.0.1:1\n",
         r"x\.conf:5: edge g: forward_suffix: 'maybe' is not valid \(expected keep or strip\)"),
        ("[edge g]\nlisten = 127.0.0.1:0\nroute = *.b -> {1}.c:1\nunknown = *.b\n",
         r"edge g: unknown: route \*\.b fills a backend or rewrite= from captures"),
    ],
)
def test_config_errors(tmp_path, body, want):
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n\n" + body)
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0
    assert re.search(want, r.text), r.text
