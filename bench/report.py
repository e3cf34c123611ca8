#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""report.py: the benchmark report (build/bench/benchmarks.md, or the tracked
docs/benchmarks.md when asked) from the JSON lines of bench/compare.sh.

usage:
  report.py meta [--cmdline ...]            print the run's header line (machine,
                                            date, parameters) as JSON
  report.py render RESULTS.jsonl [--out F.md] [--svg F.svg]
                                            write the report (default
                                            build/bench/benchmarks.md)
  report.py wanrtt --line F --ping F [--bulk F] --spec SPEC --path K [--skip S]
                                            add the RTT under load (ping beside
                                            the run) and a latency run's bulk to
                                            a --wan run's JSON line, in place
  report.py -h | --help                     this help

Rates are in binary units throughout (MiB/s = 2^20 bytes per second); figures
recorded in decimal MB/s by older versions of `ferry bench` (the UDP payload
rates) are converted on reading.

RESULTS holds one JSON object per line: {"meta": ...} first, {"peer": ...}
per target, then one `ferry bench --json` line per run with a "compare"
member added by compare.sh ({"round", "variant", "target", "cpu_source",
"error", and with --treemon "tree": process-tree CPU/memory watched from
outside over the whole run}), {"argon2": ...} lines from
bench/argon2time.py (auth group, one per round), with --wan a {"wan_path":
{"index", "spec"}} per path and a "wan" member in each run's line (the RTT
under load; bench/report_wan.py), and {"done": ...} last. For
each (variant, target, figure) the report takes the median over rounds.
Python standard library only; the chart needs gnuplot.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

import report_wan

# The chains of the hop group: in its section only, not in the summary.
HOP_TARGETS = ["ferry-ferry", "ferry-dante", "dante-dante"]
# The https group's TLS targets: in its section only, too.
HTTPS_TARGETS = ["ferry-tls-h1", "ferry-tls-h2", "stunnel", "squid-https", "nghttpx"]
# The tunnel group's encrypted tunnels: in its section only, too.
TUNNEL_TARGETS = ["ferry-tunnel", "ferry-tunnel-wss", "ssh-d", "ss-libev-aes", "ferry-tunnel-2c",
                  "ferry-tunnel-fo"]
# The edge group's edges (SNI / Minecraft host routing): in its section only.
EDGE_TARGETS = ["ferry-edge", "haproxy-edge", "nginx-edge"]
TARGETS = ["direct", "ferry", "dante", "microsocks", "ss-libev", "haproxy", "tinyproxy",
           "squid"] + HOP_TARGETS + HTTPS_TARGETS + TUNNEL_TARGETS + EDGE_TARGETS
LABELS = {
    "direct": "direct (no proxy)",
    "ferry": "ferry",
    "dante": "Dante",
    "microsocks": "microsocks",
    "ss-libev": "shadowsocks-libev",
    "haproxy": "HAProxy (TCP relay)",
    "tinyproxy": "tinyproxy",
    "squid": "Squid",
    "ferry-ferry": "ferry → ferry",
    "ferry-dante": "ferry → Dante",
    "dante-dante": "Dante → Dante",
    "ferry-tls-h1": "ferry tls:// h1",
    "ferry-tls-h2": "ferry tls:// h2",
    "stunnel": "stunnel4 → ferry",
    "squid-https": "Squid https_port",
    "nghttpx": "nghttpx -s (h2) → ferry",
    "ferry-tunnel": "ferry tunnel (h2)",
    "ferry-tunnel-wss": "ferry tunnel (wss)",
    "ferry-tunnel-2c": "ferry tunnel (h2), 2 connections",
    "ferry-tunnel-fo": "ferry tunnel (h2), --fast-open",
    "ssh-d": "OpenSSH ssh -D",
    "ss-libev-aes": "shadowsocks-libev (aes-256-gcm)",
    "ferry-edge": "ferry edge",
    "haproxy-edge": "HAProxy (req.ssl_sni, Lua)",
    "nginx-edge": "nginx (ssl_preread)",
}
PACKAGES = {
    "dante": "dante-server",
    "microsocks": "microsocks",
    "ss-libev": "shadowsocks-libev",
    "haproxy": "haproxy",
    "tinyproxy": "tinyproxy",
    "squid": "squid",
    "squid-https": "squid-openssl",
    "stunnel": "stunnel4",
    "nghttpx": "nghttp2-proxy",
    "ssh-d": "openssh-server",
    "ssh-client": "openssh-client",
    "gnuplot": "gnuplot-nox",
    "haproxy-edge": "haproxy",
    "nginx-edge": "libnginx-mod-stream",
}
SHORT = {
    "direct": "direct",
    "ferry": "ferry",
    "dante": "Dante",
    "microsocks": "microsocks",
    "ss-libev": "ss-libev",
    "haproxy": "HAProxy\\n(relay)",
    "tinyproxy": "tinyproxy",
    "squid": "Squid",
    "ferry-ferry": "ferry\\n→ ferry",
    "ferry-dante": "ferry\\n→ Dante",
    "dante-dante": "Dante\\n→ Dante",
    "ferry-tls-h1": "ferry\\nTLS h1",
    "ferry-tls-h2": "ferry\\nTLS h2",
    "stunnel": "stunnel4\\n→ ferry",
    "squid-https": "Squid\\nhttps",
    "nghttpx": "nghttpx\\n→ ferry",
    "ferry-tunnel": "ferry\\ntunnel h2",
    "ferry-tunnel-wss": "ferry\\ntunnel wss",
    "ferry-tunnel-2c": "ferry h2\\n2 conns",
    "ferry-tunnel-fo": "ferry h2\\nfast open",
    "ssh-d": "ssh -D",
    "ss-libev-aes": "ss-libev\\naes-gcm",
}
COLORS = {
    "direct": "#888888",
    "ferry": "#d9480f",
    "dante": "#1c7ed6",
    "microsocks": "#37b24d",
    "ss-libev": "#ae3ec9",
    "haproxy": "#f59f00",
    "tinyproxy": "#0ca678",
    "squid": "#5c7cfa",
    "ferry-ferry": "#f08c00",
    "ferry-dante": "#e8590c",
    "dante-dante": "#1864ab",
    "ferry-tls-h1": "#e03131",
    "ferry-tls-h2": "#c2255c",
    "stunnel": "#495057",
    "squid-https": "#4263eb",
    "nghttpx": "#2b8a3e",
    "ferry-tunnel": "#a61e4d",
    "ferry-tunnel-wss": "#c2255c",
    "ferry-tunnel-2c": "#e64980",
    "ferry-tunnel-fo": "#f783ac",
    "ssh-d": "#343a40",
    "ss-libev-aes": "#862e9c",
}

# Every variant compare.sh may run. kind decides the table and the figures;
# metric/unit is the headline; summary is the row title in the summary table
# (None: not in the summary); chart: a panel in the chart.
V = {
    "throughput-1": dict(kind="throughput", metric="total", unit="MiB/s", title="Throughput, 1 stream",
                         summary="throughput, 1 stream", chart=True),
    "throughput-8": dict(kind="throughput", metric="total", unit="MiB/s", title="Throughput, 8 streams",
                         summary="throughput, 8 streams", chart=True),
    "handshakes": dict(kind="handshakes", metric="setups", unit="setups/s",
                       title="Handshakes (connection setups)", summary="handshakes", chart=True),
    "requests": dict(kind="requests", metric="requests", unit="requests/s",
                     title="Small HTTP requests, one connection each", summary="HTTP requests", chart=True),
    "connections": dict(kind="connections", metric="setup_rate", unit="setups/s",
                        title="Many held connections", summary="held connections: setup rate", chart=True),
    "udp-1x1200": dict(kind="udp", metric="echoes", unit="echoes/s", title="1 client × 1200 B",
                       summary=None, chart=False),
    "udp-16x1200": dict(kind="udp", metric="echoes", unit="echoes/s", title="16 clients × 1200 B",
                        summary="UDP echoes, 16 clients × 1200 B", chart=True),
    "udp-1x8192": dict(kind="udp", metric="echoes", unit="echoes/s", title="1 client × 8192 B",
                       summary=None, chart=False),
    "udp-16x8192": dict(kind="udp", metric="echoes", unit="echoes/s", title="16 clients × 8192 B",
                        summary="UDP echoes, 16 clients × 8192 B", chart=False),
    "udp-blast": dict(kind="blast", metric="received", unit="pps",
                      title="Blast: 16 clients × 512 B, unpaced",
                      summary="UDP blast, 16 clients × 512 B: received",
                      chart=False),
    "udp-blast-nogro": dict(kind="blast", metric="received", unit="pps",
                            title="Blast, the echo reading datagram by datagram (`--no-echo-gro`)",
                            summary="UDP blast, echo without GRO: received",
                            chart=False),
    "udpt-16x1200": dict(kind="udp", metric="echoes", unit="echoes/s", title="16 clients × 1200 B",
                         summary=None, chart=False),
    "udpt-16x8192": dict(kind="udp", metric="echoes", unit="echoes/s", title="16 clients × 8192 B",
                         summary=None, chart=False),
    "udpt-blast": dict(kind="blast", metric="received", unit="pps",
                       title="Blast: 16 clients × 1200 B, unpaced", summary=None, chart=False),
    "auth-none": dict(kind="auth", metric="setups", unit="setups/s", title="no authentication",
                      summary=None, chart=False),
    "auth-plain": dict(kind="auth", metric="setups", unit="setups/s", title="plain user, cache on",
                       summary=None, chart=False),
    "auth-argon2": dict(kind="auth", metric="setups", unit="setups/s", title="Argon2id user, cache on",
                        summary="SOCKS5 auth, Argon2id, cache on", chart=False),
    "auth-argon2-nocache": dict(kind="auth", metric="setups", unit="setups/s",
                                title="Argon2id user, no cache (`--auth-cachettl 0`)",
                                summary="SOCKS5 auth, Argon2id, no cache", chart=False),
    "auth-plain-nocache": dict(kind="auth", metric="setups", unit="setups/s",
                               title="plain user, no cache (`--auth-cachettl 0`)", summary=None, chart=False),
    "http-requests-socks": dict(kind="requests", metric="requests", unit="requests/s",
                                title="SOCKS5", summary=None, chart=False),
    "http-requests-connect": dict(kind="requests", metric="requests", unit="requests/s",
                                  title="HTTP CONNECT", summary="HTTP proxy: requests via CONNECT",
                                  chart=True),
    "http-requests-absolute": dict(kind="requests", metric="requests", unit="requests/s",
                                   title="HTTP absolute-form GET",
                                   summary="HTTP proxy: absolute-form GET requests", chart=True),
    "http-handshakes-socks": dict(kind="handshakes", metric="setups", unit="setups/s", title="SOCKS5",
                                  summary=None, chart=False),
    "http-handshakes-connect": dict(kind="handshakes", metric="setups", unit="setups/s",
                                    title="HTTP CONNECT", summary="HTTP proxy: CONNECT handshakes",
                                    chart=True),
    "hop-throughput-8": dict(kind="throughput", metric="total", unit="MiB/s",
                             title="throughput, 8 streams", summary=None, chart=False),
    "hop-handshakes": dict(kind="handshakes", metric="setups", unit="setups/s",
                           title="handshakes", summary=None, chart=False),
    "https-throughput-1": dict(kind="throughput", metric="total", unit="MiB/s",
                               title="Throughput, 1 stream", summary=None, chart=False),
    "https-throughput-8": dict(kind="throughput", metric="total", unit="MiB/s",
                               title="Throughput, 8 streams", summary=None, chart=False),
    "https-requests": dict(kind="requests", metric="requests", unit="requests/s",
                           title="Small requests, CONNECT per request", summary=None, chart=False),
    "edge-tls": dict(kind="edge", metric="connections", unit="conn/s",
                     title="517-byte ClientHello", summary=None, chart=False),
    "edge-mc": dict(kind="edge", metric="connections", unit="conn/s",
                    title="Minecraft handshake + Login Start", summary=None, chart=False),
    "edge-pq-segments": dict(kind="edge", metric="connections", unit="conn/s",
                             title="1812-byte ClientHello, 2 segments", summary=None, chart=False),
    "edge-pq-records": dict(kind="edge", metric="connections", unit="conn/s",
                            title="1812-byte ClientHello, 2 TLS records", summary=None, chart=False),
    "edge-hold": dict(kind="edge-hold", metric="held_mem_per_10k", unit="MiB per 10,000",
                      title="Held idle connections (after a 517-byte ClientHello)", summary=None, chart=False),
    "stall-7": dict(kind="throughput", metric="total", unit="MiB/s",
                    title="7 streams", summary=None, chart=False),
    "stall-7-1": dict(kind="throughput", metric="total", unit="MiB/s",
                      title="7 streams + 1 stalled", summary=None, chart=False),
    "tunnel-throughput-1": dict(kind="throughput", metric="total", unit="MiB/s",
                                title="Throughput, 1 stream", summary=None, chart=False),
    "tunnel-throughput-8": dict(kind="throughput", metric="total", unit="MiB/s",
                                title="Throughput, 8 streams", summary=None, chart=False),
    "tunnel-handshakes": dict(kind="handshakes", metric="setups", unit="setups/s",
                              title="Handshakes (session setups)", summary=None, chart=False),
    "tunnel-requests": dict(kind="requests", metric="requests", unit="requests/s",
                            title="1,000 requests, then 8 × 1 MiB (runnel's mode_perf)",
                            summary=None, chart=False),
}
SOCKS_TCP_VARIANTS = ["throughput-1", "throughput-8", "handshakes", "requests", "connections"]
UDP_VARIANTS = ["udp-1x1200", "udp-16x1200", "udp-1x8192", "udp-16x8192", "udp-blast", "udp-blast-nogro"]
# UDP through the tunnel (issue 18): its rows, their names there, and the
# issue's targets (>= this share of direct's echoes/s at 16 x 1200 B with no
# loss; ahead of ss-libev on every row; no allocation per datagram, i.e.
# fewer than UDPT_ALLOC_ZERO: housekeeping, not a per-datagram cost).
UDPT_VARIANTS = ["udpt-16x1200", "udpt-16x8192", "udpt-blast"]
ROWS_UDPT = ["direct", "ferry", "ferry-tunnel", "ferry-tunnel-wss", "ss-libev"]
UDPT_LABELS = {"ferry": "ferry, direct UDP relay", "ferry-tunnel": "ferry tunnel (h2)",
               "ferry-tunnel-wss": "ferry tunnel (wss)",
               "ss-libev": "shadowsocks-libev (chacha20-ietf-poly1305)"}
