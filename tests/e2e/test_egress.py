# SPDX-License-Identifier: BSD-2-Clause
"""Where bytes leave (issue 15): ip_preference orders or filters the
addresses of a name before a direct dial, and source= / device= on a
listen line bind the outgoing connections of its sessions.

Names come from a fake DNS server on loopback ([dns] servers =); sources
are loopback addresses (127.0.0.2 is on lo like all of 127/8).
"""

from __future__ import annotations

import socket

import pytest

import ferrylib
from dnslib import FakeDns
from ferrylib import REP, EchoServer, echo_roundtrip, run_ferry, same_port_pair, socks_connect
from httplib import HttpUpstream, exchange, request_bytes


@pytest.fixture(scope="module")
def dual():
    """Echo servers on 127.0.0.1:P and [::1]:P, and a DNS server that says
    dual.test is both, v4.test only the first and v6.test only the second."""
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback (::1) on this host")
    holder, port, srv6 = same_port_pair(lambda p: EchoServer("::1", port=p))
    holder.close()
    srv4 = EchoServer("127.0.0.1", port=port)
    dns = FakeDns(records={"dual.test": ["127.0.0.1", "::1"], "v4.test": ["127.0.0.1"],
                           "v6.test": ["::1"]})
    yield port, dns
    dns.stop()
    srv4.stop()
    srv6.stop()


def start(ferry, dns, config: dict | None = None, listen: str | None = None):
    conf = {"workers": "1", "access_log": "yes"}
    conf.update(config or {})
    kw = {}
    if listen:
        conf["listen"] = listen
        kw["listens"] = ()
    return ferry(config=conf, extra=f"[dns]\nservers = {dns.server}\n" if dns else None, **kw)


def dial(f, host: str, port: int, expect=0, proxy=None):
    s, _ = socks_connect(proxy or f.addr, host, port, expect=expect)
    with s:
        if expect == 0:
            echo_roundtrip(s, b"hello")
        client = s.getsockname()
    return f.access_for(client)


@pytest.mark.parametrize(
    "pref,want",
    [("ipv4", "127.0.0.1"), ("ipv4-first", "127.0.0.1"), ("ipv6", "[::1]"), ("ipv6-first", "[::1]")],
)
def test_ip_preference_picks_the_family(ferry, dual, pref, want):
    port, dns = dual
    f = start(ferry, dns, {"ip_preference": pref})
    assert dial(f, "dual.test", port)["addr"] == f"{want}:{port}"


@pytest.mark.parametrize(
    "pref,name,why",
    [("ipv6", "v4.test", "no-ipv6-address"), ("ipv4", "v6.test", "no-ipv4-address")],
)
def test_a_name_without_the_family_is_unreachable(ferry, dual, pref, name, why):
    port, dns = dual
    f = start(ferry, dns, {"ip_preference": pref})
    e = dial(f, name, port, expect=REP["host-unreachable"])
    assert e["end"] == why, e


def test_first_falls_back_to_the_other_family(ferry, dual):
    port, dns = dual
    f = start(ferry, dns, {"ip_preference": "ipv6-first"})
    assert dial(f, "v4.test", port)["addr"] == f"127.0.0.1:{port}"


def test_listener_source_is_where_connections_leave_from(ferry, tcp_server):
    srv = tcp_server(EchoServer, "127.0.0.1")
    f = start(ferry, None, listen="127.0.0.1:0 source=127.0.0.2, 127.0.0.1:0")
    dial(f, "127.0.0.1", srv.port, proxy=f.addrs[0])
    dial(f, "127.0.0.1", srv.port, proxy=f.addrs[1])
    hosts = sorted(h for h, _ in srv.peers)
    assert hosts == ["127.0.0.1", "127.0.0.2"], srv.peers


def test_device_lo(ferry, tcp_server):
    srv = tcp_server(EchoServer, "127.0.0.1")
    f = start(ferry, None, listen="127.0.0.1:0 device=lo source=127.0.0.3")
    dial(f, "localhost", srv.port)
    assert [h for h, _ in srv.peers] == ["127.0.0.3"]


def test_a_source_of_the_other_family_skips_the_address(ferry, dual):
    port, dns = dual
    f = start(ferry, dns, {"log_level": "debug", "ip_preference": "ipv6-first"},
              listen="127.0.0.1:0 source=127.0.0.2")
    assert dial(f, "dual.test", port)["addr"] == f"127.0.0.1:{port}"  # ::1 skipped
    f.wait_log(rf"skipping \[::1\]:{port}: the source 127\.0\.0\.2 is of the other family")
    e = dial(f, "v6.test", port, expect=REP["network-unreachable"])
    assert e["end"] == "source-family-mismatch", e


