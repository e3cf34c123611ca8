# SPDX-License-Identifier: BSD-2-Clause
"""SOCKS4/4a and BIND (SOCKS5 and SOCKS4) on ferry's mixed port, end to end.

SOCKS4: curl --socks4/--socks4a, raw CONNECTs to 127.0.0.1 and to
localhost, every refusal (refused port, unresolvable name, bad fields,
unknown command, authentication configured), USERID in the access log.
BIND: off by default (SOCKS5 0x07, SOCKS4 0x5B); on, the two replies, the
named peer's address and port, data both ways, a peer from another address
refused while the session keeps waiting, the bind_timeout failure reply,
and a client that leaves while waiting. BIND naming a host by name
(SOCKS5 domain, SOCKS4a): resolved, only its addresses the rules allow may
connect back; an unresolvable name is host unreachable. BIND naming
0.0.0.0 or ::: the destination of the client's primary session (its most
recent CONNECT through this ferry, from the same address) is expected,
also when the CONNECT and the BIND land on different workers; without one
the request is refused.
"""

import os
import re
import socket
import struct
import time

import pytest

import ferrylib
from ferrylib import (
    ATYP_V4,
    ATYP_V6,
    CMD_BIND,
    REP,
    expect_failure,
    greeting,
    handshake,
    open_client,
    read_method,
    read_reply,
    read_until_close,
    recv_exact,
    request,
    unused_refused_port,
)
from httplib import run_curl
from policylib import rule_ref, rules_text

GRANTED, REJECTED = 0x5A, 0x5B
BIND_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def proxy(module_ferry):
    return module_ferry(config={"handshake_timeout": "2s", "connect_timeout": "1s"})


@pytest.fixture(scope="module")
def bind_proxy(module_ferry):
    listens = ["127.0.0.1:0"] + (["[::1]:0"] if ferrylib.HAVE_IPV6 else [])
    return module_ferry(config={"bind": "yes", "bind_timeout": "10s"}, listens=listens)


@pytest.fixture(scope="module")
def bind_quick(module_ferry):
    return module_ferry(config={"bind": "yes", "bind_timeout": f"{BIND_TIMEOUT_S:g}s"})


@pytest.fixture(scope="module")
def bind_workers(module_ferry):
    """Four workers: a client's CONNECT and its BIND (from other source
    ports) are spread over them by SO_REUSEPORT."""
    return module_ferry(config={"bind": "yes", "bind_timeout": "10s", "workers": "4"})


@pytest.fixture(scope="module")
def bind_rules(module_ferry):
    """BIND may not expect a host on 127/8, nor ::1 on port 2222."""
    rules = ["deny to 127.0.0.0/8 cmd bind", "deny to ::1 port 2222 cmd bind"]
    f = module_ferry(config={"bind": "yes", "bind_timeout": "10s"}, extra=rules_text(rules))
    f.rules = rules
    return f


def need_loopback(*hosts: str):
    """Skip unless each loopback address can be a source here."""
    for h in hosts:
        try:
            with socket.socket() as probe:
                probe.bind((h, 0))
        except OSError:
            pytest.skip(f"{h} cannot be bound here")


# ---- a raw SOCKS4 client ---------------------------------------------------------


def socks4(cmd: int, port: int, ip: str = "127.0.0.1", user: bytes = b"", host: bytes | None = None) -> bytes:
    """VER CMD DSTPORT DSTIP USERID NUL [HOSTNAME NUL]; host makes it 4a
    (DSTIP 0.0.0.1)."""
    if host is not None:
        ip = "0.0.0.1"
    msg = bytes([4, cmd]) + struct.pack(">H", port) + socket.inet_aton(ip) + user + b"\0"
    if host is not None:
        msg += host + b"\0"
    return msg


def read4(sock: socket.socket, timeout: float = ferrylib.IO_TIMEOUT) -> tuple[int, int, str]:
    """A SOCKS4 reply: (CD, port, ip). VN must be 0."""
    r = recv_exact(sock, 8, timeout)
    assert r[0] == 0, f"reply VN {r[0]}: {r!r}"
    return r[1], struct.unpack(">H", r[2:4])[0], socket.inet_ntoa(r[4:8])


