#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""treemon.py: helpers of bench/compare.sh around each `ferry bench` run.

  treemon.py annotate --line F [--mon F] ...  merge a bench JSON line with the
                                              run's labels (round, variant,
                                              target, errors) and, if given,
                                              the watch result: always used
  treemon.py watch PID[,PID...] [--mem]       run until SIGTERM/SIGINT, then
                                              print one JSON object: only with
                                              compare.sh --treemon
  treemon.py run --exclude-tree PID --out F [--settle S] -- CMD...
                                              wait (up to S s) for a quiet
                                              machine, run CMD (its exit
                                              status is ours) and write to F
                                              how much CPU other work on the
                                              machine took meanwhile: always
                                              used

`ferry bench --proxy-pid` now samples the proxy's whole process tree itself
(threads that exited and forked children included, Pss for memory), in its
measurement window; that is what the report uses. `watch` looks at the same
tree from outside over the whole bench invocation (warm-up included) and is
kept as an independent cross-check of those figures (compare.sh --treemon);
it polls /proc, so it costs some CPU of its own and is off by default.

CPU is utime+stime+cutime+cstime of every live process in the tree (the
children's fields hold the CPU of reaped descendants, so exited ones still
count), from /proc/PID/stat, in clock ticks. Memory (--mem) is the tree's
proportional set size (Pss, so pages shared by forked children count once),
polled every 0.25 s; the baseline is the first sample, the peak the largest.

Python standard library only.
"""
import json
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, cpu ticks incl. reaped children) of one process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()
    # rest[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17
    try:
        ppid = int(rest[1])
        cpu = sum(int(x) for x in rest[11:15])
    except (IndexError, ValueError):
        return None
    return ppid, cpu


def tree(roots):
    """PIDs of the roots and all their live descendants, with CPU ticks."""
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st:
                procs[int(name)] = st
    children = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [p for p in roots if p in procs]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out[pid] = procs[pid][1]
        todo.extend(children.get(pid, []))
    return out


def pss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def watch(roots, mem):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    t0 = time.monotonic()
    first = tree(roots)
    cpu0 = sum(first.values())
    procs_max = len(first)
    pss0 = pss_max = pss_kib(first) if mem else 0
    while not stop:
        time.sleep(0.25 if mem else 0.5)
        if mem and not stop:
            t = tree(roots)
            procs_max = max(procs_max, len(t))
            pss_max = max(pss_max, pss_kib(t))
    last = tree(roots)
    res = {
        "wall_s": round(time.monotonic() - t0, 3),
        "cpu_s": round((sum(last.values()) - cpu0) / TICK, 3),
        "procs_start": len(first),
        "procs_end": len(last),
        "procs_max": max(procs_max, len(last)),
    }
    if mem:
        res["pss_base_kib"] = pss0
        res["pss_max_kib"] = pss_max
    alive = [p for p in roots if p in last]
    if len(alive) < len(roots):
        res["roots_gone"] = [p for p in roots if p not in last]
    print(json.dumps(res))


def annotate(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="treemon.py annotate")
    ap.add_argument("--line", required=True, help="file holding the bench's stdout")
    ap.add_argument("--mon", help="file holding the watch result")
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--cpu-source", default="bench")
    ap.add_argument("--error", default="")
    ap.add_argument("--stderr", help="file holding the bench's stderr")
    ap.add_argument("--note", default="", help="what the harness saw (e.g. the proxy died)")
    ap.add_argument("--other", help="file holding the run's other-work result")
    a = ap.parse_args(argv)
    rec = None
    try:
        with open(a.line) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rec = json.loads(line)
    except (OSError, ValueError) as e:
        a.error = a.error or f"unreadable bench output: {e}"
    if rec is None:
        rec = {"scenario": a.scenario, "metrics": {}, "notes": []}
        if not a.error:
            a.error = "the bench printed no result"
    cmp = {"round": a.round, "variant": a.variant, "target": a.target,
           "cpu_source": a.cpu_source}
    if a.mon:
        try:
            with open(a.mon) as f:
                cmp["tree"] = json.loads(f.read().strip() or "{}")
        except (OSError, ValueError):
            pass
    if a.other:
        try:
            with open(a.other) as f:
                cmp["other"] = json.loads(f.read().strip() or "{}")
        except (OSError, ValueError):
            pass
    if a.note:
        cmp["note"] = a.note
    if a.error:
        cmp["error"] = a.error
        if a.stderr:
            try:
                with open(a.stderr, errors="replace") as f:
                    lines = [ln.strip() for ln in f if ln.strip()]
                if lines:
                    cmp["stderr"] = lines[-3:]
            except OSError:
                pass
    rec["compare"] = cmp
    print(json.dumps(rec, separators=(",", ":")))


def _all_procs():
    """pid -> (ppid, cpu ticks incl. reaped children, comm, own cpu ticks)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read().decode("ascii", "replace")
        except OSError:
            continue
        comm = data[data.find("(") + 1:data.rfind(")")]
        rest = data[data.rfind(")") + 2:].split()
        try:
            out[int(name)] = (int(rest[1]), sum(int(x) for x in rest[11:15]), comm,
                              int(rest[11]) + int(rest[12]))
        except (IndexError, ValueError):
            pass
    return out


