# SPDX-License-Identifier: BSD-2-Clause
"""RFC 1928 edge cases against one ferry instance: malformed greetings and
requests, every reply code that loopback can provoke, split and pipelined
handshakes, the handshake timeout. The last test proves the same instance
still serves normally afterwards (and teardown checks it exits cleanly with
no sanitizer report)."""

import socket
import time
from pathlib import Path

import pytest

import ferrylib
from ferrylib import (
    ATYP_DOMAIN,
    ATYP_V4,
    ATYP_V6,
    CMD_BIND,
    CMD_CONNECT,
    REP,
    echo_roundtrip,
    expect_closed_silently,
    expect_failure,
    greeting,
    open_client,
    read_method,
    read_reply,
    read_until_close,
    recv_exact,
    request,
    socks_connect,
    unused_refused_port,
)

HANDSHAKE_TIMEOUT_S = 1.0
CONNECT_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def proxy(module_ferry):
    return module_ferry(config={
        "handshake_timeout": "1s",
        "connect_timeout": "1s",
    })


def greeted(proxy):
    """A client connection past the method negotiation."""
    s = open_client(proxy.addr)
    s.sendall(greeting())
    assert read_method(s) == 0
    return s


def check_access(proxy, client, **want):
    entry = proxy.access_for(client)
    for k, v in want.items():
        assert entry.get(k) == v, f"access log {k}={entry.get(k)!r}, expected {v!r}: {entry}"
    return entry


# ---- greeting ----------------------------------------------------------------


@pytest.mark.parametrize("methods", [(0x02,), (0x01, 0x02), (0x80, 0xFF)], ids=["userpass", "gssapi+userpass", "private"])
def test_no_acceptable_method(proxy, methods):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(greeting(methods))
        assert recv_exact(s, 2) == b"\x05\xff"
        rest, how = read_until_close(s)
        assert rest == b"" and how == "eof"
    check_access(proxy, client, reply="-", end="no-acceptable-method")


def test_method_none_among_others(proxy, echo_server):
    with open_client(proxy.addr) as s:
        s.sendall(greeting((0x02, 0x01, 0x00, 0x80)))
        assert recv_exact(s, 2) == b"\x05\x00"
        s.sendall(request(*echo_server.addr))
        assert read_reply(s).rep == 0
        echo_roundtrip(s, b"ok")


@pytest.mark.parametrize("first", [b"\x06\x01\x00", b"\x00", b"\xff\x01", b"\x16\x03\x01"],
                         ids=["six", "zero", "ff", "tls"])
def test_first_byte_of_no_protocol_closes_without_reply(proxy, first):
    # 0x05 is SOCKS5, 0x04 SOCKS4 and a letter HTTP; anything else is no
    # protocol ferry speaks (a TLS ClientHello included).
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(first)
        expect_closed_silently(s)
    check_access(proxy, client, reply="-", end="unknown-protocol")


def test_greeting_zero_methods(proxy):
    # NMETHODS = 0 offers nothing, so nothing is acceptable
    with open_client(proxy.addr) as s:
        s.sendall(b"\x05\x00")
        assert recv_exact(s, 2) == b"\x05\xff"
        assert read_until_close(s) == (b"", "eof")


@pytest.mark.parametrize("partial", [b"\x05", b"\x05\x02\x00"], ids=["ver-only", "methods-short"])
def test_truncated_greeting_then_close(proxy, partial):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(partial)
        s.shutdown(socket.SHUT_WR)
        expect_closed_silently(s)
    check_access(proxy, client, reply="-", end="truncated-handshake")


def test_connect_and_close_at_once(proxy):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.shutdown(socket.SHUT_WR)
        assert read_until_close(s) == (b"", "eof")
    check_access(proxy, client, reply="-", end="client-closed")


# ---- request -----------------------------------------------------------------


@pytest.mark.parametrize("partial", [b"\x05", b"\x05\x01\x00", b"\x05\x01\x00\x01\x7f\x00",
                                     b"\x05\x01\x00\x03\x09local", b"\x05\x01\x00\x04" + b"\x00" * 15 + b"\x01\x00"],
                         ids=["ver", "ver-cmd-rsv", "half-ipv4", "half-domain", "ipv6-no-port-lo"])