def expect_rejected4(sock: socket.socket, timeout: float = ferrylib.IO_TIMEOUT):
    """0x5B, then EOF with nothing after it."""
    cd, _, _ = read4(sock, timeout)
    assert cd == REJECTED, f"reply {cd:#x}, expected 0x5b"
    rest, how = read_until_close(sock, timeout)
    assert rest == b"", f"bytes after the rejection: {rest[:64]!r}"
    assert how == "eof", "ferry reset the connection after a rejection instead of closing it"


def check_access(proxy, client, **want):
    entry = proxy.access_for(client)
    for k, v in want.items():
        assert entry.get(k) == v, f"access log {k}={entry.get(k)!r}, expected {v!r}: {entry}"
    return entry


# ---- SOCKS4 with real clients -----------------------------------------------------------


@pytest.mark.parametrize("name", ["small.txt", "big.bin"])
@pytest.mark.parametrize("mode,url_host", [("--socks4", "127.0.0.1"), ("--socks4a", "localhost")],
                         ids=["socks4", "socks4a"])
def test_curl(proxy, http_server, tmp_path, mode, url_host, name):
    out = tmp_path / name
    start = proxy.log_offset()
    r = run_curl(["--fail", mode, f"127.0.0.1:{proxy.port}", "-o", str(out),
                  http_server.url(name, host=url_host)])
    assert r.returncode == 0, f"curl: rc={r.returncode} {r.stderr.decode(errors='replace')}"
    assert ferrylib.sha256(out.read_bytes()) == http_server.files[name]
    proxy.wait_log(rf"access .* cmd=connect dst={url_host}:{http_server.port} .*reply=succeeded end=done",
                   start=start)


# ---- raw SOCKS4 ------------------------------------------------------------------------


def test_connect_ipv4_with_userid(proxy, echo_server):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(1, echo_server.port, user=b"carol"))
        cd, port, ip = read4(s)
        assert cd == GRANTED
        # DSTPORT/DSTIP: where ferry's connection to the target comes from
        assert ip == "127.0.0.1" and port != 0 and echo_server.saw_peer(ip, port)
        ferrylib.echo_roundtrip(s, os.urandom(100_000))
        s.shutdown(socket.SHUT_WR)
        assert read_until_close(s) == (b"", "eof")
    check_access(proxy, client, user="carol", cmd="connect", reply="succeeded", end="done",
                 dst=f"127.0.0.1:{echo_server.port}")


def test_userid_logged_safely(proxy, echo_server):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(1, echo_server.port, user=b"a b\x01c\x7f"))
        assert read4(s)[0] == GRANTED
    check_access(proxy, client, user="a?b?c?")


def test_connect_4a_localhost(proxy, echo_server):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(1, echo_server.port, user=b"dave", host=b"localhost"))
        cd, _, _ = read4(s)
        assert cd == GRANTED
        ferrylib.echo_roundtrip(s, b"hello over 4a")
    check_access(proxy, client, user="dave", cmd="connect", reply="succeeded",
                 dst=f"localhost:{echo_server.port}")


def test_connect_with_data_behind_the_request(proxy, echo_server):
    with open_client(proxy.addr) as s:
        s.sendall(socks4(1, echo_server.port, host=b"127.0.0.1") + b"pipelined")
        assert read4(s)[0] == GRANTED
        assert recv_exact(s, 9) == b"pipelined"


def test_connect_split_byte_by_byte(proxy, echo_server):
    msg = socks4(1, echo_server.port, user=b"slow", host=b"localhost")
    with open_client(proxy.addr) as s:
        for i in range(len(msg)):
            s.sendall(msg[i:i + 1])
            time.sleep(0.005)
        assert read4(s)[0] == GRANTED
        ferrylib.echo_roundtrip(s, b"x")


