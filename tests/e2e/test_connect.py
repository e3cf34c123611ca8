# SPDX-License-Identifier: BSD-2-Clause
"""Successful CONNECTs with real clients (curl, PySocks) and the raw client:
IPv4, IPv6, domain names, BND.ADDR/BND.PORT."""

import hashlib
import os
import socket
import subprocess
import threading

import pytest
import socks

import ferrylib
from ferrylib import (
    echo_roundtrip,
    read_method,
    read_reply,
    request,
    socks_connect,
)

LISTENS = ["127.0.0.1:0"] + (["[::1]:0"] if ferrylib.HAVE_IPV6 else [])


@pytest.fixture(scope="module")
def proxy(module_ferry):
    """One ferry for the module, on 127.0.0.1:0 and (when available) [::1]:0."""
    return module_ferry(listens=LISTENS)


def curl_env():
    # no proxy variables from the environment may steer or bypass curl
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def run_curl(args, timeout=90):
    try:
        return subprocess.run(
            ["curl", "-sS", "--fail", "--max-time", "60", "--connect-timeout", "10", *args],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=curl_env(),
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"curl did not finish within {timeout}s") from e


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- curl --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["small.txt", "big.bin"])
@pytest.mark.parametrize(
    "mode,url_host,dst_host",
    [("--socks5", "127.0.0.1", "127.0.0.1"), ("--socks5-hostname", "localhost", "localhost")],
    ids=["socks5", "socks5-hostname"],
)
def test_curl_fetch(proxy, http_server, tmp_path, mode, url_host, dst_host, name):
    out = tmp_path / name
    url = http_server.url(name, host=url_host)
    start = proxy.log_offset()
    r = run_curl([mode, f"127.0.0.1:{proxy.port}", "-o", str(out), url])
    assert r.returncode == 0, f"curl {mode} {url}: rc={r.returncode} {r.stderr.decode(errors='replace')}"
    assert file_sha256(out) == http_server.files[name]
    # it really went through ferry, and the client named the host it should
    dst = f"dst={dst_host}:{http_server.port} "
    m = proxy.wait_log(rf"access .*{dst}addr=127\.0\.0\.1:{http_server.port} .*reply=succeeded end=done", start=start)
    down = int(ferrylib.parse_access(m.group(0))["down"])
    assert down >= out.stat().st_size


