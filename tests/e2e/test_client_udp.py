# SPDX-License-Identifier: BSD-2-Clause
"""UDP through ferry client's tunnel (issue 18, the forward half): a SOCKS5
UDP ASSOCIATE at a `PORT:socks` remote, each destination one CONNECT-UDP
stream (RFC 9298) on the client's HTTP/2 connection to a real `ferry
serve`. Covers echo integrity on 127.0.0.1 and ::1, a name resolved at the
server, many destinations per association, datagram sizes 0, 1, 1200,
9012 and 9013 (dropped and counted) and 65507 with the limit raised at
both ends, the association limit (the 101st ASSOCIATE refused, the first
100 still echo) and the destination limit (the 101st destination dropped
and counted, the first 100 echo), the idle expiry (0.5 s: the stream
closes, the next datagram opens a new one), the association's rules
(FRAG != 0 and other source ports dropped, its streams closed with its
control connection), overload isolation (one
association floods while another pings every 10 ms: the pinger loses
nothing; its RTTs are reported), and a tunnel restart (associations end,
new ones work after the reconnect)."""

import os
import re
import socket
import statistics
import threading
import time
from pathlib import Path

import pytest

from certlib import OPENSSL, pin_of
from ferrylib import HAVE_IPV6, FerryFactory
from opslib import free_port, metrics_addr, scrape
from clientlib import Client, server_files
from udplib import UdpAssoc, UdpEcho, encode_udp, payload

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

PASSWORD = "udp-pw"
METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


def srv_extra(d: Path, udp: str = "") -> str:
    return f"[tls]\ncert = {d / 'server.pem'}\nkey = {d / 'server.key'}\n{METRICS}[udp]\n{udp}"


def start_server(d: Path, factory: FerryFactory, udp: str = "", port: int = 0):
    cert, key = server_files(d, password=PASSWORD)
    assert (cert, key) == (d / "server.pem", d / "server.key")
    srv = factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                  extra=srv_extra(d, udp))
    return srv, pin_of(cert)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("client_udp")
    factory = FerryFactory(d)
    srv, pin = start_server(d, factory)
    yield {"dir": d, "srv": srv, "pin": pin, "url": f"https://127.0.0.1:{srv.port}",
           "auth": d / "alice.auth"}
    findings = factory.finalize()
    assert not findings, findings


class TunnelClient(Client):
    """A ferry client with a socks remote and [udp]/[metrics] settings."""

    def __init__(self, server, udp: str = "", name: str = "client", host: str = "127.0.0.1"):
        self.host = host
        self.port = free_port(host)
        conf = server["dir"] / f"{name}-{self.port}.conf"
        conf.write_text(f"{METRICS}[udp]\n{udp}")
        super().__init__(server["dir"], [server["url"], "--pin", server["pin"], "--auth-file",
                                         str(server["auth"]), "-c", str(conf),
                                         f"[{host}]:{self.port}:socks" if ":" in host
                                         else f"{self.port}:socks"], name)
        self.wait_log(r"ready:")
        m = self.wait_log(r"metrics on http://([0-9.]+):(\d+)/metrics")
        self.maddr = (m.group(1), int(m.group(2)))

    @property
    def proxy(self):
        return (self.host, self.port)


@pytest.fixture
def tclient(server):
    started = []

    def start(udp: str = "", srv=None, host="127.0.0.1"):
        c = TunnelClient(srv or server, udp, host=host)
        started.append(c)
        return c

    yield start
    for c in started:
        c.stop()


@pytest.fixture
def echo():
    made = []

    def make(host="127.0.0.1"):
        e = UdpEcho(host)
        made.append(e)
        return e

    yield make
    for e in made:
        e.stop()


def metric(maddr, name, **labels) -> float:
    return scrape(maddr).get(name, **labels)


def wait_metric(maddr, name, want, timeout=10.0, **labels) -> float:
    deadline = time.monotonic() + timeout
    while True:
        v = metric(maddr, name, **labels)
        if v >= want or time.monotonic() >= deadline:
            return v
        time.sleep(0.05)