def _subtree(procs, root):
    kids = {}
    for pid, v in procs.items():
        kids.setdefault(v[0], []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.add(pid)
        todo.extend(kids.get(pid, []))
    return out


def _busy_ticks():
    """CPU time spent running anything, all CPUs, in ticks (/proc/stat: user,
    nice, system, irq, softirq; this kernel charges softirq ticks to the task
    they interrupt too, see run())."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return v[0] + v[1] + v[2] + v[5] + v[6]


def run(argv):
    """Run a command; meanwhile, account the CPU that other work on this
    shared machine took: all CPU time the machine spent (/proc/stat) less
    that of the harness's own process tree (the proxies, this helper and the
    bench it runs, reaped children included) and of the kernel's threads.
    With --settle S, first wait (up to S seconds) until the machine is
    quiet, i.e. other work below --quiet cores over 0.3 s.

    Accounting is tick-based here (no IRQ time accounting), so a softirq tick
    is in /proc/stat's softirq column and in the stime of the task it
    interrupted: both sides count it once. Where the kernel has
    CONFIG_IRQ_TIME_ACCOUNTING, irq time is charged to no task and would show
    up as other work; the report calls the figure an estimate."""
    import argparse
    import subprocess

    ap = argparse.ArgumentParser(prog="treemon.py run")
    ap.add_argument("--exclude-tree", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--settle", type=float, default=0)
    ap.add_argument("--quiet", type=float, default=0.3)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.exit("treemon.py run: no command")

    def sample():
        procs = _all_procs()
        mine = _subtree(procs, a.exclude_tree)
        kern = _subtree(procs, 2)
        ours = sum(procs[p][1] for p in mine if p in procs)
        kthr = sum(procs[p][1] for p in kern if p in procs)
        others = {p: v for p, v in procs.items() if p not in mine and p not in kern and p != 1}
        return _busy_ticks(), ours, kthr, others

    def other_ticks(x0, x1):
        return max(0, (x1[0] - x0[0]) - (x1[1] - x0[1]) - (x1[2] - x0[2]))

    waited, quiet_cores = 0.0, None
    t_settle = time.monotonic()
    while True:
        q0 = sample()
        time.sleep(0.3)
        q1 = sample()
        quiet_cores = other_ticks(q0, q1) / TICK / 0.3
        waited = time.monotonic() - t_settle
        if quiet_cores < a.quiet or waited >= a.settle:
            break
        time.sleep(0.5)
    x0 = sample()
    t0 = time.monotonic()
    try:
        rc = subprocess.run(cmd).returncode
    except OSError as e:
        sys.stderr.write(f"treemon.py run: {e}\n")
        rc = 127
    wall = time.monotonic() - t0
    x1 = sample()
    other = other_ticks(x0, x1) / TICK
    # Who, by name: own CPU (utime + stime) of processes outside the
    # harness, alive at the end (an indication only).
    by_name = {}
    for pid, (_, _, comm, own) in x1[3].items():
        before = x0[3].get(pid)
        d = own - before[3] if before and before[2] == comm else own
        if d > 0:
            by_name[comm] = by_name.get(comm, 0) + d
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:3]
    res = {
        "wall_s": round(wall, 3),
        "other_cpu_s": round(other, 3),
        "other_cores": round(other / wall, 3) if wall > 0 else 0,
        "top": [[n, round(c / TICK, 2)] for n, c in top],
        "settle_s": round(waited, 2),
        "before_cores": round(quiet_cores, 3),
    }
    try:
        with open(a.out, "w") as f:
            f.write(json.dumps(res) + "\n")
    except OSError:
        pass
    return rc if rc >= 0 else 128 - rc


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2:]))
    if len(sys.argv) >= 3 and sys.argv[1] == "watch":
        roots = [int(p) for p in sys.argv[2].split(",") if p]
        watch(roots, "--mem" in sys.argv[3:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "annotate":
        annotate(sys.argv[2:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
