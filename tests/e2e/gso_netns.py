# SPDX-License-Identifier: BSD-2-Clause
"""UDP segmentation offload refused, run as a script inside `unshare -n`.

In a private network namespace the loopback MTU is lowered to 1500, so a
merged message of 8,000-byte datagrams (segments over the MTU) is refused
by the kernel (EMSGSIZE). ferry must send those datagrams one by one (the
kernel fragments each) and merge only smaller ones on that socket from
then on; runs of 1,000-byte datagrams still go through. Both
directions are checked; ferry is paused (SIGSTOP) while each burst is sent
so that it reads the burst as one batch. Prints one JSON object.

    unshare -n python3 gso_netns.py --ferry PATH --workdir DIR
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import ferrylib
from udplib import UdpAssoc, payload, recv_datagrams, stop_process

BURST = 10


def _paused(proc: subprocess.Popen, send):
    stop_process(proc.pid)
    try:
        send()
        time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGCONT)


def scenario(ferry_bin: str, workdir: Path) -> dict:
    subprocess.run(["ip", "link", "set", "lo", "up", "mtu", "1500"], check=True, timeout=20)
    log = workdir / "ferry.log"
    res: dict = {}
    with ferrylib.netns_ferry(ferry_bin, log, res, {"FERRY_LOG": "debug"}) as (proc, port):
        dest = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        dest.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        dest.bind(("127.0.0.1", 0))
        daddr = dest.getsockname()
        with UdpAssoc(("127.0.0.1", port)) as a:
            a.send(daddr, b"hello")
            dest.settimeout(3)
            _, out = dest.recvfrom(65536)
            for name, size in (("up_big", 8000), ("up_small", 1000)):
                want = [payload(f"{name}{i}-", size) for i in range(BURST)]
                _paused(proc, lambda: [a.send(daddr, p) for p in want])
                res[name] = recv_datagrams(dest, BURST, timeout=3.0) == want
            for name, size in (("down_small", 1000), ("down_big", 8000), ("down_after", 1000)):
                want = [payload(f"{name}{i}-", size) for i in range(BURST)]
                _paused(proc, lambda: [dest.sendto(p, out) for p in want])
                got = []
                for _ in range(BURST):
                    try:
                        got.append(a.recv(3.0).payload)
                    except AssertionError:
                        break
                res[name] = got == want
        dest.close()
    text = log.read_text(errors="replace")
    res["refused_size"] = [ln.split(" udp: ", 1)[-1] for ln in text.splitlines() if "bytes refused" in ln]
    res["refused_off"] = text.count("segmentation offload refused")
    return res


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--workdir", required=True, type=Path)
    a = ap.parse_args(argv)
    print(json.dumps(scenario(a.ferry, a.workdir)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
