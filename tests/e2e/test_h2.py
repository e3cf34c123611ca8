# SPDX-License-Identifier: BSD-2-Clause
"""The HTTP/2 inbound (RFC 9113) on a tls:// listener: ALPN h2, CONNECT
streams (section 8.5) as sessions of their own, with python3-h2 as the
client (version 4.1 wants validate_outbound_headers=False for a CONNECT
without :scheme and :path). Covers 100 concurrent streams on one
connection with integrity and half-close both ways, Proxy-Authorization
per stream (407 / 200), a rule's 403 on one stream while the others work,
proto=h2 in the access log, RST_STREAM reaching the destination, a stalled
stream that does not hold up 7 others (8 MiB each, integrity), the abuse
budgets (Rapid Reset, PING, SETTINGS and empty DATA floods, a header
bomb: GOAWAY ENHANCE_YOUR_CALM while another client's connection works,
counted in /metrics), a destination that never reads holding up only its
own upload, [http2] config warnings), GOAWAY at SIGTERM and
SIGHUP with the open stream finishing, and the sending order: a young
stream's response goes ahead of 8 bulk downloads (TCP_NOTSENT_LOWAT keeps
the socket queue shallow, the young weight keeps its 64 KiB together)."""

import hashlib
import signal
import socket
import threading
import time

import pytest

from certlib import OPENSSL, make_cert
from ferrylib import (EchoServer, ServerAbortServer, ServerHalfCloseServer, ThreadedServer,
                      run_ferry)
from h2lib import H2Client, SourceServer, h2_ferry, pattern
from opslib import http_get, metrics_addr

h2 = pytest.importorskip("h2")
import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.errors  # noqa: E402
import h2.events  # noqa: E402
import h2.exceptions  # noqa: E402
import h2.settings  # noqa: E402

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

MiB = 1024 * 1024
CALM = h2.errors.ErrorCodes.ENHANCE_YOUR_CALM


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("h2certs"), "h2")


class HashServer(ThreadedServer):
    """Reads until EOF, answers "COUNT SHA256HEX" and closes."""

    def handle(self, c, peer):
        h, n = hashlib.sha256(), 0
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            h.update(d)
            n += len(d)
        c.sendall(f"{n} {h.hexdigest()}".encode())


class DeafServer(ThreadedServer):
    """Accepts and never reads (its receive buffer fills)."""

    def handle(self, c, peer):
        self.stopping.wait(60)


