# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench --tunnel h2` (and wss): the bench starts a tunnel pair itself (a ferry
with a SOCKS5 port and an https:// outbound over h2, pinned, in front of a
ferry with a tls:// listener) and runs the TCP scenarios and udp through
the client's SOCKS5 port, every byte checked; the CPU is that of both.

And bench/compare.sh's tunnel group (planned with --dry-run: nothing is
installed or started) and its section of the report, from a synthetic
results file. The runs are short (windows of 1 s or less) and no speed is
asserted.
"""

import json
import os
import subprocess
import sys

FERRY = os.environ.get("FERRY_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "san", "ferry")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

SHORT = ["--runs", "1", "--duration", "1", "--warmup", "0.3", "--json"]


def bench(*args, timeout=120):
    return subprocess.run([FERRY, "bench", *args], capture_output=True, text=True,
                          timeout=timeout)


def bench_json(*args, mode="h2"):
    p = bench(*args, *SHORT)
    assert p.returncode == 0, f"bench failed: {p.stderr}\n{p.stdout}"
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, p.stdout
    r = json.loads(lines[0])
    assert r["ok"] is True and "error" not in r
    assert r["params"]["tunnel"] == mode and r["params"]["chain"] == 1
    return r


def metric(r, name):
    return r["metrics"][name]["median"]


def gone(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"ferry" not in f.read()
    except OSError:
        return True


def check_pair(r, mode="h2"):
    """Two ferries, the client first (the one the bench talks to), both
    stopped at the end."""
    (inst,) = r["proxy_instances"]
    client, server = inst["chain"]
    assert (client["pid"], client["addr"]) == (inst["pid"], inst["addr"])
    assert client["pid"] != server["pid"] and client["addr"] != server["addr"]
    assert r["target"].startswith(f"ferry tunnel {mode} (self-hosted): client pid {client['pid']}, "
                                  f"SOCKS5 at {client['addr']} -> ")
    path = "/tunnel" if mode == "wss" else ""
    assert r["target"].endswith(f"server pid {server['pid']} at tls://{server['addr']}{path}")
    assert gone(client["pid"]) and gone(server["pid"])


def test_tunnel_throughput_moves_bytes_intact():
    r = bench_json("throughput", "--tunnel", "h2", "--connections", "2", "--payload", "16k")
    check_pair(r)
    assert metric(r, "streams") == 2
    assert metric(r, "up") > 0 and metric(r, "down") > 0
    assert metric(r, "corrupt_streams") == 0 and metric(r, "broken_streams") == 0
    # Both processes' CPU is the proxy's.
    assert metric(r, "proxy_cpu_per_gib") > 0


def test_tunnel_wss_throughput_moves_bytes_intact():
    r = bench_json("throughput", "--tunnel", "wss", "--connections", "2", "--payload", "16k",
                   mode="wss")
    check_pair(r, mode="wss")
    assert "HTTP/2 in a WebSocket + TLS 1.3" in r["target"]
    assert metric(r, "streams") == 2
    assert metric(r, "up") > 0 and metric(r, "down") > 0
    assert metric(r, "corrupt_streams") == 0 and metric(r, "broken_streams") == 0


def test_tunnel_handshakes_without_failures():
    r = bench_json("handshakes", "--tunnel", "h2", "--concurrency", "4")
    check_pair(r)
    assert metric(r, "setups") > 0
    assert metric(r, "failed_socket") == 0 and metric(r, "failed_socks") == 0
    assert metric(r, "failed_data") == 0


def test_tunnel_udp_echoes_through_connect_udp_streams():
    """udp --tunnel h2: every client's datagrams are CONNECT-UDP streams on
    the pair's connection; nothing is lost or corrupted (a short window)."""
    r = bench_json("udp", "--tunnel", "h2", "--connections", "2")
    check_pair(r)
    assert metric(r, "echoes") > 0
    assert metric(r, "corrupt") == 0 and metric(r, "loss") == 0
    assert metric(r, "proxy_cpu_per_echo") > 0


def test_tunnel_human_header_names_it():
    p = bench("handshakes", "--tunnel", "h2", "--concurrency", "2", "--runs", "1",
              "--duration", "0.3", "--warmup", "0")
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("ferry bench handshakes: ferry tunnel h2 (self-hosted): client pid ")
    assert "tunnel h2 (client and server pinned, TLS 1.3; CPU and memory of both)" in p.stdout


