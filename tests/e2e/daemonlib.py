# SPDX-License-Identifier: BSD-2-Clause
"""Third-party daemons that tests start as parents or peers (Dante,
tinyproxy, Squid, stunnel): find the binary or skip, a directory the daemon
can write to after dropping privileges, start it in the foreground with
its output kept, wait for its port, and stop it. Every wait is bounded."""

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from opslib import free_port

__all__ = ["STUNNEL", "Stunnel", "daemon", "free_port", "need", "shared_dir", "stop_proc", "wait_file",
           "wait_port"]

STUNNEL = shutil.which("stunnel4") or shutil.which("stunnel")


def need(binary: str) -> str:
    """The path of binary (PATH or /usr/sbin), or skip the test."""
    path = shutil.which(binary) or (f"/usr/sbin/{binary}" if os.access(f"/usr/sbin/{binary}", os.X_OK) else None)
    if not path:
        pytest.skip(f"{binary} is not installed (see TEST_PKGS in the Makefile)")
    return path


def shared_dir(prefix: str) -> Path:
    """A directory a daemon that drops privileges can still write its logs
    to (pytest's tmp_path is private to the test's user)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    d.chmod(0o777)
    return d


def wait_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    """Until something accepts on 127.0.0.1:port (and proc still runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def stop_proc(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def wait_file(path: Path, pattern: str, timeout: float = 10.0) -> list[str]:
    """Every match of pattern in path once there is one (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        found = re.findall(pattern, text)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@contextlib.contextmanager
def daemon(argv: list[str], d: Path, port: int, name: str, timeout: float = 15.0):
    """Run argv in the foreground with its output in d/NAME.out until it
    listens on port; stop it and remove d afterwards."""
    out = open(d / f"{name}.out", "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        wait_port(port, proc, timeout=timeout)
        yield proc
    finally:
        stop_proc(proc)
        out.close()
        shutil.rmtree(d, ignore_errors=True)


class Stunnel:
    """stunnel4 in server mode: TLS 1.3 on a loopback port, plain TCP to
    connect_to."""

    def __init__(self, d: Path, cert: Path, key: Path, connect_to: tuple[str, int]):
        self.log = d / "stunnel.log"
        for _ in range(5):
            self.port = free_port()
            conf = d / "stunnel.conf"
            conf.write_text(
                "foreground = yes\npid =\ndebug = 5\n"
                f"output = {self.log}\n"
                "[https]\n"
                f"accept = 127.0.0.1:{self.port}\n"
                f"connect = {connect_to[0]}:{connect_to[1]}\n"
                f"cert = {cert}\nkey = {key}\n"
                "sslVersionMin = TLSv1.3\n")
            self.proc = subprocess.Popen([STUNNEL, str(conf)], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_listening(10.0):
                return
            self.stop()
        raise RuntimeError("stunnel did not start: " + self.log_text())

    def _wait_listening(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        stop_proc(self.proc)