@pytest.mark.skipif(not ferrylib.HAVE_IPV6, reason="no IPv6 loopback")
def test_curl_via_ipv6_listener(proxy, http_server, tmp_path):
    out = tmp_path / "big.bin"
    v6 = proxy.listener(socket.AF_INET6)
    r = run_curl(["--socks5-hostname", f"[::1]:{v6.port}", "-o", str(out), http_server.url("big.bin", "localhost")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert file_sha256(out) == http_server.files["big.bin"]


# ---- PySocks -----------------------------------------------------------------


def _localhost_first_family():
    """Where PySocks sends `localhost` when it resolves locally (rdns=False)."""
    ai = socket.getaddrinfo("localhost", 80, socket.AF_UNSPEC, socket.SOCK_STREAM,
                            socket.IPPROTO_TCP, socket.AI_ADDRCONFIG)
    return ai[0][0]


@pytest.mark.parametrize("rdns", [True, False], ids=["rdns", "local-dns"])
@pytest.mark.parametrize("target", ["127.0.0.1", "::1", "localhost"])
@pytest.mark.parametrize("via", ["v4", "v6"])
def test_pysocks_echo(proxy, echo_server, request, via, target, rdns):
    if via == "v6" and not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    if target == "::1":
        echo = request.getfixturevalue("echo_server6")
    elif target == "localhost" and not rdns and _localhost_first_family() == socket.AF_INET6:
        echo = request.getfixturevalue("echo_server6")
    else:
        echo = echo_server  # ferry resolves localhost to 127.0.0.1 first
    family = socket.AF_INET6 if via == "v6" else socket.AF_INET
    lst = proxy.listener(family)
    s = socks.socksocket(family, socket.SOCK_STREAM)
    try:
        s.set_proxy(socks.SOCKS5, lst.host, lst.port, rdns=rdns)
        s.settimeout(10)
        s.connect((target, echo.port))
        payload = os.urandom(100_000)
        s.sendall(payload)
        got = ferrylib.recv_exact(s, len(payload), timeout=10)
        assert got == payload
        bnd = s.get_proxy_sockname()
        client = s.getsockname()
        s.shutdown(socket.SHUT_WR)
        rest, how = ferrylib.read_until_close(s)
        assert rest == b"" and how == "eof"
    finally:
        s.close()
    # BND is ferry's outgoing address: the echo server saw exactly that peer
    bnd_host = bnd[0].decode() if isinstance(bnd[0], bytes) else bnd[0]
    assert echo.saw_peer(bnd_host, bnd[1]), f"BND {bnd} not among echo peers {echo.peers[-5:]}"
    entry = proxy.access_for(client)
    assert entry["reply"] == "succeeded" and entry["end"] == "done", entry
    assert entry["up"] == "100000" and entry["down"] == "100000", entry
    if target == "localhost" and rdns:
        assert entry["dst"] == f"localhost:{echo.port}", entry


# ---- raw client: address types and BND ---------------------------------------


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_bnd_is_the_peer_the_target_saw(proxy, request, v6):
    echo = request.getfixturevalue("echo_server6" if v6 else "echo_server")
    s, r = socks_connect(proxy.addr, *echo.addr)
    with s:
        echo_roundtrip(s, b"bnd check")
        assert r.atyp == (ferrylib.ATYP_V6 if v6 else ferrylib.ATYP_V4)
        assert r.host == echo.host
        assert r.port != 0
        assert echo.saw_peer(r.host, r.port), f"BND {r.host}:{r.port} not among {echo.peers[-5:]}"


@pytest.mark.parametrize("refused", [False, True])
def test_pipelined_greeting_and_request(proxy, echo_server, refused):
    """A client that sends its request with the greeting (as a chained
    ferry does) gets the method choice and the reply back to back, in
    order, then its data relayed; a failure reply comes the same way."""
    holder, port = ferrylib.unused_refused_port() if refused else (None, echo_server.port)
    s = ferrylib.open_client(proxy.addr)
    with s:
        s.sendall(ferrylib.greeting() + request("127.0.0.1", port) + (b"" if refused else b"early"))
        assert read_method(s) == 0
        r = read_reply(s)
        if refused:
            assert r.rep == ferrylib.REP["connection-refused"]
            holder.close()
            return
        assert r.rep == 0
        assert ferrylib.recv_exact(s, 5) == b"early"
        echo_roundtrip(s, b"after")


def test_domain_ip_literal(proxy, echo_server):
    # a client may send an IP literal as ATYP 3
    s, r = socks_connect(proxy.addr, b"127.0.0.1", echo_server.port)
    with s:
        echo_roundtrip(s, b"literal")
        assert echo_server.saw_peer(r.host, r.port)


@pytest.mark.parametrize("name", [b"localhost", b"LocalHost.", b"foo.localhost"])
def test_localhost_names(proxy, echo_server, name):
    s, _ = socks_connect(proxy.addr, name, echo_server.port)
    with s:
        client = s.getsockname()
        echo_roundtrip(s, b"localhost")
    entry = proxy.access_for(client)
    assert entry["addr"] == f"127.0.0.1:{echo_server.port}", entry


def test_localhost_falls_back_to_ipv6(proxy, tcp_server):
    # nothing listens on 127.0.0.1:P (the port is held, not listening), an
    # echo listens on [::1]:P: ferry must try 127.0.0.1 first, then ::1
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    holder, port, echo6 = ferrylib.same_port_pair(lambda p: tcp_server(ferrylib.EchoServer, "::1", port=p))
    with holder:
        s, r = socks_connect(proxy.addr, b"localhost", port)
        with s:
            client = s.getsockname()
            echo_roundtrip(s, b"fallback")
            assert r.atyp == ferrylib.ATYP_V6 and r.host == "::1"
            assert echo6.saw_peer(r.host, r.port)
    entry = proxy.access_for(client)
    assert entry["addr"] == f"[::1]:{port}" and entry["dst"] == f"localhost:{port}", entry


def test_ipv6_listener_to_ipv4_target(proxy, echo_server):
    if not ferrylib.HAVE_IPV6:
        pytest.skip("no IPv6 loopback")
    v6 = proxy.listener(socket.AF_INET6)
    s, r = socks_connect(v6.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        echo_roundtrip(s, b"v6 in, v4 out")
        assert r.atyp == ferrylib.ATYP_V4
    assert proxy.access_for(client)["client"] == f"[::1]:{client[1]}"


def test_large_transfer_both_ways(proxy, echo_server):
    payload = os.urandom(4 * 1024 * 1024)
    s, _ = socks_connect(proxy.addr, *echo_server.addr, timeout=30)
    with s:
        client = s.getsockname()
        sent = []

        def sender():
            s.sendall(payload)
            sent.append(True)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        got = ferrylib.recv_exact(s, len(payload), timeout=60)
        t.join(30)
        assert sent, "sender did not finish"
        assert hashlib.sha256(got).digest() == hashlib.sha256(payload).digest()
        s.shutdown(socket.SHUT_WR)
        assert ferrylib.read_until_close(s) == (b"", "eof")
    entry = proxy.access_for(client)
    assert entry["up"] == entry["down"] == str(len(payload)), entry


def test_ferry_still_healthy_after_module(proxy, echo_server):
    assert proxy.alive()
    s = ferrylib.open_client(proxy.addr)
    with s:
        s.sendall(ferrylib.greeting())
        assert read_method(s) == 0
        s.sendall(request(*echo_server.addr))
        assert read_reply(s).rep == 0
        echo_roundtrip(s, b"still fine")