def test_truncated_request_then_close(proxy, partial):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(partial)
        s.shutdown(socket.SHUT_WR)
        expect_closed_silently(s)
    check_access(proxy, client, reply="-", end="truncated-handshake")


@pytest.mark.parametrize("ver", [4, 0, 6, 0xFF])
def test_request_wrong_version_closes_without_reply(proxy, echo_server, ver):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(*echo_server.addr, ver=ver))
        expect_closed_silently(s)
    check_access(proxy, client, reply="-", end="bad-version")


@pytest.mark.parametrize("rsv", [1, 0x80, 0xFF])
def test_reserved_byte_not_zero(proxy, echo_server, rsv):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(*echo_server.addr, rsv=rsv))
        expect_failure(s, REP["general-failure"])
    check_access(proxy, client, reply="general-failure", end="bad-reserved-byte")


@pytest.mark.parametrize("atyp", [0, 2, 5, 0xFF])
def test_unknown_address_type(proxy, atyp):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(bytes([5, CMD_CONNECT, 0, atyp]) + b"\x7f\x00\x00\x01\x00\x50")
        expect_failure(s, REP["address-type-not-supported"])
    check_access(proxy, client, reply="address-type-not-supported", end="bad-address-type")


def test_unknown_address_type_answered_without_more_bytes(proxy):
    # ATYP is judged as soon as it arrives: no address bytes needed
    s = greeted(proxy)
    with s:
        s.sendall(bytes([5, CMD_CONNECT, 0, 5]))
        expect_failure(s, REP["address-type-not-supported"])


@pytest.mark.parametrize(
    "name",
    [b"", b"bad name", b"bad\x01name", b"tab\there", b"nul\x00byte", b"del\x7f", b"new\nline", b" "],
    ids=["empty", "space", "ctrl-01", "tab", "nul", "del", "newline", "only-space"],
)
def test_bad_domain(proxy, name):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(bytes([5, CMD_CONNECT, 0, ATYP_DOMAIN, len(name)]) + name + b"\x00\x50")
        expect_failure(s, REP["general-failure"])
    check_access(proxy, client, reply="general-failure", end="bad-domain")


@pytest.mark.parametrize("cmd", [CMD_BIND, 9, 0, 0xFF], ids=["bind", "9", "0", "255"])
def test_unsupported_command(proxy, echo_server, cmd):
    # No connection to the destination is made for it. (The echo server
    # sees ferry's source ports, not the client's: comparing with the
    # client's port matched an earlier session's reused port by chance.)
    with echo_server.lock:
        seen = len(echo_server.peers)
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(*echo_server.addr, cmd=cmd))
        expect_failure(s, REP["command-not-supported"])
    check_access(proxy, client, reply="command-not-supported", end="command-not-supported")
    with echo_server.lock:
        assert len(echo_server.peers) == seen, echo_server.peers[seen:]


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connection_refused(proxy, host):
    if ":" in host and not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    holder, port = unused_refused_port(host)
    with holder:
        s = greeted(proxy)
        with s:
            client = s.getsockname()
            s.sendall(request(host, port))
            expect_failure(s, REP["connection-refused"])
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    check_access(proxy, client, reply="connection-refused", end="connect-failed",
                 err="ECONNREFUSED", addr=addr, cmd="connect")


def test_refused_by_name_tries_every_address(proxy):
    # localhost -> 127.0.0.1 then ::1; both refused
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")

    def hold6(port):
        h = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        try:
            h.bind(("::1", port))
        except OSError:
            h.close()
            raise
        return h

    holder4, port, holder6 = ferrylib.same_port_pair(hold6)
    with holder4, holder6:
        s = greeted(proxy)
        with s:
            client = s.getsockname()
            s.sendall(request(b"localhost", port))
            expect_failure(s, REP["connection-refused"])
    check_access(proxy, client, reply="connection-refused", addr=f"[::1]:{port}", dst=f"localhost:{port}")


