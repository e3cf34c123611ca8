# SPDX-License-Identifier: BSD-2-Clause
"""The PROXY protocol on a listener (listen = ADDR:PORT proxy_protocol=v1|v2,
proxy_protocol_from = CIDRs): behind a real HAProxy (send-proxy-v2 and
send-proxy) the rules and the access log see the original client address;
with headers written by hand: untrusted peers, missing, split, LOCAL,
IPv4-mapped, malformed and late headers, data right behind the header, and
limits.per_ip applied to the address in the header; configuration errors.
"""

from __future__ import annotations

import socket
import time

import pytest

from ferrylib import (
    REP,
    echo_roundtrip,
    greeting,
    handshake,
    read_method,
    read_reply,
    request,
    run_ferry,
    socks_connect,
)
from opslib import (
    metrics_addr,
    proxy_v1,
    proxy_v2,
    proxy_v2_local,
    scrape,
    wait_until,
)
from haproxylib import haproxy as run_haproxy
from haproxylib import need_haproxy
from policylib import closed_without_reply, connect_raw

V2, V1 = 0, 1  # index of the listener in the configurations below

PP_LISTEN = "127.0.0.1:0 proxy_protocol=v2, 127.0.0.1:0 proxy_protocol=v1"


def client_from(addr, source: str | None = None, timeout: float = 5.0) -> socket.socket:
    s = socket.create_connection(addr, timeout=timeout, source_address=(source, 0) if source else None)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


def socks_after_header(addr, header: bytes, dst, source: str | None = None, split: bool = False,
                       one_send: bool = False) -> socket.socket:
    """Connect, send header (byte by byte when split; together with the
    greeting and the request when one_send), then a SOCKS5 CONNECT to dst
    that must succeed. Returns the relaying socket."""
    s = client_from(addr, source)
    try:
        if one_send:
            s.sendall(header + greeting() + request(*dst))
            assert read_method(s) == 0
        else:
            if split:
                for i in range(len(header)):
                    s.send(header[i : i + 1])
                    time.sleep(0.002)  # separate segments, most of the time
            else:
                s.sendall(header)
            handshake(s)
            s.sendall(request(*dst))
        r = read_reply(s)
        assert r.rep == 0, f"reply {r.rep:#x}"
    except BaseException:
        s.close()
        raise
    return s


def finish(s: socket.socket):
    """Half-close and read the echo server's close: the session ends cleanly
    (and is logged) before the test looks at the access log."""
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    while s.recv(65536):
        pass
    s.close()


def refused(s: socket.socket) -> bool:
    return closed_without_reply(s, timeout=5)


# ---- behind HAProxy ------------------------------------------------------------------

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


@pytest.fixture(scope="module")
def behind_haproxy(module_ferry, tmp_path_factory):
    """ferry with a v2 and a v1 listener trusting 127.0.0.1, rules that allow
    127.0.0.2 only; HAProxy in front of each listener."""
    need_haproxy()
    f = module_ferry(
        config={"listen": PP_LISTEN, "proxy_protocol_from": "127.0.0.1", "access_log": "yes"},
        listens=(),
        extra="[rules]\nallow from 127.0.0.2\ndeny\n",
    )
    assert len(f.listeners) == 2, f.listeners

    def render(ports):
        return HAPROXY_CFG.format(fe2=ports[0], fe1=ports[1], be2=f.listeners[V2].port, be1=f.listeners[V1].port)

    with run_haproxy(tmp_path_factory.mktemp("haproxy"), render, fronts=2) as (_, (fe2, fe1)):
        f.fronts = {"v2": ("127.0.0.1", fe2), "v1": ("127.0.0.1", fe1)}
        yield f


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_haproxy_rules_see_original_client(behind_haproxy, echo_server, version):
    f = behind_haproxy
    front = f.fronts[version]
    # allowed: the client's address is 127.0.0.2, HAProxy's is 127.0.0.1
    s = client_from(front, source="127.0.0.2")
    with s:
        client = s.getsockname()
        handshake(s)
        s.sendall(request(*echo_server.addr))
        r = read_reply(s)
        assert r.rep == 0, f"reply {r.rep:#x} for 127.0.0.2 through HAProxy ({version})"
        echo_roundtrip(s, b"through haproxy " * 100)
        finish(s)
    e = f.access_for(client)
    assert e["client"] == f"127.0.0.2:{client[1]}" and e["reply"] == "succeeded", e
    # denied: 127.0.0.3 falls through to "deny"
    s = client_from(front, source="127.0.0.3")
    with s:
        client = s.getsockname()
        handshake(s)
        s.sendall(request(*echo_server.addr))
        r = read_reply(s)
        assert r.rep == REP["not-allowed"], f"reply {r.rep:#x} for 127.0.0.3 through HAProxy ({version})"
    e = f.access_for(client)
    assert e["client"] == f"127.0.0.3:{client[1]}" and e["reply"] == "not-allowed", e
    assert e.get("rule", "").endswith(f":{_line_of(f, 'deny')}"), e


