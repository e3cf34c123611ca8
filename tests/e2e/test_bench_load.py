# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench`: open-loop load (--rate), one-way streams (--direction),
remote targets (`ferry bench sink`, --target), what the report says about
the machine, and the usage errors and failures of those.

Every run is short (a window of 1 s or less) and bounded by a subprocess
timeout; no speed is asserted, only that a rate asked for is roughly the
rate sent (loose bounds: the machine is shared) and that bytes are counted
and checked where they arrive.
"""

import os
import re
import signal
import socket
import struct
import subprocess
import time

import pytest

from test_bench import FERRY, CorruptingSocks5, bench, flip, free_port, json_line, metric

SHORT = ["--runs", "1", "--duration", "1", "--warmup", "0.2", "--json"]
PCTS = ("p50", "p90", "p95", "p99", "p99_9", "max")


def run_json(*args, ok=True, timeout=120):
    proc = bench(*args, *SHORT, timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"bench failed: {proc.stderr}\n{proc.stdout}"
    r = json_line(proc)
    assert r["ok"] is ok, r
    return r


def assert_percentiles(r, prefix):
    vals = [metric(r, f"{prefix}_{p}") for p in PCTS]
    assert 0 < vals[0], vals
    assert vals == sorted(vals), vals
    for p in PCTS:
        assert r["metrics"][f"{prefix}_{p}"]["unit"] == "ms"


# ---- open loop: --rate ---------------------------------------------------------

def test_rate_handshakes_keep_the_timetable_and_report_percentiles():
    r = run_json("handshakes", "--rate", "200/s", "--concurrency", "64")
    assert r["params"]["rate"] == 200
    assert metric(r, "scheduled") == 200
    # About 200 a second were set up (loose: a shared, sanitized machine).
    assert 60 <= metric(r, "setups") <= 260, metric(r, "setups")
    assert metric(r, "failed_socket") == 0 and metric(r, "failed_data") == 0
    assert "backlog" in r["metrics"]
    assert_percentiles(r, "latency")


def test_rate_requests_keep_the_timetable():
    r = run_json("requests", "--rate", "200", "--requests", "100", "--warm-requests", "0",
                 "--downloads", "1", "--download-size", "64k")
    assert metric(r, "scheduled") == 200
    # 100 requests due over 0.5 s: about 200 a second, not as fast as it can.
    assert 50 <= metric(r, "requests") <= 260, metric(r, "requests")
    assert metric(r, "failed_requests") == 0 and metric(r, "corrupt_bodies") == 0
    assert_percentiles(r, "latency")
    assert metric(r, "download") > 0


def test_rate_udp_sends_about_the_rate_asked():
    r = run_json("udp", "--rate", "1000", "--connections", "4")
    assert metric(r, "scheduled") == 1000
    assert 400 <= metric(r, "offered") <= 1300, metric(r, "offered")
    assert metric(r, "echoes") > 0 and metric(r, "corrupt") == 0
    assert_percentiles(r, "rtt")


def test_closed_loop_latency_comes_from_the_histogram_too():
    r = run_json("udp", "--connections", "2")
    assert_percentiles(r, "rtt")
    assert r["params"]["rate"] == 0
    r = run_json("handshakes", "--concurrency", "2")
    assert_percentiles(r, "latency")
    assert "scheduled" not in r["metrics"]


# ---- one-way streams: --direction -----------------------------------------------

@pytest.mark.parametrize("mode", [[], ["--direct"]])
def test_direction_up_counts_at_the_sink(mode):
    r = run_json("throughput", "--direction", "up", "--connections", "2", *mode)
    assert r["params"]["direction"] == "up"
    assert metric(r, "up") > 0 and metric(r, "total") == metric(r, "up")
    assert "down" not in r["metrics"]
    assert metric(r, "slowest_stream_up") >= 0 and metric(r, "corrupt_streams") == 0


@pytest.mark.parametrize("mode", [[], ["--direct"]])
def test_direction_down_counts_at_the_client(mode):
    r = run_json("throughput", "--direction", "down", "--connections", "2", *mode)
    assert r["params"]["direction"] == "down"
    assert metric(r, "down") > 0 and metric(r, "total") == metric(r, "down")
    assert "up" not in r["metrics"]
    assert metric(r, "corrupt_streams") == 0


def test_direction_down_checks_every_byte_from_the_source():
    srv = CorruptingSocks5(70000)
    try:
        proc = bench("throughput", "--direction", "down", "--connections", "1",
                     "--proxy", f"127.0.0.1:{srv.port}", *SHORT)
    finally:
        srv.stop()
    assert proc.returncode == 1, proc.stderr
    r = json_line(proc)
    assert r["ok"] is False and "byte 70000 from the source" in r["error"], r["error"]


def test_the_sink_checks_what_it_receives_and_reports_a_wrong_byte():
    with Sink() as s:
        # The pattern from offset 0, as the sink's own HTTP server sends it.
        body = http_get(s.port, "/bytes/4096")
        assert len(body) == 4096
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(b"FBD1" + struct.pack(">Q", 0) + body[:1000])
        total = read_reports(c, lambda v: v >= 1000)
        assert total == 1000
        c.sendall(flip(body[1000:2000], 500))
        v = read_reports(c, lambda v: v & (1 << 63))
        assert v == (1 << 63) | 1500  # the offset of the wrong byte
        c.settimeout(10)
        assert c.recv(8) == b""  # and the sink ends the stream
        c.close()


# ---- remote targets: ferry bench sink, --target --------------------------------

class Sink:
    """`ferry bench sink` on a free loopback port, stopped with SIGTERM."""

    def __enter__(self):
        self.proc = subprocess.Popen([FERRY, "bench", "sink", "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+) ", line)
        assert m, line + self.proc.stderr.read()
        self.port = int(m.group(1))
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=20) == 0, self.proc.stderr.read()


def http_get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    return body


def read_reports(c, done, deadline_s=10):
    """The sink's 8-byte reports until done(value) holds; the last value."""
    c.settimeout(deadline_s)
    buf, end = b"", time.monotonic() + deadline_s
    while time.monotonic() < end:
        d = c.recv(64)
        assert d, "the sink closed before the report"
        buf += d
        while len(buf) >= 8:
            (v,), buf = struct.unpack(">Q", buf[:8]), buf[8:]
            if done(v):
                return v
    raise AssertionError("no such report")


