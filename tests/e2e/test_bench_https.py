# SPDX-License-Identifier: BSD-2-Clause
"""`ferry bench --https-proxy h2`: every bench connection is an HTTP/2
CONNECT stream on one TLS connection (ALPN h2) per generator thread.

Developed against a standard HTTP/2 proxy, nghttpx in HTTP/2 proxy mode
(`nghttpx -s`, Debian nghttp2-proxy): it terminates TLS and h2 and hands
each CONNECT to an HTTP/1 proxy behind it, here a plain ferry port. The runs
are short (small sizes, windows under 2 s) and every byte is still checked
by the bench; a proxy that does not offer h2 in ALPN must be told as such,
never used over HTTP/1.1 instead.
"""

import contextlib
import json
import os
import socket
import ssl
import subprocess
import threading

import pytest

from certlib import make_cert, pin_of
from daemonlib import daemon, free_port, need, shared_dir

FERRY = os.environ.get("FERRY_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "san", "ferry")

SHORT = ["--runs", "1", "--duration", "1", "--warmup", "0.2", "--json"]


def bench(*args, timeout=120):
    return subprocess.run([FERRY, "bench", *args], capture_output=True, text=True,
                          timeout=timeout)


def bench_json(*args):
    p = bench(*args, *SHORT)
    assert p.returncode == 0, f"bench failed: {p.stderr}\n{p.stdout}"
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, p.stdout
    r = json.loads(lines[0])
    assert r["ok"] is True and "error" not in r
    assert r["params"]["https_proxy"] == "h2" and r["params"]["http_proxy"] == "connect"
    return r


def metric(r, name):
    return r["metrics"][name]["median"]


@contextlib.contextmanager
def nghttpx_front(backend_port, cert, key):
    """nghttpx -s on a free loopback port, handing each CONNECT to
    127.0.0.1:backend_port (an HTTP/1 proxy)."""
    binary = need("nghttpx")
    port = free_port()
    d = shared_dir("ferry-nghttpx-")
    argv = [binary, "--conf=/dev/null", "-s", f"-f127.0.0.1,{port}",
            f"-b127.0.0.1,{backend_port}", "--no-ocsp", "--workers=1",
            "--errorlog-file=/dev/stderr", "--accesslog-file=/dev/null", str(key), str(cert)]
    with daemon(argv, d, port, "nghttpx") as proc:
        yield port, proc


@pytest.fixture
def cert(tmp_path):
    c, k = make_cert(tmp_path, "proxy")
    return c, k, pin_of(c)


def test_h2_throughput_requests_handshakes_through_nghttpx(ferry, cert):
    c, k, pin = cert
    f = ferry(config={"open_proxy": "yes"})
    with nghttpx_front(f.port, c, k) as (port, proc):
        via = ["--https-proxy", "h2", "--proxy", f"127.0.0.1:{port}"]
        # 4 streams on one connection (one generator thread), with integrity.
        r = bench_json("throughput", *via, "--proxy-pin", pin, "--connections", "4",
                       "--payload", "16k", "--proxy-pid", f"{proc.pid},{f.proc.pid}")
        assert metric(r, "streams") == 4
        assert metric(r, "up") > 0 and metric(r, "down") > 0
        assert metric(r, "corrupt_streams") == 0 and metric(r, "broken_streams") == 0
        assert metric(r, "proxy_cpu_per_gib") > 0
        # Each request a new stream on the warm connection; CA-verified.
        q = bench_json("requests", *via, "--proxy-cacert", str(c), "--requests", "60",
                       "--warm-requests", "10", "--downloads", "2", "--download-size", "128k")
        assert metric(q, "requests") > 0 and metric(q, "download") > 0
        assert metric(q, "failed_requests") == 0 and metric(q, "failed_downloads") == 0
        assert metric(q, "corrupt_bodies") == 0
        h = bench_json("handshakes", *via, "--proxy-pin", pin, "--concurrency", "2")
        assert metric(h, "setups") > 0
        assert metric(h, "failed_socket") == 0 and metric(h, "failed_socks") == 0
        assert metric(h, "failed_data") == 0


def test_h2_proxy_authorization_per_stream(ferry, cert):
    c, k, pin = cert
    (ferry.workdir / "users.txt").write_text("bench:plain:benchpass\n")
    f = ferry(auth={"userlist": "users.txt"})
    with nghttpx_front(f.port, c, k) as (port, _):
        via = ["--https-proxy", "h2", "--proxy", f"127.0.0.1:{port}", "--proxy-pin", pin]
        r = bench_json("throughput", *via, "--auth", "plain", "--connections", "2",
                       "--payload", "16k")
        assert metric(r, "streams") == 2 and metric(r, "corrupt_streams") == 0
        # Without credentials ferry answers 407, and nghttpx passes it on.
        p = bench("throughput", *via, "--connections", "2", "--runs", "1", "--duration",
                  "0.3", "--warmup", "0.1", timeout=60)
        assert p.returncode == 1, p.stdout
        assert "the proxy answered the h2 CONNECT with :status 407" in p.stderr, p.stderr


class Http11OnlyTls:
    """A TLS server that offers ALPN http/1.1 only: the handshake succeeds
    and no protocol is agreed (the bench offers h2 alone)."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.conns = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            try:
                conn.settimeout(5)
                self.conns.append(self.ctx.wrap_socket(conn, server_side=True))
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self):
        self.stop.set()
        self.t.join(5)
        for s in self.conns:
            s.close()
        self.sock.close()


def test_h2_not_offered_is_said_not_fallen_back(cert):
    c, k, pin = cert
    srv = Http11OnlyTls(str(c), str(k))
    try:
        p = bench("throughput", "--https-proxy", "h2", "--proxy", f"127.0.0.1:{srv.port}",
                  "--proxy-pin", pin, "--connections", "2", "--runs", "1", "--duration", "0.3",
                  "--warmup", "0.1", timeout=60)
    finally:
        srv.close()
    assert p.returncode == 1, p.stdout
    assert "h2 not offered" in p.stderr and "ALPN '(none)'" in p.stderr, p.stderr


def test_h2_wrong_pin_fails_every_scenario_clearly(cert):
    """A connection that cannot be made fails the streams waiting for it
    (requests waits for its connection first: it must not wait forever)."""
    c, k, _ = cert
    wrong = "sha256//" + "A" * 43 + "="
    srv = Http11OnlyTls(str(c), str(k))
    try:
        for sc in ("requests", "throughput", "handshakes"):
            p = bench(sc, "--https-proxy", "h2", "--proxy", f"127.0.0.1:{srv.port}",
                      "--proxy-pin", wrong, "--requests", "20", "--warm-requests", "2",
                      "--downloads", "1", "--connections", "2", "--concurrency", "2", "--runs",
                      "1", "--duration", "0.3", "--warmup", "0.1", timeout=60)
            assert p.returncode == 1, (sc, p.stdout)
            assert "certificate pin mismatch" in p.stderr, (sc, p.stderr)
    finally:
        srv.close()


def test_h2_self_hosted_runs_or_says_h2_not_offered():
    """The self-hosted ferry (a throwaway certificate, a tls:// listener):
    once it speaks h2 the run passes with integrity; until then it must fail
    saying h2 was not offered."""
    p = bench("throughput", "--https-proxy", "h2", "--connections", "2", *SHORT)
    if p.returncode == 0:
        r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][0])
        assert metric(r, "streams") == 2 and metric(r, "corrupt_streams") == 0
    else:
        assert "h2 not offered" in p.stderr, p.stderr


def test_h2_bad_invocations():
    p = bench("requests", "--https-proxy", "h2", "--http-proxy", "absolute", "--runs", "1",
              timeout=30)
    assert p.returncode == 2 and "CONNECT streams only" in p.stderr, p.stderr
    p = bench("throughput", "--https-proxy", "h2", "--proxy", "127.0.0.1:9", "--runs", "1",
              timeout=30)
    assert p.returncode == 2 and "needs one of --proxy-cacert" in p.stderr, p.stderr


def test_compare_https_group_plans_its_rows():
    """bench/compare.sh --only https: plain HTTP CONNECT and the five TLS
    rows, each run with its HTTPS mode and a pin; the TLS peers' packages
    (and squid-openssl rather than squid, which would replace it)."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    p = subprocess.run([os.path.join(root, "bench", "compare.sh"), "--dry-run", "--only", "https",
                        "--rounds", "1"], capture_output=True, text=True, timeout=60, cwd=root)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    info = {l.split(":", 1)[0]: l.split(":", 1)[1].strip() for l in lines
            if ":" in l and not l.startswith("run:")}
    assert info["targets"] == "ferry ferry-tls-h1 ferry-tls-h2 stunnel squid-https nghttpx"
    needed = info["packages needed"].split()
    assert {"stunnel4", "squid-openssl", "nghttp2-proxy"} <= set(needed) and "squid" not in needed
    runs = [l for l in lines if l.startswith("run:")]
    assert len(runs) == 18  # 3 variants x 6 targets
    for l in runs:
        assert "--http-proxy connect" in l
        t = l.split()[2].rstrip(":")
        want = {"ferry": None, "ferry-tls-h1": "h1", "stunnel": "h1", "squid-https": "h1",
                "ferry-tls-h2": "h2", "nghttpx": "h2"}[t]
        assert (f"--https-proxy {want} --proxy-pin" in l) if want else "--https-proxy" not in l, l


