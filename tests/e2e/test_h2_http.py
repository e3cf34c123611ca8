# SPDX-License-Identifier: BSD-2-Clause
"""Plain requests over HTTP/2 (RFC 9113 section 8.3: ":scheme http" with
:authority and :path) forwarded by ferry's HTTP/1 proxy to HTTP/1.1
origins, with python3-h2 as the client: GET and POST with integrity
(bodies of 0, 1 B and 1 MiB; content-length, chunked and close-delimited
responses), HEAD, 204, 304, a 404 passed on, many concurrent streams on
one connection, 407 and a rule's 403 per stream while others work,
malformed requests (a connection-specific field, a content-length that
the DATA does not match, no :authority, :scheme https) each refused on
its stream while the connection goes on, an origin's conflicting
Content-Length as a 502, cookies joined, proto=h2 in the access log. Then
headless Chromium with ferry as its HTTPS proxy (h2) loading a page with
a script from an http:// origin (a plain GET over h2) and from an
https:// one (CONNECT over h2)."""

import base64
import hashlib
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

import pytest

from certlib import OPENSSL, make_cert
from ferrylib import ThreadedServer

h2 = pytest.importorskip("h2")
import h2.errors  # noqa: E402

from h2lib import H2Client, h2_ferry, pattern  # noqa: E402

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("h2httpcerts"), "h2http")


def read_request(c, buf: bytearray):
    """One HTTP/1.1 request from c: (method, target, headers dict of lists, body) or None."""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None
        buf += d
    i = buf.index(b"\r\n\r\n")
    head = bytes(buf[:i]).decode("latin-1")
    del buf[:i + 4]
    lines = head.split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    hdrs: dict[str, list[str]] = {}
    for ln in lines[1:]:
        k, v = ln.split(":", 1)
        hdrs.setdefault(k.strip().lower(), []).append(v.strip())
    body = bytearray()
    if "100-continue" in hdrs.get("expect", [""])[0].lower():
        c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "content-length" in hdrs:
        n = int(hdrs["content-length"][0])
        while len(buf) < n:
            d = c.recv(65536)
            if not d:
                return None
            buf += d
        body += buf[:n]
        del buf[:n]
    elif "chunked" in hdrs.get("transfer-encoding", [""])[0]:
        while True:
            while b"\r\n" not in buf:
                buf += c.recv(65536)
            j = buf.index(b"\r\n")
            size = int(bytes(buf[:j]).split(b";")[0], 16)
            del buf[:j + 2]
            while len(buf) < size + 2:
                buf += c.recv(65536)
            body += buf[:size]
            del buf[:size + 2]
            if size == 0:
                break
    return method, target, hdrs, bytes(body)


class Origin(ThreadedServer):
    """An HTTP/1.1 origin with keep-alive. Paths: /len/N, /chunked/N and
    /close/N send pattern(N, N) framed that way; /echo answers with the
    body's "LEN SHA256" and the request's method, cookie and framing in
    x- fields; /status/N answers N with no body; /badcl sends two
    Content-Lengths that differ; /page and /s.js are a page for Chromium."""

    def handle(self, c, peer):
        buf = bytearray()
        while True:
            req = read_request(c, buf)
            if req is None:
                return
            method, target, hdrs, body = req
            path = target if target.startswith("/") else "/" + target.split("/", 3)[3]
            self.last = (method, target, hdrs)
            if not self.answer(c, method, path, hdrs, body):
                return

    def answer(self, c, method, path, hdrs, body) -> bool:
        def send(status, fields, payload=b""):
            head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields)
            c.sendall(head.encode() + b"\r\n" + (b"" if method == "HEAD" else payload))

        parts = path.split("/")
        if parts[1] == "len":
            n = int(parts[2])
            send(200, [("Content-Length", n)], pattern(n, n))
        elif parts[1] == "chunked":
            n = int(parts[2])
            data = pattern(n, n)
            send(200, [("Transfer-Encoding", "chunked"), ("Trailer", "x-t")])
            if method != "HEAD":
                for k in range(0, n, 70000):
                    piece = data[k:k + 70000]
                    c.sendall(f"{len(piece):x};ext=1\r\n".encode() + piece + b"\r\n")
                c.sendall(b"0\r\nx-t: 1\r\n\r\n")
        elif parts[1] == "close":
            n = int(parts[2])
            send(200, [("Connection", "close")], pattern(n, n))
            return False
        elif parts[1] == "echo":
            sha = hashlib.sha256(body).hexdigest()
            out = f"{len(body)} {sha}".encode()
            send(200, [("Content-Length", len(out)), ("x-method", method),
                       ("x-cookie", "|".join(hdrs.get("cookie", []))),
                       ("x-te", "|".join(hdrs.get("transfer-encoding", []))),
                       ("x-cl", "|".join(hdrs.get("content-length", []))),
                       ("x-host", "|".join(hdrs.get("host", []))),
                       ("x-pauth", "|".join(hdrs.get("proxy-authorization", [])))], out)
        elif parts[1] == "status":
            st = int(parts[2])
            send(st, [("Content-Length", 5)] if st == 404 else [("ETag", '"e"')],
                 b"nope\n" if st == 404 else b"")
        elif parts[1] == "badcl":
            send(200, [("Content-Length", 5), ("Content-Length", 6)], b"hello!")
            return False
        elif parts[1] == "page":
            page = b"<html><body><div id=m>origin-marker</div><script src=/s.js></script></body></html>"
            send(200, [("Content-Type", "text/html"), ("Content-Length", len(page))], page)
        elif parts[1] == "s.js":
            js = b"document.getElementById('m').textContent = 'script-' + 'ran-' + 'ok';"
            send(200, [("Content-Type", "application/javascript"), ("Content-Length", len(js))], js)
        else:
            send(404, [("Content-Length", 0)])
        return True


