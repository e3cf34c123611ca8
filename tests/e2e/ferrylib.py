# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for ferry's end-to-end tests.

Everything here is bounded: every socket read has a timeout, every loop has a
count or a deadline, every server binds a loopback address on port 0 and is
stopped (threads joined with a bound) by its owner.

  Ferry / FerryFactory   start `ferry serve`, learn its ports from the log,
                         stop it, check exit status and sanitizer output
  run_ferry              one-shot CLI invocations (--version, --check, ...)
  EchoServer, SinkThenReplyServer, ServerHalfCloseServer, ServerAbortServer,
  HttpFileServer         threaded loopback servers
  socks5 helpers         a raw RFC 1928 client: greeting, request, reply
  RFC 1929 helpers       userpass, auth_handshake, socks_connect_auth,
                         expect_auth_refused; passwd_line (ferry passwd)
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import http.server
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[2]
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")
READY_TIMEOUT = 10.0
IO_TIMEOUT = 5.0


def ferry_bin() -> str:
    return os.environ.get("FERRY_BIN") or str(REPO_ROOT / "build" / "san" / "ferry")


def ferry_env(extra: dict | None = None) -> dict:
    """Environment for a ferry child: sanitizers armed, FERRY_LOG unset unless
    given (a value of None in extra removes a variable)."""
    env = {k: v for k, v in os.environ.items() if k != "FERRY_LOG"}
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def sanitizer_findings(text: str) -> list[str]:
    return [m for m in SANITIZER_MARKERS if m in text]


def _pdeathsig_prefix() -> list[str]:
    # If pytest itself is killed, take ferry down with it rather than leave
    # an orphan. (PDEATHSIG follows the forking thread: ferry is only ever
    # started from pytest's main thread.)
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def netns_unavailable(setup: str) -> str | None:
    """Why a private network namespace (`unshare -n`, root only) in which
    the shell command setup succeeds cannot be had here, or None."""
    unshare = shutil.which("unshare")
    if not unshare:
        return "unshare (util-linux) is not installed"
    if not shutil.which("ip"):
        return "ip (iproute2) is not installed"
    try:
        r = subprocess.run([unshare, "-n", "sh", "-c", setup], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare -n failed: {e}"
    if r.returncode != 0:
        return f"unshare -n is not permitted here (rc={r.returncode}): {r.stderr.strip()[:200]}"
    return None


def run_in_netns(script: Path, args: list[str], timeout: float, what: str, mount: bool = False) -> dict:
    """Run the Python script (in this directory) in a private network
    namespace (and, with mount, a private mount namespace: what it mounts
    only it sees), killed with the test; it must exit 0 and print its
    result as JSON on its last line, which is returned."""
    ns = ["-n", "-m", "--propagation", "private"] if mount else ["-n"]
    cmd = [shutil.which("unshare"), *ns, sys.executable, str(script), *args]
    try:
        p = subprocess.run(_pdeathsig_prefix() + cmd, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, cwd=script.parent)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{what} did not finish within {timeout:g}s: {e}") from None
    assert p.returncode == 0, f"{what}: rc={p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def netns_ferry(ferry_bin: str, log: Path, res: dict, env: dict | None = None):
    """For a script run_in_netns() started: `ferry serve` with one worker on
    a free 127.0.0.1 port, logging to log, yielding (proc, port) once it
    accepts. On the way out it is stopped with SIGTERM (killed after 20 s),
    and res gets "exit" (its status), "sanitizer" (report lines, at most 5)
    and "log_tail"."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log, "wb") as logf:
        proc = subprocess.Popen(_pdeathsig_prefix() + [ferry_bin, "serve", "-l", f"127.0.0.1:{port}", "-w", "1"],
                                stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=ferry_env(env))
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("ferry did not start") from None
                time.sleep(0.05)
        yield proc, port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            res["exit"] = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            res["exit"] = proc.wait()
        text = log.read_text(errors="replace")
        res["sanitizer"] = [ln for ln in text.splitlines() if "Sanitizer" in ln or "runtime error" in ln][:5]
        res["log_tail"] = text[-2000:]


class CliResult(NamedTuple):
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def run_ferry(args, timeout: float = 20.0, env: dict | None = None, input: bytes | str | None = None) -> CliResult:
    """Run ferry to completion (bounded) and check it produced no sanitizer
    report. input, when given, is its standard input (else /dev/null)."""
    if isinstance(input, str):
        input = input.encode()
    try:
        p = subprocess.run(
            _pdeathsig_prefix() + [ferry_bin(), *args],
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
            capture_output=True,
            timeout=timeout,
            env=ferry_env(env),
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"ferry {' '.join(args)} did not exit within {timeout}s: {e}") from e
    res = CliResult(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))
    found = sanitizer_findings(res.text)
    assert not found, f"sanitizer report ({found}) from ferry {' '.join(args)}:\n{res.text}"
    return res


# ---- ferry process -----------------------------------------------------------

# Short timeouts so that a test (and its teardown) never waits long. A test's
# own settings override these.
DEFAULT_CONFIG = {
    "workers": "2",
    "handshake_timeout": "3s",
    "connect_timeout": "3s",
    "shutdown_timeout": "2s",
}

LISTEN_RE = re.compile(r"\blistening on (\[[0-9a-fA-F:.]+\]|[0-9.]+):(\d+)\s*$", re.M)
ACCESS_RE = re.compile(r"\baccess (id=.*)$", re.M)
# An access line with the time it was logged (UTC, to the millisecond).
ACCESS_TS_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z .*?\baccess (id=.*)$", re.M)

# When each client socket the helpers opened was connected, by its local
# address. The kernel reuses a loopback client port (tcp_tw_reuse) once
# its TIME_WAIT is a second old, so over a module's many connections a
# client address can match an earlier session's access lines: those were
# logged before this client existed, and access_for() leaves them out.
_CLIENT_BORN: dict[tuple, float] = {}


def note_client(sock: socket.socket) -> None:
    """Record that sock was connected now (see _CLIENT_BORN)."""
    try:
        _CLIENT_BORN[tuple(sock.getsockname()[:2])] = time.time()
    except OSError:
        pass


def _log_stamp(t: float) -> str:
    """t as the log writes its time (UTC, milliseconds): such stamps sort as text."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


class Listener(NamedTuple):
    host: str
    port: int
    family: int

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)


