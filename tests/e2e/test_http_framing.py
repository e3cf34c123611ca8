# SPDX-License-Identifier: BSD-2-Clause
"""HTTP message framing through the proxy, judged by a strict reference
parser (issue 13, F1: request smuggling and cross-user response poisoning).

A message's framing is what the proxy and the next hop must agree on.
These tests hold ferry to it from the outside:

  - the differential test: for every request shape ferry accepts, the
    bytes it forwards, captured by a raw origin socket, parse to exactly
    one request at h11 (Debian python3-h11), a strict HTTP/1.1 parser that
    shares no code with ferry; for every shape it refuses, the origin sees
    no request beyond a partial one;
  - the poisoning scenario exactly as the issue tells it (a Connection
    field naming Content-Length, a 32-byte body holding a request line,
    then another user of the same origin), and its response-direction twin;
  - the decisions of issue 13: identical repeated Content-Length values are
    merged into one, and the upstream connection that carried them is not
    pooled; an unterminated quoted string in a chunk extension is refused
    (400 for a request; for a response the client is cut off); a second
    Proxy-Authorization or Host is a 400; empty lines before a request
    line are ignored (a few).

ferry runs with one worker so that every request shares one upstream pool,
as the poisoning needs.
"""

import base64
import re
import socket
import time
from pathlib import Path

import h11
import pytest

from ferrylib import IO_TIMEOUT, ThreadedServer
from httplib import SMALL_BODY, Conn, HttpUpstream, config_text, expect_error, read_response

# ---- the strict reference -----------------------------------------------------------


def strict_requests(raw: bytes, closed: bool = True) -> tuple[list, bytes, str | None]:
    """Requests h11 reads from raw, one message cycle after another:
    (requests as (method, target, headers, body), bytes left unparsed,
    error or None). A message cut short by the close is an error."""
    reqs = []
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(raw)
    if closed:
        conn.receive_data(b"")
    cur = None
    while True:
        try:
            ev = conn.next_event()
        except h11.RemoteProtocolError as e:
            return reqs, b"", f"h11: {e}"
        if isinstance(ev, h11.Request):
            cur = [ev.method.decode(), ev.target.decode(), ev.headers, b""]
        elif isinstance(ev, h11.Data):
            cur[3] += bytes(ev.data)
        elif isinstance(ev, h11.EndOfMessage):
            reqs.append(tuple(cur))
            cur = None
            # answer it (h11 wants a response before the next cycle)
            conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
            conn.send(h11.EndOfMessage())
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                left, _ = conn.trailing_data
                return reqs, bytes(left), None
            conn.start_next_cycle()
        elif ev is h11.PAUSED:
            left, _ = conn.trailing_data
            return reqs, bytes(left), "h11: paused"
        elif ev is h11.NEED_DATA or isinstance(ev, h11.ConnectionClosed):
            return reqs, b"", None if cur is None else "h11: incomplete message"


# ---- a raw origin -------------------------------------------------------------------------

ORIGIN_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin"


