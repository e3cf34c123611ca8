# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the operations end-to-end tests (metrics endpoint, service
integration, PROXY protocol, zero-downtime upgrade).

Everything is bounded as in ferrylib: every read has a deadline, every loop a
count or a deadline, every server binds a loopback address and is stopped by
its owner.

  metrics_addr              the endpoint's address, from ferry's log line
  http_exchange             one raw request to the endpoint, the whole response
  scrape / Exposition       GET /metrics, parsed into samples
  validate_exposition       a strict text-format 0.0.4 checker (problems list)
  promtool_check            `promtool check metrics` on a body, when $PROMTOOL
                            is an executable
  free_port                 a loopback port free at the time of the call
  NotifySocket              an sd_notify receiver (path or abstract address)
  listening_inodes          the LISTEN sockets a process holds (/proc)
  proxy_v1 / proxy_v2       PROXY protocol headers written by hand
  wait_until                poll a predicate with a deadline

Run as a script (`python3 opslib.py upgrade ...`) it is the self-contained
zero-downtime upgrade scenario that test_upgrade.py runs inside a private
network namespace (`unshare -n`); it prints one JSON object.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import ferrylib
from ferrylib import IO_TIMEOUT, Ferry

# ---- waiting -------------------------------------------------------------------


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


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (bound, then released)."""
    with socket.socket(ferrylib.family_of(host), socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


# ---- the metrics endpoint -------------------------------------------------------

METRICS_LOG_RE = re.compile(r"\bmetrics on http://(\[[0-9a-fA-F:.]+\]|[0-9.]+):(\d+)/metrics\s*$", re.M)


def metrics_addr(f: Ferry, timeout: float = 5.0) -> tuple[str, int]:
    m = f.wait_log(METRICS_LOG_RE.pattern, timeout=timeout)
    host = m.group(1)
    if host.startswith("["):
        host = host[1:-1]
    return host, int(m.group(2))


class HttpResponse(NamedTuple):
    status: int
    reason: str
    headers: dict  # lower-case name -> value (the last one)
    body: bytes
    raw: bytes


def parse_response(raw: bytes, head_request: bool = False) -> HttpResponse:
    head, sep, body = raw.partition(b"\r\n\r\n")
    assert sep, f"no complete response head: {raw[:300]!r}"
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"^HTTP/1\.[01] (\d{3}) (.*)$", lines[0])
    assert m, f"bad status line {lines[0]!r}"
    headers = {}
    for line in lines[1:]:
        k, colon, v = line.partition(":")
        assert colon, f"bad header line {line!r}"
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers and not head_request:
        n = int(headers["content-length"])
        assert len(body) == n, f"Content-Length {n} but {len(body)} body bytes"
    return HttpResponse(int(m.group(1)), m.group(2), headers, body, raw)


def http_exchange(addr, raw: bytes, timeout: float = IO_TIMEOUT, head_request: bool = False) -> HttpResponse:
    """Send raw to addr and read until the server closes (the endpoint
    answers with Connection: close)."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(raw)
        data, how = ferrylib.read_until_close(s, timeout)
    assert data, f"no response to {raw[:80]!r} (connection closed: {how})"
    return parse_response(data, head_request)


def http_get(addr, path: str, method: str = "GET", timeout: float = IO_TIMEOUT) -> HttpResponse:
    host = f"{addr[0]}:{addr[1]}"
    req = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: ferry-e2e\r\n\r\n".encode()
    return http_exchange(addr, req, timeout, head_request=method == "HEAD")


# ---- the exposition format -------------------------------------------------------

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LNAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_LVAL = r'"(?:[^"\\\n]|\\[\\"n])*"'
_NUM = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Inf|NaN"
_SAMPLE_RE = re.compile(rf"^({_NAME})(?:\{{((?:{_LNAME}={_LVAL})(?:,{_LNAME}={_LVAL})*)?\}})? ({_NUM})$")
_LABEL_RE = re.compile(rf"({_LNAME})=({_LVAL})")
_META_RE = re.compile(rf"^# (HELP|TYPE) ({_NAME})(?: (.*))?$")
_TYPES = ("counter", "gauge", "histogram")


