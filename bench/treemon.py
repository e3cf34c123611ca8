#!/usr/bin/python3
"""treemon.py: CPU and memory of a whole process tree, for bench/compare.sh.

`ferry bench --proxy-pid` samples the threads of the processes it is given,
in its own measurement window. That is exact for a proxy made of a fixed set
of processes and threads (ferry, ss-local + ss-server, haproxy), and blind to
work done in child processes forked later (dante) or in threads that have
already exited (microsocks starts one thread per connection). This helper
watches the whole tree below the given PIDs over a whole bench invocation:

  treemon.py watch PID[,PID...] [--mem]     run until SIGTERM/SIGINT, then print
                                            one JSON object
  treemon.py annotate --line F --mon F ...  merge a bench JSON line with the
                                            watch result and the run's labels

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


def main():
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
