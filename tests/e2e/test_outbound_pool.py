# SPDX-License-Identifier: BSD-2-Clause
"""Pools of outbounds ([outbound NAME] members = ...): failover that users
can trust, end to end with real parents on loopback (a second and third
ferry serving SOCKS5).

- failover: a session goes to the first member that is up; kill it, and
  new sessions go to the next member within the one connect budget (the
  session succeeds), the dead member is logged down once and shows up=0 in
  /metrics; start it again and it is back (logged up) as soon as a health
  check passes, and sessions go to it again;
- round-robin spreads sessions over the members, least-connections sends a
  session to the member carrying fewer (ferry_outbound_active);
- a pool of direct members carries sessions; a pool whose members are all
  down tries them all anyway and answers the client's failure;
- a parent's denial is an answer, not an outage: no other member is tried;
- reloads while health checks are in flight (connects to a parent that
  never answers) stop the old checks cleanly (no sanitizer finding).

Every wait is bounded; the parents are ferries, so nothing to install.
"""

import re
import signal
import socket
import time
import urllib.request

import pytest

from ferrylib import (
    echo_roundtrip,
    expect_failure,
    handshake,
    open_client,
    request,
    socks_connect,
    unused_refused_port,
)
from opslib import free_port, metrics_addr, scrape, validate_exposition

REP_GENERAL, REP_NOT_ALLOWED = 0x01, 0x02


def parent(ferry, port: int, extra: str | None = None):
    """A ferry serving SOCKS5 on 127.0.0.1:port (the member's parent)."""
    return ferry(listens=(f"127.0.0.1:{port}",), extra=extra)


def pool_conf(members: dict, pool: str = "members = a, b\n", metrics: bool = True) -> str:
    """[outbound NAME] url = ... for each member (url None: direct), then
    [outbound p] with the pool's keys, and a metrics endpoint."""
    text = ""
    for name, url in members.items():
        text += f"[outbound {name}]\n" + (f"url = {url}\n" if url else "source = 127.0.0.1\n") + "\n"
    text += "[outbound p]\n" + pool + "\n"
    if metrics:
        text += "[metrics]\nlisten = 127.0.0.1:0\n"
    return text


def via_of(f, sock_name, timeout: float = 5.0) -> str:
    return f.access_for(sock_name, timeout=timeout).get("via", "")


def session(f, target, payload: bytes = b"ping") -> str:
    """One SOCKS5 CONNECT through f to target with an echo; returns the
    access log's via= once the session has closed."""
    s, _ = socks_connect(f.addr, *target)
    name = s.getsockname()
    with s:
        echo_roundtrip(s, payload)
    return via_of(f, name)


def wait_metric(maddr, name: str, want: float, timeout: float = 10.0, **labels) -> None:
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = scrape(maddr).get(name, **labels)
        if got == want:
            return
        time.sleep(0.1)
    raise AssertionError(f"{name}{labels} is {got}, expected {want} within {timeout}s")


def test_failover_kill_and_come_back(ferry, echo_server):
    """Sessions use the first member; with it killed they go to the next at
    once; health checks bring it back, logged, and sessions return to it."""
    pa, pb = free_port(), free_port()
    a = parent(ferry, pa)
    b = parent(ferry, pb)
    f = ferry(
        config={"outbound": "p", "connect_timeout": "3s"},
        extra=pool_conf(
            {"a": f"socks5://127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"},
            pool="members = a, b\nhealth_check = 300ms\n"
            f"health_target = 127.0.0.1:{echo_server.addr[1]}\nbackoff = 500ms\n",
        ),
    )
    maddr = metrics_addr(f)
    assert session(f, echo_server.addr) == "a"
    assert session(f, echo_server.addr) == "a"
    exp = scrape(maddr)
    assert exp.get("ferry_outbound_up", outbound="a") == 1
    assert exp.get("ferry_outbound_sessions_total", outbound="a") >= 2
    assert exp.get("ferry_outbound_sessions_total", outbound="p") >= 2
    assert exp.get("ferry_outbound_latency_seconds", outbound="a") > 0
    assert exp.find("ferry_outbound_up", outbound="reject") == []
    assert not validate_exposition(exp.text)

    a.stop()
    # Whether a check or a session finds it first, every session succeeds.
    for _ in range(3):
        assert session(f, echo_server.addr) == "b"
    f.wait_log(r"outbound a \(member of pool p\): down: .*skipping it for ")
    assert len(re.findall(r"outbound a \(member of pool p\): down:", f.log_text())) == 1
    wait_metric(maddr, "ferry_outbound_up", 0, outbound="a")
    exp = scrape(maddr)
    assert exp.get("ferry_outbound_up", outbound="b") == 1
    assert exp.get("ferry_outbound_up", outbound="p") == 1
    assert exp.get("ferry_outbound_failures_total", outbound="a") >= 1

    off = f.log_offset()
    a2 = parent(ferry, pa)
    f.wait_log(r"outbound a \(member of pool p\): up: its health check passed", timeout=15, start=off)
    wait_metric(maddr, "ferry_outbound_up", 1, outbound="a")
    assert session(f, echo_server.addr) == "a"
    a2.stop()
    b.stop()


