# SPDX-License-Identifier: BSD-2-Clause
"""CONNECT-UDP (RFC 9298) over the HTTP/2 inbound: extended CONNECT
(RFC 8441) with :protocol connect-udp, datagrams as DATAGRAM capsules
(RFC 9297, context id 0), with python3-h2 as the client and capsules
encoded here with our own small varint code. Covers echo integrity on
127.0.0.1 and ::1 (sizes 0, 1, 1200, the [udp] limit; limit + 1 dropped
both ways and counted), many datagrams checked order-insensitively,
several UDP streams and a CONNECT stream on one connection, a name
resolved at the proxy, Proxy-Authorization (407) and a rule's 403 per
stream, the bad requests masque_error_status answers (400, 501), the
[udp] idle expiry ending the stream (END_STREAM), END_STREAM and
RST_STREAM from the client, a stream counted as one udp association, non-zero context ids and unknown capsule types, and an oversized
capsule resetting only its own stream, and a stream's window staying
small and fixed (32 KiB) however fast its datagrams are consumed."""

import base64
import collections
import select
import socket
import threading
import time
import urllib.parse

import pytest

from certlib import OPENSSL, make_cert
from ferrylib import HAVE_IPV6, EchoServer
from opslib import http_get, metrics_addr

h2 = pytest.importorskip("h2")
import h2lib as t2  # noqa: E402  (the H2Client and the TLS ferry)

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

LIMIT = 2000  # [udp] max_datagram in these tests: the largest UDP payload
BIG = b"BIG"  # the echo answers a datagram starting with this with LIMIT + 1 bytes


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("h2udpcerts"), "h2udp")


# ---- capsules (RFC 9297) with QUIC varints (RFC 9000 section 16) -------------

def varint(v: int) -> bytes:
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return (v | 0x4000).to_bytes(2, "big")
    if v < 1 << 30:
        return (v | 0x80000000).to_bytes(4, "big")
    return (v | 0xC000000000000000).to_bytes(8, "big")


def read_varint(b: bytes, i: int):
    if i >= len(b):
        return None, i
    n = 1 << (b[i] >> 6)
    if i + n > len(b):
        return None, i
    v = b[i] & 0x3F
    for x in b[i + 1:i + n]:
        v = (v << 8) | x
    return v, i + n


def capsule(ctype: int, payload: bytes) -> bytes:
    return varint(ctype) + varint(len(payload)) + payload


def dgram(payload: bytes, context: int = 0) -> bytes:
    return capsule(0, varint(context) + payload)


def datagrams(data: bytes) -> list[bytes]:
    """The UDP payloads of the whole DATAGRAM capsules in data."""
    out, i = [], 0
    while True:
        t, j = read_varint(data, i)
        n, j = read_varint(data, j) if t is not None else (None, j)
        if n is None or j + n > len(data):
            return out
        body = data[j:j + n]
        i = j + n
        if t == 0:
            ctx, k = read_varint(body, 0)
            assert ctx == 0, f"context id {ctx} from the proxy"
            out.append(body[k:])


# ---- a UDP echo --------------------------------------------------------------

class UdpEcho:
    """Echoes datagrams on host (both loopbacks on one port with
    dual=True); BIG at the front is answered with LIMIT + 1 bytes."""

    def __init__(self, host: str = "127.0.0.1", dual: bool = False):
        self.socks = []
        for _ in range(50):
            first = self._bind(host, 0)
            if not dual:
                self.socks = [first]
                break
            try:
                self.socks = [first, self._bind("::1", first.getsockname()[1])]
                break
            except OSError:
                first.close()
        assert self.socks, "no port for a dual-stack echo"
        self.port = self.socks[0].getsockname()[1]
        self.seen = 0
        self.stopping = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    @staticmethod
    def _bind(host, port):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((host, port))
        return s

    def _run(self):
        while not self.stopping:
            r, _, _ = select.select(self.socks, [], [], 0.1)
            for s in r:
                data, peer = s.recvfrom(65536)
                self.seen += 1
                s.sendto(b"x" * (LIMIT + 1) if data.startswith(BIG) else data, peer)

    def stop(self):
        self.stopping = True
        self.t.join(2)
        for s in self.socks:
            s.close()


