# SPDX-License-Identifier: BSD-2-Clause
"""Plain HTTP requests (absolute-form, GET http://host/path) through an
HTTP parent ([outbound NAME] url = http://...): ferry sends them to the
parent in absolute form (RFC 9112 3.2.2), with the parent's Basic
credentials and never the client's, over keep-alive connections to the
parent pooled per parent. Parents: a second ferry (its access log tells
which requests shared a connection), a small parent of the test's own
that records what it is sent, tinyproxy and Squid. Checked: 10 MiB bodies
intact (sha256), several requests over one client connection on one
parent connection, the parent's 407 as a 502 with a log line, the
parent's 403 passed through as its response, and the framing defences
(no pooling after a doubt, a Connection naming a framing field is a 502).
Through a SOCKS parent a plain request is a CONNECT to the origin, not
pooled.

Parents that are not installed are skipped (they are in the Makefile's
TEST_PKGS). tinyproxy and Squid start once per module. Every wait is
bounded.
"""

import hashlib
import http.client
import re
import threading
import time

import pytest

from daemonlib import daemon, free_port, need, shared_dir, wait_file
from ferrylib import ThreadedServer, unused_refused_port

IO = 30.0  # seconds for a 10 MiB response through two proxies on a loaded ASan build


# ---- helpers -------------------------------------------------------------------


def start_front(ferry, url: str, name: str = "up", config: dict | None = None, extra: str = ""):
    """A ferry whose sessions all leave through [outbound name] url."""
    cfg = {"outbound": name, "workers": "1"}
    cfg.update(config or {})
    return ferry(config=cfg, extra=f"[outbound {name}]\nurl = {url}\n" + extra)


def get(conn: http.client.HTTPConnection, url: str, headers: dict | None = None):
    """One absolute-form GET on a kept-alive connection to the proxy:
    (status, headers, body)."""
    conn.request("GET", url, headers=headers or {})
    r = conn.getresponse()
    return r.status, r.headers, r.read()




















class RecordingParent(ThreadedServer):
    """An HTTP parent of the test's own: reads request heads (no bodies:
    the tests send GETs), records (connection number, head), and answers
    each with `reply` (bytes, or a function of the head). Counts accepted
    connections."""

    def __init__(self, reply, *a, **kw):
        self.reply = reply
        self.heads: list[tuple[int, bytes]] = []
        self.nconn = 0
        self.lock = threading.Lock()
        super().__init__("127.0.0.1", *a, **kw)

    def handle(self, c, peer):
        with self.lock:
            self.nconn += 1
            n = self.nconn
        c.settimeout(10)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = c.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                with self.lock:
                    self.heads.append((n, head))
                out = self.reply(head) if callable(self.reply) else self.reply
                c.sendall(out)
        except OSError:
            pass


def ok_reply(body: bytes = b"from the parent\n") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


# ---- ferry -> ferry ----------------------------------------------------------------


