# SPDX-License-Identifier: BSD-2-Clause
"""The WebSocket transport (RFC 6455) of ferry's tunnel: `ferry client
wss://HOST/PATH` -> nginx (a TLS-terminating reverse proxy on loopback,
proxy_pass with Upgrade/Connection, proxy_buffering off) -> `ferry serve`'s
plain listener with websocket=/tunnel -> an echo and a file server, with
integrity both ways; the same straight to ferry's tls:// listener; other
paths get 404 or go to the decoy= origin as they came; a bad version gets
426; a PING gets its PONG, an unmasked frame a CLOSE 1002 and a text frame
a CLOSE 1003, and the server goes on; a reload ends an idle tunnel with
CLOSE 1001; the command line and the config's refusals."""

import base64
import hashlib
import os
import signal
import shutil
import socket
import ssl
import struct
import subprocess
import time

import pytest

from certlib import OPENSSL, pin_of
from daemonlib import need, stop_proc, wait_port
from ferrylib import DEFAULT_CONFIG, FerryFactory, read_until_close, run_ferry
from opslib import free_port
from clientlib import Client, exchange, server_files, socks, socks_sock

CURL = shutil.which("curl")
MiB = 1024 * 1024
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL or socks is None,
                                reason="openssl, curl and PySocks are needed (make deps-test)")


@pytest.fixture(scope="module")
def server(tmp_path_factory, http_server):
    """ferry serve: tls:// and plain listeners with websocket=/tunnel (the
    plain one with the file server as its decoy), [auth] with alice."""
    d = tmp_path_factory.mktemp("wss")
    cert, key = server_files(d)
    factory = FerryFactory(d)
    raw = "".join(f"{k} = {v}\n" for k, v in DEFAULT_CONFIG.items())
    # Closed rules: the decoy (the operator's own) is dialled all the same.
    raw += "rules_default = deny\n"
    raw += ("listen = tls://127.0.0.1:0 websocket=/tunnel\n"
            f"listen = 127.0.0.1:0 websocket=/tunnel decoy=127.0.0.1:{http_server.port}\n"
            f"\n[auth]\nuserlist = users.txt\n\n[tls]\ncert = {cert}\nkey = {key}\n"
            "\n[rules]\nallow user alice\n")
    srv = factory(raw_config=raw, listens=())
    tls_port, plain_port = srv.addrs[0][1], srv.addrs[1][1]
    yield {"dir": d, "srv": srv, "pin": pin_of(cert), "cert": cert, "key": key,
           "tls": tls_port, "plain": plain_port, "auth": d / "alice.auth"}
    findings = factory.finalize()
    assert not findings, findings


@pytest.fixture(scope="module")
def nginx(server):
    """nginx on 127.0.0.1: TLS with the server's certificate, /tunnel
    proxied to ferry's plain listener as a WebSocket."""
    binary = need("nginx")
    d = server["dir"] / "nginx"
    d.mkdir()
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join(f"{k}_temp_path {d}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (d / "nginx.conf").write_text(f"""{user}daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    {temps}
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {server["cert"]};
        ssl_certificate_key {server["key"]};
        ssl_protocols TLSv1.2 TLSv1.3;
        location /tunnel {{
            proxy_pass http://127.0.0.1:{server["plain"]};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 600s;
        }}
    }}
}}
""")
    out = open(d / "nginx.out", "wb")
    proc = subprocess.Popen([binary, "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    try:
        wait_port(port, proc)
        yield {"port": port, "dir": d}
    finally:
        stop_proc(proc)
        out.close()


def start_client(server, url: str, port: int) -> Client:
    c = Client(server["dir"], [url, "--pin", server["pin"], "--auth-file", str(server["auth"]),
                               f"{port}:socks"])
    c.wait_log(r"ready:")
    return c


def check_tunnel(port: int, echo_server, http_server, size: int):
    """size bytes to the echo and back, and big.bin by curl, through the
    client's SOCKS port."""
    s = socks_sock(port)
    s.connect(echo_server.addr)
    with s:
        sent, got, n, how = exchange(s, size, seed=size)
    assert n == size and sent == got and how == "eof"
    r = subprocess.run([CURL, "-sS", "--max-time", "60", "-x", f"socks5h://127.0.0.1:{port}",
                        http_server.url("big.bin")], capture_output=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(r.stdout).hexdigest() == http_server.files["big.bin"]


def test_wss_through_nginx(server, nginx, echo_server, http_server):
    port = free_port()
    c = start_client(server, f"wss://127.0.0.1:{nginx['port']}/tunnel", port)
    try:
        check_tunnel(port, echo_server, http_server, 6 * MiB)
        c.wait_log(rf"cmd=connect dst=127.0.0.1:{echo_server.port} .*reply=succeeded.* via=tunnel")
        # The tunnel inside the WebSocket is named on both ends as such.
        c.wait_log(r"tunnel-open tunnel=\d+ side=client .*transport=ws")
    finally:
        c.stop()
    server["srv"].wait_log(rf"user=alice cmd=CONNECT dst=127.0.0.1:{echo_server.port} ")
    server["srv"].wait_log(r"cmd=GET .*reply=101")
    server["srv"].wait_log(r"tunnel-open tunnel=\d+ side=server .*transport=ws")
    assert '"GET /tunnel HTTP/1.1" 101' in (nginx["dir"] / "access.log").read_text()


def test_wss_direct_to_tls_listener(server, echo_server, http_server):
    port = free_port()
    c = start_client(server, f"wss://127.0.0.1:{server['tls']}/tunnel", port)
    try:
        check_tunnel(port, echo_server, http_server, 3 * MiB)
    finally:
        c.stop()


def test_wss_wrong_path_fails_clearly(server, echo_server):
    port = free_port()
    c = Client(server["dir"], [f"wss://127.0.0.1:{server['tls']}/elsewhere", "--pin", server["pin"],
                               "--auth-file", str(server["auth"]), f"{port}:socks"])
    try:
        c.wait_log(r"ready:")
        s = socks_sock(port)
        with pytest.raises(Exception):
            s.connect(echo_server.addr)
        s.close()
        c.wait_log(r"WebSocket: the WebSocket path was not found \(404\)")
    finally:
        c.stop()


# ---- the server's door, spoken by hand ------------------------------------------------


def connect(server, tls: bool) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server["tls" if tls else "plain"]), timeout=15)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        s = ctx.wrap_socket(s)
    return s