def test_tunnel_bad_combinations_refused():
    cases = [
        (["throughput", "--tunnel", "h3"], "--tunnel"),
        (["rules", "--tunnel", "h2"], "--tunnel is for the scenarios through a proxy"),
        (["throughput", "--tunnel", "h2", "--direct"], "--tunnel starts its own client and server"),
        (["throughput", "--tunnel", "h2", "--proxy", "127.0.0.1:9"],
         "--tunnel starts its own client and server"),
        (["throughput", "--tunnel", "h2", "--relay", "127.0.0.1:9", "--target-port", "9"],
         "--tunnel starts its own client and server"),
        (["throughput", "--tunnel", "h2", "--chain", "2"], "--tunnel and --chain: choose one"),
        (["throughput", "--tunnel", "h2", "--https-proxy", "h2"], "not with --https-proxy"),
    ]
    for args, want in cases:
        p = bench(*args, "--runs", "1", timeout=30)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert want in p.stderr, (args, p.stderr)
        assert p.stdout == "", args


def test_help_documents_tunnel():
    p = bench("--help", timeout=30)
    assert p.returncode == 0
    assert "--tunnel h2" in p.stdout and "--tunnel wss" in p.stdout


def compare_dry_run(*args):
    p = subprocess.run([os.path.join(ROOT, "bench", "compare.sh"), "--dry-run", *args],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    info = {l.split(":", 1)[0]: l.split(":", 1)[1].strip()
            for l in p.stdout.splitlines() if ":" in l and not l.startswith("run:")}
    return info, [l for l in p.stdout.splitlines() if l.startswith("run:")]


def test_compare_tunnel_group_plans_its_rows():
    """compare.sh --only tunnel: plain ferry, the ferry tunnel (self-hosted
    with --tunnel h2), ssh -D and ss-libev with aes-256-gcm, in throughput 1
    and 8 streams, handshakes and runnel's mode_perf; OpenSSH and
    shadowsocks-libev are the packages it needs."""
    info, runs = compare_dry_run("--only", "tunnel", "--rounds", "1")
    assert info["groups"] == "tunnel"
    assert info["targets"] == "ferry ferry-tunnel ferry-tunnel-wss ssh-d ss-libev-aes"
    needed = info["packages needed"].split()
    assert {"openssh-server", "openssh-client", "shadowsocks-libev"} <= set(needed)
    assert not {"dante-server", "squid", "stunnel4"} & set(needed)
    assert len(runs) == 20  # 4 variants x 5 targets
    variants = {l.split()[1] for l in runs}
    assert variants == {"tunnel-throughput-1", "tunnel-throughput-8", "tunnel-handshakes",
                        "tunnel-requests"}
    for l in runs:
        t = l.split()[2].rstrip(":")
        assert ("--tunnel h2" in l) == (t == "ferry-tunnel"), l
        assert ("--tunnel wss" in l) == (t == "ferry-tunnel-wss"), l
        assert l.endswith("(tunnel)")
        if l.split()[1] == "tunnel-requests":
            assert "--requests 1000 --downloads 8 --download-size 1m" in l
        if l.split()[1] == "tunnel-throughput-1":
            assert "--connections 1 " in l


def tunnel_results(path):
    """A results file of the tunnel group alone: (MiB/s at 1 and 8 streams,
    setups/s, requests/s) per target."""
    targets = "ferry,ferry-tunnel,ssh-d,ss-libev-aes"
    figures = {"ferry": (1000, 1300, 10000, 6000), "ferry-tunnel": (500, 600, 9000, 5000),
               "ssh-d": (200, 250, 3000, 2000), "ss-libev-aes": (300, 450, 5000, 3000)}
    variants = [["tunnel-throughput-1", "throughput", "--connections 1 --payload 64k", targets, "tunnel"],
                ["tunnel-throughput-8", "throughput", "--connections 8 --payload 64k", targets, "tunnel"],
                ["tunnel-handshakes", "handshakes", "--concurrency 32", targets, "tunnel"],
                ["tunnel-requests", "requests", "--requests 1000 --downloads 8 --download-size 1m",
                 targets, "tunnel"]]
    lines = [{"meta": {"params": {"rounds": 1, "duration_s": 5, "warmup_s": 1, "groups": ["tunnel"],
                                  "variants": variants}}}]
    for t in figures:
        lines.append({"peer": {"target": t, "status": "ok", "how": t,
                               "mode": "self" if t == "ferry-tunnel" else "proxy",
                               "cpu_source": "bench"}})

    def m(v, unit=""):
        return {"median": v, "min": v, "max": v, "unit": unit, "runs": [v]}

    for t, (one, eight, setups, reqs) in figures.items():
        tp = {"up": m(1, "MiB/s"), "down": m(1, "MiB/s"), "streams": m(1), "corrupt_streams": m(0),
              "broken_streams": m(0), "proxy_cpu_per_gib": m(1.5, "s/GiB")}
        runs = (("tunnel-throughput-1", "throughput", dict(tp, total=m(one, "MiB/s"))),
                ("tunnel-throughput-8", "throughput", dict(tp, total=m(eight, "MiB/s"))),
                ("tunnel-handshakes", "handshakes",
                 {"setups": m(setups, "1/s"), "latency_p50": m(1, "ms"), "latency_p95": m(2, "ms"),
                  "latency_p99": m(3, "ms"), "failed_socket": m(0), "failed_socks": m(0),
                  "failed_data": m(0), "proxy_cpu_per_1k": m(0.1, "s/1000")}),
                ("tunnel-requests", "requests",
                 {"requests": m(reqs, "1/s"), "latency_mean": m(1, "ms"), "latency_p50": m(1, "ms"),
                  "latency_p95": m(2, "ms"), "download": m(300, "MiB/s"), "failed_requests": m(0),
                  "failed_downloads": m(0), "corrupt_bodies": m(0),
                  "proxy_cpu_per_1k_requests": m(0.2, "s/1000")}))
        for variant, scenario, metrics in runs:
            params = {"tunnel": "h2", "chain": 1} if t == "ferry-tunnel" else {}
            lines.append({"scenario": scenario, "ok": True, "params": params, "metrics": metrics,
                          "notes": [], "compare": {"round": 1, "variant": variant, "target": t,
                                                   "cpu_source": "bench"}})
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))


