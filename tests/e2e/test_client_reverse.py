# SPDX-License-Identifier: BSD-2-Clause
"""`ferry client URL R:...` (reverse remotes) against a real `ferry serve`
with a tls:// listener, users, and [rules] that let alice and bob (not
carol) bind reverse ports on 127.0.0.1. Covers: R:PORT:HOST:PORT with
integrity both ways and a half-close crossing the tunnel both ways;
R:PORT:socks reached with PySocks and curl through the server's port,
refused towards a loopback origin by default and let through by the
remote's allow= (a --print-config file run by ferry serve, reloaded); a bind without
a `cmd reverse` rule refused with a clear client error; the server
reloaded (GOAWAY, listeners closed) and then killed and started again (the
client registers again each time and the port comes back); and
the grace period (a released port stays its user's: another user's bind
is refused, the same user's succeeds)."""

import hashlib
import random
import shutil
import signal
import socket
import subprocess
import time

import pytest

from certlib import OPENSSL, pin_of
from clientlib import Client, exchange, server_files, socks, socks_sock
from ferrylib import (FerryFactory, ServerHalfCloseServer, SinkThenReplyServer,
                      read_until_close, run_ferry)
from opslib import free_port

MiB = 1024 * 1024
CURL = shutil.which("curl")

pytestmark = pytest.mark.skipif(not OPENSSL or not CURL,
                                reason="openssl and curl are needed (make deps-test)")

RULES = """[rules]
allow user alice cmd reverse to 127.0.0.1 port 1024-65535
allow user bob cmd reverse to 127.0.0.1 port 1024-65535
"""


def make_server(factory, d, cert, key, port=0):
    return factory(listens=(f"tls://127.0.0.1:{port}",), auth={"userlist": "users.txt"},
                   extra=f"[tls]\ncert = {cert}\nkey = {key}\n\n{RULES}")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("reverse")
    cert, key = server_files(d, ["alice", "bob", "carol"])
    factory = FerryFactory(d)
    srv = make_server(factory, d, cert, key)
    yield {"dir": d, "factory": factory, "srv": srv, "cert": cert, "key": key,
           "pin": pin_of(cert), "url": f"https://127.0.0.1:{srv.port}"}
    findings = factory.finalize()
    assert not findings, findings


@pytest.fixture
def client(env):
    started = []

    def start(*remotes, user="alice", url=None, ready=r"the server listens on"):
        args = [url or env["url"], "--pin", env["pin"], "--auth-file",
                str(env["dir"] / f"{user}.auth"), *remotes]
        c = Client(env["dir"], args, name=f"client-{user}")
        started.append(c)
        if ready:
            c.wait_log(ready, timeout=30)
        return c

    yield start
    for c in started:
        c.stop()


def connect(port: int, timeout: float = 20) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(30)
    return s


def test_reverse_forward_integrity_and_half_close(env, client, echo_server, tcp_server):
    port = free_port()
    c = client(f"R:{port}:127.0.0.1:{echo_server.port}")
    env["srv"].wait_log(rf"reverse listener 127\.0\.0\.1:{port} for alice")
    # Several connections, each 4 MiB both ways with integrity.
    for seed in range(3):
        with connect(port) as s:
            sent, got, n, how = exchange(s, 4 * MiB, seed=seed)
        assert n == 4 * MiB and sent == got and how == "eof"
    # Half-close: the server side's EOF reaches the target through the
    # client, and the target's whole reply (then its EOF) comes back.
    c.stop()
    sink = tcp_server(SinkThenReplyServer, reply_size=256 * 1024)
    c = client(f"R:{port}:127.0.0.1:{sink.port}")
    with connect(port) as s:
        SinkThenReplyServer.check_half_close(s, random.Random(3).randbytes(1 * MiB), 256 * 1024)
    m = c.wait_log(rf"cmd=reverse dst=127\.0\.0\.1:{sink.port} .*reply=succeeded end=done"
                   rf".* tunnel=\d+ stream=(\d+) peer=127\.0\.0\.1:\d+$")
    # Its stream is named the same on the server's end of the tunnel.
    env["srv"].wait_log(rf"user=alice cmd=reverse .* tunnel=\d+ stream={m.group(1)} peer=")
    # The other way: the target half-closes first; its greeting and FIN
    # reach the server's side, which goes on sending.
    c.stop()
    hc = tcp_server(ServerHalfCloseServer, first_bytes=4096)
    c = client(f"R:{port}:127.0.0.1:{hc.port}")
    with connect(port) as s:
        hc.talk_past_its_fin(s)
        assert hc.done.wait(20)
        assert list(hc.results.values())[0][0] == 4096 + 100000
        assert read_until_close(s, timeout=20)[1] == "eof"