def test_round_robin_spreads(ferry, echo_server):
    pa, pb = free_port(), free_port()
    parent(ferry, pa)
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf(
            {"a": f"socks5://127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"},
            pool="members = a, b\nstrategy = round-robin\n",
        ),
    )
    vias = [session(f, echo_server.addr) for _ in range(6)]
    assert vias.count("a") == 3 and vias.count("b") == 3, vias
    exp = scrape(metrics_addr(f))
    assert exp.get("ferry_outbound_sessions_total", outbound="a") == 3
    assert exp.get("ferry_outbound_sessions_total", outbound="b") == 3
    assert exp.get("ferry_outbound_sessions_total", outbound="p") == 6


def test_least_connections(ferry, echo_server):
    """With a session held through one member, the next goes to the other;
    ferry_outbound_active counts them, and falls back to 0 at close."""
    pa, pb = free_port(), free_port()
    parent(ferry, pa)
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf(
            {"a": f"socks5://127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"},
            pool="members = a, b\nstrategy = least-connections\n",
        ),
    )
    maddr = metrics_addr(f)
    held = []
    for i in range(4):
        s, _ = socks_connect(f.addr, *echo_server.addr)
        echo_roundtrip(s, b"held %d" % i)
        held.append(s)
        exp = scrape(maddr)
        na = exp.get("ferry_outbound_active", outbound="a")
        nb = exp.get("ferry_outbound_active", outbound="b")
        assert na + nb == i + 1 and abs(na - nb) <= 1, (i, na, nb)
    assert scrape(maddr).get("ferry_outbound_active", outbound="p") == 4
    names = [s.getsockname() for s in held]
    for s in held:
        s.close()
    assert sorted(via_of(f, n) for n in names) == ["a", "a", "b", "b"]
    wait_metric(maddr, "ferry_outbound_active", 0, outbound="a")
    wait_metric(maddr, "ferry_outbound_active", 0, outbound="p")
    assert not validate_exposition(scrape(maddr).text)


def test_direct_members_and_all_down(ferry, echo_server, http_server):
    """Direct members carry sessions (SOCKS and HTTP alike); their health
    check connects to the target, and when it fails for all of them the
    members are tried anyway. A pool whose parents are all gone tries each
    (both logged down) and answers a general failure."""
    holder, dead = unused_refused_port()
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf({"d1": None, "d2": None},
                        pool=f"members = d1, d2\nhealth_check = 200ms\nhealth_target = 127.0.0.1:{dead}\n"),
    )
    for m in ("d1", "d2"):
        f.wait_log(rf"outbound {m} \(member of pool p\): down: health check to 127\.0\.0\.1 port {dead}: "
                   r"cannot connect: ECONNREFUSED; skipping it for 5s")
    assert session(f, echo_server.addr) == "d1"
    url = http_server.url("small.txt")
    with urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{f.port}"})
    ).open(url, timeout=10) as r:
        assert r.read() == b"hello from ferry's e2e tests\n" * 37
    exp = scrape(metrics_addr(f))
    assert exp.get("ferry_outbound_sessions_total", outbound="d1") == 2
    f.wait_log(r"outbound d1 \(member of pool p\): up: a session connected through it")
    assert exp.get("ferry_outbound_up", outbound="direct") == 1
    holder.close()

    pa, pb = free_port(), free_port()  # nobody listens
    g = ferry(
        config={"outbound": "p"},
        extra=pool_conf({"a": f"socks5://127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"}),
    )
    for round_ in range(2):  # the second time both are in their back-off: tried anyway
        s = open_client(g.addr)
        with s:
            handshake(s)
            s.sendall(request(*echo_server.addr))
            expect_failure(s, REP_GENERAL)
            name = s.getsockname()
        line = g.access_for(name)
        assert line.get("end") == "parent-unreachable", line
    for m in ("a", "b"):
        g.wait_log(rf"outbound {m} \(member of pool p\): down: a session's connect failed: "
                   r"parent-unreachable \(ECONNREFUSED\)")
    exp = scrape(metrics_addr(g))
    assert exp.get("ferry_outbound_up", outbound="p") == 0
    assert exp.get("ferry_outbound_failures_total", outbound="a") == 2
    assert exp.get("ferry_outbound_failures_total", outbound="p") == 2