def read_head(s: socket.socket) -> tuple[bytes, bytes]:
    buf = b""
    deadline = time.monotonic() + 15
    while b"\r\n\r\n" not in buf and time.monotonic() < deadline:
        data = s.recv(65536)
        if not data:
            break
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head, rest


def request(server, tls: bool, text: str) -> tuple[bytes, bytes]:
    with connect(server, tls) as s:
        s.sendall(text.encode())
        head, rest = read_head(s)
        more, _ = read_until_close(s, timeout=20)
    return head, rest + more


def upgrade_text(path="/tunnel", key="dGhlIHNhbXBsZSBub25jZQ==", version="13") -> str:
    return (f"GET {path} HTTP/1.1\r\nHost: example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {version}\r\n\r\n")


def test_other_paths_404_decoy_and_426(server, http_server):
    head, _ = request(server, True, "GET /nope HTTP/1.1\r\nHost: example\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404 "), head
    head, _ = request(server, True, upgrade_text(path="/nope"))
    assert head.startswith(b"HTTP/1.1 404 "), head
    # The decoy answers anything but a WebSocket on the path, as it came.
    head, body = request(server, False, "GET /small.txt HTTP/1.1\r\nHost: example\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 ") and b"Server: SimpleHTTP" in head, head
    assert hashlib.sha256(body).hexdigest() == http_server.files["small.txt"]
    head, _ = request(server, False, "GET /tunnel HTTP/1.1\r\nHost: example\r\nConnection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 404 ") and b"Server: SimpleHTTP" in head, head
    head, _ = request(server, False, upgrade_text(version="8"))
    assert head.startswith(b"HTTP/1.1 426 ") and b"Sec-WebSocket-Version: 13" in head, head
    head, _ = request(server, False, upgrade_text(key="short"))
    assert head.startswith(b"HTTP/1.1 400 "), head
    server["srv"].wait_log(rf"cmd=decoy dst=127.0.0.1:{http_server.port} .*reply=200")


