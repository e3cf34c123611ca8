#!/usr/bin/python3
"""report.py: docs/benchmarks.md from the JSON lines of bench/compare.sh.

  report.py meta [--cmdline ...]            print the run's header line (machine,
                                            date, parameters) as JSON
  report.py render RESULTS.jsonl --out F.md [--svg F.svg]

RESULTS holds one JSON object per line: {"meta": ...} first, {"peer": ...}
per target, then one `ferry bench --json` line per run with a "compare"
member added by compare.sh ({"round", "variant", "target", "cpu_source",
"tree": process-tree CPU/memory over the whole run, "error"}), and
{"done": ...} last. For each (variant, target, figure) the report takes the
median over rounds. Python standard library only; the chart needs gnuplot.
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

TARGETS = ["direct", "ferry", "dante", "microsocks", "ss-libev", "haproxy"]
LABELS = {
    "direct": "direct (no proxy)",
    "ferry": "ferry",
    "dante": "Dante",
    "microsocks": "microsocks",
    "ss-libev": "shadowsocks-libev",
    "haproxy": "HAProxy (TCP relay)",
}
PACKAGES = {
    "dante": "dante-server",
    "microsocks": "microsocks",
    "ss-libev": "shadowsocks-libev",
    "haproxy": "haproxy",
    "gnuplot": "gnuplot-nox",
}
SUMMARY_TITLES = {
    "throughput-1": "throughput, 1 stream",
    "throughput-8": "throughput, 8 streams",
    "handshakes": "handshakes",
    "requests": "HTTP requests",
    "connections": "held connections: setup rate",
}
VARIANT_TITLES = {
    "throughput-1": "Throughput, 1 stream",
    "throughput-8": "Throughput, 8 streams",
    "handshakes": "Handshakes (connection setups)",
    "requests": "Small HTTP requests, one connection each",
    "connections": "Many held connections",
}
HEADLINE = {  # variant -> (metric, unit shown, higher is better)
    "throughput-1": ("total", "MiB/s"),
    "throughput-8": ("total", "MiB/s"),
    "handshakes": ("setups", "setups/s"),
    "requests": ("requests", "requests/s"),
    "connections": ("setup_rate", "setups/s"),
}
SHORT = {
    "direct": "direct",
    "ferry": "ferry",
    "dante": "Dante",
    "microsocks": "microsocks",
    "ss-libev": "ss-libev",
    "haproxy": "HAProxy\\n(relay)",
}
COLORS = {
    "direct": "#888888",
    "ferry": "#d9480f",
    "dante": "#1c7ed6",
    "microsocks": "#37b24d",
    "ss-libev": "#ae3ec9",
    "haproxy": "#f59f00",
}


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


def cmd_meta(argv):
    ap = argparse.ArgumentParser(prog="report.py meta")
    ap.add_argument("--cmdline", default="")
    for name in ("rounds", "connections", "connections-wanted", "nofile", "quick", "echo-port"):
        ap.add_argument("--" + name, default="")
    ap.add_argument("--duration", default="")
    ap.add_argument("--warmup", default="")
    ap.add_argument("--ferry-version", default="")
    ap.add_argument("--ferry-commit", default="")
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
            "echo_port": a.echo_port,
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
    """Streams were open but one direction moved nothing in the window."""
    return (c.m("streams") or 0) > 0 and ((c.m("up") or 0) == 0 or (c.m("down") or 0) == 0)


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

    # Process-tree figures over the whole run (see bench/treemon.py).
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


def work_krequests(r):
    p = r.get("params", {})
    return (p.get("requests", 0) + p.get("warm_requests", 0)) / 1000.0


# ---- render ----------------------------------------------------------------


def load(path):
    meta, peers, done, cells = {}, {}, {}, {}
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
            elif "done" in rec:
                done = rec["done"]
            elif "compare" in rec:
                c = rec["compare"]
                cell = cells.setdefault((c["variant"], c["target"]), Cell())
                if c.get("error"):
                    err = c["error"]
                    if c.get("stderr"):
                        err += ": " + c["stderr"][-1]
                    cell.errors.append((c.get("round"), err))
                else:
                    cell.runs.append(rec)
    return meta, peers, done, cells


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |")
    return "\n".join(out)


class Report:
    def __init__(self, meta, peers, done, cells):
        self.meta, self.peers, self.done, self.cells = meta, peers, done, cells
        self.params = meta.get("params", {})
        self.variants = [v[0] for v in self.params.get("variants", [])] or sorted(
            {v for v, _ in cells}, key=lambda v: list(HEADLINE).index(v) if v in HEADLINE else 99
        )
        self.targets = [t for t in TARGETS if t in peers] or TARGETS
        self.footnotes = []

    def cell(self, v, t):
        return self.cells.get((v, t))

    def headline(self, v, t):
        c = self.cell(v, t)
        return c.m(HEADLINE[v][0]) if c and c.runs else None

    def status(self, v, t):
        """None if there are figures; else why there are none."""
        p = self.peers.get(t, {})
        st = p.get("status", "not run")
        if st != "ok":
            return st
        if p.get("mode") == "relay" and v in ("requests", "connections"):
            return "n/a: a plain TCP relay takes part in throughput and handshakes only"
        c = self.cell(v, t)
        if not c or (not c.runs and not c.errors):
            return "not run" + (" (the proxy died earlier)" if p.get("events") else "")
        if not c.runs:
            return "failed: " + c.errors[0][1]
        return None

    def headline_cell(self, v, t, unit=""):
        c = self.cell(v, t)
        name = HEADLINE[v][0]
        s = fmt(c.m(name), unit)
        sp = c.span(name)
        if sp:
            s += f" ({fmt(sp[0])}–{fmt(sp[1])})"
        return s

    def cpu(self, v, t):
        """(text, is_estimate) CPU per unit of work, or ('–', False)."""
        c = self.cell(v, t)
        src = self.peers.get(t, {}).get("cpu_source", "none")
        if src == "none" or not c or not c.runs:
            return "–"
        if v.startswith("throughput"):
            if stalled(c):
                return "– (stalled)"
            bench, work = "proxy_cpu_per_gib", work_gib
        elif v == "handshakes":
            bench, work = "proxy_cpu_per_1k", work_ksetups
        elif v == "requests":
            bench, work = None, work_krequests  # the bench's own figure counts warm-ups
        else:
            return "–"
        if src == "bench" and bench and c.m(bench) is not None:
            return fmt(c.m(bench))
        est = c.tree_cpu_per(work)
        return "≈ " + fmt(est) if est is not None else "–"

    def mem(self, t):
        c = self.cell("connections", t)
        if not c or not c.runs:
            return "–"
        pids = len([p for p in self.peers.get(t, {}).get("pids", "").split(",") if p])
        if c.tree_procs() > pids:  # processes the bench did not see (forked children)
            est = c.tree_mem_per_conn()
            return "≈ " + fbytes(est) if est is not None else "–"
        return fbytes(c.m("proxy_rss_per_conn"))

    def issues(self, v, t):
        c = self.cell(v, t)
        out = []
        if v.startswith("throughput"):
            if stalled(c):
                n = c.m("streams")
                out.append(f"**stalled**: {fint(n)} stream{'s' if n != 1 else ''} open, "
                           f"{'no byte' if not c.m('total') else 'nothing echoed back'} in the window")
            if c.m("corrupt_chunks"):
                out.append(f"**{fint(c.m('corrupt_chunks'))} corrupt chunks**")
            if c.m("broken_streams"):
                out.append(f"{fint(c.m('broken_streams'))} streams broke")
        elif v == "handshakes":
            fs, fk = c.m("failed_socket") or 0, c.m("failed_socks") or 0
            if fs or fk:
                out.append(f"failed: {fint(fs)} socket, {fint(fk)} SOCKS")
        elif v == "requests":
            if c.m("failed_requests") or c.m("failed_downloads"):
                out.append(f"failed: {fint(c.m('failed_requests'))} requests, {fint(c.m('failed_downloads'))} downloads")
            if c.m("corrupt_bodies"):
                out.append(f"**{fint(c.m('corrupt_bodies'))} corrupt bodies**")
        elif v == "connections":
            if c.m("failed_setups"):
                out.append(f"{fint(c.m('failed_setups'))} setups failed")
            held, ok = c.m("connections"), c.m("healthy")
            if held is not None and ok is not None and ok < held:
                out.append(f"{fint(held - ok)} held connections did not echo at the end")
        died = [r["compare"].get("round") for r in c.runs if r["compare"].get("note")]
        if died:
            out.append(f"**the proxy died during the run** (round {', '.join(str(d) for d in died)})")
        if c.errors:
            out.append(f"{len(c.errors)} of {len(c.errors) + len(c.runs)} runs failed ({c.errors[0][1]})")
        return "; ".join(out) or "ok"

    def table(self, v):
        unit = HEADLINE[v][1]
        d, f = self.headline(v, "direct"), self.headline(v, "ferry")
        rows = []
        if v.startswith("throughput"):
            header = [
                "target", f"total {unit}", "up / down", "× direct", "× ferry",
                "proxy CPU s/GiB", "integrity and failures",
            ]
        elif v == "handshakes":
            header = [
                "target", unit, "latency p50 / p95 / p99 ms", "× direct", "× ferry",
                "proxy CPU s per 1000", "failures",
            ]
        elif v == "requests":
            header = [
                "target", unit, "latency mean / p50 / p95 ms", "download MiB/s",
                "× direct", "× ferry", "proxy CPU s per 1000", "failures",
            ]
        else:
            header = [
                "target", f"setup rate {unit}", "held / healthy", "× direct", "× ferry",
                "proxy memory per connection", "failures",
            ]
        for t in self.targets:
            label = LABELS[t]
            why = self.status(v, t)
            if why:
                row = [label, why] + [""] * (len(header) - 2)
                rows.append(row)
                continue
            c = self.cell(v, t)
            h = self.headline(v, t)
            hc = self.headline_cell(v, t)
            rd = ratio(h, d) if t != "direct" else "1.00×"
            rf = ratio(h, f) if t != "ferry" else "1.00×"
            if v.startswith("throughput"):
                rows.append([label, hc, f"{fmt(c.m('up'))} / {fmt(c.m('down'))}", rd, rf,
                             self.cpu(v, t), self.issues(v, t)])
            elif v == "handshakes":
                rows.append([label, hc,
                             f"{fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))} / {fmt(c.m('latency_p99'))}",
                             rd, rf, self.cpu(v, t), self.issues(v, t)])
            elif v == "requests":
                rows.append([label, hc,
                             f"{fmt(c.m('latency_mean'))} / {fmt(c.m('latency_p50'))} / {fmt(c.m('latency_p95'))}",
                             fmt(c.m("download")), rd, rf, self.cpu(v, t), self.issues(v, t)])
            else:
                rows.append([label, hc, f"{fint(c.m('connections'))} / {fint(c.m('healthy'))}", rd, rf,
                             self.mem(t), self.issues(v, t)])
        return md_table(header, rows)

    def params_line(self, v):
        p = self.params
        for c in (self.cell(v, t) for t in self.targets):
            if c and c.runs:
                bp = c.runs[0].get("params", {})
                break
        else:
            bp = {}
        opts = {vv[0]: vv[2] if len(vv) > 2 else "" for vv in p.get("variants", [])}.get(v, "")
        scen = {vv[0]: vv[1] for vv in p.get("variants", [])}.get(v, v)
        cmd = f"`ferry bench {scen} --runs 1 --duration {p.get('duration_s', '?'):g} --warmup {p.get('warmup_s', '?'):g}{' ' + opts if opts else ''}`"
        extra = {
            "throughput-1": "one stream pumps 64 KiB chunks to the echo target and reads them back; every byte is checked. Headline: up + down.",
            "throughput-8": "eight streams as above.",
            "handshakes": f"{bp.get('concurrency', 32)} setups in flight, each: TCP connect, SOCKS5 greeting and CONNECT (strictly one after the other, as real clients do), one byte echoed, abortive close. Latency runs from connect() to the echoed byte.",
            "requests": f"{bp.get('requests', 1000)} small HTTP requests (after {bp.get('warm_requests', 100)} warm-up ones), each on a new proxied connection, {bp.get('concurrency', 8)} in flight; then {bp.get('downloads', 8)} concurrent downloads of {bp.get('download_size', 1048576) // 1048576} MiB.",
            "connections": f"open {bp.get('connections', p.get('connections', '?'))} connections ({bp.get('concurrency', 256)} setups in flight), hold them {bp.get('duration_s', p.get('duration_s', '?')):g} s, then check each still echoes. Memory is the proxy's resident set after the hold, less before, per held connection.",
        }[v]
        return f"{cmd}: {extra}"

    def summary(self):
        header = ["scenario"] + [LABELS[t] for t in self.targets]
        rows = []
        for v in self.variants:
            f = self.headline(v, "ferry")
            row = [f"{SUMMARY_TITLES[v]} ({HEADLINE[v][1]})"]
            for t in self.targets:
                why = self.status(v, t)
                if why:
                    row.append("n/a" if why.startswith("n/a") else "—")
                    continue
                h = self.headline(v, t)
                s = fmt(h)
                if t != "ferry" and f:
                    s += f" ({h / f:.2f}×)"
                if v.startswith("throughput") and stalled(self.cell(v, t)):
                    s += " stalled"
                row.append(s)
            rows.append(row)
        return md_table(header, rows)

    def cpu_check(self):
        """How the whole-run process-tree estimate compares with the bench's
        exact window figure, where both exist (ferry, ss-libev, HAProxy)."""
        out = []
        for t in ("ferry", "ss-libev", "haproxy"):
            for v, bench, work in (("throughput-8", "proxy_cpu_per_gib", work_gib),
                                   ("handshakes", "proxy_cpu_per_1k", work_ksetups)):
                c = self.cell(v, t)
                if not c or not c.runs:
                    continue
                b, e = c.m(bench), c.tree_cpu_per(work)
                if b and e:
                    out.append(f"{LABELS[t]} {v}: {fmt(e)} estimated vs {fmt(b)} measured ({e / b:.2f}×)")
        return out

    def mem_check(self):
        c = self.cell("connections", "ferry")
        if not c or not c.runs:
            return None
        b, e = c.m("proxy_rss_per_conn"), c.tree_mem_per_conn()
        if b and e:
            return f"for ferry, {fbytes(e)} by Pss vs {fbytes(b)} by the bench"
        return None

    def chart(self, svg_path):
        gp = shutil.which("gnuplot")
        if not gp:
            return "gnuplot is not installed (`apt-get install gnuplot-nox`): no chart."
        panels = []
        for v in self.variants:
            pts = [(t, self.headline(v, t)) for t in self.targets if not self.status(v, t)]
            pts = [(t, h) for t, h in pts if h is not None]
            lab = {t: (fmt(h) + (" stalled" if v.startswith("throughput") and stalled(self.cell(v, t)) else ""))
                   for t, h in pts}
            if pts:
                panels.append((v, pts, lab))
        if not panels:
            return "no figures to chart."
        cols = 2 if len(panels) > 1 else 1
        rows = (len(panels) + cols - 1) // cols
        tmp = tempfile.mkdtemp(prefix="ferry-report-")
        try:
            script = [
                f"set terminal svg size {480 * cols},{290 * rows} dynamic font 'sans,11' background '#ffffff'",
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
            for i, (v, pts, lab) in enumerate(panels):
                dat = os.path.join(tmp, f"{i}.dat")
                top = max(h for _, h in pts) or 1
                with open(dat, "w") as f:
                    for j, (t, h) in enumerate(pts):
                        name = SHORT[t]
                        color = int(COLORS[t][1:], 16)
                        f.write(f'{j} "{name}" {h:.6g} {color} "{lab[t]}"\n')
                script += [
                    f"set title \"{SUMMARY_TITLES[v][0].upper() + SUMMARY_TITLES[v][1:]} ({HEADLINE[v][1]})\" font ',12'",
                    f"set yrange [0:{top * 1.18:.6g}]",
                    f"plot '{dat}' using 1:3:4:xtic(2) with boxes lc rgb variable, "
                    f"'' using 1:3:5 with labels offset 0,0.7 font ',9'",
                ]
            script.append("unset multiplot")
            r = subprocess.run([gp], input="\n".join(script) + "\n", capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 0 or not os.path.exists(svg_path):
                return "gnuplot failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return None

    def render(self, out_path, svg_path):
        m, p = self.meta, self.params
        L = []
        L.append("# Benchmarks: ferry beside other proxies")
        L.append("")
        L.append(
            "ferry measured side by side with SOCKS5 proxies packaged by Debian (Dante, "
            "microsocks, shadowsocks-libev) and with HAProxy as a plain TCP relay, all driven by "
            "the same load generator (`ferry bench`) on one machine over loopback. Written by "
            "`bench/compare.sh` and `bench/report.py`; do not edit by hand, run it again."
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
            "(above 1: more than ferry). Higher is better everywhere."
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
            ["CPU", f"{m.get('nproc', '?')} × {m.get('cpu_model', '?')}"],
            ["memory", f"{m.get('mem_gib', '?')} GiB"],
            ["kernel", m.get("kernel", "?")],
            ["OS", f"{m.get('os', '?')} (debian_version {m.get('debian_version', '?')})"],
            ["ferry", f"{m.get('ferry_version', '?')}, commit {m.get('ferry_commit', '?')}"],
        ]
        for t in ("dante", "microsocks", "ss-libev", "haproxy", "gnuplot"):
            rows.append([PACKAGES[t], v.get(t) or "not installed"])
        la = " ".join(m.get("loadavg_start", []))
        rows.append(["load average at start", la + (f"; at end {' '.join(load_end)}" if load_end else "")])
        if self.done:
            rows.append(["duration", f"{self.done.get('runs', '?')} bench runs in {self.done.get('seconds', 0) / 60:.1f} min"])
        L.append(md_table(["", ""], rows))
        L.append("")

        L.append("## Method")
        L.append("")
        rounds = p.get("rounds", "?")
        L.append(
            f"- **Interleaved rounds.** {rounds} round{'s' if rounds != 1 else ''}; in each, every "
            "scenario runs once against every target (`ferry bench SCENARIO --runs 1 --json`), the "
            "targets in an order rotated by one each round, so slow drifts of the machine spread "
            "over all targets. Tables give the median over rounds and, with more than one round, "
            "the range (min–max) of the headline figure."
        )
        L.append(
            f"- **One {m.get('nproc', '?')}-core machine, loopback only.** The load generator, the "
            "echo and HTTP targets (inside `ferry bench`) and the proxy share the same CPUs, so a "
            "proxy that needs less CPU leaves more to the client and the targets. Absolute figures "
            "are far below what a dedicated server does; the **ratios** between targets are the "
            "point. The machine is shared with other work (see the load average), which adds noise."
        )
        L.append(
            "- **direct** is the bench talking to its own targets with no proxy: the ceiling of "
            "this machine. **HAProxy** is a plain TCP relay to the echo port (no SOCKS handshake), "
            "so its figures show what relaying alone costs. It takes part in throughput and "
            "handshakes only: it forwards to one fixed port, the echo target, so it cannot serve "
            "the requests scenario (HTTP target), and held connections are about what a SOCKS "
            "proxy keeps per session."
        )
        L.append(
            "- **Every byte is checked.** The bench compares all data read back with what it sent; "
            "corruption, broken streams and failed setups are listed per row."
        )
        L.append(
            "- **Proxy CPU.** Plain figures are the bench's own: CPU of the proxy's processes "
            "(`--proxy-pid`, all their threads) in the measurement window, per unit of work. "
            "Figures marked ≈ are estimates from the whole process tree over the whole run "
            "(`bench/treemon.py`: utime+stime of every process below the proxy, including exited "
            "children, over warm-up + window, divided by the rate × that time). They are used for "
            "Dante (it forks negotiate/request/io children the bench does not see), microsocks (one "
            "thread per connection; the bench misses threads that have exited) and for every "
            "requests row (the bench's own figure there also counts the warm-up requests)."
        )
        chk = self.cpu_check()
        if chk:
            L.append("  Cross-check where both exist: " + "; ".join(chk) + ".")
        L.append(
            "- **Memory** per held connection is the bench's (resident set after the hold, less "
            "before, over the held connections), measured on a freshly started proxy: each proxy "
            "is restarted (on a new port) before each connections run, as memory kept from "
            "earlier runs (allocator caches, buffer pools) would hide the cost, except for a proxy made of processes the bench "
            "was not given (Dante's children): ≈ the growth of the tree's proportional set size "
            "(Pss, shared pages counted once), peak during the run"
            + (f" (cross-check: {self.mem_check()})." if self.mem_check() else ".")
        )
        if p.get("connections_wanted") and p.get("connections") != p.get("connections_wanted"):
            L.append(
                f"- **Held connections lowered** from {p['connections_wanted']} to {p['connections']}: "
                f"the open-files limit here is {p.get('nofile')} and cannot be raised, and each "
                "held connection costs the bench two descriptors (client and echo) and a proxy two."
            )
        L.append("")
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

        for v in self.variants:
            L.append(f"## {VARIANT_TITLES[v]}")
            L.append("")
            L.append(self.params_line(v))
            L.append("")
            L.append(self.table(v))
            L.append("")
            notes = []
            for t in self.targets:
                c = self.cell(v, t)
                if c and c.runs:
                    for n in c.notes():
                        notes.append(f"- {LABELS[t]}: {n}")
            if notes:
                L.append("Notes from the bench:")
                L.append("")
                L.extend(notes[:20])
                L.append("")
            extra = self.explain(v)
            if extra:
                L.extend(extra)
                L.append("")

        L.append("## Reproduce")
        L.append("")
        L.append("```sh")
        L.append("bench/compare.sh                 # 3 interleaved rounds of everything: about 9 min here")
        L.append("bench/compare.sh --quick         # 1 round, short windows: about 1-2 min, a check only")
        L.append("bench/compare.sh --only handshakes --targets ferry,dante --rounds 5")
        L.append("make bench-compare BENCH_ARGS=--quick")
        L.append("```")
        L.append("")
        L.append(
            "Root on Debian 12; missing peers are installed with apt-get. `--keep` keeps the "
            "temporary directory with the generated configurations and every peer's log. "
            "The raw results (one JSON line per run) are in "
            f"`{os.path.basename(out_path)[:-3] if out_path.endswith('.md') else out_path}.jsonl`."
        )
        L.append("")
        with open(out_path, "w") as f:
            f.write("\n".join(L))

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
            if c and c.runs and (c.m("healthy") or 0) < (c.m("connections") or 0):
                out.append(
                    "shadowsocks-libev: `ss-local` answers the SOCKS5 CONNECT at once, before "
                    "`ss-server` has reached the target (it has no way to know), so a connection "
                    "counts as set up and held while it may not reach the echo target yet; the "
                    "setup rate is flattered by that. With thousands of connections `ss-server` "
                    "falls behind accepting them (in a check during development its listen queue, "
                    "backlog 1024, stayed full through the hold and only about half of 9000 held "
                    "connections had reached the echo target), and those that still had not when "
                    "the bench checked every connection (10 s allowed) count as not healthy."
                )
        return out


def cmd_render(argv):
    ap = argparse.ArgumentParser(prog="report.py render")
    ap.add_argument("results")
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--svg", default=None)
    a = ap.parse_args(argv)
    meta, peers, done, cells = load(a.results)
    if not meta:
        sys.exit("report.py: no meta line in " + a.results)
    Report(meta, peers, done, cells).render(a.out, a.svg)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "meta":
        cmd_meta(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "render":
        cmd_render(sys.argv[2:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
