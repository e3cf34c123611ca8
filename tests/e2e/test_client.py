# SPDX-License-Identifier: BSD-2-Clause
"""`ferry client URL REMOTE...` against a real `ferry serve` with a tls://
listener and an [auth] userlist (a certificate made here, pinned), and
forward= listeners. Covers: curl and PySocks through a `PORT:socks` remote
(10 MiB each way with integrity, a half-close crossing the tunnel), a port
forward (integrity; bytes sent, and an EOF, before the tunnel's CONNECT
finished are not lost), stdio:HOST:PORT as a subprocess (integrity, exit 0
on EOF; the target unreachable: exit 1 and one line on stderr), ssh with
ProxyCommand to a local sshd (skipped without openssh-server), a wrong
pin, a wrong password and a server that is not running (the SOCKS/HTTP
error, the log names the reason), the command line's refusals (http://,
R:.../udp, stdio with /udp, duplicates), --print-config read back by --check, and forward=
config errors naming FILE:LINE."""

import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from certlib import OPENSSL, make_cert, pin_of
from clientlib import PASSWORD, Client, exchange, server_files, socks, socks_sock
from ferrylib import (
    FerryFactory,
    SinkThenReplyServer,
    ferry_bin,
    ferry_env,
    read_until_close,
    run_ferry,
    _pdeathsig_prefix,
)
from opslib import free_port, http_get

MiB = 1024 * 1024
CURL = shutil.which("curl")
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
SSH = shutil.which("ssh")
SSH_KEYGEN = shutil.which("ssh-keygen")

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL,
                                reason="openssl and curl are needed (make deps-test)")

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The ferry server: tls:// on loopback, [auth] with user alice."""
    d = tmp_path_factory.mktemp("client")
    cert, key = server_files(d)
    (d / "wrong.auth").write_text("alice:not-the-password\n")
    factory = FerryFactory(d)
    srv = factory(listens=("tls://127.0.0.1:0",), auth={"userlist": "users.txt"},
                  extra=f"[tls]\ncert = {cert}\nkey = {key}\n")
    yield {"dir": d, "srv": srv, "pin": pin_of(cert), "url": f"https://127.0.0.1:{srv.port}",
           "auth": d / "alice.auth", "wrong": d / "wrong.auth", "stranger": make_cert(d, "x")[0]}
    findings = factory.finalize()
    assert not findings, findings


@pytest.fixture
def client(server):
    started = []

    def start(*remotes, auth=None, pin=None, extra=()):
        args = [server["url"], "--pin", pin or server["pin"], "--auth-file",
                str(auth or server["auth"]), *extra, *remotes]
        c = Client(server["dir"], args)
        started.append(c)
        c.wait_log(r"ready:")
        return c

    yield start
    for c in started:
        c.stop()


# ---- SOCKS and HTTP through the tunnel -------------------------------------------------


@pytest.mark.skipif(socks is None, reason="PySocks (python3-socks) is needed")
def test_socks_remote_curl_pysocks_10mib_and_half_close(server, client, echo_server, http_server,
                                                        tcp_server):
    port = free_port()
    c = client(f"{port}:socks")
    # curl: SOCKS5 with a remote name, and the same port as an HTTP proxy.
    big = hashlib.sha256((http_server.directory / "big.bin").read_bytes()).hexdigest()
    for proxy in (f"socks5h://localhost:{port}", f"http://127.0.0.1:{port}"):
        r = subprocess.run([CURL, "-sS", "--max-time", "60", "-x", proxy,
                            f"http://127.0.0.1:{http_server.port}/big.bin"],
                           capture_output=True, timeout=90)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(r.stdout).hexdigest() == big, proxy
    # PySocks: 10 MiB to an echo and back.
    s = socks_sock(port)
    s.connect(echo_server.addr)
    with s:
        sent, got, n, how = exchange(s, 10 * MiB, seed=17)
    assert n == 10 * MiB and sent == got and how == "eof"
    # Half-close: the client's EOF crosses the tunnel, the reply comes back whole.
    sink = tcp_server(SinkThenReplyServer, reply_size=512 * 1024)
    s = socks_sock(port)
    s.connect(sink.addr)
    with s:
        SinkThenReplyServer.check_half_close(s, random.Random(5).randbytes(2 * MiB), 512 * 1024)
    c.wait_log(rf"cmd=connect dst=127.0.0.1:{echo_server.port} .*reply=succeeded end=done.* via=tunnel")
    server["srv"].wait_log(rf"user=alice cmd=CONNECT dst=127.0.0.1:{echo_server.port} ")