def _line_of(f, text: str) -> int:
    lines = f.config_path.read_text().splitlines()
    hits = [i + 1 for i, l in enumerate(lines) if l.strip() == text]
    assert len(hits) == 1, (text, hits)
    return hits[0]


# ---- headers written by hand -----------------------------------------------------------


@pytest.fixture(scope="module")
def pp(module_ferry):
    """v2 and v1 listeners trusting 127.0.0.1/32 and 127.0.0.6, per_ip = 1,
    handshake_timeout = 1s, metrics on."""
    f = module_ferry(
        config={
            "listen": PP_LISTEN,
            "proxy_protocol_from": "127.0.0.1/32, 127.0.0.6",
            "access_log": "yes",
            "handshake_timeout": "1s",
        },
        listens=(),
        extra="[limits]\nper_ip = 1\n\n[metrics]\nlisten = 127.0.0.1:0\n",
    )
    assert len(f.listeners) == 2, f.listeners
    f.maddr = metrics_addr(f)
    return f


def pp_rejected(f) -> float:
    return scrape(f.maddr).get("ferry_connections_rejected_total", reason="proxy_protocol")


def wait_rejected(f, before: float, n: int = 1):
    wait_until(lambda: pp_rejected(f) - before == n, 5, f"{n} more proxy_protocol rejections")


def test_untrusted_peer_is_refused(ferry, echo_server):
    """A fresh instance (one worker): its warning is not rate-limited away."""
    f = ferry(
        config={"listen": "127.0.0.1:0 proxy_protocol=v2", "proxy_protocol_from": "127.0.0.1", "workers": "1"},
        listens=(),
        extra="[metrics]\nlisten = 127.0.0.1:0\n",
    )
    maddr = metrics_addr(f)
    s = client_from(f.addr, source="127.0.0.5")
    with s:
        port = s.getsockname()[1]
        s.sendall(proxy_v2("198.51.100.1", 1234, "127.0.0.1", f.port) + greeting())
        assert refused(s)
    f.wait_log(rf"warn +proxy_protocol: connection from 127\.0\.0\.5:{port} refused: not in proxy_protocol_from")
    wait_until(lambda: scrape(maddr).get("ferry_connections_rejected_total", reason="proxy_protocol") == 1, 5,
               "rejected{reason=proxy_protocol} = 1")
    # a trusted peer on the same listener is served
    s = socks_after_header(f.addr, proxy_v2("198.51.100.2", 2345, "127.0.0.1", f.port), echo_server.addr)
    with s:
        echo_roundtrip(s, b"trusted")
        finish(s)
    assert f.access_for(("198.51.100.2", 2345))["reply"] == "succeeded"


def test_second_trusted_range(pp, echo_server):
    s = socks_after_header(pp.listeners[V1].addr, proxy_v1("198.51.100.66", 6666, "127.0.0.1", 1080),
                           echo_server.addr, source="127.0.0.6")
    with s:
        echo_roundtrip(s, b"from the second trusted address")
        finish(s)
    assert pp.access_for(("198.51.100.66", 6666))["reply"] == "succeeded"


@pytest.mark.parametrize("idx", [V2, V1], ids=["v2", "v1"])
def test_missing_header_is_refused(pp, idx):
    before = pp_rejected(pp)
    s = client_from(pp.listeners[idx].addr)
    with s:
        s.sendall(greeting())
        assert refused(s), "a SOCKS5 greeting was taken for a PROXY header"
    wait_rejected(pp, before)


def test_v1_header_split_byte_by_byte(pp, echo_server):
    hdr = proxy_v1("192.0.2.11", 40001, "127.0.0.1", pp.listeners[V1].port)
    s = socks_after_header(pp.listeners[V1].addr, hdr, echo_server.addr, split=True)
    with s:
        echo_roundtrip(s, b"after a split header")
        finish(s)
    e = pp.access_for(("192.0.2.11", 40001))
    assert e["reply"] == "succeeded" and e["up"] == e["down"] == "20", e


