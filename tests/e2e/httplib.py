# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the HTTP proxy end-to-end tests.

Everything here is bounded like ferrylib: every read has a deadline, every
server binds loopback port 0 and is stopped by its owner.

  config_text          a ferry config with [http] and [auth] sections,
                       per-listener protocols and extra sections such as
                       [limits] (for Ferry(raw_config=...))
  Conn                 a socket with a read buffer: heads, exact reads,
                       chunked bodies, read to EOF
  request_bytes        a request written byte for byte
  read_response        one response, framed the way a client must (HEAD,
                       1xx/204/304, Content-Length, chunked, close)
  expect_error         send raw bytes, get an error response with a status,
                       Connection: close, a matching length, then EOF
  HttpUpstream         an HTTP/1.1 origin with keep-alive that records every
                       request (head, raw body) and connection, and serves
                       scripted routes: /small /echo /chunked /nolength /head
                       /204 /304 /hop /ws /ws-unasked /bytes/N /silent /stall
  payload              the deterministic body of /bytes/N
  curl_env, run_curl   curl without proxy variables from the environment
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
import subprocess
import threading
import time
from typing import NamedTuple

import ferrylib
from ferrylib import DEFAULT_CONFIG, IO_TIMEOUT, ThreadedServer

# ---- configuration -------------------------------------------------------------


def config_text(config: dict | None = None, http: dict | None = None, auth: dict | None = None,
                listen: list[str] | None = None, extra: str | None = None) -> str:
    """Top-level keys (over DEFAULT_CONFIG), then [http] and [auth], then
    extra as it is (sections such as [limits]). listen, when given, becomes
    listen lines ("127.0.0.1:0 protocols=http"); start such a ferry with
    listens=() so -l does not replace them."""
    merged = dict(DEFAULT_CONFIG)
    merged.update({k: str(v) for k, v in (config or {}).items()})
    lines = [f"listen = {l}" for l in (listen or [])]
    lines += [f"{k} = {v}" for k, v in merged.items()]
    if http:
        lines += ["", "[http]"] + [f"{k} = {v}" for k, v in http.items()]
    if auth:
        lines += ["", "[auth]"] + [f"{k} = {v}" for k, v in auth.items()]
    if extra:
        lines += ["", extra.rstrip("\n")]
    return "\n".join(lines) + "\n"


# ---- a buffered connection ---------------------------------------------------------


class PeerClosed(AssertionError):
    """EOF before the bytes wanted; data holds what had come."""

    def __init__(self, msg: str, data: bytes):
        super().__init__(msg)
        self.data = data