@pytest.fixture
def origin():
    s = Origin()
    yield s
    s.stop()


def request(cl: H2Client, method: str, authority: str, path: str, headers=(), body: bytes | None = None,
            scheme: str = "http", more: bool = False) -> int:
    """Open a stream with a plain request; the body, if any, follows with
    END_STREAM (more: neither body nor END_STREAM yet)."""
    sid = cl.conn.get_next_available_stream_id()
    cl.streams[sid] = {"status": None, "data": bytearray(), "ended": False, "reset": None}
    fields = [(":method", method), (":scheme", scheme), (":path", path)]
    if authority is not None:
        fields.insert(1, (":authority", authority))
    cl.conn.send_headers(sid, fields + list(headers), end_stream=body is None and not more)
    cl.flush()
    if body is not None:
        cl.send(sid, body, end=True)
    return sid


def done(cl, sid):
    return cl.streams[sid]["ended"] or cl.streams[sid]["reset"] is not None


def fetch(cl, *a, **kw) -> dict:
    sid = request(cl, *a, **kw)
    cl.wait(lambda: done(cl, sid), timeout=30, what=f"stream {sid}")
    return cl.streams[sid]


def test_h2_http_get_post_integrity(ferry, cert, origin):
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    auth = f"127.0.0.1:{origin.port}"
    try:
        for kind in ("len", "chunked", "close"):
            for n in (0, 1, MiB):
                st = fetch(cl, "GET", auth, f"/{kind}/{n}")
                assert st["status"] == 200 and st["reset"] is None, (kind, n, st["status"])
                assert bytes(st["data"]) == pattern(n, n), (kind, n)
                assert "transfer-encoding" not in st["headers"]
                assert "connection" not in st["headers"]
        # POST: with content-length, without (chunked to the origin), empty
        for n in (0, 1, MiB):
            body = pattern(n + 7, n)
            want = f"{n} {hashlib.sha256(body).hexdigest()}".encode()
            st = fetch(cl, "POST", auth, "/echo", [("content-length", str(n))], body=body)
            assert st["status"] == 200 and bytes(st["data"]) == want
            assert st["headers"]["x-cl"] == str(n) and st["headers"]["x-te"] == ""
            st = fetch(cl, "POST", auth, "/echo", body=body)
            assert st["status"] == 200 and bytes(st["data"]) == want, n
            assert st["headers"]["x-te"] == "chunked"
        st = fetch(cl, "POST", auth, "/echo")  # END_STREAM on the HEADERS
        assert bytes(st["data"]) == f"0 {hashlib.sha256(b'').hexdigest()}".encode()
        assert st["headers"]["x-cl"] == "0" and st["headers"]["x-host"] == auth
        # cookies joined (RFC 9113 8.2.3)
        st = fetch(cl, "GET", auth, "/echo", [("cookie", "a=1"), ("cookie", "b=2")])
        assert st["headers"]["x-cookie"] == "a=1; b=2"
        # HEAD, 204, 304, 404
        st = fetch(cl, "HEAD", auth, "/len/1000")
        assert st["status"] == 200 and st["headers"]["content-length"] == "1000" and not st["data"]
        st = fetch(cl, "HEAD", auth, "/chunked/1000")
        assert st["status"] == 200 and not st["data"] and st["reset"] is None
        for code in (204, 304):
            st = fetch(cl, "GET", auth, f"/status/{code}")
            assert st["status"] == code and not st["data"] and st["reset"] is None
        st = fetch(cl, "GET", auth, "/status/404")
        assert st["status"] == 404 and bytes(st["data"]) == b"nope\n"
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=GET .*reply=200 .*proto=h2")
    f.wait_log(r"access .*cmd=POST .*reply=200 .*proto=h2")
    f.wait_log(r"access .*cmd=GET .*reply=404 .*proto=h2")