def test_refused_port(proxy):
    holder, port = unused_refused_port()
    with holder, open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(1, port, user=b"erin"))
        expect_rejected4(s)
    check_access(proxy, client, user="erin", reply="connection-refused")


def test_unresolvable_4a(proxy):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(1, 80, host=b"no-such-host.invalid"))
        expect_rejected4(s, timeout=15)
    check_access(proxy, client, reply="host-unreachable", dst="no-such-host.invalid:80")


@pytest.mark.parametrize("msg,end", [
    (bytes([4, 1, 0, 80, 127, 0, 0, 1]) + b"u" * 256, "bad-field"),           # USERID without NUL
    (socks4(1, 80, host=b""), "bad-field"),                                    # empty 4a name
    (socks4(1, 80, host=b"bad host"), "bad-field"),                            # space in the name
    (socks4(1, 80, host=b"ctl\x01"), "bad-field"),                             # control byte
    (bytes([4, 1, 0, 80, 0, 0, 0, 1, 0]) + b"h" * 256, "bad-field"),           # name without NUL
    (socks4(3, 80), "command-not-supported"),                                  # no command 3
    (socks4(0, 80), "command-not-supported"),
], ids=["userid-256", "empty-name", "space-in-name", "control-in-name", "name-256", "cmd-3", "cmd-0"])
def test_refused_requests(proxy, msg, end):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(msg)
        expect_rejected4(s)
    check_access(proxy, client, end=end)


def test_truncated_request(proxy):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(bytes([4, 1, 0, 80, 127, 0]))
        s.shutdown(socket.SHUT_WR)
        rest, _ = read_until_close(s)
        assert rest == b""
    check_access(proxy, client, end="truncated-handshake")


def test_auth_configured_refuses_socks4(ferry, echo_server):
    (ferry.workdir / "users.txt").write_text("bob:plain:bob-pw\n")
    f = ferry(auth={"userlist": "users.txt", "max_failures": "0"})
    for msg in (socks4(1, echo_server.port, user=b"bob"),
                socks4(1, echo_server.port, user=b"bob", host=b"localhost")):
        with open_client(f.addr) as s:
            client = s.getsockname()
            s.sendall(msg)
            expect_rejected4(s)
        check_access(f, client, user="bob", reply="not-allowed", end="auth-required")
    # SOCKS5 with a password still works
    s, _ = ferrylib.socks_connect_auth(f.addr, "bob", "bob-pw", *echo_server.addr)
    with s:
        ferrylib.echo_roundtrip(s, b"socks5 with a password")


# ---- BIND off ----------------------------------------------------------------------


def test_bind_disabled(proxy):
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        handshake(s)
        s.sendall(request("127.0.0.1", 0, cmd=CMD_BIND))
        expect_failure(s, REP["command-not-supported"])
    check_access(proxy, client, cmd="bind", reply="command-not-supported")
    with open_client(proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(2, 0, user=b"binder"))
        expect_rejected4(s)
    check_access(proxy, client, cmd="bind", user="binder", reply="command-not-supported")


# ---- BIND on -----------------------------------------------------------------------


def connect_peer(addr: tuple, source: str | None = None) -> socket.socket:
    fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    p = socket.socket(fam, socket.SOCK_STREAM)
    p.settimeout(ferrylib.IO_TIMEOUT)
    if source:
        p.bind((source, 0))
    p.connect(addr)
    return p


def bind5(proxy_addr, host: str, port: int = 0):
    """SOCKS5 BIND naming host; returns (sock, first reply)."""
    s = open_client(proxy_addr)
    handshake(s)
    s.sendall(request(host, port, cmd=CMD_BIND))
    r = read_reply(s)
    return s, r


def relay_both_ways(s: socket.socket, peer: socket.socket):
    up = os.urandom(300_000)
    s.sendall(up)
    assert recv_exact(peer, len(up), timeout=10) == up
    down = os.urandom(300_000)
    peer.sendall(down)
    assert recv_exact(s, len(down), timeout=10) == down
    # an end in one direction reaches the other side; then the other
    peer.shutdown(socket.SHUT_WR)
    assert read_until_close(s)[0] == b""
    s.sendall(b"last words")
    assert recv_exact(peer, 10) == b"last words"
    s.shutdown(socket.SHUT_WR)
    assert read_until_close(peer)[0] == b""


