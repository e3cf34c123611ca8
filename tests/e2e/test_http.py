# SPDX-License-Identifier: BSD-2-Clause
"""The HTTP proxy on ferry's mixed port, end to end.

Real clients (curl with -x and --proxytunnel, Python's urllib) and a raw
client against one shared ferry: absolute-form forwarding with keep-alive
and the upstream pool, CONNECT tunnels, WebSocket upgrades, the rewriting
of heads (hop-by-hop fields, Host, Via, origin-form), response framing
(HEAD, 1xx/204/304, Content-Length, chunked, to the close), every error
status loopback can provoke, and every request-smuggling form, which must
be refused before the origin sees anything. Then Basic authentication, and
listeners restricted to some protocols. Then what bounds and paces a
forwarded exchange: response_timeout against a silent origin (and not
against a client that does not read), body_timeout against a client that
stalls its body (also after Expect: 100-continue), iotimeout naming the
side that stalled, the bandwidth limits, and the
per-user limit when a keep-alive connection changes user. The last test
proves the shared instance still serves after all the bad input (teardown
checks it exits cleanly with no sanitizer report).
"""

import hashlib
import os
import socket
import time
import urllib.request

import pytest

import ferrylib
from ferrylib import (
    echo_roundtrip,
    expect_closed_silently,
    greeting,
    open_client,
    passwd_line,
    read_method,
    recv_exact,
    unused_refused_port,
)
from httplib import (
    HEAD_LENGTH,
    SMALL_BODY,
    STALL_LENGTH,
    STALL_SENT,
    Conn,
    HttpUpstream,
    chunked,
    config_text,
    exchange,
    expect_error,
    payload,
    read_response,
    request_bytes,
    run_curl,
)
from policylib import cpu_seconds

MAX_LINE = 512
MAX_HEADER = 4096
HANDSHAKE_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def proxy(module_ferry):
    return module_ferry(raw_config=config_text(
        config={"handshake_timeout": f"{HANDSHAKE_TIMEOUT_S:g}s", "connect_timeout": "1s"},
        http={"max_line": str(MAX_LINE), "max_header": str(MAX_HEADER)},
    ))


@pytest.fixture(scope="module")
def upstream():
    srv = HttpUpstream("127.0.0.1")
    yield srv
    srv.stop()


def url(up, path: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{up.port}{path}"


def entries_for(proxy, client: tuple, n: int, timeout: float = 5.0) -> list[dict]:
    """The access lines of one client connection (one per request), waiting
    (bounded) until there are n."""
    want = f"{client[0]}:{client[1]}"
    deadline = time.monotonic() + timeout
    while True:
        hits = [e for e in proxy.access_entries() if e.get("client") == want]
        if len(hits) >= n:
            return hits
        if time.monotonic() >= deadline:
            raise AssertionError(f"{len(hits)} of {n} access lines for {want}:\n" + proxy.log_text()[-3000:])
        time.sleep(0.02)


def access_since(proxy, start: int, pred, n: int, timeout: float = 5.0) -> list[dict]:
    """Access lines logged after offset start that match pred, waiting
    (bounded) until there are n."""
    deadline = time.monotonic() + timeout
    while True:
        text = proxy.log_text()[start:]
        hits = [e for e in (ferrylib.parse_access(m.group(1)) for m in ferrylib.ACCESS_RE.finditer(text))
                if pred(e)]
        if len(hits) >= n or time.monotonic() >= deadline:
            return hits
        time.sleep(0.02)


def check_access(proxy, client, **want):
    entry = proxy.access_for(client)
    for k, v in want.items():
        assert entry.get(k) == v, f"access log {k}={entry.get(k)!r}, expected {v!r}: {entry}"
    return entry


def get(up, path: str, headers=(), version="HTTP/1.1", method="GET", body=b"") -> bytes:
    return request_bytes(method, url(up, path), [("Host", f"127.0.0.1:{up.port}"), *headers], body,
                         version=version)


# ---- real clients ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["small.txt", "big.bin"])
def test_curl_get(proxy, http_server, tmp_path, name):
    out = tmp_path / name
    start = proxy.log_offset()
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{proxy.port}", "-o", str(out),
                  http_server.url(name)])
    assert r.returncode == 0, f"curl: rc={r.returncode} {r.stderr.decode(errors='replace')}"
    assert ferrylib.sha256(out.read_bytes()) == http_server.files[name]
    proxy.wait_log(rf"access .* user=- cmd=GET dst=127\.0\.0\.1:{http_server.port} "
                   rf"addr=127\.0\.0\.1:{http_server.port} .*reply=200 end=done", start=start)


def test_curl_post_body(proxy, upstream, tmp_path):
    data = os.urandom(300 * 1024)
    f = tmp_path / "post.bin"
    f.write_bytes(data)
    out = tmp_path / "echo.bin"
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{proxy.port}", "--data-binary", f"@{f}",
                  "-H", "Content-Type: application/octet-stream", "-o", str(out),
                  url(upstream, "/echo/post")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert out.read_bytes() == data
    rec = upstream.requests("/echo/post")[-1]
    assert rec.method == "POST" and rec.body == data
    assert rec.headers.get("Content-Length") == str(len(data))


def test_curl_chunked_upload(proxy, upstream, tmp_path):
    data = os.urandom(200 * 1024 + 17)
    f = tmp_path / "chunked.bin"
    f.write_bytes(data)
    out = tmp_path / "echo.bin"
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{proxy.port}", "-H", "Transfer-Encoding: chunked",
                  "--data-binary", f"@{f}", "-o", str(out), url(upstream, "/echo/curl-chunked")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert out.read_bytes() == data
    rec = upstream.requests("/echo/curl-chunked")[-1]
    assert rec.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in rec.headers
    assert rec.body == data


def test_curl_keepalive_several_urls(proxy, tcp_server):
    """Three URLs in one curl run: one connection to ferry (one access id,
    curl connects once) and, through the pool, one to the origin."""
    up = tcp_server(HttpUpstream)
    start = proxy.log_offset()
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{proxy.port}", "-w", "connects=%{num_connects}\n",
                  url(up, "/small/1"), url(up, "/small/2"), url(up, "/small/3")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    out = r.stdout
    assert out.count(SMALL_BODY) == 3
    assert out.count(b"connects=1\n") == 1 and out.count(b"connects=0\n") == 2, out[-200:]
    lines = access_since(proxy, start, lambda e: e.get("dst") == f"127.0.0.1:{up.port}", 3)
    assert len({e["id"] for e in lines}) == 1, f"several client connections: {lines}"
    assert all(e["reply"] == "200" and e["cmd"] == "GET" for e in lines), lines
    assert [r.path for r in up.requests()] == ["/small/1", "/small/2", "/small/3"]
    assert up.connections() == 1, f"the origin accepted {up.connections()} connections"


@pytest.mark.parametrize("name", ["small.txt", "big.bin"])
def test_curl_connect_tunnel(proxy, http_server, tmp_path, name):
    out = tmp_path / name
    start = proxy.log_offset()
    r = run_curl(["--fail", "-p", "-x", f"http://127.0.0.1:{proxy.port}", "-o", str(out),
                  http_server.url(name)])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert ferrylib.sha256(out.read_bytes()) == http_server.files[name]
    proxy.wait_log(rf"access .* cmd=CONNECT dst=127\.0\.0\.1:{http_server.port} .*reply=200 end=done",
                   start=start)


