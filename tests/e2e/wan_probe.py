# SPDX-License-Identifier: BSD-2-Clause
"""Probes for `ferry bench wan`, run on each side of the emulated path.

    wan_probe.py serve [--port 7700]           (in B) UDP echo and TCP sink/
                                                source on the same port
    wan_probe.py rtt --count N [--interval S]  (in A) N UDP probes with
                                                sequence numbers: RTTs, loss
    wan_probe.py tcp --bytes N [--down]        (in A) one TCP transfer of N
                                                bytes (a counted pattern),
                                                checked end to end: MiB/s

The server side listens on 0.0.0.0 (the path's address in B). The client
side reaches $FERRY_WAN_B (what `ferry bench wan` sets), retrying the
first contact for a few seconds while the server starts. Each client
command prints one JSON object. Every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import statistics
import struct
import sys
import threading
import time

CHUNK = 1 << 16


def pattern(n: int) -> bytes:
    """n bytes of a pattern that a lost or shifted byte cannot hide in."""
    block = hashlib.sha256(b"ferry-wan").digest() * (CHUNK // 32)
    return (block * (n // len(block) + 1))[:n]


def _udp_echo(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)


def _tcp_conn(c: socket.socket) -> None:
    """First 9 bytes: 'U' + length (client sends, we count and answer the
    digest) or 'D' + length (we send the pattern)."""
    with c:
        head = b""
        while len(head) < 9:
            got = c.recv(9 - len(head))
            if not got:
                return
            head += got
        kind, n = head[:1], struct.unpack("!Q", head[1:])[0]
        if kind == b"D":
            # the pattern is one block over and over: sent as it is made,
            # so the client's clock does not count making 400 MB first
            block = pattern(CHUNK)
            for _ in range(n // CHUNK):
                c.sendall(block)
            c.sendall(block[: n % CHUNK])
            return
        h, left = hashlib.sha256(), n
        while left:
            got = c.recv(min(CHUNK * 4, left))
            if not got:
                break
            h.update(got)
            left -= len(got)
        c.sendall(h.digest())


def serve(port: int) -> int:
    threading.Thread(target=_udp_echo, args=(port,), daemon=True).start()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=_tcp_conn, args=(c,), daemon=True).start()


def _target(port: int) -> tuple[str, int]:
    return os.environ.get("FERRY_WAN_B", "10.77.0.2"), port


def _connect(port: int, deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(_target(port), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def rtt(port: int, count: int, interval: float, timeout: float, contact: bool) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(_target(port))
    # First contact: the server may still be starting (bounded).
    s.settimeout(0.3)
    for _ in range(30 if contact else 0):
        s.send(struct.pack("!Id", 0xFFFFFFFF, 0.0))
        try:
            s.recv(64)
            break
        except OSError:
            continue
    else:
        if contact:
            return {"error": "no echo"}
    time.sleep(0.2 if contact else 0)
    while True:  # drain late first-contact echoes
        s.setblocking(False)
        try:
            s.recv(64)
        except OSError:
            break
    s.setblocking(True)
    sent: dict[int, float] = {}
    rtts: list[float] = []

    def take(block_until: float) -> None:
        while True:
            left = block_until - time.monotonic()
            if left <= 0:
                return
            s.settimeout(left)
            try:
                data = s.recv(64)
            except OSError:
                return
            seq, _ = struct.unpack("!Id", data[:12])
            if seq in sent:
                rtts.append((time.monotonic() - sent.pop(seq)) * 1000)

    start = time.monotonic()
    for i in range(count):
        sent[i] = time.monotonic()
        s.send(struct.pack("!Id", i, sent[i]) + b"\0" * 52)
        take(start + (i + 1) * interval)
    take(time.monotonic() + timeout)
    rtts.sort()
    out = {"sent": count, "received": len(rtts), "loss_pct": 100.0 * (count - len(rtts)) / count}
    if rtts:
        out.update(
            rtt_min_ms=rtts[0],
            rtt_median_ms=statistics.median(rtts),
            rtt_p99_ms=rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))],
            rtt_max_ms=rtts[-1],
        )
    return out


def tcp(port: int, nbytes: int, down: bool) -> dict:
    c = _connect(port, time.monotonic() + 5)
    c.settimeout(60)
    data = pattern(nbytes)
    want = hashlib.sha256(data).digest()  # before the clock starts
    start = time.monotonic()
    c.sendall((b"D" if down else b"U") + struct.pack("!Q", nbytes))
    if down:
        h, left = hashlib.sha256(), nbytes
        while left:
            got = c.recv(min(CHUNK * 4, left))
            if not got:
                break
            h.update(got)
            left -= len(got)
        intact = left == 0 and h.digest() == want
    else:
        c.sendall(data)
        digest = b""
        while len(digest) < 32:
            got = c.recv(32 - len(digest))
            if not got:
                break
            digest += got
        intact = digest == want
    secs = time.monotonic() - start
    c.close()
    return {"bytes": nbytes, "seconds": secs, "mib_s": nbytes / secs / 2**20, "intact": intact}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("serve", "rtt", "tcp"))
    ap.add_argument("--port", type=int, default=7700)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--down", action="store_true")
    ap.add_argument("--no-contact", action="store_true", help="rtt: send without a first echo")
    a = ap.parse_args(argv)
    if a.what == "serve":
        return serve(a.port)
    res = rtt(a.port, a.count, a.interval, a.timeout, not a.no_contact) if a.what == "rtt" else tcp(a.port, a.bytes, a.down)
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