@pytest.mark.parametrize("family", ["v4", "v6"])
def test_bind_socks5(bind_proxy, family):
    if family == "v6" and not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    host = "127.0.0.1" if family == "v4" else "::1"
    listener = bind_proxy.listener(socket.AF_INET if family == "v4" else socket.AF_INET6)
    s, r1 = bind5(listener.addr, host, 2121)
    with s:
        client = s.getsockname()
        assert r1.rep == 0, f"first reply {r1.rep:#x}"
        assert r1.atyp == (ATYP_V4 if family == "v4" else ATYP_V6)
        assert r1.host == host and r1.port != 0, r1
        peer = connect_peer((r1.host, r1.port))
        peer_addr = peer.getsockname()[:2]
        with peer:
            r2 = read_reply(s)
            assert r2.rep == 0, f"second reply {r2.rep:#x}"
            assert (r2.host, r2.port) == peer_addr, (r2, peer_addr)
            relay_both_ways(s, peer)
    entry = check_access(bind_proxy, client[:2], cmd="bind", reply="succeeded", end="done")
    assert entry["addr"].endswith(f":{peer_addr[1]}"), entry


def test_bind_peer_from_wrong_address_refused(bind_proxy):
    try:
        probe = socket.socket()
        probe.bind(("127.0.0.2", 0))
        probe.close()
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound here")
    start = bind_proxy.log_offset()
    s, r1 = bind5(bind_proxy.addr, "127.0.0.1")
    with s:
        assert r1.rep == 0 and r1.host == "127.0.0.1"
        # 127.0.0.2 reaches the listener, but is not the host that was named
        expect_peer_refused(bind_proxy, (r1.host, r1.port), "127.0.0.2", "127.0.0.1", start)
        # no second reply for it: the session waits on
        s.settimeout(0.3)
        with pytest.raises(socket.timeout):
            s.recv(1)
        peer = connect_peer((r1.host, r1.port), source="127.0.0.1")
        with peer:
            r2 = read_reply(s)
            assert r2.rep == 0 and (r2.host, r2.port) == peer.getsockname()[:2]
            peer.sendall(b"from the right peer")
            assert recv_exact(s, 19) == b"from the right peer"
            s.sendall(b"to it")
            assert recv_exact(peer, 5) == b"to it"


def test_bind_timeout_socks5(bind_quick):
    s, r1 = bind5(bind_quick.addr, "127.0.0.1")
    with s:
        client = s.getsockname()
        assert r1.rep == 0 and r1.port != 0
        t0 = time.monotonic()
        expect_failure(s, REP["ttl-expired"], timeout=BIND_TIMEOUT_S + 5)
        elapsed = time.monotonic() - t0
    assert BIND_TIMEOUT_S * 0.7 <= elapsed <= BIND_TIMEOUT_S + 4, f"failure after {elapsed:.2f}s"
    check_access(bind_quick, client, cmd="bind", reply="ttl-expired", end="bind-timeout")
    # the listening socket went with the session
    with pytest.raises(ConnectionRefusedError):
        connect_peer((r1.host, r1.port)).close()


def test_bind_socks4(bind_proxy):
    with open_client(bind_proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(2, 21, ip="127.0.0.1", user=b"ftp-user"))
        cd, port, ip = read4(s)
        assert cd == GRANTED and ip == "127.0.0.1" and port != 0
        peer = connect_peer((ip, port))
        with peer:
            cd2, port2, ip2 = read4(s)
            assert cd2 == GRANTED
            assert (ip2, port2) == peer.getsockname()[:2]
            relay_both_ways(s, peer)
    check_access(bind_proxy, client, cmd="bind", user="ftp-user", reply="succeeded", end="done")