class RawOrigin(ThreadedServer):
    """Records every byte of every connection, exactly as it arrived. Once
    h11 has read one complete request it answers ORIGIN_REPLY (with
    Connection: close, so ferry pools nothing) and keeps reading until
    ferry closes: whatever else comes is recorded too."""

    def __init__(self, host: str = "127.0.0.1", **kw):
        self.captured: list[bytes] = []
        super().__init__(host, conn_timeout=10.0, **kw)

    def handle(self, c, peer):
        raw = bytearray()
        conn = h11.Connection(h11.SERVER)
        answered = broken = False
        deadline = time.monotonic() + 10.0
        try:
            while time.monotonic() < deadline:
                c.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    data = c.recv(65536)
                except (socket.timeout, OSError):
                    break
                if not data:
                    break
                raw += data
                if answered or broken:
                    continue
                conn.receive_data(data)
                try:
                    while True:
                        ev = conn.next_event()
                        if ev in (h11.NEED_DATA, h11.PAUSED):
                            break
                        if isinstance(ev, h11.EndOfMessage):
                            c.sendall(ORIGIN_REPLY)
                            answered = True
                            break
                except h11.RemoteProtocolError:
                    broken = True  # judged later from the raw bytes
        finally:
            with self.lock:
                self.captured.append(bytes(raw))

    def all_captured(self, timeout: float = IO_TIMEOUT) -> list[bytes]:
        """The bytes of every connection, once each has ended."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                done, accepted = len(self.captured), len(self.peers)
                if done == accepted:
                    return list(self.captured)
            if time.monotonic() >= deadline:
                raise AssertionError(f"{accepted - done} origin connections still open")
            time.sleep(0.02)


# ---- fixtures -----------------------------------------------------------------------------

PW = "framing-pw"


@pytest.fixture(scope="module")
def proxy(module_ferry):
    return module_ferry(raw_config=config_text(config={"workers": "1"}))


@pytest.fixture(scope="module")
def auth_proxy(module_ferry):
    (module_ferry.workdir / "framing-users.txt").write_text(f"carol:plain:{PW}\n")
    return module_ferry(raw_config=config_text(config={"workers": "1"},
                                               auth={"userlist": "framing-users.txt"}))


def basic(user: str, pw: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()


# ---- the differential test ------------------------------------------------------------------

POISON = b"GET /POISON HTTP/1.1\r\nX-Ignore: "
assert len(POISON) == 32

# id, the request with {o} for the origin's host:port, what ferry must do:
# "forward" (the origin must then see exactly one request) or the status of
# ferry's refusal. Every shape is also judged by h11 whatever ferry decides.
SHAPES = [
    ("get", b"GET http://{o}/a HTTP/1.1\r\nHost: {o}\r\n\r\n", "forward"),
    ("get-http10", b"GET http://{o}/a HTTP/1.0\r\n\r\n", "forward"),
    ("post-cl", b"POST http://{o}/a HTTP/1.1\r\nHost: {o}\r\nContent-Length: 5\r\n\r\nhello", "forward"),
    ("post-cl-http10", b"POST http://{o}/a HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", "forward"),
    ("post-cl-0-pipelined", b"POST http://{o}/a HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
     b"GET http://{o}/second HTTP/1.1\r\n\r\n", "forward"),
    ("post-chunked", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5\r\nhello\r\n0\r\n\r\n", "forward"),
    ("chunked-upper", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: CHUNKED\r\n\r\n"
     b"5\r\nhello\r\n0\r\n\r\n", "forward"),
    ("chunk-ext-token", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;a=b;c\r\nhello\r\n0;z=1\r\n\r\n", "forward"),
    ("chunk-ext-quoted", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;a=\"x\\\"y;z\"\r\nhello\r\n0\r\n\r\n", "forward"),
    ("chunked-trailers", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5\r\nhello\r\n0\r\nX-T: 1\r\nContent-Length: 99\r\n\r\n", "forward"),
    ("cl-twice-identical", b"POST http://{o}/a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"
     b"hello", "forward"),
    ("cl-list-identical", b"POST http://{o}/a HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\nhello", "forward"),
    ("connection-names-other", b"POST http://{o}/a HTTP/1.1\r\nConnection: X-Foo, keep-alive\r\n"
     b"X-Foo: 1\r\nContent-Length: 5\r\n\r\nhello", "forward"),
    ("connection-te", b"GET http://{o}/a HTTP/1.1\r\nConnection: TE\r\nTE: trailers\r\n\r\n", "forward"),
    ("leading-crlf", b"\r\nGET http://{o}/a HTTP/1.1\r\n\r\n", "forward"),
    ("leading-crlf-4", b"\r\n\r\n\r\n\r\nGET http://{o}/a HTTP/1.1\r\n\r\n", "forward"),
    # the poisoning request, and its relatives
    ("connection-cl", b"POST http://{o}/a HTTP/1.1\r\nHost: {o}\r\nConnection: Content-Length\r\n"
     b"Content-Length: 32\r\n\r\n" + POISON, 400),
    ("connection-cl-case", b"POST http://{o}/a HTTP/1.1\r\nConnection: keep-alive, CONTENT-length\r\n"
     b"Content-Length: 32\r\n\r\n" + POISON, 400),
    ("connection-cl-second-field", b"POST http://{o}/a HTTP/1.1\r\nConnection: keep-alive\r\n"
     b"Content-Length: 32\r\nConnection: content-length\r\n\r\n" + POISON, 400),
    ("connection-te-chunked", b"POST http://{o}/a HTTP/1.1\r\nConnection: Transfer-Encoding\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400),
    ("connection-host", b"GET http://{o}/a HTTP/1.1\r\nHost: {o}\r\nConnection: host\r\n\r\n", 400),
    ("chunk-ext-unterminated", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;a=\"x\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-ext-quoted-crlf", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"1;a=\"\r\n0\r\n\r\nGET /SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n\"\r\nx\r\n0\r\n\r\n", 400),
    ("chunk-ext-space", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5 ;a=b\r\nhello\r\n0\r\n\r\n", 400),
    ("chunk-ext-bare-equals", b"POST http://{o}/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;=b\r\nhello\r\n0\r\n\r\n", 400),
    ("cl-differ", b"POST http://{o}/a HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    ("cl-te", b"POST http://{o}/a HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\n\r\n", 400),
    ("host-twice", b"GET http://{o}/a HTTP/1.1\r\nHost: {o}\r\nHost: evil.example\r\n\r\n", 400),
    ("proxy-authorization-twice", b"GET http://{o}/a HTTP/1.1\r\nProxy-Authorization: Basic eDp5\r\n"
     b"Proxy-Authorization: Basic eTp6\r\n\r\n", 400),
    ("leading-crlf-5", b"\r\n\r\n\r\n\r\n\r\nGET http://{o}/a HTTP/1.1\r\n\r\n", 400),
]


def judge_origin(origin: "RawOrigin", forwarded: bool, body: bytes | None = None) -> list[bytes]:
    """Every origin connection's bytes at h11: at most one request (a second
    one started behind the first, complete or not, is a desync), exactly
    one complete request when ferry forwarded it, and nothing smuggled."""
    captured = origin.all_captured()
    for i, data in enumerate(captured):
        reqs, left, err = strict_requests(data)
        where = f"origin connection {i} got {data!r}"
        assert len(reqs) == 0 or (len(reqs) == 1 and err is None and left == b""), (
            f"{len(reqs)} complete requests, then {err or 'bytes left'} {left!r}: {where}")
        assert b"POISON" not in data and b"SMUGGLED" not in data, where
        if forwarded:
            assert len(reqs) == 1 and err is None, f"{err}: {where}"
            method, target = reqs[0][:2]
            assert target.startswith("/"), where
            if body is not None and method == "POST" and reqs[0][3]:
                assert reqs[0][3] == body, where
    return captured


@pytest.mark.parametrize("shape,want", [(s[1], s[2]) for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_forwarded_bytes_are_one_request_at_a_strict_parser(proxy, tcp_server, shape, want):
    origin = tcp_server(RawOrigin)
    o = f"127.0.0.1:{origin.port}".encode()
    raw = shape.replace(b"{o}", o)
    pipelined = b"/second" in raw
    with Conn.open(proxy.addr) as c:
        c.send(raw)
        r = read_response(c)
        r2 = read_response(c) if pipelined and r.status == 200 else None
    # What the origin got, judged first: whatever ferry answered, no origin
    # connection may carry more than one request.
    captured = judge_origin(origin, forwarded=want == "forward", body=b"hello")
    if want == "forward":
        assert (r.status, r.body) == (200, b"origin"), f"not forwarded: {r.status} {r.body!r}"
        if pipelined:
            # the request behind: its own exchange, on its own origin connection
            assert r2 is not None and (r2.status, r2.body) == (200, b"origin")
        assert len(captured) == (2 if pipelined else 1), captured
    else:
        assert r.status == want and r.body.startswith(b"ferry: "), f"{r.status} {r.body!r}"
        assert r.headers.get("Connection") == "close"


CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "corpus" / "http1"
REQUEST_RE = re.compile(rb"^((?:\r\n)*[A-Za-z]+ http://)[^/ ]+")


def _corpus_requests() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if REQUEST_RE.match(p.read_bytes()))


@pytest.mark.parametrize("name", _corpus_requests())
def test_corpus_requests_are_one_request_at_a_strict_parser(proxy, tcp_server, name):
    """The absolute-form requests of the fuzz corpus, aimed at a raw origin:
    whatever ferry decides, the origin never sees more than one request per
    connection, and exactly one when ferry relays the origin's answer."""
    origin = tcp_server(RawOrigin)
    raw = REQUEST_RE.sub(lambda m: m.group(1) + f"127.0.0.1:{origin.port}".encode(),
                         (CORPUS / name).read_bytes(), count=1)
    with Conn.open(proxy.addr) as c:
        c.send(raw)
        try:
            r = read_response(c)
        except AssertionError:  # closed without an answer: judged by the origin alone
            r = None
    forwarded = r is not None and (r.status, r.body) == (200, b"origin")
    judge_origin(origin, forwarded=forwarded)
    assert r is None or forwarded or r.body.startswith(b"ferry: "), (r.status, r.body)