def parse_access(line: str) -> dict:
    out = {}
    for word in line.split():
        k, sep, v = word.partition("=")
        if sep:
            out[k] = v
    return out


class Ferry:
    """One `ferry serve` process. Use through FerryFactory (fixtures).

    config holds top-level keys (merged over DEFAULT_CONFIG); auth, when
    given, the keys of an [auth] section written after them (a relative
    userlist is found next to the config file, in workdir); extra, raw text
    appended last ([rules], [limits]...). raw_config replaces all of them."""

    def __init__(
        self,
        workdir: Path,
        name: str,
        config: dict | None = None,
        raw_config: str | None = None,
        use_config: bool = True,
        listens=("127.0.0.1:0",),
        args=(),
        env: dict | None = None,
        log_path: Path | None = None,
        expect_exit: int | None = 0,
        auth: dict | None = None,
        extra: str | None = None,
    ):
        self.workdir = workdir
        self.name = name
        self.expect_exit = expect_exit
        self.stderr_path = workdir / f"{name}.stderr"
        if log_path is None and config and config.get("log_file"):
            log_path = config["log_file"]
        self.log_path = Path(log_path) if log_path else self.stderr_path
        self.config_path = None
        cmd = [ferry_bin(), "serve"]
        if use_config:
            if raw_config is None:
                merged = dict(DEFAULT_CONFIG)
                merged.update({k: str(v) for k, v in (config or {}).items()})
                raw_config = "".join(f"{k} = {v}\n" for k, v in merged.items())
                if auth is not None:
                    raw_config += "\n[auth]\n" + "".join(f"{k} = {v}\n" for k, v in auth.items())
                if extra:
                    raw_config += "\n" + extra  # sections such as [rules] or [limits]
            self.config_path = workdir / f"{name}.conf"
            self.config_path.write_text(raw_config)
            cmd += ["-c", str(self.config_path)]
        for l in listens:
            cmd += ["-l", l]
        cmd += list(args)
        self.cmd = cmd
        self.listeners: list[Listener] = []
        self.returncode: int | None = None
        self.stop_seconds: float | None = None
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            _pdeathsig_prefix() + cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
            env=ferry_env(env),
        )

    # -- logs --

    @staticmethod
    def _complete_lines(path: Path) -> str:
        """The file's text up to its last newline: a line the writer thread
        is still writing is not read half-done."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return ""
        return data[: data.rfind(b"\n") + 1].decode(errors="replace")

    def stderr_text(self) -> str:
        return self._complete_lines(self.stderr_path)

    def log_text(self) -> str:
        """ferry's log: stderr, or log_file when the test set one."""
        if self.log_path == self.stderr_path:
            return self.stderr_text()
        return self._complete_lines(self.log_path)

    def wait_log(self, pattern: str, timeout: float = 5.0, start: int = 0) -> re.Match:
        """Wait (bounded) until regex pattern appears in the log at or after
        character offset start."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.log_text(), start)
            if m:
                return m
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{self.name}: no log line matching {pattern!r} within {timeout}s; log:\n"
                    + self.log_text()[-4000:]
                )
            time.sleep(0.02)

    def log_offset(self) -> int:
        return len(self.log_text())

    def access_entries(self) -> list[dict]:
        return [parse_access(m.group(1)) for m in ACCESS_RE.finditer(self.log_text())]

    def access_for(self, client: tuple, timeout: float = 5.0) -> dict:
        """The access-log entry of the session whose client address is client
        (as returned by sock.getsockname()), waiting for it (bounded)."""
        host, port = client[0], client[1]
        want = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        # Lines logged before this client connected are an earlier session's
        # (the log's clock has milliseconds: allow for its rounding).
        born = _log_stamp(max(0.0, _CLIENT_BORN.get((host, port), 0.0) - 0.002))
        deadline = time.monotonic() + timeout
        while True:
            hits = [parse_access(m.group(2)) for m in ACCESS_TS_RE.finditer(self.log_text())
                    if m.group(1) >= born]
            hits = [e for e in hits if e.get("client") == want]
            if hits:
                assert len(hits) == 1, f"several access lines for client {want}: {hits}"
                return hits[0]
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{self.name}: no access line for client={want} within {timeout}s; log:\n"
                    + self.log_text()[-4000:]
                )
            time.sleep(0.02)

    # -- start / stop --

    def wait_ready(self, timeout: float = READY_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            text = self.log_text()
            if "ready:" in text:
                break
            if self.proc.poll() is not None:
                self._reap()
                raise AssertionError(
                    f"{self.name}: ferry exited with {self.proc.returncode} before 'ready:'\n"
                    f"cmd: {' '.join(self.cmd)}\nstderr:\n{self.stderr_text()}\nlog:\n{text}"
                )
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{self.name}: no 'ready:' line within {timeout}s\n"
                    f"cmd: {' '.join(self.cmd)}\nlog:\n{text}"
                )
            time.sleep(0.02)
        head = text[: text.index("ready:")]
        for m in LISTEN_RE.finditer(head):
            h = m.group(1)
            if h.startswith("["):
                self.listeners.append(Listener(h[1:-1], int(m.group(2)), socket.AF_INET6))
            else:
                self.listeners.append(Listener(h, int(m.group(2)), socket.AF_INET))
        assert self.listeners, f"{self.name}: no 'listening on' lines before 'ready:':\n{text}"
        return self

    @property
    def addrs(self) -> list[tuple[str, int]]:
        return [l.addr for l in self.listeners]

    @property
    def addr(self) -> tuple[str, int]:
        return self.listeners[0].addr

    @property
    def port(self) -> int:
        return self.listeners[0].port

    def listener(self, family: int) -> Listener:
        for l in self.listeners:
            if l.family == family:
                return l
        raise AssertionError(f"{self.name}: no listener of family {family}: {self.listeners}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send_signal(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reap()
        return rc

    def stop(self, sig=signal.SIGTERM, timeout: float = 10.0) -> int:
        """Send sig and wait (bounded) for the exit; returns the exit code.
        A ferry that does not exit in time is killed and the call fails."""
        t0 = time.monotonic()
        self.send_signal(sig)
        rc = self.wait(timeout)
        if rc is None:
            self.kill()
            raise AssertionError(f"{self.name}: did not exit within {timeout}s of {sig!r}")
        self.stop_seconds = time.monotonic() - t0
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._reap()

    def _reap(self):
        if self.proc.returncode is not None:
            self.returncode = self.proc.returncode
        if not self._stderr.closed:
            self._stderr.close()

    def finalize(self) -> list[str]:
        """Teardown: stop (SIGTERM, a second SIGTERM, then SIGKILL, each
        bounded) and return the problems found."""
        problems = []
        if self.proc.poll() is None:
            self.send_signal(signal.SIGTERM)
            rc = self.wait(15)
            if rc is None:
                problems.append(f"{self.name}: still running 15s after SIGTERM")
                self.send_signal(signal.SIGTERM)  # the second signal closes sessions at once
                rc = self.wait(5)
            if rc is None:
                problems.append(f"{self.name}: killed with SIGKILL")
                self.kill()
        self._reap()
        rc = self.proc.returncode
        if self.expect_exit is not None and rc != self.expect_exit:
            problems.append(f"{self.name}: exit code {rc}, expected {self.expect_exit}")
        text = self.stderr_text()
        if self.log_path != self.stderr_path:
            text += self.log_text()
        found = sanitizer_findings(text)
        if found:
            problems.append(f"{self.name}: sanitizer report {found}")
        if problems:
            problems.append(f"--- {self.name} log (tail) ---\n{text[-6000:]}")
        return problems


class FerryFactory:
    """Starts ferry instances into one directory and finalizes them all."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.instances: list[Ferry] = []

    def __call__(self, wait_ready: bool = True, **kw) -> Ferry:
        f = Ferry(self.workdir, f"ferry{len(self.instances)}", **kw)
        self.instances.append(f)
        if wait_ready:
            f.wait_ready()
        return f

    def finalize(self) -> list[str]:
        problems = []
        for f in self.instances:
            problems += f.finalize()
        return problems