def test_bind_client_data_before_the_peer(bind_proxy):
    """Bytes the client sends while the session waits for its peer are
    delivered once the peer is there: after the second reply, and also when
    they ride behind a SOCKS4 BIND request."""
    s, r1 = bind5(bind_proxy.addr, "127.0.0.1")
    with s:
        assert r1.rep == 0
        s.sendall(b"sent while waiting")
        time.sleep(0.2)
        peer = connect_peer((r1.host, r1.port))
        with peer:
            assert read_reply(s).rep == 0
            assert recv_exact(peer, 18) == b"sent while waiting"
            peer.sendall(b"ok")
            assert recv_exact(s, 2) == b"ok"
    with open_client(bind_proxy.addr) as s:
        s.sendall(socks4(2, 21, ip="127.0.0.1") + b"behind the request")
        cd, port, ip = read4(s)
        assert cd == GRANTED
        peer = connect_peer((ip, port))
        with peer:
            assert read4(s)[0] == GRANTED
            assert recv_exact(peer, 18) == b"behind the request"


def test_bind_timeout_socks4(bind_quick):
    with open_client(bind_quick.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(2, 21, ip="127.0.0.1"))
        cd, port, _ = read4(s)
        assert cd == GRANTED and port != 0
        t0 = time.monotonic()
        expect_rejected4(s, timeout=BIND_TIMEOUT_S + 5)
        elapsed = time.monotonic() - t0
    assert BIND_TIMEOUT_S * 0.7 <= elapsed <= BIND_TIMEOUT_S + 4
    check_access(bind_quick, client, cmd="bind", end="bind-timeout")


def test_bind_client_leaves_while_waiting(bind_proxy):
    s, r1 = bind5(bind_proxy.addr, "127.0.0.1")
    client = s.getsockname()
    assert r1.rep == 0
    s.close()
    check_access(bind_proxy, client, cmd="bind", end="client-closed")
    # and the listening socket is gone with it
    deadline = time.monotonic() + 5
    while True:
        try:
            connect_peer((r1.host, r1.port)).close()
        except ConnectionRefusedError:
            break
        assert time.monotonic() < deadline, "the BIND listener outlived its session"
        time.sleep(0.05)


# ---- BIND naming a host by name ---------------------------------------------------------


def bind_request(f, version: int, host: str, port: int = 21, source: str | None = None):
    """BIND naming host (a SOCKS4 request names a non-IP host the 4a way).
    Returns (sock, (code, host, port) of the first reply); code is 0 for
    success in both versions."""
    s = open_client(f.addr, source=source)
    if version == 5:
        handshake(s)
        s.sendall(request(host, port, cmd=CMD_BIND))
        r = read_reply(s)
        return s, (r.rep, r.host, r.port)
    try:
        socket.inet_aton(host)
        s.sendall(socks4(2, port, ip=host))
    except OSError:
        s.sendall(socks4(2, port, host=host.encode()))
    cd, p, ip = read4(s)
    return s, (0 if cd == GRANTED else cd, ip, p)


def second_reply(s: socket.socket, version: int) -> tuple[int, str, int]:
    if version == 5:
        r = read_reply(s)
        return r.rep, r.host, r.port
    cd, p, ip = read4(s)
    return (0 if cd == GRANTED else cd), ip, p


def expect_refused(s: socket.socket, version: int, rep: str):
    if version == 5:
        expect_failure(s, REP[rep])
    else:
        expect_rejected4(s)


def expect_peer_refused(f, listen: tuple, source: str, waiting_for: str, start: int):
    """A host BIND does not wait for connects from source: reset, logged,
    and no bytes for it."""
    try:
        wrong = connect_peer(listen, source=source)
    except ConnectionResetError:
        wrong = None  # ferry's reset came before connect() returned
    if wrong:
        with wrong:
            try:
                data = wrong.recv(16)
            except ConnectionResetError:
                data = b""
            assert data == b"", "the wrong peer got bytes"
    f.wait_log(rf"BIND: refused a connection from {re.escape(source)}:\d+ "
               rf"\(waiting for {re.escape(waiting_for)}\)", start=start)