def frame(op: int, payload: bytes, mask: bool = True) -> bytes:
    n = len(payload)
    b1 = 0x80 if mask else 0
    hdr = bytes([0x80 | op]) + (bytes([b1 | n]) if n < 126 else bytes([b1 | 126]) + struct.pack("!H", n))
    if not mask:
        return hdr + payload
    key = os.urandom(4)
    return hdr + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_frames(s: socket.socket, buf: bytes, until_op: int) -> tuple[int, bytes, bytes]:
    """Read server frames (unmasked) until one with opcode until_op.
    Returns (opcode, payload, what is left)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        while len(buf) >= 2:
            op, n = buf[0] & 0x0f, buf[1] & 0x7f
            assert not buf[1] & 0x80, "a server frame is never masked"
            at = 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, at = struct.unpack("!H", buf[2:4])[0], 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, at = struct.unpack("!Q", buf[2:10])[0], 10
            if len(buf) < at + n:
                break
            payload, buf = buf[at:at + n], buf[at + n:]
            if op == until_op:
                return op, payload, buf
        data = s.recv(65536)
        if not data:
            raise AssertionError(f"closed before opcode {until_op}")
        buf += data
    raise AssertionError(f"no opcode {until_op} within 15 s")


def open_ws(server, tls: bool) -> tuple[socket.socket, bytes]:
    s = connect(server, tls)
    s.sendall(upgrade_text().encode())
    head, rest = read_head(s)
    accept = base64.b64encode(hashlib.sha1(b"dGhlIHNhbXBsZSBub25jZQ==" + GUID).digest())
    assert head.startswith(b"HTTP/1.1 101 ") and b"Sec-WebSocket-Accept: " + accept in head, head
    return s, rest


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_ping_pong_and_protocol_errors_close(server, tls):
    # A PING gets its PONG (behind the server's HTTP/2 SETTINGS in binary frames).
    s, rest = open_ws(server, tls)
    with s:
        s.sendall(frame(0x9, b"are you there"))
        _, payload, rest = read_frames(s, rest, 0xa)
        assert payload == b"are you there"
        # An unmasked frame from a client: CLOSE 1002, then the end.
        s.sendall(frame(0x2, b"\x00" * 9, mask=False))
        _, payload, rest = read_frames(s, rest, 0x8)
        assert struct.unpack("!H", payload[:2])[0] == 1002
        read_until_close(s, timeout=20)
    # A text frame: CLOSE 1003 (the tunnel is binary).
    s, rest = open_ws(server, tls)
    with s:
        s.sendall(frame(0x1, b"hello"))
        _, payload, rest = read_frames(s, rest, 0x8)
        assert struct.unpack("!H", payload[:2])[0] == 1003
    # A CLOSE is echoed, and the server is still there.
    s, rest = open_ws(server, tls)
    with s:
        s.sendall(frame(0x8, struct.pack("!H", 1000)))
        _, payload, rest = read_frames(s, rest, 0x8)
        assert struct.unpack("!H", payload[:2])[0] == 1000


def test_reload_ends_an_idle_tunnel_with_close_1001(server):
    # A reload (SIGHUP) sends GOAWAY on every HTTP/2 connection; one without
    # streams then ends, inside a WebSocket with CLOSE 1001 (going away).
    s, rest = open_ws(server, False)
    with s:
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
        s.sendall(frame(0x2, preface))
        server["srv"].send_signal(signal.SIGHUP)
        _, payload, rest = read_frames(s, rest, 0x8)
        assert struct.unpack("!H", payload[:2])[0] == 1001
        read_until_close(s, timeout=20)
    server["srv"].wait_log(r"reload|configuration")


# ---- the command line and the configuration -------------------------------------------


@pytest.mark.parametrize("args,says", [
    (["wss://h", "socks"], "wss:// needs a path"),
    (["wss://h/a?b", "socks"], "wss:// needs a path"),
    (["ftp://h", "socks"], "is not an https:// or wss:// URL"),
])
def test_cli_refusals(args, says):
    r = run_ferry(["client", *args])
    assert r.rc == 2, (r.rc, r.err)
    assert says in r.err, r.err


def test_print_config_and_check(tmp_path):
    r = run_ferry(["client", "wss://alice@proxy.example:8443/tunnel", "socks", "--print-config"])
    assert r.rc == 0, r.err
    assert "url = https://alice@proxy.example:8443\n" in r.out and "websocket = /tunnel\n" in r.out
    conf = tmp_path / "client.conf"
    conf.write_text(r.out)
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 0, r.err


@pytest.mark.parametrize("text,says", [
    ("listen = 127.0.0.1:0 decoy=127.0.0.1:80\n", "needs websocket=/PATH"),
    ("listen = 127.0.0.1:0 websocket=tunnel\n", "is not a path"),
    ("listen = 127.0.0.1:0 websocket=/t protocols=socks5\n", "needs http in protocols="),
    ("listen = 127.0.0.1:0\noutbound = p\n[outbound p]\nurl = socks5://127.0.0.1:1080\nwebsocket = /t\n",
     "websocket is for https:// parents"),
    ("listen = 127.0.0.1:0\noutbound = p\n[outbound p]\nurl = https://127.0.0.1:1\nmux = http1\n"
     "websocket = /t\n", "not with mux = http1"),
])
def test_config_errors(tmp_path, text, says):
    conf = tmp_path / "f.conf"
    conf.write_text(text)
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc != 0 and says in r.err, r.err
