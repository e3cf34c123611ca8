#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check-layers: every #include "..." under src/ points down the room order.

A room is a folder of src/ (src/relay/conn.c is in relay); a file directly
in src/ is a room of its own named by its stem (src/main.c is main,
src/version.h is version). The order is not written here: it is the
```layers block of docs/architecture.md, which this script reads, so the
document and the check cannot disagree. The block's lines are:

    ROOM ROOM ...            one rank, lowest rank first; a room may include
                             its own files and any room of a lower rank, and
                             rooms of one rank must not know each other
    ROOM only: ROOM ...      the room may include only these rooms (and itself)
    ROOM never: ROOM ...     the room must not include these rooms
    except FILE -> ROOM: why an include that breaks the order on purpose;
                             the reason is required
    # ...                    a comment

An include fails when its room is higher than the includer's, of the same
rank, outside an `only` list, in a `never` list, not in the order at all,
or when the included file cannot be found (quoted includes are looked up
beside the including file, then under src/, as the compiler does with
-Isrc). Each failure is printed as FILE:LINE: ROOM -> ROOM: why. Exit 0
when there is none, 1 when there is any, 2 when the order cannot be read.

This script only reads files: it builds nothing and runs nothing.

usage: tools/check-layers.py [--root DIR] [--doc FILE] [--table]

--table prints what each room may include (a markdown table) instead of
checking; the document shows that table, and tests/e2e/test_layers.py
holds the two together.
"""

import argparse
import os
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
ROOM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class OrderError(Exception):
    pass


class Order:
    """The room order as the ```layers block of the document states it."""

    def __init__(self):
        self.rank = {}  # room -> rank (0 = lowest)
        self.only = {}  # room -> set of rooms it may include
        self.never = {}  # room -> set of rooms it must not include
        self.exceptions = {}  # (file, room) -> reason


def _rooms(words, where):
    for w in words:
        if not ROOM_NAME.match(w):
            raise OrderError(f"{where}: '{w}' is not a room name")
    return words


def parse_order(text, doc):
    """Read the ```layers block of text (the document's contents)."""
    lines = text.splitlines()
    starts = [i for i, l in enumerate(lines) if l.strip() == "```layers"]
    if len(starts) != 1:
        raise OrderError(f"{doc}: expected exactly one ```layers block, found {len(starts)}")
    order = Order()
    rules = []
    i = starts[0] + 1
    while True:
        if i >= len(lines):
            raise OrderError(f"{doc}: the ```layers block is not closed")
        line = lines[i].split("#", 1)[0].strip()
        where = f"{doc}:{i + 1}"
        i += 1
        if lines[i - 1].strip() == "```":
            break
        if not line:
            continue
        m = re.match(r"^except\s+(\S+)\s*->\s*(\S+)\s*:\s*(.*)$", line)
        if m:
            if not m.group(3):
                raise OrderError(f"{where}: an exception needs a reason after the colon")
            order.exceptions[(m.group(1), m.group(2))] = m.group(3)
            continue
        m = re.match(r"^(\S+)\s+(only|never)\s*:\s*(.*)$", line)
        if m:
            rules.append((where, m.group(1), m.group(2), m.group(3).split()))
            continue
        rank = len(set(order.rank.values()))
        for room in _rooms(line.split(), where):
            if room in order.rank:
                raise OrderError(f"{where}: room {room} is listed twice")
            order.rank[room] = rank
    if not order.rank:
        raise OrderError(f"{doc}: the ```layers block names no room")
    for where, room, kind, targets in rules:
        for r in [room] + _rooms(targets, where):
            if r not in order.rank:
                raise OrderError(f"{where}: room {r} is not in the order")
        getattr(order, kind).setdefault(room, set()).update(targets)
    return order


def room_of(rel):
    """The room of a path relative to src/ (a PurePath)."""
    if len(rel.parts) == 1:
        return rel.stem
    return rel.parts[0]


def resolve(src, including, name):
    """The file an #include "name" in including names, or None."""
    for base in (including.parent, src):
        p = base / name
        if p.is_file():
            return p.resolve()
    return None


def verdict(order, a, b):
    """Why room a must not include room b, or None when it may."""
    if a == b:
        return None
    for r in (a, b):
        if r not in order.rank:
            return f"room {r} is not in the layer order"
    if a in order.only and b not in order.only[a]:
        return f"{a} may include only {', '.join(sorted(order.only[a]))}"
    if b in order.never.get(a, ()):
        return f"{a} must never include {b}"
    if order.rank[b] > order.rank[a]:
        return f"{b} is above {a} in the order"
    if order.rank[b] == order.rank[a]:
        return f"{a} and {b} share a rank and must not know each other"
    return None


def table(order):
    """The markdown table of what each room may include, as the document
    shows it (between its check-layers table markers)."""
    rows = ["| room | may include |", "| --- | --- |"]
    for a in order.rank:
        others = [b for b in order.rank if b != a]
        ok = [b for b in others if verdict(order, a, b) is None]
        text = "every room" if ok == others else ", ".join(ok) or "nothing"
        rows.append(f"| {a} | {text} |")
    return "\n".join(rows) + "\n"


def check(root, doc):
    """Return (problems, number of includes looked at)."""
    src = (root / "src").resolve()
    order = parse_order(doc.read_text(), os.path.relpath(doc, root))
    problems = []
    seen = 0
    used = set()
    files = sorted(p for p in src.rglob("*") if p.suffix in (".c", ".h") and p.is_file())
    for f in files:
        rel = f.relative_to(src)
        shown = f"src/{rel.as_posix()}"
        a = room_of(rel)
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            seen += 1
            target = resolve(src, f, m.group(1))
            if target is None:
                problems.append(f'{shown}:{n}: {a} -> ?: "{m.group(1)}" is not a file under src/')
                continue
            try:
                b = room_of(target.relative_to(src))
            except ValueError:
                problems.append(f'{shown}:{n}: {a} -> ?: "{m.group(1)}" is outside src/')
                continue
            why = verdict(order, a, b)
            if why and (shown, b) in order.exceptions:
                used.add((shown, b))
                continue
            if why:
                problems.append(f"{shown}:{n}: {a} -> {b}: {why}")
    for file, room in sorted(set(order.exceptions) - used):
        problems.append(f"{doc.name}: exception {file} -> {room} is not needed any more")
    return problems, seen


def main(argv):
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=here, help="the repository (default: this one)")
    ap.add_argument("--doc", type=Path, help="the document (default: ROOT/docs/architecture.md)")
    ap.add_argument("--table", action="store_true", help="print what each room may include")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    doc = args.doc or root / "docs" / "architecture.md"
    try:
        if args.table:
            print(table(parse_order(doc.read_text(), doc.name)), end="")
            return 0
        problems, seen = check(root, doc)
    except (OrderError, OSError) as e:
        print(f"check-layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(
            f"check-layers: {len(problems)} include(s) against the order in {doc.name} "
            "(fix the include, or change the order there with a reason)",
            file=sys.stderr,
        )
        return 1
    print(f"check-layers: ok ({seen} includes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
