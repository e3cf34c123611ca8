# SPDX-License-Identifier: BSD-2-Clause
"""HAProxy (Debian's haproxy, in TEST_PKGS) in front of ferry: find it or
skip, start it on frontend ports picked at run time (again with new ports
if one was taken before HAProxy bound it), wait until it listens on all of
them, stop it; and read its servers' states from its stats socket. Every
wait is bounded."""

from __future__ import annotations

import contextlib
import csv
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from opslib import free_port, listening_inodes, wait_until

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def need_haproxy() -> str:
    """The haproxy binary, or skip the test."""
    if not shutil.which(HAPROXY):
        pytest.skip("HAProxy is not installed (/usr/sbin/haproxy; see TEST_PKGS in the Makefile)")
    return HAPROXY


@contextlib.contextmanager
def haproxy(d: Path, render: Callable[[list[int]], str], fronts: int = 1, tries: int = 5):
    """Run HAProxy in the foreground with the configuration render(ports)
    returns for `fronts` free loopback ports (checked with haproxy -c), its
    output in d/haproxy.log, until it listens on all of them; yield (proc,
    ports); terminate it on the way out."""
    binary = need_haproxy()
    proc = None
    for _ in range(tries):
        ports = sorted({free_port() for _ in range(fronts)})
        if len(ports) != fronts:
            continue
        cfg = d / "haproxy.cfg"
        cfg.write_text(render(ports))
        chk = subprocess.run([binary, "-c", "-f", str(cfg)], capture_output=True, timeout=20)
        assert chk.returncode == 0, chk.stdout.decode() + chk.stderr.decode()
        with open(d / "haproxy.log", "wb") as log:
            proc = subprocess.Popen([binary, "-db", "-f", str(cfg)], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=log)
        try:
            wait_until(lambda: proc.poll() is not None or len(listening_inodes(proc.pid)) >= fronts, 10,
                       "HAProxy listening")
        except AssertionError:
            proc.kill()
            proc.wait(10)
            raise
        if proc.poll() is None:
            break
        proc = None
    assert proc is not None, "HAProxy did not start:\n" + (d / "haproxy.log").read_text(errors="replace")
    try:
        yield proc, ports
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def server_states(stats_socket: Path, backend: str, timeout: float = 5.0) -> dict[str, str]:
    """Server name -> status (UP, DOWN, ...) of a backend, from `show stat`
    on HAProxy's stats socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(stats_socket))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    rows = csv.DictReader(data.decode().lstrip("# ").splitlines())
    return {r["svname"]: r["status"] for r in rows
            if r.get("pxname") == backend and r.get("svname") not in ("FRONTEND", "BACKEND")}
