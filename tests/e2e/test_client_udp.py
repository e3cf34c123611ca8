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
closes, the next datagram opens a new one), overload isolation (one
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

from certlib import OPENSSL, make_cert, pin_of
from ferrylib import HAVE_IPV6, FerryFactory, passwd_line
from opslib import free_port, metrics_addr, scrape
from test_client import Client
from udplib import UdpAssoc, UdpEcho, payload

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

PASSWORD = "udp-pw"
METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


def start_server(d: Path, factory: FerryFactory, udp: str = "", port: int = 0):
    cert, key = make_cert(d, "server")
    (d / "users.txt").write_text(passwd_line("alice", PASSWORD) + "\n")
    (d / "alice.auth").write_text(f"alice:{PASSWORD}\n")
    srv = factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                  extra=f"[tls]\ncert = {cert}\nkey = {key}\n{METRICS}[udp]\n{udp}")
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

    def __init__(self, server, udp: str = "", name: str = "client"):
        self.port = free_port()
        conf = server["dir"] / f"{name}-{self.port}.conf"
        conf.write_text(f"{METRICS}[udp]\n{udp}")
        super().__init__(server["dir"], [server["url"], "--pin", server["pin"], "--auth-file",
                                         str(server["auth"]), "-c", str(conf),
                                         f"{self.port}:socks"], name)
        self.wait_log(r"ready:")
        m = self.wait_log(r"metrics on http://([0-9.]+):(\d+)/metrics")
        self.maddr = (m.group(1), int(m.group(2)))

    @property
    def proxy(self):
        return ("127.0.0.1", self.port)


@pytest.fixture
def tclient(server):
    started = []

    def start(udp: str = "", srv=None):
        c = TunnelClient(srv or server, udp)
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