def unescape_label(v: str) -> str:
    """A quoted label value (with its quotes) to its text."""
    out, i, s = [], 0, v[1:-1]
    while i < len(s):
        if s[i] == "\\":
            out.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels_key(labels: dict) -> tuple:
    return tuple(sorted(labels.items()))


class Sample(NamedTuple):
    name: str
    labels: dict
    value: float
    line: int


def validate_exposition(text: str) -> list[str]:
    """Every problem found in text, a /metrics body in the text format
    0.0.4, as strict as ferry's own output allows (empty: valid):
    each line is '# HELP name text', '# TYPE name counter|gauge|histogram'
    or 'name{label="value",...} value'; names and label names are valid and
    label values correctly escaped; values parse as floats; each family has
    exactly one HELP and one TYPE, both before its first sample, and its
    lines are contiguous; counters are named *_total and not negative;
    histograms have _bucket (with le, cumulative, ending in +Inf), _sum and
    _count (= the +Inf bucket) per label set; no sample repeats."""
    problems: list[str] = []
    if not text.endswith("\n"):
        problems.append("the body does not end with a newline")
    fams: dict[str, dict] = {}
    seen: set = set()
    order: list[str] = []  # families in the order their lines appear
    closed: set = set()
    current = None
    hist: dict[str, dict] = {}  # family -> {labels key: {"buckets": [(le, v)], "sum": v, "count": v}}

    def enter(fam: str, lineno: int):
        nonlocal current
        if fam == current:
            return
        if current is not None:
            closed.add(current)
        if fam in closed:
            problems.append(f"line {lineno}: family {fam} continues after other families' lines")
        current = fam
        if fam not in order:
            order.append(fam)

    for lineno, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        if line.startswith("#"):
            m = _META_RE.match(line)
            if not m:
                problems.append(f"line {lineno}: not a HELP or TYPE line: {line!r}")
                continue
            kind, name, rest = m.group(1), m.group(2), m.group(3) or ""
            enter(name, lineno)
            fam = fams.setdefault(name, {"help": None, "type": None, "samples": 0})
            if fam["samples"]:
                problems.append(f"line {lineno}: {kind} for {name} after its samples")
            if kind == "HELP":
                if fam["help"] is not None:
                    problems.append(f"line {lineno}: second HELP for {name}")
                if re.search(r"\\[^\\n]|\\$", rest):
                    problems.append(f"line {lineno}: bad escape in the HELP text of {name}: {rest!r}")
                if not rest.strip():
                    problems.append(f"line {lineno}: empty HELP text for {name}")
                fam["help"] = rest
            else:
                if fam["type"] is not None:
                    problems.append(f"line {lineno}: second TYPE for {name}")
                if rest not in _TYPES:
                    problems.append(f"line {lineno}: type {rest!r} of {name} is not one of {_TYPES}")
                if rest == "counter" and not name.endswith("_total"):
                    problems.append(f"line {lineno}: counter {name} does not end in _total")
                if rest == "histogram" and re.search(r"_(bucket|sum|count|total)$", name):
                    problems.append(f"line {lineno}: histogram name {name} has a reserved suffix")
                fam["type"] = rest
            continue
        m = _SAMPLE_RE.match(line)
        if not m:
            problems.append(f"line {lineno}: not a valid sample line: {line!r}")
            continue
        name, ltext, vtext = m.group(1), m.group(2) or "", m.group(3)
        labels: dict[str, str] = {}
        for lm in _LABEL_RE.finditer(ltext):
            if lm.group(1) in labels:
                problems.append(f"line {lineno}: label {lm.group(1)} twice")
            if lm.group(1).startswith("__"):
                problems.append(f"line {lineno}: reserved label name {lm.group(1)}")
            labels[lm.group(1)] = unescape_label(lm.group(2))
        value = float(vtext.replace("Inf", "inf").replace("NaN", "nan"))
        key = (name, _labels_key(labels))
        if key in seen:
            problems.append(f"line {lineno}: duplicate sample {line!r}")
        seen.add(key)
        # which family?
        fam_name = None
        if name in fams and fams[name]["type"] in ("counter", "gauge"):
            fam_name = name
        else:
            for suffix in ("_bucket", "_sum", "_count"):
                base = name[: -len(suffix)]
                if name.endswith(suffix) and base in fams and fams[base]["type"] == "histogram":
                    fam_name = base
                    break
        if fam_name is None:
            problems.append(f"line {lineno}: sample {name} has no HELP and TYPE before it")
            continue
        fam = fams[fam_name]
        if fam["help"] is None or fam["type"] is None:
            problems.append(f"line {lineno}: sample {name} before its family's HELP and TYPE")
        enter(fam_name, lineno)
        fam["samples"] += 1
        if fam["type"] == "counter" and not (value >= 0):
            problems.append(f"line {lineno}: counter {name} is {value}")
        if fam["type"] == "histogram":
            h = hist.setdefault(fam_name, {})
            if name.endswith("_bucket"):
                if "le" not in labels:
                    problems.append(f"line {lineno}: bucket without le: {line!r}")
                    continue
                rest = dict(labels)
                le_text = rest.pop("le")
                if not re.fullmatch(_NUM, le_text):
                    problems.append(f"line {lineno}: le={le_text!r} is not a number")
                    continue
                le = float(le_text.replace("Inf", "inf").replace("NaN", "nan"))
                h.setdefault(_labels_key(rest), {"buckets": [], "sum": None, "count": None})["buckets"].append(
                    (le, value, lineno))
            else:
                if "le" in labels:
                    problems.append(f"line {lineno}: le on {name}")
                slot = h.setdefault(_labels_key(labels), {"buckets": [], "sum": None, "count": None})
                slot["sum" if name.endswith("_sum") else "count"] = value
    for name, fam in fams.items():
        if fam["help"] is None:
            problems.append(f"family {name} has no HELP")
        if fam["type"] is None:
            problems.append(f"family {name} has no TYPE")
        if fam["samples"] == 0:
            problems.append(f"family {name} has no samples")
    for fam_name, sets in hist.items():
        for lkey, h in sets.items():
            what = f"{fam_name}{dict(lkey)}"
            b = h["buckets"]
            if not b:
                problems.append(f"{what}: no buckets")
                continue
            for (le0, v0, _), (le1, v1, ln) in zip(b, b[1:]):
                if not le1 > le0:
                    problems.append(f"line {ln}: {what}: le {le1} does not increase (after {le0})")
                if v1 < v0:
                    problems.append(f"line {ln}: {what}: bucket counts not cumulative ({v0} then {v1})")
            if not math.isinf(b[-1][0]) or b[-1][0] < 0:
                problems.append(f"{what}: last bucket is le={b[-1][0]}, not +Inf")
            if h["count"] is None:
                problems.append(f"{what}: no _count")
            elif h["count"] != b[-1][1]:
                problems.append(f"{what}: _count {h['count']} != +Inf bucket {b[-1][1]}")
            if h["sum"] is None:
                problems.append(f"{what}: no _sum")
    return problems