def test_v2_header_split_byte_by_byte(pp, echo_server):
    hdr = proxy_v2("192.0.2.12", 40002, "127.0.0.1", pp.listeners[V2].port, tlvs=b"\x04\x00\x03abc")
    s = socks_after_header(pp.listeners[V2].addr, hdr, echo_server.addr, split=True)
    with s:
        echo_roundtrip(s, b"after a split v2 header with a TLV")
        finish(s)
    assert pp.access_for(("192.0.2.12", 40002))["reply"] == "succeeded"


def test_v2_local_keeps_the_peer_address(pp, echo_server):
    s = socks_after_header(pp.listeners[V2].addr, proxy_v2_local(), echo_server.addr)
    with s:
        me = s.getsockname()
        echo_roundtrip(s, b"health check style")
        finish(s)
    assert pp.access_for(me)["client"] == f"127.0.0.1:{me[1]}"


def test_v1_unknown_keeps_the_peer_address(pp, echo_server):
    s = socks_after_header(pp.listeners[V1].addr, b"PROXY UNKNOWN whatever follows\r\n", echo_server.addr)
    with s:
        me = s.getsockname()
        echo_roundtrip(s, b"unknown")
        finish(s)
    assert pp.access_for(me)["reply"] == "succeeded"


def test_v2_ipv4_mapped_address_becomes_ipv4(pp, echo_server):
    hdr = proxy_v2("::ffff:203.0.113.9", 40009, "::ffff:127.0.0.1", pp.listeners[V2].port)
    s = socks_after_header(pp.listeners[V2].addr, hdr, echo_server.addr)
    with s:
        echo_roundtrip(s, b"mapped")
        finish(s)
    assert pp.access_for(("203.0.113.9", 40009))["reply"] == "succeeded"


@pytest.mark.parametrize("idx", [V2, V1], ids=["v2", "v1"])
def test_data_right_behind_the_header(pp, echo_server, idx):
    port = 41000 + idx
    lis = pp.listeners[idx]
    # One client address per variant: with per_ip = 1, the v2 session may
    # not be released yet when the v1 one arrives from the same address.
    src = f"192.0.2.{20 + idx}"
    hdr = (proxy_v2 if idx == V2 else proxy_v1)(src, port, "127.0.0.1", lis.port)
    s = socks_after_header(lis.addr, hdr, echo_server.addr, one_send=True)
    with s:
        echo_roundtrip(s, b"one segment: header, greeting, request")
        finish(s)
    assert pp.access_for((src, port))["reply"] == "succeeded"


MALFORMED = {
    "v1-bad-address": (V1, b"PROXY TCP4 256.1.1.1 127.0.0.1 1111 1080\r\n"),
    "v1-missing-port": (V1, b"PROXY TCP4 192.0.2.1 127.0.0.1 1111\r\n"),
    "v1-two-spaces": (V1, b"PROXY  TCP4 192.0.2.1 127.0.0.1 1111 1080\r\n"),
    "v1-lf-only": (V1, b"PROXY TCP4 192.0.2.1 127.0.0.1 1111 1080\n"),
    "v1-too-long": (V1, b"PROXY UNKNOWN " + b"x" * 200),
    "v1-lowercase": (V1, b"proxy TCP4 192.0.2.1 127.0.0.1 1111 1080\r\n"),
    "v2-version-1": (V2, proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)[:12] + b"\x11"
                     + proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)[13:]),
    "v2-udp": (V2, proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)[:13] + b"\x12"
               + proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)[14:]),
    "v2-short-address-block": (V2, proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)[:14] + b"\x00\x04" + b"\x00" * 4),
    "v2-bad-signature": (V2, b"\r\n\r\n\x00\r\nQUIT\r" + b"\x21\x11\x00\x0c" + b"\x00" * 12),
    "v1-on-v2-listener": (V2, b"PROXY TCP4 192.0.2.1 127.0.0.1 1111 1080\r\n"),
    "v2-on-v1-listener": (V1, proxy_v2("192.0.2.1", 1, "127.0.0.1", 2)),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_header_is_refused(pp, name):
    idx, hdr = MALFORMED[name]
    before = pp_rejected(pp)
    s = client_from(pp.listeners[idx].addr)
    with s:
        s.sendall(hdr + greeting())
        assert refused(s), f"{name}: not refused"
    wait_rejected(pp, before)