@pytest.fixture
def udp_echo():
    made = []

    def make(host="127.0.0.1", dual=False):
        e = UdpEcho(host, dual)
        made.append(e)
        return e
    yield make
    for e in made:
        e.stop()


# ---- helpers -----------------------------------------------------------------

def h2udp_ferry(ferry, cert, udp: str = "", extra: str = "", **kw):
    return t2.h2_ferry(ferry, cert, extra=f"\n[udp]\nmax_datagram = {LIMIT}\n{udp}\n{extra}"
                       "\n[metrics]\nlisten = 127.0.0.1:0\n", **kw)


def udp_open(cl, host: str, port, headers=(), scheme="https", path=None, capsule_protocol="?1"):
    if path is None:
        path = f"/.well-known/masque/udp/{urllib.parse.quote(host, safe='')}/{port}/"
    hs = [(":protocol", "connect-udp"), (":scheme", scheme), (":path", path)]
    if capsule_protocol is not None:
        hs.append(("capsule-protocol", capsule_protocol))
    return cl.connect("proxy.test:443", [*hs, *headers])


def wait_status(cl, sid, want=200, udp=True):
    cl.wait(lambda: cl.streams[sid]["status"] is not None or cl.streams[sid]["reset"] is not None,
            what=f"stream {sid}'s response")
    assert cl.streams[sid]["status"] == want, cl.streams[sid]
    if want == 200 and udp:
        assert cl.streams[sid]["headers"].get("capsule-protocol") == "?1"


def got(cl, sid) -> list[bytes]:
    return datagrams(bytes(cl.streams[sid]["data"]))


def exchange(cl, sid, payloads: list[bytes], expect: int | None = None):
    """Send payloads as capsules; wait until expect (default all) datagrams
    more came back; the new ones."""
    before = len(got(cl, sid))
    cl.send(sid, b"".join(dgram(p) for p in payloads))
    want = before + (len(payloads) if expect is None else expect)
    cl.wait(lambda: len(got(cl, sid)) >= want, what=f"{want - before} datagrams back")
    return got(cl, sid)[before:]


def metrics(f) -> str:
    return http_get(metrics_addr(f), "/metrics").body.decode()


def metric(body: str, line: str) -> int:
    for ln in body.splitlines():
        if ln.startswith(line + " "):
            return int(float(ln.split()[-1]))
    raise AssertionError(f"{line} not in /metrics")


# ---- tests -------------------------------------------------------------------

def test_h2_udp_echo_sizes_many_and_mixed_streams(ferry, cert, udp_echo):
    e4 = udp_echo("127.0.0.1")
    e4b = udp_echo("127.0.0.1")
    e6 = udp_echo("::1") if HAVE_IPV6 else None
    tcp = EchoServer()
    f = h2udp_ferry(ferry, cert)
    cl = t2.H2Client(f.addr, cert[0])
    try:
        cl.wait(lambda: cl.remote_settings is not None, what="SETTINGS")
        assert cl.remote_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL) == 1
        sids = {"v4": udp_open(cl, "127.0.0.1", e4.port), "v4b": udp_open(cl, "127.0.0.1", e4b.port)}
        if e6:
            sids["v6"] = udp_open(cl, "::1", e6.port)
        conn_sid = cl.connect(f"127.0.0.1:{tcp.port}")
        for sid in sids.values():
            wait_status(cl, sid)
        wait_status(cl, conn_sid, udp=False)
        sizes = [0, 1, 1200, LIMIT]
        for name, sid in sids.items():
            payloads = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
            back = exchange(cl, sid, payloads + [b"y" * (LIMIT + 1)], expect=len(sizes))
            assert sorted(back) == sorted(payloads), name  # boundaries kept, empty included
        # Too big on the way back: dropped too.
        back = exchange(cl, sids["v4"], [BIG, b"after-big"], expect=1)
        assert back == [b"after-big"]
        # Many datagrams on every stream at once, in batches, order-insensitive.
        for batch in range(4):
            want = {}
            for name, sid in sids.items():
                want[name] = [f"{name}-{batch}-{i}-".encode() * (1 + i % 37) for i in range(50)]
                cl.send(sid, b"".join(dgram(p) for p in want[name]))
            for name, sid in sids.items():
                n = len(want[name])
                cl.wait(lambda: len([d for d in got(cl, sid) if d.startswith(f"{name}-{batch}-".encode())]) >= n,
                        what=f"batch {batch} on {name}")
                came = [d for d in got(cl, sid) if d.startswith(f"{name}-{batch}-".encode())]
                assert collections.Counter(came) == collections.Counter(want[name])
        # The CONNECT stream alongside.
        cl.send(conn_sid, b"tcp beside udp", end=True)
        cl.wait(lambda: cl.streams[conn_sid]["ended"], what="the TCP echo")
        assert bytes(cl.streams[conn_sid]["data"]) == b"tcp beside udp"
        # END_STREAM from the client: ours follows.
        cl.conn.end_stream(sids["v4b"])
        cl.flush()
        cl.wait(lambda: cl.streams[sids["v4b"]]["ended"], what="END_STREAM back")
    finally:
        cl.close()
        tcp.stop()
    body = metrics(f)
    assert metric(body, 'ferry_udp_dropped_total{reason="size"}') >= len(sids) + 1
    assert metric(body, "ferry_h2_udp_streams_total") == len(sids)
    assert metric(body, 'ferry_udp_datagrams_total{direction="up"}') >= len(sids) * 204
    m = f.wait_log(r"access .*cmd=udp dst=- addr=127\.0\.0\.1:%d up=(\d+) down=(\d+) .*"
                   r"reply=200 end=done dgrams=(\d+)/(\d+) proto=h2" % e4b.port)
    assert int(m.group(3)) == int(m.group(4)) == 200 + 4, m.group(0)


