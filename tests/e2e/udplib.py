# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the UDP ASSOCIATE end-to-end tests (RFC 1928 section 7).

Everything is bounded, as in ferrylib: every receive has a timeout, every
loop a count or a deadline, every server binds a loopback address on port 0
and joins its thread (bounded) on stop().

  udp_config        config text with a [udp] section and any raw extra
                    sections (Ferry(raw_config=...))
  UdpCounters       the ferry_udp_* counters of a metrics endpoint, and
                    waiting for them to move by exact amounts
  UdpEcho           threaded UDP echo on a loopback address; records every
                    datagram with its source, optionally answers with extra
                    bytes, or from a second port of the same host
                    (reply_from_other_port: the "TFTP-style" replier)
  UdpAssoc          a raw SOCKS5 client holding one association: its TCP
                    control connection and its UDP socket; builds and parses
                    the section 7 header itself, so malformed ones can be sent
  encode_udp / parse_udp   the header, by hand
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time
from typing import NamedTuple

from ferrylib import (
    ATYP_DOMAIN,
    AUTH_OK,
    ATYP_V4,
    ATYP_V6,
    CMD_UDP,
    DEFAULT_CONFIG,
    IO_TIMEOUT,
    REP_NAME,
    auth_handshake,
    encode_addr,
    family_of,
    handshake,
    open_client,
    read_reply,
    request,
)
from opslib import scrape

REPLY_TIMEOUT = 2.0  # an expected datagram (returns as soon as it arrives)
SILENCE = 0.4  # "nothing arrives" checks


def udp_config(udp: dict | None = None, top: dict | None = None, extra: str = "") -> str:
    """ferry's DEFAULT_CONFIG plus top-level keys, then a [udp] section,
    then extra (raw text: [limits], [metrics]...)."""
    merged = dict(DEFAULT_CONFIG)
    merged.update({k: str(v) for k, v in (top or {}).items()})
    text = "".join(f"{k} = {v}\n" for k, v in merged.items())
    if udp:
        text += "\n[udp]\n" + "".join(f"{k} = {v}\n" for k, v in udp.items())
    if extra:
        text += "\n" + extra
    return text


def _peer(addr) -> tuple[str, int]:
    return (addr[0], addr[1])


