#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Overload isolation of UDP through a ferry tunnel (issue 18), measured
outside the test suite: a `ferry serve` with a tls:// listener and a
`ferry client` with a socks port (as tests/e2e/test_client_udp.py starts
them), one association flooding 1200-byte datagrams at full speed from its
own process while another pings (64 bytes, one every 10 ms) from this one.
Unlike the e2e test, the echoes and the flooder run in their own
processes, so no Python GIL sits between a ping and its echo. Per round:
the pinger's RTT percentiles idle, then under flood, in the same run (on a
shared machine compare those two, not runs with each other).

  FERRY_BIN=$PWD/ferry bench/udp_isolation.py [--rounds 3] [--flood-s 3]

With --via relay the same two associations go through ferry's own direct
UDP relay (one `ferry serve`, no tunnel), and with --via none straight to
the echoes: the machine's own floor, what two cores shared by the flooder,
the echoes and the pinger give a ping under a flood with no proxy at all.

Bounded: each flood lasts --flood-s seconds (at most 5,000,000 datagrams);
a ping not answered within 1 s counts as lost. Prints; never asserts.
"""

import argparse
import multiprocessing as mp
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))
from ferrylib import FerryFactory  # noqa: E402
from udplib import UdpAssoc, payload  # noqa: E402
import test_client_udp as tcu  # noqa: E402


def echo_proc(port_q):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    s.bind(("127.0.0.1", 0))
    port_q.put(s.getsockname()[1])
    s.settimeout(30)
    for _ in range(10_000_000):
        try:
            d, p = s.recvfrom(65535)
        except socket.timeout:
            return
        s.sendto(d, p)


class Plain:
    """The UdpAssoc calls used here, without a proxy (--via none)."""

    def __init__(self, proxy=None):
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.udp.bind(("127.0.0.1", 0))

    def send(self, dest, data):
        self.udp.sendto(data, dest)

    def echo(self, dest, data, timeout=1.0):
        self.udp.sendto(data, dest)
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            self.udp.settimeout(left)
            try:
                got = self.udp.recv(65536)
            except socket.timeout:
                break
            if got == data:
                return got
        raise AssertionError("no echo")

    def close(self):
        self.udp.close()


def assoc(proxy):
    return Plain() if proxy is None else UdpAssoc(proxy)


def flood_proc(proxy, dest, secs, ready, out_q):
    a = assoc(proxy)
    a.echo(dest, b"warm", timeout=10)
    ready.set()
    blob = payload("f", 1200)
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end and n < 5_000_000:
        try:
            a.send(dest, blob)
        except OSError:
            pass
        n += 1
    out_q.put(n)
    a.close()


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] * 1000 if v else float("nan")


def pings(a, dest, n):
    out, lost = [], 0
    for i in range(n):
        t0 = time.monotonic()
        try:
            a.echo(dest, payload(f"p{i}-", 64), timeout=1)
            out.append(time.monotonic() - t0)
        except AssertionError:
            lost += 1
        time.sleep(max(0.0, 0.01 - (time.monotonic() - t0)))
    return out, lost


def line(v):
    return f"p50 {pct(v, .5):.2f} p95 {pct(v, .95):.2f} p99 {pct(v, .99):.2f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flood-s", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--via", choices=("tunnel", "relay", "none"), default="tunnel")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="udp-isolation-"))
    print("logs in", d, "via", args.via, flush=True)
    factory = FerryFactory(d)
    c, proxy, srv = None, None, None
    if args.via == "tunnel":
        srv, pin = tcu.start_server(d, factory)
        s = {"dir": d, "srv": srv, "pin": pin, "url": f"https://127.0.0.1:{srv.port}",
             "auth": d / "alice.auth"}
        c = tcu.TunnelClient(s)
        proxy = c.proxy
    elif args.via == "relay":
        srv = factory()
        proxy = ("127.0.0.1", srv.port)
    q = mp.Queue()
    echoes = [mp.Process(target=echo_proc, args=(q,), daemon=True) for _ in range(2)]
    for e in echoes:
        e.start()
    ef, ep = ("127.0.0.1", q.get(timeout=10)), ("127.0.0.1", q.get(timeout=10))
    pinger = assoc(proxy)
    try:
        pinger.echo(ep, b"warm", timeout=10)
        for r in range(args.rounds):
            idle, il = pings(pinger, ep, 100)
            ready, out = mp.Event(), mp.Queue()
            fp = mp.Process(target=flood_proc, args=(proxy, ef, args.flood_s, ready, out),
                            daemon=True)
            fp.start()
            ready.wait(15)
            n = int(args.flood_s / 0.0115)  # stop pinging before the flood does
            load, ll = pings(pinger, ep, n)
            sent = out.get(timeout=30)
            fp.join(10)
            drops = tcu.metric(c.maddr, "ferry_udp_dropped_total", reason="queue") if c else 0
            ratio = pct(load, .95) / pct(idle, .95) if idle and load else float("nan")
            print(f"round {r}: idle {line(idle)} lost {il}/100; flood {line(load)} lost {ll}/{n}; "
                  f"p95 flood/idle {ratio:.1f}x; flood sent {sent}, client queue drops "
                  f"so far {drops:.0f}", flush=True)
            time.sleep(0.5)
    finally:
        pinger.close()
        if c:
            c.stop()
        for e in echoes:
            e.terminate()
        problems = factory.finalize()
        if problems:
            print("ferry findings:", problems)


if __name__ == "__main__":
    main()
