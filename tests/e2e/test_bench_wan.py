# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench wan`: the emulated wide-area path between two namespaces.

Each test runs the real binary with probes (wan_probe.py) on both sides:
the namespaces exist while it runs and are gone after (after SIGTERM, and
after SIGKILL by its janitor; a crashed run's are removed at the next
start), a ping-like UDP RTT is
near twice the configured delay, loss of 100 % drops everything and 0 %
nothing, and a TCP transfer each way through a rate-capped path is intact
and no faster than the cap, with TUN offloads (gso=on, the default: GSO
packets cut into per-segment pieces, loss counted per segment) and
without. Needs root and /dev/net/tun (skipped otherwise); the usage errors
need neither.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ferrylib

PROBE = Path(__file__).with_name("wan_probe.py")
PY = sys.executable

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or not shutil.which("ip"),
    reason="ferry bench wan needs root, /dev/net/tun and ip(8)",
)


def wan(*args, timeout=60):
    r = subprocess.run(
        [ferrylib.ferry_bin(), "bench", "wan", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ferrylib.ferry_env(),
    )
    assert "Sanitizer" not in r.stderr, r.stderr
    return r


def probe(what: str, *args) -> str:
    return " ".join([PY, str(PROBE), what, *args])


def ours(text: str) -> set[str]:
    return set(re.findall(r"ferrywan-\d+-[ab]", text))


def netns_now() -> set[str]:
    return ours(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout)


def last_json(out: str) -> dict:
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])


def counts(stderr: str, direction: str) -> dict:
    m = re.search(direction + r": (\d+) packets \(\d+ bytes\) in, (\d+) out, (\d+) lost", stderr)
    assert m, stderr
    return {"in": int(m[1]), "out": int(m[2]), "lost": int(m[3])}


@needs_root
def test_rtt_near_delay_and_namespaces_removed():
    r = wan(
        "--delay", "20ms",
        "--in-b", probe("serve"),
        "--in-a", "ip netns list; echo ns=$FERRY_WAN_NS_A,$FERRY_WAN_NS_B; "
        + probe("rtt", "--count", "40", "--interval", "0.01"),
    )
    assert r.returncode == 0, r.stderr
    names = re.search(r"ns=(\S+),(\S+)", r.stdout)
    assert names and {names[1], names[2]} <= ours(r.stdout), r.stdout
    assert not {names[1], names[2]} & netns_now()
    res = last_json(r.stdout)
    assert res["received"] == 40, res
    # 40 ms configured; a loaded machine only adds
    assert 38.0 <= res["rtt_median_ms"] <= 60.0, res


@needs_root
def test_loss_all_and_none():
    r = wan(
        "--loss", "100%",
        "--in-b", probe("serve"),
        "--in-a", probe("rtt", "--no-contact", "--count", "50", "--interval", "0.002",
                        "--timeout", "0.3"),
    )
    assert r.returncode == 0, r.stderr
    assert last_json(r.stdout)["received"] == 0
    c = counts(r.stderr, "A->B")
    assert c["in"] >= 50 and c["out"] == 0 and c["lost"] == c["in"], c
    r = wan(
        "--loss", "0%",
        "--in-b", probe("serve"),
        "--in-a", probe("rtt", "--count", "200", "--interval", "0.002"),
    )
    assert r.returncode == 0, r.stderr
    assert last_json(r.stdout)["received"] == 200
    c = counts(r.stderr, "B->A")
    assert c["lost"] == 0 and c["out"] == c["in"], c


@needs_root
def test_tcp_through_a_capped_path_is_intact():
    n = 3_000_000
    r = wan(
        "--path", "delay=2ms,rate=40mbit,queue=20ms", "--threads", "1",
        "--in-b", probe("serve"),
        "--in-a", probe("tcp", "--bytes", str(n)) + " && " + probe("tcp", "--bytes", str(n), "--down"),
    )
    assert r.returncode == 0, r.stderr
    results = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert len(results) == 2 and all(x["intact"] for x in results), results
    # 40 Mbit/s of IP packets is 4.77 MiB/s; the cap only slows (never a lower bound)
    assert all(x["mib_s"] < 4.77 * 1.05 for x in results), results


def gso_counts(stderr: str, direction: str) -> dict:
    m = re.search(direction + r": gso: (\d+) GSO packets read \((\d+) segments\), (\d+) pieces "
                  r"written, (\d+) GSO packets not cut", stderr)
    assert m, stderr
    return {"pkts": int(m[1]), "segs": int(m[2]), "pieces": int(m[3]), "uncut": int(m[4])}


