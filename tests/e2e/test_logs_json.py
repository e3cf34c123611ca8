# SPDX-License-Identifier: BSD-2-Clause
"""Structured logs (issue 22): log_format = json, the syslog target
(RFC 5424 over a unix datagram socket and UDP), a syslog target that is
absent, and log_session_start.

Every line of the log of a run with SOCKS5, HTTP CONNECT, UDP, failed
authentications and client-supplied names carrying bytes 0x01 and 0xff must
parse with json.loads, with the documented field names and types."""

import base64
import json
import os
from pathlib import Path
import re
import socket
import time

import pytest

import ferrylib
from ferrylib import (
    IO_TIMEOUT,
    Ferry,
    auth_handshake,
    open_client,
    passwd_line,
    read_reply,
    request,
    socks_connect_auth,
)
from udplib import UdpAssoc, UdpEcho, encode_udp

USER, PASSWORD = "alice", "s3cret"

# The access line's members and their JSON types (docs/operations.md "Logs").
ACCESS_TYPES = {
    "time": str, "level": str, "msg": str, "id": int, "client": str, "user": str,
    "cmd": str, "dst": str, "addr": str, "up": int, "down": int, "ms": int,
    "reply": str, "end": str,
}
ACCESS_OPTIONAL = {"err": str, "rule": str, "via": str, "proto": str, "dgrams": list,
                   "truncated": bool}
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        assert line, "an empty log line"
        obj = json.loads(line)  # every line, not only the access ones
        assert isinstance(obj, dict), line
        assert TIME_RE.match(obj["time"]), line
        assert obj["level"] in ("debug", "info", "warn", "error"), line
        assert isinstance(obj["msg"], str), line
        out.append(obj)
    return out


def start_json(ferry, raw: str) -> Ferry:
    """ferry with a raw config whose log is JSON: the listeners come from the
    'listening on' messages (ferrylib's reader expects text lines)."""
    f = ferry(raw_config=raw, listens=(), wait_ready=False)
    deadline = time.monotonic() + ferrylib.READY_TIMEOUT
    while True:
        text = f.log_text()
        if ' ready: ' in text:
            break
        assert f.proc.poll() is None, f"ferry exited: {f.stderr_text()}"
        assert time.monotonic() < deadline, f"not ready: {text}"
        time.sleep(0.02)
    for obj in json_lines(text):
        m = re.match(r"listening on ([0-9.]+):(\d+)$", obj["msg"])
        if m:
            f.listeners.append(ferrylib.Listener(m.group(1), int(m.group(2)), socket.AF_INET))
    assert f.listeners
    return f


