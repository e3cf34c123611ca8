# SPDX-License-Identifier: BSD-2-Clause
"""Per-user, per-listener and per-outbound accounting in /metrics: the bytes
a client moved are the bytes counted (payload: the handshakes are not in
it), sessions are counted per user, names from the wire never make a
series (10,000 unknown names trying to log in leave /metrics as it was),
and accounting = no leaves the families out."""

from __future__ import annotations

import base64
import socket
import struct
from concurrent.futures import ThreadPoolExecutor

from acctlib import USERS, move_bytes, start, user_value, wait_user_value
from ferrylib import METHOD_USERPASS, greeting, open_client, recv_exact, run_ferry, userpass
from opslib import scrape, validate_exposition

UNKNOWN = 10_000


def http_tunnel_bytes(proxy, echo, user: str, n: int):
    """An HTTP CONNECT as user moving n bytes each way."""
    cred = base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()
    with open_client(proxy) as s:
        s.sendall(f"CONNECT {echo[0]}:{echo[1]} HTTP/1.1\r\nHost: x\r\n"
                  f"Proxy-Authorization: Basic {cred}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += recv_exact(s, 1)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(b"h" * n)
        assert recv_exact(s, n) == b"h" * n


def test_user_bytes_match_what_clients_sent(ferry, tmp_path, echo_server):
    f, maddr = start(ferry, tmp_path, "accounting = yes")
    move_bytes(f.addr, echo_server.addr, "alice", 100_000, chunk=10_000)
    http_tunnel_bytes(f.addr, echo_server.addr, "bob", 50_000)
    for user, n in (("alice", 100_000), ("bob", 50_000)):
        for d in ("up", "down"):
            v = wait_user_value(maddr, "ferry_user_bytes_total", user, lambda x, n=n: x >= n,
                                f"{user}'s bytes {d}", direction=d)
            assert v == n, f"{user} {d}: counted {v}, moved {n}"
        assert user_value(maddr, "ferry_user_sessions_total", user) == 1
    e = scrape(maddr)
    assert e.get("ferry_user_bytes_total", user="carol", direction="up") == 0
    assert e.get("ferry_user_sessions_active", user="alice") == 0
    assert not validate_exposition(e.text)
    listener = "127.0.0.1:0"  # the listen address as configured
    assert e.get("ferry_listener_bytes_total", listener=listener, direction="up") == 150_000
    assert e.get("ferry_listener_bytes_total", listener=listener, direction="down") == 150_000
    assert e.get("ferry_listener_sessions_total", listener=listener) >= 2
    assert e.get("ferry_outbound_bytes_total", outbound="direct", direction="up") == 150_000
    assert e.get("ferry_user_bytes_total", user=":other", direction="up") == 0


def socks4_attempt(addr, name: str):
    """A SOCKS4 CONNECT carrying name as its USERID: refused (no password
    can come with it), fast."""
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(struct.pack("!BBH4s", 4, 1, 80, bytes([127, 0, 0, 1])) + name.encode() + b"\0")
        assert recv_exact(s, 8)[1] == 0x5B


def socks5_attempt(addr, name: str):
    """A SOCKS5 login as name from an address the throttle blocked:
    refused before any verification, fast."""
    with socket.create_connection(addr, timeout=10, source_address=("127.0.0.3", 0)) as s:
        s.sendall(greeting((METHOD_USERPASS,)) + userpass(name, "x"))
        assert recv_exact(s, 4) == bytes([5, METHOD_USERPASS, 1, 1])


def series(e) -> set:
    return {(s.name, tuple(sorted(s.labels.items()))) for s in e.samples}


def test_unknown_user_names_do_not_grow_metrics(ferry, tmp_path):
    f, maddr = start(ferry, tmp_path, "max_users = 2",
                     auth={"max_failures": "1", "failure_window": "1h", "block_time": "1h"})
    socks5_attempt(f.addr, "first-failure")  # blocks 127.0.0.3 from now on
    f.wait_log(r"auth: 127\.0\.0\.3 blocked")
    before = series(scrape(maddr))
    names = [f"intruder-{i:05d}" for i in range(UNKNOWN)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: (socks4_attempt if i % 2 else socks5_attempt)(f.addr, names[i]),
                      range(UNKNOWN)))
    e = scrape(maddr)
    grown = series(e) - before
    assert not grown, f"new series: {sorted(grown)[:5]}"
    assert not any("intruder" in v for s in e.samples for v in s.labels.values())
    # max_users = 2: the third listed user is counted with the overflow.
    assert {s.labels["user"] for s in e.find("ferry_user_sessions_total")} == {"alice", "bob", ":other"}
    f.wait_log(r"quota.max_users: 1 users beyond the first 2")


def test_accounting_off(ferry, tmp_path, echo_server):
    f, maddr = start(ferry, tmp_path, "accounting = no")
    move_bytes(f.addr, echo_server.addr, "alice", 10_000)
    e = scrape(maddr)
    ours = ("ferry_user_bytes_total", "ferry_user_sessions_total", "ferry_listener_bytes_total",
            "ferry_outbound_bytes_total")
    assert not [s for s in e.samples if s.name in ours]
    assert e.get("ferry_relay_bytes_total", direction="up") >= 10_000


def test_accounting_no_with_quotas_is_an_error(tmp_path):
    (tmp_path / "users.txt").write_text("bob:plain:x\n")
    cfg = tmp_path / "ferry.conf"
    cfg.write_text("[auth]\nuserlist = users.txt\n[quota]\naccounting = no\nuser bob = 1g/1d\n")
    r = run_ferry(["serve", "--check", "-c", str(cfg)])
    assert r.rc != 0 and f"{cfg}:5: quota: quotas need accounting = yes" in r.text, r.text
