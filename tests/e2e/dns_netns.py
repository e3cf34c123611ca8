# SPDX-License-Identifier: BSD-2-Clause
"""DNS queries per name, run as a script inside `unshare -n -m`.

In a private network and mount namespace, /etc/resolv.conf is replaced (a
bind mount that only this namespace sees) by one naming a fake DNS server
on 127.0.0.1:53, which answers every query NXDOMAIN (or, for names under
"exists.test.", one A record) and records each question it is asked.
ferry resolves names for SOCKS5 CONNECTs through it; the script prints one
JSON object: for each name in turn, the questions the server saw ("A
name", "AAAA name") and the SOCKS5 reply code.

    unshare -n -m python3 dns_netns.py --ferry PATH --workdir DIR \\
        [--search DOMAIN] [--options 'ndots:2'] NAME...
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import ferrylib

QTYPES = {1: "A", 28: "AAAA"}


class FakeDns:
    """UDP DNS on 127.0.0.1:53: NXDOMAIN, or one A record 127.0.0.1 for
    names under exists.test; remembers (qtype, qname) of every query."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        self.sock.settimeout(0.2)
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if len(data) < 12:
                continue
            qid, flags, qd = struct.unpack("!HHH", data[:6])
            labels, i = [], 12
            while i < len(data) and data[i]:
                n = data[i]
                labels.append(data[i + 1:i + 1 + n].decode(errors="replace"))
                i += 1 + n
            i += 1
            if qd != 1 or i + 4 > len(data):
                continue
            qtype, qclass = struct.unpack("!HH", data[i:i + 4])
            question = data[12:i + 4]
            name = ".".join(labels)
            with self.lock:
                self.seen.append(f"{QTYPES.get(qtype, qtype)} {name}")
            rd = flags & 0x0100
            if name.lower().endswith("exists.test") and qtype == 1:
                hdr = struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, 1, 0, 0)
                ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
                reply = hdr + question + ans
            elif name.lower().endswith("exists.test"):
                reply = struct.pack("!HHHHHH", qid, 0x8080 | rd, 1, 0, 0, 0) + question  # NODATA
            else:
                reply = struct.pack("!HHHHHH", qid, 0x8083 | rd, 1, 0, 0, 0) + question  # NXDOMAIN
            try:
                self.sock.sendto(reply, peer)
            except OSError:
                pass

    def take(self) -> list[str]:
        with self.lock:
            out, self.seen = self.seen, []
        return out

    def stop(self):
        self.stopping = True
        self.thread.join(2)
        self.sock.close()


def socks5_connect_reply(port: int, name: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        n = name.encode()
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(n)]) + n + struct.pack("!H", 9))
        rep = s.recv(10)
        return rep[1] if len(rep) >= 2 else -1


def scenario(ferry_bin: str, workdir: Path, search: str | None, options: str | None,
             names: list[str]) -> dict:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=20)
    conf = workdir / "resolv.conf"
    conf.write_text("nameserver 127.0.0.1\n" + (f"search {search}\n" if search else "")
                    + (f"options {options}\n" if options else ""))
    subprocess.run(["mount", "--bind", str(conf), "/etc/resolv.conf"], check=True, timeout=20)
    dns = FakeDns()
    res: dict = {"names": []}
    try:
        with ferrylib.netns_ferry(ferry_bin, workdir / "ferry.log", res) as (_, port):
            dns.take()
            for name in names:
                rep = socks5_connect_reply(port, name)
                time.sleep(0.3)  # a straggling query would show up here
                res["names"].append({"name": name, "rep": rep, "queries": sorted(dns.take())})
    finally:
        dns.stop()
    return res


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--search")
    ap.add_argument("--options")
    ap.add_argument("names", nargs="+")
    a = ap.parse_args(argv)
    print(json.dumps(scenario(a.ferry, a.workdir, a.search, a.options, a.names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