class UdpEcho:
    """A UDP echo on host:0 in a thread. Every datagram is recorded with its
    source as (peer, data). The answer is the datagram plus `extra` filler
    bytes, sent from the receiving socket or, with reply_from_other_port,
    from a second socket on the same host (whose port is other_port)."""

    def __init__(self, host: str = "127.0.0.1", extra: int = 0, reply: bool = True,
                 reply_from_other_port: bool = False):
        fam = family_of(host)
        self.host = host
        self.extra = extra
        self.reply = reply
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        self.other = None
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self.sock.bind((host, 0))
            if reply_from_other_port:
                self.other = socket.socket(fam, socket.SOCK_DGRAM)
                self.other.bind((host, 0))
        except OSError:
            self.close_sockets()
            raise
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.other_port = self.other.getsockname()[1] if self.other else None
        self.lock = threading.Lock()
        self.seen: list[tuple[tuple[str, int], bytes]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"udp-echo-{self.port}")
        self.thread.start()

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)

    def _run(self):
        out = self.other or self.sock
        while not self.stopping.is_set():
            try:
                data, peer = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            except OSError:
                break
            with self.lock:
                self.seen.append((_peer(peer), data))
            if self.reply:
                try:
                    out.sendto(data + b"E" * self.extra, peer)
                except OSError:
                    pass

    # -- what arrived --

    def count(self) -> int:
        with self.lock:
            return len(self.seen)

    def payloads(self) -> list[bytes]:
        with self.lock:
            return [d for _, d in self.seen]

    def sources(self) -> set[tuple[str, int]]:
        with self.lock:
            return {p for p, _ in self.seen}

    def saw(self, payload: bytes) -> bool:
        with self.lock:
            return any(d == payload for _, d in self.seen)

    def source_of(self, payload: bytes) -> tuple[str, int]:
        with self.lock:
            for p, d in self.seen:
                if d == payload:
                    return p
        raise AssertionError(f"echo {self.addr} never saw {payload[:32]!r}")

    def wait_count(self, n: int, timeout: float = REPLY_TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while self.count() < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close_sockets(self):
        for s in (self.sock, self.other):
            if s is not None:
                s.close()

    def stop(self, timeout: float = 5.0):
        self.stopping.set()
        self.thread.join(timeout)
        self.close_sockets()


class UdpMsg(NamedTuple):
    host: str
    port: int
    atyp: int
    payload: bytes
    raw: bytes


def encode_udp(host, port: int, payload: bytes = b"", frag: int = 0, rsv: bytes = b"\0\0",
               atyp: int | None = None) -> bytes:
    """RSV(2) FRAG ATYP DST.ADDR DST.PORT DATA (host as for encode_addr)."""
    return rsv + bytes([frag]) + encode_addr(host, atyp) + struct.pack(">H", port) + payload


def parse_udp(data: bytes) -> UdpMsg:
    """A datagram from the relay; AssertionError when its header is not a
    well-formed section 7 header with RSV 0 and FRAG 0."""
    assert len(data) >= 4, f"datagram shorter than a header: {data!r}"
    assert data[0:2] == b"\0\0", f"RSV {data[0:2]!r} in a relayed datagram"
    assert data[2] == 0, f"FRAG {data[2]} in a relayed datagram"
    atyp = data[3]
    if atyp == ATYP_V4:
        assert len(data) >= 10, f"short IPv4 header: {data!r}"
        host, end = socket.inet_ntop(socket.AF_INET, data[4:8]), 8
    elif atyp == ATYP_V6:
        assert len(data) >= 22, f"short IPv6 header: {data!r}"
        host, end = socket.inet_ntop(socket.AF_INET6, data[4:20]), 20
    elif atyp == ATYP_DOMAIN:
        n = data[4]
        assert len(data) >= 7 + n, f"short domain header: {data!r}"
        host, end = data[5 : 5 + n].decode(errors="replace"), 5 + n
    else:
        raise AssertionError(f"ATYP {atyp} in a relayed datagram: {data[:32]!r}")
    port = struct.unpack(">H", data[end : end + 2])[0]
    return UdpMsg(host, port, atyp, data[end + 2 :], data)


class UdpAssoc:
    """One UDP association through ferry at proxy.

    The UDP socket is bound first, on the IP the control connection comes
    from (a datagram from any other address would be dropped). dst is the
    request's DST.ADDR/DST.PORT: None for zeros of the family, "own" for the
    UDP socket's own address and port, or a (host, port) pair. With expect
    None the reply is only read (self.reply); otherwise its REP must equal
    expect, and on success self.relay is where datagrams go (BND, or
    relay_host with BND's port)."""

    def __init__(self, proxy: tuple[str, int], dst=None, expect: int | None = 0,
                 relay_host: str | None = None, timeout: float = IO_TIMEOUT,
                 auth: tuple | None = None):
        self.ctl = open_client(proxy, timeout)
        self.udp = None
        try:
            if auth:
                st = auth_handshake(self.ctl, auth[0], auth[1], timeout)
                assert st == AUTH_OK, f"authentication as {auth[0]!r} refused (status {st:#x})"
            else:
                handshake(self.ctl, timeout)
            src_ip = self.ctl.getsockname()[0]
            self.family = family_of(src_ip)
            self.udp = socket.socket(self.family, socket.SOCK_DGRAM)
            self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            self.udp.bind((src_ip, 0))
            if dst is None:
                dst = ("::" if self.family == socket.AF_INET6 else "0.0.0.0", 0)
            elif dst == "own":
                dst = _peer(self.udp.getsockname())
            self.ctl.sendall(request(dst[0], dst[1], cmd=CMD_UDP))
            self.reply = read_reply(self.ctl, timeout)
        except BaseException:
            self.close()
            raise
        r = self.reply
        assert r.ver == 5 and r.rsv == 0, f"malformed reply {r.raw!r}"
        if expect is not None and r.rep != expect:
            self.close()
            raise AssertionError(
                f"UDP ASSOCIATE reply {r.rep:#04x} ({REP_NAME.get(r.rep)}), expected {expect:#04x}"
            )
        self.relay = (relay_host or r.host, r.port)

    # -- lifecycle --

    def close(self):
        for s in (self.udp, self.ctl):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass

    def close_control(self):
        self.ctl.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def udp_addr(self) -> tuple[str, int]:
        return _peer(self.udp.getsockname())

    @property
    def ctl_addr(self) -> tuple[str, int]:
        return _peer(self.ctl.getsockname())

    # -- datagrams --

    def send_raw(self, data: bytes, sock: socket.socket | None = None):
        (sock or self.udp).sendto(data, self.relay)

    def send(self, dest: tuple, payload: bytes, **hdr):
        self.send_raw(encode_udp(dest[0], dest[1], payload, **hdr))

    def recv(self, timeout: float = REPLY_TIMEOUT) -> UdpMsg:
        self.udp.settimeout(timeout)
        try:
            data = self.udp.recv(65536)
        except socket.timeout:
            raise AssertionError(f"no datagram from the relay within {timeout}s") from None
        return parse_udp(data)

    def expect_nothing(self, timeout: float = SILENCE):
        """No datagram arrives within timeout."""
        self.udp.settimeout(timeout)
        try:
            data = self.udp.recv(65536)
        except socket.timeout:
            return
        except ConnectionRefusedError:
            return
        raise AssertionError(f"unexpected datagram from the relay: {data[:64]!r}")

    def drain(self) -> int:
        """Read and discard whatever is queued; returns how many."""
        n = 0
        self.udp.settimeout(0)
        for _ in range(100000):
            try:
                self.udp.recv(65536)
            except (BlockingIOError, socket.timeout):
                break
            n += 1
        return n

    def echo(self, dest: tuple, payload: bytes, timeout: float = REPLY_TIMEOUT, **hdr) -> UdpMsg:
        """Send payload to dest and wait for the datagram carrying it back
        (others that arrive meanwhile, e.g. late echoes, are skipped)."""
        self.send(dest, payload, **hdr)
        return self.wait_for(lambda m: m.payload == payload, timeout,
                             f"echo of {len(payload)} bytes from {dest}")

    def wait_for(self, pred, timeout: float = REPLY_TIMEOUT, what: str = "datagram") -> UdpMsg:
        deadline = time.monotonic() + timeout
        for _ in range(100000):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.udp.settimeout(left)
            try:
                data = self.udp.recv(65536)
            except socket.timeout:
                break
            m = parse_udp(data)
            if pred(m):
                return m
        raise AssertionError(f"no {what} within {timeout}s")


class UdpCounters:
    """The ferry_udp_* counters of the metrics endpoint at maddr, read as
    differences from the moment of construction. A scrape sums the
    workers' counters as they are at that moment: wait_for() polls, with a
    deadline, until each counter has moved by exactly its expected amount
    (and fails at once when one moves further)."""

    NAMES = {
        "bytes_up": ("ferry_udp_bytes_total", {"direction": "up"}),
        "bytes_down": ("ferry_udp_bytes_total", {"direction": "down"}),
        "datagrams_up": ("ferry_udp_datagrams_total", {"direction": "up"}),
        "datagrams_down": ("ferry_udp_datagrams_total", {"direction": "down"}),
        "dropped_bandwidth": ("ferry_udp_dropped_total", {"reason": "bandwidth"}),
        "dropped_send": ("ferry_udp_dropped_total", {"reason": "send"}),
        "dropped_denied": ("ferry_udp_dropped_total", {"reason": "denied"}),
    }

    def __init__(self, maddr: tuple[str, int]):
        self.maddr = maddr
        self.base = self.read_absolute()

    def read_absolute(self) -> dict:
        e = scrape(self.maddr)
        return {k: e.get(name, **labels) for k, (name, labels) in self.NAMES.items()}

    def delta(self) -> dict:
        now = self.read_absolute()
        return {k: int(now[k] - self.base[k]) for k in now}

    def wait_for(self, want: dict, timeout: float = 5.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            d = self.delta()
            over = {k: (d[k], v) for k, v in want.items() if d[k] > v}
            assert not over, f"counters moved further than expected (got, want): {over}"
            if all(d[k] == v for k, v in want.items()):
                return d
            if time.monotonic() >= deadline:
                raise AssertionError(f"counters {d} not at {want} within {timeout}s")
            time.sleep(0.02)


def payload(tag: str, size: int) -> bytes:
    """size bytes starting with tag, the rest a repeating pattern."""
    head = tag.encode()
    body = bytes((i * 7 + 3) & 0xFF for i in range(max(0, size - len(head))))
    return (head + body)[:size]


def hosts_loopback_name() -> str | None:
    """A name other than localhost that /etc/hosts maps to 127.0.0.1, when
    the system resolves names from files first: c-ares answers it without
    any network traffic, but asynchronously (not a special name)."""
    try:
        with open("/etc/nsswitch.conf") as f:
            order = [l.split(":", 1)[1].split() for l in f if l.startswith("hosts:")]
        if not order or not order[0] or order[0][0] != "files":
            return None
        with open("/etc/hosts") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] == "127.0.0.1":
            for name in words[1:]:
                if name != "localhost" and not name.endswith(".localhost") and "." not in name:
                    return name
    return None


def stop_process(pid: int, timeout: float = 5.0):
    """SIGSTOP pid and wait (bounded) until every one of its threads is
    stopped: the signal takes effect asynchronously."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while True:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and all(st in ("T", "t") for st in states):
            return
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGCONT)
            raise AssertionError(f"process {pid} not stopped after {timeout}s: {states}")
        time.sleep(0.005)


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port that was free a moment ago."""
    with socket.socket(family_of(host), socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


__all__ = [
    "REPLY_TIMEOUT",
    "SILENCE",
    "UdpAssoc",
    "UdpCounters",
    "UdpEcho",
    "UdpMsg",
    "encode_udp",
    "free_udp_port",
    "hosts_loopback_name",
    "parse_udp",
    "stop_process",
    "payload",
    "udp_config",
]


def recv_datagrams(sock: socket.socket, n: int, timeout: float = REPLY_TIMEOUT) -> list[bytes]:
    """Up to n datagrams from sock, waiting at most timeout for each (fewer
    when they stop coming)."""
    got = []
    sock.settimeout(timeout)
    for _ in range(n):
        try:
            got.append(sock.recv(65536))
        except socket.timeout:
            break
    return got


class FloodResult(NamedTuple):
    sent: int  # datagrams the flood sent
    during: int  # pings answered while it ran
    tries: int  # pings tried while it ran


def flood_while_pinging(send, calm: "UdpAssoc", ping_dest: tuple, at_least: int,
                        min_seconds: float = 1.5, max_seconds: float = 10.0) -> FloodResult:
    """Call send() unpaced in a thread (it sends and returns how many
    datagrams it sent; BlockingIOError or ConnectionRefusedError when the
    socket is full) until at least at_least datagrams and min_seconds have
    gone by, or max_seconds. Meanwhile calm pings ping_dest, each ping
    waiting at most 0.5 s. Bounded: at most 2000 pings, the thread joined
    within 15 s (asserted)."""
    sent = [0]
    started, done = threading.Event(), threading.Event()

    def pump():
        t0 = time.monotonic()
        started.set()
        try:
            while True:
                elapsed = time.monotonic() - t0
                if elapsed > max_seconds or (sent[0] >= at_least and elapsed >= min_seconds):
                    break
                try:
                    sent[0] += send()
                except (BlockingIOError, ConnectionRefusedError):
                    time.sleep(0.0005)
        finally:
            done.set()

    t = threading.Thread(target=pump, daemon=True, name="udp-flood")
    t.start()
    started.wait(5)
    tries = during = 0
    while not done.is_set() and tries < 2000:
        tries += 1
        try:
            calm.echo(ping_dest, f"ping-{tries}".encode(), timeout=0.5)
            if not done.is_set():
                during += 1
        except AssertionError:
            pass
    t.join(15)
    assert not t.is_alive(), "flood thread did not finish"
    return FloodResult(sent[0], during, tries)