def test_ferry_parent_absolute_form_reuse(ferry, http_server):
    """Several requests, to two origins, over one client connection: bodies
    intact (10 MiB included), and the parent saw them all on one connection
    (one session id in its access log), with the destination named."""
    parent = ferry(config={"workers": "1"})
    front = start_front(ferry, f"http://127.0.0.1:{parent.port}")
    conn = http.client.HTTPConnection(*front.addr, timeout=IO)
    names = ["small.txt", "big.bin", "small.txt"]
    urls = [http_server.url(n) for n in names]
    urls.append(http_server.url("small.txt", host="localhost"))  # another origin, same parent
    for name, url in zip(names + ["small.txt"], urls):
        status, _, body = get(conn, url)
        assert status == 200
        assert hashlib.sha256(body).hexdigest() == http_server.files[name], url
    conn.close()
    lines = [parent.wait_log(r"access id=\d+ [^\n]*cmd=GET[^\n]*", start=0)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = re.findall(r"access id=(\d+) [^\n]*cmd=GET [^\n]*dst=(\S+)", parent.log_text())
        if len(lines) >= 4:
            break
        time.sleep(0.1)
    assert len(lines) == 4, lines
    assert len({i for i, _ in lines}) == 1, f"the parent saw several connections: {lines}"
    assert lines[3][1] == f"localhost:{http_server.port}"
    # The front names the outbound, and counted the reuse as a pool hit.
    front.wait_log(r"access [^\n]*cmd=GET [^\n]*via=up")


def test_ferry_parent_credentials(ferry, http_server, tmp_path):
    """The parent's credentials go to the parent; the client's own
    Proxy-Authorization (for the front) never does; the parent's 407 is a
    502 for the client, with a log line that says so."""
    (tmp_path / "parent-users.txt").write_text("alice:plain:good-pw\nbob:plain:bob-pw\n")
    (tmp_path / "front-users.txt").write_text("bob:plain:bob-pw\n")
    parent = ferry(config={"workers": "1"}, auth={"userlist": str(tmp_path / "parent-users.txt")})
    url = http_server.url("small.txt")
    want = http_server.files["small.txt"]

    good = start_front(ferry, f"http://alice:good-pw@127.0.0.1:{parent.port}")
    conn = http.client.HTTPConnection(*good.addr, timeout=IO)
    for _ in range(2):
        status, _, body = get(conn, url)
        assert status == 200 and hashlib.sha256(body).hexdigest() == want
    conn.close()
    parent.wait_log(r"access [^\n]*user=alice [^\n]*cmd=GET")

    # The client authenticates to the front as bob, whom the parent knows
    # too: were bob's field sent on, the parent would take it.
    import base64

    bob = "Basic " + base64.b64encode(b"bob:bob-pw").decode()
    front = ferry(config={"outbound": "up", "workers": "1"},
                  auth={"userlist": str(tmp_path / "front-users.txt")},
                  extra=f"[outbound up]\nurl = http://127.0.0.1:{parent.port}\n")
    conn = http.client.HTTPConnection(*front.addr, timeout=IO)
    status, _, body = get(conn, url, {"Proxy-Authorization": bob})
    conn.close()
    assert status == 502, body
    front.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: parent requires credentials and none are configured \(407")
    front.wait_log(r"access [^\n]*user=bob [^\n]*cmd=GET [^\n]*reply=502 end=parent-auth-failed")
    assert "user=bob" not in parent.log_text()

    bad = start_front(ferry, f"http://alice:bad-pw@127.0.0.1:{parent.port}")
    conn = http.client.HTTPConnection(*bad.addr, timeout=IO)
    status, headers, body = get(conn, url)
    conn.close()
    assert status == 502 and b"refused ferry's credentials" in body
    assert "Proxy-Authenticate" not in headers
    bad.wait_log(r"outbound up: parent 127\.0\.0\.1 port \d+: parent refused ferry's credentials \(407")
    bad.wait_log(r"access [^\n]*cmd=GET [^\n]*reply=502 end=parent-auth-failed[^\n]*via=up")


# ---- a parent of the test's own: what goes on the wire ------------------------------


def test_recording_parent_wire_and_framing(ferry):
    """What the parent is sent: absolute form, Host from the target, the
    parent's credentials once; the client's Proxy-Authorization and
    Proxy-Connection not. Answers pass through (403 too). A response with a
    framing doubt is forwarded but its connection is not reused; one whose
    Connection names Content-Length is a 502."""
    answers = {
        b"/ok": ok_reply(),
        b"/forbidden": b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden",
        b"/gateway": b"HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 7\r\n\r\ntoo-old",
        b"/doubt": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi",
        b"/smuggle": b"HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 2\r\n\r\nhi",
    }

    def reply(head: bytes) -> bytes:
        target = head.split(b" ")[1]
        return answers[target[target.index(b"/", 7):]]

    parent = RecordingParent(reply)
    try:
        front = start_front(ferry, f"http://carol:pa%3Ass@127.0.0.1:{parent.addr[1]}")
        conn = http.client.HTTPConnection(*front.addr, timeout=IO)
        headers = {"Proxy-Authorization": "Basic Y2xpZW50OnNlY3JldA==", "Proxy-Connection": "keep-alive"}
        assert get(conn, "http://origin.test:8080/ok", headers)[0] == 200
        status, _, body = get(conn, "http://origin.test:8080/forbidden")
        assert (status, body) == (403, b"forbidden")
        status, _, body = get(conn, "http://origin.test:8080/gateway")
        assert (status, body) == (504, b"too-old")  # the parent's, not a timeout of ferry's
        assert get(conn, "http://other.test/ok")[0] == 200
        assert parent.nconn == 1, "four requests, two origins: one parent connection"
        _, head = parent.heads[0]
        lines = head.split(b"\r\n")
        assert lines[0] == b"GET http://origin.test:8080/ok HTTP/1.1"
        fields = [l.split(b":", 1)[0].lower() for l in lines[1:]]
        assert fields.count(b"proxy-authorization") == 1 and b"proxy-connection" not in fields
        assert b"Proxy-Authorization: Basic Y2Fyb2w6cGE6c3M=" in lines  # carol:pa:ss
        assert b"Host: origin.test:8080" in lines
        assert parent.heads[3][1].startswith(b"GET http://other.test/ok HTTP/1.1\r\n")

        # A doubt: forwarded, then the connection is not kept.
        status, _, body = get(conn, "http://origin.test/doubt")
        assert (status, body) == (200, b"hi")
        assert get(conn, "http://origin.test/ok")[0] == 200
        assert parent.nconn == 2, "a connection that saw a framing doubt was reused"
        # Connection naming a framing field: 502, and not reused either.
        status, _, _ = get(conn, "http://origin.test/smuggle")
        assert status == 502
        conn.close()
        conn = http.client.HTTPConnection(*front.addr, timeout=IO)
        assert get(conn, "http://origin.test/ok")[0] == 200
        conn.close()
        assert parent.nconn == 3
        front.wait_log(r"access [^\n]*reply=502 end=bad-response[^\n]*via=up")
        # A request whose Connection names a framing field: 400 here, and
        # the parent never sees it.
        conn = http.client.HTTPConnection(*front.addr, timeout=IO)
        status, _, _ = get(conn, "http://origin.test/ok", {"Connection": "content-length"})
        conn.close()
        assert status == 400 and len(parent.heads) == 8, parent.heads
    finally:
        parent.stop()


def test_parent_and_direct_on_one_client_connection(ferry):
    """Requests of one client connection that rules send different ways
    (direct to a keep-alive origin, through the parent) each go their own
    way on their own pooled connection: the origin is never sent a
    request in absolute form, the parent always is."""
    origin = RecordingParent(ok_reply(b"from the origin\n"))
    parent = RecordingParent(ok_reply())
    try:
        front = start_front(ferry, f"http://127.0.0.1:{parent.addr[1]}",
                            config={"outbound": "direct"},
                            extra="[rules]\nallow to *.viaparent.test via up\nallow\n")
        conn = http.client.HTTPConnection(*front.addr, timeout=IO)
        direct = f"http://127.0.0.1:{origin.addr[1]}/ok"
        for url in (direct, "http://a.viaparent.test/ok", direct, "http://b.viaparent.test/ok",
                    direct):
            status, _, body = get(conn, url)
            want = b"from the origin\n" if url == direct else b"from the parent\n"
            assert (status, body) == (200, want), url
        conn.close()
        assert [h.split(b"\r\n")[0] for _, h in origin.heads] == [b"GET /ok HTTP/1.1"] * 3
        assert [h.split(b"\r\n")[0] for _, h in parent.heads] == [
            b"GET http://a.viaparent.test/ok HTTP/1.1", b"GET http://b.viaparent.test/ok HTTP/1.1"]
        assert (origin.nconn, parent.nconn) == (1, 1)
    finally:
        origin.stop()
        parent.stop()


def test_range_rule_first_parent_still_told_the_name(ferry):
    """With a range rule first the name is resolved here to be judged; the
    request still goes to the parent with the name the client wrote (its
    Host cannot be an address instead), and a name in a denied range never
    reaches the parent."""
    parent = RecordingParent(ok_reply())
    try:
        front = start_front(ferry, f"http://127.0.0.1:{parent.addr[1]}",
                            extra="[rules]\ndeny to 127.0.0.2/32\nallow via up\n")
        conn = http.client.HTTPConnection(*front.addr, timeout=IO)
        assert get(conn, "http://localhost:8080/ok")[0] == 200
        status, _, _ = get(conn, "http://127.0.0.2/ok")
        assert status == 403
        conn.close()
        assert [h.split(b"\r\n")[0] for _, h in parent.heads] == [
            b"GET http://localhost:8080/ok HTTP/1.1"]
        assert b"Host: localhost:8080" in parent.heads[0][1].split(b"\r\n")
        front.wait_log(r"access [^\n]*dst=localhost:8080 [^\n]*reply=200 [^\n]*via=up")
    finally:
        parent.stop()


def test_socks_parent_plain_http_is_a_tunnel(ferry, http_server):
    """Through a SOCKS parent a plain request is a CONNECT to the origin
    and goes in origin form; such tunnels are not pooled (each request a
    new one), and bodies are intact."""
    parent = ferry(config={"workers": "1"})
    front = start_front(ferry, f"socks5h://127.0.0.1:{parent.port}")
    conn = http.client.HTTPConnection(*front.addr, timeout=IO)
    for name in ("small.txt", "big.bin"):
        status, _, body = get(conn, http_server.url(name))
        assert status == 200 and hashlib.sha256(body).hexdigest() == http_server.files[name]
    conn.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        seen = re.findall(r"access id=\d+ [^\n]*cmd=connect [^\n]*dst=(\S+)", parent.log_text())
        if len(seen) >= 2:
            break
        time.sleep(0.1)
    assert seen == [f"127.0.0.1:{http_server.port}"] * 2, seen


# ---- tinyproxy and Squid -------------------------------------------------------------


@pytest.fixture(scope="module")
def tinyproxy():
    """tinyproxy with BasicAuth and a filter that refuses blocked.test."""
    binary = need("tinyproxy")
    d = shared_dir("ferry-tinyproxy-")
    port = free_port()
    (d / "filter").write_text("blocked\\.test\n")
    (d / "tinyproxy.conf").write_text(
        f"Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 64\nAllow 127.0.0.1\n"
        f'LogLevel Info\nLogFile "{d}/tinyproxy.log"\nPidFile "{d}/tinyproxy.pid"\n'
        f'BasicAuth tuser tpass\nFilter "{d}/filter"\nFilterType ere\n'
    )
    with daemon([binary, "-d", "-c", str(d / "tinyproxy.conf")], d, port, "tinyproxy"):
        yield port


def test_tinyproxy_parent(ferry, http_server, tinyproxy):
    front = start_front(ferry, f"http://tuser:tpass@127.0.0.1:{tinyproxy}")
    conn = http.client.HTTPConnection(*front.addr, timeout=IO)
    for name in ("big.bin", "small.txt"):
        status, _, body = get(conn, http_server.url(name))
        assert status == 200 and hashlib.sha256(body).hexdigest() == http_server.files[name]
    # The parent's refusal of a destination is its response, passed on.
    status, _, body = get(conn, "http://blocked.test/")
    assert status == 403, body[:200]
    conn.close()
    front.wait_log(r"access [^\n]*dst=blocked\.test:80 [^\n]*reply=403 [^\n]*via=up")

    # Without credentials tinyproxy answers 407: a 502 here. (A wrong
    # password gets tinyproxy's 401, which cannot be told from an
    # origin's and passes through; the ferry parent covers that case.)
    bare = start_front(ferry, f"http://127.0.0.1:{tinyproxy}")
    conn = http.client.HTTPConnection(*bare.addr, timeout=IO)
    status, headers, body = get(conn, http_server.url("small.txt"))
    conn.close()
    assert status == 502 and b"refused ferry's credentials" in body
    assert "Proxy-Authenticate" not in headers
    bare.wait_log(r"outbound up: parent [^\n]*: parent requires credentials and none are configured")


@pytest.fixture(scope="module")
def squid():
    """Squid, logging each request with the client's port (which parent
    connection carried it)."""
    binary = need("squid")
    d = shared_dir("ferry-squid-")
    port = free_port()
    (d / "squid.conf").write_text(
        f"http_port 127.0.0.1:{port}\n"
        "acl localnet src 127.0.0.0/8\n"
        "http_access allow localnet\n"
        "http_access deny all\n"
        "cache deny all\n"
        "cache_mem 8 MB\n"
        "logformat ferry %>p %rm %ru %>Hs\n"
        f"access_log stdio:{d}/access.log ferry\n"
        "buffered_logs off\n"
        f"cache_log {d}/cache.log\n"
        f"pid_filename {d}/squid.pid\n"
        f"coredump_dir {d}\n"
        "shutdown_lifetime 1 seconds\n"
        "connect_timeout 5 seconds\n"
    )
    with daemon([binary, "-N", "-f", str(d / "squid.conf")], d, port, "squid", timeout=30):
        yield port, d / "access.log"


def test_squid_parent(ferry, http_server, squid):
    port, log = squid
    front = start_front(ferry, f"http://127.0.0.1:{port}")
    conn = http.client.HTTPConnection(*front.addr, timeout=IO)
    names = ("small.txt", "big.bin", "small.txt")
    for name in names:
        status, _, body = get(conn, http_server.url(name))
        assert status == 200 and hashlib.sha256(body).hexdigest() == http_server.files[name]
    # The destination refused at Squid: Squid's own answer passes through
    # (not ferry's 502: the parent answered).
    holder, refused = unused_refused_port()
    with holder:
        status, headers, _ = get(conn, f"http://127.0.0.1:{refused}/")
    assert status == 503 and "squid" in headers.get("Server", "").lower(), (status, headers)
    conn.close()
    want = re.escape(f"http://127.0.0.1:{http_server.port}/")
    seen = []
    deadline = time.monotonic() + 10
    while len(seen) < 3 and time.monotonic() < deadline:
        seen = wait_file(log, rf"(\d+) GET {want}\S+ 200")
        time.sleep(0.1)
    assert len(seen) == 3 and len(set(seen)) == 1, f"Squid saw {seen} (client ports)"