def test_h2_http_concurrent_streams(ferry, cert, origin):
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    auth = f"127.0.0.1:{origin.port}"
    try:
        sids = {request(cl, "GET", auth, f"/{('len', 'chunked')[i % 2]}/{1000 + 997 * i}"): i
                for i in range(60)}
        cl.wait(lambda: all(done(cl, s) for s in sids), timeout=60, what="60 responses")
        for s, i in sids.items():
            n = 1000 + 997 * i
            assert cl.streams[s]["status"] == 200 and bytes(cl.streams[s]["data"]) == pattern(n, n)
    finally:
        cl.close()


def test_h2_http_auth_and_rules(ferry, cert, origin):
    (ferry.workdir / "users.txt").write_text("alice:plain:wonderland\n")
    other = Origin()
    try:
        f = h2_ferry(ferry, cert, auth={"userlist": str(ferry.workdir / "users.txt")},
                     extra=f"\n[rules]\ndeny to 127.0.0.1 port {other.port}\nallow to 127.0.0.0/8\n")
        cl = H2Client(f.addr, cert[0])
        good = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:wonderland").decode())]
        bad = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:nope").decode())]
        auth = f"127.0.0.1:{origin.port}"
        try:
            bare = request(cl, "GET", auth, "/len/10")
            wrong = request(cl, "GET", auth, "/len/10", bad)
            ok = request(cl, "POST", auth, "/echo", good, body=b"x" * 100)
            denied = request(cl, "GET", f"127.0.0.1:{other.port}", "/len/10", good)
            cl.wait(lambda: all(done(cl, s) for s in (bare, wrong, ok, denied)), what="answers")
            assert cl.streams[bare]["status"] == 407
            assert "basic" in cl.streams[bare]["headers"].get("proxy-authenticate", "").lower()
            assert cl.streams[wrong]["status"] == 407
            assert cl.streams[denied]["status"] == 403
            assert cl.streams[ok]["status"] == 200
            assert bytes(cl.streams[ok]["data"]).startswith(b"100 ")
            assert cl.streams[ok]["headers"]["x-pauth"] == ""  # not sent on
            st = fetch(cl, "GET", auth, "/len/3000", good)
            assert st["status"] == 200 and bytes(st["data"]) == pattern(3000, 3000)
        finally:
            cl.close()
        f.wait_log(r"access .*user=alice cmd=GET .*reply=403 .*proto=h2")
        f.wait_log(r"access .*user=alice cmd=POST .*reply=200 .*proto=h2")
        f.wait_log(r"access .*cmd=GET .*reply=407 .*proto=h2")
    finally:
        other.stop()


def test_h2_http_malformed_requests(ferry, cert, origin):
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    # python3-h2 would drop connection-specific fields itself
    cl.conn.config.normalize_outbound_headers = False
    auth = f"127.0.0.1:{origin.port}"
    try:
        # RFC 9113 8.2.2: a connection-specific field is malformed
        for field in (("connection", "close"), ("transfer-encoding", "chunked"),
                      ("upgrade", "websocket"), ("te", "gzip"), ("proxy-connection", "x")):
            st = fetch(cl, "GET", auth, "/len/10", [field])
            assert st["reset"] == h2.errors.ErrorCodes.PROTOCOL_ERROR or st["status"] == 400, field
        st = fetch(cl, "GET", auth, "/len/10", [("te", "trailers")])
        assert st["status"] == 200
        # 8.1.1: content-length that the DATA does not match
        sid = request(cl, "POST", auth, "/echo", [("content-length", "10")], body=b"12345")
        cl.wait(lambda: done(cl, sid), what="content-length mismatch")
        assert cl.streams[sid]["reset"] == h2.errors.ErrorCodes.PROTOCOL_ERROR \
            or cl.streams[sid]["status"] == 400
        # no :authority (nor Host)
        st = fetch(cl, "GET", None, "/len/10")
        assert st["reset"] == h2.errors.ErrorCodes.PROTOCOL_ERROR or st["status"] == 400
        # a Host field stands in for :authority
        st = fetch(cl, "GET", None, "/echo", [("host", auth)])
        assert st["status"] == 200 and st["headers"]["x-host"] == auth
        # :scheme https is not a forward proxy's job (CONNECT is)
        st = fetch(cl, "GET", auth, "/len/10", scheme="https")
        assert st["status"] == 501
        # the origin's conflicting Content-Length: 502
        st = fetch(cl, "GET", auth, "/badcl")
        assert st["status"] == 502
        # and the connection goes on
        st = fetch(cl, "GET", auth, "/chunked/5000")
        assert st["status"] == 200 and bytes(st["data"]) == pattern(5000, 5000)
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=GET .*reply=502 .*proto=h2")
    f.wait_log(r"access .*cmd=GET .*reply=501 .*proto=h2")