@pytest.mark.parametrize("name", [b"x.invalid", b"INVALID", b"deep.name.under.invalid."])
def test_unresolvable_name(proxy, name):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(name, 80))
        expect_failure(s, REP["host-unreachable"])
    check_access(proxy, client, reply="host-unreachable", end="resolve-failed", dst=f"{name.decode()}:80")


def test_unresolvable_name_dns_queries(tmp_path):
    """An unresolvable name costs one A and one AAAA query, sent once (with
    a search domain in resolv.conf too: a client's name is looked up as
    given), and a repeat within the negative-cache time costs none. A fake
    DNS server on 127.0.0.1:53 in a private network and mount namespace
    (resolv.conf bind-mounted) counts the questions."""
    why = ferrylib.netns_unavailable("ip link set lo up")
    if why:
        pytest.skip(why)
    names = ["nosuch.example", "nosuch", "nosuch.example", "host.exists.test"]
    res = ferrylib.run_in_netns(Path(__file__).resolve().parent / "dns_netns.py",
                                ["--ferry", ferrylib.ferry_bin(), "--workdir", str(tmp_path),
                                 "--search", "corp.example", *names],
                                timeout=60, what="the DNS scenario", mount=True)
    tail = res.pop("log_tail")
    got = [(n["name"], n["rep"], n["queries"]) for n in res["names"]]
    assert got == [
        ("nosuch.example", REP["host-unreachable"], ["A nosuch.example", "AAAA nosuch.example"]),
        ("nosuch", REP["host-unreachable"], ["A nosuch", "AAAA nosuch"]),
        ("nosuch.example", REP["host-unreachable"], []),  # cached for 5 s
        ("host.exists.test", REP["connection-refused"], ["A host.exists.test", "AAAA host.exists.test"]),
    ], (got, tail)
    assert res["sanitizer"] == [] and res["exit"] == 0, (res, tail)


def long_invalid_name(total=255) -> bytes:
    labels, tail = [], ".invalid"
    while True:
        used = sum(len(l) + 1 for l in labels)
        left = total - used - len(tail)
        if left <= 63:
            labels.append("d" * left)
            break
        labels.append(chr(ord("a") + len(labels)) * 63)
    name = (".".join(labels) + tail).encode()
    assert len(name) == total
    return name


def test_255_byte_domain(proxy):
    name = long_invalid_name(255)
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(name, 443))
        expect_failure(s, REP["host-unreachable"])
    entry = check_access(proxy, client, reply="host-unreachable")
    assert entry["dst"] == f"{name.decode()}:443"


def test_connect_timeout(proxy, blackhole):
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        t0 = time.monotonic()
        s.sendall(request("127.0.0.1", blackhole))
        expect_failure(s, REP["ttl-expired"], timeout=10)
        elapsed = time.monotonic() - t0
    assert CONNECT_TIMEOUT_S * 0.8 <= elapsed <= CONNECT_TIMEOUT_S + 4, f"reply after {elapsed:.2f}s"
    entry = check_access(proxy, client, reply="ttl-expired")
    assert entry["end"] in ("connect-failed", "connect-timeout"), entry


def test_failure_reply_then_close_within_about_a_second(proxy, echo_server):
    # after a failure reply the client keeps its socket open and silent:
    # ferry has shut its side at once and closes the session within ~1 s
    s = greeted(proxy)
    with s:
        client = s.getsockname()
        s.sendall(request(*echo_server.addr, rsv=1))
        r = read_reply(s)
        t0 = time.monotonic()
        assert r.rep == REP["general-failure"]
        proxy.access_for(client, timeout=5)
        elapsed = time.monotonic() - t0
        assert elapsed <= 3.0, f"session closed {elapsed:.2f}s after the failure reply"
        assert read_until_close(s, timeout=1) == (b"", "eof")


def test_failure_reply_survives_client_still_sending(proxy):
    # the client keeps writing after a failure; it must still read the reply
    s = greeted(proxy)
    with s:
        s.sendall(bytes([5, CMD_BIND, 0, ATYP_V4, 127, 0, 0, 1, 0, 80]) + b"junk" * 1000)
        r = read_reply(s)
        assert r.rep == REP["command-not-supported"]
        rest, _ = read_until_close(s)
        assert rest == b""


