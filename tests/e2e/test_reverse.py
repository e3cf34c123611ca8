# SPDX-License-Identifier: BSD-2-Clause
"""Reverse tunnels on the HTTP/2 inbound (src/relay/h2rev.c): extended
CONNECT (RFC 8441) with ferry's :protocol values ferry-listen
(/ferry/listen/tcp/{addr}/{port}) and ferry-accept (/ferry/accept/{token}),
with python3-h2 playing the tunnel client's part (it echoes what each
reverse connection sends, as `R:PORT:127.0.0.1:ECHO` would). Covers 1 MiB
each way with integrity and half-close both ways, 20 concurrent reverse
connections through 4 pre-opened accept streams replaced as they are used
(the others wait in the kernel's accept queue), the bind refused (403, the
port not bound) without a `cmd reverse` rule even with rules_default
allow, a port range letting a port in and refusing one outside, the access
log (cmd=reverse-listen, cmd=reverse with the peer and the user), and the
listener closing when its stream ends or the connection goes."""

import base64
import hashlib
import socket
import threading
import time

import pytest

from certlib import OPENSSL, make_cert

h2 = pytest.importorskip("h2")
import h2lib as t2  # noqa: E402  (the H2Client and the TLS ferry)

pytestmark = pytest.mark.skipif(not OPENSSL, reason="openssl is needed (make deps-test)")

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return make_cert(tmp_path_factory.mktemp("revcerts"), "rev")


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def listen(cl, addr: str, port: int, headers=()) -> int:
    return cl.connect("ferry.test:443", [(":protocol", "ferry-listen"), (":scheme", "https"),
                                         (":path", f"/ferry/listen/tcp/{addr}/{port}"),
                                         *headers])


def accept(cl, token: str, headers=()) -> int:
    return cl.connect("ferry.test:443", [(":protocol", "ferry-accept"), (":scheme", "https"),
                                         (":path", f"/ferry/accept/{token}"), *headers])


def answered(cl, sid) -> bool:
    st = cl.streams[sid]
    return st["status"] is not None or st["reset"] is not None


