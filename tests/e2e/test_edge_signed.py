# SPDX-License-Identifier: BSD-2-Clause
"""Signed host names on edge routes (docs/edge.md "Signed host names"):
tokens made by `ferry edge sign` accepted over Minecraft (the token taken off
the handshake the backend sees, Forge markers kept) and TLS SNI (bytes
unchanged); expired, wrong-key, unknown-key and missing tokens refused; hop
signatures computed here independently (keyed BLAKE2b-128 from hashlib)
accepted once, with the vouched client in the PROXY v2 header, and refused
when replayed, stale, from the future or tampered; configuration errors
(no keyring, a keyring others can read, a keyring of comments); the
counters; a reload that retires a key.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import re
import signal
import socket
import struct
import time

import pytest

from edgelib import Recorder, client_hello, closed, exchange, hostport, mc_handshake, mc_login, route_one
from ferrylib import run_ferry
from opslib import metrics_addr, scrape, validate_exposition, wait_until

KEY1 = bytes(range(32))
KEY2 = bytes(range(100, 132))


def keyring(path, lines: list[tuple[int, str, bytes]], mode: int = 0o600) -> str:
    path.write_text("# edge keys\n" + "".join(f"{k} {s} {base64.b64encode(v).decode()}\n" for k, s, v in lines))
    os.chmod(path, mode)
    return str(path)


def ferry_sign(keys: str, *args: str) -> str:
    r = run_ferry(["edge", "sign", "--keys", keys, *args])
    assert r.rc == 0, r.text
    return r.out.strip()


def hop_tag(key: bytes, kid: int, ts: int, host: str, ip: str, port: int) -> bytes:
    """The tag of a hop signature, from the format in docs/edge.md."""
    a = ipaddress.ip_address(ip)
    fam, raw = (4, a.packed + bytes(12)) if a.version == 4 else (6, a.packed)
    msg = (b"ferry-signhost-1" + bytes([1, kid]) + struct.pack(">Q", ts) + bytes([len(host)]) + host.encode()
           + bytes([fam]) + raw + struct.pack(">H", port))
    return hashlib.blake2b(msg, key=key, digest_size=16).digest()


def hop_addr(host: str, key: bytes, kid: int, ts: int, ip: str, port: int, tag: bytes | None = None) -> str:
    tag = tag if tag is not None else hop_tag(key, kid, ts, host, ip, port)
    where = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    return f"{host}\0ferry1\0{kid}.{ts}.{where}.{tag.hex()}"


@pytest.fixture
def backs():
    made = {n: Recorder(n) for n in ("A", "B", "C")}
    yield made
    for r in made.values():
        r.close()


def conf(backs, keys: str, extra: str = "") -> str:
    a, b, c = (hostport(backs[n].addr) for n in "ABC")
    return (
        "workers = 2\nconnect_timeout = 3s\nshutdown_timeout = 2s\nhandshake_timeout = 3s\n"
        "[metrics]\nlisten = 127.0.0.1:0\n"
        "\n[edge games]\nlisten = 127.0.0.1:0\nsniff = auto\n"
        f"signed_keys = {keys}\nsigned_skew = 5s\n"
        f"route = *.play.test -> {a} signed=token\n"
        f"route = hop.test -> {b} signed=hop proxy_protocol=v2\n"
        f"route = open.test -> {c}\n" + extra
    )


def start(ferry, text: str):
    f = ferry(raw_config=text)
    return f, f.addrs[1]


def route_mc(addr, backend: Recorder, host: str, seen: str, tail: bytes = b"") -> None:
    """A handshake for host (and tail) routed to backend, which sees it
    with the address seen."""
    n = len(backend.received) + 1
    line, s = exchange(addr, [mc_handshake(host) + tail])
    assert line == backend.name.encode() + b"\n", host
    s.shutdown(socket.SHUT_WR)
    assert backend.wait_count(n) == mc_handshake(seen) + tail
    s.close()


def test_tokens(ferry, backs, tmp_path):
    keys = keyring(tmp_path / "edge.keys", [(1, "verify", KEY2), (3, "active", KEY1)])
    f, addr = start(ferry, conf(backs, keys))
    A, C = backs["A"], backs["C"]
    host = ferry_sign(keys, "--host", "Play.Test", "--ttl", "1h")
    assert re.fullmatch(r"d[a-z2-7]{8}-[a-z2-7]{26}\.play\.test", host), host  # kid 3 is "d"
    # Minecraft: routed, and the backend sees play.test (Forge marker kept,
    # Login Start after it unchanged).
    route_mc(addr, A, host.upper() + "\0FML2\0", "play.test\0FML2\0", mc_login())
    # TLS SNI: routed, every byte unchanged.
    route_one(addr, [client_hello(host)], A)
    # A token of the verify-only key 1 is good too; one made for another
    # domain, an expired one, one of an unknown key and none are not.
    k1only = keyring(tmp_path / "k1", [(1, "active", KEY2)])
    route_mc(addr, A, ferry_sign(k1only, "--host", "play.test"), "play.test")
    other = ferry_sign(keys, "--host", "other.test").split(".", 1)[0] + ".play.test"
    old = ferry_sign(keys, "--host", "play.test", "--at", str(int(time.time()) - 7200), "--ttl", "1h")
    unknown = ferry_sign(keyring(tmp_path / "k9", [(9, "active", KEY1)]), "--host", "play.test")
    wrong = ferry_sign(keyring(tmp_path / "kw", [(3, "active", KEY2)]), "--host", "play.test")
    far = ferry_sign(keys, "--host", "play.test", "--ttl", "60d")
    for h in (other, old, unknown, wrong, far, "plain.play.test"):
        assert closed(addr, [mc_handshake(h)]), h
    assert closed(addr, [client_hello(old)])
    route_one(addr, [mc_handshake("open.test")], C)  # routes without signed= are untouched
    for why in ("bad-tag", "expired", "unknown-kid", "too-long", "no-sig"):
        f.wait_log(rf"cmd=EDGE .*end=signature:{why} edge=games")
    m = scrape(metrics_addr(f))
    assert validate_exposition(m.text) == []
    want = {"ok": 3, "bad-tag": 2, "expired": 2, "unknown-kid": 1, "too-long": 1, "no-sig": 1}
    for result, v in want.items():
        assert m.get("ferry_edge_signed_total", edge="games", result=result) == v, result
    assert m.get("ferry_edge_rejects_total", edge="games", reason="signature") == 7


def proxy_v2_src(got: bytes) -> tuple[tuple[str, int], bytes]:
    """The source address of the PROXY v2 header at the start of got, and
    the bytes after the header."""
    assert got.startswith(b"\r\n\r\n\x00\r\nQUIT\n") and got[12] == 0x21
    ln = struct.unpack(">H", got[14:16])[0]
    if got[13] == 0x11:
        src = (socket.inet_ntop(socket.AF_INET, got[16:20]), struct.unpack(">H", got[24:26])[0])
    else:
        assert got[13] == 0x21
        src = (socket.inet_ntop(socket.AF_INET6, got[16:32]), struct.unpack(">H", got[48:50])[0])
    return src, got[16 + ln :]


def hop_once(addr, B: Recorder, address: str, tail: bytes = b"") -> bytes:
    n = len(B.received) + 1
    line, s = exchange(addr, [mc_handshake(address) + tail])
    assert line == b"B\n", address
    s.shutdown(socket.SHUT_WR)
    got = B.wait_count(n)
    s.close()
    return got


def test_hop(ferry, backs, tmp_path):
    keys = keyring(tmp_path / "edge.keys", [(2, "active", KEY1)])
    f, addr = start(ferry, conf(backs, keys))
    B = backs["B"]
    now = int(time.time())
    a = hop_addr("hop.test", KEY1, 2, now, "203.0.113.7", 4444)
    src, rest = proxy_v2_src(hop_once(addr, B, a, mc_login()))
    assert src == ("203.0.113.7", 4444)  # the client the front vouched for
    assert rest == mc_handshake("hop.test") + mc_login()  # the signature taken off
    f.wait_log(r"cmd=EDGE .* edge=games route=hop\.test .*signed=ok vouched=203\.0\.113\.7:4444")
    # An IPv6 client through an IPv4 front: the header is IPv6 (the
    # front's address IPv4-mapped). The same ferry sign computes the same tag.
    a6 = ferry_sign(keys, "--hop", "--host", "hop.test", "--client", "[2001:db8::5]:7", "--raw")
    ts6 = int(a6.split("\0")[2].split(".")[1])
    assert abs(ts6 - now) < 60 and a6 == hop_addr("hop.test", KEY1, 2, ts6, "2001:db8::5", 7)
    src, _ = proxy_v2_src(hop_once(addr, B, a6))
    assert src == ("2001:db8::5", 7)
    # Replayed, stale, future, tampered, malformed, absent: refused.
    bad = [
        a,
        hop_addr("hop.test", KEY1, 2, now - 60, "203.0.113.7", 4444),
        hop_addr("hop.test", KEY1, 2, now + 60, "203.0.113.7", 4444),
        hop_addr("hop.test", KEY1, 2, now, "203.0.113.7", 4445, tag=hop_tag(KEY1, 2, now, "hop.test", "203.0.113.7", 4444)),
        "hop.test\0ferry1\0" + "2.x.1.2.3.4:5." + "00" * 16,
        "hop.test",
    ]
    for x in bad:
        assert closed(addr, [mc_handshake(x)]), repr(x)
    for why in ("replayed", "expired", "not-yet-valid", "bad-tag", "bad-format", "no-sig"):
        f.wait_log(rf"cmd=EDGE .*end=signature:{why} edge=games route=- host=hop\.test")
    assert closed(addr, [client_hello("hop.test")])  # SNI cannot carry a hop signature


def test_reload_retires_a_key(ferry, backs, tmp_path):
    kp = tmp_path / "edge.keys"
    keys = keyring(kp, [(1, "active", KEY1)])
    f, addr = start(ferry, conf(backs, keys))
    A = backs["A"]
    host = ferry_sign(keys, "--host", "play.test")
    route_mc(addr, A, host, "play.test")
    keyring(kp, [(1, "retired", KEY1), (2, "active", KEY2)])
    f.send_signal(signal.SIGHUP)
    f.wait_log(r"reload: configuration applied")
    wait_until(lambda: closed(addr, [mc_handshake(host)]), 5, "the retired key's token refused")
    route_mc(addr, A, ferry_sign(keys, "--host", "play.test"), "play.test")


@pytest.mark.parametrize(
    "keys_line,keys_text,mode,want",
    [
        ("", None, 0o600, r"x\.conf:\d+: edge games: signed routes need signed_keys = FILE"),
        ("signed_keys = k\n", "1 active " + base64.b64encode(KEY1).decode() + "\n", 0o644,
         r"x\.conf:6: edge games: signed_keys: .*/k: readable by others \(mode 0644\)"),
        ("signed_keys = k\n", "# nothing but a comment\n", 0o600,
         r"x\.conf:6: edge games: signed_keys: .*/k: no key that verifies"),
        ("signed_keys = k\n", "1 active notbase64\n", 0o600, r"signed_keys: .*/k:1: key 1 is not the base64 of 32 bytes"),
        ("signed_keys = k\n", "1 active " + base64.b64encode(KEY1).decode() + "\n1 verify "
         + base64.b64encode(KEY2).decode() + "\n", 0o600, r"/k:2: key id 1 twice"),
    ],
)
def test_config_errors(tmp_path, keys_line, keys_text, mode, want):
    if keys_text is not None:
        (tmp_path / "k").write_text(keys_text)
        os.chmod(tmp_path / "k", mode)
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n\n[edge games]\nlisten = 127.0.0.1:0\nroute = *.p.test -> 127.0.0.1:9 signed=token\n"
                 + keys_line)
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0
    assert re.search(want, r.text), r.text


def test_hop_on_a_tls_edge_is_an_error(tmp_path):
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n[edge t]\nlisten = 127.0.0.1:0\nsniff = tls\nroute = a.test -> 127.0.0.1:9 signed=hop\n")
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0 and "signed=hop needs a Minecraft handshake" in r.text, r.text