def test_h2_http_through_http_parent(ferry, cert, origin):
    # An HTTP parent outbound takes the request in absolute form, as it
    # does an HTTP/1 client's.
    parent = ferry(config={"workers": "1"})
    f = h2_ferry(ferry, cert, config={"outbound": "up"},
                 extra=f"\n[outbound up]\nurl = http://127.0.0.1:{parent.port}\n")
    cl = H2Client(f.addr, cert[0])
    auth = f"127.0.0.1:{origin.port}"
    try:
        for kind in ("len", "chunked"):
            st = fetch(cl, "GET", auth, f"/{kind}/70000")
            assert st["status"] == 200 and bytes(st["data"]) == pattern(70000, 70000)
        body = pattern(5, 300000)
        st = fetch(cl, "PUT", auth, "/echo", body=body)
        assert bytes(st["data"]) == f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()
    finally:
        cl.close()
    parent.wait_log(r"access .*cmd=GET .*dst=127\.0\.0\.1:%d" % origin.port)
    parent.wait_log(r"access .*cmd=PUT .*reply=200")
    f.wait_log(r"access .*cmd=PUT .*reply=200 .*via=up.*proto=h2")


def test_h2_http_100_continue(ferry, cert, origin):
    import h2.events
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    interim = []
    plain_event = cl._event

    def event(ev):
        if isinstance(ev, h2.events.InformationalResponseReceived):
            interim.append((ev.stream_id, dict(ev.headers)[":status"]))
        plain_event(ev)
    cl._event = event
    auth = f"127.0.0.1:{origin.port}"
    try:
        sid = request(cl, "POST", auth, "/echo", [("content-length", "4"), ("expect", "100-continue")],
                      more=True)
        cl.wait(lambda: interim, what="100 Continue")
        assert interim == [(sid, "100")]
        cl.send(sid, b"body", end=True)
        cl.wait(lambda: done(cl, sid), what="the final response")
        assert cl.streams[sid]["status"] == 200
        assert bytes(cl.streams[sid]["data"]) == f"4 {hashlib.sha256(b'body').hexdigest()}".encode()
    finally:
        cl.close()


# ---- headless Chromium ------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class TlsOrigin(Origin):
    """The same origin over TLS (the self-signed test certificate)."""

    def __init__(self, cert):
        super().__init__()
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(str(cert[0]), str(cert[1]))

    def handle(self, c, peer):
        try:
            t = self.ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().handle(t, peer)


def chromium_dump(proxy_port: int, url: str) -> str:
    with tempfile.TemporaryDirectory() as prof:
        r = subprocess.run(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--no-first-run", "--disable-sync", "--disable-extensions",
             f"--proxy-server=https://127.0.0.1:{proxy_port}", "--proxy-bypass-list=<-loopback>",
             "--ignore-certificate-errors", f"--user-data-dir={prof}",
             "--virtual-time-budget=5000", "--dump-dom", url],
            capture_output=True, timeout=60, env={**os.environ, "HOME": prof})
    return r.stdout.decode(errors="replace")


@pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (make deps-test)")
def test_h2_http_chromium(ferry, cert, origin):
    f = h2_ferry(ferry, cert)
    tls_origin = TlsOrigin(cert)
    try:
        dom = chromium_dump(f.addr[1], f"http://127.0.0.1:{origin.port}/page")
        assert "script-ran-ok" in dom, dom[-2000:]
        f.wait_log(r"access .*cmd=GET .*:%d .*reply=200 .*proto=h2" % origin.port)
        dom = chromium_dump(f.addr[1], f"https://127.0.0.1:{tls_origin.port}/page")
        assert "script-ran-ok" in dom, dom[-2000:]
        f.wait_log(r"access .*cmd=CONNECT .*:%d .*reply=200 .*proto=h2" % tls_origin.port,
                   timeout=10)
    finally:
        tls_origin.stop()
