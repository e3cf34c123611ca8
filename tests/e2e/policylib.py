# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the access rules and limits end-to-end tests (test_policy.py).

Everything is bounded as in ferrylib: every read has a deadline, every loop a
count or a deadline, every server binds loopback port 0 and is stopped by its
owner.

  rules_text, rule_ref     [rules]/[limits] text, and the "FILE:LINE" ferry
                           logs for a rule line of a started instance
  socks5_try               a SOCKS5 CONNECT (optionally RFC 1929) whose reply
                           is returned, not asserted
  socks4_try               a SOCKS4/4a CONNECT; returns the 8-byte reply
  http_raw                 one request written by hand; status and head
  run_curl                 curl with no proxy variables from the environment
  SendServer               on connect, sends N bytes and closes
  start_with_nofile        a ferry (from the `ferry` factory) started under
                           `prlimit --nofile=N:N`
  cpu_seconds              utime + stime of a process (/proc/PID/stat)
  make_userlist            a userlist of cheap Argon2id lines (ferry passwd)
  wait_until               poll a predicate with a deadline
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import NamedTuple
from unittest import mock

import ferrylib
from ferrylib import (
    AUTH_OK,
    IO_TIMEOUT,
    Ferry,
    ThreadedServer,
    auth_handshake,
    handshake,
    open_client,
    passwd_line,
    read_reply,
    recv_exact,
    request,
)

# ---- configuration -------------------------------------------------------------


def rules_text(rules: list[str] | None = None, limits: dict | None = None) -> str:
    """A [rules] section (one rule a line) and a [limits] section."""
    text = ""
    if rules is not None:
        text += "[rules]\n" + "".join(r + "\n" for r in rules)
    if limits:
        text += "\n[limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items())
    return text


def rule_ref(f: Ferry, rule: str, path: Path | None = None) -> str:
    """The "FILE:LINE" ferry names the rule by: the line of path (default the
    instance's config file) that holds exactly this rule text."""
    path = Path(path or f.config_path)
    hits = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if line.strip() == rule.strip()]
    assert len(hits) == 1, f"rule {rule!r} found {len(hits)} times in {path}"
    return f"{path.name}:{hits[0]}"


# ---- clients ---------------------------------------------------------------------


def socks5_try(proxy, host, port: int, user=None, password=None, source: str | None = None,
               timeout: float = IO_TIMEOUT):
    """SOCKS5 CONNECT to host:port (username/password when user is given).
    Returns (sock, reply); the caller closes sock."""
    s = open_client(proxy, timeout, source=source)
    try:
        if user is not None:
            st = auth_handshake(s, user, password, timeout)
            assert st == AUTH_OK, f"authentication as {user!r} refused (status {st:#x})"
        else:
            handshake(s, timeout)
        s.sendall(request(host, port))
        r = read_reply(s, timeout)
    except BaseException:
        s.close()
        raise
    assert r.ver == 5 and r.rsv == 0, f"malformed reply {r.raw!r}"
    return s, r


SOCKS4_GRANTED, SOCKS4_REJECTED = 0x5A, 0x5B


def socks4_try(proxy, host: str, port: int, userid: bytes = b"", timeout: float = IO_TIMEOUT):
    """SOCKS4 CONNECT (an IPv4 literal) or SOCKS4a (a name). Returns (sock,
    reply code); the caller closes sock."""
    try:
        ip = socket.inet_aton(host)
        tail = b""
    except OSError:
        ip = bytes([0, 0, 0, 1])  # 4a: a name follows the USERID
        tail = host.encode() + b"\0"
    s = open_client(proxy, timeout)
    try:
        s.sendall(bytes([4, 1]) + struct.pack(">H", port) + ip + userid + b"\0" + tail)
        r = recv_exact(s, 8, timeout)
    except BaseException:
        s.close()
        raise
    assert r[0] == 0, f"SOCKS4 reply with VN {r[0]}: {r!r}"
    return s, r[1]


class HttpReply(NamedTuple):
    status: int
    head: str
    body: bytes
    client: tuple[str, int]


def http_raw(proxy, req: bytes, timeout: float = IO_TIMEOUT) -> HttpReply:
    """Send req, read one response head (and a Content-Length body when
    there is one), close."""
    s = open_client(proxy, timeout)
    try:
        client = s.getsockname()[:2]
        s.sendall(req)
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in buf:
            left = deadline - time.monotonic()
            assert left > 0, f"no response head within {timeout}s: {buf[:200]!r}"
            s.settimeout(left)
            chunk = s.recv(65536)
            assert chunk, f"EOF before a response head: {buf[:200]!r}"
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        text = head.decode(errors="replace")
        status = int(text.split(" ", 2)[1])
        n = 0
        for line in text.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v.strip())
        if len(body) < n:
            body += recv_exact(s, n - len(body), timeout)
        return HttpReply(status, text, body, client)
    finally:
        s.close()


