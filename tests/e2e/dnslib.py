# SPDX-License-Identifier: BSD-2-Clause
"""A fake DNS server on a loopback UDP port, for [dns] servers = tests.

It answers A and AAAA questions from a table (name -> list of addresses,
with one TTL for all), NXDOMAIN for names it does not know, and counts the
questions it was asked per (qtype, name). With answer=False it never
replies (a dead server that still holds its port).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter

QTYPES = {1: "A", 28: "AAAA"}


class FakeDns:
    def __init__(self, host: str = "127.0.0.1", records: dict | None = None, ttl: int = 60,
                 answer: bool = True):
        self.records = {k.lower(): v for k, v in (records or {}).items()}
        self.ttl = ttl
        self.answer = answer
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.1)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True, name="fake-dns")
        self.thread.start()

    @property
    def server(self) -> str:
        """The address as [dns] servers = takes it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def count(self, qtype: str, name: str) -> int:
        with self.lock:
            return self.seen[(qtype, name.lower())]

    def _reply(self, data: bytes) -> bytes | None:
        if len(data) < 12:
            return None
        qid, flags, qd = struct.unpack("!HHH", data[:6])
        labels, i = [], 12
        while i < len(data) and data[i]:
            n = data[i]
            labels.append(data[i + 1:i + 1 + n].decode(errors="replace"))
            i += 1 + n
        i += 1
        if qd != 1 or i + 4 > len(data):
            return None
        qtype, _ = struct.unpack("!HH", data[i:i + 4])
        question = data[12:i + 4]
        name = ".".join(labels).lower()
        with self.lock:
            self.seen[(QTYPES.get(qtype, str(qtype)), name)] += 1
        rd = flags & 0x0100
        addrs = self.records.get(name)
        if addrs is None:
            return struct.pack("!HHHHHH", qid, 0x8083 | rd, 1, 0, 0, 0) + question  # NXDOMAIN
        fam = {1: socket.AF_INET, 28: socket.AF_INET6}.get(qtype)
        rrs = b""
        n = 0
        for a in addrs:
            afam = socket.AF_INET6 if ":" in a else socket.AF_INET
            if afam != fam:
                continue
            raw = socket.inet_pton(afam, a)
            rrs += b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, self.ttl, len(raw)) + raw
            n += 1
        return struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, n, 0, 0) + question + rrs

    def _run(self):
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            reply = self._reply(data) if self.answer else None
            if reply:
                try:
                    self.sock.sendto(reply, peer)
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        self.thread.join(2)
        self.sock.close()