def test_h2_udp_name_auth_and_rules(ferry, cert, udp_echo):
    dual = udp_echo(dual=HAVE_IPV6)
    other = udp_echo("127.0.0.1")
    users = ferry.workdir / "users.txt"
    users.write_text("alice:plain:wonderland\n")
    f = h2udp_ferry(ferry, cert, auth={"userlist": str(users)},
                    extra=f"\n[rules]\ndeny to 127.0.0.1 port {other.port}\nallow to 127.0.0.0/8\n"
                    "allow to ::1\n")
    good = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:wonderland").decode())]
    cl = t2.H2Client(f.addr, cert[0])
    try:
        bare = udp_open(cl, "127.0.0.1", dual.port)
        named = udp_open(cl, "localhost", dual.port, good)
        denied = udp_open(cl, "127.0.0.1", other.port, good)
        wait_status(cl, bare, 407)
        assert "basic" in cl.streams[bare]["headers"].get("proxy-authenticate", "").lower()
        wait_status(cl, denied, 403)
        wait_status(cl, named)
        assert exchange(cl, named, [b"by name"]) == [b"by name"]
        assert other.seen == 0
    finally:
        cl.close()
    f.wait_log(r"access .*user=alice cmd=udp dst=localhost:%d .*reply=200 " % dual.port)
    f.wait_log(r"access .*user=alice cmd=udp .*reply=403 .*proto=h2")


@pytest.mark.parametrize("case,status", [
    ("scheme", 400), ("path", 400), ("port0", 400), ("capsule0", 400), ("protocol", 501),
])
def test_h2_udp_bad_requests(ferry, cert, udp_echo, case, status):
    e = udp_echo()
    f = h2udp_ferry(ferry, cert)
    cl = t2.H2Client(f.addr, cert[0])
    try:
        if case == "scheme":
            sid = udp_open(cl, "127.0.0.1", e.port, scheme="http")
        elif case == "path":
            sid = udp_open(cl, "127.0.0.1", e.port, path=f"/masque/127.0.0.1/{e.port}/")
        elif case == "port0":
            sid = udp_open(cl, "127.0.0.1", 0)
        elif case == "capsule0":
            sid = udp_open(cl, "127.0.0.1", e.port, capsule_protocol="?0")
        else:
            sid = cl.connect("proxy.test:443", [(":protocol", "ferry-nothing"), (":scheme", "https"),
                                                (":path", f"/.well-known/masque/udp/127.0.0.1/{e.port}/")])
        wait_status(cl, sid, status)
        ok = udp_open(cl, "127.0.0.1", e.port)  # the connection goes on
        wait_status(cl, ok)
        assert exchange(cl, ok, [b"still"]) == [b"still"]
    finally:
        cl.close()