# ---- split and pipelined handshakes ------------------------------------------


def send_bytewise(s, data, pause=0.01):
    for i in range(len(data)):
        s.sendall(data[i:i + 1])
        time.sleep(pause)


@pytest.mark.parametrize("kind", ["ipv4", "domain", "ipv6"])
def test_handshake_one_byte_at_a_time(proxy, request, kind):
    if kind == "ipv6":
        echo = request.getfixturevalue("echo_server6")
        req = ferrylib.request("::1", echo.port)
    else:
        echo = request.getfixturevalue("echo_server")
        req = ferrylib.request(b"localhost" if kind == "domain" else "127.0.0.1", echo.port)
    with open_client(proxy.addr) as s:
        send_bytewise(s, greeting((0x02, 0x00)))
        assert recv_exact(s, 2) == b"\x05\x00"
        send_bytewise(s, req)
        r = read_reply(s)
        assert r.rep == 0
        assert echo.saw_peer(r.host, r.port)
        echo_roundtrip(s, b"after a slow handshake")


def test_greeting_request_and_payload_in_one_write(proxy, echo_server):
    payload = b"pipelined payload " * 100
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(greeting() + request(*echo_server.addr) + payload)
        assert recv_exact(s, 2) == b"\x05\x00"
        r = read_reply(s)
        assert r.rep == 0 and r.atyp == ATYP_V4
        assert recv_exact(s, len(payload)) == payload
        s.shutdown(socket.SHUT_WR)
        assert read_until_close(s) == (b"", "eof")
    check_access(proxy, client, reply="succeeded", end="done", up=str(len(payload)), down=str(len(payload)))


def test_greeting_and_request_in_one_write_domain(proxy, echo_server):
    with open_client(proxy.addr) as s:
        s.sendall(greeting() + request(b"localhost", echo_server.port) + b"ping")
        assert recv_exact(s, 2) == b"\x05\x00"
        assert read_reply(s).rep == 0
        assert recv_exact(s, 4) == b"ping"


def test_bad_request_pipelined_behind_greeting(proxy):
    with open_client(proxy.addr) as s:
        s.sendall(greeting() + bytes([5, CMD_BIND, 0, ATYP_V6]) + b"\x00" * 15 + b"\x01\x00\x35")
        assert recv_exact(s, 2) == b"\x05\x00"
        expect_failure(s, REP["command-not-supported"])


# ---- handshake timeout -------------------------------------------------------


@pytest.mark.parametrize(
    "sent,method_reply",
    [(b"", False), (b"\x05\x01", False), (b"\x05\x01\x00\x05\x01\x00\x01\x7f", True)],
    ids=["silent", "half-greeting", "half-request"],
)
def test_handshake_timeout(proxy, sent, method_reply):
    with open_client(proxy.addr, timeout=10) as s:
        client = s.getsockname()
        t0 = time.monotonic()
        if sent:
            s.sendall(sent)
        if method_reply:
            assert recv_exact(s, 2) == b"\x05\x00"
        rest, how = read_until_close(s, timeout=10)
        elapsed = time.monotonic() - t0
    assert rest == b""
    assert HANDSHAKE_TIMEOUT_S * 0.8 <= elapsed <= 5.0, f"closed after {elapsed:.2f}s"
    check_access(proxy, client, reply="-", end="handshake-timeout")


# ---- and after all that ------------------------------------------------------


def test_zz_normal_request_still_works(proxy, echo_server):
    assert proxy.alive(), "ferry died during the protocol-error tests"
    for host in ("127.0.0.1", b"localhost"):
        s, r = socks_connect(proxy.addr, host, echo_server.port)
        with s:
            echo_roundtrip(s, b"business as usual")
            assert echo_server.saw_peer(r.host, r.port)
    text = proxy.log_text()
    assert "AddressSanitizer" not in text and "runtime error:" not in text