def test_urllib_proxy_handler(proxy, http_server, upstream, monkeypatch):
    for var in ("no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(var, raising=False)
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy.port}"}))
    with opener.open(http_server.url("small.txt"), timeout=10) as resp:
        assert resp.status == 200
        assert ferrylib.sha256(resp.read()) == http_server.files["small.txt"]
    data = b"form=1&x=" + b"y" * 5000
    req = urllib.request.Request(url(upstream, "/echo/urllib"), data=data, method="POST")
    with opener.open(req, timeout=10) as resp:
        assert resp.status == 200
        assert resp.read() == data
        assert "ferry" in resp.headers.get("Via", "")
    assert upstream.requests("/echo/urllib")[-1].body == data


# ---- what goes upstream, what comes back -------------------------------------------


def test_request_rewrite(proxy, upstream):
    """Hop-by-hop fields are dropped (the fixed set and those Connection
    names), Host is the target's authority, the target is origin-form, and
    Via is appended."""
    raw = request_bytes("GET", url(upstream, "/echo/rewrite?q=1&r=/x"), [
        ("Host", "wrong.example"),
        ("Proxy-Connection", "keep-alive"),
        ("Keep-Alive", "300"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
        ("TE", "trailers"),
        ("Connection", "X-Secret, keep-alive"),
        ("X-Secret", "listed in Connection"),
        ("Upgrade", "h2c"),
        ("Trailer", "X-T"),
        ("X-Other", "kept"),
        ("Via", "1.0 client-side"),
        ("Accept", "*/*"),
    ])
    r, c = exchange(proxy.addr, raw)
    with c:
        assert r.status == 200
        assert "Connection" not in r.headers  # HTTP/1.1 keep-alive needs no field
    rec = upstream.requests("/echo/rewrite")[-1]
    assert rec.head.startswith(b"GET /echo/rewrite?q=1&r=/x HTTP/1.1\r\n"), rec.head[:80]
    assert rec.headers.all("Host") == [f"127.0.0.1:{upstream.port}"]
    gone = {"proxy-connection", "keep-alive", "proxy-authorization", "te", "connection",
            "x-secret", "upgrade", "trailer"}
    assert not gone & rec.headers.names(), rec.headers
    assert rec.headers.get("X-Other") == "kept" and rec.headers.get("Accept") == "*/*"
    assert rec.headers.all("Via") == ["1.0 client-side, 1.1 ferry"]


@pytest.mark.parametrize("target,path", [("", "/"), ("?x=1", "/?x=1"), ("/", "/"), ("/a/b?c=d", "/a/b?c=d")],
                         ids=["no-path", "query-only", "slash", "path-query"])
def test_request_target_forms(proxy, upstream, target, path):
    before = len(upstream.requests())
    port = f":{upstream.port}"
    raw = request_bytes("GET", f"http://127.0.0.1{port}{target}", [("Host", "x")])
    r, c = exchange(proxy.addr, raw)
    c.close()
    assert r.status == 404  # no such route: the origin still answered
    rec = upstream.requests()[before]
    assert rec.target == path
    assert rec.headers.get("Host") == f"127.0.0.1{port}"


def test_http10_request(proxy, upstream):
    # HTTP/1.0 without keep-alive: forwarded as 1.0, answered, then closed
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/small/10", version="HTTP/1.0"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
        assert r.headers.get("Connection") == "close"
        assert c.read_to_eof() == b""
    rec = upstream.requests("/small/10")[-1]
    assert rec.version == "HTTP/1.0"
    assert rec.headers.get("Via") == "1.0 ferry"


def test_http10_keepalive_is_not_persistent(proxy, upstream):
    """RFC 9112 9.3: "A proxy server MUST NOT maintain a persistent
    connection with an HTTP/1.0 client" (an old 1.0 proxy in front that
    forwards Connection: keep-alive blindly would hang waiting for the
    close). So a 1.0 request with Connection: keep-alive is answered with
    Connection: close, and the connection closed."""
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/small/10ka", [("Connection", "keep-alive")], version="HTTP/1.0"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
        conn_field = r.headers.get("Connection")
        rest = c.read_to_eof(timeout=3) if conn_field == "close" else None
    assert conn_field == "close" and rest == b"", (
        f"response to an HTTP/1.0 keep-alive request has Connection: {conn_field!r} and the "
        "connection stays open")


def test_response_hop_by_hop_removed(proxy, upstream):
    r, c = exchange(proxy.addr, get(upstream, "/hop"))
    with c:
        assert r.status == 200 and r.body == b"hop body"
        gone = {"x-resp-hop", "keep-alive", "proxy-authenticate", "proxy-connection", "connection"}
        assert not gone & r.headers.names(), r.headers
        assert r.headers.get("X-End-To-End") == "yes"
        assert r.headers.all("Via") == ["1.1 origin-side, 1.1 ferry"]
        # and the connection is still good for another request
        c.send(get(upstream, "/small"))
        assert read_response(c).body == SMALL_BODY


def test_bodiless_responses_then_next_request(proxy, upstream):
    """HEAD, 204 and 304 carry no body whatever their fields say: the next
    response on the same connection must come out whole."""
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/head", method="HEAD"))
        r = read_response(c, head_request=True)
        assert r.status == 200 and r.headers.get("Content-Length") == str(HEAD_LENGTH)
        c.send(get(upstream, "/chunked", method="HEAD"))
        r = read_response(c, head_request=True)
        assert r.status == 200 and r.headers.get("Transfer-Encoding") == "chunked"
        c.send(get(upstream, "/204"))
        r = read_response(c)
        assert r.status == 204 and r.headers.get("X-Route") == "204"
        c.send(get(upstream, "/304"))
        r = read_response(c)
        assert r.status == 304 and r.headers.get("Content-Length") == "50"
        c.send(get(upstream, "/head"))
        r = read_response(c)
        assert r.status == 200 and r.body == b"h" * HEAD_LENGTH
        c.send(get(upstream, "/small"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
        # nothing was left over in between
        c.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            c.sock.recv(1)
        client = c.sock.getsockname()
    entries = entries_for(proxy, client, 6)
    assert [e["cmd"] for e in entries] == ["HEAD", "HEAD", "GET", "GET", "GET", "GET"]
    assert [e["reply"] for e in entries] == ["200", "200", "204", "304", "200", "200"]
    assert len({e["id"] for e in entries}) == 1


def test_length_and_chunked_responses(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/chunked"))
        r = read_response(c)
        assert r.status == 200 and r.headers.get("Transfer-Encoding") == "chunked"
        assert r.body == SMALL_BODY
        # forwarded verbatim: extensions and the trailer survive
        assert b";e=1\r\n" in r.raw_body and r.trailers == [f"X-Sum: {len(SMALL_BODY)}".encode()]
        c.send(get(upstream, "/small"))
        r = read_response(c)
        assert r.headers.get("Content-Length") == str(len(SMALL_BODY)) and r.body == SMALL_BODY
        # the origin closing after its response does not close the client
        c.send(get(upstream, "/close"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
        assert r.headers.get("Connection") is None
        c.send(get(upstream, "/small/after-close"))
        assert read_response(c).body == SMALL_BODY


def test_response_without_length_closes_client(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(get(upstream, "/nolength"))
        r = read_response(c)  # no length: read to the close
        assert r.status == 200
        assert r.headers.get("Connection") == "close"
        assert r.body == SMALL_BODY
    check_access(proxy, client, cmd="GET", reply="200", end="done")


def test_pipelined_requests(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/small/p1") + get(upstream, "/echo/p2", method="POST", body=b"two")
               + get(upstream, "/head/p3", method="HEAD") + get(upstream, "/small/p4"))
        assert read_response(c).body == SMALL_BODY
        r = read_response(c)
        assert r.body == b"two"
        r = read_response(c, head_request=True)
        assert r.headers.get("Content-Length") == str(HEAD_LENGTH)
        assert read_response(c).body == SMALL_BODY


def test_keepalive_reuses_upstream(proxy, tcp_server):
    """Several requests on one client connection: one access id, and one
    origin connection through the pool."""
    up = tcp_server(HttpUpstream)
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        for i in range(4):
            c.send(get(up, f"/small/{i}"))
            assert read_response(c).body == SMALL_BODY
        c.send(get(up, "/echo/last", method="POST", body=b"x" * 1000))
        assert read_response(c).body == b"x" * 1000
    entries = entries_for(proxy, client, 5)
    assert len({e["id"] for e in entries}) == 1
    assert up.connections() == 1
    assert {r.conn for r in up.requests()} == {0}


def test_keepalive_to_two_origins(proxy, tcp_server):
    """One client connection, requests to two origins in turn: all answered
    on that one connection; each origin keeps one connection (the other's
    waits in the pool meanwhile)."""
    a, b = tcp_server(HttpUpstream), tcp_server(HttpUpstream)
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        for up, path in ((a, "/small/a1"), (b, "/small/b1"), (a, "/echo/a2"), (b, "/small/b2")):
            body = path.encode() if path.startswith("/echo") else b""
            c.send(get(up, path, method="POST" if body else "GET", body=body))
            r = read_response(c)
            assert r.status == 200 and r.body == (body or SMALL_BODY), (path, r.status, r.body[:80])
            assert "Connection" not in r.headers
    entries = entries_for(proxy, client, 4)
    assert len({e["id"] for e in entries}) == 1, entries
    assert [e["dst"] for e in entries] == [f"127.0.0.1:{up.port}" for up in (a, b, a, b)], entries
    assert all(e["reply"] == "200" and e["end"] == "done" for e in entries), entries
    assert [r.path for r in a.requests()] == ["/small/a1", "/echo/a2"]
    assert [r.path for r in b.requests()] == ["/small/b1", "/small/b2"]
    assert (a.connections(), b.connections()) == (1, 1)


def test_head_split_byte_by_byte(proxy, upstream):
    raw = get(upstream, "/echo/bytewise", [("X-Slow", "yes")], method="POST", body=b"hello")
    with Conn.open(proxy.addr) as c:
        for i in range(len(raw)):
            c.send(raw[i:i + 1])
            time.sleep(0.002)
        r = read_response(c)
        assert r.status == 200 and r.body == b"hello"
    rec = upstream.requests("/echo/bytewise")[-1]
    assert rec.headers.get("X-Slow") == "yes" and rec.body == b"hello"


def test_chunked_upload_forwarded_verbatim(proxy, upstream):
    data = os.urandom(50_000)
    body = chunked(data, sizes=(1, 7, 4096, 33000), ext=";name=\"v\"", trailers=["X-Trailer: t"])
    raw = get(upstream, "/echo/raw-chunked", [("Transfer-Encoding", "chunked")], method="POST") + body
    with Conn.open(proxy.addr) as c:
        # the body in odd pieces, some splitting the size lines
        c.send(raw[:len(raw) - len(body) + 2])
        for i in range(len(raw) - len(body) + 2, len(raw), 997):
            c.send(raw[i:i + 997])
        r = read_response(c)
        assert r.status == 200 and r.body == data
        c.send(get(upstream, "/small"))
        assert read_response(c).body == SMALL_BODY
    rec = upstream.requests("/echo/raw-chunked")[-1]
    assert rec.raw_body == body, "the chunked body was not forwarded byte for byte"


def test_identical_duplicate_content_length(proxy, upstream):
    raw = (f"POST {url(upstream, '/echo/dup-cl')} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
           "Content-Length: 5\r\n\r\nhello").encode()
    r, c = exchange(proxy.addr, raw)
    c.close()
    assert r.status == 200 and r.body == b"hello"


def test_connect_raw_with_pipelined_bytes(proxy, echo_server):
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        # the first tunnel bytes ride behind the CONNECT head
        c.send(f"CONNECT 127.0.0.1:{echo_server.port} HTTP/1.1\r\nHost: x\r\n\r\nearly bytes".encode())
        head = c.read_until(b"\r\n\r\n")
        assert head == b"HTTP/1.1 200 Connection established\r\n\r\n"
        assert c.read_exact(len(b"early bytes")) == b"early bytes"
        payload = os.urandom(256 * 1024)
        c.send(payload)
        assert c.read_exact(len(payload), timeout=10) == payload
        c.sock.shutdown(socket.SHUT_WR)
        assert c.read_to_eof() == b""
    check_access(proxy, client, cmd="CONNECT", reply="200", end="done",
                 dst=f"127.0.0.1:{echo_server.port}")


@pytest.mark.skipif(not ferrylib.HAVE_IPV6, reason="no IPv6 loopback")
def test_connect_ipv6_literal(proxy, echo_server6):
    with Conn.open(proxy.addr) as c:
        c.send(f"CONNECT [::1]:{echo_server6.port} HTTP/1.1\r\n\r\n".encode())
        assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200 ")
        echo_roundtrip(c.sock, b"over v6")


def test_websocket_upgrade_becomes_tunnel(proxy, upstream):
    raw = get(upstream, "/ws/chat", [("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                     ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                                     ("Sec-WebSocket-Version", "13")])
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(raw)
        r = read_response(c)
        assert r.status == 101, r
        assert r.headers.get("Upgrade") == "websocket"
        assert r.headers.get("Connection") == "Upgrade"
        assert r.headers.get("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        # from here on, bytes both ways
        for size in (1, 100, 200_000):
            payload = os.urandom(size)
            c.send(payload)
            assert c.read_exact(size, timeout=10) == payload
        c.sock.shutdown(socket.SHUT_WR)
        assert c.read_to_eof() == b""
    rec = upstream.requests("/ws/chat")[-1]
    assert rec.headers.get("Upgrade") == "websocket"
    assert rec.headers.get("Connection") == "Upgrade"
    assert rec.headers.get("Sec-WebSocket-Key") == "dGhlIHNhbXBsZSBub25jZQ=="
    e = proxy.access_for(client)
    assert e["reply"] == "101" and e["cmd"] == "GET", e


def test_bad_chunk_mid_body(proxy, upstream):
    raw = get(upstream, "/echo/bad-chunk", [("Transfer-Encoding", "chunked")], method="POST")
    r = expect_error(proxy.addr, raw + b"5\r\nhello\r\nzz\r\n", 400)
    assert b"chunked" in r.body
    # the origin may have seen the head, never a complete request
    time.sleep(0.2)
    assert all(not rec.complete for rec in upstream.requests("/echo/bad-chunk"))


def test_upgrade_declined_stays_http(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/small/declined", [("Upgrade", "websocket"), ("Connection", "Upgrade")]))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
        c.send(get(upstream, "/small/after-declined"))
        assert read_response(c).body == SMALL_BODY
    assert upstream.requests("/small/declined")[-1].headers.get("Upgrade") == "websocket"


# ---- what the origin may get wrong ------------------------------------------------


def test_response_head_dribbled(proxy, upstream):
    r, c = exchange(proxy.addr, get(upstream, "/dribble"), timeout=10)
    with c:
        assert r.status == 200 and r.headers.get("X-Dribble") == "yes" and r.body == SMALL_BODY
        c.send(get(upstream, "/small/after-dribble"))
        assert read_response(c).body == SMALL_BODY


def test_response_with_100_fields(proxy, upstream):
    # 99 fields and a Content-Length: the most a head may hold
    r, c = exchange(proxy.addr, get(upstream, "/fields/99"))
    c.close()
    assert r.status == 200 and r.body == b"fields" and r.headers.get("X-F98") == "98"


@pytest.mark.parametrize("path", ["/bighead", "/fields/100", "/resp-cl-te", "/ws-unasked"],
                         ids=["head-too-large", "101-fields", "cl-and-te", "unasked-101"])
def test_bad_response_is_502(proxy, upstream, path):
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        r = expect_error(proxy.addr, get(upstream, path), 502, conn=c)
    assert b"malformed response" in r.body
    check_access(proxy, client, reply="502", end="bad-response")


def test_bad_chunk_in_response_cuts_the_client_off(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(get(upstream, "/bad-chunk"))
        head = c.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        rest = c.read_to_eof()
        assert not rest.endswith(b"0\r\n\r\n"), rest  # never a clean end
        assert b"zz" not in rest
    check_access(proxy, client, end="bad-response")


def test_extra_bytes_after_response_not_forwarded(proxy, upstream):
    """Bytes an origin sends beyond its response are no answer to the
    client's next request (response queue poisoning)."""
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/extra"))
        assert read_response(c).body == b"real body"
        c.send(get(upstream, "/small/after-extra"))
        r = read_response(c)
        assert r.body == SMALL_BODY and "X-Poison" not in r.headers
    first = upstream.requests("/extra")[-1]
    second = upstream.requests("/small/after-extra")[-1]
    assert first.conn != second.conn, "an origin connection with unasked-for bytes was reused"


def test_head_response_with_a_body_anyway(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/head-body", method="HEAD"))
        r = read_response(c, head_request=True)
        assert r.status == 200 and r.headers.get("Content-Length") == str(len(SMALL_BODY))
        c.send(get(upstream, "/small/after-head-body"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY


def test_interim_response_forwarded(proxy, upstream):
    r, c = exchange(proxy.addr, get(upstream, "/interim"))
    with c:
        assert r.status == 200 and r.body == b"after hints"
        assert len(r.interim) == 1 and r.interim[0].startswith(b"HTTP/1.1 103 ")
        assert b"Link: </s.css>; rel=preload\r\n" in r.interim[0]


def test_expect_100_continue(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/echo/expect", [("Expect", "100-continue"), ("Content-Length", "5")],
                   method="POST"))
        assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 100 ")
        c.send(b"hello")
        r = read_response(c)
        assert r.status == 200 and r.body == b"hello"


def test_stale_pooled_connection(proxy, tcp_server):
    """An origin that closes a kept-alive connection on the next request: a
    GET (nothing of a body sent) is sent again on a fresh connection; a
    POST whose body went out is not, and gets a 502."""
    up = tcp_server(HttpUpstream)
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(get(up, "/die-next"))
        assert read_response(c).body == b"first answer"
        c.send(get(up, "/small/retried"))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY
    recs = up.requests("/small/retried")
    assert [r.conn for r in recs] == [0, 1], recs
    # bytes: the request counts once, as sent to the connection that answered
    e = entries_for(proxy, client, 2)[1]
    assert (e["up"], e["down"]) == (str(len(recs[1].head)), str(len(r.head) + len(r.raw_body))), e
    with Conn.open(proxy.addr) as c:
        c.send(get(up, "/die-next/2"))
        assert read_response(c).body == b"first answer"
        expect_error(proxy.addr, get(up, "/echo/not-retried", method="POST", body=b"once only"), 502,
                     conn=c)
    assert len(up.requests("/echo/not-retried")) == 1, "a POST was sent twice"


def test_early_response_is_the_only_response(proxy, upstream):
    """The origin answers 413 and closes while the client is still sending
    its body. The client must get that response and then the close; once a
    response has gone out, ferry must not append an error response of its
    own (a second response on the connection would be taken as the answer
    to the client's next request)."""
    head = get(upstream, "/early-413", method="POST", headers=[("Content-Length", "400000")])
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(head + b"x" * 1000)
        r = read_response(c)
        assert r.status == 413 and r.body == b"too big"
        time.sleep(0.1)  # the origin has closed (reset) by now
        try:
            for _ in range(8):
                c.send(b"y" * 16384)
                time.sleep(0.01)
        except OSError:
            pass  # ferry may have closed already
        rest = c.read_to_eof()
    assert rest == b"", f"after the origin's 413, ferry sent: {rest[:120]!r}"
    e = proxy.access_for(client)
    assert e["reply"] == "413", e


def test_bad_chunk_after_early_response_adds_no_response(proxy, upstream):
    """Same rule when the client's chunked body turns out invalid after the
    origin has already answered: the client is cut off, with no 400 after
    the 200 it already has."""
    head = get(upstream, "/early-200", [("Transfer-Encoding", "chunked")], method="POST")
    with Conn.open(proxy.addr) as c:
        c.send(head + b"5\r\nhello\r\n")
        r = read_response(c)
        assert r.status == 200 and r.body == b"early"
        time.sleep(0.05)
        c.send(b"zz\r\n")
        rest = c.read_to_eof()
    assert rest == b"", f"after the origin's 200, ferry sent: {rest[:120]!r}"


def test_client_connection_close(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        c.send(get(upstream, "/small", [("Connection", "close")]))
        r = read_response(c)
        assert r.body == SMALL_BODY and r.headers.get("Connection") == "close"
        assert c.read_to_eof() == b""


def test_bad_request_after_good_one(proxy, upstream):
    """A malformed second request on a kept-alive connection is answered
    400 and closed, and, like any request, gets its access-log line."""
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(get(upstream, "/small"))
        assert read_response(c).body == SMALL_BODY
        expect_error(proxy.addr, b"BAD\r\n\r\n", 400, conn=c)
    time.sleep(0.3)
    entries = entries_for(proxy, client, 1)
    assert [e["reply"] for e in entries] == ["200", "400"], (
        f"access lines of this connection: {[(e['cmd'], e['reply'], e['end']) for e in entries]}")


@pytest.mark.skipif(not ferrylib.HAVE_IPV6, reason="no IPv6 loopback")
def test_ipv6_literal_target(proxy, tcp_server):
    up6 = tcp_server(HttpUpstream, "::1")
    r, c = exchange(proxy.addr, request_bytes("GET", f"HTTP://[::1]:{up6.port}/small", [("Host", "x")]))
    c.close()
    assert r.status == 200 and r.body == SMALL_BODY
    assert up6.requests()[-1].headers.get("Host") == f"[::1]:{up6.port}"


def test_http_options_pool_keepalive_via(ferry, tcp_server):
    """pool_size = 0: every request dials; keepalive_timeout closes an idle
    client; via names the pseudonym."""
    up = tcp_server(HttpUpstream)
    f = ferry(raw_config=config_text(http={"pool_size": "0", "keepalive_timeout": "1s", "via": "proxy-7"}))
    with Conn.open(f.addr) as c:
        client = c.sock.getsockname()
        for i in range(2):
            c.send(get(up, f"/small/opt{i}"))
            r = read_response(c)
            assert r.body == SMALL_BODY and r.headers.get("Via") == "1.1 proxy-7"
        t0 = time.monotonic()
        assert c.read_to_eof(timeout=6) == b""
        elapsed = time.monotonic() - t0
    assert 0.7 <= elapsed <= 4, f"idle client closed after {elapsed:.2f}s (keepalive_timeout 1s)"
    assert up.connections() == 2
    assert up.requests()[-1].headers.get("Via") == "1.1 proxy-7"
    assert len(entries_for(f, client, 2)) == 2


def test_http_options_no_via_pool_idle(ferry, tcp_server):
    up = tcp_server(HttpUpstream)
    f = ferry(raw_config=config_text(http={"via": "no", "pool_idle": "1s"}))
    r, c = exchange(f.addr, get(up, "/hop"))
    c.close()
    assert r.status == 200
    assert r.headers.all("Via") == ["1.1 origin-side"]  # theirs kept, none of ours
    assert "Via" not in up.requests()[-1].headers
    # the idle pooled connection goes after about pool_idle
    assert up.wait_closed(1, timeout=5), "the pooled origin connection was never closed"


# ---- errors --------------------------------------------------------------------------


def _many_fields(n):
    return "".join(f"X-F{i}: {i}\r\n" for i in range(n))


ERRORS = [
    # id, raw (with {up} for the origin's port), status, text in the body
    ("no-version", "GET http://127.0.0.1:{up}/\r\n\r\n", 400, b"malformed"),
    ("garbage", "HELLO\r\n\r\n", 400, b"malformed"),
    ("method-not-token", "GE(T http://127.0.0.1:{up}/ HTTP/1.1\r\n\r\n", 400, b"malformed"),
    ("origin-form", "GET /small HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n", 400, b"absolute URI"),
    ("asterisk", "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:{up}\r\n\r\n", 400, b"absolute URI"),
    ("https-absolute", "GET https://127.0.0.1:{up}/ HTTP/1.1\r\n\r\n", 400, b"CONNECT"),
    ("userinfo", "GET http://u:p@127.0.0.1:{up}/ HTTP/1.1\r\n\r\n", 400, b"absolute URI"),
    ("connect-no-port", "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", 400, b"host:port"),
    ("connect-absolute", "CONNECT http://127.0.0.1:{up}/ HTTP/1.1\r\n\r\n", 400, b"host:port"),
    ("coding-gzip", "POST http://127.0.0.1:{up}/echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
     501, b"transfer coding"),
    ("version-2", "GET http://127.0.0.1:{up}/ HTTP/2.0\r\n\r\n", 505, b"HTTP/1.0 and HTTP/1.1"),
    ("version-1.2", "GET http://127.0.0.1:{up}/ HTTP/1.2\r\n\r\n", 505, b"HTTP/1.0 and HTTP/1.1"),
    ("line-too-long", "GET http://127.0.0.1:{up}/" + "a" * MAX_LINE + " HTTP/1.1\r\n\r\n", 414,
     b"too long"),
    ("head-too-large", "GET http://127.0.0.1:{up}/ HTTP/1.1\r\nX-Big: " + "b" * MAX_HEADER + "\r\n\r\n",
     431, b"too large"),
    ("too-many-fields", "GET http://127.0.0.1:{up}/ HTTP/1.1\r\n" + _many_fields(101) + "\r\n", 431,
     b"too large"),
    ("bare-lf", "GET http://127.0.0.1:{up}/ HTTP/1.1\nHost: x\n\n", 400, b"malformed"),
    ("nul", "GET http://127.0.0.1:{up}/\0 HTTP/1.1\r\n\r\n", 400, b"malformed"),
]


@pytest.mark.parametrize("raw,status,text", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_status(proxy, upstream, raw, status, text):
    before = upstream.connections()
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        r = expect_error(proxy.addr, raw.format(up=upstream.port).encode("latin-1"), status, conn=c)
    assert text in r.body, r.body
    assert r.reason and r.version == "HTTP/1.1"
    check_access(proxy, client, reply=str(status), end="bad-request")
    assert upstream.connections() == before, "the origin was contacted"


def test_error_status_lengths_are_limits(proxy, upstream):
    # exactly at the limits: served
    target = url(upstream, "/small/")
    target += "a" * (MAX_LINE - len(f"GET {target} HTTP/1.1"))
    line = f"GET {target} HTTP/1.1"
    assert len(line) == MAX_LINE
    r, c = exchange(proxy.addr, f"{line}\r\nHost: x\r\n\r\n".encode())
    c.close()
    assert r.status == 200
    head = f"{line}\r\nX-Pad: ".encode()
    head += b"p" * (MAX_HEADER - len(head) - 4) + b"\r\n\r\n"
    assert len(head) == MAX_HEADER
    r, c = exchange(proxy.addr, head)
    c.close()
    assert r.status == 200
    # one byte over: refused
    expect_error(proxy.addr, head[:-4] + b"p\r\n\r\n", 431)


def test_502_refused(proxy):
    holder, port = unused_refused_port()
    with holder:
        with Conn.open(proxy.addr) as c:
            client = c.sock.getsockname()
            r = expect_error(proxy.addr, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n".encode(), 502,
                             conn=c)
        assert b"refused" in r.body
        check_access(proxy, client, cmd="GET", reply="502", dst=f"127.0.0.1:{port}")
        r = expect_error(proxy.addr, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode(), 502)
        assert b"refused" in r.body


@pytest.mark.parametrize("raw", ["GET http://no-such-host.invalid/ HTTP/1.1\r\n\r\n",
                                 "CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n"],
                         ids=["get", "connect"])
def test_502_unresolvable(proxy, raw):
    r = expect_error(proxy.addr, raw.encode(), 502, timeout=15)
    assert b"does not resolve" in r.body


def test_504_connect_timeout(proxy, blackhole):
    t0 = time.monotonic()
    r = expect_error(proxy.addr, f"GET http://127.0.0.1:{blackhole}/ HTTP/1.1\r\n\r\n".encode(), 504,
                     timeout=10)
    elapsed = time.monotonic() - t0
    assert 0.8 <= elapsed <= 6, f"504 after {elapsed:.2f}s (connect_timeout 1s)"
    assert b"in time" in r.body


def test_408_partial_head(proxy, upstream):
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        t0 = time.monotonic()
        c.send(f"GET http://127.0.0.1:{upstream.port}/small HTTP/1.1\r\nHost: x".encode())
        r = read_response(c, timeout=HANDSHAKE_TIMEOUT_S + 5)
        elapsed = time.monotonic() - t0
        assert r.status == 408 and r.headers.get("Connection") == "close"
        assert c.read_to_eof() == b""
    assert HANDSHAKE_TIMEOUT_S * 0.8 <= elapsed <= HANDSHAKE_TIMEOUT_S + 4
    check_access(proxy, client, reply="408")


# ---- request smuggling ---------------------------------------------------------------

POST = "POST http://127.0.0.1:{up}/echo/smuggle-{id} HTTP/1.1\r\nHost: x\r\n"
SMUGGLING = [
    # id, fields (after Host), body, status
    ("cl-te", "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\nG", 400),
    ("te-cl", "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n", "0\r\n\r\nG", 400),
    ("cl-differ", "Content-Length: 5\r\nContent-Length: 6\r\n", "hello!", 400),
    ("cl-list-differ", "Content-Length: 5, 6\r\n", "hello!", 400),
    ("cl-non-digit", "Content-Length: 5a\r\n", "hello", 400),
    ("cl-plus", "Content-Length: +5\r\n", "hello", 400),
    ("cl-negative", "Content-Length: -1\r\n", "hello", 400),
    ("cl-hex", "Content-Length: 0x5\r\n", "hello", 400),
    ("cl-inner-space", "Content-Length: 5 5\r\n", "hello", 400),
    ("cl-empty", "Content-Length:\r\n", "hello", 400),
    ("te-gzip", "Transfer-Encoding: gzip\r\n", "", 501),
    ("te-gzip-chunked", "Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n", 501),
    ("te-chunked-identity", "Transfer-Encoding: chunked, identity\r\n", "0\r\n\r\n", 501),
    ("te-twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n", 501),
    ("te-quoted", "Transfer-Encoding: \"chunked\"\r\n", "0\r\n\r\n", 501),
    ("obs-fold", "X-A: a\r\n b\r\n", "", 400),
    ("obs-fold-te", "X-A: a\r\n Transfer-Encoding: chunked\r\n", "0\r\n\r\n", 400),
    ("space-before-colon", "Content-Length : 5\r\n", "hello", 400),
    ("tab-before-colon", "Transfer-Encoding\t: chunked\r\n", "0\r\n\r\n", 400),
    ("empty-name", ": x\r\n", "", 400),
    ("ctl-in-value", "X-A: a\x01b\r\n", "", 400),
    ("del-in-value", "X-A: a\x7fb\r\n", "", 400),
    ("nul-in-value", "X-A: a\x00b\r\n", "", 400),
    ("bare-cr", "X-A: a\rContent-Length: 5\r\n", "hello", 400),
    ("bare-lf", "X-A: a\nContent-Length: 5\r\n", "hello", 400),
    ("bad-name", "Content-Length\x0b: 5\r\n", "hello", 400),
]


def _smuggle_raw(case_id, fields, body, version="HTTP/1.1"):
    head = POST.replace("HTTP/1.1", version)
    return lambda up: (head.format(up=up, id=case_id) + fields + "\r\n" + body).encode("latin-1")


@pytest.mark.parametrize("case_id,fields,body,status", SMUGGLING, ids=[s[0] for s in SMUGGLING])
def test_smuggling_refused(proxy, upstream, case_id, fields, body, status):
    before = upstream.connections()
    raw = _smuggle_raw(case_id, fields, body)(upstream.port)
    expect_error(proxy.addr, raw, status)
    time.sleep(0.05)
    assert upstream.requests(f"/echo/smuggle-{case_id}") == [], "the origin saw the request"
    assert upstream.connections() == before, "the origin was contacted"


def test_smuggling_te_on_http10(proxy, upstream):
    before = upstream.connections()
    raw = _smuggle_raw("te-http10", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n", "HTTP/1.0")(upstream.port)
    expect_error(proxy.addr, raw, 400)
    assert upstream.requests("/echo/smuggle-te-http10") == []
    assert upstream.connections() == before


def test_smuggling_empty_content_length_after_valid(proxy, upstream):
    """'Content-Length: 5' then an empty 'Content-Length:' is invalid framing
    (RFC 9110 8.6: 1*DIGIT); ferry must refuse it rather than forward both
    fields to an origin that may read the empty one differently."""
    before = upstream.connections()
    raw = _smuggle_raw("cl-valid-then-empty", "Content-Length: 5\r\nContent-Length:\r\n",
                       "hello")(upstream.port)
    try:
        expect_error(proxy.addr, raw, 400)
        refused = None
    except AssertionError as e:
        refused = str(e)
    time.sleep(0.05)
    seen = upstream.requests("/echo/smuggle-cl-valid-then-empty")
    assert refused is None and not seen, (
        f"ferry did not refuse it ({refused}); the origin received Content-Length fields "
        f"{seen[0].headers.all('Content-Length') if seen else None}")
    assert upstream.connections() == before


# ---- authentication --------------------------------------------------------------

ALICE_PW = "alice-http-secret"
BOB_PW = "bob plain pw"


@pytest.fixture(scope="module")
def auth_proxy(module_ferry):
    (module_ferry.workdir / "users.txt").write_text(
        passwd_line("alice", ALICE_PW) + "\n" + f"bob:plain:{BOB_PW}\n")
    return module_ferry(raw_config=config_text(auth={"userlist": "users.txt", "max_failures": "0"}))


def basic(user, pw):
    import base64
    return "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()


@pytest.mark.parametrize("user,pw", [("alice", ALICE_PW), ("bob", BOB_PW)], ids=["argon2id", "plain"])
def test_auth_curl_good(auth_proxy, http_server, tmp_path, user, pw):
    out = tmp_path / "small.txt"
    start = auth_proxy.log_offset()
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{auth_proxy.port}", "--proxy-user", f"{user}:{pw}",
                  "-o", str(out), http_server.url("small.txt")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert ferrylib.sha256(out.read_bytes()) == http_server.files["small.txt"]
    auth_proxy.wait_log(rf"access .* user={user} cmd=GET .*reply=200 end=done", start=start)


def test_auth_curl_tunnel(auth_proxy, http_server, tmp_path):
    out = tmp_path / "small.txt"
    r = run_curl(["--fail", "-p", "-x", f"http://127.0.0.1:{auth_proxy.port}", "--proxy-user",
                  f"alice:{ALICE_PW}", "-o", str(out), http_server.url("small.txt")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert ferrylib.sha256(out.read_bytes()) == http_server.files["small.txt"]


def test_auth_curl_bad_password(auth_proxy, http_server):
    r = run_curl(["-o", "/dev/null", "-w", "%{http_code}", "-x", f"http://127.0.0.1:{auth_proxy.port}",
                  "--proxy-user", "alice:wrong", http_server.url("small.txt")])
    assert r.stdout == b"407", r


@pytest.mark.parametrize("cred", [None, basic("alice", "wrong"), basic("nobody", "x"), "Basic !!!!",
                                  "Bearer abc", basic("alice", "")[:-2], "Basic " + "YWxpY2U="],
                         ids=["none", "wrong-password", "unknown-user", "bad-base64", "bearer",
                              "truncated", "no-colon"])
def test_auth_refused(auth_proxy, upstream, cred):
    before = upstream.connections()
    fields = [("Host", "x")] + ([("Proxy-Authorization", cred)] if cred else [])
    with Conn.open(auth_proxy.addr) as c:
        client = c.sock.getsockname()
        r = expect_error(auth_proxy.addr, request_bytes("GET", url(upstream, "/small"), fields), 407, conn=c)
    assert r.headers.get("Proxy-Authenticate") == 'Basic realm="ferry"'
    e = auth_proxy.access_for(client)
    assert e["reply"] == "407" and e["end"] in ("auth-required", "auth-failed"), e
    assert upstream.connections() == before


def test_auth_every_request_carries_credentials(auth_proxy, upstream):
    good = ("Proxy-Authorization", basic("bob", BOB_PW))
    with Conn.open(auth_proxy.addr) as c:
        for i in range(2):
            c.send(request_bytes("GET", url(upstream, f"/small/auth{i}"), [("Host", "x"), good]))
            r = read_response(c)
            assert r.status == 200 and r.body == SMALL_BODY
        # the origin never sees the credentials
        assert "Proxy-Authorization" not in upstream.requests("/small/auth1")[-1].headers
        c.send(request_bytes("GET", url(upstream, "/small/auth-missing"), [("Host", "x")]))
        r = read_response(c)
        assert r.status == 407 and r.headers.get("Proxy-Authenticate") == 'Basic realm="ferry"'
        assert c.read_to_eof() == b""


# ---- users on one keep-alive connection -----------------------------------------------

CAROL_PW = "carol pw"
DAVE_PW = "dave pw"


def test_keepalive_user_switch_moves_the_user_slot(ferry, tcp_server):
    """limits.per_user = 1. A request that authenticates as another user
    than the one before on the same connection takes the slot over: the
    new user is admitted (and counted), the former one's slot is given
    back. A user already held elsewhere is refused with 429, also on a
    connection another user opened."""
    (ferry.workdir / "users.txt").write_text(f"carol:plain:{CAROL_PW}\ndave:plain:{DAVE_PW}\n")
    f = ferry(raw_config=config_text(auth={"userlist": "users.txt"},
                                     extra="[limits]\nper_user = 1\n"))
    up = tcp_server(HttpUpstream)
    creds = {"carol": basic("carol", CAROL_PW), "dave": basic("dave", DAVE_PW)}

    def req(user, path):
        return request_bytes("GET", url(up, path), [("Host", "x"), ("Proxy-Authorization", creds[user])])

    def ok(c, user, path):
        c.send(req(user, path))
        r = read_response(c)
        assert r.status == 200 and r.body == SMALL_BODY, (user, path, r.status, r.body)

    with Conn.open(f.addr) as s, Conn.open(f.addr) as t, Conn.open(f.addr) as u:
        s_client, u_client = s.sock.getsockname(), u.sock.getsockname()
        ok(s, "carol", "/small/s1")
        ok(s, "dave", "/small/s2")  # s is dave's now ...
        ok(t, "carol", "/small/t1")  # ... and carol's slot is free again
        r = expect_error(f.addr, req("dave", "/small/u1"), 429, conn=u)  # dave is held by s
        assert b"too many sessions" in r.body
        expect_error(f.addr, req("carol", "/small/s3"), 429, conn=s)  # carol is held by t
        # s gave dave's slot back when it turned to carol: dave may start again
        with Conn.open(f.addr) as v:
            ok(v, "dave", "/small/v1")
        ok(t, "carol", "/small/t2")  # t was not disturbed
    lines = entries_for(f, s_client, 3)
    assert [(e["user"], e["reply"]) for e in lines] == [("carol", "200"), ("dave", "200"), ("carol", "429")]
    assert lines[2]["end"] == "user-limit", lines
    e = f.access_for(u_client)
    assert (e["user"], e["reply"], e["end"]) == ("dave", "429", "user-limit"), e
    assert [r.path for r in up.requests()] == ["/small/s1", "/small/s2", "/small/t1", "/small/v1",
                                               "/small/t2"]


# ---- a silent origin: response_timeout ---------------------------------------------

RESPONSE_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def quick_proxy(module_ferry):
    """response_timeout = 1s, iotimeout off: only the origin's silence ends
    an exchange."""
    return module_ferry(raw_config=config_text(
        http={"response_timeout": f"{RESPONSE_TIMEOUT_S:g}s"}))


def test_silent_origin_gets_504(quick_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    with Conn.open(quick_proxy.addr) as c:
        client = c.sock.getsockname()
        t0 = time.monotonic()
        r = expect_error(quick_proxy.addr, get(up, "/silent/1"), 504, timeout=6.0, conn=c)
        waited = time.monotonic() - t0
    assert r.body == b"ferry: the destination did not answer in time\n"
    assert waited >= RESPONSE_TIMEOUT_S * 0.9, f"504 after {waited:.2f}s"
    check_access(quick_proxy, client, cmd="GET", reply="504", end="upstream-timeout",
                 dst=f"127.0.0.1:{up.port}")
    assert up.wait_closed(1), "the origin connection was left open"
    assert len(up.requests("/silent/1")) == 1


def test_origin_silent_mid_body_closes_without_second_response(quick_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    with Conn.open(quick_proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(get(up, "/stall"))
        head = c.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and f"Content-Length: {STALL_LENGTH}\r\n".encode() in head
        rest = c.read_to_eof(timeout=6.0)
    # what the origin sent, then the close: no 504 behind it
    assert rest == b"s" * STALL_SENT, f"{len(rest)} bytes after the head, ending {rest[-80:]!r}"
    check_access(quick_proxy, client, cmd="GET", reply="200", end="upstream-timeout")
    assert up.wait_closed(1), "the origin connection was left open"


def test_client_not_reading_is_not_origin_silence(quick_proxy, tcp_server):
    """A client that stops reading holds the origin back (backpressure):
    longer than response_timeout, and the response still arrives whole."""
    up = tcp_server(HttpUpstream)
    n = 64 << 20  # far beyond what the socket buffers on the way can hold
    want = payload(n)  # made now: the origin must not be slow to start for its own reasons
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(ferrylib.IO_TIMEOUT)
    s.connect(quick_proxy.addr)
    with Conn(s) as c:
        client = s.getsockname()
        c.send(get(up, f"/bytes/{n}"))
        head = c.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and f"Content-Length: {n}\r\n".encode() in head
        time.sleep(2.5 * RESPONSE_TIMEOUT_S)
        assert f"/bytes/{n}" not in up.answered(), "the whole body fit in the buffers: nothing held back"
        assert c.read_exact(n, timeout=60) == want
        c.send(get(up, "/small/after-slow-reader"))
        assert read_response(c).body == SMALL_BODY
    entries = entries_for(quick_proxy, client, 2)
    assert [(e["reply"], e["end"]) for e in entries] == [("200", "done"), ("200", "done")], entries


# ---- a silent client: body_timeout, and who iotimeout blames --------------------------

BODY_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def body_proxy(module_ferry):
    """body_timeout = 1000ms (values down to 100 ms are allowed, for tests
    like these), iotimeout not set: on loopback there is none."""
    return module_ferry(raw_config=config_text(http={"body_timeout": f"{BODY_TIMEOUT_S * 1000:g}ms"}))


@pytest.fixture(scope="module")
def idle_proxy(module_ferry):
    """iotimeout = 1s, body_timeout and response_timeout at their 60 s
    defaults: only iotimeout can end a stalled exchange, and the log must
    still name the side that stalled."""
    return module_ferry(raw_config=config_text(config={"iotimeout": "1s"}))


def _post_head(up, path: str, length: int, headers=()) -> bytes:
    return get(up, path, [("Content-Length", str(length)), *headers], method="POST")


def _stall_then_408(proxy, up, first: bytes, path: str, expect_100: bool = False,
                    timeout: float = 15.0) -> tuple[float, tuple]:
    """Send first (a head and maybe part of the body), optionally read the
    100 Continue, then say nothing: a 408 with Connection: close, then EOF.
    Returns (seconds until the 408, client address)."""
    with Conn.open(proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(first)
        if expect_100:
            assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 100 ")
        t0 = time.monotonic()
        r = read_response(c, timeout=timeout)
        waited = time.monotonic() - t0
        assert r.status == 408, (r.status, r.body)
        assert r.headers.get("Connection") == "close" and r.body == b"ferry: the request body did not arrive in time\n"
        assert c.read_to_eof(timeout=5) == b""
    # the origin got the head and what came of the body, then a close
    recs = up.wait_requests(1, path)
    assert not recs[0].complete, recs[0]
    assert up.wait_closed(1), "the origin connection was left open"
    return waited, client


def test_stalled_request_body_gets_408(body_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    waited, client = _stall_then_408(body_proxy, up, _post_head(up, "/echo/stall", 100) + b"x" * 10,
                                     "/echo/stall")
    assert waited >= BODY_TIMEOUT_S * 0.9, f"408 after {waited:.2f}s"
    check_access(body_proxy, client, cmd="POST", reply="408", end="client-timeout",
                 dst=f"127.0.0.1:{up.port}")


def test_expect_100_continue_then_silence_gets_408(body_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    waited, client = _stall_then_408(body_proxy, up,
                                     _post_head(up, "/echo/expect", 5, [("Expect", "100-continue")]),
                                     "/echo/expect", expect_100=True)
    assert waited >= BODY_TIMEOUT_S * 0.9, f"408 after {waited:.2f}s"
    check_access(body_proxy, client, cmd="POST", reply="408", end="client-timeout")


def test_chunked_body_stalled_between_chunks(body_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    first = get(up, "/echo/chunks", [("Transfer-Encoding", "chunked")], method="POST") + b"5\r\nhello\r\n3\r"
    _, client = _stall_then_408(body_proxy, up, first, "/echo/chunks")
    check_access(body_proxy, client, cmd="POST", reply="408", end="client-timeout")


def test_silent_origin_is_not_a_stalled_client(body_proxy, tcp_server):
    """A request without a body owes nothing: body_timeout does not run
    while the origin thinks (response_timeout does, at 60 s)."""
    up = tcp_server(HttpUpstream)
    with Conn.open(body_proxy.addr) as c:
        c.send(get(up, "/silent/think", method="POST", body=b"all of it"))
        up.wait_requests(1, "/silent/think")
        c.sock.settimeout(2.5 * BODY_TIMEOUT_S)
        with pytest.raises(socket.timeout):
            c.sock.recv(1)


def test_slow_body_that_keeps_coming_is_not_stalled(body_proxy, tcp_server):
    """body_timeout bounds the silence between reads, not the whole body."""
    up = tcp_server(HttpUpstream)
    body = b"0123456789" * 12
    with Conn.open(body_proxy.addr) as c:
        c.send(_post_head(up, "/echo/slow", len(body)))
        t0 = time.monotonic()
        for i in range(0, len(body), 10):  # gaps far below body_timeout, the whole far above
            time.sleep(BODY_TIMEOUT_S * 0.15)
            c.send(body[i:i + 10])
        took = time.monotonic() - t0
        r = read_response(c)
    assert r.status == 200 and r.body == body
    assert took > 1.5 * BODY_TIMEOUT_S, f"the body took only {took:.2f}s"


def test_stalled_body_after_an_early_response_closes(body_proxy, tcp_server):
    """The origin answered before the body was in: the client has its
    response, so no 408 can follow; a stalled body then ends the
    connection with a close, and the log names the client."""
    up = tcp_server(HttpUpstream)
    with Conn.open(body_proxy.addr) as c:
        client = c.sock.getsockname()
        c.send(_post_head(up, "/early-200", 1000) + b"y" * 10)
        r = read_response(c)
        assert r.status == 200 and r.body == b"early"
        assert c.read_to_eof(timeout=10) == b""
    check_access(body_proxy, client, cmd="POST", reply="200", end="client-timeout")


def test_iotimeout_blames_the_stalled_client(idle_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    waited, client = _stall_then_408(idle_proxy, up, _post_head(up, "/echo/idle", 100) + b"z" * 10,
                                     "/echo/idle")
    assert waited >= 0.9, f"408 after {waited:.2f}s (iotimeout 1s)"
    check_access(idle_proxy, client, cmd="POST", reply="408", end="client-timeout")


def test_iotimeout_blames_the_silent_origin(idle_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    with Conn.open(idle_proxy.addr) as c:
        client = c.sock.getsockname()
        r = expect_error(idle_proxy.addr, get(up, "/silent/idle"), 504, timeout=15.0, conn=c)
    assert r.body == b"ferry: the destination did not answer in time\n"
    check_access(idle_proxy, client, cmd="GET", reply="504", end="upstream-timeout")
    assert up.wait_closed(1), "the origin connection was left open"


def test_iotimeout_blames_a_client_that_does_not_read(ferry, tcp_server):
    """The origin sends, the client reads nothing: iotimeout ends it once
    the buffers on the way are full, and it is the client that stalled.
    iotimeout is 3 s here, not 1 s: a loaded machine's origin thread may
    take over a second to start sending, and that stall is the origin's."""
    idle_proxy = ferry(raw_config=config_text(config={"iotimeout": "3s"}))
    up = tcp_server(HttpUpstream)
    n = 64 << 20
    payload(n)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.settimeout(ferrylib.IO_TIMEOUT)
    s.connect(idle_proxy.addr)
    with Conn(s) as c:
        client = s.getsockname()
        c.send(get(up, f"/bytes/{n}"))
        e = idle_proxy.access_for(client, timeout=30)
    assert (e["reply"], e["end"]) == ("200", "client-timeout"), e


# ---- bandwidth limits on forwarded exchanges -------------------------------------------

MIB = 1 << 20


@pytest.fixture(scope="module")
def bw_proxy(module_ferry):
    return module_ferry(raw_config=config_text(extra="[limits]\nbandwidth_connection = 512k\n"))


def test_bandwidth_paces_forwarded_download(bw_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    n = 2 * MIB
    pid = bw_proxy.proc.pid
    with Conn.open(bw_proxy.addr, timeout=30) as c:
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        c.send(get(up, f"/bytes/{n}"))
        r = read_response(c, timeout=30)
        took, cpu = time.monotonic() - t0, cpu_seconds(pid) - cpu0
    assert r.status == 200 and len(r.body) == n and r.body == payload(n)
    # 2 MiB less a 128 KiB burst at 512 KiB/s is 3.75 s: never much faster
    assert took >= 3.0, f"2 MiB at 512 KiB/s took {took:.2f}s"
    assert cpu < 0.5 * took, f"ferry used {cpu:.2f}s CPU in {took:.2f}s: a busy loop?"


def test_bandwidth_paces_forwarded_upload(bw_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    data = payload(MIB)
    with Conn.open(bw_proxy.addr, timeout=30) as c:
        client = c.sock.getsockname()
        t0 = time.monotonic()
        c.send(get(up, "/small/upload", method="POST", body=data))
        r = read_response(c, timeout=30)
        took = time.monotonic() - t0
    assert r.status == 200 and r.body == SMALL_BODY
    rec = up.requests("/small/upload")[-1]
    assert rec.complete and rec.body == data
    # 1 MiB less the burst (128 KiB) and what came in with the head (at
    # most max_header, 64 KiB) at 512 KiB/s is 1.6 s
    assert took >= 1.2, f"1 MiB up at 512 KiB/s took {took:.2f}s"
    e = bw_proxy.access_for(client)
    # up: every byte the origin got (the head as forwarded, then the body)
    assert e["up"] == str(len(rec.head) + len(rec.raw_body)) and e["reply"] == "200", e


# ---- protocols per listener -----------------------------------------------------------


def test_listener_protocols(ferry, upstream):
    f = ferry(listens=(), raw_config=config_text(
        listen=["127.0.0.1:0 protocols=socks5", "127.0.0.1:0 protocols=http"]))
    socks_only, http_only = f.addrs
    http_req = request_bytes("GET", url(upstream, "/small/proto"), [("Host", "x")])

    def refused(addr, data, end):
        with open_client(addr) as s:
            client = s.getsockname()
            s.sendall(data)
            expect_closed_silently(s)
        check_access(f, client, reply="-", end=end)

    refused(socks_only, http_req, "protocol-not-enabled")
    refused(socks_only, bytes([4, 1, 0, 80, 127, 0, 0, 1, 0]), "protocol-not-enabled")
    refused(socks_only, b"\x16\x03\x01\x00\x05hello", "unknown-protocol")
    refused(http_only, greeting(), "protocol-not-enabled")
    refused(http_only, bytes([4, 1, 0, 80, 127, 0, 0, 1, 0]), "protocol-not-enabled")
    refused(http_only, b"\x00\x01", "unknown-protocol")
    refused(http_only, b"1 / HTTP/1.1\r\n\r\n", "unknown-protocol")
    # and each speaks its own
    with open_client(socks_only) as s:
        s.sendall(greeting())
        assert read_method(s) == 0
    r, c = exchange(http_only, http_req)
    c.close()
    assert r.status == 200 and r.body == SMALL_BODY


def test_global_protocols_key(ferry, upstream, echo_server):
    f = ferry(raw_config=config_text(config={"protocols": "socks5,socks4"}))
    with open_client(f.addr) as s:
        client = s.getsockname()
        s.sendall(request_bytes("GET", url(upstream, "/small"), [("Host", "x")]))
        expect_closed_silently(s)
    check_access(f, client, end="protocol-not-enabled")
    with open_client(f.addr) as s:
        s.sendall(bytes([4, 1]) + echo_server.port.to_bytes(2, "big") + bytes([127, 0, 0, 1, 0]))
        assert recv_exact(s, 8)[:2] == b"\x00\x5a"
        echo_roundtrip(s, b"socks4 still spoken")


# ---- after all that ----------------------------------------------------------------


def test_zz_health_after_bad_input(proxy, upstream, http_server, tmp_path):
    assert proxy.alive()
    r, c = exchange(proxy.addr, get(upstream, "/small/health"))
    with c:
        assert r.status == 200 and r.body == SMALL_BODY
    out = tmp_path / "small.txt"
    r = run_curl(["--fail", "-x", f"http://127.0.0.1:{proxy.port}", "-o", str(out),
                  http_server.url("small.txt")])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == http_server.files["small.txt"]