@needs_root
def test_tcp_through_a_lossy_gso_path_is_intact():
    """gso=on with 1 % loss: the senders' GSO packets are cut into
    segments, each lost alone (about 1 % of the segments), the rest leave
    as pieces; TCP repairs the holes and both transfers are intact."""
    n = 3_000_000
    r = wan(
        "--path", "delay=2ms,loss=1%,gso=on",
        "--in-b", probe("serve"),
        "--in-a", probe("tcp", "--bytes", str(n)) + " && " + probe("tcp", "--bytes", str(n), "--down"),
    )
    assert r.returncode == 0, r.stderr
    results = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert len(results) == 2 and all(x["intact"] for x in results), results
    up, g = counts(r.stderr, "A->B"), gso_counts(r.stderr, "A->B")
    down = gso_counts(r.stderr, "B->A")
    for x in (g, down):
        # GSO packets of several segments were read and written as pieces
        assert x["pkts"] > 0 and x["segs"] > x["pkts"] and x["pieces"] > 0 and x["uncut"] == 0, x
    # most of the 2,072 segments of payload came in GSO packets; the loss
    # is per segment: about 1 % of A->B's wire packets
    assert up["in"] >= g["segs"] >= n // 1448 // 2, (up, g)
    assert 0.002 * up["in"] <= up["lost"] <= 0.03 * up["in"], up
    # without offloads: no GSO line, the same transfer intact
    r = wan(
        "--path", "delay=2ms,gso=off",
        "--in-b", probe("serve"),
        "--in-a", probe("tcp", "--bytes", str(n)),
    )
    assert r.returncode == 0, r.stderr
    assert last_json(r.stdout)["intact"] and "gso:" not in r.stderr, r.stderr


@needs_root
def test_sigterm_removes_everything_and_stale_ones_go():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"ferrywan-{dead.pid}-a"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        p = subprocess.Popen(
            [ferrylib.ferry_bin(), "bench", "wan", "--delay", "1ms"],
            stderr=subprocess.PIPE,
            text=True,
            env=ferrylib.ferry_env(),
        )
        line = ""
        for _ in range(50):
            line = p.stderr.readline()
            if "ready:" in line or not line:
                break
        assert "ready:" in line, line
        mine = ours(line)
        assert len(mine) == 2 and mine <= netns_now()
        assert stale not in netns_now()
        p.send_signal(signal.SIGTERM)
        rest = p.communicate(timeout=20)[1]
        assert p.returncode == 128 + signal.SIGTERM, rest
        assert "Sanitizer" not in rest
        assert not mine & netns_now()
    finally:
        if stale in netns_now():
            subprocess.run(["ip", "netns", "del", stale])


@needs_root
def test_sigkill_leaves_nothing():
    """Even a run killed outright leaves no namespace: its janitor removes them."""
    p = subprocess.Popen(
        [ferrylib.ferry_bin(), "bench", "wan"], stderr=subprocess.PIPE, text=True,
        env=ferrylib.ferry_env(),
    )
    line = ""
    for _ in range(50):
        line = p.stderr.readline()
        if "ready:" in line or not line:
            break
    mine = ours(line)
    assert len(mine) == 2 and mine <= netns_now(), line
    p.kill()
    p.communicate(timeout=20)
    for _ in range(100):
        if not mine & netns_now():
            break
        time.sleep(0.05)
    assert not mine & netns_now()


def test_usage_errors():
    for args in (["--delay", "25"], ["--loss", "0.5"], ["--rate", "1mbps"], ["--path", "delay=1ms,x=1"],
                 ["--gso", "maybe"], ["stray"]):
        r = wan(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "ferry bench wan" in r.stderr
    r = wan("--help")
    assert r.returncode == 0 and "--in-a" in r.stdout and "--rate" in r.stdout and "--gso" in r.stdout


def bench_json(*args, timeout=120):
    r = subprocess.run(
        [ferrylib.ferry_bin(), "bench", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ferrylib.ferry_env(),
    )
    assert "Sanitizer" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


@needs_root
def test_bench_tunnel_and_direct_over_the_path():
    """--wan: a tunnel's client in A, its server and the echo in B; and
    --direct: plain TCP from A to the echo in B. Bytes intact, the path's
    packets counted, nothing left behind."""
    before = netns_now()
    for mode in (["--tunnel", "h2"], ["--direct"]):
        res, err = bench_json(
            "throughput", *mode, "--wan", "delay=2ms,rate=200mbit", "--connections", "1",
            "--runs", "1", "--warmup", "0.2", "--duration", "0.5",
        )
        text = json.dumps(res)
        assert "over an emulated path (delay=2ms,rate=200mbit)" in text, text
        m = counts(err, "A->B")
        assert m["in"] > 100 and m["out"] > 0, err
    assert netns_now() <= before


def test_bench_wan_usage_errors():
    for args in (["--wan", "delay=25"], ["--wan", "rate=1gbit", "--proxy", "127.0.0.1:1080"]):
        r = subprocess.run([ferrylib.ferry_bin(), "bench", "throughput", *args],
                           capture_output=True, text=True, timeout=30, env=ferrylib.ferry_env())
        assert r.returncode == 2, (args, r.stderr)
        assert "--wan" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root to drop to an unprivileged user with setpriv")
def test_without_root_it_says_so():
    drop = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    r = subprocess.run(drop + [ferrylib.ferry_bin(), "bench", "wan", "--delay", "1ms"],
                       capture_output=True, text=True, timeout=30, env=ferrylib.ferry_env())
    assert r.returncode == 77 and "needs root" in r.stderr, r.stderr
    r = subprocess.run(drop + [ferrylib.ferry_bin(), "bench", "throughput", "--direct", "--wan",
                               "delay=1ms"],
                       capture_output=True, text=True, timeout=30, env=ferrylib.ferry_env())
    assert r.returncode == 1 and "--wan needs root" in r.stderr, r.stderr
