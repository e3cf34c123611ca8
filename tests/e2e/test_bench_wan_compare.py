# SPDX-License-Identifier: BSD-2-Clause
"""bench/compare.sh --wan SPEC: the tunnel group across emulated wide-area
paths (bench/compare_wan.sh). Planned with --dry-run (nothing is installed,
started or written), its report section rendered from a synthetic results
file, and `report.py wanrtt` (the RTT under load from ping beside a run)
from canned files. No path is made and no speed is asserted: fast."""

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
REPORT = os.path.join(ROOT, "bench", "report.py")


def dry_run(*args):
    p = subprocess.run([os.path.join(ROOT, "bench", "compare.sh"), "--dry-run", *args],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_compare_wan_places_every_tunnel_on_the_path():
    """Each --wan is a path; on each, plain TCP and every tunnel (the ferry
    tunnel, ssh -D, ss-libev) run 1 and 8 one-way streams, mode_perf and
    requests on a timetable beside 7 bulk streams, the bench in A aiming at
    the sink in B; two tunnel connections only where the path loses
    packets. None is 'not run over --wan' any more."""
    out = dry_run("--only", "tunnel", "--rounds", "1", "--wan", "delay=25ms,rate=1gbit,queue=50ms",
                  "--wan", "delay=25ms,loss=1%")
    paths = [l for l in out if l.startswith("path ")]
    assert paths == [
        "path 1: ferry bench wan --path delay=25ms,rate=1gbit,queue=50ms "
        "(targets: direct ferry-tunnel ferry-tunnel-fo ferry-tunnel-2c ssh-d ss-libev-aes)",
        "path 2: ferry bench wan --path delay=25ms,loss=1% "
        "(targets: direct ferry-tunnel ferry-tunnel-fo ferry-tunnel-2c ssh-d ss-libev-aes)"]
    runs = [l for l in out if l.startswith("run:")]
    assert not any("not run" in l for l in runs)
    by = {}
    for l in runs:
        by.setdefault(l.split()[1], []).append(l.split()[2].rstrip(":"))
    for k in (1, 2):
        assert by[f"wan{k}-throughput-1"] == ["direct", "ferry-tunnel", "ssh-d", "ss-libev-aes"]
        for v in ("requests", "latency"):  # --fast-open where a round trip shows
            assert by[f"wan{k}-{v}"] == ["direct", "ferry-tunnel", "ferry-tunnel-fo", "ssh-d", "ss-libev-aes"], v
    assert by["wan1-throughput-8"] == ["direct", "ferry-tunnel", "ssh-d", "ss-libev-aes"]
    assert by["wan2-throughput-8"] == ["direct", "ferry-tunnel", "ferry-tunnel-2c", "ssh-d", "ss-libev-aes"]
    ports = {"ferry-tunnel": 1080, "ssh-d": 1081, "ss-libev-aes": 1082, "ferry-tunnel-2c": 1083,
             "ferry-tunnel-fo": 1085}
    for l in runs:
        v, t = l.split()[1], l.split()[2].rstrip(":")
        assert "--target 10.77.0.2:9000" in l, l
        assert (" --direct " in l + " ") == (t == "direct"), l
        if t != "direct":
            assert f"--proxy 127.0.0.1:{ports[t]}" in l, l
        if "throughput" in v:
            assert "--direction down" in l, l
        if v.endswith("latency"):
            assert "--rate 50" in l and l.endswith("(beside 7 one-way bulk streams)"), l
    needed = next(l for l in out if l.startswith("packages needed:")).split(":", 1)[1].split()
    assert {"openssh-server", "shadowsocks-libev", "iputils-ping"} <= set(needed)


def test_compare_wan_options_are_settable():
    out = dry_run("--only", "tunnel", "--wan", "delay=5ms", "--wan-duration", "3", "--wan-warmup", "1",
                  "--wan-requests", "40", "--wan-rate", "10", "--targets", "ferry-tunnel-wss")
    runs = [l for l in out if l.startswith("run:")]
    assert {l.split()[2].rstrip(":") for l in runs} == {"direct", "ferry-tunnel-wss"}
    assert all("--duration 3 --warmup 1" in l for l in runs)
    assert any("--requests 40 " in l for l in runs)
    assert any("--rate 10 --requests 30 " in l for l in runs)
    p = subprocess.run([os.path.join(ROOT, "bench", "compare.sh"), "--dry-run", "--wan", "x",
                        "--wan-rate", "fast"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "--wan_rate" in p.stderr.replace("-wan-rate", "-wan_rate")
    # --wan-rows keeps only the rows named, and names the ones it knows
    out = dry_run("--only", "tunnel", "--wan", "delay=5ms", "--wan-rows", "latency,throughput-1")
    rows = {l.split()[1] for l in out if l.startswith("run:")}
    assert rows == {"wan1-latency", "wan1-throughput-1"}, rows
    p = subprocess.run([os.path.join(ROOT, "bench", "compare.sh"), "--dry-run", "--wan", "delay=5ms",
                        "--wan-rows", "latency,fast"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 2 and "unknown row 'fast'" in p.stderr, p.stderr


def m(v, unit=""):
    return {"median": v, "min": v, "max": v, "unit": unit, "runs": [v]}


def wan_results(path):
    """One path (50 ms, 1 Gbit/s): 1-stream MiB/s, 8-stream MiB/s, p99 beside
    the bulk (ms) per target; the RTT under load 60 ms everywhere."""
    figures = {"direct": (100, 110, 90), "ferry-tunnel": (95, 105, 100), "ssh-d": (30, 80, 300),
               "ss-libev-aes": (90, 100, 120)}
    lines = [{"meta": {"params": {"rounds": 1, "duration_s": 2, "warmup_s": 2, "groups": ["tunnel"],
                                  "variants": []}}}]
    for t in figures:
        lines.append({"peer": {"target": t, "status": "ok", "how": t, "mode": "wan", "cpu_source": "bench"}})
    lines.append({"wan_path": {"index": 1, "spec": "delay=25ms,rate=1gbit"}})
    wan = {"path": 1, "spec": "delay=25ms,rate=1gbit", "rtt_ms": {"n": 20, "p50": 60.0, "p90": 70.0,
                                                                   "max": 80.0, "mean": 61.0}}
    for t, (one, eight, p99) in figures.items():
        tp = {"down": m(one, "MiB/s"), "streams": m(1), "corrupt_streams": m(0), "broken_streams": m(0)}
        rq = {"requests": m(50, "1/s"), "latency_p50": m(101, "ms"), "latency_p99": m(p99, "ms"),
              "failed_requests": m(0), "failed_downloads": m(0), "corrupt_bodies": m(0)}
        for variant, scen, metrics, extra in (
                ("wan1-throughput-1", "throughput", dict(tp, total=m(one, "MiB/s")), {}),
                ("wan1-throughput-8", "throughput", dict(tp, total=m(eight, "MiB/s")), {}),
                ("wan1-requests", "requests", rq, {}),
                ("wan1-latency", "requests", rq, {"bulk": {"streams": 7, "total": 99.0, "ok": True}})):
            lines.append({"scenario": scen, "ok": True, "params": {"direction": "down"}, "metrics": metrics,
                          "notes": [], "wan": dict(wan, **extra, tun_packets=10000, tcp_out=1000,
                                                   tcp_retrans=25 if t == "ssh-d" else 10,
                                                   tun_dropped=300 if (t, variant) == ("ssh-d", "wan1-throughput-8")
                                                   else 0),
                          "compare": {"round": 1, "variant": variant, "target": t, "cpu_source": "bench"}})
    # --fast-open: the request rows only
    lines.append({"peer": {"target": "ferry-tunnel-fo", "status": "ok", "how": "fo", "mode": "wan",
                           "cpu_source": "bench"}})
    rq = {"requests": m(50, "1/s"), "latency_p50": m(51, "ms"), "latency_p99": m(70, "ms"),
          "failed_requests": m(0), "failed_downloads": m(0), "corrupt_bodies": m(0)}
    for variant in ("wan1-requests", "wan1-latency"):
        lines.append({"scenario": "requests", "ok": True, "params": {"direction": "down"}, "metrics": rq,
                      "notes": [], "wan": dict(wan, tun_packets=10000, tun_dropped=0),
                      "compare": {"round": 1, "variant": variant, "target": "ferry-tunnel-fo",
                                  "cpu_source": "bench"}})
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))


def test_report_renders_a_wan_path(tmp_path):
    """A table per path with the RTT under load beside each figure, the
    ratio to plain TCP, the latency beside the bulk, the issue's targets
    said met or not, and a chart per path when gnuplot is there."""
    src, out, svg = tmp_path / "r.jsonl", tmp_path / "r.md", tmp_path / "r.svg"
    wan_results(src)
    p = subprocess.run([sys.executable, REPORT, "render", str(src), "--out", str(out), "--svg", str(svg)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    md = out.read_text()
    lines = md.splitlines()
    start = lines.index("### Path 1: RTT 50 ms (25ms each way), loss 0%, rate 1gbit, queue 50ms")
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]]
            for l in lines[start:start + 12] if l.startswith("| ") and not l.startswith("| target")}
    assert list(rows) == ["direct (no proxy)", "ferry tunnel (h2)", "ferry tunnel (h2), --fast-open",
                          "OpenSSH ssh -D", "shadowsocks-libev (aes-256-gcm)"]
    assert rows["ferry tunnel (h2), --fast-open"][0] == "not run"
    ft = rows["ferry tunnel (h2)"]
    assert ft[:4] == ["95.0 [60 ms]", "0.95×", "105 [60 ms]", "0.95×"]
    assert ft[6] == "101 / 100 [60 ms]" and ft[7] == "99.0" and ft[9] == "none"
    # the share of TCP segments retransmitted in both namespaces, per row
    assert ft[8] == "1.0 % / 1.0 %" and rows["OpenSSH ssh -D"][8] == "2.5 % / 2.5 %"
    assert "**stalled**" not in md  # one-way streams: the other way is empty by design
    assert "- one stream: ferry tunnel 95.0 vs plain TCP 100 MiB/s, **0.95×** (target ≥ 0.9×: met)" in md
    assert "- one stream: ferry tunnel vs ssh -D 30.0 MiB/s, **3.17×** (target ≥ 2.5×: met)" in md
    assert ("- beside 7 bulk streams: a small request's p99 through the ferry tunnel 100 ms (target ≤ "
            "2 RTT + 10 ms = 130 ms, RTT 60 ms measured under that load: met)") in md
    assert "  - against the RTT's own p90 under that load (70 ms; " in md and "= 150 ms, met" in md
    assert ("- the same through `ferry client --fast-open`: 70.0 ms (2 RTT + 10 ms = 130 ms, RTT 60 ms "
            "measured under that load: met)") in md
    assert "8 streams over one tunnel connection" not in md  # a loss target: this path loses nothing
    # One run lost 2.9 % of its packets in a TUN device's queue, before the forwarder.
    assert ("**In 1 of these 18 runs the kernel dropped 0.5 % or more of the packets before the "
            "forwarder read them (a TUN device's queue of 500 packets was full; worst 2.9%):**") in md
    if os.path.exists("/usr/bin/gnuplot"):
        chart = tmp_path / "r-wan1.svg"
        assert chart.exists() and "![Path 1:" in md
        text = chart.read_text()
        assert "1 stream, MiB/s: min-max" in text and "p99 ms beside 7 bulk streams" in text


def test_wanrtt_adds_the_rtt_under_load_and_the_bulk(tmp_path):
    """ping -D replies after the warm-up give the RTT under load; the bulk
    bench's line gives its rate; both go into the run's JSON line."""
    line, ping, bulk = tmp_path / "run.out", tmp_path / "ping.out", tmp_path / "bulk.out"
    line.write_text("noise\n" + json.dumps({"scenario": "requests", "metrics": {}}) + "\n")
    rtts = [500.0] * 5 + [50.0, 52.0, 54.0, 56.0, 200.0]  # the first 0.5 s: the warm-up
    ping.write_text("PING 10.77.0.2 (10.77.0.2) 56(84) bytes of data.\n" + "".join(
        f"[1700000000.{i}00000] 64 bytes from 10.77.0.2: icmp_seq={i + 1} ttl=64 time={r} ms\n"
        for i, r in enumerate(rtts)))
    bulk.write_text(json.dumps({"ok": True, "params": {"connections": 7},
                                "metrics": {"total": m(88.5, "MiB/s")}}) + "\n")
    p = subprocess.run([sys.executable, REPORT, "wanrtt", "--line", str(line), "--ping", str(ping),
                        "--bulk", str(bulk), "--spec", "delay=25ms", "--path", "2", "--skip", "0.5",
                        "--tun", "12 3400", "--tcp", "7 5000"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rec = json.loads(line.read_text().splitlines()[-1])
    w = rec["wan"]
    assert (w["path"], w["spec"]) == (2, "delay=25ms")
    assert w["rtt_ms"]["n"] == 5 and w["rtt_ms"]["p50"] == 54.0 and w["rtt_ms"]["max"] == 200.0
    assert w["bulk"] == {"streams": 7, "total": 88.5, "ok": True}
    assert (w["tun_dropped"], w["tun_packets"]) == (12, 3400)
    assert (w["tcp_retrans"], w["tcp_out"]) == (7, 5000)
