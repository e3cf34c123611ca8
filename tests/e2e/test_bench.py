"""`ferry bench`: every scenario runs briefly against a self-hosted ferry (and
the main modes once each) and its JSON report carries plausible figures.

These tests check that the load generator measures and verifies; they never
assert a speed. Every run is bounded by short windows and a subprocess
timeout.
"""

import json
import os
import subprocess

import pytest

FERRY = os.environ.get("FERRY_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "san", "ferry")

SHORT = ["--runs", "1", "--duration", "0.5", "--warmup", "0.2", "--json"]


def bench(*args, timeout=120):
    proc = subprocess.run([FERRY, "bench", *args], capture_output=True, text=True,
                          timeout=timeout)
    return proc


def bench_json(*args, timeout=120):
    proc = bench(*args, *SHORT, timeout=timeout)
    assert proc.returncode == 0, f"bench failed: {proc.stderr}\n{proc.stdout}"
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, proc.stdout
    report = json.loads(lines[0])
    return report


def metric(report, name):
    m = report["metrics"][name]
    assert set(m) >= {"median", "min", "max", "unit", "runs"}
    assert m["min"] <= m["median"] <= m["max"]
    return m["median"]


def test_throughput_self_hosted():
    r = bench_json("throughput", "--connections", "2", "--payload", "16k")
    assert r["scenario"] == "throughput"
    assert r["mode"] == "ferry"
    assert r["params"]["connections"] == 2
    assert r["params"]["payload"] == 16384
    assert metric(r, "up") > 0
    assert metric(r, "down") > 0
    assert metric(r, "streams") == 2
    assert metric(r, "corrupt_chunks") == 0
    assert metric(r, "broken_streams") == 0
    assert metric(r, "proxy_cpu_per_gib") > 0
    assert r["notes"] == []


def test_handshakes_self_hosted():
    r = bench_json("handshakes", "--concurrency", "4")
    assert metric(r, "setups") > 0
    p50, p95, p99 = (metric(r, n) for n in ("latency_p50", "latency_p95", "latency_p99"))
    assert 0 < p50 <= p95 <= p99
    assert metric(r, "failed_socks") == 0
    assert metric(r, "failed_socket") == 0
    assert metric(r, "proxy_cpu_per_1k") > 0


def test_requests_self_hosted():
    r = bench_json("requests", "--requests", "60", "--warm-requests", "10",
                   "--downloads", "2", "--download-size", "256k")
    assert metric(r, "requests") > 0
    assert metric(r, "latency_mean") > 0
    assert metric(r, "latency_p50") <= metric(r, "latency_p95")
    assert metric(r, "download") > 0
    assert metric(r, "failed_requests") == 0
    assert metric(r, "failed_downloads") == 0
    assert metric(r, "corrupt_bodies") == 0


def test_connections_self_hosted():
    r = bench_json("connections", "--connections", "300", "--concurrency", "32",
                   "--ping", "0.2")
    assert metric(r, "connections") == 300
    assert metric(r, "failed_setups") == 0
    assert metric(r, "healthy") == 300
    assert metric(r, "setup_rate") > 0
    assert metric(r, "proxy_rss") > 0


def test_direct_mode_has_no_proxy_figures():
    r = bench_json("throughput", "--direct", "--connections", "1")
    assert r["mode"] == "direct"
    assert metric(r, "total") > 0
    assert "proxy_cpu_per_gib" not in r["metrics"]


def test_external_proxy_mode(ferry):
    f = ferry()
    r = bench_json("handshakes", "--concurrency", "2", "--proxy",
                   f"127.0.0.1:{f.port}", "--proxy-pid", str(f.proc.pid))
    assert r["mode"] == "proxy"
    assert metric(r, "setups") > 0
    assert metric(r, "failed_socks") == 0
    assert "proxy_cpu_per_1k" in r["metrics"]


def test_table_output_and_runs_median():
    proc = bench("handshakes", "--concurrency", "2", "--runs", "2", "--duration", "0.3",
                 "--warmup", "0.1")
    assert proc.returncode == 0, proc.stderr
    assert "ferry bench handshakes" in proc.stdout
    assert "median" in proc.stdout and "setups" in proc.stdout


def test_refused_proxy_is_reported_not_hidden():
    # A port with nothing listening: every setup fails at the socket level.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = bench_json("handshakes", "--concurrency", "2", "--proxy", f"127.0.0.1:{port}")
    assert metric(r, "setups") == 0
    assert metric(r, "failed_socket") > 0
    assert any("socket level" in n for n in r["notes"])


@pytest.mark.parametrize("args,needle", [
    (["nosuch"], "unknown scenario"),
    (["udp", "--relay", "127.0.0.1:1", "--target-port", "9"], "not a TCP relay"),
    (["udp", "--payload", "8"], "--payload must be"),
    (["throughput", "--runs", "0"], "invalid value"),
    (["throughput", "--payload", "huge"], "invalid value"),
    (["throughput", "--relay", "127.0.0.1:1"], "--target-port"),
    (["throughput", "--proxy", "not-an-address"], "invalid value"),
])
def test_bad_invocations(args, needle):
    proc = bench(*args, timeout=30)
    assert proc.returncode == 2
    assert needle in proc.stderr


def test_help():
    proc = bench("--help", timeout=30)
    assert proc.returncode == 0
    for word in ("throughput", "handshakes", "requests", "connections", "--proxy", "--json"):
        assert word in proc.stdout


def test_udp_paced_self_hosted():
    r = bench_json("udp", "--connections", "4")
    assert r["params"]["payload"] == 1200
    assert metric(r, "echoes") > 0
    assert metric(r, "clients") == 4
    assert metric(r, "corrupt") == 0
    assert 0 < metric(r, "rtt_p50") <= metric(r, "rtt_p95")
    assert 0 <= metric(r, "loss") <= 100
    assert metric(r, "proxy_cpu_per_echo") > 0


def test_udp_large_datagrams_and_direct():
    r = bench_json("udp", "--connections", "2", "--payload", "8192")
    assert metric(r, "echoes") > 0 and metric(r, "corrupt") == 0
    d = bench_json("udp", "--connections", "2", "--direct")
    assert d["mode"] == "direct" and metric(d, "echoes") > 0


def test_udp_blast():
    r = bench_json("udp", "--connections", "2", "--blast", "--payload", "512")
    assert r["params"]["blast"] is True
    offered, received = metric(r, "offered"), metric(r, "received")
    assert offered > 0 and 0 < received <= offered * 1.01
    assert 0 < metric(r, "delivered") <= 100.5
    assert metric(r, "corrupt") == 0


@pytest.mark.parametrize("mode", ["connect", "absolute"])
def test_requests_through_the_http_proxy(mode):
    r = bench_json("requests", "--requests", "40", "--warm-requests", "5", "--downloads", "2",
                   "--download-size", "128k", "--http-proxy", mode)
    assert r["params"]["http_proxy"] == mode
    assert metric(r, "requests") > 0 and metric(r, "download") > 0
    assert metric(r, "failed_requests") == 0 and metric(r, "failed_downloads") == 0
    assert metric(r, "corrupt_bodies") == 0


def test_handshakes_and_throughput_through_http_connect():
    r = bench_json("handshakes", "--concurrency", "2", "--http-proxy", "connect")
    assert metric(r, "setups") > 0 and metric(r, "failed_socks") == 0
    t = bench_json("throughput", "--connections", "2", "--http-proxy", "connect")
    assert metric(t, "total") > 0 and metric(t, "corrupt_chunks") == 0


def test_auth_modes_self_hosted():
    for mode in ("plain", "argon2"):
        r = bench_json("handshakes", "--concurrency", "2", "--auth", mode)
        assert r["params"]["auth"] == mode
        assert metric(r, "setups") > 0 and metric(r, "failed_socks") == 0


def test_rules_lookup_cost():
    r = bench_json("rules", "--rules", "2000")
    assert r["scenario"] == "rules"
    assert metric(r, "rules") == 2000
    assert metric(r, "indexed_lookup") > 0 and metric(r, "linear_lookup") > 0
    assert metric(r, "index_agrees") == 100