UDPT_DIRECT_SHARE = 0.5
UDPT_ALLOC_ZERO = 0.001
AUTH_VARIANTS = ["auth-none", "auth-plain", "auth-argon2", "auth-argon2-nocache", "auth-plain-nocache"]
HTTP_REQ_VARIANTS = ["http-requests-socks", "http-requests-connect", "http-requests-absolute"]
HTTP_HS_VARIANTS = ["http-handshakes-socks", "http-handshakes-connect"]
HOP_VARIANTS = ["hop-throughput-8", "hop-handshakes"]
HTTPS_VARIANTS = ["https-throughput-1", "https-throughput-8", "https-requests"]
ROWS_HTTPS = ["ferry"] + HTTPS_TARGETS
STALL_VARIANTS = ["stall-7", "stall-7-1"]
EDGE_VARIANTS = ["edge-tls", "edge-mc", "edge-pq-segments", "edge-pq-records", "edge-hold"]
TUNNEL_VARIANTS = ["tunnel-throughput-1", "tunnel-throughput-8", "tunnel-handshakes", "tunnel-requests"]
# The tunnel section's rows: plain ferry (SOCKS5, no tunnel) as the reference.
ROWS_TUNNEL = ["ferry", "ferry-tunnel", "ferry-tunnel-wss", "ssh-d", "ss-libev-aes"]
# Issue 17's targets for the ferry tunnel: (variant, peer, at least this × the peer).
TUNNEL_GOALS = [("tunnel-throughput-1", "ss-libev-aes", 2.0), ("tunnel-throughput-1", "ssh-d", 2.0),
                ("tunnel-throughput-8", "ss-libev-aes", 1.5), ("tunnel-handshakes", "ss-libev-aes", 1.5)]
STALL_TARGET = 0.9  # issue 16: each stream keeps >= 90 % of its rate beside a stalled one
# The hop section's rows: (target, hops, the one-hop row it is compared with).
HOP_ROWS = [("direct", 0, None), ("ferry", 1, "ferry"), ("ferry-ferry", 2, "ferry"),
            ("dante", 1, "dante"), ("ferry-dante", 2, "dante"), ("dante-dante", 2, "dante")]
HOP_TARGET_THROUGHPUT = 0.8  # issue 15: one more ferry hop keeps >= 0.8x of one ferry's MiB/s
HOP_TARGET_SETUPS = 0.6  # and >= 0.6x of its setups/s (a hop adds a connect round trip)
# Rows a table of each kind lists (when the target took part in the run).
ROWS_SOCKS_TCP = ["direct", "ferry", "dante", "microsocks", "ss-libev", "haproxy"]
ROWS_UDP = ["direct", "ferry", "dante", "microsocks", "ss-libev", "haproxy"]
OTHER_NOTE_CORES = 0.25  # other work during a run worth a note in its row
SS_UDP_MAX = 2739
# The method of the --wan runs (also in docs/benchmarks.md's Method).
WAN_METHOD = (
    '- **Wide-area paths (`--wan SPEC`, one path per `--wan`).** The tunnel group then runs acr'
    'oss an emulated path instead of loopback (`bench/compare_wan.sh`): per round and per path,'
    ' `ferry bench wan --path SPEC` holds two network namespaces, A and B, with the user-space '
    "forwarder between them; `ferry bench sink` (the origins) and each tunnel's server half (`f"
    "erry serve` with a `tls://` listener, `sshd`, `ss-server`) run in B, each tunnel's client "
    'half (`ferry client -w 1`: one worker, one tunnel connection; `ssh -D`; `ss-local`) and th'
    'e bench (`--proxy 127.0.0.1:PORT --target 10.77.0.2:9000`) in A; `--direct` across the sam'
    'e path (plain TCP) is the reference. Throughput is one way (`--direction down`: the source'
    ' in B writes as long as its socket takes it, the client in A reads and checks), so nothing'
    " but TCP's windows (buffer maxima 64 MiB in both namespaces) and the tunnel's own flow con"
    "trol limits what is in flight: the echo's 256 KiB would cap a stream near 5 MiB/s at 50 ms"
    ', a 50 ms × 1 Gbit/s path holds 6.25 MB. The latency row runs 7 one-way bulk streams (a se'
    'cond `ferry bench throughput`) through the same client port while small requests go on a f'
    "ixed timetable (`requests --rate`), latency from each one's scheduled time. The **RTT unde"
    'r load** beside each figure is the median of `ping -D` from A to B every 0.1 s during that'
    ' run, after its warm-up: above the configured RTT when the queue before the emulated link '
    'fills, or when the forwarder (which shares the 2 cores) falls behind.'
    ' When the forwarder falls behind, the sending TUN device\'s queue (500 packets) fills and the kernel drops what does not fit: compare.sh counts those drops per run (`tx_dropped` of both devices) and the report says which runs lost 0.5 % or more there, since their path was lossier than configured.'
)  # largest payload ss-libev relays (see explain_udp)


# ---- meta ------------------------------------------------------------------


def _read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def _pkg_version(pkg):
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}\t${Version}", pkg],
            capture_output=True, text=True, timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    status, _, version = out.partition("\t")
    return version if "ok installed" in status else None


def cpu_busy(seconds=1.0):
    """Share of all CPUs busy over a short sample (from /proc/stat), in %:
    what else runs on this machine when a run starts."""
    import time

    def snap():
        f = _read("/proc/stat").splitlines()[0].split()[1:]
        v = [int(x) for x in f]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v[:8]), idle

    try:
        t0, i0 = snap()
        time.sleep(seconds)
        t1, i1 = snap()
        return round(100.0 * (1 - (i1 - i0) / max(1, t1 - t0)), 1)
    except (IndexError, ValueError):
        return None


def cmd_meta(argv):
    ap = argparse.ArgumentParser(prog="report.py meta")
    ap.add_argument("--cmdline", default="")
    for name in ("rounds", "connections", "connections-wanted", "nofile", "quick", "echo-port", "treemon",
                 "settle", "edge-cpu"):
        ap.add_argument("--" + name, default="")
    ap.add_argument("--duration", default="")
    ap.add_argument("--warmup", default="")
    ap.add_argument("--ferry-version", default="")
    ap.add_argument("--ferry-commit", default="")
    ap.add_argument("--groups", default="")
    ap.add_argument("--variants", default="")
    a = ap.parse_args(argv)
    model = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    os_name = ""
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            os_name = line.split("=", 1)[1].strip('"')
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cmdline": a.cmdline,
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "mem_gib": round(mem_kib / 1048576, 1),
        "kernel": platform.release(),
        "os": os_name,
        "debian_version": _read("/etc/debian_version"),
        "loadavg_start": _read("/proc/loadavg").split()[:3],
        "cpu_busy_start_pct": cpu_busy(),
        "versions": {k: _pkg_version(p) for k, p in PACKAGES.items()},
        "ferry_version": a.ferry_version,
        "ferry_commit": a.ferry_commit,
        "params": {
            "rounds": int(a.rounds or 0),
            "duration_s": float(a.duration or 0),
            "warmup_s": float(a.warmup or 0),
            "connections": int(a.connections or 0),
            "connections_wanted": int(a.connections_wanted or 0),
            "nofile": a.nofile,
            "quick": a.quick == "1",
            "treemon": a.treemon == "1",
            "settle_s": float(a.settle or 0),
            "echo_port": a.echo_port,
            # --edge-cpu: every edge's CPU quota in cores (0: none)
            "edge_cpu": float(a.edge_cpu or 0),
            "groups": a.groups.split(),
            # name, scenario, options, targets (comma separated), how (proxy/self)
            "variants": [v.split("|") for v in a.variants.splitlines() if v],
        },
    }
    print(json.dumps({"meta": meta}))


# ---- numbers ---------------------------------------------------------------


def fmt(v, unit=""):
    """A figure with sensible precision."""
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        s = f"{v:,.0f}"
    elif a >= 100:
        s = f"{v:.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    elif a == 0:
        s = "0"
    elif a >= 0.01:
        s = f"{v:.3f}"
    else:
        s = f"{v:.2g}"
    return s + (f" {unit}" if unit else "")


def fbytes(v):
    if v is None:
        return "–"
    if abs(v) >= 10 * 1024 * 1024:
        return fmt(v / 1048576, "MiB")
    if abs(v) >= 10 * 1024:
        return fmt(v / 1024, "KiB")
    return fmt(v, "B")


def fint(v):
    return "–" if v is None else f"{v:,.0f}"


def stalled(c):
    """Streams were open but one direction moved nothing in the window (a
    one-way run, --direction up|down: the one it measures)."""
    if (c.m("streams") or 0) <= 0:
        return False
    way = c.param("direction", "both")
    if way in ("up", "down"):
        return (c.m(way) or 0) == 0
    return (c.m("up") or 0) == 0 or (c.m("down") or 0) == 0


def udp_all_lost(rec):
    """A bench record (not a Cell) of a UDP run in which every echo was lost."""
    m = rec.get("metrics") or {}

    def med_of(k):
        return (m.get(k) or {}).get("median") or 0

    return rec.get("scenario") == "udp" and med_of("clients") > 0 and med_of("loss") >= 99.5


def all_lost(c):
    """UDP: associations were open but no echo came back."""
    return (c.m("clients") or 0) > 0 and (c.m("loss") or 0) >= 99.5


def ratio(v, ref):
    if v is None or not ref:
        return "–"
    return f"{v / ref:.2f}×"


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


class Cell:
    """All runs of one (variant, target)."""

    def __init__(self):
        self.runs = []  # records without error
        self.errors = []  # (round, error text)

    def metric(self, name):
        return [r["metrics"][name]["median"] for r in self.runs if name in r["metrics"]]

    def m(self, name):
        return med(self.metric(name))

    def span(self, name):
        vals = self.metric(name)
        return (min(vals), max(vals)) if len(vals) > 1 else None

    def notes(self):
        seen = []
        for r in self.runs:
            for n in r.get("notes", []):
                if n not in seen:
                    seen.append(n)
        return seen

    def param(self, name, default=None):
        for r in self.runs:
            if name in r.get("params", {}):
                return r["params"][name]
        return default

    def disturbed(self, threshold):
        """[(round, cores, top name)] of runs during which other work on the
        machine took at least `threshold` cores (compare.sh: treemon.py run)."""
        out = []
        for r in self.runs:
            o = r.get("compare", {}).get("other") or {}
            if (o.get("other_cores") or 0) >= threshold:
                top = (o.get("top") or [[None, 0]])[0][0]
                out.append((r["compare"].get("round"), o["other_cores"], top))
        return out

    # Process-tree figures watched from outside over the whole run
    # (compare.sh --treemon, bench/treemon.py): a cross-check only.
    def tree_cpu_per(self, work_fn):
        vals = []
        for r in self.runs:
            t = r.get("compare", {}).get("tree")
            if not t or "cpu_s" not in t:
                continue
            w = work_fn(r)
            if w:
                vals.append(t["cpu_s"] / w)
        return med(vals)

    def tree_mem_per_conn(self):
        vals = []
        for r in self.runs:
            t = r.get("compare", {}).get("tree") or {}
            n = r["metrics"].get("connections", {}).get("median")
            if "pss_max_kib" in t and n:
                vals.append((t["pss_max_kib"] - t["pss_base_kib"]) * 1024.0 / n)
        return med(vals)

    def tree_procs(self):
        return max(
            [(r.get("compare", {}).get("tree") or {}).get("procs_max", 0) for r in self.runs] or [0]
        )


def window_s(r):
    p = r.get("params", {})
    return p.get("duration_s", 0) + p.get("warmup_s", 0)


def work_gib(r):  # throughput: bytes moved over warm-up + window, estimated
    return r["metrics"]["total"]["median"] * window_s(r) / 1024.0


def work_ksetups(r):
    return r["metrics"]["setups"]["median"] * window_s(r) / 1000.0


# ---- render ----------------------------------------------------------------


MB_TO_MIB = 1e6 / 1048576


def to_binary_units(rec):
    """Older `ferry bench` lines gave UDP payload rates in MB/s (10^6 bytes):
    the report speaks MiB/s only, so convert them, figures and unit."""
    for m in (rec.get("metrics") or {}).values():
        if isinstance(m, dict) and m.get("unit") == "MB/s":
            for k in ("median", "min", "max"):
                if isinstance(m.get(k), (int, float)):
                    m[k] = m[k] * MB_TO_MIB
            if isinstance(m.get("runs"), list):
                m["runs"] = [v * MB_TO_MIB if isinstance(v, (int, float)) else v for v in m["runs"]]
            m["unit"] = "MiB/s"
    return rec


def load(path):
    meta, peers, done, cells, argon2 = {}, {}, {}, {}, []
    wan_paths = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "meta" in rec:
                meta = rec["meta"]
            elif "peer" in rec:
                peers[rec["peer"]["target"]] = rec["peer"]
            elif "peer_update" in rec:
                u = rec["peer_update"]
                pe = peers.setdefault(u["target"], {})
                pe.setdefault("events", []).append(u.get("event") or u.get("status", ""))
                pe["final"] = u.get("status", "")
            elif "argon2" in rec:
                argon2.append(rec["argon2"])
            elif "wan_path" in rec:
                wan_paths.append(rec["wan_path"])
            elif "done" in rec:
                done = rec["done"]
            elif "compare" in rec:
                to_binary_units(rec)
                c = rec["compare"]
                cell = cells.setdefault((c["variant"], c["target"]), Cell())
                if c.get("error") and not c.get("note") and udp_all_lost(rec):
                    # ferry bench fails a UDP run where no echo came back
                    # (exit 1), but prints the figures: 100 % lost is what
                    # this proxy does, and the report says why.
                    cell.runs.append(rec)
                elif c.get("error"):
                    err = c["error"]
                    if c.get("stderr"):
                        err += ": " + c["stderr"][-1]
                    cell.errors.append((c.get("round"), err))
                else:
                    cell.runs.append(rec)
    if wan_paths:
        meta["wan_paths"] = wan_paths
    return meta, peers, done, cells, argon2


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |")
    return "\n".join(out)