@pytest.mark.skipif(socks is None, reason="PySocks (python3-socks) is needed")
def test_reverse_socks_default_refuses_loopback(env, client, echo_server):
    port = free_port()
    c = client(f"R:{port}:socks")
    s = socks.socksocket()
    s.set_proxy(socks.SOCKS5, "127.0.0.1", port, rdns=False)
    s.settimeout(30)
    with pytest.raises(socks.ProxyError) as e:
        s.connect(echo_server.addr)
    s.close()
    assert "not allowed by ruleset" in str(e.value), e.value
    c.wait_log(rf"cmd=connect dst=127\.0\.0\.1:{echo_server.port} .*rule=protected")
    # curl through the same port as an HTTP proxy: 403.
    r = subprocess.run([CURL, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30",
                        "-x", f"http://127.0.0.1:{port}", f"http://127.0.0.1:{echo_server.port}/"],
                       capture_output=True, timeout=60)
    assert r.stdout == b"403", (r.stdout, r.stderr)


@pytest.mark.skipif(socks is None, reason="PySocks (python3-socks) is needed")
def test_reverse_socks_allow_list_from_config(env, echo_server, http_server, tmp_path):
    """--print-config's reverse line with allow= added, run by ferry serve:
    the client is that configuration."""
    port = free_port()
    r = run_ferry(["client", env["url"], "--pin", env["pin"], "--auth-file",
                   str(env["dir"] / "alice.auth"), f"R:{port}:socks", "--print-config"])
    assert r.rc == 0, r.err
    assert f"reverse = 127.0.0.1:{port} socks\n" in r.out, r.out
    conf = tmp_path / "client.conf"
    conf.write_text(r.out.replace(f"reverse = 127.0.0.1:{port} socks",
                                  f"reverse = 127.0.0.1:{port} socks allow=127.0.0.0/8"))
    factory = FerryFactory(tmp_path)
    try:
        cl = factory(wait_ready=False, raw_config="workers = 2\n" + conf.read_text(), listens=())
        cl.wait_log(r"the server listens on", timeout=30)
        s = socks_sock(port)
        s.connect(echo_server.addr)
        with s:
            sent, got, n, how = exchange(s, 2 * MiB, seed=9)
        assert n == 2 * MiB and sent == got and how == "eof"
        # A reload of the client: the remotes of the new configuration
        # replace the old ones (the port is the same user's again).
        mark = len(cl.log_text())
        cl.send_signal(signal.SIGHUP)
        cl.wait_log(r"the server listens on", timeout=30, start=mark)
        big = hashlib.sha256((http_server.directory / "big.bin").read_bytes()).hexdigest()
        r = subprocess.run([CURL, "-sS", "--max-time", "60", "-x", f"socks5h://localhost:{port}",
                            f"http://127.0.0.1:{http_server.port}/big.bin"],
                           capture_output=True, timeout=90)
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(r.stdout).hexdigest() == big
    finally:
        assert not factory.finalize()


