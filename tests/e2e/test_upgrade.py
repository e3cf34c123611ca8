# SPDX-License-Identifier: BSD-2-Clause
"""Zero-downtime upgrade: a second ferry started with --upgrade binds the
same port (SO_REUSEPORT; without --upgrade it refuses, test_reload_listen.py),
the old one gets SIGTERM, takes what waits in its accept queues, stops
listening and drains its sessions while the new one serves.

The kernel hands connections still queued on a closing listener to another
listener of the group only with net.ipv4.tcp_migrate_req = 1, a per-network
namespace setting: the loaded scenario runs in a private namespace
(`unshare -n`, root only) as the script opslib.py, which prints its counts
as JSON. The simpler scenario runs here directly.
"""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

import ferrylib
from ferrylib import echo_roundtrip, read_until_close, socks_connect
from opslib import free_port, listening_inodes, wait_until

HERE = Path(__file__).resolve().parent


def test_upgrade_under_load_in_netns(tmp_path):
    why = ferrylib.netns_unavailable("ip link set lo up && echo 1 > /proc/sys/net/ipv4/tcp_migrate_req")
    if why:
        pytest.skip(why)
    res = ferrylib.run_in_netns(HERE / "opslib.py",
                                ["upgrade", "--ferry", ferrylib.ferry_bin(), "--workdir", str(tmp_path),
                                 "--seconds", "3", "--threads", "4", "--long-mb", "4"],
                                timeout=150, what="the upgrade scenario")
    logs = "\n".join(f"--- ferry {k} ---\n{v}" for k, v in res.get("logs", {}).items())
    summary = {k: v for k, v in res.items() if k != "logs"}
    assert res["tcp_migrate_req"] == "1", summary
    assert res["failures"] == {}, f"failed connections during the upgrade: {summary}\n{logs}"
    assert res["ok"] == res["attempted"] and res["attempted"] >= 4, summary
    assert res["attempted"] > res["attempted_at_sigterm"] > 0, f"the load did not span the swap: {summary}"
    long = res["long"]
    assert long["error"] is None and long["verified"] == long["sent"] == long["total"], summary
    assert res["a_exit"] == 0, f"old ferry: {summary}\n{logs}"
    assert res["b_serves"] is True and res["b_alive"], summary
    assert res["exit"] == {"A": 0, "B": 0}, summary
    assert res["accepted"]["A"] and res["accepted"]["B"], f"both must have served: {summary}"
    assert res["sanitizer"] == {"A": [], "B": []}, logs


def test_old_drains_while_new_accepts(ferry, echo_server):
    port = free_port()
    cfg = {"listen": f"127.0.0.1:{port}", "access_log": "yes", "shutdown_timeout": "20s"}
    a = ferry(config=cfg, listens=())
    held, _ = socks_connect(a.addr, *echo_server.addr)
    with held:
        held_client = held.getsockname()
        echo_roundtrip(held, b"on the old ferry")
        b = ferry(config=cfg, listens=(), args=("--upgrade",))
        assert b.addr == a.addr
        off = a.log_offset()
        a.send_signal(signal.SIGTERM)
        a.wait_log(r"SIGTERM: stopping; draining 1 sessions", start=off)
        # once A has closed its listening sockets every new connection is B's
        wait_until(lambda: not listening_inodes(a.proc.pid), 5, "the old ferry closes its listeners")
        clients = []
        for i in range(3):
            s, _ = socks_connect(("127.0.0.1", port), *echo_server.addr)
            with s:
                clients.append(s.getsockname())
                echo_roundtrip(s, f"new connection {i}".encode())
                s.shutdown(socket.SHUT_WR)
                read_until_close(s)
        for c in clients:
            assert b.access_for(c)["reply"] == "succeeded"
        # the old session goes on, both ways, while A drains
        assert a.alive()
        echo_roundtrip(held, b"still relayed by the old ferry " * 100)
        held.shutdown(socket.SHUT_WR)
        read_until_close(held)
    assert a.wait(15) == 0, a.log_text()
    e = a.access_for(held_client)
    assert e["reply"] == "succeeded" and e["up"] == e["down"] == str(len(b"on the old ferry") + 3100), e
    assert not any(e.get("client") == f"127.0.0.1:{c[1]}" for c in clients for e in a.access_entries())
    # B goes on alone
    s, _ = socks_connect(("127.0.0.1", port), *echo_server.addr)
    with s:
        echo_roundtrip(s, b"after the old one left")
    assert b.alive()


