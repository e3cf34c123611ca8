# SPDX-License-Identifier: BSD-2-Clause
"""Edge flood defences beyond the per-source ones (docs/edge.md "Flood
defences"): static deny and allow lists, dynamic bans fed by repeated
failures (garbage, unknown hosts) that end on time and never touch other
sources, and per-prefix (/24) caps and rates across the addresses of one
prefix; counters and configuration errors.
"""

from __future__ import annotations

import re
import time

import pytest

from edgelib import Recorder, exchange, hostport, mc_handshake
from ferrylib import run_ferry
from opslib import metrics_addr, scrape

METRICS = "[metrics]\nlisten = 127.0.0.1:0\n"


@pytest.fixture
def backend():
    r = Recorder("A")
    yield r
    r.close()


def start(ferry, backend, extra: str):
    f = ferry(raw_config=(
        "workers = 2\nconnect_timeout = 3s\nshutdown_timeout = 2s\nhandshake_timeout = 3s\n" + METRICS
        + f"\n[edge games]\nlisten = 127.0.0.1:0\nsniff = mc\nroute = a.mc.test -> {hostport(backend.addr)}\n"
        + extra))
    return f, f.addrs[1]


def served(addr, source: str, host: str = "a.mc.test") -> bool:
    line, s = exchange(addr, [mc_handshake(host)], source=source)
    s.close()
    return line == b"A\n"


def rejects(f, reason: str) -> float:
    return scrape(metrics_addr(f)).get("ferry_edge_rejects_total", edge="games", reason=reason)


def test_deny_and_allow_lists(ferry, backend):
    f, addr = start(ferry, backend, "allow = 127.0.0.0/29, ::1\ndeny = 127.0.0.3\n")
    assert served(addr, "127.0.0.2")
    assert not served(addr, "127.0.0.3")  # denied inside the allowed range: deny wins
    assert not served(addr, "127.0.0.9")  # outside the allow list
    assert rejects(f, "denied") == 2
    f.wait_log(r"edge games: connection from 127\.0\.0\.3:\d+ refused \(denied\)")


def test_lists_survive_keys_set_after_them(ferry, backend, tmp_path):
    """offline_motd and signed_keys once freed the allow / deny lists set
    before them (a use after free at accept, a double free at exit)."""
    keys = tmp_path / "edge.keys"
    keys.write_text("1 active " + "QUFB" * 10 + "QUE=\n")
    keys.chmod(0o600)
    f, addr = start(ferry, backend, "allow = 127.0.0.0/29\ndeny = 127.0.0.3\nhealth_check = 1h\n"
                    f"offline_motd = Back soon\nsigned_keys = {keys}\n")
    assert served(addr, "127.0.0.2")
    assert not served(addr, "127.0.0.3")
    assert not served(addr, "127.0.0.9")
    assert f.stop() == 0
    assert "AddressSanitizer" not in f.log_text()


def test_repeated_failures_ban_a_source_for_a_while(ferry, backend):
    f, addr = start(ferry, backend, "ban_after = 3\nban_window = 10s\nban_time = 2s\n")
    assert served(addr, "127.0.0.2")
    for _ in range(3):  # unknown hosts, then garbage: failures
        line, s = exchange(addr, [mc_handshake("nobody.test")], source="127.0.0.2")
        s.close()
        assert line == b""
    f.wait_log(r"edge games: 127\.0\.0\.2 banned for 2 s after 3 failures in 10 s \(the last: unknown-host\)")
    t0 = time.monotonic()
    assert not served(addr, "127.0.0.2")  # a good handshake too: refused at accept
    assert served(addr, "127.0.0.3")  # other sources are not touched
    m = scrape(metrics_addr(f))
    assert m.get("ferry_edge_bans_total", edge="games") == 1
    assert m.get("ferry_edge_rejects_total", edge="games", reason="banned") >= 1
    time.sleep(max(0.0, 2.3 - (time.monotonic() - t0)))
    deadline = time.monotonic() + 3
    while not served(addr, "127.0.0.2"):  # the ban ends on time
        assert time.monotonic() < deadline, "still banned long after ban_time"
        time.sleep(0.2)


def test_per_prefix_cap_across_addresses(ferry, backend):
    f, addr = start(ferry, backend, "per_prefix_connections = 3\nper_source_connections = 0\n")
    held = []
    for src in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):  # one /24: 127.0.0.0/24
        line, s = exchange(addr, [mc_handshake("a.mc.test")], source=src)
        assert line == b"A\n"
        held.append(s)
    assert not served(addr, "127.0.0.5")  # the fourth in the prefix
    assert served(addr, "127.0.1.2")  # another /24
    assert rejects(f, "per-prefix") == 1
    held[0].close()
    deadline = time.monotonic() + 3
    while not served(addr, "127.0.0.5"):  # one ended: room again
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for s in held[1:]:
        s.close()


def test_per_prefix_rate(ferry, backend):
    f, addr = start(ferry, backend, "per_prefix_rate = 1\nper_prefix_burst = 2\n")
    got = [served(addr, f"127.0.0.{i}") for i in range(2, 8)]
    assert got.count(True) <= 2 + 2 and got.count(False) >= 1, got  # burst, plus refills on a slow machine
    assert rejects(f, "prefix-rate") == got.count(False)


@pytest.mark.parametrize(
    "body,want",
    [
        ("deny = 10.0.0.0/33\n", r"x\.conf:5: edge e: deny: '10\.0\.0\.0/33' is not an address or range"),
        ("allow = \n", r"allow"),
        ("ban_window = 0s\n", r"ban_window: '0s' is not valid"),
        ("per_prefix_rate = -1\n", r"per_prefix_rate"),
    ],
)
def test_config_errors(tmp_path, body, want):
    p = tmp_path / "x.conf"
    p.write_text("listen = 127.0.0.1:0\n[edge e]\nlisten = 127.0.0.1:0\nroute = a.test -> 127.0.0.1:9\n" + body)
    r = run_ferry(["serve", "--check", "-c", str(p)])
    assert r.rc != 0 and re.search(want, r.text), r.text