# ---- the poisoning scenario, as the issue tells it ------------------------------------------


def test_connection_content_length_cannot_poison_the_next_user(proxy, tcp_server):
    """User A sends Connection: Content-Length with a 32-byte body that is
    the start of a request; user B then asks the same origin for /small and
    must get /small's response, not /POISON's."""
    up = tcp_server(HttpUpstream)
    o = f"127.0.0.1:{up.port}"
    a_raw = (f"POST http://{o}/echo HTTP/1.1\r\nHost: {o}\r\nConnection: Content-Length\r\n"
             f"Content-Length: 32\r\n\r\n").encode() + POISON
    with Conn.open(proxy.addr) as a:
        a.send(a_raw)
        ra = read_response(a)
    with Conn.open(proxy.addr) as b:
        b.send(f"GET http://{o}/small HTTP/1.1\r\nHost: {o}\r\n\r\n".encode())
        rb = read_response(b)
    paths = [r.path for r in up.requests()]
    assert (rb.status, rb.body) == (200, SMALL_BODY), (
        f"user B got {rb.status} {rb.body[:60]!r} instead of its own response; origin saw {paths}")
    assert "/POISON" not in paths, paths
    assert ra.status == 400 and ra.headers.get("Connection") == "close", (ra.status, ra.body)
    assert paths == ["/small"], f"the refused request reached the origin: {paths}"


