# SPDX-License-Identifier: BSD-2-Clause
"""The data path: many concurrent sessions, half-close in both directions,
a server that aborts, and every splice/buffer setting."""

import hashlib
import random
import socket
import struct
import threading
import time

import pytest

from ferrylib import (
    ServerAbortServer,
    ServerHalfCloseServer,
    SinkThenReplyServer,
    read_until_close,
    recv_exact,
    socks_connect,
)

MiB = 1024 * 1024


def _stream(seed: int, size: int, chunk: int = 64 * 1024):
    rnd = random.Random(seed)
    left = size
    while left:
        n = min(chunk, left)
        yield rnd.randbytes(n)
        left -= n


def _digest(seed: int, size: int) -> str:
    h = hashlib.sha256()
    for block in _stream(seed, size):
        h.update(block)
    return h.hexdigest()


def echo_session(proxy_addr, target, seed: int, size: int, timeout: float, barrier=None):
    """One session: send size pseudo-random bytes to an echo through ferry
    while reading them back; returns (sha256 sent, sha256 received, bytes
    received)."""
    s, _ = socks_connect(proxy_addr, *target, timeout=timeout)
    with s:
        s.settimeout(timeout)
        if barrier is not None:
            barrier.wait()
        sent_h = hashlib.sha256()
        send_err = []

        def sender():
            try:
                for block in _stream(seed, size):
                    sent_h.update(block)
                    s.sendall(block)
                s.shutdown(socket.SHUT_WR)
            except Exception as e:  # reported by the caller
                send_err.append(e)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        got_h = hashlib.sha256()
        got = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = s.recv(256 * 1024)
            if not data:
                break
            got += len(data)
            got_h.update(data)
        t.join(max(0.1, deadline - time.monotonic()))
        assert not t.is_alive(), "sender still running at the deadline"
        assert not send_err, f"send failed: {send_err[0]!r}"
        return sent_h.hexdigest(), got_h.hexdigest(), got


# ---- many at once ------------------------------------------------------------


def test_200_concurrent_sessions_1mib_each(ferry, echo_server):
    n, size, budget = 200, MiB, 120.0
    f = ferry()
    barrier = threading.Barrier(n, timeout=60)
    results = [None] * n
    errors = []

    def run(i):
        try:
            results[i] = echo_session(f.addr, echo_server.addr, seed=1000 + i, size=size,
                                      timeout=budget - 10, barrier=barrier)
        except Exception as e:
            errors.append((i, e))
            try:
                barrier.abort()
            except threading.BrokenBarrierError:
                pass

    t0 = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, budget - (time.monotonic() - t0)))
    stuck = sum(t.is_alive() for t in threads)
    assert stuck == 0, f"{stuck} sessions still running after {budget}s"
    assert not errors, f"{len(errors)} sessions failed, first: {errors[0]!r}"
    for i, (sent, got, nbytes) in enumerate(results):
        assert nbytes == size, f"session {i}: {nbytes} bytes back, expected {size}"
        assert sent == got == _digest(1000 + i, size), f"session {i}: data corrupted"
    # every session was relayed and logged as a clean end
    deadline = time.monotonic() + 10
    while True:
        entries = [e for e in f.access_entries() if e.get("dst") == f"127.0.0.1:{echo_server.port}"]
        done = [e for e in entries if e["end"] == "done" and e["up"] == e["down"] == str(size)]
        if len(done) >= n or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(done) == n, f"{len(done)} of {n} sessions logged end=done with {size} bytes each way"


@pytest.mark.parametrize(
    "settings",
    [
        {"splice": "yes"},
        {"splice": "no"},
        {"splice": "no", "buffer_size": "1k"},
        {"splice": "auto", "buffer_size": "1k", "pipe_size": "4k"},
        {"splice": "yes", "pipe_size": "1m", "workers": "1"},
    ],
    ids=["splice", "buffers", "tiny-buffers", "auto-tiny", "big-pipes-1-worker"],
)
def test_transfer_settings(ferry, echo_server, settings):
    f = ferry(config=settings)
    errors = []
    results = {}

    def run(i):
        try:
            results[i] = echo_session(f.addr, echo_server.addr, seed=i, size=3 * MiB, timeout=60)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads), "transfers still running"
    assert not errors, repr(errors[0])
    for i, (sent, got, n) in results.items():
        assert n == 3 * MiB and sent == got


