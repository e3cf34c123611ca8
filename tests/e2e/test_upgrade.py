# SPDX-License-Identifier: BSD-2-Clause
"""Zero-downtime upgrade: a second ferry binds the same port (SO_REUSEPORT),
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
        b = ferry(config=cfg, listens=())
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
