# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench edge` (src/bench/sc_edge.c): new connections through an edge,
each sending a canned first message and reading the one byte its backend
answers. Every --hello kind against the self-hosted ferry edge (routed, none
misrouted, no errors, CPU known), the held-connections phase, --edge-target
against a ferry edge the test starts itself (routing to the bench's backends
on --target-port and the port after it), and the usage errors. Short windows
only: the figures are checked for sense, never for speed.
"""

from __future__ import annotations

import os
import socket
import time

import pytest

from test_bench import bench, bench_json, json_line, metric

QUICK = ["--concurrency", "4"]


@pytest.mark.parametrize("hello", ["mc", "tls", "tls-pq-segments", "tls-pq-records"])
def test_each_hello_self_hosted(hello):
    r = bench_json("edge", "--hello", hello, *QUICK)
    assert r["scenario"] == "edge"
    assert r["params"]["hello"] == hello
    assert r["mode"] == "ferry" and "ferry_build" in r
    assert metric(r, "connections") > 0
    assert metric(r, "misrouted") == 0
    assert metric(r, "errors") == 0
    assert metric(r, "latency_p99_9") >= metric(r, "latency_p50") > 0
    assert metric(r, "proxy_cpu_per_1k") > 0
    assert metric(r, "generator_cpu") > 0  # the bench's own share, beside the edge's
    assert "held" not in r["metrics"]


def test_held_connections_give_memory_per_10k():
    r = bench_json("edge", "--hello", "mc", "--hold", "200", *QUICK)
    assert metric(r, "held") == 200
    assert "held_mem_per_10k" in r["metrics"]
    assert r["params"]["hold"] == 200


def port_pair() -> int:
    """A port P with P and P + 1 both free on 127.0.0.1 (bounded tries)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p >= 65535:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
    pytest.skip("no two free neighbouring ports")


def test_edge_target_is_a_ferry_edge(ferry):
    p = port_pair()
    conf = (
        "workers = 1\nconnect_timeout = 3s\nshutdown_timeout = 2s\naccess_log = no\n"
        "\n[edge peer]\nlisten = 127.0.0.1:0\nsniff = auto\n"
        f"route = a.test -> 127.0.0.1:{p}\nroute = b.test -> 127.0.0.1:{p + 1}\n"
        "per_source_connections = 0\n"
    )
    f = ferry(raw_config=conf)
    host, port = f.addrs[1][:2]
    for hello in ("tls", "tls-pq-records"):
        r = bench_json("edge", "--edge-target", f"{host}:{port}", "--target-port", str(p),
                       "--proxy-pid", str(f.proc.pid), "--hello", hello, *QUICK)
        assert r["params"]["edge_target"] == f"{host}:{port}"
        assert metric(r, "connections") > 0
        assert metric(r, "misrouted") == 0 and metric(r, "errors") == 0
        assert "proxy_cpu_per_1k" in r["metrics"]
        assert r["mode"] == "edge-target" and r["target"].startswith("edge at")
        assert "ferry_build" not in r and "proxy_set" not in r["params"]


def test_an_edge_that_routes_nowhere_fails_the_run(ferry):
    """An edge whose routes name no backend of the bench: every connection
    is closed before a byte, and the run says so (nothing set up)."""
    p = port_pair()
    conf = (
        "workers = 1\nshutdown_timeout = 2s\n\n[edge peer]\nlisten = 127.0.0.1:0\n"
        f"route = other.test -> 127.0.0.1:{p}\nper_source_connections = 0\n"
    )
    f = ferry(raw_config=conf)
    host, port = f.addrs[1][:2]
    proc = bench("edge", "--edge-target", f"{host}:{port}", "--target-port", str(p),
                 "--runs", "1", "--duration", "0.3", "--warmup", "0", "--json", *QUICK)
    assert proc.returncode == 1, proc.stderr
    r = json_line(proc)
    assert r["ok"] is False
    assert "closed the connection before a backend's byte" in proc.stdout + proc.stderr


