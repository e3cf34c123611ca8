# SPDX-License-Identifier: BSD-2-Clause
"""Reloads that change `listen` while clients connect (issue 13, F2).

A reload that drops a listener used to free the worker's listener array
while the same batch of epoll events still held an event for one of its
sockets: the loop then read the freed listener. Under the ASan binary that
is a report (the fixture fails on any), in a release build a crash.

The flapping test runs for FLAP_SECONDS (10 s): the window must span many
reloads that land in a batch with accept events, which a loaded 2-core
machine needs seconds to produce. Everything in it is bounded in count and
in time.
"""

from __future__ import annotations

import signal
import socket
import threading
import time

import pytest

from ferrylib import echo_roundtrip, run_ferry, socks_connect
from opslib import free_port

FLAP_SECONDS = 10.0
SIGHUP_EVERY = 0.05


def _connect_loop(ports: list[int], stop: threading.Event, counts: dict, key: str):
    """Connect to each port in turn and close at once, until stop; count
    what was accepted and what was refused (a port may be closed just now)."""
    i = 0
    while not stop.is_set():
        port = ports[i % len(ports)]
        i += 1
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=1.0)
        except OSError:
            counts[key + "_refused"] = counts.get(key + "_refused", 0) + 1
            continue
        counts[key + "_ok"] = counts.get(key + "_ok", 0) + 1
        c.close()


def test_flapping_listen_under_connections(ferry, echo_server):
    p, q = free_port(), free_port()
    one = f"listen = 127.0.0.1:{p}\n"
    two = f"listen = 127.0.0.1:{p}, 127.0.0.1:{q}\n"
    base = "workers = 2\nhandshake_timeout = 3s\nshutdown_timeout = 2s\n"
    f = ferry(raw_config=base + one, listens=())
    assert f.port == p
    stop = threading.Event()
    counts: dict = {}
    loops = [threading.Thread(target=_connect_loop, args=([p, q], stop, counts, f"t{k}"), daemon=True)
             for k in range(2)]
    for t in loops:
        t.start()
    reloads = 0
    try:
        deadline = time.monotonic() + FLAP_SECONDS
        while time.monotonic() < deadline and f.alive():
            f.config_path.write_text(base + (two if reloads % 2 == 0 else one))
            f.send_signal(signal.SIGHUP)
            reloads += 1
            time.sleep(SIGHUP_EVERY)
    finally:
        stop.set()
        for t in loops:
            t.join(timeout=10)
    assert f.alive(), f"ferry died during the reloads:\n{f.log_text()[-6000:]}"
    # Q is re-added while workers may still be closing it from the previous
    # reload: that is this process's own socket, never "another process".
    assert "another process holds" not in f.log_text(), f.log_text()[-4000:]
    assert reloads >= 20, reloads
    assert sum(v for k, v in counts.items() if k.endswith("_ok")) > 0, counts
    # Still serving on the address every configuration kept.
    s, _ = socks_connect(f.addr, *echo_server.addr)
    with s:
        echo_roundtrip(s, b"after the flapping")
    assert f.stop(timeout=15) == 0, f.log_text()[-4000:]