def server_maddr(server):
    return metrics_addr(server["srv"])


# ---- echo ---------------------------------------------------------------------------


def test_echo_ipv4_sizes_and_drops(server, tclient, echo):
    c = tclient()
    e = echo()
    smaddr = server_maddr(server)
    s_size0 = metric(smaddr, "ferry_udp_dropped_total", reason="size")
    with UdpAssoc(c.proxy) as a:
        for size in (0, 1, 1200, 9012):
            m = a.echo(e.addr, payload(f"s{size}", size), timeout=10)
            assert (m.host, m.port) == e.addr and len(m.payload) == size
        size0 = metric(c.maddr, "ferry_udp_dropped_total", reason="size")
        a.send(e.addr, payload("big", 9013))
        a.expect_nothing(0.5)
        assert wait_metric(c.maddr, "ferry_udp_dropped_total", size0 + 1, reason="size") == size0 + 1
        # The association goes on after the drop; boundaries stay exact.
        # (16 at once: udp.tunnel_queue's default)
        for i in range(16):
            a.send(e.addr, payload(f"n{i}", i * 50))
        got = sorted(len(a.recv(5).payload) for _ in range(16))
        assert got == [i * 50 for i in range(16)]
    assert metric(c.maddr, "ferry_udp_tunnel_flows_total") >= 1
    assert metric(c.maddr, "ferry_udp_datagrams_total", direction="up") >= 20
    assert metric(smaddr, "ferry_udp_datagrams_total", direction="down") >= 20
    assert metric(smaddr, "ferry_udp_dropped_total", reason="size") == s_size0


def test_steady_echoes_take_the_libraries_blocks_from_the_cache(server, tclient, echo):
    """OpenSSL's per-record and nghttp2's per-frame blocks come from the
    workers' block caches: in steady state both ends hit, libc is missed
    at most now and then (issue 18: 0 allocations per datagram)."""
    c = tclient()
    e = echo()
    ends = {"client": c.maddr, "server": server_maddr(server)}

    def counts():
        return {k: (metric(m, "ferry_block_cache_total", result="hit"),
                    metric(m, "ferry_block_cache_total", result="miss")) for k, m in ends.items()}

    with UdpAssoc(c.proxy) as a:
        for i in range(50):  # warm-up: the stream, the caches
            a.echo(e.addr, payload(f"w{i}", 1200), timeout=10)
        before = counts()
        for i in range(300):
            a.echo(e.addr, payload(f"s{i}", 1200), timeout=10)
        after = counts()
    for k in ends:
        hits, misses = (after[k][j] - before[k][j] for j in (0, 1))
        assert hits >= 300, (k, before[k], after[k])
        assert misses * 20 <= hits, (k, before[k], after[k])


class MultiEcho:
    """n UDP echoes on 127.0.0.1 (one port each) served by one thread."""

    def __init__(self, n: int):
        import selectors
        self.sel = selectors.DefaultSelector()
        self.socks = []
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ)
            self.socks.append(s)
        self.addrs = [s.getsockname() for s in self.socks]
        self.stopping = threading.Event()
        self.seen = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            for key, _ in self.sel.select(0.05):
                try:
                    data, peer = key.fileobj.recvfrom(65535)
                    self.seen += 1
                    key.fileobj.sendto(data, peer)
                except OSError:
                    pass

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def test_the_association_behaves_as_the_direct_relay(server, tclient, echo):
    """FRAG != 0 dropped, only the client's first port admitted, and the
    streams go with the control connection."""
    c = tclient()
    e = echo()
    a = UdpAssoc(c.proxy)
    try:
        a.echo(e.addr, b"first", timeout=10)
        frag0 = metric(c.maddr, "ferry_udp_dropped_total", reason="fragment")
        src0 = metric(c.maddr, "ferry_udp_dropped_total", reason="source")
        a.send(e.addr, b"fragment", frag=1)
        other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        other.bind(("127.0.0.1", 0))
        a.send_raw(encode_udp(e.addr[0], e.addr[1], b"stranger"), sock=other)
        other.close()
        a.expect_nothing(0.5)
        assert wait_metric(c.maddr, "ferry_udp_dropped_total", frag0 + 1, reason="fragment") == frag0 + 1
        assert wait_metric(c.maddr, "ferry_udp_dropped_total", src0 + 1, reason="source") == src0 + 1
        assert e.payloads() == [b"first"]
        assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 1
        a.close_control()
        deadline = time.monotonic() + 5
        while metric(c.maddr, "ferry_udp_tunnel_flows_active") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 0
        assert metric(c.maddr, "ferry_udp_associations_active") == 0
    finally:
        a.close()


@pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback")
def test_echo_ipv6_and_a_name_resolved_at_the_server(server, tclient, echo):
    c = tclient()
    e6, e4 = echo("::1"), echo("127.0.0.1")
    with UdpAssoc(c.proxy) as a:
        m = a.echo(e6.addr, payload("six", 1200), timeout=10)
        assert (m.host, m.port) == e6.addr
        # A name travels as a name: the server resolves it; the reply names it.
        m = a.echo(("localhost", e4.port), payload("name", 300), timeout=10)
        assert m.host == "localhost" and m.port == e4.port
    assert e6.count() == 1 and e4.count() == 1


def test_many_destinations_and_the_destination_limit(server, tclient):
    c = tclient()
    me = MultiEcho(101)
    try:
        with UdpAssoc(c.proxy) as a:
            for i, addr in enumerate(me.addrs[:100]):
                a.echo(addr, payload(f"d{i}", 64), timeout=10)
            assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 100
            base = metric(c.maddr, "ferry_udp_dropped_total", reason="destinations")
            a.send(me.addrs[100], payload("over", 64))
            a.expect_nothing(0.5)
            assert wait_metric(c.maddr, "ferry_udp_dropped_total", base + 1,
                               reason="destinations") == base + 1
            # The first 100 keep working.
            for i, addr in enumerate(me.addrs[:100]):
                a.echo(addr, payload(f"again{i}", 64), timeout=10)
        assert me.seen == 200
    finally:
        me.stop()


def test_association_limit(server, tclient, echo):
    c = tclient("associations = 100\n")
    e = echo()
    held = []
    try:
        for _ in range(100):
            held.append(UdpAssoc(c.proxy))
        with pytest.raises(AssertionError, match="UDP ASSOCIATE reply"):
            UdpAssoc(c.proxy)
        for i, a in enumerate(held):
            a.echo(e.addr, payload(f"a{i}", 32), timeout=10)
        assert metric(c.maddr, "ferry_udp_associations_rejected_total") == 1
    finally:
        for a in held:
            a.close()


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("client_udp_big")
    factory = FerryFactory(d)
    srv, pin = start_server(d, factory, "max_datagram = 65507\n")
    yield {"dir": d, "srv": srv, "pin": pin, "url": f"https://127.0.0.1:{srv.port}",
           "auth": d / "alice.auth"}
    assert not factory.finalize()


@pytest.mark.skipif(not HAVE_IPV6, reason="no IPv6 loopback")
def test_largest_datagram_with_the_limit_raised(big_server, tclient, echo):
    # 65,507 bytes of payload and a 10-byte SOCKS header fit a UDP datagram
    # over IPv6 only (65,527 bytes), so the application talks to ::1.
    c = tclient("max_datagram = 65507\n", srv=big_server, host="::1")
    e = echo()
    with UdpAssoc(c.proxy) as a:
        for size in (9013, 65507):
            m = a.echo(e.addr, payload(f"L{size}", size), timeout=10)
            assert len(m.payload) == size