class Echoer:
    """The client's egress, played in the test's thread: every accept
    stream answered 200 gets its bytes echoed back, END_STREAM for
    END_STREAM, and is replaced by a fresh accept stream."""

    def __init__(self, cl, token: str, spare: int, headers=()):
        self.cl, self.token, self.headers = cl, token, headers
        self.waiting = {accept(cl, token, headers) for _ in range(spare)}
        self.sent: dict[int, int] = {}
        self.done: set[int] = set()
        self.peers: list[str] = []

    def step(self):
        cl = self.cl
        cl.pump(0.02)
        for sid in list(self.waiting):
            st = cl.streams[sid]
            if st["reset"] is not None or (st["status"] is not None and st["status"] != 200):
                raise AssertionError(f"accept stream {sid}: {st}")
            if st["status"] == 200:
                self.waiting.discard(sid)
                self.sent[sid] = 0
                self.peers.append(st["headers"].get("ferry-peer", ""))
                self.waiting.add(accept(cl, self.token, self.headers))
        for sid, off in list(self.sent.items()):
            st = cl.streams[sid]
            data = st["data"]
            # send() pumps while it waits for credit, and what arrives
            # meanwhile is appended to data: echo what was there.
            n = len(data)
            if n > off:
                cl.send(sid, bytes(data[off:n]))
                self.sent[sid] = n
            if st["ended"] and sid not in self.done and self.sent[sid] == len(data):
                cl.conn.end_stream(sid)
                cl.flush()
                self.done.add(sid)

    def run_until(self, pred, timeout: float = 30, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            self.step()


def peer_exchange(port: int, payload: bytes, out: dict, key):
    """Connect to the reverse port, send payload, half-close, read all."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.settimeout(30)
        t = threading.Thread(target=lambda: (s.sendall(payload), s.shutdown(socket.SHUT_WR)))
        t.start()
        got = bytearray()
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            got += d
        t.join(30)
        s.close()
        out[key] = bytes(got)
    except OSError as e:
        out[key] = e


def open_listener(cl, addr="127.0.0.1", port=0, headers=()):
    sid = listen(cl, addr, port, headers)
    cl.wait(lambda: answered(cl, sid), what="the listen answer")
    return sid


def test_reverse_echo_integrity_half_close_and_log(ferry, cert):
    port = free_port()
    (ferry.workdir / "users.txt").write_text("alice:plain:wonderland\n")
    f = t2.h2_ferry(ferry, cert, auth={"userlist": str(ferry.workdir / "users.txt")},
                    extra=f"\n[rules]\nallow cmd reverse user alice to 127.0.0.1 port {port}\n"
                          "allow\n")
    cred = [("proxy-authorization", "Basic " + base64.b64encode(b"alice:wonderland").decode())]
    cl = t2.H2Client(f.addr, cert[0])
    try:
        bare = open_listener(cl, port=port)
        assert cl.streams[bare]["status"] == 407  # Proxy-Authorization as any stream
        lid = open_listener(cl, port=port, headers=cred)
        st = cl.streams[lid]
        assert st["status"] == 200, st
        assert st["headers"]["ferry-bound"] == f"127.0.0.1:{port}"
        token = st["headers"]["ferry-listener"]
        assert not st["ended"]  # the stream is the listener's lifetime
        ech = Echoer(cl, token, 2, cred)
        payload = hashlib.sha256(b"rev").digest() * (MiB // 32)
        out: dict = {}
        th = threading.Thread(target=peer_exchange, args=(port, payload, out, "one"))
        th.start()
        ech.run_until(lambda: "one" in out, what="the 1 MiB echo")
        th.join(30)
        assert out["one"] == payload  # 1 MiB each way, FIN crossed both ways
        assert ech.peers[0].startswith("127.0.0.1:")
        # An accept stream naming an unknown listener is refused.
        bad = accept(cl, "999999", cred)
        cl.wait(lambda: answered(cl, bad), what="the unknown token's answer")
        assert cl.streams[bad]["status"] == 502
        # END_STREAM on the listen stream: the listener closes.
        cl.conn.end_stream(lid)
        cl.flush()
        cl.wait(lambda: cl.streams[lid]["ended"] or cl.streams[lid]["reset"] is not None,
                what="the listener's end")
        deadline = time.monotonic() + 10
        while port_open(port):
            assert time.monotonic() < deadline, "the reverse port still accepts"
            cl.pump(0.05)
    finally:
        cl.close()
    f.wait_log(r"access .*user=alice cmd=reverse .*addr=127\.0\.0\.1:\d+ up=%d down=%d .*"
               r"reply=200 .*proto=h2" % (MiB, MiB), timeout=10)
    f.wait_log(r"access .*user=alice cmd=reverse-listen .*addr=127\.0\.0\.1:%d .*reply=200 "
               % port, timeout=10)


def test_reverse_20_concurrent_connections(ferry, cert):
    f = t2.h2_ferry(ferry, cert, extra="\n[rules]\nallow cmd reverse to 127.0.0.1\nallow\n")
    cl = t2.H2Client(f.addr, cert[0])
    try:
        lid = open_listener(cl)  # port 0: any free port
        st = cl.streams[lid]
        assert st["status"] == 200, st
        port = int(st["headers"]["ferry-bound"].rsplit(":", 1)[1])
        ech = Echoer(cl, st["headers"]["ferry-listener"], 4)
        out: dict = {}
        want = {i: hashlib.sha256(b"%d" % i).digest() * (2048 + 97 * i) for i in range(20)}
        ths = [threading.Thread(target=peer_exchange, args=(port, want[i], out, i))
               for i in range(20)]
        for th in ths:
            th.start()
        ech.run_until(lambda: len(out) == 20, what="20 reverse echoes")
        for th in ths:
            th.join(30)
        for i in range(20):
            assert out[i] == want[i], f"connection {i}: {out[i]!r:.80}"
        assert len(ech.peers) == 20
    finally:
        cl.close()
    # The connection went: the listener with it.
    deadline = time.monotonic() + 10
    while port_open(port):
        assert time.monotonic() < deadline, "the reverse port still accepts after the client left"
        time.sleep(0.05)


def test_reverse_refused_without_rule_and_outside_range(ferry, cert, tmp_path):
    port = free_port()
    # No [rules] at all (everything else allowed): no reverse bind.
    f = t2.h2_ferry(ferry, cert)
    cl = t2.H2Client(f.addr, cert[0])
    try:
        sid = open_listener(cl, port=port)
        assert cl.streams[sid]["status"] == 403
        assert not port_open(port)
    finally:
        cl.close()
    f.wait_log(r"access .*cmd=reverse-listen .*addr=127\.0\.0\.1:%d .*reply=403 " % port)
    f.stop()
    # rules_default allow and a rule without cmd do not let one through
    # either; a range does, for its ports only, and a bad path is a 400.
    lo = free_port()
    outside = free_port()
    while lo <= outside <= lo + 1:
        outside = free_port()
    f2 = t2.h2_ferry(ferry, cert, extra=f"\n[rules]\nallow cmd reverse to 127.0.0.1 port "
                                        f"{lo}-{lo + 1}\nallow\n")
    cl = t2.H2Client(f2.addr, cert[0])
    try:
        ins = open_listener(cl, port=lo)
        out = open_listener(cl, port=outside)
        other = open_listener(cl, addr="127.0.0.2", port=lo + 1)
        bad = open_listener(cl, addr="localhost", port=lo)
        assert cl.streams[ins]["status"] == 200
        assert cl.streams[out]["status"] == 403
        assert cl.streams[other]["status"] == 403
        assert cl.streams[bad]["status"] == 400
        assert port_open(lo)
        assert not port_open(outside)
        # RST_STREAM on the listen stream closes the listener too, and the
        # accept streams waiting on it are reset.
        waiting = [accept(cl, cl.streams[ins]["headers"]["ferry-listener"]) for _ in range(3)]
        cl.pump(0.2)
        cl.conn.reset_stream(ins)
        cl.flush()
        # (port_open's connection waited in the accept queue: the first
        # accept stream took it, 200.)
        cl.wait(lambda: all(cl.streams[w]["reset"] is not None for w in waiting[1:]),
                what="the accept streams' resets")
        assert cl.streams[waiting[0]]["status"] == 200
        deadline = time.monotonic() + 10
        while port_open(lo):
            assert time.monotonic() < deadline, "the reverse port still accepts after a reset"
            cl.pump(0.05)
    finally:
        cl.close()


def test_reverse_listener_closes_at_drain(ferry, cert):
    # SIGTERM drains: reverse listeners and their waiting accept streams
    # close at once (they never finish by themselves), so the exit does not
    # wait for shutdown_timeout (30 s).
    f = t2.h2_ferry(ferry, cert, config={"shutdown_timeout": "30s"},
                    extra="\n[rules]\nallow cmd reverse to 127.0.0.1\nallow\n")
    cl = t2.H2Client(f.addr, cert[0])
    try:
        lid = open_listener(cl)
        st = cl.streams[lid]
        assert st["status"] == 200, st
        port = int(st["headers"]["ferry-bound"].rsplit(":", 1)[1])
        Echoer(cl, st["headers"]["ferry-listener"], 2)
        cl.pump(0.2)
        assert f.stop(timeout=20) == 0
        assert f.stop_seconds < 15, f.stop_seconds
        assert not port_open(port)
    finally:
        cl.close()
    assert "listener-closed" in f.log_text()