def wait_for(pred, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def socks_name_request(name: bytes, port: int) -> bytes:
    return bytes([5, 1, 0, 3, len(name)]) + name + port.to_bytes(2, "big")


def http_connect(proxy, target: str, auth: str | None) -> bytes:
    s = open_client(proxy, IO_TIMEOUT)
    with s:
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if auth:
            head += "Proxy-Authorization: Basic " + base64.b64encode(auth.encode()).decode() + "\r\n"
        s.sendall(head.encode() + b"\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        if data.startswith(b"HTTP/1.1 200"):
            s.sendall(b"ping")
            got = b""
            while len(got) < 4:
                chunk = s.recv(16)
                if not chunk:
                    break
                got += chunk
            assert got == b"ping"
        return data.split(b"\r\n", 1)[0]


def test_json_log_every_line_parses(tmp_path, echo_server, ferry):
    (tmp_path / "users").write_text(passwd_line(USER, PASSWORD) + "\n")
    raw = (
        "workers = 1\nhandshake_timeout = 3s\nlog_format = json\naccess_log = yes\n"
        "log_level = debug\nprotocols = socks5,http\n"
        f"listen = 127.0.0.1:0\n[auth]\nuserlist = {tmp_path / 'users'}\n"
    )
    f = start_json(ferry, raw)
    # SOCKS5, authenticated, to the echo server
    s, _ = socks_connect_auth(f.addr, USER, PASSWORD, *echo_server.addr)
    with s:
        s.sendall(b"hello")
        assert s.recv(16) == b"hello"
    # HTTP CONNECT with and without credentials
    assert http_connect(f.addr, "%s:%d" % echo_server.addr, f"{USER}:{PASSWORD}").startswith(
        b"HTTP/1.1 200")
    assert http_connect(f.addr, "%s:%d" % echo_server.addr, None).startswith(b"HTTP/1.1 407")
    # An HTTP CONNECT to a name with bytes 0x01 and 0xff
    http_connect(f.addr, "a\x01b\xff.invalid:80", f"{USER}:{PASSWORD}")
    # Authentication failures, one with a user name of bytes 0x01 and 0xff
    for user in (b"alice", b"ev\x01l\xff\"\\"):
        c = open_client(f.addr, IO_TIMEOUT)
        with c:
            c.sendall(b"\x05\x01\x02")
            c.recv(2)
            c.sendall(bytes([1, len(user)]) + user + bytes([5]) + b"wrong")
            c.recv(2)
    # SOCKS5 CONNECT to a name with bytes 0xff (and 0x01: refused as bad)
    for name in (b"caf\xff\xfe.invalid", b"x\x01y.invalid"):
        c = open_client(f.addr, IO_TIMEOUT)
        with c:
            assert auth_handshake(c, USER, PASSWORD, IO_TIMEOUT) == 0
            c.sendall(socks_name_request(name, 80))
            read_reply(c, IO_TIMEOUT)
    # UDP
    t = UdpEcho()
    try:
        with UdpAssoc(f.addr, auth=(USER, PASSWORD)) as a:
            a.udp.sendto(encode_udp(*t.addr, b"dgram"), a.relay)
            assert t.wait_count(1)
    finally:
        t.stop()
    wait_for(lambda: sum(1 for o in json_lines(f.log_text()) if o["msg"] == "access") >= 8,
             "8 access lines")
    f.stop()
    objs = json_lines(f.log_text())
    access = [o for o in objs if o["msg"] == "access"]
    for o in access:
        for k, t in ACCESS_TYPES.items():
            assert isinstance(o.get(k), t), f"{k}: {o}"
        for k in o:
            assert k in ACCESS_TYPES or k in ACCESS_OPTIONAL, f"undocumented member {k}: {o}"
            if k in ACCESS_OPTIONAL:
                assert isinstance(o[k], ACCESS_OPTIONAL[k]), f"{k}: {o}"
        assert o["level"] == "info"
    cmds = {o["cmd"] for o in access}
    assert {"connect", "CONNECT", "udp"} <= cmds, cmds
    assert any(o["user"] == USER and o["up"] == 5 and o["down"] == 5 for o in access)
    # the replaced bytes: U+FFFD where 0xff was, never a raw byte
    raw_text = f.log_text()
    assert "\\u0001" in raw_text or "\\ufffd" in raw_text
    assert any("\ufffd" in (o["dst"] + o["user"]) for o in access), access
    assert all(ord(ch) >= 0x20 for ch in raw_text.replace("\n", "")), "a raw control byte"


def test_text_log_keeps_its_shape(ferry, echo_server):
    """The same field list, rendered as text: today's key=value line."""
    f = ferry(config={"access_log": "yes"})
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        s.sendall(b"abc")
        assert s.recv(8) == b"abc"
    e = f.access_for(client)
    assert e["cmd"] == "connect" and e["up"] == "3" and e["down"] == "3" and e["reply"] == "succeeded"
    line = [l for l in f.log_text().splitlines() if "access id=" in l][-1]
    assert re.search(r" access id=\d+ client=\S+ user=- cmd=connect dst=\S+ addr=\S+ up=3 down=3 "
                     r"ms=\d+ reply=succeeded end=\S+", line), line


# ---- syslog ---------------------------------------------------------------

SYSLOG_RE = re.compile(
    r"^<(\d{1,3})>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) ferry (\d+) (\S+) - (.*)$", re.S)


class DgramSink:
    def __init__(self, family, addr):
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind(addr)
        self.sock.settimeout(0.2)
        self.msgs: list[str] = []

    def drain(self, until, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while not until(self.msgs):
            assert time.monotonic() < deadline, f"syslog: got {self.msgs[-10:]}"
            try:
                self.msgs.append(self.sock.recv(65536).decode())
            except socket.timeout:
                pass

    def close(self):
        self.sock.close()


def syslog_run(tmp_path, ferry, echo_server, address: str, sink: DgramSink, fmt: str):
    f = ferry(config={"access_log": "yes", "log_target": "syslog", "syslog_address": address,
                      "syslog_facility": "local3", "log_format": fmt}, wait_ready=False)
    sink.drain(lambda m: any("ready:" in x for x in m))
    port = None
    for m in sink.msgs:
        hit = re.search(r"listening on 127\.0\.0\.1:(\d+)", m)
        if hit:
            port = int(hit.group(1))
    s, _ = ferrylib.socks_connect(("127.0.0.1", port), *echo_server.addr)
    with s:
        s.sendall(b"x")
        assert s.recv(4) == b"x"
    sink.drain(lambda m: any(" access " in x for x in m))
    for m in sink.msgs:
        g = SYSLOG_RE.match(m)
        assert g, f"not RFC 5424: {m!r}"
        pri, pid, msgid, body = int(g.group(1)), int(g.group(4)), g.group(5), g.group(6)
        assert pri >> 3 == 19, m  # local3
        assert pid == f.proc.pid
        assert not body.endswith("\n")
        if fmt == "json":
            obj = json.loads(body)
            access = obj["msg"] == "access"
            sev = {"debug": 7, "info": 6, "warn": 4, "error": 3}[obj["level"]]
        else:
            access = body.startswith("access ")
            sev = 6 if access or "ready:" in body or "listening" in body else pri & 7
        assert msgid == ("access" if access else "-"), m
        assert pri & 7 == sev, m
    f.stop()
    return f


def test_syslog_unix_socket(tmp_path, ferry, echo_server):
    path = str(tmp_path / "log.sock")
    sink = DgramSink(socket.AF_UNIX, path)
    try:
        syslog_run(tmp_path, ferry, echo_server, path, sink, "text")
    finally:
        sink.close()


def test_syslog_udp(tmp_path, ferry, echo_server):
    sink = DgramSink(socket.AF_INET, ("127.0.0.1", 0))
    try:
        port = sink.sock.getsockname()[1]
        syslog_run(tmp_path, ferry, echo_server, f"udp://127.0.0.1:{port}", sink, "json")
    finally:
        sink.close()


def test_syslog_absent_does_not_block(tmp_path, ferry, echo_server):
    """No socket at the address: sessions go on, the loss is counted (the
    metric) and reported on stderr."""
    cfg = {"access_log": "yes", "log_target": "syslog",
           "syslog_address": str(tmp_path / "nobody.sock")}
    f = ferry(config=cfg, wait_ready=False, listens=("127.0.0.1:0",))
    wait_for(lambda: "not delivered to syslog" in f.stderr_text(), "the report on stderr")
    # The port is not in any log: find it from /proc.
    port = wait_for(lambda: listening_port(f.proc.pid), "a listening port")
    for _ in range(50):
        s, _ = ferrylib.socks_connect(("127.0.0.1", port), *echo_server.addr, timeout=3.0)
        with s:
            s.sendall(b"y")
            assert s.recv(4) == b"y"
    f.stop()
    assert re.search(r"log: \d+ records not delivered to syslog \(No such file or directory\)",
                     f.stderr_text()), f.stderr_text()


def listening_port(pid: int):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    with open(f"/proc/{pid}/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:
                return int(parts[1].split(":")[1], 16)
    return None


# ---- log_session_start ----------------------------------------------------

def test_session_start_line_before_end(ferry, echo_server):
    f = ferry(config={"access_log": "yes", "log_session_start": "yes"})
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
        want = f"client={client[0]}:{client[1]} "
        m = f.wait_log(r"\baccess-start id=\d+ " + re.escape(want) + r"user=- cmd=connect dst=\S+ addr=\S+")
        assert "up=" not in m.group(0)
        # the session is still open: no access line for it yet
        assert not [l for l in f.log_text().splitlines() if " access id=" in l and want in l]
        s.sendall(b"z")
        assert s.recv(4) == b"z"
    e = f.access_for(client)
    assert e["reply"] == "succeeded"


def test_session_start_off_by_default(ferry, echo_server):
    f = ferry(config={"access_log": "yes"})
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr)
    with s:
        client = s.getsockname()
    f.access_for(client)
    assert "access-start" not in f.log_text()


def test_session_start_udp_association(ferry):
    f = ferry(config={"access_log": "yes", "log_session_start": "yes", "log_format": "text"})
    with UdpAssoc(f.addr) as a:
        c = a.ctl.getsockname()
        f.wait_log(rf"\baccess-start id=\d+ client={re.escape(c[0])}:{c[1]} user=- cmd=udp ")
    f.access_for(c)


def test_log_keys_checked(tmp_path):
    cfg = tmp_path / "bad.conf"
    cfg.write_text("listen = 127.0.0.1:0\nlog_format = xml\nlog_target = file\n"
                   "syslog_address = tcp://127.0.0.1:514\nsyslog_facility = local9\n")
    r = ferrylib.run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0
    for want in (f"{cfg}:2: log_format: 'xml' is not a log format (expected text or json)",
                 f"{cfg}:3: log_target: 'file' needs log_file = PATH",
                 f"{cfg}:4: syslog_address: 'tcp://127.0.0.1:514' is not a syslog address",
                 f"{cfg}:5: syslog_facility: 'local9' is not a syslog facility"):
        assert want in r.err, r.text


def test_log_format_follows_reload(ferry, echo_server):
    import signal
    f = ferry(config={"access_log": "yes"})
    text = f.config_path.read_text()
    f.config_path.write_text(text + "log_format = json\n")
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r'"msg":"reload: configuration applied', start=off)
    s, _ = ferrylib.socks_connect(f.addr, *echo_server.addr)
    s.close()
    m = f.wait_log(r'^\{.*"msg":"access".*\}$', start=off)
    assert json.loads(m.group(0))["cmd"] == "connect"
