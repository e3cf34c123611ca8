# SPDX-License-Identifier: BSD-2-Clause
"""[quota]: a user who reached their bytes for the period, or their sessions
at once, is refused new sessions with each protocol's answer (SOCKS5 REP
0x02 after a successful login, HTTP 403 with the reason, a UDP ASSOCIATE's
REP 0x02); end_sessions = yes ends the open ones too; usage survives a
restart (the state file) and a reload (SIGHUP), and a user removed from the
userlist drops out; a bad [quota] line names FILE:LINE."""

from __future__ import annotations

import base64
import signal
import socket
import time

import pytest

from acctlib import USERS, move_bytes, start, user_value, wait_user_value, write_users
from ferrylib import (
    AUTH_OK,
    auth_handshake,
    open_client,
    read_reply,
    recv_exact,
    request,
    run_ferry,
    socks_connect_auth,
)
from opslib import scrape, validate_exposition, wait_until
from httplib import Conn, read_response, request_bytes
from udplib import UdpAssoc, UdpEcho

REP_OK, REP_NOT_ALLOWED = 0x00, 0x02
QUOTA = 64 * 1024  # "64k"


def socks_request_rep(proxy, user: str, host: str, port: int, cmd: int = 1) -> int:
    """Log in as user (must succeed) and send a request; the reply's REP."""
    with open_client(proxy) as s:
        assert auth_handshake(s, user, USERS[user]) == AUTH_OK, f"{user} refused at login"
        s.sendall(request(host, port, cmd=cmd))
        return read_reply(s).rep


def http_connect(proxy, user: str, host: str, port: int) -> tuple[int, bytes]:
    """An HTTP CONNECT as user; (status, the whole answer)."""
    cred = base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()
    with open_client(proxy) as s:
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                  f"Proxy-Authorization: Basic {cred}\r\n\r\n".encode())
        data = b""
        s.settimeout(5)
        while b"\r\n\r\n" not in data or (data.startswith(b"HTTP/1.1 403") and b"quota" not in data):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def wait_refused(pred, what: str):
    """Admission sums the workers' counters as it finds them: poll."""
    wait_until(pred, 10.0, what, interval=0.1)


def test_bytes_quota_refuses_socks5_and_http(ferry, tmp_path, echo_server):
    f, maddr = start(ferry, tmp_path, "user alice = 64k/1d\nuser bob = 1g/30d")
    host, port = echo_server.addr
    move_bytes(f.addr, echo_server.addr, "alice", 40 * 1024)  # 80 KiB both ways: over 64k
    wait_refused(lambda: socks_request_rep(f.addr, "alice", host, port) == REP_NOT_ALLOWED,
                 "alice refused with REP 0x02")
    status, answer = http_connect(f.addr, "alice", host, port)
    assert status == 403 and b"quota" in answer, answer
    # bob has room: his sessions go on.
    assert socks_request_rep(f.addr, "bob", host, port) == REP_OK
    assert http_connect(f.addr, "bob", host, port)[0] == 200
    e = scrape(maddr)
    assert not validate_exposition(e.text)
    assert e.get("ferry_user_quota_bytes", user="alice") == QUOTA
    assert e.get("ferry_user_quota_used_bytes", user="alice") >= 80 * 1024
    assert e.get("ferry_user_quota_refused_total", user="alice") >= 2
    assert e.total("ferry_sessions_total", outcome="quota") >= 2
    f.wait_log(r"quota: user alice used \d+ of 65536 bytes")


def test_bytes_quota_next_keepalive_request(ferry, tmp_path, http_server):
    """An HTTP keep-alive connection's next request is a new session: once
    the user used up their bytes, it gets 403 too."""
    f, _ = start(ferry, tmp_path, "user alice = 64k/1d")
    cred = base64.b64encode(b"alice:" + USERS["alice"].encode()).decode()
    hdrs = [("Host", http_server.url("big.bin").split("/")[2]), ("Proxy-Authorization", f"Basic {cred}")]
    with Conn.open(f.addr) as c:
        c.send(request_bytes("GET", http_server.url("big.bin"), hdrs))
        r = read_response(c)
        assert r.status == 200 and len(r.body) == 10 * 1024 * 1024
        c.send(request_bytes("GET", http_server.url("small.txt"), hdrs))
        r = read_response(c)
        assert r.status == 403 and b"quota" in r.body, r.raw[:300]