def test_oversized_dropped_and_counted_at_either_end(server, big_server, tclient):
    """The client's limit raised, the server's not: 9,013 bytes up are
    dropped at the server. The server's raised, the client's not: a 9,013
    byte reply is dropped at the client. Each end counts its own."""
    e = UdpEcho("127.0.0.1", extra=13)
    try:
        up = tclient("max_datagram = 65507\n")
        smaddr = server_maddr(server)
        s0 = metric(smaddr, "ferry_udp_dropped_total", reason="size")
        with UdpAssoc(up.proxy) as a:
            a.send(e.addr, payload("ok", 100))
            assert len(a.recv(10).payload) == 113
            a.send(e.addr, payload("big", 9013))
            a.expect_nothing(0.5)
        assert wait_metric(smaddr, "ferry_udp_dropped_total", s0 + 1, reason="size") == s0 + 1
        down = tclient(srv=big_server)
        with UdpAssoc(down.proxy) as a:
            a.send(e.addr, payload("ok", 100))
            assert len(a.recv(10).payload) == 113
            c0 = metric(down.maddr, "ferry_udp_dropped_total", reason="size")
            a.send(e.addr, payload("reply", 9000))  # the reply: 9,013 bytes
            a.expect_nothing(0.5)
            assert wait_metric(down.maddr, "ferry_udp_dropped_total", c0 + 1,
                               reason="size") == c0 + 1
    finally:
        e.stop()


def test_idle_expiry_closes_the_stream_and_a_datagram_reopens_it(server, tclient, echo):
    c = tclient("idle = 500ms\n")
    e = echo()
    with UdpAssoc(c.proxy) as a:
        a.echo(e.addr, payload("first", 10), timeout=10)
        assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 1
        opened = metric(c.maddr, "ferry_udp_tunnel_flows_total")
        deadline = time.monotonic() + 5
        while metric(c.maddr, "ferry_udp_tunnel_flows_active") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 0
        a.echo(e.addr, payload("second", 10), timeout=10)
        assert metric(c.maddr, "ferry_udp_tunnel_flows_total") == opened + 1
        assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 1


def test_the_server_ending_a_stream_closes_the_flow_and_the_next_datagram_reopens(tmp_path, tclient,
                                                                                 echo):
    """The server's udp.idle is shorter than the client's: its END_STREAM
    closes the flow at the client, and the next datagram goes on a new
    stream without being lost."""
    factory = FerryFactory(tmp_path)
    srv, pin = start_server(tmp_path, factory, "idle = 500ms\n")
    s = {"dir": tmp_path, "srv": srv, "pin": pin, "url": f"https://127.0.0.1:{srv.port}",
         "auth": tmp_path / "alice.auth"}
    try:
        c = tclient(srv=s)
        e = echo()
        with UdpAssoc(c.proxy) as a:
            a.echo(e.addr, b"one", timeout=10)
            deadline = time.monotonic() + 5
            while metric(c.maddr, "ferry_udp_tunnel_flows_active") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert metric(c.maddr, "ferry_udp_tunnel_flows_active") == 0
            a.echo(e.addr, b"two", timeout=10)
            assert metric(c.maddr, "ferry_udp_tunnel_flows_total") == 2
        c.stop()
    finally:
        srv.stop()
        assert not factory.finalize()


