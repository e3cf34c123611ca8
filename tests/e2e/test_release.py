# SPDX-License-Identifier: BSD-2-Clause
"""The version the binary prints is the one CHANGELOG.md and the man pages
name, and the licence the README names is the one shipped."""

import re
from pathlib import Path

from ferrylib import run_ferry

ROOT = Path(__file__).resolve().parents[2]


def _version() -> str:
    r = run_ferry(["--version"])
    assert r.rc == 0, r.text
    return r.out.split()[1]


def test_changelog_has_a_section_for_the_binary_version():
    version = _version()
    text = (ROOT / "CHANGELOG.md").read_text()
    heads = re.findall(r"^## \[([^\]]+)\](.*)$", text, re.M)
    assert heads, "CHANGELOG.md has no version sections"
    names = [h[0] for h in heads]
    assert version in names, f"--version says {version}; CHANGELOG sections: {names}"
    # The newest section is the binary's; a section is dated or says unreleased.
    assert names[0] == version, names
    for name, rest in heads:
        assert re.fullmatch(r" - (\d{4}-\d\d-\d\d|unreleased)", rest), (name, rest)


def test_man_pages_name_the_binary_version():
    version = _version()
    for page in ("ferry.1", "ferry.conf.5"):
        th = next(l for l in (ROOT / "docs/man" / page).read_text().splitlines() if l.startswith(".TH"))
        assert f'"ferry {version}"' in th, (page, th)


def test_licence_is_shipped_and_every_source_file_says_so():
    assert "BSD 2-Clause" in (ROOT / "LICENSE").read_text()
    missing = []
    for pattern in ("src/**/*.[ch]", "tests/**/*.[ch]", "tests/**/*.py", "bench/*.py", "bench/*.sh", "tools/*.py"):
        for f in ROOT.glob(pattern):
            if "SPDX-License-Identifier: BSD-2-Clause" not in f.read_text(errors="replace")[:400]:
                missing.append(str(f.relative_to(ROOT)))
    assert not missing, missing
