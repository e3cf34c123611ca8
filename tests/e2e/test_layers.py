# SPDX-License-Identifier: BSD-2-Clause
"""make check-layers: tools/check-layers.py reads the room order from
docs/architecture.md and fails on an #include that points up it, sideways
within a rank, outside a room's `only` list or into its `never` list,
naming the file, the line and the two rooms. The real tree passes; fake
trees with one bad include each do not. The script only reads files."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check-layers.py"
DOC = ROOT / "docs" / "architecture.md"


def run(*args):
    r = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60
    )
    return r.returncode, r.stdout + r.stderr


def tree(tmp_path, files, doc=None):
    """A fake repository: the real document (or doc) and src/ files given
    as {path under src/: text}."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text(DOC.read_text() if doc is None else doc)
    for name, text in files.items():
        p = tmp_path / "src" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


# Leaves every fake tree below has, so includes of them resolve.
BASE = {
    "util/addr.h": "/* leaf */\n",
    "core/loop.h": '#include "util/addr.h"\n',
    "auth/auth.h": '#include "core/loop.h"\n',
    "config/config.h": '#include "auth/auth.h"\n',
    "udp/udp.h": '#include "config/config.h"\n',
    "relay/conn.h": '#include "udp/udp.h"\n#include "config/config.h"\n',
    "version.h": "/* leaf */\n",
    "main.c": '#include "relay/conn.h"\n#include "version.h"\n',
    "bench/bench.h": '#include "core/loop.h"\n',
    "bench/main.c": '#include "bench.h"\n#include "version.h"\n',
}


def test_the_real_tree_keeps_its_layers():
    rc, out = run()
    assert rc == 0, out
    assert "check-layers: ok" in out


def test_a_tree_whose_includes_point_down_passes(tmp_path):
    rc, out = run("--root", tree(tmp_path, BASE))
    assert rc == 0, out


def test_an_upward_include_fails_naming_file_line_and_rooms(tmp_path):
    files = dict(BASE)
    files["auth/userlist.h"] = '/* issue 14 */\n#include <stddef.h>\n#include "config/config.h"\n'
    rc, out = run("--root", tree(tmp_path, files))
    assert rc == 1, out
    assert "src/auth/userlist.h:3: auth -> config: config is above auth" in out, out
    assert out.count("\n") == 2, out  # that line and the summary, nothing else


@pytest.mark.parametrize(
    "name, text, expect",
    [
        ("acl/rules.h", '#include "auth/auth.h"\n',
         "src/acl/rules.h:1: acl -> auth: acl and auth share a rank"),
        ("proto/socks5.c", '#include "core/loop.h"\n',
         "src/proto/socks5.c:1: proto -> core: proto may include only util"),
        ("bench/target.c", '#include "udp/udp.h"\n',
         "src/bench/target.c:1: bench -> udp: bench must never include udp"),
        ("udp/udp.c", '\n#include "relay/conn.h"\n',
         "src/udp/udp.c:2: udp -> relay: relay is above udp"),
        ("core/worker.h", '#  include "config/config.h"\n',
         "src/core/worker.h:1: core -> config: config is above core"),
        ("stray/x.c", '#include "util/addr.h"\n',
         "src/stray/x.c:1: stray -> util: room stray is not in the layer order"),
        ("util/x.c", '#include "nowhere/y.h"\n',
         'src/util/x.c:1: util -> ?: "nowhere/y.h" is not a file under src/'),
    ],
)
def test_each_kind_of_bad_arrow_fails(tmp_path, name, text, expect):
    files = dict(BASE)
    files[name] = text
    rc, out = run("--root", tree(tmp_path, files))
    assert rc == 1, out
    assert expect in out, out


MINI = """# doc
```layers
low
high
{extra}
```
"""
MINI_FILES = {"low/a.h": "\n", "high/b.c": '#include "low/a.h"\n', "low/c.c": '#include "high/b.c"\n'}


def test_an_exception_needs_a_reason_and_lets_one_include_through(tmp_path):
    doc = MINI.format(extra="except src/low/c.c -> high: measured, see #1")
    root = tree(tmp_path, MINI_FILES, doc)
    rc, out = run("--root", root)
    assert rc == 0, out
    (root / "docs" / "architecture.md").write_text(MINI.format(extra="except src/low/c.c -> high:"))
    rc, out = run("--root", root)
    assert rc == 2 and "needs a reason" in out, out


def test_an_exception_no_longer_needed_fails(tmp_path):
    files = dict(MINI_FILES)
    files["low/c.c"] = "\n"
    doc = MINI.format(extra="except src/low/c.c -> high: old")
    rc, out = run("--root", tree(tmp_path, files, doc))
    assert rc == 1 and "is not needed any more" in out, out


def test_without_an_order_the_check_refuses_to_guess(tmp_path):
    rc, out = run("--root", tree(tmp_path, MINI_FILES, "# no layers block here\n"))
    assert rc == 2 and "layers block" in out, out


def test_the_document_shows_the_table_the_order_means():
    rc, table = run("--table")
    assert rc == 0, table
    text = DOC.read_text()
    begin_mark, end_mark = "<!-- check-layers table: begin -->\n", "<!-- check-layers table: end -->"
    begin = text.index(begin_mark) + len(begin_mark)
    end = text.index(end_mark)
    assert text[begin:end] == table, "regenerate the table in docs/architecture.md with --table"


def test_every_room_of_the_tree_is_in_the_order():
    rc, table = run("--table")
    assert rc == 0, table
    rooms = {line.split("|")[1].strip() for line in table.splitlines()[2:]}
    tree_rooms = {p.name for p in (ROOT / "src").iterdir() if p.is_dir()}
    tree_rooms |= {p.stem for p in (ROOT / "src").iterdir() if p.suffix in (".c", ".h")}
    assert tree_rooms <= rooms, tree_rooms - rooms
