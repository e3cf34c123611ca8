# SPDX-License-Identifier: BSD-2-Clause
"""Edge-mode test helpers shared by test_edge.py and test_edge_signed.py:
recording backends, Minecraft and TLS first messages, and a client that
sends them and reads the backend's name line."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time

import pytest

from opslib import wait_until

IO = 5.0


class Recorder:
    """A backend: says NAME\\n on accept, records what each client sends
    until it shuts its side (or IO seconds pass)."""

    def __init__(self, name: str, host: str = "127.0.0.1", port: int = 0):
        self.name = name
        self.sock = socket.socket()
        self.sock.bind((host, port))
        self.sock.listen(256)
        self.addr = self.sock.getsockname()
        self.received: list[bytes] = []
        self.peers: list[tuple] = []
        self.lock = threading.Lock()
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c, peer), daemon=True).start()

    def _serve(self, c: socket.socket, peer):
        c.settimeout(IO)
        data = b""
        try:
            c.sendall(self.name.encode() + b"\n")
            while True:
                b = c.recv(65536)
                if not b:
                    break
                data += b
        except OSError:
            pass
        with self.lock:
            self.received.append(data)
            self.peers.append(peer)
        c.close()

    def wait_count(self, n: int) -> bytes:
        wait_until(lambda: len(self.received) >= n, IO, f"{self.name} got {n} connections")
        return self.received[n - 1]

    def close(self):
        self.stop = True
        self.sock.close()


def hostport(addr) -> str:
    return f"{addr[0]}:{addr[1]}"


# ---- first messages ----------------------------------------------------------


def varint(n: int) -> bytes:
    n &= 0xFFFFFFFF
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def mc_handshake(host: str, proto: int = 765, port: int = 25565, intent: int = 2) -> bytes:
    h = host.encode()
    body = varint(0) + varint(proto) + varint(len(h)) + h + struct.pack(">H", port) + varint(intent)
    return varint(len(body)) + body


def mc_login(name: str = "Notch") -> bytes:
    body = varint(0) + varint(len(name)) + name.encode() + bytes(16)
    return varint(len(body)) + body


def legacy16_ping(host: str, port: int = 25565) -> bytes:
    """A Minecraft 1.6 server-list ping (FE 01 FA MC|PingHost ...), the
    only legacy ping that carries a host."""
    h = host.encode("utf-16-be")
    rest = bytes([74]) + struct.pack(">H", len(host)) + h + struct.pack(">i", port)
    tag = "MC|PingHost".encode("utf-16-be")
    return b"\xfe\x01\xfa" + struct.pack(">H", 11) + tag + struct.pack(">H", len(rest)) + rest


def client_hello(sni: str) -> bytes:
    """A real ClientHello from python's ssl (one TLS record)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = out.read()
    assert hello[0] == 0x16 and struct.unpack(">H", hello[3:5])[0] == len(hello) - 5
    return hello


def two_records(hello: bytes, cut: int = 40) -> bytes:
    """The same ClientHello re-framed into two TLS records, cut cut bytes
    into the handshake message (well before the extensions, so the SNI is
    in the second record)."""
    body = hello[5:]
    assert cut < body.find(b"\x00\x00", 40)  # the server_name extension comes later
    rec = lambda p: hello[:3] + struct.pack(">H", len(p)) + p  # noqa: E731
    return rec(body[:cut]) + rec(body[cut:])


def exchange(addr, chunks: list[bytes], source: str | None = None, gap: float = 0.05) -> tuple[bytes, socket.socket]:
    """Send chunks (gap apart), read the backend's name line; returns it
    (b"" when ferry closed) and the socket, still open for writing."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(IO)
    if source:
        s.bind((source, 0))
    try:
        s.connect(addr)
    except ConnectionResetError:  # refused at accept (a flood limit) before connect() returned
        return b"", s
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    line = b""
    try:
        for i, ch in enumerate(chunks):
            if i:
                time.sleep(gap)
            s.sendall(ch)
    except (ConnectionResetError, BrokenPipeError):
        return line, s
    try:
        while not line.endswith(b"\n"):
            b = s.recv(1)
            if not b:
                break
            line += b
    except (ConnectionResetError, socket.timeout):
        pass
    return line, s


def route_one(addr, chunks: list[bytes], backend: Recorder, tail: bytes = b"") -> socket.socket:
    """Route chunks to backend, send tail, shut; the backend got every byte."""
    n = len(backend.received) + 1
    line, s = exchange(addr, chunks)
    assert line == backend.name.encode() + b"\n", f"routed to {line!r}, not {backend.name}"
    if tail:
        s.sendall(tail)
    s.shutdown(socket.SHUT_WR)
    got = backend.wait_count(n)
    assert got == b"".join(chunks) + tail
    s.close()
    return s


def closed(addr, chunks: list[bytes], source: str | None = None) -> bool:
    line, s = exchange(addr, chunks, source=source)
    s.close()
    return line == b""