# ---- a second ferry without --upgrade ------------------------------------------------------------
# SO_REUSEPORT lets any process of the same user join a port; a ferry refuses
# to, unless started with --upgrade (above). Exit status 1 as ferry(1) says.


def _refused(f, what: str, addr: tuple[str, int], timeout: float = 30.0) -> str:
    """f must exit 1, naming addr as in use by another process."""
    rc = f.wait(timeout)
    assert rc == 1, f"expected exit 1, got {rc}:\n{f.stderr_text()}"
    log = f.stderr_text()
    host, port = addr
    assert f"{what} {host}:{port}" in log and f"another process holds port {port}" in log, log
    assert "Address already in use" in log, log
    assert "ready:" not in log, log
    return log


def test_second_ferry_on_a_held_port_exits_1(ferry, echo_server):
    port = free_port()
    cfg = {"listen": f"127.0.0.1:{port}", "access_log": "yes"}
    a = ferry(config=cfg, listens=())
    b = ferry(config=cfg, listens=(), wait_ready=False, expect_exit=1)
    log = _refused(b, "listen", ("127.0.0.1", port))
    assert "--upgrade" in log, log  # the way to do it on purpose
    # the first one keeps serving, alone: every new connection is its own
    clients = []
    for i in range(6):
        s, _ = socks_connect(("127.0.0.1", port), *echo_server.addr)
        with s:
            clients.append(s.getsockname())
            echo_roundtrip(s, f"still served {i}".encode())
            s.shutdown(socket.SHUT_WR)
            read_until_close(s)
    for c in clients:
        assert a.access_for(c)["reply"] == "succeeded"
    assert a.alive()


def test_port_held_by_another_program_with_reuseport(ferry, tcp_server):
    """Not only a ferry: any listener that set SO_REUSEPORT (which the kernel
    would let ferry join) makes the port "in use"; with --upgrade ferry
    shares it as asked."""
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    with other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        port = other.getsockname()[1]
        b = ferry(listens=(f"127.0.0.1:{port}",), wait_ready=False, expect_exit=1)
        _refused(b, "listen", ("127.0.0.1", port))
        c = ferry(listens=(f"127.0.0.1:{port}",), args=("--upgrade",))
        assert c.port == port


def test_metrics_port_held_exits_1(ferry):
    mport = free_port()
    a = ferry(extra=f"[metrics]\nlisten = 127.0.0.1:{mport}\n")
    b = ferry(extra=f"[metrics]\nlisten = 127.0.0.1:{mport}\n", wait_ready=False, expect_exit=1)
    _refused(b, "metrics.listen", ("127.0.0.1", mport))
    assert a.alive()


def test_reload_adding_a_held_port_is_refused(ferry, echo_server):
    base = "workers = 2\nhandshake_timeout = 3s\nshutdown_timeout = 2s\n"
    f = ferry(raw_config=base + "listen = 127.0.0.1:0\n", listens=())
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    with other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        q = other.getsockname()[1]
        off = f.log_offset()
        f.config_path.write_text(base + f"listen = 127.0.0.1:{f.port}, 127.0.0.1:{q}\n")
        f.send_signal(signal.SIGHUP)
        f.wait_log(r"reload: (configuration applied|still running the previous)", start=off)
        log = f.log_text()[off:]
        assert f"listen 127.0.0.1:{q}" in log and f"another process holds port {q}" in log, log
        assert "still running the previous configuration" in log, log
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"the old configuration serves on")
