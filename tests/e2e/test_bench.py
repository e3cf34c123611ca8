# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench`: every scenario runs briefly against a self-hosted ferry (and
the main modes once each) and its JSON report carries plausible figures.

These tests check that the load generator measures and verifies; they never
assert a speed. Every run is bounded by short windows and a subprocess
timeout. A proxy that corrupts data (CorruptingSocks5, below) must make a
run fail, not produce a figure.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from ferrylib import ThreadedServer, recv_exact

FERRY = os.environ.get("FERRY_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "san", "ferry")

SHORT = ["--runs", "1", "--duration", "0.5", "--warmup", "0.2", "--json"]


def bench(*args, timeout=120):
    proc = subprocess.run([FERRY, "bench", *args], capture_output=True, text=True,
                          timeout=timeout)
    return proc


def json_line(proc):
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, f"{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[0])


def bench_json(*args, timeout=120):
    proc = bench(*args, *SHORT, timeout=timeout)
    assert proc.returncode == 0, f"bench failed: {proc.stderr}\n{proc.stdout}"
    report = json_line(proc)
    assert report["ok"] is True and "error" not in report
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
    assert metric(r, "corrupt_streams") == 0
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
    assert metric(r, "failed_data") == 0
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
    assert metric(r, "corrupt_echoes") == 0
    # Pss where the kernel has it: named for what it is, with its source.
    assert metric(r, "proxy_mem") > 0
    assert "proxy_mem_per_conn" in r["metrics"]
    assert "proxy_rss" not in r["metrics"] and "proxy_rss_per_conn" not in r["metrics"]
    assert r["mem_source"] in ("pss", "rss", "pss+rss")


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
    # What was measured is in the line: the address and the processes.
    assert r["params"]["proxy"] == f"127.0.0.1:{f.port}"
    assert r["params"]["proxy_pids"] == [f.proc.pid]
    assert "ferry" not in r["params"] and "proxy_set" not in r["params"]
    assert "ferry_build" not in r and "proxy_instances" not in r


def test_table_output_and_runs_median():
    proc = bench("handshakes", "--concurrency", "2", "--runs", "2", "--duration", "0.3",
                 "--warmup", "0.1")
    assert proc.returncode == 0, proc.stderr
    assert "ferry bench handshakes" in proc.stdout
    assert "median" in proc.stdout and "setups" in proc.stdout


def test_refused_proxy_is_reported_not_hidden():
    # A port with nothing listening: every setup fails at the socket level.
    # Nothing could be set up, so the run fails (even with --allow-failures),
    # with its figures and the reason.
    port = free_port()
    for extra in ([], ["--allow-failures"]):
        proc = bench("handshakes", "--concurrency", "2", "--proxy", f"127.0.0.1:{port}", *SHORT,
                     *extra)
        assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
        assert "run 1 FAILED" in proc.stderr
        r = json_line(proc)
        assert r["ok"] is False
        assert "setups in the window failed" in r["error"]
        assert "Connection refused" in r["error"], r["error"]
        assert metric(r, "setups") == 0
        assert metric(r, "failed_socket") > 0
        assert any(re.search(r"\d+ setups failed at the socket level: (\d+) at connect\(\), 0 "
                             r"closed or reset by the proxy before its reply, 0 reset after", n)
                   for n in r["notes"]), r["notes"]


def test_proxy_that_hangs_up_is_told_apart_from_connect_errors():
    # A proxy that accepts and resets every connection: the setups fail at
    # the socket level before its reply, not at connect(), and the note
    # says which (`ferry bench handshakes --tunnel h2` lost a few sessions
    # a run that way, to a tunnel torn down under them).
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    lsock.settimeout(0.2)
    stop = threading.Event()

    def hang_up():
        while not stop.is_set():
            try:
                c, _ = lsock.accept()
            except OSError:
                continue
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            c.close()

    t = threading.Thread(target=hang_up, daemon=True)
    t.start()
    try:
        proc = bench("handshakes", "--concurrency", "2", "--proxy",
                     f"127.0.0.1:{lsock.getsockname()[1]}", *SHORT)
    finally:
        stop.set()
        t.join(5)
        lsock.close()
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    r = json_line(proc)
    assert "closed or reset the connection before it was set up" in r["error"], r["error"]
    assert any(re.search(r"(\d+) setups failed at the socket level: 0 at connect\(\), \1 closed "
                         r"or reset by the proxy before its reply, 0 reset after", n)
               for n in r["notes"]), r["notes"]


@pytest.mark.parametrize("args,needle", [
    (["nosuch"], "unknown scenario"),
    (["udp", "--relay", "127.0.0.1:1", "--target-port", "9"], "not a TCP relay"),
    (["udp", "--payload", "8"], "--payload must be"),
    (["throughput", "--runs", "0"], "--runs must be 1..100 (got 0)"),
    (["throughput", "--runs", "1000"], "--runs must be 1..100"),
    (["connections", "--connections", "300000"], "--connections must be 1..250000 for connections"),
    (["throughput", "--connections", "0"], "--connections must be 1..10000 for throughput"),
    (["udp", "--connections", "20000"], "--connections must be 1..10000 for udp"),
    (["handshakes", "--concurrency", "0"], "--concurrency must be 1..10000"),
    (["throughput", "--warmup", "-1"], "--warmup must be 0..600 seconds"),
    (["requests", "--download-size", "0"], "--download-size must be 1..4294967296 bytes"),
    (["requests", "--requests", "0"], "--requests must be 1..10000000"),
    (["requests", "--downloads", "0"], "--downloads must be 1..1000"),
    (["connections", "--ping", "0.001"], "--ping must be 0 (off) or 0.02..3600 seconds"),
    (["throughput", "--threads", "65"], "--threads must be 1..64"),
    (["throughput", "--payload", "0"], "--payload must be 1..1048576 bytes"),
    (["rules", "--rules", "2000000"], "--rules must be 0..1000000"),
    (["throughput", "--proxy-workers", "0"], "--proxy-workers must be 1..256"),
    (["throughput", "--payload", "huge"], "invalid value"),
    (["throughput", "--relay", "127.0.0.1:1"], "--target-port"),
    (["throughput", "--proxy", "not-an-address"], "invalid value"),
    (["throughput", "--chain", "0"], "--chain must be 1..8 (got '0')"),
    (["throughput", "--chain", "9"], "--chain must be 1..8 (got '9')"),
    (["throughput", "--chain", "2", "--proxy", "127.0.0.1:1080"], "--chain starts its own ferries"),
    (["throughput", "--chain", "2", "--direct"], "--chain starts its own ferries"),
    (["rules", "--chain", "2"], "--chain starts its own ferries"),
])
def test_bad_invocations(args, needle):
    proc = bench(*args, timeout=30)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert proc.stdout == ""  # refused before anything started


@pytest.mark.parametrize("scenario", ["throughput", "handshakes", "requests", "connections",
                                      "udp", "rules"])
@pytest.mark.parametrize("duration", ["0", "0.01", "-1", "4000"])
def test_impossible_duration_is_a_usage_error(scenario, duration):
    # Was: --duration 0 "measured" 0 MiB/s and exited 0.
    proc = bench(scenario, "--duration", duration, "--json", timeout=30)
    assert proc.returncode == 2, f"{proc.stdout}\n{proc.stderr}"
    assert f"--duration must be 0.1..3600 seconds (got {float(duration):g})" in proc.stderr
    assert proc.stdout == ""


def test_help():
    proc = bench("--help", timeout=30)
    assert proc.returncode == 0
    for word in ("throughput", "handshakes", "requests", "connections", "--proxy", "--json"):
        assert word in proc.stdout
    # It drives SOCKS5 and HTTP proxies, and rules runs with no proxy.
    assert "Measure a SOCKS5 proxy" not in proc.stdout
    assert "an HTTP proxy" in proc.stdout and "no proxy" in proc.stdout
    # --warmup says where it does not apply.
    warmup = proc.stdout[proc.stdout.index("--warmup"):proc.stdout.index("--connections N")]
    assert "connections" in warmup and "no warm-up" in warmup
    assert "Exit status" in proc.stdout


def test_udp_paced_self_hosted():
    r = bench_json("udp", "--connections", "4")
    assert r["params"]["payload"] == 1200
    # One unit family: binary, as throughput and downloads.
    assert r["metrics"]["payload"]["unit"] == "MiB/s"
    assert metric(r, "payload") > 0
    assert metric(r, "echoes") > 0
    assert metric(r, "clients") == 4
    assert metric(r, "corrupt") == 0
    assert 0 < metric(r, "rtt_p50") <= metric(r, "rtt_p95")
    assert 0 <= metric(r, "loss") <= 100
    assert metric(r, "proxy_cpu_per_echo") > 0
    assert metric(r, "bench_cpu_per_echo") > 0


def test_udp_large_datagrams_and_direct():
    r = bench_json("udp", "--connections", "2", "--payload", "8192")
    assert metric(r, "echoes") > 0 and metric(r, "corrupt") == 0
    d = bench_json("udp", "--connections", "2", "--direct")
    assert d["mode"] == "direct" and metric(d, "echoes") > 0


@pytest.mark.parametrize("echo_gro", [True, False])
def test_udp_blast(echo_gro):
    """Unpaced, through a self-hosted ferry that segments its sends: the
    echo takes each run in one read and answers with the same run (or, with
    --no-echo-gro, reads and answers datagram by datagram); either way every
    datagram comes back whole and checked."""
    extra = [] if echo_gro else ["--no-echo-gro"]
    r = bench_json("udp", "--connections", "2", "--blast", "--payload", "512", *extra)
    assert r["params"]["blast"] is True
    assert r["params"]["echo_gro"] is echo_gro
    offered, received = metric(r, "offered"), metric(r, "received")
    assert offered > 0 and 0 < received <= offered * 1.01
    assert 0 < metric(r, "delivered") <= 100.5
    assert metric(r, "corrupt") == 0
    assert r["metrics"]["received_payload"]["unit"] == "MiB/s"


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
    assert metric(t, "total") > 0 and metric(t, "corrupt_streams") == 0


def test_auth_modes_self_hosted():
    for mode in ("plain", "argon2"):
        r = bench_json("handshakes", "--concurrency", "2", "--auth", mode)
        assert r["params"]["auth"] == mode
        assert metric(r, "setups") > 0 and metric(r, "failed_socks") == 0


def test_auth_over_the_http_proxy_self_hosted():
    """--auth with --http-proxy sends Proxy-Authorization: Basic (CONNECT
    and absolute-form); without it every setup was a 407."""
    r = bench_json("handshakes", "--concurrency", "2", "--auth", "plain", "--http-proxy", "connect")
    assert metric(r, "setups") > 0 and metric(r, "failed_socks") == 0 and metric(r, "failed_socket") == 0
    r = bench_json("requests", "--concurrency", "2", "--auth", "plain", "--http-proxy", "absolute")
    assert metric(r, "requests") > 0 and metric(r, "failed_requests") == 0


def test_rules_lookup_cost():
    r = bench_json("rules", "--rules", "2000")
    assert r["scenario"] == "rules"
    assert r["mode"] == "none"  # the lookup alone, in the bench process
    assert r["params"]["rules"] == 2000
    assert "ferry_build" not in r and "proxy_instances" not in r
    assert metric(r, "rules") == 2000
    assert metric(r, "indexed_lookup") > 0 and metric(r, "linear_lookup") > 0
    assert metric(r, "index_agrees") == 100


# ---- the full parameter set --------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git_head(path):
    try:
        out = subprocess.run(["git", "-C", os.path.dirname(path), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def test_json_carries_parameters_version_and_commit():
    port = free_port()
    args = ["throughput", "--connections", "2", "--payload", "16k", "--threads", "2",
            "--proxy-workers", "2", "--proxy-set", "splice=no", "--proxy-set", "buffer_size=32k",
            "--target-port", str(port)]
    r = bench_json(*args)
    p = r["params"]
    assert p["proxy_set"] == ["splice=no", "buffer_size=32k"]
    assert p["target_port"] == port
    assert p["threads"] == 2 and p["proxy_workers"] == 2
    assert p["connections"] == 2 and p["payload"] == 16384 and p["concurrency"] == 8
    assert p["ferry"] == os.path.realpath(FERRY)
    assert "rules" not in p  # only where it applies
    assert "proxy" not in p and "proxy_pids" not in p
    # The arguments as given, after `ferry`: enough to run the line again.
    assert r["args"] == ["bench", *args, *SHORT]
    version = subprocess.run([FERRY, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.split()[1]
    assert r["version"] == version
    head = git_head(os.path.realpath(FERRY))
    for key in ("bench_build", "ferry_build"):
        b = r[key]
        assert b["binary"] == os.path.realpath(FERRY)
        assert b["version"] == version
        if head:
            assert b["commit"] == head
            assert b["commit_source"].startswith("git")
            assert isinstance(b["tree_dirty"], bool)
        else:
            assert "commit" not in b
            assert b["commit_source"].startswith("none")
    inst = r["proxy_instances"]
    assert len(inst) == 1 and inst[0]["run"] == 1 and inst[0]["pid"] > 0


def test_json_commit_omitted_outside_a_git_tree(tmp_path):
    # A copy of the binary outside any work tree: no commit, and it says so.
    copy = tmp_path / "ferry"
    shutil.copy(FERRY, copy)
    if git_head(str(copy)):
        pytest.skip("the temporary directory lies in a git work tree")
    proc = subprocess.run([str(copy), "bench", "rules", "--rules", "10", *SHORT],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    b = json_line(proc)["bench_build"]
    assert b["binary"] == str(copy.resolve())
    assert "commit" not in b and b["commit_source"].startswith("none")


def test_connections_restart_the_self_hosted_proxy_each_run():
    proc = bench("connections", "--connections", "50", "--concurrency", "16", "--runs", "3",
                 "--duration", "0.3", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    r = json_line(proc)
    inst = r["proxy_instances"]
    assert [i["run"] for i in inst] == [1, 2, 3]
    assert len({i["pid"] for i in inst}) == 3, inst  # a fresh ferry each run
    assert all(i["addr"].startswith("127.0.0.1:") for i in inst)
    assert metric(r, "connections") == 50 and metric(r, "healthy") == 50
    assert len(r["metrics"]["proxy_mem_per_conn"]["runs"]) == 3
    assert "a fresh one for each run" in r["target"]


def test_other_scenarios_keep_one_proxy_across_runs():
    proc = bench("handshakes", "--concurrency", "2", "--runs", "2", "--duration", "0.2",
                 "--warmup", "0", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    inst = json_line(proc)["proxy_instances"]
    assert len(inst) == 2 and inst[0]["pid"] == inst[1]["pid"]


# ---- --chain: ferries in a row -------------------------------------------------


def gone(pid):
    """The process pid has exited and been reaped (the bench waits for its
    children): no /proc entry, or one that is no longer a ferry."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"ferry" not in f.read()
    except OSError:
        return True


def test_chain_starts_each_ferry_and_stops_them():
    # Three ferries, each the parent of the one before: three processes on
    # three ports, the first the one the clients talk to, all stopped at
    # the end; their configurations are checked in tests/unit/bench/chain_test.c.
    proc = bench("handshakes", "--chain", "3", "--concurrency", "2", *SHORT)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    r = json_line(proc)
    assert r["ok"] is True
    assert r["params"]["chain"] == 3
    assert r["target"].startswith("3 ferries in a row (self-hosted): pid ")
    (inst,) = r["proxy_instances"]
    hops = inst["chain"]
    assert len(hops) == 3
    assert len({h["pid"] for h in hops}) == 3 and len({h["addr"] for h in hops}) == 3
    assert (hops[0]["pid"], hops[0]["addr"]) == (inst["pid"], inst["addr"])
    assert all(h["addr"].startswith("127.0.0.1:") for h in hops)
    assert all(gone(h["pid"]) for h in hops)
    assert metric(r, "setups") > 0
    assert metric(r, "failed_socks") == 0 and metric(r, "failed_data") == 0
    # The CPU of all three is the proxy's.
    assert metric(r, "proxy_cpu_per_1k") > 0


def test_chain_of_two_moves_bytes_intact():
    # One hop more than today's single ferry: every byte still checked.
    r = bench_json("throughput", "--chain", "2", "--connections", "2", "--payload", "16k",
                   "--duration", "1")
    assert r["params"]["chain"] == 2
    assert len(r["proxy_instances"][0]["chain"]) == 2
    assert metric(r, "up") > 0 and metric(r, "down") > 0
    assert metric(r, "streams") == 2
    assert metric(r, "corrupt_streams") == 0
    assert metric(r, "broken_streams") == 0


def test_chain_one_is_the_single_ferry():
    r = bench_json("handshakes", "--concurrency", "2")
    assert r["params"]["chain"] == 1
    (inst,) = r["proxy_instances"]
    assert inst["chain"] == [{"pid": inst["pid"], "addr": inst["addr"]}]
    assert r["target"].startswith("ferry (self-hosted, pid ")


def test_chain_restarted_whole_for_each_connections_run():
    proc = bench("connections", "--chain", "2", "--connections", "20", "--concurrency", "8",
                 "--runs", "2", "--duration", "0.3", "--json", timeout=120)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    r = json_line(proc)
    assert "2 ferries in a row (self-hosted, fresh ones for each run)" == r["target"]
    pids = [h["pid"] for i in r["proxy_instances"] for h in i["chain"]]
    assert len(pids) == 4 and len(set(pids)) == 4, r["proxy_instances"]
    assert metric(r, "healthy") == 20


def test_chain_ferry_that_cannot_start_is_named_and_cleaned_up():
    # A config line every ferry refuses: the last of the chain (started
    # first) exits at start; the bench says which ferry, stops nothing it
    # did not start, and leaves no temporary directory behind.
    proc = bench("handshakes", "--chain", "2", "--proxy-set", "bogus_key=1", *SHORT, timeout=60)
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    assert "bogus_key: unknown key" in proc.stderr
    assert "(ferry 2 of a chain of 2)" in proc.stderr
    dirs = re.findall(r"(/tmp/ferry-bench-\w+)/ferry\.conf", proc.stderr)
    assert dirs and not any(os.path.exists(d) for d in dirs)


def test_chain_header_in_table_mode():
    proc = bench("handshakes", "--chain", "2", "--concurrency", "2", "--runs", "1",
                 "--duration", "0.3", "--warmup", "0.1")
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()
    assert head[0].startswith("ferry bench handshakes: 2 ferries in a row (self-hosted): pid ")
    assert " -> pid " in head[0]
    assert head[1].endswith(", chain 2")


def test_external_proxy_that_is_a_chain(ferry):
    # --proxy needs nothing new for a chain: it talks to the first proxy,
    # and the CPU of every process listed with --proxy-pid is summed.
    last = ferry()
    first = ferry(config={"outbound": "next"},
                  extra=f"[outbound next]\nurl = socks5://127.0.0.1:{last.port}\n")
    pids = f"{first.proc.pid},{last.proc.pid}"
    r = bench_json("throughput", "--proxy", f"127.0.0.1:{first.port}", "--proxy-pid", pids,
                   "--connections", "2", "--payload", "16k")
    assert metric(r, "corrupt_streams") == 0 and metric(r, "broken_streams") == 0
    assert metric(r, "up") > 0 and metric(r, "proxy_cpu_per_gib") > 0
    assert r["params"]["proxy_pids"] == [first.proc.pid, last.proc.pid]
    assert "chain" not in r["params"]  # the bench started no ferry
    r = bench_json("handshakes", "--proxy", f"127.0.0.1:{first.port}", "--proxy-pid", pids,
                   "--concurrency", "2")
    assert metric(r, "setups") > 0 and metric(r, "failed_socks") == 0
    # The sessions went through both: the first sent them to its parent.
    assert any(e.get("via") == "next" for e in first.access_entries())
    assert any(e.get("client", "").startswith("127.0.0.1:") for e in last.access_entries())


# ---- a proxy that corrupts data ----------------------------------------------

def flip(data, at):
    if 0 <= at < len(data):
        b = bytearray(data)
        b[at] ^= 0xFF
        return bytes(b)
    return data


class CorruptingSocks5(ThreadedServer):
    """A SOCKS5 proxy (no authentication, IPv4 only) that relays faithfully
    but for one byte: for CONNECT, the one at offset flip_at of what each
    tunnel sends back to its client; for UDP ASSOCIATE, the one at offset
    flip_at of the payload of every datagram sent back. It is inverted."""

    def __init__(self, flip_at):
        self.flip_at = flip_at
        super().__init__("127.0.0.1", conn_timeout=30.0)

    def handle(self, c, peer):
        _, nmethods = recv_exact(c, 2)
        recv_exact(c, nmethods)
        c.sendall(b"\x05\x00")
        head = recv_exact(c, 4)
        assert head[0] == 5 and head[1] in (1, 3) and head[3] == 1, head
        dst = recv_exact(c, 6)
        if head[1] == 3:
            self._associate(c)
            return
        host, port = socket.inet_ntoa(dst[:4]), int.from_bytes(dst[4:], "big")
        up = socket.create_connection((host, port), timeout=5)
        up.settimeout(30.0)
        c.sendall(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
        down = threading.Thread(target=self._down, args=(up, c), daemon=True)
        down.start()
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                up.sendall(data)
            up.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        down.join(10)
        up.close()

    def _down(self, up, c):
        off = 0
        try:
            while True:
                data = up.recv(65536)
                if not data:
                    break
                data = flip(data, self.flip_at - off)
                off += len(data)
                c.sendall(data)
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _associate(self, c):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
        u.settimeout(0.1)
        c.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") +
                  u.getsockname()[1].to_bytes(2, "big"))
        done = threading.Event()
        t = threading.Thread(target=self._udp, args=(u, done), daemon=True)
        t.start()
        try:
            while c.recv(64):  # the association lasts as long as this
                pass
        except OSError:
            pass
        done.set()
        t.join(10)
        u.close()

    def _udp(self, u, done):
        client = None
        while not done.is_set():
            try:
                data, src = u.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            if data[:4] == b"\x00\x00\x00\x01" and len(data) >= 10 and client in (None, src):
                client = src  # RSV RSV FRAG ATYP=1 ADDR PORT payload
                dst = (socket.inet_ntoa(data[4:8]), int.from_bytes(data[8:10], "big"))
                u.sendto(data[10:], dst)
            elif client:
                hdr = b"\x00\x00\x00\x01" + socket.inet_aton(src[0]) + src[1].to_bytes(2, "big")
                u.sendto(hdr + flip(data, self.flip_at), client)


# The HTTP target's head for /small is 59 bytes ("HTTP/1.1 200 OK", a
# Content-Length and "Connection: close"), so offset 150 is body byte 91.
@pytest.mark.parametrize("scenario,args,flip_at,metric_name,needles", [
    ("throughput", ["--connections", "1", "--payload", "16k"], 70000, "corrupt_streams",
     ["throughput", "stream 0", "byte 70000 of the echo"]),
    ("handshakes", ["--concurrency", "2"], 0, "failed_data",
     ["handshakes", "came back as 0xa5, 0x5a was sent"]),
    ("requests", ["--requests", "20", "--warm-requests", "0", "--downloads", "1",
                  "--download-size", "64k", "--concurrency", "2"], 150, "corrupt_bodies",
     ["requests", "GET /small", "body byte 91"]),
    ("connections", ["--connections", "5", "--concurrency", "5"], 3, "corrupt_echoes",
     ["connections", "byte 3 of echo 1"]),
    ("udp", ["--connections", "1", "--payload", "64"], 20, "corrupt",
     ["udp", "client 0", "payload byte 20 of datagram 1"]),
])
def test_corrupting_proxy_fails_the_run(scenario, args, flip_at, metric_name, needles):
    srv = CorruptingSocks5(flip_at)
    try:
        proc = bench(scenario, *args, "--proxy", f"127.0.0.1:{srv.port}", "--runs", "2",
                     "--duration", "0.5", "--warmup", "0", "--json", timeout=120)
    finally:
        srv.stop()
    assert proc.returncode == 1, f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "run 1 failed" in proc.stderr and "corrupted" in proc.stderr, proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr
    # The failed run is still reported: its figures, its error, its counter.
    r = json_line(proc)
    assert r["ok"] is False
    assert all(n in r["error"] for n in needles), r["error"]
    assert len(r["metrics"][metric_name]["runs"]) == 1  # it stopped at the failure
    assert metric(r, metric_name) >= 1


def test_corrupting_proxy_fails_the_table_too():
    srv = CorruptingSocks5(70000)
    try:
        proc = bench("throughput", "--connections", "1", "--proxy", f"127.0.0.1:{srv.port}",
                     "--runs", "1", "--duration", "0.5", "--warmup", "0", timeout=120)
    finally:
        srv.stop()
    assert proc.returncode == 1, proc.stderr
    assert "FAILED (run 1)" in proc.stdout and "byte 70000" in proc.stdout
    assert "corrupt_streams" in proc.stdout


@pytest.mark.parametrize("scenario,args,metric_name", [
    ("throughput", ["--connections", "1", "--payload", "16k"], "corrupt_streams"),
    ("handshakes", ["--concurrency", "2"], "failed_data"),
    ("udp", ["--connections", "1", "--payload", "64"], "corrupt"),
])
def test_the_relay_that_corrupts_passes_when_it_does_not(scenario, args, metric_name):
    # The control for the tests above: the same relay, no byte flipped.
    srv = CorruptingSocks5(-1)
    try:
        r = bench_json(scenario, *args, "--proxy", f"127.0.0.1:{srv.port}")
    finally:
        srv.stop()
    assert metric(r, metric_name) == 0


# ---- runs that miss their parameters ------------------------------------------
# A self-hosted ferry with max_connections = 2 (or 20) accepts and closes
# every connection over it: the bench cannot set up what it was asked for.

@pytest.mark.parametrize("scenario,args,needle", [
    ("connections", ["--connections", "40", "--concurrency", "8"],
     "20 of 40 connections could not be set up"),
    ("throughput", ["--connections", "4", "--payload", "16k"],
     "2 of 4 streams could not be set up"),
    ("udp", ["--connections", "4"], "2 of 4 clients could not open a UDP association"),
])
def test_failed_setups_fail_the_run(scenario, args, needle):
    limit = "20" if scenario == "connections" else "2"
    common = [scenario, *args, "--proxy-set", f"max_connections={limit}", "--runs", "1",
              "--duration", "0.3", "--warmup", "0"]
    # The table: a FAILED line that says what and why, and exit 1.
    proc = bench(*common)
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    failed = [l for l in proc.stdout.splitlines() if l.startswith("  FAILED (run 1)")]
    assert failed and needle in failed[0], proc.stdout
    assert "first failure: the proxy closed or reset the connection" in failed[0]
    assert f"run 1 FAILED: {needle}" in proc.stderr
    # JSON: not ok, the error and the shortfall, the figures still there.
    proc = bench(*common, "--json")
    assert proc.returncode == 1, proc.stderr
    r = json_line(proc)
    assert r["ok"] is False and needle in r["error"]
    assert r["params"]["allow_failures"] is False
    assert [s["run"] for s in r["shortfalls"]] == [1] and needle in r["shortfalls"][0]["what"]
    assert r["metrics"]
    # --allow-failures: the run passes, and still says so prominently.
    proc = bench(*common, "--allow-failures")
    assert proc.returncode == 0, proc.stderr
    assert any(l.startswith("  SHORTFALL (run 1, allowed by --allow-failures): " + needle)
               for l in proc.stdout.splitlines()), proc.stdout
    assert "FAILED" not in proc.stdout
    assert "allowed by --allow-failures" in proc.stderr


def test_header_is_printed_before_the_run():
    """The header comes first, while the run is still going, and names the
    parameters this scenario uses, no others (connections has no warm-up)."""
    proc = subprocess.Popen([FERRY, "bench", "connections", "--connections", "20",
                             "--concurrency", "4", "--runs", "1", "--duration", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        params = proc.stdout.readline()
        still_running = proc.poll() is None
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert first.startswith("ferry bench connections: ferry (self-hosted, pid "), first
    assert still_running, "the header came only after the run"
    assert "hold 3s" in params and "connections 20" in params and "concurrency 4" in params
    assert "warm-up" not in params and "window" not in params, params
    assert proc.returncode == 0, err
    assert "figure" in out and "healthy" in out


@pytest.mark.parametrize("scenario,args,has,hasnt", [
    ("requests", ["--requests", "20", "--warm-requests", "0", "--downloads", "1",
                  "--download-size", "64k"], ["requests 20", "downloads 1 x 65536 B"],
     ["warm-up 1s", "window"]),
    ("rules", ["--rules", "10"], ["rules 10", "window 0.2s per lookup kind"],
     ["warm-up", "threads"]),
    ("throughput", ["--connections", "1", "--payload", "16k"],
     ["warm-up 0s", "window 0.2s", "connections 1", "payload 16384 B"], ["hold", "ping"]),
])
def test_header_shows_what_the_scenario_uses(scenario, args, has, hasnt):
    proc = bench(scenario, *args, "--runs", "1", "--duration", "0.2", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"ferry bench {scenario}: ")
    for n in has:
        assert n in lines[1], lines[1]
    for n in hasnt:
        assert n not in lines[1], lines[1]
    # Printed once: the table after the runs does not repeat it.
    assert sum(l.startswith("ferry bench ") for l in lines) == 1


# ---- units, the report and the comparison script --------------------------------

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_one_unit_family_in_help_and_docs():
    # Binary units (MiB/s) everywhere: no decimal MB/s left in the help or in
    # the tracked report (its older UDP figures converted, not re-measured).
    proc = bench("--help", timeout=30)
    assert "MiB/s" in proc.stdout and "MB/s" not in proc.stdout
    with open(os.path.join(ROOT, "docs", "benchmarks.md")) as f:
        doc = f.read()
    assert "MB/s" not in doc
    assert "| payload MiB/s |" in doc and "| received MiB/s |" in doc


def test_report_converts_decimal_units(tmp_path):
    """An older results file with the UDP payload rate in MB/s renders in
    MiB/s, figure converted."""
    src = os.path.join(ROOT, "docs", "benchmarks.jsonl")
    out = tmp_path / "r.md"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "report.py"), "render",
                           src, "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    md = out.read_text()
    assert "MB/s" not in md and "payload MiB/s" in md
    # The median payload rate of ferry, 16 clients x 1200 B, in the JSON lines.
    runs = []
    with open(src) as f:
        for line in f:
            rec = json.loads(line)
            c = rec.get("compare")
            if c and c["variant"] == "udp-16x1200" and c["target"] == "ferry" and not c.get("error"):
                m = rec["metrics"]["payload"]
                runs.append(m["median"] * (1e6 / 1048576 if m["unit"] == "MB/s" else 1))
    import statistics
    want = statistics.median(runs)
    lines = md.splitlines()
    start = next(i for i, l in enumerate(lines) if "16 clients × 1200 B" in l and l.startswith("#"))
    row = next(l for l in lines[start:] if l.startswith("| ferry |"))  # that table's ferry row
    assert f"{want:.1f}" in row.split("|")[3], (want, row)


def hop_results(path):
    """A results file of the hop group alone, with round figures: (MiB/s at
    8 streams, setups/s) per target."""
    targets = "direct,ferry,ferry-ferry,dante,ferry-dante,dante-dante"
    figures = {"direct": (2000, 20000), "ferry": (1000, 10000), "ferry-ferry": (850, 5000),
               "dante": (800, 6000), "ferry-dante": (600, 4500), "dante-dante": (500, 3000)}
    variants = [["hop-throughput-8", "throughput", "--connections 8 --payload 64k", targets, "hop"],
                ["hop-handshakes", "handshakes", "--concurrency 32", targets, "hop"]]
    lines = [{"meta": {"params": {"rounds": 1, "duration_s": 5, "warmup_s": 1, "groups": ["hop"],
                                  "variants": variants}}}]
    for t in figures:
        lines.append({"peer": {"target": t, "status": "ok", "how": t,
                               "mode": "direct" if t == "direct" else "proxy",
                               "cpu_source": "none" if t == "direct" else "bench"}})

    def m(v, unit=""):
        return {"median": v, "min": v, "max": v, "unit": unit, "runs": [v]}

    for t, (mib, setups) in figures.items():
        runs = (("hop-throughput-8", "throughput",
                 {"total": m(mib, "MiB/s"), "up": m(mib / 2, "MiB/s"), "down": m(mib / 2, "MiB/s"),
                  "streams": m(8), "corrupt_streams": m(0), "broken_streams": m(0),
                  "proxy_cpu_per_gib": m(0.5, "s/GiB")}),
                ("hop-handshakes", "handshakes",
                 {"setups": m(setups, "1/s"), "latency_p50": m(1, "ms"), "latency_p95": m(2, "ms"),
                  "latency_p99": m(3, "ms"), "failed_socket": m(0), "failed_socks": m(0),
                  "failed_data": m(0), "proxy_cpu_per_1k": m(0.1, "s/1000")}))
        chain = {"ferry": 1, "ferry-ferry": 2}.get(t)
        for variant, scenario, metrics in runs:
            params = {"chain": chain} if chain else {}
            lines.append({"scenario": scenario, "ok": True, "params": params, "metrics": metrics,
                          "notes": [], "compare": {"round": 1, "variant": variant, "target": t,
                                                   "cpu_source": "bench"}})
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))


def test_report_renders_the_cost_of_a_hop(tmp_path):
    """The hop group (compare.sh --only hop): each two-hop row against the
    one-hop row that ends the same way, the issue's targets for one more
    ferry hop said met or not, and the chains kept out of the summary."""
    src, out = tmp_path / "r.jsonl", tmp_path / "r.md"
    hop_results(src)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "report.py"), "render",
                           str(src), "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    md = out.read_text()
    lines = md.splitlines()
    start = lines.index("## The cost of a hop")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]]
            for l in lines[start:end] if l.startswith("| ") and not l.startswith("| path")}
    assert list(rows) == ["direct (no proxy)", "ferry", "ferry → ferry", "Dante", "ferry → Dante",
                          "Dante → Dante"]
    assert rows["ferry → ferry"][0] == "2" and rows["ferry"][0] == "1"
    assert rows["ferry → ferry"][2] == "0.85×" and rows["ferry → ferry"][4] == "0.50×"
    assert rows["Dante → Dante"][2] == "0.62×" and rows["ferry → Dante"][4] == "0.75×"
    assert rows["ferry"][2] == "1.00×" and rows["direct (no proxy)"][2] == ""
    assert ("0.85× of one ferry's MiB/s at 8 streams (target ≥ 0.8×: met) and 0.50× of one "
            "ferry's setups/s (target ≥ 0.6×: **not met**)") in md
    assert "1.20× the throughput, 8 streams of Dante in front" in md
    summary = md[md.index("## Summary"):md.index("## Machine")]
    assert "→" not in summary
    # A row whose bench started another number of ferries says so.
    src.write_text(src.read_text().replace('"chain": 2', '"chain": 1'))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "report.py"), "render",
                           str(src), "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| ferry → ferry | **1 (bench) ≠ 2** |" in out.read_text()


def test_compare_hop_group_runs_chains():
    """compare.sh --only hop: the ferry rows are `ferry bench --chain 1`
    and `--chain 2`, the Dante chains are started by the script, and Dante
    is installed once."""
    info, out = compare_dry_run("--only", "hop")
    assert info["groups"] == "hop"
    assert info["targets"] == "direct ferry dante ferry-ferry ferry-dante dante-dante"
    assert info["packages needed"].split() == ["dante-server", "gnuplot-nox"]
    runs = [l for l in out.splitlines() if l.startswith("run: hop-")]
    assert len(runs) == 12
    for l in runs:
        t = l.split()[2].rstrip(":")
        assert ("--chain 2" in l) == (t == "ferry-ferry"), l
        assert ("--chain 1" in l) == (t == "ferry"), l
        assert l.endswith("(hop)")


def test_report_help_exits_0():
    report = os.path.join(ROOT, "bench", "report.py")
    for arg in ("--help", "-h"):
        proc = subprocess.run([sys.executable, report, arg], capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 0, proc.stderr
        assert "usage" in proc.stdout and "render" in proc.stdout
    proc = subprocess.run([sys.executable, report], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage" in proc.stderr


PEER_PKGS = ["dante-server", "microsocks", "shadowsocks-libev", "haproxy", "tinyproxy", "squid"]


def compare_dry_run(*args):
    proc = subprocess.run([os.path.join(ROOT, "bench", "compare.sh"), "--dry-run", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return {l.split(":", 1)[0]: l.split(":", 1)[1].strip()
            for l in proc.stdout.splitlines() if ":" in l and not l.startswith("run:")}, proc.stdout


def test_compare_installs_only_what_it_runs_and_writes_outside_docs():
    before = os.stat(os.path.join(ROOT, "docs", "benchmarks.md")).st_mtime_ns
    info, out = compare_dry_run("--targets", "ferry")
    assert info["targets"] == "ferry"
    needed = info["packages needed"].split()
    assert not set(needed) & set(PEER_PKGS), needed
    for p in PEER_PKGS:
        assert p not in out  # not to install, not to run
    report = os.path.realpath(info["report"])
    assert report == os.path.realpath(os.path.join(ROOT, "build", "bench", "benchmarks.md"))
    assert not report.startswith(os.path.realpath(os.path.join(ROOT, "docs")))
    assert "--allow-failures" in out
    assert os.stat(os.path.join(ROOT, "docs", "benchmarks.md")).st_mtime_ns == before
    # Peers are installed only when they run: the HTTP group needs Squid,
    # not Dante; the tracked report is written only when asked.
    info, _ = compare_dry_run("--targets", "ferry,squid,dante", "--only", "http",
                              "--out", "docs/benchmarks.md")
    assert info["targets"] == "ferry squid"
    assert "squid" in info["packages needed"].split()
    assert "dante-server" not in info["packages needed"]
    assert os.path.realpath(info["report"]) == os.path.realpath(
        os.path.join(ROOT, "docs", "benchmarks.md"))


def test_connections_beyond_the_open_files_limit_fail_up_front():
    """Held connections the open-files limit cannot hold are said up front
    (exit 1, nothing started), not after a long run of failed setups."""
    import resource

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    proc = subprocess.run([FERRY, "bench", "connections", "--connections", "600", "--runs", "1",
                           "--duration", "0.2"], capture_output=True, text=True, timeout=120,
                          preexec_fn=low_limit)
    if proc.returncode == 0:
        pytest.skip("the open-files limit could be raised here (CAP_SYS_RESOURCE)")
    assert proc.returncode == 1, proc.stderr
    assert "--connections 600 needs about 1456 open files" in proc.stderr
    assert "use --connections 384 or fewer" in proc.stderr
    assert proc.stdout == ""  # nothing ran


# ---- --https-proxy: TLS 1.3 to the proxy, then HTTP/1.1 ------------------------

def test_throughput_over_https_proxy_h1_self_hosted():
    r = bench_json("throughput", "--https-proxy", "h1", "--connections", "2",
                   "--duration", "1")
    assert r["params"]["https_proxy"] == "h1"
    assert r["params"]["http_proxy"] == "connect"
    assert metric(r, "streams") == 2
    assert metric(r, "up") > 0 and metric(r, "down") > 0
    assert metric(r, "corrupt_streams") == 0 and metric(r, "broken_streams") == 0
    # The header of the table names the mode too.
    t = bench("throughput", "--https-proxy", "h1", "--connections", "1", "--runs", "1",
              "--duration", "0.3", "--warmup", "0.1")
    assert t.returncode == 0, t.stderr
    assert "https proxy h1 (TLS 1.3, self-signed, pinned)" in t.stdout


def test_handshakes_and_requests_over_https_proxy_h1_self_hosted():
    r = bench_json("handshakes", "--https-proxy", "h1", "--concurrency", "2")
    assert r["params"]["https_proxy"] == "h1"
    assert metric(r, "setups") > 0
    assert metric(r, "failed_socket") == 0 and metric(r, "failed_socks") == 0
    q = bench_json("requests", "--https-proxy", "h1", "--requests", "40", "--warm-requests",
                   "5", "--downloads", "2", "--download-size", "128k")
    assert q["params"]["http_proxy"] == "absolute"
    assert metric(q, "failed_requests") == 0 and metric(q, "corrupt_bodies") == 0


@pytest.mark.parametrize("args, needle", [
    (["--https-proxy", "h2", "--proxy", "127.0.0.1:9"], "needs one of --proxy-cacert"),
    (["--https-proxy", "h3"], "invalid value 'h3'"),
    (["--https-proxy", "h1", "--proxy", "127.0.0.1:9"], "needs one of --proxy-cacert"),
    (["--https-proxy", "h1", "--proxy-pin", "sha256//" + "A" * 43 + "="],
     "for an external proxy"),
    (["--proxy-pin", "sha256//nope"], "invalid value"),
    (["--https-proxy", "h1", "--direct"], "needs a proxy"),
])
def test_https_proxy_bad_invocations(args, needle):
    p = bench("throughput", *args, "--runs", "1", "--duration", "0.2", timeout=30)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr


def test_https_proxy_udp_and_connections_are_not_yet():
    for sc in ("udp", "connections"):
        p = bench(sc, "--https-proxy", "h1", "--runs", "1", "--duration", "0.2", timeout=30)
        assert p.returncode == 2 and "not yet" in p.stderr, p.stderr


def _tls_ferry(ferry, tmp_path):
    out = subprocess.run([FERRY, "cert", "--out", str(tmp_path / "c"), "--name", "127.0.0.1"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    pin = out.stdout.splitlines()[0].strip()
    assert pin.startswith("sha256//")
    cert, key = tmp_path / "c" / "cert.pem", tmp_path / "c" / "key.pem"
    f = ferry(listens=("tls://127.0.0.1:0",), config={"open_proxy": "yes"},
              extra=f"[tls]\ncert = {cert}\nkey = {key}\n")
    return f, pin, cert


def test_https_proxy_external_pin_and_cacert(ferry, tmp_path):
    f, pin, cert = _tls_ferry(ferry, tmp_path)
    for how in (["--proxy-pin", pin], ["--proxy-cacert", str(cert)]):
        r = bench_json("throughput", "--https-proxy", "h1", "--proxy", f"127.0.0.1:{f.port}",
                       "--connections", "2", *how)
        assert r["mode"] == "proxy" and r["params"]["https_proxy"] == "h1"
        assert metric(r, "streams") == 2 and metric(r, "corrupt_streams") == 0


def test_https_proxy_wrong_pin_fails_clearly(ferry, tmp_path):
    f, pin, _ = _tls_ferry(ferry, tmp_path)
    wrong = "sha256//" + "A" * 43 + "="
    assert wrong != pin
    p = bench("handshakes", "--https-proxy", "h1", "--proxy", f"127.0.0.1:{f.port}",
              "--proxy-pin", wrong, "--concurrency", "2", "--runs", "1", "--duration", "0.3",
              "--warmup", "0.1", timeout=60)
    assert p.returncode != 0, p.stdout
    assert "pin mismatch" in p.stderr, p.stderr