class EofWatchServer(ThreadedServer):
    """Records how each connection ended: 'eof' or 'reset'."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ends: list[str] = []
        self.ended = threading.Event()

    def handle(self, c, peer):
        how = "eof"
        try:
            while c.recv(65536):
                pass
        except ConnectionResetError:
            how = "reset"
        with self.lock:
            self.ends.append(how)
        self.ended.set()


@pytest.fixture
def echo():
    s = EchoServer()
    yield s
    s.stop()


def echo_roundtrip(cl: H2Client, echo_addr, data: bytes = b"still working") -> None:
    sid = cl.connect(f"127.0.0.1:{echo_addr[1]}")
    cl.wait(lambda: cl.streams[sid]["status"] is not None, what="a response")
    assert cl.streams[sid]["status"] == 200
    cl.send(sid, data, end=True)
    cl.wait(lambda: cl.streams[sid]["ended"], what="the echo's end")
    assert bytes(cl.streams[sid]["data"]) == data


def test_h2_settings_and_100_streams(ferry, cert, echo):
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    try:
        cl.wait(lambda: cl.remote_settings is not None, what="SETTINGS")
        s = cl.remote_settings
        assert s[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] == 1024
        assert s[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] == 256 * 1024
        assert s[h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL] == 1
        sids = [cl.connect(f"127.0.0.1:{echo.port}") for _ in range(100)]
        cl.wait(lambda: all(cl.streams[i]["status"] for i in sids), what="100 responses")
        assert {cl.streams[i]["status"] for i in sids} == {200}
        want = {i: pattern(i, 3000 + 97 * i) for i in sids}
        for i in sids:  # half-close: END_STREAM after the data
            cl.send(i, want[i], end=True)
        cl.wait(lambda: all(cl.streams[i]["ended"] for i in sids), what="100 echoes")
        for i in sids:
            assert bytes(cl.streams[i]["data"]) == want[i], i
            assert cl.streams[i]["reset"] is None
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=CONNECT .*reply=200 .*proto=h2")


def test_h2_auth_and_rules(ferry, cert, echo):
    import base64
    # The user list lives in the ferry's own directory.
    workdir = ferry.workdir
    (workdir / "users.txt").write_text("alice:plain:wonderland\n")
    other = EchoServer()
    try:
        f = h2_ferry(ferry, cert, auth={"userlist": str(workdir / "users.txt")},
                     extra=f"\n[rules]\ndeny to 127.0.0.1 port {other.port}\nallow to 127.0.0.0/8\n")
        cl = H2Client(f.addr, cert[0])
        try:
            bare = cl.connect(f"127.0.0.1:{echo.port}")
            cl.wait(lambda: cl.streams[bare]["ended"], what="407")
            assert cl.streams[bare]["status"] == 407
            assert "basic" in cl.streams[bare]["headers"].get("proxy-authenticate", "").lower()
            good = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:wonderland").decode())]
            bad = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:nope").decode())]
            wrong = cl.connect(f"127.0.0.1:{echo.port}", bad)
            ok = cl.connect(f"127.0.0.1:{echo.port}", good)
            denied = cl.connect(f"127.0.0.1:{other.port}", good)
            cl.wait(lambda: cl.streams[wrong]["ended"] and cl.streams[denied]["ended"]
                    and cl.streams[ok]["status"], what="answers")
            assert cl.streams[wrong]["status"] == 407
            assert cl.streams[denied]["status"] == 403
            assert cl.streams[ok]["status"] == 200
            cl.send(ok, b"after a 403 on the same connection", end=True)
            cl.wait(lambda: cl.streams[ok]["ended"], what="echo")
            assert bytes(cl.streams[ok]["data"]) == b"after a 403 on the same connection"
        finally:
            cl.close()
        f.wait_log(r"access .*user=alice cmd=CONNECT .*reply=403 .*proto=h2")
        f.wait_log(r"access .*user=alice cmd=CONNECT .*reply=200 .*proto=h2")
    finally:
        other.stop()


def test_h2_extended_connect_and_bad_requests(ferry, cert, echo):
    # RFC 8441: SETTINGS_ENABLE_CONNECT_PROTOCOL is on; a :protocol other
    # than connect-udp (test_h2_udp.py) is a 501. A CONNECT without a port
    # is a 400; a GET with ":scheme https" is not a forward proxy's job
    # (501; test_h2_http.py has the plain requests that are). The
    # connection goes on after each.
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    try:
        udp = cl.connect("127.0.0.1:443", [(":protocol", "websocket"), (":scheme", "https"),
                                           (":path", "/.well-known/masque/udp/127.0.0.1/53/")])
        noport = cl.connect("127.0.0.1")
        get = cl.conn.get_next_available_stream_id()
        cl.streams[get] = {"status": None, "data": bytearray(), "ended": False, "reset": None}
        cl.conn.send_headers(get, [(":method", "GET"), (":scheme", "https"),
                                   (":authority", "127.0.0.1"), (":path", "/")], end_stream=True)
        cl.flush()
        cl.wait(lambda: all(cl.streams[i]["ended"] for i in (udp, noport, get)), what="answers")
        assert cl.streams[udp]["status"] == 501
        assert cl.streams[noport]["status"] == 400
        assert cl.streams[get]["status"] == 501
        echo_roundtrip(cl, echo.addr)
    finally:
        cl.close()


def test_h2_rst_stream_resets_destination(ferry, cert):
    watch = EofWatchServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = H2Client(f.addr, cert[0])
        try:
            sid = cl.connect(f"127.0.0.1:{watch.port}")
            cl.wait(lambda: cl.streams[sid]["status"] == 200, what="200")
            cl.send(sid, b"x" * 1000)
            time.sleep(0.1)
            cl.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            cl.flush()
            assert watch.ended.wait(10), "the destination never saw the end"
            assert watch.ends == ["reset"]
            # The connection goes on.
            echo = EchoServer()
            try:
                echo_roundtrip(cl, echo.addr)
            finally:
                echo.stop()
        finally:
            cl.close()
        f.wait_log(r"access .*end=client-reset.*proto=h2")
    finally:
        watch.stop()


def test_h2_destination_half_close_and_reset(ferry, cert):
    # The destination's FIN is END_STREAM while the client still sends
    # (half-close the other way); a destination that resets its end is
    # RST_STREAM(CONNECT_ERROR) (RFC 9113 section 8.5).
    half = ServerHalfCloseServer(first_bytes=1000)
    rudely = ServerAbortServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = H2Client(f.addr, cert[0])
        try:
            sid = cl.connect(f"127.0.0.1:{half.port}")
            cl.wait(lambda: cl.streams[sid]["status"] == 200, what="200")
            cl.send(sid, b"a" * 1000)
            cl.wait(lambda: cl.streams[sid]["ended"], what="the destination's END_STREAM")
            assert bytes(cl.streams[sid]["data"]) == ServerHalfCloseServer.GREETING
            rest = pattern(7, 300_000)
            cl.send(sid, rest, end=True)
            assert half.done.wait(10)
            (n, digest), = half.results.values()
            assert n == 1000 + len(rest)
            assert digest == hashlib.sha256(b"a" * 1000 + rest).hexdigest()
            cl.wait(lambda: not cl.conn.open_outbound_streams, what="the stream's close")

            sid = cl.connect(f"127.0.0.1:{rudely.port}")
            cl.wait(lambda: cl.streams[sid]["status"] == 200, what="200")
            # The server closes at once with our bytes unread: a reset.
            cl.send(sid, b"z" * 100_000)
            cl.wait(lambda: cl.streams[sid]["reset"] is not None or cl.streams[sid]["ended"],
                    what="the destination's end")
            st = cl.streams[sid]
            # Nearly always the reset overtakes the greeting; a FIN read
            # before our bytes went out is a clean end, then a failed write.
            assert (st["reset"] == h2.errors.ErrorCodes.CONNECT_ERROR
                    or (st["ended"] and bytes(st["data"]) == ServerAbortServer.GREETING)), st
            echo = EchoServer()
            try:
                echo_roundtrip(cl, echo.addr)
            finally:
                echo.stop()
        finally:
            cl.close()
    finally:
        half.stop()
        rudely.stop()


def test_h2_stalled_stream_does_not_stop_others(ferry, cert):
    src = SourceServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = H2Client(f.addr, cert[0])
        try:
            n = 8 * MiB
            stalled = cl.connect(f"127.0.0.1:{src.port}")
            cl.stalled.add(stalled)
            sids = [cl.connect(f"127.0.0.1:{src.port}") for _ in range(7)]
            cl.wait(lambda: all(cl.streams[i]["status"] for i in [stalled, *sids]), what="200s")
            cl.send(stalled, f"{n}\n".encode())
            for i in sids:
                cl.send(i, f"{n}\n".encode(), end=True)
            cl.wait(lambda: all(cl.streams[i]["ended"] for i in sids), timeout=60,
                    what="7 transfers")
            want = hashlib.sha256(pattern(n, n)).hexdigest()
            for i in sids:
                assert len(cl.streams[i]["data"]) == n
                assert hashlib.sha256(cl.streams[i]["data"]).hexdigest() == want
            # The stalled one got no more than its window (the client's
            # initial 64 KiB) and is still open.
            assert len(cl.streams[stalled]["data"]) <= 65535
            assert not cl.streams[stalled]["ended"]
        finally:
            cl.close()
    finally:
        src.stop()


def test_h2_deaf_destination_does_not_stop_other_uploads(ferry, cert):
    # Stream credit comes back as bytes reach the destination, connection
    # credit on receipt: one destination that never reads holds up only
    # its own stream while 7 others upload 8 MiB each.
    deaf, sink = DeafServer(), HashServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = H2Client(f.addr, cert[0])
        try:
            n = 8 * MiB
            stuck = cl.connect(f"127.0.0.1:{deaf.port}")
            sids = [cl.connect(f"127.0.0.1:{sink.port}") for _ in range(7)]
            cl.wait(lambda: all(cl.streams[i]["status"] for i in [stuck, *sids]), what="200s")
            data = {i: pattern(i, n) for i in sids}
            data[stuck] = pattern(0, n)
            left = {i: memoryview(data[i]) for i in [stuck, *sids]}
            deadline = time.monotonic() + 60
            while any(len(left[i]) for i in sids):
                assert time.monotonic() < deadline, "uploads stalled"
                moved = False
                for i, v in left.items():
                    room = min(cl.conn.local_flow_control_window(i),
                               cl.conn.max_outbound_frame_size, len(v))
                    if room > 0:
                        cl.conn.send_data(i, bytes(v[:room]))
                        left[i] = v[room:]
                        moved = True
                        if i != stuck and not len(left[i]):
                            cl.conn.end_stream(i)
                cl.flush()
                cl.pump(0 if moved else 0.05)
            cl.wait(lambda: all(cl.streams[i]["ended"] for i in sids), timeout=30, what="digests")
            for i in sids:
                got = bytes(cl.streams[i]["data"]).decode()
                assert got == f"{n} {hashlib.sha256(data[i]).hexdigest()}", i
            # The deaf one took no more than its window and the sockets' buffers.
            assert len(left[stuck]) > 0
        finally:
            cl.close()
    finally:
        deaf.stop()
        sink.stop()


def abuse_case(ferry, cert, echo, attack, reason):
    f = h2_ferry(ferry, cert, extra="\n[metrics]\nlisten = 127.0.0.1:0\n")
    bystander = H2Client(f.addr, cert[0])
    cl = H2Client(f.addr, cert[0])
    try:
        attack(cl, echo)
        cl.wait(lambda: cl.goaway is not None or cl.closed, what="GOAWAY")
        assert cl.goaway is not None and cl.goaway.error_code == CALM, cl.goaway
        echo_roundtrip(bystander, echo.addr)
    finally:
        cl.close()
        bystander.close()
    f.wait_log(r"h2: .* over its .* budget: GOAWAY\(ENHANCE_YOUR_CALM\)")
    body = http_get(metrics_addr(f), "/metrics").body.decode()
    assert f'ferry_h2_goaway_total{{reason="{reason}"}} 1' in body, body
    assert "ferry_h2_streams_total " in body and "ferry_h2_connections " in body
    return f


def test_h2_rapid_reset_gets_goaway(ferry, cert, echo):
    def attack(cl, echo):
        for _ in range(1000):
            if cl.goaway or cl.closed:
                break
            sid = cl.connect(f"127.0.0.1:{echo.port}")
            cl.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
            cl.flush()
            cl.pump(0)
    abuse_case(ferry, cert, echo, attack, "rapid_reset")


def test_h2_ping_flood_gets_goaway(ferry, cert, echo):
    def attack(cl, echo):
        for i in range(2000):
            if cl.goaway or cl.closed:
                break
            cl.conn.ping(i.to_bytes(8, "big"))
            cl.flush()
            if i % 50 == 0:
                cl.pump(0)
    abuse_case(ferry, cert, echo, attack, "ping_flood")


def test_h2_header_bomb_gets_goaway(ferry, cert, echo):
    def attack(cl, echo):
        big = [(f"x-bomb-{i}", "b" * 4000) for i in range(40)]  # 160 KB > 64 KiB
        cl.connect(f"127.0.0.1:{echo.port}", big)
    abuse_case(ferry, cert, echo, attack, "header_list")


def test_h2_settings_flood_gets_goaway(ferry, cert, echo):
    def attack(cl, echo):
        for i in range(1000):
            if cl.goaway or cl.closed:
                break
            cl.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100 + i})
            cl.flush()
            if i % 50 == 0:
                cl.pump(0)
    abuse_case(ferry, cert, echo, attack, "settings_flood")


def test_h2_empty_data_flood_gets_goaway(ferry, cert, echo):
    def attack(cl, echo):
        sid = cl.connect(f"127.0.0.1:{echo.port}")
        cl.wait(lambda: cl.streams[sid]["status"] == 200, what="200")
        for i in range(1000):
            if cl.goaway or cl.closed:
                break
            cl.conn.send_data(sid, b"")
            cl.flush()
            if i % 50 == 0:
                cl.pump(0)
    abuse_case(ferry, cert, echo, attack, "empty_data")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_h2_goaway_lets_open_stream_finish(ferry, cert, echo, sig):
    f = h2_ferry(ferry, cert)
    cl = H2Client(f.addr, cert[0])
    try:
        sid = cl.connect(f"127.0.0.1:{echo.port}")
        cl.wait(lambda: cl.streams[sid]["status"] == 200, what="200")
        cl.send(sid, b"before ")
        cl.wait(lambda: bytes(cl.streams[sid]["data"]) == b"before ", what="echo")
        f.send_signal(sig)
        cl.wait(lambda: cl.goaway is not None, what="GOAWAY")
        assert cl.goaway.error_code == h2.errors.ErrorCodes.NO_ERROR
        assert cl.goaway.last_stream_id == sid
        cl.send(sid, b"after", end=True)
        cl.wait(lambda: cl.streams[sid]["ended"], what="the stream's end")
        assert bytes(cl.streams[sid]["data"]) == b"before after"
        cl.wait(lambda: cl.closed, what="the connection's close")
    finally:
        cl.close()
    if sig == signal.SIGTERM:
        assert f.wait(15) == 0


def test_h2_config_warnings(tmp_path, cert):
    # ferry.conf(5): a bad [http2] value keeps the default, a huge one
    # clamps, each a warning at its line; --check says so and exits 0.
    c, k = cert
    cfg = tmp_path / "h2.conf"
    cfg.write_text(f"workers = 1\nlisten = tls://127.0.0.1:0\n[tls]\ncert = {c}\nkey = {k}\n"
                   "[http2]\nmax_concurrent_streams = zero\nwindow = 1g\npings_per_second = 0\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 0, r.text
    assert (f"{cfg}:7: http2.max_concurrent_streams: 'zero' is not valid (expected 1..65535); "
            "using the default 1024") in r.err, r.err
    assert f"{cfg}:8: http2.window: '1g' is above the maximum; using 16777216" in r.err, r.err
    assert f"{cfg}:9: http2.pings_per_second: '0' is not valid" in r.err, r.err
    cfg.write_text("workers = 1\n[http2]\nno_such_key = 1\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc == 1 and "no_such_key" in r.err, r.text


class EndlessServer(ThreadedServer):
    """Sends pattern bytes as fast as the peer takes them, until it goes."""

    def handle(self, c, peer):
        block = pattern(1, 1 << 20)
        try:
            while not self.stopping.is_set():
                c.sendall(block)
        except OSError:
            pass


class ReadySourceServer(SourceServer):
    """A SourceServer that says when its bytes are all written."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.sent = threading.Event()

    def handle(self, c, peer):
        line = b""
        while not line.endswith(b"\n"):
            d = c.recv(64)
            if not d:
                return
            line += d
        n = int(line)
        c.sendall(pattern(n, n))
        self.sent.set()
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass


class OrderClient(H2Client):
    """Counts the bulk streams' bytes in arrival order, and what that count
    was when the young stream's first and last bytes arrived."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.young = 0
        self.bulk = 0
        self.want = 65536  # the young stream's bytes that make at_last
        self.at_first = self.at_last = None

    @classmethod
    def wide(cls, addr, ca):
        """One with a small receive buffer and stream windows of 16 MiB
        (acknowledged): the queues, not the windows, fill."""
        cl = cls(addr, ca, rcvbuf=32 * 1024)
        try:
            cl.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16 * MiB})
            cl.flush()
            cl.wait(lambda: cl.conn.local_settings.initial_window_size == 16 * MiB,
                    what="the SETTINGS ACK")
        except BaseException:
            cl.close()
            raise
        return cl

    def _event(self, ev):
        super()._event(ev)
        if isinstance(ev, h2.events.DataReceived) and ev.stream_id != self.young:
            self.bulk += len(ev.data)
        elif isinstance(ev, h2.events.DataReceived) and ev.data:
            if self.at_first is None:
                self.at_first = self.bulk
            if self.at_last is None and len(self.streams[self.young]["data"]) >= self.want:
                self.at_last = self.bulk


def test_h2_young_stream_goes_ahead_of_bulk(ferry, cert):
    """TUNNEL.md, Flow control, Sending: 8 streams download without end
    into a client that reads slower than ferry sends (a 64 KiB receive
    buffer, Python), so every queue fills. A new stream asks for 64 KiB;
    once its source has written it, the client reads on, counting the bulk
    bytes that arrive before the young stream's first and last bytes: at
    most what sat in the queues (the client's receive buffer, ferry's
    unsent socket queue, bounded by TCP_NOTSENT_LOWAT at 128 KiB, and its
    64 KiB gather, one round of the 8 bulk streams), never a send buffer
    of megabytes; and the young stream's 4 quanta go (nearly) together
    (weight 256 against 1), not one per round of the 8 bulk streams (3
    rounds = 384 KiB between them): a bulk stream that ran dry re-enters
    nghttp2's queue at the current virtual time and may slip one quantum
    in (seen: 0 to 4). Byte counts only."""
    bulk_src, young_src = EndlessServer(), ReadySourceServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = OrderClient.wide(f.addr, cert[0])
        try:
            bulk = [cl.connect(f"127.0.0.1:{bulk_src.port}") for _ in range(8)]
            cl.wait(lambda: cl.bulk >= 4 * MiB, timeout=60, what="4 MiB of bulk")
            cl.young = cl.connect(f"127.0.0.1:{young_src.port}")
            cl.wait(lambda: cl.streams[cl.young]["status"] is not None, what="a response")
            assert cl.streams[cl.young]["status"] == 200
            cl.send(cl.young, b"65536\n", end=True)
            # The client stops reading until the young bytes are in ferry.
            assert young_src.sent.wait(20), "the young source never wrote"
            time.sleep(0.5)
            before = cl.bulk
            cl.wait(lambda: cl.at_last is not None, timeout=60, what="the young response")
            first, last = cl.at_first - before, cl.at_last - before
            assert len(cl.streams[cl.young]["data"]) == 65536
            assert bytes(cl.streams[cl.young]["data"]) == pattern(65536, 65536)
            assert all(not cl.streams[i]["ended"] and cl.streams[i]["reset"] is None for i in bulk)
            assert first <= 1 * MiB, f"{first} bulk bytes before the young stream's first byte"
            assert last - first < 8 * 16384, f"{last - first} bulk bytes inside the young 64 KiB"
        finally:
            cl.close()
    finally:
        bulk_src.stop()
        young_src.stop()


class RepeatSourceServer(ThreadedServer):
    """Sends pattern(n, n) for each line "n" it reads; says when each is
    written (written: how many so far)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.written = 0
        self.cond = threading.Condition()

    def handle(self, c, peer):
        buf = b""
        try:
            while True:
                d = c.recv(64)
                if not d:
                    return
                buf += d
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    n = int(line)
                    c.sendall(pattern(n, n))
                    with self.cond:
                        self.written += 1
                        self.cond.notify_all()
        except OSError:
            pass