def test_a_flood_does_not_cost_another_association_a_datagram(server, tclient, echo, record_property):
    """One association floods (bounded: 1.5 s or 20,000 datagrams) while
    another pings every 10 ms: every ping comes back. The RTTs are
    reported (record_property), not asserted tightly: the machine is
    shared."""
    c = tclient()
    ef, ep = echo(), echo()
    flooder, pinger = UdpAssoc(c.proxy), UdpAssoc(c.proxy)
    try:
        flooder.echo(ef.addr, b"warm", timeout=10)

        def rtts(n):
            out = []
            for i in range(n):
                t = time.monotonic()
                pinger.echo(ep.addr, payload(f"p{i}-", 64), timeout=5)
                out.append(time.monotonic() - t)
                time.sleep(max(0.0, 0.01 - (time.monotonic() - t)))
            return out

        idle = rtts(50)
        stop = threading.Event()
        sent = [0]

        def flood():
            blob = payload("f", 1200)
            hdr_dest = ef.addr
            deadline = time.monotonic() + 1.5
            while not stop.is_set() and sent[0] < 20000 and time.monotonic() < deadline:
                try:
                    flooder.send(hdr_dest, blob)
                except OSError:
                    pass
                sent[0] += 1

        t = threading.Thread(target=flood, daemon=True)
        t.start()
        loaded = rtts(100)
        stop.set()
        t.join(10)
        flooder.drain()
        # The flooder recovers once the flood stops.
        flooder.echo(ef.addr, b"after", timeout=10)
        p95 = lambda v: sorted(v)[int(len(v) * 0.95) - 1]
        record_property("idle_p95_ms", round(p95(idle) * 1000, 2))
        record_property("loaded_p95_ms", round(p95(loaded) * 1000, 2))
        record_property("flood_sent", sent[0])
        print(f"ping p95 idle {p95(idle)*1000:.2f} ms, under flood {p95(loaded)*1000:.2f} ms, "
              f"flood {sent[0]} datagrams, queue drops "
              f"{metric(c.maddr, 'ferry_udp_dropped_total', reason='queue')}")
        assert len(loaded) == 100  # every ping came back (echo() raises otherwise)
        # Loose on purpose (a shared, loaded machine): the 3x, or 1 s.
        assert p95(loaded) <= max(3 * p95(idle), 1.0)
    finally:
        flooder.close()
        pinger.close()


def test_tunnel_restart_ends_associations_and_new_ones_work(tmp_path, tclient, echo):
    factory = FerryFactory(tmp_path)
    port = free_port()
    srv, pin = start_server(tmp_path, factory, port=port)
    s = {"dir": tmp_path, "srv": srv, "pin": pin, "url": f"https://127.0.0.1:{port}",
         "auth": tmp_path / "alice.auth"}
    c = tclient(srv=s)
    e = echo()
    a = UdpAssoc(c.proxy)
    try:
        a.echo(e.addr, b"before", timeout=10)
        srv.stop()
        # The association ends: its control connection closes.
        a.ctl.settimeout(15)
        assert a.ctl.recv(1) == b""
        srv2 = factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                       extra=srv_extra(tmp_path))
        with UdpAssoc(c.proxy) as b:
            b.echo(e.addr, b"after", timeout=30)
        srv2.stop()
    finally:
        a.close()
        assert not factory.finalize()


# ---- UDP port forwards ------------------------------------------------------------------


def test_udp_port_forward_one_association_per_source(server, echo):
    e = echo()
    port = free_port()
    conf = server["dir"] / f"fwd-{port}.conf"
    conf.write_text(f"{METRICS}[udp]\nidle = 500ms\n")
    c = Client(server["dir"], [server["url"], "--pin", server["pin"], "--auth-file",
                               str(server["auth"]), "-c", str(conf),
                               f"{port}:127.0.0.1:{e.port}/udp"], "fwd")
    try:
        c.wait_log(r"ready:")
        m = c.wait_log(r"metrics on http://([0-9.]+):(\d+)/metrics")
        maddr = (m.group(1), int(m.group(2)))
        socks_ = []
        for i in range(3):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.settimeout(10)
            socks_.append(s)
        for i, s in enumerate(socks_):
            for size in (0, 1, 1200, 9012):
                data = payload(f"f{i}-{size}", size)
                s.sendto(data, ("127.0.0.1", port))
                got, src = s.recvfrom(65535)
                assert got == data and src == ("127.0.0.1", port)
        assert len(e.sources()) == 3  # one association (one server socket) per source
        assert metric(maddr, "ferry_udp_tunnel_flows_active") == 3
        # Idle per source: all three go; a datagram opens a new one.
        deadline = time.monotonic() + 5
        while metric(maddr, "ferry_udp_tunnel_flows_active") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert metric(maddr, "ferry_udp_tunnel_flows_active") == 0
        socks_[0].sendto(b"again", ("127.0.0.1", port))
        assert socks_[0].recvfrom(65535)[0] == b"again"
        for s in socks_:
            s.close()
    finally:
        c.stop()