class Conn:
    """A connected socket and what has been read but not consumed."""

    def __init__(self, sock: socket.socket, timeout: float = IO_TIMEOUT):
        self.sock = sock
        self.timeout = timeout
        self.buf = bytearray()

    @classmethod
    def open(cls, addr: tuple, timeout: float = IO_TIMEOUT, source: str | None = None) -> "Conn":
        s = socket.create_connection(addr, timeout=timeout,
                                     source_address=(source, 0) if source else None)
        ferrylib.note_client(s)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(s, timeout)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> bool:
        """Read more into buf; False on EOF. Raises AssertionError at the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out with {len(self.buf)} bytes buffered: {bytes(self.buf[:80])!r}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise AssertionError(
                f"timed out with {len(self.buf)} bytes buffered: {bytes(self.buf[:80])!r}") from None
        if not chunk:
            return False
        self.buf += chunk
        return True

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def read_until(self, marker: bytes, timeout: float | None = None, limit: int = 1 << 20) -> bytes:
        deadline = self._deadline(timeout)
        start = 0
        while True:
            i = self.buf.find(marker, start)
            if i >= 0:
                out = bytes(self.buf[: i + len(marker)])
                del self.buf[: i + len(marker)]
                return out
            start = max(0, len(self.buf) - len(marker) + 1)
            if len(self.buf) > limit:
                raise AssertionError(f"no {marker!r} within {limit} bytes")
            if not self._fill(deadline):
                raise PeerClosed(f"EOF before {marker!r} ({len(self.buf)} bytes: {bytes(self.buf[:80])!r})",
                                 bytes(self.buf))

    def read_exact(self, n: int, timeout: float | None = None) -> bytes:
        deadline = self._deadline(timeout)
        while len(self.buf) < n:
            if not self._fill(deadline):
                raise PeerClosed(f"EOF after {len(self.buf)} of {n} bytes", bytes(self.buf))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_to_eof(self, timeout: float | None = None, limit: int = 1 << 27) -> bytes:
        """Everything until the peer closes (a reset counts as a close)."""
        deadline = self._deadline(timeout)
        while len(self.buf) <= limit:
            try:
                if not self._fill(deadline):
                    break
            except ConnectionResetError:
                break
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def read_chunked(self, timeout: float | None = None) -> tuple[bytes, bytes, list]:
        """A chunked body: (raw bytes as sent, decoded data, trailer lines)."""
        deadline = self._deadline(timeout)
        raw = bytearray()
        data = bytearray()
        while True:
            line = self.read_until(b"\r\n", max(0.01, deadline - time.monotonic()))
            raw += line
            size = int(line[:-2].split(b";", 1)[0], 16)
            if size == 0:
                break
            chunk = self.read_exact(size + 2, max(0.01, deadline - time.monotonic()))
            assert chunk[-2:] == b"\r\n", f"chunk not followed by CRLF: {chunk[-8:]!r}"
            raw += chunk
            data += chunk[:-2]
        trailers = []
        while True:
            line = self.read_until(b"\r\n", max(0.01, deadline - time.monotonic()))
            raw += line
            if line == b"\r\n":
                break
            trailers.append(line[:-2])
        return bytes(raw), bytes(data), trailers

    def expect_eof(self, timeout: float = IO_TIMEOUT) -> bytes:
        """The peer closes; returns what came before (should be nothing)."""
        rest = self.read_to_eof(timeout)
        return rest


# ---- messages ------------------------------------------------------------------


def parse_head(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    """Start line and fields of a head (CRLF line ends, blank line included)."""
    lines = head.decode("latin-1").split("\r\n")
    assert lines[-2:] == ["", ""], f"not a head: {head[-20:]!r}"
    fields = []
    for ln in lines[1:-2]:
        name, sep, value = ln.partition(":")
        assert sep, f"field without a colon: {ln!r}"
        fields.append((name, value.strip(" \t")))
    return lines[0], fields


class Headers:
    """Fields in order, looked up without regard to case."""

    def __init__(self, fields: list[tuple[str, str]]):
        self.fields = fields

    def get(self, name: str) -> str | None:
        for n, v in self.fields:
            if n.lower() == name.lower():
                return v
        return None

    def all(self, name: str) -> list[str]:
        return [v for n, v in self.fields if n.lower() == name.lower()]

    def names(self) -> set[str]:
        return {n.lower() for n, _ in self.fields}

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __repr__(self):
        return f"Headers({self.fields!r})"


class Response(NamedTuple):
    version: str
    status: int
    reason: str
    headers: Headers
    body: bytes
    head: bytes
    raw_body: bytes          # the body as framed on the wire (chunked stays chunked)
    trailers: list
    interim: list            # 1xx heads seen first


def request_bytes(method: str, target: str, headers=(), body: bytes = b"",
                  version: str = "HTTP/1.1", content_length: bool | None = None) -> bytes:
    """A request head (and body). headers: (name, value) pairs, sent as they
    are. Content-Length is added for a non-empty body unless given or
    content_length is False."""
    hs = list(headers)
    have_cl = any(n.lower() in ("content-length", "transfer-encoding") for n, _ in hs)
    if content_length is None:
        content_length = bool(body) and not have_cl
    if content_length:
        hs.append(("Content-Length", str(len(body))))
    head = f"{method} {target} {version}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in hs) + "\r\n"
    return head.encode("latin-1") + body


def chunked(data: bytes, sizes=(7, 1, 4096), ext: str = "", trailers=()) -> bytes:
    """data as a chunked body, cut into pieces of the given sizes in turn."""
    out = bytearray()
    i = 0
    k = 0
    while i < len(data):
        n = min(sizes[k % len(sizes)], len(data) - i)
        out += f"{n:x}{ext}\r\n".encode() + data[i:i + n] + b"\r\n"
        i += n
        k += 1
    out += b"0\r\n" + b"".join(t.encode() + b"\r\n" for t in trailers) + b"\r\n"
    return bytes(out)


def read_response(conn: Conn, head_request: bool = False, timeout: float | None = None) -> Response:
    """One final response (1xx heads before it are collected in interim)."""
    interim = []
    while True:
        head = conn.read_until(b"\r\n\r\n", timeout)
        start, fields = parse_head(head)
        version, _, rest = start.partition(" ")
        code, _, reason = rest.partition(" ")
        assert version.startswith("HTTP/1.") and len(code) == 3 and code.isdigit(), f"status line {start!r}"
        status = int(code)
        if 100 <= status < 200 and status != 101:
            interim.append(head)
            continue
        break
    h = Headers(fields)
    body = raw = b""
    trailers = []
    te = h.get("Transfer-Encoding")
    if head_request or status < 200 or status in (204, 304):
        pass
    elif te is not None:
        assert te.lower() == "chunked", f"Transfer-Encoding {te!r}"
        raw, body, trailers = conn.read_chunked(timeout)
    elif h.get("Content-Length") is not None:
        body = raw = conn.read_exact(int(h.get("Content-Length")), timeout)
    else:
        body = raw = conn.read_to_eof(timeout)
    return Response(version, status, reason, h, body, head, raw, trailers, interim)


def exchange(addr: tuple, raw: bytes, head_request: bool = False,
             timeout: float = IO_TIMEOUT) -> tuple[Response, Conn]:
    """Open a connection to addr, send raw, read one response. The caller
    closes the returned Conn."""
    c = Conn.open(addr, timeout)
    try:
        c.send(raw)
        return read_response(c, head_request), c
    except BaseException:
        c.close()
        raise


def expect_error(addr: tuple, raw: bytes, status: int, timeout: float = IO_TIMEOUT,
                 conn: Conn | None = None) -> Response:
    """Send raw (on conn, or a new connection) and read an error response:
    the status, a text body matching Content-Length, Connection: close, then
    EOF with nothing more."""
    c = conn or Conn.open(addr, timeout)
    try:
        c.send(raw)
        r = read_response(c, timeout=timeout)
        assert r.status == status, f"status {r.status} {r.reason!r}, expected {status}: {r.body!r}"
        assert r.headers.get("Connection") == "close", f"no Connection: close: {r.headers}"
        assert int(r.headers.get("Content-Length")) == len(r.body)
        assert r.body.startswith(b"ferry: "), r.body
        rest = c.read_to_eof(timeout)
        assert rest == b"", f"bytes after the error response: {rest[:80]!r}"
        return r
    finally:
        c.close()


# ---- the recording origin ---------------------------------------------------------


class Rec(NamedTuple):
    """One request as the origin received it."""
    peer: tuple
    conn: int            # which accepted connection (0, 1, ...)
    method: str
    target: str
    version: str
    headers: Headers
    head: bytes
    body: bytes          # decoded
    raw_body: bytes      # as framed on the wire
    complete: bool       # the whole body arrived

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


SMALL_BODY = b"small body from the recording origin\n" * 20
HEAD_LENGTH = 1234
STALL_LENGTH = 100_000   # what /stall announces
STALL_SENT = 1000        # ... and sends before it falls silent


@functools.lru_cache(maxsize=4)
def payload(n: int) -> bytes:
    """The body of /bytes/N: n bytes that differ everywhere (a misplaced
    block shows), the same in the origin and in the test."""
    return hashlib.shake_128(f"ferry-bytes-{n}".encode()).digest(n)


class HttpUpstream(ThreadedServer):
    """An HTTP/1.1 origin with keep-alive that records what it receives.
    Routes (by path; the first path segment decides):
      /small      200, Content-Length, SMALL_BODY
      /echo       200, Content-Length, the request body; X-Body-Sha256
      /chunked    200, chunked SMALL_BODY in odd pieces, a trailer
      /nolength   200 without a length: the body runs to the close
      /head       HEAD: 200 with Content-Length 1234 and no body
      /204 /304   no body (304 with a Content-Length of 50)
      /hop        200 with hop-by-hop fields of its own
      /ws         101 to a WebSocket upgrade, then echo bytes both ways
      /ws-unasked 101 whatever was asked
      /close      200, Content-Length, Connection: close, then close
      /dribble    SMALL_BODY with the head and body sent a byte at a time
      /bighead    a 200 whose head is 6000 bytes
      /fields/N   a 200 with N fields
      /resp-cl-te a 200 with both Content-Length and Transfer-Encoding
      /bad-chunk  a chunked 200 whose second chunk size is not hex
      /extra      a 200, then the bytes of a second, unasked-for response
      /head-body  a body even for HEAD
      /interim    103 Early Hints, then 200
      /die-next   200; the next request on this connection gets a close
      /early-413  413 and Connection: close before the body is read, then a
                  close with the body unread (a reset)
      /early-200  200 before the body is read, then reads to EOF
      /bytes/N    200 with payload(N) (answered() lists it once all is sent)
      /silent     reads the request, never answers; waits for the close
      /stall      a head announcing STALL_LENGTH bytes and STALL_SENT of
                  them, then silence until the close
      else        404
    """

    def __init__(self, host: str = "127.0.0.1", idle: float = 20.0, **kw):
        self.idle = idle
        self.records: list[Rec] = []
        self.nconn = 0
        self.nclosed = 0
        self.done: list[str] = []   # targets answered (for /bytes/N: every byte sent)
        self.got = threading.Condition()
        super().__init__(host, conn_timeout=idle + 5, **kw)

    # -- what tests look at --

    def requests(self, path: str | None = None) -> list[Rec]:
        with self.lock:
            recs = list(self.records)
        return [r for r in recs if path is None or r.path == path]

    def connections(self) -> int:
        with self.lock:
            return len(self.peers)

    def closed(self) -> int:
        """Connections whose handler has finished (the peer closed, or we did)."""
        with self.lock:
            return self.nclosed

    def wait_closed(self, n: int, timeout: float = IO_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while self.closed() < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def answered(self) -> list[str]:
        """Targets whose handling has ended (a /bytes/N response: all sent)."""
        with self.lock:
            return list(self.done)

    def wait_requests(self, n: int, path: str | None = None, timeout: float = IO_TIMEOUT) -> list[Rec]:
        deadline = time.monotonic() + timeout
        with self.got:
            while True:
                recs = [r for r in self.records if path is None or r.path == path]
                if len(recs) >= n:
                    return recs
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(recs)} of {n} requests for {path} within {timeout}s")
                self.got.wait(left)

    # -- serving --

    def _record(self, rec: Rec):
        with self.got:
            with self.lock:
                self.records.append(rec)
            self.got.notify_all()

    def handle(self, c, peer):
        try:
            self._serve(c, peer)
        finally:
            with self.lock:
                self.nclosed += 1

    def _serve(self, c, peer):
        with self.lock:
            idx = self.nconn
            self.nconn += 1
        conn = Conn(c, self.idle)
        conn.die_next = False
        while True:
            try:
                head = conn.read_until(b"\r\n\r\n", self.idle)
            except PeerClosed:
                return  # between requests, or a partial head: either way, done
            except (AssertionError, OSError):
                return
            start, fields = parse_head(head)
            method, target, version = start.split(" ", 2)
            h = Headers(fields)
            if target.split("?", 1)[0].startswith("/early-413"):
                # answer before reading the body, then close with it unread
                self._record(Rec(peer, idx, method, target, version, h, head, b"", b"", False))
                c.sendall(self._response(413, "Content Too Large", [("Connection", "close")], b"too big"))
                time.sleep(0.05)
                return
            if target.split("?", 1)[0].startswith("/early-200"):
                # answer before reading the body, then read whatever comes
                self._record(Rec(peer, idx, method, target, version, h, head, b"", b"", False))
                c.sendall(self._response(200, "OK", [], b"early"))
                try:
                    while c.recv(65536):
                        pass
                except OSError:
                    pass
                return
            if (h.get("Expect") or "").lower() == "100-continue":
                c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = raw = b""
            complete = True
            try:
                if (h.get("Transfer-Encoding") or "").lower() == "chunked":
                    raw, body, _ = conn.read_chunked(self.idle)
                elif h.get("Content-Length") is not None:
                    body = raw = conn.read_exact(int(h.get("Content-Length").split(",")[0]), self.idle)
            except PeerClosed as e:
                raw, complete = e.data + bytes(conn.buf), False
            except (AssertionError, OSError, ValueError):
                complete = False
            rec = Rec(peer, idx, method, target, version, h, head, body, raw, complete)
            self._record(rec)
            if not complete or conn.die_next:
                return
            keep = self.respond(conn, rec)
            with self.lock:
                self.done.append(rec.target)
            if not keep:
                return

    def _hold(self, c: socket.socket):
        """Say nothing until the peer closes (bounded by idle, and by stop())."""
        deadline = time.monotonic() + self.idle
        c.settimeout(0.1)
        while time.monotonic() < deadline and not self.stopping.is_set():
            try:
                if not c.recv(65536):
                    return
            except socket.timeout:
                continue
            except OSError:
                return

    @staticmethod
    def _response(status: int, reason: str, fields=(), body: bytes = b"", send_body: bool = True) -> bytes:
        """A response with a Content-Length; without its body for HEAD."""
        hs = list(fields) + [("Content-Length", str(len(body)))]
        head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in hs) + "\r\n"
        return head.encode("latin-1") + (body if send_body else b"")

    def respond(self, conn: Conn, rec: Rec) -> bool:
        """Answer rec; False to close the connection afterwards."""
        c = conn.sock
        route = "/" + rec.path.lstrip("/").split("/", 1)[0]
        head_req = rec.method == "HEAD"
        close_asked = "close" in (rec.headers.get("Connection") or "").lower()

        def send(status, reason, fields=(), body=b""):
            # a HEAD response names the length a GET would have had
            c.sendall(self._response(status, reason, fields, body, not head_req))

        if route == "/small":
            send(200, "OK", [("Content-Type", "text/plain")], SMALL_BODY)
        elif route == "/echo":
            send(200, "OK", [("X-Body-Sha256", hashlib.sha256(rec.body).hexdigest()),
                             ("X-Request-Target", rec.target)], rec.body)
        elif route == "/chunked":
            if head_req:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"
                          + chunked(SMALL_BODY, sizes=(1, 10, 100), ext=";e=1",
                                    trailers=[f"X-Sum: {len(SMALL_BODY)}"]))
        elif route == "/nolength":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
            if not head_req:
                c.sendall(SMALL_BODY)
            return False
        elif route == "/head":
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {HEAD_LENGTH}\r\n\r\n".encode())
            if not head_req:
                c.sendall(b"h" * HEAD_LENGTH)
        elif route == "/204":
            c.sendall(b"HTTP/1.1 204 No Content\r\nX-Route: 204\r\n\r\n")
        elif route == "/304":
            c.sendall(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\nETag: \"x\"\r\n\r\n")
        elif route == "/hop":
            send(200, "OK", [("Connection", "X-Resp-Hop, keep-alive"), ("X-Resp-Hop", "secret"),
                             ("Keep-Alive", "timeout=5"), ("Proxy-Authenticate", "Basic realm=\"up\""),
                             ("Proxy-Connection", "keep-alive"), ("X-End-To-End", "yes"),
                             ("Via", "1.1 origin-side")], b"hop body")
        elif route in ("/ws", "/ws-unasked"):
            asked = (rec.headers.get("Upgrade") or "").lower() == "websocket"
            if route == "/ws" and not asked:
                send(400, "Bad Request", body=b"not an upgrade")
                return not close_asked
            c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
            if conn.buf:
                c.sendall(bytes(conn.buf))
                conn.buf.clear()
            while True:
                try:
                    data = c.recv(65536)
                except OSError:
                    break
                if not data:
                    break
                c.sendall(data)
            try:
                c.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return False
        elif route == "/close":
            send(200, "OK", [("Connection", "close")], SMALL_BODY)
            return False
        elif route == "/dribble":
            for b in self._response(200, "OK", [("X-Dribble", "yes")], SMALL_BODY, not head_req):
                c.sendall(bytes([b]))
                time.sleep(0.0005)
        elif route == "/bighead":
            send(200, "OK", [("X-Big", "b" * 6000)], b"big head")
        elif route == "/fields":
            n = int(rec.path.rsplit("/", 1)[1])
            send(200, "OK", [(f"X-F{i}", str(i)) for i in range(n)], b"fields")
        elif route == "/resp-cl-te":
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"0\r\n\r\n")
        elif route == "/bad-chunk":
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n")
            time.sleep(0.1)
            return False
        elif route == "/extra":
            c.sendall(self._response(200, "OK", [], b"real body")
                      + self._response(200, "OK", [("X-Poison", "yes")], b"POISON"))
        elif route == "/head-body":
            c.sendall(self._response(200, "OK", [], SMALL_BODY))
        elif route == "/interim":
            c.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
            time.sleep(0.05)
            send(200, "OK", [], b"after hints")
        elif route == "/bytes":
            n = int(rec.path.rsplit("/", 1)[1])
            send(200, "OK", [("Content-Type", "application/octet-stream")], payload(n))
        elif route == "/silent":
            self._hold(c)
            return False
        elif route == "/stall":
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {STALL_LENGTH}\r\n\r\n".encode()
                      + b"s" * STALL_SENT)
            self._hold(c)
            return False
        elif route == "/die-next":
            send(200, "OK", [], b"first answer")
            conn.die_next = True
        else:
            send(404, "Not Found", body=b"no such route\n")
        return not close_asked


# ---- curl ------------------------------------------------------------------------


def curl_env() -> dict:
    """The environment without proxy variables (which could steer or bypass curl)."""
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def run_curl(args, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["curl", "-sS", "--max-time", "30", "--connect-timeout", "5", *args],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=curl_env(),
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"curl did not finish within {timeout}s") from e