def test_reverse_bind_refused_without_rule(env, client):
    port = free_port()
    c = client(f"R:{port}:127.0.0.1:9", user="carol", ready=r"refused the bind")
    assert "HTTP 403" in c.text() and "cmd reverse" in c.text(), c.text()
    env["srv"].wait_log(r"user=carol cmd=reverse-listen .*reply=403")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_reverse_port_held_for_its_user(env, client, echo_server):
    port = free_port()
    a = client(f"R:{port}:127.0.0.1:{echo_server.port}")
    a.stop()  # the tunnel goes: the server's listener ends, the port is held for alice
    b = client(f"R:{port}:127.0.0.1:{echo_server.port}", user="bob", ready=r"refused the bind")
    assert "HTTP 403" in b.text(), b.text()
    env["srv"].wait_log(rf"reverse bind of 127\.0\.0\.1:{port} refused: held for another user")
    a2 = client(f"R:{port}:127.0.0.1:{echo_server.port}")
    with connect(port) as s:
        sent, got, n, how = exchange(s, 64 * 1024, seed=2)
    assert n == 64 * 1024 and sent == got and how == "eof"
    a2.stop()
    b.stop()


def wait_text(c: Client, mark: int, text: str, timeout: float = 40):
    """Wait (bounded) for text in c's log after offset mark."""
    deadline = time.monotonic() + timeout
    while text not in c.text()[mark:] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert text in c.text()[mark:], c.text()[-3000:]


def test_reverse_port_back_after_reload_and_restart(env, client, echo_server, tmp_path):
    tport, port = free_port(), free_port()
    factory = FerryFactory(tmp_path)
    try:
        (tmp_path / "users.txt").write_text((env["dir"] / "users.txt").read_text())
        srv = make_server(factory, tmp_path, env["cert"], env["key"], port=tport)
        c = client(f"R:{port}:127.0.0.1:{echo_server.port}", url=f"https://127.0.0.1:{tport}")
        with connect(port) as s:
            assert exchange(s, 64 * 1024, seed=4)[2] == 64 * 1024
        # A reload: GOAWAY and the listeners closed; the client registers
        # again on its replacement connection and gets the port back.
        mark = len(c.text())
        srv.send_signal(signal.SIGHUP)
        wait_text(c, mark, "the server listens on")
        with connect(port) as s:
            assert exchange(s, 64 * 1024, seed=6)[2] == 64 * 1024
        # A session open across the kill ends (no hang).
        held = connect(port)
        held.sendall(b"x")
        assert held.recv(1) == b"x"
        srv.kill()
        _, how = read_until_close(held, timeout=30)
        held.close()
        assert how in ("eof", "reset"), how
        mark = len(c.text())
        srv2 = make_server(factory, tmp_path, env["cert"], env["key"], port=tport)
        wait_text(c, mark, "the server listens on")
        with connect(port) as s:
            sent, got, n, how = exchange(s, 1 * MiB, seed=5)
        assert n == 1 * MiB and sent == got and how == "eof"
        srv2.wait_log(rf"reverse listener 127\.0\.0\.1:{port} for alice")
        c.stop()
    finally:
        srv.expect_exit = None  # killed on purpose
        problems = factory.finalize()
        assert not problems, problems


@pytest.mark.parametrize("line,says", [
    ("reverse = 2222 forward=h:22", "'2222' is not ADDR:PORT"),
    ("reverse = 127.0.0.1:2222", "expected ADDR:PORT forward=HOST:PORT, or ADDR:PORT socks"),
    ("reverse = 127.0.0.1:2222 forward=h:22 allow=10.0.0.0/8", "allow= applies to a socks remote only"),
    ("reverse = 127.0.0.1:2222 socks allow=10.0.0.0/33", "'10.0.0.0/33' is not an address or CIDR"),
    ("reverse = 127.0.0.1:2222 socks\nmux = http1", "reverse needs an https:// url spoken HTTP/2"),
])
def test_reverse_config_errors(tmp_path, line, says):
    conf = tmp_path / "c.conf"
    conf.write_text(f"listen = none\n[outbound t]\nurl = https://127.0.0.1:1\n{line}\n"
                    "reverse = 127.0.0.1:2223 socks\n")
    r = run_ferry(["serve", "--check", "-c", str(conf)])
    assert r.rc == 1 and says in r.err, r.err