def accept_peer(s: socket.socket, version: int, listen: tuple, source: str):
    """The expected host connects from source: the second reply names it,
    and bytes pass both ways."""
    peer = connect_peer(listen, source=source)
    with peer:
        rep, host, port = second_reply(s, version)
        assert rep == 0, f"second reply {rep:#x}"
        assert (host, port) == peer.getsockname()[:2]
        peer.sendall(b"from the expected host")
        assert recv_exact(s, 22) == b"from the expected host"
        s.sendall(b"to it")
        assert recv_exact(peer, 5) == b"to it"


@pytest.mark.parametrize("version", [5, 4], ids=["socks5", "socks4a"])
def test_bind_name(bind_proxy, version):
    """localhost is 127.0.0.1 and ::1: ferry listens on 127.0.0.1 (the first
    the reply can carry), refuses 127.0.0.2, accepts 127.0.0.1."""
    need_loopback("127.0.0.2")
    start = bind_proxy.log_offset()
    s, (rep, host, port) = bind_request(bind_proxy, version, "localhost", 2121)
    with s:
        client = s.getsockname()
        assert rep == 0, f"first reply {rep:#x}"
        assert host == "127.0.0.1" and port != 0
        expect_peer_refused(bind_proxy, (host, port), "127.0.0.2", "localhost", start)
        # no second reply for it: the session waits on
        s.settimeout(0.3)
        with pytest.raises(socket.timeout):
            s.recv(1)
        s.settimeout(ferrylib.IO_TIMEOUT)
        accept_peer(s, version, (host, port), "127.0.0.1")
    check_access(bind_proxy, client, cmd="bind", dst="localhost:2121", reply="succeeded", end="done")


@pytest.mark.parametrize("version", [5, 4], ids=["socks5", "socks4a"])
def test_bind_name_unresolvable(bind_proxy, version):
    with open_client(bind_proxy.addr) as s:
        client = s.getsockname()
        if version == 5:
            handshake(s)
            s.sendall(request("no-such-host.invalid", 21, cmd=CMD_BIND))
        else:
            s.sendall(socks4(2, 21, host=b"no-such-host.invalid"))
        expect_refused(s, version, "host-unreachable")
    check_access(bind_proxy, client, cmd="bind", dst="no-such-host.invalid:21",
                 reply="host-unreachable", end="resolve-failed")


def test_bind_socks4a_ipv6_literal(bind_proxy):
    """A SOCKS4 reply cannot say where an IPv6 listener is."""
    with open_client(bind_proxy.addr) as s:
        client = s.getsockname()
        s.sendall(socks4(2, 21, host=b"::1"))
        expect_rejected4(s)
    check_access(bind_proxy, client, cmd="bind", end="bind-no-ipv4-address")


def test_bind_name_rules(bind_rules, echo_server):
    """Rules judge each address a name resolves to, as for CONNECT."""
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    f = bind_rules
    # 127.0.0.1 is denied for BIND: only ::1 may connect back
    s, (rep, host, port) = bind_request(f, 5, "localhost", 21)
    with s:
        client = s.getsockname()
        assert rep == 0 and host == "::1" and port != 0, (rep, host, port)
        accept_peer(s, 5, (host, port), "::1")
    check_access(f, client, cmd="bind", dst="localhost:21", reply="succeeded")
    # SOCKS4a can only answer with an IPv4 address, and that one is denied
    s, (rep, _, _) = bind_request(f, 4, "localhost", 21)
    with s:
        client = s.getsockname()
        assert rep == REJECTED
        assert read_until_close(s)[0] == b""
    check_access(f, client, cmd="bind", end="bind-no-ipv4-address")
    # on port 2222 both addresses are denied
    with open_client(f.addr) as s:
        client = s.getsockname()
        handshake(s)
        s.sendall(request("localhost", 2222, cmd=CMD_BIND))
        expect_failure(s, REP["not-allowed"])
    entry = check_access(f, client, cmd="bind", dst="localhost:2222", reply="not-allowed",
                         end="denied")
    # the rule that denied the first address is named
    assert entry.get("rule") == rule_ref(f, f.rules[0]), entry
    # CONNECT is not affected by the BIND rules
    with open_client(f.addr) as s:
        s.sendall(socks4(1, echo_server.port, host=b"localhost"))
        assert read4(s)[0] == GRANTED
        ferrylib.echo_roundtrip(s, b"connect still allowed")