@pytest.mark.parametrize("partial", [b"", b"\r\n\r\n\x00\r\n"], ids=["nothing", "part-of-signature"])
def test_no_header_within_handshake_timeout(pp, partial):
    before = pp_rejected(pp)
    s = client_from(pp.listeners[V2].addr)
    with s:
        if partial:
            s.sendall(partial)
        t0 = time.monotonic()
        assert refused(s)  # within 5 s; handshake_timeout is 1 s
        assert time.monotonic() - t0 > 0.5, "closed long before handshake_timeout"
    wait_rejected(pp, before)


def test_per_ip_applies_to_the_header_address(pp, echo_server):
    lis = pp.listeners[V2]
    x, y = "203.0.113.1", "203.0.113.2"
    before = scrape(pp.maddr).get("ferry_connections_rejected_total", reason="per_ip")
    first = socks_after_header(lis.addr, proxy_v2(x, 50001, "127.0.0.1", lis.port), echo_server.addr)
    with first:
        echo_roundtrip(first, b"X holds its one connection")
        # a second one from X is closed (the peer is 127.0.0.1 both times)
        s = connect_raw(lis.addr)
        if s is not None:
            with s:
                try:
                    s.sendall(proxy_v2(x, 50002, "127.0.0.1", lis.port) + greeting())
                except (ConnectionResetError, BrokenPipeError):
                    pass
                else:
                    assert refused(s), "a second connection from X was served"
        wait_until(lambda: scrape(pp.maddr).get("ferry_connections_rejected_total", reason="per_ip") - before == 1,
                   5, "rejected{reason=per_ip} + 1")
        # Y is another client
        other = socks_after_header(lis.addr, proxy_v2(y, 50003, "127.0.0.1", lis.port), echo_server.addr)
        with other:
            echo_roundtrip(other, b"Y is fine")
            finish(other)
        echo_roundtrip(first, b"X's first connection is unharmed")
        finish(first)

    # X's slot is released when its session ends
    def again():
        try:
            s = socks_after_header(lis.addr, proxy_v2(x, 50004, "127.0.0.1", lis.port), echo_server.addr)
        except (AssertionError, OSError):
            return False
        with s:
            echo_roundtrip(s, b"X again")
            finish(s)
        return True

    wait_until(again, 5, "X admitted again after its session ended", interval=0.1)
    assert pp.access_for((y, 50003))["reply"] == "succeeded"


# ---- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,line,msg",
    [
        ("proxy_protocol_from = 127.0.0.1\nlisten = 127.0.0.1:1080 proxy_protocol=v3\n", 2,
         "listen: 'v3' is not a PROXY protocol version"),
        ("workers = 1\nlisten = 127.0.0.1:1080 proxy_protocol=v2\n", 2,
         "listen: proxy_protocol=v2 needs proxy_protocol_from"),
        ("listen = 127.0.0.1:1080 proxy_protocol=v1\nproxy_protocol_from = 10.0.0.0/33\n", 2,
         "proxy_protocol_from: '10.0.0.0/33' is not an address or range"),
    ],
    ids=["v3", "no-proxy_protocol_from", "bad-cidr"],
)
def test_check_errors(tmp_path, text, line, msg):
    conf = tmp_path / "pp.conf"
    conf.write_text(text)
    r = run_ferry(["serve", "-c", str(conf), "--check"])
    assert r.rc == 1, r.text
    assert f"{conf}:{line}: {msg}" in r.err, r.text


def test_check_proxy_protocol_ok(tmp_path):
    conf = tmp_path / "pp.conf"
    conf.write_text("listen = 127.0.0.1:1080 proxy_protocol=v2, 127.0.0.1:1081\n"
                    "proxy_protocol_from = 127.0.0.1, 10.0.0.0/8, ::1\n")
    r = run_ferry(["serve", "-c", str(conf), "--check"])
    assert r.rc == 0, r.text


def test_plain_listener_next_to_a_proxy_protocol_one(ferry, echo_server):
    """Only the listener with proxy_protocol expects a header."""
    f = ferry(config={"listen": "127.0.0.1:0 proxy_protocol=v1, 127.0.0.1:0", "proxy_protocol_from": "127.0.0.1"},
              listens=())
    s, _ = socks_connect(f.listeners[1].addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"plain")
    s = socks_after_header(f.listeners[0].addr, proxy_v1("192.0.2.99", 999, "127.0.0.1", 1), echo_server.addr)
    with s:
        echo_roundtrip(s, b"with header")
        finish(s)