def test_h2_light_stream_stays_ahead_of_bulk(ferry, cert):
    """A stream is young while it sent little recently, not in total: a
    stream that already sent 64 KiB, then paused while 8 endless bulk
    downloads went on (8 MiB, more than a 64th of which drains its 64
    KiB: H2IO_LIGHT_SHARE), asks for 64 KiB more beside them;
    its second 64 KiB still goes (nearly) in one piece, as a new stream's
    would. With a total count it had turned bulk for good and its quanta
    went one per round of the 8 bulk streams (3 rounds = 384 KiB of bulk
    inside, seen every time). Byte counts only, as the test above."""
    bulk_src, src = EndlessServer(), RepeatSourceServer()
    try:
        f = h2_ferry(ferry, cert)
        cl = OrderClient.wide(f.addr, cert[0])
        try:
            cl.young = cl.connect(f"127.0.0.1:{src.port}")
            cl.wait(lambda: cl.streams[cl.young]["status"] is not None, what="a response")
            assert cl.streams[cl.young]["status"] == 200
            cl.send(cl.young, b"65536\n")
            cl.wait(lambda: len(cl.streams[cl.young]["data"]) >= 65536, what="the first 64 KiB")
            bulk = [cl.connect(f"127.0.0.1:{bulk_src.port}") for _ in range(8)]
            cl.wait(lambda: cl.bulk >= 8 * MiB, timeout=60, what="8 MiB of bulk")
            cl.at_first = cl.at_last = None
            cl.want = 2 * 65536
            cl.send(cl.young, b"65536\n")
            with src.cond:
                assert src.cond.wait_for(lambda: src.written >= 2, 20), "the source never wrote"
            time.sleep(0.5)
            cl.wait(lambda: cl.at_last is not None, timeout=60, what="the second 64 KiB")
            first, last = cl.at_first, cl.at_last
            data = bytes(cl.streams[cl.young]["data"])
            assert data == pattern(65536, 65536) * 2
            assert all(not cl.streams[i]["ended"] and cl.streams[i]["reset"] is None for i in bulk)
            # At most a round of bulk quanta (and a slip: seen up to 10
            # quanta, the source's bytes reach ferry in pieces), never three.
            inside = last - first
            assert inside < 16 * 16384, f"{inside} bulk bytes inside the second 64 KiB"
        finally:
            cl.close()
    finally:
        bulk_src.stop()
        src.stop()
