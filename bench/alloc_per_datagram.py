#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Allocations per datagram of ferry's UDP paths, counted (not estimated).

Runs `ferry bench udp` twice with the self-hosted proxies under the
LD_PRELOAD counter (build/micro/alloccount.so, `make
build/micro/alloccount.so`): once with a short window, once with a long
one, the same warm-up. What the longer run allocated more, over what it
echoed more, is the steady-state cost: start-up, warm-up and shutdown
cancel out. Each echo is two datagrams at each proxy (one up, one down),
so the figure is allocations / (2 x echoes), summed over the proxies (the
client and the server of --tunnel h2). The bench's own process is left
out (its counts file is its own PID's).

  bench/alloc_per_datagram.py [--ferry ./ferry] [--tunnel] [--payload 1200]
                              [--connections 16] [--short 1] [--long 3]

Keep the windows short on a shared machine; the figure is printed, never
asserted. `ferry bench udp` itself reads the same counters at the edges of
its window when ALLOC_COUNT_DIR is set (proxy_allocs_per_datagram; what
`bench/compare.sh --only udp-tunnel` reports): this two-run difference is
the cross-check that needs no reading in the middle of a run.
"""

import argparse
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile


def run(args, window: float, d: pathlib.Path) -> tuple[float, int, int]:
    d.mkdir()
    env = dict(os.environ, ALLOC_COUNT_DIR=str(d), LD_PRELOAD=str(pathlib.Path(args.lib).resolve()))
    cmd = [args.ferry, "bench", "udp", "--runs", "1", "--warmup", "0.5", "--duration", str(window),
           "--connections", str(args.connections), "--payload", str(args.payload), "--json"]
    if args.tunnel:
        cmd += ["--tunnel", "h2"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=120 + 4 * window)
    if p.returncode:
        sys.exit(f"bench failed ({p.returncode}): {out}")
    j = json.loads(out.strip().splitlines()[-1])
    rate = j["metrics"]["echoes"]["median"]
    allocs = frees = 0
    for f in d.iterdir():
        if f.name == f"alloc.{p.pid}":
            continue  # the bench itself
        a, fr = struct.unpack("<QQ", f.read_bytes()[:16])
        allocs += a
        frees += fr
    return float(rate) * window, allocs, frees


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ferry", default="./ferry")
    ap.add_argument("--lib", default="build/micro/alloccount.so")
    ap.add_argument("--tunnel", action="store_true", help="through --tunnel h2 (else the direct relay)")
    ap.add_argument("--payload", type=int, default=1200)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--short", type=float, default=1.0)
    ap.add_argument("--long", type=float, default=3.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        e1, a1, f1 = run(args, args.short, pathlib.Path(t) / "short")
        e2, a2, f2 = run(args, args.long, pathlib.Path(t) / "long")
    de = e2 - e1
    if de <= 0:
        sys.exit("the longer run echoed no more than the shorter one: no figure")
    per = (a2 - a1) / (2 * de)
    print(json.dumps({"path": "tunnel h2" if args.tunnel else "direct relay",
                      "payload": args.payload, "clients": args.connections,
                      "echoes": [round(e1), round(e2)], "allocations": [a1, a2],
                      "frees": [f1, f2], "allocations_per_datagram": round(per, 3)}))


if __name__ == "__main__":
    main()