def curl_env() -> dict:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return env


def run_curl(args: list[str], timeout: float = 20.0) -> subprocess.CompletedProcess:
    """curl -sS with args, bounded; stdout and stderr as text."""
    curl = shutil.which("curl")
    assert curl, "curl is not installed"
    try:
        return subprocess.run(
            [curl, "-sS", "--max-time", str(int(timeout) - 2), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=curl_env(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"curl {' '.join(args)} did not finish within {timeout}s") from e


# ---- servers ---------------------------------------------------------------------


class SendServer(ThreadedServer):
    """On each connection: send `size` bytes (a repeated pattern), then close.
    .sent records, per peer, how many bytes went out."""

    def __init__(self, *a, size: int = 4 << 20, **kw):
        self.size = size
        self.sent: dict[tuple, int] = {}
        super().__init__(*a, **kw)

    def handle(self, c, peer):
        chunk = bytes(range(256)) * 256  # 64 KiB
        left = self.size
        while left > 0:
            n = c.send(chunk[: min(left, len(chunk))])
            left -= n
        with self.lock:
            self.sent[peer] = self.size
        c.shutdown(socket.SHUT_WR)


# ---- processes ---------------------------------------------------------------------


def start_with_nofile(factory, nofile: int, **kw) -> Ferry:
    """Start ferry through the `ferry` factory (so its teardown checks still
    apply) under `prlimit --nofile=N:N`: ferry raises its soft limit to the
    hard one at start, so both are set. The prefix goes where ferrylib puts
    its own (setpriv --pdeathsig) in front of the command."""
    prlimit = shutil.which("prlimit")
    assert prlimit, "prlimit (util-linux) is not installed"
    orig = ferrylib._pdeathsig_prefix

    def prefix():
        return orig() + [prlimit, f"--nofile={nofile}:{nofile}", "--"]

    with mock.patch.object(ferrylib, "_pdeathsig_prefix", prefix):
        return factory(**kw)


def nofile_limit(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            parts = line.split()
            return int(parts[3]), int(parts[4])
    raise AssertionError(f"no 'Max open files' in /proc/{pid}/limits")


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of pid (all its threads), in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    # after "pid (comm) ": state is field 3; utime and stime are fields 14, 15
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def make_userlist(path: Path, users: dict[str, str]) -> Path:
    """A userlist of cheap Argon2id lines (ferry passwd --ops 1 --mem 8m)."""
    lines = [passwd_line(name, pw) for name, pw in users.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- waiting ---------------------------------------------------------------------


def wait_until(pred, timeout: float, what: str, interval: float = 0.02):
    """Call pred until it returns a true value (returned) or timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(interval)


def connect_raw(proxy, source: str | None = None, timeout: float = IO_TIMEOUT) -> socket.socket | None:
    """A plain TCP connection to proxy (from source, when given), or None when
    ferry reset it so early that connect() itself saw the reset (a timeout
    makes Python connect without blocking and read SO_ERROR afterwards). No
    socket option is set afterwards: that too fails on a reset socket."""
    try:
        return socket.create_connection(proxy, timeout=timeout,
                                        source_address=(source, 0) if source else None)
    except ConnectionResetError:
        return None


def closed_without_reply(sock: socket.socket, timeout: float = IO_TIMEOUT) -> bool:
    """True when the peer closes (EOF or reset) without sending a byte; False
    when a byte arrives. AssertionError when it stays open until timeout."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(1)
    except ConnectionResetError:
        return True
    except socket.timeout:
        raise AssertionError(f"connection neither answered nor closed within {timeout}s") from None
    return data == b""


def read_all(sock: socket.socket, n: int, timeout: float) -> int:
    """Read until EOF or n bytes (bounded); returns the bytes read."""
    got = 0
    deadline = time.monotonic() + timeout
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"only {got} of {n} bytes within {timeout}s")
        sock.settimeout(left)
        data = sock.recv(1 << 20)
        if not data:
            break
        got += len(data)
    return got


class Downloader(threading.Thread):
    """Read a whole SOCKS5-relayed stream in a thread: .got bytes, .seconds
    from start() to EOF, .error if it failed."""

    def __init__(self, sock: socket.socket, n: int, timeout: float):
        super().__init__(daemon=True)
        self.sock, self.n, self.timeout = sock, n, timeout
        self.got = 0
        self.seconds = None
        self.error = None

    def run(self):
        t0 = time.monotonic()
        try:
            self.got = read_all(self.sock, self.n, self.timeout)
        except BaseException as e:  # reported by the test
            self.error = e
        self.seconds = time.monotonic() - t0