def test_report_renders_through_a_tunnel(tmp_path):
    """The section "Through a tunnel": a table per scenario with the ratios
    to plain ferry, ss-libev and ssh -D, and the issue's four targets said
    met or not from the medians; the tunnels stay out of the summary."""
    src, out = tmp_path / "r.jsonl", tmp_path / "r.md"
    tunnel_results(src)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "report.py"), "render",
                        str(src), "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    md = out.read_text()
    lines = md.splitlines()
    start = lines.index("## Through a tunnel")
    t1 = lines.index("### Throughput, 1 stream", start)
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]]
            for l in lines[t1:t1 + 12] if l.startswith("| ") and not l.startswith("| target")}
    assert list(rows) == ["ferry", "ferry tunnel (h2)", "OpenSSH ssh -D",
                          "shadowsocks-libev (aes-256-gcm)"]
    tun = rows["ferry tunnel (h2)"]
    assert tun[0] == "500" and tun[3:6] == ["0.50×", "1.67×", "2.50×"]
    assert ("- one stream: ferry tunnel 500 vs shadowsocks-libev (aes-256-gcm) 300 MiB/s, "
            "**1.67×** (target ≥ 2×: **not met**)") in md
    assert "- one stream: ferry tunnel 500 vs OpenSSH ssh -D 200 MiB/s, **2.50×** (target ≥ 2×: met)" in md
    assert "- 8 streams: ferry tunnel 600 vs shadowsocks-libev (aes-256-gcm) 450 MiB/s, **1.33×**" in md
    assert ("- setups/s: ferry tunnel 9,000 vs shadowsocks-libev (aes-256-gcm) 5,000 setups/s, "
            "**1.80×** (target ≥ 1.5×: met)") in md
    assert "### 1,000 requests, then 8 × 1 MiB (runnel's mode_perf)" in md
    summary = md[md.index("## Summary"):md.index("## Machine")]
    assert "tunnel" not in summary and "ssh" not in summary
