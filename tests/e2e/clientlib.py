# SPDX-License-Identifier: BSD-2-Clause
"""Helpers shared by the `ferry client` tests (test_client.py,
test_client_reverse.py, test_client_udp.py, test_client_wss.py): the
server's certificate and users, a client process with its log, an
integrity exchange through a socket, a PySocks socket."""

import hashlib
import random
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from certlib import make_cert
from ferrylib import (ferry_bin, ferry_env, passwd_line, read_until_close, sanitizer_findings,
                      _pdeathsig_prefix)

try:
    import socks  # PySocks (python3-socks)
except ImportError:  # pragma: no cover - a Makefile dependency
    socks = None

PASSWORD = "tunnel-pw"


def server_files(d: Path, users=("alice",), password: str = PASSWORD) -> tuple[Path, Path]:
    """A `ferry serve`'s files in d for the client tests: server.pem and
    server.key (certlib.make_cert), users.txt with each user and password,
    and USER.auth for `ferry client --auth-file`. Returns (cert, key)."""
    cert, key = make_cert(d, "server")
    (d / "users.txt").write_text("".join(passwd_line(u, password) + "\n" for u in users))
    for u in users:
        (d / f"{u}.auth").write_text(f"{u}:{password}\n")
    return cert, key


class Client:
    """One `ferry client` process (stderr to a file), stopped by SIGTERM."""

    def __init__(self, d: Path, args: list[str], name: str = "client"):
        self.err_path = d / f"{name}-{time.monotonic_ns()}.stderr"
        self._err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(_pdeathsig_prefix() + [ferry_bin(), "client", *args, "-w", "1"],
                                     stdin=subprocess.DEVNULL, stdout=self._err, stderr=self._err,
                                     env=ferry_env())

    def text(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait_log(self, pattern: str, timeout: float = 15.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text(), re.M)
            if m:
                return m
            assert self.proc.poll() is None, f"client exited {self.proc.returncode}:\n{self.text()}"
            time.sleep(0.02)
        raise AssertionError(f"no {pattern!r} in the client's log:\n{self.text()[-3000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._err.close()
        assert not sanitizer_findings(self.text()), self.text()
        assert self.proc.returncode == 0, self.text()


def exchange(sock: socket.socket, size: int, seed: int, timeout: float = 60):
    """Send size random bytes to an echo while reading them back, then EOF.
    Returns (sha256 sent, sha256 received, count received, how it ended)."""
    sock.settimeout(timeout)
    sent_h, errs = hashlib.sha256(), []

    def sender():
        try:
            rnd = random.Random(seed)
            left = size
            while left:
                block = rnd.randbytes(min(65536, left))
                sent_h.update(block)
                sock.sendall(block)
                left -= len(block)
        except Exception as e:  # reported below
            errs.append(e)

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    got_h, got = hashlib.sha256(), 0
    deadline = time.monotonic() + timeout
    while got < size and time.monotonic() < deadline:
        data = sock.recv(256 * 1024)
        if not data:
            break
        got += len(data)
        got_h.update(data)
    t.join(max(0.1, deadline - time.monotonic()))
    assert not t.is_alive() and not errs, errs
    sock.shutdown(socket.SHUT_WR)
    rest, how = read_until_close(sock, timeout=20)
    return sent_h.hexdigest(), got_h.hexdigest(), got + len(rest), how


def socks_sock(port: int) -> socket.socket:
    s = socks.socksocket()
    s.set_proxy(socks.SOCKS5, "127.0.0.1", port, rdns=True)
    s.settimeout(30)
    return s