def test_a_source_not_on_this_host_fails_clearly(ferry, tcp_server):
    srv = tcp_server(EchoServer, "127.0.0.1")
    f = start(ferry, None, listen="127.0.0.1:0 source=192.0.2.7")
    e = dial(f, "127.0.0.1", srv.port, expect=REP["general-failure"])
    assert e["end"] == "source-failed", e
    f.wait_log(r"cannot leave from source 192\.0\.2\.7: bind: Cannot assign requested address")
    assert srv.peers == []


@pytest.mark.parametrize(
    "line,msg",
    [
        ("ip_preference = ipv5", "ip_preference: 'ipv5' is not an IP preference"),
        ("listen = 127.0.0.1:0 source=host.example", "listen: source: 'host.example' is not an IP address"),
        ("listen = 127.0.0.1:0 source=127.0.0.1:80", "listen: source: '127.0.0.1:80' is not an IP address"),
        ("listen = 127.0.0.1:0 device=nosuchdev0", "listen: device: 'nosuchdev0' is not a network interface"),
        ("listen = 127.0.0.1:0 device=much-too-long-a-name", "listen: device: 'much-too-long-a-name' is not an interface name"),
    ],
)
def test_bad_egress_settings_are_config_errors(tmp_path, line, msg):
    cfg = tmp_path / "f.conf"
    cfg.write_text(f"{line}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0, r.text
    assert f"{cfg}:1: {msg}" in r.err, r.text


def test_outbound_source_wins_over_the_listeners(ferry, tcp_server):
    srv = tcp_server(EchoServer, "127.0.0.1")
    other = tcp_server(EchoServer, "127.0.0.1")
    f = ferry(config={"workers": "1", "access_log": "yes", "listen": "127.0.0.1:0 source=127.0.0.2"},
              listens=(),
              extra=f"[rules]\nallow to 127.0.0.1 port {srv.port} via e5\nallow\n\n"
                    "[outbound e5]\nsource = 127.0.0.5\n")
    assert dial(f, "127.0.0.1", srv.port).get("via") == "e5"
    assert dial(f, "localhost", other.port).get("via") == "direct"
    assert [h for h, _ in srv.peers] == ["127.0.0.5"], srv.peers
    assert [h for h, _ in other.peers] == ["127.0.0.2"], other.peers


def test_outbound_ip_preference_and_device(ferry, dual):
    port, dns = dual
    f = ferry(config={"workers": "1", "access_log": "yes", "ip_preference": "ipv4",
                      "outbound": "six"},
              extra=f"[dns]\nservers = {dns.server}\n\n"
                    "[outbound six]\nip_preference = ipv6\ndevice = lo\n")
    assert dial(f, "dual.test", port)["addr"] == f"[::1]:{port}"
    assert dial(f, "v4.test", port, expect=REP["host-unreachable"])["end"] == "no-ipv6-address"


def test_outbound_device_that_does_not_exist_is_a_config_error(tmp_path):
    cfg = tmp_path / "f.conf"
    cfg.write_text("[outbound x]\ndevice = nosuchdev0\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0, r.text
    assert f"{cfg}:2:" in r.err and "nosuchdev0" in r.err, r.text


def test_http_pool_keeps_each_listeners_source(ferry, tcp_server):
    """A pooled origin connection made from one listener's source is not
    reused by a session of a listener that leaves from elsewhere."""
    up = tcp_server(HttpUpstream)
    f = start(ferry, None, listen="127.0.0.1:0, 127.0.0.1:0 source=127.0.0.2")
    req = request_bytes("GET", f"http://127.0.0.1:{up.port}/small", [("Host", f"127.0.0.1:{up.port}")])
    for proxy in (f.addrs[0], f.addrs[0], f.addrs[1], f.addrs[1]):
        r, c = exchange(proxy, req)
        c.close()
        assert r.status == 200
    hosts = [rec.peer[0] for rec in up.requests()]
    assert hosts == ["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"], hosts
    assert up.connections() == 2  # one per way out, each reused once


def test_the_connection_to_a_parent_leaves_from_the_outbounds_source(ferry, tcp_server):
    srv = tcp_server(EchoServer, "127.0.0.1")
    parent = ferry(config={"workers": "1", "access_log": "yes"})
    front = ferry(config={"workers": "1", "outbound": "up", "listen": "127.0.0.1:0 source=127.0.0.2"},
                  listens=(),
                  extra=f"[outbound up]\nurl = socks5://127.0.0.1:{parent.port}\nsource = 127.0.0.6\n")
    s, _ = socks_connect(front.addr, "127.0.0.1", srv.port)
    with s:
        echo_roundtrip(s, b"through the parent")
    parent.wait_log(r"access id=\d+ client=127\.0\.0\.6:\d+ .*cmd=connect")
    assert [h for h, _ in srv.peers] == ["127.0.0.1"]  # the parent's own way out