def test_parent_denial_is_not_failed_over(ferry, echo_server):
    """A parent whose rules refuse the destination answers for the pool:
    the next member is not asked, and the member stays up."""
    pa, pb = free_port(), free_port()
    parent(ferry, pa, extra="[rules]\ndeny to 127.0.0.0/8\n")
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf({"a": f"socks5://127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"}),
    )
    s = open_client(f.addr)
    with s:
        handshake(s)
        s.sendall(request(*echo_server.addr))
        expect_failure(s, REP_NOT_ALLOWED)
        name = s.getsockname()
    line = f.access_for(name)
    assert line.get("via") == "a" and line.get("end") == "parent-denied", line
    exp = scrape(metrics_addr(f))
    assert exp.get("ferry_outbound_up", outbound="a") == 1
    assert exp.get("ferry_outbound_sessions_total", outbound="b") == 0


def test_reload_while_checks_run(ferry, echo_server, blackhole):
    """Health checks to a parent that never answers are in flight at each
    reload: the old configuration's checks stop, the new one's run, and
    sessions keep working (the sanitizers check the rest at exit)."""
    pb = free_port()
    parent(ferry, pb)
    conf = pool_conf(
        {"a": f"socks5://127.0.0.1:{blackhole}", "b": f"socks5://127.0.0.1:{pb}"},
        pool="members = a, b\nhealth_check = 100ms\n"
        f"health_target = 127.0.0.1:{echo_server.addr[1]}\n",
    )
    f = ferry(config={"outbound": "p", "connect_timeout": "1s"}, extra=conf)
    f.wait_log(r"outbound a \(member of pool p\): down: health check to 127\.0\.0\.1 port \d+: "
               r"no answer within the connect budget", timeout=10)
    for i in range(5):
        off = f.log_offset()
        f.send_signal(signal.SIGHUP)
        f.wait_log("SIGHUP", start=off)
        time.sleep(0.15)
    # The new configuration's health is fresh and checked again.
    f.wait_log(r"outbound a \(member of pool p\): down: health check", timeout=10, start=off)
    assert session(f, echo_server.addr) == "b"
    assert f.alive()


def test_parent_refusing_credentials_is_failed_over(ferry, tmp_path, echo_server):
    """A parent that refuses ferry's credentials will refuse every session
    until they are fixed: the pool marks it down (one warning) and the
    session goes on through the next member."""
    (tmp_path / "users.txt").write_text("alice:plain:good-pw\n")
    pa = free_port()
    ferry(listens=(f"127.0.0.1:{pa}",), auth={"userlist": str(tmp_path / "users.txt")})
    pb = free_port()
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf({"a": f"socks5://alice:bad-pw@127.0.0.1:{pa}", "b": f"socks5://127.0.0.1:{pb}"}),
    )
    assert session(f, echo_server.addr) == "b"
    f.wait_log(r"outbound a \(member of pool p\): down: a session's connect failed: "
               r"parent-auth-failed; skipping it for 5s")
    assert session(f, echo_server.addr) == "b"  # skipped now: b at once
    exp = scrape(metrics_addr(f))
    assert exp.get("ferry_outbound_failures_total", outbound="a") == 1
    assert exp.get("ferry_outbound_up", outbound="a") == 0


def test_member_that_cannot_carry_is_passed_over(ferry, echo_server):
    """An https member nothing answers (or that this build cannot carry
    yet) is passed over: the session goes through the next member."""
    pb = free_port()
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p"},
        extra=pool_conf({"s": f"https://127.0.0.1:{free_port()}", "b": f"socks5://127.0.0.1:{pb}"},
                        pool="members = s, b\n"),
    )
    assert session(f, echo_server.addr) == "b"


def test_silent_member_leaves_time_for_the_next(ferry, echo_server, blackhole):
    """A member that never answers gets its share of the pool's connect
    budget, not all of it: the session still reaches the next member."""
    pb = free_port()
    parent(ferry, pb)
    f = ferry(
        config={"outbound": "p", "connect_timeout": "2s"},
        extra=pool_conf({"a": f"socks5://127.0.0.1:{blackhole}", "b": f"socks5://127.0.0.1:{pb}"}),
    )
    assert session(f, echo_server.addr) == "b"
    f.wait_log(r"outbound a \(member of pool p\): down: a session's connect failed: parent-timeout")


def test_health_check_leaves_from_the_members_source(ferry, echo_server):
    """A member's check connects from where its sessions leave (source)."""
    ferry(config={"outbound": "p"},
          extra=f"[outbound d]\nsource = 127.0.0.9\n[outbound p]\nmembers = d\n"
                f"health_check = 200ms\nhealth_target = 127.0.0.1:{echo_server.addr[1]}\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(p[0] == "127.0.0.9" for p in list(echo_server.peers)):
        time.sleep(0.05)
    assert any(p[0] == "127.0.0.9" for p in list(echo_server.peers)), list(echo_server.peers)[-5:]