# ---- BIND naming 0.0.0.0: the primary session ------------------------------------------------


def test_bind_any_without_primary_session(ferry, echo_server):
    """Nobody named and no CONNECT from this client address: refused (a
    listener open to anyone is never handed out). A CONNECT from another
    address does not count."""
    need_loopback("127.0.0.2")
    f = ferry(config={"bind": "yes"})
    cases = [(5, "0.0.0.0"), (5, "::"), (4, "0.0.0.0")]
    for version, host in cases:
        with open_client(f.addr) as s:
            client = s.getsockname()
            if version == 5:
                handshake(s)
                s.sendall(request(host, 0, cmd=CMD_BIND))
            else:
                s.sendall(socks4(2, 21, ip=host))
            expect_refused(s, version, "not-allowed")
        check_access(f, client, cmd="bind", end="bind-no-primary-session")
    with open_client(f.addr, source="127.0.0.2") as c:
        c.sendall(socks4(1, echo_server.port))
        assert read4(c)[0] == GRANTED
        with open_client(f.addr, source="127.0.0.1") as s:
            client = s.getsockname()
            handshake(s)
            s.sendall(request("0.0.0.0", 0, cmd=CMD_BIND))
            expect_failure(s, REP["not-allowed"])
        check_access(f, client, cmd="bind", end="bind-no-primary-session")


def test_bind_any_expects_primary_destination(bind_workers):
    """A CONNECT to a server, then BIND 0.0.0.0 from another source port:
    the server's address may connect back, others are refused. Several
    rounds, alternating two servers (the most recent CONNECT counts) and
    the SOCKS versions; with four workers the CONNECT and the BIND land on
    different workers in most rounds."""
    need_loopback("127.0.0.3", "127.0.0.4")
    f = bind_workers
    servers = [ferrylib.EchoServer("127.0.0.3"), ferrylib.EchoServer("127.0.0.4")]
    try:
        for round_ in range(4):
            srv, other = servers[round_ % 2], servers[1 - round_ % 2]
            version = 5 if round_ < 2 else 4
            start = f.log_offset()
            with open_client(f.addr) as primary:
                if version == 5:
                    handshake(primary)
                    primary.sendall(request(srv.host, srv.port))
                    assert read_reply(primary).rep == 0
                else:
                    primary.sendall(socks4(1, srv.port, ip=srv.host))
                    assert read4(primary)[0] == GRANTED
                ferrylib.echo_roundtrip(primary, b"control channel")
                s, (rep, host, port) = bind_request(f, version, "0.0.0.0", 0)
                with s:
                    client = s.getsockname()
                    assert rep == 0, f"round {round_}: first reply {rep:#x}"
                    assert host == "127.0.0.1" and port != 0
                    f.wait_log(rf"BIND 0\.0\.0\.0: expecting {re.escape(srv.host)}, "
                               r"the destination of the client's primary session", start=start)
                    expect_peer_refused(f, (host, port), other.host, srv.host, start)
                    expect_peer_refused(f, (host, port), "127.0.0.1", srv.host, start)
                    accept_peer(s, version, (host, port), srv.host)
                check_access(f, client, cmd="bind", reply="succeeded")
    finally:
        for srv in servers:
            srv.stop()


def test_zz_health(proxy, bind_proxy, echo_server):
    for f in (proxy, bind_proxy):
        assert f.alive()
        with open_client(f.addr) as s:
            s.sendall(socks4(1, echo_server.port))
            assert read4(s)[0] == GRANTED
            ferrylib.echo_roundtrip(s, b"still serving")
        with open_client(f.addr) as s:
            s.sendall(greeting())
            assert read_method(s) == 0
