# SPDX-License-Identifier: BSD-2-Clause
"""`make install` against the documents: the configuration file the systemd
units read is the one `make install` writes and the one every document
names; a log_file the README shows is writable under the unit's sandbox;
the install message and the docs start the template unit (ferry@blue) that
upgrades without downtime need.

Runs `make -o ferry install DESTDIR=...` in the source tree with a private
BUILD directory (only the rendered unit goes there): `-o ferry` installs the
release binary as it is, never rebuilding it. Nothing here starts systemd.
"""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from ferrylib import REPO_ROOT

DOCS = ["README.md", "docs/operations.md", "docs/configuration.md", "docs/man/ferry.1",
        "docs/man/ferry.conf.5", "ferry.conf.example", "contrib/systemd/ferry.service.in"]


def make_install(tmp_path: Path, *variables: str) -> tuple[Path, str]:
    if not (REPO_ROOT / "ferry").exists():
        pytest.skip("no release binary ./ferry (make builds it; `make e2e` does first)")
    dest = tmp_path / "dest"
    r = subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO_ROOT), "-o", "ferry", "install",
         f"DESTDIR={dest}", f"BUILD={tmp_path / 'build'}", *variables],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return dest, r.stdout


def unit_settings(unit: Path) -> dict[str, list[str]]:
    """Key -> every value it is given in the unit (Exec lines may repeat)."""
    out: dict[str, list[str]] = {}
    for line in unit.read_text().splitlines():
        if line.startswith(("#", ";", "[")) or "=" not in line:
            continue
        k, v = line.split("=", 1)
        out.setdefault(k.strip(), []).append(v.strip())
    return out


def config_paths(unit: Path) -> list[str]:
    """The -c argument of every Exec line that runs ferry."""
    paths = []
    for key, values in unit_settings(unit).items():
        if not key.startswith("Exec"):
            continue
        for v in values:
            argv = shlex.split(v)
            if argv and argv[0].endswith("/ferry"):
                assert "-c" in argv, f"{key}={v} runs ferry without -c"
                paths.append(argv[argv.index("-c") + 1])
    return paths


def writable_dirs(unit: Path) -> list[str]:
    s = unit_settings(unit)
    dirs = [f"/var/log/{d}" for v in s.get("LogsDirectory", []) for d in v.split()]
    dirs += [d.lstrip("-") for v in s.get("ReadWritePaths", []) for d in v.split()]
    return dirs


@pytest.mark.parametrize("prefix", [None, "/usr"], ids=["default-prefix", "prefix-usr"])
def test_units_read_the_installed_and_documented_config(tmp_path, prefix):
    dest, out = make_install(tmp_path, *([f"PREFIX={prefix}"] if prefix else []))
    unitdir = dest / (prefix or "/usr/local").lstrip("/") / "lib/systemd/system"
    units = [unitdir / "ferry.service", unitdir / "ferry@.service"]
    for unit in units:
        assert unit.exists(), sorted(str(p) for p in dest.rglob("*"))
        paths = set(config_paths(unit))
        # ExecStartPre (--check), ExecStart and ExecReload (--check) all read it
        assert len(config_paths(unit)) >= 3, unit.read_text()
        assert paths == {"/etc/ferry/ferry.conf"}, (unit, paths)
        installed = dest / "etc/ferry/ferry.conf"
        assert installed.is_file(), out
        assert installed.read_text() == (REPO_ROOT / "ferry.conf.example").read_text()
        assert not (dest / (prefix or "/usr/local").lstrip("/") / "etc").exists()
    # Every absolute path to ferry.conf or the userlist in the documents is
    # in the directory the units read.
    for doc in DOCS:
        text = (REPO_ROOT / doc).read_text()
        assert "/usr/local/etc" not in text, doc
        # (the unit template's @SYSCONFDIR@ paths are checked rendered, above)
        for m in re.finditer(r"(?<![\w@])(/[\w./-]*)/ferry\.conf(?!\w|\.\w)", text):
            assert m.group(0) == "/etc/ferry/ferry.conf", (doc, m.group(0))
        for m in re.finditer(r"(/[\w./-]+)/users\b", text):
            if m.group(1) == "/api":
                continue  # the admin API's /api/users, not a file
            assert m.group(1) == "/etc/ferry", (doc, m.group(0))


def test_documented_log_file_is_writable_under_the_unit(tmp_path):
    dest, _ = make_install(tmp_path)
    unit = dest / "usr/local/lib/systemd/system/ferry@.service"
    s = unit_settings(unit)
    assert s.get("ProtectSystem") == ["strict"], "the check below assumes a read-only system"
    dirs = writable_dirs(unit)
    assert dirs, unit.read_text()
    found = []
    for doc in ["README.md", "docs/operations.md", "docs/man/ferry.conf.5", "docs/man/ferry.1"]:
        text = (REPO_ROOT / doc).read_text()
        for m in re.finditer(r"^\s*log_file\s*=\s*(\S+)", text, re.M):
            found.append((doc, m.group(1)))
        # the logrotate stanza rotates the same file
        for m in re.finditer(r"^(/var/log/\S+) \{", text, re.M):
            found.append((doc, m.group(1)))
    assert any(doc == "README.md" for doc, _ in found), "README shows no log_file"
    for doc, path in found:
        assert any(path.startswith(d.rstrip("/") + "/") for d in dirs), (doc, path, dirs)


def test_install_and_docs_start_the_template_unit(tmp_path):
    _, out = make_install(tmp_path)
    assert "systemctl enable --now ferry@blue" in out, out
    assert not re.search(r"enable (--now )?ferry(?![@\w])", out), out
    for doc in ["README.md", "docs/operations.md", "docs/man/ferry.1"]:
        text = (REPO_ROOT / doc).read_text().replace("\\-", "-")
        assert "enable --now ferry@blue" in text, doc
        # no command that enables, reloads or signals the plain unit
        bad = re.findall(r"systemctl (?:enable|reload|kill)[^\n]*?\bferry(?:\.service)?(?![@\w.])",
                         text)
        assert not bad, (doc, bad)