class Report:
    def __init__(self, meta, peers, done, cells, argon2):
        self.meta, self.peers, self.done, self.cells = meta, peers, done, cells
        self.argon2 = argon2
        self.params = meta.get("params", {})
        self.vspec = {}  # variant -> (scenario, options, [targets], how)
        for vv in self.params.get("variants", []):
            vv = list(vv) + [""] * (5 - len(vv))
            tl = [t for t in vv[3].split(",") if t] or list(TARGETS)
            self.vspec[vv[0]] = (vv[1], vv[2], tl, vv[4] or "proxy")
        self.variants = [v for v in self.vspec if v in V] or sorted(
            {v for v, _ in cells if v in V}, key=lambda v: list(V).index(v))
        self.targets = [t for t in TARGETS if t in peers] or TARGETS

    # -- cells ---------------------------------------------------------------

    def has(self, v):
        return v in self.variants

    def cell(self, v, t):
        return self.cells.get((v, t))

    def ok(self, v, t):
        c = self.cell(v, t)
        return c is not None and bool(c.runs)

    def headline(self, v, t):
        c = self.cell(v, t)
        return c.m(V[v]["metric"]) if c and c.runs else None

    def applies(self, v, t):
        spec = self.vspec.get(v)
        return spec is None or t in spec[2]

    def na_reason(self, v, t):
        kind = V[v]["kind"]
        mode = self.peers.get(t, {}).get("mode")
        if mode == "relay" or t == "haproxy":
            if kind in ("udp", "blast"):
                return "n/a: a TCP relay, no UDP"
            return "n/a: a plain TCP relay takes part in throughput and handshakes only"
        if t == "microsocks" and kind in ("udp", "blast"):
            return "n/a: microsocks implements CONNECT only, no UDP ASSOCIATE"
        if t in ("tinyproxy", "squid"):
            return "n/a: an HTTP proxy, no SOCKS5"
        return "n/a"

    def status(self, v, t):
        """None if there are figures; else why there are none."""
        if not self.applies(v, t):
            return self.na_reason(v, t)
        p = self.peers.get(t, {})
        st = p.get("status", "not run")
        if st != "ok":
            return st
        c = self.cell(v, t)
        if not c or (not c.runs and not c.errors):
            return "not run" + (" (the proxy died earlier)" if p.get("events") else "")
        if not c.runs:
            return "failed: " + c.errors[0][1]
        return None

    def headline_cell(self, v, t):
        c = self.cell(v, t)
        name = V[v]["metric"]
        s = fmt(c.m(name))
        sp = c.span(name)
        if sp:
            s += f" ({fmt(sp[0])}–{fmt(sp[1])})"
        if V[v]["kind"] == "udp" and all_lost(c):
            s += " **all lost**"
        return s

    def cpu(self, v, t):
        """The proxy's CPU per unit of work, from the bench (whole process tree,
        measurement window only)."""
        c = self.cell(v, t)
        src = self.peers.get(t, {}).get("cpu_source", "none")
        if src == "none" or not c or not c.runs:
            return "–"
        kind = V[v]["kind"]
        if kind == "throughput" and stalled(c):
            return "– (stalled)"
        if kind in ("udp", "blast") and not (c.m("echoes") or c.m("received")):
            return "– (nothing relayed)"
        name = {
            "throughput": "proxy_cpu_per_gib",
            "handshakes": "proxy_cpu_per_1k",
            "auth": "proxy_cpu_per_1k",
            "requests": "proxy_cpu_per_1k_requests",
            "udp": "proxy_cpu_per_echo",
            "blast": "proxy_cpu_per_datagram",
        }.get(kind)
        val = c.m(name) if name else None
        if val is None:
            return "–"
        if kind == "auth":
            return fmt(val)  # s per 1000 setups = ms per setup
        return fmt(val)

    def blast_cpu(self, v, t):
        """The bench's figure (CPU over offered + received datagrams) and, from
        it, the CPU per echo that came back: x × (offered + received) / received,
        per run, median."""
        first = self.cpu(v, t)
        c = self.cell(v, t)
        if first.startswith("–") or not c:
            return first
        per = []
        for r in c.runs:
            mm = r["metrics"]
            x = mm.get("proxy_cpu_per_datagram", {}).get("median")
            o = mm.get("offered", {}).get("median")
            rc = mm.get("received", {}).get("median")
            if x is not None and o and rc:
                per.append(x * (o + rc) / rc)
        return f"{first} / {fmt(med(per))}" if per else first

    def mem(self, t):
        c = self.cell("connections", t)
        if not c or not c.runs:
            return "–"
        return fbytes(c.m("proxy_mem_per_conn") or c.m("proxy_rss_per_conn"))

    def issues(self, v, t):
        c = self.cell(v, t)
        kind = V[v]["kind"]
        out = []
        if kind == "throughput":
            if stalled(c):
                n = c.m("streams")
                out.append(f"**stalled**: {fint(n)} stream{'s' if n != 1 else ''} open, "
                           f"{'no byte' if not c.m('total') else 'nothing echoed back'} in the window")
            bad = c.m("corrupt_streams") or c.m("corrupt_chunks")
            if bad:
                out.append(f"**{fint(bad)} corrupt streams**")
            if c.m("broken_streams"):
                out.append(f"{fint(c.m('broken_streams'))} streams broke")
        elif kind in ("handshakes", "auth"):
            fs, fk = c.m("failed_socket") or 0, c.m("failed_socks") or 0
            if fs or fk:
                http = "--http-proxy" in self.vspec.get(v, ("", ""))[1]
                out.append(f"failed: {fint(fs)} socket, {fint(fk)} {'HTTP (non-200 reply)' if http else 'SOCKS'}")
        elif kind == "requests":
            if c.m("failed_requests") or c.m("failed_downloads"):
                out.append(f"**failed: {fint(c.m('failed_requests'))} requests, "
                           f"{fint(c.m('failed_downloads'))} downloads**")
            if c.m("corrupt_bodies"):
                out.append(f"**{fint(c.m('corrupt_bodies'))} corrupt bodies**")
        elif kind == "connections":
            if c.m("failed_setups"):
                out.append(f"{fint(c.m('failed_setups'))} setups failed")
            held, ok = c.m("connections"), c.m("healthy")
            if held is not None and ok is not None and ok < held:
                out.append(f"{fint(held - ok)} held connections did not echo at the end")
        elif kind in ("udp", "blast"):
            want = c.param("connections")
            got = c.m("clients")
            if want and got is not None and got < want:
                out.append(f"{fint(want - got)} of {fint(want)} clients could not open an association")
            if kind == "udp":
                if all_lost(c):
                    out.append("**every datagram lost**")
                elif c.m("loss"):
                    out.append(f"loss {fmt(c.m('loss'))} %")
                if c.m("late"):
                    out.append(f"{fint(c.m('late'))} late echoes")
            elif (c.m("offered") or 0) > 0 and not c.m("received"):
                out.append("**nothing came back**")
            if c.m("corrupt"):
                out.append(f"**{fint(c.m('corrupt'))} datagrams came back wrong**")
        busy = c.disturbed(OTHER_NOTE_CORES)
        if busy:
            out.append("other work on the machine: " + ", ".join(
                f"{fmt(cores)} cores in round {rnd} "
                + (f"(mostly `{top}`)" if top else "(short-lived processes)") for rnd, cores, top in busy))
        died = [r["compare"].get("round") for r in c.runs if r["compare"].get("note")]
        if died:
            out.append(f"**the proxy died during the run** (round {', '.join(str(d) for d in died)})")
        if c.errors:
            out.append(f"{len(c.errors)} of {len(c.errors) + len(c.runs)} runs failed ({c.errors[0][1]})")
        return "; ".join(out) or "ok"

    # -- tables --------------------------------------------------------------

    def rows_for(self, v, candidates):
        """The targets a table of variant v lists: those that took part in the
        run and either apply or are worth an n/a line."""
        out = []
        for t in candidates:
            if t not in self.targets:
                continue
            if self.applies(v, t) or self.peers.get(t, {}).get("mode") in ("proxy", "relay"):
                out.append(t)
        return out

    def table(self, v, candidates):
        kind = V[v]["kind"]
        unit = V[v]["unit"]
        d, f = self.headline(v, "direct"), self.headline(v, "ferry")
        rows = []
        if kind == "throughput":
            header = ["target", f"total {unit}", "up / down", "× direct", "× ferry",
                      "proxy CPU s/GiB", "integrity and failures"]
        elif kind == "handshakes":
            header = ["target", unit, "latency p50 / p95 / p99 ms", "× direct", "× ferry",
                      "proxy CPU s per 1000", "failures"]
        elif kind == "requests":
            header = ["target", unit, "latency mean / p50 / p95 ms", "download MiB/s",
                      "× direct", "× ferry", "proxy CPU s per 1000", "failures"]
        elif kind == "connections":
            header = ["target", f"setup rate {unit}", "held / healthy", "× direct", "× ferry",
                      "proxy memory per connection", "failures"]
        elif kind == "udp":
            header = ["target", unit, "payload MiB/s", "RTT p50 / p95 ms", "loss %", "× direct", "× ferry",
                      "proxy CPU µs per echo", "integrity and failures"]
        else:  # blast
            header = ["target", "offered pps", "received pps", "delivered %", "received MiB/s",
                      "× direct", "× ferry", "proxy CPU µs per datagram / per echo delivered",
                      "integrity and failures"]
        for t in self.rows_for(v, candidates):
            label = LABELS[t]
            why = self.status(v, t)
            if why:
                rows.append([label, why] + [""] * (len(header) - 2))
                continue
            c = self.cell(v, t)
            h = self.headline(v, t)
            hc = self.headline_cell(v, t)
            rd = ratio(h, d) if t != "direct" else "1.00×"
            rf = ratio(h, f) if t != "ferry" else "1.00×"
            if kind == "throughput":
                rows.append([label, hc, f"{fmt(c.m('up'))} / {fmt(c.m('down'))}", rd, rf,
                             self.cpu(v, t), self.issues(v, t)])
            elif kind == "handshakes":
                rows.append([label, hc,
                             f"{fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))} / {fmt(c.m('latency_p99'))}",
                             rd, rf, self.cpu(v, t), self.issues(v, t)])
            elif kind == "requests":
                rows.append([label, hc,
                             f"{fmt(c.m('latency_mean'))} / {fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))}",
                             fmt(c.m("download")), rd, rf, self.cpu(v, t), self.issues(v, t)])
            elif kind == "connections":
                rows.append([label, hc, f"{fint(c.m('connections'))} / {fint(c.m('healthy'))}", rd, rf,
                             self.mem(t), self.issues(v, t)])
            elif kind == "udp":
                lost = all_lost(c)
                rtt = "–" if lost else f"{fmt(c.m('rtt_p50'))} / {fmt(c.m('rtt_p95'))}"
                rows.append([label, hc, fmt(c.m("payload")), rtt, fmt(c.m("loss")), rd, rf,
                             self.cpu(v, t), self.issues(v, t)])
            else:
                rows.append([label, fmt(c.m("offered")), hc, fmt(c.m("delivered")),
                             fmt(c.m("received_payload")), rd, rf, self.blast_cpu(v, t), self.issues(v, t)])
        return md_table(header, rows)

    def cmd(self, v):
        p = self.params
        scen, opts = (self.vspec.get(v) or (v, ""))[:2]
        return (f"`ferry bench {scen} --runs 1 --duration {p.get('duration_s', 0):g} "
                f"--warmup {p.get('warmup_s', 0):g}{' ' + opts if opts else ''}`")

    def bparams(self, v):
        for t in self.targets:
            c = self.cell(v, t)
            if c and c.runs:
                return c.runs[0].get("params", {})
        return {}

    def params_line(self, v):
        p = self.params
        bp = self.bparams(v)
        extra = {
            "throughput-1": "one stream pumps 64 KiB chunks to the echo target and reads them back; every byte is checked. Headline: up + down.",
            "throughput-8": "eight streams as above.",
            "handshakes": f"{bp.get('concurrency', 32)} setups in flight, each: TCP connect, SOCKS5 greeting and CONNECT (strictly one after the other, as real clients do), one byte echoed, abortive close. Latency runs from connect() to the echoed byte.",
            "requests": f"{bp.get('requests', 1000)} small HTTP requests (after {bp.get('warm_requests', 100)} warm-up ones), each on a new proxied connection, {bp.get('concurrency', 8)} in flight; then {bp.get('downloads', 8)} concurrent downloads of {bp.get('download_size', 1048576) // 1048576} MiB.",
            "https-throughput-1": "one stream (h2: one CONNECT stream on one TLS connection) pumps 64 KiB chunks to the echo target and reads them back; every byte is checked; the TLS rows add `--https-proxy h1|h2 --proxy-pin PIN`.",
            "https-throughput-8": "eight streams: h1, eight TLS connections; h2, eight streams on one TLS connection.",
            "tunnel-throughput-1": "one stream pumps 64 KiB chunks to the echo target through the tunnel and reads them back; every byte is checked; the ferry tunnel row adds `--tunnel h2`, the others `--proxy ADDR --proxy-pid PID,PID` (both ends).",
            "tunnel-throughput-8": "eight streams as above (the ferry tunnel: eight CONNECT streams on the client's h2 connections, one per client worker; ssh -D: eight channels of one SSH connection; ss-libev: eight TCP connections).",
            "tunnel-handshakes": f"{bp.get('concurrency', 32)} setups in flight, each: TCP connect to the tunnel's SOCKS5 port, SOCKS5 greeting and CONNECT, one byte echoed through the tunnel, abortive close (the ferry tunnel: a new CONNECT stream on a warm connection per setup; ssh -D: a new channel; ss-libev: a new TCP connection to ss-server and a new cipher salt).",
            "tunnel-requests": f"runnel's mode_perf: {bp.get('requests', 1000)} small HTTP requests (after {bp.get('warm_requests', 100)} warm-up ones), each on a new SOCKS5 connection through the tunnel, {bp.get('concurrency', 8)} in flight; then {bp.get('downloads', 8)} concurrent downloads of {bp.get('download_size', 1048576) // 1048576} MiB.",
            "stall-7": "seven streams on one TLS connection (h2), 64 KiB chunks echoed and checked; the row adds `--https-proxy h2 --proxy-pin PIN --proxy ADDR --proxy-pid PID`.",
            "stall-7-1": "the same seven beside an eighth CONNECT stream on the same connection that sends a burst (up to 64 MiB, until ferry's windows and buffers for it are full) and never reads: its echo piles up unread in the bench, which returns no credit for it.",
            "https-requests": f"{bp.get('requests', 1000)} small HTTP requests (after {bp.get('warm_requests', 100)} warm-up ones), {bp.get('concurrency', 8)} in flight, each through a new tunnel: h1, a new TLS connection and CONNECT; h2, a new CONNECT stream on the warm connection (one per phase); then {bp.get('downloads', 8)} concurrent downloads of {bp.get('download_size', 1048576) // 1048576} MiB.",
            "connections": f"open {bp.get('connections', p.get('connections', '?'))} connections ({bp.get('concurrency', 256)} setups in flight), hold them {bp.get('duration_s', p.get('duration_s', 0)):g} s, then check each still echoes. Memory is the growth of the proxy's memory (Pss of its whole process tree) over the hold, per held connection.",
        }.get(v, "")
        return f"{self.cmd(v)}: {extra}" if extra else self.cmd(v)

    # -- summary and chart ---------------------------------------------------

    def summary_rows(self):
        """(title, {target: text}, {target: value for the chart})"""
        out = []
        for v in self.variants:
            spec = V[v]
            if not spec["summary"]:
                continue
            kind = spec["kind"]
            cells, vals = {}, {}
            if kind == "auth":
                base = self.headline("auth-none", "ferry")
                for t in self.targets:
                    if t != "ferry":
                        cells[t] = "n/a"
                        continue
                    why = self.status(v, t)
                    if why:
                        cells[t] = "—"
                        continue
                    h = self.headline(v, t)
                    s = fmt(h)
                    if base:
                        s += f" ({h / base:.2g}× no auth)" if h / base < 0.1 else f" ({h / base:.2f}× no auth)"
                    if v == "auth-argon2-nocache":
                        ceil = self.argon2_ceiling()
                        if ceil:
                            s += f"; ceiling {fmt(ceil[0])}"
                    cells[t] = s
                out.append((f"{spec['summary']} ({spec['unit']})", cells, vals))
                continue
            ref_v = v
            f = self.headline(v, "ferry")
            for t in self.targets:
                vv = v
                if t == "direct" and v.startswith("http-"):
                    vv = "http-requests-socks" if v.startswith("http-requests") else self.hs_socks_variant()
                why = self.status(vv, t) if vv else "n/a"
                if why:
                    cells[t] = "n/a" if why.startswith("n/a") else "—"
                    continue
                h = self.headline(vv, t)
                s = fmt(h)
                if kind == "udp" and all_lost(self.cell(vv, t)):
                    s += " all lost"
                if t != "ferry" and f:
                    s += f" ({h / f:.2f}×)"
                if t == "ferry" and v.startswith("http-"):
                    sv = "http-requests-socks" if v.startswith("http-requests") else self.hs_socks_variant()
                    sref = self.headline(sv, "ferry") if sv else None
                    if sref:
                        s += f" ({h / sref:.2f}× its SOCKS5)"
                if kind == "throughput" and stalled(self.cell(vv, t)):
                    s += " stalled"
                cells[t] = s
                vals[t] = h
            out.append((f"{spec['summary']} ({spec['unit']})", cells, vals, ref_v))
        return out

    def summary(self):
        cols = [t for t in self.targets
                if t not in HOP_TARGETS and t not in HTTPS_TARGETS and t not in TUNNEL_TARGETS
                and t not in EDGE_TARGETS]
        header = ["scenario"] + [LABELS[t] for t in cols]
        rows = []
        for row in self.summary_rows():
            title, cells = row[0], row[1]
            rows.append([title] + [cells.get(t, "n/a") for t in cols])
        if not rows:
            return "_No summary figures: the groups of this run have their own sections below._"
        return md_table(header, rows)

    def chart_panels(self):
        panels = []
        for row in self.summary_rows():
            if len(row) < 4:
                continue
            title, cells, vals, v = row
            if not V[v]["chart"]:
                continue
            pts = []
            for t in self.targets:
                if t in vals and vals[t] is not None:
                    vv = v
                    lab = fmt(vals[t])
                    if V[v]["kind"] == "throughput" and stalled(self.cell(vv, t)):
                        lab += " stalled"
                    name = "ferry\\nHTTP" if t == "ferry" and v.startswith("http-") else SHORT[t]
                    pts.append((name, vals[t], COLORS[t], lab))
                    if t == "direct" and v.startswith("http-"):  # ferry's SOCKS5 path beside its HTTP one
                        sv = "http-requests-socks" if v.startswith("http-requests") else self.hs_socks_variant()
                        h = self.headline(sv, "ferry") if sv else None
                        if h:
                            pts.append(("ferry\\nSOCKS5", h, "#f0a37f", fmt(h)))
            if pts:
                panels.append((title[0].upper() + title[1:], pts))
        # Authentication: one panel, ferry's rate per mode.
        pts = []
        short = {"auth-none": "none", "auth-plain": "plain\\ncached", "auth-argon2": "Argon2id\\ncached",
                 "auth-argon2-nocache": "Argon2id\\nno cache", "auth-plain-nocache": "plain\\nno cache"}
        for v in AUTH_VARIANTS:
            if self.has(v) and self.ok(v, "ferry"):
                h = self.headline(v, "ferry")
                pts.append((short[v], h, COLORS["ferry"], fmt(h)))
        if pts:
            panels.append(("ferry SOCKS5 handshakes by authentication (setups/s)", pts))
        return panels

    def chart(self, svg_path):
        gp = shutil.which("gnuplot")
        if not gp:
            return "gnuplot is not installed (`apt-get install gnuplot-nox`): no chart."
        panels = self.chart_panels()
        if not panels:
            return "no figures to chart."
        cols = 2 if len(panels) > 1 else 1
        rows = (len(panels) + cols - 1) // cols
        tmp = tempfile.mkdtemp(prefix="ferry-report-")
        try:
            script = [
                f"set terminal svg size {520 * cols},{290 * rows} dynamic font 'sans,11' background '#ffffff'",
                f"set output '{svg_path}'",
                f"set multiplot layout {rows},{cols}",
                "set style fill solid 0.85 border -1",
                "set boxwidth 0.65",
                "set yrange [0:*]",
                "set grid ytics lc rgb '#dddddd'",
                "unset key",
                "set xtics nomirror scale 0 font ',10'",
                "set bmargin 3.5",
                "set ytics nomirror",
                "set border 3",
                "set offsets 0.3, 0.3, 0, 0",
            ]
            for i, (title, pts) in enumerate(panels):
                dat = os.path.join(tmp, f"{i}.dat")
                top = max(h for _, h, _, _ in pts) or 1
                with open(dat, "w") as f:
                    for j, (name, h, color, lab) in enumerate(pts):
                        f.write(f'{j} "{name}" {h:.6g} {int(color[1:], 16)} "{lab}"\n')
                script += [
                    f"set title \"{title}\" font ',12'",
                    f"set yrange [0:{top * 1.18:.6g}]",
                    # Titles of their own: the SVG names each plot, and the
                    # default would be the temporary file's path.
                    f"plot '{dat}' using 1:3:4:xtic(2) with boxes lc rgb variable "
                    f"title \"{title}\", "
                    f"'' using 1:3:5 with labels offset 0,0.7 font ',9' title \"{title}: values\"",
                ]
            script.append("unset multiplot")
            r = subprocess.run([gp], input="\n".join(script) + "\n", capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0 or not os.path.exists(svg_path):
                return "gnuplot failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return None

    # -- cross-checks (--treemon) -------------------------------------------

    def cpu_check(self):
        """The outside watch's whole-run estimate beside the bench's window
        figure, where both exist."""
        out = []
        for t in self.targets:
            for v, bench, work in (("throughput-8", "proxy_cpu_per_gib", work_gib),
                                   ("handshakes", "proxy_cpu_per_1k", work_ksetups)):
                c = self.cell(v, t)
                if not c or not c.runs:
                    continue
                b, e = c.m(bench), c.tree_cpu_per(work)
                if b and e:
                    out.append(f"{LABELS[t]} {v}: {fmt(e)} watched vs {fmt(b)} by the bench ({e / b:.2f}×)")
        return out

    def mem_check(self):
        out = []
        for t in self.targets:
            c = self.cell("connections", t)
            if not c or not c.runs:
                continue
            b = c.m("proxy_mem_per_conn") or c.m("proxy_rss_per_conn")
            e = c.tree_mem_per_conn()
            if b and e:
                out.append(f"{LABELS[t]}: {fbytes(e)} peak Pss growth vs {fbytes(b)} by the bench")
        return out

    # -- the groups ----------------------------------------------------------

    def hs_socks_variant(self):
        if self.has("handshakes"):
            return "handshakes"
        if self.has("http-handshakes-socks"):
            return "http-handshakes-socks"
        return None

    def argon2_stats(self):
        if not self.argon2:
            return None
        ver = med([a.get("verify_ms") for a in self.argon2])
        wall = med([a.get("verify_wall_ms") for a in self.argon2])
        plain = med([med(a.get("plain_cpu_ms", [])) for a in self.argon2])
        allc = [x for a in self.argon2 for x in a.get("hash_cpu_ms", [])]
        threads = med([a.get("verifier_threads") for a in self.argon2])
        nproc = med([a.get("nproc") for a in self.argon2]) or self.meta.get("nproc")
        return dict(verify_ms=ver, wall_ms=wall, plain_ms=plain, n=len(allc),
                    lo=min(allc) if allc else None, hi=max(allc) if allc else None,
                    threads=threads, nproc=nproc, params=self.argon2[0].get("params"))

    def argon2_ceiling(self):
        """(setups/s, parallel verifications) that Argon2id allows without the cache."""
        s = self.argon2_stats()
        if not s or not s["verify_ms"]:
            return None
        par = min(s["threads"] or s["nproc"], s["nproc"])
        return par / (s["verify_ms"] / 1000.0), par

    def section_socks(self, L):
        for v in SOCKS_TCP_VARIANTS:
            if not self.has(v):
                continue
            L.append(f"## {V[v]['title']}")
            L.append("")
            L.append(self.params_line(v))
            L.append("")
            L.append(self.table(v, ROWS_SOCKS_TCP))
            L.append("")
            self.bench_notes(L, [(v, t) for t in ROWS_SOCKS_TCP])
            L.extend(self.explain(v))

    def bench_notes(self, L, pairs, label=None):
        notes = []
        for v, t in pairs:
            c = self.cell(v, t)
            if c and c.runs:
                for n in c.notes():
                    notes.append(f"- {label(v, t) if label else LABELS[t]}: {n}")
        if notes:
            L.append("Notes from the bench:")
            L.append("")
            L.extend(notes[:20])
            L.append("")

    def section_udp(self, L):
        vs = [v for v in UDP_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## UDP relay (UDP ASSOCIATE)")
        L.append("")
        L.append(
            "Each client opens a SOCKS5 UDP ASSOCIATE (the control connection stays open) and keeps "
            "exactly one sequence-numbered datagram in flight: an echo with the current sequence "
            "number counts and is timed; none within 100 ms counts as lost and the next goes out; a "
            "late echo of an older one is never credited. Every echoed byte is checked. So echoes/s "
            "is clients ÷ round-trip time: one client measures the relay's latency, sixteen its "
            "capacity. **direct** is the bench's own UDP echo without a proxy. Proxy CPU is per "
            "echo, i.e. per datagram relayed out *and* back."
        )
        L.append("")
        for v in vs:
            L.append(f"### {V[v]['title']}")
            L.append("")
            if V[v]["kind"] == "blast":
                L.append(
                    f"{self.cmd(v)}: every client sends bursts of 64 datagrams as fast as it can for "
                    "the whole window, while reading echoes; offered is what the clients sent in the "
                    "window, received what came back of it (echoes still in flight get 0.2 s after "
                    "the window), delivered = received ÷ offered. The bench's CPU figure here is the "
                    "proxy's CPU over offered + received datagrams (each counted once per direction, "
                    "offered ones included even when dropped before the proxy read them); the second "
                    "figure divides the same CPU by the echoes that came back, the cost of a useful "
                    "datagram. The senders "
                    "share the two cores with the proxy, so what a proxy offers to relay also "
                    "depends on the CPU it leaves them; received and delivered are the figures "
                    "to compare. "
                    + (
                        "The echo reads with `UDP_GRO`, as QUIC servers do: a run of datagrams "
                        "its sender sent as one segmented message (`UDP_SEGMENT`) arrives in one "
                        "read and goes back as the same run. A proxy that relays datagram by "
                        "datagram gains nothing from that; one that segments its sends spares "
                        "the echo (and itself: the kernel no longer cuts the run at the echo's "
                        "socket). The next table is the same run with an echo that reads every "
                        "datagram alone."
                        if v == "udp-blast"
                        else "Here the echo does not set `UDP_GRO`: every datagram is read and "
                        "answered on its own, whatever the proxy sent."
                    )
                )
            else:
                L.append(f"{self.cmd(v)}.")
            L.append("")
            L.append(self.table(v, ROWS_UDP))
            L.append("")
            self.bench_notes(L, [(v, t) for t in ROWS_UDP])
        L.extend(self.explain_udp())

    def section_udp_tunnel(self, L):
        vs = [v for v in UDPT_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## UDP through the tunnel")
        L.append("")
        L.append(
            "UDP ASSOCIATE through ferry's tunnel (issue 18) beside ferry's own direct UDP relay, "
            "shadowsocks-libev's UDP relay and no proxy at all, in the same interleaved rounds. "
            "**ferry tunnel (h2)** is the pair `ferry bench udp --tunnel h2` starts: the bench "
            "speaks SOCKS5 to the client's port, which carries each association's destination as "
            "a CONNECT-UDP stream (RFC 9298, datagrams in capsules) on its HTTP/2 + TLS 1.3 "
            "connection to the server, which sends them on to the bench's UDP echo; **ferry tunnel "
            "(wss)** is the same inside a WebSocket on /tunnel. **ferry, direct UDP relay** is one "
            "ferry that `ferry bench udp` starts itself (the relay the tunnel's client runs for the "
            "application, without the tunnel). **shadowsocks-libev** is `ss-local -u` (SOCKS5) → "
            "`ss-server -u` with chacha20-ietf-poly1305, each datagram sealed on its own (no "
            "stream, no head-of-line blocking). **direct** is the bench's clients and echo without "
            "a proxy. Each paced client keeps one sequence-numbered datagram in flight: an echo "
            "with the current sequence number counts and is timed; none within 100 ms counts as "
            "lost and the next goes out; a late echo is never credited; every byte is checked. "
            "Proxy CPU is that of both ends (the tunnel's client + server, ss-local + ss-server) "
            "per echo, i.e. per datagram relayed out and back. **Allocations per datagram** are "
            "counted, not estimated: the ferries run under an LD_PRELOAD counter "
            "(bench/micro/alloccount.c: every malloc, calloc, realloc, aligned allocation and free "
            "counted with one relaxed atomic add, then handed to glibc), and the bench reads each "
            "process's counter at the start and the end of its measurement window, as it samples "
            "their CPU, so set-up, warm-up and shutdown fall outside: the window's allocations "
            "over the datagrams relayed (2 per echo, out and back; for the blast, 2 per echo "
            "received, so what a proxy read and dropped is charged to what came back), for the "
            "tunnel summed and per end (client + server). Only the ferries carry the counter; the "
            "other rows are not counted."
        )
        L.append("")
        for v in vs:
            L.append(f"### {V[v]['title']}")
            L.append("")
            if V[v]["kind"] == "blast":
                L.append(f"{self.cmd(v)}: every client sends bursts of 64 datagrams as fast as it "
                         "can for the whole window while reading echoes; offered is what the "
                         "clients sent, received what came back (0.2 s after the window for those "
                         "in flight), delivered = received ÷ offered. CPU per datagram counts "
                         "offered + received; per echo delivered, the received ones only.")
            else:
                L.append(f"{self.cmd(v)}; the ferry tunnel rows add `--tunnel h2|wss`, the ferry "
                         "rows run under the allocation counter, shadowsocks-libev's adds "
                         "`--proxy ADDR --proxy-pid PID,PID` (ss-local, ss-server).")
            L.append("")
            L.append(self.udpt_table(v))
            L.append("")
            self.bench_notes(L, [(v, t) for t in ROWS_UDPT],
                             label=lambda v, t: UDPT_LABELS.get(t, LABELS[t]))
        L.extend(self.explain_udp(UDPT_VARIANTS, cpu_note=False))
        verdict = self.udpt_verdict()
        if verdict:
            L.append("Against the issue's targets (medians over rounds):")
            L.append("")
            L.extend(verdict)
            L.append("")

    def udpt_allocs(self, v, t):
        """Allocations per datagram: total, and for a tunnel (client + server)."""
        c = self.cell(v, t)
        if not t.startswith("ferry"):
            return "not counted"
        tot = c.m("proxy_allocs_per_datagram")
        if tot is None:
            return "– (no counter)"
        cl, sv = c.m("client_allocs_per_datagram"), c.m("server_allocs_per_datagram")
        if cl is not None and sv is not None:
            return f"{fmt(tot)} ({fmt(cl)} + {fmt(sv)})"
        return fmt(tot)

    def udpt_table(self, v):
        kind = V[v]["kind"]
        d, ss = self.headline(v, "direct"), self.headline(v, "ss-libev") if self.ok(v, "ss-libev") else None
        if kind == "udp":
            header = ["target", "echoes/s", "× direct", "loss %", "RTT p50 / p95 / p99 ms",
                      "proxy CPU µs per echo", "allocations per datagram (client + server)",
                      "× ss-libev", "integrity and failures"]
        else:
            header = ["target", "offered pps", "received pps", "delivered %", "× direct",
                      "proxy CPU µs per datagram / per echo delivered",
                      "allocations per datagram (client + server)", "× ss-libev", "integrity and failures"]
        rows = []
        for t in self.rows_for(v, ROWS_UDPT):
            label = UDPT_LABELS.get(t, LABELS[t])
            why = self.status(v, t)
            if why:
                rows.append([label, why] + [""] * (len(header) - 2))
                continue
            c = self.cell(v, t)
            h = self.headline(v, t)
            rd = ratio(h, d) if t != "direct" else "1.00×"
            rs = "1.00×" if t == "ss-libev" else (ratio(h, ss) if ss else "–")
            allocs = self.udpt_allocs(v, t) if t != "direct" else "–"
            if kind == "udp":
                rtt = ("–" if all_lost(c) else
                       f"{fmt(c.m('rtt_p50'))} / {fmt(c.m('rtt_p95'))} / {fmt(c.m('rtt_p99'))}")
                rows.append([label, self.headline_cell(v, t), rd, fmt(c.m("loss")), rtt, self.cpu(v, t),
                             allocs, rs, self.issues(v, t)])
            else:
                rows.append([label, fmt(c.m("offered")), self.headline_cell(v, t), fmt(c.m("delivered")),
                             rd, self.blast_cpu(v, t), allocs, rs, self.issues(v, t)])
        return md_table(header, rows)

    def udpt_verdict(self):
        out = []
        tunnels = [t for t in ("ferry-tunnel", "ferry-tunnel-wss") if t in self.targets]
        v = "udpt-16x1200"
        for t in tunnels if self.has(v) else []:
            f, d = (self.headline(v, x) if self.ok(v, x) else None for x in (t, "direct"))
            if f is None or not d:
                out.append(f"- {LABELS[t]}, 16 × 1200 B, ≥ {UDPT_DIRECT_SHARE:.0%} of direct with 0 % "
                           f"loss: not measured ({self.status(v, t) or self.status(v, 'direct') or 'no figures'})")
                continue
            loss = self.cell(v, t).m("loss") or 0
            met = f / d >= UDPT_DIRECT_SHARE and loss == 0
            out.append(f"- {LABELS[t]}, 16 × 1200 B: {fmt(f)} echoes/s, **{f / d:.0%} of direct** "
                       f"({fmt(d)}), loss {fmt(loss)} % (target ≥ {UDPT_DIRECT_SHARE:.0%} with 0 % "
                       f"loss: {'met' if met else '**not met**'})")
        for t in tunnels:
            parts, met = [], True
            for v in (x for x in UDPT_VARIANTS if self.has(x)):
                f = self.headline(v, t) if self.ok(v, t) else None
                r = self.headline(v, "ss-libev") if self.ok(v, "ss-libev") else None
                what = V[v]["title"].split(":")[0].replace("16 clients × ", "")
                if f is None or r is None:
                    parts.append(f"{what}: not measured")
                    met = False
                elif not r:
                    parts.append(f"{what}: {fmt(f)} vs 0 (shadowsocks-libev relays none)")
                    met = met and f > 0
                else:
                    parts.append(f"{what}: **{f / r:.2f}×**")
                    met = met and f > r
            if parts:
                out.append(f"- {LABELS[t]} ahead of shadowsocks-libev on every row: "
                           f"{'; '.join(parts)} ({'met' if met else '**not met**'})")
        for t in [x for x in ("ferry",) + tuple(tunnels)]:
            vals = [(V[v]["title"].split(":")[0].replace("16 clients × ", ""),
                     self.cell(v, t).m("proxy_allocs_per_datagram"))
                    for v in UDPT_VARIANTS if self.has(v) and self.ok(v, t)]
            vals = [(w, a) for w, a in vals if a is not None]
            if not vals:
                continue
            met = all(a < UDPT_ALLOC_ZERO for _, a in vals)
            label = UDPT_LABELS.get(t, LABELS[t])
            ends = " (both ends)" if t != "ferry" else ""
            out.append(f"- {label}, allocations per datagram in the steady state{ends}: "
                       + "; ".join(f"{w}: {fmt(a)}" for w, a in vals)
                       + f" (target 0, i.e. under {UDPT_ALLOC_ZERO:g}: {'met' if met else '**not met**'})")
        return out

    def section_auth(self, L):
        vs = [v for v in AUTH_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## SOCKS5 authentication (ferry only)")
        L.append("")
        L.append(
            "The handshakes scenario against a ferry that `ferry bench` starts itself (same binary, "
            "default configuration) with a one-user userlist: `--auth plain` stores the "
            "password as `bench:plain:…`, `--auth argon2` as an Argon2id hash (libsodium's "
            "interactive limits); every setup then adds the RFC 1929 username/password exchange. "
            "The verification cache (`auth.cachettl`, default 300 s) remembers a successful "
            "name/password pair, so with it on only the first setup pays for Argon2id; "
            "`--auth-cachettl 0` turns it off and every setup pays. A `plain:` entry without the "
            "cache pays one Argon2id verification against a dummy hash, by design (docs/configuration.md: "
            "timing does not tell how a user is stored), so uncached plain and Argon2id should not "
            "be told apart. 32 setups in flight, as in the handshakes scenario."
        )
        L.append("")
        L.append(f"Command: {self.cmd('auth-argon2-nocache') if self.has('auth-argon2-nocache') else self.cmd(vs[0])} (and the other `--auth` modes).")
        L.append("")
        base = self.headline("auth-none", "ferry")
        header = ["mode", "setups/s", "latency p50 / p95 / p99 ms", "× no auth",
                  "proxy CPU ms per setup", "failures"]
        rows = []
        for v in vs:
            label = V[v]["title"]
            why = self.status(v, "ferry")
            if why:
                rows.append([label, why, "", "", "", ""])
                continue
            c = self.cell(v, "ferry")
            h = self.headline(v, "ferry")
            r = "1.00×" if v == "auth-none" else (f"{h / base:.2g}×" if base and h / base < 0.1 else ratio(h, base))
            rows.append([label, self.headline_cell(v, "ferry"),
                         f"{fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))} / {fmt(c.m('latency_p99'))}",
                         r, self.cpu(v, "ferry"), self.issues(v, "ferry")])
        L.append(md_table(header, rows))
        L.append("")
        self.bench_notes(L, [(v, "ferry") for v in vs], label=lambda v, t: V[v]["title"])
        s = self.argon2_stats()
        ceil = self.argon2_ceiling()
        if s and ceil:
            prm = s["params"] or {}
            pdesc = (f"m = {prm.get('m_kib', 0) // 1024} MiB, t = {prm.get('t')}, p = {prm.get('p')}"
                     if prm else "ferry's defaults")
            L.append("**Expected uncached rate.** " + (
                f"One Argon2id verification ({pdesc}) takes {fmt(s['verify_ms'])} ms of CPU here: "
                f"the median over {s['n']} runs of `ferry passwd` ({fmt(s['lo'])}–{fmt(s['hi'])} ms each, "
                f"timed by `bench/argon2time.py` in every round; it computes the same hash a "
                f"verification recomputes), less the {fmt(s['plain_ms'])} ms that `ferry passwd "
                f"--plain` costs without it; {fmt(s['wall_ms'])} ms by the wall clock. ferry verifies "
                f"on {fint(s['threads'])} verifier threads (`auth.workers`), but this machine has "
                f"{fint(s['nproc'])} cores, so at most {fint(ceil[1])} verifications run at once: the "
                f"ceiling is {fint(ceil[1])} ÷ {fmt(s['verify_ms'] / 1000.0)} s = "
                f"**{fmt(ceil[0])} setups/s**, shared with the load generator and ferry's event "
                f"loops on the same cores."))
            facts = []
            for v in ("auth-argon2-nocache", "auth-plain-nocache"):
                h = self.headline(v, "ferry") if self.has(v) else None
                if h:
                    facts.append(f"{V[v]['title'].split(',')[0]}: {fmt(h)} setups/s = "
                                 f"{h / ceil[0]:.2f} of the ceiling")
            a, p = self.headline("auth-argon2-nocache", "ferry"), self.headline("auth-plain-nocache", "ferry")
            if facts:
                L.append("")
                L.append("Measured without the cache: " + "; ".join(facts) + (
                    f"; plain ÷ Argon2id = {p / a:.2f}" if a and p else "") + ".")
            ca = self.cell("auth-argon2-nocache", "ferry")
            if ca and ca.runs and ca.m("proxy_cpu_per_1k"):
                L.append(
                    f"ferry's CPU per uncached setup, {fmt(ca.m('proxy_cpu_per_1k'))} ms, is one "
                    "verification plus the setup itself, which agrees with the timing above.")
            L.append("")
        elif vs:
            L.append("_No Argon2id timing in these results (bench/argon2time.py failed or did not run)._")
            L.append("")
        cached = self.headline("auth-argon2", "ferry")
        plain_c = self.headline("auth-plain", "ferry")
        if base and cached and plain_c:
            r = cached / plain_c
            same = 0.85 <= r <= 1.15
            L.append(
                f"**With the cache on**, Argon2id ({fmt(cached)}/s) and plain ({fmt(plain_c)}/s) "
                + (f"setups cost about the same ({r:.2f}×): what separates them from no "
                   f"authentication ({cached / base:.2f}× and {plain_c / base:.2f}×) is the extra "
                   "RFC 1929 round trip and the cache lookup, not Argon2id."
                   if same else
                   f"setups differ by {r:.2f}× (against no authentication: {cached / base:.2f}× and "
                   f"{plain_c / base:.2f}×); with a hit both skip Argon2id, so the difference is "
                   "noise or a cache that did not fill in the warm-up (see below)."))
            L.append("")
        if self.has("auth-argon2"):
            L.append(
                "The cached rows get a 3 s warm-up (`--warmup 3`, after the general one), a "
                "margin more than a need: when the run starts, all 32 setups in flight miss the "
                "cache at once (it belongs to each worker), but concurrent misses for the same "
                "name and password share one verification "
                "(`ferry_auth_shared_verifications_total`), so the burst costs one Argon2id per "
                "worker. Checked during development with `ferry bench handshakes --auth argon2 "
                "--concurrency 32 --runs 1 --duration 3 --warmup W`: 10,760 setups/s with W = 0, "
                "10,891 with 1, 11,490 with 3. Before attempts were shared, each of the 32 paid a "
                "full verification (about a second of both cores) and 1 s of warm-up gave "
                "7,364 setups/s, 0.5 s 3,839. A real client population meets the same burst "
                "after a restart or when the entries expire (`auth.cachettl`).")
            L.append("")

    def section_http(self, L):
        req = [v for v in HTTP_REQ_VARIANTS if self.has(v)]
        hs = [v for v in HTTP_HS_VARIANTS if self.has(v)]
        if not req and not hs:
            return
        L.append("## HTTP proxy path")
        L.append("")
        L.append(
            "ferry serves SOCKS5, SOCKS4 and an HTTP proxy on one port; here its HTTP side runs "
            "beside its SOCKS5 side and beside two HTTP proxies from Debian, tinyproxy and Squid. "
            "`--http-proxy connect` opens each connection with `CONNECT host:port` and, after the "
            "`200`, talks to the target through the tunnel; `--http-proxy absolute` sends "
            "`GET http://host:port/path` to the proxy, which makes the request to the target "
            "itself and forwards the answer (every body byte is still checked). × ferry compares "
            "with ferry in the same mode."
        )
        L.append("")
        if req:
            L.append("### Small HTTP requests, one connection each")
            L.append("")
            bp = self.bparams(req[-1])
            L.append(
                f"{self.cmd(req[-1]).replace(' --http-proxy absolute', ' [--http-proxy connect|absolute]')}: "
                f"{bp.get('requests', '?')} small requests (after {bp.get('warm_requests', 100)} warm-up "
                f"ones), each on a new connection, {bp.get('concurrency', 8)} in flight; then "
                f"{bp.get('downloads', 8)} concurrent downloads of "
                f"{bp.get('download_size', 1048576) // 1048576} MiB.")
            L.append("")
            L.append(self.http_table("requests"))
            L.append("")
            fs, fc = self.headline("http-requests-socks", "ferry"), self.headline("http-requests-connect", "ferry")
            if fs and fc and fc > fs * 1.05:
                L.append(
                    f"ferry's HTTP CONNECT path is {fc / fs:.2f}× its SOCKS5 path here: the bench's "
                    "SOCKS5 client waits for the method reply before it sends its request (as real "
                    "clients do), so a SOCKS5 setup takes two round trips to the proxy before the "
                    "first byte of data, a CONNECT one.")
                L.append("")
        if hs:
            L.append("### CONNECT handshakes")
            L.append("")
            L.append(
                f"{self.cmd('http-handshakes-connect') if self.has('http-handshakes-connect') else self.cmd(hs[0])}: "
                "as the handshakes scenario (32 in flight, one byte echoed, abortive close), with "
                "`CONNECT` and its `200` in place of the SOCKS5 greeting and request.")
            L.append("")
            L.append(self.http_table("handshakes"))
            L.append("")
        pairs = [(v, t) for v in req + hs for t in ("direct", "ferry", "tinyproxy", "squid")]
        self.bench_notes(L, pairs, label=lambda v, t: f"{LABELS[t]}, {V[v]['title']}")
        L.extend(self.explain_http())

    def http_table(self, which):
        if which == "requests":
            socks_v, modes = "http-requests-socks", ["http-requests-connect", "http-requests-absolute"]
            header = ["target", "requests/s", "latency mean / p50 / p95 ms", "download MiB/s",
                      "× direct", "× ferry", "proxy CPU s per 1000", "failures"]
        else:
            socks_v, modes = self.hs_socks_variant(), ["http-handshakes-connect"]
            header = ["target", "setups/s", "latency p50 / p95 / p99 ms", "× direct", "× ferry",
                      "proxy CPU s per 1000", "failures"]
        d = self.headline(socks_v, "direct") if socks_v else None
        fs = self.headline(socks_v, "ferry") if socks_v else None
        lines = []
        if socks_v and self.has(socks_v):
            lines += [("direct", socks_v, "direct (no proxy)"), ("ferry", socks_v, "ferry, SOCKS5")]
        for t in ("ferry", "tinyproxy", "squid"):
            if t not in self.targets:
                continue
            for v in modes:
                if self.has(v):
                    lines.append((t, v, f"{LABELS[t]}, {V[v]['title']}"))
        rows = []
        for t, v, label in lines:
            why = self.status(v, t)
            if why:
                rows.append([label, why] + [""] * (len(header) - 2))
                continue
            c = self.cell(v, t)
            h = self.headline(v, t)
            fref = fs if v == socks_v else self.headline(v, "ferry")
            rd = "1.00×" if t == "direct" else ratio(h, d)
            if t == "direct":
                rf = ratio(h, fs)
            elif t == "ferry":
                rf = "1.00×" if v == socks_v else f"1.00× ({ratio(h, fs)} its SOCKS5)"
            else:
                rf = ratio(h, fref)
            if which == "requests":
                rows.append([label, self.headline_cell(v, t),
                             f"{fmt(c.m('latency_mean'))} / {fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))}",
                             fmt(c.m("download")), rd, rf, self.cpu(v, t), self.issues(v, t)])
            else:
                rows.append([label, self.headline_cell(v, t),
                             f"{fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))} / {fmt(c.m('latency_p99'))}",
                             rd, rf, self.cpu(v, t), self.issues(v, t)])
        return md_table(header, rows)

    # -- explanations --------------------------------------------------------

    def hop_cell(self, v, t, ref):
        """(headline text, ratio to the one-hop row ref, value) of target t."""
        why = self.status(v, t)
        if why:
            return ("n/a" if why.startswith("n/a") else "— " + why), "", None
        h = self.headline(v, t)
        text = self.headline_cell(v, t)
        if ref is None:
            return text, "", h
        if t == ref:
            return text, "1.00×", h
        r = self.headline(v, ref)
        return text, (ratio(h, r) if r else "–"), h

    def section_https(self, L):
        vs = [v for v in HTTPS_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## The HTTPS proxy path")
        L.append("")
        L.append(
            "HTTP CONNECT over TLS 1.3 (issue 16). **ferry** is the plain (unencrypted) HTTP "
            "CONNECT baseline; **ferry tls:// h1** is ferry's own TLS listener with HTTP/1.1 (a TLS "
            "connection per stream, and per request in the requests table); **ferry tls:// h2** the "
            "same listener spoken to in HTTP/2 (`--https-proxy h2`: every stream a CONNECT stream "
            "on one TLS connection; \"h2 not offered\" while ferry does not offer h2 in ALPN); "
            "**stunnel4 → ferry** TLS without multiplexing in front of a plain ferry port; "
            "**Squid https_port** Squid's own HTTPS proxy; **nghttpx -s (h2) → ferry** nghttp2's "
            "HTTP/2 proxy handing each CONNECT to a plain ferry port behind it. Every TLS daemon "
            "has the same throwaway `ferry cert` certificate and the bench verifies it by its pin. "
            "Proxy CPU is that of every process of the row (the TLS front and the ferry behind it); "
            "s/GiB counts the bytes both ways. × ferry is the ratio to plain HTTP CONNECT."
        )
        L.append("")
        for v in vs:
            L.append(f"### {V[v]['title']}")
            L.append("")
            L.append(self.params_line(v))
            L.append("")
            L.append(self.table(v, ROWS_HTTPS))
            L.append("")
            self.bench_notes(L, [(v, t) for t in ROWS_HTTPS])

    def section_stall(self, L):
        vs = [v for v in STALL_VARIANTS if self.has(v)]
        t = "ferry-tls-h2"
        if not vs:
            return
        L.append("## A stalled stream beside others (h2)")
        L.append("")
        L.append(
            "Does one HTTP/2 stream whose reader never reads slow the others on the same "
            "connection? ferry's tls:// listener (**ferry tls:// h2**), 7 CONNECT streams on one "
            "connection alone, and the same 7 beside one stalled stream (`--stalled 1`), in the "
            "same interleaved rounds. The slowest stream is the lowest echo rate of the 7 over the "
            "window; × alone compares it with the mean stream rate without the stalled one (down "
            "/ 7). Stalled sent: what ferry took of the stalled stream's burst before its windows "
            "filled (in the window: what it took while the others were measured; 0 is stalled); "
            "unread in the bench: its echo held unread at the end, at most the bench's 16 MiB "
            "stream window."
        )
        L.append("")
        for v in vs:
            L.append(f"- {V[v]['title']}: {self.params_line(v)}")
        L.append("")
        header = ["load", "total (MiB/s)", "× alone", "slowest stream down (MiB/s)", "× alone",
                  "stalled held", "stalled sent (MiB)", "in the window (MiB)",
                  "unread in the bench (MiB)", "proxy CPU s/GiB",
                  "integrity and failures"]
        alone = self.cell("stall-7", t)
        base_total = alone.m("total") if alone and alone.runs else None
        base_stream = alone.m("down") / 7 if alone and alone.runs and alone.m("down") else None
        rows = []
        for v in vs:
            c = self.cell(v, t)
            if not c or not c.runs:
                rows.append([V[v]["title"], "—", "", "", "", "", "", "", "", "", self.status(v, t) or "–"])
                continue
            tot, slow = c.m("total"), c.m("slowest_stream_down")
            rows.append([
                V[v]["title"], fmt(tot), f"{tot / base_total:.2f}×" if base_total else "",
                fmt(slow) if slow is not None else "–",
                f"{slow / base_stream:.2f}×" if base_stream and slow is not None else "",
                fint(c.m("stalled_streams") or 0), fmt(c.m("stalled_sent") or 0),
                fmt(c.m("stalled_sent_in_window") or 0), fmt(c.m("stalled_unread") or 0),
                self.cpu(v, t), self.issues(v, t)])
        L.append(md_table(header, rows))
        L.append("")
        self.bench_notes(L, [(v, t) for v in vs], label=lambda v, t: V[v]["title"])
        c = self.cell("stall-7-1", t)
        if base_total and base_stream and c and c.runs and c.m("slowest_stream_down") is not None:
            r_tot, r_slow = c.m("total") / base_total, c.m("slowest_stream_down") / base_stream
            met = r_slow >= STALL_TARGET
            L.append(f"**Beside a stalled stream** the 7 keep {r_tot:.2f}× of their total rate and "
                     f"the slowest of them {r_slow:.2f}× of a stream's mean rate alone (target ≥ "
                     f"{STALL_TARGET}× each: {'met' if met else '**not met**'}).")
            L.append("")

    def edge_row(self, v, t, f):
        """One edge's row of a variant's table (f: ferry's conn/s)."""
        why = self.status(v, t)
        if why:
            return [LABELS[t], "—", "", "", "", "", "", "", "", why]
        c = self.cell(v, t)
        h = c.m("connections")
        cpu = c.m("proxy_cpu_per_1k")
        return [LABELS[t], self.headline_cell(v, t),
                f"{f / h:.2f}×" if f and h and t != "ferry-edge" else "",
                fmt(c.m("latency_p50")), fmt(c.m("latency_p99")), fmt(c.m("latency_p99_9")),
                fmt(cpu) if cpu is not None else "–", fint(c.m("misrouted") or 0),
                fint(c.m("errors") or 0), self.issues(v, t)]

    def edge_budget(self, L, vs):
        """--edge-cpu: the equal CPU budget, and each edge's CPU use against it
        (near the quota: the edge, not the generator, set the rate)."""
        q = self.params.get("edge_cpu") or 0
        if not q:
            L.append("No CPU budget: the edges take what they need, so where the load generator "
                     "(`ferry bench edge` and its backends) saturates the cores it sets the rate; "
                     "`--edge-cpu SHARE` measures capacity at an equal budget instead.")
            L.append("")
            return
        L.append(f"**Equal CPU budget: {q:g} core per edge.** Each edge runs in a cgroup with a CPU "
                 f"quota of {q:g} core (compare.sh `--edge-cpu {q:g}`; ferry's self-hosted edge "
                 "joins it with `ferry bench edge --proxy-cgroup`), so the edge, not the load "
                 "generator, is the bottleneck and conn/s is its capacity at that budget. CPU use "
                 "during the window (cores, median; at the quota means throttled), and in brackets "
                 "the load generator's (`ferry bench edge`: clients and backends), which must stay "
                 "well under the cores the machine has:")
        L.append("")
        for v in vs:
            if v == "edge-hold":
                continue
            uses = []
            for t in EDGE_TARGETS:
                if t in self.targets and not self.status(v, t):
                    u = self.cell(v, t).m("proxy_cpu")
                    g = self.cell(v, t).m("generator_cpu")
                    if u is not None:
                        uses.append(f"{LABELS[t]} {u:.2f}" + (f" ({g:.2f})" if g is not None else ""))
            if uses:
                L.append(f"- {V[v]['title']}: " + ", ".join(uses))
        L.append("")

    def section_edge(self, L):
        vs = [v for v in EDGE_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## Edge mode (SNI and Minecraft host routing)")
        L.append("")
        L.append(
            "`ferry bench edge`: each connection sends a canned first message, reads the one byte "
            "of the backend its host routes to (a.test and b.test alternate; a byte of the other "
            "backend is misrouted) and closes. ferry edge is a ferry with an `[edge bench]` "
            "section started by the bench; HAProxy (`req.ssl_sni`, and the Lua Minecraft action "
            "of EDGE.md appendix B) and nginx (`stream` + `ssl_preread`) run the configurations "
            "of bench/peers/ with the same worker count, measured with `--edge-target`. nginx has "
            "no Minecraft routing. ferry ÷ peer is ferry's conn/s over the peer's; latency from "
            "connect() to the byte; CPU in s per 1,000 connections."
        )
        L.append("")
        self.edge_budget(L, vs)
        for v in vs:
            L.append(f"- {V[v]['title']}: {self.params_line(v)}")
        L.append("")
        for v in vs:
            if v == "edge-hold":
                continue
            f = self.headline(v, "ferry-edge")
            L.append(f"### {V[v]['title']}")
            L.append("")
            header = ["edge", "conn/s", "ferry ÷ peer", "p50 (ms)", "p99 (ms)", "p99.9 (ms)",
                      "CPU s/1000", "misrouted", "errors", "integrity and failures"]
            L.append(md_table(header, [self.edge_row(v, t, f) for t in EDGE_TARGETS
                                       if t in self.targets]))
            L.append("")
        if "edge-hold" in vs:
            L.append(f"### {V['edge-hold']['title']}")
            L.append("")
            rows = []
            for t in EDGE_TARGETS:
                if t not in self.targets:
                    continue
                why = self.status("edge-hold", t)
                c = self.cell("edge-hold", t)
                if why:
                    rows.append([LABELS[t], "—", "—", why])
                    continue
                rows.append([LABELS[t], fint(c.m("held") or 0),
                             fmt(c.m("held_mem_per_10k")) if c.m("held_mem_per_10k") is not None
                             else "–", self.issues("edge-hold", t)])
            L.append(md_table(["edge", "held", "MiB per 10,000", "integrity and failures"], rows))
            L.append("")
        self.bench_notes(L, [(v, t) for v in vs for t in EDGE_TARGETS],
                         label=lambda v, t: f"{V[v]['title']}, {LABELS[t]}")
    def section_wan(self, L):
        """The emulated wide-area path (`ferry bench wan`): measured with its
        own commands, not by this harness; bench/wan-path.md is kept verbatim
        so that a new report does not lose it."""
        frag = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wan-path.md")
        if os.path.exists(frag):
            with open(frag, encoding="utf-8") as f:
                L.extend(f.read().rstrip("\n").split("\n"))
            L.append("")

    def section_tunnel(self, L):
        vs = [v for v in TUNNEL_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## Through a tunnel")
        L.append("")
        L.append(
            "The TCP scenarios through an encrypted tunnel between two processes on this machine "
            "(issue 17). **ferry tunnel (h2)** is the pair `ferry bench --tunnel h2` starts: a "
            "ferry with a SOCKS5 port and one `https://` outbound (`mux = h2`, verified by the "
            "server's pin; what `ferry client https://ADDR --pin PIN socks` runs) in front of a "
            "ferry with a `tls://` listener and a throwaway certificate: every session is an "
            "HTTP/2 CONNECT stream on the TLS 1.3 connection between them (one per client "
            "worker). **OpenSSH ssh -D** is `ssh -N -D` to a local `sshd` (every session a "
            "direct-tcpip channel of one SSH connection: the SSH-channel design chisel wraps). "
            "**shadowsocks-libev (aes-256-gcm)** is `ss-local` → `ss-server` (a TCP connection "
            "and a cipher handshake per session). **ferry** is plain ferry SOCKS5 with no tunnel: "
            "the reference. The bench speaks SOCKS5 to the client end of each; proxy CPU is that "
            "of both ends (client + server, sshd's whole process tree), s/GiB over the bytes "
            "both ways. × ss-libev and × ssh -D compare each row's median with theirs."
        )
        L.append("")
        for v in vs:
            L.append(f"### {V[v]['title']}")
            L.append("")
            L.append(self.params_line(v))
            L.append("")
            L.append(self.tunnel_table(v))
            L.append("")
            self.bench_notes(L, [(v, t) for t in ROWS_TUNNEL])
        verdict = []
        for v, peer, goal in TUNNEL_GOALS:
            if not self.has(v):
                continue
            f, r = (self.headline(v, t) if self.ok(v, t) else None for t in ("ferry-tunnel", peer))
            what = {"tunnel-throughput-1": "one stream", "tunnel-throughput-8": "8 streams",
                    "tunnel-handshakes": "setups/s"}[v]
            if f is None or not r:
                verdict.append(f"- {what} ≥ {goal:g}× {LABELS[peer]}: not measured "
                               f"({self.status(v, 'ferry-tunnel') or self.status(v, peer) or 'no figures'})")
                continue
            met = f / r >= goal
            verdict.append(f"- {what}: ferry tunnel {fmt(f)} vs {LABELS[peer]} {fmt(r)} {V[v]['unit']}, "
                           f"**{f / r:.2f}×** (target ≥ {goal:g}×: {'met' if met else '**not met**'})")
        if verdict:
            L.append("Against the issue's targets (medians over rounds):")
            L.append("")
            L.extend(verdict)
            L.append("")

    def tunnel_table(self, v):
        kind = V[v]["kind"]
        unit = V[v]["unit"]
        refs = {t: self.headline(v, t) if self.ok(v, t) else None for t in ROWS_TUNNEL}
        if kind == "throughput":
            header = ["target", f"total {unit}", "up / down", "proxy CPU s/GiB"]
        elif kind == "handshakes":
            header = ["target", unit, "latency p50 / p95 / p99 ms", "proxy CPU s per 1000"]
        else:
            header = ["target", unit, "latency mean / p50 / p95 ms", "download MiB/s",
                      "proxy CPU s per 1000 requests"]
        header += ["× ferry (no tunnel)", "× ss-libev", "× ssh -D", "integrity and failures"]
        rows = []
        for t in ROWS_TUNNEL:
            if t not in self.targets:
                continue
            why = self.status(v, t)
            if why:
                rows.append([LABELS[t], why] + [""] * (len(header) - 2))
                continue
            c = self.cell(v, t)
            row = [LABELS[t], self.headline_cell(v, t)]
            if kind == "throughput":
                row += [f"{fmt(c.m('up'))} / {fmt(c.m('down'))}", self.cpu(v, t)]
            elif kind == "handshakes":
                row += [f"{fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))} / {fmt(c.m('latency_p99'))}",
                        self.cpu(v, t)]
            else:
                row += [f"{fmt(c.m('latency_mean'))} / {fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))}",
                        fmt(c.m("download")), self.cpu(v, t)]
            h = refs[t]
            for ref in ("ferry", "ss-libev-aes", "ssh-d"):
                row.append("1.00×" if ref == t else (ratio(h, refs[ref]) if refs[ref] else "–"))
            row.append(self.issues(v, t))
            rows.append(row)
        return md_table(header, rows)

    def section_hop(self, L):
        vs = [v for v in HOP_VARIANTS if self.has(v)]
        if not vs:
            return
        L.append("## The cost of a hop")
        L.append("")
        L.append(
            "The same load through no proxy, one proxy and two proxies in a row. **ferry** and "
            "**ferry → ferry** are ferries that `ferry bench --chain 1` and `--chain 2` start "
            "themselves (default configuration; the first of two has `outbound = next` with "
            "`[outbound next] url = socks5://127.0.0.1:PORT` of the second, an IP address, so no "
            "name is resolved on the way). **ferry → Dante** is a ferry sending every session on "
            "through a Dante of its own, **Dante → Dante** a Dante doing the same with Dante's "
            "server chaining (`route`, bench/peers/danted-route.conf). Every two-hop row is "
            "compared with the one-hop row that ends the same way (ferry → ferry with ferry; "
            "ferry → Dante and Dante → Dante with Dante). Proxy CPU is that of every process of "
            "the chain. "
            + " ".join(f"{V[v]['title'].capitalize()}: {self.cmd(v)}." for v in vs)
            + " (`--chain N` added for the ferry rows; `--proxy ADDR --proxy-pid PID,PID` for the others.)"
        )
        L.append("")
        header = ["path", "hops"]
        for v in vs:
            header += [f"{V[v]['title']} ({V[v]['unit']})", "× one hop"]
        header += ["proxy CPU " + ("s/GiB" if v == "hop-throughput-8" else "s per 1000 setups") for v in vs]
        header += ["integrity and failures"]
        rows = []
        for t, hops, ref in HOP_ROWS:
            if t not in self.targets:
                continue
            # The bench's own word where it started the ferries (params.chain).
            said = {c.runs[0].get("params", {}).get("chain") for v in vs
                    for c in [self.cell(v, t)] if c and c.runs} - {None}
            if said and said != {hops}:
                row = [LABELS[t], f"**{', '.join(str(x) for x in sorted(said))} (bench) ≠ {hops}**"]
            else:
                row = [LABELS[t], str(hops)]
            issues = []
            for v in vs:
                text, r, _ = self.hop_cell(v, t, ref)
                row += [text, r]
                if self.ok(v, t):
                    iss = self.issues(v, t)
                    if iss != "ok":
                        issues.append(f"{V[v]['title']}: {iss}")
            row += [self.cpu(v, t) if self.ok(v, t) else "–" for v in vs]
            row.append("; ".join(issues) or ("ok" if any(self.ok(v, t) for v in vs) else "–"))
            rows.append(row)
        L.append(md_table(header, rows))
        L.append("")
        self.bench_notes(L, [(v, t) for v in vs for t, _, _ in HOP_ROWS],
                         label=lambda v, t: f"{LABELS[t]}, {V[v]['title']}")
        verdict = []
        for v, goal, what in (("hop-throughput-8", HOP_TARGET_THROUGHPUT, "MiB/s at 8 streams"),
                              ("hop-handshakes", HOP_TARGET_SETUPS, "setups/s")):
            one, two = (self.headline(v, t) if self.ok(v, t) else None for t in ("ferry", "ferry-ferry"))
            if one and two is not None:
                verdict.append(f"{two / one:.2f}× of one ferry's {what} (target ≥ {goal}×: "
                               f"{'met' if two / one >= goal else '**not met**'})")
        if verdict:
            L.append("**One more ferry hop** keeps " + " and ".join(verdict) + ".")
            L.append("")
        front = []
        for v in vs:
            fd, dd = (self.headline(v, t) if self.ok(v, t) else None for t in ("ferry-dante", "dante-dante"))
            if fd is not None and dd:
                front.append(f"{fd / dd:.2f}× the {V[v]['title']} of Dante in front")
        if front:
            L.append("**ferry in front of Dante** gives " + " and ".join(front) + ".")
            L.append("")

    def explain(self, v):
        """Known behaviour of peers that the figures alone do not explain."""
        out = []
        if v.startswith("throughput"):
            c = self.cell(v, "microsocks")
            if c and c.runs and stalled(c):
                out.append(
                    "microsocks stalls here: its relay loop (poll, then a blocking `write` of "
                    "each 1 KiB it read) blocks writing to the echo target while the echo target "
                    "blocks writing back to microsocks, which no longer reads: with a full-duplex "
                    "stream both socket buffers fill and no byte moves. A request/response client "
                    "would not see this; a bulk upload with a simultaneous download can."
                )
        if v == "connections":
            c = self.cell(v, "ss-libev")
            if c and c.runs:
                unhealthy = (c.m("healthy") or 0) < (c.m("connections") or 0)
                out.append(
                    "shadowsocks-libev: `ss-local` answers the SOCKS5 CONNECT at once, before "
                    "`ss-server` has reached the target (it has no way to know), so a connection "
                    "counts as set up while it may not reach the echo target yet; the setup rate "
                    "is flattered by that"
                    + (", and held connections that still had not reached it when the bench "
                       "checked every connection (10 s allowed) count as not healthy."
                       if unhealthy else ".")
                    + " Earlier versions of this harness gave `ss-server` a `local_address` in "
                    "its configuration, which it takes as the address to bind every outgoing "
                    "connection to (a bind() before each connect(), so a port of its own for "
                    "each): with thousands of held connections and the TIME_WAIT sockets of "
                    "earlier scenarios it fell behind (about 40 % of 9000 held connections did not "
                    "echo) and, once no port was left, exited (`cannot bind socket`). "
                    "bench/peers/shadowsocks.json now leaves the key out (`ss-local -b` instead)."
                )
        if out:
            out.append("")
        return out

    def explain_udp(self, variants=UDP_VARIANTS, cpu_note=True):
        out = []
        lost = [v for v in variants if self.has(v) and V[v]["kind"] == "udp"
                and self.ok(v, "ss-libev") and all_lost(self.cell(v, "ss-libev"))]
        if lost:
            sizes = sorted({self.cell(v, "ss-libev").param("payload") for v in lost})
            big = all(s and s > SS_UDP_MAX for s in sizes)
            out.append(
                f"**shadowsocks-libev loses every datagram of {', '.join(str(s) for s in sizes)} bytes.** "
                + ("Its UDP relay reads each datagram into a buffer of 2 × 1397 = 2794 bytes (its "
                   "default packet size; the `mtu` setting raises it): `ss-local` passes the payload "
                   "on with the target address (7 bytes) and the AEAD salt and tag (32 + 16 bytes for "
                   "chacha20-ietf-poly1305), and `ss-server` reads only the first 2794 bytes of "
                   "that, so its authentication fails and it drops the datagram, logging `failed to "
                   "handshake with 127.0.0.1: suspicious UDP packet` once per datagram. Found by "
                   f"bisection during development: payloads up to {SS_UDP_MAX} bytes come back, "
                   f"{SS_UDP_MAX + 1} and more never do. Nothing tells the client; for it the "
                   "datagrams are simply lost (the bench saw no truncated or corrupt echo)."
                   if big else "See its row for what the bench saw.")
            )
            out.append("")
        c1, c16 = self.cell("udp-1x1200", "ferry"), self.cell("udp-16x1200", "ferry")
        if cpu_note and c1 and c1.runs and c16 and c16.runs and c1.m("proxy_cpu_per_echo") and c16.m("proxy_cpu_per_echo"):
            out.append(
                f"CPU per echo is higher with one client ({fmt(c1.m('proxy_cpu_per_echo'))} µs for "
                f"ferry) than with sixteen ({fmt(c16.m('proxy_cpu_per_echo'))} µs): with one datagram "
                "in flight every datagram wakes the proxy on its own, while under load a wake-up "
                "serves several."
            )
            out.append("")
        return out

    def explain_http(self):
        out = []
        tp = [v for v in ("http-handshakes-connect",) if self.ok(v, "tinyproxy")]
        if tp:
            out.append(
                "tinyproxy starts one thread per client (up to `MaxClients`), and with "
                "`LogLevel Error` it logs each abortive close of the handshakes scenario as a "
                "`read() failed … Connection reset by peer` error; Squid runs one single-threaded "
                "process here (`-N`). Like ferry, both answer `CONNECT` only once they have "
                "reached the target (checked during development: a CONNECT to a closed port gets "
                "502 from ferry, 500 from tinyproxy, 503 from Squid), so their setup rates are "
                "comparable (unlike shadowsocks-libev's early SOCKS5 reply, see held connections)."
            )
            out.append("")
        return out

    # -- the document --------------------------------------------------------

    def render(self, out_path, svg_path):
        m, p = self.meta, self.params
        L = []
        L.append("# Benchmarks: ferry beside other proxies")
        L.append("")
        L.append(
            "ferry measured side by side with SOCKS5 proxies packaged by Debian (Dante, "
            "microsocks, shadowsocks-libev), with HAProxy as a plain TCP relay and with tinyproxy "
            "and Squid as HTTP proxies, all driven by the same load generator (`ferry bench`) on "
            "one machine over loopback: TCP through SOCKS5, UDP ASSOCIATE, the cost of SOCKS5 "
            "authentication, and the HTTP proxy path. Written by `bench/compare.sh` and "
            "`bench/report.py`; do not edit by hand, run it again."
        )
        L.append("")
        if p.get("quick"):
            L.append(
                "> **Quick run** (`--quick`: one round, short windows). It shows that the harness "
                "works; its figures are noisy. Run `bench/compare.sh` without `--quick` for figures to quote."
            )
            L.append("")
        L.append("## Summary")
        L.append("")
        L.append(
            "Headline figure of each scenario, median over rounds; in brackets the ratio to ferry "
            "(above 1: more than ferry; for ferry's HTTP rows, the ratio to its own SOCKS5 path; for "
            "the authentication rows, the ratio to the same ferry without authentication). Higher "
            "is better everywhere. n/a: the target does not do this (a TCP relay, no UDP, SOCKS5 "
            "only, HTTP only); —: it failed or did not run (see its section)."
        )
        L.append("")
        L.append(self.summary())
        L.append("")
        svg_note = self.chart(svg_path) if svg_path else "no chart requested."
        if svg_note is None:
            rel = os.path.relpath(svg_path, os.path.dirname(os.path.abspath(out_path)) or ".")
            L.append(f"![Headline figures per scenario and target]({rel})")
        else:
            L.append(f"_Chart skipped: {svg_note}_")
        L.append("")

        L.append("## Machine and run")
        L.append("")
        v = m.get("versions", {})
        load_end = self.done.get("loadavg_end")
        rows = [
            ["date", m.get("date", "?")],
            ["command", f"`{m.get('cmdline', '?')}`"],
            ["groups", ", ".join(p.get("groups") or []) or "?"],
            ["CPU", f"{m.get('nproc', '?')} × {m.get('cpu_model', '?')}"],
            ["memory", f"{m.get('mem_gib', '?')} GiB"],
            ["kernel", m.get("kernel", "?")],
            ["OS", f"{m.get('os', '?')} (debian_version {m.get('debian_version', '?')})"],
            ["ferry", f"{m.get('ferry_version', '?')}, commit {m.get('ferry_commit', '?')}"],
        ]
        for t in ("dante", "microsocks", "ss-libev", "haproxy", "tinyproxy", "squid", "squid-https",
                  "stunnel", "nghttpx", "ssh-d", "ssh-client", "gnuplot"):
            rows.append([PACKAGES[t], v.get(t) or "not installed"])
        la = " ".join(m.get("loadavg_start", []))
        rows.append(["load average at start", la + (f"; at end {' '.join(load_end)}" if load_end else "")])
        if m.get("cpu_busy_start_pct") is not None:
            rows.append(["CPU busy before the run", f"{m['cpu_busy_start_pct']} % of all cores over 1 s "
                                                    "(other work on this machine)"])
        ow = self.other_work()
        if ow:
            rows.append(["other work during the runs", ow])
        if self.done:
            rows.append(["duration", f"{self.done.get('runs', '?')} bench runs in "
                                     f"{self.done.get('seconds', 0) / 60:.1f} min"])
        L.append(md_table(["", ""], rows))
        L.append("")
        self.method(L)
        L.append("## Targets")
        L.append("")
        rows = []
        for t in self.targets:
            pe = self.peers.get(t, {})
            st = pe.get("status", "not run")
            for ev in pe.get("events", []):
                st += "; " + ev
            rows.append([LABELS[t], pe.get("how", ""), st])
        L.append(md_table(["target", "how it runs here", "status"], rows))
        L.append("")
        L.append(
            "Every proxy listens on 127.0.0.1 only, on a free port picked at run time, started by "
            "the harness as its own child (no system service is used) and stopped at the end."
        )
        L.append("")

        self.section_socks(L)
        self.section_udp(L)
        self.section_udp_tunnel(L)
        self.section_auth(L)
        self.section_http(L)
        self.section_hop(L)
        self.section_https(L)
        self.section_stall(L)
        self.section_tunnel(L)
        report_wan.WanSection(self, V, fmt, ratio, md_table, LABELS, SHORT, COLORS).section(L, out_path, svg_path)
        self.section_edge(L)
        self.section_wan(L)

        L.append("## Reproduce")
        L.append("")
        L.append("```sh")
        L.append("bench/compare.sh --build-head    # 3 interleaved rounds of every group, committed HEAD: 22-27 min here")
        L.append("bench/compare.sh --quick         # 1 round, short windows, no --settle waits: about 3 min, a check only")
        L.append("bench/compare.sh --only udp,auth,http            # groups: socks (= throughput,handshakes,requests,connections), udp, udp-tunnel, auth, http, hop, https, stall, tunnel, edge")
        L.append("bench/compare.sh --only udp-tunnel --build-head  # UDP through the tunnel, ferry's relay, ss-libev: 3 rounds, about 7 min")
        L.append("bench/compare.sh --only tunnel --wan delay=25ms,rate=1gbit,queue=50ms --wan delay=25ms,loss=1% --wan delay=25ms,rate=100mbit    # tunnels across emulated paths (root): about 13 min")
        L.append("bench/compare.sh --only edge    # edges: ferry, HAProxy req.ssl_sni + Lua, nginx ssl_preread (make deps-bench)")
        L.append("bench/compare.sh --only handshakes --targets ferry,dante --rounds 5")
        L.append("bench/compare.sh --only hop --build-head    # the cost of a hop: 3 interleaved rounds, about 5 min")
        L.append("make bench-compare BENCH_ARGS=--quick")
        L.append("bench/compare.sh --targets ferry --dry-run   # what it would install, run and write")
        L.append("```")
        L.append("")
        L.append(
            "Root on Debian 12; the missing peers of the selected targets are installed with "
            "apt-get (no others). The report is written to `build/bench/benchmarks.md` unless "
            "`--out` names another file (`--out docs/benchmarks.md` for this one). `--keep` keeps the "
            "temporary directory with the generated configurations and every peer's log. "
            "The raw results (one JSON line per run) are in "
            f"`{os.path.basename(out_path)[:-3] if out_path.endswith('.md') else out_path}.jsonl`."
        )
        L.append("")
        L.append("### Single measurements by hand")
        L.append("")
        L.append("```sh")
        L.append("ferry bench handshakes --rate 2000/s          # open loop: latency from each setup's scheduled time")
        L.append('ferry bench requests --rate 500 --requests 5000')
        L.append('ferry bench udp --rate 20000 --connections 16  # datagrams on a timetable: RTT p50..p99.9, max, loss')
        L.append('ferry bench throughput --direction up         # one way: the client sends, counted at the sink')
        L.append('ferry bench throughput --direction down       # one way: a source sends, counted at the client')
        L.append('# a proxy on another host: the sink where that proxy can reach it, the bench here')
        L.append('ferry bench sink --listen 10.0.0.2:9000                               # on host B')
        L.append('ferry bench throughput --proxy 10.0.0.1:1080 --target 10.0.0.2:9000   # on host A')
        L.append("```")
        L.append("")
        L.append(
            'Closed loop (the default) sends the next request when the one before is answered, so a pro'
            'xy that stalls also slows the sending and hides its own queue (coordinated omission). `--r'
            'ate N/s` sends on a fixed timetable instead and times each setup, request or datagram from'
            " when it was due (wrk2's correction); `--concurrency` caps what is in flight (1000 by defa"
            'ult then), and `backlog` counts what was due and still waiting when the window closed. Lat'
            'ency figures are p50, p90, p95, p99, p99.9 and max from a log-bucket histogram (each withi'
            'n 0.8 %, max exact), closed loop or open. `--direction up|down` runs one-way streams, coun'
            'ted where the bytes arrive: up, the sink checks every byte and reports the total it receiv'
            'ed; down, the client checks what the source sends. `ferry bench sink` serves every target '
            "on one port, chosen by the client's first bytes (`FBD1` + an 8-byte seed: the sink; `FBS1`"
            ' + seed: the source; `GET `: the HTTP target; anything else: an echo), with the UDP echo o'
            'n the same port number; `--target ADDR:PORT` aims the bench at it, and is the only way to '
            'aim load off this host: a `--proxy` or `--relay` that is not loopback is refused without i'
            't. The JSON line carries the time, the CPU model, the core count and the kernel.'
        )
        L.append("")
        with open(out_path, "w") as f:
            f.write("\n".join(L))

    def other_work(self):
        """One line on the CPU that other processes took during the bench runs."""
        vals, names, waits = [], {}, []
        for c in self.cells.values():
            for r in c.runs:
                o = r.get("compare", {}).get("other")
                if not o or "other_cores" not in o:
                    continue
                vals.append(o["other_cores"])
                if (o.get("settle_s") or 0) > 0.5:
                    waits.append(o["settle_s"])
                for n, cs in o.get("top", []):
                    names[n] = names.get(n, 0) + cs
        if not vals:
            return None
        n_busy = sum(1 for x in vals if x >= OTHER_NOTE_CORES)
        top = sorted(names.items(), key=lambda kv: -kv[1])[:4]
        settle = self.params.get("settle_s") or 0
        return (f"median {fmt(statistics.median(vals))} cores per run, max {fmt(max(vals))}; "
                f"≥ {OTHER_NOTE_CORES:g} cores in {n_busy} of {len(vals)} runs (noted in their rows)"
                + ("; mostly " + ", ".join(f"`{n}` ({fmt(cs)} CPU-s)" for n, cs in top) if top else "")
                + (f". Before each run the harness waited up to {settle:g} s for a quiet machine "
                   f"(`--settle`): {len(waits)} runs waited, {fmt(sum(waits))} s in all"
                   if settle else ""))

    def request_counts(self):
        ns = []
        for v in ("requests", "http-requests-socks", "http-requests-connect", "http-requests-absolute"):
            if self.has(v):
                n = self.bparams(v).get("requests")
                if n and n not in ns:
                    ns.append(n)
        return ns or [1000]

    def method(self, L):
        m, p = self.meta, self.params
        L.append("## Method")
        L.append("")
        rounds = p.get("rounds", "?")
        L.append(
            f"- **Interleaved rounds.** {rounds} round{'s' if rounds != 1 else ''}; in each, every "
            "scenario runs once against every target it applies to (`ferry bench SCENARIO --runs 1 "
            "--json`), the targets in an order rotated by one each round, so slow drifts of the "
            "machine spread over all targets. Tables give the median over rounds and, with more "
            "than one round, the range (min–max) of the headline figure."
        )
        L.append(
            f"- **One {m.get('nproc', '?')}-core machine, loopback only.** The load generator, the "
            "echo, HTTP and UDP targets (inside `ferry bench`) and the proxy share the same CPUs, so "
            "a proxy that needs less CPU leaves more to the client and the targets. Absolute figures "
            "are far below what a dedicated server does; the **ratios** between targets are the "
            "point. The machine is shared with other work, which adds noise: each bench run is "
            "wrapped in `bench/treemon.py run`, which counts the CPU that processes outside the "
            "harness took during the run: all CPU time the machine spent (/proc/stat) less that "
            "of the harness's own process tree (proxies, bench, reaped children included) and of "
            "kernel threads. Runs where that reached "
            f"{OTHER_NOTE_CORES:g} cores or more are noted in their rows (\"other work on the "
            "machine\"); the medians over rounds dampen them, and the CPU-per-work figures are far "
            "less affected than the rates."
        )
        L.append(
            "- **direct** is the bench talking to its own targets with no proxy: the ceiling of "
            "this machine. **HAProxy** is a plain TCP relay to the echo port (no SOCKS handshake), "
            "so its figures show what relaying alone costs. It takes part in throughput and "
            "handshakes only: it forwards to one fixed port, the echo target, so it cannot serve "
            "the requests scenario (HTTP target), and held connections are about what a SOCKS "
            "proxy keeps per session. **tinyproxy** and **Squid** speak HTTP only and take part "
            "in the HTTP proxy group only; **microsocks** has no UDP ASSOCIATE."
        )
        L.append(
            "- **Every byte is checked.** The bench compares all data read back with what it sent "
            "(TCP streams, HTTP bodies, UDP datagrams); corruption, broken streams, lost datagrams "
            "and failed setups are listed per row."
        )
        L.append(
            "- **Proxy CPU** is the bench's own figure, per unit of work done in the measurement "
            "window. `ferry bench --proxy-pid` (or its own ferry child) samples the proxy's whole "
            "process tree from `/proc` at the start and the end of the window: for each process "
            "given and every live descendant, utime + stime (all its threads, also those that "
            "have exited: microsocks' thread per connection, tinyproxy's thread per client) plus "
            "cutime + cstime (children it has reaped: Dante's negotiate/request/io processes). "
            "Memory likewise covers the whole tree (below). For requests the window is the "
            "measured requests only, after the warm-up ones; the kernel counts CPU in 10 ms ticks "
            "and that phase lasts a second or less, so a requests CPU figure is good to ±10 ms "
            "over the phase: "
            + ", ".join(f"±{10.0 / n:.2g} s per 1000 with {n:,} requests" for n in self.request_counts())
            + ". The UDP and handshake windows are long enough for ticks not to matter."
        )
        if p.get("treemon"):
            chk = self.cpu_check()
            mchk = self.mem_check()
            L.append(
                "  With `--treemon` the harness also watched each tree from outside over the whole "
                "bench run (`bench/treemon.py`); beside the bench's figures: "
                + ("; ".join(chk + mchk) if chk or mchk else "no overlap in these results") + "."
            )
        L.append(
            "- **Memory** per held connection is the growth of the proxy's memory over the hold "
            "(the proportional set size, Pss, summed over its whole process tree, so Dante's "
            "forked children count and pages they share count once; RSS where the kernel gives "
            "no Pss), divided by the connections held, measured on a freshly started proxy: each "
            "proxy is restarted (on a new port) before each connections run, as memory kept from "
            "earlier runs (allocator caches, buffer pools) would hide the cost."
        )
        if m.get("wan_paths"):
            L.append(WAN_METHOD)
        if p.get("connections_wanted") and p.get("connections") != p.get("connections_wanted"):
            L.append(
                f"- **Held connections lowered** from {p['connections_wanted']} to {p['connections']}: "
                f"the open-files limit here is {p.get('nofile')} and cannot be raised, and each "
                "held connection costs the bench two descriptors (client and echo) and a proxy two."
            )
        L.append("")


def cmd_render(argv):
    ap = argparse.ArgumentParser(prog="report.py render")
    ap.add_argument("results")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                  "build", "bench", "benchmarks.md"))
    ap.add_argument("--svg", default=None)
    a = ap.parse_args(argv)
    meta, peers, done, cells, argon2 = load(a.results)
    if not meta:
        sys.exit("report.py: no meta line in " + a.results)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    Report(meta, peers, done, cells, argon2).render(a.out, a.svg)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] in ("-h", "--help", "help"):
        sys.stdout.write(__doc__)
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "meta":
        cmd_meta(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "render":
        cmd_render(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "wanrtt":
        report_wan.cmd_wanrtt(sys.argv[2:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