def test_bytes_quota_refuses_http2_streams(ferry, tmp_path, echo_server):
    """Tunnel streams of the HTTP/2 server are sessions like any other."""
    from certlib import make_cert
    from h2lib import H2Client

    c, k = make_cert(tmp_path, "h2")
    write_users(tmp_path)
    f = ferry(listens=("tls://127.0.0.1:0",), auth={"userlist": "users.txt"},
              extra=f"[tls]\ncert = {c}\nkey = {k}\n\n[quota]\nuser alice = 64k/1d\n")
    good = [("proxy-authorization",
             "Basic " + base64.b64encode(b"alice:" + USERS["alice"].encode()).decode())]
    cl = H2Client(f.addr, c)
    try:
        first = cl.connect(f"127.0.0.1:{echo_server.port}", good)
        cl.wait(lambda: cl.streams[first]["status"], what="200")
        assert cl.streams[first]["status"] == 200
        cl.send(first, b"2" * 40 * 1024, end=True)
        cl.wait(lambda: cl.streams[first]["ended"], what="the echo")
        assert len(cl.streams[first]["data"]) == 40 * 1024

        def refused():
            sid = cl.connect(f"127.0.0.1:{echo_server.port}", good)
            cl.wait(lambda: cl.streams[sid]["status"], what="an answer")
            return cl.streams[sid]["status"] == 403

        wait_refused(refused, "a new stream refused with 403")
    finally:
        cl.close()
    f.wait_log(r"access .*user=alice cmd=CONNECT .*reply=403 .*quota-bytes")


def test_udp_quota(ferry, tmp_path):
    f, maddr = start(ferry, tmp_path, "user alice = 4k/1d")
    echo = UdpEcho()
    try:
        with UdpAssoc(f.addr, auth=("alice", USERS["alice"])) as a:
            for i in range(6):
                a.send(echo.addr, b"u" * 1000)
                a.recv()
            wait_user_value(maddr, "ferry_user_udp_datagrams_total", "alice", lambda v: v >= 6,
                            "alice's datagrams counted", direction="up")
            # Counted as they move, while the association is open.
            assert user_value(maddr, "ferry_user_bytes_total", "alice", direction="up") >= 6000
        # Over 4k now: a new association is refused.
        def refused():
            with UdpAssoc(f.addr, auth=("alice", USERS["alice"]), expect=None) as b:
                return b.reply.rep == REP_NOT_ALLOWED

        wait_refused(refused, "UDP ASSOCIATE refused with REP 0x02")
    finally:
        echo.stop()


def test_sessions_at_once(ferry, tmp_path, echo_server):
    f, maddr = start(ferry, tmp_path, "user bob = 1 sessions")
    host, port = echo_server.addr
    first, _ = socks_connect_auth(f.addr, "bob", USERS["bob"], host, port)
    with first:
        assert socks_request_rep(f.addr, "bob", host, port) == REP_NOT_ALLOWED
        assert http_connect(f.addr, "bob", host, port)[0] == 403
        assert socks_request_rep(f.addr, "alice", host, port) == REP_OK  # no quota of hers
    wait_refused(lambda: socks_request_rep(f.addr, "bob", host, port) == REP_OK,
                 "bob admitted again once his session closed")
    assert user_value(maddr, "ferry_user_quota_refused_total", "bob") >= 2


def test_end_sessions_ends_open_ones(ferry, tmp_path, echo_server):
    f, _ = start(ferry, tmp_path, "end_sessions = yes\nuser alice = 64k/1d")
    s, _ = socks_connect_auth(f.addr, "alice", USERS["alice"], *echo_server.addr)
    with s:
        s.sendall(b"x" * 48 * 1024)
        recv_exact(s, 48 * 1024)  # 96 KiB: over; the next tick ends the session
        s.settimeout(10)
        deadline = time.monotonic() + 10
        ended = False
        while time.monotonic() < deadline and not ended:
            try:
                ended = s.recv(4096) == b""
            except ConnectionResetError:
                ended = True
            except socket.timeout:
                break
        assert ended, "the session over its quota was not ended"
    f.wait_log(r"access .*user=alice.*quota-bytes")


def test_end_sessions_off_keeps_open_ones(ferry, tmp_path, echo_server):
    f, _ = start(ferry, tmp_path, "user alice = 64k/1d")
    s, _ = socks_connect_auth(f.addr, "alice", USERS["alice"], *echo_server.addr)
    with s:
        s.sendall(b"x" * 48 * 1024)
        recv_exact(s, 48 * 1024)
        time.sleep(2.5)  # two ticks of the workers' heartbeat: nothing ends it
        s.sendall(b"still here")
        assert recv_exact(s, 10) == b"still here"


