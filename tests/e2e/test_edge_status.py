# SPDX-License-Identifier: BSD-2-Clause
"""Edge health checks and Minecraft status at the edge (docs/edge.md
"Health checks and Minecraft status"): the checks fill a route's status
cache from a real status exchange with the backend; status pings are then
answered by ferry (the JSON byte for byte, a 20 KiB favicon included, and
the pong) without reaching the backend; logins still go through; a backend
that goes down is marked down (metrics, log) and skipped by the strategy,
its cache still answers, and a route with no cache answers offline_motd;
legacy pings get a kick with the cached player counts; configuration
errors.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from edgelib import IO, exchange, hostport, mc_handshake, mc_login, legacy16_ping, varint
from ferrylib import run_ferry
from opslib import metrics_addr, scrape, wait_until

FAVICON = "data:image/png;base64," + "A" * 20000
STATUS = {
    "version": {"name": "1.20.4", "protocol": 765},
    "players": {"max": 20, "online": 3},
    "description": {"text": "a backend"},
    "favicon": FAVICON,
}


def read_varint(s: socket.socket) -> int:
    n = shift = 0
    while True:
        b = s.recv(1)
        if not b:
            raise EOFError
        n |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            return n


def read_frame(s: socket.socket) -> bytes:
    n = read_varint(s)
    data = b""
    while len(data) < n:
        b = s.recv(n - len(data))
        if not b:
            raise EOFError
        data += b
    return data


def frame(body: bytes) -> bytes:
    return varint(len(body)) + body


def status_reply(doc: dict) -> bytes:
    j = json.dumps(doc).encode()
    return frame(b"\x00" + varint(len(j)) + j)


class McBackend:
    """A Minecraft server's first steps: status (JSON, then pong) and
    login (records the handshake and answers LOGIN\\n)."""

    def __init__(self, doc: dict = STATUS):
        self.doc = doc
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.addr = self.sock.getsockname()
        self.status_queries = 0
        self.status_protos: list[int] = []  # the protocol version of each status query
        self.logins: list[bytes] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c: socket.socket):
        c.settimeout(IO)
        try:
            hs = read_frame(c)
            intent = hs[-1]
            if intent == 1:
                assert read_frame(c) == b"\x00"
                proto = 0
                for k, byte in enumerate(hs[1:6]):  # the handshake's protocol VarInt
                    proto |= (byte & 0x7F) << (7 * k)
                    if byte < 0x80:
                        break
                with self.lock:
                    self.status_queries += 1
                    self.status_protos.append(proto)
                c.sendall(status_reply(self.doc(proto) if callable(self.doc) else self.doc))
                ping = read_frame(c)
                c.sendall(frame(ping))
            else:
                with self.lock:
                    self.logins.append(hs)
                c.sendall(b"LOGIN\n")
                c.recv(100)
        except (OSError, EOFError, AssertionError):
            pass
        c.close()

    def close(self):
        self.sock.close()


def status_ping(addr, host: str, proto: int = 765) -> tuple[dict, bytes]:
    """A client's status exchange: the JSON and the pong's payload."""
    s = socket.create_connection(addr, timeout=IO)
    s.sendall(mc_handshake(host, proto=proto, intent=1) + frame(b"\x00"))
    body = read_frame(s)
    assert body[0] == 0
    n, i = 0, 1
    shift = 0
    while True:
        b = body[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    doc = json.loads(body[i : i + n])
    s.sendall(frame(b"\x01" + struct.pack(">q", 1234567)))
    pong = read_frame(s)
    assert s.recv(10) == b""  # ferry closes after the pong
    s.close()
    return doc, pong


def dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def conf(routes: str, extra: str = "") -> str:
    return (
        "workers = 2\nconnect_timeout = 1s\nshutdown_timeout = 2s\n"
        "[metrics]\nlisten = 127.0.0.1:0\n"
        "\n[edge mc]\nlisten = 127.0.0.1:0\nsniff = mc\nhealth_check = 1s\nstatus_cache = yes\n"
        "offline_motd = Down for \"maintenance\" \u2014 back soon\n" + routes + extra
    )


@pytest.fixture
def mc():
    b = McBackend()
    yield b
    b.close()


def test_status_from_cache_and_logins_through(ferry, mc):
    f = ferry(raw_config=conf(f"route = play.test -> {hostport(mc.addr)}\n"))
    addr = f.addrs[1]
    wait_until(lambda: mc.status_queries >= 1, 5, "the health check asked the backend's status")
    base = mc.status_queries
    for _ in range(30):
        doc, pong = status_ping(addr, "play.test")
        assert doc == STATUS
        assert pong == b"\x01" + struct.pack(">q", 1234567)
    # 30 answers from the cache: the backend saw at most the checks (1 s apart).
    assert mc.status_queries - base <= 3
    line, s = exchange(addr, [mc_handshake("play.test") + mc_login()])
    assert line == b"LOGIN\n"
    s.close()
    wait_until(lambda: len(mc.logins) == 1, 5, "the login reached the backend")
    m = scrape(metrics_addr(f))
    assert m.get("ferry_edge_status_total", edge="mc", result="cache") == 30
    assert m.get("ferry_edge_backend_up", edge="mc", route="play.test", backend=hostport(mc.addr)) == 1
    f.wait_log(r"cmd=EDGE .*end=status:cache edge=mc route=play\.test")


def test_backend_down_cache_offline_and_skip(ferry, mc):
    dead = dead_port()
    f = ferry(raw_config=conf(
        f"route = play.test -> {hostport(mc.addr)}\n"
        f"route = gone.test -> 127.0.0.1:{dead}\n"
        f"route = pair.test -> 127.0.0.1:{dead}, {hostport(mc.addr)}\n"))
    addr = f.addrs[1]
    f.wait_log(rf"edge mc: backend 127\.0\.0\.1:{dead} of route gone\.test is down: cannot connect")
    # No cache and nothing up: offline_motd, escaped into valid JSON.
    doc, _ = status_ping(addr, "gone.test")
    assert doc["description"]["text"] == "Down for \"maintenance\" \u2014 back soon"
    assert doc["version"]["protocol"] == -1 and doc["players"] == {"max": 0, "online": 0}
    # A pair with one backend down: logins all go to the one that is up.
    wait_until(lambda: scrape(metrics_addr(f)).get(
        "ferry_edge_backend_up", edge="mc", route="pair.test", backend=f"127.0.0.1:{dead}") == 0, 5, "marked down")
    for _ in range(4):
        line, s = exchange(addr, [mc_handshake("pair.test")])
        assert line == b"LOGIN\n"
        s.close()
    # The backend goes away: the cache keeps answering, stale.
    wait_until(lambda: mc.status_queries >= 1, 5, "cache filled")
    status_ping(addr, "play.test")
    mc.close()
    f.wait_log(r"edge mc: backend .* of route play\.test is down")
    doc, _ = status_ping(addr, "play.test")
    assert doc == STATUS
    m = scrape(metrics_addr(f))
    assert m.get("ferry_edge_status_total", edge="mc", result="offline") == 1
    assert m.get("ferry_edge_status_total", edge="mc", result="cache") == 2


def test_one_cache_per_protocol_version(ferry):
    """A backend that answers each protocol its own way (as one behind
    ViaVersion does): each version gets its own cached answer, fetched
    once per TTL however many clients ask at once."""
    b = McBackend(doc=lambda proto: {"version": {"name": f"v{proto}", "protocol": proto},
                                     "players": {"max": 20, "online": 3}, "description": {"text": "hi"}})
    try:
        text = conf(f"route = play.test -> {hostport(b.addr)}\n", "status_cache_ttl = 1s\n")
        f = ferry(raw_config=text.replace("health_check = 1s", "health_check = 1h"))
        addr = f.addrs[1]
        wait_until(lambda: b.status_protos == [765], 5, "the first health check (protocol 765)")
        protos = [765 if i % 2 else 767 for i in range(50)]
        with ThreadPoolExecutor(10) as ex:
            docs = list(ex.map(lambda p: status_ping(addr, "play.test", proto=p)[0], protos))
        assert [d["version"]["protocol"] for d in docs] == protos  # each its own answer
        # 50 requests within the TTL: the check's 765 and one fetch of 767.
        assert sorted(b.status_protos) == [765, 767]
        m = scrape(metrics_addr(f))
        assert m.get("ferry_edge_status_total", edge="mc", result="fetched") == 1
        assert m.get("ferry_edge_status_total", edge="mc", result="cache") == 49
        f.wait_log(r"cmd=EDGE .*end=status:fetched edge=mc route=play\.test")
        time.sleep(1.3)  # past the TTL: fetched again, once
        for p in (767, 767, 765):
            assert status_ping(addr, "play.test", proto=p)[0]["version"]["protocol"] == p
        assert sorted(b.status_protos) == [765, 765, 767, 767]
    finally:
        b.close()


def kick_text(addr, ping: bytes) -> str:
    s = socket.create_connection(addr, timeout=IO)
    s.sendall(ping)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    assert data[0] == 0xFF
    n = struct.unpack(">H", data[1:3])[0]
    assert len(data) == 3 + 2 * n
    return data[3:].decode("utf-16-be")


def test_legacy_pings_answered_at_the_edge(ferry, mc):
    f = ferry(raw_config=conf(f"route = play.test -> {hostport(mc.addr)}\n"))
    addr = f.addrs[1]
    wait_until(lambda: mc.status_queries >= 1, 5, "cache filled")
    t = kick_text(addr, legacy16_ping("play.test"))
    assert t.split("\0") == ["\u00a71", "127", "ferry", "Down for \"maintenance\" \u2014 back soon", "3", "20"]
    assert kick_text(addr, b"\xfe\x01").split("\0")[4:] == ["0", "0"]  # no host: no route's counts
    assert kick_text(addr, b"\xfe") == "Down for \"maintenance\" \u2014 back soon\u00a70\u00a70"
    m = scrape(metrics_addr(f))
    assert m.get("ferry_edge_status_total", edge="mc", result="legacy") == 3
    assert mc.logins == []


def test_a_bad_frame_after_the_handshake(ferry, mc):
    f = ferry(raw_config=conf(f"route = play.test -> {hostport(mc.addr)}\n"))
    addr = f.addrs[1]
    wait_until(lambda: mc.status_queries >= 1, 5, "cache filled")
    s = socket.create_connection(addr, timeout=IO)
    s.sendall(mc_handshake("play.test", intent=1) + frame(b"\x05junk"))
    assert s.recv(100) == b""
    s.close()
    f.wait_log(r"cmd=EDGE .*end=status:bad-frame")


@pytest.mark.parametrize(
    "body,want",
    [
        ("sniff = mc\nstatus_cache = yes\n", r"status_cache and offline_motd need health_check"),
        ("sniff = tls\nhealth_check = 1s\nstatus_cache = yes\n", r"not with sniff = tls"),
        ("health_check = 100ms\n", r"health_check: '100ms' is not valid"),
        ("offline_motd = \n", r"offline_motd"),
    ],
)
def test_config_errors(tmp_path, body, want):
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n[edge e]\nlisten = 127.0.0.1:0\nroute = a.test -> 127.0.0.1:9\n" + body)
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0 and re.search(want, r.text), r.text
