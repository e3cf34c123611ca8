#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""argon2time.py: what one Argon2id verification costs here, for bench/compare.sh.

  argon2time.py --ferry PATH [--runs N] [--round R]

Prints one JSON line {"argon2": {...}}:

- hash_wall_ms / hash_cpu_ms: `ferry passwd NAME` (password on standard
  input) N times, wall time and CPU time (user + system, from the child's
  rusage) of each. It computes one Argon2id hash with the same parameters
  (libsodium's interactive limits: 2 passes, 64 MiB, 1 lane) that a
  verification recomputes, so a hash costs what a verification costs.
- plain_wall_ms / plain_cpu_ms: `ferry passwd --plain NAME` N times, the
  same process without the hash (start-up, reading, printing): subtracted.
- verify_ms: median hash CPU less median plain CPU, the figure used for the
  ceiling; verify_wall_ms the same from wall times.
- verifier_threads: read from the log line of a `ferry serve` started with
  a one-user userlist on 127.0.0.1:0 (its default auth.workers), stopped
  again at once.

Python standard library only.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv, stdin):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, input=stdin, capture_output=True, timeout=60)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.decode(errors='replace').strip()}")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return (t1 - t0) * 1000.0, cpu * 1000.0, p.stdout.decode(errors="replace").strip()


def verifier_threads(ferry):
    """Start a ferry with a userlist, read its 'N verifier threads' line."""
    d = tempfile.mkdtemp(prefix="ferry-argon2time-")
    proc = None
    try:
        with open(os.path.join(d, "users"), "w") as f:
            f.write("bench:plain:benchpass\n")
        with open(os.path.join(d, "ferry.conf"), "w") as f:
            f.write("listen = 127.0.0.1:0\n[auth]\nuserlist = users\n")
        log = open(os.path.join(d, "ferry.log"), "w")
        proc = subprocess.Popen([ferry, "serve", "-c", os.path.join(d, "ferry.conf")],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            with open(os.path.join(d, "ferry.log"), errors="replace") as f:
                m = re.search(r"(\d+) verifier threads", f.read())
            if m:
                return int(m.group(1))
            time.sleep(0.05)
        return None
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(prog="argon2time.py")
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--round", type=int, default=0)
    a = ap.parse_args()
    pw = b"benchpass\n"
    hw, hc, pwall, pc = [], [], [], []
    line = ""
    timed([a.ferry, "passwd", "bench"], pw)  # page cache, libsodium init
    for _ in range(a.runs):  # alternate, so drifts of the machine hit both alike
        w, c, line = timed([a.ferry, "passwd", "bench"], pw)
        hw.append(round(w, 2))
        hc.append(round(c, 2))
        w, c, _ = timed([a.ferry, "passwd", "--plain", "bench"], pw)
        pwall.append(round(w, 2))
        pc.append(round(c, 2))
    m = re.search(r"\$argon2id\$v=\d+\$m=(\d+),t=(\d+),p=(\d+)\$", line)
    res = {
        "round": a.round,
        "runs": a.runs,
        "params": {"m_kib": int(m.group(1)), "t": int(m.group(2)), "p": int(m.group(3))} if m else None,
        "hash_wall_ms": hw,
        "hash_cpu_ms": hc,
        "plain_wall_ms": pwall,
        "plain_cpu_ms": pc,
        "verify_ms": round(statistics.median(hc) - statistics.median(pc), 2),
        "verify_wall_ms": round(statistics.median(hw) - statistics.median(pwall), 2),
        "verifier_threads": verifier_threads(a.ferry),
        "nproc": len(os.sched_getaffinity(0)),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }
    print(json.dumps({"argon2": res}))


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        sys.exit(f"argon2time.py: {e}")