# ---- half-close --------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 100_000, 3 * MiB])
def test_client_half_close(ferry, tcp_server, size):
    """Client sends, then SHUT_WR; the server reads to EOF, replies, closes;
    the client gets the whole reply and then EOF."""
    f = ferry()
    srv = tcp_server(SinkThenReplyServer, reply_size=512 * 1024)
    s, _ = socks_connect(f.addr, *srv.addr, timeout=30)
    with s:
        client = s.getsockname()
        payload = random.Random(size).randbytes(size)
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        reply, how = read_until_close(s, timeout=30)
    assert how == "eof"
    digest = hashlib.sha256(payload).hexdigest()
    assert reply == SinkThenReplyServer.reply_for(size, digest, 512 * 1024)
    entry = f.access_for(client)
    assert entry["end"] == "done" and entry["up"] == str(size) and entry["down"] == str(len(reply)), entry


def test_server_half_closes_while_client_sends(ferry, tcp_server):
    """The server replies and shuts its side while the client is still
    sending: the client reads the reply and EOF, goes on sending, and the
    server still receives every byte."""
    f = ferry()
    srv = tcp_server(ServerHalfCloseServer, first_bytes=1024)
    s, _ = socks_connect(f.addr, *srv.addr, timeout=30)
    rnd = random.Random(7)
    h = hashlib.sha256()
    total = 0
    with s:
        client = s.getsockname()
        first = rnd.randbytes(1024)
        s.sendall(first)
        h.update(first)
        total += len(first)
        # the server is done talking; our side is still open for writing
        greeting = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = s.recv(65536)
            if not chunk:
                break
            greeting += chunk
        assert greeting == ServerHalfCloseServer.GREETING
        for _ in range(40):  # keep sending after the EOF
            block = rnd.randbytes(50_000)
            s.sendall(block)
            h.update(block)
            total += len(block)
            time.sleep(0.005)
        s.shutdown(socket.SHUT_WR)
        rest, how = read_until_close(s, timeout=10)
        assert rest == b"" and how == "eof"
    assert srv.done.wait(10), "server never saw the client's EOF"
    (n, digest), = srv.results.values()
    assert n == total and digest == h.hexdigest()
    entry = f.access_for(client)
    assert entry["end"] == "done" and entry["up"] == str(total), entry
    assert entry["down"] == str(len(ServerHalfCloseServer.GREETING)), entry


def test_server_aborts_while_client_sends(ferry, tcp_server):
    """The server closes completely; the client keeps sending. ferry must
    end the session (EOF or reset for the client) instead of hanging."""
    f = ferry()
    srv = tcp_server(ServerAbortServer)
    s, _ = socks_connect(f.addr, *srv.addr)
    with s:
        client = s.getsockname()
        assert recv_exact(s, len(ServerAbortServer.GREETING)) == ServerAbortServer.GREETING
        want = f"{client[0]}:{client[1]}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                s.sendall(b"x" * 65536)
            except OSError:  # EPIPE, reset or a send that blocks: ferry let go
                break
            if any(e.get("client") == want for e in f.access_entries()):
                break
            time.sleep(0.02)
    entry = f.access_for(client)
    assert entry["reply"] == "succeeded"
    assert entry["down"] == str(len(ServerAbortServer.GREETING))


def test_client_aborts_mid_transfer(ferry, echo_server):
    """A client that vanishes (RST) mid-transfer: the session ends, ferry
    stays healthy."""
    f = ferry()
    s, _ = socks_connect(f.addr, *echo_server.addr)
    client = s.getsockname()
    s.sendall(b"y" * 200_000)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # RST
    entry = f.access_for(client)
    assert entry["reply"] == "succeeded"
    s2, _ = socks_connect(f.addr, *echo_server.addr)
    with s2:
        s2.sendall(b"alive")
        assert recv_exact(s2, 5) == b"alive"