def test_a_misrouting_edge_fails_the_run(ferry):
    """An edge that sends a.test to b.test's backend and back: every byte
    names the other backend, which is wrong data, never a figure."""
    p = port_pair()
    conf = (
        "workers = 1\nshutdown_timeout = 2s\naccess_log = no\n\n[edge peer]\n"
        "listen = 127.0.0.1:0\n"
        f"route = a.test -> 127.0.0.1:{p + 1}\nroute = b.test -> 127.0.0.1:{p}\n"
        "per_source_connections = 0\n"
    )
    f = ferry(raw_config=conf)
    host, port = f.addrs[1][:2]
    proc = bench("edge", "--edge-target", f"{host}:{port}", "--target-port", str(p),
                 "--hello", "mc", "--runs", "1", "--duration", "0.3", "--warmup", "0",
                 "--json", "--allow-failures", *QUICK)
    assert proc.returncode == 1, proc.stderr
    r = json_line(proc)
    assert r["ok"] is False
    assert "misrouted: a.test went to the backend answering 0x42" in r["error"], r["error"]
    assert metric(r, "misrouted") > 0


def cpu_cgroup_base() -> str | None:
    """Where a CPU cgroup can be made (v1 cpu controller, or v2 with cpu),
    or None (not root, no controller)."""
    if os.geteuid() != 0:
        return None
    if os.path.exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        return "/sys/fs/cgroup/cpu"
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            return "/sys/fs/cgroup" if "cpu" in f.read().split() else None
    except OSError:
        return None


def test_proxy_cgroup_takes_the_self_hosted_ferry():
    """--proxy-cgroup DIR: the self-hosted ferry runs in DIR (under its CPU
    quota): the cgroup's own CPU counters grow during the run."""
    base = cpu_cgroup_base()
    if not base:
        pytest.skip("needs root and a cgroup cpu controller")
    cg = os.path.join(base, f"ferry-test-edge.{os.getpid()}")
    os.mkdir(cg)
    try:
        v1 = base.endswith("/cpu")
        if v1:
            with open(os.path.join(cg, "cpu.cfs_period_us"), "w") as f:
                f.write("20000")
            with open(os.path.join(cg, "cpu.cfs_quota_us"), "w") as f:
                f.write("10000")
        else:
            with open(os.path.join(cg, "cpu.max"), "w") as f:
                f.write("10000 20000")
        r = bench_json("edge", "--hello", "tls", "--proxy-cgroup", cg, *QUICK)
        assert metric(r, "connections") > 0 and metric(r, "misrouted") == 0
        with open(os.path.join(cg, "cpu.stat")) as f:
            stat = dict(line.split() for line in f if line.strip())
        used = int(stat["nr_periods"]) if v1 else int(stat["usage_usec"])
        assert used > 0, stat
    finally:
        for _ in range(50):  # the ferry has exited; the kernel frees the cgroup soon
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


def test_proxy_cgroup_that_is_no_cgroup_fails(tmp_path):
    proc = bench("edge", "--proxy-cgroup", str(tmp_path), "--runs", "1", "--duration", "0.3",
                 "--warmup", "0", *QUICK, timeout=60)
    assert proc.returncode != 0
    assert "cannot move the self-hosted ferry into" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["edge", "--hello", "http"], "--hello must be"),
        (["handshakes", "--hello", "tls"], "are for edge"),
        (["throughput", "--hold", "5"], "are for edge"),
        (["edge", "--proxy", "127.0.0.1:1080"], "edge starts its own ferry"),
        (["edge", "--direct"], "edge starts its own ferry"),
        (["edge", "--auth", "plain"], "speaks no proxy protocol"),
        (["edge", "--edge-target", "192.0.2.1:443"], "must be on loopback"),
        (["edge", "--edge-target", "127.0.0.1:0"], "--edge-target"),
        (["edge", "--edge-target", "127.0.0.1:9", "--proxy-workers", "2"], "self-hosted ferry"),
        (["edge", "--target-port", "18501"], "--target-port with edge"),
        (["edge", "--hold", "250001"], "--hold must be 0..250000"),
        (["throughput", "--proxy-cgroup", "/tmp"], "are for edge"),
        (["edge", "--edge-target", "127.0.0.1:9", "--proxy-cgroup", "/tmp"], "self-hosted ferry"),
    ],
)
def test_usage_errors(args, needle):
    proc = bench(*args, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr, proc.stderr


def test_help_names_edge():
    proc = bench("--help", timeout=30)
    assert proc.returncode == 0
    for word in ("edge", "--hello", "--edge-target", "--hold", "tls-pq-records"):
        assert word in proc.stdout