# ---- test servers ------------------------------------------------------------


def _have_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


HAVE_IPV6 = _have_ipv6_loopback()


def family_of(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class ThreadedServer:
    """A loopback TCP server: an accept thread and one handler thread per
    connection. stop() closes everything and joins the threads (bounded)."""

    def __init__(self, host: str = "127.0.0.1", backlog: int = 512, conn_timeout: float = 60.0, port: int = 0):
        self.host = host
        self.conn_timeout = conn_timeout
        self.sock = socket.socket(family_of(host), socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((host, port))
            self.sock.listen(backlog)
        except OSError:
            self.sock.close()
            raise
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.peers: list[tuple[str, int]] = []
        self.errors: list[tuple] = []
        self.lock = threading.Lock()
        self.conns: set[socket.socket] = set()
        self.threads: list[threading.Thread] = []
        self.stopping = threading.Event()
        self.accepted = threading.Semaphore(0)
        self.accept_thread = threading.Thread(target=self._accept_loop, daemon=True,
                                              name=f"{type(self).__name__}-accept")
        self.accept_thread.start()

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                c, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            c.settimeout(self.conn_timeout)
            t = threading.Thread(target=self._run, args=(c, peer[:2]), daemon=True)
            with self.lock:
                self.peers.append(peer[:2])
                self.conns.add(c)
                self.threads = [x for x in self.threads if x.is_alive()]
                self.threads.append(t)
            t.start()
            self.accepted.release()

    def _run(self, c: socket.socket, peer):
        try:
            self.handle(c, peer)
        except Exception as e:  # recorded for the tests that care
            with self.lock:
                self.errors.append((peer, e))
        finally:
            with self.lock:
                self.conns.discard(c)
            c.close()

    def handle(self, c: socket.socket, peer):
        raise NotImplementedError

    def saw_peer(self, host: str, port: int, timeout: float = 5.0) -> bool:
        """Whether a connection from host:port was accepted, waiting for it:
        a proxy's reply can overtake the echo server's own accept()."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if (host, port) in self.peers:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def wait_accepts(self, n: int, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        for _ in range(n):
            if not self.accepted.acquire(timeout=max(0.0, deadline - time.monotonic())):
                return False
        return True

    def stop(self, timeout: float = 10.0):
        self.stopping.set()
        self.sock.close()
        self.accept_thread.join(timeout)
        with self.lock:
            conns = list(self.conns)
            threads = list(self.threads)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))


class EchoServer(ThreadedServer):
    """Echoes every byte; on EOF from the client, shuts its write side."""

    def handle(self, c, peer):
        while True:
            data = c.recv(65536)
            if not data:
                break
            c.sendall(data)
        c.shutdown(socket.SHUT_WR)


class SinkThenReplyServer(ThreadedServer):
    """Reads to EOF, then sends a reply describing what it got (plus
    reply_size filler bytes) and closes."""

    def __init__(self, *a, reply_size: int = 256 * 1024, **kw):
        self.reply_size = reply_size
        self.results: dict[tuple, tuple[int, str]] = {}
        super().__init__(*a, **kw)

    @staticmethod
    def reply_for(n: int, digest: str, size: int) -> bytes:
        head = f"got {n} bytes sha256 {digest}\n".encode()
        filler = hashlib.sha256(head).digest() * (size // 32 + 1)
        return head + filler[:size]

    @classmethod
    def check_half_close(cls, s, payload: bytes, reply_size: int, timeout: float = 60) -> None:
        """Through s (connected to a SinkThenReplyServer of reply_size):
        payload, then EOF; the reply to it must come back whole, then EOF."""
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        reply, how = read_until_close(s, timeout=timeout)
        assert how == "eof"
        assert reply == cls.reply_for(len(payload), hashlib.sha256(payload).hexdigest(), reply_size)

    def handle(self, c, peer):
        h = hashlib.sha256()
        n = 0
        while True:
            data = c.recv(65536)
            if not data:
                break
            n += len(data)
            h.update(data)
        with self.lock:
            self.results[peer] = (n, h.hexdigest())
        c.sendall(self.reply_for(n, h.hexdigest(), self.reply_size))


class ServerHalfCloseServer(ThreadedServer):
    """Reads first_bytes, then sends a greeting and shuts its write side
    while the client is still sending; then reads on to EOF and records what
    it got."""

    GREETING = b"server is done talking\n" * 100

    def __init__(self, *a, first_bytes: int = 1024, **kw):
        self.first_bytes = first_bytes
        self.results: dict[tuple, tuple[int, str]] = {}
        self.done = threading.Event()
        super().__init__(*a, **kw)

    def talk_past_its_fin(self, s, more: int = 100000) -> None:
        """Through s (connected to this server): first_bytes, then its
        greeting and its FIN must arrive; then more bytes and our EOF."""
        s.sendall(b"x" * self.first_bytes)
        got = b""
        while len(got) < len(self.GREETING):
            d = s.recv(65536)
            assert d, "EOF before the greeting"
            got += d
        assert got == self.GREETING
        assert s.recv(1) == b""  # its FIN crossed the tunnel (END_STREAM)
        s.sendall(b"y" * more)
        s.shutdown(socket.SHUT_WR)

    def handle(self, c, peer):
        h = hashlib.sha256()
        n = 0
        while n < self.first_bytes:
            data = c.recv(self.first_bytes - n)
            if not data:
                break
            n += len(data)
            h.update(data)
        c.sendall(self.GREETING)
        c.shutdown(socket.SHUT_WR)
        while True:
            data = c.recv(65536)
            if not data:
                break
            n += len(data)
            h.update(data)
        with self.lock:
            self.results[peer] = (n, h.hexdigest())
        self.done.set()


class ServerAbortServer(ThreadedServer):
    """Sends a greeting and closes the connection completely at once."""

    GREETING = b"bye\n"

    def handle(self, c, peer):
        c.sendall(self.GREETING)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class HttpFileServer:
    """http.server on 127.0.0.1:0 in a thread, serving directory."""

    def __init__(self, directory: Path, host: str = "127.0.0.1"):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        cls = http.server.ThreadingHTTPServer
        if family_of(host) == socket.AF_INET6:
            cls = type("V6Server", (http.server.ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
        self.httpd = cls((host, 0), handler)
        self.httpd.daemon_threads = True
        self.directory = Path(directory)
        self.host = host
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                       daemon=True, name="http")
        self.thread.start()
        self.files: dict[str, str] = {}  # name -> sha256 hex

    def add_file(self, name: str, data: bytes):
        (self.directory / name).write_bytes(data)
        self.files[name] = hashlib.sha256(data).hexdigest()

    def url(self, name: str, host: str | None = None) -> str:
        h = host or self.host
        if ":" in h:
            h = f"[{h}]"
        return f"http://{h}:{self.port}/{name}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def unused_refused_port(host: str = "127.0.0.1") -> tuple[socket.socket, int]:
    """A port on host where a connect is refused: the socket is bound but not
    listening, so nobody else can take the port while the caller holds it."""
    s = socket.socket(family_of(host), socket.SOCK_STREAM)
    s.bind((host, 0))
    return s, s.getsockname()[1]


def same_port_pair(make_second, tries: int = 20):
    """Hold a refused port P on 127.0.0.1 and call make_second(P) (which
    binds something on ::1:P), retrying with another P if ::1:P is taken.
    Returns (holder, P, second)."""
    last = None
    for _ in range(tries):
        holder, port = unused_refused_port("127.0.0.1")
        try:
            return holder, port, make_second(port)
        except OSError as e:
            last = e
            holder.close()
    raise AssertionError(f"no port free on both 127.0.0.1 and ::1 after {tries} tries: {last}")


# ---- raw SOCKS5 client -------------------------------------------------------

REP = {
    "succeeded": 0x00,
    "general-failure": 0x01,
    "not-allowed": 0x02,
    "network-unreachable": 0x03,
    "host-unreachable": 0x04,
    "connection-refused": 0x05,
    "ttl-expired": 0x06,
    "command-not-supported": 0x07,
    "address-type-not-supported": 0x08,
}
REP_NAME = {v: k for k, v in REP.items()}

CMD_CONNECT, CMD_BIND, CMD_UDP = 1, 2, 3
ATYP_V4, ATYP_DOMAIN, ATYP_V6 = 1, 3, 4


class Reply(NamedTuple):
    ver: int
    rep: int
    rsv: int
    atyp: int
    host: str
    port: int
    raw: bytes


def recv_exact(sock: socket.socket, n: int, timeout: float = IO_TIMEOUT) -> bytes:
    """Exactly n bytes, or AssertionError on EOF/timeout (with what came)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out after {len(buf)} of {n} bytes: {buf[:64]!r}")
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(buf))
        except socket.timeout:
            raise AssertionError(f"timed out after {len(buf)} of {n} bytes: {buf[:64]!r}") from None
        if not chunk:
            raise AssertionError(f"EOF after {len(buf)} of {n} bytes: {buf[:64]!r}")
        buf += chunk
    return buf


def read_until_close(sock: socket.socket, timeout: float = IO_TIMEOUT, limit: int = 1 << 26) -> tuple[bytes, str]:
    """Read until the peer closes. Returns (data, "eof" | "reset"); raises
    AssertionError if the connection is still open at the deadline."""
    buf = bytearray()
    deadline = time.monotonic() + timeout
    while len(buf) <= limit:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            return bytes(buf), "reset"
        if not chunk:
            return bytes(buf), "eof"
        buf += chunk
    raise AssertionError(f"connection still open after {timeout}s ({len(buf)} bytes read: {bytes(buf[:64])!r})")


def greeting(methods=(0x00,), ver: int = 5) -> bytes:
    return bytes([ver, len(methods), *methods])


def encode_addr(host, atyp: int | None = None) -> bytes:
    """ATYP + address for host: an IPv4/IPv6 literal or a domain (str or
    bytes; bytes are sent as they are)."""
    if isinstance(host, (bytes, bytearray)):
        return bytes([ATYP_DOMAIN, len(host)]) + bytes(host)
    if atyp is None:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            ip = None
        if ip is None:
            atyp = ATYP_DOMAIN
        else:
            atyp = ATYP_V4 if ip.version == 4 else ATYP_V6
    if atyp == ATYP_V4:
        return bytes([ATYP_V4]) + socket.inet_pton(socket.AF_INET, host)
    if atyp == ATYP_V6:
        return bytes([ATYP_V6]) + socket.inet_pton(socket.AF_INET6, host)
    name = host.encode()
    return bytes([ATYP_DOMAIN, len(name)]) + name


def request(host, port: int, cmd: int = CMD_CONNECT, ver: int = 5, rsv: int = 0, atyp: int | None = None) -> bytes:
    return bytes([ver, cmd, rsv]) + encode_addr(host, atyp) + struct.pack(">H", port)


def open_client(proxy: tuple[str, int], timeout: float = IO_TIMEOUT, source: str | None = None) -> socket.socket:
    """Connect to proxy (from the loopback address source, when given)."""
    s = socket.create_connection(proxy, timeout=timeout, source_address=(source, 0) if source else None)
    note_client(s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


def read_method(sock: socket.socket, timeout: float = IO_TIMEOUT) -> int:
    r = recv_exact(sock, 2, timeout)
    assert r[0] == 5, f"method reply with VER {r[0]}: {r!r}"
    return r[1]


def read_reply(sock: socket.socket, timeout: float = IO_TIMEOUT) -> Reply:
    head = recv_exact(sock, 4, timeout)
    atyp = head[3]
    if atyp == ATYP_V4:
        rest = recv_exact(sock, 6, timeout)
        host = socket.inet_ntop(socket.AF_INET, rest[:4])
    elif atyp == ATYP_V6:
        rest = recv_exact(sock, 18, timeout)
        host = socket.inet_ntop(socket.AF_INET6, rest[:16])
    elif atyp == ATYP_DOMAIN:
        ln = recv_exact(sock, 1, timeout)
        rest = ln + recv_exact(sock, ln[0] + 2, timeout)
        host = rest[1:-2].decode(errors="replace")
    else:
        raise AssertionError(f"reply with unknown ATYP {atyp}: {head!r}")
    port = struct.unpack(">H", rest[-2:])[0]
    return Reply(head[0], head[1], head[2], atyp, host, port, head + rest)


def handshake(sock: socket.socket, timeout: float = IO_TIMEOUT) -> None:
    sock.sendall(greeting())
    m = read_method(sock, timeout)
    assert m == 0, f"ferry chose method {m:#x}, expected 0x00"


def socks_connect(proxy, host, port: int, timeout: float = IO_TIMEOUT, expect: int | None = 0):
    """Open a SOCKS5 CONNECT through proxy. Returns (sock, reply); when
    expect is not None the reply code must equal it."""
    s = open_client(proxy, timeout)
    try:
        handshake(s, timeout)
        s.sendall(request(host, port))
        r = read_reply(s, timeout)
    except BaseException:
        s.close()
        raise
    assert r.ver == 5 and r.rsv == 0, f"malformed reply {r.raw!r}"
    if expect is not None:
        assert r.rep == expect, (
            f"reply {r.rep:#04x} ({REP_NAME.get(r.rep)}), expected {expect:#04x} ({REP_NAME.get(expect)})"
        )
    return s, r


def expect_failure(sock: socket.socket, rep: int, timeout: float = IO_TIMEOUT) -> Reply:
    """Read a failure reply with code rep, then EOF with nothing after it."""
    r = read_reply(sock, timeout)
    assert r.ver == 5 and r.rsv == 0, f"malformed reply {r.raw!r}"
    assert r.rep == rep, f"reply {r.rep:#04x} ({REP_NAME.get(r.rep)}), expected {rep:#04x} ({REP_NAME.get(rep)})"
    rest, how = read_until_close(sock, timeout)
    assert rest == b"", f"bytes after the failure reply: {rest[:64]!r}"
    assert how == "eof", "ferry reset the connection after a failure reply instead of shutting it"
    return r


def expect_closed_silently(sock: socket.socket, timeout: float = IO_TIMEOUT) -> str:
    """The peer closes without sending anything. Returns "eof" or "reset"."""
    data, how = read_until_close(sock, timeout)
    assert data == b"", f"expected no reply, got {data[:64]!r}"
    return how


def echo_roundtrip(sock: socket.socket, payload: bytes, timeout: float = IO_TIMEOUT):
    sock.sendall(payload)
    got = recv_exact(sock, len(payload), timeout)
    assert got == payload, "echo returned different bytes"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- RFC 1929 username/password ------------------------------------------------

METHOD_NONE, METHOD_USERPASS, METHOD_NO_ACCEPTABLE = 0x00, 0x02, 0xFF
AUTH_OK, AUTH_FAIL = 0x00, 0x01


def _b(x) -> bytes:
    return x.encode() if isinstance(x, str) else bytes(x)


def userpass(user, password, ver: int = 1) -> bytes:
    """VER ULEN UNAME PLEN PASSWD (str or bytes; lengths as they are)."""
    u, p = _b(user), _b(password)
    return bytes([ver, len(u)]) + u + bytes([len(p)]) + p


def read_auth_status(sock: socket.socket, timeout: float = IO_TIMEOUT) -> int:
    r = recv_exact(sock, 2, timeout)
    assert r[0] == 1, f"auth status with VER {r[0]}: {r!r}"
    return r[1]


def auth_handshake(sock: socket.socket, user, password, timeout: float = IO_TIMEOUT) -> int:
    """Offer username/password, send the credentials; returns the status."""
    sock.sendall(greeting((METHOD_USERPASS,)))
    m = read_method(sock, timeout)
    assert m == METHOD_USERPASS, f"ferry chose method {m:#x}, expected 0x02"
    sock.sendall(userpass(user, password))
    return read_auth_status(sock, timeout)


def socks_connect_auth(proxy, user, password, host, port: int, timeout: float = IO_TIMEOUT,
                       source: str | None = None, expect: int | None = 0):
    """An authenticated CONNECT through proxy. Returns (sock, reply); the
    authentication must succeed, and when expect is not None the reply code
    must equal it."""
    s = open_client(proxy, timeout, source=source)
    try:
        st = auth_handshake(s, user, password, timeout)
        assert st == AUTH_OK, f"authentication as {user!r} refused (status {st:#x})"
        s.sendall(request(host, port))
        r = read_reply(s, timeout)
    except BaseException:
        s.close()
        raise
    assert r.ver == 5 and r.rsv == 0, f"malformed reply {r.raw!r}"
    if expect is not None:
        assert r.rep == expect, f"reply {r.rep:#04x} ({REP_NAME.get(r.rep)}), expected {expect:#04x}"
    return s, r


def expect_auth_refused(sock: socket.socket, timeout: float = IO_TIMEOUT) -> None:
    """Status 01 01, then EOF with nothing after it."""
    st = read_auth_status(sock, timeout)
    assert st == AUTH_FAIL, f"auth status {st:#x}, expected failure (0x01)"
    rest, how = read_until_close(sock, timeout)
    assert rest == b"", f"bytes after the auth failure: {rest[:64]!r}"
    assert how == "eof", "ferry reset the connection after the auth failure instead of closing it"


def passwd_line(name: str, password: str, plain: bool = False, ops: int | None = 1,
                mem: str | None = "8m") -> str:
    """A userlist line from `ferry passwd` (cheap Argon2id unless ops/mem are
    None, which leaves ferry's defaults)."""
    args = ["passwd"]
    if plain:
        args.append("--plain")
    else:
        if ops is not None:
            args += ["--ops", str(ops)]
        if mem is not None:
            args += ["--mem", mem]
    r = run_ferry(args + [name], input=password + "\n")
    assert r.rc == 0, f"ferry passwd {name}: rc={r.rc} {r.err}"
    line = r.out.strip()
    assert line.startswith(name + ":"), line
    return line