def test_h2_udp_idle_expiry_ends_stream(ferry, cert, udp_echo):
    e = udp_echo()
    f = h2udp_ferry(ferry, cert, udp="idle = 1s")
    cl = t2.H2Client(f.addr, cert[0])
    try:
        sid = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, sid)
        assert exchange(cl, sid, [b"once"]) == [b"once"]
        cl.wait(lambda: cl.streams[sid]["ended"], timeout=10, what="END_STREAM at idle expiry")
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=udp .*reply=200 end=udp-idle dgrams=1/1 proto=h2")


def test_h2_udp_oversized_capsule_aborts_only_its_stream(ferry, cert, udp_echo):
    e = udp_echo()
    f = h2udp_ferry(ferry, cert)
    cl = t2.H2Client(f.addr, cert[0])
    try:
        bad, good = udp_open(cl, "127.0.0.1", e.port), udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, bad)
        wait_status(cl, good)
        # Skipped: a non-zero context id, an unknown capsule type.
        cl.send(good, dgram(b"ctx", context=7) + capsule(0x2A, b"unknown") + dgram(b"after"))
        cl.wait(lambda: got(cl, good) == [b"after"], what="the datagram behind them")
        # Its length alone says it is over the cap: the stream is reset.
        cl.send(bad, varint(0) + varint(LIMIT + 100) + b"\x00" + b"z" * 100)
        cl.wait(lambda: cl.streams[bad]["reset"] is not None, what="RST_STREAM")
        assert exchange(cl, good, [b"goes on"]) == [b"goes on"]
    finally:
        cl.close()
    f.wait_log(r"CONNECT-UDP stream aborted: capsule-too-long")
    body = metrics(f)
    assert metric(body, "ferry_h2_udp_aborted_total") == 1
    assert metric(body, 'ferry_udp_dropped_total{reason="context"}') == 1
    assert metric(body, "ferry_h2_udp_capsules_skipped_total") == 1


def test_h2_udp_stream_window_is_small_and_fixed(ferry, cert, udp_echo):
    # A CONNECT-UDP stream's window stays at 32 KiB however fast its
    # datagrams are consumed (a TCP stream's grows from [http2] window):
    # a flood keeps at most that much ahead of others' datagrams. The
    # first SETTINGS window is the client's to spend once; after that the
    # credit the proxy gives back never lets more than 32 KiB be in flight.
    e = udp_echo()
    f = h2udp_ferry(ferry, cert)
    cl = t2.H2Client(f.addr, cert[0])
    try:
        sid = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, sid)
        payloads = [b"%05d-" % i + b"w" * 1194 for i in range(400)]  # 480 KB of capsules
        for i in range(0, len(payloads), 50):
            cl.send(sid, b"".join(dgram(p) for p in payloads[i:i + 50]))
        # Every datagram reached the echo (none dropped: the echo keeps up),
        # so all the stream's credit is back.
        cl.wait(lambda: e.seen >= len(payloads), what="the echo to see all datagrams")
        time.sleep(0.2)
        cl.pump(0.2)
        win = cl.conn.local_flow_control_window(sid)
        assert 0 < win <= 32 * 1024, f"stream window {win}"
    finally:
        cl.close()


def test_h2_udp_stream_counts_as_association(ferry, cert, udp_echo):
    # Each CONNECT-UDP stream is one association of its listener
    # (udp.associations): over it a 429, and the slot comes back at its end.
    e = udp_echo()
    f = h2udp_ferry(ferry, cert, udp="associations = 1")
    cl = t2.H2Client(f.addr, cert[0])
    try:
        first = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, first)
        second = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, second, 429)
        cl.conn.end_stream(first)
        cl.flush()
        cl.wait(lambda: cl.streams[first]["ended"], what="the first stream's end")
        third = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, third)
        assert exchange(cl, third, [b"slot back"]) == [b"slot back"]
        # RST_STREAM from the client closes the socket and frees the slot too.
        cl.conn.reset_stream(third)
        cl.flush()
        fourth = udp_open(cl, "127.0.0.1", e.port)
        wait_status(cl, fourth)
        assert exchange(cl, fourth, [b"after reset"]) == [b"after reset"]
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=udp .*reply=200 end=client-reset dgrams=1/1 proto=h2")
    body = metrics(f)
    assert metric(body, "ferry_udp_associations_rejected_total") == 1