@pytest.mark.slow
def test_sink_serves_every_scenario_through_a_proxy_with_target():
    with Sink() as s:
        target = ["--target", f"127.0.0.1:{s.port}"]
        for d in ("both", "up", "down"):
            r = run_json("throughput", "--direction", d, "--connections", "2", *target)
            assert r["params"]["target"] == f"127.0.0.1:{s.port}"
            assert metric(r, "total") > 0 and metric(r, "corrupt_streams") == 0
        r = run_json("handshakes", "--concurrency", "2", *target)
        assert metric(r, "setups") > 0 and metric(r, "failed_data") == 0
        r = run_json("requests", "--requests", "20", "--warm-requests", "0", "--downloads", "1",
                     "--download-size", "64k", *target)
        assert metric(r, "failed_requests") == 0 and metric(r, "download") > 0
        r = run_json("udp", "--connections", "2", *target)
        assert metric(r, "echoes") > 0 and metric(r, "corrupt") == 0
        r = run_json("connections", "--connections", "20", "--concurrency", "4", *target)
        assert metric(r, "healthy") == 20


def test_sink_help_and_usage_errors():
    p = subprocess.run([FERRY, "bench", "sink", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0 and "--listen" in p.stdout and "--target" in p.stdout
    for args, needle in ((["--listen", "nowhere"], "--listen: invalid value"),
                         (["--bogus"], "Try 'ferry bench sink --help'"),
                         (["extra"], "unexpected argument")):
        p = subprocess.run([FERRY, "bench", "sink", *args], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2 and needle in p.stderr, p.stderr


def test_a_target_that_refuses_fails_the_run():
    port = free_port()
    proc = bench("throughput", "--direct", "--connections", "2", "--target",
                 f"127.0.0.1:{port}", *SHORT)
    assert proc.returncode == 1, f"{proc.stdout}\n{proc.stderr}"
    r = json_line(proc)
    assert r["ok"] is False
    assert "2 of 2 streams could not be set up" in r["error"], r["error"]
    assert "refused" in r["error"], r["error"]


# ---- usage errors -----------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["throughput", "--rate", "10"], "--rate is for handshakes, requests and udp"),
    (["udp", "--rate", "10", "--blast"], "--rate and --blast"),
    (["handshakes", "--rate", "0.5"], "--rate must be 0 (off) or 1..10000000 per second"),
    (["handshakes", "--rate", "-5"], "--rate must be 0 (off) or 1..10000000 per second"),
    (["handshakes", "--rate", "1e12"], "--rate must be 0 (off) or 1..10000000"),
    (["handshakes", "--rate", "fast"], "--rate: invalid value"),
    (["throughput", "--direction", "sideways"], "--direction: invalid value"),
    (["udp", "--direction", "up"], "--direction is for throughput"),
    (["throughput", "--connections", "0"], "--connections must be 1..10000 for throughput"),
    (["throughput", "--connections", "-1"], "--connections: invalid value"),
    (["throughput", "--duration", "0"], "--duration must be 0.1..3600 seconds (got 0)"),
    (["handshakes", "--concurrency", "0"], "--concurrency must be 1..10000"),
    (["throughput", "--target", "example.org:80"], "--target: invalid value"),
    (["throughput", "--target", "127.0.0.1:0"], "--target: invalid value"),
    (["throughput", "--target", "127.0.0.1:9", "--target-port", "9"], "--target-port"),
    (["rules", "--target", "127.0.0.1:9"], "the rules scenario has no target"),
    # Off this host only by consent (--target): refused before anything starts.
    (["throughput", "--proxy", "192.0.2.1:1080"], "is not on this host's loopback"),
    (["throughput", "--relay", "192.0.2.1:1080", "--target-port", "9"],
     "is not on this host's loopback"),
])
def test_usage_errors(args, needle):
    proc = bench(*args, timeout=30)
    assert proc.returncode == 2, f"{proc.stdout}\n{proc.stderr}"
    assert needle in proc.stderr, proc.stderr
    assert proc.stdout == ""


# ---- the report ---------------------------------------------------------------------

def test_json_says_when_and_on_what_machine():
    r = run_json("handshakes", "--concurrency", "2")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["timestamp"]), r["timestamp"]
    h = r["host"]
    assert h["cores"] == os.cpu_count()
    assert h["cpu"]
    u = os.uname()
    assert h["kernel"] == {"sysname": u.sysname, "release": u.release, "version": u.version,
                           "machine": u.machine}


def test_table_header_names_the_host_rate_and_direction():
    proc = bench("throughput", "--direction", "up", "--connections", "1", "--runs", "1",
                 "--duration", "0.3", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    assert "direction up" in proc.stdout and f"{os.cpu_count()} cores" in proc.stdout
    proc = bench("udp", "--rate", "100", "--connections", "1", "--runs", "1", "--duration",
                 "0.3", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    assert "rate 100/s (open loop" in proc.stdout and "rtt_p99_9" in proc.stdout


def test_help_names_the_new_options():
    proc = bench("--help", timeout=30)
    for word in ("--rate", "--direction", "--target", "ferry bench sink", "p99.9"):
        assert word in proc.stdout, word
