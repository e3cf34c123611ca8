# SPDX-License-Identifier: BSD-2-Clause
"""UDP through the tunnel, measured (issue 18's benchmarks): `ferry bench
udp` reads the proxy's allocation counters (bench/micro/alloccount.so keeps
them in $ALLOC_COUNT_DIR/alloc.PID) at the two ends of its window, and
bench/compare.sh's udp-tunnel group (planned with --dry-run: nothing is
installed or started) with its section of the report, from a synthetic
results file.

The counters here are files the test writes and bumps itself: the ASan
binary cannot run under the LD_PRELOAD counter. Windows are short and no
speed is asserted.
"""

import json
import mmap
import os
import struct
import subprocess
import sys
import threading

from test_bench import FERRY, json_line, metric
from test_bench_tunnel import ROOT, compare_dry_run

SHORT = ["--runs", "1", "--duration", "1", "--warmup", "0.3", "--json"]


def bench_udp(env_dir, *args):
    env = dict(os.environ, ALLOC_COUNT_DIR=str(env_dir))
    p = subprocess.run([FERRY, "bench", "udp", *args, *SHORT], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, f"bench failed: {p.stderr}\n{p.stdout}"
    return json_line(p)


def counter_file(d, pid, allocs=0, frees=0):
    path = d / f"alloc.{pid}"
    path.write_bytes(struct.pack("<QQ", allocs, frees))
    return path


def test_udp_allocations_per_datagram_from_the_counters(ferry, tmp_path):
    """A counter that does not move in the window is 0 allocations per
    datagram, whatever it held before; one that moves gives a figure; a
    proxy without a counter gives none, and the run says why."""
    f = ferry()
    proxy = ["--proxy", f"127.0.0.1:{f.port}", "--proxy-pid", str(f.proc.pid),
             "--connections", "2"]
    path = counter_file(tmp_path, f.proc.pid, allocs=123456, frees=12345)
    r = bench_udp(tmp_path, *proxy)
    assert metric(r, "echoes") > 0 and metric(r, "corrupt") == 0
    assert metric(r, "proxy_allocs_per_datagram") == 0
    assert "client_allocs_per_datagram" not in r["metrics"]  # not a tunnel

    stop = threading.Event()

    def bump():
        with open(path, "r+b") as fh:
            m = mmap.mmap(fh.fileno(), 16)
            while not stop.is_set():
                n = struct.unpack_from("<Q", m, 0)[0]
                struct.pack_into("<Q", m, 0, n + 1000)
                stop.wait(0.005)
            m.close()

    t = threading.Thread(target=bump)
    t.start()
    try:
        r = bench_udp(tmp_path, *proxy, "--blast", "--payload", "512")
    finally:
        stop.set()
        t.join()
    assert metric(r, "received") > 0
    assert metric(r, "proxy_allocs_per_datagram") > 0

    path.unlink()
    r = bench_udp(tmp_path, *proxy)
    assert metric(r, "echoes") > 0
    assert "proxy_allocs_per_datagram" not in r["metrics"]
    assert any("ALLOC_COUNT_DIR is set but not every proxy process has a counter" in n
               for n in r["notes"]), r["notes"]


def test_help_documents_the_allocation_counter():
    p = subprocess.run([FERRY, "bench", "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0
    assert "ALLOC_COUNT_DIR=DIR LD_PRELOAD=build/micro/alloccount.so" in p.stdout


def test_compare_udp_tunnel_group_plans_its_rows():
    """compare.sh --only udp-tunnel: no proxy, ferry's direct relay and the
    tunnel over h2 and wss (all three self-hosted by the bench, under the
    allocation counter) and shadowsocks-libev, at 16 x 1200 B, 16 x 8192 B
    and a 16 x 1200 B blast."""
    info, runs = compare_dry_run("--only", "udp-tunnel", "--rounds", "1")
    assert info["groups"] == "udp-tunnel"
    assert info["targets"] == "direct ferry ss-libev ferry-tunnel ferry-tunnel-wss"
    needed = info["packages needed"].split()
    assert "shadowsocks-libev" in needed and "dante-server" not in needed
    assert len(runs) == 15  # 3 variants x 5 targets
    assert {l.split()[1] for l in runs} == {"udpt-16x1200", "udpt-16x8192", "udpt-blast"}
    for l in runs:
        v, t = l.split()[1], l.split()[2].rstrip(":")
        assert " bench udp " in l and "--connections 16 " in l and l.endswith("(udptunnel)"), l
        assert ("--tunnel h2" in l) == (t == "ferry-tunnel"), l
        assert ("--tunnel wss" in l) == (t == "ferry-tunnel-wss"), l
        assert ("LD_PRELOAD=alloccount.so" in l) == t.startswith("ferry"), l
        assert ("--payload 8192" in l) == (v == "udpt-16x8192"), l
        assert ("--blast" in l) == (v == "udpt-blast"), l


def udpt_results(path):
    """A results file of the udp-tunnel group alone."""
    targets = "direct,ferry,ferry-tunnel,ferry-tunnel-wss,ss-libev"
    variants = [["udpt-16x1200", "udp", "--connections 16 --payload 1200", targets, "udptunnel"],
                ["udpt-16x8192", "udp", "--connections 16 --payload 8192", targets, "udptunnel"],
                ["udpt-blast", "udp", "--blast --connections 16 --payload 1200", targets, "udptunnel"]]
    lines = [{"meta": {"params": {"rounds": 1, "duration_s": 5, "warmup_s": 1,
                                  "groups": ["udp-tunnel"], "variants": variants}}}]
    for t in targets.split(","):
        lines.append({"peer": {"target": t, "status": "ok", "how": t,
                               "mode": {"direct": "direct", "ss-libev": "proxy"}.get(t, "self"),
                               "cpu_source": "none" if t == "direct" else "bench"}})

    def m(v, unit=""):
        return {"median": v, "min": v, "max": v, "unit": unit, "runs": [v]}

    # echoes/s at 1200 and 8192 B, blast received pps, allocations (client, server)
    figures = {"direct": (200000, 150000, 250000, None), "ferry": (80000, 66000, 200000, (0, None)),
               "ferry-tunnel": (110000, 50000, 90000, (0.5, 0.25)),
               "ferry-tunnel-wss": (90000, 45000, 80000, (0, 0)),
               "ss-libev": (33000, 0, 27000, None)}
    for t, (e1, e8, blast, allocs) in figures.items():
        for v, echoes, payload in (("udpt-16x1200", e1, 1200), ("udpt-16x8192", e8, 8192),
                                   ("udpt-blast", blast, 1200)):
            if v == "udpt-blast":
                mm = {"offered": m(blast * 1.1, "pps"), "received": m(blast, "pps"),
                      "delivered": m(90.9, "%"), "proxy_cpu_per_datagram": m(2, "us"),
                      "clients": m(16), "corrupt": m(0)}
            else:
                mm = {"echoes": m(echoes, "1/s"), "rtt_p50": m(0.1, "ms"), "rtt_p95": m(0.2, "ms"),
                      "rtt_p99": m(0.4, "ms"), "loss": m(100 if not echoes else 0, "%"),
                      "late": m(0), "clients": m(16), "corrupt": m(0),
                      "proxy_cpu_per_echo": m(10, "us")}
            if allocs:
                cl, sv = allocs
                mm["proxy_allocs_per_datagram"] = m(cl + (sv or 0))
                if sv is not None:
                    mm["client_allocs_per_datagram"] = m(cl)
                    mm["server_allocs_per_datagram"] = m(sv)
            lines.append({"scenario": "udp", "ok": True, "params": {"payload": payload, "connections": 16},
                          "metrics": mm, "notes": [],
                          "compare": {"round": 1, "variant": v, "target": t, "cpu_source": "bench"}})
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))


def test_report_renders_udp_through_the_tunnel(tmp_path):
    """The section "UDP through the tunnel": a table per row with the ratio
    to direct and to ss-libev, RTT p50/p95/p99, allocations per datagram
    (client + server for a tunnel), and the issue's targets said met or not
    from the medians; none of it in the summary."""
    src, out = tmp_path / "r.jsonl", tmp_path / "r.md"
    udpt_results(src)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "report.py"), "render",
                        str(src), "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    md = out.read_text()
    lines = md.splitlines()
    start = lines.index("## UDP through the tunnel")
    t1 = lines.index("### 16 clients × 1200 B", start)
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]]
            for l in lines[t1:t1 + 12] if l.startswith("| ") and not l.startswith("| target")}
    assert list(rows) == ["direct (no proxy)", "ferry, direct UDP relay", "ferry tunnel (h2)",
                          "ferry tunnel (wss)", "shadowsocks-libev (chacha20-ietf-poly1305)"]
    tun = rows["ferry tunnel (h2)"]
    assert tun[:5] == ["110,000", "0.55×", "0", "0.100 / 0.200 / 0.400", "10.0"]
    assert tun[5:7] == ["0.750 (0.500 + 0.250)", "3.33×"]
    assert rows["ferry, direct UDP relay"][5] == "0"
    assert rows["shadowsocks-libev (chacha20-ietf-poly1305)"][5] == "not counted"
    assert "### Blast: 16 clients × 1200 B, unpaced" in md
    assert ("- ferry tunnel (h2), 16 × 1200 B: 110,000 echoes/s, **55% of direct** (200,000), "
            "loss 0 % (target ≥ 50% with 0 % loss: met)") in md
    assert "- ferry tunnel (wss), 16 × 1200 B: 90,000 echoes/s, **45% of direct**" in md
    assert ("- ferry tunnel (h2) ahead of shadowsocks-libev on every row: 1200 B: **3.33×**; "
            "8192 B: 50,000 vs 0 (shadowsocks-libev relays none); Blast: **3.33×** (met)") in md
    assert "- ferry tunnel (h2), allocations per datagram" in md and "0.750 (target 0" in md
    assert "**not met**" in md.split("- ferry tunnel (h2), allocations")[1].splitlines()[0]
    assert ("- ferry tunnel (wss), allocations per datagram in the steady state (both ends): "
            "1200 B: 0; 8192 B: 0; Blast: 0 (target 0, i.e. under 0.001: met)") in md
    assert "shadowsocks-libev loses every datagram of 8192 bytes" in md
    summary = md[md.index("## Summary"):md.index("## Machine")]
    assert "tunnel" not in summary
