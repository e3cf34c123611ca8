#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check-functions: no function in src/ is longer than the limit (100 lines,
from the line of its name to its closing brace), unless it is named below
with the reason it may be.

Function extents come from Universal Ctags (`ctags --fields=+ne`), which
reads C as text: nothing is built or run. Each function over the limit is
printed as FILE:LINE: NAME: N lines. Exit 0 when there is none, 1 when
there is any, 2 when ctags is missing.

usage: tools/check-functions.py [--root DIR] [--max N]
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

# FILE:FUNCTION -> why it may be long. A table or a flat sequence with one
# decision per line reads better whole than cut; anything else is cut.
ALLOWED: dict[str, str] = {}


def functions(root: Path) -> list[tuple[str, str, int, int]]:
    """(file relative to root, name, first line, last line) of every C function."""
    files = sorted(str(p.relative_to(root)) for p in (root / "src").rglob("*.c"))
    if not files:
        return []
    out = subprocess.run(
        ["ctags", "--c-kinds=f", "--fields=+ne", "-o", "-", *files],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        cols = line.split("\t")
        start = end = None
        for c in cols[3:]:
            if c.startswith("line:"):
                start = int(c[5:])
            elif c.startswith("end:"):
                end = int(c[4:])
        if start and end:
            found.append((cols[1], cols[0], start, end))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description="no function in src/ over --max lines")
    ap.add_argument("--root", default=Path(__file__).resolve().parents[1], type=Path)
    ap.add_argument("--max", default=100, type=int)
    args = ap.parse_args()
    if not shutil.which("ctags"):
        print("check-functions: ctags (Debian's universal-ctags) is not installed", file=sys.stderr)
        return 2
    bad = 0
    for path, name, start, end in functions(args.root):
        n = end - start + 1
        if n > args.max and f"{path}:{name}" not in ALLOWED:
            print(f"{path}:{start}: {name}: {n} lines (the limit is {args.max}; cut it, "
                  "or name it in tools/check-functions.py with the reason)")
            bad += 1
    if bad:
        return 1
    print(f"check-functions: ok (no function over {args.max} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