def test_h2_stalled_stream_held_beside_the_measured():
    """--stalled 1 against the self-hosted ferry (h2): one more CONNECT
    stream on the same connection sends its burst and never reads. The run
    completes with integrity, the stalled stream is held to the end, and
    the proxy's flow control stopped its burst short of the 64 MiB (its
    windows filled). No figure of speed is asserted: that is the bench's."""
    p = bench("throughput", "--https-proxy", "h2", "--connections", "3", "--stalled", "1",
              "--payload", "16k", *SHORT)
    assert p.returncode == 0, f"bench failed: {p.stderr}\n{p.stdout}"
    r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][0])
    assert r["ok"] is True and r["params"]["stalled"] == 1
    assert metric(r, "streams") == 3 and metric(r, "corrupt_streams") == 0
    assert metric(r, "broken_streams") == 0
    assert metric(r, "stalled_streams") == 1
    assert 0 < metric(r, "stalled_sent") < 64
    # Its echo piles up unread in the bench, bounded by the 16 MiB window.
    assert 0 < metric(r, "stalled_unread") <= 16


def test_stalled_is_refused_where_it_would_not_share_a_connection():
    for extra in ([], ["--https-proxy", "h1"]):
        p = bench("throughput", "--stalled", "1", "--runs", "1", *extra, timeout=30)
        assert p.returncode == 2 and "--stalled is for throughput with --https-proxy h2" \
            in p.stderr, p.stderr
    p = bench("requests", "--https-proxy", "h2", "--stalled", "1", "--runs", "1", timeout=30)
    assert p.returncode == 2 and "--stalled is for throughput" in p.stderr, p.stderr
    p = bench("throughput", "--https-proxy", "h2", "--connections", "2", "--stalled", "3",
              "--runs", "1", timeout=30)
    assert p.returncode == 2 and "--stalled must be 0..2" in p.stderr, p.stderr


def test_compare_stall_group_plans_its_rows():
    """bench/compare.sh --only stall: ferry's tls:// listener over h2, the
    same 7 streams alone and beside one stalled stream, in each round."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    p = subprocess.run([os.path.join(root, "bench", "compare.sh"), "--dry-run", "--only", "stall",
                        "--rounds", "1"], capture_output=True, text=True, timeout=60, cwd=root)
    assert p.returncode == 0, p.stderr
    runs = [l for l in p.stdout.splitlines() if l.startswith("run:")]
    assert [l.split()[1] for l in runs] == ["stall-7", "stall-7-1"], runs
    for l in runs:
        assert "ferry-tls-h2:" in l and "--connections 7" in l and "--https-proxy h2 --proxy-pin" in l
    assert "--stalled" not in runs[0] and "--stalled 1" in runs[1]
