"""SOCKS4/4a and BIND (SOCKS5 and SOCKS4) on ferry's mixed port, end to end.

SOCKS4: curl --socks4/--socks4a, raw CONNECTs to 127.0.0.1 and to
localhost, every refusal (refused port, unresolvable name, bad fields,
unknown command, authentication configured), USERID in the access log.
BIND: off by default (SOCKS5 0x07, SOCKS4 0x5B); on, the two replies, the
named peer's address and port, data both ways, a peer from another address
refused while the session keeps waiting, the bind_timeout failure reply,
and a client that leaves while waiting.
"""

import os
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
        try:
            wrong = connect_peer((r1.host, r1.port), source="127.0.0.2")
        except ConnectionResetError:
            wrong = None  # ferry's reset came before connect() returned
        if wrong:
            with wrong:
                try:
                    data = wrong.recv(16)
                except ConnectionResetError:
                    data = b""
                assert data == b"", "the wrong peer got bytes"
        bind_proxy.wait_log(r"BIND: refused a connection from 127\.0\.0\.2:\d+ \(waiting for 127\.0\.0\.1\)",
                            start=start)
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


@pytest.mark.parametrize("msg,socks_version", [
    (request("0.0.0.0", 0, cmd=CMD_BIND), 5),   # nobody named: a listener open to all
    (request("localhost", 0, cmd=CMD_BIND), 5),  # a name, not an address
    (socks4(2, 21, ip="0.0.0.0"), 4),
    (socks4(2, 21, host=b"localhost"), 4),
], ids=["socks5-any", "socks5-name", "socks4-any", "socks4a-name"])
def test_bind_needs_an_address(bind_proxy, msg, socks_version):
    with open_client(bind_proxy.addr) as s:
        client = s.getsockname()
        if socks_version == 5:
            handshake(s)
            s.sendall(msg)
            expect_failure(s, REP["general-failure"])
        else:
            s.sendall(msg)
            expect_rejected4(s)
    check_access(bind_proxy, client, cmd="bind", end="bind-needs-address")


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