def test_usage_survives_restart(ferry, tmp_path, echo_server):
    quota = f"state_file = quota.state\nstate_interval = 1s\nuser alice = 64k/1d"
    f, _ = start(ferry, tmp_path, quota)
    host, port = echo_server.addr
    move_bytes(f.addr, echo_server.addr, "alice", 40 * 1024)
    assert f.stop() == 0
    state = (tmp_path / "quota.state").read_text()
    assert state.startswith("ferry-quota-state 1\n"), state
    line = [l for l in state.splitlines() if l.startswith("user alice ")]
    assert line and int(line[0].split()[3]) >= 80 * 1024, state
    assert not (tmp_path / "quota.state.tmp").exists()
    f2, maddr = start(ferry, tmp_path, quota)
    assert socks_request_rep(f2.addr, "alice", host, port) == REP_NOT_ALLOWED
    assert socks_request_rep(f2.addr, "bob", host, port) == REP_OK
    assert scrape(maddr).get("ferry_user_quota_used_bytes", user="alice") >= 80 * 1024


def test_corrupt_state_file_is_a_warning(ferry, tmp_path, echo_server):
    now = int(time.time())
    (tmp_path / "quota.state").write_text("ferry-quota-state 1\nuser alice 12 notanumber\n"
                                          f"user bob {now - 60} 70000\n\x00\x01garbage\n"
                                          f"user carol 1 70000\n")
    f, _ = start(ferry, tmp_path, "state_file = quota.state\nuser * = 64k/1d")
    f.wait_log(r"quota.state:2: quota state: USED is not a number of bytes; line skipped")
    host, port = echo_server.addr
    assert socks_request_rep(f.addr, "alice", host, port) == REP_OK
    assert socks_request_rep(f.addr, "bob", host, port) == REP_NOT_ALLOWED  # its good line counts
    # carol's period (1 day from 1970) ended long ago: a new one starts empty.
    assert socks_request_rep(f.addr, "carol", host, port) == REP_OK
    (tmp_path / "quota.state").write_bytes(b"\x89PNG\r\n not a state file")
    f2, _ = start(ferry, tmp_path, "state_file = quota.state\nuser alice = 64k/1d")
    f2.wait_log(r"not a ferry quota state file")
    assert socks_request_rep(f2.addr, "alice", host, port) == REP_OK


def test_reload_keeps_counts_and_drops_removed_users(ferry, tmp_path, echo_server):
    f, maddr = start(ferry, tmp_path, "user alice = 64k/1d\nuser bob = 64k/1d")
    host, port = echo_server.addr
    move_bytes(f.addr, echo_server.addr, "alice", 40 * 1024)
    wait_refused(lambda: socks_request_rep(f.addr, "alice", host, port) == REP_NOT_ALLOWED,
                 "alice refused")
    before = user_value(maddr, "ferry_user_bytes_total", "alice", direction="up")
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied")
    assert socks_request_rep(f.addr, "alice", host, port) == REP_NOT_ALLOWED
    assert user_value(maddr, "ferry_user_bytes_total", "alice", direction="up") >= before
    # alice leaves the userlist: her series go; bob stays.
    write_users(tmp_path, ["bob", "carol"])
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    e = scrape(maddr)
    assert not e.find("ferry_user_bytes_total", user="alice"), "alice still in /metrics"
    assert e.find("ferry_user_bytes_total", user="bob")
    # A raised quota lets a user back in at once.
    write_users(tmp_path)
    f.config_path.write_text(f.config_path.read_text().replace("alice = 64k/1d", "alice = 1g/1d"))
    off = f.log_offset()
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied", start=off)
    assert socks_request_rep(f.addr, "alice", host, port) == REP_OK


@pytest.mark.parametrize("line,msg", [
    ("user alice = 50x/30d", "user alice: '50x' is not a size"),
    ("user alice = 50g/30", "'30' is not a period from 1m to 366d"),
    ("user alice = 3 sessons", "expected SIZE/PERIOD (like 50g/30d) or N sessions"),
    ("user alice", "expected 'user NAME = SPEC'"),
    ("max_users = 0", "quota.max_users: '0' is not a number from 1 to 65536"),
    ("colour = blue", "quota: unknown key 'colour'"),
])
def test_bad_quota_line_names_file_and_line(tmp_path, line, msg):
    write_users(tmp_path)
    cfg = tmp_path / "ferry.conf"
    cfg.write_text(f"[auth]\nuserlist = users.txt\n\n[quota]\nuser bob = 1g/1d\n{line}\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0, r.text
    assert f"{cfg}:6: quota" in r.text and msg in r.text, r.text


def test_quotas_need_a_userlist(tmp_path):
    cfg = tmp_path / "ferry.conf"
    cfg.write_text("[quota]\nuser bob = 1g/1d\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0 and f"{cfg}:2: quota: quotas apply to authenticated users" in r.text, r.text
