# SPDX-License-Identifier: BSD-2-Clause
"""tools/check-functions.py: the real tree has no function over 100 lines,
and a fake tree with one is refused, naming the file, line and length."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check-functions.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_real_tree_passes():
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout


def test_long_function_is_refused(tmp_path):
    (tmp_path / "src" / "x").mkdir(parents=True)
    body = "".join(f"    n += {i};\n" for i in range(105))
    (tmp_path / "src" / "x" / "long.c").write_text(
        "static int short_one(void)\n{\n    return 1;\n}\n\n"
        f"int long_one(void)\n{{\n    int n = 0;\n{body}    return n;\n}}\n")
    r = run("--root", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "src/x/long.c:6: long_one: 110 lines" in r.stdout, r.stdout
    assert "short_one" not in r.stdout
    r = run("--root", str(tmp_path), "--max", "120")
    assert r.returncode == 0, r.stdout + r.stderr