# ---- port forwards --------------------------------------------------------------------


def test_port_forward_integrity_and_early_bytes(server, client, echo_server, tcp_server):
    port, port2 = free_port(), free_port()
    sink = tcp_server(SinkThenReplyServer, reply_size=1024)
    c = client(f"{port}:127.0.0.1:{echo_server.port}", f"127.0.0.1:{port2}:localhost:{sink.port}")
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    with s:
        sent, got, n, how = exchange(s, 4 * MiB, seed=23)
    assert n == 4 * MiB and sent == got and how == "eof"
    # Bytes and the EOF right after connect(): the tunnel's TLS handshake
    # and CONNECT have not even started; nothing is lost.
    payload = random.Random(8).randbytes(300_000)
    s = socket.create_connection(("127.0.0.1", port2), timeout=30)
    with s:
        SinkThenReplyServer.check_half_close(s, payload, 1024, timeout=30)
    c.wait_log(rf"cmd=forward dst=localhost:{sink.port} .*up={len(payload)} .*reply=succeeded "
               r"end=done.* via=tunnel")


def test_hard_closes_keep_the_tunnel_connection(server, client, echo_server):
    """Local clients that close hard (RST) after their answer cost the
    tunnel nothing: each such session ends its stream with RST_STREAM, and
    nghttp2's own Rapid Reset guard (1,000, then 33 a second, counting every
    RST_STREAM) used to tear the tunnel down with GOAWAY about every 1,000
    sessions, failing the sessions caught in the hand-over (`ferry bench
    handshakes --tunnel h2`). 1,500 sessions (8 at a time, well over 33/s),
    all answered, one tunnel connection throughout."""
    port = free_port()
    c = client(f"{port}:127.0.0.1:{echo_server.port}")
    linger = struct.pack("ii", 1, 0)
    errors = []

    def worker(n):
        try:
            for i in range(n):
                with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                    s.sendall(b"z")
                    assert s.recv(1) == b"z"
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(1500 // 8,)) for _ in range(8)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    took = time.monotonic() - t0
    assert not errors, errors[:5]
    c.wait_log(r"cmd=forward .*end=client-error")
    opened = re.findall(r"tunnel-open tunnel=", c.text())
    assert len(opened) == 1 and "end=goaway" not in c.text(), (took, c.text()[-3000:])

def test_forward_listener_follows_rules(ferry, echo_server):
    """ferry serve alone: a forward= session meets [rules] like a SOCKS
    CONNECT (denied: the client's connection is reset, the access log says
    why)."""
    f = ferry(config={"listen": f"127.0.0.1:0 forward=127.0.0.1:{echo_server.port}"}, listens=(),
              extra=f"[rules]\ndeny cmd connect to 127.0.0.1 port {echo_server.port}\n")
    # The deny needs no lookup, so the reset can come before connect()
    # returns (SO_ERROR), during the send, or at the read.
    with pytest.raises((ConnectionResetError, BrokenPipeError)):
        with socket.create_connection(f.addr, timeout=10) as s:
            s.sendall(b"x")
            s.recv(10)
    f.wait_log(rf"cmd=forward dst=127.0.0.1:{echo_server.port} .*reply=not-allowed end=denied "
               r"rule=")


def test_forward_listener_behind_proxy_protocol(ferry, echo_server):
    """proxy_protocol= then forward=: the header's client is the session's,
    the bytes after it go to the target."""
    f = ferry(config={"listen": f"127.0.0.1:0 proxy_protocol=v1 forward=127.0.0.1:{echo_server.port}",
                      "proxy_protocol_from": "127.0.0.1"}, listens=())
    s = socket.create_connection(f.addr, timeout=10)
    with s:
        s.sendall(b"PROXY TCP4 192.0.2.7 127.0.0.1 4242 80\r\nhello through")
        s.shutdown(socket.SHUT_WR)
        data, how = read_until_close(s, timeout=10)
    assert data == b"hello through" and how == "eof"
    f.wait_log(rf"client=192\.0\.2\.7:4242 user=- cmd=forward dst=127\.0\.0\.1:{echo_server.port} "
               r".*reply=succeeded end=done")


# ---- stdio ----------------------------------------------------------------------------


def run_client(server, args, data: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(_pdeathsig_prefix() + [ferry_bin(), "client", server["url"], "--pin",
                                                 server["pin"], "--auth-file", str(server["auth"]),
                                                 "-w", "1", *args],
                          input=data, capture_output=True, timeout=timeout, env=ferry_env())


def test_stdio_integrity_and_exit(server, echo_server):
    data = random.Random(11).randbytes(3 * MiB)
    r = run_client(server, [f"stdio:127.0.0.1:{echo_server.port}"], data)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(data).hexdigest()
    assert r.stderr == b"", r.stderr  # warnings only, and there are none


def test_stdio_unreachable_target_fails(server):
    closed = free_port()
    r = run_client(server, [f"stdio:127.0.0.1:{closed}"], b"hello")
    assert r.returncode == 1
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and f"stdio:127.0.0.1:{closed}" in lines[0], lines


@pytest.mark.skipif(not (SSHD and SSH and SSH_KEYGEN and os.geteuid() == 0),
                    reason="openssh-server (sshd), ssh and root are needed")
def test_stdio_ssh_proxycommand(server, tmp_path):
    """ssh -o ProxyCommand='ferry client ... stdio:%h:%p' to a local sshd."""
    hostkey, userkey = tmp_path / "host_ed25519", tmp_path / "user_ed25519"
    for k in (hostkey, userkey):
        subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(k)], check=True,
                       timeout=30)
    auth_keys = tmp_path / "authorized_keys"
    auth_keys.write_text((tmp_path / "user_ed25519.pub").read_text())
    os.chmod(auth_keys, 0o600)
    Path("/run/sshd").mkdir(exist_ok=True)
    port = free_port()
    conf = tmp_path / "sshd_config"
    conf.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\n"
                    f"AuthorizedKeysFile {auth_keys}\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                    "PermitRootLogin prohibit-password\nPidFile none\n")
    sshd = subprocess.Popen(_pdeathsig_prefix() + [SSHD, "-D", "-e", "-f", str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        proxy = (f"{ferry_bin()} client {server['url']} --pin {server['pin']} --auth-file "
                 f"{server['auth']} -w 1 stdio:%h:%p")
        data = random.Random(4).randbytes(MiB)
        r = subprocess.run([SSH, "-F", "none", "-i", str(userkey), "-p", str(port),
                            "-o", f"ProxyCommand={proxy}", "-o", "StrictHostKeyChecking=no",
                            "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
                            "-o", "LogLevel=ERROR", "root@127.0.0.1", "sha256sum"],
                           input=data, capture_output=True, timeout=60, env=ferry_env())
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()
    finally:
        sshd.terminate()
        sshd.wait(10)


# ---- failures -------------------------------------------------------------------------


def socks_reply(port: int, target) -> int:
    """The REP a raw SOCKS5 CONNECT to target gets through 127.0.0.1:port."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    with s:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(target[0]) + target[1].to_bytes(2, "big"))
        return s.recv(10)[1]


def test_wrong_pin(server, client, echo_server):
    port = free_port()
    c = client(f"{port}:socks", pin=pin_of(server["stranger"]))
    assert socks_reply(port, echo_server.addr) == 0x01
    c.wait_log(r"warn .*outbound tunnel: parent 127\.0\.0\.1 port \d+: certificate pin mismatch: "
               rf"got {re.escape(server['pin'])}")
    c.wait_log(r"cmd=connect .*reply=general-failure end=tls-verify-failed.* via=tunnel")


def test_stdio_wrong_pin(server):
    """stdio with the wrong pin: exit 1; stderr has the warning that says
    why and the one-line verdict, nothing else."""
    r = subprocess.run(_pdeathsig_prefix() + [ferry_bin(), "client", server["url"], "--pin",
                                              pin_of(server["stranger"]), "--auth-file",
                                              str(server["auth"]), "-w", "1", "stdio:127.0.0.1:9"],
                       input=b"x", capture_output=True, timeout=60, env=ferry_env())
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "certificate pin mismatch" in err
    verdicts = [l for l in err.splitlines() if l.startswith("ferry client: stdio:127.0.0.1:9: ")]
    assert len(verdicts) == 1, err
    assert not re.search(r"Z info ", err), err


def test_wrong_password(server, client, echo_server):
    port = free_port()
    c = client(f"{port}:socks", auth=server["wrong"])
    assert socks_reply(port, echo_server.addr) == 0x01
    c.wait_log(r"warn .*outbound tunnel: parent 127\.0\.0\.1 port \d+: parent refused the "
               r"credentials \(HTTP 407\)")
    c.wait_log(r"cmd=connect .*reply=general-failure end=parent-auth-failed via=tunnel")
    # The HTTP face of the same port answers with an HTTP error.
    r = subprocess.run([CURL, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                        "-x", f"http://127.0.0.1:{port}", f"http://127.0.0.1:{echo_server.port}/"],
                       capture_output=True, timeout=30)
    assert r.stdout.decode() == "502", r.stdout


def test_server_not_running(server, tmp_path, echo_server):
    port, dead = free_port(), free_port()
    c = Client(tmp_path, [f"https://127.0.0.1:{dead}", "--pin", server["pin"], f"{port}:socks"])
    try:
        c.wait_log("ready:")
        # The tunnel is down: a new session waits tunnel_wait (10 s) for it,
        # then gets REP 0x03 (network unreachable); the same port's HTTP
        # face (curl, waiting at the same time) a 503 with Retry-After.
        t0 = time.monotonic()
        curl = subprocess.Popen([CURL, "-sS", "-o", "/dev/null", "-D", "-", "-w",
                                 "code=%{http_code}", "--max-time", "40", "-x",
                                 f"http://127.0.0.1:{port}",
                                 f"http://127.0.0.1:{echo_server.port}/"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert socks_reply(port, echo_server.addr) == 0x03
        assert time.monotonic() - t0 >= 9
        out, err = curl.communicate(timeout=60)
        assert out.decode().endswith("code=503"), (out, err)
        assert re.search(rb"(?im)^retry-after: 5\r$", out), out
        c.wait_log(rf"warn .*outbound tunnel: parent 127\.0\.0\.1 port {dead}: .*ECONNREFUSED")
        c.wait_log(r"cmd=connect .*end=tunnel-down .*via=tunnel")
    finally:
        c.stop()


def test_config_file_adds_rules(server, client, echo_server, tmp_path):
    """-c FILE adds to the client's configuration: its [rules] judge the
    client's sessions (a denied one never reaches the tunnel)."""
    conf = tmp_path / "more.conf"
    conf.write_text(f"[rules]\ndeny to 127.0.0.1 port {echo_server.port}\n")
    port = free_port()
    c = client(f"{port}:socks", extra=("-c", str(conf)))
    assert socks_reply(port, echo_server.addr) == 0x02
    c.wait_log(rf"cmd=connect dst=127.0.0.1:{echo_server.port} .*end=denied rule=more.conf:2")


def test_password_prompt(server, echo_server):
    """A URL with a user and no password asks on the terminal, without echo."""
    import pty
    port = free_port()
    url = server["url"].replace("https://", "https://alice@")
    pid, fd = pty.fork()
    if pid == 0:  # the child: ferry on the pty
        os.execve(ferry_bin(), [ferry_bin(), "client", url, "--pin", server["pin"], "-w", "1",
                                f"{port}:socks"], ferry_env())
    out = b""
    deadline = time.monotonic() + 20

    def read_until(marker: bytes) -> bytes:
        nonlocal out
        while marker not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                out += os.read(fd, 4096)
        return out

    try:
        read_until(b"Password for alice at 127.0.0.1:")
        os.write(fd, PASSWORD.encode() + b"\n")
        read_until(b"ready:")
        assert b"ready:" in out, out
        assert socks_reply(port, echo_server.addr) == 0x00
        assert PASSWORD.encode() not in out  # not echoed
    finally:
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, out


# ---- the command line -----------------------------------------------------------------


@pytest.mark.parametrize("args,says", [
    (["http://h", "socks"], "not an https:// or wss:// URL"),
    (["https://h", "stdio:h:53/udp"], "remote 'stdio:h:53/udp': stdio carries no /udp"),
    (["https://h", "8080:h:80", "8080:h:81"], "same local port 8080"),
    (["https://h", "8080:h:0"], "bad destination port '0'"),
    (["https://h", "[::1:8080:h:80"], "unbalanced brackets"),
    (["https://h"], "no remote given"),
    (["https://h", "socks", "--log-level", "loud"], "--log-level: 'loud' is not a log level"),
    ([], "no server URL"),
])
def test_cli_refusals(args, says):
    r = run_ferry(["client", *args])
    assert r.rc == 2, (r.rc, r.err)
    assert says in r.err, r.err


def test_help_and_print_config(tmp_path):
    r = run_ferry(["client", "--help"])
    assert r.rc == 0 and "ProxyCommand" in r.out and "8080:10.0.0.5:80" in r.out
    assert run_ferry(["help", "client"]).out == r.out
    ca, _ = make_cert(tmp_path, "ca")
    r = run_ferry(["client", "https://bob:secret@proxy.example:8443", "--cacert", str(ca), "socks", "[::1]:8080:[2001:db8::1]:80",
                   "stdio:db:5432", "--print-config"])
    assert r.rc == 0, r.err
    assert "secret" not in r.out
    assert "listen = 127.0.0.1:1080 protocols=socks5+socks4+http" in r.out
    assert "listen = [::1]:8080 forward=[2001:db8::1]:80" in r.out
    assert "url = https://bob@proxy.example:8443" in r.out
    conf = tmp_path / "printed.conf"
    conf.write_text(r.out)
    chk = run_ferry(["serve", "--check", "-c", str(conf)])
    assert chk.rc == 0, chk.err


def test_url_password_warned(server, echo_server):
    """A password in the URL works and is warned about (ps shows it)."""
    url = server["url"].replace("https://", f"https://alice:{PASSWORD}@")
    r = subprocess.run(_pdeathsig_prefix() + [ferry_bin(), "client", url, "--pin", server["pin"],
                                              "-w", "1", f"stdio:127.0.0.1:{echo_server.port}"],
                       input=b"ping", capture_output=True, timeout=60, env=ferry_env())
    assert r.returncode == 0 and r.stdout == b"ping", r.stderr
    assert b"visible to other local users" in r.stderr


@pytest.mark.parametrize("listen,says", [
    ("127.0.0.1:0 forward=nohost", "forward: 'nohost' is not HOST:PORT"),
    ("127.0.0.1:0 forward=h:0", "forward: 'h:0' has a port outside 1-65535"),
    ("127.0.0.1:0 forward=2001:db8::1:80", "is not HOST:PORT"),
    ("127.0.0.1:0 forward=h:80 protocols=http", "protocols= exclude each other"),
    ("tls://127.0.0.1:0 forward=h:80", "cannot be on a tls:// address yet"),
])
def test_forward_config_errors_name_file_line(tmp_path, listen, says):
    conf = tmp_path / "f.conf"
    conf.write_text(f"# a forward listener\nlisten = {listen}\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1
    assert f"f.conf:2: listen: " in r.err and says in r.err, r.err


# ---- the tunnel named on both ends ----------------------------------------------------


def _json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def _metric(addr, name: str, labels: str = "") -> float:
    body = http_get(addr, "/metrics").body.decode()
    m = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", body, re.M)
    assert m, f"no {name}{labels} in:\n{body}"
    return float(m.group(1))


def _wait_json(get_text, pred, what: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for rec in _json_lines(get_text()):
            if pred(rec):
                return rec
        assert time.monotonic() < deadline, f"no {what} in:\n{get_text()[-3000:]}"
        time.sleep(0.05)


@pytest.mark.skipif(socks is None, reason="PySocks (python3-socks) is needed")
def test_tunnel_and_stream_named_on_both_ends(ferry, tmp_path, echo_server):
    """A session through `ferry client` -> `ferry serve` (JSON logs on both):
    each end's access line names the tunnel and the same stream id; the
    client's peer is the server, the server's peer is the client's local
    address; tunnel-open and tunnel-close lines on both ends (peer, user,
    streams, bytes); the connection and stream counters move."""
    cert, key = server_files(tmp_path)
    sport, smetrics, cmetrics, port = free_port(), free_port(), free_port(), free_port()
    srv = ferry(listens=(f"tls://127.0.0.1:{sport}",), auth={"userlist": "users.txt"},
                config={"log_format": "json", "access_log": "yes"}, wait_ready=False,
                extra=f"[tls]\ncert = {cert}\nkey = {key}\n[metrics]\nlisten = 127.0.0.1:{smetrics}\n")
    srv.wait_log("ready:", timeout=30)
    conf = tmp_path / "client.conf"
    conf.write_text(f"log_format = json\n[metrics]\nlisten = 127.0.0.1:{cmetrics}\n")
    c = Client(tmp_path, [f"https://127.0.0.1:{sport}", "--pin", pin_of(cert), "--auth-file",
                          str(tmp_path / "alice.auth"), "-c", str(conf), f"{port}:socks"])
    try:
        c.wait_log("ready:")
        sm, cm = ("127.0.0.1", smetrics), ("127.0.0.1", cmetrics)
        lab = '{outbound="tunnel"}'
        before = (_metric(sm, "ferry_h2_connections_total"),
                  _metric(cm, "ferry_outbound_h2_connections_total", lab),
                  _metric(cm, "ferry_outbound_h2_streams_total", lab))
        s = socks_sock(port)
        s.connect(echo_server.addr)
        with s:
            sent, got, n, how = exchange(s, 64 * 1024, seed=3)
        assert n == 64 * 1024 and sent == got and how == "eof"
        dst = f"127.0.0.1:{echo_server.port}"
        ca = _wait_json(c.text, lambda r: r["msg"] == "access" and r.get("dst") == dst,
                        "client access line")
        sa = _wait_json(srv.log_text, lambda r: r["msg"] == "access" and r.get("dst") == dst,
                        "server access line")
        assert isinstance(ca["tunnel"], int) and ca["tunnel"] > 0, ca
        assert isinstance(sa["tunnel"], int) and sa["tunnel"] > 0, sa
        assert ca["stream"] == sa["stream"] and ca["stream"] % 2 == 1, (ca, sa)
        assert ca["peer"] == f"127.0.0.1:{sport}" and ca["via"] == "tunnel", ca
        assert sa["user"] == "alice" and sa["peer"] == sa["client"], sa
        co = _wait_json(c.text, lambda r: r["msg"] == "tunnel-open" and r["tunnel"] == ca["tunnel"],
                        "client tunnel-open")
        so = _wait_json(srv.log_text,
                        lambda r: r["msg"] == "tunnel-open" and r["tunnel"] == sa["tunnel"],
                        "server tunnel-open")
        # The two ends of one connection: the client's local address is
        # the server's peer.
        assert co["local"] == sa["peer"] == so["peer"], (co, sa, so)
        assert co["side"] == "client" and co["user"] == "alice" and co["transport"] == "h2", co
        assert so["side"] == "server" and so["transport"] == "h2", so
        after = (_metric(sm, "ferry_h2_connections_total"),
                 _metric(cm, "ferry_outbound_h2_connections_total", lab),
                 _metric(cm, "ferry_outbound_h2_streams_total", lab))
        assert after[0] >= before[0] + 1 and after[1] >= before[1] + 1, (before, after)
        assert after[2] >= before[2] + 1, (before, after)
        assert _metric(sm, "ferry_h2_connections") >= 1
    finally:
        c.stop()
    # The client ends: both ends close the tunnel and say what it carried.
    cc = _wait_json(c.text, lambda r: r["msg"] == "tunnel-close" and r["tunnel"] == ca["tunnel"],
                    "client tunnel-close")
    sc = _wait_json(srv.log_text,
                    lambda r: r["msg"] == "tunnel-close" and r["tunnel"] == sa["tunnel"],
                    "server tunnel-close")
    for rec in (cc, sc):
        assert rec["streams"] >= 1 and rec["up"] > 64 * 1024 and rec["down"] > 64 * 1024, rec
        assert isinstance(rec["ms"], int) and rec["end"], rec
    assert sc["user"] == "alice" and sc["peer"] == co["local"], sc
    assert cc["peer"] == f"127.0.0.1:{sport}" and cc["end"] == "closed", cc