class ScriptedOrigin(ThreadedServer):
    """A keep-alive origin answering every request on a connection with
    reply (raw bytes); counts connections and requests."""

    def __init__(self, host: str = "127.0.0.1", reply: bytes = b"", **kw):
        self.reply = reply
        self.heads: list[tuple[int, bytes]] = []
        self.nconn = 0
        super().__init__(host, conn_timeout=10.0, **kw)

    def handle(self, c, peer):
        with self.lock:
            idx = self.nconn
            self.nconn += 1
        conn = Conn(c, 10.0)
        while True:
            try:
                head = conn.read_until(b"\r\n\r\n")
            except (AssertionError, OSError):
                return
            with self.lock:
                self.heads.append((idx, head))
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    try:
                        conn.read_exact(int(line.split(b":", 1)[1]))
                    except (AssertionError, OSError):
                        return
                    break
            c.sendall(self.reply)


def test_response_connection_content_length_is_502_and_not_pooled(proxy, tcp_server):
    """The response direction: an origin whose reply names Content-Length in
    Connection gets the client a 502 (never a keep-alive 200 without
    framing), and its connection is not reused."""
    origin = tcp_server(ScriptedOrigin, reply=b"HTTP/1.1 200 OK\r\nConnection: Content-Length\r\n"
                                              b"Content-Length: 5\r\n\r\nhello")
    o = f"127.0.0.1:{origin.port}"
    for i in range(2):
        with Conn.open(proxy.addr) as c:
            c.send(f"GET http://{o}/r{i} HTTP/1.1\r\nHost: {o}\r\n\r\n".encode())
            head = c.read_until(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 502 "), head
            assert b"\r\nConnection: close\r\n" in head, head
            r_body = c.read_to_eof(timeout=IO_TIMEOUT)
            assert r_body.startswith(b"ferry: "), r_body
    with origin.lock:
        conns = [idx for idx, _ in origin.heads]
    assert conns == [0, 1], f"origin connections per request: {conns} (a doubtful one was reused)"


@pytest.mark.parametrize("field", ["Transfer-Encoding", "Host"])
def test_response_connection_naming_framing_is_502(proxy, tcp_server, field):
    origin = tcp_server(ScriptedOrigin, reply=f"HTTP/1.1 200 OK\r\nConnection: {field}\r\n"
                                              "Content-Length: 5\r\n\r\nhello".encode())
    o = f"127.0.0.1:{origin.port}"
    expect_error(proxy.addr, f"GET http://{o}/ HTTP/1.1\r\nHost: {o}\r\n\r\n".encode(), 502)


# ---- repeated Content-Length --------------------------------------------------------------


def test_identical_content_lengths_merged_request(proxy, tcp_server):
    """'Content-Length: 5' twice in a request reaches the origin as one
    field, and the origin connection that carried it is not pooled."""
    origin = tcp_server(ScriptedOrigin, reply=b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    o = f"127.0.0.1:{origin.port}"
    with Conn.open(proxy.addr) as c:
        for fields in ("Content-Length: 5\r\nContent-Length: 5\r\n", "Content-Length: 5, 5\r\n"):
            c.send(f"POST http://{o}/dup HTTP/1.1\r\n{fields}\r\nhello".encode())
            r = read_response(c)
            assert (r.status, r.body) == (200, b"ok")
        c.send(f"GET http://{o}/next HTTP/1.1\r\n\r\n".encode())
        assert read_response(c).body == b"ok"
    with origin.lock:
        heads = list(origin.heads)
    for _, head in heads[:2]:
        cls = [ln for ln in head.lower().split(b"\r\n") if ln.startswith(b"content-length:")]
        assert cls == [b"content-length: 5"], head
    assert [idx for idx, _ in heads] == [0, 1, 2], f"origin connection per request: {heads}"


def test_identical_content_lengths_merged_response(proxy, tcp_server):
    """The same from an origin: the client gets one Content-Length, and the
    origin connection is not reused for the next request."""
    origin = tcp_server(ScriptedOrigin, reply=b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                                              b"Content-Length: 5\r\n\r\nhello")
    o = f"127.0.0.1:{origin.port}"
    with Conn.open(proxy.addr) as c:
        for i in range(2):
            c.send(f"GET http://{o}/dup{i} HTTP/1.1\r\n\r\n".encode())
            r = read_response(c)
            assert (r.status, r.body) == (200, b"hello")
            assert r.headers.all("Content-Length") == ["5"], r.headers
    with origin.lock:
        conns = [idx for idx, _ in origin.heads]
    assert conns == [0, 1], f"origin connection per request: {conns}"


# ---- chunk extensions in responses -------------------------------------------------------


def test_response_unterminated_chunk_ext_cuts_the_client_off(proxy, tcp_server):
    """A chunked response whose chunk extension opens a quoted string and
    never closes it: the client gets no complete response (502 if nothing
    was sent yet, else the close), and the connection is not reused."""
    origin = tcp_server(ScriptedOrigin, reply=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                              b"5;a=\"x\r\nhello\r\n0\r\n\r\n")
    o = f"127.0.0.1:{origin.port}"
    with Conn.open(proxy.addr) as c:
        c.send(f"GET http://{o}/ext HTTP/1.1\r\n\r\n".encode())
        got = c.read_to_eof(timeout=IO_TIMEOUT)
    assert got.startswith(b"HTTP/1.1 502 ") or (got.startswith(b"HTTP/1.1 200 ") and not got.endswith(
        b"0\r\n\r\n")), f"the client got a complete response: {got!r}"
    with Conn.open(proxy.addr) as c:
        c.send(f"GET http://{o}/ext2 HTTP/1.1\r\n\r\n".encode())
        c.read_to_eof(timeout=IO_TIMEOUT)
    with origin.lock:
        conns = [idx for idx, _ in origin.heads]
    assert conns == [0, 1], conns


# ---- Proxy-Authorization ----------------------------------------------------------------


def test_second_proxy_authorization_is_400(auth_proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    o = f"127.0.0.1:{up.port}"
    good = basic("carol", PW)
    for first, second in ((good, basic("carol", "wrong")), (basic("carol", "wrong"), good), (good, good)):
        raw = (f"GET http://{o}/small HTTP/1.1\r\nProxy-Authorization: {first}\r\n"
               f"Proxy-Authorization: {second}\r\n\r\n").encode()
        expect_error(auth_proxy.addr, raw, 400)
    # one is fine
    with Conn.open(auth_proxy.addr) as c:
        c.send(f"GET http://{o}/small HTTP/1.1\r\nProxy-Authorization: {good}\r\n\r\n".encode())
        r = read_response(c)
        assert (r.status, r.body) == (200, SMALL_BODY)
    assert [r.path for r in up.requests()] == ["/small"]


@pytest.mark.parametrize("cred", [
    "Basic " + base64.b64encode(f"carol:{PW}".encode()).decode().rstrip("="),  # padding dropped
    "Basic " + base64.urlsafe_b64encode(b"carol:\xfb\xff").decode(),           # base64url
    "Basic " + base64.b64encode(f"carol:{PW}".encode()).decode() + "AAAA",      # trailing bytes
], ids=["unpadded", "base64url", "trailing"])
def test_basic_credentials_strict_base64(auth_proxy, tcp_server, cred):
    up = tcp_server(HttpUpstream)
    raw = f"GET http://127.0.0.1:{up.port}/small HTTP/1.1\r\nProxy-Authorization: {cred}\r\n\r\n"
    expect_error(auth_proxy.addr, raw.encode(), 407)
    assert up.requests() == []


# ---- empty lines before a request line ------------------------------------------------


def test_empty_lines_before_request_line(proxy, tcp_server):
    up = tcp_server(HttpUpstream)
    o = f"127.0.0.1:{up.port}"
    with Conn.open(proxy.addr) as c:
        # the connection's very first bytes
        c.send(f"\r\nGET http://{o}/small HTTP/1.1\r\n\r\n".encode())
        assert read_response(c).body == SMALL_BODY
        # between keep-alive requests (some clients add CRLF after a body),
        # split across reads
        c.send(f"POST http://{o}/echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi\r\n".encode())
        assert read_response(c).body == b"hi"
        time.sleep(0.05)
        c.send(b"\r")
        time.sleep(0.05)
        c.send(f"\nGET http://{o}/small HTTP/1.1\r\n\r\n".encode())
        assert read_response(c).body == SMALL_BODY
    assert [r.path for r in up.requests()] == ["/small", "/echo", "/small"]
    # more than four: a 400, not an endless idle connection
    expect_error(proxy.addr, b"\r\n" * 5 + f"GET http://{o}/small HTTP/1.1\r\n\r\n".encode(), 400)
    # a lone LF is no empty line
    expect_error(proxy.addr, f"\r\n\nGET http://{o}/small HTTP/1.1\r\n\r\n".encode(), 400)