class Exposition:
    """A parsed /metrics body (validated separately)."""

    def __init__(self, text: str):
        self.text = text
        self.samples: list[Sample] = []
        self.types: dict[str, str] = {}
        for lineno, line in enumerate(text.splitlines(), 1):
            m = _META_RE.match(line)
            if m:
                if m.group(1) == "TYPE":
                    self.types[m.group(2)] = m.group(3)
                continue
            m = _SAMPLE_RE.match(line)
            if not m:
                continue
            labels = {lm.group(1): unescape_label(lm.group(2)) for lm in _LABEL_RE.finditer(m.group(2) or "")}
            self.samples.append(Sample(m.group(1), labels,
                                       float(m.group(3).replace("Inf", "inf").replace("NaN", "nan")), lineno))

    def find(self, name: str, **labels) -> list[Sample]:
        """Samples of name whose labels include labels."""
        return [s for s in self.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def get(self, name: str, **labels) -> float:
        """The value of the one sample of name with exactly these labels."""
        hits = [s for s in self.samples if s.name == name and s.labels == labels]
        assert len(hits) == 1, f"{len(hits)} samples {name}{labels}; have: {[s for s in self.samples if s.name == name]}"
        return hits[0].value

    def total(self, name: str, **labels) -> float:
        return sum(s.value for s in self.find(name, **labels))


def scrape(addr, timeout: float = IO_TIMEOUT) -> Exposition:
    r = http_get(addr, "/metrics", timeout=timeout)
    assert r.status == 200, f"GET /metrics: {r.status} {r.reason}: {r.body[:300]!r}"
    return Exposition(r.body.decode())


def promtool_path() -> str | None:
    p = os.environ.get("PROMTOOL")
    return p if p and os.path.isfile(p) and os.access(p, os.X_OK) else None


def promtool_check(text: str, timeout: float = 30.0) -> tuple[int, str] | None:
    """(exit status, output) of `promtool check metrics` fed text, or None
    when $PROMTOOL is not an executable file."""
    p = promtool_path()
    if not p:
        return None
    r = subprocess.run([p, "check", "metrics"], input=text.encode(), capture_output=True, timeout=timeout)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


# ---- sd_notify ---------------------------------------------------------------------


class NotifySocket:
    """A datagram socket ferry's sd_notify writes to: a path, or an abstract
    name (NOTIFY_SOCKET=@name)."""

    def __init__(self, path: str | None = None, abstract: str | None = None):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract is not None:
            self.sock.bind("\0" + abstract)
            self.env_value = "@" + abstract
        else:
            self.sock.bind(path)
            self.env_value = path
        self.messages: list[str] = []

    def recv(self, timeout: float = 5.0) -> str:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(4096)
        except socket.timeout:
            raise AssertionError(f"no sd_notify message within {timeout}s (had: {self.messages})") from None
        msg = data.decode()
        self.messages.append(msg)
        return msg

    def pending(self) -> list[str]:
        """Whatever has arrived already, without waiting."""
        out = []
        self.sock.setblocking(False)
        try:
            for _ in range(100):
                try:
                    out.append(self.sock.recv(4096).decode())
                except BlockingIOError:
                    break
        finally:
            self.sock.setblocking(True)
        self.messages += out
        return out

    def close(self):
        self.sock.close()


def notify_fields(msg: str) -> dict:
    out = {}
    for line in msg.split("\n"):
        k, sep, v = line.partition("=")
        assert sep, f"sd_notify line without '=': {line!r} in {msg!r}"
        out[k] = v
    return out


# ---- /proc -----------------------------------------------------------------------------


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", target)
        if m:
            out.add(m.group(1))
    return out


def listening_inodes(pid: int) -> set[str]:
    """The TCP sockets in LISTEN state that pid holds (IPv4 and IPv6)."""
    mine = _socket_inodes(pid)
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and f[9] in mine:
                found.add(f[9])
    return found


def proc_ids(status_text: str) -> dict:
    """Uid, Gid (4 numbers each) and Groups of a /proc/.../status file."""
    out = {}
    for line in status_text.splitlines():
        k, _, v = line.partition(":")
        if k in ("Uid", "Gid", "Groups"):
            out[k] = [int(x) for x in v.split()]
    return out


# ---- PROXY protocol ---------------------------------------------------------------------

PROXY_V2_SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def proxy_v1(src: str, sport: int, dst: str, dport: int) -> bytes:
    fam = "TCP6" if ":" in src else "TCP4"
    return f"PROXY {fam} {src} {dst} {sport} {dport}\r\n".encode()


def proxy_v2(src: str, sport: int, dst: str, dport: int, tlvs: bytes = b"") -> bytes:
    """A v2 PROXY command over TCP (IPv4 or IPv6), with optional raw TLVs."""
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    fam = 0x11 if s.version == 4 else 0x21
    body = s.packed + d.packed + struct.pack(">HH", sport, dport) + tlvs
    return PROXY_V2_SIG + bytes([0x21, fam]) + struct.pack(">H", len(body)) + body


def proxy_v2_local() -> bytes:
    """A v2 LOCAL command (health check style): no addresses."""
    return PROXY_V2_SIG + bytes([0x20, 0x00]) + struct.pack(">H", 0)


# ---- the upgrade scenario (run as a script inside `unshare -n`) ----------------------


def _scenario_client(addr, echo_addr, payload: bytes, timeout: float) -> None:
    s = socket.create_connection(addr, timeout=timeout)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ferrylib.handshake(s, timeout)
        s.sendall(ferrylib.request(*echo_addr))
        r = ferrylib.read_reply(s, timeout)
        if r.rep != 0:
            raise RuntimeError(f"SOCKS5 reply {r.rep:#x}")
        s.sendall(payload)
        got = ferrylib.recv_exact(s, len(payload), timeout)
        if got != payload:
            raise RuntimeError("echo returned other bytes")
        s.shutdown(socket.SHUT_WR)
        rest, _ = ferrylib.read_until_close(s, timeout)
        if rest:
            raise RuntimeError("bytes after the echo")
    finally:
        s.close()


def _error_kind(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno:
        import errno as errno_mod

        return errno_mod.errorcode.get(e.errno, str(e.errno))
    return f"{type(e).__name__}: {e}"[:200]


def upgrade_scenario(ferry_bin: str, workdir: Path, load_seconds: float, threads: int, long_mb: int) -> dict:
    """Ferry A serves a steady load; ferry B starts on the same port; A gets
    SIGTERM and drains; the load goes on. Returns the counts."""
    result: dict = {"attempted": 0, "ok": 0, "failures": {}, "failure_samples": [], "events": []}
    t0 = time.monotonic()

    def event(what):
        result["events"].append([round(time.monotonic() - t0, 3), what])

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
    Path("/proc/sys/net/ipv4/tcp_migrate_req").write_text("1\n")
    result["tcp_migrate_req"] = Path("/proc/sys/net/ipv4/tcp_migrate_req").read_text().strip()
    echo = ferrylib.EchoServer("127.0.0.1")
    port = free_port()
    conf = workdir / "upgrade.conf"
    conf.write_text(
        f"listen = 127.0.0.1:{port}\nworkers = 2\nhandshake_timeout = 5s\nconnect_timeout = 5s\n"
        "shutdown_timeout = 30s\nbacklog = 1024\n"
    )
    procs: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}

    def start(name):
        logs[name] = workdir / f"ferry-{name}.log"
        out = open(logs[name], "wb")
        upgrade = ["--upgrade"] if name != "A" else []  # B takes over A's port
        procs[name] = subprocess.Popen(ferrylib._pdeathsig_prefix() + [ferry_bin, "serve", "-c", str(conf),
                                                                        *upgrade],
                                       stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=out, env=ferrylib.ferry_env())
        out.close()

    def wait_log(name, pattern, timeout=15.0):
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if rx.search(logs[name].read_text(errors="replace")):
                return True
            if procs[name].poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"ferry {name}: no {pattern!r}:\n{logs[name].read_text(errors='replace')[-3000:]}")

    stop = threading.Event()
    lock = threading.Lock()
    addr = ("127.0.0.1", port)
    payload = os.urandom(1024)

    def load():
        for _ in range(100000):
            if stop.is_set():
                return
            with lock:
                result["attempted"] += 1
            try:
                _scenario_client(addr, echo.addr, payload, 10.0)
            except Exception as e:  # counted and reported
                k = _error_kind(e)
                with lock:
                    result["failures"][k] = result["failures"].get(k, 0) + 1
                    if len(result["failure_samples"]) < 10:
                        result["failure_samples"].append([round(time.monotonic() - t0, 3), k])
            else:
                with lock:
                    result["ok"] += 1

    # the long transfer: half before the swap, half after A was told to stop
    swapped = threading.Event()
    long_total = long_mb << 20
    long_res = {"sent": 0, "verified": 0, "error": None}

    def long_transfer():
        try:
            s = socket.create_connection(addr, timeout=10)
            with s:
                ferrylib.handshake(s, 10)
                s.sendall(ferrylib.request(*echo.addr))
                r = ferrylib.read_reply(s, 10)
                if r.rep != 0:
                    raise RuntimeError(f"SOCKS5 reply {r.rep:#x}")
                block = os.urandom(1 << 16)
                reader_err = []

                def reader():
                    got = 0
                    deadline = time.monotonic() + 60
                    try:
                        while got < long_total and time.monotonic() < deadline:
                            s.settimeout(max(0.1, deadline - time.monotonic()))
                            data = s.recv(1 << 20)
                            if not data:
                                break
                            # the stream is block repeated: check each byte
                            off = got % len(block)
                            view = memoryview(data)
                            i = 0
                            while i < len(view):
                                n = min(len(block) - off, len(view) - i)
                                if view[i : i + n] != block[off : off + n]:
                                    raise RuntimeError(f"byte mismatch near offset {got + i}")
                                i += n
                                off = 0
                            got += len(data)
                    except Exception as e:  # reported
                        reader_err.append(_error_kind(e))
                    long_res["verified"] = got

                rt = threading.Thread(target=reader, daemon=True)
                rt.start()
                half = long_total // 2
                while long_res["sent"] < half:
                    s.sendall(block)
                    long_res["sent"] += len(block)
                event("long transfer: first half sent")
                if not swapped.wait(30):
                    raise RuntimeError("the swap did not happen")
                while long_res["sent"] < long_total:
                    s.sendall(block)
                    long_res["sent"] += len(block)
                event("long transfer: all sent")
                rt.join(60)
                if reader_err:
                    raise RuntimeError(reader_err[0])
        except Exception as e:  # reported
            long_res["error"] = _error_kind(e)

    try:
        start("A")
        wait_log("A", r"ready:")
        event("A ready")
        workers = [threading.Thread(target=load, daemon=True) for _ in range(threads)]
        for t in workers:
            t.start()
        lt = threading.Thread(target=long_transfer, daemon=True)
        lt.start()
        time.sleep(load_seconds * 0.3)
        start("B")
        wait_log("B", r"ready:")
        event("B ready")
        time.sleep(load_seconds * 0.2)
        procs["A"].send_signal(15)
        wait_log("A", r"SIGTERM: stopping")
        event("A got SIGTERM")
        with lock:
            result["attempted_at_sigterm"] = result["attempted"]
        swapped.set()
        time.sleep(load_seconds * 0.5)
        stop.set()
        for t in workers:
            t.join(30)
        event("load stopped")
        lt.join(90)
        event("long transfer done")
        result["long"] = {"total": long_total, **long_res}
        try:
            rc_a = procs["A"].wait(30)
        except subprocess.TimeoutExpired:
            rc_a = "timeout"
        result["a_exit"] = rc_a
        event("A exited")
        # B serves on alone
        try:
            _scenario_client(addr, echo.addr, b"after the upgrade", 10.0)
            result["b_serves"] = True
        except Exception as e:  # reported
            result["b_serves"] = _error_kind(e)
        result["b_alive"] = procs["B"].poll() is None
    finally:
        stop.set()
        swapped.set()
        for name, p in procs.items():
            if p.poll() is None:
                p.send_signal(15)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        result["exit"] = {name: p.returncode for name, p in procs.items()}
        result["logs"] = {name: path.read_text(errors="replace")[-4000:] for name, path in logs.items()}
        echo.stop()
    for name, path in logs.items():
        m = re.search(r"stopped: (\d+) connections accepted", path.read_text(errors="replace"))
        result.setdefault("accepted", {})[name] = int(m.group(1)) if m else None
    result["sanitizer"] = {name: ferrylib.sanitizer_findings(path.read_text(errors="replace"))
                           for name, path in logs.items()}
    return result


def _main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("upgrade")
    up.add_argument("--ferry", required=True)
    up.add_argument("--workdir", required=True)
    up.add_argument("--seconds", type=float, default=3.0)
    up.add_argument("--threads", type=int, default=4)
    up.add_argument("--long-mb", type=int, default=4)
    args = ap.parse_args(argv)
    res = upgrade_scenario(args.ferry, Path(args.workdir), args.seconds, args.threads, args.long_mb)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
